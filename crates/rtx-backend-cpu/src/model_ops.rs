//! Parallel drivers of the [`rtx_backend::ops`] row kernels. Every output
//! element is computed by exactly the reference's operations in the
//! reference's order; rayon only decides which thread does it, so results
//! are bit-identical for any thread count.

use rayon::prelude::*;
use rtx_backend::order::{CANONICAL_BLOCK, canonical_accumulate, reduce_blocks};
use rtx_backend::{Element, Error, IndexPlan, Result, ops, try_vec};

/// Elements per rayon task of elementwise ops.
pub(crate) const ELEMS_PER_TASK: usize = 16 * 1024;

/// Multiply-adds per rayon task of a matrix product.
const ROW_TILE_ELEMS: usize = 64 * 1024;

/// The canonical sum of `k > CANONICAL_BLOCK` vector terms of `out.len()`
/// values, its level-0 blocks computed in parallel: `block(p0, p1, acc)` must
/// write into `acc` the left-to-right sum of terms `p0..p1`, starting from
/// term `p0` (one level-0 block of the canonical order); the higher levels are
/// the same sequential [`reduce_blocks`] as everywhere else. The one parallel
/// form of the canonical order in this crate ([`par_accumulate`] and the
/// `A^T B` path of [`matmul`] use it).
fn par_blocks<T: Element>(
    k: usize,
    out: &mut [T],
    block: impl Fn(usize, usize, &mut [T]) + Sync,
) -> Result<()> {
    let f = out.len();
    debug_assert!(k > CANONICAL_BLOCK && f > 0);
    let blocks = k.div_ceil(CANONICAL_BLOCK);
    let len = blocks.checked_mul(f).ok_or_else(|| Error::SizeOverflow {
        op: "canonical sum",
        what: format!("{blocks} level-0 blocks of {f} values"),
    })?;
    let mut scratch = try_vec(len, T::ZERO)?;
    scratch.par_chunks_mut(f).enumerate().for_each(|(b, acc)| {
        let p0 = b * CANONICAL_BLOCK;
        block(p0, k.min(p0 + CANONICAL_BLOCK), acc);
    });
    reduce_blocks(&mut scratch, blocks, f);
    out.copy_from_slice(&scratch[..f]);
    Ok(())
}

/// [`canonical_accumulate`] with the level-0 blocks computed in parallel
/// ([`par_blocks`]).
pub(crate) fn par_accumulate<T: Element>(
    k: usize,
    out: &mut [T],
    term: impl Fn(usize, &mut [T], bool) + Sync,
) -> Result<()> {
    if k <= CANONICAL_BLOCK || out.is_empty() {
        canonical_accumulate(k, out, &mut Vec::new(), term);
        return Ok(());
    }
    par_blocks(k, out, |p0, p1, acc| {
        for p in p0..p1 {
            term(p, acc, p == p0);
        }
    })
}

/// `op(a) @ op(b)` as [`ops::matmul`] defines it: `[m, k] @ [k, n]`, into
/// `out` (`m * n` zeros, checked by the caller).
#[allow(clippy::too_many_arguments)]
pub(crate) fn matmul<T: Element>(
    a: &[T],
    trans_a: bool,
    b: &[T],
    trans_b: bool,
    m: usize,
    k: usize,
    n: usize,
    out: &mut [T],
) -> Result<()> {
    if n == 0 || m == 0 {
        return Ok(());
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
        // a chunk longer than `out` is just `out`: saturating is exact here
        out.par_chunks_mut(rows.saturating_mul(n))
            .enumerate()
            .for_each(|(t, o)| {
                let i0 = t * rows;
                ops::mm_block(a, 0, rs, ps, b, n, i0..i0 + o.len() / n, 0, k, o);
            });
    } else if trans_a {
        // level-0 blocks of the inner dimension in parallel, then the tree
        par_blocks(k, out, |p0, p1, acc| {
            ops::mm_block(a, p0 * m, 1, m, b, n, 0..m, p0, p1, acc);
        })?;
    } else {
        out.par_chunks_mut(n)
            .enumerate()
            .for_each_init(Vec::new, |scratch, (i, o)| {
                ops::matmul_row(&a[i * k..(i + 1) * k], b, o, scratch);
            });
    }
    Ok(())
}

/// Runs `kernel(positions, out_rows, scratch)` for every row of `plan` in
/// parallel, each writing its segment's rows in segment order into a buffer
/// laid out in plan order, then moves every row to its entry's position.
pub(crate) fn per_segment<T: Element>(
    plan: &IndexPlan,
    f: usize,
    kernel: impl Fn(&[u32], &mut [T], &mut ops::SegmentScratch<T>) + Sync,
) -> Result<Vec<T>> {
    let e = plan.len();
    // `[e, f]` is the caller's checked input shape: the product fits
    let mut sorted = try_vec(e * f, T::ZERO)?;
    if f == 0 || e == 0 {
        return Ok(sorted);
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
    let mut inv = try_vec(e, 0u32)?;
    for (q, &p) in plan.positions().iter().enumerate() {
        inv[p as usize] = q as u32;
    }
    let mut out = try_vec(e * f, T::ZERO)?;
    out.par_chunks_mut(f)
        .with_min_len(256)
        .zip(inv.par_iter())
        .for_each(|(o, &q)| o.copy_from_slice(&sorted[q as usize * f..(q as usize + 1) * f]));
    Ok(out)
}
