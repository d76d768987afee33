//! The sizes and layout of a scatter plan built on the device
//! (kernels/plan.cu, run by `indices::build`): how many radix passes, how
//! big each table may get, where each level's tables sit, and the words of
//! the info block the kernels write. Plain host arithmetic, so it is tested
//! against the host builder (`levels`) on any machine.

use crate::kernels::abi::{BLOCK, PLAN_DIGIT_BITS, PLAN_HI_LEVELS, PLAN_ITEMS};

/// Items of one tile of the sort and of the scans (`PLAN_TILE` in plan.cu).
pub(crate) const TILE: u64 = BLOCK as u64 * PLAN_ITEMS;

/// Words (u64) of the info block; the offsets of its fields follow
/// plan.cu's `INFO_*` macros.
pub(crate) const INFO_WORDS: usize = 24;
/// `!p` for the first position `p` whose index is out of range; 0: none.
pub(crate) const INFO_BAD: usize = 0;
/// The largest index.
pub(crate) const INFO_MAX: usize = 1;
/// The number of levels.
pub(crate) const INFO_LEVELS: usize = 2;
/// Nonzero when a plan would need more levels than there is room for.
pub(crate) const INFO_OVERFLOW: usize = 4;
/// `+ l`: the chunks of level `l`.
pub(crate) const INFO_CHUNKS: usize = 8;
/// `+ l`: the values level `l` reads (`l >= 1`).
pub(crate) const INFO_VALUES: usize = 16;

/// `u64`s of plan.cu's `PlanItem`, one build of a batch (`indices::batch`
/// writes them in the struct's field order; every field a `u64`, so no
/// padding).
pub(crate) const PLAN_ITEM_WORDS: usize = 30;

/// The passes of the radix sort of indices below `rows` (`rows >= 1`):
/// `(passes, digit bits)`, at least one pass of at least one bit.
pub(crate) fn radix(rows: u64) -> (u32, u32) {
    let bits = 64 - rows.saturating_sub(1).leading_zeros();
    let passes = bits.div_ceil(PLAN_DIGIT_BITS).max(1);
    (passes, bits.div_ceil(passes).max(1))
}

/// Tiles of `n` items.
pub(crate) fn tiles(n: u64) -> u64 {
    n.div_ceil(TILE)
}

/// Lists of fewer entries than this sort in tiles of [`SHORT_SORT_ITEMS`]
/// rounds of a block (so on more blocks); longer ones in tiles of `TILE`.
pub(crate) const SHORT_SORT_ENTRIES: u64 = 1 << 20;

/// Rounds of a block in a tile of a short list's radix passes.
pub(crate) const SHORT_SORT_ITEMS: u32 = 4;

/// Rounds of a block in a tile of the radix passes over `n` entries
/// (`plan_hist` / `plan_rank`'s `items`).
pub(crate) fn sort_items(n: u64) -> u32 {
    if n < SHORT_SORT_ENTRIES {
        SHORT_SORT_ITEMS
    } else {
        PLAN_ITEMS as u32
    }
}

/// Tiles of the radix passes over `n` entries.
pub(crate) fn sort_tiles(n: u64) -> u64 {
    n.div_ceil(u64::from(BLOCK) * u64::from(sort_items(n)))
}

/// At most this many chunks at level 0 of `n` entries into `rows` rows:
/// every non-empty row has one chunk plus one per full block.
pub(crate) fn level0_bound(n: u64, rows: u64) -> u64 {
    n.min(rows) + n / crate::kernels::abi::CANONICAL_BLOCK as u64 + 1
}

/// At most this many values (and chunks) at level `l >= 1` of an `n`-entry
/// plan: a row of `k > 256` values has `ceil(k / 256) < k / 128` chunks.
pub(crate) fn hi_vb(n: u64, l: u32) -> u64 {
    (n >> (7 * l)) + 1
}

/// Where level `l >= 1`'s tables start in the region of the higher levels:
/// each level is `start[vb + 1], row[vb], slot[vb]`.
pub(crate) fn hi_offset(n: u64, l: u32) -> u64 {
    (1..l).map(|m| 3 * hi_vb(n, m) + 1).sum()
}

/// `u32`s of the region of the higher levels.
pub(crate) fn hi_len(n: u64) -> u64 {
    hi_offset(n, PLAN_HI_LEVELS + 1)
}

/// Entries (three `u32` each) of the lists of rows that still have several
/// chunks: at most `n / 257` rows have more than 256 values.
pub(crate) fn list_len(n: u64) -> u64 {
    n / crate::kernels::abi::CANONICAL_BLOCK as u64 + 1
}

/// Rows past which the plan is built for `max + 1` rows (one more readback)
/// rather than the destination's, so the offsets stay proportional to the list.
pub(crate) fn rows_direct_limit(n: u64) -> u64 {
    (1u64 << 24).max(4 * n)
}

