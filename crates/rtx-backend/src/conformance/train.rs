//! [`TrainOps`](crate::TrainOps): dropout against its mask computed here from
//! `workload::unit`, the losses against naive `f64` code and finite
//! differences, the optimizers against hand-computed steps of torch's
//! formulas (literals below), and every op in all four element types bit for
//! bit against the [`ops::train`](crate::ops::train) reference, over several
//! tensors of sizes that are not multiples of a block.

use super::harness::{assert_bits, down, up};
use crate::ops::train as t;
use crate::workload::{indices, unit, values};
use crate::{AdamStep, BTensor, Backend, Element, Error, RegressionLoss, SgdStep, bf16, f16};

/// `values` scaled by `scale`, rounded once to `T`.
fn data<T: Element>(seed: u64, n: usize, scale: f64) -> Vec<T> {
    values::<f64>(seed, n)
        .iter()
        .map(|&v| T::from_f64(v * scale))
        .collect()
}

/// `got` within 4 ulp of each `want` (hand-computed `f64` literals).
fn assert_near(case: &str, got: &[f64], want: &[f64]) {
    assert_eq!(got.len(), want.len(), "{case}: length");
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        assert!(
            (g - w).abs() <= 4.0 * f64::EPSILON * w.abs(),
            "{case}: element {i}: got {g:?}, want {w:?}"
        );
    }
}

// ---------------------------------------------------------------- dropout

/// Dropout: the mask is `unit(seed, i) >= p` computed here, kept elements
/// `x * (1/(1-p))` rounded once, dropped `+0.0`; a keep ratio close to
/// `1 - p` on 100,200 elements; the backward (the same call on a gradient)
/// drops the same elements; `p == 0` copies; bad `p` is an error; every
/// element type bit for bit against the reference.
pub fn train_dropout<B: Backend>(b: &B) {
    let (rows, cols, p, seed) = (200usize, 501usize, 0.3, 7u64);
    let x: Vec<f32> = data(1, rows * cols, 4.0);
    let xt = up(b, &x, &[rows, cols]);
    let got = down(b, &b.dropout(&xt, p, seed).expect("dropout"));
    let s = (1.0f64 / (1.0 - p)) as f32;
    let mut kept = 0usize;
    for (i, (&g, &v)) in got.iter().zip(&x).enumerate() {
        let want = if unit(seed, i as u64) >= p {
            kept += 1;
            v * s
        } else {
            0.0
        };
        assert_eq!(g.to_bits(), want.to_bits(), "dropout f32: element {i}");
    }
    let ratio = kept as f64 / got.len() as f64;
    assert!((ratio - 0.7).abs() < 0.01, "dropout: keep ratio {ratio}");
    // the backward: the same call on a gradient keeps the same elements
    let g: Vec<f32> = data(2, rows * cols, 1.0);
    let back = down(b, &b.dropout(&up(b, &g, &[rows, cols]), p, seed).unwrap());
    for (i, (&bk, &fw)) in back.iter().zip(&got).enumerate() {
        let (dropped_f, dropped_b) = (fw == 0.0 && x[i] != 0.0, bk == 0.0 && g[i] != 0.0);
        assert_eq!(dropped_f, dropped_b, "dropout backward: element {i}");
    }
    // another seed draws another mask
    let other = down(b, &b.dropout(&xt, p, seed + 1).unwrap());
    assert_ne!(other, got, "dropout: seeds 7 and 8 give one mask");
    // p == 0 copies (bits, including a NaN and -0.0)
    let odd = [1.5f32, -0.0, f32::NAN, 3.25];
    let same = down(b, &b.dropout(&up(b, &odd, &[2, 2]), 0.0, 1).unwrap());
    assert_bits("dropout p = 0", &same, &odd);
    // bad p, before any work
    for bad in [1.0, -0.1, f64::NAN, 2.0] {
        let e = b.dropout(&xt, bad, seed).unwrap_err();
        assert!(
            matches!(e, Error::InvalidArgument { op: "dropout", .. }),
            "{e}"
        );
        assert!(e.to_string().contains("p = "), "{e}");
    }
    // empty
    let empty = b.dropout(&up::<B, f32>(b, &[], &[0, 3]), 0.5, 1).unwrap();
    assert_eq!(empty.shape(), &[0, 3]);
    dropout_typed::<B, f32>(b);
    dropout_typed::<B, f64>(b);
    dropout_typed::<B, bf16>(b);
    dropout_typed::<B, f16>(b);
}

