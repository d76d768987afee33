//! `rtx-bench hetgat --gpus N` (and `--cpu-ranks N`): data-parallel HetGAT
//! training on the Harris batch split over `N` ranks, each a thread with
//! its own backend: GPU `r` through NCCL, or a CPU backend through the host
//! communicator. Prints the loss per step (rank 0), then a JSON scaling row
//! `{"suite": "hetgat-dp", "case": "harris-batch{B}", "impl":
//! "rtx-nccl-{N}gpu-train-step", "ms": ..}` (median step after the first).
//!
//! With `--gpus 1 --rounds R` it also times the single-device step on the
//! same batch, alternating with the data-parallel step for `R` rounds of
//! `--steps` steps each, and prints both medians, the overhead and whether
//! the two runs gave the same loss bits (they must: see
//! `rtx_gnn::parallel`).

use std::time::Instant;

use anyhow::Context;
use rtx_backend::comm::{Communicator, DEFAULT_TIME_LIMIT, host_group};
use rtx_backend_cpu::CpuBackend;
use rtx_gnn::parallel::{DataParallel, Shard, harris_shards, run_ranks};
use rtx_gnn::{HetGat, HetGatConfig};

use serde_json::json;

/// What a data-parallel run trains (from `rtx-bench hetgat`'s arguments).
#[derive(Debug, Clone)]
pub struct Options {
    /// Harris copies in the whole batch.
    pub batch: usize,
    /// Steps (per round with `rounds`).
    pub steps: usize,
    /// SGD learning rate.
    pub lr: f64,
    /// Initialization seed.
    pub seed: u64,
    /// With one GPU: rounds alternating with the single-device step (0: none).
    #[cfg_attr(not(feature = "cuda"), allow(dead_code))] // read by the GPU path only
    pub rounds: usize,
}

/// What a rank measured: each step's loss and wall time (ms).
struct RankTimes {
    losses: Vec<f32>,
    ms: Vec<f64>,
}

/// Trains `shard` for `steps` data-parallel steps on `b` over `comm`, with
/// the shard's index lists and plans held on the device (as the
/// single-device `hetgat` run holds them).
fn rank_loop<B: rtx_backend::Backend, C: Communicator<B>>(
    b: &B,
    comm: C,
    shard: &Shard<f32>,
    args: &Options,
    print: bool,
) -> rtx_gnn::Result<RankTimes> {
    let model = HetGat::<B, f32>::new(b, &shard.graph, HetGatConfig::harris(), args.seed)?;
    let x = shard.upload(b, &model.config().in_features)?;
    let mut dp = DataParallel::new(model, comm);
    let mut out = RankTimes {
        losses: Vec::with_capacity(args.steps),
        ms: Vec::with_capacity(args.steps),
    };
    shard.graph.with_resident(b, || -> rtx_gnn::Result<()> {
        for step in 0..args.steps {
            let t = Instant::now();
            let loss = dp.train_step(b, &shard.graph, &x, args.lr)?;
            let ms = t.elapsed().as_secs_f64() * 1e3;
            if print {
                println!("step {step:>4}  loss {loss:.9}  {ms:>9.2} ms");
            }
            out.losses.push(loss);
            out.ms.push(ms);
        }
        Ok(())
    })??;
    Ok(out)
}

