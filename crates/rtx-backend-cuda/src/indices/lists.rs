//! [`CudaIndex`]: index lists that live on the device, the CUDA backend's
//! [`IndexOps::Index`](rtx_backend::IndexOps::Index). Uploaded once from the
//! host, or produced by device code (kernels/plan.cu: the anchors' generator,
//! repeats, concatenations with offsets); their scatter plans are built on
//! the device (`build`) at the first scatter and kept with them.

use std::borrow::Cow;
use std::sync::Arc;

use rtx_backend::Result as BResult;
use rtx_backend::implement::check_len;

use crate::error::{Error, Result};
use crate::indices::{Largest, ListEntry};
use crate::kernels::args::{DevPtr, In, Out};
use crate::kernels::launch::{IndexRandom, IndexRepeat, IndexShift, cfg1, grid_for};
use crate::kernels::table::Kernel;
use crate::runtime::backend::CudaBackend;
use crate::runtime::context::Device;

/// A device-resident index list with its scatter plan: validated and placed
/// on the device once, then used by the `_idx` ops of
/// [`IndexOps`](rtx_backend::IndexOps) and [`FusedOps`](rtx_backend::FusedOps)
/// with no per-call hashing or copying. Its scatter plan is built on the
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
    /// or not yet found: see [`CudaBackend::index_max`]).
    pub fn max_index(&self) -> Option<u32> {
        self.entry.known_largest().and_then(Largest::get)
    }

    /// Host and device bytes held.
    pub fn bytes(&self) -> usize {
        self.entry.bytes()
    }
}

