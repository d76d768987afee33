//! An op's [`Indices`] to device memory, in one place: [`Resolver`] (a
//! backend's index cache on its device) gives the device list an op
//! gathers by ([`Resolver::gather_list`]) and the device plan it sums by
//! ([`Resolver::scatter_plan`]). A backend list ([`CudaIndex`]) already is
//! device memory; a host list or plan is found in the [`IndexCache`]
//! (pinned by address, else by content) or copied to the device and kept
//! there once its entries passed the range check. `entry` holds the device
//! copies, `cache` finds them again. The backend's ops reach it through
//! `CudaBackend::resolver` (`backend/mod.rs`).

use std::sync::Arc;

use rtx_backend::implement::check_len;
use rtx_backend::{IndexOps, IndexPlan, Indices, Result as BResult};

use super::cache::{Cached, IndexCache, PinKey, list_key, plan_key};
use super::entry::{ListEntry, PlanEntry};
use super::hash::same_list;
use super::lists::{CudaIndex, check_owner};
use super::plan::DevicePlan;
use crate::runtime::context::Device;

/// Host lists at least this long run with a cached candidate of the same
/// sample key while the host compares every entry ([`Resolver::run_then_confirm`]):
/// the comparison of a long list costs about as much as the op.
pub(crate) const CONFIRM_AFTER_MIN: usize = 1 << 20;

/// Where a device copy came from, and so what the cache does once the op's
/// checks and device work are done.
#[derive(Debug)]
enum Origin {
    /// Made now: cached (under this key) once the op's checks passed.
    Fresh(u64, Cached),
    /// Found in the cache, which now accounts for what the op added to it
    /// (a device copy, a plan).
    Cached,
    /// Held by the caller (a backend list, a pin): not the cache's.
    Held,
}

/// A device copy found or made for an op, and where it came from.
type Found<E> = (Arc<E>, Origin);

/// A backend's index cache on its device, under its byte budget.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Resolver<'c> {
    pub cache: &'c IndexCache,
    pub dev: &'c Device,
    pub limit: usize,
}

impl<'c> Resolver<'c> {
    /// The device list of `idx`, every entry checked below `rows`: the rows
    /// of `op`'s tensor `what` it gathers from. An empty list's address is 0.
    ///
    /// # Errors
    /// [`rtx_backend::Error::ShapeMismatch`] when `idx` says another row
    /// count; [`rtx_backend::Error::IndexOutOfRange`]; a foreign list; too
    /// many entries; device errors.
    pub(crate) fn gather_list<B: IndexOps<Index = CudaIndex> + ?Sized>(
        &self,
        idx: Indices<'_, B>,
        op: &'static str,
        what: &str,
        rows: usize,
    ) -> BResult<Arc<ListEntry>> {
        idx.rows_of(op, what, rows)?;
        let (entry, origin) = self.list_entry(idx)?;
        entry.check_below(self.dev, rows)?;
        // on the device before it is cached: the budget counts both copies
        entry.dev_list(self.dev)?;
        self.keep(origin);
        Ok(entry)
    }

    /// The device plan of `idx` into `rows` rows (the rows of the tensor
    /// `op` sums into), every entry checked below `rows`.
    ///
    /// # Errors
    /// As [`Resolver::gather_list`].
    pub(crate) fn scatter_plan<B: IndexOps<Index = CudaIndex> + ?Sized>(
        &self,
        idx: Indices<'_, B>,
        op: &'static str,
        rows: usize,
    ) -> BResult<Arc<DevicePlan>> {
        idx.rows_of(op, "the output", rows)?;
        if let Indices::Plan { plan: p, .. } = idx {
            let (entry, origin) = self.plan_entry(p)?;
            let plan = entry.plan(self.dev)?;
            self.keep(origin);
            return Ok(plan);
        }
        let (entry, origin) = self.list_entry(idx)?;
        let plan = entry.plan(self.dev, rows)?;
        self.keep(origin);
        Ok(plan)
    }

