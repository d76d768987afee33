//! The dense, elementwise and segment ops a graph-attention model needs beyond
//! gather and scatter-add: their definitions (host reference implementations),
//! the row kernels the reference and the CPU backend share (so the two are
//! bit-identical by construction), and the argument checks every backend runs
//! before any work.
//!
//! # Reduction order
//! Every reduction here has one fixed order, so the reference is
//! deterministic and a backend that follows it (the CPU backend does, for
//! any thread count) gets the same bits:
//!
//! * **Dense reductions** (the inner dimension of [`matmul`], the channels of
//!   [`head_dot`], the rows of [`sum_rows`]) follow
//!   [`order::canonical_sum`](crate::order::canonical_sum): blocks of
//!   [`CANONICAL_BLOCK`] terms summed left to right from the first term, then
//!   the block sums the same way. An empty reduction is `+0.0`. Each product
//!   is rounded before it is added (no fused multiply-add). This is the
//!   reference, not a cross-backend promise: the conformance suite compares
//!   `matmul`, `sum_rows`, `head_dot`, `axpy` and `exp` within a tolerance,
//!   so a device may use cuBLAS, its own order or FMA there.
//! * **Segment sums** ([`segment_sum`](crate::IndexOps::segment_sum), the
//!   denominators of the softmax) are `index_add` into zeros: `0 + t` with `t`
//!   the canonical sum of the segment (positions increasing).
//! * **Segment max** takes the segment's values in position order and keeps
//!   the first maximum (`-0.0` and `+0.0` compare equal, so the first one
//!   wins); the first NaN met sticks. An empty segment gives `+0.0`.
//! * **Segment softmax** is defined as the composition
//!   `e = exp(x - gather(segment_max(x)))`, `alpha = e / gather(segment_sum(e))`,
//!   and its backward as `alpha * (g - gather(segment_sum(alpha * g)))`. A
//!   fused implementation must produce exactly those bits (the CPU backend's
//!   does; the trait's defaults *are* that composition).
//!
//! * **Fused gathers** ([`gather_scale_scatter`], [`gather_head_dot`]) are
//!   defined as their unfused compositions (see each) and give the same bits.
//!
//! Elementwise ops round once per operation, as IEEE-754 does. `exp` is the
//! backend's own: the host's libm on the host, the device's `exp` on a device;
//! so host and device results of `exp` may differ in the last bit, while any
//! two runs of one backend agree.
//!
//! # What is bit-exact across backends
//! Index ops (gather, scatter-add, [`segment_max`], `segment_sum`) and the
//! elementwise ops without rounding choices (`binary`, [`head_scale`], relu,
//! leaky relu, scale) give the same bits on every backend; every fused op
//! gives the same bits as its composition on the same backend. The dense ops
//! (`matmul`, `sum_rows`, `head_dot`, `axpy`) and `exp` are compared with
//! this reference within a tolerance (see [`Backend`](crate::Backend)).
//!
//! # Sizes
//! The `check_*` functions reject shapes whose output element count
//! overflows ([`Error::Layout`]); the kernels and reference functions below
//! assume checked arguments (slices of the lengths their shapes say) and may
//! panic on inconsistent ones.

use crate::check::shape2 as rank2;
use crate::order::CANONICAL_BLOCK;
use crate::{Element, Error, IndexPlan, Result, try_vec};

pub use crate::order::{canonical_accumulate, reduce_blocks};

/// An elementwise function of one tensor.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Unary {
    /// `max(x, 0)`: `x` if `x > 0`, NaN stays NaN, else `+0.0`.
    Relu,
    /// `x` if `x > 0`, else `x * slope` (the slope rounded to the element type once).
    LeakyRelu(f64),
    /// `e^x`.
    Exp,
    /// `x * s` (`s` rounded to the element type once).
    Scale(f64),
}

impl Unary {
    /// The op's name for error messages.
    pub fn name(self) -> &'static str {
        match self {
            Unary::Relu => "relu",
            Unary::LeakyRelu(_) => "leaky_relu",
            Unary::Exp => "exp",
            Unary::Scale(_) => "scale",
        }
    }
}

