//! The `permute` suite of `rtx-bench transpose --set permute`: every class
//! of the permute kernel choice at 8-256 MB (and five reference shapes),
//! `permute(...)` with output allocation, as torch's
//! `x.permute(...).contiguous()`; crates/rtx-bench/peers/torch_permute.py
//! times torch on the same cases (the same names), in the same JSON rows.
//!
//! Rows: `rtx-cuda-permute` per case (with `pct_copy`: its bandwidth as a
//! percentage of the copy row's, `ms_no_bulk`: its time with the
//! `TransposeTile::NoBulk` knob, and `correct` when checked against
//! `permute_host`), and `rtx-cuda-copy` (`copy-256MiB`, the ceiling; `copy-32MiB`, the ceiling
//! at the size of the smallest cases).

use rtx_backend::prelude::*;
use rtx_backend::{Element, Result as BResult};
use rtx_backend_cuda::{CudaBackend, TransposeTile};

use crate::cuda_timing::{emit, time_cuda, values_par};

/// Element type of a case.
#[derive(Debug, Clone, Copy)]
pub enum Ty {
    F32,
    F64,
}

/// `(name, shape, perm, element)`: the permute classes. Keep in step with
/// `CASES` of peers/torch_permute.py.
pub const CASES: &[(&str, &[usize], &[usize], Ty)] = &[
    // the five reference shapes
    (
        "b2000000x4x16-021",
        &[2_000_000, 4, 16],
        &[0, 2, 1],
        Ty::F32,
    ),
    ("b500000x16x4-021", &[500_000, 16, 4], &[0, 2, 1], Ty::F32),
    ("b70000x3x5-021", &[70_000, 3, 5], &[0, 2, 1], Ty::F32),
    ("b8x4194304x2-021", &[8, 4_194_304, 2], &[0, 2, 1], Ty::F32),
    ("b7x2097187x2-021", &[7, 2_097_187, 2], &[0, 2, 1], Ty::F32),
    // tiny-matrix batches
    ("b1000000x8x8-021", &[1_000_000, 8, 8], &[0, 2, 1], Ty::F32),
    ("b4000000x3x5-021", &[4_000_000, 3, 5], &[0, 2, 1], Ty::F32),
    (
        "b1000000x4x8-021-f64",
        &[1_000_000, 4, 8],
        &[0, 2, 1],
        Ty::F64,
    ),
    // narrow / wide sides
    ("16777216x3", &[16_777_216, 3], &[1, 0], Ty::F32),
    ("3x16777216", &[3, 16_777_216], &[1, 0], Ty::F32),
    ("b4x2x8388608-021", &[4, 2, 8_388_608], &[0, 2, 1], Ty::F32),
    ("4211136x32", &[4_211_136, 32], &[1, 0], Ty::F32),
    ("32x4211136", &[32, 4_211_136], &[1, 0], Ty::F32),
    ("2097152x8-f64", &[2_097_152, 8], &[1, 0], Ty::F64),
    // 2-D square / tall / wide, batched
    ("8192x8192", &[8192, 8192], &[1, 0], Ty::F32),
    ("4096x4096-f64", &[4096, 4096], &[1, 0], Ty::F64),
    ("65536x1024", &[65_536, 1024], &[1, 0], Ty::F32),
    ("1024x65536", &[1024, 65_536], &[1, 0], Ty::F32),
    ("b64x1024x1024-021", &[64, 1024, 1024], &[0, 2, 1], Ty::F32),
    ("b256x384x256-021", &[256, 384, 256], &[0, 2, 1], Ty::F32),
    ("b2048x2048x2-021", &[2048, 2048, 2], &[0, 2, 1], Ty::F32),
    // N-D, the last dim moves
    (
        "64x128x256x32-0321",
        &[64, 128, 256, 32],
        &[0, 3, 2, 1],
        Ty::F32,
    ),
    (
        "32x256x128x64-3021",
        &[32, 256, 128, 64],
        &[3, 0, 2, 1],
        Ty::F32,
    ),
    (
        "16x32x64x128-3210-f64",
        &[16, 32, 64, 128],
        &[3, 2, 1, 0],
        Ty::F64,
    ),
    (
        "8x16x32x64x32-40312",
        &[8, 16, 32, 64, 32],
        &[4, 0, 3, 1, 2],
        Ty::F32,
    ),
    // N-D, the last dim stays (runs)
    (
        "64x128x256x32-2103",
        &[64, 128, 256, 32],
        &[2, 1, 0, 3],
        Ty::F32,
    ),
];

