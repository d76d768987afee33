//! [`Shard`]: one rank's share of a batch (a graph and its features), the
//! Harris batch split by copies ([`harris_shards`]), and the single-device
//! equivalent of a split ([`union`]).

use rtx_backend::{BTensor, Backend, Element};

use crate::graph::{HARRIS_FEATURES, HARRIS_NODES, HeteroGraph, NodeType, harris_features};
use crate::{Error, Result};

/// A share of a batch: its graph and, per node type, the features row-major
/// `[nodes, features]` on the host.
#[derive(Debug, Clone)]
pub struct Shard<T> {
    /// The share's graph.
    pub graph: HeteroGraph,
    /// Features per node type.
    pub features: Vec<Vec<T>>,
}

impl<T: Element> Shard<T> {
    /// The features on backend `b`, `features[t]` columns for node type `t`.
    ///
    /// # Errors
    /// [`Error::Model`] when the features do not fit the node counts;
    /// backend errors.
    pub fn upload<B: Backend>(&self, b: &B, features: &[usize]) -> Result<Vec<BTensor<B, T>>> {
        let types = self.graph.node_types();
        if features.len() != types.len() || self.features.len() != types.len() {
            return Err(Error::Model(format!(
                "a shard of {} node types with {} feature arrays, {} feature counts",
                types.len(),
                self.features.len(),
                features.len()
            )));
        }
        types
            .iter()
            .zip(features)
            .zip(&self.features)
            .map(|((t, &f), v)| Ok(b.upload(v, &[t.nodes, f])?))
            .collect()
    }
}

/// The Harris batch of `batch` copies (docs/workloads.md) split over `ranks`:
/// rank `r` gets copies `batch * r / ranks .. batch * (r + 1) / ranks` (its
/// graph is `HeteroGraph::harris` of that many copies, the copies being
/// disjoint and alike) and their rows of `harris_features(batch)`.
/// [`union`] of the shards is `(HeteroGraph::harris(batch),
/// harris_features(batch))`.
///
/// # Errors
/// [`Error::Graph`] when `ranks` is 0 or exceeds `batch`; as
/// [`HeteroGraph::harris`].
pub fn harris_shards<T: Element>(batch: usize, ranks: usize) -> Result<Vec<Shard<T>>> {
    if ranks == 0 || ranks > batch {
        return Err(Error::Graph(format!(
            "a batch of {batch} copies over {ranks} ranks: want 1..={batch} ranks"
        )));
    }
    let all = harris_features::<T>(batch);
    (0..ranks)
        .map(|r| {
            let (c0, c1) = (batch * r / ranks, batch * (r + 1) / ranks);
            let features = HARRIS_NODES
                .iter()
                .zip(&all)
                .map(|(&(_, n), v)| v[c0 * n * HARRIS_FEATURES..c1 * n * HARRIS_FEATURES].to_vec())
                .collect();
            Ok(Shard {
                graph: HeteroGraph::harris(c1 - c0)?,
                features,
            })
        })
        .collect()
}

/// The disjoint union of `shards` in order (node ids of shard `s` shifted
/// by the node counts of shards `0..s`, features stacked): the batch a
/// single device trains on. The shards must have the same schema.
///
/// # Errors
/// [`Error::Graph`] for shards of different schemas or none, or node counts
/// that overflow `u32`.
pub fn union<T: Element>(shards: &[Shard<T>]) -> Result<Shard<T>> {
    let first = shards
        .first()
        .ok_or_else(|| Error::Graph("the union of no shards".into()))?;
    let types = first.graph.node_types();
    let rels = first.graph.relations();
    let schema = |g: &HeteroGraph| {
        (
            g.node_types()
                .iter()
                .map(|t| t.name.clone())
                .collect::<Vec<_>>(),
            g.relations()
                .iter()
                .map(|r| (r.name().to_owned(), r.src_type(), r.dst_type()))
                .collect::<Vec<_>>(),
        )
    };
    let want = schema(&first.graph);
    let mut offset = vec![0usize; types.len()];
    let mut src = vec![Vec::new(); rels.len()];
    let mut dst = vec![Vec::new(); rels.len()];
    let mut features = vec![Vec::new(); types.len()];
    for (s, shard) in shards.iter().enumerate() {
        if schema(&shard.graph) != want || shard.features.len() != types.len() {
            return Err(Error::Graph(format!(
                "shard {s} has another schema than shard 0"
            )));
        }
        for (k, r) in shard.graph.relations().iter().enumerate() {
            let (os, od) = (offset[r.src_type()], offset[r.dst_type()]);
            let shift = |o: usize, v: &[u32], into: &mut Vec<u32>| -> Result<()> {
                let o =
                    u32::try_from(o).map_err(|_| Error::Graph("node ids overflow u32".into()))?;
                for &i in v {
                    into.push(
                        i.checked_add(o)
                            .ok_or_else(|| Error::Graph("node ids overflow u32".into()))?,
                    );
                }
                Ok(())
            };
            shift(os, r.src(), &mut src[k])?;
            shift(od, r.dst(), &mut dst[k])?;
        }
        for (t, nt) in shard.graph.node_types().iter().enumerate() {
            offset[t] += nt.nodes;
            features[t].extend_from_slice(&shard.features[t]);
        }
    }
    let node_types = types
        .iter()
        .zip(&offset)
        .map(|(t, &n)| NodeType {
            name: t.name.clone(),
            nodes: n,
        })
        .collect();
    let specs = rels
        .iter()
        .zip(src)
        .zip(dst)
        .map(|((r, s), d)| (r.name().to_owned(), r.src_type(), r.dst_type(), s, d))
        .collect();
    Ok(Shard {
        graph: HeteroGraph::new(node_types, specs)?,
        features,
    })
}
