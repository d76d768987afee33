//! Hashing of index lists for the per-thread index cache: one pass that also
//! finds the largest index (the range check of a cache hit).

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

#[cfg(test)]
mod tests {
    use super::*;

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
}
