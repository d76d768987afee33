//! What only a backend implementation needs: the argument checks every
//! backend runs before an op, fallible host allocation, the host index list
//! and its helpers, and the composed fallback of a fused op. Model code and
//! users never need this module; what they use (the capability traits,
//! [`BTensor`](crate::BTensor), [`Element`](crate::Element),
//! [`Error`](crate::Error), [`IndexPlan`](crate::IndexPlan), ...) is at the
//! crate root.
//!
//! | item | what a backend uses it for |
//! |---|---|
//! | [`dims2`], [`check_index_add`], [`resize_rows_layout`] | the shape and plan checks of the index, dense and layout ops, so every backend reports the same errors |
//! | [`check_bias_parts`], [`sum_bias_relu_composed`] | `FusedOps::sum_bias_relu`'s checks, and its composed body for the cases a device kernel does not cover |
//! | [`try_vec`], [`try_copy`], [`try_with_capacity`] | host buffers whose huge size is [`Error::HostAllocation`](crate::Error::HostAllocation), not an abort |
//! | [`HostIndex`], [`check_len`], [`concat_shifted`] | index lists in host memory (the `IndexOps::Index` of host backends), the `u32` length limit, `index_concat` on the host |
//!
//! A host backend writes `rtx_backend::host_index_list!();` in its
//! `impl IndexOps` for the index-list items over [`HostIndex`]; the macro
//! lives at the crate root because Rust puts exported macros there. The
//! block size of the canonical summation order is
//! [`order::CANONICAL_BLOCK`](crate::order::CANONICAL_BLOCK).

pub use crate::capability::{check_bias_parts, sum_bias_relu_composed};
pub use crate::host_alloc::{try_copy, try_vec, try_with_capacity};
pub use crate::index_list::{HostIndex, check_len, concat_shifted};
pub use crate::ops::{check_index_add, dims2, resize_rows_layout};