fn dropout_typed<B: Backend, T: Element>(b: &B) {
    for (n, p, seed) in [(37 * 129, 0.5, 3u64), (1000, 0.1, 4), (257, 0.9, 5)] {
        let x: Vec<T> = data(n as u64, n, 3.0);
        let got = down(b, &b.dropout(&up(b, &x, &[n]), p, seed).unwrap());
        let want = t::dropout(&x, p, seed).unwrap();
        assert_bits(
            &format!("dropout {} n = {n} p = {p}", T::DTYPE),
            &got,
            &want,
        );
    }
}

// ---------------------------------------------------------------- losses

/// Naive `f64` softmax cross-entropy of one row (platform `exp` and `ln`).
fn naive_ce(z: &[f64], y: usize) -> (f64, Vec<f64>) {
    let mx = z.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let s: f64 = z.iter().map(|v| (v - mx).exp()).sum();
    let lse = mx + s.ln();
    let grad = z
        .iter()
        .enumerate()
        .map(|(j, v)| (v - lse).exp() - if j == y { 1.0 } else { 0.0 })
        .collect();
    (lse - z[y], grad)
}

/// Cross-entropy: `f64` against a naive log-softmax (tolerance), the
/// gradient against finite differences of the loss, large logits stay
/// finite, every element type bit for bit against the reference, `m == 0`,
/// and the errors (rank, label count, a label past `C` named by position
/// and value).
pub fn train_cross_entropy<B: Backend>(b: &B) {
    let (m, c, scale) = (37usize, 11usize, 0.25);
    let z: Vec<f64> = data(5, m * c, 6.0);
    let labels = indices(6, m, c, false);
    let li = b.index_from_host(&labels).unwrap();
    let (loss, grad) = b.cross_entropy(&up(b, &z, &[m, c]), &li, scale).unwrap();
    assert_eq!((loss.shape(), grad.shape()), (&[m, 1][..], &[m, c][..]));
    let (loss, grad) = (down(b, &loss), down(b, &grad));
    for i in 0..m {
        let (l, g) = naive_ce(&z[i * c..(i + 1) * c], labels[i] as usize);
        assert!(
            (loss[i] - l).abs() <= 1e-13 * l.abs().max(1.0),
            "ce row {i}: {} vs {l}",
            loss[i]
        );
        for j in 0..c {
            let (got, want) = (grad[i * c + j], g[j] * scale);
            assert!(
                (got - want).abs() <= 1e-14,
                "ce grad [{i}, {j}]: {got} vs {want}"
            );
        }
    }
    // the gradient of sum_i loss_i * scale against central differences
    let (m2, c2) = (3usize, 5usize);
    let z2: Vec<f64> = data(7, m2 * c2, 2.0);
    let l2 = b.index_from_host(&[4, 0, 2]).unwrap();
    let total = |z: &[f64]| -> f64 {
        let (l, _) = b.cross_entropy(&up(b, z, &[m2, c2]), &l2, 1.0).unwrap();
        down(b, &l).iter().sum::<f64>() * 0.5
    };
    let (_, g2) = b.cross_entropy(&up(b, &z2, &[m2, c2]), &l2, 0.5).unwrap();
    let g2 = down(b, &g2);
    let h = 1e-6;
    for k in 0..m2 * c2 {
        let (mut zp, mut zm) = (z2.clone(), z2.clone());
        zp[k] += h;
        zm[k] -= h;
        let fd = (total(&zp) - total(&zm)) / (2.0 * h);
        assert!(
            (fd - g2[k]).abs() < 1e-7,
            "ce grad {k}: {} vs finite difference {fd}",
            g2[k]
        );
    }
    // large logits: stable (no overflow)
    let big = [1000.0f32, 1001.0, 999.0, -1000.0];
    let (l, g) = b
        .cross_entropy(
            &up(b, &big, &[1, 4]),
            &b.index_from_host(&[1]).unwrap(),
            1.0,
        )
        .unwrap();
    let (l, g) = (down(b, &l), down(b, &g));
    assert!(
        l[0].is_finite() && (l[0] - 0.407_606).abs() < 1e-4,
        "ce large: {l:?}"
    );
    assert!(g.iter().all(|v| v.is_finite()), "ce large grad: {g:?}");
    ce_typed::<B, f32>(b);
    ce_typed::<B, f64>(b);
    ce_typed::<B, bf16>(b);
    ce_typed::<B, f16>(b);
    // m == 0
    let (l, g) = b
        .cross_entropy(
            &up::<B, f32>(b, &[], &[0, 4]),
            &b.index_from_host(&[]).unwrap(),
            1.0,
        )
        .unwrap();
    assert_eq!((l.shape(), g.shape()), (&[0, 1][..], &[0, 4][..]));
    // errors
    let zt = up(b, &z, &[m, c]);
    let mut bad = labels.clone();
    bad[5] = c as u32;
    let e = b
        .cross_entropy(&zt, &b.index_from_host(&bad).unwrap(), 1.0)
        .unwrap_err();
    assert!(
        matches!(
            e,
            Error::IndexOutOfRange {
                position: 5,
                value: 11,
                bound: 11
            }
        ),
        "{e}"
    );
    let e = b
        .cross_entropy(&zt, &b.index_from_host(&labels[1..]).unwrap(), 1.0)
        .unwrap_err();
    assert!(
        matches!(
            e,
            Error::ShapeMismatch {
                op: "cross_entropy",
                ..
            }
        ),
        "{e}"
    );
    let e = b.cross_entropy(&up(b, &z, &[m * c]), &li, 1.0).unwrap_err();
    assert!(
        matches!(
            e,
            Error::Rank {
                op: "cross_entropy",
                ..
            }
        ),
        "{e}"
    );
}

