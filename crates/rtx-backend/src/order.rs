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
//! **Why it is at least as accurate as a sequential loop.** Let `u` be the
//! unit roundoff (`EPSILON / 2`). An addition `a + b` rounds once, so to first
//! order in `u` a sum's error is at most `u · Σ_j d_j |v_j|`, where `d_j` is the
//! number of additions value `v_j` passes through on its way to the result.
//! A sequential loop over `k` values has `d_j <= k - 1`, so the bound
//! `(k - 1) · u · Σ|v_j|`. In the canonical tree, at each level a value (or
//! the partial sum holding it) passes through at most (its block's length
//! − 1) additions, so `d_j <= Σ_levels (block length − 1)`. That is
//! `<= (B − 1) · L` (blocks hold at most `B` values, `L` levels), and it is
//! also `<= k − 1`: the block a partial sum joins at a level adds
//! (length − 1) *other* partial sums, each covering at least one value
//! disjoint from everything the partial sum already covers, so after the
//! last level `1 + Σ_levels (block length − 1) <= k`. Hence
//! `d_j <= min((B − 1) · L, k − 1)`: never worse than a sequential loop, and
//! far better for large `k` (`k = 16M`, `B = 256`, `L = 3`: 765 against
//! 16,777,215). For `k <= B` the two orders are the same additions. (The
//! bound `(B − 1) · L` alone can exceed `k − 1`, e.g. for `257 <= k <= 510`,
//! where `L = 2`; the `min` is what holds.) Adding the result into the
//! destination is one more addition in both orders. [`canonical_levels`]
//! gives `L`.
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

/// The number of levels `L` of the canonical order for `k` values: 0 for
/// `k == 0`, 1 for `1 <= k <= B` (level 0 only), 2 for `B < k <= B²`, and so
/// on (`B` = [`CANONICAL_BLOCK`]).
pub fn canonical_levels(k: usize) -> usize {
    if k == 0 {
        return 0;
    }
    let (mut levels, mut n) = (1, k.div_ceil(CANONICAL_BLOCK));
    while n > 1 {
        n = n.div_ceil(CANONICAL_BLOCK);
        levels += 1;
    }
    levels
}

/// Sums `k` scalars `value(0..k)` in the canonical order; `None` when `k == 0`.
pub fn canonical_sum<T: Element>(k: usize, value: impl Fn(usize) -> T) -> Option<T> {
    if k == 0 {
        return None;
    }
    let mut acc = [T::ZERO];
    canonical_accumulate(k, &mut acc, &mut Vec::new(), |j, acc, first| {
        acc[0] = if first { value(j) } else { acc[0] + value(j) };
    });
    Some(acc[0])
}

/// Adds to `dst_row` (`f` values) the canonical sum of the source rows
/// `src[p * f .. (p + 1) * f]` for `p` in `positions` (increasing).
/// `scratch` is reused between calls to avoid allocation.
///
/// The sum is taken in the accumulator type ([`Element::Acc`]: `f32` for
/// `bf16` and `f16`, the type itself for `f32` and `f64`), each value widened
/// exactly, and added to the widened destination value; the result is
/// rounded once to `T`. For `f32` and `f64` that is plain arithmetic in `T`.
///
/// This is the row kernel of the reference and CPU backends: all `f` columns
/// follow exactly the order of [`canonical_sum`] (both are built on
/// [`canonical_accumulate`]'s blocks and [`reduce_blocks`]).
pub fn add_row_sum<T: Element>(
    dst_row: &mut [T],
    positions: &[u32],
    src: &[T],
    scratch: &mut Vec<T::Acc>,
) {
    let f = dst_row.len();
    let k = positions.len();
    if k == 0 || f == 0 {
        return;
    }
    let t = blocked_sum(k, f, scratch, |q, acc: &mut [T::Acc], first| {
        let p = positions[q] as usize;
        let v = &src[p * f..(p + 1) * f];
        if first {
            for (a, &x) in acc.iter_mut().zip(v) {
                *a = x.to_acc();
            }
        } else {
            for (a, &x) in acc.iter_mut().zip(v) {
                *a = *a + x.to_acc();
            }
        }
    });
    for (d, &t) in dst_row.iter_mut().zip(t) {
        *d = T::from_acc(d.to_acc() + t);
    }
}

