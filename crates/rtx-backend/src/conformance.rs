//! The conformance suite: every op, every backend, the same expectations.
//!
//! Each function takes any [`Backend`] and panics with a message naming the
//! case on the first mismatch; a backend's tests call them one by one (so
//! each shows as its own test) or all through [`run_all`]. Expectations come
//! from the single-threaded host [`reference`](mod@crate::reference), naive loops
//! written here, or hand-computed values, never from the backend under test.
//! Float results are compared bit for bit unless a case says otherwise.

use crate::order::{CANONICAL_BLOCK, canonical_levels};
use crate::{BTensor, Backend, Binary, Element, Error, IndexPlan, Unary, ops, reference};

pub use crate::workload::{indices, splitmix64, value, values};

fn bits<T: Element>(v: &[T]) -> Vec<u64> {
    v.iter().map(|x| x.to_bits_u64()).collect()
}

fn assert_bits<T: Element>(case: &str, got: &[T], want: &[T]) {
    assert_eq!(got.len(), want.len(), "{case}: length");
    if let Some(i) = (0..got.len()).find(|&i| got[i].to_bits_u64() != want[i].to_bits_u64()) {
        panic!(
            "{case}: element {i}: got {:?}, want {:?} (bit-exact comparison)",
            got[i], want[i]
        );
    }
}

fn up<B: Backend, T: Element>(b: &B, data: &[T], shape: &[usize]) -> BTensor<B, T> {
    b.upload(data, shape).expect("upload")
}

fn down<B: Backend, T: Element>(b: &B, t: &BTensor<B, T>) -> Vec<T> {
    b.download(t).expect("download")
}

/// Gather with repeated and unordered indices, several feature widths.
pub fn gather_with_repeats<B: Backend>(b: &B) {
    for f in [1usize, 3, 4, 64, 257] {
        let rows = 37;
        let src: Vec<f32> = values(2, rows * f);
        let idx = [5u32, 5, 0, 36, 5, 17, 0, 36, 2];
        let out = b
            .index_select(&up(b, &src, &[rows, f]), &idx)
            .expect("index_select");
        assert_eq!(out.shape(), &[idx.len(), f]);
        assert!(out.layout().is_contiguous());
        let got = down(b, &out);
        for (i, &r) in idx.iter().enumerate() {
            assert_bits(
                &format!("gather f={f} row {i}"),
                &got[i * f..(i + 1) * f],
                &src[r as usize * f..(r as usize + 1) * f],
            );
        }
    }
}

/// Scatter-add with duplicates; untouched rows keep their bits (-0.0, NaN).
pub fn scatter_duplicates_untouched<B: Backend>(b: &B) {
    for f in [1usize, 5, 64] {
        let rows = 9;
        let mut dst: Vec<f32> = values(7, rows * f);
        dst[4 * f] = -0.0;
        dst[6 * f] = f32::from_bits(0x7fc0_1234); // NaN with a payload
        let idx = [2u32, 0, 2, 8, 2, 0];
        let src: Vec<f32> = values(3, idx.len() * f);
        let mut d = up(b, &dst, &[rows, f]);
        b.index_add(&mut d, &idx, &up(b, &src, &[idx.len(), f]))
            .expect("index_add");
        let got = down(b, &d);
        let mut want = dst.clone();
        for r in 0..rows {
            let pos: Vec<usize> = idx
                .iter()
                .enumerate()
                .filter(|&(_, &x)| x as usize == r)
                .map(|(p, _)| p)
                .collect();
            for j in 0..f {
                if let Some((&p0, rest)) = pos.split_first() {
                    let s = rest
                        .iter()
                        .fold(src[p0 * f + j], |s, &p| s + src[p * f + j]);
                    want[r * f + j] = dst[r * f + j] + s;
                }
            }
        }
        assert_bits(&format!("scatter f={f}"), &got, &want);
        for r in [1usize, 3, 4, 5, 6, 7] {
            assert_bits(
                &format!("untouched row {r} f={f}"),
                &got[r * f..(r + 1) * f],
                &dst[r * f..(r + 1) * f],
            );
        }
    }
}

/// `<S x, y> == <x, S^T y>` exactly, with small-integer data (all sums exact).
pub fn adjoint_identity<B: Backend>(b: &B) {
    let (rows, e, f) = (50, 700, 6);
    let idx = indices(11, e, rows, true);
    let x: Vec<f64> = (0..rows * f)
        .map(|i| ((splitmix64(12, i as u64) % 17) as f64) - 8.0)
        .collect();
    let y: Vec<f64> = (0..e * f)
        .map(|i| ((splitmix64(13, i as u64) % 17) as f64) - 8.0)
        .collect();
    let sx = down(
        b,
        &b.index_select(&up(b, &x, &[rows, f]), &idx)
            .expect("index_select"),
    );
    let mut sty = b.zeros::<f64>(&[rows, f]).expect("zeros");
    b.index_add(&mut sty, &idx, &up(b, &y, &[e, f]))
        .expect("index_add");
    let sty = down(b, &sty);
    let lhs: f64 = sx.iter().zip(&y).map(|(a, c)| a * c).sum();
    let rhs: f64 = x.iter().zip(&sty).map(|(a, c)| a * c).sum();
    assert_eq!(lhs, rhs, "adjoint identity <Sx,y> == <x,S^T y>");
}

