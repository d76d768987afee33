//! `rtx-bench gat`: HetGAT train-step and inference timings on the
//! Harris-shaped graph, as JSON lines in the anchors format (beside
//! `torch_anchors.py --suite gat`'s PyG rows: same `suite` and `case`).
//!
//! Rows per backend (`impl` is `rtx-<backend>-...`):
//! * `harris-batch{1,8}` `...-train-step`: median ms of a full step
//!   (forward, loss, backward, SGD);
//! * `harris-batch{1,8}` `...-infer`: median ms of a forward pass, with
//!   `per_scenario_ms` (ms / batch);
//! * CUDA only, `...-infer-enqueue`: median ms the host spends issuing a
//!   forward pass (no wait), to tell host-bound from device-bound;
//! * CUDA only, `harris-batch8` `...-gpu-util`: GPU utilisation median and
//!   p90 (`util_median`, `util_p90`, percent) sampled by `nvidia-smi` every
//!   100 ms while training (`ms` is 0, so compare.py skips it), with the
//!   `nvidia_smi_id` sampled and `gpu_match`, how that id was matched to the
//!   CUDA device (see [`smi_device`]).
//!
//! Medians of an even count are the mean of the two middle values.

use std::time::Instant;

use rtx_backend_cpu::CpuBackend;
use serde_json::json;

use crate::hetgat::{StaticGraph, Workload};
use rtx_gnn::HeteroGraph;

/// The SGD learning rate of every timed step (eager and recorded).
const LR: f64 = 1e-3;

/// Which backends to time.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Which {
    /// CPU only.
    Cpu,
    /// CUDA with device index ops, and CUDA with index ops on the host round trip.
    Cuda,
    /// CUDA with device index ops only (eager and recorded).
    CudaDevice,
    /// Both.
    All,
}

/// Arguments of `rtx-bench gat`.
#[derive(Debug, Clone, clap::Args)]
pub struct Args {
    /// Backends to time (default: cpu; all when built with CUDA).
    #[arg(long, value_enum)]
    pub backend: Option<Which>,
    /// Timed train steps per case (default: 20 on CUDA, 3 on the CPU).
    #[arg(long)]
    pub reps: Option<usize>,
    /// Timed inference passes per case (default: 50 on CUDA, 5 on the CPU).
    #[arg(long)]
    pub infer_reps: Option<usize>,
    /// Seconds of training while `nvidia-smi` samples utilisation (CUDA only).
    #[arg(long, default_value_t = 5.0)]
    pub util_seconds: f64,
    /// Batches to time.
    #[arg(long, value_delimiter = ',', default_value = "1,8")]
    pub batches: Vec<usize>,
}

/// Runs `rtx-bench gat`.
pub fn run(args: &Args) -> anyhow::Result<()> {
    let which = args.backend.unwrap_or(if cfg!(feature = "cuda") {
        Which::All
    } else {
        Which::Cpu
    });
    if matches!(which, Which::Cuda | Which::CudaDevice | Which::All) {
        run_cuda(args, which != Which::CudaDevice)?;
    }
    if matches!(which, Which::Cpu | Which::All) {
        let cpu = CpuBackend::new();
        let opts = Opts {
            prefix: "rtx-cpu",
            reps: args.reps.unwrap_or(3),
            infer_reps: args.infer_reps.unwrap_or(5),
            util_seconds: None,
        };
        suite(&cpu, args, &opts)?;
    }
    Ok(())
}

#[cfg(feature = "cuda")]
fn run_cuda(args: &Args, host_too: bool) -> anyhow::Result<()> {
    let cuda = crate::cuda::cuda_backend()?;
    let device = Opts {
        prefix: "rtx-cuda-device-index",
        reps: args.reps.unwrap_or(20),
        infer_reps: args.infer_reps.unwrap_or(50),
        util_seconds: Some(args.util_seconds),
    };
    suite(&cuda, args, &device)?;
    if !host_too {
        return Ok(());
    }
    let host = rtx_backend::HostIndexOps::new(cuda);
    // the host round trip is slow (tens to hundreds of ms a step): fewer reps
    let roundtrip = Opts {
        prefix: "rtx-cuda-host-index",
        reps: args.reps.unwrap_or(5),
        infer_reps: args.infer_reps.unwrap_or(10),
        ..device
    };
    suite(&host, args, &roundtrip)
}

#[cfg(not(feature = "cuda"))]
fn run_cuda(_args: &Args, _host_too: bool) -> anyhow::Result<()> {
    Err(crate::hetgat::no_cuda())
}

#[derive(Debug, Clone)]
struct Opts {
    prefix: &'static str,
    reps: usize,
    infer_reps: usize,
    util_seconds: Option<f64>,
}

