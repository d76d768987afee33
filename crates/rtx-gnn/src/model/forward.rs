//! The forward pass of [`HetGat`]: the output, the MSE loss, and what the
//! backward pass reads of the forward one (`Forward`).

use rtx_backend::prelude::*;
use rtx_backend::workload::splitmix64;
use rtx_backend::{BTensor, Binary, Element, Unary};

use super::{ATT_DST, ATT_SRC, BIAS, DeviceLoss, HetGat, W_DST, W_SRC};
use crate::topology::Topology;
use crate::{Error, Result};

/// What the backward pass reads of one relation's forward.
pub(super) struct RelCache<B: Backend, T: Element> {
    pub(super) hs: BTensor<B, T>,
    /// `head_dot(W_dst, att_dst)`, `[in_dst, heads]`: the destination logits
    /// are `x_dst @ w_att_dst` (see `HetGat::run_forward`).
    pub(super) w_att_dst: BTensor<B, T>,
    pub(super) z: BTensor<B, T>,
    pub(super) alpha: BTensor<B, T>,
    /// `alpha` after attention dropout (the coefficients the messages
    /// used), when a training pass dropped any.
    pub(super) alpha_dropped: Option<BTensor<B, T>>,
}

/// What the backward pass reads of one layer's forward.
pub(super) struct LayerCache<B: Backend, T: Element> {
    /// The layer's input per node type, as the convolutions read it (after
    /// input dropout in a training pass): the rows its sources need.
    pub(super) x: Vec<Option<BTensor<B, T>>>,
    /// The input's rows its destinations need, per destination type of a
    /// live relation (`x` itself where they are all of them).
    pub(super) x_dst: Vec<Option<BTensor<B, T>>>,
    /// The layer's output per node type: relu of its relations' biased sum
    /// (the same buffers as the next layer's input; relu's backward reads it).
    pub(super) act: Vec<Option<BTensor<B, T>>>,
    pub(super) rels: Vec<Option<RelCache<B, T>>>,
}

/// A forward pass: every layer's caches, the head's input and the output.
pub(super) struct Forward<B: Backend, T: Element> {
    pub(super) layers: Vec<LayerCache<B, T>>,
    /// The head's input (the target type's last activation) and output.
    pub(super) h: BTensor<B, T>,
    pub(super) y: BTensor<B, T>,
    /// The dropout of the pass (`None`: no dropout).
    pub(super) dropout: Option<u64>,
}

/// The seed of the dropout mask of one tensor of a pass: input dropout of
/// layer `l`'s node type `i` (`attention == false`) or attention dropout of
/// layer `l`'s relation `i`, drawn from the pass's seed by splitmix64, so
/// every mask is a pure function of (pass seed, layer, type or relation,
/// element index): counter-based, like the sampler's draws.
pub(super) fn dropout_seed(pass: u64, l: usize, i: usize, attention: bool) -> u64 {
    let tag = ((l as u64) << 33) | ((i as u64) << 1) | u64::from(attention);
    splitmix64(pass, tag)
}

