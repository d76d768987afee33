//! Device copies of indices: a [`ListEntry`] (a list on the device, its
//! largest entry, the scatter plan built from it) and a [`PlanEntry`] (a
//! host plan on the device). What the cache, the pins and a `CudaIndex`
//! hold, and what the kernels read.

use std::sync::{Arc, Mutex, OnceLock};

use rtx_backend::{IndexPlan, Result as BResult, ops, reference};

use crate::indices::hash::max_and_sorted;
use crate::indices::layout::INFO_WORDS;
use crate::indices::plan::{DevicePlan, u32_bytes};
use crate::indices::sorted::Sorted;
use crate::indices::{batch, build};
use crate::runtime::args::DevPtr;
use crate::runtime::buffer::DevMem;
use crate::runtime::context::Device;

/// The largest entry of a list, once known.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Largest {
    /// The list has no entry.
    Empty,
    /// Its largest entry.
    Is(u32),
}

impl Largest {
    /// Of an optional maximum (`None`: no entry).
    pub fn of(max: Option<u32>) -> Largest {
        max.map_or(Largest::Empty, Largest::Is)
    }

    /// `None` for an empty list.
    pub fn get(self) -> Option<u32> {
        match self {
            Largest::Empty => None,
            Largest::Is(m) => Some(m),
        }
    }
}

/// An index list on the device, uploaded from the host at first use or made
/// there (a sampler, a concatenation), with the scatter plan built from it
/// at its first scatter. The plan does not depend on the row count: its rows
/// end at the largest entry, and each use checks that entry against its own
/// row count.
#[derive(Debug)]
pub(crate) struct ListEntry {
    /// The host list it was made from, kept to compare with on a cache hit
    /// and to download without a copy (`None` for a list made on the device).
    host: Option<Arc<[u32]>>,
    len: usize,
    largest: OnceLock<Largest>,
    /// Every entry is below this, known from what made the list (a
    /// sampler's node ids and local ids): a range check against at least as
    /// many rows needs neither the largest entry nor a wait for it.
    below: Option<u64>,
    /// Non-decreasing, known from what made the list.
    sorted: Option<Sorted>,
    dev: OnceLock<DevMem>,
    plan: Built<DevicePlan>,
}

/// A value built once, at first use, by one thread (others wait for it);
/// read without a lock once built (the cache sums entries' bytes under its
/// own lock, never waiting for a build).
#[derive(Debug)]
struct Built<V> {
    value: OnceLock<Arc<V>>,
    building: Mutex<()>,
}

impl<V> Built<V> {
    fn new() -> Self {
        Built {
            value: OnceLock::new(),
            building: Mutex::new(()),
        }
    }

    fn get(&self) -> Option<&Arc<V>> {
        self.value.get()
    }

    /// The value, built by `build` if no thread has built it yet.
    fn get_or_build(&self, build: impl FnOnce() -> BResult<V>) -> BResult<Arc<V>> {
        if let Some(v) = self.value.get() {
            return Ok(Arc::clone(v));
        }
        let _one = self.building.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(v) = self.value.get() {
            return Ok(Arc::clone(v));
        }
        let v = Arc::new(build()?);
        Ok(Arc::clone(self.value.get_or_init(|| v)))
    }
}

impl ListEntry {
    /// A host list (not yet on the device); its largest entry, and whether
    /// it is sorted, are found here, on the host.
    pub fn from_host(list: Arc<[u32]>) -> ListEntry {
        let (max, sorted) = max_and_sorted(&list);
        let sorted = match (list.first(), max) {
            (Some(&lo), Some(hi)) if sorted => Some(Sorted { lo, hi }),
            _ => None,
        };
        ListEntry {
            len: list.len(),
            host: Some(list),
            largest: OnceLock::from(Largest::of(max)),
            below: None,
            sorted,
            dev: OnceLock::new(),
            plan: Built::new(),
        }
    }

    /// A list of `len` entries already on the device in `mem` (`largest`
    /// where known).
    pub fn from_device(mem: DevMem, len: usize, largest: Option<Largest>) -> ListEntry {
        ListEntry {
            host: None,
            len,
            largest: largest.map_or_else(OnceLock::new, OnceLock::from),
            below: None,
            sorted: None,
            dev: OnceLock::from(mem),
            plan: Built::new(),
        }
    }

