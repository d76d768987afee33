//! [`TrainOps`] of the CPU backend: the trait's defaults, host round trips
//! over the [`rtx_backend::ops::train`] references (the CPU backend's buffers
//! are host memory, so the round trip is a copy), bit-identical to the
//! reference by construction.

use rtx_backend::prelude::*;

use crate::CpuBackend;

impl TrainOps for CpuBackend {}
