//! [`FusedOps`] of the CPU backend: the fused gathers and the segment
//! softmax, parallel over destination rows (segments), and the fused
//! elementwise ops (`sum_bias_relu`, `add_head_scale`: one pass instead of
//! the composition's two or four); bit-identical to the reference for any
//! thread count.

use rayon::prelude::*;
use rtx_backend::implement::{check_bias_parts, try_vec};
use rtx_backend::prelude::*;
use rtx_backend::{
    BTensor, BiasPart, Binary, Element, IndexPlan, Indices, Result, Tensor, ops, reference,
};
use rtx_tensor::Layout;

use crate::tasks::{ELEMS_PER_TASK, MIN_ROWS_PER_TASK};
use crate::{CpuBackend, CpuBuffer};

impl FusedOps for CpuBackend {
    /// One pass over the rows, each part read once; the composition's bits.
    fn sum_bias_relu<T: Element>(
        &self,
        parts: &[BiasPart<'_, Self, T>],
    ) -> Result<BTensor<Self, T>> {
        let (n, f) = check_bias_parts::<Self, T>(parts)?;
        if T::DTYPE.is_half() {
            let wide = parts
                .iter()
                .map(|(x, b)| Ok((self.widen(x)?, self.widen(b)?)))
                .collect::<Result<Vec<_>>>()?;
            let refs: Vec<BiasPart<'_, Self, f32>> = wide.iter().map(|(x, b)| (x, b)).collect();
            return self.round(&self.sum_bias_relu(&refs)?);
        }
        let layout = Layout::contiguous(&[n, f])?;
        let mut out = self.for_overwrite(&layout)?;
        let ins: Vec<(&[T], &[T])> = parts
            .iter()
            .map(|(x, b)| (&x.storage()[..], &b.storage()[..]))
            .collect();
        let rows = ELEMS_PER_TASK.checked_div(f).unwrap_or(1).max(1);
        self.par_rows(&mut out, f, rows, |r, o| {
            let at = r * f;
            let (x0, b0) = ins[0];
            for ((o, &x), &b) in o.iter_mut().zip(&x0[at..at + f]).zip(b0) {
                *o = ops::add(x, b);
            }
            for &(x, b) in &ins[1..] {
                for ((o, &x), &b) in o.iter_mut().zip(&x[at..at + f]).zip(b) {
                    *o = ops::add(*o, ops::add(x, b));
                }
            }
            for o in o.iter_mut() {
                *o = ops::relu(*o);
            }
        });
        Ok(Tensor::new(out, layout))
    }

    fn gather_add<'i, T: Element>(
        &self,
        a: &BTensor<Self, T>,
        a_idx: impl Into<Indices<'i, Self>>,
        b: &BTensor<Self, T>,
        b_idx: impl Into<Indices<'i, Self>>,
    ) -> Result<BTensor<Self, T>> {
        let (ai, bi) = (a_idx.into(), b_idx.into());
        let (al, bl) = (ai.host_list(self)?, bi.host_list(self)?);
        let (a_idx, b_idx) = (&al[..], &bl[..]);
        let (na, nb, f) = ops::check_gather_add(a.shape(), a_idx, b.shape(), b_idx)?;
        ai.rows_of("gather_add", "a", na)?;
        bi.rows_of("gather_add", "b", nb)?;
        if T::DTYPE.is_half() {
            let (a, b) = (self.widen(a)?, self.widen(b)?);
            return self.round(&self.gather_add(&a, a_idx, &b, b_idx)?);
        }
        let (xa, xb) = (a.storage(), b.storage());
        let layout = Layout::contiguous(&[a_idx.len(), f])?;
        let mut out = self.for_overwrite(&layout)?;
        self.par_rows(&mut out, f, 4 * MIN_ROWS_PER_TASK, |r, o| {
            let (i, j) = (a_idx[r] as usize * f, b_idx[r] as usize * f);
            ops::binary_slice(Binary::Add, &xa[i..i + f], &xb[j..j + f], o);
        });
        Ok(Tensor::new(out, layout))
    }

