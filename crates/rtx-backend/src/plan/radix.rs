//! The parallel plan build: a least-significant-digit radix sort of
//! (row, position) pairs over parts of the list, stable in every pass (each
//! part writes its items in order after the items of the same digit in the
//! parts before it), so the positions of one row stay increasing: the
//! sequential stable counting sort's plan exactly. Offsets by counting.

use rayon::prelude::*;

use super::IndexPlan;
use crate::Result;
use crate::host_alloc::{try_vec, try_with_capacity};

/// Asks the kernel to back the `cap` elements of `v`'s allocation with huge
/// pages where it can (transparent huge pages in `madvise` mode, the common
/// setting): a pass first-touches its outputs, and 4 KiB pages make that a
/// fault per 1,024 entries. Only advice: nothing changes where it fails.
fn advise_huge(v: &mut Vec<u32>) {
    #[cfg(target_os = "linux")]
    {
        const HUGE: usize = 2 << 20;
        let start = v.as_mut_ptr() as usize;
        let end = start + v.capacity() * 4;
        let (a, b) = (start.next_multiple_of(HUGE), end / HUGE * HUGE);
        if b > a {
            // SAFETY: [a, b) lies inside the vector's own allocation (its
            // capacity), which no one else uses; MADV_HUGEPAGE changes how the
            // pages are backed, never their contents or the mapping's validity.
            let _ = unsafe {
                rustix::mm::madvise(a as *mut _, b - a, rustix::mm::Advice::LinuxHugepage)
            };
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = v;
}

/// Bits of a digit: 2^11 counters per part and pass.
const DIGIT_BITS: u32 = 11;

/// A pointer to an output that several parts write, each at places no
/// other part writes.
struct Shared<T>(*mut T);

impl<T> Clone for Shared<T> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<T> Copy for Shared<T> {}

// SAFETY: the parts write disjoint places (see `plan`), so sharing the
// pointer across the rayon tasks is sound.
unsafe impl<T> Send for Shared<T> {}
// SAFETY: as above.
unsafe impl<T> Sync for Shared<T> {}

impl<T> Shared<T> {
    /// Writes `v` at `i`.
    ///
    /// # Safety
    /// `i` is within the allocation's capacity, and no other thread reads or
    /// writes place `i` during the pass.
    unsafe fn write(self, i: usize, v: T) {
        // SAFETY: the caller's contract.
        unsafe { *self.0.add(i) = v };
    }
}

/// Entries a digit's write-combining buffer holds: one 64-byte line of keys
/// and one of values.
const LINE: usize = 16;

/// Per-digit write-combining buffers of one part: items are written out a
/// whole cache line at a time, so a pass's scattered writes go to as many
/// lines as there are digits instead of one line per item.
struct Combiner {
    keys: Vec<u32>,
    vals: Vec<u32>,
    fill: Vec<u8>,
}

impl Combiner {
    fn new(radix: usize) -> Combiner {
        Combiner {
            keys: vec![0; radix * LINE],
            vals: vec![0; radix * LINE],
            fill: vec![0; radix],
        }
    }

    /// Buffers `(k, v)` under digit `d`; a full buffer is returned (and
    /// counts as emptied) for the caller to write out.
    fn push(&mut self, d: usize, k: u32, v: u32) -> Option<(usize, &[u32], &[u32])> {
        let f = usize::from(self.fill[d]);
        self.keys[d * LINE + f] = k;
        self.vals[d * LINE + f] = v;
        if f + 1 == LINE {
            self.fill[d] = 0;
            let r = d * LINE..(d + 1) * LINE;
            Some((d, &self.keys[r.clone()], &self.vals[r]))
        } else {
            self.fill[d] = (f + 1) as u8;
            None
        }
    }

    /// What digit `d`'s buffer still holds.
    fn rest(&self, d: usize) -> (&[u32], &[u32]) {
        let r = d * LINE..d * LINE + usize::from(self.fill[d]);
        (&self.keys[r.clone()], &self.vals[r])
    }
}

/// Writes `keys` and `vals` to places `at..` of the outputs.
///
/// # Safety
/// As [`Shared::write`] for every place `at..at + keys.len()`.
unsafe fn flush(ko: Shared<u32>, vo: Shared<u32>, at: usize, keys: &[u32], vals: &[u32]) {
    for (i, (&k, &v)) in keys.iter().zip(vals).enumerate() {
        // SAFETY: the caller's contract.
        unsafe {
            ko.write(at + i, k);
            vo.write(at + i, v);
        }
    }
}

/// The plan of `idx` (every entry `< rows`, at most `u32::MAX` of them)
/// into `rows` rows, sorted in `parts` parts.
pub(super) fn plan(idx: &[u32], rows: usize, n_offsets: usize, parts: usize) -> Result<IndexPlan> {
    let n = idx.len();
    let part = n.div_ceil(parts).max(1);
    let bits = usize::BITS - rows.saturating_sub(1).leading_zeros();
    let passes = bits.div_ceil(DIGIT_BITS).max(1);
    let radix = 1usize << DIGIT_BITS;
    // each pass writes (keys, vals) from (prev_keys, prev_vals), then they
    // swap; the outputs are not zeroed first (a pass writes every place:
    // that is half the time of a long list, page faults included)
    let (mut keys, mut vals) = (try_with_capacity::<u32>(n)?, try_with_capacity::<u32>(n)?);
    let (mut prev_keys, mut prev_vals) = if passes > 1 {
        (try_with_capacity(n)?, try_with_capacity(n)?)
    } else {
        (Vec::new(), Vec::new())
    };
    for v in [&mut keys, &mut vals, &mut prev_keys, &mut prev_vals] {
        advise_huge(v);
    }
    for pass in 0..passes {
        let shift = pass * DIGIT_BITS;
        let digit = |k: u32| ((k >> shift) as usize) & (radix - 1);
        let (kin, vin): (&[u32], Option<&[u32]>) = if pass == 0 {
            (idx, None)
        } else {
            (&prev_keys, Some(&prev_vals))
        };
        // per part, the count of each digit
        let counts: Vec<Vec<u32>> = kin
            .par_chunks(part)
            .map(|c| {
                let mut h = vec![0u32; radix];
                for &k in c {
                    h[digit(k)] += 1;
                }
                h
            })
            .collect();
        // where part p's items of digit d start: digit-major, then part order
        let mut starts = vec![vec![0usize; radix]; counts.len()];
        let mut at = 0usize;
        for d in 0..radix {
            for (p, h) in counts.iter().enumerate() {
                starts[p][d] = at;
                at += h[d] as usize;
            }
        }
        keys.clear();
        vals.clear();
        let (ko, vo) = (Shared(keys.as_mut_ptr()), Shared(vals.as_mut_ptr()));
        kin.par_chunks(part)
            .zip(starts.par_iter_mut())
            .enumerate()
            .for_each(|(p, (c, st))| {
                let mut wc = Combiner::new(radix);
                for (j, &k) in c.iter().enumerate() {
                    let v = vin.map_or((p * part + j) as u32, |v| v[p * part + j]);
                    if let Some((d, keys, vals)) = wc.push(digit(k), k, v) {
                        // SAFETY: st[d].. is this part's own range of the
                        // output for digit d (the counts' scan gives each
                        // (digit, part) a disjoint range of the n places);
                        // the part has at least this many items of digit d.
                        unsafe { flush(ko, vo, st[d], keys, vals) };
                        st[d] += keys.len();
                    }
                }
                for (d, at) in st.iter_mut().enumerate() {
                    let (keys, vals) = wc.rest(d);
                    // SAFETY: as above, the last items of digit d.
                    unsafe { flush(ko, vo, *at, keys, vals) };
                    *at += keys.len();
                }
            });
        // SAFETY: both have capacity n (allocated so, never shrunk), and the
        // pass wrote all n places: the (digit, part) ranges tile 0..n and each
        // part wrote all of its items into its ranges.
        unsafe {
            keys.set_len(n);
            vals.set_len(n);
        }
        std::mem::swap(&mut keys, &mut prev_keys);
        std::mem::swap(&mut vals, &mut prev_vals);
    }
    let (sorted, positions) = (prev_keys, prev_vals);
    // offsets[r] = the number of sorted keys below r: position i, where the
    // key rises from a to b, is the offset of rows a + 1..=b (rows up to the
    // first key get 0, rows past the last key n), so every row is written
    // once, by the one place its range starts at
    let mut offsets = try_vec(n_offsets, 0u64)?;
    let out = Shared(offsets.as_mut_ptr());
    let fill = |from: usize, to: usize, v: u64| {
        for r in from..to {
            // SAFETY: the rows `from..to` of one rise of the sorted keys are
            // written by this rise alone; r <= rows < n_offsets.
            unsafe { out.write(r, v) };
        }
    };
    sorted.par_chunks(part).enumerate().for_each(|(p, c)| {
        for (j, &k) in c.iter().enumerate() {
            let i = p * part + j;
            let prev = if i == 0 {
                0
            } else {
                sorted[i - 1] as usize + 1
            };
            fill(prev, k as usize + 1, i as u64);
        }
    });
    let tail = sorted.last().map_or(0, |&k| k as usize + 1);
    fill(tail, n_offsets, n as u64);
    Ok(IndexPlan { offsets, positions })
}
