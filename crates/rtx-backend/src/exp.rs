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
}
