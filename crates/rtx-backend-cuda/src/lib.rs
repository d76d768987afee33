//! The CUDA backend of rtx: device gather, deterministic atomic-free
//! scatter-add and swap_dims / transpose / permute, on cudarc with kernels
//! compiled at run time by NVRTC.
//!
//! Everything device-side is behind the `cuda` feature. Without it the crate
//! still builds (anywhere), exports the same types, and
//! [`CudaBackend::new`] returns [`Error::FeatureDisabled`]. With it, the
//! crate still builds on machines without CUDA (cudarc loads the driver at run
//! time), and a missing driver, a too-old driver, a missing device or a
//! missing NVRTC is an [`Error`] value naming the cause, never a panic.
//!
//! ```no_run
//! use rtx_backend::prelude::*;
//! use rtx_backend_cuda::CudaBackend;
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let gpu = CudaBackend::new(0)?; // Err(FeatureDisabled / NoDevice / ...) without a GPU
//! let x = gpu.upload(&[1.0f32, 2.0, 3.0, 4.0], &[2, 2])?;
//! let g = gpu.index_select(&x, &[1, 1, 0])?; // [3, 2] on the device
//! let mut acc = gpu.zeros::<f32>(&[2, 2])?;
//! gpu.index_add(&mut acc, &[1, 1, 0], &g)?; // canonical order: bit-identical to the CPU backend
//! assert_eq!(gpu.download(&acc)?, [1.0, 2.0, 6.0, 8.0]);
//! // a static topology: validate and upload once, no per-call hashing
//! let edges = gpu.index(&[1, 1, 0])?;
//! let g2 = gpu.index_select(&x, &edges)?;
//! # let _ = g2; Ok(())
//! # }
//! ```
//!
//! # Design
//! * **One stream per backend.** Every op is queued on the backend's own
//!   non-blocking stream, in submission order; downloads synchronize it. The
//!   backend is `Send + Sync` and may be shared by threads.
//! * **Memory** comes from the device's default stream-ordered pool
//!   (`cuMemAllocAsync`), with its release threshold raised so freed memory is
//!   reused instead of returned at every synchronization. An allocation that
//!   fails retries once after trimming the pool, then is [`Error::OutOfMemory`].
//! * **Kernels** (`kernels/*.cu`, embedded with `include_str!`) are compiled
//!   by NVRTC for the device's architecture (`sm_90` on an H200) once per
//!   backend, and cached on disk: `$RTX_CUDA_CACHE_DIR`, else
//!   `$XDG_CACHE_HOME/rtx/cubin`, else `$HOME/.cache/rtx/cubin`
//!   (`RTX_CUDA_DISK_CACHE=0` disables it). The constants both sides need
//!   (block size, ranks, op codes, the canonical block) are defined once on
//!   the Rust side and prepended to the sources as `#define`s
//!   ([`kernel_source`] shows them). Every kernel is declared once, in a
//!   table, with its name and its parameters' names and types; each launch
//!   names a kernel of the table and passes its arguments as the named,
//!   typed fields of the launcher generated for its signature; tests fail
//!   when the table, the defines and the .cu files disagree.
//! * **Indices.** Every index and fused op takes its indices as
//!   [`rtx_backend::Indices`]: a host list, a host plan or a [`CudaIndex`]
//!   (device memory, e.g. from the sampler), resolved to a device list or
//!   plan in one place (`indices/resolve.rs`). Host lists and plans are
//!   kept on the device in the backend's LRU cache, keyed by the exact
//!   content (a sampled hash, then a full comparison) and bounded in bytes
//!   ([`DEFAULT_INDEX_CACHE_BYTES`], [`CudaBackend::set_index_cache_limit`]);
//!   `IndexOps::with_static_indices` pins them by address, and
//!   [`CudaBackend::index`] returns a [`CudaIndex`] for no per-call hashing.
//! * **Scatter-add** follows [`rtx_backend::order`] exactly: no atomics, one
//!   launch per level of the canonical block tree, results bit-identical to
//!   `rtx-backend-cpu` for finite values (a NaN produced by the adds is the
//!   device's canonical NaN, whose payload can differ from the host's).
//! * **Permute** follows rtx-tensor's plan: relabels share the buffer, 2-D
//!   (batched) transposes use a tiled shared-memory kernel, anything else an
//!   N-D kernel decoding output indices with the output shape (rank <= 8
//!   after simplification; beyond, a host round trip).
//! * **Recorded work.** [`CudaBackend::record`] captures what a closure
//!   enqueues (a HetGAT forward or training step on a static graph) into a
//!   CUDA graph once; [`Recorded::replay`] runs it again with one launch, so
//!   the host no longer enqueues op by op (the batch-1 step was host-bound).
//!   Replays give the eager run's bits; what a graph cannot hold (downloads,
//!   uploads from host memory, in-place writes to a shared buffer) is an
//!   error while recording.
//! * **Settings** are enums: [`TransposeTile`], [`ScatterForm`],
//!   [`MatmulTiles`] and [`ColSums`] (tuning knobs for benchmarks; every choice gives the
//!   same bits).
//!
//! # Modules
//! By concept, each folder's files marked with the `cuda` feature where
//! they are device code; the rest builds and is tested anywhere:
//! * `kernels/`: the kernel table (`table.rs`, `table/choice.rs`: every
//!   `__global__` with its signature, instantiation and the choice that
//!   picks it), `signature.rs`, `source.rs` (the translation unit), `abi.rs`
//!   (constants and op codes shared with CUDA); with the feature
//!   `compile.rs` (NVRTC, the disk cache), `args.rs` (typed device
//!   addresses and kernel parameters), `launch.rs` (the typed launchers).
//! * `indices/`: how an index list becomes device memory and a scatter
//!   plan: `levels.rs` (chunk tables), `layout.rs` (a plan built on the
//!   device: its layout), `hash.rs` (cache keys); with the feature
//!   `resolve.rs` (an op's `Indices` to a device list or plan), `cache.rs`,
//!   `entry.rs`, `lists.rs` ([`CudaIndex`]), `plan.rs`, `build.rs`.
//! * `permute/`: the permute kernel for each shape.
//! * `runtime/` (feature): the backend, its context, memory, recorded
//!   graphs and NCCL.
//! * `ops/` (feature): one file per capability (`core`, `index`, `layout`,
//!   `dense`, `fused`, `train`, `sample`, `convert`) and `chain.rs` (the one
//!   level-chain runner of every segment sum).
//!
//! Without the feature, `stub.rs` stands in for `runtime/` and `ops/` with
//! the same public surface (`api_mirror_tests.rs` compares the two).

