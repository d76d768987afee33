//! Reusable checks for backends: the training run the CPU tests use, so a
//! device backend's tests can run the same one (e.g. the two-modes property:
//! `training_bits(&cuda, ..) == training_bits(&HostIndexOps::new(cuda2), ..)`),
//! and the f64 gradient check against central differences
//! ([`check_gradients`]).

use rtx_backend::prelude::*;
use rtx_backend::workload::{index, values};
use rtx_backend::{BTensor, Element};

use crate::{HetGat, HetGatConfig, HeteroGraph, MixedHetGat, NodeType, Result};

/// A Harris-like graph of any size: types `a` (`na` nodes) and `b` (`nb`);
/// relations aa, ab, ba with `edges` edges, uniform sources and hub-skewed
/// destinations (so some nodes get no edges), seeds from `seed`.
///
/// # Errors
/// [`crate::Error::Graph`] when a node count is 0 and the relation has edges.
pub fn harris_like(na: usize, nb: usize, edges: [usize; 3], seed: u64) -> Result<HeteroGraph> {
    let (types, rels) = harris_like_lists(na, nb, edges, seed, |s, e, rows, hub| {
        Ok::<_, crate::Error>((0..e as u64).map(|k| index(s, k, rows, hub)).collect())
    })?;
    HeteroGraph::new(types, rels)
}

/// The node types and relations of [`harris_like`], each edge list made by
/// `make(stream, len, rows, hub)`: entry `k` must be
/// `index(stream, k, rows, hub)` (a device backend makes them where they live).
///
/// # Errors
/// What `make` returns.
pub fn harris_like_lists<I, E>(
    na: usize,
    nb: usize,
    edges: [usize; 3],
    seed: u64,
    mut make: impl FnMut(u64, usize, usize, bool) -> std::result::Result<I, E>,
) -> std::result::Result<(Vec<NodeType>, Vec<crate::StoreRelation<I>>), E> {
    let types = vec![
        NodeType {
            name: "a".into(),
            nodes: na,
        },
        NodeType {
            name: "b".into(),
            nodes: nb,
        },
    ];
    let n = [na, nb];
    let mut rels = Vec::with_capacity(3);
    for (i, (&(name, s, d), e)) in [("aa", 0usize, 0usize), ("ab", 0, 1), ("ba", 1, 0)]
        .iter()
        .zip(edges)
        .enumerate()
    {
        let s_seed = seed + 10 * i as u64;
        let src = make(s_seed, e, n[s], false)?;
        let dst = make(s_seed + 1, e, n[d], true)?;
        rels.push((name.to_string(), s, d, src, dst));
    }
    Ok((types, rels))
}

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
    let x = inputs::<B, T>(b, graph, &model.config().in_features)?;
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
    let x = inputs::<B, f32>(b, graph, &model.config().in_features)?
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

/// Inputs per node type `t`: `[nodes, features[t]]` from stream `40 + t`
/// (the inputs of [`training_bits`]).
///
/// # Errors
/// Sizes that overflow; backend errors.
pub fn inputs<B: Backend, T: Element>(
    b: &B,
    graph: &HeteroGraph,
    features: &[usize],
) -> Result<Vec<BTensor<B, T>>> {
    graph
        .node_types()
        .iter()
        .zip(features)
        .enumerate()
        .map(|(t, (nt, &f))| {
            let n = nt.nodes.checked_mul(f).ok_or_else(|| {
                crate::Error::Model(format!("{} nodes x {f} features overflows", nt.nodes))
            })?;
            Ok(b.upload(&values::<T>(40 + t as u64, n), &[nt.nodes, f])?)
        })
        .collect()
}

/// What [`check_gradients`] found.
#[derive(Debug, Clone, Default)]
pub struct GradientCheck {
    /// Entries checked (parameters and inputs).
    pub checked: usize,
    /// One line per entry outside the tolerance: name, analytic gradient,
    /// central difference.
    pub mismatches: Vec<String>,
}

/// Checks the analytic gradients of an f64 model against central
/// differences (step `1e-5`), entry by entry, on `b`: the model of `config`
/// on `graph` from `seed`, with nonzero biases (so their paths are exercised
/// away from their zero init), inputs per node type `t` from stream
/// `40 + t`; every parameter, then every input. An entry passes when
/// `|analytic - fd| <= 1e-6 * max(|analytic|, |fd|) + 1e-9`.
///
/// # Errors
/// Model and backend errors (a mismatch is not an error: see
/// [`GradientCheck::mismatches`]).
pub fn check_gradients<B: Backend>(
    b: &B,
    graph: &HeteroGraph,
    config: HetGatConfig,
    seed: u64,
) -> Result<GradientCheck> {
    let mut x = inputs::<B, f64>(b, graph, &config.in_features)?;
    let mut model = HetGat::<B, f64>::new(b, graph, config, seed)?;
    for i in 0..model.params().len() {
        if model.param_names()[i].ends_with(".bias") {
            let n = model.params()[i].numel();
            let v: Vec<f64> = values::<f64>(90 + i as u64, n)
                .iter()
                .map(|x| 0.3 * x)
                .collect();
            model.params_mut()[i] = b.upload(&v, &[1, n])?;
        }
    }
    let out = model.loss_and_grads(b, graph, &x, true)?;
    let h = 1e-5;
    let mut report = GradientCheck::default();
    let mut check = |name: &dyn Fn() -> String, an: f64, fd: f64| {
        if (an - fd).abs() > 1e-6 * an.abs().max(fd.abs()) + 1e-9 {
            report.mismatches.push(format!(
                "{}: analytic {an:e}, central difference {fd:e}",
                name()
            ));
        }
        report.checked += 1;
    };
    for i in 0..model.params().len() {
        let p0 = b.download(&model.params()[i])?;
        let shape = model.params()[i].shape().to_vec();
        let an = match &out.grads[i] {
            Some(t) => b.download(t)?,
            None => vec![0.0; p0.len()],
        };
        for j in 0..p0.len() {
            let mut loss_at = |v: f64| {
                let mut p = p0.clone();
                p[j] = v;
                model.params_mut()[i] = b.upload(&p, &shape)?;
                model.loss(b, graph, &x)
            };
            let fd = (loss_at(p0[j] + h)? - loss_at(p0[j] - h)?) / (2.0 * h);
            check(&|| format!("{}[{j}]", model.param_names()[i]), an[j], fd);
        }
        model.params_mut()[i] = b.upload(&p0, &shape)?;
    }
    for t in 0..x.len() {
        let x0 = b.download(&x[t])?;
        let shape = x[t].shape().to_vec();
        let an = match &out.input_grads[t] {
            Some(g) => b.download(g)?,
            None => vec![0.0; x0.len()],
        };
        for j in 0..x0.len() {
            let mut loss_at = |v: f64| {
                let mut p = x0.clone();
                p[j] = v;
                x[t] = b.upload(&p, &shape)?;
                model.loss(b, graph, &x)
            };
            let fd = (loss_at(x0[j] + h)? - loss_at(x0[j] - h)?) / (2.0 * h);
            check(&|| format!("x[{t}][{j}]"), an[j], fd);
        }
        x[t] = b.upload(&x0, &shape)?;
    }
    Ok(report)
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
