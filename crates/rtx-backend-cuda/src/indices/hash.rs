//! Keys and comparisons of index lists for the per-thread index cache: a
//! sampled key (a few thousand entries, whatever the length), the exact
//! comparison of a hit and the largest index and order of a miss, both
//! spread over the rayon pool for long lists, and a full hash of host plans.

/// A 64-bit hash of `idx` and its largest value (`None` when empty).
///
/// Not cryptographic: the cache compares the whole list on a hash hit, so a
/// collision costs a comparison, never a wrong result. Four independent lanes
/// keep the multiply chains short (several GB/s on one core).
pub(crate) fn hash_and_max(idx: &[u32]) -> (u64, Option<u32>) {
    const K: u64 = 0x9E37_79B9_7F4A_7C15;
    let mix = |h: u64, x: u64| (h ^ x).wrapping_mul(K).rotate_left(29);
    let mut h = [1u64, 2, 3, 4];
    let mut m = [0u32; 8];
    let chunks = idx.chunks_exact(8);
    let rest = chunks.remainder();
    for c in chunks {
        for l in 0..4 {
            h[l] = mix(h[l], u64::from(c[2 * l]) | (u64::from(c[2 * l + 1]) << 32));
        }
        for l in 0..8 {
            m[l] = m[l].max(c[l]);
        }
    }
    let mut t = h[0] ^ h[1].rotate_left(16) ^ h[2].rotate_left(32) ^ h[3].rotate_left(48);
    let mut max = m.iter().copied().max().unwrap_or(0);
    for &x in rest {
        t = mix(t, u64::from(x));
        max = max.max(x);
    }
    t = mix(t, idx.len() as u64);
    (t ^ (t >> 31), (!idx.is_empty()).then_some(max))
}

/// Entries sampled by [`sample_key`] past the first and last [`EDGE`].
const SAMPLES: usize = 4096;
/// Entries at each end that [`sample_key`] always reads.
const EDGE: usize = 256;
/// Lists at least this long are compared and scanned on the rayon pool.
const PAR_MIN: usize = 1 << 18;
/// Entries per rayon task of the comparisons and scans.
const PAR_CHUNK: usize = 1 << 16;

/// A key of `idx` from its length, its ends and [`SAMPLES`] evenly spaced
/// entries (every entry of a short list): O(1) in the length. Lists with
/// equal keys are told apart by [`same_list`], so a list differing only
/// between samples costs a comparison, never a wrong result.
pub(crate) fn sample_key(idx: &[u32]) -> u64 {
    let n = idx.len();
    if n <= 2 * EDGE + SAMPLES {
        return hash_and_max(idx).0;
    }
    let mut s = Vec::with_capacity(2 * EDGE + SAMPLES + 2);
    s.extend_from_slice(&idx[..EDGE]);
    s.extend_from_slice(&idx[n - EDGE..]);
    let step = (n - 2 * EDGE) / SAMPLES;
    s.extend((0..SAMPLES).map(|k| idx[EDGE + k * step]));
    s.push(n as u32);
    s.push((n as u64 >> 32) as u32);
    hash_and_max(&s).0
}

/// Whether `a == b`, compared on the rayon pool when long.
pub(crate) fn same_list(a: &[u32], b: &[u32]) -> bool {
    use rayon::prelude::*;
    if a.len() != b.len() {
        return false;
    }
    if a.len() < PAR_MIN {
        return a == b;
    }
    a.par_chunks(PAR_CHUNK)
        .zip(b.par_chunks(PAR_CHUNK))
        .all(|(x, y)| x == y)
}

/// The largest entry of `idx` (`None` when empty) and whether `idx` is
/// non-decreasing, in one pass, on the rayon pool when long.
pub(crate) fn max_and_sorted(idx: &[u32]) -> (Option<u32>, bool) {
    use rayon::prelude::*;
    // per chunk: largest, sorted, first, last
    let scan = |c: &[u32]| {
        (
            c.iter().copied().max(),
            c.is_sorted(),
            c.first().copied(),
            c.last().copied(),
        )
    };
    let parts: Vec<_> = if idx.len() < PAR_MIN {
        vec![scan(idx)]
    } else {
        idx.par_chunks(PAR_CHUNK).map(scan).collect()
    };
    let max = parts.iter().filter_map(|p| p.0).max();
    let sorted = parts.iter().all(|p| p.1) && parts.windows(2).all(|w| w[0].3 <= w[1].2);
    (max, sorted)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn max_and_sorted_against_a_plain_scan() {
        assert_eq!(max_and_sorted(&[]), (None, true));
        assert_eq!(max_and_sorted(&[7]), (Some(7), true));
        assert_eq!(max_and_sorted(&[3, 3, 5, 9]), (Some(9), true));
        assert_eq!(max_and_sorted(&[3, 5, 4, 9]), (Some(9), false));
        // long lists go through the pool: a descent inside a chunk, across
        // the boundary of two chunks, and none
        let n = PAR_MIN + 3 * PAR_CHUNK + 17;
        let up: Vec<u32> = (0..n as u32).map(|i| i / 3).collect();
        assert_eq!(max_and_sorted(&up), (up.last().copied(), true));
        for at in [5, PAR_CHUNK, PAR_CHUNK + 1, n - 1] {
            let mut v = up.clone();
            v[at - 1] = v[at] + 1;
            assert!(!v.is_sorted());
            let want = (v.iter().copied().max(), false);
            assert_eq!(max_and_sorted(&v), want, "descent before {at}");
        }
    }

    #[test]
    fn max_and_sensitivity() {
        assert_eq!(hash_and_max(&[]).1, None);
        let v: Vec<u32> = (0..1003).map(|i| (i * 7919) % 5000).collect();
        let (h, m) = hash_and_max(&v);
        assert_eq!(m, v.iter().copied().max());
        let mut w = v.clone();
        w[500] ^= 1;
        assert_ne!(hash_and_max(&w).0, h);
        w[500] ^= 1;
        assert_eq!(hash_and_max(&w).0, h);
        // a list and its prefix differ
        assert_ne!(hash_and_max(&v[..1000]).0, h);
        assert_ne!(hash_and_max(&[0, 0]).0, hash_and_max(&[0]).0);
    }

    #[test]
    fn sampled_keys_compare_and_max() {
        let v: Vec<u32> = (0..3_000_000u32)
            .map(|i| i.wrapping_mul(2_654_435_761) % 1_000_003)
            .collect();
        let k = sample_key(&v);
        let mut w = v.clone();
        assert_eq!(sample_key(&w), k);
        assert!(same_list(&v, &w));
        // a change at an end or at a sampled entry changes the key
        w[0] ^= 1;
        assert_ne!(sample_key(&w), k);
        assert!(!same_list(&v, &w));
        w[0] ^= 1;
        // a change between samples keeps the key but not the comparison
        let between = 256 + 1;
        w[between] ^= 1;
        assert_eq!(sample_key(&w), k);
        assert!(!same_list(&v, &w));
        assert!(!same_list(&v, &v[1..]));
        assert_eq!(max_and_sorted(&v).0, v.iter().copied().max());
        assert_eq!(max_and_sorted(&v[..10]).0, v[..10].iter().copied().max());
        // short lists: every entry is in the key
        assert_ne!(sample_key(&[1, 2, 3]), sample_key(&[1, 2, 4]));
        assert_ne!(sample_key(&v[..1000]), sample_key(&v[..999]));
    }
}
