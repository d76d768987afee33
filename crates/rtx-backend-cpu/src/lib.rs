//! The CPU reference backend: native ops on host memory (no copies through a
//! host round trip), parallel over destination rows with rayon, and
//! bit-identical to the single-threaded [`rtx_backend::reference`] for any
//! thread count, because every row follows the canonical order on its own.
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
//! One room per capability: `core_ops.rs` ([`BackendCore`]: buffers,
//! upload, download), `index_ops.rs` ([`IndexOps`]: gather, scatter-add,
//! segment max), `layout_ops.rs` ([`LayoutOps`]: permute), `dense_ops.rs`
//! ([`DenseOps`]: matmul, elementwise, row sums, per-head ops, with the
//! parallel canonical sum), `fused_ops.rs` ([`FusedOps`]: fused gathers,
//! segment softmax) and `tasks.rs` (how work is cut into rayon tasks).
//!
//! [`BackendCore`]: rtx_backend::BackendCore
//! [`IndexOps`]: rtx_backend::IndexOps
//! [`LayoutOps`]: rtx_backend::LayoutOps
//! [`DenseOps`]: rtx_backend::DenseOps
//! [`FusedOps`]: rtx_backend::FusedOps

mod core_ops;
mod dense_ops;
mod fused_ops;
mod index_ops;
mod layout_ops;
mod tasks;

use rtx_backend::{Element, Error, Result, try_vec};
use rtx_tensor::Layout;

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

/// The buffer of a new tensor of `layout`: `numel` zeros, reserved fallibly
/// (a huge but valid size is [`Error::HostAllocation`], not an abort). Every
/// buffer this backend makes comes from here or [`try_copy`](rtx_backend::try_copy), sized from a
/// [`Layout`] built (and overflow-checked) first.
fn zeroed<T: Element>(layout: &Layout) -> Result<Vec<T>> {
    try_vec(layout.numel(), T::ZERO)
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
    /// to the single-threaded reference, for 1 and several threads.
    #[test]
    fn model_ops_bit_identical_to_reference_for_any_thread_count() {
        use rtx_backend::workload::{indices, values};
        fn bits<T: Element>(v: &[T]) -> Vec<u64> {
            v.iter().map(|x| x.to_bits_u64()).collect()
        }
        for threads in [1usize, 3] {
            let b = CpuBackend::with_threads(threads).unwrap();
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
