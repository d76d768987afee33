//! Device memory: stream-ordered allocations from the device's default
//! pool (through the host's block cache, `cache.rs`), and the public buffer
//! type over them.

use std::marker::PhantomData;
use std::sync::Arc;

use cudarc::driver::{CudaStream, DriverError, result, sys};

use crate::error::{Error, Result};
use crate::runtime::args::DevPtr;
use crate::runtime::cache::{BlockCache, class_of};

/// The device's default memory pool handle.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Pool(pub sys::CUmemoryPool);

// SAFETY: a CUmemoryPool is a driver handle, valid from any thread of the
// process; the driver serializes calls on it.
unsafe impl Send for Pool {}
// SAFETY: as above; `Pool` has no interior state of its own.
unsafe impl Sync for Pool {}

impl Pool {
    /// The default pool of `dev`.
    pub fn default_of(dev: sys::CUdevice) -> Result<Pool> {
        let mut pool: sys::CUmemoryPool = std::ptr::null_mut();
        // SAFETY: `pool` is valid for one write; `dev` is a device handle from the driver.
        unsafe { sys::cuDeviceGetDefaultMemPool(&mut pool, dev) }.result()?;
        Ok(Pool(pool))
    }

    /// Keeps up to `bytes` of freed memory in the pool across synchronizations
    /// (`CU_MEMPOOL_ATTR_RELEASE_THRESHOLD`; the driver's default, 0, returns
    /// freed memory to the device at every synchronization).
    pub fn set_release_threshold(&self, bytes: u64) -> Result<()> {
        let mut v = bytes;
        // SAFETY: the attribute takes a pointer to a cuuint64_t, which `v` is.
        unsafe {
            sys::cuMemPoolSetAttribute(
                self.0,
                sys::CUmemPool_attribute::CU_MEMPOOL_ATTR_RELEASE_THRESHOLD,
                (&mut v as *mut u64).cast(),
            )
        }
        .result()?;
        Ok(())
    }

    /// Bytes of the pool's allocations that are live now
    /// (`CU_MEMPOOL_ATTR_USED_MEM_CURRENT`).
    pub fn used(&self) -> Result<u64> {
        let mut v = 0u64;
        // SAFETY: the attribute writes one cuuint64_t, which `v` is.
        unsafe {
            sys::cuMemPoolGetAttribute(
                self.0,
                sys::CUmemPool_attribute::CU_MEMPOOL_ATTR_USED_MEM_CURRENT,
                (&mut v as *mut u64).cast(),
            )
        }
        .result()?;
        Ok(v)
    }

    /// Returns the pool's unused memory to the device.
    pub fn trim(&self) -> Result<()> {
        // SAFETY: self.0 is the device's default pool.
        unsafe { sys::cuMemPoolTrimTo(self.0, 0) }.result()?;
        Ok(())
    }
}

/// A device allocation of `bytes` bytes, freed in stream order on drop (or
/// kept by the block cache it came from, for the next allocation of its
/// class). Zero-byte allocations hold no memory (pointer 0).
#[derive(Debug)]
pub(crate) struct DevMem {
    ptr: sys::CUdeviceptr,
    bytes: usize,
    stream: Arc<CudaStream>,
    /// The cache the block goes back to and its size class (the block's
    /// size); `None` for an exact allocation.
    cache: Option<(Arc<BlockCache>, usize)>,
}

impl DevMem {
    /// The device address (0 for an empty allocation), holding `E`s: the
    /// type the caller stores there.
    pub fn ptr<E>(&self) -> DevPtr<E> {
        DevPtr::new(self.ptr)
    }

    /// Size in bytes.
    pub fn bytes(&self) -> usize {
        self.bytes
    }

