//! A heterogeneous graph held by the backend ([`GraphStore`]: per relation a
//! CSR by destination, node counts and features per type, built once), and
//! the mini-batches sampled from it ([`MiniBatch`], whose topology is an
//! [`IndexGraph`] of backend index lists). On a device backend neither the
//! topology nor a sample is ever copied to the host.

use rtx_backend::Indices;
use rtx_backend::prelude::*;
use rtx_backend::sample::{Csr, SampleSpec};
use rtx_backend::{BTensor, Element, SampleOps};

use crate::graph::NodeType;
use crate::{Error, Result};

/// One relation given to [`GraphStore::new`]: `(name, src type, dst type,
/// src, dst)` with backend index lists.
pub type StoreRelation<I> = (String, usize, usize, I, I);

/// A heterogeneous graph on backend `B` with `T` features: per relation the
/// CSR of its incoming edges by destination (built by the backend from the
/// edge lists: on a device, by the device sort), per node type its count and
/// features `[nodes, in_features]`.
#[derive(Debug)]
pub struct GraphStore<B: SampleOps, T: Element> {
    node_types: Vec<NodeType>,
    keys: Vec<(String, usize, usize)>,
    csrs: Vec<Csr<B::Index>>,
    features: Vec<BTensor<B, T>>,
    edges: usize,
}

/// A heterogeneous graph of backend index lists: node types with their
/// counts and relations with their edge lists, whose plans the backend
/// builds where the lists live, at first use (every endpoint checked there).
/// The model runs on it (it is a [`Topology`](crate::Topology)); a sampled
/// mini-batch is one.
#[derive(Debug)]
pub struct IndexGraph<B: IndexOps> {
    pub(crate) node_types: Vec<NodeType>,
    pub(crate) relations: Vec<(String, usize, usize)>,
    pub(crate) src: Vec<B::Index>,
    pub(crate) dst: Vec<B::Index>,
    edges: usize,
    /// Where a sampler made it: its hops ([`IndexGraph::trimmed`]).
    pub(crate) hops: Option<Hops<B>>,
}

/// The hops of a sampled graph: nodes reached and edges drawn by each.
#[derive(Debug)]
pub(crate) struct Hops<B: IndexOps> {
    /// The seeds' node type.
    pub(crate) seed_type: usize,
    /// `reached[h][t]`: nodes of type `t` reached in hops `0..=h`.
    pub(crate) reached: Vec<Vec<usize>>,
    /// `within[r][k - 1]`: relation `r`'s edges of the first `k` hops, for
    /// `k` in `1..hops`.
    pub(crate) within: Vec<Vec<(B::Index, B::Index)>>,
}

/// A sampled graph as a model of `L` layers reads it (PyG's
/// `trim_to_layer`): layer `l` reads `L - l` hops around the seeds, so it
/// needs the edges of those hops, their sources (nodes reached within `L -
/// l` hops) and their destinations (within `L - l - 1`), and its output
/// rows are the next layer's sources. Local ids and edges are in hop order,
/// so each is a prefix, and the rows a layer keeps get what they get on the
/// whole graph: the same sums over the same edges in the same order (the
/// parameters' gradients differ only in the order their dropped exact-zero
/// terms were added in). The last layer computes the seeds alone, so the
/// model's target must be the seeds' type (the model's passes refuse
/// another).
#[derive(Debug)]
pub struct Trimmed<'g, B: IndexOps>(pub(crate) &'g IndexGraph<B>);

impl<B: IndexOps> Clone for Trimmed<'_, B> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<B: IndexOps> Copy for Trimmed<'_, B> {}

