//! The element-type cases: every op family in all four element types
//! (`bf16`, `f16`, `f32`, `f64`).
//!
//! For the half types the rule is the one of
//! [`reference`](mod@crate::reference): an arithmetic op is its `f32` op on
//! the inputs widened to `f32`, each output rounded once (round to nearest
//! even, `half`'s `from_f32`). So each case checks a half op twice: bit for
//! bit against the same backend's `f32` op on the widened inputs, rounded
//! here (holds for the dense ops too, whose `f32` results a backend may
//! compute its own way), and against the host reference (bit for bit for the
//! ops that are bit-exact across backends, within a rounding of the type for
//! the dense ones). Moves and selections (gather, permute, segment max,
//! untouched scatter rows) keep the input bits.

use super::harness::{assert_bits, assert_close, down, up};
use crate::Indices;
use crate::order::canonical_sum;
use crate::workload::{indices, splitmix64, values};
use crate::{
    BTensor, Backend, Binary, DType, Element, Error, IndexPlan, Unary, bf16, f16, ops, reference,
    round_f32, widen_f32,
};

/// `values` scaled by `scale`, rounded once to `T`.
fn data<T: Element>(seed: u64, n: usize, scale: f64) -> Vec<T> {
    values::<f64>(seed, n)
        .iter()
        .map(|&v| T::from_f64(v * scale))
        .collect()
}

/// The relative tolerance of a dense op of `T` against the reference: a few
/// roundings of the type.
fn tol<T: Element>() -> f64 {
    match T::DTYPE {
        DType::F64 => 1e-12,
        DType::F32 => 1e-6,
        DType::F16 => 4e-3,
        DType::BF16 => 3e-2,
    }
}

fn to64<T: Element>(v: &[T]) -> Vec<f64> {
    v.iter().map(|x| x.to_f64()).collect()
}

/// `a` widened to an `f32` tensor of `b` (exact for the half types).
fn wide<B: Backend, T: Element>(b: &B, a: &BTensor<B, T>) -> BTensor<B, f32> {
    up(b, &widen_f32(&down(b, a)), a.shape())
}

/// For a half type: `got` is bit for bit `f32_out` rounded once to `T`.
fn assert_rounded<B: Backend, T: Element>(
    b: &B,
    case: &str,
    got: &BTensor<B, T>,
    f32_out: &BTensor<B, f32>,
) {
    if T::DTYPE.is_half() {
        let want: Vec<T> = round_f32(&down(b, f32_out));
        assert_bits(
            &format!("{case} ({}) vs its f32 op, rounded once", T::DTYPE),
            &down(b, got),
            &want,
        );
    }
}

/// Runs `case` for each element type.
macro_rules! each_type {
    ($case:ident, $b:expr) => {
        $case::<B, bf16>($b);
        $case::<B, f16>($b);
        $case::<B, f32>($b);
        $case::<B, f64>($b);
    };
}

/// Gather, scatter-add (duplicates, untouched rows, a three-level hub) and
/// the segment reductions in every element type; the scatter-add also
/// against an independent sum: the canonical `f32` sum of the widened
/// values, added to the widened destination, rounded once.
pub fn typed_index_ops<B: Backend>(b: &B) {
    each_type!(index_case, b);
}

