//! The one `exp` of every backend: a portable algorithm of plain IEEE
//! operations (round-to-nearest `+`, `-`, `*`, `floor` and exact power-of-two
//! scaling, no fused multiply-add), so the host and kernels/model.cuh's
//! `rexp` compute it with the same operations in the same order and get the
//! same bits. The CPU and CUDA backends then train the HetGAT to the same
//! loss bits (a platform `exp` differs between libm and the device's math
//! library in the last bit).
//!
//! Cody-Waite reduction `x = k ln2 + r`, `|r| <= ln2 / 2`, then the Taylor
//! polynomial of `e^r` by Horner and the scaling by `2^k`: degree 13 in
//! `f64` (truncation below `2^-57` relative; about 1 ulp), degree 7 in `f32`
//! arithmetic for `f32` (truncation below `2^-27`; at most 2 ulp), so the
//! `f32` chain stays short in the device's latency-bound fused softmax.
//! kernels/model.cuh's `rexp64` / `rexp32` are the same code line for line;
//! a GPU test compares them with these over a sweep of inputs.
//!
//! [`ln64`] / [`ln32`] are the one `ln` (the cross-entropy's log-sum-exp),
//! portable the same way: kernels/model.cuh's `rln64` / `rln32`.

/// `log2(e)` (1.4426950408889634, the literal kernels/model.cuh spells out).
const LOG2E: f64 = std::f64::consts::LOG2_E;
/// `ln 2` split in two: the high part has trailing zeros, so `k * LN2_HI` is exact.
const LN2_HI: f64 = 0.6931471803691238;
const LN2_LO: f64 = 1.9082149292705877e-10;
/// `1 / n!` for n = 13 down to 2.
const INV_FACT: [f64; 12] = [
    1.6059043836821613e-10,
    2.08767569878681e-09,
    2.505210838544172e-08,
    2.755731922398589e-07,
    2.7557319223985893e-06,
    2.48015873015873e-05,
    0.0001984126984126984,
    0.001388888888888889,
    0.008333333333333333,
    0.041666666666666664,
    0.16666666666666666,
    0.5,
];

/// `2^k` for `-1022 <= k <= 1023`.
fn pow2(k: i64) -> f64 {
    f64::from_bits(((k + 1023) as u64) << 52)
}

/// `e^x` in `f64` (see the module docs).
pub fn exp64(x: f64) -> f64 {
    if x.is_nan() {
        return x;
    }
    if x > 709.782712893384 {
        return f64::INFINITY;
    }
    if x < -745.1332191019412 {
        return 0.0;
    }
    let k = (x * LOG2E + 0.5).floor();
    let r = (x - k * LN2_HI) - k * LN2_LO;
    let mut p = INV_FACT[0];
    for c in &INV_FACT[1..] {
        p = p * r + c;
    }
    p = p * r + 1.0;
    p = p * r + 1.0;
    let k = k as i64;
    if k > 1000 {
        p * pow2(1000) * pow2(k - 1000)
    } else if k < -1000 {
        p * pow2(k + 600) * pow2(-600)
    } else {
        p * pow2(k)
    }
}

/// `log2(e)` in `f32` (1.4426950216293335).
const LOG2E_F: f32 = std::f32::consts::LOG2_E;
// The f32 literals below are the exact values of the f32 constants, spelled
// in full (as kernels/model.cuh spells them), hence more digits than f32 needs.
/// `ln 2` split for `f32`: 16 significant bits in the high part, so
/// `k * LN2_HI_F` is exact for every `|k| <= 256`.
#[allow(clippy::excessive_precision)]
const LN2_HI_F: f32 = 0.693145751953125;
#[allow(clippy::excessive_precision)]
const LN2_LO_F: f32 = 1.428606765330187e-06;
/// `1 / n!` in `f32` for n = 7 down to 2.
#[allow(clippy::excessive_precision)]
const INV_FACT_F: [f32; 6] = [
    0.00019841270113829523,
    0.0013888889225199819,
    0.008333333767950535,
    0.0416666679084301,
    0.1666666716337204,
    0.5,
];