    fn add_head_scale<T: Element>(
        &self,
        x: &BTensor<Self, T>,
        a: &BTensor<Self, T>,
        s: &BTensor<Self, T>,
    ) -> Result<BTensor<Self, T>> {
        self.head_scale_plus(Some(x), a, s)
    }

    fn gather_scale_scatter<'i, T: Element>(
        &self,
        x: &BTensor<Self, T>,
        gather: impl Into<Indices<'i, Self>>,
        weights: &BTensor<Self, T>,
        scatter: impl Into<Indices<'i, Self>>,
    ) -> Result<BTensor<Self, T>> {
        let (gi, si) = (gather.into(), scatter.into());
        let op = "gather_scale_scatter";
        // shapes, then the gather's entries, then the scatter's
        let rows = si.needed_rows(op)?;
        let (n, h, c) = ops::gather_scale_scatter_shapes(
            x.shape(),
            gi.len(self),
            weights.shape(),
            si.len(self),
            rows,
        )?;
        gi.rows_of(op, "x", n)?;
        let list = gi.host_list(self)?;
        reference::check_indices(&list, n)?;
        let plan = si.host_plan(self, op, rows)?;
        let (gather, plan) = (&list[..], &*plan);
        if T::DTYPE.is_half() {
            let (x, w) = (self.widen(x)?, self.widen(weights)?);
            return self.round(&self.gather_scale_scatter(&x, gather, &w, plan)?);
        }
        let (xs, ws) = (x.storage(), weights.storage());
        let f = h * c;
        let layout = Layout::contiguous(&[plan.rows(), f])?;
        let mut out = self.for_overwrite(&layout)?;
        self.par_rows_with(&mut out, f, MIN_ROWS_PER_TASK, Vec::new, |scratch, r, o| {
            // the row kernel leaves an empty row as it is
            if plan.row(r).is_empty() {
                o.fill(T::ZERO);
            }
            ops::gather_scale_scatter_row(plan.row(r), gather, xs, ws, h, c, o, scratch);
        });
        Ok(Tensor::new(out, layout))
    }

    fn gather_head_dot<'i, T: Element>(
        &self,
        a: &BTensor<Self, T>,
        a_idx: impl Into<Indices<'i, Self>>,
        b: &BTensor<Self, T>,
        b_idx: impl Into<Indices<'i, Self>>,
        heads: usize,
    ) -> Result<BTensor<Self, T>> {
        let (ai, bi) = (a_idx.into(), b_idx.into());
        let (al, bl) = (ai.host_list(self)?, bi.host_list(self)?);
        let (a_idx, b_idx) = (&al[..], &bl[..]);
        let (h, c) = ops::check_gather_head_dot(a.shape(), a_idx, b.shape(), b_idx, heads)?;
        ai.rows_of("gather_head_dot", "a", a.shape()[0])?;
        bi.rows_of("gather_head_dot", "b", b.shape()[0])?;
        if T::DTYPE.is_half() {
            let (a, b) = (self.widen(a)?, self.widen(b)?);
            return self.round(&self.gather_head_dot(&a, a_idx, &b, b_idx, heads)?);
        }
        let (xa, xb) = (a.storage(), b.storage());
        let f = h * c;
        let layout = Layout::contiguous(&[a_idx.len(), h])?;
        let mut out = self.for_overwrite(&layout)?;
        self.par_rows(&mut out, h, 4 * MIN_ROWS_PER_TASK, |r, o| {
            let (i, j) = (a_idx[r] as usize, b_idx[r] as usize);
            ops::head_dot_row(&xa[i * f..(i + 1) * f], &xb[j * f..(j + 1) * f], c, o);
        });
        Ok(Tensor::new(out, layout))
    }

    fn segment_softmax<'i, T: Element>(
        &self,
        x: &BTensor<Self, T>,
        idx: impl Into<Indices<'i, Self>>,
    ) -> Result<BTensor<Self, T>> {
        let (plan, f) = idx
            .into()
            .segment_plan(self, "segment_softmax", x.shape())?;
        let plan = &*plan;
        if T::DTYPE.is_half() {
            return self.round(&self.segment_softmax(&self.widen(x)?, plan)?);
        }
        let xs = x.storage();
        let row = |p: u32| &xs[p as usize * f..(p as usize + 1) * f];
        let out = self.install(|| {
            per_segment(self, plan, f, |ps, o, s| {
                ops::softmax_segment(ps, row, f, o, s)
            })
        })?;
        Ok(Tensor::new(out, x.layout().clone()))
    }

    fn segment_softmax_backward<'i, T: Element>(
        &self,
        alpha: &BTensor<Self, T>,
        grad: &BTensor<Self, T>,
        idx: impl Into<Indices<'i, Self>>,
    ) -> Result<BTensor<Self, T>> {
        let (plan, f) = idx
            .into()
            .segment_plan(self, "segment_softmax_backward", alpha.shape())?;
        let plan = &*plan;
        ops::check_same("segment_softmax_backward", alpha.shape(), grad.shape())?;
        if T::DTYPE.is_half() {
            let (a, g) = (self.widen(alpha)?, self.widen(grad)?);
            return self.round(&self.segment_softmax_backward(&a, &g, plan)?);
        }
        let (xa, xg) = (alpha.storage(), grad.storage());
        let a = |p: u32| &xa[p as usize * f..(p as usize + 1) * f];
        let g = |p: u32| &xg[p as usize * f..(p as usize + 1) * f];
        let out = self.install(|| {
            per_segment(self, plan, f, |ps, o, s| {
                ops::softmax_backward_segment(ps, a, g, f, o, s);
            })
        })?;
        Ok(Tensor::new(out, alpha.layout().clone()))
    }
}

