//! [`NcclComm`]: a [`Communicator`] over NCCL, device to device on the
//! backend's stream. NCCL is loaded at run time like the driver: a machine
//! without `libnccl.so.2` builds and gets [`CommError::Unavailable`], never a
//! panic (the library is probed before cudarc's loader could panic).
//!
//! **Time limits.** Creating the communicator runs `ncclCommInitRank` on a
//! helper thread and waits at most the limit (a peer that never joins
//! leaves that thread blocked, and this rank returns a time-out). Every
//! collective is enqueued, then its completion is polled (`cuStreamQuery`,
//! `ncclCommGetAsyncError`) until the limit; past it, or when an abort was
//! asked for, the communicator is aborted (`ncclCommAbort`) and the
//! collective returns an error, so a dead peer is an error, not a hang.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use cudarc::driver::{CudaStream, sys as dsys};
use cudarc::nccl::{result, sys};
use rtx_backend::comm::{AbortHandle, CommError, CommResult, Communicator};
use rtx_backend::{BTensor, DType, Element};

use crate::backend::{CudaBackend, ptr};

/// Whether the NCCL library loads; probing cannot panic.
fn nccl_present() -> bool {
    // SAFETY: only tries to dlopen the candidate library names.
    unsafe { sys::is_culib_present() }
}

fn no_nccl() -> CommError {
    CommError::Unavailable(
        "the NCCL library (libnccl.so.2) was not found on the loader path: install NCCL \
         or add its directory to LD_LIBRARY_PATH"
            .into(),
    )
}

/// The NCCL version (e.g. 22809 for 2.28.9).
///
/// # Errors
/// [`CommError::Unavailable`] without the library.
pub fn nccl_version() -> CommResult<i32> {
    if !nccl_present() {
        return Err(no_nccl());
    }
    result::get_nccl_version().map_err(|e| CommError::Unavailable(format!("ncclGetVersion: {e:?}")))
}

/// NCCL's unique id: rank 0 makes it and every rank must get its bytes
/// (see `rtx_backend::comm::rendezvous`).
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct NcclId([u8; 128]);

impl std::fmt::Debug for NcclId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("NcclId(..)")
    }
}

impl NcclId {
    /// A new id (`ncclGetUniqueId`).
    ///
    /// # Errors
    /// [`CommError::Unavailable`] without the library or when NCCL fails.
    pub fn new() -> CommResult<NcclId> {
        if !nccl_present() {
            return Err(no_nccl());
        }
        let id = result::get_uniqueid()
            .map_err(|e| CommError::Unavailable(format!("ncclGetUniqueId: {e:?}")))?;
        Ok(NcclId(id.internal.map(|c| c as u8)))
    }

    /// An id from the bytes another rank made.
    ///
    /// # Errors
    /// [`CommError::Unavailable`] unless there are exactly 128 bytes.
    pub fn from_bytes(bytes: &[u8]) -> CommResult<NcclId> {
        let a: [u8; 128] = bytes.try_into().map_err(|_| {
            CommError::Unavailable(format!("an NCCL id has 128 bytes, not {}", bytes.len()))
        })?;
        Ok(NcclId(a))
    }

    /// The bytes to send to the other ranks.
    pub fn as_bytes(&self) -> &[u8; 128] {
        &self.0
    }
}

/// A raw communicator handle moved between threads (NCCL allows any
/// thread to use a communicator, one at a time).
struct RawComm(sys::ncclComm_t);
// SAFETY: the handle is used by one thread at a time (the init helper
// thread hands it over, then only the owner uses it).
unsafe impl Send for RawComm {}

/// One rank's NCCL communicator on a [`CudaBackend`]'s device and stream.
pub struct NcclComm {
    comm: sys::ncclComm_t,
    rank: usize,
    size: usize,
    limit: Duration,
    stream: Arc<CudaStream>,
    /// An abort asked for (by this rank's driver or, when shared with
    /// [`NcclComm::share_failures`], by any rank of this process): the rank
    /// and cause; the next or current collective aborts the communicator.
    aborted: Failures,
}