fn ce_typed<B: Backend, T: Element>(b: &B) {
    // 300 classes: more than a block of 256 threads
    for (m, c) in [(37usize, 11usize), (5, 300), (64, 1), (3, 1000)] {
        let z: Vec<T> = data(8 + c as u64, m * c, 5.0);
        let labels = indices(9, m, c, false);
        let (loss, grad) = b
            .cross_entropy(
                &up(b, &z, &[m, c]),
                &b.index_from_host(&labels).unwrap(),
                0.1,
            )
            .unwrap();
        let (wl, wg) = t::cross_entropy(&z, m, c, &labels, 0.1);
        let case = format!("cross_entropy {} [{m}, {c}]", T::DTYPE);
        assert_bits(&format!("{case} loss"), &down(b, &loss), &wl);
        assert_bits(&format!("{case} grad"), &down(b, &grad), &wg);
    }
}

/// Regression losses: MSE and L1 against naive `f64` loops (exact: the same
/// operations), the gradient's signs at ties and NaN, every element type bit
/// for bit against the reference, and shape errors.
pub fn train_regression_loss<B: Backend>(b: &B) {
    let (m, d, scale) = (23usize, 7usize, 0.125);
    let y: Vec<f64> = data(11, m * d, 3.0);
    let mut tg: Vec<f64> = data(12, m * d, 3.0);
    tg[3] = y[3]; // a tie: sign 0
    let (yt, tt) = (up(b, &y, &[m, d]), up(b, &tg, &[m, d]));
    for kind in [RegressionLoss::Mse, RegressionLoss::L1] {
        let (loss, grad) = b.regression_loss(kind, &yt, &tt, scale).unwrap();
        assert_eq!((loss.shape(), grad.shape()), (&[m, 1][..], &[m, d][..]));
        let (loss, grad) = (down(b, &loss), down(b, &grad));
        for (i, &got) in loss.iter().enumerate() {
            let mut want = 0.0;
            for j in 0..d {
                let k = i * d + j;
                let e = y[k] - tg[k];
                let (l, g) = match kind {
                    RegressionLoss::Mse => (e * e, 2.0 * e * scale),
                    RegressionLoss::L1 => {
                        let sign = if e > 0.0 {
                            1.0
                        } else if e < 0.0 {
                            -1.0
                        } else {
                            0.0
                        };
                        (e.abs(), sign * scale)
                    }
                };
                want += l;
                assert_eq!(grad[k], g, "{kind:?} grad [{i}, {j}]");
            }
            assert_eq!(got, want, "{kind:?} loss row {i}");
        }
        assert_eq!(grad[3], 0.0, "{kind:?}: the tie");
    }
    // NaN stays NaN in the L1 gradient
    let (_, g) = b
        .regression_loss(
            RegressionLoss::L1,
            &up(b, &[f32::NAN, 1.0], &[1, 2]),
            &up(b, &[0.0f32, 2.0], &[1, 2]),
            1.0,
        )
        .unwrap();
    let g = down(b, &g);
    assert!(g[0].is_nan() && g[1] == -1.0, "{g:?}");
    reg_typed::<B, f32>(b);
    reg_typed::<B, f64>(b);
    reg_typed::<B, bf16>(b);
    reg_typed::<B, f16>(b);
    // errors
    let e = b
        .regression_loss(RegressionLoss::Mse, &yt, &up(b, &tg[d..], &[m - 1, d]), 1.0)
        .unwrap_err();
    assert!(
        matches!(
            e,
            Error::ShapeMismatch {
                op: "regression_loss",
                ..
            }
        ),
        "{e}"
    );
    let e = b
        .regression_loss(
            RegressionLoss::L1,
            &up(b, &y, &[m * d]),
            &up(b, &tg, &[m * d]),
            1.0,
        )
        .unwrap_err();
    assert!(
        matches!(
            e,
            Error::Rank {
                op: "regression_loss",
                ..
            }
        ),
        "{e}"
    );
    let (l, g) = b
        .regression_loss(
            RegressionLoss::Mse,
            &up::<B, f32>(b, &[], &[0, 3]),
            &up(b, &[], &[0, 3]),
            1.0,
        )
        .unwrap();
    assert_eq!((l.shape(), g.shape()), (&[0, 1][..], &[0, 3][..]));
}

