//! The hand-written backward pass of [`HetGat`]: the gradients of every
//! parameter (and of the inputs) from the forward pass's caches.

use rtx_backend::prelude::*;
use rtx_backend::{BTensor, Binary, Element, Unary};

use super::forward::{Forward, dropout_seed, mse};
use super::{ATT_DST, ATT_SRC, BIAS, DeviceLoss, Grads, HetGat, LossAndGrads, W_DST, W_SRC};
use crate::Result;
use crate::topology::Topology;

fn add_into<B: Backend, T: Element>(
    b: &B,
    slot: &mut Option<BTensor<B, T>>,
    t: BTensor<B, T>,
) -> Result<()> {
    *slot = Some(match slot.take() {
        None => t,
        Some(s) => b.binary(Binary::Add, &s, &t)?,
    });
    Ok(())
}

impl<B: Backend, T: Element> HetGat<B, T> {
    /// Loss, gradients of every parameter and (when `input_grads`) of the inputs.
    ///
    /// # Errors
    /// As [`HetGat::forward`].
    pub fn loss_and_grads<G: Topology<B> + ?Sized>(
        &self,
        b: &B,
        graph: &G,
        x: &[BTensor<B, T>],
        input_grads: bool,
    ) -> Result<LossAndGrads<B, T>> {
        let LossAndGrads {
            loss,
            grads,
            input_grads,
        } = self.loss_and_grads_enqueued(b, graph, x, input_grads)?;
        Ok(LossAndGrads {
            loss: loss.read(b)?,
            grads,
            input_grads,
        })
    }

    /// [`HetGat::loss_and_grads`] with the loss left on the device: nothing
    /// here waits for the device.
    ///
    /// # Errors
    /// As [`HetGat::forward`].
    pub fn loss_and_grads_enqueued<G: Topology<B> + ?Sized>(
        &self,
        b: &B,
        graph: &G,
        x: &[BTensor<B, T>],
        input_grads: bool,
    ) -> Result<LossAndGrads<B, T, DeviceLoss<B, T>>> {
        let fw = self.run_forward(b, graph, x, None)?;
        let loss = mse(b, &fw.y)?;
        let n = loss.rows;
        // head: y = h @ w + b, dL/dy = 2y / n
        let dy = b.unary(Unary::Scale(2.0 / n.max(1) as f64), &fw.y)?;
        let (grads, dx) = self.backward(b, graph, &fw, &dy, x.len(), input_grads)?;
        Ok(LossAndGrads {
            loss,
            grads,
            input_grads: dx,
        })
    }

