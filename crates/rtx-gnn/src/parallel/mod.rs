//! Data-parallel HetGAT training over `N` ranks: each rank a thread with its
//! own backend (its own device), holding the whole model and a share of the
//! batch ([`Shard`]); a [`Communicator`] combines the gradients.
//!
//! **One step** ([`DataParallel::train_step`]): every rank computes the loss
//! and gradients of its share with [`HetGat::loss_and_grads_enqueued`]
//! (the mean over *its* target rows); the ranks all-gather the gradient
//! tensors and the sums of squares of the outputs; every rank sums the
//! gathered rows with [`sum_rows`](rtx_backend::DenseOps::sum_rows), whose
//! canonical order is, for `N <= 256` rows, the left fold in rank order
//! `((g_0 + g_1) + g_2) + ...`; and applies SGD. So every rank applies the
//! same bits and holds identical parameters after every step (checked after
//! each step in debug builds, and whenever [`DataParallel::set_check`] asks),
//! and the loss of a fixed `N` is the same bits on every run.
//!
//! **Weights.** The loss of the whole batch is the mean over all `n` target
//! rows, so rank `r`'s gradient (a mean over its `n_r` rows) weighs
//! `n_r / n`. When all shares have the same number of target rows the
//! weight `1 / N` is folded into the learning rate (`lr / N`); otherwise each
//! rank scales its gradients by `n_r / n` before the gather. The rows are
//! exchanged each step when `N > 1` (one `u64` per rank); with one rank
//! nothing is exchanged but the gather itself.
//!
//! **Which runs equal the single-device run bit for bit** (the same model,
//! seed and learning rate on the disjoint union of the shares, see
//! [`union`]): every op of the forward and backward is row-local on
//! disjoint graphs (a node's edges are the same, in the same order, in its
//! share and in the union), except the sums over rows: the loss's sum of
//! squares and every parameter gradient (`x^T dy`, the bias and attention
//! sums), each a canonical sum over the rows of one node type. The union's
//! canonical sum cuts the rows into blocks of 256 from the first row, sums
//! each left to right, then the block sums the same way. The data-parallel
//! sum is each share's canonical sum, then the left fold over ranks. The
//! two are the same additions when
//! * `N = 1` (always), or
//! * every share but the last has exactly `256^j` rows of every node type
//!   (the same `j` per type, `j >= 0`), the last at most that, and
//!   `N <= 256`: then each share's sum is one node of the union's tree, and
//!   the union's next level is the left fold of those nodes in rank order;
//!
//! and, for the gradients, the weights are exact: `N` a power of two with
//! the same number of target rows in every share (`lr / N` and the `2 / n_r` of each share's mean are then
//! exact powers-of-two rescalings of the union's `lr` and `2 / n`, barring
//! underflow). The Harris workload (10,000 and 5,000 nodes per copy) meets
//! this only for `N = 1`; other splits are deterministic run to run but
//! round differently from the single-device run.
//!
//! **Failure.** A rank whose step fails (its backend: out of memory, a bad
//! index list; its input) reports the cause through
//! [`Communicator::abort`] before returning it; the other ranks' collectives
//! then fail at once naming that rank and cause, and a rank that never
//! arrives is a time-out (see [`rtx_backend::comm`]). [`run_ranks`] runs
//! one thread per rank and does the same for errors outside a step and for
//! panics, so every rank returns an error naming the failed rank and its
//! cause.

mod shard;

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Mutex;

use rtx_backend::comm::{AbortHandle, CommError, Communicator};
use rtx_backend::prelude::*;
use rtx_backend::{BTensor, Element, Unary};
use rtx_tensor::Layout;

pub use shard::{Shard, harris_shards, union};

use crate::model::{DeviceLoss, HetGat, HetGatConfig, LossAndGrads};
use crate::topology::Topology;
use crate::{Error, Result};

/// One rank of data-parallel training: the model (a full replica) and the
/// rank's end of the group.
#[derive(Debug)]
pub struct DataParallel<B: Backend, T: Element, C: Communicator<B>> {
    model: HetGat<B, T>,
    comm: C,
    check: bool,
    steps: usize,
}

impl<B: Backend, T: Element, C: Communicator<B>> DataParallel<B, T, C> {
    /// Rank `comm.rank()`'s replica of `model`. Every rank must start from
    /// the same parameters (e.g. the same seed and schema); with checks on
    /// (see [`DataParallel::set_check`]) the first step verifies it.
    pub fn new(model: HetGat<B, T>, comm: C) -> Self {
        DataParallel {
            model,
            comm,
            check: cfg!(debug_assertions),
            steps: 0,
        }
    }

    /// Whether every step ends by checking that every rank holds the same
    /// parameter bits (a collective: all ranks must agree on it). On by
    /// default in debug builds.
    pub fn set_check(&mut self, on: bool) {
        self.check = on;
    }

    /// The replica.
    pub fn model(&self) -> &HetGat<B, T> {
        &self.model
    }