fn reg_typed<B: Backend, T: Element>(b: &B) {
    for (m, d) in [(23usize, 7usize), (3, 300), (300, 1)] {
        let y: Vec<T> = data(13 + d as u64, m * d, 4.0);
        let tg: Vec<T::Acc> = data(14 + d as u64, m * d, 4.0);
        for kind in [RegressionLoss::Mse, RegressionLoss::L1] {
            let (loss, grad) = b
                .regression_loss(kind, &up(b, &y, &[m, d]), &up(b, &tg, &[m, d]), 0.3)
                .unwrap();
            let (wl, wg) = t::regression_loss(kind, &y, &tg, m, d, 0.3);
            let case = format!("regression_loss {kind:?} {} [{m}, {d}]", T::DTYPE);
            assert_bits(&format!("{case} loss"), &down(b, &loss), &wl);
            assert_bits(&format!("{case} grad"), &down(b, &grad), &wg);
        }
    }
}

// ---------------------------------------------------------------- optimizers

/// The parameter and the three gradients of the hand-computed steps.
const P0: [f64; 3] = [0.5, -1.25, 2.0];
const GRADS: [[f64; 3]; 3] = [[0.1, -0.2, 0.3], [-0.05, 0.4, 0.0], [0.2, 0.2, -1.0]];

/// Three Adam steps of `h` (its `step` set to 1, 2, 3) on [`P0`] with [`GRADS`]: `(p, m, v)`.
fn adam3<B: Backend>(b: &B, h: AdamStep) -> (Vec<f64>, Vec<f64>, Vec<f64>) {
    let mut p = up(b, &P0, &[3]);
    let mut m = up(b, &[0.0f64; 3], &[3]);
    let mut v = up(b, &[0.0f64; 3], &[3]);
    for (s, g) in GRADS.iter().enumerate() {
        let g = up(b, g, &[3]);
        let h = AdamStep {
            step: s as u64 + 1,
            ..h
        };
        b.adam_step(&h, &mut [&mut p], &[&g], &mut [&mut m], &mut [&mut v])
            .unwrap();
    }
    (down(b, &p), down(b, &m), down(b, &v))
}