/// Times every case (median of `reps`) and emits its row; `check`: compare
/// with `permute_host` first.
///
/// # Errors
/// Backend errors.
pub fn run(g: &CudaBackend, reps: usize, check: bool) -> anyhow::Result<()> {
    let n = 1usize << 26;
    let x = g.zeros::<f32>(&[n])?;
    let copy_ms = time_copy(g, &x, reps)?;
    drop(x);
    let copy_bytes = 2.0 * n as f64 * 4.0;
    emit(
        "permute",
        "copy-256MiB",
        "rtx-cuda-copy",
        copy_ms,
        Some(copy_bytes),
        &[],
    );
    let copy_gbps = copy_bytes / copy_ms / 1e6;
    // the copy of a 32 MiB tensor: the ceiling at the small cases' size
    let m = 1usize << 23;
    let x = g.zeros::<f32>(&[m])?;
    let ms = time_copy(g, &x, reps)?;
    drop(x);
    emit(
        "permute",
        "copy-32MiB",
        "rtx-cuda-copy",
        ms,
        Some(2.0 * m as f64 * 4.0),
        &[],
    );
    for &(name, shape, perm, ty) in CASES {
        let numel: usize = shape.iter().product();
        let v = values_par(4, numel);
        match ty {
            Ty::F32 => case(g, name, shape, perm, &v, reps, check, copy_gbps)?,
            Ty::F64 => {
                let v: Vec<f64> = v.iter().map(|&a| f64::from(a)).collect();
                case(g, name, shape, perm, &v, reps, check, copy_gbps)?;
            }
        }
    }
    Ok(())
}

#[allow(clippy::too_many_arguments)]
fn case<T: Element>(
    g: &CudaBackend,
    name: &str,
    shape: &[usize],
    perm: &[usize],
    x: &[T],
    reps: usize,
    check: bool,
    copy_gbps: f64,
) -> anyhow::Result<()> {
    let t = g.upload(x, shape)?;
    let mut extra = Vec::new();
    if check {
        let out = g.permute(&t, perm)?;
        let want = rtx_tensor::permute_host(x, shape, perm)?;
        let ok = g
            .download(&out)?
            .iter()
            .zip(&want)
            .all(|(p, q)| p.to_bits_u64() == q.to_bits_u64());
        extra.push(("correct", ok.into()));
    }
    let ms = time_cuda(g, 3, reps, || -> BResult<()> {
        g.permute(&t, perm).map(|_| ())
    })?;
    if g.transpose_tile() == TransposeTile::ByShape {
        // the same choice with every tile through registers (no bulk tensor
        // copies): the same time where the bulk kernel does not apply
        g.set_transpose_tile(TransposeTile::NoBulk);
        let regs = time_cuda(g, 3, reps, || -> BResult<()> {
            g.permute(&t, perm).map(|_| ())
        });
        g.set_transpose_tile(TransposeTile::ByShape);
        extra.push(("ms_no_bulk", regs?.into()));
    }
    let bytes = 2.0 * (x.len() * T::DTYPE.size()) as f64;
    let pct = (bytes / ms / 1e6 / copy_gbps * 1000.0).round() / 10.0;
    extra.push(("pct_copy", pct.into()));
    // a device copy of the same bytes: the ceiling at this size (launch and
    // tail included)
    let copy_ms = time_copy(g, &t, reps)?;
    let same = (copy_ms / ms * 1000.0).round() / 10.0;
    extra.push(("pct_same_size_copy", same.into()));
    emit("permute", name, "rtx-cuda-permute", ms, Some(bytes), &extra);
    emit(
        "permute",
        name,
        "rtx-cuda-copy-same-size",
        copy_ms,
        Some(bytes),
        &[],
    );
    Ok(())
}

/// Device ms of a copy of `t` (a fresh buffer each time), median of `reps`.
fn time_copy<T: Element>(
    g: &CudaBackend,
    t: &rtx_backend::BTensor<CudaBackend, T>,
    reps: usize,
) -> anyhow::Result<f64> {
    time_cuda(g, 3, reps, || -> BResult<()> {
        let mut y = t.clone();
        g.make_unique(&mut y)
    })
}