/// One row receives most contributions (deep canonical tree): bit-identical
/// to the reference, and within the order's error bound of the exact sum.
///
/// The bound (see [`order`](crate::order)): every value passes through at
/// most `d = (B − 1)·L + 1` additions (`L` = [`canonical_levels`] of the
/// row's length, plus the one into the destination), so the error is at most
/// `γ_d · (|dst| + Σ|v|)` with `γ_d = d·u / (1 − d·u)`, `u = EPSILON / 2`:
/// `d·u·(|dst| + Σ|v|)` to first order.
pub fn hub_heavy<B: Backend>(b: &B) {
    let (rows, e, f) = (64, 200_000, 3);
    let mut idx = indices(21, e, rows, false);
    for (i, x) in idx.iter_mut().enumerate() {
        if i % 10 != 0 {
            *x = 3;
        }
    }
    let src: Vec<f32> = values(3, e * f);
    let dst0: Vec<f32> = values(8, rows * f);
    let mut d = up(b, &dst0, &[rows, f]);
    b.index_add(&mut d, &idx, &up(b, &src, &[e, f]))
        .expect("index_add");
    let got = down(b, &d);
    let plan = IndexPlan::new(&idx, rows).expect("plan");
    let mut want = dst0.clone();
    reference::index_add(&mut want, f, &plan, &src).expect("reference");
    assert_bits("hub-heavy vs canonical reference", &got, &want);
    let hub = plan.row(3);
    let levels = canonical_levels(hub.len());
    assert_eq!(levels, 3, "the hub row must make a three-level tree");
    let d = ((CANONICAL_BLOCK - 1) * levels + 1) as f64;
    let u = f64::from(f32::EPSILON) / 2.0;
    let gamma = d * u / (1.0 - d * u);
    for j in 0..f {
        // Exact in f64: every value is a multiple of 2^-23 in [-1, 1), and
        // 200,001 of them sum to less than 2^18 in magnitude: 41 bits.
        let terms = || {
            std::iter::once(dst0[3 * f + j])
                .chain(hub.iter().map(|&p| src[p as usize * f + j]))
                .map(f64::from)
        };
        let exact: f64 = terms().sum();
        let mag: f64 = terms().map(f64::abs).sum();
        let tol = gamma * mag;
        let err = (f64::from(got[3 * f + j]) - exact).abs();
        assert!(
            err <= tol,
            "hub row col {j}: error {err} above the bound {tol} \
             (((B-1)*L + 1) = {d} additions, L = {levels})"
        );
    }
}

/// Out-of-range indices are errors naming position, value and bound; the
/// destination is untouched.
pub fn out_of_range<B: Backend>(b: &B) {
    let f = 4;
    let dst0: Vec<f32> = values(5, 3 * f);
    let mut d = up(b, &dst0, &[3, f]);
    let src = up(b, &values::<f32>(6, 4 * f), &[4, f]);
    let e = b
        .index_add(&mut d, &[0, 2, 3, 1], &src)
        .expect_err("index 3 of 3 rows must fail");
    assert!(
        matches!(
            e,
            Error::IndexOutOfRange {
                position: 2,
                value: 3,
                bound: 3
            }
        ),
        "got {e}"
    );
    assert_bits("dst untouched after error", &down(b, &d), &dst0);
    let e = b.index_select(&d, &[1, 7]).expect_err("index 7 must fail");
    assert!(
        matches!(
            e,
            Error::IndexOutOfRange {
                position: 1,
                value: 7,
                bound: 3
            }
        ),
        "got {e}"
    );
    let e = b
        .index_add(&mut d, &[0], &src)
        .expect_err("wrong src rows must fail");
    assert!(matches!(e, Error::ShapeMismatch { .. }), "got {e}");
    assert_bits("dst untouched after shape error", &down(b, &d), &dst0);
}

/// Empty index lists: gather gives `[0, F]`, scatter changes nothing.
pub fn empty_indices<B: Backend>(b: &B) {
    let dst0: Vec<f32> = values(5, 6);
    let t = up(b, &dst0, &[3, 2]);
    let g = b.index_select(&t, &[]).expect("empty gather");
    assert_eq!(g.shape(), &[0, 2]);
    assert!(down(b, &g).is_empty());
    let mut d = up(b, &dst0, &[3, 2]);
    b.index_add(&mut d, &[], &b.zeros::<f32>(&[0, 2]).expect("zeros"))
        .expect("empty scatter");
    assert_bits("empty scatter", &down(b, &d), &dst0);
}

