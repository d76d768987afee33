//! Shapes, layouts and permutation planning for rtx tensors. Knows nothing of
//! devices: backends ask it *what* a swap or permute must do, then do it.
//!
//! Sizes are `usize`, which this crate requires to be 64 bits wide, and every
//! element count is overflow-checked.
//!
//! ```
//! use rtx_tensor::{Layout, PermuteKind};
//! let l = Layout::contiguous(&[4_211_136, 1]).unwrap();
//! let p = l.plan_swap(0, 1).unwrap();
//! assert_eq!(p.kind, PermuteKind::Relabel); // [N,1] -> [1,N] shares the buffer
//! assert_eq!(p.output.shape(), &[1, 4_211_136]);
//! assert!(p.output.is_contiguous());
//! ```

use std::fmt;

const _: () = assert!(usize::BITS >= 64, "rtx-tensor needs 64-bit sizes");

/// Errors from shape and layout operations.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Error {
    /// The product of the dims does not fit in 64 bits.
    #[error("shape {shape:?}: element count overflows 64 bits")]
    Overflow {
        /// The offending shape.
        shape: Vec<usize>,
    },
    /// A dimension index is not below the rank.
    #[error("dim {dim} is out of range for a tensor of rank {rank} (shape {shape:?})")]
    DimOutOfRange {
        /// The dim asked for.
        dim: usize,
        /// The tensor's rank.
        rank: usize,
        /// The tensor's shape.
        shape: Vec<usize>,
    },
    /// A permutation is not a permutation of `0..rank`.
    #[error("{perm:?} is not a permutation of the {rank} dims of shape {shape:?}")]
    BadPermutation {
        /// The permutation given.
        perm: Vec<usize>,
        /// The tensor's rank.
        rank: usize,
        /// The tensor's shape.
        shape: Vec<usize>,
    },
    /// Strides and shape have different lengths.
    #[error("{strides} strides given for a shape of rank {rank}")]
    StrideRank {
        /// Number of strides.
        strides: usize,
        /// Rank of the shape.
        rank: usize,
    },
    /// The operation needs a contiguous layout.
    #[error("layout {0} is not contiguous; this operation needs a contiguous input")]
    NotContiguous(Layout),
    /// Host data whose length is not the element count of its shape.
    #[error("{len} elements given for shape {shape:?} ({expected} elements)")]
    LengthMismatch {
        /// Elements given.
        len: usize,
        /// The shape.
        shape: Vec<usize>,
        /// Elements the shape holds.
        expected: usize,
    },
}

/// `Result` with this crate's [`Error`].
pub type Result<T> = std::result::Result<T, Error>;

/// Number of elements of `shape`, checked for overflow.
///
/// # Errors
/// [`Error::Overflow`] when the product does not fit in `usize`.
pub fn numel(shape: &[usize]) -> Result<usize> {
    shape
        .iter()
        .try_fold(1usize, |acc, &d| acc.checked_mul(d))
        .ok_or_else(|| Error::Overflow {
            shape: shape.to_vec(),
        })
}

/// Row-major (C order) strides of `shape`, in elements.
///
/// # Errors
/// [`Error::Overflow`] when the element count overflows.
pub fn contiguous_strides(shape: &[usize]) -> Result<Vec<usize>> {
    numel(shape)?;
    let mut strides = vec![0; shape.len()];
    let mut acc = 1usize;
    for (s, &d) in strides.iter_mut().zip(shape).rev() {
        *s = acc;
        // cannot overflow: numel(shape) fits, and acc * d <= numel unless some
        // later dim is 0, in which case acc is 0 or stays small.
        acc = acc.saturating_mul(d);
    }
    Ok(strides)
}

/// A strided view of a buffer: shape, strides (in elements) and start offset.
#[derive(Clone, PartialEq, Eq)]
pub struct Layout {
    shape: Vec<usize>,
    strides: Vec<usize>,
    offset: usize,
    numel: usize,
}

impl fmt::Debug for Layout {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

impl fmt::Display for Layout {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:?} strides {:?}", self.shape, self.strides)?;
        if self.offset != 0 {
            write!(f, " offset {}", self.offset)?;
        }
        Ok(())
    }
}

impl Layout {
    /// The contiguous row-major layout of `shape`.
    ///
    /// # Errors
    /// [`Error::Overflow`] when the element count overflows.
    pub fn contiguous(shape: &[usize]) -> Result<Layout> {
        Ok(Layout {
            strides: contiguous_strides(shape)?,
            shape: shape.to_vec(),
            offset: 0,
            numel: numel(shape)?,
        })
    }

