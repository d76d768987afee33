//! The trait's host round-trip defaults, run through the conformance suite on
//! a backend that implements only the required core.

use rtx_backend::prelude::*;
use rtx_backend::{BTensor, Element, Error, Result, Tensor};
use rtx_tensor::Layout;

/// Host memory, required core only: every op is a provided default.
#[derive(Debug, Default)]
struct CoreOnly;

impl BackendCore for CoreOnly {
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

impl IndexOps for CoreOnly {
    rtx_backend::host_index_list!();
}

impl LayoutOps for CoreOnly {}

impl DenseOps for CoreOnly {}

impl FusedOps for CoreOnly {}

impl TrainOps for CoreOnly {}

rtx_backend::conformance_tests!(CoreOnly);

#[test]
fn upload_checks_length() {
    let e = CoreOnly.upload(&[1.0f32, 2.0], &[3]).unwrap_err();
    assert_eq!(e.to_string(), "2 elements given for shape [3] (3 elements)");
}

/// The defaults check output sizes before any host round trip: overflow is an
/// error value, never a panic.
#[test]
fn defaults_reject_overflowing_outputs() {
    let b = CoreOnly;
    let overflow = |r: Result<BTensor<CoreOnly, f32>>| match r {
        Err(Error::Layout(rtx_tensor::Error::Overflow { .. })) => {}
        other => panic!("want a size overflow, got {other:?}"),
    };
    let wide = b.zeros::<f32>(&[0, 1 << 62]).unwrap();
    let empty4 = rtx_backend::IndexPlan::new(&[], 4).unwrap();
    overflow(b.segment_max(&wide, &empty4));
    overflow(b.segment_sum(&wide, &empty4));
    overflow(b.gather_scale_scatter(&wide, &[], &b.zeros(&[0, 1]).unwrap(), &empty4));
    let tall = b.zeros::<f32>(&[1 << 62, 0]).unwrap();
    overflow(b.head_dot(&tall, &b.zeros(&[1, 0]).unwrap(), 8));
    overflow(b.matmul(&tall, false, &b.zeros(&[0, 8]).unwrap(), false));
    let one = b.zeros::<f32>(&[1, 0]).unwrap();
    overflow(b.gather_head_dot(&one, &[0; 8], &one, &[0; 8], 1 << 62));
}
