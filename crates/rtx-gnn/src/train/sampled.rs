//! The mini-batch steps, pipelined on the host: while step `k` trains on
//! the backend, step `k + 1`'s sample (and the plans of its lists) is made
//! on the side handle ([`SampleOps::beside`]: a second CUDA stream), whose
//! reads back then wait for the sampling alone; and step `k`'s loss is read
//! only once step `k + 1`'s forward and backward are queued, so the device
//! has work while the host waits. A backend with one queue runs the same
//! work in line, in the same order. Evaluation samples its batches the same
//! way (`eval.rs`).
//!
//! The bits are those of a step-by-step loop: a sample is a pure function
//! of its seeds and `(seed, step)`, wherever and whenever it is made, and
//! every update is queued in step order, after the loss before it was read
//! and found finite. Ordering on a device: the main handle waits for the
//! side before it uses a batch made there, and the side waits for the main
//! handle's work before such a batch is dropped ([`Batch`]).

use std::sync::Arc;

use rtx_backend::sample::SampleSpec;
use rtx_backend::{Indices, SampleOps, TrainOps};

use super::data::{targets_of, widen_grads_acc};
use super::{Graph, StepReport, Trainer};
use crate::model::{Objective, ObjectiveLoss};
use crate::optim::StepInfo;
use crate::store::MiniBatch;
use crate::topology::Topology;
use crate::{Error, Result};
use rtx_backend::prelude::*;
use rtx_backend::{BTensor, Element};

/// A mini-batch for the main stream. One made on the side handle is
/// dropped in order: the side first waits for the main stream's work so
/// far, so the batch's memory (freed in the side's order) outlives the work
/// that reads it, whatever path drops it.
#[derive(Debug)]
pub(super) struct Batch<'a, B: Backend + SampleOps, T: Element> {
    mb: MiniBatch<B, T>,
    /// The side it was made on, and the main handle.
    made_beside: Option<(Arc<B>, &'a B)>,
}

impl<B: Backend + SampleOps, T: Element> Batch<'_, B, T> {
    pub(super) fn mb(&self) -> &MiniBatch<B, T> {
        &self.mb
    }
}

impl<B: Backend + SampleOps, T: Element> Drop for Batch<'_, B, T> {
    fn drop(&mut self) {
        if let Some((side, main)) = &self.made_beside {
            // an error here is the device's, and the next read reports it
            let _ = side.wait_for(main);
        }
    }
}

/// A mini-batch sampled and planned ahead, for the step it was made for.
#[derive(Debug)]
pub(super) struct Ahead<'a, B: Backend + SampleOps, T: Element> {
    global_step: u64,
    batch: Batch<'a, B, T>,
}

