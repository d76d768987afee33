//! Evaluation: a split's outputs and scores, from one full-graph forward
//! or from sampled mini-batches with the training fanouts.

use rtx_backend::prelude::*;
use rtx_backend::{BTensor, Element, Indices, SampleOps, TrainOps};

use super::data::score;
use super::{EVAL_SAMPLE, Graph, Scores, Trainer};
use crate::{Error, Result};

/// An evaluated split (validation, test): its nodes, and the same on the
/// backend for the full-graph forward's row selection.
#[derive(Debug)]
pub(super) struct EvalSplit<B: Backend> {
    /// Node ids (global, ascending).
    pub(super) nodes: Vec<u32>,
    /// The same on the backend.
    pub(super) rows: B::Index,
}

impl<B: Backend + TrainOps + SampleOps + 'static, T: Element> Trainer<'_, B, T> {
    /// The outputs `[nodes.len(), outputs]` (in `f32`, row per node) of the
    /// model in evaluation mode (no dropout) for target nodes `nodes`:
    /// full-graph forward, or mini-batches of `eval_batch` nodes sampled
    /// with the training fanouts (a seeded stream of its own), each sampled
    /// and planned on the side handle while the one before runs, as the
    /// training steps are.
    ///
    /// # Errors
    /// Backend errors.
    pub fn outputs_of(&self, nodes: &[u32]) -> Result<Vec<f32>> {
        let b = self.b;
        let Graph::Sampled(_) = &self.graph else {
            return self.rows_of(&self.full_forward()?, &b.index_from_host(nodes)?);
        };
        let chunks: Vec<&[u32]> = nodes.chunks(self.config.eval_batch).collect();
        let seed = self.config.seed ^ EVAL_SAMPLE;
        let sample = |i: usize| self.batch_of(chunks[i], (seed, i as u64), false, true);
        let low = self.pass_model()?;
        let mut out = Vec::with_capacity(nodes.len() * self.outputs);
        let mut ahead = (!chunks.is_empty()).then(|| sample(0)).transpose()?;
        for i in 0..chunks.len() {
            let Some(batch) = ahead.take() else {
                return Err(Error::Model("an evaluation batch was not sampled".into()));
            };
            self.after_side()?;
            let mb = batch.mb();
            let y = low.forward(b, &mb.graph.trimmed(), &mb.x)?;
            let rows = self.picked_f32(&y, &mb.seeds)?;
            if i + 1 < chunks.len() {
                ahead = Some(sample(i + 1)?);
            }
            out.extend(b.download(&rows)?);
        }
        Ok(out)
    }

    /// The scores of the current parameters on the validation and test
    /// splits: a full-graph run's one forward serves both; a sampled run
    /// samples each split's mini-batches as [`Trainer::outputs_of`] does.
    ///
    /// # Errors
    /// Backend errors.
    pub fn evaluate_splits(&self) -> Result<(Option<Scores>, Option<Scores>)> {
        let full = match &self.graph {
            Graph::Full { .. } if self.val.is_some() || self.test.is_some() => {
                Some(self.full_forward()?)
            }
            _ => None,
        };
        let of = |split: &Option<EvalSplit<B>>| -> Result<Option<Scores>> {
            let Some(s) = split else { return Ok(None) };
            let out = match &full {
                Some(y) => self.rows_of(y, &s.rows)?,
                None => self.outputs_of(&s.nodes)?,
            };
            score(
                &out,
                &self.data.targets[self.target],
                &s.nodes,
                self.config.task,
            )
            .map(Some)
        };
        Ok((of(&self.val)?, of(&self.test)?))
    }

    /// The full-graph forward of the model in evaluation mode.
    fn full_forward(&self) -> Result<BTensor<B, T>> {
        let Graph::Full { graph, x } = &self.graph else {
            return Err(Error::Model("full_forward on a sampled run".into()));
        };
        self.pass_model()?.forward(self.b, &**graph, x)
    }

    /// Rows `rows` of the outputs `y`, in `f32` on the host.
    fn rows_of(&self, y: &BTensor<B, T>, rows: &B::Index) -> Result<Vec<f32>> {
        Ok(self.b.download(&self.picked_f32(y, rows)?)?)
    }

    /// Rows `rows` of the outputs `y` in `f32`, queued on the backend.
    fn picked_f32(&self, y: &BTensor<B, T>, rows: &B::Index) -> Result<BTensor<B, f32>> {
        let b = self.b;
        Ok(b.convert::<T, f32>(&b.index_select(y, Indices::held(rows))?)?)
    }
}
