//! The index-form cases: every index and fused op given its indices as a
//! list held by the backend, as a host plan and as a host list with its row
//! count, bit-identical to the host list on the same backend (itself checked
//! against the reference by the other cases), over lists of every shape the
//! suite covers; the errors of bad lists and of row counts that disagree.

use super::harness::{assert_bits, down, up};
use crate::Indices;
use crate::implement::concat_shifted;
use crate::order::CANONICAL_BLOCK;
use crate::workload::{indices, values};
use crate::{Backend, Error, IndexPlan};

/// The lists: `(name, idx, rows)`.
fn cases() -> Vec<(&'static str, Vec<u32>, usize)> {
    vec![
        ("repeats", vec![5, 5, 0, 36, 5, 17, 0, 36, 2], 37),
        ("empty", Vec::new(), 9),
        ("one row", vec![0; 700], 1),
        ("all into one row of many", vec![3; 5000], 1000),
        (
            "one row at three levels",
            vec![1; CANONICAL_BLOCK * CANONICAL_BLOCK + 17],
            3,
        ),
        (
            "one full block, and one past",
            vec![0; CANONICAL_BLOCK + 1],
            2,
        ),
        ("hub", indices(21, 40_000, 300, true), 300),
        ("uniform, empty rows", indices(22, 3000, 5000, false), 5000),
        (
            "hub into 70k rows",
            indices(23, 120_000, 70_000, true),
            70_000,
        ),
        ("sorted", (0..4000u32).map(|i| i / 7).collect(), 600),
    ]
}

