//! GPU tests of the training ops (feature `cuda`; run on a machine with a
//! device): every [`TrainOps`] op on the CUDA backend against the CPU
//! backend, bit for bit, in `f32`, `f64`, `bf16` and `f16`, and the device's
//! portable ln against the host's. (The conformance suite's `train_*` cases
//! run on the device through tests/gpu.rs.) Without a device every test
//! FAILS with a message saying so.
#![cfg(feature = "cuda")]

use rtx_backend::prelude::*;
use rtx_backend::workload::{indices, values};
use rtx_backend::{AdamStep, BTensor, Element, RegressionLoss, SgdStep, bf16, f16};
use rtx_backend_cpu::CpuBackend;
use rtx_backend_cuda::CudaBackend;

fn backend() -> CudaBackend {
    CudaBackend::new(0).unwrap_or_else(|e| panic!("GPU test needs a CUDA device: {e}"))
}

fn data<T: Element>(seed: u64, n: usize, scale: f64) -> Vec<T> {
    values::<f64>(seed, n)
        .iter()
        .map(|&v| T::from_f64(v * scale))
        .collect()
}

fn same<T: Element>(case: &str, got: &[T], want: &[T]) {
    assert_eq!(got.len(), want.len(), "{case}: length");
    if let Some(i) = (0..got.len()).find(|&i| got[i].to_bits_u64() != want[i].to_bits_u64()) {
        panic!(
            "{case} ({}): element {i}: cuda {:?}, cpu {:?}",
            T::DTYPE,
            got[i],
            want[i]
        );
    }
}

/// Both backends' downloads of an op's result.
fn both<T: Element>(
    g: &CudaBackend,
    c: &CpuBackend,
    x: &[T],
    shape: &[usize],
    fg: impl Fn(&CudaBackend, &BTensor<CudaBackend, T>) -> BTensor<CudaBackend, T>,
    fc: impl Fn(&CpuBackend, &BTensor<CpuBackend, T>) -> BTensor<CpuBackend, T>,
) -> (Vec<T>, Vec<T>) {
    let dg = fg(g, &g.upload(x, shape).unwrap());
    let dc = fc(c, &c.upload(x, shape).unwrap());
    (g.download(&dg).unwrap(), c.download(&dc).unwrap())
}

fn dropout_case<T: Element>(g: &CudaBackend, c: &CpuBackend) {
    for (n, p, seed) in [
        (100_003usize, 0.3, 7u64),
        (4097, 0.5, 8),
        (1, 0.9, 9),
        (0, 0.5, 1),
    ] {
        let x: Vec<T> = data(n as u64 + 1, n, 3.0);
        let (dg, dc) = both(
            g,
            c,
            &x,
            &[n],
            |b, t| b.dropout(t, p, seed).unwrap(),
            |b, t| b.dropout(t, p, seed).unwrap(),
        );
        same(&format!("dropout n = {n} p = {p}"), &dg, &dc);
    }
    // p = 0: a copy (a NaN's bits too)
    let mut x: Vec<T> = data(3, 64, 1.0);
    x[5] = T::from_f64(f64::NAN);
    let (dg, _) = both(
        g,
        c,
        &x,
        &[8, 8],
        |b, t| b.dropout(t, 0.0, 1).unwrap(),
        |b, t| b.dropout(t, 0.0, 1).unwrap(),
    );
    same("dropout p = 0", &dg, &x);
}

#[test]
fn dropout_matches_cpu() {
    let (g, c) = (backend(), CpuBackend::new());
    dropout_case::<f32>(&g, &c);
    dropout_case::<f64>(&g, &c);
    dropout_case::<bf16>(&g, &c);
    dropout_case::<f16>(&g, &c);
}

fn cross_entropy_case<T: Element>(g: &CudaBackend, c: &CpuBackend) {
    for (m, k, scale) in [
        (1000usize, 37usize, 0.001),
        (100, 300, 1.0),
        (3, 1, 0.5),
        (0, 5, 1.0),
    ] {
        let z: Vec<T> = data(k as u64, m * k, 8.0);
        let labels = indices(11, m, k, false);
        let (lg, gg) = g
            .cross_entropy(
                &g.upload(&z, &[m, k]).unwrap(),
                &g.index_from_host(&labels).unwrap(),
                scale,
            )
            .unwrap();
        let (lc, gc) = c
            .cross_entropy(
                &c.upload(&z, &[m, k]).unwrap(),
                &c.index_from_host(&labels).unwrap(),
                scale,
            )
            .unwrap();
        assert_eq!((lg.shape(), gg.shape()), (lc.shape(), gc.shape()));
        let case = format!("cross_entropy [{m}, {k}]");
        same(
            &format!("{case} loss"),
            &g.download(&lg).unwrap(),
            &c.download(&lc).unwrap(),
        );
        same(
            &format!("{case} grad"),
            &g.download(&gg).unwrap(),
            &c.download(&gc).unwrap(),
        );
    }
    // a label past the class count: the first one, by position and value
    let z: Vec<T> = data(1, 12, 1.0);
    let e = g
        .cross_entropy(
            &g.upload(&z, &[4, 3]).unwrap(),
            &g.index_from_host(&[0, 2, 3, 7]).unwrap(),
            1.0,
        )
        .unwrap_err();
    assert!(
        matches!(
            e,
            rtx_backend::Error::IndexOutOfRange {
                position: 2,
                value: 3,
                bound: 3
            }
        ),
        "{e}"
    );
}

