//! What a training run moves between the host and the backend: the
//! features, a split's rows and targets, the gradients widened for the
//! master weights; and what it computes on the host: the epoch's order of
//! the training nodes and the scores of a split.

use rtx_backend::prelude::*;
use rtx_backend::workload::splitmix64;
use rtx_backend::{BTensor, Element};

use super::{SHUFFLE, Scores, SplitData, Task};
use crate::dataset::{Dataset, Targets as DataTargets};
use crate::graph::NodeType;
use crate::metrics::{self, Metric};
use crate::model::{LossKind, Targets};
use crate::{Error, Result};

/// The gradients of a pass in `T` widened to `T::Acc` for the master
/// weights (moved as they are when `T` is its own accumulator type).
pub(super) fn widen_grads_acc<B: Backend + 'static, T: Element>(
    b: &B,
    grads: crate::model::Grads<B, T>,
) -> Result<crate::model::Grads<B, T::Acc>> {
    let boxed: Box<dyn std::any::Any> = Box::new(grads);
    match boxed.downcast::<crate::model::Grads<B, T::Acc>>() {
        Ok(same) => Ok(*same),
        Err(other) => {
            let grads = other
                .downcast::<crate::model::Grads<B, T>>()
                .map_err(|_| Error::Model("gradients of an unexpected type".into()))?;
            crate::model::convert_present::<B, T, T::Acc>(b, &grads).map_err(Error::from)
        }
    }
}

/// Every node type's features on the backend as `T` (a constant 1 column
/// for a type without `.x`, as PyG's `Constant` transform gives).
pub(super) fn features<B: Backend, T: Element>(
    b: &B,
    data: &Dataset,
) -> Result<Vec<BTensor<B, T>>> {
    data.node_types
        .iter()
        .zip(&data.features)
        .map(|(nt, f): (&NodeType, _)| match f {
            Some(f) => Ok(b.upload(&f.to_elements::<T>(), &[nt.nodes, f.dim()])?),
            None => Ok(b.upload(&vec![T::from_f64(1.0); nt.nodes], &[nt.nodes, 1])?),
        })
        .collect()
}

/// A split's rows and targets on the backend.
pub(super) fn split_data<B: Backend, A: Element>(
    b: &B,
    data: &Dataset,
    target: usize,
    nodes: &[u32],
) -> Result<SplitData<B, A>> {
    Ok(SplitData {
        nodes: nodes.to_vec(),
        rows: b.index_from_host(nodes)?,
        targets: targets_of(b, data, target, nodes)?,
    })
}

/// The targets of `nodes` on the backend.
pub(super) fn targets_of<B: Backend, A: Element>(
    b: &B,
    data: &Dataset,
    target: usize,
    nodes: &[u32],
) -> Result<Targets<B, A>> {
    match &data.targets[target] {
        Some(DataTargets::Classes { labels, .. }) => {
            let l: Vec<u32> = nodes.iter().map(|&n| labels[n as usize]).collect();
            Ok(Targets::Classes(b.index_from_host(&l)?))
        }
        Some(DataTargets::Values { data: v, dim }) => {
            let mut t = Vec::with_capacity(nodes.len() * dim);
            for &n in nodes {
                let r = n as usize * dim;
                t.extend(v[r..r + dim].iter().map(|&x| A::from_f64(f64::from(x))));
            }
            Ok(Targets::Values(b.upload(&t, &[nodes.len(), *dim])?))
        }
        None => Err(Error::Model("the target type has no targets".into())),
    }
}

/// The loss and metrics of outputs `out` (`f32`, a row per node of
/// `nodes`) against the data's targets, on the host in `f64`.
///
/// # Errors
/// [`Error::Model`] for outputs that do not fit the targets.
pub fn score(
    out: &[f32],
    targets: &Option<DataTargets>,
    nodes: &[u32],
    task: Task,
) -> Result<Scores> {
    let m = nodes.len();
    match (targets, task) {
        (Some(DataTargets::Classes { labels, classes }), Task::Classify) => {
            let c = *classes;
            let y: Vec<u32> = nodes.iter().map(|&n| labels[n as usize]).collect();
            let mut loss = 0.0;
            for (row, &yi) in out.chunks(c).zip(&y) {
                let mx = row
                    .iter()
                    .fold(f64::NEG_INFINITY, |a, &v| a.max(f64::from(v)));
                let s: f64 = row.iter().map(|&v| (f64::from(v) - mx).exp()).sum();
                loss += mx + s.ln() - f64::from(row[yi as usize]);
            }
            let pred = metrics::argmax_rows(out, c)?;
            Ok(Scores {
                loss: loss / m.max(1) as f64,
                metrics: vec![
                    (Metric::Accuracy, metrics::accuracy(&pred, &y)?),
                    (Metric::MacroF1, metrics::macro_f1(&pred, &y, c)?),
                ],
            })
        }
        (Some(DataTargets::Values { data, dim }), Task::Regress(kind)) => {
            let d = *dim;
            let mut t = Vec::with_capacity(m * d);
            for &n in nodes {
                t.extend_from_slice(&data[n as usize * d..(n as usize + 1) * d]);
            }
            let r = metrics::regression_metrics(out, &t, d)?;
            let loss = if kind == LossKind::L1 { r.mae } else { r.mse };
            Ok(Scores {
                loss,
                metrics: vec![
                    (Metric::Mse, r.mse),
                    (Metric::Mae, r.mae),
                    (Metric::R2, r.r2),
                ],
            })
        }
        _ => Err(Error::Model("the task does not fit the targets".into())),
    }
}

/// The order of the training nodes in epoch `epoch`: a Fisher-Yates shuffle
/// drawing from `splitmix64(seed ^ SHUFFLE, epoch << 32 | i)`.
pub fn shuffle(nodes: &[u32], seed: u64, epoch: u64) -> Vec<u32> {
    let mut v = nodes.to_vec();
    let s = splitmix64(seed ^ SHUFFLE, epoch);
    for i in (1..v.len()).rev() {
        let j = (splitmix64(s, i as u64) % (i as u64 + 1)) as usize;
        v.swap(i, j);
    }
    v
}