/// `2^k` in `f32` for `-126 <= k <= 127`.
fn pow2f(k: i32) -> f32 {
    f32::from_bits(((k + 127) as u32) << 23)
}

/// `e^x` in `f32`, in `f32` arithmetic (see the module docs).
pub fn exp32(x: f32) -> f32 {
    if x.is_nan() {
        return x;
    }
    if x > 88.72284 {
        return f32::INFINITY;
    }
    if x < -104.0 {
        return 0.0;
    }
    let k = (x * LOG2E_F + 0.5).floor();
    let r = (x - k * LN2_HI_F) - k * LN2_LO_F;
    let mut p = INV_FACT_F[0];
    for c in &INV_FACT_F[1..] {
        p = p * r + c;
    }
    p = p * r + 1.0;
    p = p * r + 1.0;
    let k = k as i32;
    if k > 126 {
        p * pow2f(64) * pow2f(k - 64)
    } else if k < -126 {
        p * pow2f(k + 64) * pow2f(-64)
    } else {
        p * pow2f(k)
    }
}

/// `1 / (2n + 1)` for n = 11 down to 1: the series of `atanh` (see [`ln64`]).
const INV_ODD: [f64; 11] = [
    0.043478260869565216,
    0.047619047619047616,
    0.05263157894736842,
    0.058823529411764705,
    0.06666666666666667,
    0.07692307692307693,
    0.09090909090909091,
    0.1111111111111111,
    0.14285714285714285,
    0.2,
    0.3333333333333333,
];
/// `2^54`, which lifts a subnormal into the normal range exactly.
const TWO54: f64 = 18_014_398_509_481_984.0;

/// `ln x` in `f64`, the portable log of every backend (kernels/model.cuh's
/// `rln64` is the same code line for line): `x = 2^k m` with `m` in
/// `[sqrt(1/2), sqrt(2)]` (exact bit moves), `f = (m - 1) / (m + 1)`,
/// `ln m = 2 atanh f = 2 (f + f^3 p(f^2))` with `p` the series
/// `1/3 + w/5 + ... + w^10/23` by Horner (truncation below `2^-60`
/// relative), then `k LN2_HI + (k LN2_LO + ln m)` (`k LN2_HI` exact). Plain
/// IEEE operations, no fused multiply-add. Accuracy: within 2 ulp of the
/// correctly rounded log over the whole range (the host test sweeps it
/// against `f64::ln`). `ln(NaN)` and `ln` of a negative number are NaN,
/// `ln(±0) = -inf`, `ln(+inf) = +inf`, `ln 1 = +0`.
pub fn ln64(x: f64) -> f64 {
    if x.is_nan() || x < 0.0 {
        return f64::NAN;
    }
    if x == 0.0 {
        return f64::NEG_INFINITY;
    }
    if x == f64::INFINITY {
        return x;
    }
    let mut bits = x.to_bits();
    let mut k: i64 = 0;
    if bits >> 52 == 0 {
        bits = (x * TWO54).to_bits();
        k = -54;
    }
    k += (bits >> 52) as i64 - 1023;
    let mut m = f64::from_bits((bits & 0x000f_ffff_ffff_ffff) | 0x3ff0_0000_0000_0000);
    if m > std::f64::consts::SQRT_2 {
        m *= 0.5;
        k += 1;
    }
    let f = (m - 1.0) / (m + 1.0);
    let w = f * f;
    let mut p = INV_ODD[0];
    for c in &INV_ODD[1..] {
        p = p * w + c;
    }
    let lnm = 2.0 * (f + (f * w) * p);
    let kf = k as f64;
    kf * LN2_HI + (kf * LN2_LO + lnm)
}

// As above, the exact values of the f32 constants spelled in full.
/// `1 / (2n + 1)` in `f32` for n = 5 down to 1.
#[allow(clippy::excessive_precision)]
const INV_ODD_F: [f32; 5] = [
    0.09090909361839294,
    0.1111111119389534,
    0.1428571492433548,
    0.20000000298023224,
    0.3333333432674408,
];
/// `sqrt(2)` in `f32`.
#[allow(clippy::excessive_precision)]
const SQRT2_F: f32 = 1.4142135381698608;
/// `2^25`, which lifts an `f32` subnormal into the normal range exactly.
const TWO25_F: f32 = 33_554_432.0;

