//! The CUDA backend's error enum.

/// Errors of the CUDA backend: setting it up (driver, device, compiler) and
/// running it (driver errors, out of memory). Ops of the [`rtx_backend::Backend`]
/// trait return them wrapped in [`rtx_backend::Error::Backend`] (see the
/// `From` impl below); input errors (bad indices, shapes) are the trait's own.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// Built without the `cuda` feature.
    #[error(
        "rtx-backend-cuda was built without its `cuda` feature, so it has no device code; \
         rebuild with `--features cuda` (or `rtx-backend-cuda/cuda` from a dependent crate)"
    )]
    FeatureDisabled,
    /// The CUDA driver library could not be loaded.
    #[error(
        "the CUDA driver library (libcuda.so.1 / nvcuda.dll) was not found on the loader path: \
         no NVIDIA driver is installed on this machine, or it is not on LD_LIBRARY_PATH"
    )]
    DriverNotFound,
    /// The driver is older than the CUDA version this build uses.
    #[error(
        "the installed NVIDIA driver supports CUDA {}.{}, but rtx-backend-cuda is built \
         against CUDA {}.{} (cudarc feature cuda-{required}); update the driver",
        found / 1000, (found % 1000) / 10, required / 1000, (required % 1000) / 10
    )]
    DriverTooOld {
        /// `cuDriverGetVersion` (e.g. 12040 for 12.4).
        found: i32,
        /// The version the build needs (e.g. 13000).
        required: i32,
    },
    /// The driver sees no CUDA device.
    #[error("no CUDA device: the driver loaded but reports 0 devices (check CUDA_VISIBLE_DEVICES)")]
    NoDevice,
    /// The ordinal is not below the device count.
    #[error("CUDA device {ordinal} does not exist: the driver reports {count} device(s)")]
    NoSuchDevice {
        /// The ordinal asked for.
        ordinal: usize,
        /// Devices the driver reports.
        count: usize,
    },
    /// [`CudaBackend::record`](crate::CudaBackend::record) could not record
    /// the work; the message says why.
    #[error("recording a CUDA graph: {0}")]
    Recording(String),
    /// NVRTC (the run-time compiler of the kernels) could not be loaded.
    #[error(
        "NVRTC (libnvrtc.so.13) was not found on the loader path; the CUDA backend compiles \
         its kernels at run time and needs the CUDA NVRTC runtime library"
    )]
    NvrtcNotFound,
    /// NVRTC rejected the kernels; the log says why.
    #[error(
        "NVRTC could not compile the rtx kernels for {arch} (options {options:?}): {nvrtc}\n{log}"
    )]
    Compile {
        /// The target, e.g. `sm_90`.
        arch: String,
        /// The options passed.
        options: Vec<String>,
        /// NVRTC's compile log.
        log: String,
        /// NVRTC's status.
        #[source]
        nvrtc: NvrtcError,
    },
    /// A device allocation failed for lack of memory (after returning the
    /// pool's cached memory to the device and retrying once).
    #[error("CUDA device out of memory: {bytes} bytes requested, {free} of {total} bytes free")]
    OutOfMemory {
        /// Bytes requested.
        bytes: usize,
        /// Free device memory after the attempt.
        free: usize,
        /// Total device memory.
        total: usize,
    },
    /// A size whose byte count does not fit in 64 bits.
    #[error("{what}: {count} elements of {size} bytes overflow 64 bits")]
    SizeOverflow {
        /// What was being sized.
        what: &'static str,
        /// Elements.
        count: usize,
        /// Bytes per element.
        size: usize,
    },
    /// A [`CudaIndex`](crate::CudaIndex) used with a backend that did not make it.
    #[error("a CudaIndex made by CUDA backend #{made_by} was used with backend #{used_with}")]
    ForeignIndex {
        /// The id of the backend that made it.
        made_by: u64,
        /// The id of the backend it was used with.
        used_with: u64,
    },
    /// The compiled module lacks a kernel of the table: `kernels/*.cu` and
    /// `src/table.rs` disagree (a bug of this crate, which its tests look for).
    #[cfg(feature = "cuda")]
    #[error(
        "the compiled kernels lack `{name}` (kernels/*.cu and src/table.rs disagree): {source}"
    )]
    MissingKernel {
        /// The kernel's name.
        name: &'static str,
        /// The driver's error.
        #[source]
        source: cudarc::driver::DriverError,
    },
    /// A typed launcher was given a kernel of another signature or element
    /// type (a bug of this crate).
    #[cfg(feature = "cuda")]
    #[error(
        "kernel {kernel} is not one of the {launcher} launcher's for element {element} (not launched)"
    )]
    LaunchSignature {
        /// The kernel's name.
        kernel: &'static str,
        /// The launcher's signature.
        launcher: &'static str,
        /// The launcher's float element (`none` for launchers without one).
        element: &'static str,
    },
    /// An op without kernels for an element type (bf16 and f16 for now).
    #[error("{op}: element type {dtype} is not supported by the CUDA backend yet")]
    UnsupportedDType {
        /// The operation.
        op: &'static str,
        /// The element type.
        dtype: rtx_backend::DType,
    },
    /// The device plan builder reported a state it can never reach for a
    /// valid list (a bug of this crate, which its tests look for).
    #[error("building a scatter plan on the device failed: {detail} (a bug of rtx-backend-cuda)")]
    DevicePlan {
        /// What the builder reported.
        detail: String,
    },
    /// A CUDA driver call failed.
    #[cfg(feature = "cuda")]
    #[error("CUDA driver: {0}")]
    Driver(#[from] cudarc::driver::DriverError),
    /// An NVRTC call (other than the compile itself) failed.
    #[cfg(feature = "cuda")]
    #[error("NVRTC: {0:?}")]
    Nvrtc(#[from] cudarc::nvrtc::result::NvrtcError),
}

/// NVRTC's status code (cudarc's type with the `cuda` feature, else a stand-in).
#[cfg(feature = "cuda")]
pub type NvrtcError = cudarc::nvrtc::result::NvrtcError;

/// NVRTC's status code (a stand-in: without the `cuda` feature nothing is compiled).
#[cfg(not(feature = "cuda"))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("NVRTC status {0}")]
pub struct NvrtcError(pub i32);

/// `Result` with the CUDA backend's [`Error`].
pub type Result<T> = std::result::Result<T, Error>;

impl From<Error> for rtx_backend::Error {
    fn from(e: Error) -> Self {
        if let Error::UnsupportedDType { op, dtype } = e {
            return rtx_backend::Error::UnsupportedDType { op, dtype };
        }
        rtx_backend::Error::Backend {
            backend: "cuda".into(),
            source: Box::new(e),
        }
    }
}
