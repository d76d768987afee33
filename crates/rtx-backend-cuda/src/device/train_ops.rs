//! [`TrainOps`] of the CUDA backend.

use rtx_backend::prelude::*;

use super::backend::CudaBackend;

impl TrainOps for CudaBackend {}
