//! The fast matrix product of [`DenseKernels::Fast`](crate::DenseKernels):
//! `matrixmultiply`'s packed, SIMD micro-kernel GEMM (runtime dispatch to
//! AVX-512, AVX2/FMA or SSE2), run single-threaded on fixed tiles of output
//! rows, the tiles spread over rayon tasks.
//!
//! **Why the bits do not depend on the thread count.** The output rows are
//! cut into tiles whose height depends on `(m, k, n)` alone
//! ([`rows_per_task`]); each tile is one single-threaded `matrixmultiply`
//! call over the whole inner dimension (it is never split across tasks), so
//! every output element is the same sequence of operations whichever thread
//! computes its tile. The crate's own `threading` feature is off (see the
//! workspace `Cargo.toml`). The bits do depend on the shapes and on the
//! CPU's SIMD features (FMA or not, vector width): the product is held to
//! the reference ([`rtx_backend::ops::matmul`]) within a tolerance only, as
//! the [`DenseOps`](rtx_backend::DenseOps) contract allows.

use rayon::prelude::*;
use rtx_backend::{DType, Element};

/// Multiply-adds per rayon task (about 50-100 microseconds of one core).
const MACS_PER_TASK: usize = 1 << 18;

/// Output rows per task of an `[m, k] @ [k, n]` product: a multiple of 16
/// (the micro-kernels' row blocks), enough multiply-adds to amortize a task,
/// a function of the shape alone.
pub(crate) fn rows_per_task(k: usize, n: usize) -> usize {
    let per_row = k.max(1).saturating_mul(n.max(1));
    (MACS_PER_TASK / per_row)
        .clamp(16, 4096)
        .next_multiple_of(16)
}

/// `out = op(a) @ op(b)`: `a` is `[m, k]` (stored `[k, m]` when `trans_a`),
/// `b` is `[k, n]` (stored `[n, k]` when `trans_b`), `out` is `[m, n]`
/// row-major; every element of `out` is written (`k == 0` gives zeros).
#[allow(clippy::too_many_arguments)]
pub(crate) fn matmul<T: Element>(
    a: &[T],
    trans_a: bool,
    b: &[T],
    trans_b: bool,
    m: usize,
    k: usize,
    n: usize,
    out: &mut [T],
) {
    assert!(a.len() >= m * k && b.len() >= k * n && out.len() == m * n);
    if m == 0 || n == 0 {
        return;
    }
    if k == 0 {
        out.fill(T::ZERO);
        return;
    }
    if T::DTYPE.is_half() {
        // bf16 / f16: the product of the operands widened to f32 (exact),
        // accumulated in f32, each output rounded once
        let (a32, b32) = (widen(&a[..m * k]), widen(&b[..k * n]));
        let mut o32 = vec![0.0f32; m * n];
        matmul(&a32, trans_a, &b32, trans_b, m, k, n, &mut o32);
        narrow(&o32, out);
        return;
    }
    // element strides (row, column) of op(a) and op(b)
    let (rsa, csa) = if trans_a { (1, m) } else { (k, 1) };
    let (rsb, csb) = if trans_b { (1, k) } else { (n, 1) };
    let rows = rows_per_task(k, n);
    out.par_chunks_mut(rows * n).enumerate().for_each(|(t, o)| {
        let i0 = t * rows;
        tile(&a[i0 * rsa..], rsa, csa, b, rsb, csb, o.len() / n, k, n, o);
    });
}

/// `x` widened to `f32` (exact for every element type but `f64`, which
/// never comes here).
pub(crate) fn widen<T: Element>(x: &[T]) -> Vec<f32> {
    x.iter().map(|v| v.to_f32()).collect()
}

/// `out[i] = T::from_acc(x[i])`: each `f32` rounded once to `T`.
pub(crate) fn narrow<T: Element>(x: &[f32], out: &mut [T]) {
    for (o, &v) in out.iter_mut().zip(x) {
        *o = T::from_f32(v);
    }
}

/// One single-threaded product of `mt` rows: `o = A @ B` with `A(i, p) =
/// a[i * rsa + p * csa]`, `B(p, j) = b[p * rsb + j * csb]`, `o` row-major
/// `[mt, n]`.
#[allow(clippy::too_many_arguments)]
fn tile<T: Element>(
    a: &[T],
    rsa: usize,
    csa: usize,
    b: &[T],
    rsb: usize,
    csb: usize,
    mt: usize,
    k: usize,
    n: usize,
    o: &mut [T],
) {
    // the last element each operand is read at must lie inside its slice
    assert!(mt >= 1 && k >= 1 && n >= 1 && o.len() == mt * n);
    assert!((mt - 1) * rsa + (k - 1) * csa < a.len());
    assert!((k - 1) * rsb + (n - 1) * csb < b.len());
    let s = |x: usize| x as isize;
    match T::DTYPE {
        // half types: widened here when `matmul` has not done it already
        DType::BF16 | DType::F16 => {
            let (a32, b32) = (widen(a), widen(b));
            let mut o32 = vec![0.0f32; o.len()];
            tile(&a32, rsa, csa, &b32, rsb, csb, mt, k, n, &mut o32);
            narrow(&o32, o);
        }
        // SAFETY: `T::DTYPE == F32` means `T` is `f32` (`Element` is sealed
        // to `f32` and `f64` with matching tags), so the casts keep the
        // element type. The asserts above keep every element `sgemm` reads
        // (`A` at `i * rsa + p * csa`, `B` at `p * rsb + j * csb` for
        // `i < mt`, `p < k`, `j < n`) inside `a` and `b`, and every element it
        // writes (`C` at `i * n + j`, row-major, no aliasing) inside `o`,
        // which we borrow mutably; `beta == 0` means `C` is written, not read.
        DType::F32 => unsafe {
            matrixmultiply::sgemm(
                mt,
                k,
                n,
                1.0,
                a.as_ptr().cast::<f32>(),
                s(rsa),
                s(csa),
                b.as_ptr().cast::<f32>(),
                s(rsb),
                s(csb),
                0.0,
                o.as_mut_ptr().cast::<f32>(),
                s(n),
                1,
            )
        },
        // SAFETY: as for `F32`, with `T` = `f64` and `dgemm`.
        DType::F64 => unsafe {
            matrixmultiply::dgemm(
                mt,
                k,
                n,
                1.0,
                a.as_ptr().cast::<f64>(),
                s(rsa),
                s(csa),
                b.as_ptr().cast::<f64>(),
                s(rsb),
                s(csb),
                0.0,
                o.as_mut_ptr().cast::<f64>(),
                s(n),
                1,
            )
        },
    }
}
