//! The backend itself (feature `cuda`): [`CudaBackend`], opening its device
//! (the driver probe, context, stream and pool), its settings and index
//! cache, and the helpers every op uses to allocate tensors; `graph`
//! ([`CudaBackend::record`], [`Recorded`]) and `nccl` (`NcclComm`). The
//! ops are in `ops/`.

mod graph;
pub(crate) mod nccl;

pub use graph::Recorded;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use cudarc::driver::{CudaContext, DriverError, result, sys};
use rtx_backend::{BTensor, Element, Result as BResult, Tensor};
use rtx_tensor::Layout;

use crate::error::{Error, Result};
use crate::indices::{IndexCache, Resolver};
use crate::kernels::abi::{COL_SUM_COUNTERS, REQUIRED_DRIVER_VERSION};
use crate::kernels::compile::Origin;
use crate::runtime::args::DevPtr;
use crate::runtime::buffer::{CudaBuffer, DevMem, Pool};
use crate::runtime::cache::{BlockCache, DEFAULT_LIMIT};
use crate::runtime::context::Device;
use crate::settings::{ColSums, MatmulTiles, ScatterForm, Settings, StreamActivity, TransposeTile};

static NEXT_ID: AtomicU64 = AtomicU64::new(1);

/// The CUDA backend: one device, one stream, NVRTC-compiled kernels.
///
/// All work goes to one non-blocking stream in submission order, so the
/// backend may be shared between threads (`Send + Sync`); downloads
/// synchronize that stream.
#[derive(Debug)]
pub struct CudaBackend {
    pub(crate) dev: Arc<Device>,
    pub(crate) settings: Settings,
    /// Host lists and plans on the device (`indices/`).
    pub(crate) indices: IndexCache,
}

fn driver_version() -> Result<i32> {
    let mut v = 0;
    // SAFETY: v is valid for one write; cuDriverGetVersion needs no cuInit.
    unsafe { sys::cuDriverGetVersion(&mut v) }.result()?;
    Ok(v)
}

impl CudaBackend {
    /// Opens device `ordinal`.
    ///
    /// Probes before anything can panic: the driver library must load, the
    /// driver must support [`REQUIRED_DRIVER_VERSION`], the device must exist and NVRTC must
    /// load. Kernels are compiled (or read from the disk cache) on first use.
    ///
    /// # Errors
    /// [`Error::DriverNotFound`], [`Error::DriverTooOld`], [`Error::NoDevice`],
    /// [`Error::NoSuchDevice`], [`Error::NvrtcNotFound`], driver errors.
    pub fn new(ordinal: usize) -> Result<CudaBackend> {
        // SAFETY: only tries to dlopen the candidate library names.
        if !unsafe { sys::is_culib_present() } {
            return Err(Error::DriverNotFound);
        }
        let driver = driver_version()?;
        if driver < REQUIRED_DRIVER_VERSION {
            return Err(Error::DriverTooOld {
                found: driver,
                required: REQUIRED_DRIVER_VERSION,
            });
        }
        match result::init() {
            Ok(()) => {}
            Err(DriverError(sys::cudaError_enum::CUDA_ERROR_NO_DEVICE)) => {
                return Err(Error::NoDevice);
            }
            Err(e) => return Err(e.into()),
        }
        let count = usize::try_from(result::device::get_count()?).unwrap_or(0);
        if count == 0 {
            return Err(Error::NoDevice);
        }
        if ordinal >= count {
            return Err(Error::NoSuchDevice { ordinal, count });
        }
        // SAFETY: only tries to dlopen the candidate library names.
        if !unsafe { cudarc::nvrtc::sys::is_culib_present() } {
            return Err(Error::NvrtcNotFound);
        }
        let ctx = CudaContext::new(ordinal)?;
        let (major, minor) = ctx.compute_capability()?;
        let stream = ctx.new_stream()?;
        let pool = Pool::default_of(ctx.cu_device())?;
        pool.set_release_threshold(u64::MAX)?;
        let counters = DevMem::alloc(&stream, pool, None, COL_SUM_COUNTERS * 4)?;
        let blocks = BlockCache::new(Arc::clone(&stream), &Default::default(), DEFAULT_LIMIT);
        let id = NEXT_ID.fetch_add(1, Ordering::Relaxed);
        let backend = CudaBackend {
            dev: Arc::new(Device {
                id,
                ordinal,
                name: ctx.name()?,
                arch: format!("sm_{major}{minor}"),
                major,
                driver,
                ctx,
                stream,
                pool,
                blocks,
                kernels: Mutex::new(None),
                counters,
                activity: Default::default(),
            }),
            settings: Settings::default(),
            indices: IndexCache::default(),
        };
        // the climb counters start at zero (ordered before any kernel on the
        // stream; on an error the backend is dropped)
        backend.dev.zero(&backend.dev.counters)?;
        Ok(backend)
    }

