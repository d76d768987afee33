//! [`IndexOps`] of the CPU backend: gather, scatter-add and segment max,
//! parallel over destination rows, each row in the canonical order.

use rtx_backend::implement::{check_index_add, dims2};
use rtx_backend::order::add_row_sum;
use rtx_backend::prelude::*;
use rtx_backend::{BTensor, Element, Indices, Result, Tensor, ops, reference};
use rtx_tensor::Layout;

use crate::CpuBackend;
use crate::tasks::MIN_ROWS_PER_TASK;

impl IndexOps for CpuBackend {
    rtx_backend::host_index_list!();

    fn index_select<'i, T: Element>(
        &self,
        src: &BTensor<Self, T>,
        idx: impl Into<Indices<'i, Self>>,
    ) -> Result<BTensor<Self, T>> {
        let idx = idx.into();
        let (rows, f) = dims2("index_select", "src", src.layout())?;
        idx.rows_of("index_select", "src", rows)?;
        let list = idx.host_list(self)?;
        let idx = &list[..];
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

    fn index_add<'i, T: Element>(
        &self,
        dst: &mut BTensor<Self, T>,
        idx: impl Into<Indices<'i, Self>>,
        src: &BTensor<Self, T>,
    ) -> Result<()> {
        let (rows, _) = dims2("index_add", "dst", dst.layout())?;
        let plan = idx.into().host_plan(self, "index_add", rows)?;
        let plan = &*plan;
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

    fn segment_max<'i, T: Element>(
        &self,
        x: &BTensor<Self, T>,
        idx: impl Into<Indices<'i, Self>>,
    ) -> Result<BTensor<Self, T>> {
        let (plan, f) = idx.into().segment_plan(self, "segment_max", x.shape())?;
        let plan = &*plan;
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
