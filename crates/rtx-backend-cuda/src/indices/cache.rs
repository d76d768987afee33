//! [`IndexCache`]: a backend's device copies of host lists and plans, found
//! again by content (an LRU under a byte budget) or, while pinned, by address.
//!
//! A host list is looked up by a hash of a fixed sample of its entries
//! ([`crate::indices::hash::sample_key`]: a few thousand reads however long the list)
//! and confirmed by comparing every entry; a host plan by a hash of its
//! positions and compared whole. Pins (`IndexOps::with_static_indices`)
//! skip both for lists and plans the caller promises to keep unchanged: the
//! address and length are the key, sound because the caller's borrow keeps
//! the memory from being reused while pinned.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use rtx_backend::IndexPlan;

use super::entry::{ListEntry, PlanEntry};
use crate::indices::hash::{hash_and_max, same_list, sample_key};

/// A cached device copy.
#[derive(Debug, Clone)]
pub(crate) enum Cached {
    List(Arc<ListEntry>),
    Plan(Arc<PlanEntry>),
}

impl Cached {
    fn bytes(&self) -> usize {
        match self {
            Cached::List(e) => e.bytes(),
            Cached::Plan(e) => e.bytes(),
        }
    }
}

/// The key of a pinned list or plan: its address and length.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum PinKey {
    List { addr: usize, len: usize },
    Plan { addr: usize, len: usize },
}

impl PinKey {
    pub fn list(list: &[u32]) -> PinKey {
        PinKey::List {
            addr: list.as_ptr() as usize,
            len: list.len(),
        }
    }

    pub fn plan(plan: &IndexPlan) -> PinKey {
        PinKey::Plan {
            addr: std::ptr::from_ref(plan) as usize,
            len: plan.len(),
        }
    }
}

#[derive(Debug, Default)]
struct Lru {
    entries: HashMap<u64, Vec<(Cached, u64)>>,
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

    /// The entries under `key` that `pick` accepts.
    fn under<R>(&self, key: u64, pick: impl Fn(&Cached) -> Option<R>) -> Vec<R> {
        self.entries.get(&key).map_or_else(Vec::new, |v| {
            v.iter().filter_map(|(e, _)| pick(e)).collect()
        })
    }

    /// Marks the entry under `key` that `is` names as used now.
    fn touch(&mut self, key: u64, is: impl Fn(&Cached) -> bool) {
        self.tick += 1;
        let tick = self.tick;
        if let Some((_, t)) = self
            .entries
            .get_mut(&key)
            .and_then(|v| v.iter_mut().find(|(e, _)| is(e)))
        {
            *t = tick;
        }
    }
}

/// A backend's index cache: the LRU and the pins, each behind its own lock
/// (held only to look up or insert, never across device work).
#[derive(Debug, Default)]
pub(crate) struct IndexCache {
    lru: Mutex<Lru>,
    pins: Mutex<HashMap<PinKey, (Cached, usize)>>,
}

/// A host list's cache key.
pub(crate) fn list_key(list: &[u32]) -> u64 {
    sample_key(list)
}

/// A host plan's cache key.
pub(crate) fn plan_key(plan: &IndexPlan) -> u64 {
    let (h, _) = hash_and_max(plan.positions());
    h ^ (plan.rows() as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ 0x5041_4c4e
}

impl IndexCache {
    fn lru(&self) -> std::sync::MutexGuard<'_, Lru> {
        self.lru.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn pins(&self) -> std::sync::MutexGuard<'_, HashMap<PinKey, (Cached, usize)>> {
        self.pins.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The pinned entry of `key`, if any.
    pub fn pinned(&self, key: &PinKey) -> Option<Cached> {
        let p = self.pins();
        if p.is_empty() {
            return None;
        }
        p.get(key).map(|(e, _)| e.clone())
    }

    /// Pins `entry` under `key` (counted: pinned twice, unpinned twice).
    pub fn pin(&self, key: PinKey, entry: Cached) {
        self.pins().entry(key).or_insert((entry, 0)).1 += 1;
    }

    pub fn unpin(&self, key: &PinKey) {
        let mut p = self.pins();
        if let Some((_, n)) = p.get_mut(key) {
            *n -= 1;
            if *n == 0 {
                p.remove(key);
            }
        }
    }

    /// The cached entry of host list `list` (key [`list_key`]). The lists
    /// are compared outside the lock (a long list's comparison takes a
    /// while; other threads keep using the cache).
    pub fn find_list(&self, key: u64, list: &[u32]) -> Option<Arc<ListEntry>> {
        let candidates = self.lru().under(key, |e| match e {
            Cached::List(l) if l.len() == list.len() && l.host().is_some() => Some(Arc::clone(l)),
            _ => None,
        });
        let hit = candidates
            .into_iter()
            .find(|l| l.host().is_some_and(|h| same_list(h, list)))?;
        self.lru().touch(
            key,
            |e| matches!(e, Cached::List(l) if Arc::ptr_eq(l, &hit)),
        );
        Some(hit)
    }

    /// Cached lists under `key` of `len` entries whose largest entry is
    /// below `rows`: candidates to run with before their content is
    /// compared.
    pub fn list_candidates(&self, key: u64, len: usize, rows: usize) -> Vec<Arc<ListEntry>> {
        let mut lru = self.lru();
        lru.tick += 1;
        let tick = lru.tick;
        lru.entries.get_mut(&key).map_or_else(Vec::new, |v| {
            v.iter_mut()
                .filter_map(|(e, t)| match e {
                    Cached::List(l)
                        if l.len() == len
                            && l.host().is_some()
                            && l.known_largest()
                                .and_then(|m| m.get())
                                .is_some_and(|m| (m as usize) < rows) =>
                    {
                        *t = tick;
                        Some(Arc::clone(l))
                    }
                    _ => None,
                })
                .collect()
        })
    }

    /// The cached entry of host plan `plan` (compared outside the lock).
    pub fn find_plan(&self, key: u64, plan: &IndexPlan) -> Option<Arc<PlanEntry>> {
        let candidates = self.lru().under(key, |e| match e {
            Cached::Plan(p) => Some(Arc::clone(p)),
            Cached::List(_) => None,
        });
        let hit = candidates.into_iter().find(|p| *p.host() == *plan)?;
        self.lru().touch(
            key,
            |e| matches!(e, Cached::Plan(p) if Arc::ptr_eq(p, &hit)),
        );
        Some(hit)
    }

    /// Keeps `entry` under `key` if it fits `limit`, then evicts the least
    /// recently used entries down to `limit` bytes.
    pub fn insert(&self, key: u64, entry: Cached, limit: usize) {
        let mut lru = self.lru();
        if entry.bytes() <= limit {
            let tick = lru.tick;
            lru.entries.entry(key).or_default().push((entry, tick));
        }
        lru.shrink_to(limit);
    }

    /// Evicts the least recently used entries down to `limit` bytes (a
    /// changed budget applies at the next lookup).
    pub fn shrink_to(&self, limit: usize) {
        self.lru().shrink_to(limit);
    }

    /// Drops every cached entry (pins stay).
    pub fn clear(&self) {
        *self.lru() = Lru::default();
    }

    /// `(entries, bytes)` cached.
    pub fn stats(&self) -> (usize, usize) {
        let lru = self.lru();
        (lru.entries.values().map(Vec::len).sum(), lru.bytes())
    }
}
