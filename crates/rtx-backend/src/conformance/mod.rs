//! The conformance suite: every op, every backend, the same expectations.
//!
//! Each function takes any [`Backend`] and panics with a message naming the
//! case on the first mismatch; a backend's tests call them one by one (so
//! each shows as its own test) or all through [`run_all`]. Expectations come
//! from the single-threaded host [`reference`](mod@crate::reference), naive loops
//! written here, or hand-computed values, never from the backend under test.
//! Float results are compared bit for bit unless a case says otherwise.
//!
//! | file | cases |
//! |---|---|
//! | `index.rs` | [`IndexOps`](crate::IndexOps): gather, scatter-add, out-of-range and empty indices, repeatability, concurrent use |
//! | `layout.rs` | [`LayoutOps`](crate::LayoutOps): `swap_dims`, `permute` and `resize_rows` |
//! | `dense.rs` | [`DenseOps`](crate::DenseOps) against the [`ops`](crate::ops) reference, zero sizes and shape errors of every model op |
//! | `fused.rs` | [`FusedOps`](crate::FusedOps) and the segment ops they compose: softmax and the fused gathers |
//! | `precision.rs` | every op family in `bf16`, `f16`, `f32` and `f64`: half types against their `f32` op rounded once and the reference; `convert` |
//! | `special.rs` | `bf16` and `f16` against hand-computed bits: NaN, infinities, subnormals, `-0.0`, overflow, ties; a sum that only the canonical order rounds right |
//! | `train.rs` | [`TrainOps`](crate::TrainOps): dropout's mask and scale, the losses against naive `f64` code and finite differences, all four element types against the reference |
//! | `optim.rs` | [`TrainOps`](crate::TrainOps)' optimizer steps against hand-computed steps of torch's formulas, all four element types against the reference |
//! | `harness.rs` | upload, download and the bit-exact and tolerance comparisons the cases share |

mod dense;
mod fused;
mod harness;
mod index;
mod layout;
mod lists;
mod optim;
mod precision;
mod special;
mod train;

use crate::Backend;

pub use dense::{model_op_errors, model_ops_empty, model_ops_match_reference};
pub use fused::{fused_dense, fused_gathers, segment_ops};
pub use index::{
    adjoint_identity, concurrent_use, empty_indices, gather_with_repeats, hub_heavy, out_of_range,
    repeatable, scatter_duplicates_untouched, scatter_matches_reference,
};
pub use layout::{
    all_permutations, odd_transposes, resize_rows_matches_reference, resize_rows_owns_its_buffer,
    swap_dims_2x3x4, vector_swap_shares_buffer,
};
pub use lists::{index_list_edges, index_lists_match_host_lists, index_row_counts, prepared_plans};
pub use optim::{train_adam, train_sgd};
pub use precision::{
    typed_dense_ops, typed_fused_ops, typed_index_lists_and_errors, typed_index_ops,
    typed_layout_and_convert,
};
pub use special::{half_special_values, half_summation_order};
pub use train::{train_cross_entropy, train_dropout, train_regression_loss};

/// Every case above, in order.
pub fn run_all<B: Backend>(b: &B) {
    gather_with_repeats(b);
    scatter_duplicates_untouched(b);
    adjoint_identity(b);
    hub_heavy(b);
    out_of_range(b);
    empty_indices(b);
    scatter_matches_reference(b);
    repeatable(b);
    concurrent_use(b);
    swap_dims_2x3x4(b);
    vector_swap_shares_buffer(b);
    all_permutations(b);
    odd_transposes(b);
    resize_rows_matches_reference(b);
    resize_rows_owns_its_buffer(b);
    model_ops_match_reference(b);
    segment_ops(b);
    fused_gathers(b);
    fused_dense(b);
    model_ops_empty(b);
    model_op_errors(b);
    index_lists_match_host_lists(b);
    index_list_edges(b);
    index_row_counts(b);
    prepared_plans(b);
    typed_index_ops(b);
    typed_dense_ops(b);
    typed_fused_ops(b);
    typed_layout_and_convert(b);
    typed_index_lists_and_errors(b);
    half_special_values(b);
    half_summation_order(b);
    train_dropout(b);
    train_cross_entropy(b);
    train_regression_loss(b);
    train_adam(b);
    train_sgd(b);
}

/// Declares one `#[test]` per conformance case for a backend built by `$make`.
///
/// ```text
/// rtx_backend::conformance_tests!(rtx_backend_cpu::CpuBackend::new());
/// ```
#[macro_export]
macro_rules! conformance_tests {
    ($make:expr) => {
        $crate::conformance_tests!(@cases $make;
            gather_with_repeats scatter_duplicates_untouched adjoint_identity hub_heavy
            out_of_range empty_indices scatter_matches_reference repeatable concurrent_use
            swap_dims_2x3x4 vector_swap_shares_buffer all_permutations odd_transposes
            resize_rows_matches_reference resize_rows_owns_its_buffer
            model_ops_match_reference segment_ops fused_gathers fused_dense model_ops_empty
            model_op_errors index_lists_match_host_lists index_list_edges index_row_counts
            prepared_plans
            typed_index_ops typed_dense_ops typed_fused_ops typed_layout_and_convert
            typed_index_lists_and_errors half_special_values half_summation_order
            train_dropout train_cross_entropy train_regression_loss train_adam train_sgd);
    };
    (@cases $make:expr; $($case:ident)*) => {
        $(
            #[test]
            fn $case() {
                let backend = $make;
                $crate::conformance::$case(&backend);
            }
        )*
    };
}
