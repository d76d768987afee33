//! The argument checks every backend runs before any work: shapes, ranks,
//! index bounds and output sizes of the index, dense, segment and fused ops.

use rtx_tensor::Layout;

use super::kind::Binary;
use crate::{Error, IndexPlan, Result};

/// `(rows, features)` of a 2-D layout, or [`Error::Rank`].
///
/// # Errors
/// [`Error::Rank`] naming the op and the argument.
pub fn dims2(op: &'static str, arg: &'static str, l: &Layout) -> Result<(usize, usize)> {
    rank2(op, arg, l.shape())
}

/// [`dims2`] of a bare shape (the argument checks below take shapes).
pub(super) fn rank2(
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

/// A [`Error::ShapeMismatch`] of `op`.
pub(super) fn mismatch(op: &'static str, detail: String) -> Error {
    Error::ShapeMismatch { op, detail }
}

/// The shape of a [`matmul`](crate::DenseOps::matmul): `(m, k, n)` for `op(a): [m, k]`, `op(b): [k, n]`,
/// where `op` transposes when its flag is set.
///
/// # Errors
/// [`Error::Rank`] unless both are 2-D; [`Error::ShapeMismatch`] naming both
/// shapes and flags when the inner dimensions differ; [`Error::Layout`] when
/// the output `[m, n]` overflows.
pub fn check_matmul(
    a: &[usize],
    trans_a: bool,
    b: &[usize],
    trans_b: bool,
) -> Result<(usize, usize, usize)> {
    let (ar, ac) = rank2("matmul", "a", a)?;
    let (br, bc) = rank2("matmul", "b", b)?;
    let (m, k) = if trans_a { (ac, ar) } else { (ar, ac) };
    let (k2, n) = if trans_b { (bc, br) } else { (br, bc) };
    if k != k2 {
        return Err(mismatch(
            "matmul",
            format!(
                "a {a:?}{} and b {b:?}{}: inner dimensions {k} and {k2} differ",
                if trans_a { " (transposed)" } else { "" },
                if trans_b { " (transposed)" } else { "" },
            ),
        ));
    }
    rtx_tensor::numel(&[m, n])?;
    Ok((m, k, n))
}

/// Broadcasting of a [`Binary`] op: `a` and `b` have the same shape, or `a`
/// is `[n, f]` and `b` is `[1, f]` (one row, repeated for every row of `a`).
/// Returns `(f, broadcast)` where `f` is the row length used for broadcasting.
///
/// # Errors
/// [`Error::ShapeMismatch`] naming both shapes.
pub fn check_binary(op: Binary, a: &[usize], b: &[usize]) -> Result<(usize, bool)> {
    if a == b {
        return Ok((a.last().copied().unwrap_or(1), false));
    }
    if let ([_, f], [1, g]) = (a, b)
        && f == g
    {
        return Ok((*f, true));
    }
    Err(mismatch(
        op.name(),
        format!("a {a:?} and b {b:?} (want equal shapes, or a [N, F] with b [1, F])"),
    ))
}

/// `(n, f)` of [`sum_bias_relu`](crate::FusedOps::sum_bias_relu): at least
/// one part, every `x` of one shape `[n, f]` and every bias `[1, f]`.
///
/// # Errors
/// [`Error::Rank`] when part 0's `x` is not 2-D; [`Error::ShapeMismatch`]
/// naming the part and its shapes (a later part of another rank included),
/// or saying that there is none.
pub fn check_sum_bias_relu(parts: &[(&[usize], &[usize])]) -> Result<(usize, usize)> {
    const OP: &str = "sum_bias_relu";
    let Some(&(first, _)) = parts.first() else {
        return Err(mismatch(OP, "no parts to sum".into()));
    };
    let (n, f) = rank2(OP, "x of part 0", first)?;
    for (i, &(x, b)) in parts.iter().enumerate() {
        if x != first || b != [1, f] {
            return Err(mismatch(
                OP,
                format!(
                    "part {i}: x {x:?} and bias {b:?} (want x {first:?} as part 0's, bias [1, {f}])"
                ),
            ));
        }
    }
    Ok((n, f))
}

/// `(n, heads, channels, b_rows)` of [`head_dot`](crate::DenseOps::head_dot): `a: [n, heads * channels]`,
/// `b: [n or 1, heads * channels]`.
///
/// # Errors
/// [`Error::Rank`]; [`Error::ShapeMismatch`] naming both shapes and `heads`;
/// [`Error::Layout`] when the output `[n, heads]` overflows.
pub fn check_head_dot(
    a: &[usize],
    b: &[usize],
    heads: usize,
) -> Result<(usize, usize, usize, usize)> {
    let (n, f) = rank2("head_dot", "a", a)?;
    let (nb, fb) = rank2("head_dot", "b", b)?;
    if heads == 0 || f % heads != 0 || f != fb || (nb != n && nb != 1) {
        return Err(mismatch(
            "head_dot",
            format!(
                "a {a:?} and b {b:?} with {heads} heads (want a [N, H*C], b [N, H*C] or [1, H*C], H > 0)"
            ),
        ));
    }
    rtx_tensor::numel(&[n, heads])?;
    Ok((n, heads, f / heads, nb))
}

/// `(n, heads, channels, a_rows)` of [`head_scale`](crate::DenseOps::head_scale): `a: [n or 1, heads * channels]`,
/// `s: [n, heads]`.
///
/// # Errors
/// [`Error::Rank`]; [`Error::ShapeMismatch`] naming both shapes;
/// [`Error::Layout`] when the output `[n, heads * channels]` overflows (a
/// broadcast `a` row with many `s` rows).
pub fn check_head_scale(a: &[usize], s: &[usize]) -> Result<(usize, usize, usize, usize)> {
    let (na, f) = rank2("head_scale", "a", a)?;
    let (n, heads) = rank2("head_scale", "s", s)?;
    if heads == 0 || f % heads != 0 || (na != n && na != 1) {
        return Err(mismatch(
            "head_scale",
            format!("a {a:?} and s {s:?} (want a [N, H*C] or [1, H*C], s [N, H], H > 0)"),
        ));
    }
    rtx_tensor::numel(&[n, f])?;
    Ok((n, heads, f / heads, na))
}

/// [`check_head_scale`] of [`add_head_scale`](crate::FusedOps::add_head_scale)
/// `(x, a, s)`, and, when `x` is given, that `x` has the product's shape
/// `[n, heads * channels]`; `x` is `None` for a plain `head_scale` (the one
/// check of a backend that runs both ops through one kernel).
///
/// # Errors
/// As [`check_head_scale`] (checked first); [`Error::ShapeMismatch`] of
/// `add_head_scale` naming both shapes when `x` does not fit.
pub fn check_add_head_scale(
    x: Option<&[usize]>,
    a: &[usize],
    s: &[usize],
) -> Result<(usize, usize, usize, usize)> {
    let (n, h, c, a_rows) = check_head_scale(a, s)?;
    if let Some(x) = x {
        check_same("add_head_scale", x, &[n, h * c])?;
    }
    Ok((n, h, c, a_rows))
}

/// `(entries, features)` of a segment op on `x: [plan.len(), f]`.
///
/// # Errors
/// [`Error::Rank`]; [`Error::ShapeMismatch`] naming the shape and the plan.
pub fn check_segment(op: &'static str, x: &[usize], plan: &IndexPlan) -> Result<(usize, usize)> {
    check_segment_len(op, x, plan.len(), plan.rows())
}

/// [`check_segment`] for the plan of an index list of `entries` entries into
/// `rows` rows (a backend list, whose plan the backend builds itself); also
/// checks that the `[rows, f]` output's size does not overflow.
///
/// # Errors
/// [`Error::Rank`]; [`Error::ShapeMismatch`]; [`Error::Layout`].
pub fn check_segment_len(
    op: &'static str,
    x: &[usize],
    entries: usize,
    rows: usize,
) -> Result<(usize, usize)> {
    let (e, f) = rank2(op, "x", x)?;
    if e != entries {
        return Err(mismatch(
            op,
            format!(
                "x {x:?} with an index plan of {entries} entries into {rows} rows \
                 (want x [{entries}, F])"
            ),
        ));
    }
    rtx_tensor::numel(&[rows, f])?;
    Ok((e, f))
}

/// `(heads, channels)` of [`gather_scale_scatter`](crate::FusedOps::gather_scale_scatter): `x: [n, heads*c]`,
/// `gather.len() == plan.len() == weights rows`, `weights: [plan.len(), heads]`;
/// every gather index is checked against `n` (before any work).
///
/// # Errors
/// [`Error::Rank`]; [`Error::ShapeMismatch`] naming the shapes and lengths;
/// [`Error::IndexOutOfRange`]; [`Error::Layout`] when the output
/// `[plan.rows(), heads * c]` overflows.
pub fn check_gather_scale_scatter(
    x: &[usize],
    gather: &[u32],
    weights: &[usize],
    plan: &IndexPlan,
) -> Result<(usize, usize)> {
    let (n, heads, c) =
        gather_scale_scatter_shapes(x, gather.len(), weights, plan.len(), plan.rows())?;
    crate::plan::check_indices(gather, n)?;
    Ok((heads, c))
}

/// The shape part of [`check_gather_scale_scatter`], from the lengths of the
/// gather list and of the scatter list (or plan) into `rows` rows: `(n,
/// heads, channels)`, `n` the rows the gather indices must stay below.
///
/// # Errors
/// [`Error::Rank`]; [`Error::ShapeMismatch`] naming the shapes and lengths;
/// [`Error::Layout`] when the output `[rows, heads * c]` overflows.
pub fn gather_scale_scatter_shapes(
    x: &[usize],
    gather_len: usize,
    weights: &[usize],
    scatter_len: usize,
    rows: usize,
) -> Result<(usize, usize, usize)> {
    let (n, f) = rank2("gather_scale_scatter", "x", x)?;
    let (e, heads) = rank2("gather_scale_scatter", "weights", weights)?;
    if heads == 0 || f % heads != 0 || e != gather_len || e != scatter_len {
        return Err(mismatch(
            "gather_scale_scatter",
            format!(
                "x {x:?}, {gather_len} gather indices, weights {weights:?}, {scatter_len} \
                 scatter entries (want x [N, H*C], weights [E, H] with E gather indices and \
                 E scatter entries, H > 0)"
            ),
        ));
    }
    rtx_tensor::numel(&[rows, f])?;
    Ok((n, heads, f / heads))
}

/// `(heads, channels)` of [`gather_head_dot`](crate::FusedOps::gather_head_dot): `a: [na, heads*c]`,
/// `b: [nb, heads*c]`, `a_idx.len() == b_idx.len()`; indices checked.
///
/// # Errors
/// [`Error::Rank`]; [`Error::ShapeMismatch`]; [`Error::IndexOutOfRange`];
/// [`Error::Layout`] when the output `[a_idx.len(), heads]` overflows.
pub fn check_gather_head_dot(
    a: &[usize],
    a_idx: &[u32],
    b: &[usize],
    b_idx: &[u32],
    heads: usize,
) -> Result<(usize, usize)> {
    let (na, nb, c) = gather_head_dot_shapes(a, a_idx.len(), b, b_idx.len(), heads)?;
    crate::plan::check_indices(a_idx, na)?;
    crate::plan::check_indices(b_idx, nb)?;
    Ok((heads, c))
}

/// The shape part of [`check_gather_head_dot`], from the index lists'
/// lengths: `(na, nb, channels)`, the rows each list must stay below.
///
/// # Errors
/// [`Error::Rank`]; [`Error::ShapeMismatch`]; [`Error::Layout`] when the
/// output `[a_len, heads]` overflows.
pub fn gather_head_dot_shapes(
    a: &[usize],
    a_len: usize,
    b: &[usize],
    b_len: usize,
    heads: usize,
) -> Result<(usize, usize, usize)> {
    let (na, f) = rank2("gather_head_dot", "a", a)?;
    let (nb, fb) = rank2("gather_head_dot", "b", b)?;
    if heads == 0 || f % heads != 0 || f != fb || a_len != b_len {
        return Err(mismatch(
            "gather_head_dot",
            format!(
                "a {a:?} with {a_len} indices and b {b:?} with {b_len} indices, {heads} heads \
                 (want a [Na, H*C], b [Nb, H*C], equal index counts, H > 0)"
            ),
        ));
    }
    rtx_tensor::numel(&[a_len, heads])?;
    Ok((na, nb, f / heads))
}

/// The arguments of [`gather_add`](crate::FusedOps::gather_add):
/// `(na, nb, f)` for `a: [na, f]`, `b: [nb, f]` and index lists of one
/// length, every index below its tensor's rows.
///
/// # Errors
/// As [`gather_add_shapes`]; [`Error::IndexOutOfRange`] naming the first
/// index past its tensor's rows.
pub fn check_gather_add(
    a: &[usize],
    a_idx: &[u32],
    b: &[usize],
    b_idx: &[u32],
) -> Result<(usize, usize, usize)> {
    let (na, nb, f) = gather_add_shapes(a, a_idx.len(), b, b_idx.len())?;
    crate::plan::check_indices(a_idx, na)?;
    crate::plan::check_indices(b_idx, nb)?;
    Ok((na, nb, f))
}

/// The shape part of [`check_gather_add`], from the index lists' lengths:
/// `(na, nb, f)`, the rows each list must stay below and the row length.
///
/// # Errors
/// [`Error::Rank`]; [`Error::ShapeMismatch`] naming both shapes and lengths;
/// [`Error::Layout`] when the output `[a_len, f]` overflows.
pub fn gather_add_shapes(
    a: &[usize],
    a_len: usize,
    b: &[usize],
    b_len: usize,
) -> Result<(usize, usize, usize)> {
    let (na, f) = rank2("gather_add", "a", a)?;
    let (nb, fb) = rank2("gather_add", "b", b)?;
    if f != fb || a_len != b_len {
        return Err(mismatch(
            "gather_add",
            format!(
                "a {a:?} with {a_len} indices and b {b:?} with {b_len} indices \
                 (want a [Na, F], b [Nb, F], equal index counts)"
            ),
        ));
    }
    rtx_tensor::numel(&[a_len, f])?;
    Ok((na, nb, f))
}

/// Checks that two tensors have one shape (for [`DenseOps::axpy`](crate::DenseOps::axpy) and backward ops).
///
/// # Errors
/// [`Error::ShapeMismatch`] naming both shapes.
pub fn check_same(op: &'static str, a: &[usize], b: &[usize]) -> Result<()> {
    if a != b {
        return Err(mismatch(op, format!("{a:?} and {b:?} (want equal shapes)")));
    }
    Ok(())
}

/// Checks that `data` holds exactly the elements of `shape`.
pub(super) fn check_len<T>(data: &[T], shape: &[usize]) -> Result<()> {
    let n = rtx_tensor::numel(shape)?;
    if data.len() != n {
        return Err(Error::LengthMismatch {
            len: data.len(),
            shape: shape.to_vec(),
            expected: n,
        });
    }
    Ok(())
}

/// `resize_rows`'s checks: `None` when `rows` is `x`'s row count (the
/// output is `x`), else the output's layout and how many of `x`'s leading
/// elements it keeps (the smaller tensor's count: nothing to overflow).
///
/// # Errors
/// [`Error::ShapeMismatch`] for a rank-0 `x`; [`Error::Layout`] when the
/// output's element count overflows.
pub fn resize_rows_layout(x: &Layout, rows: usize) -> Result<Option<(Layout, usize)>> {
    let Some(&n) = x.shape().first() else {
        return Err(Error::ShapeMismatch {
            op: "resize_rows",
            detail: format!(
                "x {:?} has no rows to resize to {rows} (want [n, ...], rank >= 1)",
                x.shape()
            ),
        });
    };
    if rows == n {
        return Ok(None);
    }
    let mut shape = x.shape().to_vec();
    shape[0] = rows;
    let out = Layout::contiguous(&shape)?;
    let kept = if rows < n { out.numel() } else { x.numel() };
    Ok(Some((out, kept)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shape_errors_name_both_shapes() {
        let e = check_binary(Binary::Add, &[3, 4], &[2, 4]).unwrap_err();
        assert!(
            e.to_string().contains("[3, 4]") && e.to_string().contains("[2, 4]"),
            "{e}"
        );
        assert!(check_binary(Binary::Add, &[3, 4], &[1, 4]).unwrap().1);
        assert!(check_head_dot(&[3, 8], &[1, 8], 0).is_err());
        assert!(check_head_dot(&[3, 8], &[2, 8], 4).is_err());
        assert_eq!(check_head_dot(&[3, 8], &[1, 8], 4).unwrap(), (3, 4, 2, 1));
        assert!(check_head_scale(&[3, 8], &[3, 3]).is_err());
        let plan = IndexPlan::new(&[0, 1], 2).unwrap();
        let e = check_segment("segment_max", &[3, 2], &plan).unwrap_err();
        assert!(e.to_string().contains("[3, 2]"), "{e}");
    }

    #[test]
    fn add_head_scale_checks_the_product_then_the_addend() {
        // a [2, 6] broadcast over s [4, 3]: product [4, 6], 3 heads of 2
        assert_eq!(
            check_add_head_scale(None, &[1, 6], &[4, 3]).unwrap(),
            (4, 3, 2, 1)
        );
        assert_eq!(
            check_add_head_scale(Some(&[4, 6]), &[4, 6], &[4, 3]).unwrap(),
            (4, 3, 2, 4)
        );
        let e = check_add_head_scale(Some(&[4, 5]), &[4, 6], &[4, 3]).unwrap_err();
        assert_eq!(
            e.to_string(),
            "add_head_scale: shape mismatch: [4, 5] and [4, 6] (want equal shapes)"
        );
        // a bad product is head_scale's error, whatever x is
        let e = check_add_head_scale(Some(&[4, 5]), &[4, 7], &[4, 3]).unwrap_err();
        assert!(e.to_string().starts_with("head_scale: "), "{e}");
        let e = check_add_head_scale(None, &[4], &[4, 3]).unwrap_err();
        assert!(
            matches!(
                e,
                Error::Rank {
                    op: "head_scale",
                    arg: "a",
                    ..
                }
            ),
            "{e}"
        );
    }
}
