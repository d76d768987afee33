//! The f64 gradient check: every analytic gradient of a [`HetGat`] against
//! a central difference ([`check_gradients`]).
//!
//! A public module rather than test code because device backends check
//! their gradients with it too (`crates/rtx-backend-cuda/tests/gnn.rs`): the
//! model's backward is written by hand, so every backend that runs it
//! proves it against the loss.

use rtx_backend::prelude::*;
use rtx_backend::workload::values;

use crate::graph::harris_like_inputs;
use crate::{HetGat, HetGatConfig, HeteroGraph, Result};

/// What [`check_gradients`] found.
#[derive(Debug, Clone, Default)]
pub struct GradientCheck {
    /// Entries checked (parameters and inputs).
    pub checked: usize,
    /// One line per entry outside the tolerance: name, analytic gradient,
    /// central difference.
    pub mismatches: Vec<String>,
}

/// Checks the analytic gradients of an f64 model against central
/// differences (step `1e-5`), entry by entry, on `b`: the model of `config`
/// on `graph` from `seed`, with nonzero biases (so their paths are exercised
/// away from their zero init), inputs per node type `t` from stream
/// `40 + t`; every parameter, then every input. An entry passes when
/// `|analytic - fd| <= 1e-6 * max(|analytic|, |fd|) + 1e-9`.
///
/// # Errors
/// Model and backend errors (a mismatch is not an error: see
/// [`GradientCheck::mismatches`]).
pub fn check_gradients<B: Backend>(
    b: &B,
    graph: &HeteroGraph,
    config: HetGatConfig,
    seed: u64,
) -> Result<GradientCheck> {
    let mut x = harris_like_inputs::<B, f64>(b, graph, &config.in_features)?;
    let mut model = HetGat::<B, f64>::new(b, graph, config, seed)?;
    for i in 0..model.params().len() {
        if model.param_names()[i].ends_with(".bias") {
            let n = model.params()[i].numel();
            let v: Vec<f64> = values::<f64>(90 + i as u64, n)
                .iter()
                .map(|x| 0.3 * x)
                .collect();
            model.params_mut()[i] = b.upload(&v, &[1, n])?;
        }
    }
    let out = model.loss_and_grads(b, graph, &x, true)?;
    let h = 1e-5;
    let mut report = GradientCheck::default();
    let mut check = |name: &dyn Fn() -> String, an: f64, fd: f64| {
        if (an - fd).abs() > 1e-6 * an.abs().max(fd.abs()) + 1e-9 {
            report.mismatches.push(format!(
                "{}: analytic {an:e}, central difference {fd:e}",
                name()
            ));
        }
        report.checked += 1;
    };
    for i in 0..model.params().len() {
        let p0 = b.download(&model.params()[i])?;
        let shape = model.params()[i].shape().to_vec();
        let an = match &out.grads[i] {
            Some(t) => b.download(t)?,
            None => vec![0.0; p0.len()],
        };
        for j in 0..p0.len() {
            let mut loss_at = |v: f64| {
                let mut p = p0.clone();
                p[j] = v;
                model.params_mut()[i] = b.upload(&p, &shape)?;
                model.loss(b, graph, &x)
            };
            let fd = (loss_at(p0[j] + h)? - loss_at(p0[j] - h)?) / (2.0 * h);
            check(&|| format!("{}[{j}]", model.param_names()[i]), an[j], fd);
        }
        model.params_mut()[i] = b.upload(&p0, &shape)?;
    }
    for t in 0..x.len() {
        let x0 = b.download(&x[t])?;
        let shape = x[t].shape().to_vec();
        let an = match &out.input_grads[t] {
            Some(g) => b.download(g)?,
            None => vec![0.0; x0.len()],
        };
        for j in 0..x0.len() {
            let mut loss_at = |v: f64| {
                let mut p = x0.clone();
                p[j] = v;
                x[t] = b.upload(&p, &shape)?;
                model.loss(b, graph, &x)
            };
            let fd = (loss_at(x0[j] + h)? - loss_at(x0[j] - h)?) / (2.0 * h);
            check(&|| format!("x[{t}][{j}]"), an[j], fd);
        }
        x[t] = b.upload(&x0, &shape)?;
    }
    Ok(report)
}
