//! `rtx-bench half`: bf16 and f16 storage on the device beside f32 in the
//! same run: gather and scatter-add over the anchors' index workloads
//! (docs/workloads.md) and permutes of tensors of 8 MB and more,
//! each beside the device copy bandwidth; JSON lines in the anchors format,
//! paired with `peers/torch_half.py` (the same case names).
//!
//! Rows (impl): `rtx-cuda-copy` (1 GiB device copy, the ceiling),
//! `rtx-cuda-{gather,scatter}-{f32,bf16,f16}` (prepared
//! [`CudaIndex`](rtx_backend_cuda::CudaIndex)), the half rows with
//! `bit_identical_to_cpu` (rtx-backend-cpu, which sums in f32 the same way),
//! `bit_identical_runs` and `vs_f32` (time over the f32 row's),
//! `rtx-cuda-scatter-{ty}-{batched,pipelined,windowed}` (each form of the
//! chunk sums forced; the plain row is the backend's pick);
//! `rtx-cuda-permute-{f32,bf16}` with `of_copy` (bandwidth over the 1 GiB
//! copy's) and `of_same_copy` (over a device copy of the same tensor, which
//! pays the same launch and ramp). Each call is timed alone (events around
//! it: the host's planning and launch count, as in the peers' rows); the
//! copy and permute rows also carry `ms_queued` and the `_queued` ratios,
//! one of [`QUEUED`] back-to-back calls, the device's own time.

use rtx_backend::Indices;
use rtx_backend::prelude::*;
use rtx_backend::workload::indices;
use rtx_backend::{BTensor, Element, bf16, f16};
use rtx_backend_cpu::CpuBackend;
use rtx_backend_cuda::CudaBackend;
use serde_json::json;

use crate::cuda_timing::{
    cuda_or_note, emit, forced_form_rows, time_cuda, time_cuda_queued, values_par,
};

/// Arguments of `rtx-bench half`.
#[derive(Debug, Clone, clap::Args)]
pub struct Args {
    /// CUDA device ordinal.
    #[arg(long, default_value_t = 0)]
    pub device: usize,
    /// Timed repetitions (median reported).
    #[arg(long, default_value_t = 30)]
    pub reps: usize,
    /// Only the cases whose name contains one of these (comma-separated).
    #[arg(long)]
    pub only: Option<String>,
    /// Skip the CPU backend's bits (the `bit_identical_to_cpu` fields).
    #[arg(long)]
    pub no_check: bool,
}

/// The index workloads of docs/workloads.md: name, rows, indices, features, hub.
const INDEX_CASES: [(&str, usize, usize, usize, bool); 5] = [
    ("harris-hub-f64", 15_000, 42_955, 64, true),
    ("1M-16M-f64-hub", 1 << 20, 16 << 20, 64, true),
    ("1M-16M-f64-uniform", 1 << 20, 16 << 20, 64, false),
    ("1M-16M-f16-hub", 1 << 20, 16 << 20, 16, true),
    ("100k-2M-f256-hub", 100_000, 2 << 20, 256, true),
];

/// Permutes of at least 8 MB in bf16 (keep in step with peers/torch_half.py).
const PERMUTE_CASES: [(&str, &[usize], &[usize]); 8] = [
    ("8192x8192", &[8192, 8192], &[1, 0]),
    ("4211136x32", &[4_211_136, 32], &[1, 0]),
    ("32x4211136", &[32, 4_211_136], &[1, 0]),
    ("b64x1024x1024-021", &[64, 1024, 1024], &[0, 2, 1]),
    ("b1000000x8x8-021", &[1_000_000, 8, 8], &[0, 2, 1]),
    ("b2000000x4x16-021", &[2_000_000, 4, 16], &[0, 2, 1]),
    ("64x128x256x32-0321", &[64, 128, 256, 32], &[0, 3, 2, 1]),
    ("64x128x256x32-2103", &[64, 128, 256, 32], &[2, 1, 0, 3]),
];

/// Back-to-back calls of a queued figure.
const QUEUED: usize = 10;

