//! [`FusedOps`] on the device (kernels/segment.cu, kernels/model.cu): the segment softmax, its
//! backward and gather_scale_scatter as level chains whose level 0 computes
//! its values on the fly (one runner with the scatter-add: `chain`); the
//! two-gather ops (`gather_head_dot`, `gather_add`), `add_head_scale` and
//! `sum_bias_relu` in one kernel each; `head_scale_sum_rows` as one climbing
//! column sum; each with exactly its composition's bits.

use rtx_backend::implement::{check_bias_parts, sum_bias_relu_composed};
use rtx_backend::prelude::*;
use rtx_backend::{BTensor, BiasPart, Element, Indices, Result as BResult, ops};

use crate::backend::{CudaBackend, ptr};
use crate::indices::plan::DevicePlan;
use crate::kernels::abi::SUM_BIAS_PARTS;
use crate::kernels::table::{Family, Float, Kernel, ModelOp};
use crate::ops::chain::{self, Level0};
use crate::runtime::args::{BiasParts, DevPtr, In, Out};
use crate::runtime::launch::{
    GatherAdd, GatherHeadDot, HeadScaleRows, SoftmaxBwd, SoftmaxDiv, SoftmaxExp, SumBiasRelu,
    acc_size, cfg1, col_sums_grid, grid_for,
};

impl CudaBackend {
    /// A segment sum by the plan `dp` into `dst` (zeroed here first: each row
    /// is `0 + its sum`) whose level 0 is the fused kernel `level0` over rows
    /// of `f` elements of `T`, vectors dividing `align`; `dst` holds `D`: `T`,
    /// or `T::Acc` for the softmax backward's sums (`chain::sum_chain`).
    pub(crate) fn fused_sum<T: Element, D: Element>(
        &self,
        dp: &DevicePlan,
        f: usize,
        align: usize,
        level0: Level0<T>,
        dst: &BTensor<Self, D>,
    ) -> BResult<()> {
        self.zero(dst)?;
        let form = self.settings.scatter_form();
        // D is T, or T::Acc for Level0::SoftmaxBwd, whose chain writes T::Acc
        let d = ptr(dst).cast::<T>();
        chain::sum_chain::<T>(&self.dev, dp, f, align, form, level0, d)?;
        Ok(())
    }

    /// The segment sums of `x: [plan entries, f]` by the device plan `dp`
    /// into `out: [rows, f]`: segment.cu's `sum0` level 0 (a hub row's chunks
    /// loaded by a whole block), then index.cu's higher levels.
    pub(crate) fn segment_sum_by<T: Element>(
        &self,
        x: &BTensor<Self, T>,
        dp: &DevicePlan,
        f: usize,
        out: &BTensor<Self, T>,
    ) -> BResult<()> {
        self.fused_sum::<T, T>(dp, f, f, Level0::Read { vals: ptr(x) }, out)
    }

    /// The segment softmax of `x: [e, f]` (e, f > 0) by the device plan `dp`
    /// into `rows` rows, written to `out`: the segment max, the numerators
    /// `exp(x - max)` in one parallel pass (off the latency-bound chains),
    /// their segment sums (`sum0` and the scatter chain, into zeros) and the
    /// division; exactly the composition's operations. The max is stored as
    /// `T` (exact: a stored element); the numerators and sums are `T::Acc`
    /// (f32 for bf16 and f16, whose only rounding is the output's).
    fn softmax_by<T: Element>(
        &self,
        x: &BTensor<Self, T>,
        dp: &DevicePlan,
        rows: usize,
        out: BTensor<Self, T>,
    ) -> BResult<BTensor<Self, T>> {
        let (e, f) = (out.shape()[0], out.shape()[1]);
        let m = self.out::<T>(&[rows, f])?;
        self.zero(&m)?;
        chain::max_chain::<T>(&self.dev, dp, f, ptr(x), ptr(&m))?;
        let ex = self.out::<T::Acc>(&[e, f])?;
        let (ee, ff) = (e as u64, f as u64);
        let kern = self.dev.kernels()?;
        let t = Float::of(T::DTYPE);
        let (px, pm, pe) = (ptr(x), ptr(&m), ptr(&ex));
        let args = SoftmaxExp::<T> {
            x: In::at(px),
            m: In::at(pm),
            rowof: In::at(dp.rowof),
            out: Out::at(pe),
            e: ee,
            f: ff,
        };
        let kernel = Kernel::of(Family::Model(ModelOp::SoftmaxExp, t));
        // SAFETY: x (T) and out (T::Acc) hold e*f, m rows*f elements of T;
        // rowof holds e rows below rows.
        unsafe { args.launch(&self.dev, &kern, kernel, cfg1(grid_for(ee * ff))) }?;
        let s = self.out::<T::Acc>(&[rows, f])?;
        self.segment_sum_by::<T::Acc>(&ex, dp, f, &s)?;
        let (ps, po) = (ptr(&s), ptr(&out));
        let args = SoftmaxDiv::<T> {
            ex: In::at(pe),
            s: In::at(ps),
            rowof: In::at(dp.rowof),
            out: Out::at(po),
            e: ee,
            f: ff,
        };
        let kernel = Kernel::of(Family::Model(ModelOp::SoftmaxDiv, t));
        // SAFETY: ex (T::Acc) and out (T) hold e*f, s rows*f elements of
        // T::Acc; rowof holds e rows below rows.
        unsafe { args.launch(&self.dev, &kern, kernel, cfg1(grid_for(ee * ff))) }?;
        Ok(out)
    }

