//! [`DenseOps`] of the CPU backend: the [`rtx_backend::ops`] row kernels run in
//! parallel, and `matmul` on the fast GEMM ([`gemm`]) unless the backend's
//! [`DenseKernels`] is `Reference`. The reference kernels compute every
//! output element by exactly the reference's operations in the reference's
//! order; the fast GEMM by a sequence that depends on the shapes alone. Rayon
//! only decides which thread computes an element, so results are
//! bit-identical for any thread count.

use rayon::prelude::*;
use rtx_backend::implement::{dims2, try_vec};
use rtx_backend::order::{CANONICAL_BLOCK, canonical_accumulate, reduce_blocks};
use rtx_backend::prelude::*;
use rtx_backend::{BTensor, Binary, Element, Error, Result, Tensor, Unary, ops};
use rtx_tensor::Layout;

use crate::tasks::{ELEMS_PER_TASK, MIN_ROWS_PER_TASK};
use crate::{CpuBackend, DenseKernels, gemm};

impl DenseOps for CpuBackend {
    fn matmul<T: Element>(
        &self,
        a: &BTensor<Self, T>,
        trans_a: bool,
        b: &BTensor<Self, T>,
        trans_b: bool,
    ) -> Result<BTensor<Self, T>> {
        let (m, k, n) = ops::check_matmul(a.shape(), trans_a, b.shape(), trans_b)?;
        if T::DTYPE.is_half() {
            let (a, b) = (self.widen(a)?, self.widen(b)?);
            return self.round(&self.matmul(&a, trans_a, &b, trans_b)?);
        }
        let layout = Layout::contiguous(&[m, n])?;
        let (xa, xb) = (a.storage(), b.storage());
        let out = match self.dense {
            DenseKernels::Fast => {
                // every element written (`k == 0`: zeros)
                let mut out = self.for_overwrite(&layout)?;
                self.install(|| gemm::matmul(xa, trans_a, xb, trans_b, m, k, n, &mut out));
                out
            }
            DenseKernels::Reference => {
                let mut out = self.zeroed(&layout)?;
                self.install(|| par_matmul(xa, trans_a, xb, trans_b, m, k, n, &mut out))?;
                out
            }
        };
        Ok(Tensor::new(out, layout))
    }

    fn unary<T: Element>(&self, op: Unary, x: &BTensor<Self, T>) -> Result<BTensor<Self, T>> {
        if T::DTYPE.is_half() {
            return self.round(&self.unary(op, &self.widen(x)?)?);
        }
        let xs = x.storage();
        let mut out = self.for_overwrite(x.layout())?;
        self.install(|| {
            out.par_chunks_mut(ELEMS_PER_TASK)
                .zip(xs.par_chunks(ELEMS_PER_TASK))
                .for_each(|(o, x)| ops::unary_slice(op, x, o));
        });
        Ok(Tensor::new(out, x.layout().clone()))
    }

    fn unary_backward<T: Element>(
        &self,
        op: Unary,
        x: &BTensor<Self, T>,
        grad: &BTensor<Self, T>,
    ) -> Result<BTensor<Self, T>> {
        ops::check_same("unary_backward", x.shape(), grad.shape())?;
        if T::DTYPE.is_half() {
            let (x, g) = (self.widen(x)?, self.widen(grad)?);
            return self.round(&self.unary_backward(op, &x, &g)?);
        }
        let (xs, gs) = (x.storage(), grad.storage());
        let mut out = self.for_overwrite(x.layout())?;
        let c = ELEMS_PER_TASK;
        self.install(|| {
            out.par_chunks_mut(c)
                .zip(xs.par_chunks(c))
                .zip(gs.par_chunks(c))
                .for_each(|((o, x), g)| ops::unary_backward_slice(op, x, g, o));
        });
        Ok(Tensor::new(out, x.layout().clone()))
    }

    fn binary<T: Element>(
        &self,
        op: Binary,
        a: &BTensor<Self, T>,
        b: &BTensor<Self, T>,
    ) -> Result<BTensor<Self, T>> {
        let (f, broadcast) = ops::check_binary(op, a.shape(), b.shape())?;
        if T::DTYPE.is_half() {
            return self.round(&self.binary(op, &self.widen(a)?, &self.widen(b)?)?);
        }
        let (xa, xb) = (a.storage(), b.storage());
        let mut out = self.for_overwrite(a.layout())?;
        if broadcast {
            let rows = ELEMS_PER_TASK.checked_div(f).unwrap_or(1).max(1);
            self.par_rows(&mut out, f, rows, |i, o| {
                ops::binary_slice(op, &xa[i * f..(i + 1) * f], xb, o);
            });
        } else {
            let c = ELEMS_PER_TASK;
            self.install(|| {
                out.par_chunks_mut(c)
                    .zip(xa.par_chunks(c))
                    .zip(xb.par_chunks(c))
                    .for_each(|((o, x), y)| ops::binary_slice(op, x, y, o));
            });
        }
        Ok(Tensor::new(out, a.layout().clone()))
    }

