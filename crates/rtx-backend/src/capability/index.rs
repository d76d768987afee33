//! [`IndexOps`]: gather, scatter-add and the segment reductions along dim 0,
//! each exact on every backend (the canonical order for sums).

use std::borrow::Cow;

use crate::ops::{check_index_add, dims2};
use crate::{BTensor, BackendCore, Element, IndexPlan, Result, concat_shifted, ops, reference};
use rtx_tensor::Layout;

/// Index ops along dim 0 of 2-D tensors `[rows, features]`, with host index
/// lists of `u32`. Every op validates before any work: an out-of-range index
/// is [`Error::IndexOutOfRange`](crate::Error::IndexOutOfRange) and leaves the
/// destination untouched. Index ops give the same bits on every backend (the
/// [canonical order](crate::order) for sums).
///
/// The defaults are host round trips over [`reference`](mod@crate::reference) and [`ops`](crate::ops); a
/// backend that takes them all (`impl IndexOps for B { rtx_backend::host_index_list!(); }`)
/// is correct everywhere, and [`HostIndexOps`](crate::HostIndexOps) does exactly that.
///
/// **Backend index lists.** Every op that takes a host `&[u32]` or a host
/// [`IndexPlan`] has a twin with the suffix `_idx` that takes a
/// [`IndexOps::Index`]: a list held by the backend (device memory on a device
/// backend), made once with [`IndexOps::index_from_host`] or by backend code
/// (a sampler, [`IndexOps::index_concat`]), whose scatter plan the backend
/// builds where the list lives. Plan-taking ops take the list and the
/// destination row count instead: the plan of `idx` into `rows` rows is
/// [`IndexPlan::new`]`(idx, rows)`. The twins give the same bits as the host
/// ops; their defaults download the list and call them.
pub trait IndexOps: BackendCore {
    /// An index list held by the backend. Cheap to clone (shared); ops hold
    /// what they use, so dropping a list while work that reads it is still
    /// queued is safe.
    type Index: Clone + Send + Sync + std::fmt::Debug;

    /// Copies `idx` into a backend index list.
    ///
    /// # Errors
    /// [`Error::TooManyIndices`](crate::Error::TooManyIndices) past `u32::MAX`
    /// entries; backend errors.
    fn index_from_host(&self, idx: &[u32]) -> Result<Self::Index>;

