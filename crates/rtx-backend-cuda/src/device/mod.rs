//! The CUDA backend proper (feature `cuda`): context, stream, memory, kernels
//! and the [`Backend`] ops.

mod cache;
mod kernels;
mod mem;
mod model;

use std::marker::PhantomData;
use std::sync::atomic::{AtomicU32, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use cudarc::driver::{
    CudaContext, CudaStream, DeviceRepr, DriverError, LaunchConfig, PushKernelArg, result, sys,
};
use rtx_backend::prelude::*;
use rtx_backend::{
    BTensor, Binary, DType, Element, Error as BError, IndexPlan, Result as BResult, Tensor, Unary,
    bytes_of, check_index_add, dims2, reference,
};
use rtx_tensor::{Layout, PermuteKind};

use self::cache::{DevicePlan, IndexEntry, PinKey, Source};
use self::kernels::{Kernels, Origin};
use self::mem::{DevMem, Pool};
use crate::error::{Error, Result};

/// The CUDA version (`cuDriverGetVersion` form) this build's cudarc bindings target.
pub const REQUIRED_DRIVER_VERSION: i32 = 13000;

/// Default byte budget of each thread's index cache, per backend: 512 MiB
/// (host copy of the key plus device index list and plan).
pub const DEFAULT_INDEX_CACHE_BYTES: usize = 512 << 20;

/// Plans of at most this many entries use the pipelined (latency) form of
/// the scatter chunk sums by default.
pub const PIPELINED_SCATTER_MAX_ENTRIES: usize = 1 << 20;

/// Threads per block of the 1-D kernels (`RTX_BLOCK` in kernels/common.cuh).
const BLOCK: u32 = 256;
/// Rows each lane group copies per pass in `copy_rows` (`U` in kernels/common.cuh).
const ROWS_PER_GROUP: u64 = 4;
/// Largest grid.x the driver accepts.
const MAX_GRID_X: u64 = (1 << 31) - 1;
/// Largest rank of the N-D permute kernel (`RTX_MAX_RANK`).
const MAX_RANK: usize = 8;

static NEXT_ID: AtomicU64 = AtomicU64::new(1);

/// One device: context, the backend's stream, pool and kernels.
#[derive(Debug)]
pub(crate) struct Device {
    id: u64,
    ordinal: usize,
    name: String,
    arch: String,
    driver: i32,
    ctx: Arc<CudaContext>,
    stream: Arc<CudaStream>,
    pool: Pool,
    kernels: Mutex<Option<Arc<Kernels>>>,
}

impl Drop for Device {
    fn drop(&mut self) {
        cache::unregister_backend(self.id);
    }
}

impl Device {
    fn alloc(&self, bytes: usize) -> Result<DevMem> {
        DevMem::alloc(&self.stream, self.pool, bytes)
    }

    /// A new allocation holding `bytes` (copied from the host).
    pub(crate) fn upload_bytes(&self, bytes: &[u8]) -> Result<DevMem> {
        let m = self.alloc(bytes.len())?;
        if !bytes.is_empty() {
            self.ctx.bind_to_thread()?;
            // SAFETY: m holds bytes.len() bytes; the copy from pageable host memory
            // is staged before the call returns, so `bytes` may be freed after it.
            unsafe { result::memcpy_htod_async(m.ptr(), bytes, self.stream.cu_stream()) }?;
        }
        Ok(m)
    }

    fn kernels(&self) -> Result<Arc<Kernels>> {
        let mut g = self.kernels.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(k) = &*g {
            return Ok(Arc::clone(k));
        }
        let k = Arc::new(kernels::load_kernels(&self.ctx, &self.arch, self.driver)?);
        *g = Some(Arc::clone(&k));
        Ok(k)
    }
}

/// A buffer of `T` in device memory (the [`Backend::Buffer`] of [`CudaBackend`]).
pub struct CudaBuffer<T> {
    mem: DevMem,
    len: usize,
    _t: PhantomData<fn() -> T>,
}

impl<T> std::fmt::Debug for CudaBuffer<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "CudaBuffer<{}>[{}] @ {:#x}",
            std::any::type_name::<T>(),
            self.len,
            self.mem.ptr()
        )
    }
}

impl<T> CudaBuffer<T> {
    /// Number of elements.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether there are no elements.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The device address (0 when empty), for interop with other CUDA code
    /// on the backend's stream.
    pub fn device_ptr(&self) -> u64 {
        self.mem.ptr()
    }
}

/// A device-resident index list with its scatter plan: validated and uploaded
/// once, then used by [`CudaBackend::index_select_with`] and
/// [`CudaBackend::index_add_with`] with no per-call hashing or copying.
/// Cheap to clone (shared).
#[derive(Debug, Clone)]
pub struct CudaIndex {
    entry: Arc<IndexEntry>,
    backend: u64,
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

    /// The largest index (`None` when empty).
    pub fn max_index(&self) -> Option<u32> {
        self.entry.max
    }

    /// Host and device bytes held.
    pub fn bytes(&self) -> usize {
        self.entry.bytes()
    }
}

