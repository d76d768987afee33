//! [`TrainOps`](crate::TrainOps), dropout and the losses: dropout against
//! its mask computed here from `workload::unit`, the losses against naive
//! `f64` code and finite differences, and every op in all four element types
//! bit for bit against the [`ops::train`](crate::ops::train) reference (the
//! optimizers: `optim.rs`).

use super::harness::{assert_bits, down, up};
use crate::ops::train as t;
use crate::workload::{indices, unit, values};
use crate::{Backend, Element, Error, RegressionLoss, bf16, f16};

/// `values` scaled by `scale`, rounded once to `T`.
pub(super) fn data<T: Element>(seed: u64, n: usize, scale: f64) -> Vec<T> {
    values::<f64>(seed, n)
        .iter()
        .map(|&v| T::from_f64(v * scale))
        .collect()
}

/// `got` within 4 ulp of each `want` (hand-computed `f64` literals).
pub(super) fn assert_near(case: &str, got: &[f64], want: &[f64]) {
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
