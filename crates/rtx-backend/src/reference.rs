//! Host reference implementations: the definitions every backend is tested against.

use rtx_tensor::Layout;

use crate::order::add_row_sum;
use crate::{Element, Error, IndexPlan, Result, try_with_capacity};

// Defined next to `IndexPlan`, which validates its indices with it; the
// public path is this one.
pub use crate::plan::check_indices;

/// `out[i, :] = src[idx[i], :]` for a row-major `src` of shape `[rows, f]`.
///
/// # Errors
/// [`Error::IndexOutOfRange`]; [`Error::LengthMismatch`] when `src.len() != rows * f`;
/// [`Error::Layout`] when the output `[idx.len(), f]` overflows;
/// [`Error::HostAllocation`].
pub fn index_select<T: Element>(src: &[T], rows: usize, f: usize, idx: &[u32]) -> Result<Vec<T>> {
    if Some(src.len()) != rows.checked_mul(f) {
        return Err(Error::LengthMismatch {
            len: src.len(),
            shape: vec![rows, f],
            expected: rows.saturating_mul(f),
        });
    }
    check_indices(idx, rows)?;
    let mut out = try_with_capacity(Layout::contiguous(&[idx.len(), f])?.numel())?;
    for &i in idx {
        out.extend_from_slice(&src[i as usize * f..(i as usize + 1) * f]);
    }
    Ok(out)
}

/// `dst[idx[i], :] += src[i, :]` in the canonical order, single-threaded:
/// the reference every backend must match bit for bit.
///
/// # Errors
/// [`Error::ShapeMismatch`] when the lengths do not fit the plan and `f`;
/// `dst` is untouched then.
pub fn index_add<T: Element>(dst: &mut [T], f: usize, plan: &IndexPlan, src: &[T]) -> Result<()> {
    if Some(dst.len()) != plan.rows().checked_mul(f) || Some(src.len()) != plan.len().checked_mul(f)
    {
        return Err(Error::ShapeMismatch {
            op: "index_add",
            detail: format!(
                "dst has {} elements and src {}, but the plan wants {} x {f} and {} x {f}",
                dst.len(),
                src.len(),
                plan.rows(),
                plan.len()
            ),
        });
    }
    if f == 0 {
        return Ok(());
    }
    let mut scratch = Vec::new();
    for (r, row) in dst.chunks_exact_mut(f).enumerate() {
        add_row_sum(row, plan.row(r), src, &mut scratch);
    }
    Ok(())
}
