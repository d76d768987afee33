//! [`FusedOps`]: ops defined as a composition of index and dense ops, which
//! a backend may fuse as long as it gives the composition's bits.
//!
//! For `bf16` and `f16` a fused op is its `f32` op on the widened inputs,
//! rounded once per output (its intermediates stay in `f32`, as a fused
//! kernel keeps them): the defaults run the backend's `f32` op on `f32`
//! copies of the inputs. The composition of half-precision ops, which
//! rounds every intermediate, is not the definition.

use super::{round_t, widen_t};
use crate::{BTensor, Binary, DenseOps, Element, IndexOps, Indices, Result, Unary, ops};

/// One part of [`FusedOps::sum_bias_relu`]: a relation's aggregation
/// `[n, f]` and its bias `[1, f]`.
pub type BiasPart<'a, B, T> = (&'a BTensor<B, T>, &'a BTensor<B, T>);

/// `(n, f)` of [`FusedOps::sum_bias_relu`]'s parts (see
/// [`ops::check_sum_bias_relu`]).
///
/// # Errors
/// As [`ops::check_sum_bias_relu`].
pub fn check_bias_parts<B: DenseOps + ?Sized, T: Element>(
    parts: &[BiasPart<'_, B, T>],
) -> Result<(usize, usize)> {
    let shapes: Vec<(&[usize], &[usize])> = parts
        .iter()
        .map(|(x, bias)| (x.shape(), bias.shape()))
        .collect();
    ops::check_sum_bias_relu(&shapes)
}

/// [`FusedOps::sum_bias_relu`] as its composition of [`DenseOps::binary`]
/// and [`DenseOps::unary`] on `b` (its default; a fused override may call
/// it for what its kernel has no room for), shapes checked first.
///
/// # Errors
/// As [`FusedOps::sum_bias_relu`].
pub fn sum_bias_relu_composed<B: DenseOps + ?Sized, T: Element>(
    b: &B,
    parts: &[BiasPart<'_, B, T>],
) -> Result<BTensor<B, T>> {
    check_bias_parts::<B, T>(parts)?;
    let mut acc: Option<BTensor<B, T>> = None;
    for (x, bias) in parts {
        let t = b.binary(Binary::Add, x, bias)?;
        acc = Some(match acc {
            None => t,
            Some(s) => b.binary(Binary::Add, &s, &t)?,
        });
    }
    let sum = acc.expect("checked: at least one part");
    b.unary(Unary::Relu, &sum)
}

/// Fused ops: each is defined as a composition of [`IndexOps`] and
/// [`DenseOps`] on the same backend, and its default is that composition (no
/// round trip beyond those ops' own). A fused override must give the same
/// bits as the composition.
pub trait FusedOps: IndexOps + DenseOps {
    /// Softmax over each segment (each destination's incoming edges):
    /// `x: [E, f]` (one column per head) for indices of `E` entries, out the
    /// same shape, max-subtracted. Defined as the composition in [`ops`]; a
    /// fused override must give the same bits.
    ///
    /// Default: that composition on this backend ([`IndexOps::segment_max`],
    /// [`IndexOps::index_select`], [`DenseOps::binary`], [`DenseOps::unary`],
    /// [`IndexOps::segment_sum`]): no round trip beyond those ops' own.
    ///
    /// # Errors
    /// [`Error::Rank`](crate::Error::Rank); [`Error::ShapeMismatch`](crate::Error::ShapeMismatch) naming the shape and the
    /// indices, or for a list without a row count.
    fn segment_softmax<'i, T: Element>(
        &self,
        x: &BTensor<Self, T>,
        idx: impl Into<Indices<'i, Self>>,
    ) -> Result<BTensor<Self, T>> {
        let idx = idx.into();
        let rows = idx.needed_rows("segment_softmax")?;
        ops::check_segment_len("segment_softmax", x.shape(), idx.len(self), rows)?;
        if T::DTYPE.is_half() {
            return round_t(self, &self.segment_softmax(&widen_t(self, x)?, idx)?);
        }
        // the indices resolved once: the plan to reduce by, each entry's row
        // to gather by
        let plan = idx.host_plan(self, "segment_softmax", rows)?;
        let row_of = ops::plan_indices(&plan);
        let m = self.segment_max(x, &*plan)?;
        let d = self.binary(Binary::Sub, x, &self.index_select(&m, &row_of)?)?;
        let e = self.unary(Unary::Exp, &d)?;
        let s = self.segment_sum(&e, &*plan)?;
        self.binary(Binary::Div, &e, &self.index_select(&s, &row_of)?)
    }

    /// The backward of [`FusedOps::segment_softmax`] from its output `alpha`
    /// and the upstream gradient `grad`: `alpha * (grad - gather(segment_sum(alpha * grad)))`.
    ///
    /// Default: that composition on this backend; a fused override must give the same bits.
    ///
    /// # Errors
    /// [`Error::Rank`](crate::Error::Rank); [`Error::ShapeMismatch`](crate::Error::ShapeMismatch) naming the shapes and the
    /// indices, or for a list without a row count.
    fn segment_softmax_backward<'i, T: Element>(
        &self,
        alpha: &BTensor<Self, T>,
        grad: &BTensor<Self, T>,
        idx: impl Into<Indices<'i, Self>>,
    ) -> Result<BTensor<Self, T>> {
        let idx = idx.into();
        let op = "segment_softmax_backward";
        let rows = idx.needed_rows(op)?;
        ops::check_segment_len(op, alpha.shape(), idx.len(self), rows)?;
        ops::check_same(op, alpha.shape(), grad.shape())?;
        if T::DTYPE.is_half() {
            let (a, g) = (widen_t(self, alpha)?, widen_t(self, grad)?);
            return round_t(self, &self.segment_softmax_backward(&a, &g, idx)?);
        }
        let plan = idx.host_plan(self, op, rows)?;
        let t = self.binary(Binary::Mul, alpha, grad)?;
        let s = self.segment_sum(&t, &*plan)?;
        let u = self.binary(
            Binary::Sub,
            grad,
            &self.index_select(&s, &ops::plan_indices(&plan))?,
        )?;
        self.binary(Binary::Mul, alpha, &u)
    }

    /// Fused message passing: `segment_sum(head_scale(index_select(x,
    /// gather), weights), scatter)`, i.e. `out[r] = sum over entries p with
    /// scatter[p] = r of weights[p, h] * x[gather[p]]` (per head block,
    /// summed in the canonical order), without materializing the
    /// `[E, heads*c]` messages. `x: [n, heads*c]`, `weights: [E, heads]`,
    /// both indices of `E` entries; out `[R, heads*c]` for `scatter` into
    /// `R` rows. (GAT aggregation forward with `gather = src`, `scatter =
    /// dst`; its adjoint with the two swapped.) An index op.
    ///
    /// Default: that composition on this backend; a fused override must give
    /// the same bits.
    ///
    /// # Errors
    /// [`Error::Rank`](crate::Error::Rank); [`Error::ShapeMismatch`](crate::Error::ShapeMismatch) (also for a `scatter` list
    /// without a row count); [`Error::IndexOutOfRange`](crate::Error::IndexOutOfRange);
    /// [`Error::Layout`](crate::Error::Layout) when `[R, heads*c]` overflows (all before any work).
    fn gather_scale_scatter<'i, T: Element>(
        &self,
        x: &BTensor<Self, T>,
        gather: impl Into<Indices<'i, Self>>,
        weights: &BTensor<Self, T>,
        scatter: impl Into<Indices<'i, Self>>,
    ) -> Result<BTensor<Self, T>> {
        let (gather, scatter) = (gather.into(), scatter.into());
        let op = "gather_scale_scatter";
        let rows = scatter.needed_rows(op)?;
        let (n, ..) = ops::gather_scale_scatter_shapes(
            x.shape(),
            gather.len(self),
            weights.shape(),
            scatter.len(self),
            rows,
        )?;
        gather.rows_of(op, "x", n)?;
        if T::DTYPE.is_half() {
            let (x, w) = (widen_t(self, x)?, widen_t(self, weights)?);
            return round_t(self, &self.gather_scale_scatter(&x, gather, &w, scatter)?);
        }
        let msg = self.head_scale(&self.index_select(x, gather)?, weights)?;
        self.segment_sum(&msg, scatter)
    }

    /// Fused edge scores: `head_dot(index_select(a, a_idx), index_select(b,
    /// b_idx), heads)`, out `[E, heads]` with `out[p, h] = a[a_idx[p]]_h .
    /// b[b_idx[p]]_h`. (The attention-weight gradient of a GAT.) An index op.
    ///
    /// Default: that composition on this backend; a fused override must give
    /// the same bits.
    ///
    /// # Errors
    /// [`Error::Rank`](crate::Error::Rank); [`Error::ShapeMismatch`](crate::Error::ShapeMismatch); [`Error::IndexOutOfRange`](crate::Error::IndexOutOfRange);
    /// [`Error::Layout`](crate::Error::Layout) when `[E, heads]` overflows (all before any work).
    fn gather_head_dot<'i, T: Element>(
        &self,
        a: &BTensor<Self, T>,
        a_idx: impl Into<Indices<'i, Self>>,
        b: &BTensor<Self, T>,
        b_idx: impl Into<Indices<'i, Self>>,
        heads: usize,
    ) -> Result<BTensor<Self, T>> {
        let (a_idx, b_idx) = (a_idx.into(), b_idx.into());
        let (na, nb, _) = ops::gather_head_dot_shapes(
            a.shape(),
            a_idx.len(self),
            b.shape(),
            b_idx.len(self),
            heads,
        )?;
        a_idx.rows_of("gather_head_dot", "a", na)?;
        b_idx.rows_of("gather_head_dot", "b", nb)?;
        if T::DTYPE.is_half() {
            let (a, b) = (widen_t(self, a)?, widen_t(self, b)?);
            return round_t(self, &self.gather_head_dot(&a, a_idx, &b, b_idx, heads)?);
        }
        let ga = self.index_select(a, a_idx)?;
        let gb = self.index_select(b, b_idx)?;
        self.head_dot(&ga, &gb, heads)
    }

    /// Gathered sums: `index_select(a, a_idx) + index_select(b, b_idx)`, out
    /// `[E, f]` with `out[p] = a[a_idx[p]] + b[b_idx[p]]` for `a: [na, f]`,
    /// `b: [nb, f]`. (A GAT's edge logits from the source and destination
    /// nodes' logits.) An index op: bit-exact.
    ///
    /// Default: that composition on this backend; a fused override must give
    /// the same bits.
    ///
    /// # Errors
    /// [`Error::Rank`](crate::Error::Rank); [`Error::ShapeMismatch`](crate::Error::ShapeMismatch); [`Error::IndexOutOfRange`](crate::Error::IndexOutOfRange);
    /// [`Error::Layout`](crate::Error::Layout) when `[E, f]` overflows (all before any work).
    fn gather_add<'i, T: Element>(
        &self,
        a: &BTensor<Self, T>,
        a_idx: impl Into<Indices<'i, Self>>,
        b: &BTensor<Self, T>,
        b_idx: impl Into<Indices<'i, Self>>,
    ) -> Result<BTensor<Self, T>> {
        let (a_idx, b_idx) = (a_idx.into(), b_idx.into());
        let (na, nb, _) =
            ops::gather_add_shapes(a.shape(), a_idx.len(self), b.shape(), b_idx.len(self))?;
        a_idx.rows_of("gather_add", "a", na)?;
        b_idx.rows_of("gather_add", "b", nb)?;
        if T::DTYPE.is_half() {
            let (a, b) = (widen_t(self, a)?, widen_t(self, b)?);
            return round_t(self, &self.gather_add(&a, a_idx, &b, b_idx)?);
        }
        let ga = self.index_select(a, a_idx)?;
        let gb = self.index_select(b, b_idx)?;
        self.binary(Binary::Add, &ga, &gb)
    }

    /// `x + head_scale(a, s)`: a gradient that gathers a head-scaled term
    /// (an attention logit's share of its node's gradient), `x: [n, heads*c]`,
    /// `a` and `s` as for [`DenseOps::head_scale`]. Elementwise and bit-exact.
    ///
    /// Default: that composition; a fused override must give the same bits.
    ///
    /// # Errors
    /// As [`DenseOps::head_scale`]; [`Error::ShapeMismatch`](crate::Error::ShapeMismatch) unless `x` has its output's shape.
    fn add_head_scale<T: Element>(
        &self,
        x: &BTensor<Self, T>,
        a: &BTensor<Self, T>,
        s: &BTensor<Self, T>,
    ) -> Result<BTensor<Self, T>> {
        ops::check_add_head_scale(Some(x.shape()), a.shape(), s.shape())?;
        if T::DTYPE.is_half() {
            let (x, a, s) = (widen_t(self, x)?, widen_t(self, a)?, widen_t(self, s)?);
            return round_t(self, &self.add_head_scale(&x, &a, &s)?);
        }
        self.binary(Binary::Add, x, &self.head_scale(a, s)?)
    }

    /// Column sums of [`DenseOps::head_scale`]: `sum_rows(head_scale(a, s))`,
    /// `a: [n, heads*c]` (or `[1, heads*c]`, broadcast), `s: [n, heads]`, out
    /// `[1, heads*c]` (the gradient of an attention vector). A dense op: held
    /// to that composition's reference within a tolerance, like its parts.
    ///
    /// Default: that composition on this backend; a fused override computes
    /// each product as it sums (no `[n, heads*c]` intermediate).
    ///
    /// # Errors
    /// As [`DenseOps::head_scale`].
    fn head_scale_sum_rows<T: Element>(
        &self,
        a: &BTensor<Self, T>,
        s: &BTensor<Self, T>,
    ) -> Result<BTensor<Self, T>> {
        if T::DTYPE.is_half() {
            let (a, s) = (widen_t(self, a)?, widen_t(self, s)?);
            return round_t(self, &self.head_scale_sum_rows(&a, &s)?);
        }
        self.sum_rows(&self.head_scale(a, s)?)
    }

    /// A heterogeneous layer's output: each relation's aggregation plus its
    /// bias, summed over the relations into one node type, then relu:
    /// `relu(((x_0 + b_0) + (x_1 + b_1)) + ...)` for parts `(x_i: [n, f],
    /// b_i: [1, f])` in order, each bias broadcast over the rows. Elementwise
    /// and bit-exact, like its parts. (Relu's backward at this output is its
    /// backward at the sum: both are positive at the same elements.)
    ///
    /// Default: that composition ([`DenseOps::binary`], [`DenseOps::unary`]);
    /// a fused override must give the same bits.
    ///
    /// # Errors
    /// [`Error::ShapeMismatch`](crate::Error::ShapeMismatch) naming the part
    /// whose shapes do not fit, or when there is no part;
    /// [`Error::Rank`](crate::Error::Rank).
    fn sum_bias_relu<T: Element>(
        &self,
        parts: &[BiasPart<'_, Self, T>],
    ) -> Result<BTensor<Self, T>> {
        if T::DTYPE.is_half() {
            check_bias_parts::<Self, T>(parts)?;
            let wide = parts
                .iter()
                .map(|(x, b)| Ok((widen_t(self, x)?, widen_t(self, b)?)))
                .collect::<Result<Vec<_>>>()?;
            let refs: Vec<BiasPart<'_, Self, f32>> = wide.iter().map(|(x, b)| (x, b)).collect();
            return round_t(self, &self.sum_bias_relu(&refs)?);
        }
        sum_bias_relu_composed(self, parts)
    }
}
