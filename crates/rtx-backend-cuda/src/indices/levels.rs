//! The chunk tables that drive the device scatter-add: rtx-backend's canonical
//! order ([`rtx_backend::order`]) laid out as independent launches.
//!
//! Plain host code (no device), so it is unit-tested against the reference on
//! any machine: `tests::simulate` runs the tables the way the kernels do.
//!
//! For each destination row with `k > 0` contributions, level 0 cuts the row's
//! plan positions into chunks of [`CANONICAL_BLOCK`] (the last may be shorter).
//! A row with one chunk at a level is finished there: its chunk's sum goes into
//! the row ([`FINAL`]). Otherwise each chunk's sum goes to the row's next
//! consecutive slot of the next level's scratch, and that level cuts the row's
//! slots the same way. Chunks partition the values of a level in order, so a
//! level is one monotone `start` array of `n + 1` entries plus a row and a slot
//! per chunk.

use rtx_backend::IndexPlan;
use rtx_backend::order::CANONICAL_BLOCK;

/// Slot of a chunk whose sum is added into its destination row.
pub(crate) const FINAL: u32 = crate::kernels::abi::FINAL;

/// One level: chunk `c` sums values `start[c]..start[c + 1]` of the level
/// into slot `slot[c]` of the next level, or into row `row[c]` when
/// `slot[c] == FINAL`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ChunkLevel {
    pub start: Vec<u32>,
    pub row: Vec<u32>,
    pub slot: Vec<u32>,
}

/// Positions per window of the windowed level-0 kernels (segment.cu's `RTX_WIN`).
pub(crate) const WINDOW: usize = crate::kernels::abi::WINDOW as usize;

/// The window table of a level whose chunks start at `start` (`nchunks + 1`
/// ascending entries, the last the level's value count): entry `b` of
/// `windows + 1` is the first chunk starting at or after position `b * WINDOW`
/// (`nchunks` when none does), so window `b`'s chunks are `first[b] ..
/// first[b + 1]` (segment.cu's `windowed_level0` reads them instead of
/// searching).
pub(crate) fn window_table(start: &[u32]) -> Vec<u32> {
    let nchunks = start.len().saturating_sub(1);
    let entries = start.last().map_or(0, |&e| e as usize);
    let windows = entries.div_ceil(WINDOW);
    let mut first = Vec::with_capacity(windows + 1);
    let mut c = 0;
    for b in 0..=windows {
        while c < nchunks && (start[c] as usize) < b * WINDOW {
            c += 1;
        }
        first.push(c as u32);
    }
    first
}

/// The levels of a canonical column sum (`sum_rows`, a matrix product's
/// inner dimension) of `rows` rows (> 0) whose columns are cut into `tiles`
/// tiles, as one launch climbs them (dense.cu's `RrClimb`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ColSumLevels {
    /// Rows of each level's output: the first level's groups of
    /// [`CANONICAL_BLOCK`] rows, then each level's groups of the one before,
    /// down to the one row of sums.
    pub rows: Vec<u64>,
    /// First climb counter of each level (the first level has none: 0).
    pub cnt: Vec<u64>,
    /// Counters the climb uses: one per group of a level past the first and
    /// column tile.
    pub counters: u64,
}

pub(crate) fn col_sum_levels(rows: usize, tiles: u64) -> ColSumLevels {
    let block = CANONICAL_BLOCK as u64;
    let mut out = vec![(rows as u64).div_ceil(block)];
    while let Some(&last) = out.last().filter(|&&r| r > 1) {
        out.push(last.div_ceil(block));
    }
    let mut cnt = vec![0u64; out.len()];
    let mut next = 0;
    for i in 1..out.len() {
        cnt[i] = next;
        next += out[i] * tiles;
    }
    ColSumLevels {
        rows: out,
        cnt,
        counters: next,
    }
}

impl ChunkLevel {
    /// Number of chunks.
    pub fn len(&self) -> usize {
        self.row.len()
    }
}

/// Every level of a plan. Level `l + 1` reads the `values[l + 1]` scratch
/// values that level `l` writes; `values[0]` is the plan's entry count.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ScatterLevels {
    pub levels: Vec<ChunkLevel>,
    pub values: Vec<usize>,
}

