//! The training ops' definitions ([`TrainOps`](crate::TrainOps)): inverted
//! dropout with a counter-based mask, the softmax cross-entropy and the
//! regression losses (MSE, L1) with their gradients, and the optimizer
//! updates of `torch.optim` (Adam, AdamW, SGD with momentum, dampening,
//! Nesterov and weight decay). Each is a host reference function here: the
//! trait's defaults call them, the CPU backend takes those defaults, and the
//! CUDA kernels compute the same operations in the same order with explicit
//! round-to-nearest intrinsics, so every backend gives the same bits.
//!
//! **Precision.** Every op computes in [`Element::Acc`] (`f32` for `bf16`
//! and `f16`), each operation rounded (no fused multiply-add), and rounds
//! once to `T` where it stores a `T` element. Host scalars (a dropout's
//! scale, an optimizer's bias corrections) are computed in `f64` and rounded
//! once to `Acc`.
//!
//! **Errors.** The `check_*` functions here are what every backend runs
//! before any work: shapes, ranks, label bounds, a dropout probability, an
//! optimizer step.

use super::check::{mismatch, rank2};
use crate::{Element, Error, Result, workload};

/// The regression losses of [`TrainOps::regression_loss`](crate::TrainOps::regression_loss).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RegressionLoss {
    /// Squared error: loss `(y - t)^2`, gradient `2 (y - t)`.
    Mse,
    /// Absolute error: loss `|y - t|`, gradient `sign(y - t)` (`sign(±0) = ±0`, NaN stays NaN).
    L1,
}

/// One step of `torch.optim.Adam` (`decoupled == false`) or
/// `torch.optim.AdamW` (`decoupled == true`), non-amsgrad, non-maximize
/// (see [`TrainOps::adam_step`](crate::TrainOps::adam_step) for the formula).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct AdamStep {
    /// Learning rate.
    pub lr: f64,
    /// The first moment's decay (torch's `betas[0]`).
    pub beta1: f64,
    /// The second moment's decay (torch's `betas[1]`).
    pub beta2: f64,
    /// Added to the denominator.
    pub eps: f64,
    /// Weight decay: added to the gradient (Adam) or applied to the
    /// parameter (AdamW).
    pub weight_decay: f64,
    /// AdamW's decoupled weight decay.
    pub decoupled: bool,
    /// The step number, 1-based (torch's `state["step"]` after its increment).
    pub step: u64,
    /// Each gradient element is multiplied by this first (a loss scale's
    /// inverse, a mean's `1/n`; `1.0` for none).
    pub grad_scale: f64,
}

impl Default for AdamStep {
    /// torch's defaults: `lr = 1e-3`, `betas = (0.9, 0.999)`, `eps = 1e-8`,
    /// no weight decay, Adam (not AdamW), step 1, `grad_scale = 1`.
    fn default() -> Self {
        AdamStep {
            lr: 1e-3,
            beta1: 0.9,
            beta2: 0.999,
            eps: 1e-8,
            weight_decay: 0.0,
            decoupled: false,
            step: 1,
            grad_scale: 1.0,
        }
    }
}

/// One step of `torch.optim.SGD` (see [`TrainOps::sgd_step`](crate::TrainOps::sgd_step)).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SgdStep {
    /// Learning rate.
    pub lr: f64,
    /// Momentum factor (`0` for plain SGD: no momentum buffers).
    pub momentum: f64,
    /// Dampening of the momentum.
    pub dampening: f64,
    /// Nesterov momentum (needs `momentum > 0` and `dampening == 0`, as torch).
    pub nesterov: bool,
    /// Weight decay (L2, added to the gradient).
    pub weight_decay: f64,
    /// No momentum buffer yet: the buffer becomes the gradient (torch's
    /// first step); the buffers passed are overwritten.
    pub first: bool,
    /// Each gradient element is multiplied by this first (`1.0` for none).
    pub grad_scale: f64,
}