    /// The device list of `idx`, found or made (not yet checked).
    fn list_entry<B: IndexOps<Index = CudaIndex> + ?Sized>(
        &self,
        idx: Indices<'_, B>,
    ) -> BResult<Found<ListEntry>> {
        match idx {
            Indices::Held { list, .. } => {
                check_owner(list, self.dev.id)?;
                Ok((Arc::clone(&list.entry), Origin::Held))
            }
            Indices::Plan { plan: p, .. } => {
                let (entry, origin) = self.plan_entry(p)?;
                Ok((entry.list(), origin))
            }
            Indices::List { list, .. } => self.host_list_entry(list),
        }
    }

    /// The device copy of host list `list`, found or made (not yet checked).
    fn host_list_entry(&self, list: &[u32]) -> BResult<Found<ListEntry>> {
        if let Some(Cached::List(e)) = self.cache.pinned(&PinKey::list(list)) {
            return Ok((e, Origin::Held));
        }
        check_len(list.len())?;
        let key = list_key(list);
        if let Some(e) = self.cache.find_list(key, list) {
            return Ok((e, Origin::Cached));
        }
        let e = Arc::new(ListEntry::from_host(list.into()));
        Ok((Arc::clone(&e), Origin::Fresh(key, Cached::List(e))))
    }

    /// The device copy of host plan `plan`, found or made.
    fn plan_entry(&self, plan: &IndexPlan) -> BResult<Found<PlanEntry>> {
        if let Some(Cached::Plan(e)) = self.cache.pinned(&PinKey::plan(plan)) {
            return Ok((e, Origin::Held));
        }
        let key = plan_key(plan);
        if let Some(e) = self.cache.find_plan(key, plan) {
            return Ok((e, Origin::Cached));
        }
        let e = Arc::new(PlanEntry::new(Arc::new(plan.clone())));
        Ok((Arc::clone(&e), Origin::Fresh(key, Cached::Plan(e))))
    }

    /// After an op's checks and device work: caches a fresh entry, or
    /// accounts for what the op added to a cached one (either may evict the
    /// least recently used entries down to the budget).
    fn keep(&self, origin: Origin) {
        match origin {
            Origin::Fresh(key, entry) => self.cache.insert(key, entry, self.limit),
            Origin::Cached => self.cache.shrink_to(self.limit),
            Origin::Held => {}
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
        if list.len() < CONFIRM_AFTER_MIN || self.cache.pinned(&PinKey::list(list)).is_some() {
            return Ok(None);
        }
        for e in self.cache.list_candidates(list_key(list), list.len(), rows) {
            let r = f(&e)?;
            if e.host().is_some_and(|h| same_list(h, list)) {
                return Ok(Some(r));
            }
        }
        Ok(None)
    }

    /// Pins `lists` and `plans` (copied to the device first) until the
    /// guard drops: found by address, without hashing or comparing (see
    /// `IndexOps::with_static_indices`).
    ///
    /// # Errors
    /// Too many entries; device errors (nothing stays pinned).
    pub(crate) fn pin(&self, lists: &[&[u32]], plans: &[&IndexPlan]) -> BResult<Pinned<'c>> {
        let mut guard = Pinned(self.cache, Vec::with_capacity(lists.len() + plans.len()));
        for &list in lists.iter().filter(|l| !l.is_empty()) {
            let (entry, origin) = self.host_list_entry(list)?;
            entry.dev_list(self.dev)?;
            self.keep(origin);
            let key = PinKey::list(list);
            self.cache.pin(key, Cached::List(entry));
            guard.1.push(key);
        }
        for &plan in plans.iter().filter(|p| !p.is_empty()) {
            let (entry, origin) = self.plan_entry(plan)?;
            entry.plan(self.dev)?;
            self.keep(origin);
            let key = PinKey::plan(plan);
            self.cache.pin(key, Cached::Plan(entry));
            guard.1.push(key);
        }
        Ok(guard)
    }
}

/// Lists and plans pinned until dropped.
#[derive(Debug)]
pub(crate) struct Pinned<'c>(&'c IndexCache, Vec<PinKey>);

impl Drop for Pinned<'_> {
    fn drop(&mut self) {
        for k in &self.1 {
            self.0.unpin(k);
        }
    }
}
