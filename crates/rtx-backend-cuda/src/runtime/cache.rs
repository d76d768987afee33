//! A host-side cache of freed device blocks: a freed allocation's block goes
//! back to a shelf by size class instead of to the driver, and the next
//! allocation of that class takes it, with no driver call either way (a
//! sampled training step makes and frees some 470 allocations).
//!
//! Safe because every use of a block is queued on the backend's one stream:
//! the work of a block's next owner is queued after its last owner's, as a
//! stream-ordered free and allocation would order it. It stands aside while
//! the stream is recorded into a graph ([`BlockCache::set_recording`]): a
//! block handed out or taken back during a recording would be named by the
//! graph and reused under its replays.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, Weak};

use cudarc::driver::{CudaStream, DriverError, result};

use crate::error::Result;

/// A device address of a block the cache holds.
pub(crate) type Block = u64;

/// The largest block the cache keeps: larger allocations go to the driver
/// at their exact size.
pub(crate) const MAX_CACHED_BLOCK: usize = 1 << 30;

/// The default byte limit of the blocks held.
pub(crate) const DEFAULT_LIMIT: usize = 1 << 30;

/// The size class of an allocation of `bytes`: the block size it gets when
/// it may be cached, at least `bytes` and at most an eighth more (256 bytes
/// at least); `None` past [`MAX_CACHED_BLOCK`].
pub(crate) fn class_of(bytes: usize) -> Option<usize> {
    if bytes > MAX_CACHED_BLOCK {
        return None;
    }
    if bytes <= 256 {
        return Some(256);
    }
    // eight classes an octave: steps of an eighth of the power of two below
    let step = (1usize << (usize::BITS - 1 - (bytes - 1).leading_zeros())) / 8;
    Some(bytes.div_ceil(step) * step)
}

/// The held blocks by class, up to a byte limit (no device calls).
#[derive(Debug)]
pub(crate) struct Shelves {
    free: HashMap<usize, Vec<Block>>,
    held: usize,
    limit: usize,
}

impl Shelves {
    pub(crate) fn new(limit: usize) -> Shelves {
        Shelves {
            free: HashMap::new(),
            held: 0,
            limit,
        }
    }

    /// A held block of `class` bytes, if any.
    pub(crate) fn take(&mut self, class: usize) -> Option<Block> {
        let block = self.free.get_mut(&class)?.pop()?;
        self.held -= class;
        Some(block)
    }

    /// Keeps `block` of `class` bytes; `false` (the caller frees it) where
    /// it would pass the limit.
    pub(crate) fn give(&mut self, class: usize, block: Block) -> bool {
        if self.held + class > self.limit {
            return false;
        }
        self.held += class;
        self.free.entry(class).or_default().push(block);
        true
    }

    /// Sets the limit; returns the blocks over it, largest classes first,
    /// no longer held (all of them for 0).
    pub(crate) fn set_limit(&mut self, limit: usize) -> Vec<Block> {
        self.limit = limit;
        let mut classes: Vec<usize> = self.free.keys().copied().collect();
        classes.sort_unstable_by(|a, b| b.cmp(a));
        let mut out = Vec::new();
        for c in classes {
            while self.held > limit {
                let Some(b) = self.free.get_mut(&c).and_then(Vec::pop) else {
                    break;
                };
                self.held -= c;
                out.push(b);
            }
        }
        self.free.retain(|_, v| !v.is_empty());
        out
    }

    /// Every held block, no longer held.
    pub(crate) fn drain(&mut self) -> Vec<Block> {
        self.held = 0;
        self.free.drain().flat_map(|(_, v)| v).collect()
    }

    /// Bytes held.
    pub(crate) fn held(&self) -> usize {
        self.held
    }

    /// The byte limit.
    pub(crate) fn limit(&self) -> usize {
        self.limit
    }
}

/// The block caches of a backend and of the backends beside it: the bytes
/// they hold together (what `memory_in_use` leaves out) and each cache, for
/// an out-of-memory retry that empties them all.
#[derive(Debug, Default)]
pub(crate) struct Family {
    held: AtomicUsize,
    caches: Mutex<Vec<Weak<BlockCache>>>,
}

impl Family {
    /// Bytes held by every cache of the family.
    pub(crate) fn held(&self) -> usize {
        self.held.load(Ordering::Relaxed)
    }

    /// Frees the blocks of every cache of the family not being recorded,
    /// each on its own stream, and waits for those streams: the pool can
    /// then hand the memory out again.
    pub(crate) fn empty_all(&self) -> Result<()> {
        let caches: Vec<Arc<BlockCache>> = {
            let l = self.caches.lock().unwrap_or_else(|p| p.into_inner());
            l.iter().filter_map(Weak::upgrade).collect()
        };
        for c in caches.iter().filter(|c| !c.recording()) {
            c.empty()?;
            c.stream.synchronize()?;
        }
        Ok(())
    }
}

/// The freed blocks of one stream's allocations.
#[derive(Debug)]
pub(crate) struct BlockCache {
    shelves: Mutex<Shelves>,
    recording: AtomicBool,
    stream: Arc<CudaStream>,
    family: Arc<Family>,
}

impl BlockCache {
    /// A cache of blocks freed on `stream`, keeping up to `limit` bytes, in
    /// `family` (a new one for a new backend; the backend's for one beside
    /// it).
    pub(crate) fn new(
        stream: Arc<CudaStream>,
        family: &Arc<Family>,
        limit: usize,
    ) -> Arc<BlockCache> {
        let cache = Arc::new(BlockCache {
            shelves: Mutex::new(Shelves::new(limit)),
            recording: AtomicBool::new(false),
            stream,
            family: Arc::clone(family),
        });
        let mut l = family.caches.lock().unwrap_or_else(|p| p.into_inner());
        l.retain(|w| w.strong_count() > 0);
        l.push(Arc::downgrade(&cache));
        cache
    }

