//! The blocked walk of `permute_lines_b16` (kernels/permute_2byte.cu) for
//! kept-last-dim permutes of 2-byte runs shorter than a line: a host model
//! of the kernel against rtx-tensor's host permute, the whole-line property,
//! and the walk the device layout ops would take for a shape.

use super::tests::{all_written, put};
use super::*;

/// `permute_lines_b16` run on the host: walk index v decoded with the
/// kernel's FastDiv over the walk's dims (last fastest), run `s(v)` of the
/// input copied to run `d(v)` of the output; every output run written once.
fn run_lines(l: &Lines, run: usize, input: &[u16]) -> Vec<u16> {
    let p = &l.params;
    let mut out = vec![None; input.len()];
    for v in 0..l.nruns as u32 {
        let (s, d) = lines_at(p, v);
        for e in 0..run as u64 {
            put(
                &mut out,
                d * run as u64 + e,
                input[(s * run as u64 + e) as usize],
            );
        }
    }
    all_written(out)
}

/// lines_at of kernels/permute_2byte.cu: the input and output runs of walk
/// index `v`.
fn lines_at(p: &LinesParams, mut v: u32) -> (u64, u64) {
    let (mut s, mut d) = (0, 0);
    for k in (0..p.rank as usize).rev() {
        let q = p.dims[k].div(v);
        let x = u64::from(v - q * p.dims[k].d);
        s += x * p.in_strides[k];
        d += x * p.out_strides[k];
        v = q;
    }
    (s, d)
}

#[test]
fn lines_walk_matches_the_host_permute_and_moves_whole_lines() {
    // (shape, perm, g): runs of 64, 16, 32 and 48 bytes, a rank-5 walk, a
    // batched transpose of runs (rtx-tensor plans [1, 2, 0, 3] of it as one)
    let cases: [(&[usize], &[usize], u64); 6] = [
        (&[6, 10, 4, 32], &[2, 1, 0, 3], 2),
        (&[8, 5, 16, 8], &[2, 1, 0, 3], 8),
        (&[4, 3, 8, 16], &[2, 1, 0, 3], 4),
        (&[4, 3, 8, 24], &[2, 1, 0, 3], 4),
        (&[4, 4, 2, 6, 32], &[3, 0, 2, 1, 4], 2),
        (&[2, 4, 6, 32], &[1, 2, 0, 3], 2),
    ];
    for (shape, perm, g) in cases {
        let n: usize = shape.iter().product();
        let run = shape[shape.len() - 1];
        let input: Vec<u16> = (0..n).map(|i| (i * 7 + 1) as u16).collect();
        let want = rtx_tensor::permute_host(&input, shape, perm).unwrap();
        let Some(l) = half_lines(shape, perm) else {
            panic!("{shape:?} {perm:?}: no lines walk")
        };
        assert_eq!(l.w, run as u64 * 2 / 16, "{shape:?}");
        assert_eq!(l.nruns, (n / run) as u64, "{shape:?}");
        assert_eq!(run_lines(&l, run, &input), want, "{shape:?} {perm:?}");
        // every g * g consecutive runs of the walk: g blocks of g
        // consecutive runs (from a multiple of g) in the input and in the
        // output, so whole lines
        for b in 0..l.nruns / (g * g) {
            let runs: Vec<(u64, u64)> = (b * g * g..(b + 1) * g * g)
                .map(|v| lines_at(&l.params, v as u32))
                .collect();
            for side in [0, 1] {
                let mut r: Vec<u64> = runs
                    .iter()
                    .map(|&(s, d)| if side == 0 { s } else { d })
                    .collect();
                r.sort_unstable();
                for c in r.chunks(g as usize) {
                    assert!(c[0].is_multiple_of(g), "{shape:?}: side {side} {c:?}");
                    assert!(
                        c.windows(2).all(|w| w[1] == w[0] + 1),
                        "{shape:?}: side {side} {c:?}"
                    );
                }
            }
        }
    }
    // the CUDA struct's bytes: 2 x 10 u64 strides, 10 FastDiv, 4 u32
    assert_eq!(std::mem::size_of::<LinesParams>(), 336);
    // the bf16 bench case: 64-byte runs, two of K by two of the output's last
    let l = lines(&[64, 128, 256, 32], &[2, 1, 0, 3], 2).unwrap();
    assert_eq!((l.w, l.nruns, l.params.rank), (4, 64 * 128 * 256, 5));
    // not taken: f32 and f64, runs not whole vectors or of a line or more,
    // split dims not multiples of g, a moved last dim
    assert_eq!(lines(&[64, 128, 256, 32], &[2, 1, 0, 3], 4), None);
    assert_eq!(lines(&[64, 128, 256, 16], &[2, 1, 0, 3], 8), None);
    assert_eq!(lines(&[6, 10, 4, 5], &[2, 1, 0, 3], 2), None);
    assert_eq!(lines(&[6, 10, 4, 64], &[2, 1, 0, 3], 2), None);
    assert_eq!(lines(&[6, 10, 5, 32], &[2, 1, 0, 3], 2), None);
    assert_eq!(lines(&[5, 10, 4, 32], &[2, 1, 0, 3], 2), None);
    assert_eq!(lines(&[4, 4, 32], &[2, 1, 0], 2), None);
    assert_eq!(lines(&[4, 32], &[0, 1], 2), None);
}

/// The walk of `permute_lines_b16` for contiguous 2-byte `shape` by `perm`
/// after rtx-tensor's plan, if it takes one.
pub(super) fn half_lines(shape: &[usize], perm: &[usize]) -> Option<Lines> {
    let plan = rtx_tensor::Layout::contiguous(shape)
        .unwrap()
        .plan_permute(perm)
        .unwrap();
    match plan.kind {
        rtx_tensor::PermuteKind::Permute { shape, perm } if shape.len() <= MAX_RANK => {
            lines(&shape, &perm, 2)
        }
        // a batched transpose of runs: [batch, rows, cols, run] by [0, 2, 1, 3]
        rtx_tensor::PermuteKind::Transpose {
            batch,
            rows,
            cols,
            inner,
        } if inner > 1 => lines(&[batch, rows, cols, inner], &[0, 2, 1, 3], 2),
        _ => None,
    }
}
