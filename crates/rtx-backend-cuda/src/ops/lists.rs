//! [`CudaIndex`] producers: device lists uploaded from the host, made on the
//! device (random, repeated, concatenated), downloaded, and checked to
//! belong to this backend.

use std::borrow::Cow;
use std::sync::Arc;

use rtx_backend::implement::check_len;
use rtx_backend::{Indices, Result as BResult};

use crate::backend::CudaBackend;
use crate::error::Result;
use crate::indices::lists::{CudaIndex, check_owner, copy_parts, produce};
use crate::indices::sorted::Sorted;
use crate::indices::{Largest, ListEntry};
use crate::kernels::table::Kernel;
use crate::runtime::args::Out;
use crate::runtime::launch::{IndexRandom, IndexRepeat, cfg1, grid_for};

impl<'a> From<&'a CudaIndex> for Indices<'a, CudaBackend> {
    fn from(list: &'a CudaIndex) -> Self {
        Indices::held(list)
    }
}

impl CudaBackend {
    pub(crate) fn wrap(&self, entry: ListEntry) -> CudaIndex {
        CudaIndex {
            entry: Arc::new(entry),
            backend: self.dev.id,
        }
    }

    /// Validates `idx` once and keeps it on the device, for repeated
    /// ops with no per-call hashing. The list is uploaded now; the scatter
    /// plan is built on the device at the first scatter.
    ///
    /// # Errors
    /// [`rtx_backend::Error::TooManyIndices`] past `u32::MAX` entries; device errors.
    pub fn index(&self, idx: &[u32]) -> BResult<CudaIndex> {
        check_len(idx.len())?;
        let entry = ListEntry::from_host(idx.into());
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
    /// parents each drew `times` neighbours). Sorted, so its scatter plan
    /// skips the sort.
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
        let sorted = max.map(|hi| Sorted { lo: offset, hi });
        Ok(self.wrap(entry.sorted_as(sorted)))
    }

    /// The largest index of `index` (`None` when empty): found on the device
    /// with one readback the first time for a device-made list, then known.
    ///
    /// # Errors
    /// [`Error::ForeignIndex`](crate::Error::ForeignIndex); device errors.
    pub fn index_max(&self, index: &CudaIndex) -> BResult<Option<u32>> {
        self.check_own(index)?;
        Ok(index.entry.largest(&self.dev)?.get())
    }

    /// The entries of `index`, on the host.
    ///
    /// # Errors
    /// [`Error::ForeignIndex`](crate::Error::ForeignIndex); device errors.
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
    /// device: one copy kernel per part. Sorted parts that follow each other
    /// (repeats of consecutive rows) make a sorted list, whose scatter plan
    /// skips the sort.
    ///
    /// # Errors
    /// [`rtx_backend::Error::IndexOffsetOverflow`] naming the part;
    /// [`Error::ForeignIndex`](crate::Error::ForeignIndex); too many indices; device errors.
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
        let sorted = Sorted::concat(
            parts
                .iter()
                .map(|&(p, offset)| (p.entry.sorted(), p.len(), offset)),
        );
        Ok(self.wrap(entry.sorted_as(sorted)))
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
        check_owner(index, self.dev.id)
    }
}