    /// The communicator.
    pub fn comm(&self) -> &C {
        &self.comm
    }

    /// One data-parallel step on this rank's share (`graph`, inputs `x`):
    /// every rank must call it. Returns the loss of the whole batch (the
    /// mean over every rank's target rows) before the update, the same bits
    /// on every rank.
    ///
    /// # Errors
    /// This rank's errors (then reported to the other ranks first);
    /// [`Error::Comm`] when another rank failed or a collective timed out;
    /// [`Error::Model`] when a check finds parameters that disagree.
    pub fn train_step<G: Topology<B> + ?Sized>(
        &mut self,
        b: &B,
        graph: &G,
        x: &[BTensor<B, T>],
        lr: f64,
    ) -> Result<T> {
        let out = self.try_step(b, graph, x, lr);
        if let Err(e) = &out
            && !matches!(e, Error::Comm(_))
        {
            self.comm.abort(&e.to_string());
        }
        out
    }

    fn try_step<G: Topology<B> + ?Sized>(
        &mut self,
        b: &B,
        graph: &G,
        x: &[BTensor<B, T>],
        lr: f64,
    ) -> Result<T> {
        if self.check && self.steps == 0 {
            self.check_agreement(b)?;
        }
        let LossAndGrads { loss, grads, .. } =
            self.model.loss_and_grads_enqueued(b, graph, x, false)?;
        let size = self.comm.size();
        let rows = if size == 1 {
            vec![loss.rows as u64]
        } else {
            self.comm.all_gather_u64(b, loss.rows as u64)?
        };
        let total: u64 = rows.iter().sum();
        let equal = rows.iter().all(|&r| r == rows[0]);
        let (weight, lr) = if equal {
            (None, lr / size as f64)
        } else {
            let w = loss.rows as f64 / total.max(1) as f64;
            (Some(w), lr)
        };
        let mut local = Vec::with_capacity(grads.len() + 1);
        for g in grads.iter().flatten() {
            local.push(match weight {
                Some(w) => b.unary(Unary::Scale(w), g)?,
                None => g.clone(),
            });
        }
        local.push(loss.sum_sq);
        let parts: Vec<&BTensor<B, T>> = local.iter().collect();
        let mut gathered = self.comm.all_gather(b, &parts)?.into_iter();
        let mut summed: Vec<Option<BTensor<B, T>>> = Vec::with_capacity(grads.len());
        for (g, p) in grads.iter().zip(self.model.params()) {
            summed.push(match g {
                None => None,
                Some(_) => {
                    let all = gathered.next().expect("one gathered tensor per part");
                    Some(rank_sum(b, &all, p.shape())?)
                }
            });
        }
        let sum_sq = rank_sum(b, &gathered.next().expect("the loss part"), &[1, 1])?;
        self.model.sgd(b, &summed, lr)?;
        let loss = DeviceLoss {
            sum_sq,
            rows: total as usize,
        }
        .read(b)?;
        self.steps += 1;
        if self.check {
            self.check_agreement(b)?;
        }
        Ok(loss)
    }

    /// Checks that every rank holds the same parameter bits (a collective):
    /// gathers every parameter and compares each rank's row with rank 0's.
    ///
    /// # Errors
    /// [`Error::Model`] naming the first parameter, rank and element that
    /// differ (the same error on every rank); [`Error::Comm`].
    pub fn check_agreement(&mut self, b: &B) -> Result<()> {
        let size = self.comm.size();
        if size == 1 {
            return Ok(());
        }
        let parts: Vec<&BTensor<B, T>> = self.model.params().iter().collect();
        let gathered = self.comm.all_gather(b, &parts)?;
        for (all, name) in gathered.iter().zip(self.model.param_names()) {
            let v = b.download(all)?;
            let n = v.len() / size;
            for r in 1..size {
                if let Some(k) = (0..n).find(|&k| v[r * n + k].to_bits_u64() != v[k].to_bits_u64())
                {
                    return Err(Error::Model(format!(
                        "data parallel: after {} step(s), parameter {name} of rank {r} \
                         differs from rank 0's at element {k} ({:?} vs {:?})",
                        self.steps,
                        v[r * n + k],
                        v[k]
                    )));
                }
            }
        }
        Ok(())
    }
}

/// The sum of the rows of `all` (`[N, numel]`, one per rank) in rank order,
/// shaped `shape`. One row is itself (no addition).
fn rank_sum<B: Backend, T: Element>(
    b: &B,
    all: &BTensor<B, T>,
    shape: &[usize],
) -> Result<BTensor<B, T>> {
    let layout = Layout::contiguous(shape).map_err(rtx_backend::Error::from)?;
    let one = if all.shape()[0] == 1 {
        all.clone()
    } else {
        b.sum_rows(all)?
    };
    Ok(one.relabel(layout))
}

