//! `rtx-bench index`: gather (index_select) and scatter-add (index_add) over
//! the anchors' index workloads (docs/workloads.md), JSON lines in
//! the anchors format, beside `torch_anchors.py --suite index`.
//!
//! Rows (impl): `rtx-cuda-gather` / `rtx-cuda-scatter` (device kernels with a
//! prepared [`CudaIndex`](rtx_backend_cuda::CudaIndex): no per-call hashing),
//! `rtx-cuda-scatter-{batched,pipelined,windowed}` (the same, each form of
//! the chunk sums forced; `rtx-cuda-scatter` is the default's pick),
//! `rtx-cuda-gather-cached` / `rtx-cuda-scatter-cached` (the trait calls with
//! host index lists, through the per-thread cache: hash + compare per call),
//! `rtx-cuda-hostroundtrip-*` (the trait's default bodies on the same device),
//! `rtx-cpu-*` (rtx-backend-cpu), `rtx-plan-build` (host `IndexPlan::new`),
//! `rtx-cuda-plan-upload` (chunk tables built and uploaded) and `rtx-cuda-copy`
//! (1 GiB device-to-device copy, the bandwidth ceiling).

use rtx_backend::IndexPlan;
use rtx_backend::Indices;
use rtx_backend::prelude::*;
use rtx_backend::workload::indices;
use rtx_backend_cpu::CpuBackend;
use serde_json::json;

use crate::cuda_timing::{
    HostRoundTrip, cuda_or_note, emit, forced_form_rows, time_cuda, time_host, values_par,
};

/// Arguments of `rtx-bench index`.
#[derive(Debug, Clone, clap::Args)]
pub struct Args {
    /// CUDA device ordinal.
    #[arg(long, default_value_t = 0)]
    pub device: usize,
    /// Timed repetitions of device rows (median reported).
    #[arg(long, default_value_t = 30)]
    pub reps: usize,
    /// Timed repetitions of host rows (CPU backend, host round trip).
    #[arg(long, default_value_t = 3)]
    pub host_reps: usize,
    /// Only the cases whose name contains this.
    #[arg(long)]
    pub only: Option<String>,
    /// Skip the slow host rows (CPU backend and host round trip).
    #[arg(long)]
    pub no_host: bool,
    /// Instead of the anchors' cases, time the scatter in every form over
    /// plans of 2^16 to 2^22 entries around the size rule's threshold
    /// ([`rtx_backend_cuda::PIPELINED_SCATTER_MAX_ENTRIES`]), f32 and bf16:
    /// rows `sweep-e{entries}-f{features}-{hub,uniform}`.
    #[arg(long)]
    pub form_sweep: bool,
}

/// One workload of docs/workloads.md.
struct Case {
    name: &'static str,
    rows: usize,
    e: usize,
    f: usize,
    hub: bool,
}

const CASES: [Case; 5] = [
    Case {
        name: "harris-hub-f64",
        rows: 15_000,
        e: 42_955,
        f: 64,
        hub: true,
    },
    Case {
        name: "1M-16M-f64-hub",
        rows: 1 << 20,
        e: 16 << 20,
        f: 64,
        hub: true,
    },
    Case {
        name: "1M-16M-f64-uniform",
        rows: 1 << 20,
        e: 16 << 20,
        f: 64,
        hub: false,
    },
    Case {
        name: "1M-16M-f16-hub",
        rows: 1 << 20,
        e: 16 << 20,
        f: 16,
        hub: true,
    },
    Case {
        name: "100k-2M-f256-hub",
        rows: 100_000,
        e: 2 << 20,
        f: 256,
        hub: true,
    },
];

/// Runs `rtx-bench index`.
///
/// # Errors
/// Backend errors.
pub fn run(args: &Args) -> anyhow::Result<()> {
    let gpu = cuda_or_note(args.device);
    if args.form_sweep {
        return match &gpu {
            Some(g) => form_sweep(g, args.reps),
            None => Ok(()),
        };
    }
    let cpu = CpuBackend::new();
    if let Some(g) = &gpu {
        let t0 = std::time::Instant::now();
        let from_disk = g.load_kernels()?;
        eprintln!(
            "rtx-bench: {} ({}), kernels {} in {:.0} ms",
            g.device_name(),
            g.arch(),
            if from_disk {
                "from the disk cache"
            } else {
                "compiled by NVRTC"
            },
            t0.elapsed().as_secs_f64() * 1e3
        );
        println!(
            "{}",
            json!({"device": g.device_name(), "impl": "rtx", "arch": g.arch()})
        );
        copy_row(g, args.reps)?;
    }
    for c in CASES
        .iter()
        .filter(|c| args.only.as_deref().is_none_or(|o| c.name.contains(o)))
    {
        case(c, gpu.as_ref(), &cpu, args)?;
    }
    if let Some(g) = &gpu
        && args
            .only
            .as_deref()
            .is_none_or(|o| "1M-16M-f64-allhub".contains(o))
    {
        extreme_hub(g, args.reps)?;
    }
    Ok(())
}