/// Scatter-add bit-identical to the reference over several workloads and widths, f32 and f64.
pub fn scatter_matches_reference<B: Backend>(b: &B) {
    for (rows, e, f, hub) in [
        (1, 1000, 7, false),
        (1000, 5000, 1, true),
        (300, 40_000, 33, true),
        (5000, 3000, 64, false),
    ] {
        let idx = indices(1, e, rows, hub);
        let plan = IndexPlan::new(&idx, rows).expect("plan");
        let src: Vec<f32> = values(3, e * f);
        let dst0: Vec<f32> = values(4, rows * f);
        let mut d = up(b, &dst0, &[rows, f]);
        b.index_add_planned(&mut d, &plan, &up(b, &src, &[e, f]))
            .expect("index_add");
        let mut want = dst0.clone();
        reference::index_add(&mut want, f, &plan, &src).expect("reference");
        assert_bits(
            &format!("scatter f32 rows={rows} e={e} f={f}"),
            &down(b, &d),
            &want,
        );
        let src64: Vec<f64> = values(3, e * f);
        let mut d = b.zeros::<f64>(&[rows, f]).expect("zeros");
        b.index_add(&mut d, &idx, &up(b, &src64, &[e, f]))
            .expect("index_add f64");
        let mut want = vec![0.0f64; rows * f];
        reference::index_add(&mut want, f, &plan, &src64).expect("reference");
        assert_bits(
            &format!("scatter f64 rows={rows} e={e} f={f}"),
            &down(b, &d),
            &want,
        );
    }
}

/// The same inputs twice give identical bits.
pub fn repeatable<B: Backend>(b: &B) {
    let (rows, e, f) = (100, 50_000, 16);
    let idx = indices(1, e, rows, true);
    let src = up(b, &values::<f32>(3, e * f), &[e, f]);
    let run = || {
        let mut d = b.zeros::<f32>(&[rows, f]).expect("zeros");
        b.index_add(&mut d, &idx, &src).expect("index_add");
        bits(&down(b, &d))
    };
    assert_eq!(run(), run(), "two identical scatter-adds differ");
}

/// Many threads using one backend at once get the reference results.
pub fn concurrent_use<B: Backend>(b: &B) {
    std::thread::scope(|s| {
        for t in 0..4u64 {
            s.spawn(move || {
                let (rows, e, f) = (200, 10_000, 8);
                let idx = indices(30 + t, e, rows, true);
                let src: Vec<f32> = values(40 + t, e * f);
                let mut d = b.zeros::<f32>(&[rows, f]).expect("zeros");
                b.index_add(&mut d, &idx, &up(b, &src, &[e, f]))
                    .expect("index_add");
                let mut want = vec![0.0f32; rows * f];
                reference::index_add(
                    &mut want,
                    f,
                    &IndexPlan::new(&idx, rows).expect("plan"),
                    &src,
                )
                .expect("reference");
                assert_bits(&format!("thread {t}"), &down(b, &d), &want);
                let g = down(
                    b,
                    &b.index_select(&up(b, &want, &[rows, f]), &idx)
                        .expect("gather"),
                );
                assert_bits(
                    &format!("thread {t} gather"),
                    &g,
                    &reference::index_select(&want, rows, f, &idx).expect("ref"),
                );
            });
        }
    });
}

/// The field bug: `[2,3,4]` swap(0,2) gives `b[1][0][0] == 1.0`, every element checked.
pub fn swap_dims_2x3x4<B: Backend>(b: &B) {
    let a: Vec<f32> = (0..24).map(|x| x as f32).collect();
    let t = b
        .swap_dims(&up(b, &a, &[2, 3, 4]), 0, 2)
        .expect("swap_dims");
    assert_eq!(t.shape(), &[4, 3, 2]);
    assert_eq!(
        t.layout().strides(),
        &[6, 2, 1],
        "output strides must be contiguous for [4,3,2]"
    );
    assert!(t.layout().is_contiguous());
    let got = down(b, &t);
    assert_eq!(got[6], 1.0, "b[1][0][0]");
    for i in 0..4 {
        for j in 0..3 {
            for k in 0..2 {
                assert_eq!(
                    got[i * 6 + j * 2 + k],
                    a[k * 12 + j * 4 + i],
                    "b[{i}][{j}][{k}]"
                );
            }
        }
    }
}

/// `[N,1] <-> [1,N]` shares the buffer and relabels the shape.
pub fn vector_swap_shares_buffer<B: Backend>(b: &B) {
    let n = 1000;
    let a: Vec<f32> = values(4, n);
    for shape in [[n, 1], [1, n]] {
        let t = up(b, &a, &shape);
        let s = b.swap_dims(&t, 0, 1).expect("swap");
        assert_eq!(s.shape(), &[shape[1], shape[0]]);
        assert!(
            s.shares_storage_with(&t),
            "swap of {shape:?} must share the buffer"
        );
        assert!(s.layout().is_contiguous());
        assert_bits("vector swap", &down(b, &s), &a);
    }
}