/// An elementwise function of two tensors (see [`check_binary`] for broadcasting).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Binary {
    /// `a + b`.
    Add,
    /// `a - b`.
    Sub,
    /// `a * b`.
    Mul,
    /// `a / b`.
    Div,
}

impl Binary {
    /// The op's name for error messages.
    pub fn name(self) -> &'static str {
        match self {
            Binary::Add => "add",
            Binary::Sub => "sub",
            Binary::Mul => "mul",
            Binary::Div => "div",
        }
    }
}

fn mismatch(op: &'static str, detail: String) -> Error {
    Error::ShapeMismatch { op, detail }
}

// ---------------------------------------------------------------- checks

/// The shape of a [`matmul`]: `(m, k, n)` for `op(a): [m, k]`, `op(b): [k, n]`,
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

/// `(n, heads, channels, b_rows)` of [`head_dot`]: `a: [n, heads * channels]`,
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

/// `(n, heads, channels, a_rows)` of [`head_scale`]: `a: [n or 1, heads * channels]`,
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

/// `(entries, features)` of a segment op on `x: [plan.len(), f]`.
///
/// # Errors
/// [`Error::Rank`]; [`Error::ShapeMismatch`] naming the shape and the plan.
pub fn check_segment(op: &'static str, x: &[usize], plan: &IndexPlan) -> Result<(usize, usize)> {
    let (e, f) = rank2(op, "x", x)?;
    if e != plan.len() {
        return Err(mismatch(
            op,
            format!(
                "x {x:?} with an index plan of {} entries into {} rows (want x [{}, F])",
                plan.len(),
                plan.rows(),
                plan.len()
            ),
        ));
    }
    Ok((e, f))
}

/// `(heads, channels)` of [`gather_scale_scatter`]: `x: [n, heads*c]`,
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
    let (n, f) = rank2("gather_scale_scatter", "x", x)?;
    let (e, heads) = rank2("gather_scale_scatter", "weights", weights)?;
    if heads == 0 || f % heads != 0 || e != gather.len() || e != plan.len() {
        return Err(mismatch(
            "gather_scale_scatter",
            format!(
                "x {x:?}, {} gather indices, weights {weights:?}, a plan of {} entries \
                 (want x [N, H*C], weights [E, H] with E indices and E plan entries, H > 0)",
                gather.len(),
                plan.len()
            ),
        ));
    }
    crate::reference::check_indices(gather, n)?;
    rtx_tensor::numel(&[plan.rows(), f])?;
    Ok((heads, f / heads))
}

/// `(heads, channels)` of [`gather_head_dot`]: `a: [na, heads*c]`,
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
    let (na, f) = rank2("gather_head_dot", "a", a)?;
    let (nb, fb) = rank2("gather_head_dot", "b", b)?;
    if heads == 0 || f % heads != 0 || f != fb || a_idx.len() != b_idx.len() {
        return Err(mismatch(
            "gather_head_dot",
            format!(
                "a {a:?} with {} indices and b {b:?} with {} indices, {heads} heads \
                 (want a [Na, H*C], b [Nb, H*C], equal index counts, H > 0)",
                a_idx.len(),
                b_idx.len()
            ),
        ));
    }
    crate::reference::check_indices(a_idx, na)?;
    crate::reference::check_indices(b_idx, nb)?;
    rtx_tensor::numel(&[a_idx.len(), heads])?;
    Ok((heads, f / heads))
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