impl Default for SgdStep {
    /// torch's defaults: `lr = 1e-3`, no momentum, dampening, Nesterov or
    /// weight decay; the first step; `grad_scale = 1`.
    fn default() -> Self {
        SgdStep {
            lr: 1e-3,
            momentum: 0.0,
            dampening: 0.0,
            nesterov: false,
            weight_decay: 0.0,
            first: true,
            grad_scale: 1.0,
        }
    }
}

fn invalid(op: &'static str, detail: String) -> Error {
    Error::InvalidArgument { op, detail }
}

// ---------------------------------------------------------------- dropout

/// Checks a dropout probability: `p` in `[0, 1)`.
///
/// # Errors
/// [`Error::InvalidArgument`] naming `p`.
pub fn check_dropout(p: f64) -> Result<()> {
    if !(0.0..1.0).contains(&p) {
        return Err(invalid(
            "dropout",
            format!("p = {p} is not a probability in [0, 1)"),
        ));
    }
    Ok(())
}

/// The scale of kept elements: `1 / (1 - p)` computed in `f64`, rounded once to `A`.
pub fn dropout_scale<A: Element>(p: f64) -> A {
    A::from_f64(1.0 / (1.0 - p))
}

/// Whether dropout with probability `p` and `seed` keeps element `i` (flat,
/// row-major): `workload::unit(seed, i) >= p`, a counter-based draw (the same
/// on every backend, for any split of the work).
pub fn dropout_keeps(seed: u64, i: u64, p: f64) -> bool {
    workload::unit(seed, i) >= p
}

/// Inverted dropout of `x` (see [`TrainOps::dropout`](crate::TrainOps::dropout)): kept elements
/// `x[i] * s` in `Acc` rounded once to `T` ([`dropout_scale`], [`dropout_keeps`]),
/// dropped ones `+0.0`; `p == 0` gives a copy.
///
/// # Errors
/// As [`check_dropout`].
pub fn dropout<T: Element>(x: &[T], p: f64, seed: u64) -> Result<Vec<T>> {
    check_dropout(p)?;
    if p == 0.0 {
        return Ok(x.to_vec());
    }
    let s = dropout_scale::<T::Acc>(p);
    Ok(x.iter()
        .enumerate()
        .map(|(i, &v)| {
            if dropout_keeps(seed, i as u64, p) {
                T::from_acc(v.to_acc() * s)
            } else {
                T::ZERO
            }
        })
        .collect())
}

// ---------------------------------------------------------------- losses

/// Checks `cross_entropy(logits, labels)`: `logits` 2-D `[m, C]`, `m`
/// labels each below `C`. Returns `(m, C)`.
///
/// # Errors
/// [`Error::Rank`]; [`Error::ShapeMismatch`] naming the label count and the
/// shape; [`Error::IndexOutOfRange`] naming the first bad label's position
/// and value (with `bound = C`).
pub fn check_cross_entropy(logits: &[usize], labels: &[u32]) -> Result<(usize, usize)> {
    let (m, c) = check_cross_entropy_shape(logits, labels.len())?;
    if let Some((position, &value)) = labels.iter().enumerate().find(|(_, l)| **l as usize >= c) {
        return Err(Error::IndexOutOfRange {
            position,
            value: u64::from(value),
            bound: c,
        });
    }
    Ok((m, c))
}

/// The shape part of [`check_cross_entropy`] (a device backend checks the
/// labels' bounds where they live): `logits` 2-D `[m, C]`, `labels` labels.
///
/// # Errors
/// [`Error::Rank`]; [`Error::ShapeMismatch`] naming the label count and the shape.
pub fn check_cross_entropy_shape(logits: &[usize], labels: usize) -> Result<(usize, usize)> {
    let (m, c) = rank2("cross_entropy", "logits", logits)?;
    if labels != m {
        return Err(mismatch(
            "cross_entropy",
            format!("{labels} labels for logits of shape {logits:?} (want one per row)"),
        ));
    }
    Ok((m, c))
}

