//! Recorded work: what a closure enqueues on the backend's stream (kernels,
//! copies between device buffers, allocations and frees) captured once into
//! a CUDA graph, then replayed with one launch. A static graph's forward or
//! training step costs the host one `cuGraphLaunch` instead of an enqueue per
//! op (about 0.7 ms a forward at batch 1, more than the device work).
//!
//! How memory behaves. Buffers the closure allocates and drops are the
//! graph's own (allocation and free nodes). Buffers it returns are allocated
//! by the graph at fixed addresses: each replay frees and re-allocates them
//! in place (`CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH`), so the
//! outputs a [`Recorded`] holds are rewritten by every replay. Buffers that
//! existed before recording (parameters, inputs) are read and written where
//! they are, so an in-place update (SGD) recorded once applies at every replay.

use std::sync::Arc;

use cudarc::driver::{CudaGraph, CudaStream, sys};

use crate::backend::CudaBackend;
use crate::error::{Error, Result};
use crate::runtime::cache::BlockCache;
use crate::runtime::context::Device;

/// Work recorded by [`CudaBackend::record`]: a CUDA graph and the outputs of
/// its last run.
///
/// The outputs (tensors inside `R`) are rewritten by each
/// [`replay`](Recorded::replay); copy what must outlive the next one (a
/// download, or `copy` on the device). A clone of an output tensor shares its
/// buffer and is rewritten too.
pub struct Recorded<R> {
    // dropped before the graph (fields drop in declaration order): the
    // outputs free the graph's allocations of the last run
    out: R,
    graph: CudaGraph,
    dev: Arc<Device>,
}

impl<R> std::fmt::Debug for Recorded<R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Recorded")
            .field("device", &self.dev.ordinal)
            .finish_non_exhaustive()
    }
}

impl<R> Recorded<R> {
    /// Enqueues the recorded work again on the backend's stream (without
    /// waiting for it) and returns the outputs it rewrites. Work queued
    /// before and after is ordered with it, as for any op.
    ///
    /// # Errors
    /// Driver errors.
    pub fn replay(&mut self) -> Result<&R> {
        self.graph.launch()?;
        self.dev.activity.kernel();
        Ok(&self.out)
    }

    /// The outputs, as the last run (recording or replay) leaves them.
    pub fn outputs(&self) -> &R {
        &self.out
    }
}

impl CudaBackend {
    /// Runs `f` once and records everything it enqueues on this backend's
    /// stream into a CUDA graph, which [`Recorded::replay`] runs again with
    /// one launch. The recording runs the work too: `f`'s outputs hold the
    /// first run's results when this returns (asynchronously, like any op).
    ///
    /// `f` must only enqueue device work: a download, an upload from host
    /// memory or a synchronization inside it is an error (run the same work
    /// once unrecorded first, so that kernels are loaded, and index lists and
    /// plans are on the device). Replays use the same buffers, shapes and
    /// index lists as the recording: record again when any of them changes. No
    /// other thread may use this backend while `f` runs (its work would be
    /// recorded too). To debug, run the same code unrecorded.
    ///
    /// # Errors
    /// [`Error::Recording`] when `f` fails or does what cannot be recorded
    /// (nothing is left recorded and the stream is usable); driver errors.
    pub fn record<R, E: std::fmt::Display>(
        &self,
        f: impl FnOnce(&Self) -> std::result::Result<R, E>,
    ) -> Result<Recorded<R>> {
        self.dev.kernels()?;
        let stream = &self.dev.stream;
        // the block cache stands aside until the capture has ended (however
        // it ends): blocks the graph names must not be handed out again
        struct Uncached<'a>(&'a BlockCache);
        impl Drop for Uncached<'_> {
            fn drop(&mut self) {
                self.0.set_recording(false);
            }
        }
        self.dev.blocks.set_recording(true);
        let _uncached = Uncached(&self.dev.blocks);
        stream.begin_capture(sys::CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_THREAD_LOCAL)?;
        // should `f` panic, the recording still ends (and is discarded) as the
        // panic leaves: the stream must not stay in capture mode
        struct EndOnUnwind<'a>(&'a Arc<CudaStream>);
        impl Drop for EndOnUnwind<'_> {
            fn drop(&mut self) {
                if std::thread::panicking() {
                    let none = sys::CUgraphInstantiate_flags(0);
                    drop(self.0.end_capture(none));
                }
            }
        }
        let guard = EndOnUnwind(stream);
        let run = f(self);
        drop(guard);
        let flags = sys::CUgraphInstantiate_flags::CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH;
        let graph = stream.end_capture(flags);
        match (run, graph) {
            (Ok(out), Ok(Some(graph))) => {
                if let Err(e) = graph.launch() {
                    // never allocated: the outputs must not be freed (below too)
                    std::mem::forget(out);
                    return Err(e.into());
                }
                Ok(Recorded {
                    out,
                    graph,
                    dev: Arc::clone(&self.dev),
                })
            }
            (Err(e), _) => Err(Error::Recording(format!("the recorded work failed: {e}"))),
            (Ok(out), graph) => {
                // the outputs name graph memory that was never allocated: they
                // must not be freed
                std::mem::forget(out);
                Err(Error::Recording(match graph {
                    Err(e) => format!(
                        "the driver refused the recording ({e}): the work did something a \
                         graph cannot hold (a synchronization, or a copy from host memory)"
                    ),
                    _ => "the driver returned no graph".to_owned(),
                }))
            }
        }
    }
}

impl Device {
    /// Whether the stream is being recorded into a graph.
    pub(crate) fn recording(&self) -> bool {
        matches!(
            self.stream.capture_status(),
            Ok(sys::CUstreamCaptureStatus::CU_STREAM_CAPTURE_STATUS_ACTIVE)
        )
    }

    /// An error when the stream is being recorded: `what` (an upload from
    /// host memory, a download) cannot be part of a graph.
    pub(crate) fn refuse_while_recording(&self, what: &str) -> Result<()> {
        if self.recording() {
            return Err(Error::Recording(format!(
                "{what} cannot be recorded: run the work once unrecorded first (kernels, \
                 index lists and plans then stay on the device), and read results after \
                 the replay"
            )));
        }
        Ok(())
    }
}