/// Where the ranks of one process report failures to each other (see
/// [`NcclComm::share_failures`]): the first `(rank, cause)` reported.
#[derive(Debug, Clone, Default)]
pub struct Failures(Arc<Mutex<Option<(usize, String)>>>);

impl Failures {
    fn report(&self, rank: usize, cause: &str) {
        let mut a = self.0.lock().unwrap_or_else(|p| p.into_inner());
        if a.is_none() {
            *a = Some((rank, cause.to_owned()));
        }
    }

    fn get(&self) -> Option<(usize, String)> {
        self.0.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }
}

impl std::fmt::Debug for NcclComm {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NcclComm")
            .field("rank", &self.rank)
            .field("size", &self.size)
            .field("limit", &self.limit)
            .finish()
    }
}

impl NcclComm {
    /// Joins rank `rank` of a group of `size` made with `id`, on `b`'s
    /// device; waits at most `limit` for the other ranks to join, and every
    /// collective at most `limit`.
    ///
    /// # Errors
    /// [`CommError::Unavailable`] without the library;
    /// [`CommError::Timeout`] when the group did not form in time;
    /// [`CommError::Failed`] for NCCL errors.
    pub fn new(
        b: &CudaBackend,
        id: &NcclId,
        rank: usize,
        size: usize,
        limit: Duration,
    ) -> CommResult<NcclComm> {
        if !nccl_present() {
            return Err(no_nccl());
        }
        if size == 0 || rank >= size || size > i32::MAX as usize {
            return Err(CommError::Failed {
                rank,
                cause: format!("rank {rank} of a group of {size}"),
            });
        }
        let ctx = Arc::clone(&b.dev.ctx);
        let raw = sys::ncclUniqueId {
            internal: id.0.map(|c| c as ::core::ffi::c_char),
        };
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let out = ctx
                .bind_to_thread()
                .map_err(|e| format!("{e:?}"))
                .and_then(|()| {
                    let mut comm = std::mem::MaybeUninit::uninit();
                    // SAFETY: comm is valid for one write; the id is 128 bytes.
                    unsafe {
                        result::comm_init_rank(comm.as_mut_ptr(), size as i32, raw, rank as i32)
                    }
                    .map_err(|e| format!("ncclCommInitRank: {e:?}"))?;
                    // SAFETY: written by a successful ncclCommInitRank.
                    Ok(RawComm(unsafe { comm.assume_init() }))
                });
            // the receiver may have timed out and gone: then the handle is
            // leaked with this thread, as documented
            let _ = tx.send(out);
        });
        match rx.recv_timeout(limit) {
            Ok(Ok(RawComm(comm))) => Ok(NcclComm {
                comm,
                rank,
                size,
                limit,
                stream: Arc::clone(&b.dev.stream),
                aborted: Failures::default(),
            }),
            Ok(Err(cause)) => Err(CommError::Failed { rank, cause }),
            Err(_) => Err(CommError::Timeout {
                rank,
                op: "ncclCommInitRank".into(),
                limit,
                missing: vec![],
            }),
        }
    }

    /// Makes this rank report its failures to, and see those of, every
    /// communicator given the same `failures` (the ranks of one process):
    /// a rank's error then fails the others' collectives at once, not at
    /// their time limit. Ranks in other processes still see a failure as a
    /// time-out.
    pub fn share_failures(&mut self, failures: &Failures) {
        self.aborted = failures.clone();
    }

    fn fail(&self, cause: String) -> CommError {
        CommError::Failed {
            rank: self.rank,
            cause,
        }
    }

    /// Aborts the communicator (idempotent); later collectives fail.
    fn abort_now(&mut self) {
        if !self.comm.is_null() {
            // SAFETY: a live communicator of this rank, used by no one else.
            let _ = unsafe { result::comm_abort(self.comm) };
            self.comm = std::ptr::null_mut();
        }
    }

    fn check_usable(&self) -> CommResult<()> {
        if let Some((rank, cause)) = self.aborted.get() {
            return Err(CommError::RankFailed { rank, cause });
        }
        if self.comm.is_null() {
            return Err(self.fail("the NCCL communicator was aborted by an earlier failure".into()));
        }
        Ok(())
    }

    /// Enqueues `ops` as one NCCL group on the stream, then waits for the
    /// stream within the limit.
    fn run(
        &mut self,
        op: &str,
        ops: impl FnOnce(sys::ncclComm_t, sys::cudaStream_t) -> Result<(), String>,
    ) -> CommResult<()> {
        self.check_usable()?;
        let stream = self.stream.cu_stream() as sys::cudaStream_t;
        self.stream
            .context()
            .bind_to_thread()
            .map_err(|e| self.fail(format!("{op}: {e:?}")))?;
        result::group_start().map_err(|e| self.fail(format!("{op}: ncclGroupStart: {e:?}")))?;
        let enq = ops(self.comm, stream);
        let end = result::group_end();
        if let Err(cause) = enq {
            self.abort_now();
            return Err(self.fail(format!("{op}: {cause}")));
        }
        if let Err(e) = end {
            self.abort_now();
            return Err(self.fail(format!("{op}: ncclGroupEnd: {e:?}")));
        }
        self.wait(op)
    }

    /// Polls the stream until done, an NCCL error, an abort or the limit.
    fn wait(&mut self, op: &str) -> CommResult<()> {
        let start = Instant::now();
        let deadline = start + self.limit;
        loop {
            // SAFETY: the backend's live stream.
            let q = unsafe { dsys::cuStreamQuery(self.stream.cu_stream()) };
            match q {
                dsys::cudaError_enum::CUDA_SUCCESS => return Ok(()),
                dsys::cudaError_enum::CUDA_ERROR_NOT_READY => {}
                e => {
                    self.abort_now();
                    return Err(self.fail(format!("{op}: the stream failed: {e:?}")));
                }
            }
            let mut async_err = sys::ncclResult_t::ncclSuccess;
            // SAFETY: a live communicator; async_err is valid for one write.
            let _ = unsafe { sys::ncclCommGetAsyncError(self.comm, &mut async_err) };
            if async_err != sys::ncclResult_t::ncclSuccess
                && async_err != sys::ncclResult_t::ncclInProgress
            {
                self.abort_now();
                return Err(self.fail(format!("{op}: NCCL reports {async_err:?}")));
            }
            if let Some((rank, cause)) = self.aborted.get() {
                self.abort_now();
                return Err(CommError::RankFailed { rank, cause });
            }
            if Instant::now() >= deadline {
                self.abort_now();
                return Err(CommError::Timeout {
                    rank: self.rank,
                    op: op.to_owned(),
                    limit: self.limit,
                    missing: vec![],
                });
            }
            // spin for the first 100 ms (a training step's wait: a late
            // wake-up would be the step's overhead), then poll gently
            if start.elapsed() < Duration::from_millis(100) {
                std::hint::spin_loop();
            } else {
                std::thread::sleep(Duration::from_micros(200));
            }
        }
    }
}