/// The CUDA backend: one device, one stream, NVRTC-compiled kernels.
///
/// All work goes to one non-blocking stream in submission order, so the
/// backend may be shared between threads (`Send + Sync`); downloads
/// synchronize that stream.
#[derive(Debug)]
pub struct CudaBackend {
    dev: Arc<Device>,
    cache_limit: AtomicUsize,
    /// 0: pick the tile by shape; 32: force 32x32.
    transpose_tile: AtomicU32,
    /// 0: pick the scatter chunk-sum form by size; 1: batched; 2: pipelined.
    scatter_form: AtomicU32,
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
    /// driver must support CUDA 13.0, the device must exist and NVRTC must
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
        let id = NEXT_ID.fetch_add(1, Ordering::Relaxed);
        cache::register_backend(id);
        Ok(CudaBackend {
            dev: Arc::new(Device {
                id,
                ordinal,
                name: ctx.name()?,
                arch: format!("sm_{major}{minor}"),
                driver,
                ctx,
                stream,
                pool,
                kernels: Mutex::new(None),
            }),
            cache_limit: AtomicUsize::new(DEFAULT_INDEX_CACHE_BYTES),
            transpose_tile: AtomicU32::new(0),
            scatter_form: AtomicU32::new(0),
        })
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
        self.dev.stream.synchronize()?;
        Ok(())
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

    /// Sets the byte budget of each thread's index cache for this backend
    /// (default [`DEFAULT_INDEX_CACHE_BYTES`]; 0 disables caching). Applies
    /// at each thread's next lookup.
    pub fn set_index_cache_limit(&self, bytes: usize) {
        self.cache_limit.store(bytes, Ordering::Relaxed);
    }

    /// The byte budget of each thread's index cache.
    pub fn index_cache_limit(&self) -> usize {
        self.cache_limit.load(Ordering::Relaxed)
    }

    /// Drops the calling thread's cached index lists and plans of this backend.
    pub fn clear_index_cache(&self) {
        cache::clear(self.dev.id);
    }

    /// `(entries, bytes)` of the calling thread's index cache for this backend.
    pub fn index_cache_stats(&self) -> (usize, usize) {
        cache::stats(self.dev.id)
    }

    /// Tile of the 2-D transpose kernel: 0 (default) picks by shape (64x64,
    /// 128x32 for few columns, 32x128 for few rows, 32x32 for 16-byte
    /// elements); 32 forces the classic 32x32 tile. A tuning knob for benchmarks.
    pub fn set_transpose_tile(&self, tile: u32) {
        self.transpose_tile
            .store(if tile == 32 { 32 } else { 0 }, Ordering::Relaxed);
    }

    /// Form of the scatter chunk sums: `None` (default) picks pipelined up to
    /// [`PIPELINED_SCATTER_MAX_ENTRIES`] entries (the longest chunk's latency
    /// dominates) or when a lane sums more than one column vector (rows wider
    /// than 512 bytes), batched otherwise (throughput dominates); `Some(true)` / `Some(false)` force pipelined / batched. Both
    /// forms make the same additions in the same order. A tuning knob for benchmarks.
    pub fn set_scatter_pipelined(&self, form: Option<bool>) {
        let v = match form {
            None => 0,
            Some(false) => 1,
            Some(true) => 2,
        };
        self.scatter_form.store(v, Ordering::Relaxed);
    }

    /// Validates `idx` once and keeps it on the device, for repeated
    /// [`CudaBackend::index_select_with`] / [`CudaBackend::index_add_with`]
    /// calls with no per-call hashing. The index list is uploaded now; the
    /// scatter plan is built (host counting sort) and uploaded at the first
    /// scatter.
    ///
    /// # Errors
    /// [`BError::TooManyIndices`] past `u32::MAX` entries; device errors.
    pub fn index(&self, idx: &[u32]) -> BResult<CudaIndex> {
        if idx.len() > u32::MAX as usize {
            return Err(BError::TooManyIndices {
                len: idx.len(),
                max: u32::MAX as usize,
            });
        }
        let (_, max) = cache::idx_key(idx);
        let entry = Arc::new(IndexEntry::from_idx(idx.into(), max));
        entry.dev_idx(&self.dev)?;
        Ok(CudaIndex {
            entry,
            backend: self.dev.id,
        })
    }

    /// Builds and uploads `index`'s scatter plan now rather than at its first scatter.
    ///
    /// # Errors
    /// Device errors.
    pub fn prepare_scatter(&self, index: &CudaIndex) -> BResult<()> {
        self.check_own(index)?;
        index.entry.plan(&self.dev)?;
        Ok(())
    }

    fn check_own(&self, index: &CudaIndex) -> Result<()> {
        if index.backend == self.dev.id {
            Ok(())
        } else {
            Err(Error::ForeignIndex {
                made_by: index.backend,
                used_with: self.dev.id,
            })
        }
    }

    /// [`IndexOps::index_select`] with a prepared index.
    ///
    /// # Errors
    /// As [`IndexOps::index_select`].
    pub fn index_select_with<T: Element>(
        &self,
        src: &BTensor<Self, T>,
        index: &CudaIndex,
    ) -> BResult<BTensor<Self, T>> {
        self.check_own(index)?;
        let (rows, f) = dims2("index_select", "src", src.layout())?;
        check_max(&index.entry, rows)?;
        self.gather(src, &index.entry, f)
    }

