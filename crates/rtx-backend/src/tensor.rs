//! `Tensor`: a backend buffer (shared, reference-counted) plus a layout.

use std::sync::Arc;

use rtx_tensor::Layout;

/// A tensor: storage that never owns its shape (candle's rule), plus the
/// [`Layout`] that says how to read it. Backend tensors are always contiguous;
/// [`Tensor::relabel`] shares the buffer under a new shape.
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
    /// Wraps a backend buffer.
    ///
    /// # Panics
    /// When `layout` is not contiguous: backends only make contiguous tensors,
    /// so this is a backend bug, not bad user input.
    pub fn new(storage: S, layout: Layout) -> Self {
        assert!(
            layout.is_contiguous(),
            "backend tensors are contiguous, got {layout}"
        );
        Tensor {
            storage: Arc::new(storage),
            layout,
        }
    }

    /// The layout (always contiguous).
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
    /// [`Backend::make_unique`](crate::Backend::make_unique)).
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

    /// The same buffer under another contiguous layout of the same size.
    ///
    /// # Panics
    /// When the element count differs or `layout` is not contiguous (a bug in the caller's plan).
    pub fn relabel(&self, layout: Layout) -> Self {
        assert_eq!(
            layout.numel(),
            self.numel(),
            "relabel must keep the element count"
        );
        assert!(
            layout.is_contiguous(),
            "relabel to a non-contiguous layout {layout}"
        );
        Tensor {
            storage: Arc::clone(&self.storage),
            layout,
        }
    }
}
