//! [`IndexOps`]: gather, scatter-add and the segment reductions along dim 0,
//! each exact on every backend (the canonical order for sums).

use std::borrow::Cow;

use crate::ops::{check_index_add, dims2};
use crate::{BTensor, BackendCore, Element, Indices, Result, concat_shifted, ops, reference};
use rtx_tensor::Layout;

/// Index ops along dim 0 of 2-D tensors `[rows, features]`. Every op
/// takes its indices as [`Indices`]: a host list, a host
/// [`IndexPlan`](crate::IndexPlan), or a list held by the backend
/// ([`IndexOps::Index`]: device memory on a device backend, made once with
/// [`IndexOps::index_from_host`] or by backend code such as a sampler),
/// the same bits whichever form. Every op validates before any work: an
/// out-of-range index is [`Error::IndexOutOfRange`](crate::Error::IndexOutOfRange)
/// and leaves the destination untouched. Index ops give the same bits on
/// every backend (the [canonical order](crate::order) for sums).
///
/// The defaults are host round trips over [`reference`](mod@crate::reference) and [`ops`]; a
/// backend that takes them all (`impl IndexOps for B { rtx_backend::host_index_list!(); }`)
/// is correct everywhere, and [`HostIndexOps`](crate::HostIndexOps) does exactly that.
pub trait IndexOps: BackendCore {
    /// An index list held by the backend. Cheap to clone (shared); ops hold
    /// what they use, so dropping a list while work that reads it is still
    /// queued is safe.
    type Index: Clone + Send + Sync + std::fmt::Debug + 'static;

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

    /// Makes ready now, together, the scatter plans that sums by `lists` will
    /// use (each list for the rows it names with [`Indices::with_rows`]),
    /// instead of one at a time at each list's first sum: on the GPU, a
    /// mini-batch's plans built with one wait for their sizes rather than a
    /// wait each. The ops that scatter by these lists later find their plans
    /// built; they give the same bits either way. An entry out of range for
    /// its rows is the error its first sum would give.
    ///
    /// Default: the checks alone (plans are made at first use).
    ///
    /// # Errors
    /// [`Error::IndexOutOfRange`](crate::Error::IndexOutOfRange);
    /// [`Error::ShapeMismatch`](crate::Error::ShapeMismatch) for a list that
    /// names no row count; backend errors.
    fn prepare_plans(&self, lists: &[Indices<'_, Self>]) -> Result<()> {
        for idx in lists {
            let rows = idx.needed_rows("prepare_plans")?;
            crate::plan::check_indices(&idx.host_list(self)?, rows)?;
        }
        Ok(())
    }

    /// Runs `f` with `lists` and `plans` (a graph that stands still) kept
    /// where this backend's ops find them without a per-call lookup, for the
    /// duration of the call; the caller keeps them unchanged (they are
    /// borrowed for the call).
    ///
    /// Default: runs `f` (host backends read host lists in place). The CUDA
    /// backend copies them to the device first and finds them by address.
    ///
    /// # Errors
    /// Backend errors before `f` runs.
    fn with_static_indices<R>(
        &self,
        lists: &[&[u32]],
        plans: &[&crate::IndexPlan],
        f: impl FnOnce() -> R,
    ) -> Result<R> {
        let _ = (lists, plans);
        Ok(f())
    }

    /// Gather along dim 0: `out[i, :] = src[idx[i], :]`, `src: [R, F]`, `out: [E, F]`.
    ///
    /// Default: a host round trip (download `src`, [`reference::index_select`],
    /// upload). Device backends override it with a device kernel.
    ///
    /// # Errors
    /// [`Error::Rank`](crate::Error::Rank) unless `src` is 2-D; [`Error::IndexOutOfRange`](crate::Error::IndexOutOfRange);
    /// [`Error::ShapeMismatch`](crate::Error::ShapeMismatch) when the indices
    /// say another row count than `src`'s; [`Error::Layout`](crate::Error::Layout) when `[E, F]` overflows.
    fn index_select<'i, T: Element>(
        &self,
        src: &BTensor<Self, T>,
        idx: impl Into<Indices<'i, Self>>,
    ) -> Result<BTensor<Self, T>> {
        let idx = idx.into();
        let (rows, f) = dims2("index_select", "src", src.layout())?;
        idx.rows_of("index_select", "src", rows)?;
        let list = idx.host_list(self)?;
        reference::check_indices(&list, rows)?;
        let host = self.download(src)?;
        let out = reference::index_select(&host, rows, f, &list)?;
        self.upload(&out, &[list.len(), f])
    }

