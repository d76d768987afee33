//! `IndexPlan`: the CSR of the transposed selection matrix S^T.

use rayon::prelude::*;

use crate::host_alloc::{try_copy, try_vec};
use crate::{Error, Result};

mod radix;

/// Entries per part of a list sorted in parallel (shorter lists: one part).
const PAR_CHUNK: usize = 1 << 16;

/// Checks every index against `rows` before any work.
///
/// # Errors
/// [`Error::IndexOutOfRange`] naming the first bad position, its value and the bound.
pub fn check_indices(idx: &[u32], rows: usize) -> Result<()> {
    match idx.iter().position(|&i| i as usize >= rows) {
        Some(position) => Err(Error::IndexOutOfRange {
            position,
            value: u64::from(idx[position]),
            bound: rows,
        }),
        None => Ok(()),
    }
}

/// The first position whose index is `>= rows`, searched in parallel parts
/// (each part sequentially: far cheaper per entry than an item-wise search).
fn first_out_of_range(idx: &[u32], rows: usize) -> Option<usize> {
    idx.par_chunks(PAR_CHUNK)
        .enumerate()
        .filter_map(|(c, part)| {
            part.iter()
                .position(|&i| i as usize >= rows)
                .map(|p| c * PAR_CHUNK + p)
        })
        .min()
}

/// For each destination row, the source positions that add into it, in
/// increasing order: the CSR of S^T, where `S[i, idx[i]] = 1`.
///
/// Built in O(E + R) by a stable counting sort that validates every index
/// first; long lists by a parallel stable radix sort (rayon) with the same
/// result. A static graph builds it once and reuses it for every
/// scatter and segment op (pass `&plan` as the indices).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IndexPlan {
    /// `offsets[r]..offsets[r + 1]` indexes `positions` for row `r`; `rows + 1`
    /// entries, so never empty (the row count is `offsets.len() - 1`).
    offsets: Vec<u64>,
    positions: Vec<u32>,
}

impl IndexPlan {
    /// Builds the plan of `idx` into `rows` destination rows.
    ///
    /// # Errors
    /// [`Error::IndexOutOfRange`] for the first index `>= rows` (position,
    /// value, bound); [`Error::TooManyIndices`] past `u32::MAX` entries;
    /// [`Error::SizeOverflow`] when `rows + 1` offsets overflow `usize`;
    /// [`Error::HostAllocation`] when the `rows + 1` offsets cannot be allocated.
    pub fn new(idx: &[u32], rows: usize) -> Result<IndexPlan> {
        // below 4 parts the sequential sort is as fast
        let parts = (idx.len() / PAR_CHUNK).min(4 * rayon::current_num_threads());
        let chunks = if parts < 4 { 1 } else { parts };
        IndexPlan::with_chunks(idx, rows, chunks)
    }

    /// [`IndexPlan::new`] with the list cut into `chunks` parts sorted in
    /// parallel (0 or 1: the sequential counting sort). Every cut gives the
    /// same plan: a stable sort by row is unique.
    fn with_chunks(idx: &[u32], rows: usize, chunks: usize) -> Result<IndexPlan> {
        if let Some(position) = first_out_of_range(idx, rows) {
            return Err(Error::IndexOutOfRange {
                position,
                value: u64::from(idx[position]),
                bound: rows,
            });
        }
        if idx.len() > u32::MAX as usize {
            return Err(Error::TooManyIndices {
                len: idx.len(),
                max: u32::MAX as usize,
            });
        }
        let n_offsets = rows.checked_add(1).ok_or_else(|| Error::SizeOverflow {
            op: "IndexPlan::new",
            what: format!("the offsets of {rows} rows ({rows} + 1)"),
        })?;
        if chunks > 1 {
            return radix::plan(idx, rows, n_offsets, chunks);
        }
        let mut offsets = try_vec(n_offsets, 0u64)?;
        for &i in idx {
            offsets[i as usize + 1] += 1;
        }
        for r in 0..rows {
            offsets[r + 1] += offsets[r];
        }
        let mut cursor = try_copy(&offsets[..rows])?;
        let mut positions = try_vec(idx.len(), 0u32)?;
        for (p, &i) in idx.iter().enumerate() {
            let c = &mut cursor[i as usize];
            positions[*c as usize] = p as u32;
            *c += 1;
        }
        Ok(IndexPlan { offsets, positions })
    }