/// Every permutation of a 4-D tensor (and some rank 5-6) against the naive host permute.
pub fn all_permutations<B: Backend>(b: &B) {
    fn perms(n: usize) -> Vec<Vec<usize>> {
        if n == 0 {
            return vec![vec![]];
        }
        let mut out = Vec::new();
        for p in perms(n - 1) {
            for pos in 0..n {
                let mut q = p.clone();
                q.insert(pos, n - 1);
                out.push(q);
            }
        }
        out
    }
    for shape in [vec![3usize, 5, 2, 7], vec![2, 1, 33, 4], vec![17, 3, 1, 65]] {
        let n: usize = shape.iter().product();
        let a: Vec<f32> = values(4, n);
        let t = up(b, &a, &shape);
        for p in perms(4) {
            let s = b.permute(&t, &p).expect("permute");
            let want = rtx_tensor::permute_host(&a, &shape, &p).expect("host permute");
            assert!(s.layout().is_contiguous());
            assert_bits(&format!("permute {shape:?} by {p:?}"), &down(b, &s), &want);
        }
    }
    let shape = [2usize, 3, 2, 4, 3, 2];
    let n: usize = shape.iter().product();
    let a: Vec<f64> = values(5, n);
    for p in [
        [5usize, 4, 3, 2, 1, 0],
        [1, 0, 3, 2, 5, 4],
        [0, 2, 4, 1, 3, 5],
    ] {
        let s = b.permute(&up(b, &a, &shape), &p).expect("permute rank 6");
        assert_bits(
            &format!("rank-6 permute {p:?}"),
            &down(b, &s),
            &rtx_tensor::permute_host(&a, &shape, &p).expect("host"),
        );
    }
}

/// Transposes whose sizes do not divide any tile, batched and wide-element ones.
pub fn odd_transposes<B: Backend>(b: &B) {
    for (shape, a0, b0) in [
        (vec![33usize, 65], 0usize, 1usize),
        (vec![1, 7], 0, 1),
        (vec![3, 31, 17], 1, 2),
        (vec![45, 19, 5], 0, 1),
        (vec![2, 40, 9, 3], 1, 2),
        (vec![0, 5], 0, 1),
    ] {
        let n: usize = shape.iter().product();
        let a: Vec<f32> = values(9, n);
        let s = b.swap_dims(&up(b, &a, &shape), a0, b0).expect("swap");
        let mut perm: Vec<usize> = (0..shape.len()).collect();
        perm.swap(a0, b0);
        assert_bits(
            &format!("swap {shape:?} ({a0},{b0})"),
            &down(b, &s),
            &rtx_tensor::permute_host(&a, &shape, &perm).expect("host"),
        );
    }
    let t = up(b, &[1.0f32, 2.0], &[2]);
    assert!(
        matches!(b.swap_dims(&t, 0, 1), Err(Error::Layout(_))),
        "bad dim must be an error"
    );
}

fn assert_close(case: &str, got: &[f64], want: &[f64], rel: f64) {
    assert_eq!(got.len(), want.len(), "{case}: length");
    let scale = want.iter().fold(1.0f64, |m, x| m.max(x.abs()));
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        assert!(
            (g - w).abs() <= rel * scale,
            "{case}: element {i}: got {g}, want {w} (tolerance {rel} x {scale})"
        );
    }
}