    fn axpy<T: Element>(
        &self,
        y: &mut BTensor<Self, T>,
        alpha: f64,
        x: &BTensor<Self, T>,
    ) -> Result<()> {
        ops::check_same("axpy", y.shape(), x.shape())?;
        if T::DTYPE.is_half() {
            // in f32 (alpha rounded to f32), each result rounded once
            let mut wy = self.widen(y)?;
            self.axpy(&mut wy, alpha, &self.widen(x)?)?;
            *y = self.round(&wy)?;
            return Ok(());
        }
        self.make_unique(y)?;
        let xs = x.storage();
        let ys = y.storage_mut().expect("unique after make_unique");
        let alpha = T::from_f64(alpha);
        let c = ELEMS_PER_TASK;
        self.install(|| {
            ys.par_chunks_mut(c)
                .zip(xs.par_chunks(c))
                .for_each(|(y, x)| ops::axpy_slice(y, alpha, x));
        });
        Ok(())
    }

    fn sum_rows<T: Element>(&self, x: &BTensor<Self, T>) -> Result<BTensor<Self, T>> {
        let (n, f) = dims2("sum_rows", "x", x.layout())?;
        if T::DTYPE.is_half() {
            return self.round(&self.sum_rows(&self.widen(x)?)?);
        }
        let layout = Layout::contiguous(&[1, f])?;
        let xs = x.storage();
        let mut out = self.for_overwrite(&layout)?;
        self.install(|| {
            par_accumulate(n, &mut out, |p, acc, first| {
                let r = &xs[p * f..(p + 1) * f];
                if first {
                    acc.copy_from_slice(r);
                } else {
                    for (o, &v) in acc.iter_mut().zip(r) {
                        *o = *o + v;
                    }
                }
            })
        })?;
        Ok(Tensor::new(out, layout))
    }

    fn head_dot<T: Element>(
        &self,
        a: &BTensor<Self, T>,
        b: &BTensor<Self, T>,
        heads: usize,
    ) -> Result<BTensor<Self, T>> {
        let (n, h, c, b_rows) = ops::check_head_dot(a.shape(), b.shape(), heads)?;
        if T::DTYPE.is_half() {
            return self.round(&self.head_dot(&self.widen(a)?, &self.widen(b)?, heads)?);
        }
        let (xa, xb) = (a.storage(), b.storage());
        let f = h * c;
        let layout = Layout::contiguous(&[n, h])?;
        let mut out = self.for_overwrite(&layout)?;
        self.par_rows(&mut out, h, MIN_ROWS_PER_TASK, |i, o| {
            let br = if b_rows == 1 { 0 } else { i };
            ops::head_dot_row(&xa[i * f..(i + 1) * f], &xb[br * f..(br + 1) * f], c, o);
        });
        Ok(Tensor::new(out, layout))
    }

    fn head_scale<T: Element>(
        &self,
        a: &BTensor<Self, T>,
        s: &BTensor<Self, T>,
    ) -> Result<BTensor<Self, T>> {
        self.head_scale_plus(None, a, s)
    }
}

impl CpuBackend {
    /// `head_scale(a, s)`, added to `x` when given (`x + product`, the
    /// composition's order: `add_head_scale`), in one pass over the rows.
    pub(crate) fn head_scale_plus<T: Element>(
        &self,
        x: Option<&BTensor<Self, T>>,
        a: &BTensor<Self, T>,
        s: &BTensor<Self, T>,
    ) -> Result<BTensor<Self, T>> {
        let (n, h, c, a_rows) =
            ops::check_add_head_scale(x.map(|x| x.shape()), a.shape(), s.shape())?;
        if T::DTYPE.is_half() {
            let x = x.map(|x| self.widen(x)).transpose()?;
            let (a, s) = (self.widen(a)?, self.widen(s)?);
            return self.round(&self.head_scale_plus(x.as_ref(), &a, &s)?);
        }
        let f = h * c;
        let (xx, xa, xs) = (x.map(|x| &x.storage()[..]), a.storage(), s.storage());
        let layout = Layout::contiguous(&[n, f])?;
        let mut out = self.for_overwrite(&layout)?;
        self.par_rows(&mut out, f, MIN_ROWS_PER_TASK, |i, o| {
            let ar = if a_rows == 1 { 0 } else { i };
            ops::head_scale_row(&xa[ar * f..(ar + 1) * f], &xs[i * h..(i + 1) * h], c, o);
            if let Some(xx) = xx {
                for (o, &v) in o.iter_mut().zip(&xx[i * f..(i + 1) * f]) {
                    *o = ops::add(v, *o);
                }
            }
        });
        Ok(Tensor::new(out, layout))
    }
}

