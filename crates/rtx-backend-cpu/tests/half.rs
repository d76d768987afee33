//! bf16 and f16 on the CPU backend: the same bits for 1, 2 and several
//! threads, on sizes that cut every op into many rayon tasks (and the
//! canonical sums into several level-0 blocks computed in parallel).

use rtx_backend::prelude::*;
use rtx_backend::workload::{indices, values};
use rtx_backend::{Element, IndexPlan, Unary, bf16, f16};
use rtx_backend_cpu::{CpuBackend, DenseKernels};

fn data<T: Element>(seed: u64, n: usize) -> Vec<T> {
    values::<f64>(seed, n)
        .iter()
        .map(|&v| T::from_f64(v * 4.0))
        .collect()
}

fn bits<T: Element>(v: &[T]) -> Vec<u64> {
    v.iter().map(|x| x.to_bits_u64()).collect()
}

/// Every op's output bits, in a fixed order, on backend `b`.
fn run<T: Element>(b: &CpuBackend) -> Vec<Vec<u64>> {
    let (n, rows, e, heads, c) = (3000usize, 700usize, 60_000usize, 4usize, 8usize);
    let f = heads * c;
    let gather = indices(1, e, n, false);
    let scatter = indices(2, e, rows, true);
    let plan = IndexPlan::new(&scatter, rows).unwrap();
    let x = b.upload(&data::<T>(3, n * f), &[n, f]).unwrap();
    let w = b.upload(&data::<T>(4, e * heads), &[e, heads]).unwrap();
    let msg = b.index_select(&x, &gather).unwrap();
    let mut out = Vec::new();
    let mut push =
        |t: &rtx_backend::BTensor<CpuBackend, T>| out.push(bits(&b.download(t).unwrap()));
    push(&msg);
    let mut dst = b.upload(&data::<T>(5, rows * f), &[rows, f]).unwrap();
    b.index_add(&mut dst, &scatter, &msg).unwrap();
    push(&dst);
    push(&b.segment_sum(&msg, &plan).unwrap());
    push(&b.segment_max(&msg, &plan).unwrap());
    let logits = b.gather_head_dot(&x, &gather, &x, &gather, heads).unwrap();
    push(&logits);
    let alpha = b.segment_softmax(&logits, &plan).unwrap();
    push(&alpha);
    push(&b.segment_softmax_backward(&alpha, &w, &plan).unwrap());
    push(&b.gather_scale_scatter(&x, &gather, &alpha, &plan).unwrap());
    let wt = b.upload(&data::<T>(6, f * 48), &[f, 48]).unwrap();
    push(&b.matmul(&x, false, &wt, false).unwrap());
    push(&b.matmul(&x, true, &x, false).unwrap());
    push(&b.sum_rows(&msg).unwrap());
    push(&b.unary(Unary::Exp, &x).unwrap());
    push(&b.permute(&msg, &[1, 0]).unwrap());
    let bias = b.upload(&data::<T>(7, f), &[1, f]).unwrap();
    push(&b.sum_bias_relu(&[(&x, &bias), (&x, &bias)]).unwrap());
    let mut y = x.clone();
    b.axpy(&mut y, -0.1, &x).unwrap();
    push(&y);
    push(
        &b.convert::<T, f32>(&x)
            .map(|t| b.convert::<f32, T>(&t).unwrap())
            .unwrap(),
    );
    out
}

fn same_for_thread_counts<T: Element>() {
    for dense in [DenseKernels::Fast, DenseKernels::Reference] {
        let one = run::<T>(&CpuBackend::with_threads(1).unwrap().with_dense(dense));
        for threads in [2usize, 5] {
            let b = CpuBackend::with_threads(threads).unwrap().with_dense(dense);
            let got = run::<T>(&b);
            for (i, (g, w)) in got.iter().zip(&one).enumerate() {
                assert!(
                    g == w,
                    "{} {dense:?}: op {i} differs between 1 and {threads} threads",
                    T::DTYPE
                );
            }
        }
        // and run to run
        assert!(run::<T>(&CpuBackend::new().with_dense(dense)) == one);
    }
}

#[test]
fn bf16_same_bits_for_1_2_and_5_threads() {
    same_for_thread_counts::<bf16>();
}

#[test]
fn f16_same_bits_for_1_2_and_5_threads() {
    same_for_thread_counts::<f16>();
}

mod props {
    use proptest::prelude::*;
    use rtx_backend::order::canonical_sum;
    use rtx_backend::prelude::*;
    use rtx_backend::{Element, bf16, f16};
    use rtx_backend_cpu::CpuBackend;

    /// `dst[r] = round(widen(dst[r]) + canonical f32 sum of widened src)`,
    /// by hand, per column; untouched rows keep their bits.
    fn naive<T: Element>(dst: &[T], f: usize, idx: &[u32], src: &[T]) -> Vec<u64> {
        let mut out: Vec<u64> = dst.iter().map(|v| v.to_bits_u64()).collect();
        for (r, o) in out
            .chunks_mut(f.max(1))
            .enumerate()
            .take(dst.len() / f.max(1))
        {
            let ps: Vec<usize> = (0..idx.len()).filter(|&p| idx[p] as usize == r).collect();
            for (j, o) in o.iter_mut().enumerate() {
                if let Some(s) = canonical_sum(ps.len(), |q| src[ps[q] * f + j].to_f32()) {
                    *o = T::from_f32(dst[r * f + j].to_f32() + s).to_bits_u64();
                }
            }
        }
        out
    }

    fn check<T: Element>(
        rows: usize,
        f: usize,
        idx: &[u32],
        seed: u64,
    ) -> Result<(), TestCaseError> {
        let b = CpuBackend::new();
        let v = |s: u64, n: usize| -> Vec<T> {
            (0..n)
                .map(|i| T::from_f64(f64::from(rtx_backend::workload::value(s, i as u64)) * 64.0))
                .collect()
        };
        let (src, dst) = (v(seed, idx.len() * f), v(seed ^ 1, rows * f));
        let mut d = b.upload(&dst, &[rows, f]).unwrap();
        b.index_add(&mut d, idx, &b.upload(&src, &[idx.len(), f]).unwrap())
            .unwrap();
        let got: Vec<u64> = b
            .download(&d)
            .unwrap()
            .iter()
            .map(|v| v.to_bits_u64())
            .collect();
        prop_assert_eq!(got, naive(&dst, f, idx, &src));
        Ok(())
    }

    fn case() -> impl Strategy<Value = (usize, usize, Vec<u32>, u64)> {
        (1usize..30, 1usize..6).prop_flat_map(|(rows, f)| {
            (
                Just(rows),
                Just(f),
                proptest::collection::vec(0..rows as u32, 0..700),
                any::<u64>(),
            )
        })
    }

    proptest! {
        #[test]
        fn bf16_scatter_is_the_f32_canonical_sum_rounded_once((rows, f, idx, seed) in case()) {
            check::<bf16>(rows, f, &idx, seed)?;
        }

        #[test]
        fn f16_scatter_is_the_f32_canonical_sum_rounded_once((rows, f, idx, seed) in case()) {
            check::<f16>(rows, f, &idx, seed)?;
        }
    }
}