fn check_len<T>(data: &[T], shape: &[usize]) -> Result<()> {
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

// ---------------------------------------------------------------- kernels

/// `acc = a * b` (first) or `acc += a * b`, elementwise over a row.
#[inline]
pub fn axpy_row<T: Element>(acc: &mut [T], a: T, b: &[T], first: bool) {
    if first {
        for (o, &x) in acc.iter_mut().zip(b) {
            *o = a * x;
        }
    } else {
        for (o, &x) in acc.iter_mut().zip(b) {
            *o = *o + a * x;
        }
    }
}

/// One output row of `a @ b`: `out[j] = sum_p a_row[p] * b[p, j]` (canonical
/// order over `p`), `b` row-major `[a_row.len(), out.len()]`.
pub fn matmul_row<T: Element>(a_row: &[T], b: &[T], out: &mut [T], scratch: &mut Vec<T>) {
    let n = out.len();
    canonical_accumulate(a_row.len(), out, scratch, |p, acc, first| {
        axpy_row(acc, a_row[p], &b[p * n..(p + 1) * n], first);
    });
}

/// Term `p` of `a^T @ b` (`a: [k, m]`, `b: [k, n]`, `acc: [m, n]`): the outer
/// product of row `p` of `a` and row `p` of `b`, written or added.
pub fn outer_term<T: Element>(
    a: &[T],
    b: &[T],
    m: usize,
    n: usize,
    p: usize,
    acc: &mut [T],
    first: bool,
) {
    let ar = &a[p * m..(p + 1) * m];
    let br = &b[p * n..(p + 1) * n];
    for (i, &x) in ar.iter().enumerate() {
        axpy_row(&mut acc[i * n..(i + 1) * n], x, br, first);
    }
}

/// Columns per register tile of [`mm_block`].
const TJ: usize = 8;

#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn mm_tile<T: Element, const R: usize>(
    a: &[T],
    a_row: [usize; R],
    a_ps: usize,
    b: &[T],
    n: usize,
    j0: usize,
    p0: usize,
    p1: usize,
) -> [[T; TJ]; R] {
    // Callers pass `j0 + TJ <= n` (whole tiles only), so every `TJ`-slice
    // below has exactly `TJ` elements and the conversions cannot fail.
    const WHOLE_TILE: &str = "mm_tile is only called on whole tiles (j0 + TJ <= n)";
    let mut acc = [[T::ZERO; TJ]; R];
    let bp: &[T; TJ] = b[p0 * n + j0..p0 * n + j0 + TJ]
        .try_into()
        .expect(WHOLE_TILE);
    for r in 0..R {
        let av = a[a_row[r]];
        for jj in 0..TJ {
            acc[r][jj] = av * bp[jj];
        }
    }
    for p in p0 + 1..p1 {
        let bp: &[T; TJ] = b[p * n + j0..p * n + j0 + TJ].try_into().expect(WHOLE_TILE);
        let off = (p - p0) * a_ps;
        for r in 0..R {
            let av = a[a_row[r] + off];
            for jj in 0..TJ {
                acc[r][jj] = acc[r][jj] + av * bp[jj];
            }
        }
    }
    acc
}

/// The register-tiled product kernel of the reference and the CPU backend:
/// for output rows `i` in `rows` and every column `j < n`,
/// `out[(i - rows.start) * n + j] = sum_{p in p0..p1} A(i, p) * b[p * n + j]`,
/// summed left to right from the first term (one level-0 block of the
/// canonical order when `p1 - p0 <= CANONICAL_BLOCK`), where
/// `A(i, p) = a[a_base + i * a_rs + (p - p0) * a_ps]`. Per element this is
/// exactly the sequence of [`axpy_row`] calls, so the bits are the same.
#[allow(clippy::too_many_arguments)]
pub fn mm_block<T: Element>(
    a: &[T],
    a_base: usize,
    a_rs: usize,
    a_ps: usize,
    b: &[T],
    n: usize,
    rows: std::ops::Range<usize>,
    p0: usize,
    p1: usize,
    out: &mut [T],
) {
    if p1 <= p0 || n == 0 {
        out.fill(T::ZERO);
        return;
    }
    let full = n / TJ * TJ;
    let mut i = rows.start;
    while i < rows.end {
        let r4 = rows.end - i >= 4;
        for j0 in (0..full).step_by(TJ) {
            if r4 {
                let base = [0, 1, 2, 3].map(|r| a_base + (i + r) * a_rs);
                let acc = mm_tile::<T, 4>(a, base, a_ps, b, n, j0, p0, p1);
                for (r, row) in acc.iter().enumerate() {
                    let o = (i + r - rows.start) * n + j0;
                    out[o..o + TJ].copy_from_slice(row);
                }
            } else {
                let acc = mm_tile::<T, 1>(a, [a_base + i * a_rs], a_ps, b, n, j0, p0, p1);
                let o = (i - rows.start) * n + j0;
                out[o..o + TJ].copy_from_slice(&acc[0]);
            }
        }
        let rr = if r4 { 4 } else { 1 };
        for r in i..i + rr {
            for j in full..n {
                let ab = a_base + r * a_rs;
                let mut acc = a[ab] * b[p0 * n + j];
                for p in p0 + 1..p1 {
                    acc = acc + a[ab + (p - p0) * a_ps] * b[p * n + j];
                }
                out[(r - rows.start) * n + j] = acc;
            }
        }
        i += rr;
    }
}

