//! The `Backend` trait, the host reference ops, the canonical scatter-add
//! order and `IndexPlan`. Never depends on a device library.
//!
//! * [`Backend`]: a small required core (upload, download, zeros) and provided
//!   ops ([`Backend::index_select`], [`Backend::index_add`],
//!   [`Backend::swap_dims`], ...) whose defaults round-trip through host memory
//!   with this crate's [`reference`](mod@reference) implementations. Device backends override them.
//! * [`order`]: the one summation order of `index_add` every backend follows.
//! * [`IndexPlan`]: the CSR of the transposed selection matrix.
//! * [`ops`]: the dense, elementwise and segment ops of a graph-attention
//!   model ([`Backend::matmul`], [`Backend::segment_softmax`], ...): their
//!   definitions, fixed reduction orders and shared row kernels.
//! * [`HostIndexOps`]: a wrapper that forces a backend's index ops onto the
//!   host round-trip defaults (the "before" of a device gather/scatter).
//! * [`workload`]: the anchors' splitmix64 generators.

#[cfg(feature = "conformance")]
pub mod conformance;
mod element;
mod error;
mod host_alloc;
mod host_index;
pub mod ops;
pub mod order;
mod plan;
pub mod reference;
mod tensor;
pub mod workload;

pub use element::{DType, Element, bytes_of, vec_from_bytes};
pub use error::{Error, Result};
pub use host_alloc::{try_copy, try_vec, try_with_capacity};
pub use host_index::HostIndexOps;
pub use ops::{Binary, Unary};
pub use order::CANONICAL_BLOCK;
pub use plan::IndexPlan;
pub use tensor::Tensor;

use rtx_tensor::{Layout, PermuteKind};

/// The tensor type of backend `B` with elements `T`.
pub type BTensor<B, T> = Tensor<<B as Backend>::Buffer<T>>;

/// A compute backend. Implement the required core; override the provided ops
/// with native versions where the backend can do better than a host round trip.
///
/// All index ops work along dim 0 of 2-D tensors `[rows, features]` and take
/// host index lists of `u32`. Every op validates its inputs before any work:
/// an out-of-range index is [`Error::IndexOutOfRange`] and leaves the
/// destination untouched. No op panics on bad input: shapes that do not fit,
/// output sizes that overflow 64 bits ([`Error::Layout`]) and host memory that
/// cannot be reserved ([`Error::HostAllocation`]) are error values.
///
/// **Exactness.** Index ops (`index_select`, `index_add*`, `segment_max`,
/// `segment_sum`) give the same bits on every backend (the
/// [canonical order](order) for sums), and every fused or composed op
/// (`segment_softmax*`, `gather_scale_scatter`, `gather_head_dot`) gives the
/// same bits as its defining composition on the same backend. The dense ops
/// (`matmul`, `sum_rows`, `head_dot`, `axpy`) and `exp` are defined by the
/// [`ops`] reference, but a backend is only held to them within a tolerance
/// (a device may use cuBLAS, its own summation order, fused multiply-adds or
/// its own `exp`); the remaining elementwise ops (`binary`, `head_scale`,
/// relu, leaky relu, scale) round once per operation and are bit-exact.
pub trait Backend: Send + Sync + std::fmt::Debug {
    /// A buffer of `T` elements owned by the backend (host or device memory).
    type Buffer<T: Element>: Send + Sync + std::fmt::Debug;

    /// A short name for reports (`"cpu"`, `"cuda:0"`).
    fn name(&self) -> String;

    /// Copies `data` into a new contiguous tensor of `shape`.
    ///
    /// # Errors
    /// [`Error::LengthMismatch`] when `data.len()` is not the shape's element count;
    /// device errors (out of memory).
    fn upload<T: Element>(&self, data: &[T], shape: &[usize]) -> Result<BTensor<Self, T>>;

    /// Copies a tensor's elements to the host, in row-major order.
    ///
    /// # Errors
    /// Device errors.
    fn download<T: Element>(&self, t: &BTensor<Self, T>) -> Result<Vec<T>>;

    /// A new contiguous tensor of `shape` filled with zeros.
    ///
    /// # Errors
    /// Size overflow; device errors (out of memory).
    fn zeros<T: Element>(&self, shape: &[usize]) -> Result<BTensor<Self, T>>;

