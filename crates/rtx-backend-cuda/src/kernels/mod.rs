//! The kernels: the table that declares each one (name, signature, the
//! instantiation that defines it and the choice that picks it), the NVRTC
//! translation unit made from `kernels/*.cu` and the table, and, with the
//! `cuda` feature, their compilation and typed launch.
//!
//! * `abi`: constants and op codes shared with CUDA (prepended as `#define`s).
//! * `table`, `table/choice`: the kernel table; [`table::Family`] picks a kernel.
//! * `signature`: `kernel_enum!`, declaring `Kernel` and `Signature` from the table.
//! * `source`: the translation unit (the files, their `// @kernels` lines
//!   expanded from the table).
//! * `compile` (feature): NVRTC, the disk cache, the loaded kernels.

pub(crate) mod abi;
pub(crate) mod signature;
pub(crate) mod source;
pub(crate) mod table;

#[cfg(feature = "cuda")]
pub(crate) mod compile;

// the host port of common.cuh's half conversions, tested against `half`
#[cfg(test)]
mod half_bits;
#[cfg(test)]
mod host_check_tests;
#[cfg(test)]
mod table_tests;

pub use abi::REQUIRED_DRIVER_VERSION;
pub use source::{KERNEL_FILES, translation_unit as kernel_source};
