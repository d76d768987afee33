//! Argument checks shared by the capability traits and the backends.

use crate::{Error, IndexPlan, Result};
use rtx_tensor::Layout;

/// `(rows, features)` of a 2-D layout, or [`Error::Rank`].
///
/// # Errors
/// [`Error::Rank`] naming the op and the argument.
pub fn dims2(op: &'static str, arg: &'static str, l: &Layout) -> Result<(usize, usize)> {
    shape2(op, arg, l.shape())
}

/// [`dims2`] of a bare shape (the argument checks in [`ops`] take shapes).
pub(crate) fn shape2(
    op: &'static str,
    arg: &'static str,
    shape: &[usize],
) -> Result<(usize, usize)> {
    match *shape {
        [r, f] => Ok((r, f)),
        _ => Err(Error::Rank {
            op,
            arg,
            expected: 2,
            shape: shape.to_vec(),
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