    /// Waits until all work queued on this backend has finished (for timing).
    ///
    /// Default: nothing, for backends whose ops complete before they return
    /// (host backends). Asynchronous device backends override it.
    ///
    /// # Errors
    /// Device errors.
    fn synchronize(&self) -> Result<()> {
        Ok(())
    }

    /// Makes `t`'s buffer its own (copying it if another tensor shares it), so
    /// it can be written in place.
    ///
    /// Default: download and upload (a host round trip); backends with a
    /// device-to-device copy override it.
    ///
    /// # Errors
    /// Device errors.
    fn make_unique<T: Element>(&self, t: &mut BTensor<Self, T>) -> Result<()> {
        if !t.is_unique() {
            let host = self.download(t)?;
            *t = self.upload(&host, t.shape())?;
        }
        Ok(())
    }

    /// Gather along dim 0: `out[i, :] = src[idx[i], :]`, `src: [R, F]`, `out: [E, F]`.
    ///
    /// Default: a host round trip (download `src`, [`reference::index_select`],
    /// upload). Device backends override it with a device kernel.
    ///
    /// # Errors
    /// [`Error::Rank`] unless `src` is 2-D; [`Error::IndexOutOfRange`];
    /// [`Error::Layout`] when `[E, F]` overflows.
    fn index_select<T: Element>(
        &self,
        src: &BTensor<Self, T>,
        idx: &[u32],
    ) -> Result<BTensor<Self, T>> {
        let (rows, f) = dims2("index_select", "src", src.layout())?;
        reference::check_indices(idx, rows)?;
        let host = self.download(src)?;
        let out = reference::index_select(&host, rows, f, idx)?;
        self.upload(&out, &[idx.len(), f])
    }

    /// Scatter-add along dim 0, in place: `dst[idx[i], :] += src[i, :]`,
    /// `dst: [R, F]`, `src: [E, F]`, summed in the [canonical order](order).
    ///
    /// Default: builds an [`IndexPlan`] and calls [`Backend::index_add_planned`].
    ///
    /// # Errors
    /// [`Error::Rank`], [`Error::ShapeMismatch`], [`Error::IndexOutOfRange`],
    /// [`Error::TooManyIndices`] (more than `u32::MAX` entries), and the
    /// errors of building the plan ([`IndexPlan::new`]), all before any work:
    /// `dst` untouched.
    fn index_add<T: Element>(
        &self,
        dst: &mut BTensor<Self, T>,
        idx: &[u32],
        src: &BTensor<Self, T>,
    ) -> Result<()> {
        let (rows, _) = dims2("index_add", "dst", dst.layout())?;
        let plan = IndexPlan::new(idx, rows)?;
        self.index_add_planned(dst, &plan, src)
    }

    /// [`Backend::index_add`] with a prebuilt plan (a static graph builds it once).
    ///
    /// Default: a host round trip (download both, [`reference::index_add`],
    /// upload the result). Device backends override it with a device kernel.
    ///
    /// # Errors
    /// [`Error::Rank`], [`Error::ShapeMismatch`] (plan rows or entries vs the
    /// tensors), before any work.
    fn index_add_planned<T: Element>(
        &self,
        dst: &mut BTensor<Self, T>,
        plan: &IndexPlan,
        src: &BTensor<Self, T>,
    ) -> Result<()> {
        let f = check_index_add(dst.layout(), plan, src.layout())?;
        let mut host = self.download(dst)?;
        let s = self.download(src)?;
        reference::index_add(&mut host, f, plan, &s)?;
        *dst = self.upload(&host, dst.shape())?;
        Ok(())
    }

    /// Swaps dims `a` and `b`. The output is contiguous in its new shape.
    ///
    /// Default: follows [`Layout::plan_swap`]: a relabel shares the buffer (no
    /// copy, on every backend); anything else is a host round trip through
    /// [`rtx_tensor::permute_host`]. Device backends override the copying cases.
    ///
    /// # Errors
    /// Bad dims ([`Error::Layout`]).
    fn swap_dims<T: Element>(
        &self,
        t: &BTensor<Self, T>,
        a: usize,
        b: usize,
    ) -> Result<BTensor<Self, T>> {
        let mut perm: Vec<usize> = (0..t.layout().rank()).collect();
        if a >= perm.len() || b >= perm.len() {
            // let the planner produce the error naming the dim
            t.layout().plan_swap(a, b)?;
        }
        perm.swap(a, b);
        self.permute(t, &perm)
    }