    /// [`IndexOps::index_add`] with a prepared index.
    ///
    /// # Errors
    /// As [`IndexOps::index_add`].
    pub fn index_add_with<T: Element>(
        &self,
        dst: &mut BTensor<Self, T>,
        index: &CudaIndex,
        src: &BTensor<Self, T>,
    ) -> BResult<()> {
        self.check_own(index)?;
        let (rows, f) = dims2("index_add", "dst", dst.layout())?;
        check_max(&index.entry, rows)?;
        check_src(dst.layout(), index.len(), src.layout())?;
        let plan = index.entry.plan(&self.dev)?;
        self.scatter(dst, &plan, src, f)
    }

    /// Runs `f` with the index lists `lists` and plans `plans` held on the
    /// device and recognized **by address** on this thread: while `f` runs,
    /// trait calls given one of these exact slices (same address and length)
    /// or plans (same address) find their device copy with one small map
    /// lookup, with no hashing or comparing of the list. For a static graph:
    /// wrap the training loop.
    ///
    /// Sound because the borrows are held for the whole call: while `f` runs
    /// the pinned memory can be neither freed nor written (`[u32]` and
    /// [`IndexPlan`] have no interior mutability), so a slice at the same
    /// address with the same length *is* the pinned list. Each list and plan is
    /// validated and uploaded once here (through the per-thread cache, so a
    /// later scope over the same graph reuses the device copies). Pins are
    /// per thread and nest; they are dropped when `f` returns or unwinds.
    /// Empty lists and plans are not pinned (they cost nothing anyway).
    ///
    /// # Errors
    /// [`BError::TooManyIndices`] past `u32::MAX` entries; device errors.
    pub fn with_static_indices<R>(
        &self,
        lists: &[&[u32]],
        plans: &[&IndexPlan],
        f: impl FnOnce() -> R,
    ) -> BResult<R> {
        struct Unpin(Vec<PinKey>);
        impl Drop for Unpin {
            fn drop(&mut self) {
                for k in &self.0 {
                    cache::unpin(k);
                }
            }
        }
        let mut guard = Unpin(Vec::with_capacity(lists.len() + plans.len()));
        for idx in lists.iter().filter(|l| !l.is_empty()) {
            let entry = self.with_idx_entry(idx, usize::MAX, |e| {
                e.dev_idx(&self.dev)?;
                Ok(Arc::clone(e))
            })?;
            let key = PinKey {
                backend: self.dev.id,
                plan: false,
                addr: idx.as_ptr() as usize,
                len: idx.len(),
            };
            cache::pin(key, entry);
            guard.0.push(key);
        }
        for plan in plans.iter().filter(|p| !p.is_empty()) {
            let entry = self.plan_entry(plan)?;
            let key = PinKey {
                backend: self.dev.id,
                plan: true,
                addr: *plan as *const IndexPlan as usize,
                len: plan.len(),
            };
            cache::pin(key, entry);
            guard.0.push(key);
        }
        let r = f();
        drop(guard);
        Ok(r)
    }

    // ---- internals ----

    fn bytes<T: Element>(what: &'static str, n: usize) -> Result<usize> {
        n.checked_mul(T::DTYPE.size()).ok_or(Error::SizeOverflow {
            what,
            count: n,
            size: T::DTYPE.size(),
        })
    }

    fn alloc_tensor<T: Element>(&self, layout: Layout) -> BResult<BTensor<Self, T>> {
        let bytes = Self::bytes::<T>("tensor", layout.numel())?;
        let mem = self.dev.alloc(bytes)?;
        Ok(Tensor::new(
            CudaBuffer {
                mem,
                len: layout.numel(),
                _t: PhantomData,
            },
            layout,
        ))
    }

    /// The entry of `idx` in this thread's cache (made and inserted on a miss),
    /// passed to `f`.
    fn with_idx_entry<R>(
        &self,
        idx: &[u32],
        rows: usize,
        f: impl FnOnce(&Arc<IndexEntry>) -> BResult<R>,
    ) -> BResult<R> {
        let key = PinKey {
            backend: self.dev.id,
            plan: false,
            addr: idx.as_ptr() as usize,
            len: idx.len(),
        };
        if let Some(e) = cache::pinned(&key) {
            check_max(&e, rows)?;
            return f(&e);
        }
        let (hash, max) = cache::idx_key(idx);
        if max.is_some_and(|m| m as usize >= rows) {
            reference::check_indices(idx, rows)?;
        }
        if idx.len() > u32::MAX as usize {
            return Err(BError::TooManyIndices {
                len: idx.len(),
                max: u32::MAX as usize,
            });
        }
        cache::with_entry(
            self.dev.id,
            self.index_cache_limit(),
            hash,
            |e| matches!(&e.source, Source::Idx(k) if **k == *idx),
            || IndexEntry::from_idx(idx.into(), max),
            f,
        )
    }