/// The row max of the cross-entropy: the values in column order, keeping the
/// first maximum; the first NaN met sticks (as [`segment_max`](crate::ops::segment_max_row)).
fn row_max<T: Element>(z: &[T]) -> T::Acc {
    let mut mx = z[0].to_acc();
    for &v in &z[1..] {
        let v = v.to_acc();
        if !mx.is_nan() && (v > mx || v.is_nan()) {
            mx = v;
        }
    }
    mx
}

/// One row of [`cross_entropy`]: the loss, and the gradient into `grad`
/// (`z.len() == grad.len() >= 1`, `y < z.len()`, `scale` already in `Acc`).
pub fn cross_entropy_row<T: Element>(z: &[T], y: usize, scale: T::Acc, grad: &mut [T]) -> T::Acc {
    let mx = row_max(z);
    let mut s = T::Acc::ZERO;
    for &v in z {
        s = s + (v.to_acc() - mx).exp();
    }
    let one = T::Acc::from_f64(1.0);
    for (j, (g, &v)) in grad.iter_mut().zip(z).enumerate() {
        let ind = if j == y { one } else { T::Acc::ZERO };
        *g = T::from_acc(((v.to_acc() - mx).exp() / s - ind) * scale);
    }
    (mx + s.ln()) - z[y].to_acc()
}

/// Softmax cross-entropy of `logits: [m, c]` against `labels` (see
/// [`TrainOps::cross_entropy`](crate::TrainOps::cross_entropy)): per-row
/// losses (`m`, in `Acc`) and the gradient (`m * c`, in `T`). Arguments as
/// [`check_cross_entropy`] accepts them.
pub fn cross_entropy<T: Element>(
    logits: &[T],
    m: usize,
    c: usize,
    labels: &[u32],
    scale: f64,
) -> (Vec<T::Acc>, Vec<T>) {
    let scale = T::Acc::from_f64(scale);
    let mut grad = vec![T::ZERO; m * c];
    let loss = (0..m)
        .map(|i| {
            let row = &logits[i * c..(i + 1) * c];
            cross_entropy_row(
                row,
                labels[i] as usize,
                scale,
                &mut grad[i * c..(i + 1) * c],
            )
        })
        .collect();
    (loss, grad)
}

/// Checks `regression_loss(y, target)`: `y` 2-D `[m, d]`, `target` the same
/// shape. Returns `(m, d)`.
///
/// # Errors
/// [`Error::Rank`]; [`Error::ShapeMismatch`] naming both shapes.
pub fn check_regression(y: &[usize], target: &[usize]) -> Result<(usize, usize)> {
    let (m, d) = rank2("regression_loss", "y", y)?;
    if target != y {
        return Err(mismatch(
            "regression_loss",
            format!("y {y:?} and target {target:?} (want equal shapes)"),
        ));
    }
    Ok((m, d))
}

/// `sign(d)`: `1`, `-1`, or `d` itself for `±0` and NaN.
fn sign<A: Element>(d: A) -> A {
    if d > A::ZERO {
        A::from_f64(1.0)
    } else if d < A::ZERO {
        A::from_f64(-1.0)
    } else {
        d
    }
}

/// One row of [`regression_loss`]: the loss (a sum over the columns in
/// order from `+0`), and the gradient into `grad`.
pub fn regression_row<T: Element>(
    kind: RegressionLoss,
    y: &[T],
    t: &[T::Acc],
    scale: T::Acc,
    grad: &mut [T],
) -> T::Acc {
    let two = T::Acc::from_f64(2.0);
    let mut loss = T::Acc::ZERO;
    for ((g, &yv), &tv) in grad.iter_mut().zip(y).zip(t) {
        let d = yv.to_acc() - tv;
        match kind {
            RegressionLoss::Mse => {
                loss = loss + d * d;
                *g = T::from_acc((two * d) * scale);
            }
            RegressionLoss::L1 => {
                let a = if d < T::Acc::ZERO { -d } else { d };
                loss = loss + a;
                *g = T::from_acc(sign(d) * scale);
            }
        }
    }
    loss
}

