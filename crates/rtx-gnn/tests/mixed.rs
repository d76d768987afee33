//! HetGAT in mixed precision (bf16 / f16 activations and messages, f32
//! master weights and loss) on the CPU backend: the same loss and parameter
//! bits run to run, for any thread count and with the index ops on the host
//! reference; gradients within the half type's tolerance of the f32 ones.

use rtx_backend::prelude::*;
use rtx_backend::{BTensor, Element, HostIndexOps, bf16, f16};
use rtx_backend_cpu::{CpuBackend, DenseKernels};
use rtx_gnn::determinism::{mixed_training_bits, training_config};
use rtx_gnn::graph::{harris_like, harris_like_inputs};
use rtx_gnn::{HetGat, HeteroGraph, MixedHetGat};

fn graph() -> HeteroGraph {
    harris_like(400, 200, [800, 460, 460], 7).unwrap()
}

fn train<B: Backend, H: Element<Acc = f32>>(b: &B, steps: usize) -> (Vec<u64>, Vec<Vec<u64>>) {
    mixed_training_bits::<B, H>(b, &graph(), steps).unwrap()
}

fn deterministic<H: Element<Acc = f32>>() {
    for dense in [DenseKernels::Fast, DenseKernels::Reference] {
        let on = |threads: usize| {
            let b = CpuBackend::with_threads(threads).unwrap().with_dense(dense);
            train::<_, H>(&b, 3)
        };
        let one = on(1);
        assert_eq!(on(1), one, "{} {dense:?}: two runs differ", H::DTYPE);
        for threads in [2, 5] {
            assert_eq!(
                on(threads),
                one,
                "{} {dense:?}: 1 vs {threads} threads differ",
                H::DTYPE
            );
        }
        let host = train::<_, H>(&HostIndexOps::new(CpuBackend::new().with_dense(dense)), 3);
        assert_eq!(
            host,
            one,
            "{} {dense:?}: host reference index ops differ",
            H::DTYPE
        );
    }
}

/// The same loss bits (and parameters) every run, for 1, 2 and 5 threads,
/// and with the index and fused ops on the host reference (`HostIndexOps`).
#[test]
fn bf16_training_is_deterministic_across_runs_threads_and_the_host_reference() {
    deterministic::<bf16>();
}

#[test]
fn f16_training_is_deterministic_across_runs_threads_and_the_host_reference() {
    deterministic::<f16>();
}

/// `MixedHetGat`'s one-op update is its definition: the loss and the `f32`
/// gradients of `loss_and_grads_mixed` (the weights rounded to `H` at each
/// step), then SGD on the `f32` master weights; equal bits step by step.
fn fused_update_is_sgd_on_the_widened_gradients<H: Element<Acc = f32>>() {
    let b = CpuBackend::new();
    let g = graph();
    let mut plain = HetGat::<_, f32>::new(&b, &g, training_config(&g), 5).unwrap();
    let x: Vec<BTensor<CpuBackend, H>> =
        harris_like_inputs::<_, f32>(&b, &g, &plain.config().in_features)
            .unwrap()
            .iter()
            .map(|t| b.convert::<f32, H>(t).unwrap())
            .collect();
    let same = HetGat::<_, f32>::new(&b, &g, training_config(&g), 5).unwrap();
    let mut mixed = MixedHetGat::<_, H>::new(&b, same).unwrap();
    for step in 0..4 {
        let want = plain.loss_and_grads_mixed(&b, &g, &x, false).unwrap();
        let want_loss = want.loss.read(&b).unwrap();
        plain.sgd(&b, &want.grads, 0.05).unwrap();
        let got = mixed.train_step(&b, &g, &x, 0.05).unwrap();
        assert_eq!(
            got.to_bits(),
            want_loss.to_bits(),
            "{} step {step}: loss",
            H::DTYPE
        );
        assert_eq!(
            mixed.master().param_bits(&b).unwrap(),
            plain.param_bits(&b).unwrap(),
            "{} step {step}: master weights",
            H::DTYPE
        );
    }
}

#[test]
fn the_one_op_update_equals_sgd_on_the_widened_gradients() {
    fused_update_is_sgd_on_the_widened_gradients::<bf16>();
    fused_update_is_sgd_on_the_widened_gradients::<f16>();
}

/// The loss decreases, and its first value is the f32 model's within the
/// type's tolerance; yet the runs are not the f32 run (the pass really is
/// in the half type).
#[test]
fn mixed_training_converges_close_to_f32() {
    let b = CpuBackend::reference();
    let (f32_losses, _) = rtx_gnn::determinism::training_bits::<_, f32>(&b, &graph(), 6).unwrap();
    let l32 = f32::from_bits(f32_losses[0] as u32);
    for (ty, tol, losses) in [
        ("bf16", 3e-2, train::<_, bf16>(&b, 6).0),
        ("f16", 5e-3, train::<_, f16>(&b, 6).0),
    ] {
        let l: Vec<f32> = losses.iter().map(|&x| f32::from_bits(x as u32)).collect();
        assert!(l.windows(2).all(|w| w[1] < w[0]), "{ty}: losses {l:?}");
        assert!(
            ((l[0] - l32) / l32).abs() < tol,
            "{ty}: first loss {} vs f32 {l32}",
            l[0]
        );
        assert_ne!(losses, f32_losses, "{ty}: the same bits as f32");
    }
}