    /// Runs `f` on the shelves, keeping the family's count of held bytes.
    fn with_shelves<R>(&self, f: impl FnOnce(&mut Shelves) -> R) -> R {
        // the shelves hold no invariant a panic elsewhere could break
        let mut s = self.shelves.lock().unwrap_or_else(|p| p.into_inner());
        let before = s.held();
        let r = f(&mut s);
        let after = s.held();
        if after > before {
            self.family
                .held
                .fetch_add(after - before, Ordering::Relaxed);
        } else {
            self.family
                .held
                .fetch_sub(before - after, Ordering::Relaxed);
        }
        r
    }

    /// The family this cache belongs to.
    pub(crate) fn family(&self) -> &Arc<Family> {
        &self.family
    }

    /// A held block of `class` bytes, if any (none while recording).
    pub(crate) fn take(&self, class: usize) -> Option<Block> {
        if self.recording() {
            return None;
        }
        self.with_shelves(|s| s.take(class))
    }

    /// Keeps the freed `block` of `class` bytes; `false` (the caller frees
    /// it on the stream) while recording or where it would pass the limit.
    pub(crate) fn give(&self, class: usize, block: Block) -> bool {
        !self.recording() && self.with_shelves(|s| s.give(class, block))
    }

    /// The byte limit.
    pub(crate) fn limit(&self) -> usize {
        self.with_shelves(|s| s.limit())
    }

    /// Sets the byte limit (0 keeps nothing), freeing the blocks over it.
    pub(crate) fn set_limit(&self, bytes: usize) -> Result<()> {
        let over = self.with_shelves(|s| s.set_limit(bytes));
        Ok(self.free(over)?)
    }

    /// Frees every held block.
    pub(crate) fn empty(&self) -> Result<()> {
        let all = self.with_shelves(Shelves::drain);
        Ok(self.free(all)?)
    }

    /// Whether the stream is being recorded (as [`BlockCache::set_recording`] says).
    pub(crate) fn recording(&self) -> bool {
        self.recording.load(Ordering::Relaxed)
    }

    /// Marks the stream recorded, or no longer: meanwhile the cache hands
    /// out and takes back nothing.
    pub(crate) fn set_recording(&self, on: bool) {
        self.recording.store(on, Ordering::Relaxed);
    }

    /// Frees `blocks` in stream order.
    fn free(&self, blocks: Vec<Block>) -> std::result::Result<(), DriverError> {
        if blocks.is_empty() {
            return Ok(());
        }
        self.stream.context().bind_to_thread()?;
        for b in blocks {
            // SAFETY: each block came from malloc_async on this stream's
            // context, was taken off the shelves, so is freed once, here;
            // the free is ordered after all work queued on the stream.
            unsafe { result::free_async(b, self.stream.cu_stream()) }?;
        }
        Ok(())
    }
}

impl Drop for BlockCache {
    fn drop(&mut self) {
        let all = self.with_shelves(Shelves::drain);
        let ctx = self.stream.context();
        ctx.record_err(self.free(all));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classes_hold_the_request_with_at_most_an_eighth_more() {
        let mut n = 1usize;
        while n <= MAX_CACHED_BLOCK {
            for bytes in [n.saturating_sub(1).max(1), n, n + 1, n + n / 3] {
                if bytes > MAX_CACHED_BLOCK {
                    continue;
                }
                let c = class_of(bytes).unwrap();
                assert!(c >= bytes, "{bytes} -> {c}");
                assert!(c <= (bytes + bytes / 8).max(256), "{bytes} -> {c}");
                // a class is its own class: blocks go back to the shelf they came from
                assert_eq!(class_of(c), Some(c), "{bytes} -> {c}");
            }
            n *= 2;
        }
        assert_eq!(class_of(1), Some(256));
        assert_eq!(class_of(257), Some(288));
        assert_eq!(class_of(1000), Some(1024));
        assert_eq!(class_of(1025), Some(1152));
        assert_eq!(class_of(MAX_CACHED_BLOCK + 1), None);
    }

    #[test]
    fn shelves_hand_back_what_they_were_given_within_the_limit() {
        let mut s = Shelves::new(1000);
        assert_eq!(s.take(256), None);
        assert!(s.give(256, 0x10));
        assert!(s.give(256, 0x20));
        assert!(s.give(288, 0x30));
        assert_eq!(s.held(), 800);
        // past the limit: the caller frees it
        assert!(!s.give(256, 0x40));
        assert_eq!(s.take(288), Some(0x30));
        assert_eq!(s.take(288), None);
        // last in, first out
        assert_eq!(s.take(256), Some(0x20));
        assert_eq!(s.held(), 256);
        assert!(s.give(512, 0x50));
        let mut over = s.set_limit(300);
        over.sort_unstable();
        // the largest class goes first, down to the limit
        assert_eq!(over, vec![0x50]);
        assert_eq!(s.held(), 256);
        let mut all = s.drain();
        all.sort_unstable();
        assert_eq!(all, vec![0x10]);
        assert_eq!(s.held(), 0);
        assert_eq!(s.set_limit(0), Vec::<Block>::new());
        assert!(!s.give(256, 0x60));
    }
}