/// Every op with a backend list, a plan or a host list with rows, against
/// the host list, bit for bit, f32 and f64.
pub fn index_lists_match_host_lists<B: Backend>(b: &B) {
    for (name, idx, rows) in cases() {
        let list = b.index_from_host(&idx).expect("index_from_host");
        assert_eq!(b.index_len(&list), idx.len(), "{name}: len");
        assert_eq!(
            &*b.index_to_host(&list).expect("to_host"),
            &idx[..],
            "{name}"
        );
        let e = idx.len();
        let plan = IndexPlan::new(&idx, rows).expect("plan");
        for f in [1usize, 4, 6] {
            let case = format!("{name} (rows {rows}, e {e}, f {f})");
            let src: Vec<f32> = values(31, rows * f);
            let st = up(b, &src, &[rows, f]);
            let g = b
                .index_select(&st, Indices::held(&list))
                .expect("index_select, backend list");
            let want = b.index_select(&st, &idx).expect("index_select");
            assert_bits(&format!("gather {case}"), &down(b, &g), &down(b, &want));
            let by_plan = b.index_select(&st, &plan).expect("index_select by plan");
            assert_bits(
                &format!("gather by plan {case}"),
                &down(b, &by_plan),
                &down(b, &want),
            );

            let msg: Vec<f32> = values(32, e * f);
            let mt = up(b, &msg, &[e, f]);
            let dst: Vec<f32> = values(33, rows * f);
            let mut d1 = up(b, &dst, &[rows, f]);
            b.index_add(&mut d1, Indices::held(&list), &mt)
                .expect("index_add, backend list");
            let mut d2 = up(b, &dst, &[rows, f]);
            b.index_add(&mut d2, &idx, &mt).expect("index_add");
            assert_bits(&format!("scatter {case}"), &down(b, &d1), &down(b, &d2));
            let mut d3 = up(b, &dst, &[rows, f]);
            b.index_add(&mut d3, &plan, &mt).expect("index_add by plan");
            assert_bits(
                &format!("scatter by plan {case}"),
                &down(b, &d3),
                &down(b, &d2),
            );
            let with_rows = Indices::from(&idx).with_rows(rows);
            let s3 = b.segment_sum(&mt, with_rows).expect("segment_sum by list");

            let s1 = b
                .segment_sum(&mt, Indices::held(&list).with_rows(rows))
                .expect("segment_sum, backend list");
            let s2 = b.segment_sum(&mt, &plan).expect("segment_sum");
            assert_bits(&format!("segment_sum {case}"), &down(b, &s1), &down(b, &s2));
            assert_bits(
                &format!("segment_sum by list {case}"),
                &down(b, &s3),
                &down(b, &s2),
            );
            let m1 = b
                .segment_max(&mt, Indices::held(&list).with_rows(rows))
                .expect("segment_max, backend list");
            let m2 = b.segment_max(&mt, &plan).expect("segment_max");
            assert_bits(&format!("segment_max {case}"), &down(b, &m1), &down(b, &m2));
            let a1 = b
                .segment_softmax(&mt, Indices::held(&list).with_rows(rows))
                .expect("segment_softmax, backend list");
            let a2 = b.segment_softmax(&mt, &plan).expect("segment_softmax");
            assert_bits(&format!("softmax {case}"), &down(b, &a1), &down(b, &a2));
            let a3 = b
                .segment_softmax(&mt, with_rows)
                .expect("segment_softmax by list");
            assert_bits(
                &format!("softmax by list {case}"),
                &down(b, &a3),
                &down(b, &a2),
            );
            let gr: Vec<f32> = values(34, e * f);
            let gt = up(b, &gr, &[e, f]);
            let k1 = b
                .segment_softmax_backward(&a1, &gt, Indices::held(&list).with_rows(rows))
                .expect("backward, backend list");
            let k2 = b
                .segment_softmax_backward(&a2, &gt, &plan)
                .expect("backward");
            assert_bits(&format!("softmax bwd {case}"), &down(b, &k1), &down(b, &k2));
        }
        // the fused gathers: gather from `rows` rows by the list, scatter by it too
        let (heads, c) = (2usize, 3usize);
        let x: Vec<f64> = values(35, rows * heads * c);
        let xt = up(b, &x, &[rows, heads * c]);
        let w: Vec<f64> = values(36, e * heads);
        let wt = up(b, &w, &[e, heads]);
        let g1 = b
            .gather_scale_scatter(
                &xt,
                Indices::held(&list),
                &wt,
                Indices::held(&list).with_rows(rows),
            )
            .expect("gather_scale_scatter, backend list");
        let g2 = b
            .gather_scale_scatter(&xt, &idx, &wt, &plan)
            .expect("gather_scale_scatter");
        assert_bits(&format!("gss {name}"), &down(b, &g1), &down(b, &g2));
        let h1 = b
            .gather_head_dot(&xt, Indices::held(&list), &xt, Indices::held(&list), heads)
            .expect("gather_head_dot, backend list");
        let h2 = b
            .gather_head_dot(&xt, &idx, &xt, &idx, heads)
            .expect("gather_head_dot");
        assert_bits(&format!("ghd {name}"), &down(b, &h1), &down(b, &h2));
        let a1 = b
            .gather_add(&xt, Indices::held(&list), &xt, Indices::held(&list))
            .expect("gather_add, backend list");
        let a2 = b.gather_add(&xt, &idx, &xt, &idx).expect("gather_add");
        assert_bits(&format!("gather_add {name}"), &down(b, &a1), &down(b, &a2));
        let a3 = b
            .gather_add(&xt, &plan, &xt, &plan)
            .expect("gather_add by plan");
        assert_bits(
            &format!("gather_add by plan {name}"),
            &down(b, &a3),
            &down(b, &a2),
        );
    }
}

