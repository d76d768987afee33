//! Fallible host allocation: a huge but valid size is an error value, never
//! an abort.

use crate::{Error, Result};

/// An empty vector with room for exactly `n` elements, reserved with
/// [`Vec::try_reserve_exact`]: a request the allocator refuses (or one past
/// `isize::MAX` bytes) is [`Error::HostAllocation`] instead of an abort.
///
/// # Errors
/// [`Error::HostAllocation`].
pub fn try_with_capacity<T>(n: usize) -> Result<Vec<T>> {
    let mut v = Vec::new();
    v.try_reserve_exact(n).map_err(|_| Error::HostAllocation {
        elements: n,
        element_bytes: std::mem::size_of::<T>(),
    })?;
    Ok(v)
}

/// `n` copies of `value` in fallibly reserved memory (see [`try_with_capacity`]).
///
/// # Errors
/// [`Error::HostAllocation`].
pub fn try_vec<T: Clone>(n: usize, value: T) -> Result<Vec<T>> {
    let mut v = try_with_capacity(n)?;
    v.resize(n, value);
    Ok(v)
}

/// A copy of `data` in fallibly reserved memory (see [`try_with_capacity`]).
///
/// # Errors
/// [`Error::HostAllocation`].
pub fn try_copy<T: Clone>(data: &[T]) -> Result<Vec<T>> {
    let mut v = try_with_capacity(data.len())?;
    v.extend_from_slice(data);
    Ok(v)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refused_requests_are_errors() {
        assert!(matches!(
            try_vec(usize::MAX / 2, 0u64),
            Err(Error::HostAllocation {
                element_bytes: 8,
                ..
            })
        ));
        assert!(try_with_capacity::<f32>(1 << 62).is_err());
        // a size that fits in isize but not in any address space: refused by
        // the allocator itself
        assert!(try_with_capacity::<u8>(1 << 60).is_err());
        assert_eq!(try_vec(3, 1.5f32).unwrap(), [1.5; 3]);
        assert_eq!(try_copy(&[1u32, 2]).unwrap(), [1, 2]);
    }
}