/// What a rank's thread is given by [`run_ranks`].
#[derive(Debug)]
pub struct RankCtx {
    rank: usize,
    size: usize,
    abort: Mutex<Option<AbortHandle>>,
}

impl RankCtx {
    /// This rank.
    pub fn rank(&self) -> usize {
        self.rank
    }

    /// The number of ranks.
    pub fn size(&self) -> usize {
        self.size
    }

    /// Registers how to tell the group this rank failed (once its
    /// communicator exists): an error or panic of the rank's closure is then
    /// reported through it.
    pub fn on_failure(&self, h: AbortHandle) {
        *self.abort.lock().unwrap_or_else(|p| p.into_inner()) = Some(h);
    }
}

/// Runs `f` for ranks `0..size`, each on its own thread, and returns their
/// results in rank order. A rank whose `f` returns an error or panics
/// reports it through the handle registered with [`RankCtx::on_failure`]
/// (so the other ranks' collectives fail naming it) and returns
/// [`CommError::Failed`] naming itself and the cause.
pub fn run_ranks<R: Send>(size: usize, f: impl Fn(&RankCtx) -> Result<R> + Sync) -> Vec<Result<R>> {
    std::thread::scope(|s| {
        let handles: Vec<_> = (0..size)
            .map(|rank| {
                let f = &f;
                s.spawn(move || {
                    let ctx = RankCtx {
                        rank,
                        size,
                        abort: Mutex::new(None),
                    };
                    let out = match catch_unwind(AssertUnwindSafe(|| f(&ctx))) {
                        Ok(out) => out,
                        Err(p) => {
                            let msg = p
                                .downcast_ref::<&str>()
                                .map(|s| (*s).to_owned())
                                .or_else(|| p.downcast_ref::<String>().cloned())
                                .unwrap_or_else(|| "a panic".to_owned());
                            Err(Error::Model(format!("panicked: {msg}")))
                        }
                    };
                    out.map_err(|e| match e {
                        Error::Comm(c) => Error::Comm(c),
                        other => {
                            let cause = other.to_string();
                            if let Some(h) = &*ctx.abort.lock().unwrap_or_else(|p| p.into_inner()) {
                                h.abort(&cause);
                            }
                            Error::Comm(CommError::Failed { rank, cause })
                        }
                    })
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join()
                    .expect("a rank's panic is caught inside its thread")
            })
            .collect()
    })
}

/// What [`train_shard`] returns: every step's loss and the final
/// parameters, as bits.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RankRun {
    /// The bits of each step's loss (of the whole batch).
    pub losses: Vec<u64>,
    /// The bits of every parameter after the last step.
    pub params: Vec<Vec<u64>>,
}

/// What [`train_shard`] trains: a fresh model of `config` from `seed`, for
/// `steps` SGD steps of rate `lr`, the agreement check after every step
/// when `check`.
#[derive(Debug, Clone)]
pub struct TrainSpec {
    /// The model.
    pub config: HetGatConfig,
    /// The initialization seed (the same on every rank).
    pub seed: u64,
    /// SGD steps.
    pub steps: usize,
    /// Learning rate.
    pub lr: f64,
    /// Whether every step ends with [`DataParallel::check_agreement`].
    pub check: bool,
}

/// Trains `spec` on this rank's `shard`, data-parallel over `comm`.
///
/// # Errors
/// As [`DataParallel::train_step`].
pub fn train_shard<B: Backend, T: Element, C: Communicator<B>>(
    b: &B,
    comm: C,
    shard: &Shard<T>,
    spec: &TrainSpec,
) -> Result<RankRun> {
    let model = HetGat::<B, T>::new(b, &shard.graph, spec.config.clone(), spec.seed)?;
    let x = shard.upload(b, &model.config().in_features)?;
    let mut dp = DataParallel::new(model, comm);
    dp.set_check(spec.check);
    let mut losses = Vec::with_capacity(spec.steps);
    for _ in 0..spec.steps {
        losses.push(dp.train_step(b, &shard.graph, &x, spec.lr)?.to_bits_u64());
    }
    let params = dp.model().param_bits(b)?;
    Ok(RankRun { losses, params })
}

/// The single-device reference of [`train_shard`]: `spec` trained on
/// `shard` alone, with no communicator ([`TrainSpec::check`] unused).
///
/// # Errors
/// As [`HetGat::train_step`].
pub fn train_single<B: Backend, T: Element>(
    b: &B,
    shard: &Shard<T>,
    spec: &TrainSpec,
) -> Result<RankRun> {
    let mut model = HetGat::<B, T>::new(b, &shard.graph, spec.config.clone(), spec.seed)?;
    let x = shard.upload(b, &model.config().in_features)?;
    let mut losses = Vec::with_capacity(spec.steps);
    for _ in 0..spec.steps {
        losses.push(
            model
                .train_step(b, &shard.graph, &x, spec.lr)?
                .to_bits_u64(),
        );
    }
    let params = model.param_bits(b)?;
    Ok(RankRun { losses, params })
}