impl<'a, B: Backend + TrainOps + SampleOps + 'static, T: Element> Trainer<'a, B, T> {
    /// The sample around `seeds` with the training fanouts, seed `seed` and
    /// step `step`, made on `q` with the plans of every list a pass sums by
    /// (the model's; for a `training` step with a backward pass, also the
    /// objective's rows), so that the pass reads nothing back for them.
    fn sample_planned(
        &self,
        q: &B,
        seeds: &[u32],
        (seed, step): (u64, u64),
        training: bool,
    ) -> Result<MiniBatch<B, T>> {
        let Graph::Sampled(store) = &self.graph else {
            return Err(Error::Model("a sample on a full-graph run".into()));
        };
        let spec = SampleSpec::uniform(
            self.target,
            &self.config.fanouts,
            store.relations().len(),
            seed,
            step,
        );
        let mb = store.sample(q, &q.index_from_host(seeds)?, &spec)?;
        let graph = mb.graph.trimmed();
        let mut lists = self.model.plan_lists(&graph, training);
        if training {
            // its rows' gradients are scattered back into the outputs: the
            // distinct seeds' (the last layer of a trimmed pass computes no other)
            let outputs = graph.nodes_within(self.target, 0);
            lists.push(Indices::held(&mb.seeds).with_rows(outputs));
        }
        q.prepare_plans(&lists)?;
        Ok(mb)
    }

    /// [`Trainer::sample_planned`] on the side handle where there is one
    /// and `beside` asks for it, else in line.
    pub(super) fn batch_of(
        &self,
        seeds: &[u32],
        seed_step: (u64, u64),
        training: bool,
        beside: bool,
    ) -> Result<Batch<'a, B, T>> {
        match &self.side {
            Some(side) if beside => Ok(Batch {
                mb: self.sample_planned(side, seeds, seed_step, training)?,
                made_beside: Some((Arc::clone(side), self.b)),
            }),
            _ => Ok(Batch {
                mb: self.sample_planned(self.b, seeds, seed_step, training)?,
                made_beside: None,
            }),
        }
    }

    /// Orders the main stream's next work after the side's (before a batch
    /// made there is used).
    pub(super) fn after_side(&self) -> Result<()> {
        if let Some(side) = &self.side {
            self.b.wait_for(side)?;
        }
        Ok(())
    }

    /// Runs the epoch's mini-batch steps from the position on, `batch`
    /// seeds each in `order`; `false` when `on_step` stopped the run.
    ///
    /// Pipelined on the host: once step `k + 1`'s forward and backward are
    /// queued, step `k + 2`'s batch is sampled beside (the sampler's reads
    /// wait while the device trains), then step `k`'s loss is read, before
    /// step `k + 1`'s update, so the device has work while the host waits.
    /// A stop at `k` discards `k + 1`'s
    /// gradients only: the parameters, optimizer and position stay those
    /// after `k`. A non-finite loss at `k` ends the run with an error naming
    /// it, the position before `k` (its update was queued before its loss
    /// could be read, as in a step-by-step loop that reads the loss last).
    ///
    /// # Errors
    /// Backend and model errors; a NaN or infinite loss (naming the step).
    pub(super) fn sampled_steps(
        &mut self,
        order: &[u32],
        batch: usize,
        steps: usize,
        last_lr: &mut f64,
        on_step: &mut dyn FnMut(&StepReport) -> bool,
    ) -> Result<bool> {
        let seeds = |k: usize| &order[k * batch..((k + 1) * batch).min(order.len())];
        let first = self.position.step_in_epoch;
        // optimizer step of epoch step k (the position moves as steps report)
        let base = self.position.global_step;
        let global = |k: usize| base + (k - first) as u64;
        let mut pending: Option<(ObjectiveLoss<B, T::Acc>, StepInfo)> = None;
        for k in first..=steps {
            // step k's forward and backward, while step k - 1 finishes
            let queued = if k < steps {
                Some(self.sampled_grads(seeds(k), global(k))?)
            } else {
                None
            };
            // step k + 1's batch, sampled beside while the device runs step
            // k (before the wait for step k - 1's loss, which lasts until
            // step k's backward is done)
            if queued.is_some() && k + 1 < steps {
                let step = global(k + 1);
                self.ahead = Some(Ahead {
                    global_step: step,
                    batch: self.batch_of(seeds(k + 1), (self.config.seed, step), true, true)?,
                });
            }
            if let Some((loss, info)) = pending.take() {
                let loss = loss.read(self.b)?;
                let go = self.report_step(loss, info, steps, on_step);
                if !matches!(go, Ok(true)) {
                    return go;
                }
            }
            let Some(q) = queued else { break };
            let grads = widen_grads_acc::<B, T>(self.b, q.grads)?;
            let info = self
                .optimizer
                .step(self.b, self.model.params_mut(), &grads)?;
            *last_lr = info.lr;
            drop(q.batch);
            pending = Some((q.loss, info));
        }
        Ok(true)
    }

    /// Queues the forward and backward of optimizer step `step` on `seeds`,
    /// with its mini-batch (sampled ahead, or now).
    fn sampled_grads(&mut self, seeds: &[u32], step: u64) -> Result<Queued<'a, B, T>> {
        let b = self.b;
        let batch = match self.ahead.take() {
            Some(a) if a.global_step == step => {
                self.after_side()?;
                a.batch
            }
            _ => self.batch_of(seeds, (self.config.seed, step), true, false)?,
        };
        let mb = &batch.mb;
        let targets = targets_of::<B, T::Acc>(b, self.data, self.target, seeds)?;
        let objective = Objective {
            loss: self.config.task.loss(),
            rows: &mb.seeds,
            targets: &targets,
        };
        let dropout = self.dropout_seed(step);
        let low = self.pass_model()?;
        let out = low.objective_grads(b, &mb.graph.trimmed(), &mb.x, &objective, dropout)?;
        Ok(Queued {
            batch,
            loss: out.loss,
            grads: out.grads,
        })
    }
}

/// A step's forward and backward, queued: its mini-batch, loss and
/// gradients.
struct Queued<'a, B: Backend + SampleOps, T: Element> {
    batch: Batch<'a, B, T>,
    loss: ObjectiveLoss<B, T::Acc>,
    grads: Vec<Option<BTensor<B, T>>>,
}
