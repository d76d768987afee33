//! The capability traits of a backend, burn-style: a small core and one trait
//! per family of ops, each with host round-trip defaults, and [`Backend`] as
//! their sum.
//!
//! | trait | ops | file |
//! |---|---|---|
//! | [`BackendCore`] | buffers, `upload`, `download`, `zeros`, `synchronize`, `make_unique` | `core.rs` |
//! | [`IndexOps`] | `index_select`, `index_add`, `segment_max`, `segment_sum` (indices as [`Indices`](crate::Indices)) | `index.rs` |
//! | [`LayoutOps`] | `swap_dims`, `permute`, `convert` | `layout.rs` |
//! | [`DenseOps`] | `matmul`, `unary`, `unary_backward`, `binary`, `axpy`, `sum_rows`, `head_dot`, `head_scale` | `dense.rs` |
//! | [`FusedOps`] | `segment_softmax`, `segment_softmax_backward`, `gather_scale_scatter`, `gather_head_dot`, `gather_add`, `head_scale_sum_rows`, `add_head_scale`, `sum_bias_relu` | `fused.rs` |
//! | [`TrainOps`] | `dropout`, `cross_entropy`, `regression_loss`, `adam_step`, `sgd_step` | `train.rs` |

mod core;
mod dense;
mod fused;
mod index;
mod layout;
mod train;

pub use self::core::BackendCore;
pub use dense::DenseOps;
pub use fused::{BiasPart, FusedOps, check_bias_parts, sum_bias_relu_composed};
pub use index::IndexOps;
pub use layout::LayoutOps;
pub use train::{LossGrad, TrainOps};

/// `t` widened to `f32` (exact for the half types) on the same backend,
/// through the host: how the defaults run a half-precision op as its `f32` op.
pub(crate) fn widen_t<B: BackendCore + ?Sized, T: crate::Element>(
    b: &B,
    t: &crate::BTensor<B, T>,
) -> crate::Result<crate::BTensor<B, f32>> {
    b.upload(&crate::widen_f32(&b.download(t)?), t.shape())
}

/// `t` rounded once per element to `T`, through the host (see [`widen_t`]).
pub(crate) fn round_t<B: BackendCore + ?Sized, T: crate::Element>(
    b: &B,
    t: &crate::BTensor<B, f32>,
) -> crate::Result<crate::BTensor<B, T>> {
    b.upload(&crate::round_f32::<T>(&b.download(t)?), t.shape())
}

/// A compute backend: every capability. Implement [`BackendCore`] (upload,
/// download, zeros) and write an `impl` of each other capability, empty to
/// take its host round-trip defaults or overriding what the backend does
/// better; the blanket impl below then makes it a `Backend`, so every
/// `B: Backend` bound works.
///
/// No op panics on bad input: shapes that do not fit, output sizes that
/// overflow 64 bits ([`Error::Layout`](crate::Error::Layout)) and host memory
/// that cannot be reserved ([`Error::HostAllocation`](crate::Error::HostAllocation))
/// are error values.
///
/// **Exactness.** Index ops ([`IndexOps`]) give the same bits on every backend
/// (the [canonical order](crate::order) for sums), and every fused op
/// ([`FusedOps`]) gives the same bits as its defining composition on the same
/// backend. The dense ops ([`DenseOps`]) are held to the [`ops`](crate::ops)
/// reference within a tolerance where their docs say so; the rest round once
/// per operation and are bit-exact.
///
/// **Element types.** Every op takes `f32`, `f64`, `bf16` and `f16`. A half
/// type computes in `f32` and rounds once per output: its op is the `f32` op
/// on the widened inputs, rounded once (a fused op is the `f32` fused op
/// rounded once, not the composition of half ops); gather, permute and
/// segment max move the bits (see [`reference`](mod@crate::reference)).
///
/// **Training.** The training ops ([`TrainOps`]: dropout, the losses, the
/// optimizer steps) give the bits of their [`ops::train`](crate::ops::train)
/// references on every backend.
pub trait Backend: BackendCore + IndexOps + LayoutOps + DenseOps + FusedOps + TrainOps {}

impl<B: BackendCore + IndexOps + LayoutOps + DenseOps + FusedOps + TrainOps> Backend for B {}