/// Runs `rtx-bench half`.
///
/// # Errors
/// Backend errors.
pub fn run(args: &Args) -> anyhow::Result<()> {
    let Some(g) = cuda_or_note(args.device) else {
        return Ok(());
    };
    g.load_kernels()?;
    println!(
        "{}",
        json!({"device": g.device_name(), "impl": "rtx", "arch": g.arch()})
    );
    let want = |name: &str| {
        args.only
            .as_deref()
            .is_none_or(|o| o.split(',').any(|o| name.contains(o)))
    };
    let copy = copy_row(&g, args.reps)?;
    for &(name, n, e, f, hub) in INDEX_CASES.iter().filter(|c| want(c.0)) {
        index_case(&g, args, name, (n, e, f), hub)?;
    }
    for &(name, shape, perm) in PERMUTE_CASES.iter().filter(|c| want(c.0)) {
        let f32_ms = permute_case::<f32>(&g, args.reps, name, shape, perm, copy)?;
        permute_case::<bf16>(&g, args.reps, name, shape, perm, copy)
            .map(|ms| eprintln!("{name}: bf16 permute {:.2}x the f32 time", ms / f32_ms))?;
    }
    Ok(())
}

/// The 1 GiB device copy; returns its GB/s, alone and queued.
fn copy_row(g: &CudaBackend, reps: usize) -> anyhow::Result<CopyRate> {
    let n = 1usize << 28;
    let x = g.zeros::<f32>(&[n])?;
    let (ms, queued) = alone_and_queued(g, reps, || device_copy(g, &x))?;
    let bytes = 2.0 * n as f64 * 4.0;
    emit(
        "half",
        "copy-1GiB",
        "rtx-cuda-copy",
        ms,
        Some(bytes),
        &[("ms_queued", round4(queued).into())],
    );
    Ok(CopyRate {
        gbps: bytes / ms / 1e6,
        queued_gbps: bytes / queued / 1e6,
    })
}

/// The copy's bandwidth (GB/s), a call timed alone and queued.
#[derive(Debug, Clone, Copy)]
struct CopyRate {
    gbps: f64,
    queued_gbps: f64,
}

/// The median ms of `f` timed alone (3 warm runs) and queued ([`QUEUED`]
/// back to back, one warm run).
fn alone_and_queued(
    g: &CudaBackend,
    reps: usize,
    f: impl Fn() -> rtx_backend::Result<()> + Copy,
) -> anyhow::Result<(f64, f64)> {
    Ok((
        time_cuda(g, 3, reps, f)?,
        time_cuda_queued(g, 1, reps, QUEUED, f)?,
    ))
}

/// A device copy of `x` (its buffer made unique in a clone).
fn device_copy<T: Element>(
    g: &CudaBackend,
    x: &BTensor<CudaBackend, T>,
) -> rtx_backend::Result<()> {
    let mut y = x.clone();
    g.make_unique(&mut y)
}

fn round4(x: f64) -> f64 {
    (x * 1e4).round() / 1e4
}

/// `v` rounded to `T` (exact f32 widened to f64, rounded once), on all cores.
fn to<T: Element>(v: &[f32]) -> Vec<T> {
    let mut out = vec![T::ZERO; v.len()];
    let threads = std::thread::available_parallelism().map_or(4, |p| p.get());
    let chunk = v.len().div_ceil(threads).max(1);
    std::thread::scope(|s| {
        for (o, i) in out.chunks_mut(chunk).zip(v.chunks(chunk)) {
            s.spawn(move || {
                for (a, &x) in o.iter_mut().zip(i) {
                    *a = T::from_f64(f64::from(x));
                }
            });
        }
    });
    out
}

fn index_case(
    g: &CudaBackend,
    args: &Args,
    name: &str,
    (n, e, f): (usize, usize, usize),
    hub: bool,
) -> anyhow::Result<()> {
    let idx = indices(1, e, n, hub);
    let src = values_par(2, n * f);
    let msg = values_par(3, e * f);
    let h = g.index(&idx)?;
    g.prepare_scatter(&h)?;
    let f32_ms = index_rows::<f32>(g, args, name, (n, e, f), &idx, &h, (&src, &msg), None)?;
    let (s, m) = (to::<bf16>(&src), to::<bf16>(&msg));
    index_rows::<bf16>(g, args, name, (n, e, f), &idx, &h, (&s, &m), Some(f32_ms))?;
    let (s, m) = (to::<f16>(&src), to::<f16>(&msg));
    index_rows::<f16>(g, args, name, (n, e, f), &idx, &h, (&s, &m), Some(f32_ms))?;
    #[allow(clippy::drop_non_drop)]
    drop(h);
    Ok(())
}