    fn gather<T: Element>(
        &self,
        src: &BTensor<Self, T>,
        entry: &IndexEntry,
        f: usize,
    ) -> BResult<BTensor<Self, T>> {
        let e = entry.len();
        let out = self.alloc_tensor::<T>(Layout::contiguous(&[e, f])?)?;
        if e == 0 || f == 0 {
            return Ok(out);
        }
        let idx = entry.dev_idx(&self.dev)?;
        let row_bytes = (f * T::DTYPE.size()) as u64;
        let (vb, name) = vec_width(row_bytes, "gather");
        let w = row_bytes / vb;
        let lanes_log2 = lanes_log2(w);
        let nrows = e as u64;
        let (s, o) = (src.storage().mem.ptr(), out.storage().mem.ptr());
        let cfg = cfg1(rows_grid(nrows, lanes_log2));
        let k = self.dev.kernels()?;
        let mut b = self.dev.stream.launch_builder(k.get(name));
        b.arg(&s)
            .arg(&o)
            .arg(&idx)
            .arg(&nrows)
            .arg(&w)
            .arg(&lanes_log2);
        // SAFETY: gather_b{16,8,4}(const V* src, V* out, const u32* idx, u64 nrows,
        // u64 W, u32 lanes_log2): `src` holds rows * W vectors and every index is
        // below rows (checked above), `out` holds nrows * W vectors, `idx` holds
        // nrows u32; the kernel's grid-stride loop touches nothing else.
        unsafe { b.launch(cfg) }.map_err(Error::from)?;
        Ok(out)
    }

    fn scatter<T: Element>(
        &self,
        dst: &mut BTensor<Self, T>,
        plan: &DevicePlan,
        src: &BTensor<Self, T>,
        f: usize,
    ) -> BResult<()> {
        if f == 0 || plan.values[0] == 0 {
            return Ok(());
        }
        self.make_unique(dst)?;
        let row_bytes = f * T::DTYPE.size();
        let (vb, suffix) = match T::DTYPE {
            DType::F32 if row_bytes.is_multiple_of(16) => (16, "f32x4"),
            DType::F32 if row_bytes.is_multiple_of(8) => (8, "f32x2"),
            DType::F32 => (4, "f32x1"),
            DType::F64 if row_bytes.is_multiple_of(16) => (16, "f64x2"),
            DType::F64 => (8, "f64x1"),
        };
        let w = (row_bytes / vb) as u64;
        let lanes_log2 = lanes_log2(w);
        let scratch = plan.values[1..]
            .iter()
            .map(|&n| {
                n.checked_mul(row_bytes)
                    .ok_or(Error::SizeOverflow {
                        what: "scatter scratch",
                        count: n,
                        size: row_bytes,
                    })
                    .and_then(|b| self.dev.alloc(b))
            })
            .collect::<Result<Vec<DevMem>>>()?;
        let pipe = match self.scatter_form.load(Ordering::Relaxed) {
            1 => "",
            2 => "p",
            // latency-bound: few chunks in flight, or each lane sums several
            // column vectors of a chunk one after the other
            _ if plan.values[0] <= PIPELINED_SCATTER_MAX_ENTRIES || w > 32 => "p",
            _ => "",
        };
        let k = self.dev.kernels()?;
        let d = dst
            .storage_mut()
            .expect("unique after make_unique")
            .mem
            .ptr();
        let s = src.storage().mem.ptr();
        for (l, &(start, row, slot, n)) in plan.levels.iter().enumerate() {
            let vals = if l == 0 { s } else { scratch[l - 1].ptr() };
            let pos = if l == 0 { plan.positions } else { 0 };
            let next = scratch.get(l).map_or(0, DevMem::ptr);
            let name = if l == 0 {
                format!("scatter0{pipe}_{suffix}")
            } else {
                format!("scatterN{pipe}_{suffix}")
            };
            let groups = u64::from(BLOCK >> lanes_log2);
            let cfg = cfg1(n.div_ceil(groups).clamp(1, MAX_GRID_X) as u32);
            let mut b = self.dev.stream.launch_builder(k.get(&name));
            b.arg(&vals)
                .arg(&pos)
                .arg(&start)
                .arg(&row)
                .arg(&slot)
                .arg(&n)
                .arg(&w)
                .arg(&lanes_log2)
                .arg(&d)
                .arg(&next);
            // SAFETY: scatter{0,N}_*(const V* vals, const u32* pos, const u32* cstart,
            // const u32* crow, const u32* cslot, u64 nchunks, u64 W, u32 lanes_log2,
            // V* dst, V* next). The plan's tables were built from a validated
            // IndexPlan: level 0 positions are below src's rows (plan.len() == src
            // rows, checked), rows below dst's rows (checked), slots below the next
            // level's scratch (sized from plan.values). Levels run in stream order,
            // so each reads scratch its predecessor wrote. dst is unique.
            unsafe { b.launch(cfg) }.map_err(Error::from)?;
        }
        Ok(())
    }

