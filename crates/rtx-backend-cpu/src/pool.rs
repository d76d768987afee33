//! The backend's buffer pool: the buffers of dropped tensors wait here, by
//! length, for the next op that needs one of that length, so a training
//! loop (whose every step makes tensors of the same shapes) stops paying
//! for fresh allocations: the kernel's zeroing of new pages, page faults,
//! and `memset` of buffers that the op overwrites anyway.
//!
//! A buffer ([`CpuBuffer`]) returns itself to its backend's pool when its
//! tensor (the last one sharing it) is dropped. The pool keeps at most
//! [`POOL_BYTES`] bytes; buffers beyond that, and buffers smaller than
//! [`MIN_POOLED_BYTES`] (cheap to allocate), are freed as usual. Reuse never
//! changes results: an op either fills a reused buffer with zeros first or
//! writes every element of it.

use std::any::Any;
use std::collections::HashMap;
use std::ops::{Deref, DerefMut};
use std::sync::{Arc, Mutex, PoisonError};

use rtx_backend::implement::{try_copy, try_vec};
use rtx_backend::{DType, Element, Result, bf16, f16};

/// The most bytes the pool of one backend holds (1 GiB): about the
/// temporaries of a batch-8 HetGAT step.
pub const POOL_BYTES: usize = 1 << 30;

/// Buffers smaller than this (16 KiB) are not pooled: the allocator serves
/// them from its own free lists without page faults.
pub const MIN_POOLED_BYTES: usize = 16 << 10;

/// Free buffers of one element type, by length.
#[derive(Debug, Default)]
struct FreeList<T> {
    by_len: HashMap<usize, Vec<Vec<T>>>,
}

#[derive(Debug, Default)]
struct Lists {
    f32: FreeList<f32>,
    f64: FreeList<f64>,
    bf16: FreeList<bf16>,
    f16: FreeList<f16>,
    /// Bytes held by all the lists.
    bytes: usize,
}

impl Lists {
    /// The free list of `T` (the element types are sealed: `f32`, `f64`,
    /// `bf16` or `f16`, one list each).
    fn of<T: Element>(&mut self) -> (&mut FreeList<T>, &mut usize) {
        let Lists {
            f32,
            f64,
            bf16,
            f16,
            bytes,
        } = self;
        let list: &mut dyn Any = match T::DTYPE {
            DType::F32 => f32,
            DType::F64 => f64,
            DType::BF16 => bf16,
            DType::F16 => f16,
        };
        let list = list
            .downcast_mut::<FreeList<T>>()
            .expect("Element is sealed, each DType tag names its one type");
        (list, bytes)
    }
}

/// A backend's pool of free buffers (shared by its buffers, which return to it).
#[derive(Debug, Default)]
pub(crate) struct BufferPool {
    lists: Mutex<Lists>,
}

impl BufferPool {
    fn lock(&self) -> std::sync::MutexGuard<'_, Lists> {
        // a panic while holding the lock leaves consistent free lists
        self.lists.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn take<T: Element>(&self, len: usize) -> Option<Vec<T>> {
        if len * size_of::<T>() < MIN_POOLED_BYTES {
            return None;
        }
        let mut lists = self.lock();
        let (list, bytes) = lists.of::<T>();
        let v = list.by_len.get_mut(&len)?.pop()?;
        *bytes -= v.len() * size_of::<T>();
        Some(v)
    }

    fn put<T: Element>(&self, v: Vec<T>) {
        let b = v.len() * size_of::<T>();
        if b < MIN_POOLED_BYTES {
            return;
        }
        let mut lists = self.lock();
        let (list, bytes) = lists.of::<T>();
        if *bytes + b <= POOL_BYTES {
            *bytes += b;
            list.by_len.entry(v.len()).or_default().push(v);
        }
    }

    /// Bytes held now.
    pub(crate) fn bytes(&self) -> usize {
        self.lock().bytes
    }

    /// Frees every buffer held.
    pub(crate) fn clear(&self) {
        *self.lock() = Lists::default();
    }
}

/// The buffer of a CPU tensor: a `Vec<T>` that goes back to its backend's
/// pool when dropped. Reads and writes as a slice (`Deref<Target = [T]>`).
pub struct CpuBuffer<T: Element> {
    data: Vec<T>,
    pool: Option<Arc<BufferPool>>,
}

impl<T: Element> CpuBuffer<T> {
    /// A buffer that is freed, not pooled, when dropped.
    pub fn unpooled(data: Vec<T>) -> Self {
        CpuBuffer { data, pool: None }
    }