/// Sums `k` vector terms into `out` in the canonical order. `term(p, acc,
/// first)` must write term `p` into `acc` when `first`, else add it
/// (`acc[j] = acc[j] + t_p[j]`). `k == 0` gives zeros.
///
/// Level 0 calls `term` for the terms of each block in increasing `p` (the
/// first of a block with `first` set); for `k <= B` the one block is summed
/// straight into `out`, otherwise the block sums go to `scratch` and
/// [`reduce_blocks`] makes the higher levels.
pub fn canonical_accumulate<T: Element>(
    k: usize,
    out: &mut [T],
    scratch: &mut Vec<T>,
    mut term: impl FnMut(usize, &mut [T], bool),
) {
    if k == 0 {
        out.fill(T::ZERO);
        return;
    }
    if k <= CANONICAL_BLOCK {
        for p in 0..k {
            term(p, out, p == 0);
        }
        return;
    }
    let t = blocked_sum(k, out.len(), scratch, term);
    out.copy_from_slice(t);
}

/// The canonical sum of `k >= 1` vector terms of `f` values, computed in
/// `scratch`: level 0 writes block `b`'s sum to `scratch[b*f..(b+1)*f]`,
/// [`reduce_blocks`] the higher levels; returns `scratch[..f]`.
fn blocked_sum<T: Element>(
    k: usize,
    f: usize,
    scratch: &mut Vec<T>,
    mut term: impl FnMut(usize, &mut [T], bool),
) -> &[T] {
    let blocks = k.div_ceil(CANONICAL_BLOCK);
    scratch.clear();
    scratch.resize(blocks * f, T::ZERO);
    if f > 0 {
        for (b, acc) in scratch.chunks_exact_mut(f).enumerate() {
            let p0 = b * CANONICAL_BLOCK;
            for p in p0..k.min(p0 + CANONICAL_BLOCK) {
                term(p, acc, p == p0);
            }
        }
    }
    reduce_blocks(scratch, blocks, f);
    &scratch[..f]
}

/// The higher levels of the canonical order, in place: `scratch` holds
/// `blocks` vectors of `f` values (the level-0 block sums); afterwards
/// `scratch[..f]` is their canonical sum: group `g` of (up to) `B`
/// consecutive vectors is summed left to right into slot `g`, which no later
/// group still has to read, until one vector remains. The higher levels of
/// every canonical sum in this crate, and of a backend that computes level 0
/// its own way (in parallel).
pub fn reduce_blocks<T: Element>(scratch: &mut [T], blocks: usize, f: usize) {
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
    fn levels_and_the_accuracy_bound() {
        let b = CANONICAL_BLOCK;
        for (k, l) in [
            (0, 0),
            (1, 1),
            (b, 1),
            (b + 1, 2),
            (b * b, 2),
            (b * b + 1, 3),
        ] {
            assert_eq!(canonical_levels(k), l, "k = {k}");
        }
        assert_eq!(canonical_levels(16 << 20), 3);
        // (B-1)·L alone is not a bound below k-1 (257 <= k <= 510) ...
        assert!((b - 1) * canonical_levels(b + 1) > b);
        // ... but the longest chain of additions any value passes through is
        // at most min((B-1)·L, k-1): count it level by level.
        for k in [1, 2, b, b + 1, 300, 2 * b - 2, 2 * b + 7, b * b + 3] {
            // the first value of each block is on the longest chain
            let (mut n, mut chain) = (k, 0);
            while n > 1 {
                chain += n.min(b) - 1;
                n = n.div_ceil(b);
            }
            assert!(
                chain <= ((b - 1) * canonical_levels(k)).min(k - 1),
                "k = {k}"
            );
        }
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