    /// An arbitrary strided layout.
    ///
    /// # Errors
    /// [`Error::StrideRank`] when lengths differ, [`Error::Overflow`] when the
    /// element count or the largest reachable offset overflows.
    pub fn strided(shape: &[usize], strides: &[usize], offset: usize) -> Result<Layout> {
        if shape.len() != strides.len() {
            return Err(Error::StrideRank {
                strides: strides.len(),
                rank: shape.len(),
            });
        }
        let numel = numel(shape)?;
        if numel > 0 {
            let overflow = || Error::Overflow {
                shape: shape.to_vec(),
            };
            shape
                .iter()
                .zip(strides)
                .try_fold(offset, |acc, (&d, &s)| {
                    (d - 1)
                        .checked_mul(s)
                        .and_then(|x| acc.checked_add(x))
                        .ok_or_else(overflow)
                })?;
        }
        Ok(Layout {
            shape: shape.to_vec(),
            strides: strides.to_vec(),
            offset,
            numel,
        })
    }

    /// The dims.
    pub fn shape(&self) -> &[usize] {
        &self.shape
    }

    /// The strides, in elements.
    pub fn strides(&self) -> &[usize] {
        &self.strides
    }

    /// Offset of element `[0, 0, ...]` in the buffer, in elements.
    pub fn offset(&self) -> usize {
        self.offset
    }

    /// Number of dims.
    pub fn rank(&self) -> usize {
        self.shape.len()
    }

    /// Number of elements.
    pub fn numel(&self) -> usize {
        self.numel
    }

    /// Whether the elements sit in row-major order, back to back, from `offset`.
    ///
    /// Tells the truth for any layout: dims of size 1 may carry any stride
    /// (they never move), an empty tensor is contiguous, every other dim must
    /// have exactly the row-major stride.
    pub fn is_contiguous(&self) -> bool {
        if self.numel == 0 {
            return true;
        }
        let mut expected = 1usize;
        for (&d, &s) in self.shape.iter().zip(&self.strides).rev() {
            if d != 1 && s != expected {
                return false;
            }
            expected *= d;
        }
        true
    }

    fn check_dim(&self, dim: usize) -> Result<()> {
        if dim < self.rank() {
            Ok(())
        } else {
            Err(Error::DimOutOfRange {
                dim,
                rank: self.rank(),
                shape: self.shape.clone(),
            })
        }
    }

    /// Plans `swap_dims(a, b)`; see [`Layout::plan_permute`].
    ///
    /// # Errors
    /// [`Error::DimOutOfRange`] for a bad dim, [`Error::NotContiguous`] for a
    /// strided input.
    pub fn plan_swap(&self, a: usize, b: usize) -> Result<PermutePlan> {
        self.check_dim(a)?;
        self.check_dim(b)?;
        let mut perm: Vec<usize> = (0..self.rank()).collect();
        perm.swap(a, b);
        self.plan_permute(&perm)
    }

    /// Plans a permutation: output dim `i` is input dim `perm[i]`.
    ///
    /// Unit dims are dropped and dims that stay adjacent and in order are
    /// merged, then the simplest sufficient operation is chosen:
    /// [`PermuteKind::Relabel`] when the memory order of the non-unit dims is
    /// unchanged (the output shares the buffer), [`PermuteKind::Transpose`]
    /// when what remains is a (batched) 2-D transpose of (possibly wide)
    /// elements, [`PermuteKind::Permute`] otherwise. The output layout always
    /// carries the contiguous strides of the output shape.
    ///
    /// # Errors
    /// [`Error::BadPermutation`], or [`Error::NotContiguous`] for a strided input.
    pub fn plan_permute(&self, perm: &[usize]) -> Result<PermutePlan> {
        let rank = self.rank();
        let mut seen = vec![false; rank];
        let valid = perm.len() == rank
            && perm
                .iter()
                .all(|&p| p < rank && !std::mem::replace(&mut seen[p], true));
        if !valid {
            return Err(Error::BadPermutation {
                perm: perm.to_vec(),
                rank,
                shape: self.shape.clone(),
            });
        }
        if !self.is_contiguous() {
            return Err(Error::NotContiguous(self.clone()));
        }
        let out_shape: Vec<usize> = perm.iter().map(|&p| self.shape[p]).collect();
        let output = Layout::contiguous(&out_shape)?;
        let kind = if self.numel == 0 {
            PermuteKind::Relabel
        } else {
            classify(&self.shape, perm)
        };
        Ok(PermutePlan { output, kind })
    }
}

