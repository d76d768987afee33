//! Element types: `f32`, `f64`, `bf16` and `f16` (sealed, so backends can
//! dispatch on [`DType`]).
//!
//! Every element has an accumulator type [`Element::Acc`]: itself for `f32`
//! and `f64`, `f32` for the two half types. Every op computes in `Acc`
//! (widening each input with [`Element::to_acc`], exactly) and rounds once when
//! it stores an output element ([`Element::from_acc`], round to nearest even:
//! exactly `half`'s `bf16::from_f32` / `f16::from_f32`). For `f32` and `f64`
//! both are the identity, so their bits are those of computing in `Self`.

pub use half::{bf16, f16};

use std::fmt::Debug;
use std::ops::{Add, Div, Mul, Neg, Sub};

/// The element types backends support.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DType {
    /// 32-bit IEEE float.
    F32,
    /// 64-bit IEEE float.
    F64,
    /// bfloat16: 8 exponent bits, 7 mantissa bits (`half::bf16`).
    BF16,
    /// IEEE binary16: 5 exponent bits, 10 mantissa bits (`half::f16`).
    F16,
}

impl DType {
    /// Size of one element in bytes.
    pub fn size(self) -> usize {
        match self {
            DType::F32 => 4,
            DType::F64 => 8,
            DType::BF16 | DType::F16 => 2,
        }
    }

    /// The C type name (for kernel templates).
    pub fn c_name(self) -> &'static str {
        match self {
            DType::F32 => "float",
            DType::F64 => "double",
            DType::BF16 => "__nv_bfloat16",
            DType::F16 => "__half",
        }
    }

    /// The short name (`f32`, `f64`, `bf16`, `f16`), for messages and bench rows.
    pub fn name(self) -> &'static str {
        match self {
            DType::F32 => "f32",
            DType::F64 => "f64",
            DType::BF16 => "bf16",
            DType::F16 => "f16",
        }
    }

    /// Whether this is a 2-byte type that computes in `f32`.
    pub fn is_half(self) -> bool {
        matches!(self, DType::BF16 | DType::F16)
    }
}

