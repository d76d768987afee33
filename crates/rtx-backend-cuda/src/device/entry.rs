//! Device-resident index lists and scatter plans: what the index cache and
//! the pins hold, and what the gathers and the level chains read.

use std::sync::{Arc, Mutex, OnceLock};

use rtx_backend::{IndexPlan, Result as BResult};

use super::buffer::DevMem;
use super::context::Device;
use crate::levels::build_levels;

/// A scatter plan on the device: the plan's positions and every level's chunk
/// tables, in one allocation of `u32`s.
#[derive(Debug)]
pub(crate) struct DevicePlan {
    mem: DevMem,
    /// Device address of the positions (level 0 values).
    pub positions: u64,
    /// Device address of the destination row of every plan entry (the index
    /// list the plan was built from), for the segment ops' elementwise steps.
    pub rowof: u64,
    /// Per level: (start, row, slot, chunks).
    pub levels: Vec<(u64, u64, u64, u64)>,
    /// Values each level reads (`values[0]` = entries; `values[l]` = scratch slots of level l).
    pub values: Vec<usize>,
}

impl DevicePlan {
    /// Uploads `plan` and its chunk tables.
    pub fn upload(dev: &Device, plan: &IndexPlan) -> BResult<DevicePlan> {
        let lv = build_levels(plan);
        let total = 2 * plan.len()
            + lv.levels
                .iter()
                .map(|l| l.start.len() + 2 * l.len())
                .sum::<usize>();
        let mut host: Vec<u32> = Vec::with_capacity(total);
        host.extend_from_slice(plan.positions());
        host.resize(2 * plan.len(), 0);
        {
            let rowof = &mut host[plan.len()..];
            for r in 0..plan.rows() {
                for &p in plan.row(r) {
                    rowof[p as usize] = r as u32;
                }
            }
        }
        let mut at = Vec::new();
        for l in &lv.levels {
            let s = host.len();
            host.extend_from_slice(&l.start);
            let r = host.len();
            host.extend_from_slice(&l.row);
            let o = host.len();
            host.extend_from_slice(&l.slot);
            at.push((s, r, o, l.len()));
        }
        let mem = dev.upload_bytes(u32_bytes(&host))?;
        let base = mem.ptr();
        let a = |i: usize| base + 4 * i as u64;
        Ok(DevicePlan {
            positions: base,
            rowof: a(plan.len()),
            levels: at
                .into_iter()
                .map(|(s, r, o, n)| (a(s), a(r), a(o), n as u64))
                .collect(),
            values: lv.values,
            mem,
        })
    }

    /// Device bytes held.
    pub fn bytes(&self) -> usize {
        self.mem.bytes()
    }
}

/// The bytes of a `u32` slice.
pub(crate) fn u32_bytes(v: &[u32]) -> &[u8] {
    // SAFETY: u32 has no padding and every byte is initialized; u8 has
    // alignment 1 and the length covers exactly the slice's bytes.
    unsafe { std::slice::from_raw_parts(v.as_ptr().cast::<u8>(), std::mem::size_of_val(v)) }
}

/// What an entry was made from (and is compared with on a hash hit).
#[derive(Debug)]
pub(crate) enum Source {
    /// An index list.
    Idx(Arc<[u32]>),
    /// A host plan.
    Plan(Arc<IndexPlan>),
}

/// A device-resident index list and/or scatter plan, built lazily.
#[derive(Debug)]
pub(crate) struct IndexEntry {
    pub source: Source,
    /// Largest index (`None` when empty).
    pub max: Option<u32>,
    dev_idx: OnceLock<DevMem>,
    plan: Mutex<Option<Arc<DevicePlan>>>,
}

impl IndexEntry {
    pub fn from_idx(idx: Arc<[u32]>, max: Option<u32>) -> IndexEntry {
        IndexEntry {
            source: Source::Idx(idx),
            max,
            dev_idx: OnceLock::new(),
            plan: Mutex::new(None),
        }
    }

    pub fn from_plan(plan: Arc<IndexPlan>) -> IndexEntry {
        IndexEntry {
            max: None,
            source: Source::Plan(plan),
            dev_idx: OnceLock::new(),
            plan: Mutex::new(None),
        }
    }

    /// Entry count.
    pub fn len(&self) -> usize {
        match &self.source {
            Source::Idx(i) => i.len(),
            Source::Plan(p) => p.len(),
        }
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

    /// The scatter plan on the device (built and uploaded on first use).
    pub fn plan(&self, dev: &Device) -> BResult<Arc<DevicePlan>> {
        let mut g = self.plan.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(p) = &*g {
            return Ok(Arc::clone(p));
        }
        let p = Arc::new(match &self.source {
            Source::Idx(idx) => {
                let rows = self.max.map_or(0, |m| m as usize + 1);
                DevicePlan::upload(dev, &IndexPlan::new(idx, rows)?)?
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
