//! The CPU backend: native ops on host memory (no copies through a host
//! round trip), parallel over destination rows with rayon, and
//! bit-identical for any thread count.
//!
//! ```
//! use rtx_backend::prelude::*;
//! use rtx_backend_cpu::CpuBackend;
//! let cpu = CpuBackend::new();
//! let src = cpu.upload(&[1.0f32, 2.0, 3.0, 4.0], &[2, 2]).unwrap();
//! let mut dst = cpu.zeros::<f32>(&[2, 2]).unwrap();
//! cpu.index_add(&mut dst, &[1, 1], &src).unwrap();
//! assert_eq!(cpu.download(&dst).unwrap(), [0.0, 0.0, 4.0, 6.0]);
//! ```
//!
//! **Exactness.** Index, layout and fused ops, and the bit-exact elementwise
//! ops, run the [`rtx_backend::ops`] row kernels in the canonical order:
//! the same bits as the single-threaded [`rtx_backend::reference`], for any
//! thread count. The dense ops that the [`DenseOps`] contract holds to the
//! reference only within a tolerance have two settings ([`DenseKernels`]):
//!
//! * [`DenseKernels::Fast`] (the default, [`CpuBackend::new`]): `matmul` is
//!   the `matrixmultiply` crate's SIMD GEMM (fused multiply-adds where the
//!   CPU has them), run single-threaded on tiles of output rows whose size
//!   depends on the shapes alone, so the bits are the same for every thread
//!   count and every run on one machine, but differ from the reference (and
//!   may differ between CPUs with different SIMD features).
//! * [`DenseKernels::Reference`] ([`CpuBackend::reference`]): every dense op
//!   in the reference's order, one rounding per product, bit-identical to
//!   [`rtx_backend::reference`] and to the CUDA backend's dense ops. Use it
//!   where bits must match another backend (the CUDA comparison tests).
//!
//! `sum_rows`, `head_dot`, `axpy` and `exp` are the reference kernels in both
//! settings (they are cheap, and `head_dot` must match `gather_head_dot`, a
//! fused op, bit for bit).
//!
//! **Buffers.** Tensors' buffers ([`CpuBuffer`]) come from a per-backend pool
//! and go back to it when dropped (`pool.rs`), so a training loop reuses the
//! same memory every step instead of zeroing and faulting in fresh pages.
//!
//! One room per capability: `core_ops.rs` ([`BackendCore`]: buffers,
//! upload, download), `index_ops.rs` ([`IndexOps`]: gather, scatter-add,
//! segment max), `layout_ops.rs` ([`LayoutOps`]: permute), `dense_ops.rs`
//! ([`DenseOps`]: matmul, elementwise, row sums, per-head ops, with the
//! parallel canonical sum), `gemm.rs` (the fast matrix product),
//! `fused_ops.rs` ([`FusedOps`]: fused gathers, segment softmax, the fused
//! elementwise ops), `train_ops.rs` ([`TrainOps`]: dropout, losses,
//! optimizer steps: the trait's host defaults), `pool.rs`
//! (the buffer pool), `tasks.rs` (how work is cut into rayon tasks) and
//! `convert.rs` (element-type conversion; bf16 and f16 ops computed as their
//! `f32` ops on widened inputs, rounded once).
//!
//! [`BackendCore`]: rtx_backend::BackendCore
//! [`IndexOps`]: rtx_backend::IndexOps
//! [`LayoutOps`]: rtx_backend::LayoutOps
//! [`DenseOps`]: rtx_backend::DenseOps
//! [`FusedOps`]: rtx_backend::FusedOps
//! [`TrainOps`]: rtx_backend::TrainOps

mod convert;
mod core_ops;
mod dense_ops;
mod fused_ops;
mod gemm;
mod index_ops;
mod layout_ops;
mod pool;
mod tasks;
mod train_ops;

use std::sync::Arc;

use rtx_backend::{Element, Error, Result};
use rtx_tensor::Layout;

