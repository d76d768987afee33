//! `rtx-bench transpose`: swap_dims over the anchors' transpose workloads
//! (docs/workloads.md), JSON lines beside
//! `torch_anchors.py --suite transpose`.
//!
//! Rows (impl): `rtx-cuda-transpose` (the device kernels through
//! `LayoutOps::swap_dims`, output allocation included, as torch's
//! `.contiguous()`), `rtx-cuda-transpose-tile32` (the classic 32x32 tile, 2-D
//! cases, for comparison), `rtx-cuda-hostroundtrip-transpose` (the trait's default),
//! `rtx-cpu-transpose` (rtx-backend-cpu) and `rtx-cuda-copy` (the ceiling).

use rtx_backend::prelude::*;
use rtx_backend_cpu::CpuBackend;
use rtx_backend_cuda::TransposeTile;
use serde_json::json;

use crate::cuda_timing::{HostRoundTrip, cuda_or_note, emit, time_cuda, time_host, values_par};

/// Arguments of `rtx-bench transpose`.
#[derive(Debug, Clone, clap::Args)]
pub struct Args {
    /// CUDA device ordinal.
    #[arg(long, default_value_t = 0)]
    pub device: usize,
    /// Timed repetitions of device rows (median reported).
    #[arg(long, default_value_t = 30)]
    pub reps: usize,
    /// Timed repetitions of host rows.
    #[arg(long, default_value_t = 3)]
    pub host_reps: usize,
    /// Skip the slow host rows.
    #[arg(long)]
    pub no_host: bool,
    /// Which cases: `anchors` (the anchors' transpose workloads), `permute`
    /// (the permute kernel choice's classes, suite `permute`) or `all`.
    #[arg(long, default_value = "all")]
    pub set: Set,
    /// Skip the check of the `permute` cases against `permute_host`.
    #[arg(long)]
    pub no_check: bool,
}

/// The case sets of `rtx-bench transpose`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Set {
    /// The anchors' transpose workloads.
    Anchors,
    /// The permute kernel choice's classes.
    Permute,
    /// Both.
    All,
}

const CASES: [(&str, &[usize], (usize, usize)); 5] = [
    ("8192x8192", &[8192, 8192], (0, 1)),
    ("4211136x32", &[4_211_136, 32], (0, 1)),
    ("32x4211136", &[32, 4_211_136], (0, 1)),
    ("4211136x1", &[4_211_136, 1], (0, 1)),
    ("64x128x256x32-swap02", &[64, 128, 256, 32], (0, 2)),
];

/// Runs `rtx-bench transpose`.
///
/// # Errors
/// Backend errors.
pub fn run(args: &Args) -> anyhow::Result<()> {
    let gpu = cuda_or_note(args.device);
    if args.set == Set::Permute {
        let Some(g) = &gpu else { return Ok(()) };
        g.load_kernels()?;
        println!(
            "{}",
            json!({"device": g.device_name(), "impl": "rtx", "arch": g.arch()})
        );
        return crate::permute::run(g, args.reps, !args.no_check);
    }
    let cpu = CpuBackend::new();
    if let Some(g) = &gpu {
        g.load_kernels()?;
        println!(
            "{}",
            json!({"device": g.device_name(), "impl": "rtx", "arch": g.arch()})
        );
        let n = 1usize << 28;
        let x = g.zeros::<f32>(&[n])?;
        let ms = time_cuda(g, 3, args.reps, || {
            let mut y = x.clone();
            g.make_unique(&mut y)
        })?;
        emit(
            "transpose",
            "copy-1GiB",
            "rtx-cuda-copy",
            ms,
            Some(2.0 * n as f64 * 4.0),
            &[],
        );
    }
    for (name, shape, (a, b)) in CASES {
        let n: usize = shape.iter().product();
        let x = values_par(4, n);
        let bytes = Some(2.0 * n as f64 * 4.0);
        let mut perm: Vec<usize> = (0..shape.len()).collect();
        perm.swap(a, b);
        let want = rtx_tensor::permute_host(&x, shape, &perm)?;
        if !args.no_host {
            let ct = cpu.upload(&x, shape)?;
            let ms = time_host(1, args.host_reps, || cpu.swap_dims(&ct, a, b).map(|_| ()))?;
            emit("transpose", name, "rtx-cpu-transpose", ms, bytes, &[]);
        }
        let Some(g) = &gpu else { continue };
        let t = g.upload(&x, shape)?;
        let out = g.swap_dims(&t, a, b)?;
        let ok = g
            .download(&out)?
            .iter()
            .zip(&want)
            .all(|(p, q)| p.to_bits() == q.to_bits());
        let shares = out.shares_storage_with(&t);
        drop(out);
        let ms = time_cuda(g, 3, args.reps, || g.swap_dims(&t, a, b).map(|_| ()))?;
        emit(
            "transpose",
            name,
            "rtx-cuda-transpose",
            ms,
            bytes,
            &[("correct", ok.into()), ("shares_buffer", shares.into())],
        );
        if shape.len() == 2 && !shares {
            g.set_transpose_tile(TransposeTile::Force32);
            let out = g.swap_dims(&t, a, b)?;
            let ok = g
                .download(&out)?
                .iter()
                .zip(&want)
                .all(|(p, q)| p.to_bits() == q.to_bits());
            drop(out);
            let ms = time_cuda(g, 3, args.reps, || g.swap_dims(&t, a, b).map(|_| ()))?;
            g.set_transpose_tile(TransposeTile::ByShape);
            emit(
                "transpose",
                name,
                "rtx-cuda-transpose-tile32",
                ms,
                bytes,
                &[("correct", ok.into())],
            );
        }
        if !args.no_host {
            let rt = HostRoundTrip(g);
            let ms = time_host(0, args.host_reps.min(2), || {
                rt.swap_dims(&t, a, b).map(|_| ())
            })?;
            emit(
                "transpose",
                name,
                "rtx-cuda-hostroundtrip-transpose",
                ms,
                bytes,
                &[],
            );
        }
    }
    if let (Set::All, Some(g)) = (args.set, &gpu) {
        crate::permute::run(g, args.reps, !args.no_check)?;
    }
    Ok(())
}