    /// The elements, as a new `Vec` (the buffer itself stays pooled).
    ///
    /// # Errors
    /// [`rtx_backend::Error::HostAllocation`].
    pub fn to_vec(&self) -> Result<Vec<T>> {
        try_copy(&self.data)
    }
}

impl<T: Element> Drop for CpuBuffer<T> {
    fn drop(&mut self) {
        if let Some(pool) = self.pool.take() {
            pool.put(std::mem::take(&mut self.data));
        }
    }
}

impl<T: Element> Deref for CpuBuffer<T> {
    type Target = [T];
    fn deref(&self) -> &[T] {
        &self.data
    }
}

impl<T: Element> DerefMut for CpuBuffer<T> {
    fn deref_mut(&mut self) -> &mut [T] {
        &mut self.data
    }
}

impl<T: Element> std::fmt::Debug for CpuBuffer<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CpuBuffer")
            .field("len", &self.data.len())
            .field("pooled", &self.pool.is_some())
            .finish()
    }
}

/// How a new buffer starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Init {
    /// Every element `T::ZERO`.
    Zeros,
    /// Any (finite or not) values: the caller writes every element.
    Overwrite,
}

impl BufferPool {
    /// A buffer of `len` elements from the pool (or fresh), as `init` says.
    pub(crate) fn buffer<T: Element>(
        self: &Arc<Self>,
        len: usize,
        init: Init,
    ) -> Result<CpuBuffer<T>> {
        let data = match self.take::<T>(len) {
            Some(mut v) => {
                if init == Init::Zeros {
                    v.fill(T::ZERO);
                }
                v
            }
            None => try_vec(len, T::ZERO)?,
        };
        Ok(CpuBuffer {
            data,
            pool: Some(Arc::clone(self)),
        })
    }

    /// A pooled buffer holding a copy of `src`.
    pub(crate) fn copy<T: Element>(self: &Arc<Self>, src: &[T]) -> Result<CpuBuffer<T>> {
        let data = match self.take::<T>(src.len()) {
            Some(mut v) => {
                v.copy_from_slice(src);
                v
            }
            None => try_copy(src)?,
        };
        Ok(CpuBuffer {
            data,
            pool: Some(Arc::clone(self)),
        })
    }

    /// `data` as a pooled buffer (it returns to the pool when dropped).
    pub(crate) fn adopt<T: Element>(self: &Arc<Self>, data: Vec<T>) -> CpuBuffer<T> {
        CpuBuffer {
            data,
            pool: Some(Arc::clone(self)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buffers_return_to_the_pool_and_are_reused_by_length() {
        let pool = Arc::new(BufferPool::default());
        let n = MIN_POOLED_BYTES / 4;
        let mut a = pool.buffer::<f32>(n, Init::Overwrite).unwrap();
        a.fill(7.0);
        let ptr = a.as_ptr();
        drop(a);
        assert_eq!(pool.bytes(), n * 4);
        // reused, and zeroed when asked for zeros
        let b = pool.buffer::<f32>(n, Init::Zeros).unwrap();
        assert_eq!(b.as_ptr(), ptr);
        assert!(b.iter().all(|&x| x.to_bits() == 0));
        assert_eq!(pool.bytes(), 0);
        // another type or length gets a fresh one
        drop(b);
        let c = pool.buffer::<f64>(n, Init::Zeros).unwrap();
        let d = pool.buffer::<f32>(n + 1, Init::Zeros).unwrap();
        assert_eq!(pool.bytes(), n * 4);
        drop((c, d));
        assert_eq!(pool.bytes(), n * 4 + n * 8 + (n + 1) * 4);
        // small buffers are not pooled
        drop(pool.buffer::<f32>(3, Init::Zeros).unwrap());
        assert_eq!(pool.bytes(), n * 4 + n * 8 + (n + 1) * 4);
        pool.clear();
        assert_eq!(pool.bytes(), 0);
        // the cap: a buffer that would pass POOL_BYTES is freed
        pool.put(vec![0f64; POOL_BYTES / 8]); // calloc: no page is touched
        assert_eq!(pool.bytes(), POOL_BYTES);
        pool.put(vec![0f32; n]);
        assert_eq!(pool.bytes(), POOL_BYTES);
        // copies
        pool.clear();
        let src: Vec<f32> = (0..n).map(|i| i as f32).collect();
        assert_eq!(&*pool.copy(&src).unwrap(), &src[..]);
        assert_eq!(&*pool.copy(&src).unwrap(), &src[..]);
    }
}