impl std::fmt::Display for DType {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

mod sealed {
    pub trait Sealed {}
    impl Sealed for f32 {}
    impl Sealed for f64 {}
    impl Sealed for half::bf16 {}
    impl Sealed for half::f16 {}
}

/// A tensor element: `f32`, `f64`, `bf16` or `f16`. Sealed: plain old data
/// with no padding and no invalid bit patterns, which [`bytes_of`] and
/// [`vec_from_bytes`] rely on.
pub trait Element:
    sealed::Sealed
    + Copy
    + Default
    + Debug
    + PartialEq
    + PartialOrd
    + Send
    + Sync
    + Add<Output = Self>
    + Sub<Output = Self>
    + Mul<Output = Self>
    + Div<Output = Self>
    + Neg<Output = Self>
    + 'static
{
    /// The runtime tag.
    const DTYPE: DType;
    /// Zero.
    const ZERO: Self;
    /// The type sums and products are computed in: `Self` for `f32` and
    /// `f64`, `f32` for `bf16` and `f16`.
    type Acc: Element<Acc = Self::Acc>;
    /// Widening to the accumulator (exact).
    fn to_acc(self) -> Self::Acc;
    /// Rounding from the accumulator, once, to nearest even (`half`'s
    /// `from_f32`: NaN stays NaN with its sign, overflow goes to infinity,
    /// `f16` keeps subnormals); the identity for `f32` and `f64`.
    fn from_acc(a: Self::Acc) -> Self;
    /// Conversion from `f32`, rounding once: the identity for `f32`, exact
    /// for `f64`, `half`'s `from_f32` (round to nearest even) for the half types.
    fn from_f32(x: f32) -> Self;
    /// Conversion to `f32`: exact for `f32`, `bf16` and `f16` (NaN payloads
    /// kept); Rust's `as` for `f64`.
    fn to_f32(self) -> f32;
    /// Conversion from `f64` (rounding once, to nearest even, for the
    /// narrower types).
    fn from_f64(x: f64) -> Self;
    /// Conversion to `f64` (exact).
    fn to_f64(self) -> f64;
    /// The bits, widened to `u64`, for bit-exact comparisons.
    fn to_bits_u64(self) -> u64;
    /// `e^self` by the portable algorithm of [`crate::exp`], the same bits
    /// as the CUDA kernels' `rexp`.
    fn exp(self) -> Self;
    /// `ln self` by the portable algorithm of [`crate::exp`] ([`crate::exp::ln64`],
    /// [`crate::exp::ln32`]), the same bits as the CUDA kernels' `rln`.
    fn ln(self) -> Self;
    /// The correctly rounded square root (IEEE; the device's `__fsqrt_rn` /
    /// `__dsqrt_rn`); computed in `f32` and rounded once for the half types.
    fn sqrt(self) -> Self;
    /// Whether `self` is NaN.
    fn is_nan(self) -> bool;
}

impl Element for f32 {
    const DTYPE: DType = DType::F32;
    const ZERO: Self = 0.0;
    type Acc = f32;
    fn to_acc(self) -> f32 {
        self
    }
    fn from_acc(a: f32) -> Self {
        a
    }
    fn from_f32(x: f32) -> Self {
        x
    }
    fn to_f32(self) -> f32 {
        self
    }
    fn from_f64(x: f64) -> Self {
        x as f32
    }
    fn to_f64(self) -> f64 {
        f64::from(self)
    }
    fn to_bits_u64(self) -> u64 {
        u64::from(self.to_bits())
    }
    fn exp(self) -> Self {
        crate::exp::exp32(self)
    }
    fn ln(self) -> Self {
        crate::exp::ln32(self)
    }
    fn sqrt(self) -> Self {
        f32::sqrt(self)
    }
    fn is_nan(self) -> bool {
        f32::is_nan(self)
    }
}

impl Element for f64 {
    const DTYPE: DType = DType::F64;
    const ZERO: Self = 0.0;
    type Acc = f64;
    fn to_acc(self) -> f64 {
        self
    }
    fn from_acc(a: f64) -> Self {
        a
    }
    fn from_f32(x: f32) -> Self {
        f64::from(x)
    }
    fn to_f32(self) -> f32 {
        self as f32
    }
    fn from_f64(x: f64) -> Self {
        x
    }
    fn to_f64(self) -> f64 {
        self
    }
    fn to_bits_u64(self) -> u64 {
        self.to_bits()
    }
    fn exp(self) -> Self {
        crate::exp::exp64(self)
    }
    fn ln(self) -> Self {
        crate::exp::ln64(self)
    }
    fn sqrt(self) -> Self {
        f64::sqrt(self)
    }
    fn is_nan(self) -> bool {
        f64::is_nan(self)
    }
}

/// `Element` for a half type: storage in 16 bits, arithmetic in `f32`.
macro_rules! half_element {
    ($t:ident, $tag:ident) => {
        impl Element for half::$t {
            const DTYPE: DType = DType::$tag;
            const ZERO: Self = half::$t::ZERO;
            type Acc = f32;
            fn to_acc(self) -> f32 {
                self.to_f32()
            }
            fn from_acc(a: f32) -> Self {
                half::$t::from_f32(a)
            }
            fn from_f32(x: f32) -> Self {
                half::$t::from_f32(x)
            }
            fn to_f32(self) -> f32 {
                half::$t::to_f32(self)
            }
            fn from_f64(x: f64) -> Self {
                half::$t::from_f64(x)
            }
            fn to_f64(self) -> f64 {
                half::$t::to_f64(self)
            }
            fn to_bits_u64(self) -> u64 {
                u64::from(self.to_bits())
            }
            /// `e^x` computed in `f32` and rounded once.
            fn exp(self) -> Self {
                Self::from_acc(crate::exp::exp32(self.to_f32()))
            }
            /// `ln x` computed in `f32` and rounded once.
            fn ln(self) -> Self {
                Self::from_acc(crate::exp::ln32(self.to_f32()))
            }
            /// `sqrt x` computed in `f32` and rounded once.
            fn sqrt(self) -> Self {
                Self::from_acc(self.to_f32().sqrt())
            }
            fn is_nan(self) -> bool {
                half::$t::is_nan(self)
            }
        }
    };
}

half_element!(bf16, BF16);
half_element!(f16, F16);

/// `x` widened to `f32`, element by element: exact for `bf16`, `f16` and
/// `f32` (an `f64` would round; the half-precision paths never pass one).
/// With [`round_f32`] it is how every op on a half type computes: the `f32`
/// op on the widened inputs, each output rounded once.
pub fn widen_f32<T: Element>(x: &[T]) -> Vec<f32> {
    x.iter().map(|&v| v.to_f32()).collect()
}

/// Each `f32` rounded once to `T` ([`Element::from_acc`] for the half
/// types: round to nearest even; the identity for `f32`; exact for `f64`).
pub fn round_f32<T: Element>(x: &[f32]) -> Vec<T> {
    x.iter().map(|&v| T::from_f32(v)).collect()
}

/// The bytes of a slice of elements (native endianness).
pub fn bytes_of<T: Element>(s: &[T]) -> &[u8] {
    // SAFETY: T is f32, f64, bf16 or f16 (sealed; the half types are
    // `repr(transparent)` over `u16`): no padding, every byte initialized;
    // u8 has alignment 1 and the length covers exactly the slice's bytes.
    unsafe { std::slice::from_raw_parts(s.as_ptr().cast::<u8>(), std::mem::size_of_val(s)) }
}

/// Elements from native-endian bytes.
///
/// # Panics
/// When `b.len()` is not a multiple of the element size.
pub fn vec_from_bytes<T: Element>(b: &[u8]) -> Vec<T> {
    let size = std::mem::size_of::<T>();
    assert!(
        b.len().is_multiple_of(size),
        "vec_from_bytes: {} bytes is not a whole number of {size}-byte elements",
        b.len()
    );
    let n = b.len() / size;
    let mut v = vec![T::ZERO; n];
    // SAFETY: v holds n elements = b.len() bytes; T is f32/f64/bf16/f16 (sealed) for which
    // every bit pattern is valid; the regions cannot overlap (v is fresh).
    unsafe { std::ptr::copy_nonoverlapping(b.as_ptr(), v.as_mut_ptr().cast::<u8>(), b.len()) };
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bytes_round_trip() {
        let v = [1.5f64, -0.0, f64::NAN];
        let back: Vec<f64> = vec_from_bytes(bytes_of(&v));
        assert_eq!(
            back.iter().map(|x| x.to_bits()).collect::<Vec<_>>(),
            v.iter().map(|x| x.to_bits()).collect::<Vec<_>>()
        );
        assert_eq!(bytes_of(&[1.0f32]).len(), 4);
        let h = [
            bf16::from_f32(1.5),
            bf16::NEG_ZERO,
            bf16::NAN,
            bf16::from_bits(0x0001),
        ];
        assert_eq!(bytes_of(&h).len(), 8);
        let back: Vec<bf16> = vec_from_bytes(bytes_of(&h));
        assert_eq!(
            back.iter().map(|x| x.to_bits()).collect::<Vec<_>>(),
            h.iter().map(|x| x.to_bits()).collect::<Vec<_>>()
        );
        let g = [f16::from_f32(-2.25), f16::from_bits(0x0001)];
        let back: Vec<f16> = vec_from_bytes(bytes_of(&g));
        assert_eq!(back[0].to_bits(), g[0].to_bits());
        assert_eq!(back[1].to_bits(), 1);
    }

    #[test]
    fn dtype_tags_and_sizes() {
        assert_eq!(<bf16 as Element>::DTYPE, DType::BF16);
        assert_eq!(<f16 as Element>::DTYPE, DType::F16);
        for (d, size) in [
            (DType::F32, 4),
            (DType::F64, 8),
            (DType::BF16, 2),
            (DType::F16, 2),
        ] {
            assert_eq!(d.size(), size, "{d}");
        }
        assert!(DType::BF16.is_half() && DType::F16.is_half() && !DType::F32.is_half());
    }

    #[test]
    fn acc_round_trip_is_exact_and_rounding_is_halfs() {
        // 1 + 2^-8 lies halfway between two bf16: ties to even (down to 1)
        let x = 1.0f32 + f32::powi(2.0, -8);
        assert_eq!(<bf16 as Element>::from_acc(x).to_bits(), 0x3f80);
        // 1 + 3 * 2^-8: halfway, ties to even (up)
        let y = 1.0f32 + 3.0 * f32::powi(2.0, -8);
        assert_eq!(<bf16 as Element>::from_acc(y).to_bits(), 0x3f82);
        // f16 overflow and subnormals
        assert!(<f16 as Element>::from_acc(70000.0).to_f32().is_infinite());
        assert_eq!(<f16 as Element>::from_acc(f32::powi(2.0, -24)).to_bits(), 1);
        for bits in (0u16..=u16::MAX).step_by(7) {
            // NaN comes back NaN with its sign (quieted, as `half` does)
            let h = bf16::from_bits(bits);
            let back = <bf16 as Element>::from_acc(h.to_acc());
            if h.is_nan() {
                assert!(back.is_nan() && back.is_sign_negative() == h.is_sign_negative());
            } else {
                assert_eq!(back.to_bits(), bits, "bf16 {bits:#06x}");
            }
            let g = f16::from_bits(bits);
            let back = <f16 as Element>::from_acc(g.to_acc());
            if g.is_nan() {
                assert!(back.is_nan() && back.is_sign_negative() == g.is_sign_negative());
            } else {
                assert_eq!(back.to_bits(), bits, "f16 {bits:#06x}");
            }
        }
        // the identity for f32 and f64
        assert_eq!(<f32 as Element>::from_acc(x).to_bits(), x.to_bits());
        assert_eq!(<f64 as Element>::from_acc(0.1).to_bits(), 0.1f64.to_bits());
    }
}