#[test]
fn cross_entropy_matches_cpu() {
    let (g, c) = (backend(), CpuBackend::new());
    cross_entropy_case::<f32>(&g, &c);
    cross_entropy_case::<f64>(&g, &c);
    cross_entropy_case::<bf16>(&g, &c);
    cross_entropy_case::<f16>(&g, &c);
}

fn regression_case<T: Element>(g: &CudaBackend, c: &CpuBackend) {
    for (m, d) in [(1000usize, 3usize), (7, 300), (300, 1), (0, 2)] {
        let y: Vec<T> = data(d as u64 + 20, m * d, 4.0);
        let mut t: Vec<T::Acc> = data(d as u64 + 21, m * d, 4.0);
        if m * d > 3 {
            t[3] = y[3].to_acc(); // a tie
        }
        for kind in [RegressionLoss::Mse, RegressionLoss::L1] {
            let (lg, gg) = g
                .regression_loss(
                    kind,
                    &g.upload(&y, &[m, d]).unwrap(),
                    &g.upload(&t, &[m, d]).unwrap(),
                    0.37,
                )
                .unwrap();
            let (lc, gc) = c
                .regression_loss(
                    kind,
                    &c.upload(&y, &[m, d]).unwrap(),
                    &c.upload(&t, &[m, d]).unwrap(),
                    0.37,
                )
                .unwrap();
            let case = format!("regression {kind:?} [{m}, {d}]");
            same(
                &format!("{case} loss"),
                &g.download(&lg).unwrap(),
                &c.download(&lc).unwrap(),
            );
            same(
                &format!("{case} grad"),
                &g.download(&gg).unwrap(),
                &c.download(&gc).unwrap(),
            );
        }
    }
}

#[test]
fn regression_losses_match_cpu() {
    let (g, c) = (backend(), CpuBackend::new());
    regression_case::<f32>(&g, &c);
    regression_case::<f64>(&g, &c);
    regression_case::<bf16>(&g, &c);
    regression_case::<f16>(&g, &c);
}

/// Tensor sizes of the multi-tensor steps: not multiples of a block or a
/// chunk, one empty, one of several chunks.
const SIZES: [usize; 7] = [1, 255, 4097, 0, 10_000, 65_537, 3];

fn tensors<B: Backend, T: Element>(b: &B, seed: u64, scale: f64, abs: bool) -> Vec<BTensor<B, T>> {
    SIZES
        .iter()
        .enumerate()
        .map(|(i, &n)| {
            let mut v: Vec<T> = data(seed * 100 + i as u64, n, scale);
            if abs {
                v.iter_mut()
                    .for_each(|x| *x = T::from_f64(x.to_f64().abs()));
            }
            b.upload(&v, &[n]).unwrap()
        })
        .collect()
}

fn adam_run<B: Backend, T: Element>(b: &B, h: AdamStep) -> Vec<Vec<T>> {
    let mut p = tensors::<B, T>(b, 1, 2.0, false);
    let mut m = tensors::<B, T>(b, 2, 0.1, false);
    let mut v = tensors::<B, T>(b, 3, 0.01, true);
    // a parameter shared with another tensor: the step must not write through to it
    let keep = p[2].clone();
    for step in 1..=3u64 {
        let g = tensors::<B, T>(b, 4 + step, 1.0, false);
        b.adam_step(
            &AdamStep { step, ..h },
            &mut p.iter_mut().collect::<Vec<_>>(),
            &g.iter().collect::<Vec<_>>(),
            &mut m.iter_mut().collect::<Vec<_>>(),
            &mut v.iter_mut().collect::<Vec<_>>(),
        )
        .unwrap();
    }
    let mut out: Vec<Vec<T>> = [p, m, v]
        .iter()
        .flatten()
        .map(|t| b.download(t).unwrap())
        .collect();
    out.push(b.download(&keep).unwrap());
    out
}

