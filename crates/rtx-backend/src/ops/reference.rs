//! Host reference implementations: the definitions every backend is tested
//! against, single-threaded. The gather and scatter-add ([`index_select`],
//! [`index_add`]) follow the canonical order of [`order`](crate::order);
//! the dense, segment and fused ops of a graph-attention model ([`matmul`],
//! [`segment_softmax`], ...) the fixed orders of the [`ops`](crate::ops)
//! module docs, which re-exports them (`rtx_backend::ops::matmul` is
//! [`matmul`]).
//!
//! **Half types.** For `bf16` and `f16` every arithmetic op is its `f32`
//! op on the inputs widened (exactly) to `f32`, each output rounded once
//! ([`widen_f32`], [`round_f32`]): the sums of `f32` accumulate in the same
//! canonical order, a fused op keeps its intermediates in `f32`. Scatter-add
//! adds the `f32` canonical sum to the widened destination and rounds once;
//! its untouched rows keep their bits. The ops that only move or select
//! values (gather, permute, segment max) keep the input bits.

use rtx_tensor::Layout;

use crate::host_alloc::{try_vec, try_with_capacity};
use crate::ops::check::{check_len, check_matmul, mismatch};
use crate::ops::{
    Binary, SegmentScratch, Unary, axpy_slice, binary_slice, gather_scale_scatter_row,
    head_dot_row, head_scale_row, matmul_row, mm_block, outer_term, segment_max_row,
    softmax_backward_segment, softmax_segment, transpose2, unary_backward_slice, unary_slice,
};
use crate::order::{CANONICAL_BLOCK, add_row_sum, canonical_accumulate};
use crate::{Element, Error, IndexPlan, Result, round_f32, widen_f32};

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

/// `op(a) @ op(b)` for row-major `a` and `b` of the given shapes; returns the
/// `[m, n]` product. The inner dimension is summed in the canonical order.
///
/// # Errors
/// As [`check_matmul`]; [`Error::LengthMismatch`] when a slice does not fit its shape.
pub fn matmul<T: Element>(
    a: &[T],
    a_shape: &[usize],
    trans_a: bool,
    b: &[T],
    b_shape: &[usize],
    trans_b: bool,
) -> Result<Vec<T>> {
    if T::DTYPE.is_half() {
        let (wa, wb) = (widen_f32(a), widen_f32(b));
        return Ok(round_f32(&matmul(
            &wa, a_shape, trans_a, &wb, b_shape, trans_b,
        )?));
    }
    let (m, k, n) = check_matmul(a_shape, trans_a, b_shape, trans_b)?;
    check_len(a, a_shape)?;
    check_len(b, b_shape)?;
    let bt;
    let b = if trans_b {
        bt = transpose2(b, n, k);
        &bt[..]
    } else {
        b
    };
    let mut out = try_vec(m * n, T::ZERO)?;
    let mut scratch = Vec::new();
    if n == 0 {
        return Ok(out);
    }
    if k <= CANONICAL_BLOCK {
        // one level-0 block: the tiled kernel, A(i, p) = a[i, p] or a[p, i]
        let (rs, ps) = if trans_a { (1, m) } else { (k, 1) };
        mm_block(a, 0, rs, ps, b, n, 0..m, 0, k, &mut out);
    } else if trans_a {
        canonical_accumulate(k, &mut out, &mut scratch, |p, acc, first| {
            outer_term(a, b, m, n, p, acc, first);
        });
    } else {
        for (i, o) in out.chunks_exact_mut(n).enumerate() {
            matmul_row(&a[i * k..(i + 1) * k], b, o, &mut scratch);
        }
    }
    Ok(out)
}

/// `op(x)` elementwise.
pub fn unary<T: Element>(op: Unary, x: &[T]) -> Vec<T> {
    if T::DTYPE.is_half() {
        return round_f32(&unary(op, &widen_f32(x)));
    }
    let mut out = vec![T::ZERO; x.len()];
    unary_slice(op, x, &mut out);
    out
}

/// The backward of `op` at `x` applied to `g`.
///
/// # Errors
/// [`Error::ShapeMismatch`] when the lengths differ.
pub fn unary_backward<T: Element>(op: Unary, x: &[T], g: &[T]) -> Result<Vec<T>> {
    if T::DTYPE.is_half() {
        return Ok(round_f32(&unary_backward(
            op,
            &widen_f32(x),
            &widen_f32(g),
        )?));
    }
    if x.len() != g.len() {
        return Err(mismatch(
            "unary_backward",
            format!("x has {} elements, grad {}", x.len(), g.len()),
        ));
    }
    let mut out = vec![T::ZERO; x.len()];
    unary_backward_slice(op, x, g, &mut out);
    Ok(out)
}

