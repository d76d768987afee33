//! The index-op cases: gather, scatter-add and their errors.

use super::harness::{assert_bits, bits, down, up};
use crate::order::{CANONICAL_BLOCK, canonical_levels};
use crate::workload::{indices, splitmix64, values};
use crate::{Backend, Error, IndexPlan, reference};

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
    let g = b.index_select(&t, &[0u32; 0]).expect("empty gather");
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
        b.index_add(&mut d, &plan, &up(b, &src, &[e, f]))
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
