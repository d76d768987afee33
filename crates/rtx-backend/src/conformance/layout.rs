//! The layout-op cases: `swap_dims`, `permute` and `resize_rows`.

use super::harness::{assert_bits, down, up};
use crate::workload::values;
use crate::{BTensor, Backend, Element, Error, bf16, f16};

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

/// `x` of `shape` cut or zero-padded to `rows` rows, by plain loops: the
/// expectation of `resize_rows`.
fn resized<T: Element>(x: &[T], shape: &[usize], rows: usize) -> Vec<T> {
    let (n, row) = (shape[0], shape[1..].iter().product::<usize>());
    let mut out = Vec::new();
    for r in 0..rows {
        for c in 0..row {
            out.push(if r < n { x[r * row + c] } else { T::ZERO });
        }
    }
    out
}

/// `n` values of `T` with `-0.0`, `+0.0` and NaNs (a payload, both signs, a
/// signalling one where `T` keeps it) among them: bits a copy must keep.
fn special_values<T: Element>(seed: u64, n: usize) -> Vec<T> {
    let mut x: Vec<T> = values(seed, n);
    let specials = [
        -0.0,
        f32::from_bits(0x7fc0_1234),
        f32::from_bits(0xffc0_0001),
        0.0,
        f32::from_bits(0x7f80_0001),
        f32::NEG_INFINITY,
    ];
    for (i, s) in specials.into_iter().enumerate() {
        if let Some(v) = x.get_mut(i * 3 + 1) {
            *v = T::from_f32(s);
        }
    }
    x
}

/// `resize_rows` of `x` (held in `xt`, of `shape`) to `rows`, checked bit
/// for bit against [`resized`], with its shape and contiguous strides.
fn check_resize<B: Backend, T: Element>(
    b: &B,
    xt: &BTensor<B, T>,
    x: &[T],
    shape: &[usize],
    rows: usize,
) -> BTensor<B, T> {
    let case = format!("resize_rows {} {shape:?} -> {rows} rows", T::DTYPE);
    let got = b.resize_rows(xt, rows).expect(&case);
    let mut want_shape = shape.to_vec();
    want_shape[0] = rows;
    assert_eq!(got.shape(), &want_shape[..], "{case}: shape");
    assert!(got.layout().is_contiguous(), "{case}: contiguous");
    assert_bits(&case, &down(b, &got), &resized(x, shape, rows));
    got
}

/// Every cut and pad of a few shapes (ranks 1 to 4, empty ones) in `T`.
fn resize_case<B: Backend, T: Element>(b: &B) {
    for (shape, rows) in [
        (vec![5usize, 3], vec![2usize, 5, 8, 0, 1, 6]),
        (vec![4, 2, 3], vec![1, 6, 4, 0]),
        (vec![0, 3], vec![4, 0, 1]),
        (vec![7], vec![3, 10, 0]),
        (vec![3, 0], vec![5, 1]),
        (vec![2, 1, 1, 4], vec![9, 1]),
    ] {
        let numel: usize = shape.iter().product();
        let x: Vec<T> = special_values(11, numel);
        let xt = up(b, &x, &shape);
        for rows in rows {
            let got = check_resize(b, &xt, &x, &shape, rows);
            let ty = T::DTYPE;
            assert_eq!(
                got.shares_storage_with(&xt),
                rows == shape[0],
                "resize_rows {ty} {shape:?} -> {rows}: shares the buffer iff rows == n"
            );
        }
    }
}

/// `resize_rows` in every element type against plain loops: prefixes, zero
/// padding, empty inputs and outputs, `-0.0` and NaN bits kept; a rank-0
/// input and an output whose size overflows are errors.
pub fn resize_rows_matches_reference<B: Backend>(b: &B) {
    resize_case::<B, f32>(b);
    resize_case::<B, f64>(b);
    resize_case::<B, bf16>(b);
    resize_case::<B, f16>(b);
    let scalar = up(b, &[1.5f32], &[]);
    match b.resize_rows(&scalar, 1) {
        Err(Error::ShapeMismatch {
            op: "resize_rows",
            detail,
        }) => assert!(
            detail.contains("[]"),
            "rank-0 error must name the shape: {detail}"
        ),
        other => panic!("resize_rows of a rank-0 tensor: want ShapeMismatch, got {other:?}"),
    }
    let wide = b.zeros::<f32>(&[0, 1 << 62]).expect("zeros");
    assert!(
        matches!(b.resize_rows(&wide, 4), Err(Error::Layout(_))),
        "resize_rows to [4, 2^62] must be a size overflow"
    );
    let cut = b.resize_rows(&wide, 0).expect("resize_rows [0, 2^62] -> 0");
    assert_eq!(cut.shape(), &[0, 1 << 62]);
}

/// A resized tensor owns its buffer: changing the input in place or dropping
/// it leaves the output's bits; the padding is zeros even in a reused
/// (dirty) buffer; `rows == n` shares the buffer, and an in-place change of
/// the input then copies it first.
pub fn resize_rows_owns_its_buffer<B: Backend>(b: &B) {
    let (n, f) = (300usize, 64usize);
    let x: Vec<f32> = special_values(12, n * f);
    let idx: Vec<u32> = (0..n as u32).collect();
    let ones = up(b, &vec![1.0f32; n * f], &[n, f]);
    for rows in [100usize, 300, 1000] {
        let mut xt = up(b, &x, &[n, f]);
        // a buffer of the output's size full of NaN, freed for reuse
        drop(up(b, &vec![f32::NAN; rows * f], &[rows, f]));
        let out = check_resize(b, &xt, &x, &[n, f], rows);
        let want = resized(&x, &[n, f], rows);
        b.index_add(&mut xt, &idx, &ones).expect("index_add");
        assert!(
            !out.shares_storage_with(&xt),
            "resize to {rows}: the input, changed in place, shares the output's buffer"
        );
        assert_bits(
            &format!("resize_rows [{n}, {f}] -> {rows}, input changed in place"),
            &down(b, &out),
            &want,
        );
        let changed = down(b, &xt);
        assert_ne!(changed[f], x[f], "index_add must change the input");
        let out2 = b.resize_rows(&xt, rows).expect("resize_rows");
        drop(xt);
        assert_bits(
            &format!("resize_rows [{n}, {f}] -> {rows}, input dropped"),
            &down(b, &out2),
            &resized(&changed, &[n, f], rows),
        );
    }
}
