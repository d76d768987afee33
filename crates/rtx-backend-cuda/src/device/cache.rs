//! The per-thread index cache: device copies of index lists and plans keyed
//! by the exact list (or plan), least recently used evicted first, and the
//! lookups every room uses (pins first, then the cache).

use std::cell::RefCell;
use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};

use rtx_backend::implement::check_len;
use rtx_backend::{IndexPlan, Result as BResult};

use super::context::Device;
use super::entry::{IndexEntry, Source};
use super::pins::{self, PinKey};
use super::plan::DevicePlan;
use crate::hash::{hash_and_max, max_of, same_list, sample_key};

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

/// The cache key of a plan.
pub(crate) fn plan_key(plan: &IndexPlan) -> u64 {
    let (h, _) = hash_and_max(plan.positions());
    h ^ (plan.rows() as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ 0x5041_4c4e
}

/// The entry of `idx` for `dev`: pinned (one small map lookup), else from this
/// thread's cache (made and inserted on a miss, within `limit` bytes), passed
/// to `f`. Every index must be below `rows` (`usize::MAX`: no bound).
///
/// # Errors
/// [`rtx_backend::Error::IndexOutOfRange`] naming the first bad index,
/// [`rtx_backend::Error::TooManyIndices`] past `u32::MAX` entries, and `f`'s errors.
pub(crate) fn with_idx_entry<R>(
    dev: &Device,
    limit: usize,
    idx: &[u32],
    rows: usize,
    f: impl FnOnce(&Arc<IndexEntry>) -> BResult<R>,
) -> BResult<R> {
    let key = PinKey::list(dev.id, idx);
    if let Some(e) = pins::pinned(&key) {
        e.max(dev, Some(rows))?;
        return f(&e);
    }
    check_len(idx.len())?;
    // a sampled key, then an exact comparison with the candidates: a hit
    // reads the list once (on the rayon pool), a miss also finds its maximum
    let hash = sample_key(idx);
    let max = std::cell::OnceCell::new();
    let max_now = || *max.get_or_init(|| max_of(idx));
    with_entry(
        dev.id,
        limit,
        hash,
        |e| matches!(&e.source, Source::Idx(k) if same_list(k, idx)),
        || IndexEntry::from_idx(idx.into(), max_now()),
        |e| {
            e.max(dev, Some(rows))?;
            f(e)
        },
    )
}

/// Lists at least this long take [`run_then_confirm`] in a gather: the
/// comparison (about 1 ms for 16M entries on 16 cores) overlaps the kernel.
pub(crate) const CONFIRM_AFTER_MIN: usize = 1 << 20;

/// For an op whose output is new (a gather): when `idx` is not pinned and
/// this thread's cache holds a list with its sampled key, length and a
/// largest index below `rows`, runs `f` on that entry **before** comparing,
/// so the device works while the host confirms the list is the same; the
/// result is returned only when it is (else it is dropped: its memory is
/// freed in stream order, nothing else was written) and `None` lets the
/// caller take the ordinary path.
pub(crate) fn run_then_confirm<R>(
    dev: &Device,
    idx: &[u32],
    rows: usize,
    f: impl Fn(&Arc<IndexEntry>) -> BResult<R>,
) -> BResult<Option<R>> {
    let key = PinKey::list(dev.id, idx);
    if idx.len() < CONFIRM_AFTER_MIN || pins::pinned(&key).is_some() {
        return Ok(None);
    }
    let hash = sample_key(idx);
    let candidates: Vec<Arc<IndexEntry>> = CACHE.with(|c| {
        let mut c = c.borrow_mut();
        let Some(lru) = c.get_mut(&dev.id) else {
            return Vec::new();
        };
        lru.tick += 1;
        let tick = lru.tick;
        lru.entries.get_mut(&hash).map_or_else(Vec::new, |v| {
            v.iter_mut()
                .filter(|(e, _)| {
                    matches!(&e.source, Source::Idx(k) if k.len() == idx.len())
                        && e.known_max().flatten().is_some_and(|m| (m as usize) < rows)
                })
                .map(|(e, t)| {
                    *t = tick;
                    Arc::clone(e)
                })
                .collect()
        })
    });
    for e in candidates {
        let r = f(&e)?;
        if matches!(&e.source, Source::Idx(k) if same_list(k, idx)) {
            return Ok(Some(r));
        }
    }
    Ok(None)
}

/// The device plan of `plan`: pinned (no lookup cost), else from this
/// thread's cache (keyed by a hash of the plan, confirmed by comparison).
pub(crate) fn plan_of(dev: &Device, limit: usize, plan: &IndexPlan) -> BResult<Arc<DevicePlan>> {
    let key = PinKey::plan(dev.id, plan);
    if let Some(e) = pins::pinned(&key) {
        return e.plan(dev, plan.rows());
    }
    plan_entry(dev, limit, plan)?.plan(dev, plan.rows())
}

/// The cache entry of `plan` with its device plan uploaded.
pub(crate) fn plan_entry(dev: &Device, limit: usize, plan: &IndexPlan) -> BResult<Arc<IndexEntry>> {
    with_entry(
        dev.id,
        limit,
        plan_key(plan),
        |e| matches!(&e.source, Source::Plan(p) if **p == *plan),
        || IndexEntry::from_plan(Arc::new(plan.clone())),
        |e| {
            e.plan(dev, plan.rows())?;
            Ok(Arc::clone(e))
        },
    )
}