/// `ln x` in `f32`, in `f32` arithmetic: [`ln64`]'s algorithm with the
/// series to `w^4/11` (truncation below `2^-29` relative) and `ln 2` split
/// as in [`exp32`]; kernels/model.cuh's `rln32` is the same code line for
/// line. Accuracy: within 2 ulp of the correctly rounded log (the host test
/// sweeps every exponent against `f64::ln`). Special values as [`ln64`].
pub fn ln32(x: f32) -> f32 {
    if x.is_nan() || x < 0.0 {
        return f32::NAN;
    }
    if x == 0.0 {
        return f32::NEG_INFINITY;
    }
    if x == f32::INFINITY {
        return x;
    }
    let mut bits = x.to_bits();
    let mut k: i32 = 0;
    if bits >> 23 == 0 {
        bits = (x * TWO25_F).to_bits();
        k = -25;
    }
    k += (bits >> 23) as i32 - 127;
    let mut m = f32::from_bits((bits & 0x007f_ffff) | 0x3f80_0000);
    if m > SQRT2_F {
        m *= 0.5;
        k += 1;
    }
    let f = (m - 1.0) / (m + 1.0);
    let w = f * f;
    let mut p = INV_ODD_F[0];
    for c in &INV_ODD_F[1..] {
        p = p * w + c;
    }
    let lnm = 2.0 * (f + (f * w) * p);
    let kf = k as f32;
    kf * LN2_HI_F + (kf * LN2_LO_F + lnm)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn close_to_the_platform_exp_everywhere() {
        let mut worst = 0.0f64;
        for i in -7440..=7090 {
            for frac in [0.0, 0.013, 0.5, 0.77] {
                let x = f64::from(i) / 10.0 + frac;
                let (got, want) = (exp64(x), x.exp());
                if want.is_finite() && want > 1e-300 {
                    let ulps = ((got - want) / want).abs() / f64::EPSILON;
                    worst = worst.max(ulps);
                }
            }
        }
        assert!(worst <= 2.0, "worst error {worst} ulp");
        for x in [
            -87.3f32, -10.5, -1.0, -1e-3, 0.0, 1e-7, 0.5, 1.0, 3.3, 20.0, 88.5,
        ] {
            let (got, want) = (exp32(x), x.exp());
            assert!(
                (got.to_bits() as i64 - want.to_bits() as i64).abs() <= 1,
                "exp32({x}) = {got}, platform {want}"
            );
        }
    }

    #[test]
    fn edges() {
        assert_eq!(exp64(0.0), 1.0);
        assert_eq!(exp64(-0.0), 1.0);
        // within one ulp of e (one above it)
        assert!((exp64(1.0).to_bits() as i64 - std::f64::consts::E.to_bits() as i64).abs() <= 1);
        assert_eq!(exp64(710.0), f64::INFINITY);
        assert_eq!(exp64(f64::INFINITY), f64::INFINITY);
        assert_eq!(exp64(f64::NEG_INFINITY), 0.0);
        assert_eq!(exp64(-746.0), 0.0);
        assert!(exp64(-740.0) > 0.0 && exp64(-740.0) < f64::MIN_POSITIVE);
        assert!(exp64(709.7).is_finite());
        assert!(exp64(f64::NAN).is_nan());
        assert_eq!(exp32(89.0), f32::INFINITY);
        assert_eq!(exp32(88.72284), f32::INFINITY);
        assert!(exp32(88.7228).is_finite());
        assert_eq!(exp32(-105.0), 0.0);
        assert!(exp32(-100.0) > 0.0 && exp32(-100.0) < f32::MIN_POSITIVE);
        assert_eq!(exp32(0.0), 1.0);
        assert!(exp32(f32::NAN).is_nan());
        assert_eq!(exp32(f32::NEG_INFINITY), 0.0);
    }
    /// Worst error in ulp of `ln64` / `ln32` over a sweep of every binade
    /// (normal and subnormal), against the platform's `f64::ln`.
    #[test]
    fn ln_close_to_the_platform_log_everywhere() {
        let mut worst = 0.0f64;
        let mut x = f64::from_bits(3); // a small subnormal (1.37 x grows it)
        while x < f64::MAX / 1.01 {
            for frac in [1.0, 1.0001, 1.1, 1.25, 1.4141, 1.4143, 1.5, 1.77, 1.99] {
                let y = x * frac;
                let (got, want) = (ln64(y), y.ln());
                if want != 0.0 {
                    let ulp = f64::EPSILON * f64::powi(2.0, want.abs().log2().floor() as i32);
                    worst = worst.max((got - want).abs() / ulp);
                }
            }
            x *= 1.37;
        }
        // near 1, where ln x is small and the reduction matters most
        for i in -2000..=2000 {
            let y = 1.0 + f64::from(i) * 1e-4;
            let (got, want) = (ln64(y), y.ln());
            if want != 0.0 {
                let ulp = f64::EPSILON * f64::powi(2.0, want.abs().log2().floor() as i32);
                worst = worst.max((got - want).abs() / ulp);
            }
        }
        eprintln!("ln64: worst error {worst} ulp");
        assert!(worst <= 2.0, "ln64: worst error {worst} ulp");

        let mut worst = 0.0f64;
        let mut x = f32::from_bits(3);
        while x < f32::MAX / 1.01 {
            for frac in [1.0f32, 1.0001, 1.1, 1.25, 1.4141, 1.4143, 1.5, 1.77, 1.99] {
                let y = x * frac;
                let (got, want) = (ln32(y), f64::from(y).ln());
                if want != 0.0 {
                    let ulp =
                        f64::from(f32::EPSILON) * f64::powi(2.0, want.abs().log2().floor() as i32);
                    worst = worst.max((f64::from(got) - want).abs() / ulp);
                }
            }
            x *= 1.37;
        }
        for i in -2000..=2000 {
            let y = 1.0f32 + i as f32 * 1e-4;
            let (got, want) = (ln32(y), f64::from(y).ln());
            if want != 0.0 {
                let ulp =
                    f64::from(f32::EPSILON) * f64::powi(2.0, want.abs().log2().floor() as i32);
                worst = worst.max((f64::from(got) - want).abs() / ulp);
            }
        }
        eprintln!("ln32: worst error {worst} ulp");
        assert!(worst <= 2.0, "ln32: worst error {worst} ulp");
    }

    #[test]
    fn ln_edges() {
        assert_eq!(ln64(1.0).to_bits(), 0.0f64.to_bits());
        assert_eq!(ln32(1.0).to_bits(), 0.0f32.to_bits());
        assert_eq!(ln64(0.0), f64::NEG_INFINITY);
        assert_eq!(ln64(-0.0), f64::NEG_INFINITY);
        assert_eq!(ln32(0.0), f32::NEG_INFINITY);
        assert_eq!(ln64(f64::INFINITY), f64::INFINITY);
        assert_eq!(ln32(f32::INFINITY), f32::INFINITY);
        assert!(ln64(-1.0).is_nan() && ln64(f64::NAN).is_nan() && ln64(f64::NEG_INFINITY).is_nan());
        assert!(ln32(-1.0).is_nan() && ln32(f32::NAN).is_nan());
        assert!((ln64(std::f64::consts::E) - 1.0).abs() <= 2.0 * f64::EPSILON);
        assert!((ln64(2.0) - std::f64::consts::LN_2).abs() <= f64::EPSILON);
        assert!((ln64(f64::from_bits(1)) - -744.4400719213812).abs() < 1e-12);
        assert!((ln32(f32::from_bits(1)) - -103.27893).abs() < 1e-4);
        // exp and ln invert each other closely
        for x in [-20.0, -1.5, 0.3, 7.0, 300.0] {
            assert!((ln64(exp64(x)) - x).abs() <= 4.0 * f64::EPSILON * x.abs().max(1.0));
        }
    }
}