/// Builds the chunk tables of `plan`, in O(rows + chunks).
///
/// # Panics
/// Never for a valid plan (its entry count fits in `u32`, so every start and slot does).
pub(crate) fn build_levels(plan: &IndexPlan) -> ScatterLevels {
    let b = CANONICAL_BLOCK;
    // (row, first value of the row at this level, number of values)
    let mut rows: Vec<(u32, usize, usize)> = Vec::new();
    let off = plan.offsets();
    for r in 0..plan.rows() {
        let k = (off[r + 1] - off[r]) as usize;
        if k > 0 {
            rows.push((r as u32, off[r] as usize, k));
        }
    }
    let mut levels = Vec::new();
    let mut values = vec![plan.len()];
    while !rows.is_empty() {
        let mut lvl = ChunkLevel {
            start: Vec::new(),
            row: Vec::new(),
            slot: Vec::new(),
        };
        let mut next_rows = Vec::new();
        let mut next_slot = 0usize;
        for &(r, first, k) in &rows {
            let chunks = k.div_ceil(b);
            if chunks > 1 {
                next_rows.push((r, next_slot, chunks));
            }
            for c in 0..chunks {
                lvl.start
                    .push(u32::try_from(first + c * b).expect("plan fits in u32"));
                lvl.row.push(r);
                lvl.slot.push(if chunks == 1 {
                    FINAL
                } else {
                    u32::try_from(next_slot + c).expect("slots fit in u32")
                });
            }
            if chunks > 1 {
                next_slot += chunks;
            }
        }
        // Chunks are contiguous: the level ends where its last row ends.
        let &(_, first, k) = rows.last().expect("non-empty");
        lvl.start
            .push(u32::try_from(first + k).expect("plan fits in u32"));
        levels.push(lvl);
        if next_slot > 0 {
            values.push(next_slot);
        }
        rows = next_rows;
    }
    ScatterLevels { levels, values }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    #[test]
    fn the_column_sum_kernel_has_room_for_the_levels_of_the_largest_sum() {
        let most = col_sum_levels(usize::MAX, 1).rows.len();
        assert_eq!(most, crate::kernels::abi::COL_SUM_LEVELS);
    }
    use rtx_backend::workload::{indices, values};
    use rtx_backend::{Element, reference};

    /// Runs the tables as the kernels do (per column, chunk by chunk).
    pub(crate) fn simulate<T: Element>(
        lv: &ScatterLevels,
        positions: &[u32],
        src: &[T],
        dst: &mut [T],
        f: usize,
    ) {
        let mut cur: Vec<T> = Vec::new();
        for (l, level) in lv.levels.iter().enumerate() {
            let mut next = vec![T::ZERO; lv.values.get(l + 1).copied().unwrap_or(0) * f];
            for c in 0..level.len() {
                let (a, b) = (level.start[c] as usize, level.start[c + 1] as usize);
                assert!(
                    a < b && b - a <= CANONICAL_BLOCK,
                    "chunk {c} of level {l}: {a}..{b}"
                );
                for j in 0..f {
                    let val = |p: usize| {
                        if l == 0 {
                            src[positions[p] as usize * f + j]
                        } else {
                            cur[p * f + j]
                        }
                    };
                    let s = (a + 1..b).fold(val(a), |s, p| s + val(p));
                    if level.slot[c] == FINAL {
                        let d = &mut dst[level.row[c] as usize * f + j];
                        *d = *d + s;
                    } else {
                        next[level.slot[c] as usize * f + j] = s;
                    }
                }
            }
            cur = next;
        }
    }

    fn check(idx: &[u32], rows: usize, f: usize) {
        let plan = IndexPlan::new(idx, rows).unwrap();
        let lv = build_levels(&plan);
        let src: Vec<f32> = values(3, idx.len() * f);
        let dst0: Vec<f32> = values(4, rows * f);
        let mut want = dst0.clone();
        reference::index_add(&mut want, f, &plan, &src).unwrap();
        let mut got = dst0.clone();
        simulate(&lv, plan.positions(), &src, &mut got, f);
        let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
        assert_eq!(bits(&got), bits(&want), "rows {rows} e {} f {f}", idx.len());
    }

    #[test]
    fn tables_reproduce_the_canonical_order() {
        check(&[], 3, 2);
        check(&[2, 0, 2, 2, 1, 0], 4, 3);
        check(&indices(1, 5000, 1000, true), 1000, 2);
        check(&indices(1, 40_000, 300, true), 300, 3);
        // one row at three levels: 256^2 + 17 values
        check(&vec![1u32; CANONICAL_BLOCK * CANONICAL_BLOCK + 17], 3, 1);
        // exactly one full block, and one past it
        check(&vec![0u32; CANONICAL_BLOCK], 1, 2);
        check(&vec![0u32; CANONICAL_BLOCK + 1], 1, 2);
    }

    #[test]
    fn level_shape_of_one_hub_row() {
        let n = 3 * CANONICAL_BLOCK * CANONICAL_BLOCK / 2 + 5;
        let plan = IndexPlan::new(&vec![0u32; n], 1).unwrap();
        let lv = build_levels(&plan);
        let chunks: Vec<usize> = lv.levels.iter().map(ChunkLevel::len).collect();
        // level 0: ceil(n/256) = 385 chunks; level 1: 2 chunks; level 2: 1
        assert_eq!(chunks, [385, 2, 1]);
        assert_eq!(lv.values, [n, 385, 2]);
        assert_eq!(lv.levels[2].slot, [FINAL]);
        assert_eq!(*lv.levels[0].start.last().unwrap() as usize, n);
    }

    #[test]
    fn empty_rows_have_no_chunks() {
        let plan = IndexPlan::new(&[5, 5, 1], 9).unwrap();
        let lv = build_levels(&plan);
        assert_eq!(lv.levels.len(), 1);
        assert_eq!(lv.levels[0].row, [1, 5]);
        assert_eq!(lv.levels[0].start, [0, 1, 3]);
        assert_eq!(lv.levels[0].slot, [FINAL, FINAL]);
    }

    #[test]
    fn window_table_lists_the_chunks_starting_in_each_window() {
        // chunks of a hub row (256 + 256 + 100), then rows of 1-3 entries
        let g = |v: &[u32]| window_table(v);
        let mut start = vec![0u32, 256, 512, 612];
        for k in 0..200u32 {
            start.push(start.last().unwrap() + 1 + k % 3);
        }
        let t = g(&start);
        let entries = *start.last().unwrap() as usize;
        assert_eq!(t.len(), entries.div_ceil(WINDOW) + 1);
        let nchunks = start.len() - 1;
        for (b, &f) in t.iter().enumerate() {
            // the naive definition: the first chunk starting at or after b * 256
            let want = (0..nchunks)
                .find(|&c| start[c] as usize >= b * WINDOW)
                .unwrap_or(nchunks);
            assert_eq!(f as usize, want, "window {b}");
        }
        assert_eq!(g(&[0]), vec![0]);
        assert_eq!(g(&[0, 256]), vec![0, 1]);
        assert_eq!(g(&[0, 3, 257]), vec![0, 2, 2]);
    }

    /// plan.cu's `lvl0_fill` writes the window table chunk by chunk: chunk
    /// `c` (positions `start..end`) makes `c + 1` the first chunk of every
    /// window whose first position is in `(start, end]` (every later window
    /// too when `end` is the last position), chunk 0 that of window 0. Run
    /// over every chunk in any order, the rule writes each entry once and
    /// gives `window_table`.
    #[test]
    fn the_device_rule_per_chunk_gives_the_window_table() {
        let mut seed = 0x5eed_u64;
        let mut next = move |m: u64| {
            seed = seed
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            (seed >> 33) % m
        };
        let mut cases: Vec<Vec<u32>> = vec![vec![0, 1], vec![0, 256], vec![0, 255, 257]];
        for _ in 0..200 {
            // rows of 1..=600 entries cut into chunks of at most 256
            let mut start = vec![0u32];
            for _ in 0..1 + next(40) {
                let most = if next(4) == 0 { 600 } else { 9 };
                let mut k = 1 + next(most) as u32;
                while k > 0 {
                    let len = k.min(CANONICAL_BLOCK as u32);
                    start.push(start.last().unwrap() + len);
                    k -= len;
                }
            }
            cases.push(start);
        }
        for start in cases {
            let n = *start.last().unwrap() as usize;
            let nchunks = start.len() - 1;
            let windows = n.div_ceil(WINDOW);
            let mut got = vec![None; windows + 1];
            let mut put = |b: usize, c: usize| {
                assert!(got[b].is_none(), "window {b} written twice");
                got[b] = Some(c as u32);
            };
            for c in (0..nchunks).rev() {
                let (s0, e0) = (start[c] as usize, start[c + 1] as usize);
                if c == 0 {
                    put(0, 0);
                }
                let mut b = s0 / WINDOW + 1;
                while b <= windows && (b * WINDOW <= e0 || e0 == n) {
                    put(b, c + 1);
                    b += 1;
                }
            }
            let got: Vec<u32> = got.into_iter().map(|x| x.expect("every window")).collect();
            assert_eq!(got, window_table(&start), "chunks {start:?}");
        }
    }

    #[test]
    fn col_sum_levels_count_groups_and_counters() {
        // one group: the first level is the sums, no counter
        let one = col_sum_levels(256, 2);
        assert_eq!((one.rows, one.counters), (vec![1], 0));
        // [80000, 64] f32 (two column tiles): 313 groups, then 2, then 1
        let l = col_sum_levels(80_000, 2);
        assert_eq!(l.rows, vec![313, 2, 1]);
        assert_eq!(l.cnt, vec![0, 0, 4]);
        assert_eq!(l.counters, 2 * 2 + 2);
        // 256^2 * 256 + 256 rows: three levels past the first
        let l = col_sum_levels(65_537 * 256, 2);
        assert_eq!(l.rows, vec![65_537, 257, 2, 1]);
        assert_eq!(l.cnt, vec![0, 0, 257 * 2, 259 * 2]);
        assert_eq!(l.counters, 260 * 2);
    }

    /// dense.cu's climb, run on the host with the tiles finishing in a
    /// random order: the last tile of each group sums it, and the sums are
    /// the canonical column sums; every counter ends at zero.
    #[test]
    fn col_sum_climb_in_any_order_gives_the_canonical_sums() {
        let mut seed = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        for (n, f, tile) in [
            (1usize, 3usize, 2usize),
            (300, 5, 2),
            (70_000, 3, 2),
            (65_536, 1, 1),
        ] {
            let x: Vec<f32> = (0..n * f)
                .map(|_| (next() % 2001) as f32 / 7.0 - 140.0)
                .collect();
            let tiles = f.div_ceil(tile);
            let lv = col_sum_levels(n, tiles as u64);
            let mut out: Vec<Vec<f32>> = lv
                .rows
                .iter()
                .map(|&r| vec![f32::NAN; r as usize * f])
                .collect();
            let mut counters = vec![0u32; lv.counters as usize];
            // one tile's canonical sum of rows r0.. (at most 256) of src into dst row g
            let sum = |src: &[f32],
                       r0: usize,
                       rows: usize,
                       c0: usize,
                       cols: usize,
                       dst: &mut [f32],
                       g: usize| {
                for j in c0..c0 + cols {
                    let mut acc = src[r0 * f + j];
                    for r in r0 + 1..r0 + rows {
                        acc += src[r * f + j];
                    }
                    dst[g * f + j] = acc;
                }
            };
            let ng = lv.rows[0] as usize;
            let mut order: Vec<usize> = (0..ng * tiles).collect();
            for i in (1..order.len()).rev() {
                order.swap(i, next() as usize % (i + 1));
            }
            for t in order {
                let (g, tj) = (t / tiles, t % tiles);
                let (c0, cols) = (tj * tile, tile.min(f - tj * tile));
                let rows = CANONICAL_BLOCK.min(n - g * CANONICAL_BLOCK);
                sum(&x, g * CANONICAL_BLOCK, rows, c0, cols, &mut out[0], g);
                let mut child = g;
                for i in 0..lv.rows.len() - 1 {
                    let grp = child / CANONICAL_BLOCK;
                    let first = grp * CANONICAL_BLOCK;
                    let rows = CANONICAL_BLOCK.min(lv.rows[i] as usize - first);
                    let c = &mut counters[(lv.cnt[i + 1] as usize) + grp * tiles + tj];
                    *c += 1;
                    if *c as usize != rows {
                        break;
                    }
                    *c = 0;
                    let (lo, hi) = out.split_at_mut(i + 1);
                    sum(&lo[i], first, rows, c0, cols, &mut hi[0], grp);
                    child = grp;
                }
            }
            let want = rtx_backend::ops::sum_rows(&x, n, f);
            let got = out.last().unwrap();
            assert_eq!(
                got.iter().map(|v| v.to_bits()).collect::<Vec<_>>(),
                want.iter().map(|v| v.to_bits()).collect::<Vec<_>>(),
                "[{n}, {f}]"
            );
            assert!(
                counters.iter().all(|&c| c == 0),
                "[{n}, {f}]: counters left"
            );
        }
    }
}