    fn transpose<T: Element>(
        &self,
        t: &BTensor<Self, T>,
        out: &BTensor<Self, T>,
        batch: usize,
        rows: usize,
        cols: usize,
        inner: usize,
    ) -> BResult<()> {
        let run_bytes = (inner * T::DTYPE.size()) as u64;
        let (i, o) = (t.storage().mem.ptr(), out.storage().mem.ptr());
        let (batch, rows, cols) = (batch as u64, rows as u64, cols as u64);
        let k = self.dev.kernels()?;
        if matches!(run_bytes, 4 | 8 | 16) {
            let forced = self.transpose_tile.load(Ordering::Relaxed) == 32;
            let (tr, tc) = transpose_tile(rows, cols, run_bytes, forced);
            let name = format!("transpose{tr}x{tc}_b{run_bytes}");
            let tiles = batch * rows.div_ceil(tr) * cols.div_ceil(tc);
            let cfg = LaunchConfig {
                grid_dim: (tiles.clamp(1, MAX_GRID_X) as u32, 1, 1),
                block_dim: (32, 8, 1),
                shared_mem_bytes: 0,
            };
            let mut b = self.dev.stream.launch_builder(k.get(&name));
            b.arg(&i).arg(&o).arg(&batch).arg(&rows).arg(&cols);
            // SAFETY: transpose{TR}x{TC}_b*(const E* in, E* out, u64 batch, u64 rows,
            // u64 cols): in and out each hold batch * rows * cols elements of
            // run_bytes bytes (the tensors' sizes); tiles are bounds-checked.
            unsafe { b.launch(cfg) }.map_err(Error::from)?;
        } else {
            let (vb, name) = vec_width(run_bytes, "transpose_runs");
            let w = run_bytes / vb;
            let lanes_log2 = lanes_log2(w);
            let nruns = batch * rows * cols;
            let cfg = cfg1(rows_grid(nruns, lanes_log2));
            let mut b = self.dev.stream.launch_builder(k.get(name));
            b.arg(&i)
                .arg(&o)
                .arg(&nruns)
                .arg(&w)
                .arg(&lanes_log2)
                .arg(&rows)
                .arg(&cols);
            // SAFETY: transpose_runs_b*(const V* in, V* out, u64 nruns, u64 W,
            // u32 lanes_log2, u64 rows, u64 cols): both tensors hold nruns runs of
            // W vectors; the map sends run (b, c, r) to (b, r, c), within range.
            unsafe { b.launch(cfg) }.map_err(Error::from)?;
        }
        Ok(())
    }

    fn permute_nd<T: Element>(
        &self,
        t: &BTensor<Self, T>,
        out: &BTensor<Self, T>,
        shape: &[usize],
        perm: &[usize],
    ) -> BResult<()> {
        let p = PermuteParams::new(shape, perm);
        let run_bytes = (p.run * T::DTYPE.size()) as u64;
        let (vb, name) = vec_width(run_bytes, "permute");
        let w = run_bytes / vb;
        let lanes_log2 = lanes_log2(w);
        let nruns = (t.numel() / p.run) as u64;
        let (i, o) = (t.storage().mem.ptr(), out.storage().mem.ptr());
        let params = p.params;
        let k = self.dev.kernels()?;
        let cfg = cfg1(rows_grid(nruns, lanes_log2));
        let mut b = self.dev.stream.launch_builder(k.get(name));
        b.arg(&i)
            .arg(&o)
            .arg(&nruns)
            .arg(&w)
            .arg(&lanes_log2)
            .arg(&params);
        // SAFETY: permute_b*(const V* in, V* out, u64 nruns, u64 W, u32 lanes_log2,
        // PermuteParams p) with PermuteParams #[repr(C)] exactly as in
        // kernels/permute.cu; out_dims multiply to nruns and the input strides of
        // a contiguous tensor of the same element count keep every read in range.
        unsafe { b.launch(cfg) }.map_err(Error::from)?;
        Ok(())
    }
}

/// `Some(IndexOutOfRange)` for the first index `>= rows` of an entry.
fn check_max(entry: &IndexEntry, rows: usize) -> BResult<()> {
    if entry.max.is_some_and(|m| m as usize >= rows)
        && let Source::Idx(idx) = &entry.source
    {
        reference::check_indices(idx, rows)?;
    }
    Ok(())
}

/// `src` must be `[entries, F]` with `dst`'s F.
fn check_src(dst: &Layout, entries: usize, src: &Layout) -> BResult<()> {
    let (_, f) = dims2("index_add", "dst", dst)?;
    let (e, fs) = dims2("index_add", "src", src)?;
    if e != entries || f != fs {
        return Err(BError::ShapeMismatch {
            op: "index_add",
            detail: format!(
                "dst {:?} and src {:?} with an index list of {entries} entries \
                 (want dst [R, F], src [E, F])",
                dst.shape(),
                src.shape()
            ),
        });
    }
    Ok(())
}

/// The widest vector (16, 8 or 4 bytes) dividing `bytes`, and the kernel name
/// `{prefix}_b{width}`.
fn vec_width(bytes: u64, prefix: &str) -> (u64, &'static str) {
    let w = if bytes.is_multiple_of(16) {
        16
    } else if bytes.is_multiple_of(8) {
        8
    } else {
        4
    };
    let name = match (prefix, w) {
        ("gather", 16) => "gather_b16",
        ("gather", 8) => "gather_b8",
        ("gather", _) => "gather_b4",
        ("transpose_runs", 16) => "transpose_runs_b16",
        ("transpose_runs", 8) => "transpose_runs_b8",
        ("transpose_runs", _) => "transpose_runs_b4",
        ("permute", 16) => "permute_b16",
        ("permute", 8) => "permute_b8",
        _ => "permute_b4",
    };
    (w, name)
}