/// Dense model ops against the [`ops`] reference: elementwise ops without
/// rounding choices (add, sub, mul, div, relu, leaky relu, scale, head_scale)
/// bit for bit; reductions and `exp` within a small tolerance (a device may
/// sum in its own fixed order, fuse multiply-adds, or use its own `exp`).
pub fn model_ops_match_reference<B: Backend>(b: &B) {
    let (m, k, n) = (37usize, 300usize, 9usize);
    let a: Vec<f64> = values(50, m * k);
    let c: Vec<f64> = values(51, k * n);
    let want = ops::matmul(&a, &[m, k], false, &c, &[k, n], false).expect("reference matmul");
    let at = ops::transpose2(&a, m, k);
    let ct = ops::transpose2(&c, k, n);
    for (ta, tb) in [(false, false), (true, false), (false, true), (true, true)] {
        let (aa, ash) = if ta { (&at, [k, m]) } else { (&a, [m, k]) };
        let (cc, csh) = if tb { (&ct, [n, k]) } else { (&c, [k, n]) };
        let got = b
            .matmul(&up(b, aa, &ash), ta, &up(b, cc, &csh), tb)
            .expect("matmul");
        assert_eq!(got.shape(), &[m, n]);
        assert_close(
            &format!("matmul ({ta}, {tb})"),
            &down(b, &got),
            &want,
            1e-12,
        );
    }
    let x: Vec<f32> = values(52, 64 * 12);
    let xt = up(b, &x, &[64, 12]);
    for op in [Unary::Relu, Unary::LeakyRelu(0.2), Unary::Scale(-0.37)] {
        assert_bits(
            op.name(),
            &down(b, &b.unary(op, &xt).expect("unary")),
            &ops::unary(op, &x),
        );
        let g: Vec<f32> = values(53, x.len());
        let got = b
            .unary_backward(op, &xt, &up(b, &g, &[64, 12]))
            .expect("unary_backward");
        let want = ops::unary_backward(op, &x, &g).expect("reference");
        assert_bits(&format!("{} backward", op.name()), &down(b, &got), &want);
    }
    let e = down(b, &b.unary(Unary::Exp, &xt).expect("exp"));
    let to64 = |v: &[f32]| v.iter().map(|&x| f64::from(x)).collect::<Vec<_>>();
    assert_close("exp", &to64(&e), &to64(&ops::unary(Unary::Exp, &x)), 1e-6);
    let y: Vec<f32> = values(54, x.len());
    let row: Vec<f32> = values(55, 12);
    for op in [Binary::Add, Binary::Sub, Binary::Mul, Binary::Div] {
        let got = b.binary(op, &xt, &up(b, &y, &[64, 12])).expect("binary");
        assert_bits(
            op.name(),
            &down(b, &got),
            &ops::binary(op, &x, &y, 12, false),
        );
        let got = b
            .binary(op, &xt, &up(b, &row, &[1, 12]))
            .expect("binary broadcast");
        assert_bits(
            &format!("{} broadcast", op.name()),
            &down(b, &got),
            &ops::binary(op, &x, &row, 12, true),
        );
    }
    let mut w = up(b, &y, &[64, 12]);
    b.axpy(&mut w, -1e-3, &xt).expect("axpy");
    let mut want = y.clone();
    ops::axpy_slice(&mut want, -1e-3f32, &x);
    assert_close("axpy", &to64(&down(b, &w)), &to64(&want), 1e-6);
    let rows = 1000;
    let big: Vec<f64> = values(56, rows * 3);
    let got = b.sum_rows(&up(b, &big, &[rows, 3])).expect("sum_rows");
    assert_eq!(got.shape(), &[1, 3]);
    assert_close(
        "sum_rows",
        &down(b, &got),
        &ops::sum_rows(&big, rows, 3),
        1e-12,
    );
    let att: Vec<f32> = values(57, 12);
    for (bt, brows) in [(up(b, &att, &[1, 12]), 1), (up(b, &y, &[64, 12]), 64)] {
        let got = b.head_dot(&xt, &bt, 3).expect("head_dot");
        assert_eq!(got.shape(), &[64, 3]);
        let bh = down(b, &bt);
        let want = ops::head_dot(&x, &bh, 64, 3, 4, brows);
        assert_close(
            &format!("head_dot b rows {brows}"),
            &to64(&down(b, &got)),
            &to64(&want),
            1e-6,
        );
    }
    let s: Vec<f32> = values(58, 64 * 3);
    let st = up(b, &s, &[64, 3]);
    let got = b.head_scale(&xt, &st).expect("head_scale");
    assert_bits(
        "head_scale",
        &down(b, &got),
        &ops::head_scale(&x, &s, 64, 3, 4, 64),
    );
    let got = b
        .head_scale(&up(b, &att, &[1, 12]), &st)
        .expect("head_scale broadcast");
    assert_bits(
        "head_scale broadcast",
        &down(b, &got),
        &ops::head_scale(&att, &s, 64, 3, 4, 1),
    );
}

