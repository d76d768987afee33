//! The mini-batch step, with the next mini-batch sampled ahead: while step
//! `k`'s training is queued on the backend, step `k + 1`'s sample (and the
//! plans of its lists) is made on the side handle ([`SampleOps::beside`]: a
//! second CUDA stream), whose reads back then wait for the sampling alone.
//! A backend with one queue samples in line, in the same order.
//!
//! A sample is a pure function of its seeds and `(seed, step)`, so the
//! bits do not depend on where or when it is made. Ordering on a device:
//! the main handle waits for the side before it uses a sample made there,
//! and the side waits for the main handle's step before the step's sample
//! is dropped (each handle frees its own allocations in its own order).

use std::sync::Arc;

use rtx_backend::sample::SampleSpec;
use rtx_backend::{Indices, SampleOps, TrainOps};

use super::data::{targets_of, widen_grads_acc};
use super::{Graph, Trainer};
use crate::model::Objective;
use crate::optim::StepInfo;
use crate::store::MiniBatch;
use crate::topology::Topology;
use crate::{Error, Result};
use rtx_backend::Element;
use rtx_backend::prelude::*;

/// A mini-batch for the main stream. One made on the side handle is
/// dropped in order: the side first waits for the main stream's work so
/// far, so the batch's memory (freed in the side's order) outlives the work
/// that reads it, whatever path drops it (an error's too).
#[derive(Debug)]
pub(super) struct Batch<'a, B: Backend + SampleOps, T: Element> {
    mb: MiniBatch<B, T>,
    /// The side it was made on, and the main handle.
    made_beside: Option<(Arc<B>, &'a B)>,
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
    /// The sample of optimizer step `step` around `seeds`, made on `q`
    /// with the plans of every list the step sums by (the model's and the
    /// objective's rows), so that the step reads nothing back for them.
    fn sample_planned(&self, q: &B, seeds: &[u32], step: u64) -> Result<MiniBatch<B, T>> {
        let Graph::Sampled(store) = &self.graph else {
            return Err(Error::Model("a sample on a full-graph run".into()));
        };
        let spec = SampleSpec::uniform(
            self.target,
            &self.config.fanouts,
            store.relations().len(),
            self.config.seed,
            step,
        );
        let mb = store.sample(q, &q.index_from_host(seeds)?, &spec)?;
        let graph = mb.graph.trimmed();
        let mut lists = self.model.plan_lists(&graph, true);
        // its rows' gradients are scattered back into the outputs: the
        // distinct seeds' (the last layer of a trimmed pass computes no other)
        let outputs = graph.nodes_within(self.target, 0);
        lists.push(Indices::held(&mb.seeds).with_rows(outputs));
        q.prepare_plans(&lists)?;
        Ok(mb)
    }

    /// [`Trainer::sample_planned`] on the side handle where there is one
    /// and `beside` asks for it, else in line.
    fn batch_of(&self, seeds: &[u32], step: u64, beside: bool) -> Result<Batch<'a, B, T>> {
        match &self.side {
            Some(side) if beside => Ok(Batch {
                mb: self.sample_planned(side, seeds, step)?,
                made_beside: Some((Arc::clone(side), self.b)),
            }),
            _ => Ok(Batch {
                mb: self.sample_planned(self.b, seeds, step)?,
                made_beside: None,
            }),
        }
    }

    /// One mini-batch step on `seeds` (global ids of the target type),
    /// sampling `next` (the next step's seeds, if any in this epoch) while
    /// the step trains.
    pub(super) fn sampled_step(
        &mut self,
        seeds: &[u32],
        next: Option<&[u32]>,
    ) -> Result<(f64, StepInfo)> {
        let b = self.b;
        let step = self.position.global_step;
        let batch = match self.ahead.take() {
            Some(a) if a.global_step == step => {
                if let Some(side) = &self.side {
                    b.wait_for(side)?;
                }
                a.batch
            }
            _ => self.batch_of(seeds, step, false)?,
        };
        let mb = &batch.mb;
        let targets = targets_of::<B, T::Acc>(b, self.data, self.target, seeds)?;
        let objective = Objective {
            loss: self.config.task.loss(),
            rows: &mb.seeds,
            targets: &targets,
        };
        let dropout = self.dropout_seed();
        let low = self.pass_model()?;
        let out = low.objective_grads(b, &mb.graph.trimmed(), &mb.x, &objective, dropout)?;
        let grads = widen_grads_acc::<B, T>(b, out.grads)?;
        let info = self.optimizer.step(b, self.model.params_mut(), &grads)?;
        if let Some(next) = next {
            self.ahead = Some(Ahead {
                global_step: step + 1,
                batch: self.batch_of(next, step + 1, true)?,
            });
        }
        // read after the update is queued: the wait then covers it too
        let loss = out.loss.read(b)?;
        // the step's sample goes after the step's work with it (`Batch`)
        drop(batch);
        Ok((loss, info))
    }
}
