//! The dense, elementwise and segment ops a graph-attention model needs beyond
//! gather and scatter-add: their definitions (host reference implementations),
//! the row kernels the reference and the CPU backend share (so the two are
//! bit-identical by construction), and the argument checks every backend runs
//! before any work.
//!
//! # Reduction order
//! Every reduction here has one fixed order, so the reference is
//! deterministic and a backend that follows it (the CPU backend does, for
//! any thread count) gets the same bits:
//!
//! * **Dense reductions** (the inner dimension of [`matmul`], the channels of
//!   [`head_dot`], the rows of [`sum_rows`]) follow
//!   [`order::canonical_sum`](crate::order::canonical_sum): blocks of
//!   [`CANONICAL_BLOCK`](crate::order::CANONICAL_BLOCK) terms summed left to right from the first term, then
//!   the block sums the same way. An empty reduction is `+0.0`. Each product
//!   is rounded before it is added (no fused multiply-add). This is the
//!   reference, not a cross-backend promise: the conformance suite compares
//!   `matmul`, `sum_rows`, `head_dot`, `axpy` and `exp` within a tolerance,
//!   so a device may use cuBLAS, its own order or FMA there.
//! * **Segment sums** ([`segment_sum`](crate::IndexOps::segment_sum), the
//!   denominators of the softmax) are `index_add` into zeros: `0 + t` with `t`
//!   the canonical sum of the segment (positions increasing).
//! * **Segment max** takes the segment's values in position order and keeps
//!   the first maximum (`-0.0` and `+0.0` compare equal, so the first one
//!   wins); the first NaN met sticks. An empty segment gives `+0.0`.
//! * **Segment softmax** is defined as the composition
//!   `e = exp(x - gather(segment_max(x)))`, `alpha = e / gather(segment_sum(e))`,
//!   and its backward as `alpha * (g - gather(segment_sum(alpha * g)))`. A
//!   fused implementation must produce exactly those bits (the CPU backend's
//!   does; the trait's defaults *are* that composition).
//!
//! * **Fused gathers** ([`gather_scale_scatter`], [`gather_head_dot`]) are
//!   defined as their unfused compositions (see each) and give the same bits.
//!
//! **Half types.** For `bf16` and `f16` each op computes in `f32` (its
//! [`Element::Acc`](crate::Element::Acc)) and rounds once per output: an
//! arithmetic op is its `f32` op on the widened inputs, rounded once (a fused
//! op keeps its intermediates in `f32`); the row kernels here compute in the
//! type they are given, and the reference and the CPU backend give them the
//! widened `f32` values ([`reference`](mod@reference) has the details).
//!
//! Elementwise ops round once per operation, as IEEE-754 does. `exp` is
//! [`crate::exp`]'s portable algorithm (plain IEEE operations, no libm): the
//! CPU and CUDA backends compute exactly its bits, so they train the HetGAT
//! to the same loss bits; the trait still holds another backend's `exp` to
//! it only within a tolerance.
//!
//! # What is bit-exact across backends
//! Index ops (gather, scatter-add, [`segment_max`], `segment_sum`) and the
//! elementwise ops without rounding choices (`binary`, [`head_scale`], relu,
//! leaky relu, scale) give the same bits on every backend; every fused op
//! gives the same bits as its composition on the same backend. The dense ops
//! (`matmul`, `sum_rows`, `head_dot`, `axpy`) and `exp` are compared with
//! this reference within a tolerance (see [`Backend`](crate::Backend)).
//!
//! # Sizes
//! The `check_*` functions reject shapes whose output element count
//! overflows ([`Error::Layout`](crate::Error::Layout)); the kernels and reference functions below
//! assume checked arguments (slices of the lengths their shapes say) and may
//! panic on inconsistent ones.
//!
//! # Where things are
//!
//! | file | what |
//! |---|---|
//! | `kind.rs` | the op enums [`Unary`] and [`Binary`] |
//! | `check.rs` | the `check_*` argument checks every backend runs before any work (also [`dims2`] and [`check_index_add`], re-exported at the crate root) |
//! | `rows.rs` | the row kernels the reference and the CPU backend share ([`mm_block`], [`softmax_segment`], ...) |
//! | `train.rs` | the training ops' references: dropout, the losses, the optimizer updates ([`train`]) |
//! | `reference.rs` | the host reference implementations ([`matmul`], [`segment_softmax`], ...), and the reference gather and scatter-add; public as `rtx_backend::reference` |
//!
//! Every item of `check.rs`, `kind.rs` and `rows.rs`, and the model ops'
//! references, are re-exported here, so their path is `rtx_backend::ops::X`.

mod check;
mod kind;
pub mod reference;
mod rows;
pub mod train;

pub use crate::order::{canonical_accumulate, reduce_blocks};
pub use check::{
    check_add_head_scale, check_binary, check_gather_add, check_gather_head_dot,
    check_gather_scale_scatter, check_head_dot, check_head_scale, check_index_add, check_matmul,
    check_same, check_segment, check_segment_len, check_sum_bias_relu, dims2, gather_add_shapes,
    gather_head_dot_shapes, gather_scale_scatter_shapes, resize_rows_layout,
};
pub use kind::{Binary, Unary};
pub use reference::{
    binary, gather_head_dot, gather_scale_scatter, head_dot, head_scale, matmul, segment_max,
    segment_softmax, segment_softmax_backward, sum_rows, unary, unary_backward,
};
pub use rows::{
    SegmentScratch, add, axpy_row, axpy_slice, binary_slice, dot, gather_scale_scatter_row,
    head_dot_row, head_scale_row, matmul_row, mm_block, outer_term, plan_indices, relu,
    segment_max_row, softmax_backward_segment, softmax_segment, transpose2, unary_backward_slice,
    unary_slice,
};
