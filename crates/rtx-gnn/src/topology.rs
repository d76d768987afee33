//! [`Topology`]: what the model reads of a graph. Two kinds implement it: a
//! [`HeteroGraph`] (host edge lists with host plans built once, for a graph
//! that stands still) and a [`IndexGraph`] (backend index lists, their
//! plans built where they live: a mini-batch sampled on the device never
//! crosses to the host). The model's forward and backward are written once
//! against [`RelEdges`]: each endpoint as [`Indices`], whatever form.

use rtx_backend::{BTensor, Backend, Element, IndexOps, Indices, Result};

use crate::graph::{HeteroGraph, NodeType};
use crate::store::{IndexGraph, Trimmed};

/// A graph the model runs on: node types with their counts, and relations
/// `(name, src type, dst type)` with their edges.
pub trait Topology<B: Backend> {
    /// Node types, with the node count of this graph.
    fn node_types(&self) -> &[NodeType];
    /// Number of relations.
    fn relation_count(&self) -> usize;
    /// `(name, src type, dst type)` of relation `r`.
    fn relation_key(&self, r: usize) -> (&str, usize, usize);
    /// The edges of relation `r`.
    fn edges(&self, r: usize) -> RelEdges<'_, B>;

    /// The nodes of type `t` a layer that reads `depth` hops around a
    /// sample's seeds needs: local nodes `0..nodes_within(t, depth)`.
    /// Default: every node (a graph read whole at every layer).
    fn nodes_within(&self, t: usize, _depth: usize) -> usize {
        self.node_types()[t].nodes
    }

    /// The edges of relation `r` a layer that reads `depth >= 1` hops needs
    /// (those of the first `depth` hops), sources of rows `nodes_within(src,
    /// depth)`, destinations of rows `nodes_within(dst, depth - 1)`.
    /// Default: [`Topology::edges`].
    fn edges_within(&self, r: usize, _depth: usize) -> RelEdges<'_, B> {
        self.edges(r)
    }

    /// The node type whose first nodes a trimmed graph's last layer
    /// computes (a sample's seeds' type), `None` for a graph read whole.
    fn trimmed_to(&self) -> Option<usize> {
        None
    }
}

/// The edges of one relation, as the model's ops take them: each endpoint
/// as gathers take it (a list) and as sums by it take it (a plan where the
/// graph has one), each with its node count.
#[derive(Debug)]
pub struct RelEdges<'a, B: IndexOps> {
    /// Source node of every edge, to gather by.
    pub src: Indices<'a, B>,
    /// Source node of every edge, to sum by.
    pub by_src: Indices<'a, B>,
    /// Destination node of every edge, to gather by.
    pub dst: Indices<'a, B>,
    /// Destination node of every edge, to sum by.
    pub by_dst: Indices<'a, B>,
}

