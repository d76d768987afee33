//! `Tensor`: a backend buffer (shared, reference-counted) plus a layout.

use std::sync::Arc;

use rtx_tensor::Layout;

/// A tensor: storage that never owns its shape (candle's rule), plus the
/// [`Layout`] that says how to read it. A backend tensor's layout is always
/// exactly `Layout::contiguous(shape)` (offset 0, the row-major strides of its
/// shape), which [`Tensor::new`] and [`Tensor::relabel`] enforce, so every
/// op's output carries the contiguous strides of its shape by construction.
/// [`Tensor::relabel`] shares the buffer under a new shape.
///
/// The storage's length cannot be checked here (`S` is any backend's buffer):
/// that the buffer holds exactly [`Tensor::numel`] elements is the duty of
/// the backend that calls [`Tensor::new`].
#[derive(Debug)]
pub struct Tensor<S> {
    storage: Arc<S>,
    layout: Layout,
}

impl<S> Clone for Tensor<S> {
    /// Shares the buffer (no copy).
    fn clone(&self) -> Self {
        Tensor {
            storage: Arc::clone(&self.storage),
            layout: self.layout.clone(),
        }
    }
}

impl<S> Tensor<S> {
    /// Wraps a backend buffer of exactly `layout.numel()` elements (the
    /// caller's duty: it is not checked).
    ///
    /// # Panics
    /// When `layout` is not `Layout::contiguous(layout.shape())` (a nonzero
    /// offset, or strides other than the row-major strides of the shape,
    /// even on unit dims): backends only make such tensors, so this is a
    /// backend bug, not bad user input.
    pub fn new(storage: S, layout: Layout) -> Self {
        assert_canonical(&layout, "Tensor::new");
        Tensor {
            storage: Arc::new(storage),
            layout,
        }
    }

    /// The layout (always `Layout::contiguous(self.shape())`).
    pub fn layout(&self) -> &Layout {
        &self.layout
    }

    /// The shape.
    pub fn shape(&self) -> &[usize] {
        self.layout.shape()
    }

    /// Number of elements.
    pub fn numel(&self) -> usize {
        self.layout.numel()
    }

    /// The backend buffer.
    pub fn storage(&self) -> &S {
        &self.storage
    }

    /// The buffer for writing, if no other tensor shares it (see
    /// [`BackendCore::make_unique`](crate::BackendCore::make_unique)).
    pub fn storage_mut(&mut self) -> Option<&mut S> {
        Arc::get_mut(&mut self.storage)
    }

    /// Whether no other tensor shares this buffer.
    pub fn is_unique(&self) -> bool {
        Arc::strong_count(&self.storage) == 1
    }

    /// Whether `self` and `other` share one buffer.
    pub fn shares_storage_with(&self, other: &Tensor<S>) -> bool {
        Arc::ptr_eq(&self.storage, &other.storage)
    }

    /// The same buffer under another shape of the same size, with the layout
    /// `Layout::contiguous` of that shape.
    ///
    /// # Panics
    /// When the element count differs or `layout` is not
    /// `Layout::contiguous(layout.shape())` (a bug in the caller's plan).
    pub fn relabel(&self, layout: Layout) -> Self {
        assert_eq!(
            layout.numel(),
            self.numel(),
            "relabel must keep the element count"
        );
        assert_canonical(&layout, "Tensor::relabel");
        Tensor {
            storage: Arc::clone(&self.storage),
            layout,
        }
    }
}

/// Panics unless `layout` is exactly the contiguous layout of its shape.
fn assert_canonical(layout: &Layout, op: &str) {
    // A layout that exists has an element count that fits, so `contiguous`
    // of its shape cannot fail; a failure is reported as a mismatch anyway.
    assert!(
        Layout::contiguous(layout.shape()).is_ok_and(|c| c == *layout),
        "{op}: backend tensors carry the contiguous layout of their shape \
         (offset 0, row-major strides), got {layout}"
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn canonical_layouts_only() {
        let t = Tensor::new(vec![0u8; 6], Layout::contiguous(&[2, 3]).unwrap());
        let r = t.relabel(Layout::contiguous(&[3, 1, 2]).unwrap());
        assert!(r.shares_storage_with(&t));
        assert_eq!(r.layout().strides(), &[2, 2, 1]);
        let e = Tensor::new(Vec::<u8>::new(), Layout::contiguous(&[0, 4]).unwrap());
        assert_eq!(e.numel(), 0);
    }

    #[test]
    #[should_panic(expected = "contiguous layout of their shape")]
    fn unit_dim_with_odd_stride_is_refused() {
        // contiguous in memory order, but not the canonical strides
        let l = Layout::strided(&[3, 1, 2], &[2, 99, 1], 0).unwrap();
        assert!(l.is_contiguous());
        let _ = Tensor::new(vec![0u8; 6], l);
    }

    #[test]
    #[should_panic(expected = "contiguous layout of their shape")]
    fn offset_is_refused() {
        let _ = Tensor::new(vec![0u8; 7], Layout::strided(&[6], &[1], 1).unwrap());
    }

    #[test]
    #[should_panic(expected = "contiguous layout of their shape")]
    fn relabel_to_strided_is_refused() {
        let t = Tensor::new(vec![0u8; 6], Layout::contiguous(&[6]).unwrap());
        let _ = t.relabel(Layout::strided(&[6, 1], &[1, 5], 0).unwrap());
    }
}
