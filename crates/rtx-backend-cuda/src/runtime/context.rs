//! One opened device: context, the backend's stream, its memory pool, the
//! cache of freed blocks and its kernels (loaded on first use). Opened by
//! `CudaBackend::new`; every room reaches the device through it.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use cudarc::driver::{CudaContext, CudaStream, result};

use crate::error::Result;
use crate::kernels::compile::{self, Kernels};
use crate::runtime::args::DevPtr;
use crate::runtime::buffer::{DevMem, Pool};
use crate::runtime::cache::BlockCache;

/// One device: context, the backend's stream, pool and kernels.
#[derive(Debug)]
pub(crate) struct Device {
    /// The backend's id (keys its index caches and pins).
    pub id: u64,
    pub ordinal: usize,
    pub name: String,
    /// The NVRTC target, e.g. `sm_90`.
    pub arch: String,
    /// The compute capability's major version (9 for sm_90: Hopper's bulk
    /// tensor copies).
    pub major: i32,
    /// `cuDriverGetVersion`.
    pub driver: i32,
    pub ctx: Arc<CudaContext>,
    pub stream: Arc<CudaStream>,
    pub pool: Pool,
    /// Freed blocks kept for the next allocations of their size class.
    pub blocks: Arc<BlockCache>,
    pub kernels: Mutex<Option<Arc<Kernels>>>,
    /// The column sums' climb counters (`abi::COL_SUM_COUNTERS` u32s): zero
    /// between launches, and only this stream's kernels use them, one at a
    /// time.
    pub counters: DevMem,
    /// What this device's stream has been given (`CudaBackend::activity`),
    /// shared with the backends beside it (`CudaBackend::beside`).
    pub activity: Arc<Activity>,
}

/// The counters behind [`crate::StreamActivity`], bumped where the work is
/// queued.
#[derive(Debug, Default)]
pub(crate) struct Activity {
    launches: AtomicU64,
    copies: AtomicU64,
    allocations: AtomicU64,
    waits: AtomicU64,
    wait_us: AtomicU64,
}

impl Activity {
    pub(crate) fn kernel(&self) {
        self.launches.fetch_add(1, Ordering::Relaxed);
    }

    pub(crate) fn copy(&self) {
        self.copies.fetch_add(1, Ordering::Relaxed);
    }

    /// One wait for the stream, which blocked the host for `took`.
    pub(crate) fn wait(&self, took: std::time::Duration) {
        self.waits.fetch_add(1, Ordering::Relaxed);
        let us = u64::try_from(took.as_micros()).unwrap_or(u64::MAX);
        self.wait_us.fetch_add(us, Ordering::Relaxed);
    }

    /// Waits for `stream` (so for all work queued on it), counted.
    pub(crate) fn synchronize(&self, stream: &CudaStream) -> Result<()> {
        let start = std::time::Instant::now();
        stream.synchronize()?;
        self.wait(start.elapsed());
        Ok(())
    }

    /// The counts so far.
    pub(crate) fn get(&self) -> crate::StreamActivity {
        crate::StreamActivity {
            launches: self.launches.load(Ordering::Relaxed),
            copies: self.copies.load(Ordering::Relaxed),
            allocations: self.allocations.load(Ordering::Relaxed),
            waits: self.waits.load(Ordering::Relaxed),
            wait_us: self.wait_us.load(Ordering::Relaxed),
        }
    }
}

impl Device {
    /// A new allocation of `bytes` bytes (uninitialized) on the backend's stream.
    pub(crate) fn alloc(&self, bytes: usize) -> Result<DevMem> {
        if bytes > 0 {
            self.activity.allocations.fetch_add(1, Ordering::Relaxed);
        }
        DevMem::alloc(&self.stream, self.pool, Some(&self.blocks), bytes)
    }

