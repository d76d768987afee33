//! [`FusedOps`] on the device (kernels/model.cu): the segment softmax, its
//! backward and gather_scale_scatter as level chains whose level 0 computes
//! its values on the fly (one runner with the scatter-add: `chain`), and the
//! gathered per-head dot in one kernel; each with exactly its composition's bits.

use rtx_backend::prelude::*;
use rtx_backend::{BTensor, Element, IndexPlan, Result as BResult, dims2, ops};

use super::backend::{CudaBackend, ptr};
use super::cache;
use super::chain::{self, Level0};
use super::entry::DevicePlan;
use super::launch::{builder, cfg1, grid_for};
use crate::table::{Float, Fused0, Kernel, Typed};

impl CudaBackend {
    /// A segment sum by the plan `dp` into `dst` (zeroed here first: each row
    /// is `0 + its sum`) whose level 0 is the fused kernel `op` with leading
    /// arguments `lead`; rows of `f` elements, vectors dividing `align`.
    fn fused_sum<T: Element>(
        &self,
        dp: &DevicePlan,
        f: usize,
        align: usize,
        op: Fused0,
        lead: &[u64],
        dst: &BTensor<Self, T>,
    ) -> BResult<()> {
        self.zero(dst)?;
        let form = self.settings.scatter_form();
        let level0 = Level0::Fused { op, lead };
        chain::sum_chain::<T>(&self.dev, dp, f, align, form, level0, ptr(dst))?;
        Ok(())
    }
}

impl FusedOps for CudaBackend {
    /// Fused: segment max, the exp-sum (level 0 computes `exp(x - max)` on the
    /// fly), and `exp(x - max) / sum`; the composition's bits.
    fn segment_softmax<T: Element>(
        &self,
        x: &BTensor<Self, T>,
        plan: &IndexPlan,
    ) -> BResult<BTensor<Self, T>> {
        let (e, f) = ops::check_segment("segment_softmax", x.shape(), plan)?;
        let out = self.out::<T>(&[e, f])?;
        if e == 0 || f == 0 {
            return Ok(out);
        }
        let dp = cache::plan_of(&self.dev, self.index_cache_limit(), plan)?;
        let m = self.out::<T>(&[plan.rows(), f])?;
        self.zero(&m)?;
        chain::max_chain::<T>(&self.dev, &dp, f, ptr(x), ptr(&m))?;
        let s = self.out::<T>(&[plan.rows(), f])?;
        let lead = [ptr(x), ptr(&m)];
        self.fused_sum(&dp, f, f, Fused0::SoftmaxExp, &lead, &s)?;
        let (px, pm, ps, po) = (ptr(x), ptr(&m), ptr(&s), ptr(&out));
        let (ee, ff) = (e as u64, f as u64);
        let kern = self.dev.kernels()?;
        let mut l = builder(
            &self.dev,
            &kern,
            Kernel::typed(Typed::SoftmaxDiv, Float::of(T::DTYPE)),
        );
        l.arg(&px)
            .arg(&pm)
            .arg(&ps)
            .arg(&dp.rowof)
            .arg(&po)
            .arg(&ee)
            .arg(&ff);
        // SAFETY: softmax_div_T(const T* x, const T* m, const T* s, const u32* rowof, T*
        // out, u64 e, u64 f): x and out hold e*f, m and s rows*f elements; rowof holds e
        // rows below plan.rows().
        unsafe { l.launch(cfg1(grid_for(ee * ff))) }?;
        Ok(out)
    }

    /// Fused: the sums of `alpha * grad` (computed on the fly), then
    /// `alpha * (grad - sum)`; the composition's bits.
    fn segment_softmax_backward<T: Element>(
        &self,
        alpha: &BTensor<Self, T>,
        grad: &BTensor<Self, T>,
        plan: &IndexPlan,
    ) -> BResult<BTensor<Self, T>> {
        let (e, f) = ops::check_segment("segment_softmax_backward", alpha.shape(), plan)?;
        ops::check_same("segment_softmax_backward", alpha.shape(), grad.shape())?;
        let out = self.out::<T>(&[e, f])?;
        if e == 0 || f == 0 {
            return Ok(out);
        }
        let dp = cache::plan_of(&self.dev, self.index_cache_limit(), plan)?;
        let s = self.out::<T>(&[plan.rows(), f])?;
        let lead = [ptr(alpha), ptr(grad)];
        self.fused_sum(&dp, f, f, Fused0::SoftmaxBwd, &lead, &s)?;
        let (pa, pg, ps, po) = (ptr(alpha), ptr(grad), ptr(&s), ptr(&out));
        let (ee, ff) = (e as u64, f as u64);
        let kern = self.dev.kernels()?;
        let mut l = builder(
            &self.dev,
            &kern,
            Kernel::typed(Typed::SoftmaxBwd, Float::of(T::DTYPE)),
        );
        l.arg(&pa)
            .arg(&pg)
            .arg(&ps)
            .arg(&dp.rowof)
            .arg(&po)
            .arg(&ee)
            .arg(&ff);
        // SAFETY: softmax_bwd_T(const T* alpha, const T* g, const T* s, const u32* rowof,
        // T* out, u64 e, u64 f): alpha, g and out hold e*f, s rows*f elements; rowof holds
        // e rows below plan.rows().
        unsafe { l.launch(cfg1(grid_for(ee * ff))) }?;
        Ok(out)
    }

