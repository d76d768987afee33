//! Mixed precision: forward and backward of [`HetGat`] in a half type `H`
//! (activations, messages, attention and their gradients in `bf16` or
//! `f16`, each op computing in `f32` and rounding once), master weights,
//! loss and SGD in `f32`.
//!
//! A pass runs the forward pass in `H` on the weights rounded once to `H`,
//! widens the output to `f32` for the loss (`mean(y^2)` and its gradient
//! `2y / n` in `f32`, the gradient then rounded to `H`) and runs the
//! backward pass in `H`. [`HetGat::loss_and_grads_mixed`] widens the
//! gradients to `f32`; [`MixedHetGat`] trains, keeping the weights in `f32`
//! and in `H` and updating both in one op per parameter.

use rtx_backend::prelude::*;
use rtx_backend::{BTensor, Element, Unary};

use super::forward::mse;
use super::{DeviceLoss, Grads, HetGat, LossAndGrads};
use crate::Result;
use crate::topology::Topology;

impl<B: Backend, A: Element> HetGat<B, A> {
    /// This model with its parameters converted to `H` (`convert`: rounded
    /// once when `H` is narrower); the same configuration and schema.
    ///
    /// # Errors
    /// Backend errors.
    pub fn to_precision<H: Element>(&self, b: &B) -> Result<HetGat<B, H>> {
        let params = b.convert_all::<A, H>(&self.params.iter().collect::<Vec<_>>())?;
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
}

impl<B: Backend> HetGat<B, f32> {
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
        let (loss, grads, dx) = self
            .to_precision::<H>(b)?
            .mixed_pass(b, graph, x, input_grads)?;
        Ok(LossAndGrads {
            loss,
            grads: convert_present(b, &grads)?,
            input_grads: convert_present(b, &dx)?,
        })
    }
}

/// Each present tensor of `xs` converted to `U` ([`LayoutOps::convert_all`]:
/// one launch for all on a GPU), the absent ones left absent.
///
/// # Errors
/// Backend errors.
pub(crate) fn convert_present<B: Backend, T: Element, U: Element>(
    b: &B,
    xs: &[Option<BTensor<B, T>>],
) -> rtx_backend::Result<Vec<Option<BTensor<B, U>>>> {
    let present: Vec<&BTensor<B, T>> = xs.iter().flatten().collect();
    let mut done = b.convert_all::<T, U>(&present)?.into_iter();
    Ok(xs
        .iter()
        .map(|x| x.as_ref().and_then(|_| done.next()))
        .collect())
}

/// The loss, the parameter gradients and the input gradients of a pass in `H`.
type MixedPass<B, H> = (DeviceLoss<B, f32>, Grads<B, H>, Vec<Option<BTensor<B, H>>>);

impl<B: Backend, H: Element> HetGat<B, H> {
    /// Forward and backward in `H` (this model's weights), the loss
    /// `mean(y^2)` and its gradient `2y / n` in `f32` from the widened
    /// output, the gradient rounded to `H` for the backward pass.
    fn mixed_pass<G: Topology<B> + ?Sized>(
        &self,
        b: &B,
        graph: &G,
        x: &[BTensor<B, H>],
        input_grads: bool,
    ) -> Result<MixedPass<B, H>> {
        let fw = self.run_forward(b, graph, x, None)?;
        let y = b.convert::<H, f32>(&fw.y)?;
        let loss = mse(b, &y)?;
        let dy = b.unary(Unary::Scale(2.0 / loss.rows.max(1) as f64), &y)?;
        let dy = b.convert::<f32, H>(&dy)?;
        let (grads, dx) = self.backward(b, graph, &fw, &dy, x.len(), input_grads)?;
        Ok((loss, grads, dx))
    }
}

/// Mixed-precision training of a [`HetGat`]: `f32` master weights and
/// their copy rounded to `H` (`bf16` or `f16`, whose arithmetic is `f32`), which the forward and
/// backward passes use. A step runs the pass in `H` (activations, messages,
/// attention and their gradients in `H`, each op computing in `f32` and
/// rounding once), the loss `mean(y^2)` in `f32`, and updates every master
/// weight from its `H` gradient and rounds it to `H` again in one op
/// ([`DenseOps::axpy_mixed`]): the bits
/// of SGD on the widened gradients followed by rounding the weights at the
/// next step. Every op is deterministic, so a run gives the same loss bits
/// every time, for any thread count, on every backend whose ops give the
/// same bits.
#[derive(Debug)]
pub struct MixedHetGat<B: Backend, H: Element<Acc = f32>> {
    master: HetGat<B, f32>,
    low: HetGat<B, H>,
}

impl<B: Backend, H: Element<Acc = f32>> MixedHetGat<B, H> {
    /// Mixed-precision training of `master`: its weights rounded once to `H`.
    ///
    /// # Errors
    /// Backend errors.
    pub fn new(b: &B, master: HetGat<B, f32>) -> Result<Self> {
        let low = master.to_precision::<H>(b)?;
        Ok(Self { master, low })
    }

    /// The `f32` master model.
    pub fn master(&self) -> &HetGat<B, f32> {
        &self.master
    }

    /// The `f32` master model, the copy in `H` dropped.
    pub fn into_master(self) -> HetGat<B, f32> {
        self.master
    }

    /// One training step on inputs `x` in `H`: forward and backward in `H`,
    /// then SGD at `lr` on the master weights and their copy in `H`. Returns
    /// the `f32` loss before the update.
    ///
    /// # Errors
    /// As [`HetGat::forward`].
    pub fn train_step<G: Topology<B> + ?Sized>(
        &mut self,
        b: &B,
        graph: &G,
        x: &[BTensor<B, H>],
        lr: f64,
    ) -> Result<f32> {
        self.train_step_enqueued(b, graph, x, lr)?.read(b)
    }

    /// [`MixedHetGat::train_step`] with the loss left on the device:
    /// nothing here waits for the device, so a device backend can record
    /// the whole step once and replay it (both copies of the weights are
    /// updated in place).
    ///
    /// # Errors
    /// As [`HetGat::forward`].
    pub fn train_step_enqueued<G: Topology<B> + ?Sized>(
        &mut self,
        b: &B,
        graph: &G,
        x: &[BTensor<B, H>],
        lr: f64,
    ) -> Result<DeviceLoss<B, f32>> {
        let (loss, grads, _) = self.low.mixed_pass(b, graph, x, false)?;
        // the gradients are the low model's own: one per parameter, its shape
        let pairs = self.master.params.iter_mut().zip(&mut self.low.params);
        for ((master, low), g) in pairs.zip(&grads) {
            if let Some(g) = g {
                b.axpy_mixed(master, -lr, g, low)?;
            }
        }
        Ok(loss)
    }
}
