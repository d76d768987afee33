//! [`LayoutOps`] of the CPU backend: permute (a relabel, a parallel batched
//! transpose, or the host permute).

use rayon::prelude::*;
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
}
