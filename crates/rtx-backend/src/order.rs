//! The canonical summation order of `index_add`, defined once for every backend.
//!
//! For destination row `r`, let `p_0 < p_1 < ... < p_{k-1}` be the source
//! positions `i` with `idx[i] == r`, in increasing order (row `r` of the
//! [`IndexPlan`](crate::IndexPlan)). Each feature column is summed
//! independently and identically:
//!
//! 1. **Level 0.** Cut `v_j = src[p_j]` into consecutive blocks of
//!    [`CANONICAL_BLOCK`] values (the last may be shorter). Each block's sum is
//!    taken left to right, starting from its first value:
//!    `s = ((v_a + v_{a+1}) + v_{a+2}) + ...` (never from `0.0`, so a lone
//!    `-0.0` stays `-0.0`).
//! 2. **Higher levels.** While more than one value remains, the sequence of
//!    block sums is cut and summed exactly the same way.
//! 3. **Into the destination.** The single remaining value `t` is added once:
//!    `dst[r] = dst[r] + t`. A row with `k == 0` is not written at all (its
//!    bits, `-0.0` and NaN payloads included, are kept).
//!
//! **Why it is deterministic.** The order depends only on `idx` (through the
//! stable counting sort of the plan) and on the constant block size, never on
//! thread count, scheduling or hardware: every addition has fixed operands in
//! a fixed association, so IEEE-754 round-to-nearest gives the same bits
//! everywhere. No atomics are involved.
//!
//! **Why it is at least as accurate as a sequential loop.** A sequential loop
//! over `k` values has the worst-case error bound `(k - 1) u Σ|v_j|` (`u` the
//! unit roundoff). Here each value passes through at most `B - 1` additions per
//! level and `L = ceil(log_B k)` levels, so the bound is `(B - 1) L u Σ|v_j|`,
//! never larger than `(k - 1) u Σ|v_j|` and far smaller for large `k` (for
//! `k = 16M`, `B = 256`: 765 u against 16,777,215 u). For `k <= B` the two
//! orders are the same additions.
//!
//! **Why this block size.** A GPU sums one block per thread per feature column
//! with a short serial chain (256 dependent adds, loads issued ahead), and
//! every level is fully parallel: one row receiving all of 16M contributions
//! is reduced in three short passes (65,536 block sums, then 256, then 1),
//! instead of one 16M-long chain. Rows with at most 256 contributions (nearly
//! all rows of real graphs) finish in the first pass.

use crate::Element;

/// Contributions summed left to right per block, at every level of the
/// canonical order. Changing it changes results bit for bit: it is part of
/// the order's definition.
pub const CANONICAL_BLOCK: usize = 256;

/// Sums `k` scalars `value(0..k)` in the canonical order; `None` when `k == 0`.
pub fn canonical_sum<T: Element>(k: usize, value: impl Fn(usize) -> T) -> Option<T> {
    if k == 0 {
        return None;
    }
    let mut level: Vec<T> = (0..k)
        .step_by(CANONICAL_BLOCK)
        .map(|a| (a + 1..k.min(a + CANONICAL_BLOCK)).fold(value(a), |s, j| s + value(j)))
        .collect();
    while level.len() > 1 {
        level = level
            .chunks(CANONICAL_BLOCK)
            .map(|c| c[1..].iter().fold(c[0], |s, &x| s + x))
            .collect();
    }
    Some(level[0])
}

/// Adds to `dst_row` (`f` values) the canonical sum of the source rows
/// `src[p * f .. (p + 1) * f]` for `p` in `positions` (increasing).
/// `scratch` is reused between calls to avoid allocation.
///
/// This is the row kernel of the reference and CPU backends: all `f` columns
/// follow exactly the order of [`canonical_sum`].
pub fn add_row_sum<T: Element>(
    dst_row: &mut [T],
    positions: &[u32],
    src: &[T],
    scratch: &mut Vec<T>,
) {
    let f = dst_row.len();
    let k = positions.len();
    if k == 0 || f == 0 {
        return;
    }
    let row = |p: u32| &src[p as usize * f..(p as usize + 1) * f];
    // Level 0: block sums, block b at scratch[b*f..(b+1)*f].
    let blocks = k.div_ceil(CANONICAL_BLOCK);
    scratch.clear();
    scratch.resize(blocks * f, T::ZERO);
    for (b, chunk) in positions.chunks(CANONICAL_BLOCK).enumerate() {
        let acc = &mut scratch[b * f..(b + 1) * f];
        acc.copy_from_slice(row(chunk[0]));
        for &p in &chunk[1..] {
            for (a, &v) in acc.iter_mut().zip(row(p)) {
                *a = *a + v;
            }
        }
    }
    // Higher levels, in place: group g (blocks g*B..) is written to slot g,
    // which is never a slot a later group still has to read.
    let mut n = blocks;
    while n > 1 {
        let groups = n.div_ceil(CANONICAL_BLOCK);
        for g in 0..groups {
            let first = g * CANONICAL_BLOCK;
            let last = n.min(first + CANONICAL_BLOCK);
            for j in 0..f {
                let mut s = scratch[first * f + j];
                for b in first + 1..last {
                    s = s + scratch[b * f + j];
                }
                scratch[g * f + j] = s;
            }
        }
        n = groups;
    }
    for (d, &t) in dst_row.iter_mut().zip(&scratch[..f]) {
        *d = *d + t;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empty_is_none_and_single_is_exact() {
        assert_eq!(canonical_sum::<f32>(0, |_| 1.0), None);
        assert_eq!(
            canonical_sum(1, |_| -0.0f32).unwrap().to_bits(),
            (-0.0f32).to_bits()
        );
    }

    #[test]
    fn small_rows_are_sequential() {
        let v = [1e8f32, 1.0, -1e8, 1.0];
        let seq = v.iter().skip(1).fold(v[0], |s, &x| s + x);
        assert_eq!(canonical_sum(4, |j| v[j]).unwrap().to_bits(), seq.to_bits());
    }

    #[test]
    fn blocked_matches_hand_computed_tree() {
        // 2*B + 3 values: three level-0 blocks, then one level-1 block.
        let k = 2 * CANONICAL_BLOCK + 3;
        let val = |j: usize| ((j * 7919) % 1000) as f32 * 0.001 + 1e3;
        let block = |a: usize, b: usize| (a + 1..b).fold(val(a), |s, j| s + val(j));
        let want = (block(0, 256) + block(256, 512)) + block(512, k);
        assert_eq!(canonical_sum(k, val).unwrap().to_bits(), want.to_bits());
    }

    #[test]
    fn row_kernel_follows_canonical_sum_per_column() {
        let f = 3;
        let k = 3 * CANONICAL_BLOCK * CANONICAL_BLOCK / 2 + 17; // three levels
        let src: Vec<f32> = (0..k * f)
            .map(|i| ((i * 2_654_435_761) % 10_007) as f32 * 1e-3 - 5.0)
            .collect();
        let positions: Vec<u32> = (0..k as u32).collect();
        let mut dst = vec![0.5f32, -0.0, 7.0];
        let before = dst.clone();
        add_row_sum(&mut dst, &positions, &src, &mut Vec::new());
        for j in 0..f {
            let t = canonical_sum(k, |i| src[i * f + j]).unwrap();
            assert_eq!(dst[j].to_bits(), (before[j] + t).to_bits(), "column {j}");
        }
    }
}
