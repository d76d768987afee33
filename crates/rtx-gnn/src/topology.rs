//! [`Topology`]: what the model reads of a graph. Two kinds implement it: a
//! [`HeteroGraph`] (host edge lists with host plans built once, for a graph
//! that stands still) and a [`IndexGraph`] (backend index lists, their
//! plans built where they live: a mini-batch sampled on the device never
//! crosses to the host). The model's forward and backward are written once
//! against [`RelEdges`], whose ops pick the host-list or `_idx` form.

use rtx_backend::{BTensor, Backend, Element, IndexOps, Result};

use crate::graph::{HeteroGraph, NodeType, Relation};
use crate::store::IndexGraph;

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
}

/// The edges of one relation, as the model's ops take them.
#[derive(Debug)]
pub enum RelEdges<'a, B: IndexOps> {
    /// Host lists with both plans built.
    Host(&'a Relation),
    /// Backend lists; their plans are built by the backend at first use.
    Backend {
        /// Source node of every edge.
        src: &'a B::Index,
        /// Destination node of every edge.
        dst: &'a B::Index,
        /// Nodes of the source type.
        src_rows: usize,
        /// Nodes of the destination type.
        dst_rows: usize,
    },
}

impl<B: Backend> RelEdges<'_, B> {
    /// `a[src[e]] + b[dst[e]]` per edge.
    pub fn gather_add<T: Element>(
        &self,
        bk: &B,
        a: &BTensor<B, T>,
        b: &BTensor<B, T>,
    ) -> Result<BTensor<B, T>> {
        match self {
            RelEdges::Host(r) => bk.gather_add(a, r.src(), b, r.dst()),
            RelEdges::Backend { src, dst, .. } => bk.gather_add_idx(a, src, b, dst),
        }
    }

    /// Softmax of `z` over each destination's edges.
    pub fn softmax_by_dst<T: Element>(&self, bk: &B, z: &BTensor<B, T>) -> Result<BTensor<B, T>> {
        match self {
            RelEdges::Host(r) => bk.segment_softmax(z, r.dst_plan()),
            RelEdges::Backend { dst, dst_rows, .. } => bk.segment_softmax_idx(z, dst, *dst_rows),
        }
    }

    /// The backward of [`RelEdges::softmax_by_dst`].
    pub fn softmax_by_dst_backward<T: Element>(
        &self,
        bk: &B,
        alpha: &BTensor<B, T>,
        grad: &BTensor<B, T>,
    ) -> Result<BTensor<B, T>> {
        match self {
            RelEdges::Host(r) => bk.segment_softmax_backward(alpha, grad, r.dst_plan()),
            RelEdges::Backend { dst, dst_rows, .. } => {
                bk.segment_softmax_backward_idx(alpha, grad, dst, *dst_rows)
            }
        }
    }

    /// `sum over e into d of w[e] * x[src[e]]` (head-scaled): messages from
    /// sources summed per destination.
    pub fn src_to_dst<T: Element>(
        &self,
        bk: &B,
        x: &BTensor<B, T>,
        w: &BTensor<B, T>,
    ) -> Result<BTensor<B, T>> {
        match self {
            RelEdges::Host(r) => bk.gather_scale_scatter(x, r.src(), w, r.dst_plan()),
            RelEdges::Backend {
                src, dst, dst_rows, ..
            } => bk.gather_scale_scatter_idx(x, src, w, dst, *dst_rows),
        }
    }

    /// `sum over e from s of w[e] * g[dst[e]]`: the adjoint of
    /// [`RelEdges::src_to_dst`] with respect to `x`.
    pub fn dst_to_src<T: Element>(
        &self,
        bk: &B,
        g: &BTensor<B, T>,
        w: &BTensor<B, T>,
    ) -> Result<BTensor<B, T>> {
        match self {
            RelEdges::Host(r) => bk.gather_scale_scatter(g, r.dst(), w, r.src_plan()),
            RelEdges::Backend {
                src, dst, src_rows, ..
            } => bk.gather_scale_scatter_idx(g, dst, w, src, *src_rows),
        }
    }

    /// `g[dst[e]] . h[src[e]]` per edge and head.
    pub fn dst_src_head_dot<T: Element>(
        &self,
        bk: &B,
        g: &BTensor<B, T>,
        h: &BTensor<B, T>,
        heads: usize,
    ) -> Result<BTensor<B, T>> {
        match self {
            RelEdges::Host(r) => bk.gather_head_dot(g, r.dst(), h, r.src(), heads),
            RelEdges::Backend { src, dst, .. } => bk.gather_head_dot_idx(g, dst, h, src, heads),
        }
    }

    /// Per-edge rows summed per source node.
    pub fn sum_by_src<T: Element>(&self, bk: &B, x: &BTensor<B, T>) -> Result<BTensor<B, T>> {
        match self {
            RelEdges::Host(r) => bk.segment_sum(x, r.src_plan()),
            RelEdges::Backend { src, src_rows, .. } => bk.segment_sum_idx(x, src, *src_rows),
        }
    }

    /// Per-edge rows summed per destination node.
    pub fn sum_by_dst<T: Element>(&self, bk: &B, x: &BTensor<B, T>) -> Result<BTensor<B, T>> {
        match self {
            RelEdges::Host(r) => bk.segment_sum(x, r.dst_plan()),
            RelEdges::Backend { dst, dst_rows, .. } => bk.segment_sum_idx(x, dst, *dst_rows),
        }
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
        RelEdges::Host(&self.relations()[r])
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
        RelEdges::Backend {
            src: &self.src[r],
            dst: &self.dst[r],
            src_rows: self.node_types[*s].nodes,
            dst_rows: self.node_types[*d].nodes,
        }
    }
}
