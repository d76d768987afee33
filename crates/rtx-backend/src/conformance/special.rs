//! The half-precision cases with hand-computed bits: NaN and infinity
//! propagation, subnormals, `-0.0`, overflow and ties when rounding to the
//! storage type, and a row whose sum rounds differently in any order but
//! the canonical one.

use super::harness::{down, up};
use crate::order::CANONICAL_BLOCK;
use crate::{Backend, Binary, Element, IndexPlan, Unary, bf16, f16};

/// Bits of a half type, or any NaN.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Want {
    Bits(u16),
    Nan,
}

fn check<T: Element>(case: &str, got: &[T], want: &[Want]) {
    assert_eq!(got.len(), want.len(), "{case}: length");
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        let ok = match *w {
            Want::Nan => g.is_nan(),
            Want::Bits(bits) => g.to_bits_u64() == u64::from(bits),
        };
        let w = match *w {
            Want::Nan => "a NaN".to_string(),
            Want::Bits(bits) => format!("{bits:#06x}"),
        };
        assert!(
            ok,
            "{case} ({}): element {i}: got {g:?} ({:#06x}), want {w}",
            T::DTYPE,
            g.to_bits_u64()
        );
    }
}

/// What differs between the two half types in these cases.
trait Half: Element {
    /// The smallest positive subnormal's bits are 0x0001 in both; its value.
    const MIN_SUB: f32;
    /// `x` with `1 + x` exactly halfway between 1 and the next value up.
    const HALF_ULP: f32;
    fn bits(x: f32) -> u16;
    fn of(x: f32) -> Self;
}

impl Half for bf16 {
    const MIN_SUB: f32 = f32::from_bits(0x0001_0000); // 2^-133
    const HALF_ULP: f32 = 1.0 / 256.0; // 2^-8
    fn bits(x: f32) -> u16 {
        bf16::from_f32(x).to_bits()
    }
    fn of(x: f32) -> Self {
        bf16::from_f32(x)
    }
}

impl Half for f16 {
    const MIN_SUB: f32 = 5.960_464_5e-8; // 2^-24
    const HALF_ULP: f32 = 1.0 / 2048.0; // 2^-11
    fn bits(x: f32) -> u16 {
        f16::from_f32(x).to_bits()
    }
    fn of(x: f32) -> Self {
        f16::from_f32(x)
    }
}

/// Scatter-add, elementwise ops and segment max on NaN, infinities,
/// subnormals, `-0.0`, overflow and ties, in `bf16` and `f16`, against
/// hand-computed bits.
pub fn half_special_values<B: Backend>(b: &B) {
    special_case::<B, bf16>(b);
    special_case::<B, f16>(b);
}

fn special_case<B: Backend, T: Half>(b: &B) {
    let (inf, nan) = (f32::INFINITY, f32::NAN);
    // the largest finite value
    let max = match T::DTYPE {
        crate::DType::F16 => f16::MAX.to_f32(),
        _ => bf16::MAX.to_f32(),
    };
    let h = T::HALF_ULP;
    let sub = T::MIN_SUB;
    assert_eq!(T::bits(sub), 1, "the smallest subnormal");
    // (destination, contributions, expected)
    let rows: Vec<(f32, Vec<f32>, Want)> = vec![
        (-0.0, vec![-0.0, -0.0], Want::Bits(0x8000)),
        (0.0, vec![1.0, nan, 2.0], Want::Nan),
        (0.0, vec![inf, -inf], Want::Nan),
        (5.0, vec![inf, 1.0], Want::Bits(T::bits(inf))),
        (0.0, vec![sub, sub, sub], Want::Bits(0x0003)),
        (0.0, vec![max, max], Want::Bits(T::bits(inf))),
        (-0.0, vec![-max, -max], Want::Bits(T::bits(-inf))),
        // ties to even: 1 + h is halfway (down to 1), 1 + 3h halfway (up)
        (0.0, vec![1.0, h], Want::Bits(T::bits(1.0))),
        (
            0.0,
            vec![1.0 + 2.0 * h, h],
            Want::Bits(T::bits(1.0 + 4.0 * h)),
        ),
        // exact cancellation: -0.0 + (+0.0) is +0.0
        (-0.0, vec![3.0, -3.0], Want::Bits(0x0000)),
        // untouched: the destination's bits, NaN included
        (nan, vec![], Want::Nan),
        (-0.0, vec![], Want::Bits(0x8000)),
    ];
    let mut idx = Vec::new();
    let mut src = Vec::new();
    for (r, (_, vals, _)) in rows.iter().enumerate() {
        for &v in vals {
            idx.push(r as u32);
            src.push(T::of(v));
        }
    }
    let dst: Vec<T> = rows.iter().map(|r| T::of(r.0)).collect();
    let mut d = up(b, &dst, &[rows.len(), 1]);
    b.index_add(&mut d, &idx, &up(b, &src, &[src.len(), 1]))
        .expect("index_add");
    let want: Vec<Want> = rows.iter().map(|r| r.2).collect();
    check("scatter-add specials", &down(b, &d), &want);

    // elementwise: one rounding of the f32 result, by hand
    let a = [1.0f32, -0.0, inf, nan, sub, max, 0.0, -2.0];
    let c = [0.0f32, -0.0, -inf, 1.0, sub, max, 0.0, 0.5];
    let (at, ct) = (up(b, &a.map(T::of), &[1, 8]), up(b, &c.map(T::of), &[1, 8]));
    let bits = |x: f32| Want::Bits(T::bits(x));
    let cases = [
        (
            Binary::Add,
            [
                bits(1.0),
                Want::Bits(0x8000),
                Want::Nan,
                Want::Nan,
                Want::Bits(0x0002),
                bits(inf),
                Want::Bits(0),
                bits(-1.5),
            ],
        ),
        (
            Binary::Mul,
            [
                Want::Bits(0),
                Want::Bits(0),
                bits(-inf),
                Want::Nan,
                Want::Bits(0), // underflow to +0.0
                bits(inf),
                Want::Bits(0),
                bits(-1.0),
            ],
        ),
        (
            Binary::Div,
            [
                bits(inf),
                Want::Nan,
                Want::Nan,
                Want::Nan,
                bits(1.0),
                bits(1.0),
                Want::Nan,
                bits(-4.0),
            ],
        ),
    ];
    for (op, want) in cases {
        let got = down(b, &b.binary(op, &at, &ct).expect("binary"));
        check(&format!("{} specials", op.name()), &got, &want);
    }
    let got = down(b, &b.unary(Unary::Relu, &at).expect("relu"));
    let relu = [
        bits(1.0),
        Want::Bits(0),
        bits(inf),
        Want::Nan,
        Want::Bits(1),
        bits(max),
        Want::Bits(0),
        Want::Bits(0),
    ];
    check("relu specials", &got, &relu);
    let got = down(b, &b.unary(Unary::Exp, &at).expect("exp"));
    check("exp(inf), exp(NaN)", &got[2..4], &[bits(inf), Want::Nan]);

    // segment max: the first maximum (of -0.0 and +0.0) wins, NaN sticks
    let groups: [(&[f32], Want); 4] = [
        (&[-0.0, 0.0], Want::Bits(0x8000)),
        (&[0.0, -0.0], Want::Bits(0)),
        (&[1.0, nan, 5.0], Want::Nan),
        (&[-inf, -inf], bits(-inf)),
    ];
    let (mut idx, mut x) = (Vec::new(), Vec::new());
    for (r, (vals, _)) in groups.iter().enumerate() {
        for &v in *vals {
            idx.push(r as u32);
            x.push(T::of(v));
        }
    }
    let plan = IndexPlan::new(&idx, groups.len()).expect("plan");
    let m = b
        .segment_max(&up(b, &x, &[x.len(), 1]), &plan)
        .expect("segment_max");
    let want: Vec<Want> = groups.iter().map(|g| g.1).collect();
    check("segment_max specials", &down(b, &m), &want);
}

