//! [`DenseOps`]: the dense and elementwise ops of a graph-attention model.

use crate::ops::dims2;
use crate::{BTensor, BackendCore, Binary, Element, Result, Unary, ops};

/// Dense and elementwise ops (see [`ops`] for their definitions and reduction
/// orders). A backend is held to the [`ops`] reference only within a tolerance
/// for `matmul`, `sum_rows`, `head_dot`, `axpy` and `exp` (a device may use
/// cuBLAS, its own summation order, fused multiply-adds or its own `exp`);
/// the remaining elementwise ops (`binary`, `head_scale`, relu, leaky relu,
/// scale) round once per operation and are bit-exact. Every default is a host
/// round trip over the [`ops`] reference.
pub trait DenseOps: BackendCore {
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
    /// [`Error::Rank`](crate::Error::Rank); [`Error::ShapeMismatch`](crate::Error::ShapeMismatch) naming both shapes;
    /// [`Error::Layout`](crate::Error::Layout) when `[m, n]` overflows.
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
    /// Relu, leaky relu and scale are bit-exact; `exp` is held to
    /// [`crate::exp`] within a tolerance (the CPU and CUDA backends give its
    /// bits exactly).
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
    /// [`Error::ShapeMismatch`](crate::Error::ShapeMismatch) unless `x` and `grad` have one shape.
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
    /// [`Error::ShapeMismatch`](crate::Error::ShapeMismatch) naming both shapes.
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
    /// `alpha` is rounded to `T` once (to `f32` for the half types, which
    /// compute `y + alpha * x` in `f32` and round once). A dense op: held to [`ops::axpy_slice`]
    /// within a tolerance (a device may fuse the multiply-add).
    ///
    /// Default: a host round trip (download both, [`ops::axpy_slice`], upload
    /// the result as `y`'s new buffer). Device backends override it.
    ///
    /// # Errors
    /// [`Error::ShapeMismatch`](crate::Error::ShapeMismatch) naming both shapes (before any work: `y` untouched).
    fn axpy<T: Element>(
        &self,
        y: &mut BTensor<Self, T>,
        alpha: f64,
        x: &BTensor<Self, T>,
    ) -> Result<()> {
        ops::check_same("axpy", y.shape(), x.shape())?;
        let mut hy = self.download(y)?;
        let hx = self.download(x)?;
        crate::reference::axpy(&mut hy, alpha, &hx);
        *y = self.upload(&hy, y.shape())?;
        Ok(())
    }

    /// The weight update of mixed-precision training, in one pass on a
    /// device: `master = master + alpha * x` with `x` (of a narrower type
    /// `H`, a gradient) widened exactly to `master`'s type `H::Acc` (the bits
    /// of `axpy(master, alpha, &convert(x))`), then `low = master` rounded
    /// once to `H` (the bits of `convert(master)`): the master weights
    /// updated and their copy in `H` for the next step's forward pass. For
    /// `f32` and `f64` (their own `Acc`), `low` becomes a copy of `master`.
    ///
    /// Default: a host round trip over [`crate::reference::axpy`] and
    /// [`crate::reference::convert`]. Device backends override it.
    ///
    /// # Errors
    /// [`Error::ShapeMismatch`](crate::Error::ShapeMismatch) when `x` or
    /// `low` has another shape than `master` (before any work: nothing
    /// changed).
    fn axpy_mixed<H: Element>(
        &self,
        master: &mut BTensor<Self, H::Acc>,
        alpha: f64,
        x: &BTensor<Self, H>,
        low: &mut BTensor<Self, H>,
    ) -> Result<()> {
        ops::check_same("axpy_mixed", master.shape(), x.shape())?;
        ops::check_same("axpy_mixed", master.shape(), low.shape())?;
        let mut hm = self.download(master)?;
        let hx = crate::reference::convert::<H, H::Acc>(&self.download(x)?);
        crate::reference::axpy(&mut hm, alpha, &hx);
        let hl = crate::reference::convert::<H::Acc, H>(&hm);
        let shape = master.shape().to_vec();
        *master = self.upload(&hm, &shape)?;
        *low = self.upload(&hl, &shape)?;
        Ok(())
    }

    /// Column sums of `x: [n, f]` into `[1, f]` (`n == 0` gives zeros); the
    /// reference sums the rows in the canonical order (a dense op: held to it
    /// within a tolerance, see the trait docs).
    ///
    /// Default: a host round trip over [`ops::sum_rows`]. Device backends override it.
    ///
    /// # Errors
    /// [`Error::Rank`](crate::Error::Rank) unless `x` is 2-D.
    fn sum_rows<T: Element>(&self, x: &BTensor<Self, T>) -> Result<BTensor<Self, T>> {
        let (n, f) = dims2("sum_rows", "x", x.layout())?;
        let hx = self.download(x)?;
        self.upload(&ops::sum_rows(&hx, n, f), &[1, f])
    }

    /// Per-head dot products: `a: [n, heads*c]`, `b: [n, heads*c]` or `[1, heads*c]`
    /// (broadcast), out `[n, heads]` with `out[i, h] = sum_j a[i, h*c+j] * b[i, h*c+j]`.
    /// (Attention logits `a_src . Wx` per head; the backward of [`DenseOps::head_scale`].)
    /// A dense op: held to the [`ops::head_dot`] reference within a tolerance.
    ///
    /// Default: a host round trip over [`ops::head_dot`]. Device backends override it.
    ///
    /// # Errors
    /// [`Error::Rank`](crate::Error::Rank); [`Error::ShapeMismatch`](crate::Error::ShapeMismatch) naming both shapes and `heads`;
    /// [`Error::Layout`](crate::Error::Layout) when `[n, heads]` overflows.
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
    /// (Messages `alpha * Wx_src`; the backward of [`DenseOps::head_dot`].)
    ///
    /// Default: a host round trip over [`ops::head_scale`]. Device backends override it.
    ///
    /// # Errors
    /// [`Error::Rank`](crate::Error::Rank); [`Error::ShapeMismatch`](crate::Error::ShapeMismatch) naming both shapes;
    /// [`Error::Layout`](crate::Error::Layout) when `[n, heads*c]` overflows (a broadcast `a`).
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
}
