//! [`BackendCore`] on the device: buffers, upload, download, zeros, copies.

use cudarc::driver::result;
use rtx_backend::prelude::*;
use rtx_backend::{BTensor, Element, Error as BError, Result as BResult, Tensor, bytes_of};
use rtx_tensor::Layout;

use crate::backend::CudaBackend;
use crate::error::Error;
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
        let bytes = copy.storage().bytes();
        if bytes > 0 {
            self.dev.ctx.bind_to_thread().map_err(Error::from)?;
            // SAFETY: both allocations hold `bytes` bytes and do not overlap.
            unsafe {
                result::memcpy_dtod_async(
                    copy.storage().ptr().addr(),
                    t.storage().ptr().addr(),
                    bytes,
                    self.dev.stream.cu_stream(),
                )
            }
            .map_err(Error::from)?;
            self.dev.activity.copy();
        }
        *t = copy;
        Ok(())
    }

    fn synchronize(&self) -> BResult<()> {
        CudaBackend::synchronize(self).map_err(BError::from)
    }
}
