//! The capability traits of a backend, burn-style: a small core and one trait
//! per family of ops, each with host round-trip defaults, and [`Backend`] as
//! their sum.
//!
//! | trait | ops | file |
//! |---|---|---|
//! | [`BackendCore`] | buffers, `upload`, `download`, `zeros`, `synchronize`, `make_unique` | `core.rs` |
//! | [`IndexOps`] | `index_select`, `index_add`, `index_add_planned`, `segment_max`, `segment_sum` | `index.rs` |
//! | [`LayoutOps`] | `swap_dims`, `permute` | `layout.rs` |
//! | [`DenseOps`] | `matmul`, `unary`, `unary_backward`, `binary`, `axpy`, `sum_rows`, `head_dot`, `head_scale` | `dense.rs` |
//! | [`FusedOps`] | `segment_softmax`, `segment_softmax_backward`, `gather_scale_scatter`, `gather_head_dot`, `gather_add`, `head_scale_sum_rows`, `add_head_scale`, `sum_bias_relu` | `fused.rs` |

mod core;
mod dense;
mod fused;
mod index;
mod layout;

pub use self::core::BackendCore;
pub use dense::DenseOps;
pub use fused::{BiasPart, FusedOps, check_bias_parts, sum_bias_relu_composed};
pub use index::IndexOps;
pub use layout::LayoutOps;

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
pub trait Backend: BackendCore + IndexOps + LayoutOps + DenseOps + FusedOps {}

impl<B: BackendCore + IndexOps + LayoutOps + DenseOps + FusedOps> Backend for B {}
