//! The device runtime (feature `cuda`): the backend and what it stands on.
//!
//! * `backend`: [`CudaBackend`], opening the device (the driver probe,
//!   context, stream and pool), its settings, the helpers every op uses.
//! * `context`: one opened device: context, stream, pool, kernels.
//! * `buffer`: device memory (stream-ordered pool allocations) and [`CudaBuffer`].
//! * `graph`: [`CudaBackend::record`] and [`Recorded`]: work captured once
//!   into a CUDA graph and replayed with one launch.
//! * `nccl`: `NcclComm`, the communicator of several devices.

pub(crate) mod backend;
pub(crate) mod buffer;
pub(crate) mod context;
pub(crate) mod graph;
pub(crate) mod nccl;

pub use backend::CudaBackend;
pub use buffer::CudaBuffer;
pub use graph::Recorded;