/// Row counts: a list without one where an op creates the tensor its
/// entries address, a list or plan whose row count is not its tensor's, a
/// plan of another row count than the destination: each
/// `Error::ShapeMismatch` naming both counts, the destination untouched;
/// and a list's row count does not loosen the range check.
pub fn index_row_counts<B: Backend>(b: &B) {
    let idx = vec![0u32, 2, 2, 1];
    let x = up(b, &[1.0f32, 2.0, 3.0, 4.0], &[4, 1]);
    let mismatch = |e: Error, want: &str| match &e {
        Error::ShapeMismatch { detail, .. } if detail.contains(want) => {}
        _ => panic!("want a shape mismatch naming {want:?}, got {e}"),
    };
    let e = b.segment_sum(&x, &idx).expect_err("a list without rows");
    mismatch(e, "without a row count");
    let e = b.segment_max(&x, Indices::held(&b.index_from_host(&idx).unwrap()));
    mismatch(
        e.expect_err("a backend list without rows"),
        "without a row count",
    );
    let src = up(b, &[5.0f32, 6.0, 7.0], &[3, 1]);
    let e = b.index_select(&src, Indices::from(&idx).with_rows(4));
    mismatch(e.expect_err("rows 4 for a source of 3"), "4 rows");
    let before = [9.0f32, 8.0, 7.0, 6.0];
    let mut dst = up(b, &before, &[4, 1]);
    let plan = IndexPlan::new(&idx, 3).unwrap();
    let e = b
        .index_add(&mut dst, &plan, &x)
        .expect_err("a plan of 3 rows into 4");
    mismatch(e, "3 rows");
    assert_eq!(down(b, &dst), before, "destination untouched");
    let e = b
        .index_add(&mut dst, Indices::from(&idx).with_rows(3), &x)
        .expect_err("a list said to address 3 rows into 4");
    mismatch(e, "3 rows");
    let e = b
        .segment_sum(&x, Indices::from(&plan).with_rows(4))
        .expect_err("a plan of 3 rows said to address 4");
    mismatch(e, "said to address 4");
    assert_eq!(down(b, &dst), before, "destination untouched");
    let e = b
        .segment_sum(&x, Indices::from(&idx).with_rows(2))
        .expect_err("entry 2 in a list of 2 rows");
    assert!(
        matches!(e, Error::IndexOutOfRange { position: 1, .. }),
        "{e}"
    );
    let s = b
        .segment_sum(&x, Indices::from(&idx).with_rows(3))
        .expect("rows given");
    assert_eq!(down(b, &s), [1.0, 4.0, 5.0]);
}

/// Concatenation with offsets, the same bits twice, one list into
/// destinations of different sizes, and the errors: out of range (position,
/// value, bound; destination untouched), shapes, offset overflow.
pub fn index_list_edges<B: Backend>(b: &B) {
    let a = indices(41, 3000, 40, true);
    let c = indices(42, 500, 10, false);
    let (la, lc) = (
        b.index_from_host(&a).unwrap(),
        b.index_from_host(&c).unwrap(),
    );
    let cat = b
        .index_concat(&[(&la, 0), (&lc, 40), (&la, 50)])
        .expect("concat");
    let want = concat_shifted(&[(&a, 0), (&c, 40), (&a, 50)]).unwrap();
    assert_eq!(&*b.index_to_host(&cat).unwrap(), &want[..], "concat");
    let e = b
        .index_concat(&[(&la, 1), (&b.index_from_host(&[u32::MAX - 1]).unwrap(), 2)])
        .unwrap_err();
    assert!(
        matches!(
            e,
            Error::IndexOffsetOverflow {
                part: 1,
                offset: 2,
                ..
            }
        ),
        "{e}"
    );

    // one list, scattered twice (the same bits) and into a larger destination
    let f = 3;
    let msg: Vec<f32> = values(43, want.len() * f);
    let mt = up(b, &msg, &[want.len(), f]);
    let mut outs = Vec::new();
    for rows in [90usize, 90, 200] {
        let mut d = b.zeros::<f32>(&[rows, f]).unwrap();
        b.index_add(&mut d, Indices::held(&cat), &mt)
            .expect("index_add, backend list");
        let mut h = b.zeros::<f32>(&[rows, f]).unwrap();
        b.index_add(&mut h, &want, &mt).expect("index_add");
        let got = down(b, &d);
        assert_bits(&format!("concat scatter into {rows}"), &got, &down(b, &h));
        outs.push(got);
    }
    assert_bits("same bits twice", &outs[0], &outs[1]);

    // out of range: into fewer rows than the largest index (89 of `cat`)
    let dst: Vec<f32> = values(44, 60 * f);
    let mut d = up(b, &dst, &[60, f]);
    let err = b.index_add(&mut d, Indices::held(&cat), &mt).unwrap_err();
    let first = want.iter().position(|&i| i >= 60).unwrap();
    assert!(
        matches!(err, Error::IndexOutOfRange { position, value, bound: 60 }
            if position == first && value == u64::from(want[first])),
        "{err}"
    );
    assert_bits("dst untouched", &down(b, &d), &dst);
    let src = up(b, &dst, &[60, f]);
    let err = b.index_select(&src, Indices::held(&cat)).unwrap_err();
    assert!(
        matches!(err, Error::IndexOutOfRange { position, bound: 60, .. } if position == first),
        "{err}"
    );
    let err = b
        .segment_sum(&mt, Indices::held(&cat).with_rows(60))
        .unwrap_err();
    assert!(
        matches!(err, Error::IndexOutOfRange { bound: 60, .. }),
        "{err}"
    );
    // a fresh list whose first use is the failing scatter
    let fresh = b.index_from_host(&want).unwrap();
    let mut d = up(b, &dst, &[60, f]);
    let err = b.index_add(&mut d, Indices::held(&fresh), &mt).unwrap_err();
    assert!(
        matches!(err, Error::IndexOutOfRange { position, .. } if position == first),
        "{err}"
    );
    assert_bits("dst untouched (fresh list)", &down(b, &d), &dst);
    // shapes
    let short = up(b, &msg[..f * 10], &[10, f]);
    let mut d = b.zeros::<f32>(&[200, f]).unwrap();
    let err = b
        .index_add(&mut d, Indices::held(&cat), &short)
        .unwrap_err();
    assert!(matches!(err, Error::ShapeMismatch { .. }), "{err}");
    let err = b
        .segment_sum(&short, Indices::held(&cat).with_rows(200))
        .unwrap_err();
    assert!(matches!(err, Error::ShapeMismatch { .. }), "{err}");
}