/// Offsets of regions of `sizes` bytes in one allocation, each aligned to
/// 256 bytes, and the total: the build's scratch in one allocation.
pub(crate) fn carve(sizes: &[u64]) -> (u64, Vec<u64>) {
    let mut at = Vec::with_capacity(sizes.len());
    let mut total = 0u64;
    for &s in sizes {
        at.push(total);
        total += s.div_ceil(256) * 256;
    }
    (total, at)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::indices::levels::build_levels;
    use rtx_backend::IndexPlan;
    use rtx_backend::workload::indices;

    #[test]
    fn short_lists_sort_in_smaller_tiles() {
        assert_eq!(sort_items(0), SHORT_SORT_ITEMS);
        assert_eq!(sort_tiles(0), 0);
        assert_eq!(sort_tiles(1), 1);
        // 169k entries: tiles of 1,024 instead of 4,096
        assert_eq!(sort_tiles(168_960), 165);
        assert_eq!(tiles(168_960), 42);
        assert_eq!(sort_items(SHORT_SORT_ENTRIES - 1), SHORT_SORT_ITEMS);
        assert_eq!(sort_items(SHORT_SORT_ENTRIES), PLAN_ITEMS as u32);
        assert_eq!(sort_tiles(SHORT_SORT_ENTRIES), tiles(SHORT_SORT_ENTRIES));
    }

    #[test]
    fn plan_item_words_are_plan_cus_fields() {
        let src = include_str!("../../../../kernels/plan.cu");
        let body = src
            .split("struct PlanItem {")
            .nth(1)
            .and_then(|s| s.split("};").next())
            .expect("plan.cu declares struct PlanItem");
        let mut words = 0;
        for line in body.lines() {
            let decl = line.split("//").next().unwrap_or("").trim();
            let Some(fields) = decl.strip_prefix("u64 ") else {
                assert!(decl.is_empty(), "a PlanItem field not a u64: {decl}");
                continue;
            };
            for f in fields.trim_end_matches(';').split(',') {
                words += match f.trim().split_once('[') {
                    Some((_, n)) => n.trim_end_matches(']').parse::<usize>().unwrap(),
                    None => 1,
                };
            }
        }
        assert_eq!(words, PLAN_ITEM_WORDS);
    }

    #[test]
    fn radix_passes_cover_the_bits() {
        assert_eq!(radix(1), (1, 1));
        assert_eq!(radix(2), (1, 1));
        assert_eq!(radix(256), (1, 8));
        assert_eq!(radix(2048), (1, 11));
        assert_eq!(radix(2049), (2, 6));
        assert_eq!(radix(1_000_000), (2, 10));
        assert_eq!(radix(1 << 22), (2, 11));
        assert_eq!(radix((1 << 22) + 1), (3, 8));
        assert_eq!(radix(1 << 32), (3, 11));
        for rows in [1u64, 3, 17, 4096, 70_000, 1 << 31, (1 << 32) + 5] {
            let (p, d) = radix(rows);
            assert!(d <= PLAN_DIGIT_BITS);
            assert!(
                u64::from(p * d) >= 64 - u64::from((rows - 1).leading_zeros()),
                "{rows}"
            );
        }
    }

    /// The bounds hold for the tables the host builds (the device builds the same).
    #[test]
    fn table_bounds_hold() {
        let cases: Vec<(Vec<u32>, usize)> = vec![
            (vec![0; 256 * 256 * 3 + 7], 1),
            (vec![5; 257], 9),
            (indices(3, 100_000, 50, true), 50),
            (indices(4, 200_000, 100_000, true), 100_000),
            (indices(5, 70_000, 3, false), 3),
        ];
        for (idx, rows) in cases {
            let n = idx.len() as u64;
            let lv = build_levels(&IndexPlan::new(&idx, rows).unwrap());
            assert!(lv.levels[0].len() as u64 <= level0_bound(n, rows as u64));
            for (l, level) in lv.levels.iter().enumerate().skip(1) {
                let vb = hi_vb(n, l as u32);
                assert!(lv.values[l] as u64 <= vb, "level {l}");
                assert!(level.len() as u64 <= vb, "level {l}");
            }
            assert!(lv.levels.len() <= 1 + PLAN_HI_LEVELS as usize);
            let l0 = &lv.levels[0];
            let mut multi: Vec<u32> = (0..l0.len())
                .filter(|&c| l0.slot[c] != crate::indices::levels::FINAL)
                .map(|c| l0.row[c])
                .collect();
            multi.dedup();
            assert!(multi.len() as u64 <= list_len(n));
        }
        assert_eq!(hi_offset(1 << 20, 1), 0);
        assert_eq!(hi_offset(1 << 20, 2), 3 * ((1 << 13) + 1) + 1);
    }

    #[test]
    fn carved_regions_are_aligned_and_disjoint() {
        let sizes = [4u64, 0, 1000, 256, 12 * 7, 1];
        let (total, at) = carve(&sizes);
        assert_eq!(at, [0, 256, 256, 1280, 1536, 1792]);
        assert_eq!(total, 2048);
        for (i, (&a, &s)) in at.iter().zip(&sizes).enumerate() {
            assert_eq!(a % 256, 0);
            let end = at.get(i + 1).copied().unwrap_or(total);
            assert!(a + s <= end, "region {i}");
        }
    }
}
