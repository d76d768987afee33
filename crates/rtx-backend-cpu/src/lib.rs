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

mod model_ops;

use rayon::prelude::*;
use rtx_backend::order::add_row_sum;
use rtx_backend::prelude::*;
use rtx_backend::{
    BTensor, Binary, Element, Error, IndexPlan, Result, Tensor, Unary, check_index_add, dims2, ops,
    reference, try_copy, try_vec,
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

/// The buffer of a new tensor of `layout`: `numel` zeros, reserved fallibly
/// (a huge but valid size is [`Error::HostAllocation`], not an abort). Every
/// buffer this backend makes comes from here or [`try_copy`], sized from a
/// [`Layout`] built (and overflow-checked) first.
fn zeroed<T: Element>(layout: &Layout) -> Result<Vec<T>> {
    try_vec(layout.numel(), T::ZERO)
}

impl BackendCore for CpuBackend {
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
        Ok(Tensor::new(try_copy(data)?, layout))
    }

    fn download<T: Element>(&self, t: &BTensor<Self, T>) -> Result<Vec<T>> {
        try_copy(t.storage())
    }

    fn zeros<T: Element>(&self, shape: &[usize]) -> Result<BTensor<Self, T>> {
        let layout = Layout::contiguous(shape)?;
        Ok(Tensor::new(zeroed(&layout)?, layout))
    }

    fn make_unique<T: Element>(&self, t: &mut BTensor<Self, T>) -> Result<()> {
        if !t.is_unique() {
            *t = Tensor::new(try_copy(t.storage())?, t.layout().clone());
        }
        Ok(())
    }
}

impl IndexOps for CpuBackend {
    fn index_select<T: Element>(
        &self,
        src: &BTensor<Self, T>,
        idx: &[u32],
    ) -> Result<BTensor<Self, T>> {
        let (rows, f) = dims2("index_select", "src", src.layout())?;
        reference::check_indices(idx, rows)?;
        let layout = Layout::contiguous(&[idx.len(), f])?;
        let s = src.storage();
        let mut out = zeroed(&layout)?;
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
        Ok(Tensor::new(out, layout))
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

    fn segment_max<T: Element>(
        &self,
        x: &BTensor<Self, T>,
        plan: &IndexPlan,
    ) -> Result<BTensor<Self, T>> {
        let (_, f) = ops::check_segment("segment_max", x.shape(), plan)?;
        let layout = Layout::contiguous(&[plan.rows(), f])?;
        let xs = x.storage();
        let mut out = zeroed(&layout)?;
        if f > 0 {
            self.install(|| {
                out.par_chunks_mut(f)
                    .with_min_len(MIN_ROWS_PER_TASK)
                    .enumerate()
                    .for_each(|(r, o)| {
                        ops::segment_max_row(
                            plan.row(r),
                            |p| &xs[p as usize * f..(p as usize + 1) * f],
                            o,
                        );
                    });
            });
        }
        Ok(Tensor::new(out, layout))
    }
}

impl LayoutOps for CpuBackend {
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
                let mut out = try_vec(data.len(), T::ZERO)?;
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

impl DenseOps for CpuBackend {
    fn matmul<T: Element>(
        &self,
        a: &BTensor<Self, T>,
        trans_a: bool,
        b: &BTensor<Self, T>,
        trans_b: bool,
    ) -> Result<BTensor<Self, T>> {
        let (m, k, n) = ops::check_matmul(a.shape(), trans_a, b.shape(), trans_b)?;
        let layout = Layout::contiguous(&[m, n])?;
        let mut out = zeroed(&layout)?;
        let (xa, xb) = (a.storage(), b.storage());
        self.install(|| model_ops::matmul(xa, trans_a, xb, trans_b, m, k, n, &mut out))?;
        Ok(Tensor::new(out, layout))
    }

    fn unary<T: Element>(&self, op: Unary, x: &BTensor<Self, T>) -> Result<BTensor<Self, T>> {
        let xs = x.storage();
        let mut out = zeroed(x.layout())?;
        self.install(|| {
            out.par_chunks_mut(model_ops::ELEMS_PER_TASK)
                .zip(xs.par_chunks(model_ops::ELEMS_PER_TASK))
                .for_each(|(o, x)| ops::unary_slice(op, x, o));
        });
        Ok(Tensor::new(out, x.layout().clone()))
    }