/// A row-major transpose of `[r, c]` into `[c, r]`.
pub fn transpose2<T: Element>(x: &[T], r: usize, c: usize) -> Vec<T> {
    let mut out = vec![T::ZERO; x.len()];
    for i in 0..r {
        for j in 0..c {
            out[j * r + i] = x[i * c + j];
        }
    }
    out
}

/// Applies `op` to every element: `out[i] = op(x[i])`.
pub fn unary_slice<T: Element>(op: Unary, x: &[T], out: &mut [T]) {
    match op {
        Unary::Relu => {
            for (o, &v) in out.iter_mut().zip(x) {
                *o = if v > T::ZERO || v.is_nan() {
                    v
                } else {
                    T::ZERO
                };
            }
        }
        Unary::LeakyRelu(s) => {
            let s = T::from_f64(s);
            for (o, &v) in out.iter_mut().zip(x) {
                *o = if v > T::ZERO { v } else { v * s };
            }
        }
        Unary::Exp => {
            for (o, &v) in out.iter_mut().zip(x) {
                *o = v.exp();
            }
        }
        Unary::Scale(s) => {
            let s = T::from_f64(s);
            for (o, &v) in out.iter_mut().zip(x) {
                *o = v * s;
            }
        }
    }
}

/// The backward of `op` at `x` applied to the upstream gradient `g`:
/// relu: `g` where `x > 0`, else `+0.0`; leaky: `g` where `x > 0`, else
/// `g * slope`; exp: `g * exp(x)`; scale: `g * s`.
pub fn unary_backward_slice<T: Element>(op: Unary, x: &[T], g: &[T], out: &mut [T]) {
    match op {
        Unary::Relu => {
            for ((o, &v), &d) in out.iter_mut().zip(x).zip(g) {
                *o = if v > T::ZERO { d } else { T::ZERO };
            }
        }
        Unary::LeakyRelu(s) => {
            let s = T::from_f64(s);
            for ((o, &v), &d) in out.iter_mut().zip(x).zip(g) {
                *o = if v > T::ZERO { d } else { d * s };
            }
        }
        Unary::Exp => {
            for ((o, &v), &d) in out.iter_mut().zip(x).zip(g) {
                *o = d * v.exp();
            }
        }
        Unary::Scale(s) => {
            let s = T::from_f64(s);
            for (o, &d) in out.iter_mut().zip(g) {
                *o = d * s;
            }
        }
    }
}

/// `out[i] = a[i] op b[i]` over equal-length slices.
pub fn binary_slice<T: Element>(op: Binary, a: &[T], b: &[T], out: &mut [T]) {
    let it = out.iter_mut().zip(a).zip(b);
    match op {
        Binary::Add => it.for_each(|((o, &x), &y)| *o = x + y),
        Binary::Sub => it.for_each(|((o, &x), &y)| *o = x - y),
        Binary::Mul => it.for_each(|((o, &x), &y)| *o = x * y),
        Binary::Div => it.for_each(|((o, &x), &y)| *o = x / y),
    }
}

/// `y[i] = y[i] + alpha * x[i]`.
pub fn axpy_slice<T: Element>(y: &mut [T], alpha: T, x: &[T]) {
    for (o, &v) in y.iter_mut().zip(x) {
        *o = *o + alpha * v;
    }
}