fn index_case<B: Backend, T: Element>(b: &B) {
    let ty = T::DTYPE;
    for f in [1usize, 3, 8, 33] {
        let rows = 41;
        let src: Vec<T> = data(2, rows * f, 4.0);
        let idx = [5u32, 5, 0, 40, 5, 17, 0, 40, 2];
        let got = down(
            b,
            &b.index_select(&up(b, &src, &[rows, f]), &idx)
                .expect("index_select"),
        );
        for (i, &r) in idx.iter().enumerate() {
            let want = &src[r as usize * f..(r as usize + 1) * f];
            assert_bits(
                &format!("gather {ty} f={f} row {i}"),
                &got[i * f..(i + 1) * f],
                want,
            );
        }
    }
    // scatter-add: a hub past two levels, other rows with a few entries,
    // untouched rows (a -0.0 and a NaN with a payload kept)
    let (rows, f) = (23usize, 3usize);
    let hub = 2 * 256 * 256 + 300;
    let mut idx: Vec<u32> = vec![7; hub];
    idx.extend(indices(9, 3000, rows, true).iter().map(|&r| r.min(15)));
    let src: Vec<T> = data(3, idx.len() * f, 2.0);
    let mut dst: Vec<T> = data(4, rows * f, 10.0);
    dst[20 * f] = T::from_f64(-0.0);
    dst[21 * f] = T::from_f64(f64::NAN);
    let plan = IndexPlan::new(&idx, rows).expect("plan");
    let mut d = up(b, &dst, &[rows, f]);
    b.index_add(&mut d, &idx, &up(b, &src, &[idx.len(), f]))
        .expect("index_add");
    let got = down(b, &d);
    let mut want = dst.clone();
    reference::index_add(&mut want, f, &plan, &src).expect("reference");
    assert_bits(&format!("scatter-add {ty} vs reference"), &got, &want);
    for r in 0..rows {
        let ps = plan.row(r);
        for j in 0..f {
            let i = r * f + j;
            if ps.is_empty() {
                assert_eq!(
                    got[i].to_bits_u64(),
                    dst[i].to_bits_u64(),
                    "scatter-add {ty}: untouched row {r} keeps its bits"
                );
                continue;
            }
            if ty.is_half() {
                let s = canonical_sum(ps.len(), |q| src[ps[q] as usize * f + j].to_f32())
                    .expect("non-empty");
                let w = T::from_f32(dst[i].to_f32() + s);
                assert_eq!(
                    got[i].to_bits_u64(),
                    w.to_bits_u64(),
                    "scatter-add {ty} row {r} col {j}: the f32 canonical sum rounded once"
                );
            }
        }
    }
    // segment max (bits kept) and sum, on signed data with ties
    let (rows, e, f) = (37usize, 1500usize, 4usize);
    let idx = indices(10, e, rows, true);
    let plan = IndexPlan::new(&idx, rows).expect("plan");
    let x: Vec<T> = data(11, e * f, 8.0);
    let xt = up(b, &x, &[e, f]);
    let m = b.segment_max(&xt, &plan).expect("segment_max");
    assert_bits(
        &format!("segment_max {ty}"),
        &down(b, &m),
        &ops::segment_max(&x, f, &plan),
    );
    let s = b.segment_sum(&xt, &plan).expect("segment_sum");
    let mut want = vec![T::ZERO; rows * f];
    reference::index_add(&mut want, f, &plan, &x).expect("reference");
    assert_bits(&format!("segment_sum {ty}"), &down(b, &s), &want);
}

/// The dense and elementwise ops in every element type: against the same
/// backend's `f32` op rounded once (half types), and against the reference.
pub fn typed_dense_ops<B: Backend>(b: &B) {
    each_type!(dense_case, b);
}