    /// A new allocation holding `bytes` (copied from the host).
    pub(crate) fn upload_bytes(&self, bytes: &[u8]) -> Result<DevMem> {
        self.refuse_while_recording("an upload from host memory")?;
        let m = self.alloc(bytes.len())?;
        if !bytes.is_empty() {
            self.ctx.bind_to_thread()?;
            // SAFETY: m holds bytes.len() bytes; the copy from pageable host memory
            // is staged before the call returns, so `bytes` may be freed after it.
            unsafe {
                result::memcpy_htod_async(m.ptr::<u8>().addr(), bytes, self.stream.cu_stream())
            }?;
            self.activity.copy();
        }
        Ok(m)
    }

    /// Copies `out.len()` values from `src` into `out` and
    /// waits for the stream (so for all work queued before). `what` names the
    /// copy in the error while the stream is being recorded (a copy to host
    /// memory cannot be part of a graph).
    ///
    /// Callers pass plain data (`u32`, `u64`, `f32`, `f64`); `src` holds at
    /// least `size_of_val(out)` bytes.
    pub(crate) fn read<W: Copy>(&self, src: DevPtr<W>, out: &mut [W], what: &str) -> Result<()> {
        self.read_each(&mut [(src, out)], what)
    }

    /// [`Device::read`] of several `(src, out)` pairs with one wait: every
    /// copy queued, then the stream waited for once (for all work queued
    /// before). The same contract for each pair.
    pub(crate) fn read_each<W: Copy>(
        &self,
        parts: &mut [(DevPtr<W>, &mut [W])],
        what: &str,
    ) -> Result<()> {
        self.refuse_while_recording(what)?;
        self.ctx.bind_to_thread()?;
        // a copy into pageable memory waits for the stream itself: the
        // wait is timed from the first copy
        let start = std::time::Instant::now();
        for (src, out) in parts.iter_mut() {
            let bytes = std::mem::size_of_val(*out);
            if bytes == 0 {
                continue;
            }
            // SAFETY: W is plain data (the callers' contract): every bit
            // pattern is valid; the byte view covers exactly `out`.
            let view =
                unsafe { std::slice::from_raw_parts_mut(out.as_mut_ptr().cast::<u8>(), bytes) };
            // SAFETY: `src` holds at least `bytes` bytes (the callers'
            // contract); the stream is synchronized below before any `out` is
            // read or dropped.
            unsafe { result::memcpy_dtoh_async(view, src.addr(), self.stream.cu_stream()) }?;
            self.activity.copy();
        }
        self.stream.synchronize()?;
        self.activity.wait(start.elapsed());
        Ok(())
    }

    /// Zeroes all of `m` on the backend's stream.
    pub(crate) fn zero(&self, m: &DevMem) -> Result<()> {
        self.zero_from(m, 0)
    }

    /// Zeroes `m` from byte `from` to its end on the backend's stream (one
    /// memset, counted; nothing when `from` is the end).
    ///
    /// # Panics
    /// When `from` is past the end of `m` (a bug of the caller).
    pub(crate) fn zero_from(&self, m: &DevMem, from: usize) -> Result<()> {
        let total = m.bytes();
        assert!(from <= total, "zero_from: byte {from} past {total}");
        if from < total {
            self.ctx.bind_to_thread()?;
            // SAFETY: m is a live allocation of `total` bytes in this context,
            // so the `total - from` bytes from `from` are within it.
            unsafe {
                result::memset_d8_async(
                    m.ptr::<u8>().byte_add(from as u64).addr(),
                    0,
                    total - from,
                    self.stream.cu_stream(),
                )
            }?;
            self.activity.copy();
        }
        Ok(())
    }

    /// The kernels, compiled (or read from the disk cache) on first use.
    pub(crate) fn kernels(&self) -> Result<Arc<Kernels>> {
        let mut g = self.kernels.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(k) = &*g {
            return Ok(Arc::clone(k));
        }
        let k = Arc::new(compile::load_kernels(&self.ctx, &self.arch, self.driver)?);
        *g = Some(Arc::clone(&k));
        Ok(k)
    }
}