/// `a op b` with `b` broadcast over rows when `broadcast` (`b` holds `f` values).
pub fn binary<T: Element>(op: Binary, a: &[T], b: &[T], f: usize, broadcast: bool) -> Vec<T> {
    if T::DTYPE.is_half() {
        return round_f32(&binary(op, &widen_f32(a), &widen_f32(b), f, broadcast));
    }
    let mut out = vec![T::ZERO; a.len()];
    if broadcast {
        if f > 0 {
            for (o, x) in out.chunks_exact_mut(f).zip(a.chunks_exact(f)) {
                binary_slice(op, x, b, o);
            }
        }
    } else {
        binary_slice(op, a, b, &mut out);
    }
    out
}

/// In place `y = y + alpha * x`, `alpha` rounded once to `T` ([`axpy_slice`]);
/// for the half types in `f32` (`alpha` rounded to `f32`), each result rounded once.
pub fn axpy<T: Element>(y: &mut [T], alpha: f64, x: &[T]) {
    if T::DTYPE.is_half() {
        let mut wy = widen_f32(y);
        axpy_slice(&mut wy, alpha as f32, &widen_f32(x));
        y.copy_from_slice(&round_f32(&wy));
        return;
    }
    axpy_slice(y, T::from_f64(alpha), x);
}

/// Every element of `x` converted to `U`, rounding once to nearest even:
/// exact when `U` is wider; `f32` to `bf16`/`f16` is `half`'s `from_f32`,
/// `f64` to them `half`'s `from_f64` (one rounding from the `f64` value),
/// `f64` to `f32` Rust's `as`; a half type to the other through `f32`.
pub fn convert<T: Element, U: Element>(x: &[T]) -> Vec<U> {
    if T::DTYPE == U::DTYPE {
        // the same type: the bits, NaN payloads included
        return crate::vec_from_bytes(crate::bytes_of(x));
    }
    if T::DTYPE == crate::DType::F64 || U::DTYPE == crate::DType::F64 {
        return x.iter().map(|&v| U::from_f64(v.to_f64())).collect();
    }
    x.iter().map(|&v| U::from_f32(v.to_f32())).collect()
}

/// Column sums of a row-major `[n, f]`: `[f]` values, canonical order over rows.
pub fn sum_rows<T: Element>(x: &[T], n: usize, f: usize) -> Vec<T> {
    if T::DTYPE.is_half() {
        return round_f32(&sum_rows(&widen_f32(x), n, f));
    }
    let mut out = vec![T::ZERO; f];
    canonical_accumulate(n, &mut out, &mut Vec::new(), |p, acc, first| {
        let r = &x[p * f..(p + 1) * f];
        if first {
            acc.copy_from_slice(r);
        } else {
            for (o, &v) in acc.iter_mut().zip(r) {
                *o = *o + v;
            }
        }
    });
    out
}

/// Per-head dot products: `out[i, h] = dot(a[i, h*c..], b[i or 0, h*c..])`.
pub fn head_dot<T: Element>(
    a: &[T],
    b: &[T],
    n: usize,
    heads: usize,
    c: usize,
    b_rows: usize,
) -> Vec<T> {
    if T::DTYPE.is_half() {
        return round_f32(&head_dot(&widen_f32(a), &widen_f32(b), n, heads, c, b_rows));
    }
    let f = heads * c;
    let mut out = vec![T::ZERO; n * heads];
    for (i, o) in out.chunks_exact_mut(heads.max(1)).take(n).enumerate() {
        let br = if b_rows == 1 { 0 } else { i };
        head_dot_row(&a[i * f..(i + 1) * f], &b[br * f..(br + 1) * f], c, o);
    }
    out
}

/// Per-head scaling: `out[i, h*c + j] = a[i or 0, h*c + j] * s[i, h]`.
pub fn head_scale<T: Element>(
    a: &[T],
    s: &[T],
    n: usize,
    heads: usize,
    c: usize,
    a_rows: usize,
) -> Vec<T> {
    if T::DTYPE.is_half() {
        return round_f32(&head_scale(
            &widen_f32(a),
            &widen_f32(s),
            n,
            heads,
            c,
            a_rows,
        ));
    }
    let f = heads * c;
    let mut out = vec![T::ZERO; n * f];
    if f == 0 {
        return out;
    }
    for (i, o) in out.chunks_exact_mut(f).enumerate() {
        let ar = if a_rows == 1 { 0 } else { i };
        head_scale_row(
            &a[ar * f..(ar + 1) * f],
            &s[i * heads..(i + 1) * heads],
            c,
            o,
        );
    }
    out
}