fn copy_row(g: &rtx_backend_cuda::CudaBackend, reps: usize) -> anyhow::Result<()> {
    let n = 1usize << 28;
    let x = g.zeros::<f32>(&[n])?;
    let ms = time_cuda(g, 3, reps, || {
        let mut y = x.clone();
        g.make_unique(&mut y)
    })?;
    emit(
        "index",
        "copy-1GiB",
        "rtx-cuda-copy",
        ms,
        Some(2.0 * n as f64 * 4.0),
        &[],
    );
    Ok(())
}

fn case(
    c: &Case,
    gpu: Option<&rtx_backend_cuda::CudaBackend>,
    cpu: &CpuBackend,
    args: &Args,
) -> anyhow::Result<()> {
    let (n, e, f) = (c.rows, c.e, c.f);
    let idx = indices(1, e, n, c.hub);
    let src = values_par(2, n * f);
    let msg = values_par(3, e * f);
    let gather_bytes = (e * f * 4 * 2 + e * 4) as f64;
    let scatter_bytes = (e * f * 4 + n * f * 8 + e * 4) as f64;
    let big = e > 1 << 20;
    let host_reps = if big {
        args.host_reps.min(3)
    } else {
        args.host_reps.max(5)
    };

    // host plan build (the counting sort), kept off the per-call path by the caches
    let plan_ms = time_host(0, 3, || IndexPlan::new(&idx, n).map(|_| ()))?;
    emit(
        "index",
        c.name,
        "rtx-plan-build",
        plan_ms,
        None,
        &[("indices", e.into())],
    );

    // CPU backend: timing and the reference bits
    let cs = cpu.upload(&src, &[n, f])?;
    let cm = cpu.upload(&msg, &[e, f])?;
    let want_gather = cpu.download(&cpu.index_select(&cs, &idx)?)?;
    let mut cd = cpu.zeros::<f32>(&[n, f])?;
    cpu.index_add(&mut cd, &idx, &cm)?;
    let want_scatter = cpu.download(&cd)?;
    if !args.no_host {
        let ms = time_host(1, host_reps, || cpu.index_select(&cs, &idx).map(|_| ()))?;
        emit(
            "index",
            c.name,
            "rtx-cpu-gather",
            ms,
            Some(gather_bytes),
            &[],
        );
        let ms = time_host(1, host_reps, || cpu.index_add(&mut cd, &idx, &cm))?;
        emit(
            "index",
            c.name,
            "rtx-cpu-scatter",
            ms,
            Some(scatter_bytes),
            &[],
        );
    }
    drop((cs, cm, cd));

    let Some(g) = gpu else { return Ok(()) };
    let gs = g.upload(&src, &[n, f])?;
    let gm = g.upload(&msg, &[e, f])?;

    // prepared index: the kernels alone
    let h = g.index(&idx)?;
    let up_ms = time_host(0, 1, || g.prepare_scatter(&h))?;
    emit(
        "index",
        c.name,
        "rtx-cuda-plan-upload",
        up_ms,
        None,
        &[("bytes", h.bytes().into())],
    );
    let out = g.index_select(&gs, Indices::held(&h))?;
    let gather_ok = bits(&g.download(&out)?) == bits(&want_gather);
    drop(out);
    let ms = time_cuda(g, 3, args.reps, || {
        g.index_select(&gs, Indices::held(&h)).map(|_| ())
    })?;
    emit(
        "index",
        c.name,
        "rtx-cuda-gather",
        ms,
        Some(gather_bytes),
        &[("bit_identical_to_cpu", gather_ok.into())],
    );
    let mut d = g.zeros::<f32>(&[n, f])?;
    g.index_add(&mut d, Indices::held(&h), &gm)?;
    let scatter_ok = bits(&g.download(&d)?) == bits(&want_scatter);
    let mut d2 = g.zeros::<f32>(&[n, f])?;
    g.index_add(&mut d2, Indices::held(&h), &gm)?;
    let repeat_ok = bits(&g.download(&d2)?) == bits(&g.download(&d)?);
    drop(d2);
    let ms = time_cuda(g, 3, args.reps, || {
        g.index_add(&mut d, Indices::held(&h), &gm)
    })?;
    emit(
        "index",
        c.name,
        "rtx-cuda-scatter",
        ms,
        Some(scatter_bytes),
        &[
            ("bit_identical_to_cpu", scatter_ok.into()),
            ("bit_identical_runs", repeat_ok.into()),
        ],
    );
    let rows = ("index", c.name, "rtx-cuda-scatter");
    forced_form_rows(g, args.reps, rows, scatter_bytes, || {
        g.index_add(&mut d, Indices::held(&h), &gm)
    })?;
    // frees the device copies (a no-op stub without the cuda feature)
    #[allow(clippy::drop_non_drop)]
    drop(h);

    // trait calls with host index lists (per-thread cache: hash + compare per call)
    let ms = time_cuda(g, 2, args.reps.min(10), || {
        g.index_select(&gs, &idx).map(|_| ())
    })?;
    emit(
        "index",
        c.name,
        "rtx-cuda-gather-cached",
        ms,
        Some(gather_bytes),
        &[],
    );
    let ms = time_cuda(g, 2, args.reps.min(10), || g.index_add(&mut d, &idx, &gm))?;
    emit(
        "index",
        c.name,
        "rtx-cuda-scatter-cached",
        ms,
        Some(scatter_bytes),
        &[],
    );
    g.clear_index_cache();

    // the trait's host round trip on the same device (the "before")
    if !args.no_host {
        let rt = HostRoundTrip(g);
        let reps = if big { 1 } else { host_reps };
        let ms = time_host(0, reps, || rt.index_select(&gs, &idx).map(|_| ()))?;
        emit(
            "index",
            c.name,
            "rtx-cuda-hostroundtrip-gather",
            ms,
            Some(gather_bytes),
            &[],
        );
        let ms = time_host(0, reps, || rt.index_add(&mut d, &idx, &gm))?;
        emit(
            "index",
            c.name,
            "rtx-cuda-hostroundtrip-scatter",
            ms,
            Some(scatter_bytes),
            &[],
        );
    }
    Ok(())
}