/// Adam and AdamW: three steps on three elements against torch's formulas
/// worked out by hand in `f64` (the literals), with and without weight
/// decay and a gradient scale; many tensors of several sizes in every
/// element type bit for bit against the reference; the errors, which change
/// nothing.
pub fn train_adam<B: Backend>(b: &B) {
    let base = AdamStep {
        lr: 0.01,
        ..AdamStep::default()
    };
    let (p, m, v) = adam3(b, base);
    assert_near(
        "adam p",
        &p,
        &[0.4807555154351381, -1.2488534436331664, 1.9879316748339888],
    );
    assert_near(
        "adam m",
        &m,
        &[
            0.023599999999999996,
            0.039799999999999995,
            -0.07569999999999998,
        ],
    );
    assert_near(
        "adam v",
        &v,
        &[
            5.2477510000000055e-05,
            0.00023976004000000027,
            0.001089820090000001,
        ],
    );
    let (p, m, v) = adam3(
        b,
        AdamStep {
            weight_decay: 0.05,
            grad_scale: 0.5,
            ..base
        },
    );
    assert_near(
        "adam l2 p",
        &p,
        &[0.4752235523459543, -1.2406150053934937, 1.9824629954801158],
    );
    assert_near(
        "adam l2 m",
        &m,
        &[
            0.01844674601563151,
            0.003058940233864403,
            -0.010889890551801666,
        ],
    );
    assert_near(
        "adam l2 v",
        &v,
        &[
            2.103156352170343e-05,
            4.682351468503595e-05,
            0.00023302543710450582,
        ],
    );
    let (p, m, _) = adam3(
        b,
        AdamStep {
            weight_decay: 0.1,
            decoupled: true,
            ..base
        },
    );
    assert_near(
        "adamw p",
        &p,
        &[0.4792796683031988, -1.2451235213470124, 1.981964363415548],
    );
    assert_near(
        "adamw m",
        &m,
        &[
            0.023599999999999996,
            0.039799999999999995,
            -0.07569999999999998,
        ],
    );
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
            ..base
        },
    ] {
        adam_typed::<B, f32>(b, h);
        adam_typed::<B, f64>(b, h);
        adam_typed::<B, bf16>(b, h);
        adam_typed::<B, f16>(b, h);
    }
    // errors: nothing changes
    let mut p = up(b, &P0, &[3]);
    let mut q = up(b, &P0[..2], &[2]);
    let g = up(b, &P0, &[3]);
    let g2 = up(b, &P0[..2], &[2]);
    let mut m = up(b, &[0.0f64; 3], &[3]);
    let mut m2 = up(b, &[0.0f64; 3], &[3]); // wrong shape for q
    let mut v = up(b, &[0.0f64; 3], &[3]);
    let mut v2 = up(b, &[0.0f64; 2], &[2]);
    let e = b
        .adam_step(
            &base,
            &mut [&mut p, &mut q],
            &[&g, &g2],
            &mut [&mut m, &mut m2],
            &mut [&mut v, &mut v2],
        )
        .unwrap_err();
    assert!(
        matches!(
            e,
            Error::ShapeMismatch {
                op: "adam_step",
                ..
            }
        ),
        "{e}"
    );
    assert!(e.to_string().contains("m[1]"), "{e}");
    let e = b
        .adam_step(
            &base,
            &mut [&mut p, &mut q],
            &[&g],
            &mut [&mut m, &mut m2],
            &mut [&mut v, &mut v2],
        )
        .unwrap_err();
    assert!(e.to_string().contains("1 grads for 2 params"), "{e}");
    let e = b
        .adam_step(
            &AdamStep { step: 0, ..base },
            &mut [&mut p],
            &[&g],
            &mut [&mut m],
            &mut [&mut v],
        )
        .unwrap_err();
    assert!(
        matches!(
            e,
            Error::InvalidArgument {
                op: "adam_step",
                ..
            }
        ),
        "{e}"
    );
    assert_bits("adam errors change nothing", &down(b, &p), &P0);
    assert_bits("adam errors change nothing (q)", &down(b, &q), &P0[..2]);
    assert_bits("adam errors change nothing (m)", &down(b, &m), &[0.0; 3]);
    // no tensors: nothing to do
    b.adam_step::<f32>(&base, &mut [], &[], &mut [], &mut [])
        .unwrap();
}

/// Sizes of the multi-tensor cases: not multiples of a block, one empty.
const SIZES: [usize; 6] = [3, 1000, 1, 257, 0, 4097];

