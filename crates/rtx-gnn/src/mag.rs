//! A synthetic heterogeneous graph with ogbn-mag's sizes, for mini-batch
//! training benchmarks: four node types, four relations and their three
//! reverses (PyG's `ToUndirected` on ogbn-mag, `cites` kept directed),
//! power-law degrees, 128 fixed random features on every node type (ogbn-mag
//! has 128 features on papers; the featureless types get fixed random
//! features rather than a learned embedding table, so every step reads
//! inputs of the same shape on both sides of a comparison).
//!
//! Edge `k` of a relation with seed `s` runs from `index(s, k, n_src, hub)`
//! to `index(s + 1, k, n_dst, hub)` (the anchors' generator, docs/workloads.md):
//! both ends skewed toward low ids, `P(id < x) = (x / n)^(1/3)`, a power law
//! with hubs of tens of thousands of edges. Features of type `t` are
//! `value(200 + t, i)` row-major. `crates/rtx-bench/peers/pyg_sampled.py`
//! builds the identical graph.

use rtx_backend::prelude::*;
use rtx_backend::workload::{index, values};
use rtx_backend::{Element, SampleOps};

use crate::graph::{NodeType, RelationSpec};
use crate::model::HetGatConfig;
use crate::store::GraphStore;
use crate::{Error, Result};

/// ogbn-mag's node types and counts.
pub const MAG_NODES: [(&str, usize); 4] = [
    ("paper", 736_389),
    ("author", 1_134_649),
    ("institution", 8_740),
    ("field_of_study", 59_965),
];

/// ogbn-mag's relations: `(name, src type, dst type, edges, seed)`.
pub const MAG_RELATIONS: [(&str, usize, usize, usize, u64); 4] = [
    ("writes", 1, 0, 7_145_660, 100),
    ("cites", 0, 0, 5_416_271, 110),
    ("has_topic", 0, 3, 7_505_078, 120),
    ("affiliated_with", 1, 2, 1_043_998, 130),
];

/// The reverse relations added: `(name, index into MAG_RELATIONS)`.
pub const MAG_REVERSE: [(&str, usize); 3] = [
    ("rev_writes", 0),
    ("rev_has_topic", 2),
    ("rev_affiliated_with", 3),
];

/// Input features per node, every type.
pub const MAG_FEATURES: usize = 128;

/// The node types at `1 / div` of ogbn-mag's size (at least one node each).
pub fn mag_node_types(div: usize) -> Vec<NodeType> {
    MAG_NODES
        .iter()
        .map(|&(name, n)| NodeType {
            name: name.into(),
            nodes: (n / div.max(1)).max(1),
        })
        .collect()
}

/// The seven relations at `1 / div` of ogbn-mag's size, as host lists:
/// `(name, src type, dst type, src, dst)`.
pub fn mag_relations(div: usize) -> Vec<RelationSpec> {
    let types = mag_node_types(div);
    let mut rels: Vec<RelationSpec> = MAG_RELATIONS
        .iter()
        .map(|&(name, s, d, e, seed)| {
            let e = (e / div.max(1)).max(1) as u64;
            let (ns, nd) = (types[s].nodes, types[d].nodes);
            let src = (0..e).map(|k| index(seed, k, ns, true)).collect();
            let dst = (0..e).map(|k| index(seed + 1, k, nd, true)).collect();
            (name.to_string(), s, d, src, dst)
        })
        .collect();
    for (name, r) in MAG_REVERSE {
        let (_, s, d, src, dst) = &rels[r];
        let rev = (name.to_string(), *d, *s, dst.clone(), src.clone());
        rels.push(rev);
    }
    rels
}

