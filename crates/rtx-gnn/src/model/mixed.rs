//! Mixed precision: forward and backward of [`HetGat`] in a half type `H`
//! (activations, messages, attention and their gradients in `bf16` or
//! `f16`, each op computing in `f32` and rounding once), master weights,
//! loss and SGD in `f32`.
//!
//! A step rounds the `f32` master weights once to `H`, runs the forward
//! pass in `H`, widens the output to `f32` for the loss (`mean(y^2)` and its
//! gradient `2y / n` in `f32`, the gradient then rounded to `H`), runs the
//! backward pass in `H`, and widens every gradient to `f32` for the update.
//! Every op is deterministic, so a run gives the same loss bits every time,
//! for any thread count, on every backend whose ops give the same bits.

use rtx_backend::prelude::*;
use rtx_backend::{BTensor, Element, Unary};

use super::forward::mse;
use super::{DeviceLoss, HetGat, LossAndGrads};
use crate::Result;
use crate::topology::Topology;

impl<B: Backend> HetGat<B, f32> {
    /// This model with its parameters rounded once to `H` (`convert`); the
    /// same configuration and schema.
    ///
    /// # Errors
    /// Backend errors.
    pub fn to_precision<H: Element>(&self, b: &B) -> Result<HetGat<B, H>> {
        let params = self
            .params
            .iter()
            .map(|p| b.convert::<f32, H>(p))
            .collect::<rtx_backend::Result<Vec<_>>>()?;
        Ok(HetGat {
            config: self.config.clone(),
            hidden: self.hidden,
            node_types: self.node_types.clone(),
            relations: self.relations.clone(),
            params,
            names: self.names.clone(),
            live: self.live.clone(),
        })
    }

    /// The `f32` loss and `f32` gradients of a mixed-precision pass on
    /// inputs `x` in `H`: the weights rounded once to `H`
    /// ([`HetGat::to_precision`]), forward and backward in `H`, the loss
    /// `mean(y^2)` and its gradient `2y / n` in `f32` from the widened
    /// output, every gradient widened to `f32`. The loss is left on the device.
    ///
    /// # Errors
    /// As [`HetGat::forward`].
    pub fn loss_and_grads_mixed<H: Element, G: Topology<B> + ?Sized>(
        &self,
        b: &B,
        graph: &G,
        x: &[BTensor<B, H>],
        input_grads: bool,
    ) -> Result<LossAndGrads<B, f32, DeviceLoss<B, f32>>> {
        let low = self.to_precision::<H>(b)?;
        let fw = low.run_forward(b, graph, x)?;
        let y = b.convert::<H, f32>(&fw.y)?;
        let loss = mse(b, &y)?;
        let dy = b.unary(Unary::Scale(2.0 / loss.rows.max(1) as f64), &y)?;
        let dy = b.convert::<f32, H>(&dy)?;
        let (grads, dx) = low.backward(b, graph, &fw, &dy, x.len(), input_grads)?;
        let widen = |g: Option<BTensor<B, H>>| g.map(|g| b.convert::<H, f32>(&g)).transpose();
        Ok(LossAndGrads {
            loss,
            grads: grads
                .into_iter()
                .map(widen)
                .collect::<rtx_backend::Result<_>>()?,
            input_grads: dx
                .into_iter()
                .map(widen)
                .collect::<rtx_backend::Result<_>>()?,
        })
    }

    /// One mixed-precision training step: [`HetGat::loss_and_grads_mixed`]
    /// (forward and backward in `H`), then SGD on the `f32` master weights.
    /// Returns the `f32` loss before the update.
    ///
    /// # Errors
    /// As [`HetGat::forward`].
    pub fn train_step_mixed<H: Element, G: Topology<B> + ?Sized>(
        &mut self,
        b: &B,
        graph: &G,
        x: &[BTensor<B, H>],
        lr: f64,
    ) -> Result<f32> {
        let LossAndGrads { loss, grads, .. } = self.loss_and_grads_mixed(b, graph, x, false)?;
        self.sgd(b, &grads, lr)?;
        loss.read(b)
    }
}