fn median(mut v: Vec<f64>) -> f64 {
    if v.is_empty() {
        return f64::NAN;
    }
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

fn round4(x: f64) -> f64 {
    (x * 1e4).round() / 1e4
}

/// Collects every rank's result; the first error (each names its rank).
fn all_ok<R>(results: Vec<rtx_gnn::Result<R>>) -> anyhow::Result<Vec<R>> {
    let mut out = Vec::with_capacity(results.len());
    for (r, res) in results.into_iter().enumerate() {
        out.push(res.with_context(|| format!("rank {r}"))?);
    }
    Ok(out)
}

fn report(args: &Options, imp: &str, ranks: usize, runs: &[RankTimes], backend: &str) {
    let r0 = &runs[0];
    let steady: Vec<f64> = r0.ms.iter().skip(1).copied().collect();
    println!(
        "{}",
        json!({"suite": "hetgat-dp", "case": format!("harris-batch{}", args.batch),
               "impl": imp, "ms": round4(median(steady)), "ranks": ranks,
               "backend": backend, "steps": args.steps,
               "loss_first": r0.losses[0], "loss_last": r0.losses[r0.losses.len() - 1],
               "loss_last_bits": format!("{:#010x}", r0.losses[r0.losses.len() - 1].to_bits())})
    );
}

/// `--cpu-ranks N`: `N` CPU ranks (threads, the host communicator).
pub fn run_cpu_ranks(args: &Options, n: usize) -> anyhow::Result<()> {
    let shards = harris_shards::<f32>(args.batch, n).context("splitting the batch")?;
    let comms = std::sync::Mutex::new(
        host_group(n, DEFAULT_TIME_LIMIT)
            .into_iter()
            .map(Some)
            .collect::<Vec<_>>(),
    );
    println!(
        "data-parallel HetGAT: Harris batch {} over {n} CPU rank(s)",
        args.batch
    );
    let runs = all_ok(run_ranks(n, |ctx| {
        let comm = comms.lock().unwrap_or_else(|p| p.into_inner())[ctx.rank()]
            .take()
            .expect("one communicator per rank");
        ctx.on_failure(Communicator::<CpuBackend>::abort_handle(&comm));
        let b = CpuBackend::new();
        rank_loop(&b, comm, &shards[ctx.rank()], args, ctx.rank() == 0)
    }))?;
    report(
        args,
        &format!("rtx-cpu-{n}rank-train-step"),
        n,
        &runs,
        "cpu",
    );
    Ok(())
}

/// `--gpus N`: GPU `r` is rank `r`, NCCL between them.
#[cfg(feature = "cuda")]
pub fn run_gpus(args: &Options, n: usize) -> anyhow::Result<()> {
    use rtx_backend_cuda::CudaBackend;
    use rtx_backend_cuda::comm::{Failures, NcclComm, NcclId, nccl_version};
    let version = nccl_version()?;
    let shards = harris_shards::<f32>(args.batch, n).context("splitting the batch")?;
    let id = NcclId::new()?;
    let failures = Failures::default();
    println!(
        "data-parallel HetGAT: Harris batch {} over {n} GPU(s), NCCL {version}",
        args.batch
    );
    if n == 1 && args.rounds > 0 {
        return compare_one_rank(args, &shards[0], &id);
    }
    let runs = all_ok(run_ranks(n, |ctx| {
        let b = CudaBackend::new(ctx.rank()).map_err(rtx_backend::Error::from)?;
        b.load_kernels().map_err(rtx_backend::Error::from)?;
        let mut comm = NcclComm::new(&b, &id, ctx.rank(), n, DEFAULT_TIME_LIMIT)?;
        comm.share_failures(&failures);
        ctx.on_failure(comm.abort_handle());
        rank_loop(&b, comm, &shards[ctx.rank()], args, ctx.rank() == 0)
    }))?;
    report(
        args,
        &format!("rtx-nccl-{n}gpu-train-step"),
        n,
        &runs,
        "cuda",
    );
    Ok(())
}

/// One NCCL rank against the single-device step, alternating rounds.
#[cfg(feature = "cuda")]
fn compare_one_rank(
    args: &Options,
    shard: &Shard<f32>,
    id: &rtx_backend_cuda::comm::NcclId,
) -> anyhow::Result<()> {
    use rtx_backend::prelude::*;
    use rtx_backend_cuda::CudaBackend;
    use rtx_backend_cuda::comm::NcclComm;
    let b = CudaBackend::new(0)?;
    b.load_kernels()?;
    let comm = NcclComm::new(&b, id, 0, 1, DEFAULT_TIME_LIMIT)?;
    let g = &shard.graph;
    let mut single = HetGat::<_, f32>::new(&b, g, HetGatConfig::harris(), args.seed)?;
    let x = shard.upload(&b, &single.config().in_features)?;
    let model = HetGat::<_, f32>::new(&b, g, HetGatConfig::harris(), args.seed)?;
    let mut dp = DataParallel::new(model, comm);
    // the agreement check is a no-op with one rank; keep the step as timed
    dp.set_check(false);
    // both steps run with the shard's lists and plans held on the device, as
    // the single-device `hetgat` run holds them
    let (same, s_med, d_med) = g.with_resident(&b, || -> anyhow::Result<_> {
    // warm up both (kernels, buffers, index caches)
    let (l1, l2) = (
        single.train_step(&b, g, &x, args.lr)?,
        dp.train_step(&b, g, &x, args.lr)?,
    );
    let mut same = l1.to_bits() == l2.to_bits();
    let (mut s_med, mut d_med) = (Vec::new(), Vec::new());
    for round in 0..args.rounds {
        let mut s_ms = Vec::with_capacity(args.steps);
        let mut s_loss = Vec::with_capacity(args.steps);
        for _ in 0..args.steps {
            let t = Instant::now();
            s_loss.push(single.train_step(&b, g, &x, args.lr)?.to_bits());
            s_ms.push(t.elapsed().as_secs_f64() * 1e3);
        }
        let mut d_ms = Vec::with_capacity(args.steps);
        let mut d_loss = Vec::with_capacity(args.steps);
        for _ in 0..args.steps {
            let t = Instant::now();
            d_loss.push(dp.train_step(&b, g, &x, args.lr)?.to_bits());
            d_ms.push(t.elapsed().as_secs_f64() * 1e3);
        }
        same &= s_loss == d_loss;
        let (s, d) = (median(s_ms), median(d_ms));
        println!(
            "round {round}: single-device {s:.4} ms/step, one NCCL rank {d:.4} ms/step ({:+.2}%)",
            (d / s - 1.0) * 100.0
        );
        s_med.push(s);
        d_med.push(d);
    }
    Ok((same, s_med, d_med))
    })??;
    for (imp, v) in [
        ("rtx-single-train-step", &s_med),
        ("rtx-nccl-1gpu-train-step", &d_med),
    ] {
        println!(
            "{}",
            json!({"suite": "hetgat-dp", "case": format!("harris-batch{}", args.batch),
                   "impl": imp, "ms": round4(median(v.clone())),
                   "rounds": v.iter().map(|x| round4(*x)).collect::<Vec<_>>(),
                   "steps_per_round": args.steps, "backend": b.name()})
        );
    }
    let (s, d) = (median(s_med), median(d_med));
    println!(
        "{}",
        json!({"suite": "hetgat-dp", "case": format!("harris-batch{}", args.batch),
               "impl": "overhead-nccl-1gpu-vs-single", "ratio": round4(d / s),
               "same_loss_bits": same})
    );
    anyhow::ensure!(
        same,
        "one NCCL rank and the single device gave different loss bits"
    );
    Ok(())
}

/// `--gpus N` in a build without the `cuda` feature.
#[cfg(not(feature = "cuda"))]
pub fn run_gpus(_args: &Options, _n: usize) -> anyhow::Result<()> {
    anyhow::bail!(
        "this rtx-bench was built without CUDA support, so --gpus cannot run; rebuild with \
         `cargo build --release -p rtx-bench --features cuda` (or use --cpu-ranks)"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn two_cpu_ranks_train_the_harris_batch() {
        let args = Options {
            batch: 2,
            steps: 2,
            lr: 1e-3,
            seed: 0,
            rounds: 0,
        };
        run_cpu_ranks(&args, 2).unwrap();
        assert!(run_cpu_ranks(&args, 3).is_err(), "3 ranks for 2 copies");
    }
}