    /// Permutes dims: output dim `i` is input dim `perm[i]`; contiguous output.
    ///
    /// Default: as [`Backend::swap_dims`] (relabel shares, else host round trip).
    ///
    /// # Errors
    /// A bad permutation ([`Error::Layout`]).
    fn permute<T: Element>(
        &self,
        t: &BTensor<Self, T>,
        perm: &[usize],
    ) -> Result<BTensor<Self, T>> {
        let plan = t.layout().plan_permute(perm)?;
        if plan.kind == PermuteKind::Relabel {
            return Ok(t.relabel(plan.output));
        }
        let host = self.download(t)?;
        let out = rtx_tensor::permute_host(&host, t.shape(), perm)?;
        self.upload(&out, plan.output.shape())
    }

    // ------------------------------------------------------------ model ops
    //
    // The ops of a graph-attention model (see [`ops`] for their exact
    // definitions and reduction orders). Dense ops default to a host round
    // trip over the [`ops`] reference; the segment ops built from other ops
    // default to that composition on the backend itself.

    /// Matrix product `op(a) @ op(b)` of 2-D tensors, `op` transposing when its
    /// flag is set: `[m, k] @ [k, n] -> [m, n]`; `k == 0` gives zeros. The
    /// reference ([`ops::matmul`]) sums the inner dimension in the canonical
    /// order, each product rounded (no FMA); a backend is held to it within a
    /// tolerance only (a dense op: see the trait docs).
    ///
    /// Default: a host round trip (download both, [`ops::matmul`], upload).
    /// Device backends override it.
    ///
    /// # Errors
    /// [`Error::Rank`]; [`Error::ShapeMismatch`] naming both shapes;
    /// [`Error::Layout`] when `[m, n]` overflows.
    fn matmul<T: Element>(
        &self,
        a: &BTensor<Self, T>,
        trans_a: bool,
        b: &BTensor<Self, T>,
        trans_b: bool,
    ) -> Result<BTensor<Self, T>> {
        let (m, _, n) = ops::check_matmul(a.shape(), trans_a, b.shape(), trans_b)?;
        let ha = self.download(a)?;
        let hb = self.download(b)?;
        let out = ops::matmul(&ha, a.shape(), trans_a, &hb, b.shape(), trans_b)?;
        self.upload(&out, &[m, n])
    }

    /// `op(x)` elementwise (relu, leaky relu, exp, scale); same shape out.
    /// Relu, leaky relu and scale are bit-exact; `exp` is the backend's own
    /// (held to the host's within a tolerance).
    ///
    /// Default: a host round trip over [`ops::unary`]. Device backends override it.
    ///
    /// # Errors
    /// Device errors.
    fn unary<T: Element>(&self, op: Unary, x: &BTensor<Self, T>) -> Result<BTensor<Self, T>> {
        let hx = self.download(x)?;
        self.upload(&ops::unary(op, &hx), x.shape())
    }

    /// The backward of `op` at input `x` applied to the upstream gradient `grad`
    /// (see [`ops::unary_backward_slice`]).
    ///
    /// Default: a host round trip over [`ops::unary_backward`]. Device backends override it.
    ///
    /// # Errors
    /// [`Error::ShapeMismatch`] unless `x` and `grad` have one shape.
    fn unary_backward<T: Element>(
        &self,
        op: Unary,
        x: &BTensor<Self, T>,
        grad: &BTensor<Self, T>,
    ) -> Result<BTensor<Self, T>> {
        ops::check_same("unary_backward", x.shape(), grad.shape())?;
        let hx = self.download(x)?;
        let hg = self.download(grad)?;
        self.upload(&ops::unary_backward(op, &hx, &hg)?, x.shape())
    }

    /// `a op b` elementwise; `b` may be one row `[1, f]` broadcast over `a: [n, f]`.
    ///
    /// Default: a host round trip over [`ops::binary`]. Device backends override it.
    ///
    /// # Errors
    /// [`Error::ShapeMismatch`] naming both shapes.
    fn binary<T: Element>(
        &self,
        op: Binary,
        a: &BTensor<Self, T>,
        b: &BTensor<Self, T>,
    ) -> Result<BTensor<Self, T>> {
        let (f, broadcast) = ops::check_binary(op, a.shape(), b.shape())?;
        let ha = self.download(a)?;
        let hb = self.download(b)?;
        self.upload(&ops::binary(op, &ha, &hb, f, broadcast), a.shape())
    }