/// The `(rows, cols)` tile of the 2-D transpose kernel for a matrix of
/// `rows x cols` elements of `elem_bytes` bytes.
fn transpose_tile(rows: u64, cols: u64, elem_bytes: u64, force_32: bool) -> (u64, u64) {
    if force_32 || elem_bytes > 8 {
        (32, 32)
    } else if cols <= 48 && rows > 48 {
        (128, 32)
    } else if rows <= 48 && cols > 48 {
        (32, 128)
    } else {
        (64, 64)
    }
}

/// log2 of the lanes per row group: the next power of two of `w`, at most 32.
fn lanes_log2(w: u64) -> u32 {
    w.max(1).next_power_of_two().min(32).trailing_zeros()
}

/// Blocks for `copy_rows` over `nrows` rows.
fn rows_grid(nrows: u64, lanes_log2: u32) -> u32 {
    let per_block = u64::from(BLOCK >> lanes_log2) * ROWS_PER_GROUP;
    nrows.div_ceil(per_block).clamp(1, MAX_GRID_X) as u32
}

fn cfg1(grid: u32) -> LaunchConfig {
    LaunchConfig {
        grid_dim: (grid, 1, 1),
        block_dim: (BLOCK, 1, 1),
        shared_mem_bytes: 0,
    }
}

/// The N-D permute kernel's parameters (`PermuteParams` in kernels/permute.cu).
#[repr(C)]
#[derive(Debug, Clone, Copy)]
struct KernelPermuteParams {
    rank: u64,
    out_dims: [u64; MAX_RANK],
    in_strides: [u64; MAX_RANK],
}

// SAFETY: #[repr(C)] plain u64s, laid out exactly as the CUDA struct.
unsafe impl DeviceRepr for KernelPermuteParams {}

/// Kernel parameters for permuting contiguous `shape` by `perm`, with the run
/// (contiguous trailing elements copied together) they imply.
#[derive(Debug)]
struct PermuteParams {
    params: KernelPermuteParams,
    run: usize,
}

impl PermuteParams {
    /// `shape.len() <= MAX_RANK` (callers check).
    fn new(shape: &[usize], perm: &[usize]) -> PermuteParams {
        let n = shape.len();
        let mut strides = vec![1usize; n];
        for d in (0..n.saturating_sub(1)).rev() {
            strides[d] = strides[d + 1] * shape[d + 1];
        }
        // The last dim stays last: copy its rows as runs; else element by element.
        let (run, out_rank) = if n > 0 && perm[n - 1] == n - 1 {
            (shape[n - 1], n - 1)
        } else {
            (1, n)
        };
        let mut params = KernelPermuteParams {
            rank: out_rank as u64,
            out_dims: [1; MAX_RANK],
            in_strides: [0; MAX_RANK],
        };
        for i in 0..out_rank {
            params.out_dims[i] = shape[perm[i]] as u64;
            params.in_strides[i] = (strides[perm[i]] / run) as u64;
        }
        PermuteParams { params, run }
    }
}

impl BackendCore for CudaBackend {
    type Buffer<T: Element> = CudaBuffer<T>;

    fn name(&self) -> String {
        format!("cuda:{}", self.dev.ordinal)
    }

    fn upload<T: Element>(&self, data: &[T], shape: &[usize]) -> BResult<BTensor<Self, T>> {
        let layout = Layout::contiguous(shape)?;
        if layout.numel() != data.len() {
            return Err(BError::LengthMismatch {
                len: data.len(),
                shape: shape.to_vec(),
                expected: layout.numel(),
            });
        }
        let mem = self.dev.upload_bytes(bytes_of(data))?;
        Ok(Tensor::new(
            CudaBuffer {
                mem,
                len: data.len(),
                _t: PhantomData,
            },
            layout,
        ))
    }

    fn download<T: Element>(&self, t: &BTensor<Self, T>) -> BResult<Vec<T>> {
        let mut out = vec![T::ZERO; t.numel()];
        if !out.is_empty() {
            let bytes = std::mem::size_of_val(out.as_slice());
            // SAFETY: T is f32 or f64 (sealed Element): plain data, every bit
            // pattern valid; the byte view covers exactly `out`'s elements.
            let view =
                unsafe { std::slice::from_raw_parts_mut(out.as_mut_ptr().cast::<u8>(), bytes) };
            self.dev.ctx.bind_to_thread().map_err(Error::from)?;
            // SAFETY: the buffer holds `bytes` bytes; the stream is synchronized
            // below before `out` is read or dropped.
            unsafe {
                result::memcpy_dtoh_async(view, t.storage().mem.ptr(), self.dev.stream.cu_stream())
            }
            .map_err(Error::from)?;
        }
        self.dev.stream.synchronize().map_err(Error::from)?;
        Ok(out)
    }

    fn zeros<T: Element>(&self, shape: &[usize]) -> BResult<BTensor<Self, T>> {
        let t = self.alloc_tensor::<T>(Layout::contiguous(shape)?)?;
        let m = &t.storage().mem;
        if m.bytes() > 0 {
            self.dev.ctx.bind_to_thread().map_err(Error::from)?;
            // SAFETY: m holds m.bytes() bytes.
            unsafe { result::memset_d8_async(m.ptr(), 0, m.bytes(), self.dev.stream.cu_stream()) }
                .map_err(Error::from)?;
        }
        Ok(t)
    }

