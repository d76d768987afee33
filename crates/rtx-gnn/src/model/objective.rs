//! Training objectives of [`HetGat`]: softmax cross-entropy over classes,
//! MSE and L1 against targets, each over chosen rows of the target type (a
//! split's nodes, or a mini-batch's seeds: PyG's `out[:batch_size]`), with
//! dropout in the pass.
//!
//! The loss is computed in the element's accumulator type (`f32` for the
//! half types, so a mixed-precision pass has its loss in `f32`) by
//! [`TrainOps`], whose kernels give the CPU's bits.

use rtx_backend::Indices;
use rtx_backend::prelude::*;
use rtx_backend::{BTensor, Element, RegressionLoss, TrainOps};

use super::{HetGat, LossAndGrads};
use crate::topology::Topology;
use crate::{Error, Result};

/// A loss function.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LossKind {
    /// Softmax cross-entropy over the head's outputs (one per class),
    /// `mean_i (logsumexp(z_i) - z_i[y_i])`: torch's `cross_entropy`.
    CrossEntropy,
    /// Mean squared error over every output of the rows: torch's `mse_loss`.
    Mse,
    /// Mean absolute error over every output of the rows: torch's `l1_loss`.
    L1,
}

impl LossKind {
    /// The name (`"cross-entropy"`, `"mse"`, `"l1"`).
    pub fn name(self) -> &'static str {
        match self {
            LossKind::CrossEntropy => "cross-entropy",
            LossKind::Mse => "mse",
            LossKind::L1 => "l1",
        }
    }
}

/// What the rows of an objective are compared with, on the backend.
#[derive(Debug)]
pub enum Targets<B: IndexOps, A: Element> {
    /// A class per row (each below the head's `out_features`).
    Classes(B::Index),
    /// `[rows, out_features]` values in the accumulator type.
    Values(BTensor<B, A>),
}

/// An objective: a loss over `rows` of the target type against `targets`.
#[derive(Debug)]
pub struct Objective<'a, B: IndexOps, A: Element> {
    /// The loss function.
    pub loss: LossKind,
    /// Local rows of the target type the loss is over, distinct.
    pub rows: &'a B::Index,
    /// One target per row, in `rows`' order.
    pub targets: &'a Targets<B, A>,
}

/// A loss still on the device: the canonical sum of the per-row losses
/// and the factor that makes it a mean.
#[derive(Debug)]
pub struct ObjectiveLoss<B: BackendCore, A: Element> {
    /// The sum of the rows' losses, `[1, 1]`.
    pub sum: BTensor<B, A>,
    /// `1 / rows` (cross-entropy) or `1 / (rows * outputs)` (MSE, L1).
    pub scale: f64,
}

impl<B: BackendCore, A: Element> ObjectiveLoss<B, A> {
    /// Reads the mean loss (downloads, so it waits for the work).
    ///
    /// # Errors
    /// Backend errors.
    pub fn read(&self, b: &B) -> Result<f64> {
        Ok(b.download(&self.sum)?[0].to_f64() * self.scale)
    }
}

/// What a training pass returns: the loss on the device, the gradients of
/// the parameters (`None`: no gradient, as torch's `p.grad is None`).
pub type ObjectiveGrads<B, T> = LossAndGrads<B, T, ObjectiveLoss<B, <T as Element>::Acc>>;

impl<B: Backend + TrainOps, T: Element> HetGat<B, T> {
    /// Forward (with dropout from `dropout_seed`, `None` for none), the
    /// objective's loss and its gradient, backward: the loss and the
    /// gradients of every parameter. The outputs of rows outside the
    /// objective get no gradient.
    ///
    /// # Errors
    /// [`Error::Model`] for an objective that does not fit the head (a
    /// cross-entropy without classes, targets of another shape, a class past
    /// `out_features`); as [`HetGat::forward`].
    pub fn objective_grads<G: Topology<B> + ?Sized>(
        &self,
        b: &B,
        graph: &G,
        x: &[BTensor<B, T>],
        objective: &Objective<'_, B, T::Acc>,
        dropout_seed: Option<u64>,
    ) -> Result<ObjectiveGrads<B, T>> {
        let fw = self.run_forward(b, graph, x, dropout_seed)?;
        let rows = objective.rows;
        let m = b.index_len(rows);
        let out = self.config.out_features;
        let y = b.index_select(&fw.y, Indices::held(rows))?;
        let n = fw.y.shape()[0];
        let (loss_rows, dy_rows, scale) = match (objective.loss, objective.targets) {
            (LossKind::CrossEntropy, Targets::Classes(labels)) => {
                let scale = 1.0 / m.max(1) as f64;
                let (l, g) = b.cross_entropy(&y, labels, scale)?;
                (l, g, scale)
            }
            (LossKind::Mse | LossKind::L1, Targets::Values(t)) => {
                if t.shape() != [m, out] {
                    return Err(Error::Model(format!(
                        "targets have shape {:?}; the objective's {m} rows of {out} outputs \
                         want [{m}, {out}]",
                        t.shape()
                    )));
                }
                let kind = if objective.loss == LossKind::Mse {
                    RegressionLoss::Mse
                } else {
                    RegressionLoss::L1
                };
                let scale = 1.0 / (m * out).max(1) as f64;
                let (l, g) = b.regression_loss(kind, &y, t, scale)?;
                (l, g, scale)
            }
            (loss, _) => {
                return Err(Error::Model(format!(
                    "a {} loss needs {} targets",
                    loss.name(),
                    if loss == LossKind::CrossEntropy {
                        "class"
                    } else {
                        "value"
                    }
                )));
            }
        };
        // the rows are distinct: the scatter back places each row's gradient
        let mut dy = b.zeros::<T>(&[n, out])?;
        b.index_add(&mut dy, Indices::held(rows), &dy_rows)?;
        let (grads, _) = self.backward(b, graph, &fw, &dy, x.len(), false)?;
        Ok(LossAndGrads {
            loss: ObjectiveLoss {
                sum: b.sum_rows(&loss_rows)?,
                scale,
            },
            grads,
            input_grads: vec![None; x.len()],
        })
    }
}