fn dense_case<B: Backend, T: Element>(b: &B) {
    let ty = T::DTYPE;
    let (m, k, n) = (19usize, 300usize, 9usize);
    let a: Vec<T> = data(50, m * k, 1.0);
    let c: Vec<T> = data(51, k * n, 1.0);
    let want = ops::matmul(&a, &[m, k], false, &c, &[k, n], false).expect("reference");
    let at = ops::transpose2(&a, m, k);
    let ct = ops::transpose2(&c, k, n);
    for (ta, tb) in [(false, false), (true, false), (false, true), (true, true)] {
        let (aa, ash) = if ta { (&at, [k, m]) } else { (&a, [m, k]) };
        let (cc, csh) = if tb { (&ct, [n, k]) } else { (&c, [k, n]) };
        let (x, y) = (up(b, aa, &ash), up(b, cc, &csh));
        let got = b.matmul(&x, ta, &y, tb).expect("matmul");
        let case = format!("matmul {ty} ({ta}, {tb})");
        if ty.is_half() {
            let w = b.matmul(&wide(b, &x), ta, &wide(b, &y), tb).expect("f32");
            assert_rounded(b, &case, &got, &w);
        }
        assert_close(&case, &to64(&down(b, &got)), &to64(&want), tol::<T>());
    }
    let (rows, f) = (64usize, 12usize);
    let x: Vec<T> = data(52, rows * f, 3.0);
    let g: Vec<T> = data(53, rows * f, 1.0);
    let (xt, gt) = (up(b, &x, &[rows, f]), up(b, &g, &[rows, f]));
    for op in [Unary::Relu, Unary::LeakyRelu(0.2), Unary::Scale(-0.37)] {
        let got = b.unary(op, &xt).expect("unary");
        let case = format!("{} {ty}", op.name());
        assert_bits(&case, &down(b, &got), &ops::unary(op, &x));
        assert_rounded(b, &case, &got, &b.unary(op, &wide(b, &xt)).expect("f32"));
        let got = b.unary_backward(op, &xt, &gt).expect("backward");
        let want = ops::unary_backward(op, &x, &g).expect("reference");
        assert_bits(&format!("{case} backward"), &down(b, &got), &want);
    }
    let e = b.unary(Unary::Exp, &xt).expect("exp");
    assert_rounded(
        b,
        "exp",
        &e,
        &b.unary(Unary::Exp, &wide(b, &xt)).expect("f32"),
    );
    let want = ops::unary(Unary::Exp, &x);
    assert_close(
        &format!("exp {ty}"),
        &to64(&down(b, &e)),
        &to64(&want),
        tol::<T>(),
    );
    let y: Vec<T> = data(54, rows * f, 2.0);
    let row: Vec<T> = data(55, f, 2.0);
    for op in [Binary::Add, Binary::Sub, Binary::Mul, Binary::Div] {
        let got = b.binary(op, &xt, &up(b, &y, &[rows, f])).expect("binary");
        let case = format!("{} {ty}", op.name());
        assert_bits(&case, &down(b, &got), &ops::binary(op, &x, &y, f, false));
        let got = b.binary(op, &xt, &up(b, &row, &[1, f])).expect("broadcast");
        let want = ops::binary(op, &x, &row, f, true);
        assert_bits(&format!("{case} broadcast"), &down(b, &got), &want);
    }
    let mut w = up(b, &y, &[rows, f]);
    b.axpy(&mut w, -1e-1, &xt).expect("axpy");
    if ty.is_half() {
        let mut w32 = wide(b, &up(b, &y, &[rows, f]));
        b.axpy(&mut w32, -1e-1, &wide(b, &xt)).expect("f32 axpy");
        assert_rounded(b, "axpy", &w, &w32);
    }
    let mut want = y.clone();
    reference::axpy(&mut want, -1e-1, &x);
    assert_close(
        &format!("axpy {ty}"),
        &to64(&down(b, &w)),
        &to64(&want),
        tol::<T>(),
    );
    // axpy_mixed: the same backend's axpy on the widened x, then one rounding
    let m0: Vec<T::Acc> = reference::convert::<T, T::Acc>(&y);
    let mut master = up(b, &m0, &[rows, f]);
    let mut low = up(b, &x, &[rows, f]);
    b.axpy_mixed(&mut master, -1e-1, &xt, &mut low)
        .expect("axpy_mixed");
    let mut want = up(b, &m0, &[rows, f]);
    let xw = b.convert::<T, T::Acc>(&xt).expect("convert");
    b.axpy(&mut want, -1e-1, &xw)
        .expect("axpy of the widened x");
    let want = down(b, &want);
    assert_bits(&format!("axpy_mixed master {ty}"), &down(b, &master), &want);
    let want_low = reference::convert::<T::Acc, T>(&want);
    assert_bits(&format!("axpy_mixed low {ty}"), &down(b, &low), &want_low);
    let mut short = up(b, &x[..f], &[1, f]);
    let err = b.axpy_mixed(&mut master, 1.0, &xt, &mut short);
    assert!(
        matches!(err, Err(Error::ShapeMismatch { .. })),
        "axpy_mixed {ty}: a low of another shape is an error, got {err:?}"
    );
    assert_bits(
        &format!("axpy_mixed {ty} after an error"),
        &down(b, &master),
        &want,
    );
    let big: Vec<T> = data(56, 1000 * 3, 1.0);
    let bt = up(b, &big, &[1000, 3]);
    let got = b.sum_rows(&bt).expect("sum_rows");
    assert_rounded(
        b,
        "sum_rows",
        &got,
        &b.sum_rows(&wide(b, &bt)).expect("f32"),
    );
    let want = ops::sum_rows(&big, 1000, 3);
    assert_close(
        &format!("sum_rows {ty}"),
        &to64(&down(b, &got)),
        &to64(&want),
        tol::<T>(),
    );
    let got = b
        .head_dot(&xt, &up(b, &y, &[rows, f]), 3)
        .expect("head_dot");
    let w32 = b
        .head_dot(&wide(b, &xt), &wide(b, &up(b, &y, &[rows, f])), 3)
        .expect("f32");
    assert_rounded(b, "head_dot", &got, &w32);
    let want = ops::head_dot(&x, &y, rows, 3, 4, rows);
    assert_close(
        &format!("head_dot {ty}"),
        &to64(&down(b, &got)),
        &to64(&want),
        tol::<T>(),
    );
    let s: Vec<T> = data(58, rows * 3, 2.0);
    let st = up(b, &s, &[rows, 3]);
    let got = b.head_scale(&xt, &st).expect("head_scale");
    let want = ops::head_scale(&x, &s, rows, 3, 4, rows);
    assert_bits(&format!("head_scale {ty}"), &down(b, &got), &want);
}

