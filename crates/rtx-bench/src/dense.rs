//! `rtx-bench dense`: the HetGAT's dense ops at the Harris batch-8 shapes
//! (80,000 `a` and 40,000 `b` nodes, 32 input and 64 hidden features, 4
//! heads), one op at a time on the device (JSON lines, suite `dense`).
//!
//! Each row is the median over `--reps` of the device time of `--inner`
//! back-to-back calls divided by `--inner` (CUDA events; the output's
//! stream-ordered allocation included). The products also run with every
//! product on the 64x64 tile (`impl` `...-tile64`, the tile choice before
//! the tiles sized to the product's shape), and their outputs are checked bit for bit
//! against each other. `tflops` counts a multiply and an add per term:
//! the H200's f32 CUDA cores without FMA (which the bit-identity with the
//! CPU reference rules out) do about 33.5 T of those per second.
//!
//! `--dtype bf16` runs every row with bf16 operands (the f32 inputs rounded
//! once; each op computes in f32 and rounds its outputs once), each `impl`
//! suffixed `-bf16`; bandwidths count the 2-byte elements.

use rtx_backend::prelude::*;
use rtx_backend::workload::values;
use rtx_backend::{BTensor, Element, Result, bf16};
use rtx_backend_cuda::{ColSums, CudaBackend, MatmulTiles};
use serde_json::json;

use crate::cuda_timing::{emit, time_cuda};

/// Arguments of `rtx-bench dense`.
#[derive(Debug, Clone, clap::Args)]
pub struct Args {
    /// CUDA device ordinal.
    #[arg(long, default_value_t = 0)]
    pub device: usize,
    /// Timed repetitions (median reported).
    #[arg(long, default_value_t = 20)]
    pub reps: usize,
    /// Back-to-back calls per timed repetition.
    #[arg(long, default_value_t = 20)]
    pub inner: usize,
    /// Element type of every operand: `bf16` rounds the f32 inputs once and
    /// suffixes each row's `impl` with `-bf16`.
    #[arg(long, value_enum, default_value_t = Dtype::F32)]
    pub dtype: Dtype,
}

/// The element type `rtx-bench dense` runs in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Dtype {
    F32,
    Bf16,
}

/// A product `op(a) @ op(b)` of the model: name, `[m, k, n]`, transposes.
struct Product {
    name: &'static str,
    m: usize,
    k: usize,
    n: usize,
    ta: bool,
    tb: bool,
}

/// The model's products at batch 8: the forward projections, the weight
/// gradients (inner dimension = nodes) and the input gradients.
const PRODUCTS: [Product; 10] = [
    Product {
        name: "fwd-80000x32x64",
        m: 80_000,
        k: 32,
        n: 64,
        ta: false,
        tb: false,
    },
    Product {
        name: "fwd-80000x64x64",
        m: 80_000,
        k: 64,
        n: 64,
        ta: false,
        tb: false,
    },
    Product {
        name: "fwd-40000x64x64",
        m: 40_000,
        k: 64,
        n: 64,
        ta: false,
        tb: false,
    },
    Product {
        name: "wgrad-32x80000x64",
        m: 32,
        k: 80_000,
        n: 64,
        ta: true,
        tb: false,
    },
    Product {
        name: "wgrad-64x80000x64",
        m: 64,
        k: 80_000,
        n: 64,
        ta: true,
        tb: false,
    },
    Product {
        name: "wgrad-64x40000x64",
        m: 64,
        k: 40_000,
        n: 64,
        ta: true,
        tb: false,
    },
    // the destination attention logits x @ head_dot(W, att) and their gradients
    Product {
        name: "logits-80000x64x4",
        m: 80_000,
        k: 64,
        n: 4,
        ta: false,
        tb: false,
    },
    Product {
        name: "logits-wgrad-64x80000x4",
        m: 64,
        k: 80_000,
        n: 4,
        ta: true,
        tb: false,
    },
    Product {
        name: "logits-xgrad-80000x4x64",
        m: 80_000,
        k: 4,
        n: 64,
        ta: false,
        tb: true,
    },
    Product {
        name: "xgrad-80000x64x64",
        m: 80_000,
        k: 64,
        n: 64,
        ta: false,
        tb: true,
    },
];