fn emit(v: serde_json::Value) {
    println!("{v}");
}

/// The median; of an even count, the mean of the two middle values; 0 for none.
fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    let n = v.len();
    match n {
        0 => 0.0,
        _ if n % 2 == 1 => v[n / 2],
        _ => (v[n / 2 - 1] + v[n / 2]) / 2.0,
    }
}

fn ms_of(f: &mut impl FnMut() -> anyhow::Result<()>) -> anyhow::Result<f64> {
    let t = Instant::now();
    f()?;
    Ok(t.elapsed().as_secs_f64() * 1e3)
}

fn suite<B: StaticGraph>(b: &B, args: &Args, o: &Opts) -> anyhow::Result<()> {
    for &batch in &args.batches {
        anyhow::ensure!(batch > 0, "--batches: 0 is not a batch size");
        let graph = HeteroGraph::harris(batch)?;
        let mut w = Workload::new(b, &graph, 0)?;
        // the device backend holds the static topology for the whole case
        graph.with_resident(b, || case(b, args, o, batch, &mut w))??;
    }
    Ok(())
}

fn case<B: StaticGraph>(
    b: &B,
    args: &Args,
    o: &Opts,
    batch: usize,
    w: &mut Workload<'_, B>,
) -> anyhow::Result<()> {
    let reps = o.reps.max(1);
    let infer_reps = o.infer_reps.max(1);
    let case = format!("harris-batch{batch}");
    // warm up: kernels compiled, buffers allocated, caches filled
    w.train_step(b, LR)?;
    w.infer(b)?;
    let mut step = || w.train_step(b, LR).map(|_| ());
    let train: Vec<f64> = (0..reps)
        .map(|_| ms_of(&mut step))
        .collect::<anyhow::Result<_>>()?;
    emit(
        json!({"suite": "gat", "case": case, "impl": format!("{}-train-step", o.prefix),
                "ms": round4(median(train)), "backend": b.name(), "reps": reps}),
    );
    let mut infer = || w.infer(b);
    let inf: Vec<f64> = (0..infer_reps)
        .map(|_| ms_of(&mut infer))
        .collect::<anyhow::Result<_>>()?;
    let ms = median(inf);
    emit(
        json!({"suite": "gat", "case": case, "impl": format!("{}-infer", o.prefix),
                "ms": round4(ms), "per_scenario_ms": round4(ms / batch as f64),
                "backend": b.name(), "reps": infer_reps}),
    );
    if o.util_seconds.is_some() {
        // device backends: the host's share of a forward pass (enqueueing every
        // op, no wait at the end); near the infer row means host-bound
        let mut enq = Vec::with_capacity(infer_reps);
        for _ in 0..infer_reps {
            let t = Instant::now();
            let y = w.model.forward(b, w.graph, &w.x)?;
            enq.push(t.elapsed().as_secs_f64() * 1e3);
            b.synchronize()?;
            drop(y);
        }
        emit(
            json!({"suite": "gat", "case": case, "impl": format!("{}-infer-enqueue", o.prefix),
                    "ms": round4(median(enq)), "backend": b.name(), "reps": infer_reps}),
        );
    }
    // the same step and forward replayed from a recording (a CUDA graph): the
    // host enqueues one launch instead of one per op
    if let Some((train, infer, loss)) = b.time_recorded(w, LR, reps, infer_reps)? {
        let (train, infer) = (median(train), median(infer));
        emit(json!({"suite": "gat", "case": case,
            "impl": format!("{}-graph-train-step", o.prefix), "ms": round4(train),
            "loss": loss, "backend": b.name(), "reps": reps}));
        emit(json!({"suite": "gat", "case": case,
            "impl": format!("{}-graph-infer", o.prefix), "ms": round4(infer),
            "per_scenario_ms": round4(infer / batch as f64), "backend": b.name(),
            "reps": infer_reps}));
    }
    if let Some(secs) = o.util_seconds
        && batch == *args.batches.iter().max().unwrap_or(&batch)
    {
        let (id, matched) = smi_device(
            std::env::var("CUDA_VISIBLE_DEVICES").ok().as_deref(),
            std::env::var("CUDA_DEVICE_ORDER").ok().as_deref(),
        );
        let (samples, util) = gpu_util_while(secs, &id, || w.train_step(b, LR).map(|_| ()))?;
        match util {
            Some((med, p90)) => emit(json!({"suite": "gat", "case": case,
                "impl": format!("{}-gpu-util", o.prefix), "ms": 0.0,
                "util_median": med, "util_p90": p90, "samples": samples,
                "nvidia_smi_id": id, "gpu_match": matched})),
            None => emit(json!({"suite": "gat", "case": case,
                "impl": format!("{}-gpu-util", o.prefix), "ms": 0.0,
                "error": "nvidia-smi gave no samples",
                "nvidia_smi_id": id, "gpu_match": matched})),
        }
    }
    Ok(())
}

