//! The CUDA backend for `--backend cuda` (feature `cuda`).

/// The CUDA backend on device 0 ([`rtx_backend_cuda::CudaBackend::new`]),
/// kernels loaded now (compiled by NVRTC or read from the disk cache) so no
/// timing includes the compile.
///
/// # Errors
/// No driver or device, context creation, NVRTC.
pub(crate) fn cuda_backend() -> anyhow::Result<rtx_backend_cuda::CudaBackend> {
    let b = rtx_backend_cuda::CudaBackend::new(0)?;
    b.load_kernels()?;
    Ok(b)
}