/// Segment max of a row-major `[plan.len(), f]` into `[plan.rows(), f]`.
pub fn segment_max<T: Element>(x: &[T], f: usize, plan: &IndexPlan) -> Vec<T> {
    let mut out = vec![T::ZERO; plan.rows() * f];
    if f == 0 {
        return out;
    }
    let row = |p: u32| &x[p as usize * f..(p as usize + 1) * f];
    for (r, o) in out.chunks_exact_mut(f).enumerate() {
        segment_max_row(plan.row(r), row, o);
    }
    out
}

/// Runs `kernel(positions, out_rows, scratch)` on every segment (plan row)
/// in turn, the kernel writing the segment's `f`-wide rows in segment order,
/// and scatters them to their entries' positions of a `[plan.len(), f]`
/// output: the shared loop of the per-segment reference ops.
fn for_each_segment<T: Element>(
    plan: &IndexPlan,
    f: usize,
    mut kernel: impl FnMut(&[u32], &mut [T], &mut SegmentScratch<T>),
) -> Vec<T> {
    let mut out = vec![T::ZERO; plan.len() * f];
    let mut s = SegmentScratch::default();
    let mut buf = Vec::new();
    for r in 0..plan.rows() {
        let ps = plan.row(r);
        buf.clear();
        buf.resize(ps.len() * f, T::ZERO);
        kernel(ps, &mut buf, &mut s);
        for (q, &p) in ps.iter().enumerate() {
            out[p as usize * f..(p as usize + 1) * f].copy_from_slice(&buf[q * f..(q + 1) * f]);
        }
    }
    out
}

/// Segment softmax of a row-major `[plan.len(), f]` (see the [`ops`](crate::ops) module docs).
pub fn segment_softmax<T: Element>(x: &[T], f: usize, plan: &IndexPlan) -> Vec<T> {
    if T::DTYPE.is_half() {
        return round_f32(&segment_softmax(&widen_f32(x), f, plan));
    }
    let row = |p: u32| &x[p as usize * f..(p as usize + 1) * f];
    for_each_segment(plan, f, |ps, o, s| softmax_segment(ps, row, f, o, s))
}

/// The backward of [`segment_softmax`] given its output `alpha` and upstream `g`.
pub fn segment_softmax_backward<T: Element>(
    alpha: &[T],
    g: &[T],
    f: usize,
    plan: &IndexPlan,
) -> Vec<T> {
    if T::DTYPE.is_half() {
        return round_f32(&segment_softmax_backward(
            &widen_f32(alpha),
            &widen_f32(g),
            f,
            plan,
        ));
    }
    let a = |p: u32| &alpha[p as usize * f..(p as usize + 1) * f];
    let gr = |p: u32| &g[p as usize * f..(p as usize + 1) * f];
    for_each_segment(plan, f, |ps, o, s| {
        softmax_backward_segment(ps, a, gr, f, o, s);
    })
}

/// `segment_sum(head_scale(index_select(x, gather), w), plan)`, fused: `x`
/// row-major `[n, heads*c]`, `w` `[plan.len(), heads]`; out `[plan.rows(), heads*c]`.
pub fn gather_scale_scatter<T: Element>(
    x: &[T],
    gather: &[u32],
    w: &[T],
    heads: usize,
    c: usize,
    plan: &IndexPlan,
) -> Vec<T> {
    if T::DTYPE.is_half() {
        return round_f32(&gather_scale_scatter(
            &widen_f32(x),
            gather,
            &widen_f32(w),
            heads,
            c,
            plan,
        ));
    }
    let f = heads * c;
    let mut out = vec![T::ZERO; plan.rows() * f];
    if f == 0 {
        return out;
    }
    let mut scratch = Vec::new();
    for (r, o) in out.chunks_exact_mut(f).enumerate() {
        gather_scale_scatter_row(plan.row(r), gather, x, w, heads, c, o, &mut scratch);
    }
    out
}