    /// A list of `len` entries on the device in `mem`, every one below
    /// `below` by construction (the maker's guarantee: a kernel that wrote an
    /// entry past it would let a gather read out of bounds).
    pub fn from_device_below(mem: DevMem, len: usize, below: usize) -> ListEntry {
        ListEntry {
            below: Some(below as u64),
            ..ListEntry::from_device(mem, len, None)
        }
    }

    /// The list with its maker's knowledge of its order (`None`: none).
    /// The maker's guarantee: a list marked sorted that is not gets a wrong
    /// plan.
    pub fn sorted_as(self, sorted: Option<Sorted>) -> ListEntry {
        ListEntry { sorted, ..self }
    }

    /// What is known of its order.
    pub fn sorted(&self) -> Option<Sorted> {
        self.sorted
    }

    pub fn len(&self) -> usize {
        self.len
    }

    /// The host list it was made from, if any.
    pub fn host(&self) -> Option<&Arc<[u32]>> {
        self.host.as_ref()
    }

    /// The largest entry if known without device work.
    pub fn known_largest(&self) -> Option<Largest> {
        self.largest.get().copied()
    }

    /// The largest entry: found on the device with one readback the first
    /// time for a device-made list, then known.
    ///
    /// # Errors
    /// Device errors.
    pub fn largest(&self, dev: &Device) -> BResult<Largest> {
        if let Some(&m) = self.largest.get() {
            return Ok(m);
        }
        if self.len == 0 {
            return Ok(*self.largest.get_or_init(|| Largest::Empty));
        }
        let m = build::index_max(dev, self.dev_list(dev)?, self.len, None)?;
        Ok(*self.largest.get_or_init(|| Largest::Is(m)))
    }

    /// Checks every entry against `rows`: a host comparison once the largest
    /// is known; an out-of-range list names its first bad position (found on
    /// the host for a host list, on the device otherwise).
    ///
    /// # Errors
    /// [`rtx_backend::Error::IndexOutOfRange`]; device errors.
    pub fn check_below(&self, dev: &Device, rows: usize) -> BResult<()> {
        if self.below.is_some_and(|b| b <= rows as u64) {
            return Ok(());
        }
        let Largest::Is(m) = self.largest(dev)? else {
            return Ok(());
        };
        if (m as usize) < rows {
            return Ok(());
        }
        match &self.host {
            Some(list) => reference::check_indices(list, rows),
            None => build::index_max(dev, self.dev_list(dev)?, self.len, Some(rows)).map(drop),
        }
    }

    /// The list on the device (uploaded at first use; null for an empty list,
    /// which no kernel reads).
    ///
    /// # Errors
    /// Device errors.
    pub fn dev_list(&self, dev: &Device) -> BResult<DevPtr<u32>> {
        if self.len == 0 {
            return Ok(DevPtr::NULL);
        }
        if let Some(m) = self.dev.get() {
            return Ok(m.ptr());
        }
        let list = self
            .host
            .as_ref()
            .expect("a list made on the device is created with its memory");
        let m = dev.upload_bytes(u32_bytes(list))?;
        // Another thread may have won the race: keep its copy, drop ours.
        Ok(self.dev.get_or_init(|| m).ptr())
    }

    /// The scatter plan, its entries checked against `rows` (built on the
    /// device at first use).
    ///
    /// # Errors
    /// [`rtx_backend::Error::IndexOutOfRange`]; device errors.
    pub fn plan(&self, dev: &Device, rows: usize) -> BResult<Arc<DevicePlan>> {
        if let Some(p) = self.plan.get() {
            // built before, so the largest entry is known: a host comparison
            self.check_below(dev, rows)?;
            return Ok(Arc::clone(p));
        }
        let mut checked = false;
        let p = self.plan.get_or_build(|| {
            let request = self.request(dev, rows)?;
            let built = build::build(dev, &request)?;
            let _ = self.largest.set(Largest::of(built.max));
            checked = true;
            Ok(built.plan)
        })?;
        if !checked {
            // another thread built it for its own row count
            self.check_below(dev, rows)?;
        }
        Ok(p)
    }