    /// Device-to-device copy when the buffer is shared.
    fn make_unique<T: Element>(&self, t: &mut BTensor<Self, T>) -> BResult<()> {
        if t.is_unique() {
            return Ok(());
        }
        let copy = self.alloc_tensor::<T>(t.layout().clone())?;
        let bytes = copy.storage().mem.bytes();
        if bytes > 0 {
            self.dev.ctx.bind_to_thread().map_err(Error::from)?;
            // SAFETY: both allocations hold `bytes` bytes and do not overlap.
            unsafe {
                result::memcpy_dtod_async(
                    copy.storage().mem.ptr(),
                    t.storage().mem.ptr(),
                    bytes,
                    self.dev.stream.cu_stream(),
                )
            }
            .map_err(Error::from)?;
        }
        *t = copy;
        Ok(())
    }

    fn synchronize(&self) -> BResult<()> {
        CudaBackend::synchronize(self).map_err(BError::from)
    }
}

impl IndexOps for CudaBackend {
    /// Device gather; the index list is cached per thread (see the crate docs).
    fn index_select<T: Element>(
        &self,
        src: &BTensor<Self, T>,
        idx: &[u32],
    ) -> BResult<BTensor<Self, T>> {
        let (rows, f) = dims2("index_select", "src", src.layout())?;
        self.with_idx_entry(idx, rows, |e| self.gather(src, e, f))
    }

    /// Device scatter-add in the canonical order; the plan is cached per thread.
    fn index_add<T: Element>(
        &self,
        dst: &mut BTensor<Self, T>,
        idx: &[u32],
        src: &BTensor<Self, T>,
    ) -> BResult<()> {
        let (rows, f) = dims2("index_add", "dst", dst.layout())?;
        dims2("index_add", "src", src.layout())?;
        self.with_idx_entry(idx, rows, |e| {
            check_src(dst.layout(), idx.len(), src.layout())?;
            if f == 0 || idx.is_empty() {
                return Ok(());
            }
            let plan = e.plan(&self.dev)?;
            self.scatter(dst, &plan, src, f)
        })
    }

    /// Device scatter-add with a host plan (uploaded once, cached per thread).
    fn index_add_planned<T: Element>(
        &self,
        dst: &mut BTensor<Self, T>,
        plan: &IndexPlan,
        src: &BTensor<Self, T>,
    ) -> BResult<()> {
        let f = check_index_add(dst.layout(), plan, src.layout())?;
        if f == 0 || plan.is_empty() {
            return Ok(());
        }
        let p = self.plan_of(plan)?;
        self.scatter(dst, &p, src, f)
    }

    fn segment_max<T: Element>(
        &self,
        x: &BTensor<Self, T>,
        plan: &IndexPlan,
    ) -> BResult<BTensor<Self, T>> {
        self.model_segment_max(x, plan)
    }

    fn segment_sum<T: Element>(
        &self,
        x: &BTensor<Self, T>,
        plan: &IndexPlan,
    ) -> BResult<BTensor<Self, T>> {
        self.model_segment_sum(x, plan)
    }
}

impl LayoutOps for CudaBackend {
    /// Relabel: shares the buffer. Transpose: tiled kernel. Permute: N-D kernel.
    fn permute<T: Element>(
        &self,
        t: &BTensor<Self, T>,
        perm: &[usize],
    ) -> BResult<BTensor<Self, T>> {
        let plan = t.layout().plan_permute(perm)?;
        match plan.kind {
            PermuteKind::Relabel => Ok(t.relabel(plan.output)),
            PermuteKind::Transpose {
                batch,
                rows,
                cols,
                inner,
            } => {
                let out = self.alloc_tensor::<T>(plan.output)?;
                self.transpose(t, &out, batch, rows, cols, inner)?;
                Ok(out)
            }
            PermuteKind::Permute { shape, perm: p } if shape.len() <= MAX_RANK => {
                let out = self.alloc_tensor::<T>(plan.output)?;
                self.permute_nd(t, &out, &shape, &p)?;
                Ok(out)
            }
            PermuteKind::Permute { .. } => {
                // Past the kernel's rank: the host round trip (correct, slow).
                let host = self.download(t)?;
                let out = rtx_tensor::permute_host(&host, t.shape(), perm)?;
                self.upload(&out, plan.output.shape())
            }
        }
    }
}

impl DenseOps for CudaBackend {
    fn matmul<T: Element>(
        &self,
        a: &BTensor<Self, T>,
        trans_a: bool,
        b: &BTensor<Self, T>,
        trans_b: bool,
    ) -> BResult<BTensor<Self, T>> {
        self.model_matmul(a, trans_a, b, trans_b)
    }

    fn unary<T: Element>(&self, op: Unary, x: &BTensor<Self, T>) -> BResult<BTensor<Self, T>> {
        self.model_unary(op, x)
    }

    fn unary_backward<T: Element>(
        &self,
        op: Unary,
        x: &BTensor<Self, T>,
        grad: &BTensor<Self, T>,
    ) -> BResult<BTensor<Self, T>> {
        self.model_unary_backward(op, x, grad)
    }

    fn binary<T: Element>(
        &self,
        op: Binary,
        a: &BTensor<Self, T>,
        b: &BTensor<Self, T>,
    ) -> BResult<BTensor<Self, T>> {
        self.model_binary(op, a, b)
    }