    /// The device ordinal.
    pub fn ordinal(&self) -> usize {
        self.dev.ordinal
    }

    /// The device's name (e.g. "NVIDIA H200").
    pub fn device_name(&self) -> &str {
        &self.dev.name
    }

    /// The NVRTC target, e.g. `sm_90`.
    pub fn arch(&self) -> &str {
        &self.dev.arch
    }

    /// The driver's CUDA version (`cuDriverGetVersion`, e.g. 13000).
    pub fn driver_version(&self) -> i32 {
        self.dev.driver
    }

    /// Loads the kernels now (compiling them, or reading the disk cache)
    /// instead of at the first op. Returns whether they came from the disk cache.
    ///
    /// # Errors
    /// Compile and driver errors.
    pub fn load_kernels(&self) -> Result<bool> {
        Ok(self.dev.kernels()?.origin == Origin::DiskCache)
    }

    /// Waits for all queued work.
    ///
    /// # Errors
    /// Driver errors (including errors of earlier kernels).
    pub fn synchronize(&self) -> Result<()> {
        self.dev.activity.synchronize(&self.dev.stream)
    }

    /// What this backend (and every backend beside it: [`CudaBackend::beside`])
    /// has put on its stream so far: kernel launches, copies, allocations,
    /// host waits. Take it before and after some work
    /// and [`StreamActivity::since`] counts that work's (e.g. the launches
    /// and waits of one training step).
    pub fn activity(&self) -> StreamActivity {
        self.dev.activity.get()
    }

    /// Runs `f` between two CUDA events on the backend's stream and returns
    /// its result with the elapsed device time in milliseconds (host time
    /// between the events counts too, as the device idles through it).
    ///
    /// # Errors
    /// Driver errors.
    pub fn time_ms<R>(&self, f: impl FnOnce() -> R) -> Result<(R, f32)> {
        let flags = Some(sys::CUevent_flags::CU_EVENT_DEFAULT);
        let start = self.dev.ctx.new_event(flags)?;
        let end = self.dev.ctx.new_event(flags)?;
        start.record(&self.dev.stream)?;
        let r = f();
        end.record(&self.dev.stream)?;
        end.synchronize()?;
        Ok((r, start.elapsed_ms(&end)?))
    }

    /// A backend on the same device, context, memory pool and kernels with a
    /// stream of its own, so that its work runs beside this one's (e.g. the
    /// next mini-batch sampled while this one trains: its reads back wait
    /// for its own work only). It starts after all the work queued here so
    /// far. Index lists made on either are taken by both; a list or tensor
    /// made on one is used on the other only after [`CudaBackend::wait_for`],
    /// and dropped only after the other's work with it is ordered before
    /// the drop (the same call, the other way): each backend frees its
    /// allocations in the order of its own stream. Its settings are this
    /// one's now; its index cache and block cache are its own; its activity
    /// counts into this one's (a step's launches and waits, on either stream).
    /// What a backend makes for a list on first use (a host list's device
    /// copy, a plan) is allocated on its stream: make a list's parts on the
    /// backend that will drop it, or order the drop as above.
    ///
    /// # Errors
    /// Driver errors; kernel compile errors (the kernels are loaded first).
    pub fn beside(&self) -> Result<CudaBackend> {
        let dev = &self.dev;
        let kernels = dev.kernels()?;
        dev.ctx.bind_to_thread()?;
        let stream = dev.ctx.new_stream()?;
        let counters = DevMem::alloc(&stream, dev.pool, None, COL_SUM_COUNTERS * 4)?;
        let side = CudaBackend {
            dev: Arc::new(Device {
                id: dev.id,
                ordinal: dev.ordinal,
                name: dev.name.clone(),
                arch: dev.arch.clone(),
                major: dev.major,
                driver: dev.driver,
                ctx: Arc::clone(&dev.ctx),
                blocks: BlockCache::new(
                    Arc::clone(&stream),
                    dev.blocks.family(),
                    dev.blocks.limit(),
                ),
                stream,
                pool: dev.pool,
                kernels: Mutex::new(Some(kernels)),
                counters,
                activity: Arc::clone(&dev.activity),
            }),
            settings: self.settings.snapshot(),
            indices: IndexCache::default(),
        };
        side.dev.zero(&side.dev.counters)?;
        side.wait_for(self)?;
        Ok(side)
    }

