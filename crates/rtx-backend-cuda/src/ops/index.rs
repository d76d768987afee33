//! [`IndexOps`] on the device: gather (`index_select`), the deterministic
//! scatter-add (`index_add`) and the segment max / sum, for indices of any
//! form (resolved to device memory by `indices/`).

use std::borrow::Cow;

use rtx_backend::implement::dims2;
use rtx_backend::prelude::*;
use rtx_backend::{BTensor, Element, Error as BError, IndexPlan, Indices, Result as BResult, ops};
use rtx_tensor::Layout;

use crate::backend::{CudaBackend, ptr, unique_ptr};
use crate::indices::ListEntry;
use crate::indices::lists::CudaIndex;
use crate::indices::plan::DevicePlan;
use crate::kernels::table::{Kernel, Word};
use crate::ops::chain::{self, Level0};
use crate::runtime::args::{In, Out};
use crate::runtime::launch::{Gather, cfg1, lanes_log2, rows_grid};

impl CudaBackend {
    // ---- the kernels ----

    pub(crate) fn gather<T: Element>(
        &self,
        src: &BTensor<Self, T>,
        entry: &ListEntry,
        f: usize,
    ) -> BResult<BTensor<Self, T>> {
        let e = entry.len();
        let out = self.alloc_tensor::<T>(Layout::contiguous(&[e, f])?)?;
        if e == 0 || f == 0 {
            return Ok(out);
        }
        let idx = entry.dev_list(&self.dev)?;
        let row_bytes = (f * T::DTYPE.size()) as u64;
        let word = Word::dividing(row_bytes);
        let w = row_bytes / word.bytes();
        let lanes_log2 = lanes_log2(w);
        let nrows = e as u64;
        // rows are moved as raw words
        let (s, o) = (ptr(src).cast(), ptr(&out).cast());
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
    pub(crate) fn scatter<T: Element>(
        &self,
        dst: &mut BTensor<Self, T>,
        plan: &DevicePlan,
        src: &BTensor<Self, T>,
        f: usize,
    ) -> BResult<()> {
        if f == 0 || plan.values[0] == 0 {
            return Ok(());
        }
        let d = unique_ptr(self, dst)?;
        let form = self.settings.scatter_form();
        let level0 = Level0::Stored { src: ptr(src) };
        chain::sum_chain::<T>(&self.dev, plan, f, f, form, level0, d)?;
        Ok(())
    }

    /// Checks `idx` against `rows` without a device copy where it has
    /// nothing to do (no entry or no column): a plan's row count, a list's
    /// entries.
    ///
    /// # Errors
    /// As [`Resolver::gather_list`](crate::indices::Resolver::gather_list).
    pub(crate) fn check_only(
        &self,
        idx: Indices<'_, Self>,
        op: &'static str,
        what: &str,
        rows: usize,
    ) -> BResult<()> {
        match idx {
            Indices::Plan { .. } => idx.rows_of(op, what, rows).map(drop),
            _ if idx.is_empty(self) => idx.rows_of(op, what, rows).map(drop),
            _ => self.resolver().gather_list(idx, op, what, rows).map(drop),
        }
    }

    /// `(rows, f, empty)` of a segment op after its shape checks: `x:
    /// [E, f]` for `E` entries, the output `[rows, f]`, `empty` when there
    /// is nothing to reduce (then the caller checks the indices alone,
    /// [`CudaBackend::check_only`], after its own shape checks).
    pub(crate) fn segment_shape(
        &self,
        op: &'static str,
        x: &[usize],
        idx: Indices<'_, Self>,
    ) -> BResult<(usize, usize, bool)> {
        let rows = idx.needed_rows(op)?;
        if let Indices::Held { list, .. } = idx {
            self.check_own(list)?;
        }
        let (e, f) = ops::check_segment_len(op, x, idx.len(self), rows)?;
        Ok((rows, f, e == 0 || f == 0))
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

    /// Runs `f` with `lists` and `plans` held on the device and found by
    /// address, without hashing or comparing them, for the duration of the
    /// call: for a static graph whose lists the caller keeps unchanged (they
    /// are borrowed for the call, so no other list can take their place).
    /// Lists and plans are copied to the device before `f` runs.
    ///
    /// # Errors
    /// Too many entries; device errors (before `f` runs).
    fn with_static_indices<R>(
        &self,
        lists: &[&[u32]],
        plans: &[&IndexPlan],
        f: impl FnOnce() -> R,
    ) -> BResult<R> {
        let pinned = self.resolver().pin(lists, plans)?;
        let r = f();
        drop(pinned);
        Ok(r)
    }

    /// Device gather. A long host list already cached is gathered before it
    /// is confirmed equal (`Resolver::run_then_confirm`).
    fn index_select<'i, T: Element>(
        &self,
        src: &BTensor<Self, T>,
        idx: impl Into<Indices<'i, Self>>,
    ) -> BResult<BTensor<Self, T>> {
        let idx = idx.into();
        if let Indices::Held { list, .. } = idx {
            self.check_own(list)?;
        }
        let (rows, f) = dims2("index_select", "src", src.layout())?;
        if let Indices::List { list, .. } = idx {
            idx.rows_of("index_select", "src", rows)?;
            if let Some(out) = self
                .resolver()
                .run_then_confirm(list, rows, |e| self.gather(src, e, f))?
            {
                return Ok(out);
            }
        }
        let entry = self
            .resolver()
            .gather_list(idx, "index_select", "src", rows)?;
        self.gather(src, &entry, f)
    }

    /// Device scatter-add in the canonical order by the indices' device
    /// plan (built on the device from a list, uploaded from a host plan). A
    /// long host list already cached is scattered into a copy of `dst` while
    /// it is confirmed, when `dst` is small next to the list
    /// (`CONFIRM_COPY_RATIO`).
    fn index_add<'i, T: Element>(
        &self,
        dst: &mut BTensor<Self, T>,
        idx: impl Into<Indices<'i, Self>>,
        src: &BTensor<Self, T>,
    ) -> BResult<()> {
        let idx = idx.into();
        if let Indices::Held { list, .. } = idx {
            self.check_own(list)?;
        }
        let (rows, f) = dims2("index_add", "dst", dst.layout())?;
        dims2("index_add", "src", src.layout())?;
        // the indices are checked before the shapes, as the host reference does
        let len = idx.len(self);
        if f == 0 || len == 0 {
            self.check_only(idx, "index_add", "dst", rows)?;
            return check_src(dst.layout(), len, src.layout());
        }
        if let Indices::List { list, .. } = idx {
            idx.rows_of("index_add", "dst", rows)?;
            let dst_bytes = dst.numel().saturating_mul(T::DTYPE.size());
            if dst_bytes <= CONFIRM_COPY_RATIO.saturating_mul(4 * len)
                && check_src(dst.layout(), len, src.layout()).is_ok()
            {
                let optimistic = self.resolver().run_then_confirm(list, rows, |e| {
                    let mut copy = dst.clone();
                    self.make_unique(&mut copy)?;
                    let plan = e.plan(&self.dev, rows)?;
                    self.scatter(&mut copy, &plan, src, f)?;
                    Ok(copy)
                });
                // a failed try (e.g. no room for the copy) falls back below
                if let Ok(Some(copy)) = optimistic {
                    *dst = copy;
                    return Ok(());
                }
            }
        }
        let plan = self.resolver().scatter_plan(idx, "index_add", rows)?;
        check_src(dst.layout(), len, src.layout())?;
        self.scatter(dst, &plan, src, f)
    }