    /// Fused: level 0 of the canonical scatter computes `x[gather[e]] * w[e, h]`
    /// on the fly (no `[E, F]` messages); the composition's bits.
    fn gather_scale_scatter<T: Element>(
        &self,
        x: &BTensor<Self, T>,
        gather: &[u32],
        weights: &BTensor<Self, T>,
        plan: &IndexPlan,
    ) -> BResult<BTensor<Self, T>> {
        let op = "gather_scale_scatter";
        let (n, fx) = dims2(op, "x", x.layout())?;
        let (e, heads) = dims2(op, "weights", weights.layout())?;
        if heads == 0 || fx % heads != 0 || e != gather.len() || e != plan.len() {
            // the shape error, named as the host check names it
            ops::check_gather_scale_scatter(x.shape(), gather, weights.shape(), plan)?;
        }
        let c = fx / heads;
        let limit = self.index_cache_limit();
        cache::with_idx_entry(&self.dev, limit, gather, n, |ge| {
            let out = self.out::<T>(&[plan.rows(), fx])?;
            if e == 0 || fx == 0 {
                self.zero(&out)?;
                return Ok(out);
            }
            let gi = ge.dev_idx(&self.dev)?;
            let dp = cache::plan_of(&self.dev, limit, plan)?;
            let lead = [ptr(x), gi, ptr(weights), heads as u64];
            self.fused_sum(&dp, fx, c, Fused0::GatherScale, &lead, &out)?;
            Ok(out)
        })
    }

    /// Fused: one kernel, each edge's per-head dot of the two gathered rows.
    fn gather_head_dot<T: Element>(
        &self,
        a: &BTensor<Self, T>,
        a_idx: &[u32],
        b: &BTensor<Self, T>,
        b_idx: &[u32],
        heads: usize,
    ) -> BResult<BTensor<Self, T>> {
        let op = "gather_head_dot";
        let (na, f) = dims2(op, "a", a.layout())?;
        let (nb, fb) = dims2(op, "b", b.layout())?;
        if heads == 0 || f % heads != 0 || f != fb || a_idx.len() != b_idx.len() {
            ops::check_gather_head_dot(a.shape(), a_idx, b.shape(), b_idx, heads)?;
        }
        let e = a_idx.len();
        let c = f / heads;
        let limit = self.index_cache_limit();
        cache::with_idx_entry(&self.dev, limit, a_idx, na, |ae| {
            cache::with_idx_entry(&self.dev, limit, b_idx, nb, |be| {
                let out = self.out::<T>(&[e, heads])?;
                if e == 0 {
                    return Ok(out);
                }
                let (ia, ib) = (ae.dev_idx(&self.dev)?, be.dev_idx(&self.dev)?);
                let (pa, pb, po) = (ptr(a), ptr(b), ptr(&out));
                let (ee, hh, cc) = (e as u64, heads as u64, c as u64);
                let kern = self.dev.kernels()?;
                let mut l = builder(
                    &self.dev,
                    &kern,
                    Kernel::typed(Typed::GatherHeadDot, Float::of(T::DTYPE)),
                );
                l.arg(&pa)
                    .arg(&ia)
                    .arg(&pb)
                    .arg(&ib)
                    .arg(&po)
                    .arg(&ee)
                    .arg(&hh)
                    .arg(&cc);
                // SAFETY: gather_head_dot_T(const T* a, const u32* ai, const T* b, const
                // u32* bi, T* out, u64 e, u64 heads, u64 c): every ai below a's rows and
                // every bi below b's rows (checked through the entries' maxima), rows of
                // heads*c elements; out holds e*heads.
                unsafe { l.launch(cfg1(grid_for(ee * hh))) }?;
                Ok(out)
            })
        })
    }
}
