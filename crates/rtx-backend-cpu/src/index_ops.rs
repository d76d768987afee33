//! [`IndexOps`] of the CPU backend: gather, scatter-add and segment max,
//! parallel over destination rows, each row in the canonical order.

use rtx_backend::implement::{check_index_add, dims2};
use rtx_backend::order::add_row_sum;
use rtx_backend::prelude::*;
use rtx_backend::{BTensor, Element, IndexPlan, Result, Tensor, ops, reference};
use rtx_tensor::Layout;

use crate::CpuBackend;
use crate::tasks::MIN_ROWS_PER_TASK;

impl IndexOps for CpuBackend {
    rtx_backend::host_index_list!();

    fn index_select<T: Element>(
        &self,
        src: &BTensor<Self, T>,
        idx: &[u32],
    ) -> Result<BTensor<Self, T>> {
        let (rows, f) = dims2("index_select", "src", src.layout())?;
        reference::check_indices(idx, rows)?;
        let layout = Layout::contiguous(&[idx.len(), f])?;
        let s = src.storage();
        let mut out = self.for_overwrite(&layout)?;
        self.par_rows(&mut out, f, MIN_ROWS_PER_TASK, |r, o| {
            let i = idx[r] as usize;
            o.copy_from_slice(&s[i * f..(i + 1) * f]);
        });
        Ok(Tensor::new(out, layout))
    }

    fn index_add_planned<T: Element>(
        &self,
        dst: &mut BTensor<Self, T>,
        plan: &IndexPlan,
        src: &BTensor<Self, T>,
    ) -> Result<()> {
        let f = check_index_add(dst.layout(), plan, src.layout())?;
        if f == 0 || plan.is_empty() {
            return Ok(());
        }
        self.make_unique(dst)?;
        let s = src.storage();
        let d = dst.storage_mut().expect("unique after make_unique");
        self.par_rows_with(d, f, MIN_ROWS_PER_TASK, Vec::new, |scratch, r, row| {
            add_row_sum(row, plan.row(r), s, scratch);
        });
        Ok(())
    }

    fn segment_max<T: Element>(
        &self,
        x: &BTensor<Self, T>,
        plan: &IndexPlan,
    ) -> Result<BTensor<Self, T>> {
        let (_, f) = ops::check_segment("segment_max", x.shape(), plan)?;
        let layout = Layout::contiguous(&[plan.rows(), f])?;
        let xs = x.storage();
        let mut out = self.for_overwrite(&layout)?;
        self.par_rows(&mut out, f, MIN_ROWS_PER_TASK, |r, o| {
            ops::segment_max_row(
                plan.row(r),
                |p| &xs[p as usize * f..(p as usize + 1) * f],
                o,
            );
        });
        Ok(Tensor::new(out, layout))
    }
}

/// Sampling on the host: the reference sampler over the lists in place
/// (`index_to_host` borrows them).
impl rtx_backend::SampleOps for CpuBackend {}
