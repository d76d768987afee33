//! [`IndexOps`] on the device: gather (`index_select`), the deterministic
//! scatter-add (`index_add`) and the segment max / sum, for host lists (with
//! the index cache and pins behind them) and device lists ([`CudaIndex`],
//! made in `index_lists`).

use std::borrow::Cow;
use std::sync::Arc;

use rtx_backend::implement::{check_index_add, dims2};
use rtx_backend::prelude::*;
use rtx_backend::{BTensor, Element, Error as BError, IndexPlan, Result as BResult, ops};
use rtx_tensor::Layout;

use super::args::{In, Out};
use super::backend::{CudaBackend, ptr};
use super::cache;
use super::chain::{self, Level0};
use super::entry::IndexEntry;
use super::index_lists::CudaIndex;
use super::launch::{Gather, cfg1, lanes_log2, rows_grid};
use super::pins::{self, PinKey};
use super::plan::DevicePlan;
#[allow(unused_imports)] // rustdoc links
use crate::error::Error;
use crate::table::{Half, Kernel, Word};

impl CudaBackend {
    /// Runs `f` with the index lists `lists` and plans `plans` held on the
    /// device and recognized **by address** on this thread: while `f` runs,
    /// trait calls given one of these exact slices (same address and length)
    /// or plans (same address) find their device copy with one small map
    /// lookup, with no hashing or comparing of the list. For a static graph:
    /// wrap the training loop.
    ///
    /// Sound because the borrows are held for the whole call: while `f` runs
    /// the pinned memory can be neither freed nor written (`[u32]` and
    /// [`IndexPlan`] have no interior mutability), so a slice at the same
    /// address with the same length *is* the pinned list. Each list and plan is
    /// validated and uploaded once here (through the per-thread cache, so a
    /// later scope over the same graph reuses the device copies). Pins are
    /// per thread and nest; they are dropped when `f` returns or unwinds.
    /// Empty lists and plans are not pinned (they cost nothing anyway).
    ///
    /// # Errors
    /// [`BError::TooManyIndices`] past `u32::MAX` entries; device errors.
    pub fn with_static_indices<R>(
        &self,
        lists: &[&[u32]],
        plans: &[&IndexPlan],
        f: impl FnOnce() -> R,
    ) -> BResult<R> {
        struct Unpin(Vec<PinKey>);
        impl Drop for Unpin {
            fn drop(&mut self) {
                for k in &self.0 {
                    pins::unpin(k);
                }
            }
        }
        let mut guard = Unpin(Vec::with_capacity(lists.len() + plans.len()));
        for idx in lists.iter().filter(|l| !l.is_empty()) {
            let entry = self.with_idx_entry(idx, usize::MAX, |e| {
                e.dev_idx(&self.dev)?;
                Ok(Arc::clone(e))
            })?;
            let key = PinKey::list(self.dev.id, idx);
            pins::pin(key, entry);
            guard.0.push(key);
        }
        for plan in plans.iter().filter(|p| !p.is_empty()) {
            let entry = cache::plan_entry(&self.dev, self.index_cache_limit(), plan)?;
            let key = PinKey::plan(self.dev.id, plan);
            pins::pin(key, entry);
            guard.0.push(key);
        }
        let r = f();
        drop(guard);
        Ok(r)
    }

    // ---- the kernels ----

    pub(super) fn gather<T: Element>(
        &self,
        src: &BTensor<Self, T>,
        entry: &IndexEntry,
        f: usize,
    ) -> BResult<BTensor<Self, T>> {
        let e = entry.len();
        let out = self.alloc_tensor::<T>(Layout::contiguous(&[e, f])?)?;
        if e == 0 || f == 0 {
            return Ok(out);
        }
        let idx = entry.dev_idx(&self.dev)?;
        let row_bytes = (f * T::DTYPE.size()) as u64;
        let word = Word::dividing(row_bytes);
        let w = row_bytes / word.bytes();
        let lanes_log2 = lanes_log2(w);
        let nrows = e as u64;
        let (s, o) = (src.storage().mem.ptr(), out.storage().mem.ptr());
        let cfg = cfg1(rows_grid(nrows, lanes_log2));
        let k = self.dev.kernels()?;
        let args = Gather {
            src: In::at(s),
            out: Out::at(o),
            idx: In::at(idx),
            nrows,
            W: w,
            lanes_log2,
        };
        // SAFETY: `src` holds rows * W words and every index is below rows
        // (checked by the callers), `out` holds nrows * W words, `idx` nrows
        // indices; the kernel's grid-stride loop touches nothing else.
        unsafe { args.launch(&self.dev, &k, Kernel::gather(word), cfg) }?;
        Ok(out)
    }

