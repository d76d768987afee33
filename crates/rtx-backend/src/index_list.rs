//! [`HostIndex`]: the [`IndexOps::Index`](crate::IndexOps::Index) of backends
//! whose index lists live in host memory, and [`host_index_list!`](crate::host_index_list), the items
//! such a backend writes in its `impl IndexOps`.

use std::sync::Arc;

use crate::{Error, Result};

/// An index list in host memory: the backend index list of host backends
/// (and of any backend that takes the defaults). Cheap to clone (shared).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostIndex(Arc<[u32]>);

impl HostIndex {
    /// A copy of `idx`.
    ///
    /// # Errors
    /// [`Error::TooManyIndices`] past `u32::MAX` entries (plans address
    /// positions with `u32`).
    pub fn new(idx: &[u32]) -> Result<HostIndex> {
        check_len(idx.len())?;
        Ok(HostIndex(idx.into()))
    }

    /// The entries.
    pub fn as_slice(&self) -> &[u32] {
        &self.0
    }
}

/// [`Error::TooManyIndices`] past `u32::MAX` entries.
///
/// # Errors
/// As said.
pub fn check_len(len: usize) -> Result<()> {
    if len > u32::MAX as usize {
        return Err(Error::TooManyIndices {
            len,
            max: u32::MAX as usize,
        });
    }
    Ok(())
}

/// The entries of `parts` one after another, each shifted by its offset.
///
/// # Errors
/// [`Error::IndexOffsetOverflow`] when an entry plus its offset passes
/// `u32::MAX`; [`Error::TooManyIndices`] past `u32::MAX` entries in all.
pub fn concat_shifted(parts: &[(&[u32], u32)]) -> Result<Vec<u32>> {
    let total = parts.iter().map(|(p, _)| p.len()).sum::<usize>();
    check_len(total)?;
    let mut out = crate::host_alloc::try_with_capacity(total)?;
    for (part, &(p, offset)) in parts.iter().enumerate() {
        if let Some(&max) = p.iter().max()
            && max.checked_add(offset).is_none()
        {
            return Err(Error::IndexOffsetOverflow { part, max, offset });
        }
        out.extend(p.iter().map(|&i| i + offset));
    }
    Ok(out)
}

/// The [`IndexOps`](crate::IndexOps) items of a backend whose index lists
/// are [`HostIndex`]es: write `rtx_backend::host_index_list!();` in its
/// `impl IndexOps`, and every other op may take its default.
#[macro_export]
macro_rules! host_index_list {
    () => {
        type Index = $crate::implement::HostIndex;

        fn index_from_host(&self, idx: &[u32]) -> $crate::Result<$crate::implement::HostIndex> {
            $crate::implement::HostIndex::new(idx)
        }

        fn index_to_host<'a>(
            &self,
            idx: &'a $crate::implement::HostIndex,
        ) -> $crate::Result<::std::borrow::Cow<'a, [u32]>> {
            Ok(::std::borrow::Cow::Borrowed(idx.as_slice()))
        }

        fn index_len(&self, idx: &$crate::implement::HostIndex) -> usize {
            idx.as_slice().len()
        }
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn concat_shifts_and_checks() {
        let a = [0u32, 2, 1];
        let b = [5u32];
        assert_eq!(
            concat_shifted(&[(&a, 10), (&b, 0), (&[], 7)]).unwrap(),
            [10, 12, 11, 5]
        );
        let e = concat_shifted(&[(&a, 1), (&[u32::MAX - 1], 2)]).unwrap_err();
        assert!(
            matches!(
                e,
                Error::IndexOffsetOverflow {
                    part: 1,
                    max: 4294967294,
                    offset: 2
                }
            ),
            "{e}"
        );
        assert_eq!(
            e.to_string(),
            "index list 1 of the concatenation: its largest index 4294967294 plus the offset 2 does not fit in u32"
        );
    }
}