use pool::{BufferPool, Init};
pub use pool::{CpuBuffer, MIN_POOLED_BYTES, POOL_BYTES};

/// Which kernels compute the dense ops that the [`DenseOps`](rtx_backend::DenseOps)
/// contract holds to the reference only within a tolerance (see the
/// [crate docs](crate)).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum DenseKernels {
    /// Tuned kernels (`matmul` on the `matrixmultiply` GEMM): within a
    /// tolerance of the reference; the same bits for every thread count and
    /// run on one machine.
    #[default]
    Fast,
    /// The reference's order, one rounding per product: bit-identical to
    /// [`rtx_backend::reference`] and to the CUDA backend's dense ops.
    Reference,
}

/// The CPU backend. Runs on rayon's global pool, or on a pool of its own;
/// dense kernels as [`DenseKernels`] says (fast by default).
#[derive(Debug, Default)]
pub struct CpuBackend {
    pool: Option<rayon::ThreadPool>,
    dense: DenseKernels,
    buffers: Arc<BufferPool>,
}

impl CpuBackend {
    /// A backend on rayon's global thread pool, with the fast dense kernels.
    pub fn new() -> Self {
        CpuBackend::default()
    }

    /// A backend on rayon's global thread pool whose dense ops are the
    /// reference's, bit for bit: `CpuBackend::new().with_dense(DenseKernels::Reference)`.
    pub fn reference() -> Self {
        CpuBackend::new().with_dense(DenseKernels::Reference)
    }