/// The regression loss of `y: [m, d]` against `target` (see
/// [`TrainOps::regression_loss`](crate::TrainOps::regression_loss)): per-row
/// losses (`m`, in `Acc`) and the gradient (`m * d`, in `T`).
pub fn regression_loss<T: Element>(
    kind: RegressionLoss,
    y: &[T],
    target: &[T::Acc],
    m: usize,
    d: usize,
    scale: f64,
) -> (Vec<T::Acc>, Vec<T>) {
    let scale = T::Acc::from_f64(scale);
    let mut grad = vec![T::ZERO; m * d];
    let loss = (0..m)
        .map(|i| {
            let r = i * d..(i + 1) * d;
            regression_row(kind, &y[r.clone()], &target[r.clone()], scale, &mut grad[r])
        })
        .collect();
    (loss, grad)
}

// ---------------------------------------------------------------- optimizers

/// Checks the tensor lists of an optimizer step: every list in `others`
/// (named) has one tensor per parameter, each of its parameter's shape.
///
/// # Errors
/// [`Error::ShapeMismatch`] naming the list and the tensor index.
pub fn check_optimizer(
    op: &'static str,
    params: &[&[usize]],
    others: &[(&'static str, &[&[usize]])],
) -> Result<()> {
    for (name, list) in others {
        if list.len() != params.len() {
            return Err(mismatch(
                op,
                format!(
                    "{} {name} for {} params (want one per param)",
                    list.len(),
                    params.len()
                ),
            ));
        }
        for (i, (s, p)) in list.iter().zip(params).enumerate() {
            if s != p {
                return Err(mismatch(
                    op,
                    format!("{name}[{i}] has shape {s:?} but params[{i}] has shape {p:?}"),
                ));
            }
        }
    }
    Ok(())
}

/// The host scalars of an Adam step, each computed in `f64` and rounded once
/// to `A`, and its weight-decay flags.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct AdamScalars<A> {
    /// `grad_scale`.
    pub grad_scale: A,
    /// `weight_decay` (Adam's L2 term).
    pub weight_decay: A,
    /// `1 - beta1`.
    pub one_minus_beta1: A,
    /// `beta2`.
    pub beta2: A,
    /// `1 - beta2`.
    pub one_minus_beta2: A,
    /// `1 - lr * weight_decay` (AdamW's decay of the parameter).
    pub decay: A,
    /// `lr / (1 - beta1^step)`.
    pub step_size: A,
    /// `sqrt(1 - beta2^step)`.
    pub bc2_sqrt: A,
    /// `eps`.
    pub eps: A,
    /// `!decoupled && weight_decay != 0`: `g = g + wd * p`.
    pub decay_grad: bool,
    /// `decoupled && weight_decay != 0`: `p = p * (1 - lr * wd)`.
    pub decay_param: bool,
}

/// The scalars of step `h` in `A`.
///
/// # Errors
/// [`Error::InvalidArgument`] when `h.step == 0` (steps are 1-based).
pub fn adam_scalars<A: Element>(h: &AdamStep) -> Result<AdamScalars<A>> {
    if h.step == 0 {
        return Err(invalid(
            "adam_step",
            "step = 0 (steps are 1-based: the first step is 1)".into(),
        ));
    }
    let t = h.step as f64;
    let bc1 = 1.0 - h.beta1.powf(t);
    let bc2 = 1.0 - h.beta2.powf(t);
    Ok(AdamScalars {
        grad_scale: A::from_f64(h.grad_scale),
        weight_decay: A::from_f64(h.weight_decay),
        one_minus_beta1: A::from_f64(1.0 - h.beta1),
        beta2: A::from_f64(h.beta2),
        one_minus_beta2: A::from_f64(1.0 - h.beta2),
        decay: A::from_f64(1.0 - h.lr * h.weight_decay),
        step_size: A::from_f64(h.lr / bc1),
        bc2_sqrt: A::from_f64(bc2.sqrt()),
        eps: A::from_f64(h.eps),
        decay_grad: !h.decoupled && h.weight_decay != 0.0,
        decay_param: h.decoupled && h.weight_decay != 0.0,
    })
}

/// One element of an Adam step in `A`: `(p, m, v)` after it, from the
/// parameter `p`, the gradient `g` and the moments `m`, `v` before.
pub fn adam_element<A: Element>(s: &AdamScalars<A>, p: A, g: A, m: A, v: A) -> (A, A, A) {
    let mut p = p;
    let mut g = g * s.grad_scale;
    if s.decay_grad {
        g = g + s.weight_decay * p;
    }
    if s.decay_param {
        p = p * s.decay;
    }
    let m = m + s.one_minus_beta1 * (g - m);
    let v = (v * s.beta2) + ((g * g) * s.one_minus_beta2);
    let denom = (v.sqrt() / s.bc2_sqrt) + s.eps;
    let p = p - s.step_size * (m / denom);
    (p, m, v)
}

/// An Adam step over one tensor, in place: each element widened to `Acc`,
/// [`adam_element`], `p`, `m` and `v` each rounded once to `T` (the update
/// of `p` uses the `Acc` values of the new `m` and `v`). Equal lengths.
pub fn adam_update<T: Element>(
    s: &AdamScalars<T::Acc>,
    p: &mut [T],
    g: &[T],
    m: &mut [T],
    v: &mut [T],
) {
    for (((p, g), m), v) in p.iter_mut().zip(g).zip(m.iter_mut()).zip(v.iter_mut()) {
        let (np, nm, nv) = adam_element(s, p.to_acc(), g.to_acc(), m.to_acc(), v.to_acc());
        *p = T::from_acc(np);
        *m = T::from_acc(nm);
        *v = T::from_acc(nv);
    }
}

/// The host scalars of an SGD step, each rounded once to `A`, and its flags.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SgdScalars<A> {
    /// `grad_scale`.
    pub grad_scale: A,
    /// `weight_decay`.
    pub weight_decay: A,
    /// `momentum`.
    pub momentum: A,
    /// `1 - dampening`.
    pub one_minus_dampening: A,
    /// `lr`.
    pub lr: A,
    /// `weight_decay != 0`.
    pub decay: bool,
    /// `momentum != 0`: a buffer per parameter.
    pub has_momentum: bool,
    /// Nesterov momentum.
    pub nesterov: bool,
    /// The first step: the buffer becomes the gradient.
    pub first: bool,
}