    /// In place `y = y + alpha * x` (an SGD step is `axpy(w, -lr, grad)`);
    /// `alpha` is rounded to `T` once. A dense op: held to [`ops::axpy_slice`]
    /// within a tolerance (a device may fuse the multiply-add).
    ///
    /// Default: a host round trip (download both, [`ops::axpy_slice`], upload
    /// the result as `y`'s new buffer). Device backends override it.
    ///
    /// # Errors
    /// [`Error::ShapeMismatch`] naming both shapes (before any work: `y` untouched).
    fn axpy<T: Element>(
        &self,
        y: &mut BTensor<Self, T>,
        alpha: f64,
        x: &BTensor<Self, T>,
    ) -> Result<()> {
        ops::check_same("axpy", y.shape(), x.shape())?;
        let mut hy = self.download(y)?;
        let hx = self.download(x)?;
        ops::axpy_slice(&mut hy, T::from_f64(alpha), &hx);
        *y = self.upload(&hy, y.shape())?;
        Ok(())
    }

    /// Column sums of `x: [n, f]` into `[1, f]` (`n == 0` gives zeros); the
    /// reference sums the rows in the canonical order (a dense op: held to it
    /// within a tolerance, see the trait docs).
    ///
    /// Default: a host round trip over [`ops::sum_rows`]. Device backends override it.
    ///
    /// # Errors
    /// [`Error::Rank`] unless `x` is 2-D.
    fn sum_rows<T: Element>(&self, x: &BTensor<Self, T>) -> Result<BTensor<Self, T>> {
        let (n, f) = dims2("sum_rows", "x", x.layout())?;
        let hx = self.download(x)?;
        self.upload(&ops::sum_rows(&hx, n, f), &[1, f])
    }

    /// Per-head dot products: `a: [n, heads*c]`, `b: [n, heads*c]` or `[1, heads*c]`
    /// (broadcast), out `[n, heads]` with `out[i, h] = sum_j a[i, h*c+j] * b[i, h*c+j]`.
    /// (Attention logits `a_src . Wx` per head; the backward of [`Backend::head_scale`].)
    /// A dense op: held to the [`ops::head_dot`] reference within a tolerance.
    ///
    /// Default: a host round trip over [`ops::head_dot`]. Device backends override it.
    ///
    /// # Errors
    /// [`Error::Rank`]; [`Error::ShapeMismatch`] naming both shapes and `heads`;
    /// [`Error::Layout`] when `[n, heads]` overflows.
    fn head_dot<T: Element>(
        &self,
        a: &BTensor<Self, T>,
        b: &BTensor<Self, T>,
        heads: usize,
    ) -> Result<BTensor<Self, T>> {
        let (n, h, c, b_rows) = ops::check_head_dot(a.shape(), b.shape(), heads)?;
        let ha = self.download(a)?;
        let hb = self.download(b)?;
        self.upload(&ops::head_dot(&ha, &hb, n, h, c, b_rows), &[n, h])
    }

    /// Per-head scaling: `a: [n, heads*c]` or `[1, heads*c]` (broadcast),
    /// `s: [n, heads]`, out `[n, heads*c]` with `out[i, h*c+j] = a[i, h*c+j] * s[i, h]`.
    /// (Messages `alpha * Wx_src`; the backward of [`Backend::head_dot`].)
    ///
    /// Default: a host round trip over [`ops::head_scale`]. Device backends override it.
    ///
    /// # Errors
    /// [`Error::Rank`]; [`Error::ShapeMismatch`] naming both shapes;
    /// [`Error::Layout`] when `[n, heads*c]` overflows (a broadcast `a`).
    fn head_scale<T: Element>(
        &self,
        a: &BTensor<Self, T>,
        s: &BTensor<Self, T>,
    ) -> Result<BTensor<Self, T>> {
        let (n, h, c, a_rows) = ops::check_head_scale(a.shape(), s.shape())?;
        let ha = self.download(a)?;
        let hs = self.download(s)?;
        self.upload(&ops::head_scale(&ha, &hs, n, h, c, a_rows), &[n, h * c])
    }

