//! [`LayoutOps`]: `swap_dims`, `permute`, `resize_rows` and `convert`
//! (between element types), outputs always contiguous.

use crate::host_alloc::try_with_capacity;
use crate::{BTensor, BackendCore, Element, Result};
use rtx_tensor::PermuteKind;

/// Dim swaps, permutes, row resizes and conversions. The output is contiguous
/// in its new shape; a relabel (no element moves) shares the buffer on every
/// backend.
pub trait LayoutOps: BackendCore {
    /// Swaps dims `a` and `b`. The output is contiguous in its new shape.
    ///
    /// Default: follows [`Layout::plan_swap`](rtx_tensor::Layout::plan_swap): a relabel shares the buffer (no
    /// copy, on every backend); anything else is a host round trip through
    /// [`rtx_tensor::permute_host`]. Device backends override the copying cases.
    ///
    /// # Errors
    /// Bad dims ([`Error::Layout`](crate::Error::Layout)).
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
    /// Default: as [`LayoutOps::swap_dims`] (relabel shares, else host round trip).
    ///
    /// # Errors
    /// A bad permutation ([`Error::Layout`](crate::Error::Layout)).
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

    /// `x` cut or zero-padded to `rows` rows: for `x` of shape
    /// `[n, d1, d2, ...]` (rank >= 1), a contiguous tensor of shape
    /// `[rows, d1, d2, ...]` whose first `min(rows, n)` rows are `x`'s rows,
    /// bit for bit, and whose other rows (when `rows > n`) are `+0.0`. With
    /// `rows == n` it is `x.clone()` (shares the buffer: no copy, no launch);
    /// any other `rows` gives a new buffer, independent of `x`. Takes the
    /// first rows of an activation (PyG's `trim_to_layer`) and pads a
    /// gradient back to more rows.
    ///
    /// Default: a host round trip (download, truncate or extend with zeros,
    /// upload). Device backends override it.
    ///
    /// # Errors
    /// [`Error::ShapeMismatch`] for a rank-0 `x`; [`Error::Layout`] when the
    /// output's element count overflows 64 bits; the backend's own
    /// (allocation, device).
    fn resize_rows<T: Element>(
        &self,
        x: &BTensor<Self, T>,
        rows: usize,
    ) -> Result<BTensor<Self, T>> {
        let Some((layout, kept)) = crate::ops::resize_rows_layout(x.layout(), rows)? else {
            return Ok(x.clone());
        };
        let host = self.download(x)?;
        let mut out = try_with_capacity(layout.numel())?;
        out.extend_from_slice(&host[..kept]);
        out.resize(layout.numel(), T::ZERO);
        self.upload(&out, layout.shape())
    }

    /// `x` converted elementwise to `U` (same shape, contiguous), rounding
    /// once to nearest even as [`reference::convert`](crate::reference::convert)
    /// defines it: `f32` to `bf16`/`f16` is exactly `half`'s `from_f32`; a
    /// widening is exact; `T == U` copies the bits.
    ///
    /// Default: a host round trip through [`reference::convert`](crate::reference::convert).
    /// Device backends override it.
    ///
    /// # Errors
    /// Only the backend's own (allocation, device).
    fn convert<T: Element, U: Element>(&self, x: &BTensor<Self, T>) -> Result<BTensor<Self, U>> {
        let host = self.download(x)?;
        self.upload(&crate::reference::convert::<T, U>(&host), x.shape())
    }

    /// Every tensor of `xs` converted as [`convert`](LayoutOps::convert)
    /// converts it, in order: the same bits, in as few launches as the
    /// backend can (a model's parameters rounded to a half type, its
    /// gradients widened, in one launch each on the GPU).
    ///
    /// Default: [`convert`](LayoutOps::convert) of each.
    ///
    /// # Errors
    /// As [`convert`](LayoutOps::convert).
    fn convert_all<T: Element, U: Element>(
        &self,
        xs: &[&BTensor<Self, T>],
    ) -> Result<Vec<BTensor<Self, U>>> {
        xs.iter().map(|x| self.convert::<T, U>(x)).collect()
    }
}