impl Drop for NcclComm {
    fn drop(&mut self) {
        // abort, not destroy: it never waits for peers that may be gone
        self.abort_now();
    }
}

fn nccl_type(d: DType) -> sys::ncclDataType_t {
    match d {
        DType::F32 => sys::ncclDataType_t::ncclFloat32,
        DType::F64 => sys::ncclDataType_t::ncclFloat64,
        DType::BF16 => sys::ncclDataType_t::ncclBfloat16,
        DType::F16 => sys::ncclDataType_t::ncclFloat16,
    }
}

impl Communicator<CudaBackend> for NcclComm {
    fn rank(&self) -> usize {
        self.rank
    }

    fn size(&self) -> usize {
        self.size
    }

    fn all_gather<T: Element>(
        &mut self,
        b: &CudaBackend,
        parts: &[&BTensor<CudaBackend, T>],
    ) -> CommResult<Vec<BTensor<CudaBackend, T>>> {
        let size = self.size;
        // one rank: the gather in place (the output is the input, NCCL's
        // in-place form `send == recv + rank * count`), so a one-rank group
        // costs no copies; more ranks: a fresh [size, numel] per part
        let outs: Vec<BTensor<CudaBackend, T>> = if size == 1 {
            parts
                .iter()
                .map(|p| {
                    let layout = rtx_tensor::Layout::contiguous(&[1, p.numel()])
                        .map_err(|e| self.fail(format!("all_gather: {e}")))?;
                    Ok((*p).clone().relabel(layout))
                })
                .collect::<CommResult<_>>()?
        } else {
            let mut outs = Vec::with_capacity(parts.len());
            for p in parts {
                outs.push(
                    b.out::<T>(&[size, p.numel()])
                        .map_err(|e| self.fail(format!("all_gather: {e}")))?,
                );
            }
            outs
        };
        let ty = nccl_type(T::DTYPE);
        self.run("all_gather", |comm, stream| {
            for (p, o) in parts.iter().zip(&outs) {
                if p.numel() == 0 {
                    continue;
                }
                let (send, recv) = (ptr(p), ptr(o));
                // SAFETY: send holds numel elements of T, recv size * numel,
                // both live on this device until the stream is waited for
                // (run); with one rank they are the same buffer, NCCL's
                // in-place form.
                unsafe {
                    result::all_gather(
                        send.addr() as *const _,
                        recv.addr() as *mut _,
                        p.numel(),
                        ty,
                        comm,
                        stream,
                    )
                }
                .map_err(|e| format!("ncclAllGather: {e:?}"))?;
            }
            Ok(())
        })?;
        Ok(outs)
    }

