//! Element types: `f32` and `f64` (sealed, so backends can dispatch on [`DType`]).

use std::fmt::Debug;
use std::ops::{Add, Div, Mul, Neg, Sub};

/// The element types backends support.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DType {
    /// 32-bit IEEE float.
    F32,
    /// 64-bit IEEE float.
    F64,
}

impl DType {
    /// Size of one element in bytes.
    pub fn size(self) -> usize {
        match self {
            DType::F32 => 4,
            DType::F64 => 8,
        }
    }

    /// The C type name (for kernel templates).
    pub fn c_name(self) -> &'static str {
        match self {
            DType::F32 => "float",
            DType::F64 => "double",
        }
    }
}

mod sealed {
    pub trait Sealed {}
    impl Sealed for f32 {}
    impl Sealed for f64 {}
}

/// A tensor element: `f32` or `f64`. Sealed: plain old data with no padding and
/// no invalid bit patterns, which [`bytes_of`] and [`vec_from_bytes`] rely on.
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
    /// Conversion from `f64` (rounding for `f32`).
    fn from_f64(x: f64) -> Self;
    /// Conversion to `f64` (exact).
    fn to_f64(self) -> f64;
    /// The bits, widened to `u64`, for bit-exact comparisons.
    fn to_bits_u64(self) -> u64;
    /// `e^self` by the portable algorithm of [`crate::exp`], the same bits
    /// as the CUDA kernels' `rexp`.
    fn exp(self) -> Self;
    /// Whether `self` is NaN.
    fn is_nan(self) -> bool;
}

impl Element for f32 {
    const DTYPE: DType = DType::F32;
    const ZERO: Self = 0.0;
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
    fn is_nan(self) -> bool {
        f32::is_nan(self)
    }
}

impl Element for f64 {
    const DTYPE: DType = DType::F64;
    const ZERO: Self = 0.0;
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
    fn is_nan(self) -> bool {
        f64::is_nan(self)
    }
}

/// The bytes of a slice of elements (native endianness).
pub fn bytes_of<T: Element>(s: &[T]) -> &[u8] {
    // SAFETY: T is f32 or f64 (sealed): no padding, every byte initialized;
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
    // SAFETY: v holds n elements = b.len() bytes; T is f32/f64 (sealed) for which
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
    }
}