/// Runs `rtx-bench dense`.
///
/// # Errors
/// Backend errors; a tile whose product differs from the 64x64 tile's bits.
pub fn run(args: &Args) -> anyhow::Result<()> {
    anyhow::ensure!(
        args.reps > 0 && args.inner > 0,
        "--reps and --inner must be > 0"
    );
    let g = crate::cuda::cuda_backend()?;
    g.load_kernels()?;
    println!(
        "{}",
        json!({"device": g.device_name(), "impl": "rtx", "arch": g.arch()})
    );
    match args.dtype {
        Dtype::F32 => products::<f32>(&g, args, ""),
        Dtype::Bf16 => products::<bf16>(&g, args, "-bf16"),
    }
}

/// `n` workload values (`values::<f32>(seed, n)`) rounded once to `T`.
fn inputs<T: Element>(seed: u64, n: usize) -> Vec<T> {
    values::<f32>(seed, n)
        .into_iter()
        .map(T::from_f32)
        .collect()
}

/// Every product, then the column sums, in `T`; `suffix` ends each `impl`.
fn products<T: Element>(g: &CudaBackend, args: &Args, suffix: &str) -> anyhow::Result<()> {
    for p in &PRODUCTS {
        let a_shape = if p.ta { [p.k, p.m] } else { [p.m, p.k] };
        let b_shape = if p.tb { [p.n, p.k] } else { [p.k, p.n] };
        let a = g.upload(&inputs::<T>(1, p.m * p.k), &a_shape)?;
        let b = g.upload(&inputs::<T>(2, p.k * p.n), &b_shape)?;
        let mut bits = Vec::new();
        for (tiles, imp) in [
            (MatmulTiles::ByShape, "rtx-cuda-matmul"),
            (MatmulTiles::Force64, "rtx-cuda-matmul-tile64"),
        ] {
            g.set_matmul_tiles(tiles);
            let ms = per_call(g, args, || g.matmul(&a, p.ta, &b, p.tb).map(drop))?;
            let flops = 2.0 * (p.m * p.k * p.n) as f64;
            emit(
                "dense",
                p.name,
                &format!("{imp}{suffix}"),
                ms,
                None,
                &[("tflops", json!(round2(flops / ms / 1e9)))],
            );
            bits.push(
                g.download(&g.matmul(&a, p.ta, &b, p.tb)?)?
                    .iter()
                    .map(|x| x.to_f32().to_bits())
                    .collect::<Vec<_>>(),
            );
        }
        g.set_matmul_tiles(MatmulTiles::ByShape);
        anyhow::ensure!(bits[0] == bits[1], "{}: the tiles' products differ", p.name);
    }
    column_sums::<T>(g, args, suffix)
}