/// The fused ops in every element type: a half type's fused op keeps its
/// intermediates in `f32` and rounds once, so it is its `f32` op on the
/// widened inputs rounded once (bit for bit, same backend), and the
/// reference's within a rounding (bit for bit where the reference is).
pub fn typed_fused_ops<B: Backend>(b: &B) {
    each_type!(fused_case, b);
}

fn fused_case<B: Backend, T: Element>(b: &B) {
    let ty = T::DTYPE;
    let (rows, e, f) = (50usize, 2000usize, 4usize);
    let idx = indices(60, e, rows, true);
    let plan = IndexPlan::new(&idx, rows).expect("plan");
    let x: Vec<T> = data(61, e * f, 8.0);
    let xt = up(b, &x, &[e, f]);
    let alpha = b.segment_softmax(&xt, &plan).expect("segment_softmax");
    let a32 = b.segment_softmax(&wide(b, &xt), &plan).expect("f32");
    assert_rounded(b, "segment_softmax", &alpha, &a32);
    let want = ops::segment_softmax(&x, f, &plan);
    let case = format!("segment_softmax {ty}");
    assert_close(&case, &to64(&down(b, &alpha)), &to64(&want), tol::<T>());
    let g: Vec<T> = data(62, e * f, 1.0);
    let gt = up(b, &g, &[e, f]);
    let dz = b
        .segment_softmax_backward(&alpha, &gt, &plan)
        .expect("backward");
    let d32 = b
        .segment_softmax_backward(&wide(b, &alpha), &wide(b, &gt), &plan)
        .expect("f32");
    assert_rounded(b, "segment_softmax_backward", &dz, &d32);
    let want = ops::segment_softmax_backward(&down(b, &alpha), &g, f, &plan);
    let case = format!("segment_softmax_backward {ty}");
    assert_close(&case, &to64(&down(b, &dz)), &to64(&want), tol::<T>());

    let (n, rows, e, heads, c) = (40usize, 30usize, 3000usize, 4usize, 5usize);
    let f = heads * c;
    let gather = indices(70, e, n, false);
    let scatter = indices(71, e, rows, true);
    let plan = IndexPlan::new(&scatter, rows).expect("plan");
    let x: Vec<T> = data(72, n * f, 2.0);
    let w: Vec<T> = data(73, e * heads, 1.0);
    let (xt, wt) = (up(b, &x, &[n, f]), up(b, &w, &[e, heads]));
    let got = b
        .gather_scale_scatter(&xt, &gather, &wt, &plan)
        .expect("gather_scale_scatter");
    let w32 = b
        .gather_scale_scatter(&wide(b, &xt), &gather, &wide(b, &wt), &plan)
        .expect("f32");
    assert_rounded(b, "gather_scale_scatter", &got, &w32);
    let want = ops::gather_scale_scatter(&x, &gather, &w, heads, c, &plan);
    assert_bits(&format!("gather_scale_scatter {ty}"), &down(b, &got), &want);
    let y: Vec<T> = data(74, rows * f, 2.0);
    let yt = up(b, &y, &[rows, f]);
    let got = b
        .gather_head_dot(&xt, &gather, &yt, &scatter, heads)
        .expect("gather_head_dot");
    let w32 = b
        .gather_head_dot(&wide(b, &xt), &gather, &wide(b, &yt), &scatter, heads)
        .expect("f32");
    assert_rounded(b, "gather_head_dot", &got, &w32);
    let want = ops::gather_head_dot(&x, &gather, &y, &scatter, heads, c);
    let case = format!("gather_head_dot {ty}");
    assert_close(&case, &to64(&down(b, &got)), &to64(&want), tol::<T>());
    let got = b
        .gather_add(&xt, &gather, &yt, &scatter)
        .expect("gather_add");
    let want: Vec<T> = (0..e * f)
        .map(|i| {
            let (p, j) = (i / f, i % f);
            let s =
                x[gather[p] as usize * f + j].to_acc() + y[scatter[p] as usize * f + j].to_acc();
            T::from_acc(s)
        })
        .collect();
    assert_bits(&format!("gather_add {ty}"), &down(b, &got), &want);

    // add_head_scale and sum_bias_relu: the f32 composition of the
    // reference, rounded once (for f32 and f64 the composition itself)
    let (n, heads, c) = (33usize, 3usize, 4usize);
    let f = heads * c;
    let x: Vec<T> = data(80, n * f, 2.0);
    let a: Vec<T> = data(81, n * f, 2.0);
    let s: Vec<T> = data(82, n * heads, 2.0);
    let (xt, at, st) = (
        up(b, &x, &[n, f]),
        up(b, &a, &[n, f]),
        up(b, &s, &[n, heads]),
    );
    let got = b.add_head_scale(&xt, &at, &st).expect("add_head_scale");
    let want: Vec<T> = if ty.is_half() {
        let prod = ops::head_scale(&widen_f32(&a), &widen_f32(&s), n, heads, c, n);
        round_f32(&ops::binary(Binary::Add, &widen_f32(&x), &prod, f, false))
    } else {
        let prod = ops::head_scale(&a, &s, n, heads, c, n);
        ops::binary(Binary::Add, &x, &prod, f, false)
    };
    assert_bits(&format!("add_head_scale {ty}"), &down(b, &got), &want);
    let got = b
        .head_scale_sum_rows(&at, &st)
        .expect("head_scale_sum_rows");
    let w32 = b
        .head_scale_sum_rows(&wide(b, &at), &wide(b, &st))
        .expect("f32");
    assert_rounded(b, "head_scale_sum_rows", &got, &w32);
    let bias: Vec<Vec<T>> = (0..3).map(|i| data(90 + i, f, 3.0)).collect();
    let xs: Vec<Vec<T>> = (0..3).map(|i| data(95 + i, n * f, 3.0)).collect();
    let xts: Vec<_> = xs.iter().map(|v| up(b, v, &[n, f])).collect();
    let bts: Vec<_> = bias.iter().map(|v| up(b, v, &[1, f])).collect();
    let parts: Vec<_> = xts.iter().zip(&bts).collect();
    let got = b.sum_bias_relu(&parts).expect("sum_bias_relu");
    let want: Vec<T> = (0..n * f)
        .map(|i| {
            let j = i % f;
            let mut acc = xs[0][i].to_acc() + bias[0][j].to_acc();
            for p in 1..3 {
                acc = acc + (xs[p][i].to_acc() + bias[p][j].to_acc());
            }
            T::from_acc(ops::relu(acc))
        })
        .collect();
    assert_bits(&format!("sum_bias_relu {ty}"), &down(b, &got), &want);
}