/// Segment ops: `segment_max` and `segment_sum` exact against the reference;
/// `segment_softmax` and its backward bit-identical to their defining
/// composition on the same backend, and close to the host reference.
pub fn segment_ops<B: Backend>(b: &B) {
    for (rows, e, f) in [(50usize, 2000usize, 4usize), (7, 600, 1), (300, 40, 3)] {
        let idx = indices(60, e, rows, true);
        let plan = IndexPlan::new(&idx, rows).expect("plan");
        let x: Vec<f32> = values(61, e * f).iter().map(|v: &f32| v * 8.0).collect();
        let xt = up(b, &x, &[e, f]);
        let m = b.segment_max(&xt, &plan).expect("segment_max");
        assert_eq!(m.shape(), &[rows, f]);
        assert_bits("segment_max", &down(b, &m), &ops::segment_max(&x, f, &plan));
        let s = b.segment_sum(&xt, &plan).expect("segment_sum");
        let mut want = vec![0.0f32; rows * f];
        reference::index_add(&mut want, f, &plan, &x).expect("reference");
        assert_bits("segment_sum", &down(b, &s), &want);
        // the composition, spelled out with this backend's ops
        let alpha = b.segment_softmax(&xt, &plan).expect("segment_softmax");
        let mg = b.index_select(&m, &idx).expect("gather");
        let ex = b
            .unary(Unary::Exp, &b.binary(Binary::Sub, &xt, &mg).expect("sub"))
            .expect("exp");
        let den = b
            .index_select(&b.segment_sum(&ex, &plan).expect("sum"), &idx)
            .expect("gather");
        let composed = b.binary(Binary::Div, &ex, &den).expect("div");
        let got = down(b, &alpha);
        assert_bits(
            "segment_softmax vs its composition",
            &got,
            &down(b, &composed),
        );
        let to64 = |v: &[f32]| v.iter().map(|&x| f64::from(x)).collect::<Vec<_>>();
        assert_close(
            "segment_softmax vs reference",
            &to64(&got),
            &to64(&ops::segment_softmax(&x, f, &plan)),
            1e-6,
        );
        let g: Vec<f32> = values(62, e * f);
        let gt = up(b, &g, &[e, f]);
        let dz = b
            .segment_softmax_backward(&alpha, &gt, &plan)
            .expect("backward");
        let t = b.binary(Binary::Mul, &alpha, &gt).expect("mul");
        let sg = b
            .index_select(&b.segment_sum(&t, &plan).expect("sum"), &idx)
            .expect("gather");
        let composed = b
            .binary(
                Binary::Mul,
                &alpha,
                &b.binary(Binary::Sub, &gt, &sg).expect("sub"),
            )
            .expect("mul");
        assert_bits(
            "segment_softmax_backward vs its composition",
            &down(b, &dz),
            &down(b, &composed),
        );
    }
}

/// The fused gathers (`gather_scale_scatter`, `gather_head_dot`) are
/// bit-identical to their compositions on the same backend and to the host
/// reference; bad indices are errors before any work.
pub fn fused_gathers<B: Backend>(b: &B) {
    let (n, rows, e, heads, c) = (40usize, 30usize, 3000usize, 4usize, 5usize);
    let f = heads * c;
    let gather = indices(70, e, n, false);
    let scatter = indices(71, e, rows, true);
    let plan = IndexPlan::new(&scatter, rows).expect("plan");
    let x: Vec<f32> = values(72, n * f);
    let w: Vec<f32> = values(73, e * heads);
    let (xt, wt) = (up(b, &x, &[n, f]), up(b, &w, &[e, heads]));
    let got = b
        .gather_scale_scatter(&xt, &gather, &wt, &plan)
        .expect("gather_scale_scatter");
    assert_eq!(got.shape(), &[rows, f]);
    let msg = b
        .head_scale(&b.index_select(&xt, &gather).expect("gather"), &wt)
        .expect("scale");
    let composed = b.segment_sum(&msg, &plan).expect("sum");
    let got = down(b, &got);
    assert_bits(
        "gather_scale_scatter vs its composition",
        &got,
        &down(b, &composed),
    );
    assert_bits(
        "gather_scale_scatter vs reference",
        &got,
        &ops::gather_scale_scatter(&x, &gather, &w, heads, c, &plan),
    );
    let y: Vec<f32> = values(74, rows * f);
    let yt = up(b, &y, &[rows, f]);
    let got = b
        .gather_head_dot(&xt, &gather, &yt, &scatter, heads)
        .expect("gather_head_dot");
    assert_eq!(got.shape(), &[e, heads]);
    let composed = b
        .head_dot(
            &b.index_select(&xt, &gather).expect("gather"),
            &b.index_select(&yt, &scatter).expect("gather"),
            heads,
        )
        .expect("head_dot");
    assert_bits(
        "gather_head_dot vs its composition",
        &down(b, &got),
        &down(b, &composed),
    );
    let mut bad = gather.clone();
    bad[17] = n as u32;
    assert!(matches!(
        b.gather_scale_scatter(&xt, &bad, &wt, &plan),
        Err(Error::IndexOutOfRange { position: 17, .. })
    ));
    let mut bad = scatter.clone();
    bad[17] = rows as u32;
    assert!(matches!(
        b.gather_head_dot(&xt, &gather, &yt, &bad, heads),
        Err(Error::IndexOutOfRange { position: 17, .. })
    ));
}