/// The column sums of the backward pass, each in one launch (the default)
/// and one launch per level: `sum_rows` (bias gradients) over `[80000, 64]`
/// and over a weight gradient's chunk sums `[313, 4096]`,
/// `head_scale_sum_rows` (attention-vector gradients) over `[80000, 64]`;
/// then a node type's layer output, `sum_bias_relu` of two relations, fused
/// and composed.
fn column_sums<T: Element>(g: &CudaBackend, args: &Args, suffix: &str) -> anyhow::Result<()> {
    let (n, f, heads) = (80_000usize, 64usize, 4usize);
    let x: BTensor<CudaBackend, T> = g.upload(&inputs::<T>(3, n * f), &[n, f])?;
    let s = g.upload(&inputs::<T>(4, n * heads), &[n, heads])?;
    let chunks: BTensor<CudaBackend, T> = g.upload(&inputs::<T>(5, 313 * 4096), &[313, 4096])?;
    let size = std::mem::size_of::<T>();
    let bytes = (n * f * size) as f64;
    let dtype = suffix;
    for (form, suffix) in [(ColSums::Climb, ""), (ColSums::PerLevel, "-per-level")] {
        g.set_col_sums(form);
        let ms = per_call(g, args, || g.sum_rows(&x).map(drop))?;
        let imp = format!("rtx-cuda-sum-rows{suffix}{dtype}");
        emit("dense", "sum-rows-80000x64", &imp, ms, Some(bytes), &[]);
        let ms = per_call(g, args, || g.sum_rows(&chunks).map(drop))?;
        let chunk_bytes = (313 * 4096 * size) as f64;
        emit(
            "dense",
            "sum-rows-313x4096",
            &imp,
            ms,
            Some(chunk_bytes),
            &[],
        );
        let ms = per_call(g, args, || g.head_scale_sum_rows(&x, &s).map(drop))?;
        let hs_bytes = bytes + (n * heads * size) as f64;
        let imp = format!("rtx-cuda-head-scale-sum-rows{suffix}{dtype}");
        emit(
            "dense",
            "head-scale-sum-rows-80000x64",
            &imp,
            ms,
            Some(hs_bytes),
            &[],
        );
    }
    g.set_col_sums(ColSums::Climb);
    let ms = per_call(g, args, || {
        g.binary(rtx_backend::Binary::Add, &x, &x).map(drop)
    })?;
    emit(
        "dense",
        "add-80000x64",
        &format!("rtx-cuda-add{dtype}"),
        ms,
        Some(3.0 * bytes),
        &[],
    );
    let y = g.upload(&inputs::<T>(6, n * f), &[n, f])?;
    let (b0, b1) = (
        g.upload(&inputs::<T>(7, f), &[1, f])?,
        g.upload(&inputs::<T>(8, f), &[1, f])?,
    );
    let parts = [(&x, &b0), (&y, &b1)];
    let ms = per_call(g, args, || g.sum_bias_relu(&parts).map(drop))?;
    let case = "sum-bias-relu-2x80000x64";
    emit(
        "dense",
        case,
        &format!("rtx-cuda-sum-bias-relu{dtype}"),
        ms,
        Some(3.0 * bytes),
        &[],
    );
    let composed = || rtx_backend::implement::sum_bias_relu_composed(g, &parts);
    let ms = per_call(g, args, || composed().map(drop))?;
    emit(
        "dense",
        case,
        &format!("rtx-cuda-composed{dtype}"),
        ms,
        Some(3.0 * bytes),
        &[],
    );
    // The op's definition: for f32 the composition; for a half type the f32
    // composition on the widened inputs, rounded once (FusedOps). `convert`
    // widens exactly, rounds as `half` does, and copies when T is f32.
    let widen = |t: &BTensor<CudaBackend, T>| g.convert::<T, f32>(t);
    let (wx, wy, wb0, wb1) = (widen(&x)?, widen(&y)?, widen(&b0)?, widen(&b1)?);
    let sum = rtx_backend::implement::sum_bias_relu_composed(g, &[(&wx, &wb0), (&wy, &wb1)])?;
    let defined: Vec<T> = g.download(&g.convert::<f32, T>(&sum)?)?;
    let bits = |v: &[T]| v.iter().map(|v| v.to_f32().to_bits()).collect::<Vec<_>>();
    anyhow::ensure!(
        bits(&g.download(&g.sum_bias_relu(&parts)?)?) == bits(&defined),
        "sum_bias_relu{dtype} differs from its definition (the f32 composition, rounded once)"
    );
    Ok(())
}

/// Median device ms of one call of `f`: `inner` calls per timed rep.
fn per_call(
    g: &CudaBackend,
    args: &Args,
    mut f: impl FnMut() -> Result<()>,
) -> anyhow::Result<f64> {
    let ms = time_cuda(g, 2, args.reps, || {
        for _ in 0..args.inner {
            f()?;
        }
        Ok(())
    })?;
    Ok(ms / args.inner as f64)
}

fn round2(x: f64) -> f64 {
    (x * 100.0).round() / 100.0
}
