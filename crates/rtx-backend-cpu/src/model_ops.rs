//! Parallel drivers of the [`rtx_backend::ops`] row kernels. Every output
//! element is computed by exactly the reference's operations in the
//! reference's order; rayon only decides which thread does it, so results
//! are bit-identical for any thread count.

use rayon::prelude::*;
use rtx_backend::order::CANONICAL_BLOCK;
use rtx_backend::{Element, IndexPlan, ops};

/// Elements per rayon task of elementwise ops.
pub(crate) const ELEMS_PER_TASK: usize = 16 * 1024;

/// Multiply-adds per rayon task of a matrix product.
const ROW_TILE_ELEMS: usize = 64 * 1024;

/// [`ops::canonical_accumulate`] with the level-0 blocks computed in parallel
/// (the higher levels are the same sequential [`ops::reduce_blocks`]).
pub(crate) fn par_accumulate<T: Element>(
    k: usize,
    out: &mut [T],
    term: impl Fn(usize, &mut [T], bool) + Sync,
) {
    let f = out.len();
    if k <= CANONICAL_BLOCK || f == 0 {
        ops::canonical_accumulate(k, out, &mut Vec::new(), term);
        return;
    }
    let blocks = k.div_ceil(CANONICAL_BLOCK);
    let mut scratch = vec![T::ZERO; blocks * f];
    scratch.par_chunks_mut(f).enumerate().for_each(|(b, acc)| {
        let p0 = b * CANONICAL_BLOCK;
        for p in p0..k.min(p0 + CANONICAL_BLOCK) {
            term(p, acc, p == p0);
        }
    });
    ops::reduce_blocks(&mut scratch, blocks, f);
    out.copy_from_slice(&scratch[..f]);
}

/// `op(a) @ op(b)` as [`ops::matmul`] defines it: `[m, k] @ [k, n]`.
pub(crate) fn matmul<T: Element>(
    a: &[T],
    trans_a: bool,
    b: &[T],
    trans_b: bool,
    m: usize,
    k: usize,
    n: usize,
) -> Vec<T> {
    let mut out = vec![T::ZERO; m * n];
    if n == 0 || m == 0 {
        return out;
    }
    let bt;
    let b = if trans_b {
        bt = ops::transpose2(b, n, k);
        &bt[..]
    } else {
        b
    };
    let (rs, ps) = if trans_a { (1, m) } else { (k, 1) };
    if k <= CANONICAL_BLOCK {
        // one level-0 block: tiles of output rows in parallel
        let rows = (ROW_TILE_ELEMS / (k * n).max(1)).clamp(4, 256) / 4 * 4;
        out.par_chunks_mut(rows * n).enumerate().for_each(|(t, o)| {
            let i0 = t * rows;
            ops::mm_block(a, 0, rs, ps, b, n, i0..i0 + o.len() / n, 0, k, o);
        });
    } else if trans_a {
        // level-0 blocks of the inner dimension in parallel, then the tree
        let blocks = k.div_ceil(CANONICAL_BLOCK);
        let mut scratch = vec![T::ZERO; blocks * m * n];
        scratch
            .par_chunks_mut(m * n)
            .enumerate()
            .for_each(|(blk, acc)| {
                let p0 = blk * CANONICAL_BLOCK;
                let p1 = k.min(p0 + CANONICAL_BLOCK);
                ops::mm_block(a, p0 * m, 1, m, b, n, 0..m, p0, p1, acc);
            });
        ops::reduce_blocks(&mut scratch, blocks, m * n);
        out.copy_from_slice(&scratch[..m * n]);
    } else {
        out.par_chunks_mut(n)
            .enumerate()
            .for_each_init(Vec::new, |scratch, (i, o)| {
                ops::matmul_row(&a[i * k..(i + 1) * k], b, o, scratch);
            });
    }
    out
}

/// Runs `kernel(positions, out_rows, scratch)` for every row of `plan` in
/// parallel, each writing its segment's rows in segment order into a buffer
/// laid out in plan order, then moves every row to its entry's position.
pub(crate) fn per_segment<T: Element>(
    plan: &IndexPlan,
    f: usize,
    kernel: impl Fn(&[u32], &mut [T], &mut ops::SegmentScratch<T>) + Sync,
) -> Vec<T> {
    let e = plan.len();
    let mut sorted = vec![T::ZERO; e * f];
    if f == 0 || e == 0 {
        return sorted;
    }
    // cut the plan-ordered buffer into groups of whole rows
    let offsets = plan.offsets();
    let target = (ELEMS_PER_TASK / f).max(1) as u64;
    let mut groups: Vec<(usize, usize, &mut [T])> = Vec::new();
    let mut rest: &mut [T] = &mut sorted;
    let mut r0 = 0;
    while r0 < plan.rows() {
        let mut r1 = r0 + 1;
        while r1 < plan.rows() && offsets[r1] - offsets[r0] < target {
            r1 += 1;
        }
        let len = (offsets[r1] - offsets[r0]) as usize * f;
        let (head, tail) = std::mem::take(&mut rest).split_at_mut(len);
        groups.push((r0, r1, head));
        rest = tail;
        r0 = r1;
    }
    groups
        .into_par_iter()
        .for_each_init(ops::SegmentScratch::default, |s, (r0, r1, buf)| {
            let base = offsets[r0];
            for r in r0..r1 {
                let (lo, hi) = (
                    (offsets[r] - base) as usize,
                    (offsets[r + 1] - base) as usize,
                );
                kernel(plan.row(r), &mut buf[lo * f..hi * f], s);
            }
        });
    // un-permute: entry positions[q] takes sorted row q
    let mut inv = vec![0u32; e];
    for (q, &p) in plan.positions().iter().enumerate() {
        inv[p as usize] = q as u32;
    }
    let mut out = vec![T::ZERO; e * f];
    out.par_chunks_mut(f)
        .with_min_len(256)
        .zip(inv.par_iter())
        .for_each(|(o, &q)| o.copy_from_slice(&sorted[q as usize * f..(q as usize + 1) * f]));
    out
}