/// Relative 2-norm error of `got` against `want`.
fn rel_err(got: &[f32], want: &[f32]) -> f64 {
    let (mut num, mut den) = (0.0f64, 0.0f64);
    for (&g, &w) in got.iter().zip(want) {
        num += (f64::from(g) - f64::from(w)).powi(2);
        den += f64::from(w).powi(2);
    }
    (num / den.max(1e-300)).sqrt()
}

/// The relative errors of every gradient (parameters, then inputs) of a
/// mixed-precision pass in `H` against the f32 pass, after checking each is
/// within `tol` and the loss too.
fn gradient_errors<H: Element>(tol: f64) -> Vec<f64> {
    let b = CpuBackend::reference();
    let g = graph();
    let model = HetGat::<_, f32>::new(&b, &g, training_config(&g), 42).unwrap();
    // the inputs rounded to H, and the same values in f32
    let x32: Vec<BTensor<CpuBackend, f32>> =
        harris_like_inputs::<_, f32>(&b, &g, &model.config().in_features)
            .unwrap()
            .iter()
            .map(|t| {
                b.convert::<H, f32>(&b.convert::<f32, H>(t).unwrap())
                    .unwrap()
            })
            .collect();
    let xh: Vec<BTensor<CpuBackend, H>> = x32.iter().map(|t| b.convert(t).unwrap()).collect();
    let full = model.loss_and_grads(&b, &g, &x32, true).unwrap();
    let mixed = model.loss_and_grads_mixed(&b, &g, &xh, true).unwrap();
    let lm = mixed.loss.read(&b).unwrap();
    assert!(
        f64::from((lm - full.loss) / full.loss).abs() < tol,
        "{}: loss {lm} vs f32 {}",
        H::DTYPE,
        full.loss
    );
    let mut errors = Vec::new();
    let pairs = full.grads.iter().zip(&mixed.grads).zip(model.param_names());
    for ((want, got), name) in pairs {
        match (want, got) {
            (Some(w), Some(m)) => {
                let (w, m) = (b.download(w).unwrap(), b.download(m).unwrap());
                let e = rel_err(&m, &w);
                assert!(
                    e < tol,
                    "{}: gradient of {name}: relative error {e}",
                    H::DTYPE
                );
                errors.push(e);
            }
            (None, None) => {}
            _ => panic!("{}: gradient of {name} present in one pass only", H::DTYPE),
        }
    }
    assert!(errors.len() >= 10, "{} gradients checked", errors.len());
    assert!(
        errors.iter().any(|&e| e > 0.0),
        "{}: every gradient is the f32 one",
        H::DTYPE
    );
    for (t, (w, m)) in full.input_grads.iter().zip(&mixed.input_grads).enumerate() {
        let (w, m) = (
            b.download(w.as_ref().unwrap()).unwrap(),
            b.download(m.as_ref().unwrap()).unwrap(),
        );
        let e = rel_err(&m, &w);
        assert!(
            e < tol,
            "{}: input gradient of type {t}: relative error {e}",
            H::DTYPE
        );
        errors.push(e);
    }
    errors
}

/// The median of `v`.
fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// The mixed-precision gradients of every parameter and input are the f32
/// gradients (same weights, the same rounded inputs) within the half type's
/// tolerance, in relative 2-norm: at most 48 unit roundoffs `u` of the type
/// (`2^-8` for bf16, `2^-11` for f16; the attention gradients of the first
/// layer, through two softmax backwards, measure about 25u), the median
/// within 8u; and f16's errors are well below bf16's (they scale with `u`).
#[test]
fn gradients_match_f32_within_the_half_types_tolerance() {
    let u_bf16 = f64::powi(2.0, -8);
    let u_f16 = f64::powi(2.0, -11);
    let eb = gradient_errors::<bf16>(48.0 * u_bf16);
    let eh = gradient_errors::<f16>(48.0 * u_f16);
    assert!(median(eb.clone()) < 8.0 * u_bf16, "bf16 errors {eb:?}");
    assert!(median(eh.clone()) < 8.0 * u_f16, "f16 errors {eh:?}");
    let (sb, sh): (f64, f64) = (eb.iter().sum(), eh.iter().sum());
    assert!(sh < sb / 2.0, "f16 total error {sh} vs bf16 {sb}");
}