    /// Scatter-add of `src` into `dst` by the device plan, in the canonical
    /// order: the level chain with index.cu's scatter kernels (for bf16 and
    /// f16, the half levels: f32 sums, one rounding per element).
    pub(super) fn scatter<T: Element>(
        &self,
        dst: &mut BTensor<Self, T>,
        plan: &DevicePlan,
        src: &BTensor<Self, T>,
        f: usize,
    ) -> BResult<()> {
        if f == 0 || plan.values[0] == 0 {
            return Ok(());
        }
        self.make_unique(dst)?;
        let d = dst
            .storage_mut()
            .expect("unique after make_unique")
            .device_ptr();
        let form = self.settings.scatter_form();
        if let Some(h) = Half::of(T::DTYPE) {
            chain::half_sum_chain::<T>(&self.dev, plan, f, form, h, ptr(src), d)?;
            return Ok(());
        }
        let level0 = Level0::Stored { src: ptr(src) };
        chain::sum_chain::<T>(&self.dev, plan, f, f, form, level0, d)?;
        Ok(())
    }

    /// [`cache::with_idx_entry`] with this backend's device and cache limit.
    fn with_idx_entry<R>(
        &self,
        idx: &[u32],
        rows: usize,
        f: impl FnOnce(&Arc<IndexEntry>) -> BResult<R>,
    ) -> BResult<R> {
        cache::with_idx_entry(&self.dev, self.index_cache_limit(), idx, rows, f)
    }

    /// [`cache::plan_of`] with this backend's device and cache limit.
    fn plan_of(&self, plan: &IndexPlan) -> BResult<Arc<DevicePlan>> {
        cache::plan_of(&self.dev, self.index_cache_limit(), plan)
    }
}

/// A scatter by a long host list seen before works on a copy of `dst` while
/// the list is confirmed, when `dst` is at most this many times the list's
/// bytes (the copy moves at device bandwidth, the comparison at the host's).
const CONFIRM_COPY_RATIO: usize = 8;

impl IndexOps for CudaBackend {
    type Index = CudaIndex;

    fn index_from_host(&self, idx: &[u32]) -> BResult<CudaIndex> {
        self.index(idx)
    }

