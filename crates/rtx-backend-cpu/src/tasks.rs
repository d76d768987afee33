//! How the ops cut work into rayon tasks: enough work per task to amortize
//! scheduling. Task sizes only decide which thread computes an element, never
//! how, so results are bit-identical for any thread count.

use rayon::prelude::*;

use crate::CpuBackend;

/// Rows per rayon task: enough work per task to amortize scheduling.
pub(crate) const MIN_ROWS_PER_TASK: usize = 64;

/// Elements per rayon task of elementwise ops.
pub(crate) const ELEMS_PER_TASK: usize = 16 * 1024;

impl CpuBackend {
    /// The per-row loop of the row ops: `row(i, out_row)` for every `f`-wide
    /// row `i` of `out`, in parallel on the backend's pool, at least
    /// `min_rows` rows per task. Nothing when `f == 0` (no element to write).
    pub(crate) fn par_rows<T: Send>(
        &self,
        out: &mut [T],
        f: usize,
        min_rows: usize,
        row: impl Fn(usize, &mut [T]) + Sync + Send,
    ) {
        self.par_rows_with(out, f, min_rows, || (), |(), i, o| row(i, o));
    }

    /// [`par_rows`](Self::par_rows) with a scratch value per task, made by
    /// `init` and passed to every row of the task: `row(scratch, i, out_row)`.
    pub(crate) fn par_rows_with<T: Send, S>(
        &self,
        out: &mut [T],
        f: usize,
        min_rows: usize,
        init: impl Fn() -> S + Sync + Send,
        row: impl Fn(&mut S, usize, &mut [T]) + Sync + Send,
    ) {
        if f == 0 {
            return;
        }
        self.install(|| {
            out.par_chunks_mut(f)
                .with_min_len(min_rows)
                .enumerate()
                .for_each_init(init, |s, (i, o)| row(s, i, o));
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn par_rows_visits_every_row_once_with_its_index() {
        for threads in [1, 3] {
            let b = CpuBackend::with_threads(threads).unwrap();
            let (rows, f) = (1000, 3);
            let mut out = vec![0u64; rows * f];
            b.par_rows(&mut out, f, 7, |i, o| {
                for (j, v) in o.iter_mut().enumerate() {
                    *v += (i * 10 + j) as u64 + 1;
                }
            });
            let want: Vec<u64> = (0..rows * f)
                .map(|e| ((e / f) * 10 + e % f) as u64 + 1)
                .collect();
            assert_eq!(out, want, "{threads} threads");
            // a scratch per task, rows of one task in order
            let mut seen = vec![0usize; rows];
            b.par_rows_with(&mut seen, 1, 50, Vec::new, |s: &mut Vec<usize>, i, o| {
                assert!(
                    s.last().is_none_or(|&l| l < i),
                    "rows out of order in a task"
                );
                s.push(i);
                o[0] = s.len();
            });
            assert!(seen.iter().all(|&n| n >= 1));
        }
        // no row to write: nothing runs (chunks of 0 elements would panic)
        let b = CpuBackend::new();
        let mut empty: Vec<f32> = Vec::new();
        b.par_rows(&mut empty, 0, 1, |_, _| panic!("no row"));
    }
}