    /// The scatter plans of `lists` (each entry with the rows it is summed
    /// into), built together: every build queued, most of them in one set
    /// of launches ([`batch::start_many`]), then one wait for all their
    /// sizes (`Device::read_each`); entries built
    /// before, and each entry against each of its row counts, checked as
    /// [`ListEntry::plan`] checks them. A plan another thread finishes first
    /// is kept and this one dropped (the same plan).
    ///
    /// # Errors
    /// As [`ListEntry::plan`] (the first error of the batch): a list whose
    /// build reports an entry out of range keeps no plan, and the others'
    /// plans are kept; an error while the builds are queued (an
    /// allocation, a list whose range is read back before its build)
    /// keeps none of them.
    pub fn plans_together(dev: &Device, lists: &[(&ListEntry, usize)]) -> BResult<()> {
        let mut fresh: Vec<(&ListEntry, build::Request)> = Vec::new();
        for &(e, rows) in lists {
            let seen = fresh.iter().any(|(q, _)| std::ptr::eq(*q, e));
            if seen || e.plan.get().is_some() {
                continue;
            }
            fresh.push((e, e.request(dev, rows)?));
        }
        let requests: Vec<build::Request> = fresh.iter().map(|(_, r)| *r).collect();
        let mut queued: Vec<(&ListEntry, build::Pending)> = Vec::new();
        for ((e, _), started) in fresh.iter().zip(batch::start_many(dev, &requests)?) {
            match started {
                build::Started::Done(built) => e.keep(built),
                build::Started::Queued(p) => queued.push((e, p)),
            }
        }
        if !queued.is_empty() {
            let mut words = vec![[0u64; INFO_WORDS]; queued.len()];
            let mut parts: Vec<(DevPtr<u64>, &mut [u64])> = queued
                .iter()
                .map(|(_, p)| p.info())
                .zip(words.iter_mut().map(|w| &mut w[..]))
                .collect();
            dev.read_each(&mut parts, "reading device plans' sizes back")?;
            let mut first_error = None;
            for ((e, p), w) in queued.into_iter().zip(&words) {
                match p.finish(dev, w) {
                    Ok(built) => e.keep(built),
                    Err(err) => {
                        first_error.get_or_insert(err);
                    }
                }
            }
            if let Some(err) = first_error {
                return Err(err);
            }
        }
        for &(e, rows) in lists {
            e.check_below(dev, rows)?;
        }
        Ok(())
    }

    /// The build of this list's plan into `rows`. Its largest entry, where
    /// known, is checked against `rows` here (the build then runs no range
    /// check); unknown, the build checks every entry.
    fn request(&self, dev: &Device, rows: usize) -> BResult<build::Request> {
        let known_max = match self.known_largest() {
            Some(largest) => {
                self.check_below(dev, rows)?;
                largest.get()
            }
            None => None,
        };
        Ok(build::Request {
            idx: self.dev_list(dev)?,
            n: self.len,
            rows,
            known_max,
            sorted: self.sorted.is_some(),
        })
    }

    /// Keeps a plan built for this list (unless another thread kept one
    /// first) and the largest entry its build found.
    fn keep(&self, built: build::Built) {
        let _ = self.largest.set(Largest::of(built.max));
        let _ = self.plan.value.set(Arc::new(built.plan));
    }

    /// Host and device bytes held.
    pub fn bytes(&self) -> usize {
        let host = self.host.as_ref().map_or(0, |l| 4 * l.len());
        host + self.dev.get().map_or(0, DevMem::bytes) + self.plan.get().map_or(0, |p| p.bytes())
    }
}

/// A host [`IndexPlan`] on the device: its plan uploaded at first use (the
/// chunk tables built on the host), and its list, for a gather by a plan,
/// recovered from the plan's rows.
#[derive(Debug)]
pub(crate) struct PlanEntry {
    host: Arc<IndexPlan>,
    plan: Built<DevicePlan>,
    list: OnceLock<Arc<ListEntry>>,
}

impl PlanEntry {
    pub fn new(host: Arc<IndexPlan>) -> PlanEntry {
        PlanEntry {
            host,
            plan: Built::new(),
            list: OnceLock::new(),
        }
    }

    /// The host plan.
    pub fn host(&self) -> &IndexPlan {
        &self.host
    }

    /// The plan on the device.
    ///
    /// # Errors
    /// Device errors.
    pub fn plan(&self, dev: &Device) -> BResult<Arc<DevicePlan>> {
        self.plan
            .get_or_build(|| DevicePlan::upload(dev, &self.host))
    }

    /// The plan's list, in list order.
    pub fn list(&self) -> Arc<ListEntry> {
        Arc::clone(
            self.list.get_or_init(|| {
                Arc::new(ListEntry::from_host(ops::plan_indices(&self.host).into()))
            }),
        )
    }

    /// Host and device bytes held.
    pub fn bytes(&self) -> usize {
        let host = 4 * self.host.len() + 8 * self.host.offsets().len();
        host + self.plan.get().map_or(0, |p| p.bytes()) + self.list.get().map_or(0, |l| l.bytes())
    }
}
