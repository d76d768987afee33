//! The CUDA backend for `--backend cuda` (feature `cuda`).

/// WIRE-ME (merge): builds the CUDA backend on device 0. `rtx-backend-cuda`'s
/// constructor was still being written when this was; adjust this one
/// function to its final API (and nothing else in rtx-bench needs to change).
///
/// # Errors
/// No driver or device, context creation, NVRTC.
pub(crate) fn cuda_backend() -> anyhow::Result<rtx_backend_cuda::CudaBackend> {
    Ok(rtx_backend_cuda::CudaBackend::new(0)?)
}