/// Canonical sum of `c` products `a[i] * b[i]` (from the first product).
#[inline]
pub fn dot<T: Element>(a: &[T], b: &[T]) -> T {
    let c = a.len();
    if c == 0 {
        return T::ZERO;
    }
    if c <= CANONICAL_BLOCK {
        let mut s = a[0] * b[0];
        for i in 1..c {
            s = s + a[i] * b[i];
        }
        return s;
    }
    crate::order::canonical_sum(c, |i| a[i] * b[i]).unwrap_or(T::ZERO)
}

/// One row of [`head_dot`]: `out[h] = dot(a[h*c..(h+1)*c], b[h*c..(h+1)*c])`.
pub fn head_dot_row<T: Element>(a: &[T], b: &[T], c: usize, out: &mut [T]) {
    for (h, o) in out.iter_mut().enumerate() {
        *o = dot(&a[h * c..(h + 1) * c], &b[h * c..(h + 1) * c]);
    }
}

/// One row of [`head_scale`]: `out[h*c + j] = a[h*c + j] * s[h]`.
pub fn head_scale_row<T: Element>(a: &[T], s: &[T], c: usize, out: &mut [T]) {
    for (h, &sh) in s.iter().enumerate() {
        for (o, &v) in out[h * c..(h + 1) * c]
            .iter_mut()
            .zip(&a[h * c..(h + 1) * c])
        {
            *o = v * sh;
        }
    }
}

/// One row of a segment max: the maximum of `row(p)` over `positions`
/// (column-wise; first maximum kept, first NaN sticks; empty gives zeros).
pub fn segment_max_row<'a, T: Element>(
    positions: &[u32],
    row: impl Fn(u32) -> &'a [T],
    out: &mut [T],
) {
    let Some((&p0, rest)) = positions.split_first() else {
        out.fill(T::ZERO);
        return;
    };
    out.copy_from_slice(row(p0));
    for &p in rest {
        for (m, &v) in out.iter_mut().zip(row(p)) {
            // take v when it is larger or NaN (unordered), unless m is NaN already
            if !m.is_nan() && (v > *m || v.is_nan()) {
                *m = v;
            }
        }
    }
}

/// Work buffers of [`softmax_segment`] and [`softmax_backward_segment`], reused between rows.
#[derive(Debug, Default)]
pub struct SegmentScratch<T> {
    iota: Vec<u32>,
    vals: Vec<T>,
    red: Vec<T>,
    acc: Vec<T>,
}

impl<T: Element> SegmentScratch<T> {
    fn prepare(&mut self, k: usize, f: usize) {
        if self.iota.len() < k {
            self.iota = (0..k as u32).collect();
        }
        self.vals.clear();
        self.vals.resize(k * f, T::ZERO);
        self.acc.clear();
        self.acc.resize(f, T::ZERO);
    }
}

/// Softmax of one segment (the rows `x[p]` for `p` in `positions`), written
/// to `out` in segment order (`out[q]` belongs to `positions[q]`), bit-identical
/// to the composition in the [module docs](self).
pub fn softmax_segment<'a, T: Element>(
    positions: &[u32],
    x: impl Fn(u32) -> &'a [T],
    f: usize,
    out: &mut [T],
    s: &mut SegmentScratch<T>,
) {
    let k = positions.len();
    if k == 0 || f == 0 {
        return;
    }
    s.prepare(k, f);
    let mut m = std::mem::take(&mut s.red);
    m.clear();
    m.resize(f, T::ZERO);
    segment_max_row(positions, &x, &mut m);
    for (q, &p) in positions.iter().enumerate() {
        for ((e, &v), &mj) in s.vals[q * f..(q + 1) * f].iter_mut().zip(x(p)).zip(&m) {
            *e = (v - mj).exp();
        }
    }
    // the denominators: index_add of the segment into a zero row
    crate::order::add_row_sum(&mut s.acc, &s.iota[..k], &s.vals, &mut m);
    for (o, e) in out.chunks_exact_mut(f).zip(s.vals.chunks_exact(f)) {
        for ((o, &e), &d) in o.iter_mut().zip(e).zip(&s.acc) {
            *o = e / d;
        }
    }
    s.red = m;
}

