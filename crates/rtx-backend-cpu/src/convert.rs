//! Element-type conversion on the CPU backend ([`LayoutOps::convert`]) and
//! the half-precision route of its arithmetic ops: for `bf16` and `f16`
//! every arithmetic op is its `f32` op on the inputs widened to `f32`, each
//! output rounded once (the definition in `rtx_backend::reference`), so a
//! half op has the `f32` op's canonical order and thread-count independence.
//!
//! [`LayoutOps::convert`]: rtx_backend::LayoutOps::convert

use rayon::prelude::*;
use rtx_backend::{BTensor, DType, Element, Result, Tensor};

use crate::CpuBackend;
use crate::tasks::ELEMS_PER_TASK;

impl CpuBackend {
    /// `x` converted elementwise to `U` (see [`rtx_backend::reference::convert`],
    /// whose bits this gives), in parallel.
    pub(crate) fn convert_tensor<T: Element, U: Element>(
        &self,
        x: &BTensor<Self, T>,
    ) -> Result<BTensor<Self, U>> {
        let layout = x.layout().clone();
        let xs = x.storage();
        let mut out = self.for_overwrite::<U>(&layout)?;
        let c = ELEMS_PER_TASK;
        self.install(|| {
            out.par_chunks_mut(c)
                .zip(xs.par_chunks(c))
                .for_each(|(o, x)| convert_slice(x, o));
        });
        Ok(Tensor::new(out, layout))
    }

    /// `x` widened to `f32` (exact for the half types).
    pub(crate) fn widen<T: Element>(&self, x: &BTensor<Self, T>) -> Result<BTensor<Self, f32>> {
        self.convert_tensor(x)
    }

    /// `x` rounded once per element to `T`.
    pub(crate) fn round<T: Element>(&self, x: &BTensor<Self, f32>) -> Result<BTensor<Self, T>> {
        self.convert_tensor(x)
    }
}

/// `out[i] = convert(x[i])` as [`rtx_backend::reference::convert`] defines it.
fn convert_slice<T: Element, U: Element>(x: &[T], out: &mut [U]) {
    if T::DTYPE == U::DTYPE {
        let bits: Vec<U> = rtx_backend::vec_from_bytes(rtx_backend::bytes_of(x));
        out.copy_from_slice(&bits);
    } else if T::DTYPE == DType::F64 || U::DTYPE == DType::F64 {
        for (o, &v) in out.iter_mut().zip(x) {
            *o = U::from_f64(v.to_f64());
        }
    } else {
        for (o, &v) in out.iter_mut().zip(x) {
            *o = U::from_f32(v.to_f32());
        }
    }
}
