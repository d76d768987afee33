//! [`TrainOps`]: the ops of training beyond the model's forward and backward
//! passes: dropout, the losses and the optimizer steps.

use crate::ops::train::{self as t, AdamStep, RegressionLoss, SgdStep};
use crate::{BTensor, DenseOps, Element, IndexOps, Result};

/// What a loss returns: the per-row losses `[m, 1]` in `T::Acc` and the
/// gradient in `T` (of the input's shape).
pub type LossGrad<B, T> = (BTensor<B, <T as Element>::Acc>, BTensor<B, T>);

/// Training ops, each defined by its host reference in
/// [`ops::train`](crate::ops::train) and bit-exact on every backend (the CPU
/// backend takes these defaults; the CUDA backend's kernels compute the same
/// operations in the same order). Every op computes in `T::Acc` (`f32` for
/// `bf16` and `f16`) and rounds once where it stores a `T`; every op checks
/// its arguments before any work and returns an error, never panics.
///
/// Every default is a host round trip (download, the reference, upload).
pub trait TrainOps: DenseOps + IndexOps {
    /// Inverted dropout with a counter-based mask: element `i` (flat,
    /// row-major) is kept iff `workload::unit(seed, i) >= p`; a kept element
    /// is `x[i] * s` with `s = 1/(1-p)` computed in `f64` then rounded to
    /// `T::Acc`, the product in `Acc` rounded once to `T`; a dropped one is
    /// `+0.0`. `p == 0` returns a copy. Its backward is the same call on the
    /// gradient with the same seed.
    ///
    /// Default: a host round trip over [`ops::train::dropout`](crate::ops::train::dropout).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`](crate::Error::InvalidArgument) naming `p`
    /// unless `0 <= p < 1`.
    fn dropout<T: Element>(
        &self,
        x: &BTensor<Self, T>,
        p: f64,
        seed: u64,
    ) -> Result<BTensor<Self, T>> {
        t::check_dropout(p)?;
        let hx = self.download(x)?;
        self.upload(&t::dropout(&hx, p, seed)?, x.shape())
    }

    /// Softmax cross-entropy of `logits: [m, C]` against `labels` (`m`
    /// entries, each `< C`), computed stably in `T::Acc`, per row `i`:
    /// `mx = max_j z_j` (the first maximum; the first NaN sticks);
    /// `s = sum_j exp(z_j - mx)` in column order from `+0` (the portable
    /// [`exp`](crate::exp)); `loss_i = (mx + ln(s)) - z_{y_i}` (the portable
    /// [`ln`](crate::exp::ln64)); `grad_ij = (exp(z_j - mx) / s - [j == y_i]) * scale`
    /// (`scale` rounded to `Acc` once; each gradient rounded to `T` once).
    /// Returns `(loss [m, 1] in T::Acc, grad [m, C] in T)`; `m == 0` gives
    /// empty tensors. (A mean over the rows is `scale = 1/m`.)
    ///
    /// Default: a host round trip over [`ops::train::cross_entropy`](crate::ops::train::cross_entropy).
    ///
    /// # Errors
    /// [`Error::Rank`](crate::Error::Rank);
    /// [`Error::ShapeMismatch`](crate::Error::ShapeMismatch) unless there is
    /// one label per row; [`Error::IndexOutOfRange`](crate::Error::IndexOutOfRange)
    /// naming the first label `>= C` (its position and value).
    fn cross_entropy<T: Element>(
        &self,
        logits: &BTensor<Self, T>,
        labels: &Self::Index,
        scale: f64,
    ) -> Result<LossGrad<Self, T>> {
        let hl = self.index_to_host(labels)?;
        let (m, c) = t::check_cross_entropy(logits.shape(), &hl)?;
        let hz = self.download(logits)?;
        let (loss, grad) = t::cross_entropy(&hz, m, c, &hl, scale);
        Ok((self.upload(&loss, &[m, 1])?, self.upload(&grad, &[m, c])?))
    }

    /// Regression loss of `y: [m, d]` (in `T`) against `target: [m, d]` (in
    /// `T::Acc`), in `T::Acc`: per-row loss `[m, 1]` = the sum over the
    /// columns in order from `+0` of `(y - t)^2` ([`RegressionLoss::Mse`]) or
    /// `|y - t|` ([`RegressionLoss::L1`]); gradient `[m, d]` in `T` =
    /// `(2 * (y - t)) * scale` (Mse) or `sign(y - t) * scale` (L1; `sign(±0) = ±0`,
    /// NaN stays NaN), `scale` rounded to `Acc` once, each gradient rounded
    /// to `T` once.
    ///
    /// Default: a host round trip over [`ops::train::regression_loss`](crate::ops::train::regression_loss).
    ///
    /// # Errors
    /// [`Error::Rank`](crate::Error::Rank); [`Error::ShapeMismatch`](crate::Error::ShapeMismatch) naming both shapes.
    fn regression_loss<T: Element>(
        &self,
        kind: RegressionLoss,
        y: &BTensor<Self, T>,
        target: &BTensor<Self, T::Acc>,
        scale: f64,
    ) -> Result<LossGrad<Self, T>> {
        let (m, d) = t::check_regression(y.shape(), target.shape())?;
        let hy = self.download(y)?;
        let ht = self.download(target)?;
        let (loss, grad) = t::regression_loss(kind, &hy, &ht, m, d, scale);
        Ok((self.upload(&loss, &[m, 1])?, self.upload(&grad, &[m, d])?))
    }