/// The graph store of the ogbn-mag-shaped graph at `1 / div` of its size
/// on backend `b` (the host lists are dropped once uploaded).
///
/// # Errors
/// Backend errors.
pub fn mag_store<B: Backend + SampleOps, T: Element>(
    b: &B,
    div: usize,
) -> Result<GraphStore<B, T>> {
    let types = mag_node_types(div);
    let rels = mag_relations(div)
        .into_iter()
        .map(|(name, s, d, src, dst)| {
            Ok((
                name,
                s,
                d,
                b.index_from_host(&src)?,
                b.index_from_host(&dst)?,
            ))
        })
        .collect::<rtx_backend::Result<Vec<_>>>()?;
    let features = types
        .iter()
        .enumerate()
        .map(|(t, nt)| {
            b.upload(
                &values::<T>(200 + t as u64, nt.nodes * MAG_FEATURES),
                &[nt.nodes, MAG_FEATURES],
            )
        })
        .collect::<rtx_backend::Result<Vec<_>>>()?;
    GraphStore::new(b, types, rels, features)
}

/// The model of the mini-batch benchmark: the Harris HetGAT's layers (2 x
/// 4 heads x 16 channels) on the ogbn-mag schema, head on papers.
pub fn mag_config() -> HetGatConfig {
    HetGatConfig {
        in_features: vec![MAG_FEATURES; MAG_NODES.len()],
        ..HetGatConfig::harris()
    }
}

/// The seeds of mini-batch `step` of an epoch over `n` nodes in batches of
/// `batch`: positions `step * batch..` of the permutation
/// `i -> (i * m + 12345) % n` (`m` the first number from 1,000,003 on that
/// is coprime to `n`), so an epoch visits every node once.
///
/// # Errors
/// [`Error::Graph`] when `n` or `batch` is 0 or the step is past the epoch.
pub fn epoch_seeds(n: usize, batch: usize, step: usize) -> Result<Vec<u32>> {
    if n == 0 || batch == 0 || n > u32::MAX as usize {
        return Err(Error::Graph(format!(
            "epoch of {n} nodes in batches of {batch}"
        )));
    }
    let steps = n.div_ceil(batch);
    if step >= steps {
        return Err(Error::Graph(format!(
            "step {step} of an epoch of {steps} steps ({n} nodes, batches of {batch})"
        )));
    }
    let gcd = |mut a: u64, mut b: u64| {
        while b != 0 {
            (a, b) = (b, a % b);
        }
        a
    };
    let n64 = n as u64;
    let m = (1_000_003u64..).find(|&m| gcd(m, n64) == 1).unwrap_or(1);
    let end = (step * batch + batch).min(n);
    Ok((step * batch..end)
        .map(|i| ((i as u64 * m + 12_345) % n64) as u32)
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_epoch_visits_every_node_once() {
        for (n, batch) in [
            (1000usize, 64usize),
            (736, 1024),
            (97, 97),
            (1_000_003 * 2, 300_000),
        ] {
            let steps = n.div_ceil(batch);
            let mut seen = vec![false; n];
            for s in 0..steps {
                for i in epoch_seeds(n, batch, s).unwrap() {
                    assert!(!seen[i as usize], "node {i} twice (n {n})");
                    seen[i as usize] = true;
                }
            }
            assert!(seen.iter().all(|&v| v), "n {n}");
            assert!(epoch_seeds(n, batch, steps).is_err());
        }
        assert!(epoch_seeds(0, 1, 0).is_err());
        assert!(epoch_seeds(5, 0, 0).is_err());
    }

    #[test]
    fn the_graph_has_ogbn_mags_sizes_and_reverse_relations() {
        let types = mag_node_types(1);
        assert_eq!(types[1].nodes, 1_134_649);
        let rels = mag_relations(1000);
        assert_eq!(rels.len(), 7);
        assert_eq!(rels[0].3.len(), 7_145);
        let (_, s, d, src, dst) = &rels[4];
        assert_eq!((rels[4].0.as_str(), *s, *d), ("rev_writes", 0, 1));
        assert_eq!((src, dst), (&rels[0].4, &rels[0].3));
    }
}