/// `head_dot(index_select(a, a_idx), index_select(b, b_idx), heads)`, fused:
/// out `[a_idx.len(), heads]`.
pub fn gather_head_dot<T: Element>(
    a: &[T],
    a_idx: &[u32],
    b: &[T],
    b_idx: &[u32],
    heads: usize,
    c: usize,
) -> Vec<T> {
    if T::DTYPE.is_half() {
        return round_f32(&gather_head_dot(
            &widen_f32(a),
            a_idx,
            &widen_f32(b),
            b_idx,
            heads,
            c,
        ));
    }
    let f = heads * c;
    let mut out = vec![T::ZERO; a_idx.len() * heads];
    for ((o, &i), &j) in out.chunks_exact_mut(heads.max(1)).zip(a_idx).zip(b_idx) {
        let (i, j) = (i as usize, j as usize);
        head_dot_row(&a[i * f..(i + 1) * f], &b[j * f..(j + 1) * f], c, o);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::order::canonical_sum;
    use crate::workload::values;

    #[test]
    fn canonical_accumulate_is_canonical_sum_per_column() {
        for k in [0usize, 1, 5, 256, 257, 700, 3 * 256 * 256 / 2 + 5] {
            let f = 3;
            let v: Vec<f32> = values(7, k * f);
            let got = sum_rows(&v, k, f);
            for j in 0..f {
                let want = canonical_sum(k, |i| v[i * f + j]).unwrap_or(0.0);
                assert_eq!(got[j].to_bits(), want.to_bits(), "k={k} col {j}");
            }
        }
    }

    #[test]
    fn matmul_all_transposes_match_naive_canonical() {
        for (m, k, n) in [(5, 300, 4), (7, 37, 19), (9, 256, 8)] {
            matmul_case(m, k, n);
        }
    }

    fn matmul_case(m: usize, k: usize, n: usize) {
        let a: Vec<f64> = values(1, m * k);
        let b: Vec<f64> = values(2, k * n);
        let want: Vec<f64> = (0..m * n)
            .map(|x| canonical_sum(k, |p| a[(x / n) * k + p] * b[p * n + x % n]).unwrap())
            .collect();
        let at = transpose2(&a, m, k);
        let bt = transpose2(&b, k, n);
        for (ta, tb) in [(false, false), (true, false), (false, true), (true, true)] {
            let (aa, ash) = if ta { (&at, [k, m]) } else { (&a, [m, k]) };
            let (bb, bsh) = if tb { (&bt, [n, k]) } else { (&b, [k, n]) };
            let got = matmul(aa, &ash, ta, bb, &bsh, tb).unwrap();
            assert_eq!(got, want, "trans ({ta}, {tb})");
        }
        let e = matmul(&a, &[m, k], false, &a, &[m, k], false).unwrap_err();
        assert_eq!(
            e.to_string(),
            format!(
                "matmul: shape mismatch: a [{m}, {k}] and b [{m}, {k}]: inner dimensions {k} and {m} differ"
            )
        );
    }

    #[test]
    fn softmax_sums_to_one_and_matches_naive() {
        let idx = [2u32, 0, 2, 2, 1, 0, 2];
        let plan = IndexPlan::new(&idx, 4).unwrap();
        let f = 2;
        let x: Vec<f64> = values(3, idx.len() * f)
            .iter()
            .map(|v: &f64| v * 5.0)
            .collect();
        let a = segment_softmax(&x, f, &plan);
        for r in 0..3u32 {
            for j in 0..f {
                let ps: Vec<usize> = (0..idx.len()).filter(|&p| idx[p] == r).collect();
                let m = ps.iter().map(|&p| x[p * f + j]).fold(f64::MIN, f64::max);
                let s: f64 = ps.iter().map(|&p| (x[p * f + j] - m).exp()).sum();
                for &p in &ps {
                    let want = (x[p * f + j] - m).exp() / s;
                    assert!((a[p * f + j] - want).abs() < 1e-15, "r {r} p {p}");
                }
            }
        }
        // backward against finite differences of sum(w * softmax(x))
        let w: Vec<f64> = values(4, x.len());
        let g = segment_softmax_backward(&a, &w, f, &plan);
        let obj = |x: &[f64]| -> f64 {
            segment_softmax(x, f, &plan)
                .iter()
                .zip(&w)
                .map(|(a, b)| a * b)
                .sum()
        };
        for i in 0..x.len() {
            let h = 1e-6;
            let (mut xp, mut xm) = (x.clone(), x.clone());
            xp[i] += h;
            xm[i] -= h;
            let fd = (obj(&xp) - obj(&xm)) / (2.0 * h);
            assert!((fd - g[i]).abs() < 1e-8, "entry {i}: fd {fd} vs {}", g[i]);
        }
    }

    #[test]
    fn segment_max_keeps_first_nan_and_empty_is_zero() {
        let plan = IndexPlan::new(&[0, 0, 0, 2], 3).unwrap();
        let x = [1.0f32, f32::NAN, 5.0, -3.0];
        let m = segment_max(&x, 1, &plan);
        assert!(m[0].is_nan());
        assert_eq!(m[1], 0.0);
        assert_eq!(m[2], -3.0);
    }
}