/// Permutes, transposes and dim swaps of 2-byte elements (odd sizes
/// included) move the bits; `convert` between every pair of types rounds
/// once, `f32` to `bf16`/`f16` exactly as `half`'s `from_f32` (sampled over
/// all f32 bit patterns: NaNs, infinities, subnormals, ties).
pub fn typed_layout_and_convert<B: Backend>(b: &B) {
    each_type!(layout_case, b);
    let n = 1 << 16;
    let mut x: Vec<f32> = (0..n)
        .map(|i| f32::from_bits(splitmix64(5, i as u64) as u32))
        .collect();
    // ties of both types, the largest finite values and their neighbours
    x.extend([
        1.0 + f32::powi(2.0, -8),
        1.0 + 3.0 * f32::powi(2.0, -8),
        1.0 + f32::powi(2.0, -11),
        65504.0,
        65520.0,
        f32::MAX,
        f32::MIN_POSITIVE,
        f32::from_bits(1),
        -0.0,
        f32::INFINITY,
        f32::NEG_INFINITY,
        f32::from_bits(0xff80_0001),
    ]);
    let xt = up(b, &x, &[x.len()]);
    let got: Vec<bf16> = down(b, &b.convert(&xt).expect("convert"));
    let want: Vec<bf16> = x.iter().map(|&v| bf16::from_f32(v)).collect();
    assert_bits("convert f32 -> bf16 (half's from_f32)", &got, &want);
    let got: Vec<f16> = down(b, &b.convert(&xt).expect("convert"));
    let want: Vec<f16> = x.iter().map(|&v| f16::from_f32(v)).collect();
    assert_bits("convert f32 -> f16 (half's from_f32)", &got, &want);
    let h: Vec<bf16> = (0..=u16::MAX).map(bf16::from_bits).collect();
    let got: Vec<f32> = down(b, &b.convert(&up(b, &h, &[h.len()])).expect("convert"));
    let want: Vec<f32> = h.iter().map(|v| v.to_f32()).collect();
    assert_bits("convert bf16 -> f32 (exact)", &got, &want);
    let h: Vec<f16> = (0..=u16::MAX).map(f16::from_bits).collect();
    let got: Vec<f32> = down(b, &b.convert(&up(b, &h, &[h.len()])).expect("convert"));
    let want: Vec<f32> = h.iter().map(|v| v.to_f32()).collect();
    assert_bits("convert f16 -> f32 (exact)", &got, &want);
    let d: Vec<f64> = values(6, 1000);
    let got: Vec<bf16> = down(b, &b.convert(&up(b, &d, &[1000])).expect("convert"));
    assert_bits(
        "convert f64 -> bf16",
        &got,
        &reference::convert::<f64, bf16>(&d),
    );
    let got: Vec<f32> = down(b, &b.convert(&up(b, &d, &[1000])).expect("convert"));
    assert_bits(
        "convert f64 -> f32",
        &got,
        &reference::convert::<f64, f32>(&d),
    );
    convert_all_case::<B, f32, bf16>(b);
    convert_all_case::<B, f32, f16>(b);
    convert_all_case::<B, bf16, f32>(b);
    convert_all_case::<B, f16, f32>(b);
    convert_all_case::<B, f64, bf16>(b);
    convert_all_case::<B, f32, f32>(b);
}

