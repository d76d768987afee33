//! [`CudaIndex`]: index lists that live on the device, the CUDA backend's
//! [`IndexOps::Index`](rtx_backend::IndexOps::Index). Uploaded once from the
//! host, or produced by device code (kernels/plan.cu: the anchors' generator,
//! repeats, concatenations with offsets); their scatter plans are built on
//! the device (`build`) at the first scatter and kept with them.

use std::sync::Arc;

use rtx_backend::Result as BResult;
use rtx_backend::implement::check_len;

use super::entry::{Largest, ListEntry};
use crate::error::{Error, Result};
use crate::kernels::table::Kernel;
use crate::runtime::args::{DevPtr, In, Out};
use crate::runtime::context::Device;
use crate::runtime::launch::{IndexShift, cfg1, grid_for};

/// A device-resident index list with its scatter plan: validated and placed
/// on the device once, then passed as the indices of any op of
/// [`IndexOps`](rtx_backend::IndexOps) and [`FusedOps`](rtx_backend::FusedOps)
/// (`&list` converts to [`Indices`](rtx_backend::Indices)) with no
/// per-call hashing or copying. Its scatter plan is built on the
/// device at the first scatter (every index checked against the destination
/// there) and kept. Cheap to clone (shared); dropping it while work that
/// reads it is queued is safe (the memory is freed in stream order).
#[derive(Debug, Clone)]
pub struct CudaIndex {
    pub(crate) entry: Arc<ListEntry>,
    pub(crate) backend: u64,
}

impl CudaIndex {
    /// Number of indices.
    pub fn len(&self) -> usize {
        self.entry.len()
    }

    /// Whether the list is empty.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The largest index, when known without device work (`None` when empty
    /// or not yet found: see [`CudaBackend::index_max`](crate::CudaBackend::index_max)).
    pub fn max_index(&self) -> Option<u32> {
        self.entry.known_largest().and_then(Largest::get)
    }

    /// Host and device bytes held.
    pub fn bytes(&self) -> usize {
        self.entry.bytes()
    }
}

/// A new list of `n` indices written by one launch of `kernel` into fresh memory.
pub(crate) fn produce(
    dev: &Device,
    n: usize,
    largest: Option<Largest>,
    launch: impl FnOnce(DevPtr<u32>) -> Result<()>,
) -> BResult<ListEntry> {
    check_len(n)?;
    let mem = dev.alloc(4 * n)?;
    if n > 0 {
        launch(mem.ptr())?;
    }
    Ok(ListEntry::from_device(mem, n, largest))
}

/// Copies the parts `(device list, length, offset)` one after another to
/// `out`, each entry plus its part's offset (one `index_shift` per part).
/// The caller guarantees that `out` holds the lengths' sum of `u32`s and
/// that no entry plus its offset passes `u32::MAX`.
pub(crate) fn copy_parts(
    dev: &Device,
    parts: &[(DevPtr<u32>, u64, u32)],
    out: DevPtr<u32>,
) -> Result<()> {
    let k = dev.kernels()?;
    let mut dst = out;
    for (src, len, offset) in parts.iter().filter(|p| p.1 > 0) {
        let args = IndexShift {
            src: In::at(*src),
            n: *len,
            offset: *offset,
            out: Out::at(dst),
        };
        // SAFETY: src holds len u32, out (the new list from this part's place
        // on) len more (the caller's contract), and no sum passes u32::MAX.
        unsafe { args.launch(dev, &k, Kernel::IndexShift, cfg1(grid_for(*len))) }?;
        dst = dst.byte_add(4 * len);
    }
    Ok(())
}

/// [`Error::ForeignIndex`] unless `index` was made by the backend `backend`.
///
/// # Errors
/// As said.
pub(crate) fn check_owner(index: &CudaIndex, backend: u64) -> Result<()> {
    if index.backend == backend {
        Ok(())
    } else {
        Err(Error::ForeignIndex {
            made_by: index.backend,
            used_with: backend,
        })
    }
}