    fn unary_backward<T: Element>(
        &self,
        op: Unary,
        x: &BTensor<Self, T>,
        grad: &BTensor<Self, T>,
    ) -> Result<BTensor<Self, T>> {
        ops::check_same("unary_backward", x.shape(), grad.shape())?;
        let (xs, gs) = (x.storage(), grad.storage());
        let mut out = zeroed(x.layout())?;
        let c = model_ops::ELEMS_PER_TASK;
        self.install(|| {
            out.par_chunks_mut(c)
                .zip(xs.par_chunks(c))
                .zip(gs.par_chunks(c))
                .for_each(|((o, x), g)| ops::unary_backward_slice(op, x, g, o));
        });
        Ok(Tensor::new(out, x.layout().clone()))
    }

    fn binary<T: Element>(
        &self,
        op: Binary,
        a: &BTensor<Self, T>,
        b: &BTensor<Self, T>,
    ) -> Result<BTensor<Self, T>> {
        let (f, broadcast) = ops::check_binary(op, a.shape(), b.shape())?;
        let (xa, xb) = (a.storage(), b.storage());
        let mut out = zeroed(a.layout())?;
        self.install(|| {
            if broadcast {
                if let Some(rows) = model_ops::ELEMS_PER_TASK.checked_div(f) {
                    let rows = rows.max(1);
                    out.par_chunks_mut(f)
                        .with_min_len(rows)
                        .zip(xa.par_chunks(f))
                        .for_each(|(o, x)| ops::binary_slice(op, x, xb, o));
                }
            } else {
                let c = model_ops::ELEMS_PER_TASK;
                out.par_chunks_mut(c)
                    .zip(xa.par_chunks(c))
                    .zip(xb.par_chunks(c))
                    .for_each(|((o, x), y)| ops::binary_slice(op, x, y, o));
            }
        });
        Ok(Tensor::new(out, a.layout().clone()))
    }

    fn axpy<T: Element>(
        &self,
        y: &mut BTensor<Self, T>,
        alpha: f64,
        x: &BTensor<Self, T>,
    ) -> Result<()> {
        ops::check_same("axpy", y.shape(), x.shape())?;
        self.make_unique(y)?;
        let xs = x.storage();
        let ys = y.storage_mut().expect("unique after make_unique");
        let alpha = T::from_f64(alpha);
        let c = model_ops::ELEMS_PER_TASK;
        self.install(|| {
            ys.par_chunks_mut(c)
                .zip(xs.par_chunks(c))
                .for_each(|(y, x)| ops::axpy_slice(y, alpha, x));
        });
        Ok(())
    }

    fn sum_rows<T: Element>(&self, x: &BTensor<Self, T>) -> Result<BTensor<Self, T>> {
        let (n, f) = dims2("sum_rows", "x", x.layout())?;
        let layout = Layout::contiguous(&[1, f])?;
        let xs = x.storage();
        let mut out = zeroed(&layout)?;
        self.install(|| {
            model_ops::par_accumulate(n, &mut out, |p, acc, first| {
                let r = &xs[p * f..(p + 1) * f];
                if first {
                    acc.copy_from_slice(r);
                } else {
                    for (o, &v) in acc.iter_mut().zip(r) {
                        *o = *o + v;
                    }
                }
            })
        })?;
        Ok(Tensor::new(out, layout))
    }

    fn head_dot<T: Element>(
        &self,
        a: &BTensor<Self, T>,
        b: &BTensor<Self, T>,
        heads: usize,
    ) -> Result<BTensor<Self, T>> {
        let (n, h, c, b_rows) = ops::check_head_dot(a.shape(), b.shape(), heads)?;
        let (xa, xb) = (a.storage(), b.storage());
        let f = h * c;
        let layout = Layout::contiguous(&[n, h])?;
        let mut out = zeroed(&layout)?;
        self.install(|| {
            out.par_chunks_mut(h)
                .with_min_len(MIN_ROWS_PER_TASK)
                .enumerate()
                .for_each(|(i, o)| {
                    let br = if b_rows == 1 { 0 } else { i };
                    ops::head_dot_row(&xa[i * f..(i + 1) * f], &xb[br * f..(br + 1) * f], c, o);
                });
        });
        Ok(Tensor::new(out, layout))
    }