/// What a permutation costs, decided by [`Layout::plan_permute`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PermuteKind {
    /// The non-unit dims keep their memory order: the output shares the input
    /// buffer with a new shape. No kernel, no copy.
    Relabel,
    /// The input, viewed as contiguous `[batch, rows, cols, inner]`, becomes
    /// `[batch, cols, rows, inner]`: a (batched) 2-D transpose whose elements
    /// are runs of `inner` contiguous values.
    Transpose {
        /// Independent matrices.
        batch: usize,
        /// Rows of each input matrix.
        rows: usize,
        /// Columns of each input matrix.
        cols: usize,
        /// Contiguous values per matrix element.
        inner: usize,
    },
    /// A general permutation of a contiguous input of shape `shape`:
    /// output dim `i` is input dim `perm[i]` (unit dims dropped, adjacent
    /// dims merged, so `shape.len() >= 3`).
    Permute {
        /// The simplified input shape.
        shape: Vec<usize>,
        /// The simplified permutation.
        perm: Vec<usize>,
    },
}

/// The plan for a permutation: the output layout and the operation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PermutePlan {
    /// Contiguous layout of the output shape.
    pub output: Layout,
    /// What must be done to produce it.
    pub kind: PermuteKind,
}

/// Simplifies (drop unit dims, merge dims that stay adjacent) and classifies.
fn classify(shape: &[usize], perm: &[usize]) -> PermuteKind {
    // Output-order runs of input dims: each run is a maximal sequence of
    // consecutive non-unit input dims that also appear consecutively, in order,
    // in the output.
    let kept: Vec<usize> = perm.iter().copied().filter(|&p| shape[p] != 1).collect();
    let mut runs: Vec<(usize, usize)> = Vec::new(); // (first input dim, last input dim)
    for &p in &kept {
        match runs.last_mut() {
            Some((_, last)) if next_nonunit(shape, *last) == Some(p) => *last = p,
            _ => runs.push((p, p)),
        }
    }
    // Input order of the runs and their merged sizes.
    let mut by_input: Vec<usize> = (0..runs.len()).collect();
    by_input.sort_by_key(|&r| runs[r].0);
    let size = |r: usize| -> usize {
        let (a, b) = runs[r];
        shape[a..=b].iter().product()
    };
    let in_shape: Vec<usize> = by_input.iter().map(|&r| size(r)).collect();
    // out dim j is run j; its position in input order:
    let mut perm_s = vec![0; runs.len()];
    for (pos, &r) in by_input.iter().enumerate() {
        perm_s[r] = pos;
    }
    match perm_s.as_slice() {
        // The only order-keeping results: two runs that are consecutive in
        // the input and in the output would have been merged into one above,
        // so after merging an identity permutation has at most one run (none
        // when every dim is a unit dim). Every longer `perm_s` moves a dim.
        [] | [0] => PermuteKind::Relabel,
        [1, 0] => PermuteKind::Transpose {
            batch: 1,
            rows: in_shape[0],
            cols: in_shape[1],
            inner: 1,
        },
        [0, 2, 1] => PermuteKind::Transpose {
            batch: in_shape[0],
            rows: in_shape[1],
            cols: in_shape[2],
            inner: 1,
        },
        [1, 0, 2] => PermuteKind::Transpose {
            batch: 1,
            rows: in_shape[0],
            cols: in_shape[1],
            inner: in_shape[2],
        },
        [0, 2, 1, 3] => PermuteKind::Transpose {
            batch: in_shape[0],
            rows: in_shape[1],
            cols: in_shape[2],
            inner: in_shape[3],
        },
        p => PermuteKind::Permute {
            shape: in_shape,
            perm: p.to_vec(),
        },
    }
}

fn next_nonunit(shape: &[usize], after: usize) -> Option<usize> {
    (after + 1..shape.len()).find(|&d| shape[d] != 1)
}

