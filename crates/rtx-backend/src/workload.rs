//! The deterministic workload generators (`docs/workloads.md`): splitmix64
//! streams and the values, units and indices built on them. Always
//! compiled, and this is their one public path: benches, tests, the HetGAT
//! graph builders, model initialization and the conformance suite all use
//! `rtx_backend::workload`.

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

    /// Known values computed independently (Python, exact integer arithmetic)
    /// from the definitions in docs/workloads.md.
    #[test]
    fn pinned_values_of_workloads_md() {
        assert_eq!(splitmix64(1, 0), 0x910a_2dec_8902_5cc1);
        // value: (0xe220a8397b1dcdaf >> 40) = 14,819,496; * 2^-23 - 1
        assert_eq!(0xe220_a839_7b1d_cdaf_u64 >> 40, 14_819_496);
        assert_eq!(
            value(0, 0).to_bits(),
            (14_819_496.0f32 / 8_388_608.0 - 1.0).to_bits()
        );
        assert_eq!(value(0, 0), 0.766_621_6);
        assert_eq!(value(2, 0), 0.182_379_36);
        assert_eq!(value(3, 5), 0.272_444_6);
        // unit: (0xe220a8397b1dcdaf >> 11) = 7,956,156,453,446,585; * 2^-53
        assert_eq!(
            unit(0, 0),
            7_956_156_453_446_585.0 / 9_007_199_254_740_992.0
        );
        assert_eq!(unit(0, 0), 0.883_310_808_213_642_6);
        assert_eq!(unit(1, 3), 0.444_359_217_055_772_1);
        // index: stream 1 over the harris-hub-f64 rows (15,000), hub and uniform
        assert_eq!(
            indices(1, 8, 15_000, true),
            [2727, 6221, 13732, 1316, 1315, 6660, 10129, 2146]
        );
        assert_eq!(
            indices(1, 8, 15_000, false),
            [8498, 11186, 14565, 6665, 6663, 11443, 13160, 7846]
        );
        // the HetGAT `aa` relation's destinations: stream 11, hub, 10,000 rows
        assert_eq!(
            indices(11, 8, 10_000, true),
            [316, 180, 2597, 1284, 45, 1681, 10, 4745]
        );
        assert_eq!(index(11, 6, 10_000, true), 10);
    }
}