/// `convert_all` over tensors of many sizes (empty ones, one element, a
/// block's chunk and one past it, several chunks, 2-D) gives each tensor
/// its own `convert`, the reference's bits, in order and in its shape.
fn convert_all_case<B: Backend, T: Element, U: Element>(b: &B) {
    let shapes: [&[usize]; 9] = [
        &[0],
        &[1],
        &[4095],
        &[4096],
        &[4097],
        &[3, 0],
        &[3 * 4096 + 5],
        &[64, 129],
        &[7, 3],
    ];
    let hosts: Vec<Vec<T>> = shapes
        .iter()
        .enumerate()
        .map(|(i, s)| {
            // raw bit patterns for the narrow types' inputs (NaNs, ties,
            // subnormals), spread values otherwise
            let n: usize = s.iter().product();
            (0..n)
                .map(|j| {
                    let bits = splitmix64(40 + i as u64, j as u64);
                    T::from_f64(match T::DTYPE.size() {
                        4 => f64::from(f32::from_bits(bits as u32)),
                        _ => (bits % 20_001) as f64 / 997.0 - 10.0,
                    })
                })
                .collect()
        })
        .collect();
    let tensors: Vec<BTensor<B, T>> = hosts.iter().zip(shapes).map(|(h, s)| up(b, h, s)).collect();
    let refs: Vec<&BTensor<B, T>> = tensors.iter().collect();
    let got = b.convert_all::<T, U>(&refs).expect("convert_all");
    let (ty, uy) = (T::DTYPE, U::DTYPE);
    assert_eq!(
        got.len(),
        shapes.len(),
        "convert_all {ty} -> {uy}: one output per input"
    );
    for ((g, h), s) in got.iter().zip(&hosts).zip(shapes) {
        assert_eq!(g.shape(), s, "convert_all {ty} -> {uy}: the input's shape");
        assert_bits(
            &format!("convert_all {ty} -> {uy} {s:?}"),
            &down(b, g),
            &reference::convert::<T, U>(h),
        );
    }
    let none = b.convert_all::<T, U>(&[]).expect("convert_all of nothing");
    assert!(none.is_empty(), "convert_all {ty} -> {uy} of no tensor");
}