    /// Segment max: `x: [plan.len(), f]` into `[plan.rows(), f]`, row `r` the
    /// column-wise maximum of the entries of plan row `r` (an index op: see
    /// [`ops`] for ties, NaN and empty rows).
    ///
    /// Default: a host round trip over [`ops::segment_max`]. Device backends override it.
    ///
    /// # Errors
    /// [`Error::Rank`]; [`Error::ShapeMismatch`] naming the shape and the plan;
    /// [`Error::Layout`] when `[plan.rows(), f]` overflows.
    fn segment_max<T: Element>(
        &self,
        x: &BTensor<Self, T>,
        plan: &IndexPlan,
    ) -> Result<BTensor<Self, T>> {
        let (_, f) = ops::check_segment("segment_max", x.shape(), plan)?;
        let out = Layout::contiguous(&[plan.rows(), f])?;
        let hx = self.download(x)?;
        self.upload(&ops::segment_max(&hx, f, plan), out.shape())
    }

    /// Segment sum: `x: [plan.len(), f]` into `[plan.rows(), f]`; exactly
    /// `index_add_planned` into zeros (canonical order; empty rows `+0.0`).
    ///
    /// Default: [`Backend::zeros`] then [`Backend::index_add_planned`] on this
    /// backend (no round trip of its own).
    ///
    /// # Errors
    /// [`Error::Rank`]; [`Error::ShapeMismatch`] naming the shape and the plan;
    /// [`Error::Layout`] when `[plan.rows(), f]` overflows.
    fn segment_sum<T: Element>(
        &self,
        x: &BTensor<Self, T>,
        plan: &IndexPlan,
    ) -> Result<BTensor<Self, T>> {
        let (_, f) = ops::check_segment("segment_sum", x.shape(), plan)?;
        let mut out = self.zeros(&[plan.rows(), f])?;
        self.index_add_planned(&mut out, plan, x)?;
        Ok(out)
    }

    /// Softmax over each segment (each destination's incoming edges):
    /// `x: [plan.len(), f]` (one column per head), out the same shape,
    /// max-subtracted. Defined as the composition in [`ops`]; a fused
    /// override must give the same bits.
    ///
    /// Default: that composition on this backend ([`Backend::segment_max`],
    /// [`Backend::index_select`], [`Backend::binary`], [`Backend::unary`],
    /// [`Backend::segment_sum`]): no round trip beyond those ops' own.
    ///
    /// # Errors
    /// [`Error::Rank`]; [`Error::ShapeMismatch`] naming the shape and the plan.
    fn segment_softmax<T: Element>(
        &self,
        x: &BTensor<Self, T>,
        plan: &IndexPlan,
    ) -> Result<BTensor<Self, T>> {
        ops::check_segment("segment_softmax", x.shape(), plan)?;
        let idx = ops::plan_indices(plan);
        let m = self.segment_max(x, plan)?;
        let d = self.binary(Binary::Sub, x, &self.index_select(&m, &idx)?)?;
        let e = self.unary(Unary::Exp, &d)?;
        let s = self.segment_sum(&e, plan)?;
        self.binary(Binary::Div, &e, &self.index_select(&s, &idx)?)
    }

    /// The backward of [`Backend::segment_softmax`] from its output `alpha`
    /// and the upstream gradient `grad`: `alpha * (grad - gather(segment_sum(alpha * grad)))`.
    ///
    /// Default: that composition on this backend; a fused override must give the same bits.
    ///
    /// # Errors
    /// [`Error::Rank`]; [`Error::ShapeMismatch`] naming the shapes and the plan.
    fn segment_softmax_backward<T: Element>(
        &self,
        alpha: &BTensor<Self, T>,
        grad: &BTensor<Self, T>,
        plan: &IndexPlan,
    ) -> Result<BTensor<Self, T>> {
        ops::check_segment("segment_softmax_backward", alpha.shape(), plan)?;
        ops::check_same("segment_softmax_backward", alpha.shape(), grad.shape())?;
        let idx = ops::plan_indices(plan);
        let t = self.binary(Binary::Mul, alpha, grad)?;
        let s = self.segment_sum(&t, plan)?;
        let u = self.binary(Binary::Sub, grad, &self.index_select(&s, &idx)?)?;
        self.binary(Binary::Mul, alpha, &u)
    }

