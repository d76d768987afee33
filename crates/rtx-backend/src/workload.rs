//! The anchors' deterministic workload generators (`anchors/WORKLOADS.md`):
//! splitmix64 streams and the values, units and indices built on them.
//! Always compiled: benches, the HetGAT graph builder and model
//! initialization use them; the conformance suite re-exports them.

/// splitmix64 value `i` of stream `seed`: `mix(seed + (i + 1) * 0x9E3779B97F4A7C15)`.
///
/// ```
/// assert_eq!(rtx_backend::workload::splitmix64(0, 0), 0xe220_a839_7b1d_cdaf);
/// ```
pub fn splitmix64(seed: u64, i: u64) -> u64 {
    let mut z = seed.wrapping_add((i.wrapping_add(1)).wrapping_mul(0x9E37_79B9_7F4A_7C15));
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// `unit(seed, i)`: `(value >> 11) * 2^-53`, in `[0, 1)`.
pub fn unit(seed: u64, i: u64) -> f64 {
    (splitmix64(seed, i) >> 11) as f64 * (1.0 / 9_007_199_254_740_992.0)
}

/// `value(seed, i)`: exact in f32, in `[-1, 1)`.
pub fn value(seed: u64, i: u64) -> f32 {
    ((splitmix64(seed, i) >> 40) as f32) * (2.0 / 16_777_216.0) - 1.0
}

/// `n` values of stream `seed` as `T`.
pub fn values<T: crate::Element>(seed: u64, n: usize) -> Vec<T> {
    (0..n as u64)
        .map(|i| T::from_f64(f64::from(value(seed, i))))
        .collect()
}

/// `index(seed, i, rows, dist)`: `hub` skews toward row 0 (`u^3`), else uniform.
/// `rows` must be positive (an index into zero rows does not exist; 0 is returned).
pub fn index(seed: u64, i: u64, rows: usize, hub: bool) -> u32 {
    let mut u = unit(seed, i);
    if hub {
        u = u * u * u;
    }
    ((u * rows as f64) as usize).min(rows.saturating_sub(1)) as u32
}

/// `n` indices below `rows` (see [`index`]).
pub fn indices(seed: u64, n: usize, rows: usize, hub: bool) -> Vec<u32> {
    (0..n as u64).map(|i| index(seed, i, rows, hub)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn check_values_of_workloads_md() {
        assert_eq!(splitmix64(0, 0), 0xe220_a839_7b1d_cdaf);
        let v = value(2, 0);
        assert!((-1.0..1.0).contains(&v));
        assert_eq!(indices(1, 5, 10, true).len(), 5);
        assert!(indices(1, 1000, 7, false).iter().all(|&i| i < 7));
    }
}
