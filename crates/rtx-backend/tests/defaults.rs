//! The trait's host round-trip defaults, run through the conformance suite on
//! a backend that implements only the required core.

use rtx_backend::{BTensor, Backend, Element, Error, Result, Tensor};
use rtx_tensor::Layout;

/// Host memory, required core only: every op is a provided default.
#[derive(Debug, Default)]
struct CoreOnly;

impl Backend for CoreOnly {
    type Buffer<T: Element> = Vec<T>;

    fn name(&self) -> String {
        "core-only".into()
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
        Ok(Tensor::new(data.to_vec(), layout))
    }

    fn download<T: Element>(&self, t: &BTensor<Self, T>) -> Result<Vec<T>> {
        Ok(t.storage().clone())
    }

    fn zeros<T: Element>(&self, shape: &[usize]) -> Result<BTensor<Self, T>> {
        let layout = Layout::contiguous(shape)?;
        Ok(Tensor::new(vec![T::ZERO; layout.numel()], layout))
    }
}

rtx_backend::conformance_tests!(CoreOnly);

#[test]
fn upload_checks_length() {
    let e = CoreOnly.upload(&[1.0f32, 2.0], &[3]).unwrap_err();
    assert_eq!(e.to_string(), "2 elements given for shape [3] (3 elements)");
}