/// Runs `kernel(positions, out_rows, scratch)` for every row of `plan` in
/// parallel, each writing its segment's rows in segment order into a buffer
/// laid out in plan order, then moves every row to its entry's position.
fn per_segment<T: Element>(
    b: &CpuBackend,
    plan: &IndexPlan,
    f: usize,
    kernel: impl Fn(&[u32], &mut [T], &mut ops::SegmentScratch<T>) + Sync,
) -> Result<CpuBuffer<T>> {
    let e = plan.len();
    // `[e, f]` is the caller's checked input shape: the product fits, and
    // the plan's rows cover every position once, so both buffers are
    // written whole
    let layout = Layout::contiguous(&[e, f])?;
    let mut sorted = b.for_overwrite(&layout)?;
    if f == 0 || e == 0 {
        return Ok(sorted);
    }
    // cut the plan-ordered buffer into groups of whole rows
    let offsets = plan.offsets();
    let target = (ELEMS_PER_TASK / f).max(1) as u64;
    let mut groups: Vec<(usize, usize, &mut [T])> = Vec::new();
    let mut rest: &mut [T] = &mut sorted;
    let mut r0 = 0;
    while r0 < plan.rows() {
        let mut r1 = r0 + 1;
        while r1 < plan.rows() && offsets[r1] - offsets[r0] < target {
            r1 += 1;
        }
        let len = (offsets[r1] - offsets[r0]) as usize * f;
        let (head, tail) = std::mem::take(&mut rest).split_at_mut(len);
        groups.push((r0, r1, head));
        rest = tail;
        r0 = r1;
    }
    groups
        .into_par_iter()
        .for_each_init(ops::SegmentScratch::default, |s, (r0, r1, buf)| {
            let base = offsets[r0];
            for r in r0..r1 {
                let (lo, hi) = (
                    (offsets[r] - base) as usize,
                    (offsets[r + 1] - base) as usize,
                );
                kernel(plan.row(r), &mut buf[lo * f..hi * f], s);
            }
        });
    // un-permute: entry positions[q] takes sorted row q
    let mut inv = try_vec(e, 0u32)?;
    for (q, &p) in plan.positions().iter().enumerate() {
        inv[p as usize] = q as u32;
    }
    let mut out = b.for_overwrite(&layout)?;
    out.par_chunks_mut(f)
        .with_min_len(256)
        .zip(inv.par_iter())
        .for_each(|(o, &q)| o.copy_from_slice(&sorted[q as usize * f..(q as usize + 1) * f]));
    Ok(out)
}