impl<'a, B: IndexOps> RelEdges<'a, B> {
    /// Edges of two held lists, each endpoint with its row count: the same
    /// list to gather and to sum by (its plan is built where it lives).
    pub fn held(
        (src, src_rows): (&'a B::Index, usize),
        (dst, dst_rows): (&'a B::Index, usize),
    ) -> Self {
        let src = Indices::held(src).with_rows(src_rows);
        let dst = Indices::held(dst).with_rows(dst_rows);
        RelEdges {
            src,
            by_src: src,
            dst,
            by_dst: dst,
        }
    }
}

impl<B: Backend> RelEdges<'_, B> {
    /// `a[src[e]] + b[dst[e]]` per edge.
    pub fn gather_add<T: Element>(
        &self,
        bk: &B,
        a: &BTensor<B, T>,
        b: &BTensor<B, T>,
    ) -> Result<BTensor<B, T>> {
        bk.gather_add(a, self.src, b, self.dst)
    }

    /// Softmax of `z` over each destination's edges.
    pub fn softmax_by_dst<T: Element>(&self, bk: &B, z: &BTensor<B, T>) -> Result<BTensor<B, T>> {
        bk.segment_softmax(z, self.by_dst)
    }

    /// The backward of [`RelEdges::softmax_by_dst`].
    pub fn softmax_by_dst_backward<T: Element>(
        &self,
        bk: &B,
        alpha: &BTensor<B, T>,
        grad: &BTensor<B, T>,
    ) -> Result<BTensor<B, T>> {
        bk.segment_softmax_backward(alpha, grad, self.by_dst)
    }

    /// `sum over e into d of w[e] * x[src[e]]` (head-scaled): messages from
    /// sources summed per destination.
    pub fn src_to_dst<T: Element>(
        &self,
        bk: &B,
        x: &BTensor<B, T>,
        w: &BTensor<B, T>,
    ) -> Result<BTensor<B, T>> {
        bk.gather_scale_scatter(x, self.src, w, self.by_dst)
    }

    /// `sum over e from s of w[e] * g[dst[e]]`: the adjoint of
    /// [`RelEdges::src_to_dst`] with respect to `x`.
    pub fn dst_to_src<T: Element>(
        &self,
        bk: &B,
        g: &BTensor<B, T>,
        w: &BTensor<B, T>,
    ) -> Result<BTensor<B, T>> {
        bk.gather_scale_scatter(g, self.dst, w, self.by_src)
    }

    /// `g[dst[e]] . h[src[e]]` per edge and head.
    pub fn dst_src_head_dot<T: Element>(
        &self,
        bk: &B,
        g: &BTensor<B, T>,
        h: &BTensor<B, T>,
        heads: usize,
    ) -> Result<BTensor<B, T>> {
        bk.gather_head_dot(g, self.dst, h, self.src, heads)
    }

    /// Per-edge rows summed per source node.
    pub fn sum_by_src<T: Element>(&self, bk: &B, x: &BTensor<B, T>) -> Result<BTensor<B, T>> {
        bk.segment_sum(x, self.by_src)
    }

    /// Per-edge rows summed per destination node.
    pub fn sum_by_dst<T: Element>(&self, bk: &B, x: &BTensor<B, T>) -> Result<BTensor<B, T>> {
        bk.segment_sum(x, self.by_dst)
    }
}

impl<B: Backend> Topology<B> for HeteroGraph {
    fn node_types(&self) -> &[NodeType] {
        HeteroGraph::node_types(self)
    }

    fn relation_count(&self) -> usize {
        self.relations().len()
    }

    fn relation_key(&self, r: usize) -> (&str, usize, usize) {
        let rel = &self.relations()[r];
        (rel.name(), rel.src_type(), rel.dst_type())
    }

    fn edges(&self, r: usize) -> RelEdges<'_, B> {
        let rel = &self.relations()[r];
        let rows = |t: usize| self.node_types()[t].nodes;
        RelEdges {
            src: Indices::list(rel.src()).with_rows(rows(rel.src_type())),
            by_src: Indices::plan(rel.src_plan()),
            dst: Indices::list(rel.dst()).with_rows(rows(rel.dst_type())),
            by_dst: Indices::plan(rel.dst_plan()),
        }
    }
}

impl<B: Backend> Topology<B> for IndexGraph<B> {
    fn node_types(&self) -> &[NodeType] {
        &self.node_types
    }

    fn relation_count(&self) -> usize {
        self.relations.len()
    }

    fn relation_key(&self, r: usize) -> (&str, usize, usize) {
        let k = &self.relations[r];
        (&k.0, k.1, k.2)
    }

    fn edges(&self, r: usize) -> RelEdges<'_, B> {
        let (_, s, d) = &self.relations[r];
        RelEdges::held(
            (&self.src[r], self.node_types[*s].nodes),
            (&self.dst[r], self.node_types[*d].nodes),
        )
    }
}

impl<B: Backend> Topology<B> for Trimmed<'_, B> {
    fn node_types(&self) -> &[NodeType] {
        &self.0.node_types
    }

    fn relation_count(&self) -> usize {
        self.0.relations.len()
    }

    fn relation_key(&self, r: usize) -> (&str, usize, usize) {
        Topology::<B>::relation_key(self.0, r)
    }

    fn edges(&self, r: usize) -> RelEdges<'_, B> {
        Topology::<B>::edges(self.0, r)
    }

    fn nodes_within(&self, t: usize, depth: usize) -> usize {
        self.0.nodes_within(t, depth)
    }

    fn trimmed_to(&self) -> Option<usize> {
        self.0.hops.as_ref().map(|h| h.seed_type)
    }

    fn edges_within(&self, r: usize, depth: usize) -> RelEdges<'_, B> {
        let (_, s, d) = &self.0.relations[r];
        let (sl, dl) = self.0.relation_edges_within(r, depth);
        RelEdges::held(
            (sl, self.nodes_within(*s, depth)),
            (dl, self.nodes_within(*d, depth.saturating_sub(1))),
        )
    }
}
