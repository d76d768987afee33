//! Device-resident index lists with their scatter plans: what the index
//! cache, the pins and a `CudaIndex` hold, and what the gathers read.

use std::sync::{Arc, Mutex, OnceLock};

use rtx_backend::{IndexPlan, Result as BResult, reference};

use super::buffer::DevMem;
use super::context::Device;
use super::plan::{DevicePlan, u32_bytes};
use super::plan_build;

/// What an entry was made from (and is compared with on a hash hit).
#[derive(Debug)]
pub(crate) enum Source {
    /// A host index list (kept to compare with on a cache hit).
    Idx(Arc<[u32]>),
    /// A host plan.
    Plan(Arc<IndexPlan>),
    /// An index list made on the device, of this many entries (no host copy).
    Device(usize),
}

/// A device-resident index list and/or scatter plan, built lazily.
#[derive(Debug)]
pub(crate) struct IndexEntry {
    pub source: Source,
    /// Largest index (`None` when empty): known at creation for host lists,
    /// found on the device at first use for device lists.
    max: OnceLock<Option<u32>>,
    dev_idx: OnceLock<DevMem>,
    plan: Mutex<Option<Arc<DevicePlan>>>,
}

impl IndexEntry {
    pub fn from_idx(idx: Arc<[u32]>, max: Option<u32>) -> IndexEntry {
        IndexEntry {
            source: Source::Idx(idx),
            max: OnceLock::from(max),
            dev_idx: OnceLock::new(),
            plan: Mutex::new(None),
        }
    }

    pub fn from_plan(plan: Arc<IndexPlan>) -> IndexEntry {
        IndexEntry {
            max: OnceLock::from(None),
            source: Source::Plan(plan),
            dev_idx: OnceLock::new(),
            plan: Mutex::new(None),
        }
    }

    /// A list of `len` indices already on the device in `mem` (`max` when known).
    pub fn from_device(mem: DevMem, len: usize, max: Option<Option<u32>>) -> IndexEntry {
        IndexEntry {
            source: Source::Device(len),
            max: max.map_or_else(OnceLock::new, OnceLock::from),
            dev_idx: OnceLock::from(mem),
            plan: Mutex::new(None),
        }
    }

    /// Entry count.
    pub fn len(&self) -> usize {
        match &self.source {
            Source::Idx(i) => i.len(),
            Source::Plan(p) => p.len(),
            Source::Device(n) => *n,
        }
    }

    /// The largest index if already known (`Some(None)`: empty).
    pub fn known_max(&self) -> Option<Option<u32>> {
        self.max.get().copied()
    }

    /// The largest index (`None` when empty), found on the device with one
    /// readback the first time for a device list. With `rows`, an index
    /// `>= rows` is [`rtx_backend::Error::IndexOutOfRange`] naming the first one.
    pub fn max(&self, dev: &Device, rows: Option<usize>) -> BResult<Option<u32>> {
        let m = match self.max.get() {
            Some(&m) => m,
            None if self.len() == 0 => *self.max.get_or_init(|| None),
            None => {
                let ptr = self.dev_idx(dev)?;
                let m = plan_build::index_max(dev, ptr, self.len(), None)?;
                *self.max.get_or_init(|| Some(m))
            }
        };
        if let (Some(m), Some(r)) = (m, rows)
            && m as usize >= r
        {
            match &self.source {
                Source::Idx(idx) => reference::check_indices(idx, r)?,
                _ => {
                    let ptr = self.dev_idx(dev)?;
                    plan_build::index_max(dev, ptr, self.len(), Some(r))?;
                }
            }
        }
        Ok(m)
    }

    /// The index list on the device (uploaded on first use).
    ///
    /// # Panics
    /// For a plan entry (a bug: gathers use index entries).
    pub fn dev_idx(&self, dev: &Device) -> BResult<u64> {
        if let Some(m) = self.dev_idx.get() {
            return Ok(m.ptr());
        }
        let Source::Idx(idx) = &self.source else {
            panic!("dev_idx of a plan entry")
        };
        let m = dev.upload_bytes(u32_bytes(idx))?;
        // Another thread may have won the race: keep its copy, drop ours.
        Ok(self.dev_idx.get_or_init(|| m).ptr())
    }

    /// The scatter plan on the device, built at first use: on the device for
    /// index lists (every index checked against `rows` there unless the
    /// largest is already known and checked), uploaded for host plans.
    pub fn plan(&self, dev: &Device, rows: usize) -> BResult<Arc<DevicePlan>> {
        let mut g = self.plan.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(p) = &*g {
            // built before, so the largest index is known: a host comparison
            self.max(dev, Some(rows))?;
            return Ok(Arc::clone(p));
        }
        let p = Arc::new(match &self.source {
            Source::Idx(_) | Source::Device(_) => {
                let known = match self.known_max() {
                    Some(_) => self.max(dev, Some(rows))?,
                    None => None,
                };
                let ptr = self.dev_idx(dev)?;
                let built = plan_build::build(dev, ptr, self.len(), rows, known)?;
                let _ = self.max.set(built.max);
                built.plan
            }
            Source::Plan(plan) => DevicePlan::upload(dev, plan)?,
        });
        *g = Some(Arc::clone(&p));
        Ok(p)
    }

    /// Host and device bytes held.
    pub fn bytes(&self) -> usize {
        let host = match &self.source {
            Source::Idx(i) => 4 * i.len(),
            Source::Plan(p) => 4 * p.len() + 8 * p.offsets().len(),
            Source::Device(_) => 0,
        };
        let dev = self.dev_idx.get().map_or(0, DevMem::bytes)
            + self
                .plan
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .as_ref()
                .map_or(0, |p| p.bytes());
        host + dev
    }
}
