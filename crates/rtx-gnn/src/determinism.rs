//! Fixed training runs reduced to their bits, for the determinism tests:
//! the same run must give the same bits on every backend, mode (device or
//! host round-trip index ops, [`HostIndexOps`](rtx_backend::HostIndexOps)),
//! thread count and run. [`training_bits`] (full graph, `f32` or `f64`),
//! [`mixed_training_bits`] (`bf16` / `f16` with `f32` master weights) and
//! [`sampled_training_bits`] (mini-batches of the ogbn-mag-shaped graph).
//!
//! A public module rather than test code because the tests that compare
//! them live in several crates (`rtx-gnn`'s, and `rtx-backend-cuda`'s GPU
//! tests run the same runs on the device: e.g.
//! `training_bits(&cuda, ..) == training_bits(&HostIndexOps::new(cuda2), ..)`).
//! The graphs they run on are [`harris_like`](crate::graph::harris_like).

use rtx_backend::Element;
use rtx_backend::prelude::*;

use crate::graph::harris_like_inputs;
use crate::{HetGat, HetGatConfig, HeteroGraph, MixedHetGat, Result};

/// The seed of [`training_bits`]'s model.
pub const TRAINING_SEED: u64 = 42;
/// The learning rate of [`training_bits`].
pub const TRAINING_LR: f64 = 1e-2;

/// The configuration of [`training_bits`]'s model on `graph`: the Harris
/// model with 32 input features per node type.
pub fn training_config(graph: &HeteroGraph) -> HetGatConfig {
    HetGatConfig {
        in_features: vec![32; graph.node_types().len()],
        ..HetGatConfig::harris()
    }
}

/// Trains the 4x16-head, 2-layer model for `steps` SGD steps (lr 1e-2) on
/// `graph` (two node types of 32 features, from streams 40 and 41) and
/// returns the bits of every step's loss and of every final parameter.
///
/// # Errors
/// Backend errors.
pub fn training_bits<B: Backend, T: Element>(
    b: &B,
    graph: &HeteroGraph,
    steps: usize,
) -> Result<(Vec<u64>, Vec<Vec<u64>>)> {
    let cfg = training_config(graph);
    let mut model = HetGat::<B, T>::new(b, graph, cfg, TRAINING_SEED)?;
    let x = harris_like_inputs::<B, T>(b, graph, &model.config().in_features)?;
    let mut losses = Vec::with_capacity(steps);
    for _ in 0..steps {
        losses.push(model.train_step(b, graph, &x, TRAINING_LR)?.to_bits_u64());
    }
    Ok((losses, model.param_bits(b)?))
}

/// [`training_bits`] in mixed precision ([`MixedHetGat::train_step`]): the
/// same `f32` model and steps, forward and backward in `H` on the inputs
/// rounded once to `H`; the bits of every step's `f32` loss and of every
/// final `f32` parameter.
///
/// # Errors
/// Backend errors.
pub fn mixed_training_bits<B: Backend, H: Element<Acc = f32>>(
    b: &B,
    graph: &HeteroGraph,
    steps: usize,
) -> Result<(Vec<u64>, Vec<Vec<u64>>)> {
    let cfg = training_config(graph);
    let model = HetGat::<B, f32>::new(b, graph, cfg, TRAINING_SEED)?;
    let x = harris_like_inputs::<B, f32>(b, graph, &model.config().in_features)?
        .iter()
        .map(|t| b.convert::<f32, H>(t))
        .collect::<rtx_backend::Result<Vec<_>>>()?;
    let mut model = MixedHetGat::<B, H>::new(b, model)?;
    let mut losses = Vec::with_capacity(steps);
    for _ in 0..steps {
        let loss = model.train_step(b, graph, &x, TRAINING_LR)?;
        losses.push(u64::from(loss.to_bits()));
    }
    Ok((losses, model.master().param_bits(b)?))
}

/// Mini-batch training on the ogbn-mag-shaped graph at `1 / div` of its
/// size ([`crate::mag`]): `steps` steps of `batch` paper seeds
/// ([`crate::mag::epoch_seeds`]), each on a fresh sample with fanouts
/// `fanouts` per relation (run seed 99, the step as the draw counter), SGD
/// at [`TRAINING_LR`]. Returns the loss bits of every step, the gradient
/// bits of the first step and the final parameter bits: what the tests
/// compare across backends and runs.
///
/// # Errors
/// Backend errors.
pub fn sampled_training_bits<B: Backend + rtx_backend::SampleOps, T: Element>(
    b: &B,
    div: usize,
    batch: usize,
    fanouts: &[u32],
    steps: usize,
) -> Result<SampledBits> {
    use crate::mag::{epoch_seeds, mag_config, mag_store};
    use rtx_backend::sample::SampleSpec;
    let store = mag_store::<B, T>(b, div)?;
    let papers = store.node_types()[0].nodes;
    let rels = store.relations().len();
    let mut out = SampledBits::default();
    let mut model: Option<HetGat<B, T>> = None;
    for step in 0..steps {
        let per_epoch = papers.div_ceil(batch);
        let seeds = b.index_from_host(&epoch_seeds(papers, batch, step % per_epoch)?)?;
        let spec = SampleSpec::uniform(0, fanouts, rels, 99, step as u64);
        let mb = store.sample(b, &seeds, &spec)?;
        let model = match &mut model {
            Some(m) => m,
            None => model.insert(HetGat::new(b, &mb.graph, mag_config(), TRAINING_SEED)?),
        };
        if step == 0 {
            let lg = model.loss_and_grads(b, &mb.graph, &mb.x, false)?;
            for g in lg.grads.iter().flatten() {
                out.grads
                    .extend(b.download(g)?.iter().map(|v| v.to_bits_u64()));
            }
        }
        out.losses.push(
            model
                .train_step(b, &mb.graph, &mb.x, TRAINING_LR)?
                .to_bits_u64(),
        );
        out.edges.push(mb.graph.edges());
    }
    if let Some(m) = &model {
        for p in m.params() {
            out.params
                .extend(b.download(p)?.iter().map(|v| v.to_bits_u64()));
        }
    }
    Ok(out)
}

/// What [`sampled_training_bits`] returns.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct SampledBits {
    /// Loss bits per step.
    pub losses: Vec<u64>,
    /// Sampled edges per step.
    pub edges: Vec<usize>,
    /// Bits of every gradient of the first step, in parameter order.
    pub grads: Vec<u64>,
    /// Bits of every parameter after the last step.
    pub params: Vec<u64>,
}