fn adam_typed<B: Backend, T: Element>(b: &B, h: AdamStep) {
    let host = |seed: u64, scale: f64| -> Vec<Vec<T>> {
        SIZES
            .iter()
            .enumerate()
            .map(|(i, &n)| data(seed * 10 + i as u64, n, scale))
            .collect()
    };
    let (mut hp, mut hm) = (host(1, 2.0), host(2, 0.1));
    let mut hv: Vec<Vec<T>> = host(3, 0.01)
        .into_iter()
        .map(|v| v.iter().map(|x| T::from_f64(x.to_f64().abs())).collect())
        .collect();
    let upl =
        |v: &[Vec<T>]| -> Vec<BTensor<B, T>> { v.iter().map(|x| up(b, x, &[x.len()])).collect() };
    let (mut p, mut m, mut v) = (upl(&hp), upl(&hm), upl(&hv));
    for step in 1..=2u64 {
        let hg = host(4 + step, 1.0);
        let g = upl(&hg);
        let h = AdamStep {
            step: step + 3,
            ..h
        };
        b.adam_step(
            &h,
            &mut p.iter_mut().collect::<Vec<_>>(),
            &g.iter().collect::<Vec<_>>(),
            &mut m.iter_mut().collect::<Vec<_>>(),
            &mut v.iter_mut().collect::<Vec<_>>(),
        )
        .unwrap();
        let s = t::adam_scalars::<T::Acc>(&h).unwrap();
        for i in 0..SIZES.len() {
            t::adam_update(&s, &mut hp[i], &hg[i], &mut hm[i], &mut hv[i]);
        }
    }
    for i in 0..SIZES.len() {
        let case = format!("adam {} {h:?} tensor {i} ({} elements)", T::DTYPE, SIZES[i]);
        assert_bits(&format!("{case}: p"), &down(b, &p[i]), &hp[i]);
        assert_bits(&format!("{case}: m"), &down(b, &m[i]), &hm[i]);
        assert_bits(&format!("{case}: v"), &down(b, &v[i]), &hv[i]);
    }
}

/// Three SGD steps of `h` (`first` on the first) on [`P0`]: `(p, buf)`.
fn sgd3<B: Backend>(b: &B, h: SgdStep) -> (Vec<f64>, Vec<f64>) {
    let mut p = up(b, &P0, &[3]);
    let mut buf = up(b, &[7.0f64; 3], &[3]); // overwritten by the first step
    for (s, g) in GRADS.iter().enumerate() {
        let g = up(b, g, &[3]);
        let h = SgdStep { first: s == 0, ..h };
        if h.momentum == 0.0 {
            b.sgd_step(&h, &mut [&mut p], &[&g], &mut []).unwrap();
        } else {
            b.sgd_step(&h, &mut [&mut p], &[&g], &mut [&mut buf])
                .unwrap();
        }
    }
    (down(b, &p), down(b, &buf))
}

