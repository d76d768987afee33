//! The `Backend` capability traits, the host reference ops, the canonical
//! scatter-add order and `IndexPlan`. Never depends on a device library.
//!
//! * [`Backend`]: the sum of the capability traits ([`BackendCore`],
//!   [`IndexOps`], [`LayoutOps`], [`DenseOps`], [`FusedOps`], [`TrainOps`]), each with
//!   provided ops ([`IndexOps::index_select`], [`IndexOps::index_add`],
//!   [`LayoutOps::swap_dims`], ...) whose defaults round-trip through host
//!   memory with this crate's [`reference`](mod@reference) implementations.
//!   Device backends override them. `use rtx_backend::prelude::*` brings every
//!   capability into scope.
//! * [`order`]: the one summation order of `index_add` every backend follows.
//! * [`IndexPlan`]: the CSR of the transposed selection matrix.
//! * [`ops`]: the dense, elementwise and segment ops of a graph-attention
//!   model ([`DenseOps::matmul`], [`FusedOps::segment_softmax`], ...): their
//!   definitions, fixed reduction orders and shared row kernels.
//! * [`HostIndexOps`]: a wrapper that forces a backend's index ops onto the
//!   host round-trip defaults (the "before" of a device gather/scatter).
//! * [`workload`]: the deterministic splitmix64 generators of the
//!   benchmark and test workloads (`docs/workloads.md`).
//! * [`implement`]: what only a backend implementation needs (argument
//!   checks, fallible host allocation, host index lists).

mod capability;
pub mod comm;
#[cfg(feature = "conformance")]
pub mod conformance;
mod element;
mod error;
pub mod exp;
mod host_alloc;
mod host_index;
pub mod implement;
mod index_list;
mod indices;
pub mod ops;
pub mod order;
mod plan;
pub mod sample;
mod tensor;
pub mod workload;

pub use capability::{
    Backend, BackendCore, BiasPart, DenseOps, FusedOps, IndexOps, LayoutOps, LossGrad, TrainOps,
};
pub use element::{DType, Element, bf16, bytes_of, f16, round_f32, vec_from_bytes, widen_f32};
pub use error::{Error, Result};
pub use host_index::HostIndexOps;
pub use indices::Indices;
pub use ops::reference;
pub use ops::train::{AdamStep, RegressionLoss, SgdStep};
pub use ops::{Binary, Unary};
pub use plan::IndexPlan;
pub use sample::SampleOps;
pub use tensor::Tensor;

// capability/index.rs's default `index_concat` names it from the root.
pub(crate) use index_list::concat_shifted;

/// The tensor type of backend `B` with elements `T`.
pub type BTensor<B, T> = Tensor<<B as BackendCore>::Buffer<T>>;

/// Every capability trait, for `use rtx_backend::prelude::*` where a concrete
/// backend's methods are called.
pub mod prelude {
    pub use crate::{Backend, BackendCore, DenseOps, FusedOps, IndexOps, LayoutOps, TrainOps};
}