/// The scalars of step `h` in `A`.
///
/// # Errors
/// [`Error::InvalidArgument`] for Nesterov without momentum or with
/// dampening (torch rejects both).
pub fn sgd_scalars<A: Element>(h: &SgdStep) -> Result<SgdScalars<A>> {
    if h.nesterov && (h.momentum == 0.0 || h.dampening != 0.0) {
        return Err(invalid(
            "sgd_step",
            format!(
                "Nesterov momentum needs a momentum and zero dampening (momentum = {}, dampening = {})",
                h.momentum, h.dampening
            ),
        ));
    }
    Ok(SgdScalars {
        grad_scale: A::from_f64(h.grad_scale),
        weight_decay: A::from_f64(h.weight_decay),
        momentum: A::from_f64(h.momentum),
        one_minus_dampening: A::from_f64(1.0 - h.dampening),
        lr: A::from_f64(h.lr),
        decay: h.weight_decay != 0.0,
        has_momentum: h.momentum != 0.0,
        nesterov: h.nesterov,
        first: h.first,
    })
}

/// One element of an SGD step in `A`: `(p, buf)` after it (`buf` unchanged
/// without momentum).
pub fn sgd_element<A: Element>(s: &SgdScalars<A>, p: A, g: A, buf: A) -> (A, A) {
    let mut g = g * s.grad_scale;
    if s.decay {
        g = g + s.weight_decay * p;
    }
    let mut buf = buf;
    if s.has_momentum {
        buf = if s.first {
            g
        } else {
            (buf * s.momentum) + (g * s.one_minus_dampening)
        };
        g = if s.nesterov {
            g + buf * s.momentum
        } else {
            buf
        };
    }
    (p - s.lr * g, buf)
}