fn layout_case<B: Backend, T: Element>(b: &B) {
    let ty = T::DTYPE;
    for shape in [
        vec![3usize, 5, 7],
        vec![2, 9, 1, 3],
        vec![33, 17],
        vec![4, 3, 2, 5],
    ] {
        let numel: usize = shape.iter().product();
        let x: Vec<T> = data(30, numel, 5.0);
        let xt = up(b, &x, &shape);
        let r = shape.len();
        let mut perm: Vec<usize> = (0..r).collect();
        // every rotation and the reversal
        let mut perms: Vec<Vec<usize>> = (0..r)
            .map(|s| (0..r).map(|i| (i + s) % r).collect())
            .collect();
        perm.reverse();
        perms.push(perm);
        for p in perms {
            let got = b.permute(&xt, &p).expect("permute");
            let want = rtx_tensor::permute_host(&x, &shape, &p).expect("host permute");
            assert_bits(
                &format!("permute {ty} {shape:?} by {p:?}"),
                &down(b, &got),
                &want,
            );
        }
        let got = b.swap_dims(&xt, 0, r - 1).expect("swap_dims");
        let mut p: Vec<usize> = (0..r).collect();
        p.swap(0, r - 1);
        let want = rtx_tensor::permute_host(&x, &shape, &p).expect("host permute");
        assert_bits(&format!("swap_dims {ty} {shape:?}"), &down(b, &got), &want);
    }
    let x: Vec<T> = data(31, 100, 3.0);
    let same: Vec<T> = down(b, &b.convert(&up(b, &x, &[10, 10])).expect("convert"));
    assert_bits(&format!("convert {ty} -> {ty}"), &same, &x);
}

/// In every element type: each op given a list held by the backend is
/// bit-identical to the op given the host list; an out-of-range index is an error
/// naming it, before any work (the destination keeps its bits); empty lists
/// and zero sizes give their shapes (sums over nothing are `+0.0`).
pub fn typed_index_lists_and_errors<B: Backend>(b: &B) {
    each_type!(lists_case, b);
}

