//! [`BackendCore`] on the device: buffers, upload, download, zeros, copies,
//! and the device-to-device copy of a prefix that other ops share.

use cudarc::driver::result;
use rtx_backend::prelude::*;
use rtx_backend::{BTensor, Element, Error as BError, Result as BResult, Tensor, bytes_of};
use rtx_tensor::Layout;

use crate::backend::CudaBackend;
use crate::error::Result;
use crate::runtime::buffer::CudaBuffer;

impl BackendCore for CudaBackend {
    type Buffer<T: Element> = CudaBuffer<T>;

    fn name(&self) -> String {
        format!("cuda:{}", self.dev.ordinal)
    }

    fn upload<T: Element>(&self, data: &[T], shape: &[usize]) -> BResult<BTensor<Self, T>> {
        let layout = Layout::contiguous(shape)?;
        if layout.numel() != data.len() {
            return Err(BError::LengthMismatch {
                len: data.len(),
                shape: shape.to_vec(),
                expected: layout.numel(),
            });
        }
        let mem = self.dev.upload_bytes(bytes_of(data))?;
        Ok(Tensor::new(CudaBuffer::new(mem, data.len()), layout))
    }

    fn download<T: Element>(&self, t: &BTensor<Self, T>) -> BResult<Vec<T>> {
        let mut out = vec![T::ZERO; t.numel()];
        // T is a sealed Element (plain bits); the buffer holds numel elements
        self.dev.read(t.storage().ptr(), &mut out, "a download")?;
        Ok(out)
    }

    fn zeros<T: Element>(&self, shape: &[usize]) -> BResult<BTensor<Self, T>> {
        let t = self.out::<T>(shape)?;
        self.zero(&t)?;
        Ok(t)
    }

    /// Device-to-device copy when the buffer is shared.
    fn make_unique<T: Element>(&self, t: &mut BTensor<Self, T>) -> BResult<()> {
        if t.is_unique() {
            return Ok(());
        }
        // recorded, the copy would live in graph memory that each replay
        // allocates afresh, and the in-place update would not carry over
        self.dev
            .refuse_while_recording("writing in place to a tensor whose buffer is shared")?;
        let copy = self.alloc_tensor::<T>(t.layout().clone())?;
        self.copy_prefix(&copy, t, copy.storage().bytes())?;
        *t = copy;
        Ok(())
    }

    fn synchronize(&self) -> BResult<()> {
        CudaBackend::synchronize(self).map_err(BError::from)
    }
}

impl CudaBackend {
    /// Copies the first `bytes` bytes of `src`'s buffer to the start of
    /// `dst`'s, on the backend's stream (one device-to-device copy, counted;
    /// nothing for 0 bytes).
    ///
    /// # Panics
    /// When either buffer holds fewer than `bytes` bytes or the two are one
    /// buffer (a bug of the caller: the copy must stay in bounds and not
    /// overlap).
    pub(super) fn copy_prefix<T: Element>(
        &self,
        dst: &BTensor<Self, T>,
        src: &BTensor<Self, T>,
        bytes: usize,
    ) -> Result<()> {
        assert!(
            bytes <= dst.storage().bytes() && bytes <= src.storage().bytes(),
            "copy_prefix: {bytes} bytes past a buffer"
        );
        assert!(!dst.shares_storage_with(src), "copy_prefix: one buffer");
        if bytes == 0 {
            return Ok(());
        }
        self.dev.ctx.bind_to_thread()?;
        // SAFETY: both allocations hold at least `bytes` bytes (checked
        // above) and are distinct, so they do not overlap.
        unsafe {
            result::memcpy_dtod_async(
                dst.storage().ptr().addr(),
                src.storage().ptr().addr(),
                bytes,
                self.dev.stream.cu_stream(),
            )
        }?;
        self.dev.activity.copy();
        Ok(())
    }
}