    /// Number of destination rows.
    pub fn rows(&self) -> usize {
        self.offsets.len() - 1
    }

    /// Number of index entries (source rows).
    pub fn len(&self) -> usize {
        self.positions.len()
    }

    /// Whether there are no entries.
    pub fn is_empty(&self) -> bool {
        self.positions.is_empty()
    }

    /// Row offsets into [`IndexPlan::positions`] (`rows + 1` entries).
    pub fn offsets(&self) -> &[u64] {
        &self.offsets
    }

    /// Source positions grouped by destination row, increasing within a row.
    pub fn positions(&self) -> &[u32] {
        &self.positions
    }

    /// The source positions that add into row `r`, increasing.
    ///
    /// # Panics
    /// When `r >= rows`.
    pub fn row(&self, r: usize) -> &[u32] {
        &self.positions[self.offsets[r] as usize..self.offsets[r + 1] as usize]
    }

    /// The largest number of contributions any row receives.
    pub fn max_row_len(&self) -> usize {
        self.offsets
            .windows(2)
            .map(|w| (w[1] - w[0]) as usize)
            .max()
            .unwrap_or(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_parallel_sort_builds_the_sequential_plan() {
        use crate::workload::index;
        for (n, rows, hub) in [
            (100_000usize, 1usize, false),
            (300_000, 7, true),
            (200_000, 1 << 20, true),
            (250_000, 5000, false),
            (70_000, 3_000_000, false),
            (0, 10, false),
        ] {
            let idx: Vec<u32> = (0..n as u64).map(|k| index(9, k, rows, hub)).collect();
            let seq = IndexPlan::with_chunks(&idx, rows, 1).unwrap();
            for chunks in [2, 3, 16, 61] {
                let par = IndexPlan::with_chunks(&idx, rows, chunks).unwrap();
                assert!(par == seq, "{n} entries into {rows} rows, {chunks} parts");
            }
        }
        let mut idx = vec![3u32; 200_000];
        idx[150_001] = 9;
        let e = IndexPlan::with_chunks(&idx, 9, 8).unwrap_err();
        assert!(matches!(
            e,
            Error::IndexOutOfRange {
                position: 150_001,
                value: 9,
                bound: 9
            }
        ));
    }

    #[test]
    fn csr_of_transpose() {
        let p = IndexPlan::new(&[2, 0, 2, 2, 1, 0], 4).unwrap();
        assert_eq!(p.offsets(), &[0, 2, 3, 6, 6]);
        assert_eq!(p.row(0), &[1, 5]);
        assert_eq!(p.row(1), &[4]);
        assert_eq!(p.row(2), &[0, 2, 3]);
        assert_eq!(p.row(3), &[] as &[u32]);
        assert_eq!(p.max_row_len(), 3);
        assert_eq!(p.len(), 6);
    }

    #[test]
    fn out_of_range_names_position_value_bound() {
        let e = IndexPlan::new(&[0, 1, 9, 12], 4).unwrap_err();
        assert!(
            matches!(
                e,
                Error::IndexOutOfRange {
                    position: 2,
                    value: 9,
                    bound: 4
                }
            ),
            "{e}"
        );
        assert_eq!(
            e.to_string(),
            "index out of range: idx[2] = 9, but there are only 4 rows"
        );
    }

    #[test]
    fn empty() {
        let p = IndexPlan::new(&[], 3).unwrap();
        assert!(p.is_empty());
        assert_eq!(p.offsets(), &[0, 0, 0, 0]);
        assert_eq!(p.rows(), 3);
        let p = IndexPlan::new(&[], 0).unwrap();
        assert_eq!((p.rows(), p.offsets()), (0, &[0u64][..]));
        assert_eq!(p.max_row_len(), 0);
    }

    #[test]
    fn huge_row_counts_are_errors_not_panics() {
        let e = IndexPlan::new(&[], usize::MAX).unwrap_err();
        assert!(matches!(e, Error::SizeOverflow { .. }), "{e}");
        // valid arithmetic, but 8 * 2^60 bytes of offsets: refused, no abort
        let e = IndexPlan::new(&[], 1 << 60).unwrap_err();
        assert!(matches!(e, Error::HostAllocation { .. }), "{e}");
    }
}