    /// Allocates `bytes` on `stream` from the default pool, or takes a block
    /// of its size class from `cache` (outside a recording). On
    /// out-of-memory, frees the blocks of every cache of `cache`'s family
    /// (each on its stream, waited for), waits for the stream, returns the
    /// pool's cached memory to the device and tries once more at the exact
    /// size.
    ///
    /// # Errors
    /// [`Error::OutOfMemory`]; other driver errors.
    pub fn alloc(
        stream: &Arc<CudaStream>,
        pool: Pool,
        cache: Option<&Arc<BlockCache>>,
        bytes: usize,
    ) -> Result<DevMem> {
        let make = |ptr, cache| DevMem {
            ptr,
            bytes,
            stream: Arc::clone(stream),
            cache,
        };
        if bytes == 0 {
            return Ok(make(0, None));
        }
        // a block allocated while recording is the graph's: never cached
        let class = cache
            .filter(|c| !c.recording())
            .and_then(|c| Some((c, class_of(bytes)?)));
        if let Some((c, k)) = class
            && let Some(ptr) = c.take(k)
        {
            return Ok(make(ptr, Some((Arc::clone(c), k))));
        }
        let size = class.map_or(bytes, |(_, k)| k);
        stream.context().bind_to_thread()?;
        let try_alloc = |size: usize| {
            // SAFETY: the context is current; the memory is returned uninitialized,
            // which DevMem never reads before a copy or kernel writes it.
            unsafe { result::malloc_async(stream.cu_stream(), size) }
        };
        let oom = |e: &DriverError| e.0 == sys::cudaError_enum::CUDA_ERROR_OUT_OF_MEMORY;
        let (ptr, class) = match try_alloc(size) {
            Ok(p) => (p, class),
            Err(e) if oom(&e) => {
                // every cache of the backend and those beside it, each on
                // its own stream (a free queued while recording would be the
                // graph's, and the synchronization below ends the recording)
                if let Some(c) = cache.filter(|c| !c.recording()) {
                    c.family().empty_all()?;
                }
                stream.synchronize()?;
                pool.trim()?;
                // at the exact size, not cached: the class's extra may not fit
                match try_alloc(bytes) {
                    Ok(p) => (p, None),
                    Err(e) if oom(&e) => {
                        let (free, total) = result::mem_get_info().unwrap_or((0, 0));
                        return Err(Error::OutOfMemory { bytes, free, total });
                    }
                    Err(e) => return Err(e.into()),
                }
            }
            Err(e) => return Err(e.into()),
        };
        Ok(make(ptr, class.map(|(c, k)| (Arc::clone(c), k))))
    }
}

impl Drop for DevMem {
    fn drop(&mut self) {
        if self.bytes == 0 {
            return;
        }
        if let Some((cache, class)) = &self.cache
            && cache.give(*class, self.ptr)
        {
            return;
        }
        let ctx = self.stream.context();
        ctx.record_err(ctx.bind_to_thread());
        // SAFETY: ptr came from malloc_async on this stream's context and is freed
        // once, here (a block the cache kept is not); the free is ordered after
        // all work queued on the stream, which is the only stream the backend uses.
        ctx.record_err(unsafe { result::free_async(self.ptr, self.stream.cu_stream()) });
    }
}

/// A buffer of `T` in device memory (the [`BackendCore::Buffer`] of
/// `CudaBackend`).
///
/// [`BackendCore::Buffer`]: rtx_backend::BackendCore::Buffer
pub struct CudaBuffer<T> {
    pub(crate) mem: DevMem,
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
            self.mem.ptr::<T>().addr()
        )
    }
}

impl<T> CudaBuffer<T> {
    /// A buffer of `len` elements in `mem`.
    pub(crate) fn new(mem: DevMem, len: usize) -> CudaBuffer<T> {
        CudaBuffer {
            mem,
            len,
            _t: PhantomData,
        }
    }

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
        self.mem.ptr::<T>().addr()
    }

    /// The elements' device address, typed.
    pub(crate) fn ptr(&self) -> DevPtr<T> {
        self.mem.ptr()
    }

    /// Bytes of device memory held.
    pub(crate) fn bytes(&self) -> usize {
        self.mem.bytes()
    }
}