impl<B: IndexOps> IndexGraph<B> {
    /// A graph of the given lists (the backend checks every endpoint
    /// against its type's count at the first op that plans or gathers it).
    ///
    /// # Errors
    /// [`Error::Graph`] for an unknown node type, a repeated relation key or
    /// lists of unequal length.
    pub fn new(
        b: &B,
        node_types: Vec<NodeType>,
        relations: Vec<StoreRelation<B::Index>>,
    ) -> Result<Self> {
        let mut keys: Vec<(String, usize, usize)> = Vec::with_capacity(relations.len());
        let (mut src, mut dst) = (Vec::new(), Vec::new());
        let mut edges = 0;
        for (name, s, d, sl, dl) in relations {
            check_relation(b, &node_types, &keys, (&name, s, d), (&sl, &dl))?;
            edges += b.index_len(&sl);
            keys.push((name, s, d));
            src.push(sl);
            dst.push(dl);
        }
        Ok(IndexGraph {
            node_types,
            relations: keys,
            src,
            dst,
            edges,
            hops: None,
        })
    }

    /// Node types with their counts.
    pub fn node_types(&self) -> &[NodeType] {
        &self.node_types
    }

    /// The source and destination lists of relation `r`.
    pub fn relation_edges(&self, r: usize) -> (&B::Index, &B::Index) {
        (&self.src[r], &self.dst[r])
    }

    /// Edges over all relations.
    pub fn edges(&self) -> usize {
        self.edges
    }

    /// The graph as each layer of a model reads it ([`Trimmed`]); a graph
    /// not made by a sampler reads whole at every layer.
    pub fn trimmed(&self) -> Trimmed<'_, B> {
        Trimmed(self)
    }

    /// Hops of the sample it was made by (`None`: not sampled).
    pub fn hops(&self) -> Option<usize> {
        self.hops.as_ref().map(|h| h.reached.len() - 1)
    }

    /// The nodes of type `t` reached within `hops` hops of the seeds
    /// (hop 0: the distinct seeds) by the sample that made the graph: local
    /// nodes `0..nodes_within(t, hops)`. Every node for a graph not
    /// sampled, or past the sample's hops.
    pub fn nodes_within(&self, t: usize, hops: usize) -> usize {
        match &self.hops {
            Some(h) => h.reached[hops.min(h.reached.len() - 1)][t],
            None => self.node_types[t].nodes,
        }
    }

    /// The source and destination lists of relation `r`'s edges drawn in
    /// the first `hops >= 1` hops (a prefix of [`IndexGraph::relation_edges`];
    /// sources below `nodes_within(src, hops)`, destinations below
    /// `nodes_within(dst, hops - 1)`). Every edge for a graph not sampled,
    /// or past the sample's hops.
    pub fn relation_edges_within(&self, r: usize, hops: usize) -> (&B::Index, &B::Index) {
        let within = self
            .hops
            .as_ref()
            .and_then(|h| h.within[r].get(hops.wrapping_sub(1)));
        match within {
            Some((s, d)) => (s, d),
            None => (&self.src[r], &self.dst[r]),
        }
    }
}

/// Checks one relation against the node types and the keys before it.
fn check_relation<B: IndexOps>(
    b: &B,
    types: &[NodeType],
    keys: &[(String, usize, usize)],
    (name, s, d): (&str, usize, usize),
    (src, dst): (&B::Index, &B::Index),
) -> Result<()> {
    let (Some(ns), Some(nd)) = (types.get(s), types.get(d)) else {
        return Err(Error::Graph(format!(
            "relation {name}: node types {s} -> {d}, but there are {} node types",
            types.len()
        )));
    };
    if keys.iter().any(|k| k.0 == name && k.1 == s && k.2 == d) {
        return Err(Error::Graph(format!(
            "relation {name} ({} -> {}) is given twice",
            ns.name, nd.name
        )));
    }
    let (ls, ld) = (b.index_len(src), b.index_len(dst));
    if ls != ld {
        return Err(Error::Graph(format!(
            "relation {name}: {ls} sources but {ld} destinations"
        )));
    }
    Ok(())
}

/// A subgraph sampled from a [`GraphStore`], and its nodes' input features.
#[derive(Debug)]
pub struct MiniBatch<B: SampleOps, T: Element> {
    /// The topology: node types with their local counts, the store's
    /// relations with local edge lists.
    pub graph: IndexGraph<B>,
    /// Per node type, the global id of every local node, in local order.
    pub nodes: Vec<B::Index>,
    /// The local id of every seed, in the order given (distinct seeds are
    /// the first local nodes of the seed type).
    pub seeds: B::Index,
    /// Per node type, the features of its local nodes `[count, in_features]`.
    pub x: Vec<BTensor<B, T>>,
}