    /// A backend with its own pool of `threads` threads (fast dense kernels;
    /// chain [`with_dense`](Self::with_dense) for the reference ones).
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
        Ok(CpuBackend {
            pool: Some(pool),
            ..CpuBackend::default()
        })
    }

    /// This backend with the dense kernels `dense`.
    pub fn with_dense(mut self, dense: DenseKernels) -> Self {
        self.dense = dense;
        self
    }

    /// The dense kernels in use.
    pub fn dense_kernels(&self) -> DenseKernels {
        self.dense
    }

    /// Bytes of free buffers held by the backend's pool (at most [`POOL_BYTES`]).
    pub fn pooled_bytes(&self) -> usize {
        self.buffers.bytes()
    }

    /// Frees the buffers held by the backend's pool (tensors still alive are
    /// untouched and return to it when dropped).
    pub fn release_pooled(&self) {
        self.buffers.clear();
    }

    fn install<R: Send>(&self, f: impl FnOnce() -> R + Send) -> R {
        match &self.pool {
            Some(p) => p.install(f),
            None => f(),
        }
    }

    /// The buffer of a new tensor of `layout`: `numel` zeros, from the pool
    /// or reserved fallibly (a huge but valid size is
    /// [`Error::HostAllocation`], not an abort), sized from a [`Layout`]
    /// built (and overflow-checked) first.
    fn zeroed<T: Element>(&self, layout: &Layout) -> Result<CpuBuffer<T>> {
        self.buffers.buffer(layout.numel(), Init::Zeros)
    }

    /// As [`zeroed`](Self::zeroed), but a reused buffer keeps its old values:
    /// for ops that write every element.
    fn for_overwrite<T: Element>(&self, layout: &Layout) -> Result<CpuBuffer<T>> {
        self.buffers.buffer(layout.numel(), Init::Overwrite)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rtx_backend::prelude::*;
    use rtx_backend::{BTensor, IndexPlan, ops};

    rtx_backend::conformance_tests!(CpuBackend::new());

    mod one_thread {
        use super::*;
        rtx_backend::conformance_tests!(CpuBackend::with_threads(1).unwrap());
    }

    /// The model ops are the reference's kernels run in parallel: bit-identical
    /// to the single-threaded reference, for 1 and several threads (matmul
    /// with the reference dense kernels).
    #[test]
    fn model_ops_bit_identical_to_reference_for_any_thread_count() {
        use rtx_backend::workload::{indices, values};
        fn bits<T: Element>(v: &[T]) -> Vec<u64> {
            v.iter().map(|x| x.to_bits_u64()).collect()
        }
        for threads in [1usize, 3] {
            let b = CpuBackend::with_threads(threads)
                .unwrap()
                .with_dense(DenseKernels::Reference);
            for (m, k, n) in [(70usize, 40usize, 64usize), (9, 700, 5), (3000, 33, 2)] {
                let a: Vec<f32> = values(1, m * k);
                let c: Vec<f32> = values(2, k * n);
                let at = ops::transpose2(&a, m, k);
                let ct = ops::transpose2(&c, k, n);
                let want = ops::matmul(&a, &[m, k], false, &c, &[k, n], false).unwrap();
                for (ta, tb) in [(false, false), (true, false), (false, true), (true, true)] {
                    let (aa, ash) = if ta { (&at, [k, m]) } else { (&a, [m, k]) };
                    let (cc, csh) = if tb { (&ct, [n, k]) } else { (&c, [k, n]) };
                    let got = b
                        .matmul(
                            &b.upload(aa, &ash).unwrap(),
                            ta,
                            &b.upload(cc, &csh).unwrap(),
                            tb,
                        )
                        .unwrap();
                    assert_eq!(
                        bits(&b.download(&got).unwrap()),
                        bits(&want),
                        "matmul {m}x{k}x{n} ({ta},{tb}) on {threads} threads"
                    );
                }
            }
            let rows = 100_000;
            let x: Vec<f32> = values(3, rows * 3);
            let got = b.sum_rows(&b.upload(&x, &[rows, 3]).unwrap()).unwrap();
            assert_eq!(
                bits(&b.download(&got).unwrap()),
                bits(&ops::sum_rows(&x, rows, 3))
            );
            let (e, r, f) = (50_000, 3000, 4);
            let idx = indices(4, e, r, true);
            let plan = IndexPlan::new(&idx, r).unwrap();
            let z: Vec<f32> = values(5, e * f);
            let zt = b.upload(&z, &[e, f]).unwrap();
            let alpha = b.segment_softmax(&zt, &plan).unwrap();
            let ha = b.download(&alpha).unwrap();
            assert_eq!(bits(&ha), bits(&ops::segment_softmax(&z, f, &plan)));
            let g: Vec<f32> = values(6, e * f);
            let d = b
                .segment_softmax_backward(&alpha, &b.upload(&g, &[e, f]).unwrap(), &plan)
                .unwrap();
            assert_eq!(
                bits(&b.download(&d).unwrap()),
                bits(&ops::segment_softmax_backward(&ha, &g, f, &plan))
            );
            let m = b.segment_max(&zt, &plan).unwrap();
            assert_eq!(
                bits(&b.download(&m).unwrap()),
                bits(&ops::segment_max(&z, f, &plan))
            );
        }
    }

    fn bits<T: Element>(v: &[T]) -> Vec<u64> {
        v.iter().map(|x| x.to_bits_u64()).collect()
    }

    /// `op(a) @ op(b)` on `b` from row-major `[m, k]` and `[k, n]` data,
    /// stored transposed where the flags say.
    fn product<T: Element>(
        be: &CpuBackend,
        a: &[T],
        c: &[T],
        (m, k, n): (usize, usize, usize),
        (ta, tb): (bool, bool),
    ) -> Vec<T> {
        let (aa, ash) = if ta {
            (ops::transpose2(a, m, k), [k, m])
        } else {
            (a.to_vec(), [m, k])
        };
        let (cc, csh) = if tb {
            (ops::transpose2(c, k, n), [n, k])
        } else {
            (c.to_vec(), [k, n])
        };
        let got = be
            .matmul(
                &be.upload(&aa, &ash).unwrap(),
                ta,
                &be.upload(&cc, &csh).unwrap(),
                tb,
            )
            .unwrap();
        be.download(&got).unwrap()
    }

    /// The fast GEMM against the reference: every element within the
    /// classic bound of any summation order, `|got - want| <= (k + 2) * eps *
    /// sum_p |a_ip * b_pj|` (both sides are such sums), for edge shapes (`k =
    /// 0`, one row or column, sizes off the micro-kernel and task tiles, an
    /// inner dimension past one canonical block and past one task) and every
    /// transpose; and the same bits on 1, 2, 3 and 7 threads.
    fn fast_matmul_case<T: Element>(eps: f64) {
        use rtx_backend::workload::values;
        let shapes = [
            (1usize, 1usize, 1usize),
            (1, 0, 5),
            (4, 0, 1),
            (0, 3, 4),
            (3, 5, 0),
            (1, 32, 64),
            (17, 1, 9),
            (33, 31, 65),
            (70, 40, 64),
            (9, 700, 5),
            (5000, 33, 2),
            (1200, 64, 64),
            (64, 20_000, 33),
            (2, 257, 1),
        ];
        let pools: Vec<CpuBackend> = [1usize, 2, 3, 7]
            .iter()
            .map(|&t| CpuBackend::with_threads(t).unwrap())
            .collect();
        for (s, &(m, k, n)) in shapes.iter().enumerate() {
            let a: Vec<T> = values(10 + s as u64, m * k);
            let c: Vec<T> = values(50 + s as u64, k * n);
            let want = ops::matmul(&a, &[m, k], false, &c, &[k, n], false).unwrap();
            let abs = |v: &[T]| v.iter().map(|x| x.to_f64().abs()).collect::<Vec<f64>>();
            // sum_p |a_ip * b_pj|, exactly enough in f64
            let mag = ops::matmul(&abs(&a), &[m, k], false, &abs(&c), &[k, n], false).unwrap();
            for flags in [(false, false), (true, false), (false, true), (true, true)] {
                let got = product(&pools[0], &a, &c, (m, k, n), flags);
                assert_eq!(got.len(), m * n);
                for i in 0..m {
                    for j in 0..n {
                        let mag = mag[i * n + j];
                        let (g, w) = (got[i * n + j].to_f64(), want[i * n + j].to_f64());
                        let tol = (k as f64 + 2.0) * eps * mag;
                        assert!(
                            (g - w).abs() <= tol,
                            "{m}x{k}x{n} {flags:?} ({i}, {j}): {g} vs reference {w} (tol {tol})"
                        );
                    }
                }
                for (t, be) in pools.iter().enumerate().skip(1) {
                    assert_eq!(
                        bits(&product(be, &a, &c, (m, k, n), flags)),
                        bits(&got),
                        "{m}x{k}x{n} {flags:?}: pool {t} differs from 1 thread"
                    );
                }
            }
        }
    }

    #[test]
    fn fast_matmul_within_tolerance_of_reference_and_same_bits_on_any_thread_count() {
        fast_matmul_case::<f32>(f32::EPSILON as f64);
        fast_matmul_case::<f64>(f64::EPSILON);
        // the two settings: fast by default, reference on request
        assert_eq!(CpuBackend::new().dense_kernels(), DenseKernels::Fast);
        assert_eq!(
            CpuBackend::reference().dense_kernels(),
            DenseKernels::Reference
        );
    }

    /// The fast kernels are not the reference bits (else the test above
    /// would not test the fast path), and the reference setting is.
    #[test]
    fn the_settings_give_their_own_bits() {
        use rtx_backend::workload::values;
        let (m, k, n) = (64, 300, 48);
        let a: Vec<f32> = values(1, m * k);
        let c: Vec<f32> = values(2, k * n);
        let want = ops::matmul(&a, &[m, k], false, &c, &[k, n], false).unwrap();
        let fast = product(&CpuBackend::new(), &a, &c, (m, k, n), (false, false));
        let refr = product(&CpuBackend::reference(), &a, &c, (m, k, n), (false, false));
        assert_eq!(bits(&refr), bits(&want));
        assert_ne!(bits(&fast), bits(&want));
    }

    /// Reused buffers hold old values: every op that takes one must still
    /// give its exact result (here: the empty rows of a fused scatter, which
    /// its row kernel leaves alone, and a matmul with `k = 0`).
    #[test]
    fn reused_buffers_do_not_leak_old_values() {
        let b = CpuBackend::with_threads(2).unwrap();
        let (rows, f) = (4096, 8);
        let x: Vec<f32> = vec![1.0; 8 * f];
        let idx: Vec<u32> = (0..8).map(|i| (i * 512) as u32).collect();
        let plan = IndexPlan::new(&idx, rows).unwrap();
        let w: Vec<f32> = vec![1.0; 8 * 2];
        let run = |b: &CpuBackend| {
            let out = b
                .gather_scale_scatter(
                    &b.upload(&x, &[8, f]).unwrap(),
                    &(0..8).collect::<Vec<u32>>(),
                    &b.upload(&w, &[8, 2]).unwrap(),
                    &plan,
                )
                .unwrap();
            b.download(&out).unwrap()
        };
        for _ in 0..2 {
            // dirty the pool with NaNs of the output's length
            drop(b.upload(&vec![f32::NAN; rows * f], &[rows, f]).unwrap());
            assert!(b.pooled_bytes() >= rows * f * 4);
            let got = run(&b);
            assert_eq!(
                bits(&got),
                bits(&ops::gather_scale_scatter(
                    &x,
                    &(0..8).collect::<Vec<u32>>(),
                    &w,
                    2,
                    4,
                    &plan
                ))
            );
            drop(b.upload(&vec![f32::NAN; rows * f], &[rows, f]).unwrap());
            let z = b
                .matmul(
                    &b.zeros::<f32>(&[rows, 0]).unwrap(),
                    false,
                    &b.zeros::<f32>(&[0, f]).unwrap(),
                    false,
                )
                .unwrap();
            assert!(b.download(&z).unwrap().iter().all(|v| v.to_bits() == 0));
        }
        b.release_pooled();
        assert_eq!(b.pooled_bytes(), 0);
    }

    /// Shapes whose outputs overflow 64 bits, and huge but valid sizes, are
    /// error values, never panics or aborts.
    #[test]
    fn huge_shapes_are_errors() {
        let b = CpuBackend::new();
        let overflow = |r: Result<BTensor<CpuBackend, f32>>| match r {
            Err(Error::Layout(rtx_tensor::Error::Overflow { .. })) => {}
            other => panic!("want a size overflow, got {other:?}"),
        };
        let wide = b.zeros::<f32>(&[0, 1 << 62]).unwrap();
        let empty4 = IndexPlan::new(&[], 4).unwrap();
        overflow(b.segment_max(&wide, &empty4));
        overflow(b.segment_sum(&wide, &empty4));
        overflow(b.gather_scale_scatter(&wide, &[], &b.zeros(&[0, 1]).unwrap(), &empty4));
        let tall = b.zeros::<f32>(&[1 << 62, 0]).unwrap();
        overflow(b.head_dot(&tall, &b.zeros(&[1, 0]).unwrap(), 8));
        overflow(b.matmul(&tall, false, &b.zeros(&[0, 8]).unwrap(), false));
        let one = b.zeros::<f32>(&[1, 0]).unwrap();
        overflow(b.gather_head_dot(&one, &[0; 8], &one, &[0; 8], 1 << 62));
        // valid sizes the allocator refuses: an error, not an abort
        assert!(matches!(
            b.zeros::<f32>(&[1 << 40, 1 << 20]),
            Err(Error::HostAllocation { .. })
        ));
        assert!(matches!(
            IndexPlan::new(&[], usize::MAX),
            Err(Error::SizeOverflow { .. })
        ));
    }

    #[test]
    fn bit_identical_for_any_thread_count() {
        use rtx_backend::workload::{indices, values};
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