impl<B: Backend, T: Element> HetGat<B, T> {
    /// The forward pass, keeping what the backward pass reads; `dropout`:
    /// the seed of a training pass's dropout masks (`None`: no dropout, as
    /// in evaluation).
    ///
    /// # Errors
    /// As [`HetGat::forward`].
    pub(super) fn run_forward<G: Topology<B> + ?Sized>(
        &self,
        b: &B,
        graph: &G,
        x: &[BTensor<B, T>],
        dropout: Option<u64>,
    ) -> Result<Forward<B, T>> {
        self.check_inputs(graph, x)?;
        if let Some(t) = graph.trimmed_to().filter(|&t| t != self.config.target) {
            return Err(Error::Model(format!(
                "a trimmed sample computes its seeds' type ({}) in the last layer; the \
                 model's target is {}: sample seeds of the target type, or pass the whole \
                 sample",
                graph.node_types()[t].name,
                graph.node_types()[self.config.target].name
            )));
        }
        let heads = self.config.heads;
        let slope = Unary::LeakyRelu(self.config.negative_slope);
        let p_in = dropout.map_or(0.0, |_| self.config.input_dropout);
        let p_att = dropout.map_or(0.0, |_| self.config.attention_dropout);
        let mut cur: Vec<Option<BTensor<B, T>>> = x.iter().cloned().map(Some).collect();
        let mut layers = Vec::with_capacity(self.config.layers);
        for l in 0..self.config.layers {
            // layer l reads `depth` hops around a sample's seeds: the rows
            // and edges of a trimmed graph's prefixes (all of any other)
            let depth = self.config.layers - l;
            for (t, xt) in cur.iter_mut().enumerate() {
                if let Some(v) = xt {
                    *v = b.resize_rows(v, graph.nodes_within(t, depth))?;
                }
            }
            if let (Some(pass), true) = (dropout, p_in > 0.0) {
                for (t, xt) in cur.iter_mut().enumerate() {
                    if let Some(v) = xt {
                        *v = b.dropout(v, p_in, dropout_seed(pass, l, t, false))?;
                    }
                }
            }
            let mut x_dst: Vec<Option<BTensor<B, T>>> = vec![None; cur.len()];
            for (r, rel) in self.relations.iter().enumerate() {
                let dt = rel.dst_type;
                if let (true, None, Some(xd)) = (self.live[l][r], &x_dst[dt], &cur[dt]) {
                    x_dst[dt] = Some(b.resize_rows(xd, graph.nodes_within(dt, depth - 1))?);
                }
            }
            // per node type, its relations' aggregations and bias indices
            let mut parts: Vec<Vec<(BTensor<B, T>, usize)>> = vec![Vec::new(); cur.len()];
            let mut rels = Vec::with_capacity(self.relations.len());
            for (r, rel) in self.relations.iter().enumerate() {
                if !self.live[l][r] {
                    rels.push(None);
                    continue;
                }
                let (Some(xs), Some(xd)) = (&cur[rel.src_type], &x_dst[rel.dst_type]) else {
                    return Err(Error::Model(format!(
                        "relation {} reads a missing node type",
                        rel.name
                    )));
                };
                let edges = graph.edges_within(r, depth);
                let hs = b.matmul(xs, false, self.p(l, r, W_SRC), false)?;
                let a_s = b.head_dot(&hs, self.p(l, r, ATT_SRC), heads)?;
                // The destination logits head_dot(x_dst @ W_dst, att_dst) are
                // x_dst @ head_dot(W_dst, att_dst): the same function, summed
                // in another order, without the [nodes, hidden] product that
                // only they would read (GATConv's lin_dst output). (The same
                // form on the source side, where hs is needed anyway, measured
                // no faster at batch 8 and slower at batch 1.)
                let w_att_dst = b.head_dot(self.p(l, r, W_DST), self.p(l, r, ATT_DST), heads)?;
                let a_d = b.matmul(xd, false, &w_att_dst, false)?;
                // the edge logits a_s[src] + a_d[dst] (fused gathers and add)
                let z = edges.gather_add(b, &a_s, &a_d)?;
                let alpha = edges.softmax_by_dst(b, &b.unary(slope, &z)?)?;
                let alpha_dropped = match dropout {
                    Some(pass) if p_att > 0.0 => {
                        Some(b.dropout(&alpha, p_att, dropout_seed(pass, l, r, true))?)
                    }
                    _ => None,
                };
                // messages alpha[e] * hs[src[e]] summed per destination (fused
                // index_select + head_scale + canonical scatter-add)
                let out = edges.src_to_dst(b, &hs, alpha_dropped.as_ref().unwrap_or(&alpha))?;
                parts[rel.dst_type].push((out, self.pi(l, r, BIAS)));
                rels.push(Some(RelCache {
                    hs,
                    w_att_dst,
                    z,
                    alpha,
                    alpha_dropped,
                }));
            }
            // relu(sum over the relations of (aggregation + bias)), in
            // relation order, in one pass per node type
            let next = parts
                .iter()
                .map(|ps| {
                    let refs: Vec<_> = ps.iter().map(|(o, bi)| (o, &self.params[*bi])).collect();
                    (!refs.is_empty())
                        .then(|| b.sum_bias_relu(&refs))
                        .transpose()
                })
                .collect::<rtx_backend::Result<Vec<_>>>()?;
            layers.push(LayerCache {
                x: cur,
                x_dst,
                act: next.clone(),
                rels,
            });
            cur = next;
        }
        let h = cur[self.config.target]
            .take()
            .ok_or_else(|| Error::Model("the target type has no output".into()))?;
        let (head_w, head_b) = (&self.params[self.head()], &self.params[self.head() + 1]);
        debug_assert_eq!(head_w.shape(), &[self.hidden, self.config.out_features]);
        let y = b.binary(Binary::Add, &b.matmul(&h, false, head_w, false)?, head_b)?;
        Ok(Forward {
            layers,
            h,
            y,
            dropout,
        })
    }

    /// The model's output `[n_target, out_features]` for inputs `x` (one
    /// `[nodes, in_features]` tensor per node type), without dropout (an
    /// evaluation pass). On a [`Trimmed`](crate::Trimmed) sample, the
    /// output of its distinct seeds alone (the first `n_target` rows of
    /// hop 0).
    ///
    /// # Errors
    /// [`Error::Model`] for inputs that do not fit; backend errors.
    pub fn forward<G: Topology<B> + ?Sized>(
        &self,
        b: &B,
        graph: &G,
        x: &[BTensor<B, T>],
    ) -> Result<BTensor<B, T>> {
        Ok(self.run_forward(b, graph, x, None)?.y)
    }

    /// The MSE loss against zeros, `mean(y^2)`, computed as the canonical
    /// sum of squares divided by the row count.
    ///
    /// # Errors
    /// As [`HetGat::forward`].
    pub fn loss<G: Topology<B> + ?Sized>(
        &self,
        b: &B,
        graph: &G,
        x: &[BTensor<B, T>],
    ) -> Result<T> {
        let y = self.forward(b, graph, x)?;
        mse(b, &y)?.read(b)
    }
}

/// `mean(y^2)` of a `[n, 1]` output, still on the device: the canonical sum
/// of squares, divided by `n` when read.
pub(super) fn mse<B: Backend, T: Element>(b: &B, y: &BTensor<B, T>) -> Result<DeviceLoss<B, T>> {
    Ok(DeviceLoss {
        sum_sq: b.sum_rows(&b.binary(Binary::Mul, y, y)?)?,
        rows: y.shape()[0],
    })
}
