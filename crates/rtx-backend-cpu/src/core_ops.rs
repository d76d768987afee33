//! [`BackendCore`] of the CPU backend: buffers are `Vec`s on the host.

use rtx_backend::implement::try_copy;
use rtx_backend::prelude::*;
use rtx_backend::{BTensor, Element, Error, Result, Tensor};
use rtx_tensor::Layout;

use crate::{CpuBackend, CpuBuffer};

impl BackendCore for CpuBackend {
    type Buffer<T: Element> = CpuBuffer<T>;

    fn name(&self) -> String {
        "cpu".into()
    }

    fn upload<T: Element>(&self, data: &[T], shape: &[usize]) -> Result<BTensor<Self, T>> {
        let layout = Layout::contiguous(shape)?;
        if layout.numel() != data.len() {
            return Err(Error::LengthMismatch {
                len: data.len(),
                shape: shape.to_vec(),
                expected: layout.numel(),
            });
        }
        Ok(Tensor::new(self.buffers.copy(data)?, layout))
    }

    fn download<T: Element>(&self, t: &BTensor<Self, T>) -> Result<Vec<T>> {
        try_copy(&t.storage()[..])
    }

    fn zeros<T: Element>(&self, shape: &[usize]) -> Result<BTensor<Self, T>> {
        let layout = Layout::contiguous(shape)?;
        Ok(Tensor::new(self.zeroed(&layout)?, layout))
    }

    fn make_unique<T: Element>(&self, t: &mut BTensor<Self, T>) -> Result<()> {
        if !t.is_unique() {
            *t = Tensor::new(self.buffers.copy(t.storage())?, t.layout().clone());
        }
        Ok(())
    }
}