/// Zero-size model ops: an empty inner dimension (`k = 0`), no rows
/// (`n = 0`, `rows = 0`), no features (`F = 0`, `c = 0`), no entries
/// (`E = 0`). Every output has its shape; a sum over nothing is zero (the
/// dense ops compared by value, the index ops bit for bit: `+0.0`).
pub fn model_ops_empty<B: Backend>(b: &B) {
    let z = |shape: &[usize]| b.zeros::<f32>(shape).expect("zeros");
    let zeros = |case: &str, t: &BTensor<B, f32>, shape: &[usize]| {
        assert_eq!(t.shape(), shape, "{case}: shape");
        let got = down(b, t);
        assert_eq!(got.len(), t.numel(), "{case}: length");
        assert!(
            got.iter().all(|&x| x == 0.0),
            "{case}: want zeros, got {got:?}"
        );
    };
    // matmul: k = 0 gives zeros, for every transpose; m = 0 and n = 0
    for (ta, tb) in [(false, false), (true, false), (false, true), (true, true)] {
        let a = z(if ta { &[0, 3] } else { &[3, 0] });
        let c = z(if tb { &[4, 0] } else { &[0, 4] });
        let got = b.matmul(&a, ta, &c, tb).expect("matmul k = 0");
        zeros(&format!("matmul k = 0 ({ta}, {tb})"), &got, &[3, 4]);
    }
    let w = up(b, &values::<f32>(80, 10), &[5, 2]);
    let got = b
        .matmul(&z(&[0, 5]), false, &w, false)
        .expect("matmul m = 0");
    zeros("matmul m = 0", &got, &[0, 2]);
    let got = b
        .matmul(&w, true, &z(&[5, 0]), false)
        .expect("matmul n = 0");
    zeros("matmul n = 0", &got, &[2, 0]);
    // sum_rows: n = 0 gives zeros, F = 0 an empty row
    zeros(
        "sum_rows n = 0",
        &b.sum_rows(&z(&[0, 3])).expect("sum_rows"),
        &[1, 3],
    );
    zeros(
        "sum_rows F = 0",
        &b.sum_rows(&z(&[4, 0])).expect("sum_rows"),
        &[1, 0],
    );
    // elementwise on empty tensors
    for shape in [[0usize, 3], [4, 0]] {
        let x = z(&shape);
        zeros("unary", &b.unary(Unary::Exp, &x).expect("unary"), &shape);
        let got = b
            .unary_backward(Unary::Relu, &x, &x)
            .expect("unary_backward");
        zeros("unary_backward", &got, &shape);
        zeros(
            "binary",
            &b.binary(Binary::Div, &x, &x).expect("binary"),
            &shape,
        );
        let row = z(&[1, shape[1]]);
        let got = b.binary(Binary::Add, &x, &row).expect("binary broadcast");
        zeros("binary broadcast", &got, &shape);
        let mut y = z(&shape);
        b.axpy(&mut y, 2.0, &x).expect("axpy");
        zeros("axpy", &y, &shape);
    }
    // head ops: c = 0 (dots over nothing are zero) and n = 0
    let got = b
        .head_dot(&z(&[5, 0]), &z(&[1, 0]), 2)
        .expect("head_dot c = 0");
    zeros("head_dot c = 0", &got, &[5, 2]);
    let got = b
        .head_dot(&z(&[0, 6]), &z(&[0, 6]), 3)
        .expect("head_dot n = 0");
    zeros("head_dot n = 0", &got, &[0, 3]);
    let got = b
        .head_scale(&z(&[1, 0]), &up(b, &[2.0f32; 4], &[2, 2]))
        .expect("head_scale");
    zeros("head_scale c = 0", &got, &[2, 0]);
    let got = b
        .head_scale(&z(&[0, 6]), &z(&[0, 3]))
        .expect("head_scale n = 0");
    zeros("head_scale n = 0", &got, &[0, 6]);
    // segment ops on empty plans (E = 0) into 3 rows and into 0 rows, and on
    // a plan with entries but F = 0
    let (heads, c) = (2usize, 3usize);
    let x = up(b, &values::<f32>(81, 4 * heads * c), &[4, heads * c]);
    for rows in [3usize, 0] {
        let plan = IndexPlan::new(&[], rows).expect("plan");
        let e = z(&[0, 2]);
        let m = b.segment_max(&e, &plan).expect("segment_max");
        assert_eq!(m.shape(), &[rows, 2]);
        assert_bits("segment_max E = 0", &down(b, &m), &vec![0.0f32; rows * 2]);
        let s = b.segment_sum(&e, &plan).expect("segment_sum");
        assert_eq!(s.shape(), &[rows, 2]);
        assert_bits("segment_sum E = 0", &down(b, &s), &vec![0.0f32; rows * 2]);
        let a = b.segment_softmax(&e, &plan).expect("segment_softmax");
        zeros("segment_softmax E = 0", &a, &[0, 2]);
        let g = b
            .segment_softmax_backward(&a, &e, &plan)
            .expect("softmax backward");
        zeros("segment_softmax_backward E = 0", &g, &[0, 2]);
        let got = b
            .gather_scale_scatter(&x, &[], &z(&[0, heads]), &plan)
            .expect("gather_scale_scatter E = 0");
        assert_eq!(got.shape(), &[rows, heads * c]);
        assert_bits(
            "gather_scale_scatter E = 0",
            &down(b, &got),
            &vec![0.0f32; rows * heads * c],
        );
        let got = b
            .gather_head_dot(&x, &[], &x, &[], heads)
            .expect("gather_head_dot E = 0");
        zeros("gather_head_dot E = 0", &got, &[0, heads]);
    }
    let idx = [1u32, 0, 1];
    let plan = IndexPlan::new(&idx, 2).expect("plan");
    let e = z(&[3, 0]);
    zeros(
        "segment_max F = 0",
        &b.segment_max(&e, &plan).expect("max"),
        &[2, 0],
    );
    zeros(
        "segment_sum F = 0",
        &b.segment_sum(&e, &plan).expect("sum"),
        &[2, 0],
    );
    let a = b.segment_softmax(&e, &plan).expect("softmax F = 0");
    zeros("segment_softmax F = 0", &a, &[3, 0]);
    let g = b
        .segment_softmax_backward(&a, &e, &plan)
        .expect("backward F = 0");
    zeros("segment_softmax_backward F = 0", &g, &[3, 0]);
    let got = b
        .gather_scale_scatter(&z(&[2, 0]), &[1, 1, 0], &z(&[3, heads]), &plan)
        .expect("gather_scale_scatter F = 0");
    zeros("gather_scale_scatter F = 0", &got, &[2, 0]);
    let got = b
        .gather_head_dot(&z(&[2, 0]), &[1, 1, 0], &z(&[2, 0]), &idx, heads)
        .expect("gather_head_dot c = 0");
    zeros("gather_head_dot c = 0", &got, &[3, heads]);
}