/// A new list of `n` indices written by one launch of `kernel` into fresh memory.
fn produce(
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

impl CudaBackend {
    pub(crate) fn wrap(&self, entry: ListEntry) -> CudaIndex {
        CudaIndex {
            entry: Arc::new(entry),
            backend: self.dev.id,
        }
    }

    /// Validates `idx` once and keeps it on the device, for repeated `_idx`
    /// ops with no per-call hashing. The list is uploaded now; the scatter
    /// plan is built on the device at the first scatter.
    ///
    /// # Errors
    /// [`rtx_backend::Error::TooManyIndices`] past `u32::MAX` entries; device errors.
    pub fn index(&self, idx: &[u32]) -> BResult<CudaIndex> {
        check_len(idx.len())?;
        let entry =
            ListEntry::from_host(idx.into(), Largest::of(crate::indices::hash::max_of(idx)));
        entry.dev_list(&self.dev)?;
        Ok(self.wrap(entry))
    }

    /// `n` indices made on the device: entry `i` is
    /// [`rtx_backend::workload::index`]`(seed, start + i, rows, hub)`, bit for
    /// bit (a device sampler of the anchors' workloads; `hub` skews toward
    /// row 0).
    ///
    /// # Errors
    /// [`rtx_backend::Error::TooManyIndices`]; device errors.
    pub fn index_random(
        &self,
        seed: u64,
        start: u64,
        n: usize,
        rows: usize,
        hub: bool,
    ) -> BResult<CudaIndex> {
        let entry = produce(&self.dev, n, None, |out| {
            let k = self.dev.kernels()?;
            let args = IndexRandom {
                out: Out::at(out),
                n: n as u64,
                seed,
                start,
                rows: rows as u64,
                hub: u32::from(hub),
            };
            // SAFETY: out holds n u32.
            unsafe { args.launch(&self.dev, &k, Kernel::IndexRandom, cfg1(grid_for(n as u64))) }
        })?;
        Ok(self.wrap(entry))
    }

    /// `parents * times` indices made on the device: entry `i` is
    /// `offset + i / times` (each of `parents` consecutive rows from `offset`
    /// repeated `times` times: the destinations of a sampled hop whose
    /// parents each drew `times` neighbours).
    ///
    /// # Errors
    /// [`rtx_backend::Error::SizeOverflow`] when `parents * times` overflows
    /// or the largest entry passes `u32::MAX`; too many indices; device errors.
    pub fn index_repeat(&self, parents: usize, times: usize, offset: u32) -> BResult<CudaIndex> {
        let overflow = || rtx_backend::Error::SizeOverflow {
            op: "index_repeat",
            what: format!("{parents} parents x {times} from offset {offset}"),
        };
        let n = parents.checked_mul(times).ok_or_else(overflow)?;
        let max = if n == 0 {
            None
        } else {
            let last = u64::from(offset) + parents as u64 - 1;
            Some(u32::try_from(last).map_err(|_| overflow())?)
        };
        let entry = produce(&self.dev, n, Some(Largest::of(max)), |out| {
            let k = self.dev.kernels()?;
            let args = IndexRepeat {
                out: Out::at(out),
                n: n as u64,
                times: times as u64,
                offset: u64::from(offset),
            };
            // SAFETY: out holds n u32.
            unsafe { args.launch(&self.dev, &k, Kernel::IndexRepeat, cfg1(grid_for(n as u64))) }
        })?;
        Ok(self.wrap(entry))
    }

    /// The largest index of `index` (`None` when empty): found on the device
    /// with one readback the first time for a device-made list, then known.
    ///
    /// # Errors
    /// [`Error::ForeignIndex`]; device errors.
    pub fn index_max(&self, index: &CudaIndex) -> BResult<Option<u32>> {
        self.check_own(index)?;
        Ok(index.entry.largest(&self.dev)?.get())
    }

    /// The entries of `index`, on the host.
    ///
    /// # Errors
    /// [`Error::ForeignIndex`]; device errors.
    pub fn index_download<'a>(&self, index: &'a CudaIndex) -> BResult<Cow<'a, [u32]>> {
        self.check_own(index)?;
        Ok(match index.entry.host() {
            Some(h) => Cow::Borrowed(h),
            None => {
                let mut out = vec![0u32; index.len()];
                if !out.is_empty() {
                    let p = index.entry.dev_list(&self.dev)?;
                    self.dev.read(p, &mut out, "a download of an index list")?;
                }
                Cow::Owned(out)
            }
        })
    }

    /// [`IndexOps::index_concat`](rtx_backend::IndexOps::index_concat) on the
    /// device: one copy kernel per part.
    ///
    /// # Errors
    /// [`rtx_backend::Error::IndexOffsetOverflow`] naming the part;
    /// [`Error::ForeignIndex`]; too many indices; device errors.
    pub fn index_concat_device(&self, parts: &[(&CudaIndex, u32)]) -> BResult<CudaIndex> {
        let mut max: Option<u32> = None;
        for (part, &(p, offset)) in parts.iter().enumerate() {
            self.check_own(p)?;
            if let Largest::Is(m) = p.entry.largest(&self.dev)? {
                let shifted =
                    m.checked_add(offset)
                        .ok_or(rtx_backend::Error::IndexOffsetOverflow {
                            part,
                            max: m,
                            offset,
                        })?;
                max = Some(max.map_or(shifted, |x| x.max(shifted)));
            }
        }
        let n: usize = parts.iter().map(|(p, _)| p.len()).sum();
        let srcs = parts
            .iter()
            .filter(|(p, _)| !p.is_empty())
            .map(|&(p, offset)| Ok((p.entry.dev_list(&self.dev)?, p.len() as u64, offset)))
            .collect::<BResult<Vec<_>>>()?;
        // no shifted entry passes u32::MAX: checked above through the maxima
        let entry = produce(&self.dev, n, Some(Largest::of(max)), |out| {
            copy_parts(&self.dev, &srcs, out)
        })?;
        Ok(self.wrap(entry))
    }

    /// Builds `index`'s scatter plan now rather than at its first scatter.
    ///
    /// # Errors
    /// Device errors.
    pub fn prepare_scatter(&self, index: &CudaIndex) -> BResult<()> {
        self.check_own(index)?;
        index.entry.plan(&self.dev, usize::MAX)?;
        Ok(())
    }

    pub(crate) fn check_own(&self, index: &CudaIndex) -> Result<()> {
        if index.backend == self.dev.id {
            Ok(())
        } else {
            Err(Error::ForeignIndex {
                made_by: index.backend,
                used_with: self.dev.id,
            })
        }
    }
}