impl<B: Backend + SampleOps, T: Element> GraphStore<B, T> {
    /// Builds the store: validates the schema, builds every relation's CSR
    /// on the backend (every endpoint checked against its type's count).
    ///
    /// # Errors
    /// [`Error::Graph`] for an unknown node type, a repeated relation key,
    /// features whose shape does not fit (rows = the type's count), lists of
    /// unequal length; backend errors (an endpoint out of range names its
    /// position, value and bound).
    pub fn new(
        b: &B,
        node_types: Vec<NodeType>,
        relations: Vec<StoreRelation<B::Index>>,
        features: Vec<BTensor<B, T>>,
    ) -> Result<Self> {
        if features.len() != node_types.len() {
            return Err(Error::Graph(format!(
                "{} feature tensors for {} node types",
                features.len(),
                node_types.len()
            )));
        }
        for (t, (nt, x)) in node_types.iter().zip(&features).enumerate() {
            if x.shape().len() != 2 || x.shape()[0] != nt.nodes {
                return Err(Error::Graph(format!(
                    "features of node type {t} ({}) have shape {:?}; want [{}, in_features]",
                    nt.name,
                    x.shape(),
                    nt.nodes
                )));
            }
        }
        let mut keys: Vec<(String, usize, usize)> = Vec::with_capacity(relations.len());
        let mut csrs = Vec::with_capacity(relations.len());
        let mut edges = 0;
        for (name, s, d, src, dst) in relations {
            check_relation(b, &node_types, &keys, (&name, s, d), (&src, &dst))?;
            let (ns, nd) = (node_types[s].nodes, node_types[d].nodes);
            edges += b.index_len(&src);
            csrs.push(b.csr_by_dst(&src, &dst, (s, ns), (d, nd))?);
            keys.push((name, s, d));
        }
        Ok(GraphStore {
            node_types,
            keys,
            csrs,
            features,
            edges,
        })
    }

    /// Node types with their counts.
    pub fn node_types(&self) -> &[NodeType] {
        &self.node_types
    }

    /// `(name, src type, dst type)` of every relation, in order.
    pub fn relations(&self) -> &[(String, usize, usize)] {
        &self.keys
    }

    /// Edges over all relations.
    pub fn edges(&self) -> usize {
        self.edges
    }

    /// The features of node type `t`.
    pub fn features(&self, t: usize) -> &BTensor<B, T> {
        &self.features[t]
    }

    /// Samples the subgraph around `seeds` (global ids of type
    /// `spec.seed_type`; see [`rtx_backend::sample`] for what is drawn) and
    /// gathers its nodes' features.
    ///
    /// # Errors
    /// A request that does not fit ([`rtx_backend::Error::Sample`]), a seed
    /// out of range; backend errors.
    pub fn sample(&self, b: &B, seeds: &B::Index, spec: &SampleSpec) -> Result<MiniBatch<B, T>> {
        let counts: Vec<usize> = self.node_types.iter().map(|t| t.nodes).collect();
        let s = b.sample_neighbors(&counts, &self.csrs, seeds, spec)?;
        let x = self
            .features
            .iter()
            .zip(&s.nodes)
            .map(|(f, n)| b.index_select(f, Indices::held(n)))
            .collect::<rtx_backend::Result<Vec<_>>>()?;
        let edges = s.src.iter().map(|l| b.index_len(l)).sum();
        let graph = IndexGraph {
            node_types: self
                .node_types
                .iter()
                .zip(&s.counts)
                .map(|(t, &n)| NodeType {
                    name: t.name.clone(),
                    nodes: n,
                })
                .collect(),
            relations: self.keys.clone(),
            src: s.src,
            dst: s.dst,
            edges,
            hops: s.hops.map(|h| Hops {
                seed_type: spec.seed_type,
                reached: h.reached,
                within: h.within,
            }),
        };
        Ok(MiniBatch {
            graph,
            nodes: s.nodes,
            seeds: s.seeds,
            x,
        })
    }
}