/// The backward of [`softmax_segment`]: `dx = alpha * (g - (0 + sum(alpha * g)))`
/// over one segment, written to `out` in segment order.
pub fn softmax_backward_segment<'a, T: Element>(
    positions: &[u32],
    alpha: impl Fn(u32) -> &'a [T],
    g: impl Fn(u32) -> &'a [T],
    f: usize,
    out: &mut [T],
    s: &mut SegmentScratch<T>,
) {
    let k = positions.len();
    if k == 0 || f == 0 {
        return;
    }
    s.prepare(k, f);
    for (q, &p) in positions.iter().enumerate() {
        for ((t, &a), &d) in s.vals[q * f..(q + 1) * f]
            .iter_mut()
            .zip(alpha(p))
            .zip(g(p))
        {
            *t = a * d;
        }
    }
    crate::order::add_row_sum(&mut s.acc, &s.iota[..k], &s.vals, &mut s.red);
    for (o, &p) in out.chunks_exact_mut(f).zip(positions) {
        for (((o, &a), &d), &sum) in o.iter_mut().zip(alpha(p)).zip(g(p)).zip(&s.acc) {
            *o = a * (d - sum);
        }
    }
}

/// One output row of [`gather_scale_scatter`]: for the entries `positions`
/// of a plan row, `out = 0 + canonical_sum_q(x[gather[p_q]] * w[p_q, head])`,
/// bit-identical to `segment_sum(head_scale(index_select(x, gather), w))`.
/// An empty row is left as it is (zeros).
#[allow(clippy::too_many_arguments)]
pub fn gather_scale_scatter_row<T: Element>(
    positions: &[u32],
    gather: &[u32],
    x: &[T],
    w: &[T],
    heads: usize,
    c: usize,
    out: &mut [T],
    scratch: &mut Vec<T>,
) {
    let f = heads * c;
    if positions.is_empty() || f == 0 {
        return;
    }
    canonical_accumulate(positions.len(), out, scratch, |q, acc, first| {
        let p = positions[q] as usize;
        let g = gather[p] as usize;
        let xr = &x[g * f..(g + 1) * f];
        let wr = &w[p * heads..(p + 1) * heads];
        for (h, &wh) in wr.iter().enumerate() {
            let (o, v) = (&mut acc[h * c..(h + 1) * c], &xr[h * c..(h + 1) * c]);
            if first {
                for (o, &v) in o.iter_mut().zip(v) {
                    *o = v * wh;
                }
            } else {
                for (o, &v) in o.iter_mut().zip(v) {
                    *o = *o + v * wh;
                }
            }
        }
    });
    for o in out.iter_mut() {
        *o = T::ZERO + *o;
    }
}

/// The destination row of every entry of `plan` (the index list it was built from).
pub fn plan_indices(plan: &IndexPlan) -> Vec<u32> {
    let mut idx = vec![0u32; plan.len()];
    for r in 0..plan.rows() {
        for &p in plan.row(r) {
            idx[p as usize] = r as u32;
        }
    }
    idx
}

// ---------------------------------------------------------------- reference ops

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
    let mut out = vec![T::ZERO; x.len()];
    unary_slice(op, x, &mut out);
    out
}

/// The backward of `op` at `x` applied to `g`.
///
/// # Errors
/// [`Error::ShapeMismatch`] when the lengths differ.
pub fn unary_backward<T: Element>(op: Unary, x: &[T], g: &[T]) -> Result<Vec<T>> {
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

/// Column sums of a row-major `[n, f]`: `[f]` values, canonical order over rows.
pub fn sum_rows<T: Element>(x: &[T], n: usize, f: usize) -> Vec<T> {
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

/// Segment softmax of a row-major `[plan.len(), f]` (see the [module docs](self)).
pub fn segment_softmax<T: Element>(x: &[T], f: usize, plan: &IndexPlan) -> Vec<T> {
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
}
