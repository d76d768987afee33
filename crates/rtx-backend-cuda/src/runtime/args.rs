//! The Rust types of kernel parameters (the table's vocabulary, `signature.rs`):
//! device pointers typed by what they point to and whether the kernel writes
//! through them, a float element passed by value, and the structs kernels
//! take by value, each `#[repr(C)]` as its CUDA namesake. The typed
//! launchers of `launch.rs` take them as named fields.

use std::fmt;
use std::marker::PhantomData;

use cudarc::driver::{DeviceRepr, sys};
use rtx_backend::Element;

use crate::kernels::abi::{COL_SUM_LEVELS, MAX_RANK, SUM_BIAS_PARTS};
use crate::permute::{LinesParams, SpanParams, TileParams};

/// A device address of `E`s, 0 for none: what device memory hands out
/// ([`DevMem::ptr`](crate::runtime::buffer::DevMem::ptr), a tensor's `ptr`, a plan's
/// tables) and kernel parameters are made from, so that a parameter of
/// `u32`s cannot be given a tensor of `f32`s. Reading the same bytes as
/// another type is an explicit [`DevPtr::cast`].
#[repr(transparent)]
pub(crate) struct DevPtr<E>(u64, PhantomData<fn() -> E>);

impl<E> DevPtr<E> {
    /// No address (a kernel told it has none).
    pub(crate) const NULL: Self = Self(0, PhantomData);

    /// The address `addr`, holding `E`s: where raw memory gets its type.
    pub(crate) const fn new(addr: u64) -> Self {
        Self(addr, PhantomData)
    }

    /// The address, for the driver and for arithmetic on bytes.
    pub(crate) const fn addr(self) -> u64 {
        self.0
    }

    /// The address `bytes` further on.
    pub(crate) const fn byte_add(self, bytes: u64) -> Self {
        Self(self.0 + bytes, PhantomData)
    }

    /// The same address, its bytes read as `F`s (the caller says why that
    /// is what they hold).
    pub(crate) const fn cast<F>(self) -> DevPtr<F> {
        DevPtr(self.0, PhantomData)
    }
}

impl<E> Clone for DevPtr<E> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<E> Copy for DevPtr<E> {}

impl<E> PartialEq for DevPtr<E> {
    fn eq(&self, other: &Self) -> bool {
        self.0 == other.0
    }
}

impl<E> Eq for DevPtr<E> {}

impl<E> fmt::Debug for DevPtr<E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "DevPtr({:#x})", self.0)
    }
}

/// A device address a kernel reads `E`s from (`const E*`), 0 where the
/// kernel is told it has none.
#[repr(transparent)]
pub(crate) struct In<E>(u64, PhantomData<fn() -> E>);

/// A device address a kernel writes `E`s to (`E*`), 0 where the kernel is
/// told it has none.
#[repr(transparent)]
pub(crate) struct Out<E>(u64, PhantomData<fn() -> E>);

macro_rules! pointer {
    ($p:ident) => {
        impl<E> $p<E> {
            /// The parameter pointing at `p`.
            pub(crate) const fn at(p: DevPtr<E>) -> Self {
                Self(p.0, PhantomData)
            }
        }

        impl<E> Clone for $p<E> {
            fn clone(&self) -> Self {
                *self
            }
        }

        impl<E> Copy for $p<E> {}

        impl<E> fmt::Debug for $p<E> {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(f, "{}({:#x})", stringify!($p), self.0)
            }
        }

        // SAFETY: #[repr(transparent)] over the u64 device address, which is
        // what a pointer parameter (a CUdeviceptr) takes.
        unsafe impl<E> DeviceRepr for $p<E> {}
    };
}
pointer!(In);
pointer!(Out);

impl<E> In<E> {
    /// The null pointer: "none" to a kernel that takes one (a scatter level
    /// past 0 reads no positions).
    pub(crate) const fn null() -> Self {
        Self(0, PhantomData)
    }
}

/// The word of a copy kernel (the table's `E`): raw element bytes of any
/// type, moved 4, 8 or 16 at a time.
pub(crate) enum Words {}

/// kernels/plan.cu's `Level0Counts`: three `u32` counts of level 0's scan.
pub(crate) enum Level0Counts {}

/// kernels/plan.cu's `PlanItem`: one build of a batch of plan builds
/// (`indices::batch::Item` writes them).
pub(crate) enum PlanItem {}

/// A float element passed by value (the table's `T` as a parameter).
#[repr(transparent)]
#[derive(Debug, Clone, Copy)]
pub(crate) struct Elem<T>(pub T);

// SAFETY: `Element` is sealed to f32, f64, bf16 and f16, plain values whose
// bytes are what a `float` / `double` / 16-bit parameter takes; the typed
// launchers check that the kernel's element is `T` (and no kernel takes a
// half element by value).
unsafe impl<T: Element> DeviceRepr for Elem<T> {}

/// `TensorMap` of kernels/permute.cu: a `CUtensorMap`, taken by value.
#[repr(transparent)]
pub(crate) struct TensorMap(pub sys::CUtensorMap);

// SAFETY: the 128 bytes of a CUtensorMap, which the kernel takes by value.
unsafe impl DeviceRepr for TensorMap {}

/// `PermuteParams` of kernels/permute.cu: the N-D permute's output dims and
/// input strides (in runs).
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub(crate) struct PermuteParams {
    pub rank: u64,
    pub out_dims: [u64; MAX_RANK],
    pub in_strides: [u64; MAX_RANK],
}

// SAFETY: #[repr(C)] plain u64s, laid out exactly as the CUDA struct.
unsafe impl DeviceRepr for PermuteParams {}

/// `BiasParts` of kernels/model.cu, the parts of one `sum_bias_relu`
/// launch: the first `k` of `x` and `b` are the parts' inputs and biases.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub(crate) struct BiasParts {
    pub x: [u64; SUM_BIAS_PARTS],
    pub b: [u64; SUM_BIAS_PARTS],
    pub k: u64,
}

// SAFETY: #[repr(C)] plain u64s, laid out exactly as the CUDA struct.
unsafe impl DeviceRepr for BiasParts {}

/// `RrClimb` of kernels/dense.cu, the levels one column-sum launch climbs:
/// `out[i]` holds `rows[i]` rows (the last level's one row is the sums), the
/// counters of level `i`'s groups start at `counters + 4 * cnt[i]`.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub(crate) struct RrClimb {
    pub out: [u64; COL_SUM_LEVELS],
    pub rows: [u64; COL_SUM_LEVELS],
    pub cnt: [u64; COL_SUM_LEVELS],
    pub counters: u64,
    pub levels: u64,
}

// SAFETY: #[repr(C)] plain u64s, laid out exactly as the CUDA struct.
unsafe impl DeviceRepr for RrClimb {}

// SAFETY: #[repr(C)] plain integers (FastDiv: four u32), laid out exactly as
// the CUDA structs of kernels/permute.cu.
unsafe impl DeviceRepr for SpanParams {}
// SAFETY: as above.
unsafe impl DeviceRepr for TileParams {}
// SAFETY: as above.
unsafe impl DeviceRepr for LinesParams {}