fn round4(x: f64) -> f64 {
    (x * 1e4).round() / 1e4
}

/// The `nvidia-smi -i` id of the device the CUDA backend opens (CUDA
/// device 0: the first `CUDA_VISIBLE_DEVICES` entry, else device 0), given
/// `CUDA_VISIBLE_DEVICES` and `CUDA_DEVICE_ORDER`, and how exact the match is.
///
/// The CUDA backend exposes no PCI bus id or UUID, so: a GPU UUID entry
/// names the device exactly; an index names it exactly only under
/// `CUDA_DEVICE_ORDER=PCI_BUS_ID` (nvidia-smi's order). Otherwise CUDA's
/// default fastest-first order is ASSUMED to be nvidia-smi's PCI order,
/// which holds on a host whose GPUs are all one model (ties go by PCI bus);
/// the output row says which case applied.
fn smi_device(visible: Option<&str>, order: Option<&str>) -> (String, &'static str) {
    let id = visible
        .and_then(|v| v.split(',').next())
        .map(str::trim)
        .filter(|v| !v.is_empty())
        .unwrap_or("0")
        .to_owned();
    let matched = if id.starts_with("GPU-") {
        "exact: GPU UUID"
    } else if order.map(str::trim) == Some("PCI_BUS_ID") {
        "exact: CUDA_DEVICE_ORDER=PCI_BUS_ID"
    } else {
        "assumed: CUDA's default order equals nvidia-smi's (true on a host of one GPU model); \
         set CUDA_DEVICE_ORDER=PCI_BUS_ID or a GPU UUID in CUDA_VISIBLE_DEVICES to be sure"
    };
    (id, matched)
}

/// Runs `work` repeatedly for `secs` seconds while `nvidia-smi` samples the
/// utilisation of GPU `gpu` (an `nvidia-smi -i` id) every 100 ms; returns
/// the sample count and (median, p90).
fn gpu_util_while(
    secs: f64,
    gpu: &str,
    mut work: impl FnMut() -> anyhow::Result<()>,
) -> anyhow::Result<(usize, Option<(f64, f64)>)> {
    use std::io::Read;
    use std::process::{Command, Stdio};
    let child = Command::new("nvidia-smi")
        .args([
            "--query-gpu=utilization.gpu",
            "--format=csv,noheader,nounits",
            "-lms",
            "100",
            "-i",
            gpu,
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn();
    let mut child = match child {
        Ok(c) => c,
        Err(_) => return Ok((0, None)),
    };
    let t = Instant::now();
    let result = (|| {
        while t.elapsed().as_secs_f64() < secs {
            work()?;
        }
        anyhow::Ok(())
    })();
    // stop the sampler we started (by its handle), then read what it printed
    let _ = child.kill();
    let mut out = String::new();
    if let Some(mut s) = child.stdout.take() {
        let _ = s.read_to_string(&mut out);
    }
    let _ = child.wait();
    result?;
    let mut v: Vec<f64> = out.lines().filter_map(|l| l.trim().parse().ok()).collect();
    if v.is_empty() {
        return Ok((0, None));
    }
    v.sort_by(f64::total_cmp);
    let pick = |q: f64| v[((v.len() - 1) as f64 * q).round() as usize];
    Ok((v.len(), Some((pick(0.5), pick(0.9)))))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn median_and_rounding() {
        assert_eq!(median(vec![3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(vec![]), 0.0);
        assert_eq!(median(vec![7.0]), 7.0);
        // even counts: the mean of the two middle values, not the upper one
        assert_eq!(median(vec![10.0, 1.0, 3.0, 2.0]), 2.5);
        assert_eq!(median(vec![4.0, 2.0]), 3.0);
        assert_eq!(round4(1.234_567), 1.2346);
    }

    #[test]
    fn nvidia_smi_id_and_how_it_matches() {
        let (id, m) = smi_device(None, None);
        assert_eq!(id, "0");
        assert!(m.starts_with("assumed"), "{m}");
        let (id, m) = smi_device(Some(" 3, 1"), Some("PCI_BUS_ID"));
        assert_eq!(id, "3");
        assert!(m.starts_with("exact"), "{m}");
        let (id, m) = smi_device(Some("2,0"), Some("FASTEST_FIRST"));
        assert_eq!(id, "2");
        assert!(m.starts_with("assumed"), "{m}");
        let (id, m) = smi_device(Some("GPU-8a1b,GPU-ffff"), None);
        assert_eq!(id, "GPU-8a1b");
        assert_eq!(m, "exact: GPU UUID");
        assert_eq!(smi_device(Some(""), None).0, "0");
    }
}
