//! An op's [`Indices`] to device memory, in one place:
//! [`CudaBackend::gather_list`] gives the device list an op gathers by,
//! [`CudaBackend::scatter_plan`] the device plan it sums by. A backend list
//! ([`CudaIndex`]) already is device memory; a host list or plan is found
//! in the backend's [`IndexCache`] (pinned by address, else by content) or
//! copied to the device and kept there once its entries passed the range
//! check. `entry` holds the device copies, `cache` finds them again.

use std::sync::Arc;

use rtx_backend::implement::check_len;
use rtx_backend::{IndexPlan, Indices, Result as BResult};

use super::cache::{Cached, IndexCache, PinKey, list_key, plan_key};
use super::entry::{Largest, ListEntry, PlanEntry};

use super::lists::CudaIndex;
use super::plan::DevicePlan;
use crate::indices::hash::{max_of, same_list};
use crate::runtime::backend::CudaBackend;

/// Host lists at least this long run with a cached candidate of the same
/// sample key while the host compares every entry ([`CudaBackend::run_then_confirm`]):
/// the comparison of a long list costs about as much as the op.
pub(crate) const CONFIRM_AFTER_MIN: usize = 1 << 20;

/// A device copy found or made for an op, and what to cache once the op's
/// checks passed.
type Found<E> = (Arc<E>, Option<(u64, Cached)>);

impl<'a> From<&'a CudaIndex> for Indices<'a, CudaBackend> {
    fn from(list: &'a CudaIndex) -> Self {
        Indices::held(list)
    }
}

impl CudaBackend {
    /// The device list of `idx`, every entry checked below `rows`: the rows
    /// of `op`'s tensor `what` it gathers from. An empty list's address is 0.
    ///
    /// # Errors
    /// [`rtx_backend::Error::ShapeMismatch`] when `idx` says another row
    /// count; [`rtx_backend::Error::IndexOutOfRange`]; a foreign list; too
    /// many entries; device errors.
    pub(crate) fn gather_list(
        &self,
        idx: Indices<'_, Self>,
        op: &'static str,
        what: &str,
        rows: usize,
    ) -> BResult<Arc<ListEntry>> {
        idx.rows_of(op, what, rows)?;
        let (entry, fresh) = self.list_entry(idx)?;
        entry.check_below(&self.dev, rows)?;
        self.keep(fresh);
        Ok(entry)
    }

    /// The device plan of `idx` into `rows` rows (the rows of the tensor
    /// `op` sums into), every entry checked below `rows`.
    ///
    /// # Errors
    /// As [`CudaBackend::gather_list`].
    pub(crate) fn scatter_plan(
        &self,
        idx: Indices<'_, Self>,
        op: &'static str,
        rows: usize,
    ) -> BResult<Arc<DevicePlan>> {
        idx.rows_of(op, "the output", rows)?;
        if let Indices::Plan(p) = idx {
            let (entry, fresh) = self.plan_entry(p)?;
            let plan = entry.plan(&self.dev)?;
            self.keep(fresh);
            return Ok(plan);
        }
        let (entry, fresh) = self.list_entry(idx)?;
        let plan = entry.plan(&self.dev, rows)?;
        self.keep(fresh);
        Ok(plan)
    }

    /// The device list of `idx`, found or made (not yet checked).
    fn list_entry(&self, idx: Indices<'_, Self>) -> BResult<Found<ListEntry>> {
        match idx {
            Indices::Held { list, .. } => {
                self.check_own(list)?;
                Ok((Arc::clone(&list.entry), None))
            }
            Indices::Plan(p) => Ok((self.plan_entry(p)?.0.list(), None)),
            Indices::List { list, .. } => {
                if let Some(Cached::List(e)) = self.indices.pinned(&PinKey::list(list)) {
                    return Ok((e, None));
                }
                check_len(list.len())?;
                let key = list_key(list);
                if let Some(e) = self.indices.find_list(key, list) {
                    self.indices.shrink_to(self.index_cache_limit());
                    return Ok((e, None));
                }
                let largest = Largest::of(max_of(list));
                let e = Arc::new(ListEntry::from_host(list.into(), largest));
                Ok((Arc::clone(&e), Some((key, Cached::List(e)))))
            }
        }
    }