    /// Orders the work queued on this backend's stream from now on after
    /// all the work queued on `other`'s so far (an event; the host does not
    /// wait). Nothing to do where both are one stream.
    ///
    /// # Errors
    /// Driver errors.
    pub fn wait_for(&self, other: &CudaBackend) -> Result<()> {
        if Arc::ptr_eq(&self.dev.stream, &other.dev.stream) {
            return Ok(());
        }
        let event = other.dev.stream.record_event(None)?;
        self.dev.stream.wait(&event)?;
        Ok(())
    }

    /// Sets how many bytes of freed device memory the pool keeps for reuse
    /// (`CU_MEMPOOL_ATTR_RELEASE_THRESHOLD` of the device's default pool; the
    /// backend sets `u64::MAX`: keep everything, and return it to the device
    /// only when an allocation would otherwise fail).
    ///
    /// # Errors
    /// Driver errors.
    pub fn set_pool_release_threshold(&self, bytes: u64) -> Result<()> {
        self.dev.pool.set_release_threshold(bytes)
    }

    /// Bytes of device memory this backend's live allocations hold now (the
    /// device pool's current use, each allocation at its block's size;
    /// freed memory the pool or the block caches of this backend and of
    /// those beside it keep is not counted).
    ///
    /// # Errors
    /// Driver errors.
    pub fn memory_in_use(&self) -> Result<u64> {
        let held = self.dev.blocks.family().held() as u64;
        Ok(self.dev.pool.used()?.saturating_sub(held))
    }

    /// Sets how many bytes of freed blocks the backend keeps on the host's
    /// shelves for the next allocations of their size (default 1 GiB; 0
    /// keeps none: every allocation and free then goes to the driver), and
    /// frees the blocks over it. Allocations over 1 GiB are never kept. A
    /// backend beside this one ([`CudaBackend::beside`]) has a cache of its
    /// own, with this one's limit when it was made. An allocation that finds
    /// the device full empties every cache of the backend and of those
    /// beside it, then tries once more at its exact size.
    ///
    /// # Errors
    /// [`Error::Recording`] while the stream is recorded; driver errors.
    pub fn set_block_cache_limit(&self, bytes: usize) -> Result<()> {
        // its frees would be recorded into the graph
        self.dev
            .refuse_while_recording("setting the block cache's limit")?;
        self.dev.blocks.set_limit(bytes)
    }

    // ---- indices: the index cache and the pins (`indices/`) ----

