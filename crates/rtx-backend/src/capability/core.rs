//! [`BackendCore`]: buffers and the moves between host and backend, the one
//! capability every other builds on.

use crate::{BTensor, Element, Result};

/// The core of a backend: its buffer type, upload, download, zeros,
/// synchronize and `make_unique`. Every other capability trait builds on it;
/// implement [`upload`](Self::upload), [`download`](Self::download) and
/// [`zeros`](Self::zeros) and a backend has every op (the other capabilities
/// default to host round trips through these three).
pub trait BackendCore: Send + Sync + std::fmt::Debug {
    /// A buffer of `T` elements owned by the backend (host or device memory).
    type Buffer<T: Element>: Send + Sync + std::fmt::Debug;
    /// A short name for reports (`"cpu"`, `"cuda:0"`).
    fn name(&self) -> String;

    /// Copies `data` into a new contiguous tensor of `shape`.
    ///
    /// # Errors
    /// [`Error::LengthMismatch`](crate::Error::LengthMismatch) when `data.len()` is not the shape's element count;
    /// device errors (out of memory).
    fn upload<T: Element>(&self, data: &[T], shape: &[usize]) -> Result<BTensor<Self, T>>;

    /// Copies a tensor's elements to the host, in row-major order.
    ///
    /// # Errors
    /// Device errors.
    fn download<T: Element>(&self, t: &BTensor<Self, T>) -> Result<Vec<T>>;

    /// A new contiguous tensor of `shape` filled with zeros.
    ///
    /// # Errors
    /// Size overflow; device errors (out of memory).
    fn zeros<T: Element>(&self, shape: &[usize]) -> Result<BTensor<Self, T>>;

    /// Waits until all work queued on this backend has finished (for timing).
    ///
    /// Default: nothing, for backends whose ops complete before they return
    /// (host backends). Asynchronous device backends override it.
    ///
    /// # Errors
    /// Device errors.
    fn synchronize(&self) -> Result<()> {
        Ok(())
    }

    /// Makes `t`'s buffer its own (copying it if another tensor shares it), so
    /// it can be written in place.
    ///
    /// Default: download and upload (a host round trip); backends with a
    /// device-to-device copy override it.
    ///
    /// # Errors
    /// Device errors.
    fn make_unique<T: Element>(&self, t: &mut BTensor<Self, T>) -> Result<()> {
        if !t.is_unique() {
            let host = self.download(t)?;
            *t = self.upload(&host, t.shape())?;
        }
        Ok(())
    }
}