// The concepts whose host half serves the device code: without the `cuda`
// feature they build and are tested, but only their tests call most of it
// (the table still makes `kernel_source`, the settings the stub's knobs).
pub mod comm;
mod error;
#[cfg_attr(not(feature = "cuda"), allow(dead_code))]
mod indices;
#[cfg_attr(not(feature = "cuda"), allow(dead_code))]
mod kernels;
#[cfg_attr(not(feature = "cuda"), allow(dead_code))]
mod settings;

#[cfg(feature = "cuda")]
mod backend;
#[cfg(feature = "cuda")]
mod ops;
#[cfg(any(feature = "cuda", test))]
#[cfg_attr(not(feature = "cuda"), allow(dead_code))]
mod permute;
#[cfg(feature = "cuda")]
mod runtime;
#[cfg(not(feature = "cuda"))]
mod stub;

#[cfg(feature = "cuda")]
pub use backend::{CudaBackend, Recorded};
pub use error::{Error, NvrtcError, Result};
#[cfg(feature = "cuda")]
pub use indices::CudaIndex;
pub use kernels::REQUIRED_DRIVER_VERSION;
pub use kernels::{KERNEL_FILES, kernel_source};
#[cfg(feature = "cuda")]
pub use runtime::CudaBuffer;
pub use settings::{
    ColSums, DEFAULT_INDEX_CACHE_BYTES, MatmulTiles, PIPELINED_SCATTER_MAX_ENTRIES, ScatterForm,
    StreamActivity, TransposeTile, WINDOWED_MAX_BYTES,
};
#[cfg(not(feature = "cuda"))]
pub use stub::{CudaBackend, CudaBuffer, CudaIndex, Recorded};

#[cfg(test)]
mod api_mirror_tests;

#[cfg(test)]
mod tests {
    #[cfg(not(feature = "cuda"))]
    #[test]
    fn without_the_feature_new_says_so() {
        let e = crate::CudaBackend::new(0).unwrap_err();
        assert!(matches!(e, crate::Error::FeatureDisabled), "{e}");
        assert!(e.to_string().contains("--features cuda"), "{e}");
        let b: rtx_backend::Error = e.into();
        assert!(b.to_string().starts_with("cuda: "), "{b}");
    }
}