/// The scatter of every form over plans around the size rule's threshold
/// (average degree 16, hub-skewed and uniform, 16 and 64 features), f32 and
/// bf16: the backend's pick (`rtx-cuda-scatter-{ty}`) beside each forced
/// form (`rtx-cuda-scatter-{ty}-{form}`), prepared indices. Every form
/// gives the same bits (the tests' business, not timed here).
fn form_sweep(g: &rtx_backend_cuda::CudaBackend, reps: usize) -> anyhow::Result<()> {
    println!(
        "{}",
        json!({"device": g.device_name(), "impl": "rtx", "arch": g.arch(),
               "pipelined_max_entries": rtx_backend_cuda::PIPELINED_SCATTER_MAX_ENTRIES})
    );
    for e in [
        1usize << 16,
        1 << 18,
        1 << 20,
        (1 << 20) + (1 << 18),
        1 << 22,
    ] {
        for hub in [true, false] {
            for f in [16usize, 64] {
                let rows = e / 16;
                let name = format!("sweep-e{e}-f{f}-{}", if hub { "hub" } else { "uniform" });
                let h = g.index(&indices(1, e, rows, hub))?;
                g.prepare_scatter(&h)?;
                let msg = values_par(3, e * f);
                sweep_forms::<f32>(g, reps, &name, &h, (rows, f), &msg)?;
                let half: Vec<rtx_backend::bf16> = msg
                    .iter()
                    .map(|&x| rtx_backend::bf16::from_f32(x))
                    .collect();
                sweep_forms(g, reps, &name, &h, (rows, f), &half)?;
                #[allow(clippy::drop_non_drop)]
                drop(h);
            }
        }
    }
    Ok(())
}

/// One sweep case in `T`: the backend's pick, then each forced form.
fn sweep_forms<T: rtx_backend::Element>(
    g: &rtx_backend_cuda::CudaBackend,
    reps: usize,
    name: &str,
    h: &rtx_backend_cuda::CudaIndex,
    (rows, f): (usize, usize),
    msg: &[T],
) -> anyhow::Result<()> {
    let e = msg.len() / f;
    let sz = T::DTYPE.size();
    let bytes = (e * f * sz + rows * f * sz * 2 + e * 4) as f64;
    let gm = g.upload(msg, &[e, f])?;
    let mut d = g.zeros::<T>(&[rows, f])?;
    let row = format!("rtx-cuda-scatter-{}", T::DTYPE.name());
    let ms = time_cuda(g, 3, reps, || g.index_add(&mut d, Indices::held(h), &gm))?;
    emit("index", name, &row, ms, Some(bytes), &[]);
    forced_form_rows(g, reps, ("index", name, &row), bytes, || {
        g.index_add(&mut d, Indices::held(h), &gm)
    })
}

/// Every index on one row (the worst hub): one row of 16M contributions.
fn extreme_hub(g: &rtx_backend_cuda::CudaBackend, reps: usize) -> anyhow::Result<()> {
    let (n, e, f) = (1usize << 20, 16usize << 20, 64usize);
    let idx = vec![0u32; e];
    let gm = g.upload(&values_par(3, e * f), &[e, f])?;
    let h = g.index(&idx)?;
    g.prepare_scatter(&h)?;
    let mut d = g.zeros::<f32>(&[n, f])?;
    let ms = time_cuda(g, 3, reps, || g.index_add(&mut d, Indices::held(&h), &gm))?;
    let bytes = (e * f * 4 + n * f * 8 + e * 4) as f64;
    emit(
        "index",
        "1M-16M-f64-allhub",
        "rtx-cuda-scatter",
        ms,
        Some(bytes),
        &[],
    );
    Ok(())
}

fn bits(v: &[f32]) -> Vec<u32> {
    v.iter().map(|x| x.to_bits()).collect()
}