/// Gather and scatter rows of `T`; returns the (gather, scatter) ms.
#[allow(clippy::too_many_arguments)]
fn index_rows<T: Element>(
    g: &CudaBackend,
    args: &Args,
    name: &str,
    (n, e, f): (usize, usize, usize),
    idx: &[u32],
    h: &rtx_backend_cuda::CudaIndex,
    (src, msg): (&[T], &[T]),
    f32_ms: Option<(f64, f64)>,
) -> anyhow::Result<(f64, f64)> {
    let ty = T::DTYPE.name();
    let sz = T::DTYPE.size();
    let gather_bytes = (e * f * sz * 2 + e * 4) as f64;
    let scatter_bytes = (e * f * sz + n * f * sz * 2 + e * 4) as f64;
    let gs = g.upload(src, &[n, f])?;
    let gm = g.upload(msg, &[e, f])?;
    let mut extra_g = Vec::new();
    let mut extra_s = Vec::new();
    let mut d = g.zeros::<T>(&[n, f])?;
    g.index_add(&mut d, Indices::held(h), &gm)?;
    let first = g.download(&d)?;
    if f32_ms.is_some() {
        let mut d2 = g.zeros::<T>(&[n, f])?;
        g.index_add(&mut d2, Indices::held(h), &gm)?;
        extra_s.push((
            "bit_identical_runs",
            bits(&g.download(&d2)?) == bits(&first),
        ));
        if !args.no_check {
            let cpu = CpuBackend::new();
            let cs = cpu.upload(src, &[n, f])?;
            let gathered = g.download(&g.index_select(&gs, Indices::held(h))?)?;
            let want = cpu.download(&cpu.index_select(&cs, idx)?)?;
            extra_g.push(("bit_identical_to_cpu", bits(&gathered) == bits(&want)));
            let mut cd = cpu.zeros::<T>(&[n, f])?;
            cpu.index_add(&mut cd, idx, &cpu.upload(msg, &[e, f])?)?;
            extra_s.push((
                "bit_identical_to_cpu",
                bits(&first) == bits(&cpu.download(&cd)?),
            ));
        }
    }
    drop(first);
    let gms = time_cuda(g, 3, args.reps, || {
        g.index_select(&gs, Indices::held(h)).map(|_| ())
    })?;
    let sms = time_cuda(g, 3, args.reps, || {
        g.index_add(&mut d, Indices::held(h), &gm)
    })?;
    let ratio = |ms: f64, base: f64| json!((ms / base * 1000.0).round() / 1000.0);
    let mut xg: Vec<(&str, serde_json::Value)> =
        extra_g.iter().map(|&(k, v)| (k, v.into())).collect();
    let mut xs: Vec<(&str, serde_json::Value)> =
        extra_s.iter().map(|&(k, v)| (k, v.into())).collect();
    if let Some((fg, fs)) = f32_ms {
        xg.push(("vs_f32", ratio(gms, fg)));
        xs.push(("vs_f32", ratio(sms, fs)));
    }
    emit(
        "half",
        name,
        &format!("rtx-cuda-gather-{ty}"),
        gms,
        Some(gather_bytes),
        &xg,
    );
    emit(
        "half",
        name,
        &format!("rtx-cuda-scatter-{ty}"),
        sms,
        Some(scatter_bytes),
        &xs,
    );
    let row = format!("rtx-cuda-scatter-{ty}");
    forced_form_rows(g, args.reps, ("half", name, &row), scatter_bytes, || {
        g.index_add(&mut d, Indices::held(h), &gm)
    })?;
    Ok((gms, sms))
}

/// A permute of `T`; returns its ms.
fn permute_case<T: Element>(
    g: &CudaBackend,
    reps: usize,
    name: &str,
    shape: &[usize],
    perm: &[usize],
    copy: CopyRate,
) -> anyhow::Result<f64> {
    let numel: usize = shape.iter().product();
    let x = g.upload(&to::<T>(&values_par(9, numel)), shape)?;
    let (ms, queued) = alone_and_queued(g, reps, || g.permute(&x, perm).map(|_| ()))?;
    let (same, same_queued) = alone_and_queued(g, reps, || device_copy(g, &x))?;
    let bytes = 2.0 * (numel * T::DTYPE.size()) as f64;
    let of = |ms: f64, gbps: f64| ((bytes / ms / 1e6 / gbps * 1000.0).round() / 1000.0).into();
    let ratio = |a: f64, b: f64| ((a / b * 1000.0).round() / 1000.0).into();
    emit(
        "half",
        name,
        &format!("rtx-cuda-permute-{}", T::DTYPE.name()),
        ms,
        Some(bytes),
        &[
            ("of_copy", of(ms, copy.gbps)),
            ("ms_queued", round4(queued).into()),
            ("of_copy_queued", of(queued, copy.queued_gbps)),
            ("of_same_copy", ratio(same, ms)),
            ("of_same_copy_queued", ratio(same_queued, queued)),
        ],
    );
    Ok(ms)
}

fn bits<T: Element>(v: &[T]) -> Vec<u64> {
    v.iter().map(|x| x.to_bits_u64()).collect()
}