/// `prepare_plans` over every case's list at once (held lists, the same
/// list twice, a host list and a host plan beside them), then each op by
/// the prepared list: the bits of the same op on a list never prepared.
/// Its errors: a list without rows (`ShapeMismatch`), an entry out of
/// range for its rows (`IndexOutOfRange` naming its position), the lists
/// still usable after it.
pub fn prepared_plans<B: Backend>(b: &B) {
    let cases = cases();
    let lists: Vec<_> = cases
        .iter()
        .map(|(_, idx, _)| b.index_from_host(idx).expect("index_from_host"))
        .collect();
    let mut prepared: Vec<Indices<'_, B>> = lists
        .iter()
        .zip(&cases)
        .map(|(l, (_, _, rows))| Indices::held(l).with_rows(*rows))
        .collect();
    prepared.push(Indices::held(&lists[0]).with_rows(cases[0].2));
    let (_, idx0, rows0) = &cases[0];
    let plan0 = IndexPlan::new(idx0, *rows0).expect("plan");
    prepared.push(Indices::from(&idx0[..]).with_rows(*rows0));
    prepared.push(Indices::from(&plan0));
    b.prepare_plans(&prepared).expect("prepare_plans");
    for ((name, idx, rows), list) in cases.iter().zip(&lists) {
        let f = 3;
        let src: Vec<f32> = values(61, idx.len() * f);
        let st = up(b, &src, &[idx.len(), f]);
        let base: Vec<f32> = values(62, rows * f);
        let fresh = b.index_from_host(idx).expect("index_from_host");
        // index_add and segment_sum by one list: (scatter, sum)
        let by = |l| {
            let mut d = up(b, &base, &[*rows, f]);
            b.index_add(&mut d, Indices::held(l).with_rows(*rows), &st)
                .expect("index_add");
            let seg = b
                .segment_sum(&st, Indices::held(l).with_rows(*rows))
                .expect("segment_sum");
            (down(b, &d), down(b, &seg))
        };
        let (got, want) = (by(list), by(&fresh));
        assert_bits(
            &format!("{name}: index_add by a prepared list"),
            &got.0,
            &want.0,
        );
        assert_bits(
            &format!("{name}: segment_sum by a prepared list"),
            &got.1,
            &want.1,
        );
    }
    let e = b
        .prepare_plans(&[Indices::held(&lists[0])])
        .expect_err("a list without rows");
    assert!(
        matches!(&e, Error::ShapeMismatch { detail, .. } if detail.contains("without a row count")),
        "{e}"
    );
    let bad = b
        .index_from_host(&[0, 1, 7, 2, 9])
        .expect("index_from_host");
    let e = b
        .prepare_plans(&[
            Indices::held(&lists[2]).with_rows(cases[2].2),
            Indices::held(&bad).with_rows(5),
        ])
        .expect_err("entry 7 of 5 rows");
    assert!(
        matches!(
            e,
            Error::IndexOutOfRange {
                position: 2,
                value: 7,
                bound: 5
            }
        ),
        "{e}"
    );
    let ok = b
        .segment_sum(
            &up(b, &[1.0f32; 5], &[5, 1]),
            Indices::held(&bad).with_rows(10),
        )
        .expect("the list into rows it fits");
    assert_eq!(down(b, &ok)[7], 1.0);
}