    fn head_scale<T: Element>(
        &self,
        a: &BTensor<Self, T>,
        s: &BTensor<Self, T>,
    ) -> Result<BTensor<Self, T>> {
        let (n, h, c, a_rows) = ops::check_head_scale(a.shape(), s.shape())?;
        let (xa, xs) = (a.storage(), s.storage());
        let f = h * c;
        let layout = Layout::contiguous(&[n, f])?;
        let mut out = zeroed(&layout)?;
        if f > 0 {
            self.install(|| {
                out.par_chunks_mut(f)
                    .with_min_len(MIN_ROWS_PER_TASK)
                    .enumerate()
                    .for_each(|(i, o)| {
                        let ar = if a_rows == 1 { 0 } else { i };
                        ops::head_scale_row(
                            &xa[ar * f..(ar + 1) * f],
                            &xs[i * h..(i + 1) * h],
                            c,
                            o,
                        );
                    });
            });
        }
        Ok(Tensor::new(out, layout))
    }
}

impl FusedOps for CpuBackend {
    fn gather_scale_scatter<T: Element>(
        &self,
        x: &BTensor<Self, T>,
        gather: &[u32],
        weights: &BTensor<Self, T>,
        plan: &IndexPlan,
    ) -> Result<BTensor<Self, T>> {
        let (h, c) = ops::check_gather_scale_scatter(x.shape(), gather, weights.shape(), plan)?;
        let (xs, ws) = (x.storage(), weights.storage());
        let f = h * c;
        let layout = Layout::contiguous(&[plan.rows(), f])?;
        let mut out = zeroed(&layout)?;
        if f > 0 {
            self.install(|| {
                out.par_chunks_mut(f)
                    .with_min_len(MIN_ROWS_PER_TASK)
                    .enumerate()
                    .for_each_init(Vec::new, |scratch, (r, o)| {
                        ops::gather_scale_scatter_row(
                            plan.row(r),
                            gather,
                            xs,
                            ws,
                            h,
                            c,
                            o,
                            scratch,
                        );
                    });
            });
        }
        Ok(Tensor::new(out, layout))
    }

    fn gather_head_dot<T: Element>(
        &self,
        a: &BTensor<Self, T>,
        a_idx: &[u32],
        b: &BTensor<Self, T>,
        b_idx: &[u32],
        heads: usize,
    ) -> Result<BTensor<Self, T>> {
        let (h, c) = ops::check_gather_head_dot(a.shape(), a_idx, b.shape(), b_idx, heads)?;
        let (xa, xb) = (a.storage(), b.storage());
        let f = h * c;
        let layout = Layout::contiguous(&[a_idx.len(), h])?;
        let mut out = zeroed(&layout)?;
        self.install(|| {
            out.par_chunks_mut(h)
                .with_min_len(4 * MIN_ROWS_PER_TASK)
                .zip(a_idx.par_iter().zip(b_idx.par_iter()))
                .for_each(|(o, (&i, &j))| {
                    let (i, j) = (i as usize, j as usize);
                    ops::head_dot_row(&xa[i * f..(i + 1) * f], &xb[j * f..(j + 1) * f], c, o);
                });
        });
        Ok(Tensor::new(out, layout))
    }

    fn segment_softmax<T: Element>(
        &self,
        x: &BTensor<Self, T>,
        plan: &IndexPlan,
    ) -> Result<BTensor<Self, T>> {
        let (_, f) = ops::check_segment("segment_softmax", x.shape(), plan)?;
        let xs = x.storage();
        let row = |p: u32| &xs[p as usize * f..(p as usize + 1) * f];
        let out = self.install(|| {
            model_ops::per_segment(plan, f, |ps, o, s| ops::softmax_segment(ps, row, f, o, s))
        })?;
        Ok(Tensor::new(out, x.layout().clone()))
    }

    fn segment_softmax_backward<T: Element>(
        &self,
        alpha: &BTensor<Self, T>,
        grad: &BTensor<Self, T>,
        plan: &IndexPlan,
    ) -> Result<BTensor<Self, T>> {
        let (_, f) = ops::check_segment("segment_softmax_backward", alpha.shape(), plan)?;
        ops::check_same("segment_softmax_backward", alpha.shape(), grad.shape())?;
        let (xa, xg) = (alpha.storage(), grad.storage());
        let a = |p: u32| &xa[p as usize * f..(p as usize + 1) * f];
        let g = |p: u32| &xg[p as usize * f..(p as usize + 1) * f];
        let out = self.install(|| {
            model_ops::per_segment(plan, f, |ps, o, s| {
                ops::softmax_backward_segment(ps, a, g, f, o, s);
            })
        })?;
        Ok(Tensor::new(out, alpha.layout().clone()))
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