    fn all_gather_u64(&mut self, b: &CudaBackend, value: u64) -> CommResult<Vec<u64>> {
        let fail = |e: crate::Error| CommError::Failed {
            rank: self.rank,
            cause: format!("all_gather_u64: {e}"),
        };
        let send = b.dev.upload_bytes(&value.to_le_bytes()).map_err(fail)?;
        let recv = b.dev.alloc(8 * self.size).map_err(fail)?;
        self.run("all_gather_u64", |comm, stream| {
            // SAFETY: send holds one u64, recv size of them, both live until
            // the stream is waited for (run).
            unsafe {
                result::all_gather(
                    send.ptr::<u64>().addr() as *const _,
                    recv.ptr::<u64>().addr() as *mut _,
                    1,
                    sys::ncclDataType_t::ncclUint64,
                    comm,
                    stream,
                )
            }
            .map(|_| ())
            .map_err(|e| format!("ncclAllGather: {e:?}"))
        })?;
        let mut out = vec![0u64; self.size];
        b.dev
            .read(recv.ptr(), &mut out, "all_gather_u64")
            .map_err(|e| CommError::Failed {
                rank: self.rank,
                cause: format!("all_gather_u64: {e}"),
            })?;
        Ok(out)
    }

    fn abort(&self, cause: &str) {
        self.aborted.report(self.rank, cause);
    }

    fn abort_handle(&self) -> AbortHandle {
        let (a, rank) = (self.aborted.clone(), self.rank);
        AbortHandle::new(move |cause| a.report(rank, cause))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn without_libnccl_every_entry_point_is_an_error_not_a_panic() {
        if nccl_present() {
            // a host with NCCL: the GPU tests (tests/nccl.rs) cover it
            assert!(nccl_version().is_ok());
            return;
        }
        for e in [NcclId::new().unwrap_err(), nccl_version().unwrap_err()] {
            assert!(matches!(e, CommError::Unavailable(_)), "{e}");
            assert!(e.to_string().contains("libnccl.so.2"), "{e}");
        }
    }

    #[test]
    fn an_id_is_128_bytes() {
        let bytes: Vec<u8> = (0..128).collect();
        assert_eq!(
            NcclId::from_bytes(&bytes).unwrap().as_bytes()[..],
            bytes[..]
        );
        assert!(NcclId::from_bytes(&bytes[..127]).is_err());
    }
}
