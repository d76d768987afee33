//! Evaluation: a split's outputs and scores, from one full-graph forward
//! or from sampled mini-batches with the training fanouts.

use rtx_backend::prelude::*;
use rtx_backend::sample::SampleSpec;
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
    /// with the training fanouts (a seeded stream of its own).
    ///
    /// # Errors
    /// Backend errors.
    pub fn outputs_of(&self, nodes: &[u32]) -> Result<Vec<f32>> {
        let b = self.b;
        match &self.graph {
            Graph::Full { .. } => self.rows_of(&self.full_forward()?, &b.index_from_host(nodes)?),
            Graph::Sampled(store) => {
                let low = self.pass_model()?;
                let mut out = Vec::with_capacity(nodes.len() * self.outputs);
                for (i, chunk) in nodes.chunks(self.config.eval_batch).enumerate() {
                    let spec = SampleSpec::uniform(
                        self.target,
                        &self.config.fanouts,
                        store.relations().len(),
                        self.config.seed ^ EVAL_SAMPLE,
                        i as u64,
                    );
                    let mb = store.sample(b, &b.index_from_host(chunk)?, &spec)?;
                    let graph = mb.graph.trimmed();
                    low.prepare_plans(b, &graph, false)?;
                    let y = low.forward(b, &graph, &mb.x)?;
                    out.extend(self.rows_of(&y, &mb.seeds)?);
                }
                Ok(out)
            }
        }
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
        let b = self.b;
        let picked = b.index_select(y, Indices::held(rows))?;
        Ok(b.download(&b.convert::<T, f32>(&picked)?)?)
    }
}
