//! The dense-op cases against the host reference, and the zero-size and
//! shape-error cases of every model op.

use super::harness::{assert_bits, assert_close, down, up};
use crate::workload::values;
use crate::{BTensor, Backend, Binary, Error, IndexPlan, Unary, ops};

/// Dense model ops against the [`ops`](crate::ops) reference: elementwise ops without
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
