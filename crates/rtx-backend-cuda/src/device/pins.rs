//! Pins: index lists and plans recognized by address on this thread while
//! `CudaBackend::with_static_indices` holds their borrows.

use std::cell::RefCell;
use std::collections::HashMap;
use std::sync::Arc;

use rtx_backend::IndexPlan;

use super::entry::IndexEntry;

thread_local! {
    static PINS: RefCell<HashMap<PinKey, (Arc<IndexEntry>, usize)>> = RefCell::new(HashMap::new());
}

/// The identity of a pinned index list or plan: its address and length,
/// valid only while the borrow that pinned it is held (see
/// `CudaBackend::with_static_indices`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) struct PinKey {
    pub backend: u64,
    pub plan: bool,
    pub addr: usize,
    pub len: usize,
}

impl PinKey {
    /// The key of the index list `idx` of backend `backend`.
    pub(crate) fn list(backend: u64, idx: &[u32]) -> PinKey {
        PinKey {
            backend,
            plan: false,
            addr: idx.as_ptr() as usize,
            len: idx.len(),
        }
    }

    /// The key of the plan `plan` of backend `backend`.
    pub(crate) fn plan(backend: u64, plan: &IndexPlan) -> PinKey {
        PinKey {
            backend,
            plan: true,
            addr: plan as *const IndexPlan as usize,
            len: plan.len(),
        }
    }
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