/// Multiply-adds per rayon task of a matrix product.
const ROW_TILE_ELEMS: usize = 64 * 1024;

/// The canonical sum of `k > CANONICAL_BLOCK` vector terms of `out.len()`
/// values, its level-0 blocks computed in parallel: `block(p0, p1, acc)` must
/// write into `acc` the left-to-right sum of terms `p0..p1`, starting from
/// term `p0` (one level-0 block of the canonical order); the higher levels are
/// the same sequential [`reduce_blocks`] as everywhere else. The one parallel
/// form of the canonical order in this crate ([`par_accumulate`] and the
/// `A^T B` path of [`par_matmul`] use it).
fn par_blocks<T: Element>(
    k: usize,
    out: &mut [T],
    block: impl Fn(usize, usize, &mut [T]) + Sync,
) -> Result<()> {
    let f = out.len();
    debug_assert!(k > CANONICAL_BLOCK && f > 0);
    let blocks = k.div_ceil(CANONICAL_BLOCK);
    let len = blocks.checked_mul(f).ok_or_else(|| Error::SizeOverflow {
        op: "canonical sum",
        what: format!("{blocks} level-0 blocks of {f} values"),
    })?;
    let mut scratch = try_vec(len, T::ZERO)?;
    scratch.par_chunks_mut(f).enumerate().for_each(|(b, acc)| {
        let p0 = b * CANONICAL_BLOCK;
        block(p0, k.min(p0 + CANONICAL_BLOCK), acc);
    });
    reduce_blocks(&mut scratch, blocks, f);
    out.copy_from_slice(&scratch[..f]);
    Ok(())
}

/// [`canonical_accumulate`] with the level-0 blocks computed in parallel
/// ([`par_blocks`]).
fn par_accumulate<T: Element>(
    k: usize,
    out: &mut [T],
    term: impl Fn(usize, &mut [T], bool) + Sync,
) -> Result<()> {
    if k <= CANONICAL_BLOCK || out.is_empty() {
        canonical_accumulate(k, out, &mut Vec::new(), term);
        return Ok(());
    }
    par_blocks(k, out, |p0, p1, acc| {
        for p in p0..p1 {
            term(p, acc, p == p0);
        }
    })
}

/// `op(a) @ op(b)` as [`ops::matmul`] defines it: `[m, k] @ [k, n]`, into
/// `out` (`m * n` zeros, checked by the caller).
#[allow(clippy::too_many_arguments)]
fn par_matmul<T: Element>(
    a: &[T],
    trans_a: bool,
    b: &[T],
    trans_b: bool,
    m: usize,
    k: usize,
    n: usize,
    out: &mut [T],
) -> Result<()> {
    if n == 0 || m == 0 {
        return Ok(());
    }
    let bt;
    let b = if trans_b {
        bt = ops::transpose2(b, n, k);
        &bt[..]
    } else {
        b
    };
    let (rs, ps) = if trans_a { (1, m) } else { (k, 1) };
    if k <= CANONICAL_BLOCK {
        // one level-0 block: tiles of output rows in parallel
        let rows = (ROW_TILE_ELEMS / (k * n).max(1)).clamp(4, 256) / 4 * 4;
        // a chunk longer than `out` is just `out`: saturating is exact here
        out.par_chunks_mut(rows.saturating_mul(n))
            .enumerate()
            .for_each(|(t, o)| {
                let i0 = t * rows;
                ops::mm_block(a, 0, rs, ps, b, n, i0..i0 + o.len() / n, 0, k, o);
            });
    } else if trans_a {
        // level-0 blocks of the inner dimension in parallel, then the tree
        par_blocks(k, out, |p0, p1, acc| {
            ops::mm_block(a, p0 * m, 1, m, b, n, 0..m, p0, p1, acc);
        })?;
    } else {
        out.par_chunks_mut(n)
            .enumerate()
            .for_each_init(Vec::new, |scratch, (i, o)| {
                ops::matmul_row(&a[i * k..(i + 1) * k], b, o, scratch);
            });
    }
    Ok(())
}
