//! [`HostComm`]: the ranks are threads of one process; collectives meet in
//! host memory under a mutex, each with a time limit.

use std::any::Any;
use std::collections::HashMap;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use super::{AbortHandle, CommError, CommResult, Communicator};
use crate::{BTensor, Backend, Element};

type Payload = Arc<dyn Any + Send + Sync>;

/// One collective call: what each rank brought, and how many have taken
/// the result (the round is dropped when all have).
struct Round {
    parts: Vec<Option<Payload>>,
    taken: usize,
}

#[derive(Default)]
struct State {
    /// The first failure reported: `(rank, cause)`.
    failed: Option<(usize, String)>,
    rounds: HashMap<u64, Round>,
}

struct Shared {
    size: usize,
    limit: Duration,
    state: Mutex<State>,
    arrived: Condvar,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        // a rank that panicked while holding the lock leaves a consistent
        // state (every update is a single assignment), so keep going
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn fail(&self, rank: usize, cause: &str) {
        let mut st = self.lock();
        if st.failed.is_none() {
            st.failed = Some((rank, cause.to_owned()));
        }
        drop(st);
        self.arrived.notify_all();
    }
}

/// One rank of a [`host_group`]: a thread's end of a group of threads.
/// Works with any backend: parts are downloaded, exchanged in host memory
/// and uploaded stacked in rank order.
pub struct HostComm {
    rank: usize,
    /// The number of collectives this rank has entered: ranks meet by it.
    round: u64,
    shared: Arc<Shared>,
}

impl std::fmt::Debug for HostComm {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HostComm")
            .field("rank", &self.rank)
            .field("size", &self.shared.size)
            .field("round", &self.round)
            .field("limit", &self.shared.limit)
            .finish()
    }
}

/// A group of `size` host communicators (ranks `0..size`, in order) whose
/// collectives each wait at most `limit` for the other ranks.
///
/// # Panics
/// When `size` is 0.
pub fn host_group(size: usize, limit: Duration) -> Vec<HostComm> {
    assert!(size > 0, "a group has at least one rank");
    let shared = Arc::new(Shared {
        size,
        limit,
        state: Mutex::new(State::default()),
        arrived: Condvar::new(),
    });
    (0..size)
        .map(|rank| HostComm {
            rank,
            round: 0,
            shared: Arc::clone(&shared),
        })
        .collect()
}

impl HostComm {
    /// The time limit of each collective.
    pub fn time_limit(&self) -> Duration {
        self.shared.limit
    }

    /// Deposits `payload` for this round and waits for every rank's;
    /// returns them in rank order.
    fn exchange(&mut self, op: &str, payload: Payload) -> CommResult<Vec<Payload>> {
        let sh = &*self.shared;
        let (rank, round) = (self.rank, self.round);
        self.round += 1;
        let deadline = Instant::now() + sh.limit;
        let mut st = sh.lock();
        if let Some((r, cause)) = &st.failed {
            return Err(failed(*r, cause));
        }
        let entry = st.rounds.entry(round).or_insert_with(|| Round {
            parts: vec![None; sh.size],
            taken: 0,
        });
        entry.parts[rank] = Some(payload);
        sh.arrived.notify_all();
        loop {
            if let Some((r, cause)) = &st.failed {
                return Err(failed(*r, cause));
            }
            let entry = st
                .rounds
                .get_mut(&round)
                .expect("a round lives until all took it");
            if entry.parts.iter().all(Option::is_some) {
                let all: Vec<Payload> = entry.parts.iter().flatten().cloned().collect();
                entry.taken += 1;
                if entry.taken == sh.size {
                    st.rounds.remove(&round);
                }
                return Ok(all);
            }
            let now = Instant::now();
            if now >= deadline {
                let missing: Vec<usize> =
                    (0..sh.size).filter(|&r| entry.parts[r].is_none()).collect();
                // the first missing rank is the one reported to the others
                let cause = format!(
                    "did not reach {op} (collective {round}) within {:?}",
                    sh.limit
                );
                if st.failed.is_none() {
                    st.failed = Some((missing[0], cause));
                }
                drop(st);
                sh.arrived.notify_all();
                return Err(CommError::Timeout {
                    rank,
                    op: op.to_owned(),
                    limit: sh.limit,
                    missing,
                });
            }
            st = sh
                .arrived
                .wait_timeout(st, deadline - now)
                .unwrap_or_else(|p| p.into_inner())
                .0;
        }
    }

    /// Reports `cause` as this rank's failure and returns it as an error.
    fn fail_here(&self, cause: String) -> CommError {
        self.shared.fail(self.rank, &cause);
        CommError::Failed {
            rank: self.rank,
            cause,
        }
    }
}

fn failed(rank: usize, cause: &str) -> CommError {
    CommError::RankFailed {
        rank,
        cause: cause.to_owned(),
    }
}

impl<B: Backend> Communicator<B> for HostComm {
    fn rank(&self) -> usize {
        self.rank
    }

    fn size(&self) -> usize {
        self.shared.size
    }

    fn all_gather<T: Element>(
        &mut self,
        b: &B,
        parts: &[&BTensor<B, T>],
    ) -> CommResult<Vec<BTensor<B, T>>> {
        let mut mine = Vec::with_capacity(parts.len());
        for p in parts {
            mine.push(
                b.download(p)
                    .map_err(|e| self.fail_here(format!("all_gather: download: {e}")))?,
            );
        }
        let all = self.exchange("all_gather", Arc::new(mine))?;
        let n = self.shared.size;
        let mut out = Vec::with_capacity(parts.len());
        for (i, p) in parts.iter().enumerate() {
            let numel = p.numel();
            let mut stacked = Vec::with_capacity(numel * n);
            for (r, payload) in all.iter().enumerate() {
                let theirs = payload.downcast_ref::<Vec<Vec<T>>>().ok_or_else(|| {
                    self.fail_here(format!(
                        "all_gather: rank {r} sent elements of another type"
                    ))
                })?;
                match theirs.get(i) {
                    Some(v) if v.len() == numel => stacked.extend_from_slice(v),
                    other => {
                        return Err(self.fail_here(format!(
                            "all_gather: rank {r} sent {} for part {i} of {numel} elements \
                             ({} parts here, {} there)",
                            other.map_or("nothing".to_owned(), |v| format!("{} elements", v.len())),
                            parts.len(),
                            theirs.len()
                        )));
                    }
                }
            }
            out.push(
                b.upload(&stacked, &[n, numel])
                    .map_err(|e| self.fail_here(format!("all_gather: upload: {e}")))?,
            );
        }
        Ok(out)
    }

    fn all_gather_u64(&mut self, _b: &B, value: u64) -> CommResult<Vec<u64>> {
        let all = self.exchange("all_gather_u64", Arc::new(value))?;
        all.iter()
            .enumerate()
            .map(|(r, p)| {
                p.downcast_ref::<u64>().copied().ok_or_else(|| {
                    self.fail_here(format!("all_gather_u64: rank {r} is in another collective"))
                })
            })
            .collect()
    }

    fn abort(&self, cause: &str) {
        self.shared.fail(self.rank, cause);
    }

    fn abort_handle(&self) -> AbortHandle {
        let (shared, rank) = (Arc::clone(&self.shared), self.rank);
        AbortHandle::new(move |cause| shared.fail(rank, cause))
    }
}