    /// Scatter-add along dim 0, in place: `dst[idx[i], :] += src[i, :]`,
    /// `dst: [R, F]`, `src: [E, F]`, summed in the [canonical order](crate::order).
    /// A plan given as the indices is used as it is (a static graph builds
    /// it once).
    ///
    /// Default: a host round trip (download both, [`reference::index_add`]
    /// by the indices' plan, upload the result). Device backends override it
    /// with device kernels.
    ///
    /// # Errors
    /// [`Error::Rank`](crate::Error::Rank), [`Error::ShapeMismatch`](crate::Error::ShapeMismatch), [`Error::IndexOutOfRange`](crate::Error::IndexOutOfRange),
    /// [`Error::TooManyIndices`](crate::Error::TooManyIndices) (more than `u32::MAX` entries), and the
    /// errors of building the plan ([`IndexPlan::new`](crate::IndexPlan::new)), all before any work:
    /// `dst` untouched.
    fn index_add<'i, T: Element>(
        &self,
        dst: &mut BTensor<Self, T>,
        idx: impl Into<Indices<'i, Self>>,
        src: &BTensor<Self, T>,
    ) -> Result<()> {
        let idx = idx.into();
        let (rows, _) = dims2("index_add", "dst", dst.layout())?;
        let plan = idx.host_plan(self, "index_add", rows)?;
        let f = check_index_add(dst.layout(), &plan, src.layout())?;
        let mut host = self.download(dst)?;
        let s = self.download(src)?;
        reference::index_add(&mut host, f, &plan, &s)?;
        *dst = self.upload(&host, dst.shape())?;
        Ok(())
    }

    /// Segment max: `x: [E, f]` into `[R, f]` for indices of `E` entries
    /// into `R` rows, row `r` the column-wise maximum of the entries of row
    /// `r` (an index op: see [`ops`] for ties, NaN and empty rows).
    ///
    /// Default: a host round trip over [`ops::segment_max`]. Device backends override it.
    ///
    /// # Errors
    /// [`Error::Rank`](crate::Error::Rank); [`Error::ShapeMismatch`](crate::Error::ShapeMismatch) naming the shape and the
    /// indices, or for a list without a row count ([`Indices::needed_rows`]);
    /// [`Error::Layout`](crate::Error::Layout) when `[R, f]` overflows.
    fn segment_max<'i, T: Element>(
        &self,
        x: &BTensor<Self, T>,
        idx: impl Into<Indices<'i, Self>>,
    ) -> Result<BTensor<Self, T>> {
        let (plan, f) = idx.into().segment_plan(self, "segment_max", x.shape())?;
        let out = Layout::contiguous(&[plan.rows(), f])?;
        let hx = self.download(x)?;
        self.upload(&ops::segment_max(&hx, f, &plan), out.shape())
    }

    /// Segment sum: `x: [E, f]` into `[R, f]`; exactly `index_add` into
    /// zeros (canonical order; empty rows `+0.0`).
    ///
    /// Default: [`BackendCore::zeros`] then [`IndexOps::index_add`] on this
    /// backend (no round trip of its own).
    ///
    /// # Errors
    /// As [`IndexOps::segment_max`].
    fn segment_sum<'i, T: Element>(
        &self,
        x: &BTensor<Self, T>,
        idx: impl Into<Indices<'i, Self>>,
    ) -> Result<BTensor<Self, T>> {
        let idx = idx.into();
        let rows = idx.needed_rows("segment_sum")?;
        let (_, f) = ops::check_segment_len("segment_sum", x.shape(), idx.len(self), rows)?;
        let mut out = self.zeros(&[rows, f])?;
        self.index_add(&mut out, idx, x)?;
        Ok(out)
    }
}