    /// One step of `torch.optim.Adam` / `AdamW` (non-amsgrad, non-maximize)
    /// over many tensors at once, in place (a device backend runs it as one
    /// multi-tensor launch). Per element, in `T::Acc`, each operation
    /// rounded, in this order:
    ///
    /// ```text
    /// g = grad * grad_scale
    /// if !decoupled && wd != 0 { g = g + wd * p }        (Adam's L2)
    /// if decoupled && wd != 0 { p = p * (1 - lr*wd) }    (AdamW)
    /// m = m + (1-beta1) * (g - m)                        (torch's lerp_)
    /// v = (v * beta2) + ((g * g) * (1-beta2))
    /// denom = (sqrt(v) / bc2_sqrt) + eps
    /// p = p - step_size * (m / denom)
    /// ```
    ///
    /// with the host scalars computed in `f64` and rounded to `Acc` once:
    /// `1-beta1`, `1-beta2`, `1 - lr*wd`, `step_size = lr / (1 - beta1^step)`,
    /// `bc2_sqrt = sqrt(1 - beta2^step)` (see [`ops::train::adam_scalars`](crate::ops::train::adam_scalars)).
    /// `p`, `m` and `v` are each rounded once to `T` when stored.
    ///
    /// Default: a host round trip over [`ops::train::adam_update`](crate::ops::train::adam_update), tensor by tensor.
    ///
    /// # Errors
    /// [`Error::ShapeMismatch`](crate::Error::ShapeMismatch) naming the list
    /// and the tensor index unless `params`, `grads`, `m` and `v` match
    /// pairwise; [`Error::InvalidArgument`](crate::Error::InvalidArgument)
    /// for `step == 0`. Both before anything changes.
    fn adam_step<T: Element>(
        &self,
        h: &AdamStep,
        params: &mut [&mut BTensor<Self, T>],
        grads: &[&BTensor<Self, T>],
        m: &mut [&mut BTensor<Self, T>],
        v: &mut [&mut BTensor<Self, T>],
    ) -> Result<()> {
        let s = t::adam_checked::<T::Acc, _>(h, params, grads, m, v)?;
        for i in 0..params.len() {
            let mut hp = self.download(params[i])?;
            let hg = self.download(grads[i])?;
            let mut hm = self.download(m[i])?;
            let mut hv = self.download(v[i])?;
            t::adam_update(&s, &mut hp, &hg, &mut hm, &mut hv);
            let shape = params[i].shape().to_vec();
            *params[i] = self.upload(&hp, &shape)?;
            *m[i] = self.upload(&hm, &shape)?;
            *v[i] = self.upload(&hv, &shape)?;
        }
        Ok(())
    }

    /// One step of `torch.optim.SGD` over many tensors at once, in place. Per
    /// element, in `T::Acc`, each operation rounded:
    ///
    /// ```text
    /// g = grad * grad_scale
    /// if wd != 0 { g = g + wd * p }
    /// if momentum != 0 {
    ///     buf = if first { g } else { (buf * momentum) + (g * (1-dampening)) }
    ///     g = if nesterov { g + buf * momentum } else { buf }
    /// }
    /// p = p - lr * g
    /// ```
    ///
    /// (`1-dampening` computed in `f64`, every scalar rounded to `Acc` once;
    /// `p` and `buf` each rounded once to `T` when stored.) `bufs` is empty
    /// when `momentum == 0`, else one per param.
    ///
    /// Default: a host round trip over [`ops::train::sgd_update`](crate::ops::train::sgd_update), tensor by tensor.
    ///
    /// # Errors
    /// [`Error::ShapeMismatch`](crate::Error::ShapeMismatch) naming the list
    /// and the tensor index (or the buffer count);
    /// [`Error::InvalidArgument`](crate::Error::InvalidArgument) for Nesterov
    /// without momentum or with dampening. Both before anything changes.
    fn sgd_step<T: Element>(
        &self,
        h: &SgdStep,
        params: &mut [&mut BTensor<Self, T>],
        grads: &[&BTensor<Self, T>],
        bufs: &mut [&mut BTensor<Self, T>],
    ) -> Result<()> {
        let s = t::sgd_checked::<T::Acc, _>(h, params, grads, bufs)?;
        for i in 0..params.len() {
            let mut hp = self.download(params[i])?;
            let hg = self.download(grads[i])?;
            let mut hb = match bufs.get(i) {
                Some(b) if s.has_momentum => self.download(b)?,
                _ => Vec::new(),
            };
            t::sgd_update(&s, &mut hp, &hg, &mut hb);
            let shape = params[i].shape().to_vec();
            *params[i] = self.upload(&hp, &shape)?;
            if s.has_momentum {
                *bufs[i] = self.upload(&hb, &shape)?;
            }
        }
        Ok(())
    }
}