fn adam_case<T: Element>(g: &CudaBackend, c: &CpuBackend) {
    let base = AdamStep {
        lr: 0.01,
        ..AdamStep::default()
    };
    for h in [
        base,
        AdamStep {
            weight_decay: 0.05,
            grad_scale: 0.5,
            ..base
        },
        AdamStep {
            weight_decay: 0.1,
            decoupled: true,
            beta1: 0.8,
            beta2: 0.99,
            eps: 1e-6,
            ..base
        },
    ] {
        let (dg, dc) = (adam_run::<_, T>(g, h), adam_run::<_, T>(c, h));
        for (i, (a, b)) in dg.iter().zip(&dc).enumerate() {
            same(&format!("adam {h:?} tensor {i}"), a, b);
        }
        let (kept, orig) = (&dg[dg.len() - 1], &dc[dc.len() - 1]);
        same("adam: a shared tensor is untouched", kept, orig);
    }
}

#[test]
fn adam_and_adamw_match_cpu() {
    let (g, c) = (backend(), CpuBackend::new());
    adam_case::<f32>(&g, &c);
    adam_case::<f64>(&g, &c);
    adam_case::<bf16>(&g, &c);
    adam_case::<f16>(&g, &c);
}

fn sgd_run<B: Backend, T: Element>(b: &B, h: SgdStep) -> Vec<Vec<T>> {
    let mut p = tensors::<B, T>(b, 1, 2.0, false);
    let mut bufs = if h.momentum != 0.0 {
        tensors::<B, T>(b, 2, 0.5, false)
    } else {
        Vec::new()
    };
    for step in 0..3u64 {
        let g = tensors::<B, T>(b, 4 + step, 1.0, false);
        b.sgd_step(
            &SgdStep {
                first: step == 0,
                ..h
            },
            &mut p.iter_mut().collect::<Vec<_>>(),
            &g.iter().collect::<Vec<_>>(),
            &mut bufs.iter_mut().collect::<Vec<_>>(),
        )
        .unwrap();
    }
    p.iter()
        .chain(&bufs)
        .map(|t| b.download(t).unwrap())
        .collect()
}

fn sgd_case<T: Element>(g: &CudaBackend, c: &CpuBackend) {
    let base = SgdStep {
        lr: 0.1,
        ..SgdStep::default()
    };
    for h in [
        base,
        SgdStep {
            weight_decay: 0.01,
            grad_scale: 2.0,
            ..base
        },
        SgdStep {
            momentum: 0.9,
            ..base
        },
        SgdStep {
            momentum: 0.9,
            dampening: 0.1,
            weight_decay: 0.01,
            ..base
        },
        SgdStep {
            momentum: 0.9,
            nesterov: true,
            weight_decay: 0.01,
            ..base
        },
    ] {
        let (dg, dc) = (sgd_run::<_, T>(g, h), sgd_run::<_, T>(c, h));
        for (i, (a, b)) in dg.iter().zip(&dc).enumerate() {
            same(&format!("sgd {h:?} tensor {i}"), a, b);
        }
    }
}

#[test]
fn sgd_variants_match_cpu() {
    let (g, c) = (backend(), CpuBackend::new());
    sgd_case::<f32>(&g, &c);
    sgd_case::<f64>(&g, &c);
    sgd_case::<bf16>(&g, &c);
    sgd_case::<f16>(&g, &c);
}

fn ln_case<T: Element>(g: &CudaBackend, xs: &[f64]) {
    let x: Vec<T> = xs.iter().map(|&v| T::from_f64(v)).collect();
    let d = g
        .download(
            &g.ln_elementwise(&g.upload(&x, &[x.len()]).unwrap())
                .unwrap(),
        )
        .unwrap();
    let h: Vec<T> = x.iter().map(|v| v.ln()).collect();
    same("ln", &d, &h);
}

#[test]
fn ln_is_the_hosts_bit_for_bit() {
    let g = backend();
    let mut xs: Vec<f64> = Vec::new();
    let mut x = f64::from_bits(3);
    while x < 1e308 {
        for frac in [1.0, 1.0001, 1.1, 1.3, 1.4141, 1.4143, 1.5, 1.77, 1.99] {
            xs.push(x * frac);
        }
        x *= 1.37;
    }
    xs.extend((-3000..=3000).map(|i| 1.0 + f64::from(i) * 1e-4));
    xs.extend([
        0.0,
        -0.0,
        -1.0,
        f64::INFINITY,
        f64::NEG_INFINITY,
        f64::NAN,
        f64::MIN_POSITIVE,
        f64::from(f32::MIN_POSITIVE),
        1e-45,
        std::f64::consts::E,
        2.0,
        0.5,
    ]);
    ln_case::<f64>(&g, &xs);
    ln_case::<f32>(&g, &xs);
    ln_case::<bf16>(&g, &xs);
    ln_case::<f16>(&g, &xs);
    // every f32 exponent and a spread of mantissas
    let x32: Vec<f64> = (0..1u64 << 16)
        .map(|i| {
            f64::from(f32::from_bits(
                (i as u32).wrapping_mul(0x9E37_79B1) & 0x7fff_ffff,
            ))
        })
        .collect();
    ln_case::<f32>(&g, &x32);
}
