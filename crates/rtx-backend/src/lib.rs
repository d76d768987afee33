//! The `Backend` trait, the host reference ops, the canonical scatter-add
//! order and `IndexPlan`. Never depends on a device library.
//!
//! * [`Backend`]: a small required core (upload, download, zeros) and provided
//!   ops ([`Backend::index_select`], [`Backend::index_add`],
//!   [`Backend::swap_dims`], ...) whose defaults round-trip through host memory
//!   with this crate's [`reference`] implementations. Device backends override them.
//! * [`order`]: the one summation order of `index_add` every backend follows.
//! * [`IndexPlan`]: the CSR of the transposed selection matrix.

#[cfg(feature = "conformance")]
pub mod conformance;
mod element;
mod error;
pub mod order;
mod plan;
pub mod reference;
mod tensor;

pub use element::{DType, Element, bytes_of, vec_from_bytes};
pub use error::{Error, Result};
pub use order::CANONICAL_BLOCK;
pub use plan::IndexPlan;
pub use tensor::Tensor;

use rtx_tensor::{Layout, PermuteKind};

/// The tensor type of backend `B` with elements `T`.
pub type BTensor<B, T> = Tensor<<B as Backend>::Buffer<T>>;

/// A compute backend. Implement the required core; override the provided ops
/// with native versions where the backend can do better than a host round trip.
///
/// All index ops work along dim 0 of 2-D tensors `[rows, features]` and take
/// host index lists of `u32`. Every op validates its inputs before any work:
/// an out-of-range index is [`Error::IndexOutOfRange`] and leaves the
/// destination untouched.
pub trait Backend: Send + Sync + std::fmt::Debug {
    /// A buffer of `T` elements owned by the backend (host or device memory).
    type Buffer<T: Element>: Send + Sync + std::fmt::Debug;

    /// A short name for reports (`"cpu"`, `"cuda:0"`).
    fn name(&self) -> String;

    /// Copies `data` into a new contiguous tensor of `shape`.
    ///
    /// # Errors
    /// [`Error::LengthMismatch`] when `data.len()` is not the shape's element count;
    /// device errors (out of memory).
    fn upload<T: Element>(&self, data: &[T], shape: &[usize]) -> Result<BTensor<Self, T>>;

    /// Copies a tensor's elements to the host, in row-major order.
    ///
    /// # Errors
    /// Device errors.
    fn download<T: Element>(&self, t: &BTensor<Self, T>) -> Result<Vec<T>>;

    /// A new contiguous tensor of `shape` filled with zeros.
    ///
    /// # Errors
    /// Size overflow; device errors (out of memory).
    fn zeros<T: Element>(&self, shape: &[usize]) -> Result<BTensor<Self, T>>;

    /// Makes `t`'s buffer its own (copying it if another tensor shares it), so
    /// it can be written in place.
    ///
    /// Default: download and upload (a host round trip); backends with a
    /// device-to-device copy override it.
    ///
    /// # Errors
    /// Device errors.
    fn make_unique<T: Element>(&self, t: &mut BTensor<Self, T>) -> Result<()> {
        if !t.is_unique() {
            let host = self.download(t)?;
            *t = self.upload(&host, t.shape())?;
        }
        Ok(())
    }

    /// Gather along dim 0: `out[i, :] = src[idx[i], :]`, `src: [R, F]`, `out: [E, F]`.
    ///
    /// Default: a host round trip (download `src`, [`reference::index_select`],
    /// upload). Device backends override it with a device kernel.
    ///
    /// # Errors
    /// [`Error::Rank`] unless `src` is 2-D; [`Error::IndexOutOfRange`].
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
    /// `dst: [R, F]`, `src: [E, F]`, summed in the [canonical order](order).
    ///
    /// Default: builds an [`IndexPlan`] and calls [`Backend::index_add_planned`].
    ///
    /// # Errors
    /// [`Error::Rank`], [`Error::ShapeMismatch`], [`Error::IndexOutOfRange`]
    /// (all before any work: `dst` untouched).
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

    /// [`Backend::index_add`] with a prebuilt plan (a static graph builds it once).
    ///
    /// Default: a host round trip (download both, [`reference::index_add`],
    /// upload the result). Device backends override it with a device kernel.
    ///
    /// # Errors
    /// [`Error::Rank`], [`Error::ShapeMismatch`] (plan rows or entries vs the
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

    /// Swaps dims `a` and `b`. The output is contiguous in its new shape.
    ///
    /// Default: follows [`Layout::plan_swap`]: a relabel shares the buffer (no
    /// copy, on every backend); anything else is a host round trip through
    /// [`rtx_tensor::permute_host`]. Device backends override the copying cases.
    ///
    /// # Errors
    /// Bad dims ([`Error::Layout`]).
    fn swap_dims<T: Element>(
        &self,
        t: &BTensor<Self, T>,
        a: usize,
        b: usize,
    ) -> Result<BTensor<Self, T>> {
        let mut perm: Vec<usize> = (0..t.layout().rank()).collect();
        if a >= perm.len() || b >= perm.len() {
            // let the planner produce the error naming the dim
            t.layout().plan_swap(a, b)?;
        }
        perm.swap(a, b);
        self.permute(t, &perm)
    }

    /// Permutes dims: output dim `i` is input dim `perm[i]`; contiguous output.
    ///
    /// Default: as [`Backend::swap_dims`] (relabel shares, else host round trip).
    ///
    /// # Errors
    /// A bad permutation ([`Error::Layout`]).
    fn permute<T: Element>(
        &self,
        t: &BTensor<Self, T>,
        perm: &[usize],
    ) -> Result<BTensor<Self, T>> {
        let plan = t.layout().plan_permute(perm)?;
        if plan.kind == PermuteKind::Relabel {
            return Ok(t.relabel(plan.output));
        }
        let host = self.download(t)?;
        let out = rtx_tensor::permute_host(&host, t.shape(), perm)?;
        self.upload(&out, plan.output.shape())
    }
}

/// `(rows, features)` of a 2-D layout, or [`Error::Rank`].
///
/// # Errors
/// [`Error::Rank`] naming the op and the argument.
pub fn dims2(op: &'static str, arg: &'static str, l: &Layout) -> Result<(usize, usize)> {
    match l.shape() {
        &[r, f] => Ok((r, f)),
        s => Err(Error::Rank {
            op,
            arg,
            expected: 2,
            shape: s.to_vec(),
        }),
    }
}

/// Validates `index_add(dst, plan, src)` shapes; returns the feature count.
///
/// # Errors
/// [`Error::Rank`] or [`Error::ShapeMismatch`] naming both shapes.
pub fn check_index_add(dst: &Layout, plan: &IndexPlan, src: &Layout) -> Result<usize> {
    let (rows, f) = dims2("index_add", "dst", dst)?;
    let (e, fs) = dims2("index_add", "src", src)?;
    if rows != plan.rows() || e != plan.len() || f != fs {
        return Err(Error::ShapeMismatch {
            op: "index_add",
            detail: format!(
                "dst {:?} and src {:?} with an index plan of {} entries into {} rows \
                 (want dst [R, F], src [E, F])",
                dst.shape(),
                src.shape(),
                plan.len(),
                plan.rows()
            ),
        });
    }
    Ok(f)
}