    /// Fused message passing: `segment_sum(head_scale(index_select(x, gather),
    /// weights), plan)`, i.e. `out[r] = sum over entries p of plan row r of
    /// weights[p, h] * x[gather[p]]` (per head block), without materializing
    /// the `[E, heads*c]` messages. `x: [n, heads*c]`, `weights: [E, heads]`,
    /// `gather.len() == plan.len() == E`; out `[plan.rows(), heads*c]`.
    /// (GAT aggregation forward with `gather = src`, `plan` by destination;
    /// its adjoint with `gather = dst`, `plan` by source.) An index op.
    ///
    /// Default: that composition on this backend; a fused override must give
    /// the same bits.
    ///
    /// # Errors
    /// [`Error::Rank`]; [`Error::ShapeMismatch`]; [`Error::IndexOutOfRange`];
    /// [`Error::Layout`] when `[plan.rows(), heads*c]` overflows (all before any work).
    fn gather_scale_scatter<T: Element>(
        &self,
        x: &BTensor<Self, T>,
        gather: &[u32],
        weights: &BTensor<Self, T>,
        plan: &IndexPlan,
    ) -> Result<BTensor<Self, T>> {
        ops::check_gather_scale_scatter(x.shape(), gather, weights.shape(), plan)?;
        let msg = self.head_scale(&self.index_select(x, gather)?, weights)?;
        self.segment_sum(&msg, plan)
    }

    /// Fused edge scores: `head_dot(index_select(a, a_idx), index_select(b,
    /// b_idx), heads)`, out `[E, heads]` with `out[p, h] = a[a_idx[p]]_h .
    /// b[b_idx[p]]_h`. (The attention-weight gradient of a GAT.) An index op.
    ///
    /// Default: that composition on this backend; a fused override must give
    /// the same bits.
    ///
    /// # Errors
    /// [`Error::Rank`]; [`Error::ShapeMismatch`]; [`Error::IndexOutOfRange`];
    /// [`Error::Layout`] when `[E, heads]` overflows (all before any work).
    fn gather_head_dot<T: Element>(
        &self,
        a: &BTensor<Self, T>,
        a_idx: &[u32],
        b: &BTensor<Self, T>,
        b_idx: &[u32],
        heads: usize,
    ) -> Result<BTensor<Self, T>> {
        ops::check_gather_head_dot(a.shape(), a_idx, b.shape(), b_idx, heads)?;
        let ga = self.index_select(a, a_idx)?;
        let gb = self.index_select(b, b_idx)?;
        self.head_dot(&ga, &gb, heads)
    }
}

/// `(rows, features)` of a 2-D layout, or [`Error::Rank`].
///
/// # Errors
/// [`Error::Rank`] naming the op and the argument.
pub fn dims2(op: &'static str, arg: &'static str, l: &Layout) -> Result<(usize, usize)> {
    shape2(op, arg, l.shape())
}

/// [`dims2`] of a bare shape (the argument checks in [`ops`] take shapes).
pub(crate) fn shape2(
    op: &'static str,
    arg: &'static str,
    shape: &[usize],
) -> Result<(usize, usize)> {
    match *shape {
        [r, f] => Ok((r, f)),
        _ => Err(Error::Rank {
            op,
            arg,
            expected: 2,
            shape: shape.to_vec(),
        }),
    }
}

/// Validates `index_add(dst, plan, src)` shapes; returns the feature count.
///
/// # Errors
/// [`Error::Rank`] or [`Error::ShapeMismatch`] naming both shapes.
pub fn check_index_add(dst: &Layout, plan: &IndexPlan, src: &Layout) -> Result<usize> {
    let (rows, f) = dims2("index_add", "dst", dst)?;
    let (e, fs) = dims2("index_add", "src", src)?;
    if rows != plan.rows() || e != plan.len() || f != fs {
        return Err(Error::ShapeMismatch {
            op: "index_add",
            detail: format!(
                "dst {:?} and src {:?} with an index plan of {} entries into {} rows \
                 (want dst [R, F], src [E, F])",
                dst.shape(),
                src.shape(),
                plan.len(),
                plan.rows()
            ),
        });
    }
    Ok(f)
}