    /// The index cache on this backend's device, under its budget: where
    /// every op resolves its `Indices` (`indices/resolve.rs`).
    pub(crate) fn resolver(&self) -> Resolver<'_> {
        Resolver {
            cache: &self.indices,
            dev: &self.dev,
            limit: self.index_cache_limit(),
        }
    }

    /// Sets the byte budget of this backend's index cache (default
    /// [`DEFAULT_INDEX_CACHE_BYTES`](crate::DEFAULT_INDEX_CACHE_BYTES); 0
    /// disables caching), evicting the least recently used entries over it
    /// now.
    pub fn set_index_cache_limit(&self, bytes: usize) {
        self.settings.set_index_cache_limit(bytes);
        self.indices.shrink_to(bytes);
    }

    /// The byte budget of the index cache.
    pub fn index_cache_limit(&self) -> usize {
        self.settings.index_cache_limit()
    }

    /// Drops the cached index lists and plans (pinned ones stay pinned).
    pub fn clear_index_cache(&self) {
        self.indices.clear();
    }

    /// `(entries, bytes)` of the index cache.
    pub fn index_cache_stats(&self) -> (usize, usize) {
        self.indices.stats()
    }

    /// Sets the tile of the 2-D transpose kernel (default
    /// [`TransposeTile::ByShape`]). A tuning knob for benchmarks.
    pub fn set_transpose_tile(&self, tile: TransposeTile) {
        self.settings.set_transpose_tile(tile);
    }

    /// The tile setting of the 2-D transpose kernel.
    pub fn transpose_tile(&self) -> TransposeTile {
        self.settings.transpose_tile()
    }

    /// Sets the output tiles of the matrix product (default
    /// [`MatmulTiles::ByShape`]). Every tile gives the same bits. A tuning
    /// knob for benchmarks.
    pub fn set_matmul_tiles(&self, tiles: MatmulTiles) {
        self.settings.set_matmul_tiles(tiles);
    }

    /// The tile setting of the matrix product.
    pub fn matmul_tiles(&self) -> MatmulTiles {
        self.settings.matmul_tiles()
    }

    /// Sets the launches of the column sums (default [`ColSums::Climb`]).
    /// Both forms give the same bits. A tuning knob for benchmarks.
    pub fn set_col_sums(&self, form: ColSums) {
        self.settings.set_col_sums(form);
    }

    /// The launch setting of the column sums.
    pub fn col_sums(&self) -> ColSums {
        self.settings.col_sums()
    }

    /// Sets the form of the scatter chunk sums, for `index_add` and every
    /// segment sum (default [`ScatterForm::Auto`]). Every form makes the
    /// same additions in the same order. A tuning knob for benchmarks.
    pub fn set_scatter_form(&self, form: ScatterForm) {
        self.settings.set_scatter_form(form);
    }

    /// The form setting of the scatter chunk sums.
    pub fn scatter_form(&self) -> ScatterForm {
        self.settings.scatter_form()
    }

    // ---- helpers of the rooms ----

    /// A new tensor of `layout` (contents uninitialized).
    pub(crate) fn alloc_tensor<T: Element>(&self, layout: Layout) -> BResult<BTensor<Self, T>> {
        let n = layout.numel();
        let bytes = n.checked_mul(T::DTYPE.size()).ok_or(Error::SizeOverflow {
            what: "tensor",
            count: n,
            size: T::DTYPE.size(),
        })?;
        let mem = self.dev.alloc(bytes)?;
        Ok(Tensor::new(CudaBuffer::new(mem, n), layout))
    }

    /// A new contiguous tensor of `shape` (contents uninitialized).
    pub(crate) fn out<T: Element>(&self, shape: &[usize]) -> BResult<BTensor<Self, T>> {
        self.alloc_tensor::<T>(Layout::contiguous(shape)?)
    }

    /// Zeroes all of `t`'s buffer.
    pub(crate) fn zero<T: Element>(&self, t: &BTensor<Self, T>) -> Result<()> {
        self.dev.zero(&t.storage().mem)
    }
}

/// The device address of `t`'s buffer.
pub(crate) fn ptr<T: Element>(t: &BTensor<CudaBackend, T>) -> DevPtr<T> {
    t.storage().ptr()
}

/// The writable device address of `t`, made unique first (no other tensor
/// sees the writes).
///
/// # Errors
/// As [`BackendCore::make_unique`](rtx_backend::BackendCore::make_unique).
pub(crate) fn unique_ptr<T: Element>(
    b: &CudaBackend,
    t: &mut BTensor<CudaBackend, T>,
) -> BResult<DevPtr<T>> {
    rtx_backend::BackendCore::make_unique(b, t)?;
    Ok(t.storage_mut().expect("unique after make_unique").ptr())
}
