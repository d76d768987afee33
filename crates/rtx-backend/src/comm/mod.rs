//! Collective communication between the ranks of a data-parallel group.
//!
//! A [`Communicator`] is one rank's end of a group of `size` ranks. Its one
//! collective, [`Communicator::all_gather`], stacks every rank's tensors in
//! rank order, so whoever combines them (e.g. sums the rows of the result
//! with the canonical order, which for at most 256 rows is the left fold in
//! rank order) fixes the summation order: the result is the same bits on
//! every rank and every run, whatever the timing.
//!
//! Two implementations:
//! * [`HostComm`] ([`host_group`]): ranks are threads of one process, the
//!   data goes through host memory; it works with any backend (it downloads
//!   and uploads), so the CPU tests exercise the reduction order, the
//!   parameter agreement and the failure paths.
//! * the NCCL communicator of `rtx-backend-cuda` (`NcclComm`), device to
//!   device.
//!
//! **Failure.** Every collective has a time limit: a rank that does not
//! arrive in time is reported as failed ([`CommError::Timeout`] on the rank
//! that waited, [`CommError::RankFailed`] on the others). A rank that fails
//! on its own (out of memory, a bad index list) calls
//! [`Communicator::abort`] (or the handle of [`Communicator::abort_handle`])
//! with the cause, and every other rank's next or current collective returns
//! [`CommError::RankFailed`] naming that rank and cause, at once. No rank
//! hangs.
//!
//! [`rendezvous`] is the bootstrap of ranks in separate processes (on one
//! host or several): rank 0 serves a byte string (NCCL's unique id) over
//! TCP, the others fetch it.

mod host;
pub mod rendezvous;

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use crate::{BTensor, Backend, Element};

pub use host::{HostComm, host_group};

/// The time limit of a collective when none is given: generous for a
/// training step, short enough that a dead peer is noticed.
pub const DEFAULT_TIME_LIMIT: Duration = Duration::from_secs(60);

/// Errors of a collective. Each names the rank it is about.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum CommError {
    /// Another rank (or this one, earlier) failed and said why.
    #[error("rank {rank} failed: {cause}")]
    RankFailed {
        /// The rank that failed.
        rank: usize,
        /// Its error.
        cause: String,
    },
    /// This rank waited past the time limit.
    #[error("rank {rank}: {op} timed out after {limit:?}{}", missing_text(.missing))]
    Timeout {
        /// The rank that waited.
        rank: usize,
        /// The collective.
        op: String,
        /// The limit.
        limit: Duration,
        /// The ranks that did not arrive, when known (empty otherwise).
        missing: Vec<usize>,
    },
    /// The collective failed on this rank (a device or library error, a
    /// peer that sent something of another shape).
    #[error("rank {rank}: {cause}")]
    Failed {
        /// This rank.
        rank: usize,
        /// The error.
        cause: String,
    },
    /// The communicator cannot be made here (no NCCL library, the feature
    /// off, a bootstrap that failed).
    #[error("communicator unavailable: {0}")]
    Unavailable(String),
}

fn missing_text(missing: &[usize]) -> String {
    if missing.is_empty() {
        String::new()
    } else {
        format!(": rank(s) {missing:?} did not arrive")
    }
}

impl CommError {
    /// The rank the error blames: the failed rank for
    /// [`CommError::RankFailed`], the first rank that did not arrive for a
    /// [`CommError::Timeout`] that knows it, this rank otherwise (`None`
    /// for [`CommError::Unavailable`]).
    pub fn rank(&self) -> Option<usize> {
        match self {
            CommError::Timeout { missing, rank, .. } => Some(*missing.first().unwrap_or(rank)),
            CommError::RankFailed { rank, .. } | CommError::Failed { rank, .. } => Some(*rank),
            CommError::Unavailable(_) => None,
        }
    }
}

/// `Result` with [`CommError`].
pub type CommResult<T> = std::result::Result<T, CommError>;

/// Tells a group that this rank failed, from anywhere (another thread, a
/// driver that owns no longer the communicator). Cloning shares it.
#[derive(Clone)]
pub struct AbortHandle(Arc<dyn Fn(&str) + Send + Sync>);

impl AbortHandle {
    /// A handle calling `f` with the cause.
    pub fn new(f: impl Fn(&str) + Send + Sync + 'static) -> AbortHandle {
        AbortHandle(Arc::new(f))
    }

    /// Reports this rank failed with `cause` (the first report of a group
    /// wins; later ones are ignored).
    pub fn abort(&self, cause: &str) {
        (self.0)(cause)
    }
}

impl fmt::Debug for AbortHandle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("AbortHandle")
    }
}

/// One rank's end of a group of [`Communicator::size`] ranks on backend `B`.
pub trait Communicator<B: Backend> {
    /// This rank, `0..size`.
    fn rank(&self) -> usize;

    /// The number of ranks.
    fn size(&self) -> usize;

    /// Gathers `parts` of every rank: result `i` has shape `[size,
    /// parts[i].numel()]`, row `r` holding rank `r`'s `parts[i]`. Every rank
    /// must pass the same number of parts with the same element counts.
    /// Returns when the result is complete (on a device: when the copies are
    /// done), within the time limit.
    ///
    /// # Errors
    /// [`CommError`]: a rank that failed or did not arrive in time, a peer's
    /// part of another size (then the group is aborted), a backend error.
    fn all_gather<T: Element>(
        &mut self,
        b: &B,
        parts: &[&BTensor<B, T>],
    ) -> CommResult<Vec<BTensor<B, T>>>;

    /// Gathers one `u64` of every rank (row counts, fingerprints), in rank
    /// order.
    ///
    /// # Errors
    /// As [`Communicator::all_gather`].
    fn all_gather_u64(&mut self, b: &B, value: u64) -> CommResult<Vec<u64>>;

    /// Reports this rank failed with `cause`: every rank's current or next
    /// collective returns [`CommError::RankFailed`] naming this rank.
    fn abort(&self, cause: &str);

    /// A handle that does what [`Communicator::abort`] does, usable after
    /// the communicator moved (e.g. into the rank's model).
    fn abort_handle(&self) -> AbortHandle;
}