    /// The backward pass from the forward pass `fw` and the output's
    /// gradient `dy`: the gradients of every parameter and (when
    /// `input_grads`, else `None`s) of the `types` inputs.
    ///
    /// # Errors
    /// Backend errors.
    pub(super) fn backward<G: Topology<B> + ?Sized>(
        &self,
        b: &B,
        graph: &G,
        fw: &Forward<B, T>,
        dy: &BTensor<B, T>,
        types: usize,
        input_grads: bool,
    ) -> Result<(Grads<B, T>, Grads<B, T>)> {
        let heads = self.config.heads;
        let slope = Unary::LeakyRelu(self.config.negative_slope);
        let mut grads: Grads<B, T> = vec![None; self.params.len()];
        let hi = self.head();
        grads[hi] = Some(b.matmul(&fw.h, true, dy, false)?);
        grads[hi + 1] = Some(b.sum_rows(dy)?);
        let mut dx: Vec<Option<BTensor<B, T>>> = vec![None; types];
        dx[self.config.target] = Some(b.matmul(dy, false, &self.params[hi], true)?);
        for l in (0..self.config.layers).rev() {
            let cache = &fw.layers[l];
            // through the ReLU after the layer
            // relu's backward at its output (positive where the sum is)
            let dpre = cache
                .act
                .iter()
                .zip(&dx)
                .map(|(p, d)| match (p, d) {
                    (Some(p), Some(d)) => b.unary_backward(Unary::Relu, p, d).map(Some),
                    _ => Ok(None),
                })
                .collect::<rtx_backend::Result<Vec<_>>>()?;
            let want_dx = l > 0 || input_grads;
            let depth = self.config.layers - l;
            let mut dx_in: Vec<Option<BTensor<B, T>>> = vec![None; types];
            for (r, rel) in self.relations.iter().enumerate() {
                let (st, dt) = (rel.src_type, rel.dst_type);
                let (Some(c), Some(g)) = (&cache.rels[r], &dpre[dt]) else {
                    continue;
                };
                let (Some(xs), Some(xd), Some(x_in)) =
                    (&cache.x[st], &cache.x_dst[dt], &cache.x[dt])
                else {
                    continue;
                };
                grads[self.pi(l, r, BIAS)] = Some(b.sum_rows(g)?);
                // out = scatter_dst(alpha * gather_src(hs)). The adjoint of the
                // scatter is a gather of g by dst; the adjoint of the gather is a
                // scatter-add by src:
                //   dalpha[e] = g[dst[e]] . hs[src[e]] (per head)
                //   dhs = scatter_src(alpha * gather_dst(g))
                let edges = graph.edges_within(r, depth);
                let mut dalpha = edges.dst_src_head_dot(b, g, &c.hs, heads)?;
                let used = c.alpha_dropped.as_ref().unwrap_or(&c.alpha);
                let mut dhs = edges.dst_to_src(b, g, used)?;
                if let (Some(pass), Some(_)) = (fw.dropout, &c.alpha_dropped) {
                    // through the attention dropout: the same mask on the gradient
                    let p = self.config.attention_dropout;
                    dalpha = b.dropout(&dalpha, p, dropout_seed(pass, l, r, true))?;
                }
                let dl = edges.softmax_by_dst_backward(b, &c.alpha, &dalpha)?;
                let dz = b.unary_backward(slope, &c.z, &dl)?;
                let das = edges.sum_by_src(b, &dz)?;
                let dad = edges.sum_by_dst(b, &dz)?;
                grads[self.pi(l, r, ATT_SRC)] = Some(b.head_scale_sum_rows(&c.hs, &das)?);
                dhs = b.add_head_scale(&dhs, self.p(l, r, ATT_SRC), &das)?;
                grads[self.pi(l, r, W_SRC)] = Some(b.matmul(xs, true, &dhs, false)?);
                // a_d = x_dst @ w, w[k, h] = sum_j W_dst[k, hc+j] att_dst[hc+j]:
                //   dw = x_dst^T @ da_d
                //   dW_dst[k, hc+j] = dw[k, h] att_dst[hc+j]
                //   datt_dst[hc+j] = sum_k W_dst[k, hc+j] dw[k, h]
                //   dx_dst += da_d @ w^T
                let (w_dst, att_dst) = (self.p(l, r, W_DST), self.p(l, r, ATT_DST));
                let dw = b.matmul(xd, true, &dad, false)?;
                grads[self.pi(l, r, W_DST)] = Some(b.head_scale(att_dst, &dw)?);
                grads[self.pi(l, r, ATT_DST)] = Some(b.head_scale_sum_rows(w_dst, &dw)?);
                if want_dx {
                    let gs = b.matmul(&dhs, false, self.p(l, r, W_SRC), true)?;
                    add_into(b, &mut dx_in[st], gs)?;
                    // destinations are the input's first rows: zero below them
                    let gd = b.matmul(&dad, false, &c.w_att_dst, true)?;
                    add_into(b, &mut dx_in[dt], b.resize_rows(&gd, x_in.shape()[0])?)?;
                }
            }
            if let (Some(pass), true) = (fw.dropout, self.config.input_dropout > 0.0) {
                // through the input dropout of layer l: the same masks
                let p = self.config.input_dropout;
                for (t, d) in dx_in.iter_mut().enumerate() {
                    if let Some(v) = d {
                        *v = b.dropout(v, p, dropout_seed(pass, l, t, false))?;
                    }
                }
            }
            dx = dx_in;
        }
        if !input_grads {
            return Ok((grads, vec![None; types]));
        }
        // a trimmed first layer read the inputs' first rows: zero below them
        let rows = |t: usize| graph.node_types()[t].nodes;
        let dx = dx
            .into_iter()
            .enumerate()
            .map(|(t, d)| d.map(|d| b.resize_rows(&d, rows(t))).transpose())
            .collect::<rtx_backend::Result<Vec<_>>>()?;
        Ok((grads, dx))
    }
}
