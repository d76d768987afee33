//! The CPU reference backend: native ops on host memory (no copies through a
//! host round trip), parallel over destination rows with rayon, and
//! bit-identical to the single-threaded [`rtx_backend::reference`] for any
//! thread count, because every row follows the canonical order on its own.
//!
//! ```
//! use rtx_backend::Backend;
//! use rtx_backend_cpu::CpuBackend;
//! let cpu = CpuBackend::new();
//! let src = cpu.upload(&[1.0f32, 2.0, 3.0, 4.0], &[2, 2]).unwrap();
//! let mut dst = cpu.zeros::<f32>(&[2, 2]).unwrap();
//! cpu.index_add(&mut dst, &[1, 1], &src).unwrap();
//! assert_eq!(cpu.download(&dst).unwrap(), [0.0, 0.0, 4.0, 6.0]);
//! ```

use rayon::prelude::*;
use rtx_backend::order::add_row_sum;
use rtx_backend::{
    BTensor, Backend, Element, Error, IndexPlan, Result, Tensor, check_index_add, dims2, reference,
};
use rtx_tensor::{Layout, PermuteKind};

/// The CPU backend. Runs on rayon's global pool, or on a pool of its own.
#[derive(Debug, Default)]
pub struct CpuBackend {
    pool: Option<rayon::ThreadPool>,
}

impl CpuBackend {
    /// A backend on rayon's global thread pool.
    pub fn new() -> Self {
        CpuBackend { pool: None }
    }

    /// A backend with its own pool of `threads` threads.
    ///
    /// # Errors
    /// When the pool cannot be built (the OS refuses threads).
    pub fn with_threads(threads: usize) -> Result<Self> {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .map_err(|e| Error::Backend {
                backend: "cpu".into(),
                source: Box::new(e),
            })?;
        Ok(CpuBackend { pool: Some(pool) })
    }

    fn install<R: Send>(&self, f: impl FnOnce() -> R + Send) -> R {
        match &self.pool {
            Some(p) => p.install(f),
            None => f(),
        }
    }
}

/// Rows per rayon task: enough work per task to amortize scheduling.
const MIN_ROWS_PER_TASK: usize = 64;

impl Backend for CpuBackend {
    type Buffer<T: Element> = Vec<T>;

    fn name(&self) -> String {
        "cpu".into()
    }

    fn upload<T: Element>(&self, data: &[T], shape: &[usize]) -> Result<BTensor<Self, T>> {
        let layout = Layout::contiguous(shape)?;
        if layout.numel() != data.len() {
            return Err(Error::LengthMismatch {
                len: data.len(),
                shape: shape.to_vec(),
                expected: layout.numel(),
            });
        }
        Ok(Tensor::new(data.to_vec(), layout))
    }

    fn download<T: Element>(&self, t: &BTensor<Self, T>) -> Result<Vec<T>> {
        Ok(t.storage().clone())
    }

    fn zeros<T: Element>(&self, shape: &[usize]) -> Result<BTensor<Self, T>> {
        let layout = Layout::contiguous(shape)?;
        Ok(Tensor::new(vec![T::ZERO; layout.numel()], layout))
    }

    fn make_unique<T: Element>(&self, t: &mut BTensor<Self, T>) -> Result<()> {
        if !t.is_unique() {
            *t = Tensor::new(t.storage().clone(), t.layout().clone());
        }
        Ok(())
    }

    fn index_select<T: Element>(
        &self,
        src: &BTensor<Self, T>,
        idx: &[u32],
    ) -> Result<BTensor<Self, T>> {
        let (rows, f) = dims2("index_select", "src", src.layout())?;
        reference::check_indices(idx, rows)?;
        let s = src.storage();
        let mut out = vec![T::ZERO; idx.len() * f];
        if f > 0 {
            self.install(|| {
                out.par_chunks_mut(f)
                    .with_min_len(MIN_ROWS_PER_TASK)
                    .zip(idx.par_iter())
                    .for_each(|(o, &i)| {
                        o.copy_from_slice(&s[i as usize * f..(i as usize + 1) * f]);
                    });
            });
        }
        Ok(Tensor::new(out, Layout::contiguous(&[idx.len(), f])?))
    }

    fn index_add_planned<T: Element>(
        &self,
        dst: &mut BTensor<Self, T>,
        plan: &IndexPlan,
        src: &BTensor<Self, T>,
    ) -> Result<()> {
        let f = check_index_add(dst.layout(), plan, src.layout())?;
        if f == 0 || plan.is_empty() {
            return Ok(());
        }
        self.make_unique(dst)?;
        let s = src.storage();
        let d = dst.storage_mut().expect("unique after make_unique");
        self.install(|| {
            d.par_chunks_mut(f)
                .with_min_len(MIN_ROWS_PER_TASK)
                .enumerate()
                .for_each_init(Vec::new, |scratch, (r, row)| {
                    add_row_sum(row, plan.row(r), s, scratch);
                });
        });
        Ok(())
    }

    fn permute<T: Element>(
        &self,
        t: &BTensor<Self, T>,
        perm: &[usize],
    ) -> Result<BTensor<Self, T>> {
        let plan = t.layout().plan_permute(perm)?;
        let data = t.storage();
        let out = match plan.kind {
            PermuteKind::Relabel => return Ok(t.relabel(plan.output)),
            PermuteKind::Transpose {
                rows, cols, inner, ..
            } => {
                let mut out = vec![T::ZERO; data.len()];
                // one output row (b, c) per task: out[b][c][r][:] = in[b][r][c][:]
                self.install(|| {
                    out.par_chunks_mut(rows * inner)
                        .enumerate()
                        .for_each(|(bc, o)| {
                            let (b, c) = (bc / cols, bc % cols);
                            for r in 0..rows {
                                let s = ((b * rows + r) * cols + c) * inner;
                                o[r * inner..(r + 1) * inner].copy_from_slice(&data[s..s + inner]);
                            }
                        });
                });
                out
            }
            PermuteKind::Permute { shape, perm } => rtx_tensor::permute_host(data, &shape, &perm)?,
        };
        Ok(Tensor::new(out, plan.output))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    rtx_backend::conformance_tests!(CpuBackend::new());

    mod one_thread {
        use super::*;
        rtx_backend::conformance_tests!(CpuBackend::with_threads(1).unwrap());
    }

    #[test]
    fn bit_identical_for_any_thread_count() {
        use rtx_backend::conformance::{indices, values};
        let (rows, e, f) = (3000, 300_000, 8);
        let idx = indices(1, e, rows, true);
        let src: Vec<f32> = values(3, e * f);
        let run = |threads: usize| {
            let b = CpuBackend::with_threads(threads).unwrap();
            let mut d = b.zeros::<f32>(&[rows, f]).unwrap();
            b.index_add(&mut d, &idx, &b.upload(&src, &[e, f]).unwrap())
                .unwrap();
            b.download(&d)
                .unwrap()
                .iter()
                .map(|x| x.to_bits())
                .collect::<Vec<_>>()
        };
        let one = run(1);
        for t in [2, 3, 7] {
            assert_eq!(run(t), one, "{t} threads differ from 1");
        }
    }
}