    /// The device copy of host plan `plan`, found or made.
    fn plan_entry(&self, plan: &IndexPlan) -> BResult<Found<PlanEntry>> {
        if let Some(Cached::Plan(e)) = self.indices.pinned(&PinKey::plan(plan)) {
            return Ok((e, None));
        }
        let key = plan_key(plan);
        if let Some(e) = self.indices.find_plan(key, plan) {
            self.indices.shrink_to(self.index_cache_limit());
            return Ok((e, None));
        }
        let e = Arc::new(PlanEntry::new(Arc::new(plan.clone())));
        Ok((Arc::clone(&e), Some((key, Cached::Plan(e)))))
    }

    /// Caches a fresh entry whose op passed its checks.
    fn keep(&self, fresh: Option<(u64, Cached)>) {
        if let Some((key, entry)) = fresh {
            self.indices.insert(key, entry, self.index_cache_limit());
        }
    }

    /// For a long host list not pinned: runs `f` with each cached list of
    /// the same sample key, length and a largest entry below `rows`, then
    /// compares that list with `list` entry by entry (on the host, while
    /// the device works): the first that equals it gives the result. `None`
    /// when no candidate is `list` (then `f`'s work is discarded).
    ///
    /// # Errors
    /// `f`'s.
    pub(crate) fn run_then_confirm<R>(
        &self,
        list: &[u32],
        rows: usize,
        f: impl Fn(&ListEntry) -> BResult<R>,
    ) -> BResult<Option<R>> {
        if list.len() < CONFIRM_AFTER_MIN || self.indices.pinned(&PinKey::list(list)).is_some() {
            return Ok(None);
        }
        for e in self
            .indices
            .list_candidates(list_key(list), list.len(), rows)
        {
            let r = f(&e)?;
            if e.host().is_some_and(|h| same_list(h, list)) {
                return Ok(Some(r));
            }
        }
        Ok(None)
    }

    /// Runs `f` with `lists` and `plans` held on the device and found by
    /// address, without hashing or comparing them, for the duration of the
    /// call: for a static graph whose lists the caller keeps unchanged (they
    /// are borrowed for the call, so no other list can take their place).
    /// Lists and plans are copied to the device before `f` runs.
    ///
    /// # Errors
    /// Too many entries; device errors (before `f` runs).
    pub fn with_static_indices<R>(
        &self,
        lists: &[&[u32]],
        plans: &[&IndexPlan],
        f: impl FnOnce() -> R,
    ) -> BResult<R> {
        struct Unpin<'c>(&'c IndexCache, Vec<PinKey>);
        impl Drop for Unpin<'_> {
            fn drop(&mut self) {
                for k in &self.1 {
                    self.0.unpin(k);
                }
            }
        }
        let mut guard = Unpin(&self.indices, Vec::with_capacity(lists.len() + plans.len()));
        for &list in lists.iter().filter(|l| !l.is_empty()) {
            let (entry, _) = self.list_entry(Indices::list(list))?;
            entry.dev_list(&self.dev)?;
            let key = PinKey::list(list);
            self.indices.pin(key, Cached::List(entry));
            guard.1.push(key);
        }
        for &plan in plans.iter().filter(|p| !p.is_empty()) {
            let (entry, _) = self.plan_entry(plan)?;
            entry.plan(&self.dev)?;
            let key = PinKey::plan(plan);
            self.indices.pin(key, Cached::Plan(entry));
            guard.1.push(key);
        }
        let r = f();
        drop(guard);
        Ok(r)
    }

    /// Sets the byte budget of this backend's index cache (default
    /// [`DEFAULT_INDEX_CACHE_BYTES`](crate::DEFAULT_INDEX_CACHE_BYTES); 0
    /// disables caching). Applies at the next lookup.
    pub fn set_index_cache_limit(&self, bytes: usize) {
        self.settings.set_index_cache_limit(bytes);
    }

    /// The byte budget of the index cache.
    pub fn index_cache_limit(&self) -> usize {
        self.settings.index_cache_limit()
    }

    /// Drops the cached index lists and plans (pinned ones stay pinned).
    pub fn clear_index_cache(&self) {
        self.indices.clear();
    }

    /// `(entries, bytes)` of the index cache.
    pub fn index_cache_stats(&self) -> (usize, usize) {
        self.indices.stats()
    }
}