/// A row whose sum rounds to a different half value in any other order
/// than the canonical one: `1`, the type's half-ulp `h` at 1, 254 zeros
/// (the first canonical block), then `2^-24` twice (the second block). The
/// canonical order adds the blocks' sums, `(1 + h) + 2^-23`, just above the
/// tie, so it rounds up to `1 + 2h`; a sequential sum loses each `2^-24`
/// (ties to even in f32) and rounds the exact tie `1 + h` down to 1; so does
/// accumulating in the storage type. The case checks both wrong orders
/// really give the other value, so it would catch them.
pub fn half_summation_order<B: Backend>(b: &B) {
    order_case::<B, bf16>(b);
    order_case::<B, f16>(b);
}

fn order_case<B: Backend, T: Half>(b: &B) {
    let h = T::HALF_ULP;
    let tiny = f32::powi(2.0, -24);
    let mut vals = vec![0.0f32; CANONICAL_BLOCK + 2];
    vals[0] = 1.0;
    vals[1] = h;
    vals[CANONICAL_BLOCK] = tiny;
    vals[CANONICAL_BLOCK + 1] = tiny;
    let src: Vec<T> = vals.iter().map(|&v| T::of(v)).collect();
    for (s, &v) in src.iter().zip(&vals) {
        assert_eq!(s.to_f32(), v, "the inputs are exact in {}", T::DTYPE);
    }
    let want = T::bits(1.0 + 2.0 * h);
    // the wrong orders give 1.0
    let sequential = vals.iter().skip(1).fold(vals[0], |s, &v| s + v);
    assert_ne!(T::bits(sequential), want, "a sequential f32 sum differs");
    let narrow = src
        .iter()
        .skip(1)
        .fold(src[0], |s, &v| T::of(s.to_f32() + v.to_f32()));
    assert_ne!(
        narrow.to_bits_u64(),
        u64::from(want),
        "a sum rounded to the storage type at every step differs"
    );
    // one destination row with all of them, and the same as a column of 2
    for f in [1usize, 2] {
        let idx = vec![0u32; vals.len()];
        let s2: Vec<T> = src
            .iter()
            .flat_map(|&v| std::iter::repeat_n(v, f))
            .collect();
        let mut d = b.zeros::<T>(&[1, f]).expect("zeros");
        b.index_add(&mut d, &idx, &up(b, &s2, &[vals.len(), f]))
            .expect("index_add");
        check(
            &format!("canonical-order sum, f = {f}"),
            &down(b, &d),
            &vec![Want::Bits(want); f],
        );
        let plan = IndexPlan::new(&idx, 1).expect("plan");
        let s = b
            .segment_sum(&up(b, &s2, &[vals.len(), f]), &plan)
            .expect("segment_sum");
        check(
            "canonical-order segment_sum",
            &down(b, &s),
            &vec![Want::Bits(want); f],
        );
    }
}
