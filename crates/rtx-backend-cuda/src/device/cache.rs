//! Device-resident index lists and scatter plans, and the per-thread cache of
//! them keyed by the exact index list (or plan).

use std::cell::RefCell;
use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex, OnceLock};

use rtx_backend::{IndexPlan, Result as BResult};

use super::Device;
use super::mem::DevMem;
use crate::hash::hash_and_max;
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

/// One thread's cache for one backend: entries by hash, least recently used evicted first.
#[derive(Debug, Default)]
struct Lru {
    entries: HashMap<u64, Vec<(Arc<IndexEntry>, u64)>>,
    tick: u64,
}

impl Lru {
    fn bytes(&self) -> usize {
        self.entries
            .values()
            .flatten()
            .map(|(e, _)| e.bytes())
            .sum()
    }

    /// Evicts least recently used entries until at most `limit` bytes remain.
    fn shrink_to(&mut self, limit: usize) {
        let mut bytes = self.bytes();
        while bytes > limit {
            let victim = self
                .entries
                .iter()
                .flat_map(|(&h, v)| v.iter().enumerate().map(move |(i, (_, t))| (h, i, *t)))
                .min_by_key(|&(_, _, t)| t);
            let Some((h, i, _)) = victim else {
                return;
            };
            let v = self.entries.get_mut(&h).expect("key just seen");
            let (e, _) = v.swap_remove(i);
            bytes -= e.bytes();
            if v.is_empty() {
                self.entries.remove(&h);
            }
        }
    }
}

thread_local! {
    static CACHE: RefCell<HashMap<u64, Lru>> = RefCell::new(HashMap::new());
    static PINS: RefCell<HashMap<PinKey, (Arc<IndexEntry>, usize)>> = RefCell::new(HashMap::new());
}

/// The identity of a pinned index list or plan: its address and length,
/// valid only while the borrow that pinned it is held (see
/// [`CudaBackend::with_static_indices`](super::CudaBackend::with_static_indices)).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) struct PinKey {
    pub backend: u64,
    pub plan: bool,
    pub addr: usize,
    pub len: usize,
}

/// The pinned entry of `key` on this thread, if any.
pub(crate) fn pinned(key: &PinKey) -> Option<Arc<IndexEntry>> {
    PINS.with(|p| {
        let p = p.borrow();
        if p.is_empty() {
            return None;
        }
        p.get(key).map(|(e, _)| Arc::clone(e))
    })
}

/// Pins `entry` under `key` on this thread (counted: pins nest).
pub(crate) fn pin(key: PinKey, entry: Arc<IndexEntry>) {
    PINS.with(|p| {
        p.borrow_mut().entry(key).or_insert((entry, 0)).1 += 1;
    });
}

/// Undoes one [`pin`] of `key`.
pub(crate) fn unpin(key: &PinKey) {
    let _ = PINS.try_with(|p| {
        let mut p = p.borrow_mut();
        if let Some((_, n)) = p.get_mut(key) {
            *n -= 1;
            if *n == 0 {
                p.remove(key);
            }
        }
    });
}

/// Ids of the live backends: a thread's cache drops the entries of dead ones.
static LIVE: Mutex<Option<HashSet<u64>>> = Mutex::new(None);

pub(crate) fn register_backend(id: u64) {
    LIVE.lock()
        .unwrap_or_else(|e| e.into_inner())
        .get_or_insert_with(HashSet::new)
        .insert(id);
}

pub(crate) fn unregister_backend(id: u64) {
    if let Some(s) = LIVE.lock().unwrap_or_else(|e| e.into_inner()).as_mut() {
        s.remove(&id);
    }
    // The current thread's entries go now; other threads' at their next lookup.
    let _ = CACHE.try_with(|c| {
        if let Ok(mut c) = c.try_borrow_mut() {
            c.remove(&id);
        }
    });
}

fn is_live(id: u64) -> bool {
    LIVE.lock()
        .unwrap_or_else(|e| e.into_inner())
        .as_ref()
        .is_some_and(|s| s.contains(&id))
}

/// Finds or makes the entry of `key`, keeping this thread's cache for backend
/// `id` within `limit` bytes. `use_entry` runs on the entry before the
/// accounting (so lazily built parts are counted); an entry larger than the
/// limit is used once and not kept.
pub(crate) fn with_entry<R>(
    id: u64,
    limit: usize,
    hash: u64,
    matches: impl Fn(&IndexEntry) -> bool,
    make: impl FnOnce() -> IndexEntry,
    use_entry: impl FnOnce(&Arc<IndexEntry>) -> BResult<R>,
) -> BResult<R> {
    let found = CACHE.with(|c| {
        let mut c = c.borrow_mut();
        c.retain(|&k, _| k == id || is_live(k));
        let lru = c.entry(id).or_default();
        lru.tick += 1;
        let tick = lru.tick;
        lru.entries.get_mut(&hash).and_then(|v| {
            v.iter_mut().find(|(e, _)| matches(e)).map(|(e, t)| {
                *t = tick;
                Arc::clone(e)
            })
        })
    });
    let (entry, fresh) = match found {
        Some(e) => (e, false),
        None => (Arc::new(make()), true),
    };
    let r = use_entry(&entry)?;
    CACHE.with(|c| {
        let mut c = c.borrow_mut();
        let lru = c.entry(id).or_default();
        if fresh && entry.bytes() <= limit {
            let tick = lru.tick;
            lru.entries.entry(hash).or_default().push((entry, tick));
        }
        lru.shrink_to(limit);
    });
    Ok(r)
}

/// Drops this thread's cache entries of backend `id`.
pub(crate) fn clear(id: u64) {
    CACHE.with(|c| {
        c.borrow_mut().remove(&id);
    });
}

/// Entries and bytes of this thread's cache for backend `id`.
pub(crate) fn stats(id: u64) -> (usize, usize) {
    CACHE.with(|c| {
        c.borrow().get(&id).map_or((0, 0), |l| {
            (l.entries.values().map(Vec::len).sum(), l.bytes())
        })
    })
}

/// The cache key of an index list: its hash and largest value.
pub(crate) fn idx_key(idx: &[u32]) -> (u64, Option<u32>) {
    hash_and_max(idx)
}

/// The cache key of a plan.
pub(crate) fn plan_key(plan: &IndexPlan) -> u64 {
    let (h, _) = hash_and_max(plan.positions());
    h ^ (plan.rows() as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ 0x5041_4c4e
}