    /// The segment softmax backward of `alpha`, `grad: [e, f]` (e, f > 0) by
    /// the device plan `dp` into `rows` rows, written to `out`: the sums of
    /// `alpha * grad` in `T::Acc` (`softmax_bwd_sum0` and the scatter chain, into zeros),
    /// then `alpha * (grad - sum)`, each output rounded once.
    fn softmax_backward_by<T: Element>(
        &self,
        alpha: &BTensor<Self, T>,
        grad: &BTensor<Self, T>,
        dp: &DevicePlan,
        rows: usize,
        out: BTensor<Self, T>,
    ) -> BResult<BTensor<Self, T>> {
        let (e, f) = (out.shape()[0], out.shape()[1]);
        let s = self.out::<T::Acc>(&[rows, f])?;
        let level0 = Level0::SoftmaxBwd {
            alpha: ptr(alpha),
            g: ptr(grad),
        };
        self.fused_sum::<T, T::Acc>(dp, f, f, level0, &s)?;
        let (pa, pg, ps, po) = (ptr(alpha), ptr(grad), ptr(&s), ptr(&out));
        let (ee, ff) = (e as u64, f as u64);
        let kern = self.dev.kernels()?;
        let args = SoftmaxBwd::<T> {
            alpha: In::at(pa),
            g: In::at(pg),
            s: In::at(ps),
            rowof: In::at(dp.rowof),
            out: Out::at(po),
            e: ee,
            f: ff,
        };
        let kernel = Kernel::of(Family::Model(ModelOp::SoftmaxBwd, Float::of(T::DTYPE)));
        // SAFETY: alpha, g and out hold e*f elements of T, s rows*f of
        // T::Acc; rowof holds e rows below rows.
        unsafe { args.launch(&self.dev, &kern, kernel, cfg1(grid_for(ee * ff))) }?;
        Ok(out)
    }

    /// gather_scale_scatter's output `[rows, heads*c]` from `x`, the gather
    /// list at `gi`, `weights` and the scatter plan `dp` (`None`: nothing to
    /// sum, the output is zeros).
    #[allow(clippy::too_many_arguments)]
    fn gss_by<T: Element>(
        &self,
        x: &BTensor<Self, T>,
        gi: DevPtr<u32>,
        weights: &BTensor<Self, T>,
        heads: usize,
        c: usize,
        dp: Option<&DevicePlan>,
        rows: usize,
    ) -> BResult<BTensor<Self, T>> {
        let fx = heads * c;
        let out = self.out::<T>(&[rows, fx])?;
        let Some(dp) = dp else {
            self.zero(&out)?;
            return Ok(out);
        };
        let level0 = Level0::GatherScale {
            x: ptr(x),
            gather: gi,
            w: ptr(weights),
            heads: heads as u64,
        };
        self.fused_sum::<T, T>(dp, fx, c, level0, &out)?;
        Ok(out)
    }