    fn axpy<T: Element>(
        &self,
        y: &mut BTensor<Self, T>,
        alpha: f64,
        x: &BTensor<Self, T>,
    ) -> BResult<()> {
        self.model_axpy(y, alpha, x)
    }

    fn sum_rows<T: Element>(&self, x: &BTensor<Self, T>) -> BResult<BTensor<Self, T>> {
        self.model_sum_rows(x)
    }

    fn head_dot<T: Element>(
        &self,
        a: &BTensor<Self, T>,
        b: &BTensor<Self, T>,
        heads: usize,
    ) -> BResult<BTensor<Self, T>> {
        self.model_head_dot(a, b, heads)
    }

    fn head_scale<T: Element>(
        &self,
        a: &BTensor<Self, T>,
        s: &BTensor<Self, T>,
    ) -> BResult<BTensor<Self, T>> {
        self.model_head_scale(a, s)
    }
}

impl FusedOps for CudaBackend {
    /// Fused: segment max, the exp-sum (level 0 computes `exp(x - max)` on the
    /// fly), and `exp(x - max) / sum`; the composition's bits.
    fn segment_softmax<T: Element>(
        &self,
        x: &BTensor<Self, T>,
        plan: &IndexPlan,
    ) -> BResult<BTensor<Self, T>> {
        self.model_segment_softmax(x, plan)
    }

    /// Fused: the sums of `alpha * grad` (computed on the fly), then
    /// `alpha * (grad - sum)`; the composition's bits.
    fn segment_softmax_backward<T: Element>(
        &self,
        alpha: &BTensor<Self, T>,
        grad: &BTensor<Self, T>,
        plan: &IndexPlan,
    ) -> BResult<BTensor<Self, T>> {
        self.model_segment_softmax_backward(alpha, grad, plan)
    }

    /// Fused: level 0 of the canonical scatter computes `x[gather[e]] * w[e, h]`
    /// on the fly (no `[E, F]` messages); the composition's bits.
    fn gather_scale_scatter<T: Element>(
        &self,
        x: &BTensor<Self, T>,
        gather: &[u32],
        weights: &BTensor<Self, T>,
        plan: &IndexPlan,
    ) -> BResult<BTensor<Self, T>> {
        self.model_gather_scale_scatter(x, gather, weights, plan)
    }

    /// Fused: one kernel, each edge's per-head dot of the two gathered rows.
    fn gather_head_dot<T: Element>(
        &self,
        a: &BTensor<Self, T>,
        a_idx: &[u32],
        b: &BTensor<Self, T>,
        b_idx: &[u32],
        heads: usize,
    ) -> BResult<BTensor<Self, T>> {
        self.model_gather_head_dot(a, a_idx, b, b_idx, heads)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn permute_params_decode_with_output_shape() {
        // [2,3,4] -> perm [2,1,0]: the last dim moves, element-wise, out dims [4,3,2]
        let p = PermuteParams::new(&[2, 3, 4], &[2, 1, 0]);
        assert_eq!(p.run, 1);
        assert_eq!(p.params.rank, 3);
        assert_eq!(&p.params.out_dims[..3], &[4, 3, 2]);
        assert_eq!(&p.params.in_strides[..3], &[1, 4, 12]);
        // 4-D swap02 with the last dim kept: runs of 32
        let p = PermuteParams::new(&[64, 128, 256, 32], &[2, 1, 0, 3]);
        assert_eq!(p.run, 32);
        assert_eq!(p.params.rank, 3);
        assert_eq!(&p.params.out_dims[..3], &[256, 128, 64]);
        assert_eq!(&p.params.in_strides[..3], &[1, 256, 128 * 256]);
    }

    #[test]
    fn geometry_stays_within_limits() {
        assert_eq!(lanes_log2(1), 0);
        assert_eq!(lanes_log2(3), 2);
        assert_eq!(lanes_log2(16), 4);
        assert_eq!(lanes_log2(1000), 5);
        assert_eq!(rows_grid(0, 0), 1);
        assert_eq!(rows_grid(u64::MAX / 2, 0), MAX_GRID_X as u32);
        assert_eq!(vec_width(256, "gather"), (16, "gather_b16"));
        assert_eq!(vec_width(12, "permute"), (4, "permute_b4"));
        assert_eq!(vec_width(8, "transpose_runs"), (8, "transpose_runs_b8"));
        assert_eq!(transpose_tile(4_211_136, 32, 4, false), (128, 32));
        assert_eq!(transpose_tile(32, 4_211_136, 4, false), (32, 128));
        assert_eq!(transpose_tile(8192, 8192, 4, false), (64, 64));
        assert_eq!(transpose_tile(8192, 8192, 16, false), (32, 32));
        assert_eq!(transpose_tile(8192, 8192, 4, true), (32, 32));
        // every tile the host picks has a kernel
        for (r, c) in [(1, 1), (5000, 3), (3, 5000), (100, 100)] {
            for b in [4, 8, 16] {
                for f in [false, true] {
                    let (tr, tc) = transpose_tile(r, c, b, f);
                    let name = format!("transpose{tr}x{tc}_b{b}");
                    assert!(
                        crate::source::KERNEL_NAMES.contains(&name.as_str()),
                        "{name}"
                    );
                }
            }
        }
    }
}