/// Permutes a contiguous row-major buffer on the host: the naive reference.
/// Output dim `i` is input dim `perm[i]`; the output is contiguous.
///
/// # Errors
/// As [`Layout::plan_permute`]; [`Error::LengthMismatch`] when `data.len()`
/// differs from the shape's element count.
pub fn permute_host<T: Copy>(data: &[T], shape: &[usize], perm: &[usize]) -> Result<Vec<T>> {
    let layout = Layout::contiguous(shape)?;
    let plan = layout.plan_permute(perm)?;
    if data.len() != layout.numel() {
        return Err(Error::LengthMismatch {
            len: data.len(),
            shape: shape.to_vec(),
            expected: layout.numel(),
        });
    }
    let in_strides = layout.strides();
    let out_shape = plan.output.shape();
    let mut out = Vec::with_capacity(data.len());
    let mut idx = vec![0usize; shape.len()];
    for _ in 0..data.len() {
        let src: usize = idx
            .iter()
            .enumerate()
            .map(|(i, &x)| x * in_strides[perm[i]])
            .sum();
        out.push(data[src]);
        for d in (0..idx.len()).rev() {
            idx[d] += 1;
            if idx[d] < out_shape[d] {
                break;
            }
            idx[d] = 0;
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn numel_overflow_is_an_error() {
        assert_eq!(numel(&[2, 3, 4]), Ok(24));
        assert_eq!(numel(&[]), Ok(1));
        assert!(matches!(
            numel(&[usize::MAX, 2]),
            Err(Error::Overflow { .. })
        ));
        assert!(Layout::contiguous(&[1 << 40, 1 << 40]).is_err());
    }

    #[test]
    fn contiguous_strides_are_row_major() {
        assert_eq!(contiguous_strides(&[2, 3, 4]).unwrap(), vec![12, 4, 1]);
        assert_eq!(contiguous_strides(&[5]).unwrap(), vec![1]);
        assert_eq!(contiguous_strides(&[3, 0, 2]).unwrap(), vec![0, 2, 1]);
    }

    #[test]
    fn is_contiguous_tells_the_truth() {
        assert!(Layout::contiguous(&[2, 3]).unwrap().is_contiguous());
        // transposed view: not contiguous
        assert!(
            !Layout::strided(&[3, 2], &[1, 3], 0)
                .unwrap()
                .is_contiguous()
        );
        // unit dims may carry any stride
        assert!(
            Layout::strided(&[3, 1, 2], &[2, 99, 1], 0)
                .unwrap()
                .is_contiguous()
        );
        // the field bug: a [3,4] input's strides swapped and stamped on its [4,3] output
        assert!(
            !Layout::strided(&[4, 3], &[1, 4], 0)
                .unwrap()
                .is_contiguous()
        );
        // empty
        assert!(
            Layout::strided(&[0, 3], &[7, 7], 0)
                .unwrap()
                .is_contiguous()
        );
        // gaps
        assert!(
            !Layout::strided(&[2, 2], &[4, 1], 0)
                .unwrap()
                .is_contiguous()
        );
    }

    #[test]
    fn vector_swap_is_a_relabel() {
        for shape in [[4_211_136usize, 1], [1, 4_211_136]] {
            let p = Layout::contiguous(&shape).unwrap().plan_swap(0, 1).unwrap();
            assert_eq!(p.kind, PermuteKind::Relabel);
            assert_eq!(p.output.shape(), &[shape[1], shape[0]]);
            assert_eq!(
                p.output.strides(),
                contiguous_strides(&[shape[1], shape[0]]).unwrap()
            );
        }
        let p = Layout::contiguous(&[7, 1, 5])
            .unwrap()
            .plan_swap(0, 1)
            .unwrap();
        assert_eq!(p.kind, PermuteKind::Relabel);
        assert_eq!(p.output.shape(), &[1, 7, 5]);
    }

    #[test]
    fn plans_transposes_and_permutes() {
        let t = |s: &[usize], a, b| Layout::contiguous(s).unwrap().plan_swap(a, b).unwrap().kind;
        assert_eq!(
            t(&[8, 9], 0, 1),
            PermuteKind::Transpose {
                batch: 1,
                rows: 8,
                cols: 9,
                inner: 1
            }
        );
        assert_eq!(
            t(&[2, 8, 9], 1, 2),
            PermuteKind::Transpose {
                batch: 2,
                rows: 8,
                cols: 9,
                inner: 1
            }
        );
        assert_eq!(
            t(&[8, 9, 4], 0, 1),
            PermuteKind::Transpose {
                batch: 1,
                rows: 8,
                cols: 9,
                inner: 4
            }
        );
        assert_eq!(
            t(&[2, 3, 4], 0, 2),
            PermuteKind::Permute {
                shape: vec![2, 3, 4],
                perm: vec![2, 1, 0]
            }
        );
        // unit dims between do not matter
        assert_eq!(
            t(&[8, 1, 9], 0, 2),
            PermuteKind::Transpose {
                batch: 1,
                rows: 8,
                cols: 9,
                inner: 1
            }
        );
        assert_eq!(t(&[3, 3], 1, 1), PermuteKind::Relabel);
    }

    #[test]
    fn bad_dims_are_errors() {
        let l = Layout::contiguous(&[2, 3]).unwrap();
        assert!(matches!(
            l.plan_swap(0, 2),
            Err(Error::DimOutOfRange {
                dim: 2,
                rank: 2,
                ..
            })
        ));
        assert!(matches!(
            l.plan_permute(&[0, 0]),
            Err(Error::BadPermutation { .. })
        ));
        assert!(matches!(
            l.plan_permute(&[0]),
            Err(Error::BadPermutation { .. })
        ));
        let strided = Layout::strided(&[3, 2], &[1, 3], 0).unwrap();
        assert!(matches!(
            strided.plan_swap(0, 1),
            Err(Error::NotContiguous(_))
        ));
    }

    #[test]
    fn permute_host_wrong_length_is_an_error() {
        let e = permute_host(&[1.0f32, 2.0, 3.0], &[2, 2], &[1, 0]).unwrap_err();
        assert_eq!(
            e,
            Error::LengthMismatch {
                len: 3,
                shape: vec![2, 2],
                expected: 4
            }
        );
        assert_eq!(
            e.to_string(),
            "3 elements given for shape [2, 2] (4 elements)"
        );
    }

    #[test]
    fn identity_permutations_are_relabels() {
        // after dropping unit dims and merging, an identity has at most one run
        for shape in [vec![2usize, 3, 4], vec![1, 1], vec![5, 1, 6, 1, 7]] {
            let id: Vec<usize> = (0..shape.len()).collect();
            let p = Layout::contiguous(&shape)
                .unwrap()
                .plan_permute(&id)
                .unwrap();
            assert_eq!(p.kind, PermuteKind::Relabel, "{shape:?}");
        }
    }

    #[test]
    fn field_bug_swap02_of_2x3x4() {
        let a: Vec<f32> = (0..24).map(|x| x as f32).collect();
        let b = permute_host(&a, &[2, 3, 4], &[2, 1, 0]).unwrap();
        // b has shape [4,3,2]; b[1][0][0] = a[0][0][1] = 1.0
        assert_eq!(b[6], 1.0);
        for i in 0..4 {
            for j in 0..3 {
                for k in 0..2 {
                    assert_eq!(b[i * 6 + j * 2 + k], a[k * 12 + j * 4 + i]);
                }
            }
        }
    }

    /// Applies a kind (as a backend would) to a contiguous buffer.
    fn apply(kind: &PermuteKind, data: &[u32], shape: &[usize], perm: &[usize]) -> Vec<u32> {
        match kind {
            PermuteKind::Relabel => data.to_vec(),
            PermuteKind::Transpose {
                batch,
                rows,
                cols,
                inner,
            } => {
                let mut out = vec![0; data.len()];
                for b in 0..*batch {
                    for r in 0..*rows {
                        for c in 0..*cols {
                            for i in 0..*inner {
                                out[((b * cols + c) * rows + r) * inner + i] =
                                    data[((b * rows + r) * cols + c) * inner + i];
                            }
                        }
                    }
                }
                out
            }
            PermuteKind::Permute { shape: s, perm: p } => {
                assert!(s.len() >= 3);
                let _ = (shape, perm);
                permute_host(data, s, p).unwrap()
            }
        }
    }

    proptest! {
        #[test]
        fn plan_agrees_with_naive_permute(
            shape in proptest::collection::vec(1usize..5, 1..6),
            seed in any::<u64>(),
        ) {
            let rank = shape.len();
            let mut perm: Vec<usize> = (0..rank).collect();
            let mut s = seed;
            for i in (1..rank).rev() {
                s = s.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                perm.swap(i, (s >> 33) as usize % (i + 1));
            }
            let n = numel(&shape).unwrap();
            let data: Vec<u32> = (0..n as u32).collect();
            let plan = Layout::contiguous(&shape).unwrap().plan_permute(&perm).unwrap();
            let want = permute_host(&data, &shape, &perm).unwrap();
            prop_assert_eq!(apply(&plan.kind, &data, &shape, &perm), want);
            prop_assert!(plan.output.is_contiguous());
            let out_shape: Vec<usize> = perm.iter().map(|&p| shape[p]).collect();
            prop_assert_eq!(plan.output.shape(), out_shape.as_slice());
            let strides = contiguous_strides(&out_shape).unwrap();
            prop_assert_eq!(plan.output.strides(), strides.as_slice());
        }
    }
}