    /// `[e, out_cols]` from a kernel over `a` and `b` gathered by the lists at
    /// `ia` and `ib` (checked against their rows by the callers; 0 when
    /// `e == 0`): `gather_add_T` (`per_thread` a 16-byte vector's elements)
    /// or `gather_head_dot_T` (`per_thread` 1), a thread per `per_thread`
    /// outputs.
    #[allow(clippy::too_many_arguments)]
    fn two_gathers<T: Element>(
        &self,
        kernel: TwoGathers,
        a: &BTensor<Self, T>,
        ia: DevPtr<u32>,
        b: &BTensor<Self, T>,
        ib: DevPtr<u32>,
        e: usize,
        out_cols: usize,
        per_thread: u64,
    ) -> BResult<BTensor<Self, T>> {
        let out = self.out::<T>(&[e, out_cols])?;
        let total = (e * out_cols) as u64;
        if total == 0 {
            return Ok(out);
        }
        let (pa, pb, po, ee) = (ptr(a), ptr(b), ptr(&out), e as u64);
        let kern = self.dev.kernels()?;
        let t = Float::of(T::DTYPE);
        let cfg = cfg1(grid_for(total.div_ceil(per_thread.max(1))));
        let (a, ai, b, bi, out_p) = (In::at(pa), In::at(ia), In::at(pb), In::at(ib), Out::at(po));
        // SAFETY (both): every ai below a's rows and every bi below b's rows
        // (checked by the callers through the lists' maxima), both lists of e
        // entries, rows of f = heads * c elements; out holds e * out_cols.
        match kernel {
            TwoGathers::Add { f } => {
                let args = GatherAdd::<T> {
                    a,
                    ai,
                    b,
                    bi,
                    out: out_p,
                    e: ee,
                    f,
                };
                let k = Kernel::of(Family::Model(ModelOp::GatherAdd, t));
                // SAFETY: as above.
                unsafe { args.launch(&self.dev, &kern, k, cfg) }?;
            }
            TwoGathers::HeadDot { heads, c } => {
                let args = GatherHeadDot::<T> {
                    a,
                    ai,
                    b,
                    bi,
                    out: out_p,
                    e: ee,
                    heads,
                    c,
                };
                let k = Kernel::of(Family::Model(ModelOp::GatherHeadDot, t));
                // SAFETY: as above.
                unsafe { args.launch(&self.dev, &kern, k, cfg) }?;
            }
        }
        Ok(out)
    }

    /// [`Error::ForeignIndex`](crate::Error::ForeignIndex) for the first of
    /// `idx` held by another backend.
    fn check_owners(&self, idx: &[Indices<'_, Self>]) -> BResult<()> {
        for i in idx {
            if let Indices::Held { list, .. } = i {
                self.check_own(list)?;
            }
        }
        Ok(())
    }

    /// The two device lists of a fused two-gather op, checked against
    /// their tensors' rows (`na`, `nb`).
    fn two_lists(
        &self,
        op: &'static str,
        a_idx: Indices<'_, Self>,
        na: usize,
        b_idx: Indices<'_, Self>,
        nb: usize,
    ) -> BResult<(DevPtr<u32>, DevPtr<u32>)> {
        let a = self.resolver().gather_list(a_idx, op, "a", na)?;
        let b = self.resolver().gather_list(b_idx, op, "b", nb)?;
        Ok((a.dev_list(&self.dev)?, b.dev_list(&self.dev)?))
    }
}

/// Elements of `T` in a 16-byte vector: what a thread of the vectorized
/// elementwise kernels (`gather_add`, `sum_bias_relu`) takes.
fn per_vector<T: Element>() -> u64 {
    (16 / T::DTYPE.size()) as u64
}

/// The two-gather kernel of [`CudaBackend::two_gathers`] with its sizes.
#[derive(Debug, Clone, Copy)]
enum TwoGathers {
    /// `gather_add_T`: rows of `f` elements.
    Add { f: u64 },
    /// `gather_head_dot_T`: rows of `heads` heads of `c` elements.
    HeadDot { heads: u64, c: u64 },
}

impl FusedOps for CudaBackend {
    /// Fused: one pass reading each part once (up to 8 parts; more take the
    /// composition); the composition's bits.
    fn sum_bias_relu<T: Element>(
        &self,
        parts: &[BiasPart<'_, Self, T>],
    ) -> BResult<BTensor<Self, T>> {
        if T::DTYPE.is_half() && parts.len() > SUM_BIAS_PARTS {
            // more parts than the kernel's room: the f32 op (its composition)
            // on widened copies, rounded once, as the definition says
            check_bias_parts::<Self, T>(parts)?;
            let wide = parts
                .iter()
                .map(|(x, b)| Ok((self.widen_dev(x)?, self.widen_dev(b)?)))
                .collect::<BResult<Vec<_>>>()?;
            let refs: Vec<BiasPart<'_, Self, f32>> = wide.iter().map(|(x, b)| (x, b)).collect();
            return self.round_dev(self.sum_bias_relu(&refs));
        }
        if parts.len() > SUM_BIAS_PARTS {
            return sum_bias_relu_composed(self, parts);
        }
        let (n, f) = check_bias_parts::<Self, T>(parts)?;
        let out = self.out::<T>(&[n, f])?;
        let total = (n * f) as u64;
        if total == 0 {
            return Ok(out);
        }
        let mut p = BiasParts {
            x: [0; SUM_BIAS_PARTS],
            b: [0; SUM_BIAS_PARTS],
            k: parts.len() as u64,
        };
        for (i, (x, b)) in parts.iter().enumerate() {
            (p.x[i], p.b[i]) = (ptr(x).addr(), ptr(b).addr());
        }
        let (po, nn, ff) = (ptr(&out), n as u64, f as u64);
        let kern = self.dev.kernels()?;
        let args = SumBiasRelu::<T> {
            p,
            out: Out::at(po),
            n: nn,
            f: ff,
        };
        let kernel = Kernel::of(Family::Model(ModelOp::SumBiasRelu, Float::of(T::DTYPE)));
        // a thread per 16-byte vector (the kernel strides when rows are not)
        let cfg = cfg1(grid_for(total.div_ceil(per_vector::<T>())));
        // SAFETY: the first k inputs of p hold n*f elements of T and its
        // first k biases f (checked shapes); out holds n*f.
        unsafe { args.launch(&self.dev, &kern, kernel, cfg) }?;
        Ok(out)
    }

    /// Fused: the segment max by the plan, one kernel for `exp(x - max)`,
    /// the segment sum, one kernel for the division.
    fn segment_softmax<'i, T: Element>(
        &self,
        x: &BTensor<Self, T>,
        idx: impl Into<Indices<'i, Self>>,
    ) -> BResult<BTensor<Self, T>> {
        let idx = idx.into();
        let (rows, _, empty) = self.segment_shape("segment_softmax", x.shape(), idx)?;
        if empty {
            self.check_only(idx, "segment_softmax", "the output", rows)?;
        }
        let out = self.out::<T>(x.shape())?;
        if empty {
            return Ok(out);
        }
        let dp = self.resolver().scatter_plan(idx, "segment_softmax", rows)?;
        self.softmax_by(x, &dp, rows, out)
    }