/// Bad shapes are errors naming both shapes, never panics.
pub fn model_op_errors<B: Backend>(b: &B) {
    let a = up(b, &[1.0f32; 6], &[2, 3]);
    let c = up(b, &[1.0f32; 8], &[4, 2]);
    let e = b
        .matmul(&a, false, &c, false)
        .expect_err("inner dims differ");
    assert!(
        e.to_string().contains("[2, 3]") && e.to_string().contains("[4, 2]"),
        "{e}"
    );
    assert!(matches!(
        b.binary(Binary::Add, &a, &c),
        Err(Error::ShapeMismatch { .. })
    ));
    assert!(matches!(
        b.head_dot(&a, &a, 2),
        Err(Error::ShapeMismatch { .. })
    ));
    assert!(matches!(
        b.head_scale(&a, &c),
        Err(Error::ShapeMismatch { .. })
    ));
    let plan = IndexPlan::new(&[0, 1, 1], 2).expect("plan");
    assert!(matches!(
        b.segment_softmax(&a, &plan),
        Err(Error::ShapeMismatch { .. })
    ));
    assert!(matches!(
        b.segment_max(&a, &plan),
        Err(Error::ShapeMismatch { .. })
    ));
    let mut y = up(b, &[1.0f32; 6], &[3, 2]);
    assert!(matches!(
        b.axpy(&mut y, 1.0, &a),
        Err(Error::ShapeMismatch { .. })
    ));
    assert_bits(
        "axpy target untouched after error",
        &down(b, &y),
        &[1.0f32; 6],
    );
    let v = up(b, &[1.0f32; 6], &[6]);
    assert!(matches!(b.sum_rows(&v), Err(Error::Rank { .. })));
}

/// Every case above, in order.
pub fn run_all<B: Backend>(b: &B) {
    gather_with_repeats(b);
    scatter_duplicates_untouched(b);
    adjoint_identity(b);
    hub_heavy(b);
    out_of_range(b);
    empty_indices(b);
    scatter_matches_reference(b);
    repeatable(b);
    concurrent_use(b);
    swap_dims_2x3x4(b);
    vector_swap_shares_buffer(b);
    all_permutations(b);
    odd_transposes(b);
    model_ops_match_reference(b);
    segment_ops(b);
    fused_gathers(b);
    model_ops_empty(b);
    model_op_errors(b);
}

/// Declares one `#[test]` per conformance case for a backend built by `$make`.
///
/// ```text
/// rtx_backend::conformance_tests!(rtx_backend_cpu::CpuBackend::new());
/// ```
#[macro_export]
macro_rules! conformance_tests {
    ($make:expr) => {
        $crate::conformance_tests!(@cases $make;
            gather_with_repeats scatter_duplicates_untouched adjoint_identity hub_heavy
            out_of_range empty_indices scatter_matches_reference repeatable concurrent_use
            swap_dims_2x3x4 vector_swap_shares_buffer all_permutations odd_transposes
            model_ops_match_reference segment_ops fused_gathers model_ops_empty
            model_op_errors);
    };
    (@cases $make:expr; $($case:ident)*) => {
        $(
            #[test]
            fn $case() {
                let backend = $make;
                $crate::conformance::$case(&backend);
            }
        )*
    };
}
