//! Evaluation: a split's outputs and scores, from one full-graph forward
//! or from sampled mini-batches with the training fanouts.

use rtx_backend::prelude::*;
use rtx_backend::sample::SampleSpec;
use rtx_backend::{Element, Indices, SampleOps, TrainOps};

use super::data::score;
use super::{EVAL_SAMPLE, Graph, Scores, Trainer};
use crate::Result;

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
        let low = self.pass_model()?;
        match &self.graph {
            Graph::Full { graph, x } => {
                let y = low.forward(b, &**graph, x)?;
                let rows = b.index_select(&y, Indices::held(&b.index_from_host(nodes)?))?;
                Ok(b.download(&b.convert::<T, f32>(&rows)?)?)
            }
            Graph::Sampled(store) => {
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
                    let y = low.forward(b, &mb.graph, &mb.x)?;
                    let rows = b.index_select(&y, Indices::held(&mb.seeds))?;
                    out.extend(b.download(&b.convert::<T, f32>(&rows)?)?);
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
        let b = self.b;
        let score_of = |split: &EvalSplit<B>, out: Vec<f32>| {
            score(
                &out,
                &self.data.targets[self.target],
                &split.nodes,
                self.config.task,
            )
        };
        match &self.graph {
            Graph::Full { graph, x } => {
                if self.val.is_none() && self.test.is_none() {
                    return Ok((None, None));
                }
                let y = self.pass_model()?.forward(b, &**graph, x)?;
                let of = |split: &Option<EvalSplit<B>>| -> Result<Option<Scores>> {
                    split
                        .as_ref()
                        .map(|s| {
                            let rows = b.index_select(&y, Indices::held(&s.rows))?;
                            score_of(s, b.download(&b.convert::<T, f32>(&rows)?)?)
                        })
                        .transpose()
                };
                Ok((of(&self.val)?, of(&self.test)?))
            }
            Graph::Sampled(_) => {
                let of = |split: &Option<EvalSplit<B>>| -> Result<Option<Scores>> {
                    split
                        .as_ref()
                        .map(|s| score_of(s, self.outputs_of(&s.nodes)?))
                        .transpose()
                };
                Ok((of(&self.val)?, of(&self.test)?))
            }
        }
    }
}
