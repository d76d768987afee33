//! The fused-op cases: segment softmax (with the segment max and sum it
//! composes) and the fused gathers, against their compositions and the reference.

use super::harness::{assert_bits, assert_close, down, up};
use crate::workload::{indices, values};
use crate::{Backend, Binary, Error, IndexPlan, Unary, ops, reference};

/// Two quiet NaNs told apart by their payloads: where both meet in one
/// addition, the result's payload shows which operand came first (on hosts
/// that keep the first operand's, as x86 does), so an override that swaps
/// the composition's operands differs from it in bits.
const NAN_A: u32 = 0x7fc0_0001;
const NAN_B: u32 = 0x7fc0_0002;

/// Any NaN made one: arithmetic on a NaN gives a NaN whose payload is the
/// device's own, so comparisons with the host reference treat NaNs alike.
fn nan_alike(v: &[f32]) -> Vec<f32> {
    v.iter()
        .map(|&x| if x.is_nan() { f32::NAN } else { x })
        .collect()
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
    // entry 0's first column adds two NaNs of different payloads
    let (mut xn, mut yn) = (x.clone(), y.clone());
    xn[gather[0] as usize * f] = f32::from_bits(NAN_A);
    yn[scatter[0] as usize * f] = f32::from_bits(NAN_B);
    let (x, y) = (xn, yn);
    let (xt, yt) = (up(b, &x, &[n, f]), up(b, &y, &[rows, f]));
    let got = b
        .gather_add(&xt, &gather, &yt, &scatter)
        .expect("gather_add");
    assert_eq!(got.shape(), &[e, f]);
    let composed = b
        .binary(
            Binary::Add,
            &b.index_select(&xt, &gather).expect("gather"),
            &b.index_select(&yt, &scatter).expect("gather"),
        )
        .expect("add");
    let got = down(b, &got);
    assert_bits("gather_add vs its composition", &got, &down(b, &composed));
    let want: Vec<f32> = (0..e * f)
        .map(|i| x[gather[i / f] as usize * f + i % f] + y[scatter[i / f] as usize * f + i % f])
        .collect();
    assert_bits(
        "gather_add vs reference (any NaN alike)",
        &nan_alike(&got),
        &nan_alike(&want),
    );
    // one column (a GAT's one-head logits), the widths between, empty lists
    for w in [1usize, 3, 4, 6] {
        let (xa, ya) = (values::<f32>(75, n * w), values::<f32>(76, rows * w));
        let (xat, yat) = (up(b, &xa, &[n, w]), up(b, &ya, &[rows, w]));
        let got = down(
            b,
            &b.gather_add(&xat, &gather, &yat, &scatter)
                .expect("gather_add"),
        );
        let want: Vec<f32> = (0..e * w)
            .map(|i| {
                xa[gather[i / w] as usize * w + i % w] + ya[scatter[i / w] as usize * w + i % w]
            })
            .collect();
        assert_bits(&format!("gather_add width {w}"), &got, &want);
        let none = b
            .gather_add(&xat, &[], &yat, &[])
            .expect("empty gather_add");
        assert_eq!(none.shape(), &[0, w]);
    }
    let mut bad = scatter.clone();
    bad[29] = rows as u32;
    assert!(matches!(
        b.gather_add(&xt, &gather, &yt, &bad),
        Err(Error::IndexOutOfRange { position: 29, .. })
    ));
    assert!(matches!(
        b.gather_add(&xt, &gather, &yt, &scatter[1..]),
        Err(Error::ShapeMismatch {
            op: "gather_add",
            ..
        })
    ));
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

/// `sum_bias_relu` and `add_head_scale` bit-identical to their compositions
/// on the same backend and to the host reference: `sum_bias_relu` for one to
/// nine parts (8, a CUDA kernel's room, and past it), rows of whole and of
/// partial 16-byte vectors, and inputs with NaN, NaNs of two payloads in one
/// addition, -0.0 sums and sums that cancel (its shape errors name the
/// part); `add_head_scale` with a full and a broadcast `a`, whole and partial
/// vectors, NaNs of two payloads in one addition.
pub fn fused_dense<B: Backend>(b: &B) {
    for (n, f, k) in [
        (300usize, 8usize, 1usize),
        (257, 5, 2),
        (64, 64, 3),
        (40, 4, 8),
        (3, 4, 9),
    ] {
        let mut xs: Vec<Vec<f32>> = (0..k).map(|i| values(80 + i as u64, n * f)).collect();
        let mut bs: Vec<Vec<f32>> = (0..k).map(|i| values(90 + i as u64, f)).collect();
        // specials: a NaN (kept by relu); two NaN payloads meeting in one
        // addition (row 1, column 1); an exact -0.0 sum (column 2 of row 2:
        // every part's input and bias -0.0); exact cancellation
        xs[0][0] = f32::NAN;
        xs[0][f + 1] = f32::from_bits(NAN_A);
        bs[0][1] = f32::from_bits(NAN_B);
        for i in 0..k {
            xs[i][2 * f + 2] = -0.0;
            bs[i][2] = -0.0;
        }
        if k > 1 {
            xs[1][2] = -(xs[0][2] + bs[0][2]) - bs[1][2];
        }
        let xt: Vec<_> = xs.iter().map(|x| up(b, x, &[n, f])).collect();
        let bt: Vec<_> = bs.iter().map(|v| up(b, v, &[1, f])).collect();
        let parts: Vec<_> = xt.iter().zip(&bt).collect();
        let got = b.sum_bias_relu(&parts).expect("sum_bias_relu");
        assert_eq!(got.shape(), &[n, f]);
        let mut acc: Option<_> = None;
        for (x, bias) in &parts {
            let t = b.binary(Binary::Add, x, bias).expect("add");
            acc = Some(match acc {
                None => t,
                Some(s) => b.binary(Binary::Add, &s, &t).expect("add"),
            });
        }
        let composed = b.unary(Unary::Relu, &acc.expect("parts")).expect("relu");
        let got = down(b, &got);
        assert_bits(
            &format!("sum_bias_relu [{n}, {f}] x{k} vs its composition"),
            &got,
            &down(b, &composed),
        );
        let mut want = vec![0.0f32; n * f];
        for (r, w) in want.iter_mut().enumerate() {
            let j = r % f;
            let mut s = xs[0][r] + bs[0][j];
            for i in 1..k {
                s += xs[i][r] + bs[i][j];
            }
            *w = ops::relu(s);
        }
        assert_eq!(got[2 * f + 2].to_bits(), 0, "relu of a -0.0 sum is +0.0");
        assert_bits(
            &format!("sum_bias_relu [{n}, {f}] x{k} vs reference (any NaN alike)"),
            &nan_alike(&got),
            &nan_alike(&want),
        );
    }
    // add_head_scale: a full and a broadcast `a`, whole and partial vectors
    for (n, heads, c, a_rows) in [
        (500usize, 4usize, 16usize, 500usize),
        (300, 4, 16, 1),
        (70, 3, 5, 1),
        (9, 1, 2, 9),
    ] {
        let f = heads * c;
        let (mut x, mut a, s) = (
            values::<f32>(100, n * f),
            values::<f32>(101, a_rows * f),
            values::<f32>(102, n * heads),
        );
        // element 1 adds two NaNs of different payloads: x's and a's product
        x[1] = f32::from_bits(NAN_A);
        a[1] = f32::from_bits(NAN_B);
        let (xt, at, st) = (
            up(b, &x, &[n, f]),
            up(b, &a, &[a_rows, f]),
            up(b, &s, &[n, heads]),
        );
        let got = down(b, &b.add_head_scale(&xt, &at, &st).expect("add_head_scale"));
        let composed = b
            .binary(Binary::Add, &xt, &b.head_scale(&at, &st).expect("scale"))
            .expect("add");
        let name = format!("add_head_scale [{n}, {heads}x{c}] a rows {a_rows}");
        assert_bits(
            &format!("{name} vs its composition"),
            &got,
            &down(b, &composed),
        );
        let want: Vec<f32> = (0..n * f)
            .map(|i| {
                let (r, j) = (i / f, i % f);
                x[i] + a[if a_rows == 1 { j } else { i }] * s[r * heads + j / c]
            })
            .collect();
        assert_bits(
            &format!("{name} vs reference (any NaN alike)"),
            &nan_alike(&got),
            &nan_alike(&want),
        );
    }
    let (at, st) = (
        up(b, &values::<f32>(103, 12), &[3, 4]),
        up(b, &values::<f32>(104, 6), &[3, 2]),
    );
    let wrong = up(b, &values::<f32>(105, 8), &[2, 4]);
    assert!(matches!(
        b.add_head_scale(&wrong, &at, &st),
        Err(Error::ShapeMismatch {
            op: "add_head_scale",
            ..
        })
    ));
    let x = up(b, &values::<f32>(95, 12), &[3, 4]);
    let (b4, b3) = (
        up(b, &values::<f32>(96, 4), &[1, 4]),
        up(b, &values::<f32>(97, 3), &[1, 3]),
    );
    let other = up(b, &values::<f32>(98, 8), &[2, 4]);
    let shape_error = |r: crate::Result<_>, part: &str| match r {
        Err(Error::ShapeMismatch {
            op: "sum_bias_relu",
            detail,
        }) => {
            assert!(detail.contains(part), "{detail}")
        }
        other => panic!("want a shape error naming {part}, got {other:?}"),
    };
    shape_error(b.sum_bias_relu::<f32>(&[]), "no parts");
    shape_error(b.sum_bias_relu(&[(&x, &b4), (&x, &b3)]), "part 1");
    shape_error(b.sum_bias_relu(&[(&x, &b4), (&other, &b4)]), "part 1");
    shape_error(b.sum_bias_relu(&[(&x, &x)]), "part 0");
}
