//! The row kernels shared by the reference and the CPU backend: one output
//! row (or tile, or segment) at a time, in the fixed order of the
//! [module docs](super), so a backend that runs them on any thread gets the
//! reference's bits.

use super::kind::{Binary, Unary};
use crate::order::{CANONICAL_BLOCK, canonical_accumulate};
use crate::{Element, IndexPlan};

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

/// Relu of one value: `v` when positive or NaN (a NaN is kept), else `+0.0`.
pub fn relu<T: Element>(v: T) -> T {
    if v > T::ZERO || v.is_nan() {
        v
    } else {
        T::ZERO
    }
}

/// Applies `op` to every element: `out[i] = op(x[i])`.
pub fn unary_slice<T: Element>(op: Unary, x: &[T], out: &mut [T]) {
    match op {
        Unary::Relu => {
            for (o, &v) in out.iter_mut().zip(x) {
                *o = relu(v);
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

/// `x + y`, where an addition of two NaNs keeps `x`'s: Rust leaves the
/// payload of such a sum open, and an optimized build may swap the operands
/// of an addition, so two loops computing the same sums could keep different
/// NaNs. Every host addition that fused and composed paths must agree on
/// goes through here.
#[inline]
pub fn add<T: Element>(x: T, y: T) -> T {
    if x.is_nan() { x } else { x + y }
}

/// `out[i] = a[i] op b[i]` over equal-length slices (`Add` is [`add`]).
pub fn binary_slice<T: Element>(op: Binary, a: &[T], b: &[T], out: &mut [T]) {
    let it = out.iter_mut().zip(a).zip(b);
    match op {
        Binary::Add => it.for_each(|((o, &x), &y)| *o = add(x, y)),
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

/// One row of [`head_dot`](crate::DenseOps::head_dot): `out[h] = dot(a[h*c..(h+1)*c], b[h*c..(h+1)*c])`.
///
/// Rows of 2, 4 or 8 heads of at most [`CANONICAL_BLOCK`] channels run
/// their sums side by side (one independent chain of additions per
/// head, so the CPU overlaps them); each head's sum is still [`dot`]'s
/// sequence of operations, so the bits are the same.
pub fn head_dot_row<T: Element>(a: &[T], b: &[T], c: usize, out: &mut [T]) {
    let one_block = (1..=CANONICAL_BLOCK).contains(&c);
    match out.len() {
        4 if one_block => head_dot_interleaved::<T, 4>(a, b, c, out),
        8 if one_block => head_dot_interleaved::<T, 8>(a, b, c, out),
        2 if one_block => head_dot_interleaved::<T, 2>(a, b, c, out),
        _ => {
            for (h, o) in out.iter_mut().enumerate() {
                *o = dot(&a[h * c..(h + 1) * c], &b[h * c..(h + 1) * c]);
            }
        }
    }
}

/// [`head_dot_row`] for `H` heads of `1 <= c <= CANONICAL_BLOCK` channels:
/// per head `s = a0*b0; s = s + a1*b1; ...` (one level-0 block, as [`dot`]).
#[inline(always)]
fn head_dot_interleaved<T: Element, const H: usize>(a: &[T], b: &[T], c: usize, out: &mut [T]) {
    let ah: [&[T]; H] = std::array::from_fn(|h| &a[h * c..(h + 1) * c]);
    let bh: [&[T]; H] = std::array::from_fn(|h| &b[h * c..(h + 1) * c]);
    let mut s: [T; H] = std::array::from_fn(|h| ah[h][0] * bh[h][0]);
    for j in 1..c {
        for h in 0..H {
            s[h] = s[h] + ah[h][j] * bh[h][j];
        }
    }
    out.copy_from_slice(&s);
}

/// One row of [`head_scale`](crate::DenseOps::head_scale): `out[h*c + j] = a[h*c + j] * s[h]`.
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
pub struct SegmentScratch<T: Element> {
    iota: Vec<u32>,
    vals: Vec<T>,
    red: Vec<T>,
    acc: Vec<T>,
    sum: Vec<T::Acc>,
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
/// to the composition in the [module docs](super).
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
    crate::order::add_row_sum(&mut s.acc, &s.iota[..k], &s.vals, &mut s.sum);
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
    crate::order::add_row_sum(&mut s.acc, &s.iota[..k], &s.vals, &mut s.sum);
    for (o, &p) in out.chunks_exact_mut(f).zip(positions) {
        for (((o, &a), &d), &sum) in o.iter_mut().zip(alpha(p)).zip(g(p)).zip(&s.acc) {
            *o = a * (d - sum);
        }
    }
}

/// One output row of [`gather_scale_scatter`](crate::FusedOps::gather_scale_scatter): for the entries `positions`
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workload::values;

    /// The interleaved head sums are `dot`'s bits, for every head count
    /// (interleaved or not) and channel counts around the block size.
    #[test]
    fn head_dot_row_is_dot_per_head() {
        for h in 1..=9usize {
            for c in [0usize, 1, 3, 16, 255, 256, 257] {
                let a: Vec<f32> = values(h as u64, h * c);
                let b: Vec<f32> = values(100 + c as u64, h * c);
                let mut out = vec![f32::NAN; h];
                head_dot_row(&a, &b, c, &mut out);
                for (hh, o) in out.iter().enumerate() {
                    let want = dot(&a[hh * c..(hh + 1) * c], &b[hh * c..(hh + 1) * c]);
                    assert_eq!(o.to_bits(), want.to_bits(), "h {h} c {c} head {hh}");
                }
                if c <= CANONICAL_BLOCK && c > 0 {
                    // and dot is the left-to-right sum from the first product
                    let seq = (1..c).fold(a[0] * b[0], |s, j| s + a[j] * b[j]);
                    assert_eq!(out[0].to_bits(), seq.to_bits(), "h {h} c {c}");
                }
            }
        }
    }
}
