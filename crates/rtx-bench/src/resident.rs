//! [`ResidentGraph`]: a backend that can keep a static graph's index lists
//! and plans resident on the device while a closure runs (a leaf: the
//! single-device and the data-parallel runs both use it).

use rtx_backend::Backend;
use rtx_backend_cpu::CpuBackend;
use rtx_gnn::HeteroGraph;

/// A backend that can keep a static graph's index lists and plans resident
/// on the device for the duration of a closure (CUDA: [`with_static_indices`], so
/// index ops find them by address with no per-call hashing); others run the
/// closure as is.
///
/// [`with_static_indices`]: rtx_backend_cuda::CudaBackend::with_static_indices
pub(crate) trait ResidentGraph: Backend {
    /// Runs `f` with `graph`'s topology resident on the device where the
    /// backend can keep it there.
    fn with_resident_graph<R>(
        &self,
        _graph: &HeteroGraph,
        f: impl FnOnce() -> R,
    ) -> rtx_backend::Result<R> {
        Ok(f())
    }
}

impl ResidentGraph for CpuBackend {}

/// The host round-trip mode: nothing to keep resident (its index ops run on the host).
impl<B: Backend> ResidentGraph for rtx_backend::HostIndexOps<B> {}

#[cfg(feature = "cuda")]
impl ResidentGraph for rtx_backend_cuda::CudaBackend {
    fn with_resident_graph<R>(
        &self,
        graph: &HeteroGraph,
        f: impl FnOnce() -> R,
    ) -> rtx_backend::Result<R> {
        let lists: Vec<&[u32]> = graph
            .relations()
            .iter()
            .flat_map(|r| [r.src(), r.dst()])
            .collect();
        let plans: Vec<&rtx_backend::IndexPlan> = graph
            .relations()
            .iter()
            .flat_map(|r| [r.dst_plan(), r.src_plan()])
            .collect();
        self.with_static_indices(&lists, &plans, f)
    }
}
