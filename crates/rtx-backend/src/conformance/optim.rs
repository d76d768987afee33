//! [`TrainOps`](crate::TrainOps), the optimizer steps: Adam, AdamW and SGD
//! against hand-computed steps of torch's formulas (`f64` literals below,
//! worked out independently), and in all four element types bit for bit
//! against the [`ops::train`](crate::ops::train) reference over several
//! tensors of sizes that are not multiples of a block; the errors.

use super::harness::{assert_bits, down, up};
use super::train::{assert_near, data};
use crate::ops::train as t;
use crate::{AdamStep, BTensor, Backend, Element, Error, SgdStep, bf16, f16};

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
