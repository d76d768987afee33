//! The CUDA backend proper (feature `cuda`): one room per capability.
//!
//! Leaves first (each module names only modules above it in this list):
//! * `args`: the Rust types of kernel parameters (typed device pointers, structs).
//! * `buffer`: device memory (stream-ordered pool allocations) and [`CudaBuffer`].
//! * `kernels`: NVRTC compilation, the disk cache, the loaded table of kernels.
//! * `context`: one opened device: context, stream, pool, kernels.
//! * `launch`: launch geometry, one typed launcher per signature of the kernel table.
//! * `plan`: a scatter plan on the device (positions and chunk tables).
//! * `plan_build`: scatter plans built on the device from a device list (kernels/plan.cu).
//! * `indices`: an op's `Indices` to device memory in one place (the
//!   backend's cache of host lists and plans, the pins, the device entries).
//! * `chain`: the one level-chain runner of every segment sum (and the segment max).
//! * `backend`: [`CudaBackend`], opening the device, its settings.
//! * `core_ops`: `BackendCore` (upload, download, zeros, make_unique).
//! * `index_lists`: [`CudaIndex`], device index lists and their producers.
//! * `index_ops`: `IndexOps` (gather, scatter-add, segment max / sum, host and device lists).
//! * `layout_ops`: `LayoutOps` (transpose and permute launches).
//! * `convert`: `LayoutOps::convert` on the device (f32 <-> bf16 / f16 kernels).
//! * `dense_ops`: `DenseOps` (matmul, elementwise, row sums, per-head ops).
//! * `fused_ops`: `FusedOps` (segment softmax and its backward,
//!   gather_scale_scatter, gather_head_dot).
//! * `train_ops`: `TrainOps` (dropout, losses, the multi-tensor optimizer steps).
//! * `graph`: [`CudaBackend::record`] and [`Recorded`]: work captured once
//!   into a CUDA graph and replayed with one launch.

mod args;
mod backend;
mod buffer;
mod chain;
mod context;
mod convert;
mod core_ops;
mod dense_ops;
mod fused_ops;
mod graph;
mod index_lists;
mod index_ops;
mod indices;
mod kernels;
mod launch;
mod layout_ops;
pub(crate) mod nccl;
mod plan;
mod plan_build;
mod sample;
mod train_ops;

pub use backend::CudaBackend;
pub use buffer::CudaBuffer;
pub use graph::Recorded;
pub use index_lists::CudaIndex;
