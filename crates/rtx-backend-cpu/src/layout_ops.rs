//! [`LayoutOps`] of the CPU backend: permute (a relabel, a parallel batched
//! transpose, or the host permute) and `resize_rows` (one copy of the kept
//! rows into a pooled buffer).

use rayon::prelude::*;
use rtx_backend::implement::resize_rows_layout;
use rtx_backend::prelude::*;
use rtx_backend::{BTensor, Element, Result, Tensor};
use rtx_tensor::PermuteKind;

use crate::CpuBackend;

impl LayoutOps for CpuBackend {
    fn permute<T: Element>(
        &self,
        t: &BTensor<Self, T>,
        perm: &[usize],
    ) -> Result<BTensor<Self, T>> {
        let plan = t.layout().plan_permute(perm)?;
        let data = t.storage();
        let out = match plan.kind {
            PermuteKind::Relabel => return Ok(t.relabel(plan.output)),
            PermuteKind::Transpose {
                rows, cols, inner, ..
            } => {
                let mut out = self.for_overwrite(&plan.output)?;
                // one output row (b, c) per task: out[b][c][r][:] = in[b][r][c][:]
                self.install(|| {
                    out.par_chunks_mut(rows * inner)
                        .enumerate()
                        .for_each(|(bc, o)| {
                            let (b, c) = (bc / cols, bc % cols);
                            for r in 0..rows {
                                let s = ((b * rows + r) * cols + c) * inner;
                                o[r * inner..(r + 1) * inner].copy_from_slice(&data[s..s + inner]);
                            }
                        });
                });
                out
            }
            PermuteKind::Permute { shape, perm } => self
                .buffers
                .adopt(rtx_tensor::permute_host(data, &shape, &perm)?),
        };
        Ok(Tensor::new(out, plan.output))
    }

    fn convert<T: Element, U: Element>(&self, x: &BTensor<Self, T>) -> Result<BTensor<Self, U>> {
        self.convert_tensor(x)
    }

    /// The kept rows copied once into a pooled buffer, the padded rows zeroed.
    fn resize_rows<T: Element>(
        &self,
        x: &BTensor<Self, T>,
        rows: usize,
    ) -> Result<BTensor<Self, T>> {
        let Some((layout, kept)) = resize_rows_layout(x.layout(), rows)? else {
            return Ok(x.clone());
        };
        let mut out = self.for_overwrite::<T>(&layout)?;
        let (head, tail) = out.split_at_mut(kept);
        head.copy_from_slice(&x.storage()[..kept]);
        tail.fill(T::ZERO);
        Ok(Tensor::new(out, layout))
    }
}
