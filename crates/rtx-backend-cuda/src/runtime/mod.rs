//! What kernels run on (feature `cuda`): an opened device, its memory, and
//! typed launches.
//!
//! * `context`: one opened device: context, stream, pool, compiled kernels.
//! * `buffer`: device memory (stream-ordered pool allocations) and [`CudaBuffer`].
//! * `cache`: the host's cache of freed device blocks, by size class.
//! * `args`: typed device addresses ([`args::DevPtr`]) and the parameter
//!   types kernels take.
//! * `launch`: one typed launcher per signature of the kernel table, and
//!   launch geometry.

pub(crate) mod args;
pub(crate) mod buffer;
pub(crate) mod cache;
pub(crate) mod context;
pub(crate) mod launch;

pub use buffer::CudaBuffer;