    /// Fused: one segment sum of `alpha * grad` (its products made as the
    /// first level reads them), one kernel for the rest.
    fn segment_softmax_backward<'i, T: Element>(
        &self,
        alpha: &BTensor<Self, T>,
        grad: &BTensor<Self, T>,
        idx: impl Into<Indices<'i, Self>>,
    ) -> BResult<BTensor<Self, T>> {
        let idx = idx.into();
        let op = "segment_softmax_backward";
        let (rows, _, empty) = self.segment_shape(op, alpha.shape(), idx)?;
        ops::check_same(op, alpha.shape(), grad.shape())?;
        if empty {
            self.check_only(idx, op, "the output", rows)?;
        }
        let out = self.out::<T>(alpha.shape())?;
        if empty {
            return Ok(out);
        }
        let dp = self.resolver().scatter_plan(idx, op, rows)?;
        self.softmax_backward_by(alpha, grad, &dp, rows, out)
    }

    /// Fused: level 0 of the canonical scatter computes `x[gather[e]] * w[e, h]`
    /// on the fly (no `[E, F]` messages); the composition's bits.
    fn gather_scale_scatter<'i, T: Element>(
        &self,
        x: &BTensor<Self, T>,
        gather: impl Into<Indices<'i, Self>>,
        weights: &BTensor<Self, T>,
        scatter: impl Into<Indices<'i, Self>>,
    ) -> BResult<BTensor<Self, T>> {
        let (gather, scatter) = (gather.into(), scatter.into());
        let op = "gather_scale_scatter";
        self.check_owners(&[gather, scatter])?;
        let rows = scatter.needed_rows(op)?;
        let (n, heads, c) = ops::gather_scale_scatter_shapes(
            x.shape(),
            gather.len(self),
            weights.shape(),
            scatter.len(self),
            rows,
        )?;
        let g = self.resolver().gather_list(gather, op, "x", n)?;
        if g.len() == 0 || c == 0 {
            self.check_only(scatter, op, "the output", rows)?;
            return self.gss_by(x, DevPtr::NULL, weights, heads, c, None, rows);
        }
        let dp = self.resolver().scatter_plan(scatter, op, rows)?;
        let gi = g.dev_list(&self.dev)?;
        self.gss_by(x, gi, weights, heads, c, Some(&dp), rows)
    }

    /// Fused: the products summed as they are made (reduce_rows's first level
    /// loads `a * s`), every level in one launch.
    fn head_scale_sum_rows<T: Element>(
        &self,
        a: &BTensor<Self, T>,
        s: &BTensor<Self, T>,
    ) -> BResult<BTensor<Self, T>> {
        let (n, h, c, a_rows) = ops::check_head_scale(a.shape(), s.shape())?;
        let f = h * c;
        if n == 0 || f == 0 {
            return self.zeros::<T>(&[1, f]);
        }
        if u32::try_from(f).is_err() {
            // the kernel finds a column's head in 32-bit arithmetic; a half
            // type keeps the products in f32 (the widen route)
            if T::DTYPE.is_half() {
                let (wa, ws) = (self.widen_dev(a)?, self.widen_dev(s)?);
                return self.round_dev(self.sum_rows(&self.head_scale(&wa, &ws)?));
            }
            return self.sum_rows(&self.head_scale(a, s)?);
        }
        let out = self.out::<T>(&[1, f])?;
        let (pa, ps) = (ptr(a), ptr(s));
        let (nn, ff, cc) = (n as u64, f as u64, c as u64);
        let a_rs = if a_rows == 1 { 0 } else { ff };
        let kern = self.dev.kernels()?;
        self.column_sums::<T>(n, f, ptr(&out), |climb| {
            let args = HeadScaleRows::<T> {
                a: In::at(pa),
                s: In::at(ps),
                n: nn,
                f: ff,
                c: cc,
                a_rs,
                cl: *climb,
            };
            let kernel = Kernel::of(Family::Model(ModelOp::HeadScaleRows, Float::of(T::DTYPE)));
            let cfg = cfg1(col_sums_grid(n, f, acc_size::<T>()));
            // SAFETY: a holds n*f elements (a_rs = f) or f (a_rs = 0), s
            // n*(f/c) (checked shapes); the climb's buffers and counters are
            // column_sums's.
            Ok(unsafe { args.launch(&self.dev, &kern, kernel, cfg) }?)
        })?;
        Ok(out)
    }

    /// Fused: head_scale's kernel adds `x` to each product as it stores it.
    fn add_head_scale<T: Element>(
        &self,
        x: &BTensor<Self, T>,
        a: &BTensor<Self, T>,
        s: &BTensor<Self, T>,
    ) -> BResult<BTensor<Self, T>> {
        self.head_scale_plus(Some(x), a, s)
    }

    /// Fused: one kernel, each entry's two gathered rows added.
    fn gather_add<'i, T: Element>(
        &self,
        a: &BTensor<Self, T>,
        a_idx: impl Into<Indices<'i, Self>>,
        b: &BTensor<Self, T>,
        b_idx: impl Into<Indices<'i, Self>>,
    ) -> BResult<BTensor<Self, T>> {
        let (a_idx, b_idx) = (a_idx.into(), b_idx.into());
        self.check_owners(&[a_idx, b_idx])?;
        let (na, nb, f) =
            ops::gather_add_shapes(a.shape(), a_idx.len(self), b.shape(), b_idx.len(self))?;
        let (ia, ib) = self.two_lists("gather_add", a_idx, na, b_idx, nb)?;
        let (e, vec16) = (a_idx.len(self), per_vector::<T>());
        self.two_gathers(TwoGathers::Add { f: f as u64 }, a, ia, b, ib, e, f, vec16)
    }

    /// Fused: one kernel, each edge's per-head dot of the two gathered rows.
    fn gather_head_dot<'i, T: Element>(
        &self,
        a: &BTensor<Self, T>,
        a_idx: impl Into<Indices<'i, Self>>,
        b: &BTensor<Self, T>,
        b_idx: impl Into<Indices<'i, Self>>,
        heads: usize,
    ) -> BResult<BTensor<Self, T>> {
        let (a_idx, b_idx) = (a_idx.into(), b_idx.into());
        self.check_owners(&[a_idx, b_idx])?;
        let (na, nb, c) = ops::gather_head_dot_shapes(
            a.shape(),
            a_idx.len(self),
            b.shape(),
            b_idx.len(self),
            heads,
        )?;
        let (ia, ib) = self.two_lists("gather_head_dot", a_idx, na, b_idx, nb)?;
        let k = TwoGathers::HeadDot {
            heads: heads as u64,
            c: c as u64,
        };
        self.two_gathers(k, a, ia, b, ib, a_idx.len(self), heads, 1)
    }
}