/// An SGD step over one tensor, in place (`buf` empty without momentum, else
/// `p`'s length): each element widened to `Acc`, [`sgd_element`], `p` and
/// `buf` each rounded once to `T`.
pub fn sgd_update<T: Element>(s: &SgdScalars<T::Acc>, p: &mut [T], g: &[T], buf: &mut [T]) {
    if s.has_momentum {
        for ((p, g), b) in p.iter_mut().zip(g).zip(buf.iter_mut()) {
            let (np, nb) = sgd_element(s, p.to_acc(), g.to_acc(), b.to_acc());
            *p = T::from_acc(np);
            *b = T::from_acc(nb);
        }
    } else {
        for (p, g) in p.iter_mut().zip(g) {
            *p = T::from_acc(sgd_element(s, p.to_acc(), g.to_acc(), T::Acc::ZERO).0);
        }
    }
}

/// Checks an SGD step's buffer count: none without momentum, one per param with it.
///
/// # Errors
/// [`Error::ShapeMismatch`] naming the counts.
pub fn check_sgd_bufs(h: &SgdStep, params: usize, bufs: usize) -> Result<()> {
    let want = if h.momentum != 0.0 { params } else { 0 };
    if bufs != want {
        return Err(mismatch(
            "sgd_step",
            format!(
                "{bufs} momentum buffers for {params} params with momentum = {} (want {want})",
                h.momentum
            ),
        ));
    }
    Ok(())
}

/// The shapes of a list of tensors.
pub fn shapes<'a, S: 'a>(ts: impl IntoIterator<Item = &'a crate::Tensor<S>>) -> Vec<&'a [usize]> {
    ts.into_iter().map(|x| x.shape()).collect()
}

/// Everything an `adam_step` checks before any work, and its scalars: the
/// step's settings ([`adam_scalars`]) and equal shapes of `params`,
/// `grads`, `m` and `v` pairwise ([`check_optimizer`]). Every backend's
/// `adam_step` starts here.
///
/// # Errors
/// As [`adam_scalars`] and [`check_optimizer`].
pub fn adam_checked<A: Element, S>(
    h: &AdamStep,
    params: &[&mut crate::Tensor<S>],
    grads: &[&crate::Tensor<S>],
    m: &[&mut crate::Tensor<S>],
    v: &[&mut crate::Tensor<S>],
) -> Result<AdamScalars<A>> {
    let s = adam_scalars::<A>(h)?;
    check_optimizer(
        "adam_step",
        &shapes(params.iter().map(|x| &**x)),
        &[
            ("grads", &shapes(grads.iter().copied())),
            ("m", &shapes(m.iter().map(|x| &**x))),
            ("v", &shapes(v.iter().map(|x| &**x))),
        ],
    )?;
    Ok(s)
}

/// Everything an `sgd_step` checks before any work, and its scalars: the
/// step's settings ([`sgd_scalars`]), the buffer count
/// ([`check_sgd_bufs`]) and equal shapes of `params`, `grads` and (with
/// momentum) `bufs`. Every backend's `sgd_step` starts here.
///
/// # Errors
/// As [`sgd_scalars`], [`check_sgd_bufs`] and [`check_optimizer`].
pub fn sgd_checked<A: Element, S>(
    h: &SgdStep,
    params: &[&mut crate::Tensor<S>],
    grads: &[&crate::Tensor<S>],
    bufs: &[&mut crate::Tensor<S>],
) -> Result<SgdScalars<A>> {
    let s = sgd_scalars::<A>(h)?;
    check_sgd_bufs(h, params.len(), bufs.len())?;
    let gs = shapes(grads.iter().copied());
    let bs = shapes(bufs.iter().map(|x| &**x));
    let mut lists: Vec<(&'static str, &[&[usize]])> = vec![("grads", &gs)];
    if s.has_momentum {
        lists.push(("bufs", &bs));
    }
    check_optimizer("sgd_step", &shapes(params.iter().map(|x| &**x)), &lists)?;
    Ok(s)
}