fn lists_case<B: Backend, T: Element>(b: &B) {
    let ty = T::DTYPE;
    let (n, rows, e, heads, c) = (60usize, 45usize, 5000usize, 2usize, 3usize);
    let f = heads * c;
    let gather = indices(40, e, n, false);
    let scatter = indices(41, e, rows, true);
    let plan = IndexPlan::new(&scatter, rows).expect("plan");
    let (gi, si) = (
        b.index_from_host(&gather).expect("list"),
        b.index_from_host(&scatter).expect("list"),
    );
    let x: Vec<T> = data(42, n * f, 2.0);
    let xt = up(b, &x, &[n, f]);
    let msg = b.index_select(&xt, &gather).expect("gather");
    let twin = |case: &str, got: &BTensor<B, T>, want: &BTensor<B, T>| {
        assert_bits(
            &format!("{case} {ty}: backend list vs host list"),
            &down(b, got),
            &down(b, want),
        );
    };
    twin(
        "index_select",
        &b.index_select(&xt, Indices::held(&gi))
            .expect("backend list"),
        &msg,
    );
    let dst: Vec<T> = data(43, rows * f, 1.0);
    let (mut d1, mut d2) = (up(b, &dst, &[rows, f]), up(b, &dst, &[rows, f]));
    b.index_add(&mut d1, Indices::held(&si), &msg)
        .expect("backend list");
    b.index_add(&mut d2, &scatter, &msg).expect("host");
    twin("index_add", &d1, &d2);
    let s = b
        .segment_sum(&msg, Indices::held(&si).with_rows(rows))
        .expect("backend list");
    twin(
        "segment_sum",
        &s,
        &b.segment_sum(&msg, &plan).expect("host"),
    );
    let m = b
        .segment_max(&msg, Indices::held(&si).with_rows(rows))
        .expect("backend list");
    twin(
        "segment_max",
        &m,
        &b.segment_max(&msg, &plan).expect("host"),
    );
    let logits: Vec<T> = data(44, e * heads, 3.0);
    let lt = up(b, &logits, &[e, heads]);
    let alpha = b
        .segment_softmax(&lt, Indices::held(&si).with_rows(rows))
        .expect("backend list");
    twin(
        "segment_softmax",
        &alpha,
        &b.segment_softmax(&lt, &plan).expect("host"),
    );
    let g: Vec<T> = data(45, e * heads, 1.0);
    let gt = up(b, &g, &[e, heads]);
    let got = b
        .segment_softmax_backward(&alpha, &gt, Indices::held(&si).with_rows(rows))
        .expect("backend list");
    let want = b
        .segment_softmax_backward(&alpha, &gt, &plan)
        .expect("host");
    twin("segment_softmax_backward", &got, &want);
    let got = b
        .gather_scale_scatter(
            &xt,
            Indices::held(&gi),
            &alpha,
            Indices::held(&si).with_rows(rows),
        )
        .expect("backend list");
    let want = b
        .gather_scale_scatter(&xt, &gather, &alpha, &plan)
        .expect("host");
    twin("gather_scale_scatter", &got, &want);
    let yt = up(b, &data::<T>(46, rows * f, 2.0), &[rows, f]);
    let got = b
        .gather_add(&xt, Indices::held(&gi), &yt, Indices::held(&si))
        .expect("backend list");
    twin(
        "gather_add",
        &got,
        &b.gather_add(&xt, &gather, &yt, &scatter).expect("host"),
    );
    let got = b
        .gather_head_dot(&xt, Indices::held(&gi), &yt, Indices::held(&si), heads)
        .expect("backend list");
    let want = b
        .gather_head_dot(&xt, &gather, &yt, &scatter, heads)
        .expect("host");
    twin("gather_head_dot", &got, &want);

    // errors before work: the destination keeps its bits
    let mut bad = scatter.clone();
    bad[77] = rows as u32;
    let mut d = up(b, &dst, &[rows, f]);
    assert!(
        matches!(
            b.index_add(&mut d, &bad, &msg),
            Err(Error::IndexOutOfRange { position: 77, .. })
        ),
        "index_add {ty}: an out-of-range index"
    );
    assert_bits(
        &format!("index_add {ty}: untouched after the error"),
        &down(b, &d),
        &dst,
    );
    let mut bad = gather.clone();
    bad[5] = n as u32;
    assert!(
        matches!(
            b.index_select(&xt, &bad),
            Err(Error::IndexOutOfRange { position: 5, .. })
        ),
        "index_select {ty}: an out-of-range index"
    );

    // empty lists and zero sizes
    let none = b.index_select(&xt, &[]).expect("empty gather");
    assert_eq!(none.shape(), &[0, f]);
    let mut d = up(b, &dst, &[rows, f]);
    b.index_add(&mut d, &[], &up(b, &Vec::<T>::new(), &[0, f]))
        .expect("empty scatter");
    assert_bits(&format!("empty scatter {ty}"), &down(b, &d), &dst);
    let z = |shape: &[usize]| b.zeros::<T>(shape).expect("zeros");
    let got = b
        .matmul(&z(&[3, 0]), false, &z(&[0, 4]), false)
        .expect("k = 0");
    assert_eq!(got.shape(), &[3, 4]);
    let zero_bits = T::ZERO.to_bits_u64();
    assert!(
        down(b, &got).iter().all(|v| v.to_bits_u64() == zero_bits),
        "matmul {ty}: k = 0 gives +0.0"
    );
    let empty = IndexPlan::new(&[], 4).expect("plan");
    let s = b
        .segment_sum(&z(&[0, 3]), &empty)
        .expect("empty segment_sum");
    assert_eq!(s.shape(), &[4, 3]);
    assert!(
        down(b, &s).iter().all(|v| v.to_bits_u64() == zero_bits),
        "segment_sum {ty}: empty segments are +0.0"
    );
    let s = b.sum_rows(&z(&[0, 5])).expect("sum_rows of no rows");
    assert!(
        down(b, &s).iter().all(|v| v.to_f64() == 0.0),
        "sum_rows {ty}: no rows gives zeros"
    );
}