    fn index_to_host<'a>(&self, idx: &'a CudaIndex) -> BResult<Cow<'a, [u32]>> {
        self.index_download(idx)
    }

    fn index_len(&self, idx: &CudaIndex) -> usize {
        idx.len()
    }

    /// On the device: one copy kernel per part.
    fn index_concat(&self, parts: &[(&CudaIndex, u32)]) -> BResult<CudaIndex> {
        self.index_concat_device(parts)
    }

    /// Device gather by a device list (its largest index found on the
    /// device once, for a device-made list). A list of another backend is
    /// [`Error::ForeignIndex`].
    fn index_select_idx<T: Element>(
        &self,
        src: &BTensor<Self, T>,
        idx: &CudaIndex,
    ) -> BResult<BTensor<Self, T>> {
        self.check_own(idx)?;
        let (rows, f) = dims2("index_select", "src", src.layout())?;
        idx.entry.max(&self.dev, Some(rows))?;
        self.gather(src, &idx.entry, f)
    }

    /// Device scatter-add by a device list, its plan built on the device at
    /// the first scatter (every index checked against `dst`'s rows there,
    /// before any write). A list of another backend is
    /// [`Error::ForeignIndex`].
    fn index_add_idx<T: Element>(
        &self,
        dst: &mut BTensor<Self, T>,
        idx: &CudaIndex,
        src: &BTensor<Self, T>,
    ) -> BResult<()> {
        self.check_own(idx)?;
        let (rows, f) = dims2("index_add", "dst", dst.layout())?;
        check_src(dst.layout(), idx.len(), src.layout())?;
        let plan = idx.entry.plan(&self.dev, rows)?;
        self.scatter(dst, &plan, src, f)
    }

    fn segment_sum_idx<T: Element>(
        &self,
        x: &BTensor<Self, T>,
        idx: &CudaIndex,
        rows: usize,
    ) -> BResult<BTensor<Self, T>> {
        let (e, f) = self.check_segment_idx("segment_sum", x, idx, rows)?;
        if e == 0 || f == 0 {
            return self.zeros::<T>(&[rows, f]);
        }
        let dp = idx.entry.plan(&self.dev, rows)?;
        let out = self.out::<T>(&[rows, f])?;
        self.segment_sum_by(x, &dp, f, &out)?;
        Ok(out)
    }

    fn segment_max_idx<T: Element>(
        &self,
        x: &BTensor<Self, T>,
        idx: &CudaIndex,
        rows: usize,
    ) -> BResult<BTensor<Self, T>> {
        let (e, f) = self.check_segment_idx("segment_max", x, idx, rows)?;
        let out = self.out::<T>(&[rows, f])?;
        self.zero(&out)?;
        if e == 0 || f == 0 {
            return Ok(out);
        }
        let dp = idx.entry.plan(&self.dev, rows)?;
        chain::max_chain::<T>(&self.dev, &dp, f, ptr(x), ptr(&out))?;
        Ok(out)
    }
    /// Device gather; the index list is cached per thread (see the crate
    /// docs). A long list already cached is gathered before it is confirmed
    /// equal to the cached one, so the host's comparison overlaps the kernel.
    fn index_select<T: Element>(
        &self,
        src: &BTensor<Self, T>,
        idx: &[u32],
    ) -> BResult<BTensor<Self, T>> {
        let (rows, f) = dims2("index_select", "src", src.layout())?;
        // a long list seen before: gather first, confirm the list meanwhile
        if let Some(out) =
            cache::run_then_confirm(&self.dev, idx, rows, |e| self.gather(src, e, f))?
        {
            return Ok(out);
        }
        self.with_idx_entry(idx, rows, |e| self.gather(src, e, f))
    }

    /// Device scatter-add in the canonical order; the plan is cached per
    /// thread. A long list already cached is scattered into a copy of `dst`
    /// before it is confirmed equal to the cached one, so the host's
    /// comparison overlaps the copy and the kernels.
    fn index_add<T: Element>(
        &self,
        dst: &mut BTensor<Self, T>,
        idx: &[u32],
        src: &BTensor<Self, T>,
    ) -> BResult<()> {
        let (rows, f) = dims2("index_add", "dst", dst.layout())?;
        dims2("index_add", "src", src.layout())?;
        // a long list seen before: scatter into a device copy of `dst` while
        // the host confirms the list; `dst` takes the copy only once it has
        // (the copy is dropped otherwise: `dst` was never written)
        let dst_bytes = dst.numel().saturating_mul(T::DTYPE.size());
        if f > 0
            && dst_bytes <= CONFIRM_COPY_RATIO.saturating_mul(4 * idx.len())
            && check_src(dst.layout(), idx.len(), src.layout()).is_ok()
        {
            let optimistic = cache::run_then_confirm(&self.dev, idx, rows, |e| {
                let mut copy = dst.clone();
                self.make_unique(&mut copy)?;
                let plan = e.plan(&self.dev, rows)?;
                self.scatter(&mut copy, &plan, src, f)?;
                Ok(copy)
            });
            // a device error (out of memory for the copy) falls back to the plain path
            if let Ok(Some(copy)) = optimistic {
                *dst = copy;
                return Ok(());
            }
        }
        self.with_idx_entry(idx, rows, |e| {
            check_src(dst.layout(), idx.len(), src.layout())?;
            if f == 0 || idx.is_empty() {
                return Ok(());
            }
            let plan = e.plan(&self.dev, rows)?;
            self.scatter(dst, &plan, src, f)
        })
    }

    /// Device scatter-add with a host plan (uploaded once, cached per thread).
    fn index_add_planned<T: Element>(
        &self,
        dst: &mut BTensor<Self, T>,
        plan: &IndexPlan,
        src: &BTensor<Self, T>,
    ) -> BResult<()> {
        let f = check_index_add(dst.layout(), plan, src.layout())?;
        if f == 0 || plan.is_empty() {
            return Ok(());
        }
        let p = self.plan_of(plan)?;
        self.scatter(dst, &p, src, f)
    }

    fn segment_max<T: Element>(
        &self,
        x: &BTensor<Self, T>,
        plan: &IndexPlan,
    ) -> BResult<BTensor<Self, T>> {
        let (_, f) = ops::check_segment("segment_max", x.shape(), plan)?;
        let out = self.out::<T>(&[plan.rows(), f])?;
        self.zero(&out)?;
        if plan.is_empty() || f == 0 {
            return Ok(out);
        }
        let dp = self.plan_of(plan)?;
        chain::max_chain::<T>(&self.dev, &dp, f, ptr(x), ptr(&out))?;
        Ok(out)
    }

    fn segment_sum<T: Element>(
        &self,
        x: &BTensor<Self, T>,
        plan: &IndexPlan,
    ) -> BResult<BTensor<Self, T>> {
        let (_, f) = ops::check_segment("segment_sum", x.shape(), plan)?;
        if plan.is_empty() || f == 0 {
            return self.zeros::<T>(&[plan.rows(), f]);
        }
        let dp = self.plan_of(plan)?;
        let out = self.out::<T>(&[plan.rows(), f])?;
        self.segment_sum_by(x, &dp, f, &out)?;
        Ok(out)
    }
}

impl CudaBackend {
    /// `(entries, f)` of a segment op by a device list: `x` must be
    /// `[idx.len(), f]` and `[rows, f]` must not overflow.
    pub(super) fn check_segment_idx<T: Element>(
        &self,
        op: &'static str,
        x: &BTensor<Self, T>,
        idx: &CudaIndex,
        rows: usize,
    ) -> BResult<(usize, usize)> {
        self.check_own(idx)?;
        ops::check_segment_len(op, x.shape(), idx.len(), rows)
    }
}

/// `src` must be `[entries, F]` with `dst`'s F.
fn check_src(dst: &Layout, entries: usize, src: &Layout) -> BResult<()> {
    let (_, f) = dims2("index_add", "dst", dst)?;
    let (e, fs) = dims2("index_add", "src", src)?;
    if e != entries || f != fs {
        return Err(BError::ShapeMismatch {
            op: "index_add",
            detail: format!(
                "dst {:?} and src {:?} with an index list of {entries} entries \
                 (want dst [R, F], src [E, F])",
                dst.shape(),
                src.shape()
            ),
        });
    }
    Ok(())
}