/// SGD: plain, weight decay with a gradient scale, momentum, dampening,
/// Nesterov: three steps against torch's formulas worked out by hand in
/// `f64`; many tensors in every element type bit for bit against the
/// reference; the errors.
pub fn train_sgd<B: Backend>(b: &B) {
    let base = SgdStep {
        lr: 0.1,
        ..SgdStep::default()
    };
    let (p, _) = sgd3(b, base);
    assert_near("sgd p", &p, &[0.475, -1.29, 2.07]);
    let (p, _) = sgd3(
        b,
        SgdStep {
            weight_decay: 0.01,
            grad_scale: 2.0,
            ..base
        },
    );
    assert_near(
        "sgd wd p",
        &p,
        &[0.44853147949999994, -1.3262537087500001, 2.134125938],
    );
    let (p, buf) = sgd3(
        b,
        SgdStep {
            momentum: 0.9,
            ..base
        },
    );
    assert_near("sgd momentum p", &p, &[0.4624, -1.2918, 2.0187]);
    assert_near(
        "sgd momentum buf",
        &buf,
        &[0.23600000000000002, 0.398, -0.757],
    );
    let (p, buf) = sgd3(
        b,
        SgdStep {
            momentum: 0.9,
            dampening: 0.1,
            weight_decay: 0.01,
            ..base
        },
    );
    assert_near(
        "sgd dampening p",
        &p,
        &[0.46082225649499997, -1.2755912702875, 1.9981710340799999],
    );
    assert_near(
        "sgd dampening buf",
        &buf,
        &[0.23287193505, 0.310721452875, -0.6074223408000001],
    );
    let (p, buf) = sgd3(
        b,
        SgdStep {
            momentum: 0.9,
            nesterov: true,
            weight_decay: 0.01,
            ..base
        },
    );
    assert_near(
        "sgd nesterov p",
        &p,
        &[0.4372273119805, -1.31763754924625, 2.071068536512],
    );
    assert_near(
        "sgd nesterov buf",
        &buf,
        &[0.24917177905000001, 0.364327232875, -0.7042512448],
    );
    for h in [
        base,
        SgdStep {
            weight_decay: 0.01,
            grad_scale: 2.0,
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
            ..base
        },
    ] {
        sgd_typed::<B, f32>(b, h);
        sgd_typed::<B, f64>(b, h);
        sgd_typed::<B, bf16>(b, h);
        sgd_typed::<B, f16>(b, h);
    }
    // errors
    let mut p = up(b, &P0, &[3]);
    let g = up(b, &P0, &[3]);
    let mut buf = up(b, &P0[..2], &[2]);
    let mom = SgdStep {
        momentum: 0.9,
        ..base
    };
    let e = b
        .sgd_step(&mom, &mut [&mut p], &[&g], &mut [&mut buf])
        .unwrap_err();
    assert!(e.to_string().contains("bufs[0]"), "{e}");
    let e = b.sgd_step(&mom, &mut [&mut p], &[&g], &mut []).unwrap_err();
    assert!(
        matches!(e, Error::ShapeMismatch { op: "sgd_step", .. }),
        "{e}"
    );
    let e = b
        .sgd_step(&base, &mut [&mut p], &[&g], &mut [&mut buf])
        .unwrap_err();
    assert!(
        matches!(e, Error::ShapeMismatch { op: "sgd_step", .. }),
        "{e}"
    );
    let e = b
        .sgd_step(
            &SgdStep {
                nesterov: true,
                dampening: 0.1,
                ..mom
            },
            &mut [&mut p],
            &[&g],
            &mut [&mut buf],
        )
        .unwrap_err();
    assert!(
        matches!(e, Error::InvalidArgument { op: "sgd_step", .. }),
        "{e}"
    );
    assert_bits("sgd errors change nothing", &down(b, &p), &P0);
}

fn sgd_typed<B: Backend, T: Element>(b: &B, h: SgdStep) {
    let host = |seed: u64, scale: f64| -> Vec<Vec<T>> {
        SIZES
            .iter()
            .enumerate()
            .map(|(i, &n)| data(seed * 10 + i as u64, n, scale))
            .collect()
    };
    let mut hp = host(1, 2.0);
    let mut hb = if h.momentum != 0.0 {
        host(2, 0.5)
    } else {
        Vec::new()
    };
    let upl =
        |v: &[Vec<T>]| -> Vec<BTensor<B, T>> { v.iter().map(|x| up(b, x, &[x.len()])).collect() };
    let (mut p, mut bufs) = (upl(&hp), upl(&hb));
    for step in 0..3u64 {
        let hg = host(4 + step, 1.0);
        let g = upl(&hg);
        let h = SgdStep {
            first: step == 0,
            ..h
        };
        b.sgd_step(
            &h,
            &mut p.iter_mut().collect::<Vec<_>>(),
            &g.iter().collect::<Vec<_>>(),
            &mut bufs.iter_mut().collect::<Vec<_>>(),
        )
        .unwrap();
        let s = t::sgd_scalars::<T::Acc>(&h).unwrap();
        for i in 0..SIZES.len() {
            let mut none = Vec::new();
            let buf = hb.get_mut(i).unwrap_or(&mut none);
            t::sgd_update(&s, &mut hp[i], &hg[i], buf);
        }
    }
    for i in 0..SIZES.len() {
        let case = format!("sgd {} {h:?} tensor {i} ({} elements)", T::DTYPE, SIZES[i]);
        assert_bits(&format!("{case}: p"), &down(b, &p[i]), &hp[i]);
        if let Some(hb) = hb.get(i) {
            assert_bits(&format!("{case}: buf"), &down(b, &bufs[i]), hb);
        }
    }
}