    /// Held lists' plans built together, one wait for all their sizes
    /// (`ListEntry::plans_together`); host lists and plans through the
    /// index cache, each as its first sum would make it.
    fn prepare_plans(&self, lists: &[Indices<'_, Self>]) -> BResult<()> {
        let mut held: Vec<(&ListEntry, usize)> = Vec::new();
        for &idx in lists {
            let rows = idx.needed_rows("prepare_plans")?;
            match idx {
                Indices::Held { list, .. } => {
                    self.check_own(list)?;
                    held.push((&list.entry, rows));
                }
                _ => {
                    self.resolver().scatter_plan(idx, "prepare_plans", rows)?;
                }
            }
        }
        ListEntry::plans_together(&self.dev, &held)
    }

    /// Device segment max by the indices' device plan.
    fn segment_max<'i, T: Element>(
        &self,
        x: &BTensor<Self, T>,
        idx: impl Into<Indices<'i, Self>>,
    ) -> BResult<BTensor<Self, T>> {
        let idx = idx.into();
        let (rows, f, empty) = self.segment_shape("segment_max", x.shape(), idx)?;
        if empty {
            self.check_only(idx, "segment_max", "the output", rows)?;
        }
        let out = self.out::<T>(&[rows, f])?;
        self.zero(&out)?;
        if empty {
            return Ok(out);
        }
        let dp = self.resolver().scatter_plan(idx, "segment_max", rows)?;
        chain::max_chain::<T>(&self.dev, &dp, f, ptr(x), ptr(&out))?;
        Ok(out)
    }

    /// Device segment sum by the indices' device plan (the level chain
    /// reading `x` in plan order).
    fn segment_sum<'i, T: Element>(
        &self,
        x: &BTensor<Self, T>,
        idx: impl Into<Indices<'i, Self>>,
    ) -> BResult<BTensor<Self, T>> {
        let idx = idx.into();
        let (rows, f, empty) = self.segment_shape("segment_sum", x.shape(), idx)?;
        if empty {
            self.check_only(idx, "segment_sum", "the output", rows)?;
            return self.zeros::<T>(&[rows, f]);
        }
        let dp = self.resolver().scatter_plan(idx, "segment_sum", rows)?;
        let out = self.out::<T>(&[rows, f])?;
        self.segment_sum_by(x, &dp, f, &out)?;
        Ok(out)
    }
}

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