    /// The entries of a backend index list, on the host (borrowed when they
    /// already are).
    ///
    /// # Errors
    /// Backend errors.
    fn index_to_host<'a>(&self, idx: &'a Self::Index) -> Result<Cow<'a, [u32]>>;

    /// Number of entries of a backend index list.
    fn index_len(&self, idx: &Self::Index) -> usize;

    /// The lists one after another, each shifted by its offset: part `i`
    /// contributes `parts[i].0[j] + parts[i].1` (e.g. node ids of several
    /// graphs batched into one).
    ///
    /// Default: through the host ([`concat_shifted`]).
    ///
    /// # Errors
    /// [`Error::IndexOffsetOverflow`](crate::Error::IndexOffsetOverflow) naming
    /// the part whose largest index plus offset passes `u32::MAX`;
    /// [`Error::TooManyIndices`](crate::Error::TooManyIndices); backend errors.
    fn index_concat(&self, parts: &[(&Self::Index, u32)]) -> Result<Self::Index> {
        let host = parts
            .iter()
            .map(|&(p, o)| Ok((self.index_to_host(p)?, o)))
            .collect::<Result<Vec<_>>>()?;
        let borrowed: Vec<(&[u32], u32)> = host.iter().map(|(p, o)| (&**p, *o)).collect();
        self.index_from_host(&concat_shifted(&borrowed)?)
    }

    /// [`IndexOps::index_select`] with a backend index list.
    ///
    /// # Errors
    /// As [`IndexOps::index_select`].
    fn index_select_idx<T: Element>(
        &self,
        src: &BTensor<Self, T>,
        idx: &Self::Index,
    ) -> Result<BTensor<Self, T>> {
        self.index_select(src, &self.index_to_host(idx)?)
    }

    /// [`IndexOps::index_add`] with a backend index list.
    ///
    /// # Errors
    /// As [`IndexOps::index_add`].
    fn index_add_idx<T: Element>(
        &self,
        dst: &mut BTensor<Self, T>,
        idx: &Self::Index,
        src: &BTensor<Self, T>,
    ) -> Result<()> {
        self.index_add(dst, &self.index_to_host(idx)?, src)
    }

    /// [`IndexOps::segment_sum`] by the plan of `idx` into `rows` rows.
    ///
    /// # Errors
    /// As [`IndexPlan::new`] and [`IndexOps::segment_sum`].
    fn segment_sum_idx<T: Element>(
        &self,
        x: &BTensor<Self, T>,
        idx: &Self::Index,
        rows: usize,
    ) -> Result<BTensor<Self, T>> {
        self.segment_sum(x, &host_plan(self, idx, rows)?)
    }

    /// [`IndexOps::segment_max`] by the plan of `idx` into `rows` rows.
    ///
    /// # Errors
    /// As [`IndexPlan::new`] and [`IndexOps::segment_max`].
    fn segment_max_idx<T: Element>(
        &self,
        x: &BTensor<Self, T>,
        idx: &Self::Index,
        rows: usize,
    ) -> Result<BTensor<Self, T>> {
        self.segment_max(x, &host_plan(self, idx, rows)?)
    }

    /// Gather along dim 0: `out[i, :] = src[idx[i], :]`, `src: [R, F]`, `out: [E, F]`.
    ///
    /// Default: a host round trip (download `src`, [`reference::index_select`],
    /// upload). Device backends override it with a device kernel.
    ///
    /// # Errors
    /// [`Error::Rank`](crate::Error::Rank) unless `src` is 2-D; [`Error::IndexOutOfRange`](crate::Error::IndexOutOfRange);
    /// [`Error::Layout`](crate::Error::Layout) when `[E, F]` overflows.
    fn index_select<T: Element>(
        &self,
        src: &BTensor<Self, T>,
        idx: &[u32],
    ) -> Result<BTensor<Self, T>> {
        let (rows, f) = dims2("index_select", "src", src.layout())?;
        reference::check_indices(idx, rows)?;
        let host = self.download(src)?;
        let out = reference::index_select(&host, rows, f, idx)?;
        self.upload(&out, &[idx.len(), f])
    }

    /// Scatter-add along dim 0, in place: `dst[idx[i], :] += src[i, :]`,
    /// `dst: [R, F]`, `src: [E, F]`, summed in the [canonical order](crate::order).
    ///
    /// Default: builds an [`IndexPlan`] and calls [`IndexOps::index_add_planned`].
    ///
    /// # Errors
    /// [`Error::Rank`](crate::Error::Rank), [`Error::ShapeMismatch`](crate::Error::ShapeMismatch), [`Error::IndexOutOfRange`](crate::Error::IndexOutOfRange),
    /// [`Error::TooManyIndices`](crate::Error::TooManyIndices) (more than `u32::MAX` entries), and the
    /// errors of building the plan ([`IndexPlan::new`]), all before any work:
    /// `dst` untouched.
    fn index_add<T: Element>(
        &self,
        dst: &mut BTensor<Self, T>,
        idx: &[u32],
        src: &BTensor<Self, T>,
    ) -> Result<()> {
        let (rows, _) = dims2("index_add", "dst", dst.layout())?;
        let plan = IndexPlan::new(idx, rows)?;
        self.index_add_planned(dst, &plan, src)
    }

    /// [`IndexOps::index_add`] with a prebuilt plan (a static graph builds it once).
    ///
    /// Default: a host round trip (download both, [`reference::index_add`],
    /// upload the result). Device backends override it with a device kernel.
    ///
    /// # Errors
    /// [`Error::Rank`](crate::Error::Rank), [`Error::ShapeMismatch`](crate::Error::ShapeMismatch) (plan rows or entries vs the
    /// tensors), before any work.
    fn index_add_planned<T: Element>(
        &self,
        dst: &mut BTensor<Self, T>,
        plan: &IndexPlan,
        src: &BTensor<Self, T>,
    ) -> Result<()> {
        let f = check_index_add(dst.layout(), plan, src.layout())?;
        let mut host = self.download(dst)?;
        let s = self.download(src)?;
        reference::index_add(&mut host, f, plan, &s)?;
        *dst = self.upload(&host, dst.shape())?;
        Ok(())
    }

    /// Segment max: `x: [plan.len(), f]` into `[plan.rows(), f]`, row `r` the
    /// column-wise maximum of the entries of plan row `r` (an index op: see
    /// [`ops`] for ties, NaN and empty rows).
    ///
    /// Default: a host round trip over [`ops::segment_max`]. Device backends override it.
    ///
    /// # Errors
    /// [`Error::Rank`](crate::Error::Rank); [`Error::ShapeMismatch`](crate::Error::ShapeMismatch) naming the shape and the plan;
    /// [`Error::Layout`](crate::Error::Layout) when `[plan.rows(), f]` overflows.
    fn segment_max<T: Element>(
        &self,
        x: &BTensor<Self, T>,
        plan: &IndexPlan,
    ) -> Result<BTensor<Self, T>> {
        let (_, f) = ops::check_segment("segment_max", x.shape(), plan)?;
        let out = Layout::contiguous(&[plan.rows(), f])?;
        let hx = self.download(x)?;
        self.upload(&ops::segment_max(&hx, f, plan), out.shape())
    }

    /// Segment sum: `x: [plan.len(), f]` into `[plan.rows(), f]`; exactly
    /// `index_add_planned` into zeros (canonical order; empty rows `+0.0`).
    ///
    /// Default: [`BackendCore::zeros`] then [`IndexOps::index_add_planned`] on this
    /// backend (no round trip of its own).
    ///
    /// # Errors
    /// [`Error::Rank`](crate::Error::Rank); [`Error::ShapeMismatch`](crate::Error::ShapeMismatch) naming the shape and the plan;
    /// [`Error::Layout`](crate::Error::Layout) when `[plan.rows(), f]` overflows.
    fn segment_sum<T: Element>(
        &self,
        x: &BTensor<Self, T>,
        plan: &IndexPlan,
    ) -> Result<BTensor<Self, T>> {
        let (_, f) = ops::check_segment("segment_sum", x.shape(), plan)?;
        let mut out = self.zeros(&[plan.rows(), f])?;
        self.index_add_planned(&mut out, plan, x)?;
        Ok(out)
    }
}

/// The host [`IndexPlan`] of a backend index list into `rows` rows: what the
/// `_idx` defaults run their host-plan twins with.
pub(super) fn host_plan<B: IndexOps + ?Sized>(
    b: &B,
    idx: &B::Index,
    rows: usize,
) -> Result<IndexPlan> {
    IndexPlan::new(&b.index_to_host(idx)?, rows)
}
