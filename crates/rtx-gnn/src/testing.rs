//! Reusable checks for backends: the training run the CPU tests use, so a
//! device backend's tests can run the same one (e.g. the two-modes property:
//! `training_bits(&cuda, ..) == training_bits(&HostIndexOps::new(cuda2), ..)`).

use rtx_backend::workload::{index, values};
use rtx_backend::{Backend, Element};

use crate::{HetGat, HetGatConfig, HeteroGraph, NodeType, Result};

/// A Harris-like graph of any size: types `a` (`na` nodes) and `b` (`nb`);
/// relations aa, ab, ba with `edges` edges, uniform sources and hub-skewed
/// destinations (so some nodes get no edges), seeds from `seed`.
///
/// # Errors
/// [`crate::Error::Graph`] when a node count is 0 and the relation has edges.
pub fn harris_like(na: usize, nb: usize, edges: [usize; 3], seed: u64) -> Result<HeteroGraph> {
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
    let rels = [("aa", 0usize, 0usize), ("ab", 0, 1), ("ba", 1, 0)]
        .iter()
        .zip(edges)
        .enumerate()
        .map(|(i, (&(name, s, d), e))| {
            let s_seed = seed + 10 * i as u64;
            let src = (0..e as u64)
                .map(|k| index(s_seed, k, n[s], false))
                .collect();
            let dst = (0..e as u64)
                .map(|k| index(s_seed + 1, k, n[d], true))
                .collect();
            (name.to_string(), s, d, src, dst)
        })
        .collect();
    HeteroGraph::new(types, rels)
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
    let cfg = HetGatConfig {
        in_features: vec![32; graph.node_types.len()],
        ..HetGatConfig::harris()
    };
    let mut model = HetGat::<B, T>::new(b, graph, cfg, 42)?;
    let x = graph
        .node_types
        .iter()
        .enumerate()
        .map(|(t, nt)| b.upload(&values::<T>(40 + t as u64, nt.nodes * 32), &[nt.nodes, 32]))
        .collect::<rtx_backend::Result<Vec<_>>>()?;
    let mut losses = Vec::with_capacity(steps);
    for _ in 0..steps {
        losses.push(model.train_step(b, graph, &x, 1e-2)?.to_bits_u64());
    }
    let params = model
        .params()
        .iter()
        .map(|p| Ok(b.download(p)?.iter().map(|v| v.to_bits_u64()).collect()))
        .collect::<Result<Vec<_>>>()?;
    Ok((losses, params))
}
