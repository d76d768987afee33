//! GPU tests of bf16 and f16 storage (feature `cuda`; run on a machine with
//! a device): gather, permute and scatter-add of half elements against the
//! host, the device's f32 <-> half conversions against the `half` crate on
//! every f32 bit pattern, tensors past 2^31 half elements, and the model's
//! dense and fused ops (matmul, column sums, per-head dots, the two-gather
//! ops) against the CPU reference's f32 ops rounded once.
//!
//! Scatter-add is checked against an expectation built here from
//! `rtx_backend::order::canonical_sum` over the f32-widened terms (the
//! contract: the canonical f32 sum, added to the widened destination, rounded
//! once), and against `CpuBackend::reference()`.
//!
//! Without a device every test here FAILS with a message saying so.
#![cfg(feature = "cuda")]

use std::sync::OnceLock;

use rayon::prelude::*;
use rtx_backend::order::canonical_sum;
use rtx_backend::prelude::*;
use rtx_backend::workload::{indices, splitmix64, values};
use rtx_backend::{BTensor, Element, IndexPlan, bf16, f16};
use rtx_backend_cpu::CpuBackend;
use rtx_backend_cuda::{CudaBackend, ScatterForm, TransposeTile};

fn shared() -> &'static CudaBackend {
    static B: OnceLock<CudaBackend> = OnceLock::new();
    B.get_or_init(|| {
        CudaBackend::new(0).unwrap_or_else(|e| panic!("GPU test needs a CUDA device: {e}"))
    })
}

/// Equal bits, or both NaN (device float arithmetic makes its own NaN
/// payloads; copies and conversions keep theirs and compare by bits).
fn same<T: Element>(a: T, b: T) -> bool {
    a.to_bits_u64() == b.to_bits_u64() || (a.is_nan() && b.is_nan())
}

fn assert_same<T: Element>(case: &str, got: &[T], want: &[T]) {
    assert_eq!(got.len(), want.len(), "{case}: length");
    if let Some(i) = (0..got.len()).find(|&i| !same(got[i], want[i])) {
        panic!("{case}: element {i}: got {:?}, want {:?}", got[i], want[i]);
    }
}

fn assert_bits<T: Element>(case: &str, got: &[T], want: &[T]) {
    assert_eq!(got.len(), want.len(), "{case}: length");
    if let Some(i) = (0..got.len()).find(|&i| got[i].to_bits_u64() != want[i].to_bits_u64()) {
        panic!(
            "{case}: element {i}: got {:?}, want {:?} (bits)",
            got[i], want[i]
        );
    }
}

/// `n` values of `T` from the anchors' generator, every 13th replaced by a
/// special: -0.0, +-inf, a subnormal of T, the largest finite f32 rounded,
/// and (when `nan`) a NaN.
fn mixed<T: FromF32>(seed: u64, n: usize, nan: bool) -> Vec<T> {
    let mut v: Vec<T> = values(seed, n);
    let specials = [
        -0.0f32,
        f32::INFINITY,
        f32::NEG_INFINITY,
        3.0e-41,
        6.0e-8,
        1.0e30,
    ];
    for (i, x) in v.iter_mut().enumerate().filter(|(i, _)| i % 13 == 5) {
        let k = (splitmix64(seed ^ 0x55, i as u64) % 7) as usize;
        *x = match (k, nan) {
            (6, true) => T::from_acc_f32(f32::from_bits(0x7fc0_1234)),
            (6, false) => T::from_acc_f32(0.5),
            (k, _) => T::from_acc_f32(specials[k]),
        };
    }
    v
}

/// Rounding from f32 for the tests, whatever `T::Acc` is.
trait FromF32: Element {
    fn from_acc_f32(x: f32) -> Self;
    fn acc_f32(self) -> f32;
}
impl FromF32 for bf16 {
    fn from_acc_f32(x: f32) -> Self {
        bf16::from_f32(x)
    }
    fn acc_f32(self) -> f32 {
        self.to_f32()
    }
}
impl FromF32 for f16 {
    fn from_acc_f32(x: f32) -> Self {
        f16::from_f32(x)
    }
    fn acc_f32(self) -> f32 {
        self.to_f32()
    }
}

/// The contract's scatter-add: per destination element, the canonical f32
/// sum of its terms added to the widened destination, rounded once.
fn expected_index_add<T: FromF32>(
    dst: &[T],
    idx: &[u32],
    rows: usize,
    src: &[T],
    f: usize,
) -> Vec<T> {
    let plan = IndexPlan::new(idx, rows).unwrap();
    let mut out = dst.to_vec();
    for r in 0..rows {
        let pos = plan.row(r);
        for j in 0..f {
            if let Some(s) = canonical_sum(pos.len(), |p| src[pos[p] as usize * f + j].acc_f32()) {
                out[r * f + j] = T::from_acc_f32(dst[r * f + j].acc_f32() + s);
            }
        }
    }
    out
}

/// `index_add` of `src` by `idx` into a fresh upload of `dst0` (`shape`) in
/// each of `forms`, each result given to `check` with the form's name; the
/// form is back to Auto after.
fn scatter_in_forms<T: Element>(
    forms: &[ScatterForm],
    (dst0, shape): (&[T], [usize; 2]),
    idx: &[u32],
    src: &BTensor<CudaBackend, T>,
    check: impl Fn(&str, &[T]),
) {
    let g = shared();
    for &form in forms {
        g.set_scatter_form(form);
        let mut d = g.upload(dst0, &shape).unwrap();
        g.index_add(&mut d, idx, src).unwrap();
        check(&format!("{form:?}"), &g.download(&d).unwrap());
    }
    g.set_scatter_form(ScatterForm::Auto);
}

const EVERY_FORM: [ScatterForm; 4] = [
    ScatterForm::Batched,
    ScatterForm::Pipelined,
    ScatterForm::Windowed,
    ScatterForm::Auto,
];

fn scatter_case<T: FromF32>(rows: usize, e: usize, f: usize, hub: bool, seed: u64) {
    let g = shared();
    let cpu = CpuBackend::reference();
    let idx = indices(seed, e, rows, hub);
    let src: Vec<T> = mixed(seed + 1, e * f, true);
    let dst0: Vec<T> = mixed(seed + 2, rows * f, false);
    let want = expected_index_add(&dst0, &idx, rows, &src, f);
    let case = format!("{:?} scatter {rows}x{e}x{f} hub={hub}", T::DTYPE);
    let mut c = cpu.upload(&dst0, &[rows, f]).unwrap();
    cpu.index_add(&mut c, &idx, &cpu.upload(&src, &[e, f]).unwrap())
        .unwrap();
    assert_same(
        &format!("{case}: CPU reference"),
        &cpu.download(&c).unwrap(),
        &want,
    );
    let s = g.upload(&src, &[e, f]).unwrap();
    scatter_in_forms(&EVERY_FORM, (&dst0, [rows, f]), &idx, &s, |form, got| {
        assert_same(&format!("{case} {form}"), got, &want);
    });
}

#[test]
fn half_scatter_add_is_the_canonical_f32_sum_rounded_once() {
    for (rows, e, f, hub) in [
        (7, 40, 1, false),
        (50, 3000, 3, true),
        (300, 20_000, 2, false),
        (100, 5000, 5, true),
        (1000, 60_000, 8, true),
        (20, 300_000, 4, true), // hub rows of several levels
        (2000, 30_000, 64, false),
        (40, 9000, 130, true),
        // rows of 8k halves: level 0 in x8 vectors, the levels past 0
        // (hub rows of several levels) in x4 vectors of the f32 scratch
        (30, 200_000, 64, true),
        (12, 70_000, 16, true),
        // x8 vectors, 32 a row: the widest rows the windowed level 0 takes
        (300, 20_000, 256, true),
    ] {
        scatter_case::<bf16>(rows, e, f, hub, 21);
        scatter_case::<f16>(rows, e, f, hub, 22);
    }
}

/// One row: `big` then `k - 1` copies of `small`. Summed left to right in
/// f32, every `small` is lost (a tie rounded to the even `big`); the
/// canonical blocks sum the smalls apart, and the difference survives the
/// rounding to `T`.
fn order_case<T: FromF32>(big: f32, small: f32, k: usize) {
    let g = shared();
    let src: Vec<T> = (0..k)
        .map(|i| T::from_acc_f32(if i == 0 { big } else { small }))
        .collect();
    let idx = vec![0u32; k];
    let zero = vec![T::from_acc_f32(0.0)];
    let want = expected_index_add(&zero, &idx, 1, &src, 1);
    let sequential = T::from_acc_f32(src.iter().fold(0.0f32, |a, x| a + x.acc_f32()));
    assert!(
        !same(want[0], sequential),
        "{:?}: the case must tell the canonical order from left to right",
        T::DTYPE
    );
    let forms = [
        ScatterForm::Batched,
        ScatterForm::Pipelined,
        ScatterForm::Windowed,
    ];
    let s = g.upload(&src, &[k, 1]).unwrap();
    scatter_in_forms(&forms, (&zero, [1, 1]), &idx, &s, |form, got| {
        assert_bits(&format!("{:?} order {form}", T::DTYPE), got, &want);
    });
}

#[test]
fn half_scatter_add_follows_the_canonical_order_not_left_to_right() {
    order_case::<bf16>(16_777_216.0, 1.0, 200_000);
    order_case::<f16>(2048.0, 1.0 / 8192.0, 20_000);
}

/// Rows of every chunk length around the batch (8) and block (256)
/// boundaries of the half level 0, in every vector width and form: row `r`
/// has `LENS[r]` terms, their messages shuffled over the source (the plan's
/// positions are a permutation, so a wrong position reads another row's
/// term), one term `big` (at place 0, 1, 7, 8 or 9 of the row's order, by
/// row) among `small`s, and a destination of `-big`. A `small` added to
/// `big` in f32 is a tie rounded to even, lost, so the rounded result tells
/// the canonical order (each chunk from its first value, left to right) from
/// any other; columns are scaled by `2^(c % scales)`, so a column read from
/// another lane differs too. Rows of only -0.0 terms into -0.0 stay -0.0
/// (a sum that starts from 0 + its first value makes +0.0); one row has no
/// terms and keeps its bits.
fn boundary_case<T: FromF32>(big: f32, small: f32, scales: u32, f: usize) {
    const LENS: [usize; 27] = [
        1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 255, 256, 257, 511,
        512, 513, 1000,
    ];
    const ZERO_LENS: [usize; 4] = [1, 2, 9, 300];
    let g = shared();
    let lens: Vec<usize> = LENS.iter().chain(&ZERO_LENS).copied().collect();
    let zero_from = LENS.len();
    let rows = lens.len() + 1; // the last row has no terms
    let mut idx: Vec<u32> = (0..lens.len())
        .flat_map(|r| std::iter::repeat_n(r as u32, lens[r]))
        .collect();
    for i in (1..idx.len()).rev() {
        let k = (splitmix64(0xb0, i as u64) % (i as u64 + 1)) as usize;
        idx.swap(i, k);
    }
    let e = idx.len();
    let scale = |c: usize| f32::from_bits(127u32.wrapping_add((c as u32) % scales) << 23);
    let big_at = |r: usize| [0, 1, 7, 8, 9][r % 5].min(lens[r] - 1);
    // place of each message in its row's order (positions ascend in a row)
    let mut seen = vec![0usize; rows];
    let mut src = Vec::with_capacity(e * f);
    for &r in &idx {
        let (r, t) = (r as usize, seen[r as usize]);
        seen[r] += 1;
        for c in 0..f {
            src.push(T::from_acc_f32(if r >= zero_from {
                -0.0
            } else if t == big_at(r) {
                big * scale(c)
            } else {
                small * scale(c)
            }));
        }
    }
    let dst0: Vec<T> = (0..rows * f)
        .map(|i| {
            let (r, c) = (i / f, i % f);
            T::from_acc_f32(match r {
                r if r == rows - 1 => 1.5,
                r if r >= zero_from => -0.0,
                _ => -big * scale(c),
            })
        })
        .collect();
    let want = expected_index_add(&dst0, &idx, rows, &src, f);
    // the case tells orders apart: the row of 6 terms, big first, keeps
    // none of its 5 smalls (5 * small in any order that adds them first)
    let r6 = LENS.iter().position(|&k| k == 6).unwrap();
    assert_eq!(big_at(r6), 0);
    assert_eq!(want[r6 * f].acc_f32(), 0.0, "{:?}: smalls lost", T::DTYPE);
    assert!(
        want[zero_from * f..(rows - 1) * f]
            .iter()
            .all(|x| x.acc_f32().to_bits() == (-0.0f32).to_bits()),
        "{:?}: -0.0 rows",
        T::DTYPE
    );
    let s = g.upload(&src, &[e, f]).unwrap();
    scatter_in_forms(&EVERY_FORM, (&dst0, [rows, f]), &idx, &s, |form, got| {
        let case = format!("{:?} boundaries f={f} {form}", T::DTYPE);
        assert_bits(&case, got, &want);
    });
}

#[test]
fn half_scatter_add_chunks_of_every_length_keep_the_canonical_order() {
    // f: x1 (1, 3), x2 (2, 130: 65 vectors, a lane sums several), x4, x8
    // (8, 16: one or two vectors a row; 64: the anchors' rows)
    for f in [1, 2, 3, 4, 8, 16, 64, 130] {
        boundary_case::<bf16>(16_777_216.0, 1.0, 16, f);
        boundary_case::<f16>(2048.0, 1.0 / 8192.0, 5, f);
    }
}

/// Plans of more than `PIPELINED_SCATTER_MAX_ENTRIES` (2^20) entries over a
/// few hub rows: under `Auto` level 0 is batched and the levels past 0 (some
/// thousands of scratch rows) pipelined, each level's form resolved from its
/// own size; the forced forms take one form throughout.
#[test]
fn half_scatter_add_of_large_plans_mixes_the_forms_by_level() {
    let e = (1 << 20) + 5000;
    scatter_case::<bf16>(4, e, 64, true, 41);
    scatter_case::<bf16>(5, e, 3, true, 42);
    scatter_case::<f16>(4, e, 8, true, 43);
}

fn gather_case<T: FromF32>(rows: usize, e: usize, f: usize) {
    let g = shared();
    let idx = indices(31, e, rows, true);
    let src: Vec<T> = mixed(32, rows * f, true);
    let mut want = Vec::with_capacity(e * f);
    for &r in &idx {
        want.extend_from_slice(&src[r as usize * f..(r as usize + 1) * f]);
    }
    let out = g
        .index_select(&g.upload(&src, &[rows, f]).unwrap(), &idx)
        .unwrap();
    assert_bits(
        &format!("{:?} gather {rows}x{e}x{f}", T::DTYPE),
        &g.download(&out).unwrap(),
        &want,
    );
}

#[test]
fn half_gather_moves_the_bits_for_every_row_size() {
    for f in [1, 2, 3, 4, 5, 7, 8, 9, 16, 63, 64, 65, 130, 1000] {
        gather_case::<bf16>(500, 3000, f);
        gather_case::<f16>(500, 3000, f);
    }
}

fn permute_case<T: FromF32>(shape: &[usize], perm: &[usize]) {
    let g = shared();
    let n: usize = shape.iter().product();
    let x: Vec<T> = mixed(41, n, true);
    let want = rtx_tensor::permute_host(&x, shape, perm).unwrap();
    let t = g.upload(&x, shape).unwrap();
    for tile in [
        TransposeTile::ByShape,
        TransposeTile::NoBulk,
        TransposeTile::Force32,
    ] {
        g.set_transpose_tile(tile);
        let p = g.permute(&t, perm).unwrap();
        let case = format!("{:?} permute {shape:?} by {perm:?} {tile:?}", T::DTYPE);
        assert!(p.layout().is_contiguous(), "{case}: output not contiguous");
        assert_bits(&case, &g.download(&p).unwrap(), &want);
    }
    g.set_transpose_tile(TransposeTile::ByShape);
}

#[test]
fn half_permutes_move_the_bits_for_every_kernel() {
    // Even sides and strides take the pair kernels (`_p2`), odd ones the
    // `_b2` kernels; Force32 takes the 32x32 tile of either for every shape,
    // NoBulk the register tiles where sm_90+ takes bulk copies.
    // The larger pair tiles move 8-byte units (the quad path) when sides and
    // strides are multiples of 4: "quads" below, "pairs" else.
    let cases: &[(&[usize], &[usize])] = &[
        (&[64, 8, 16], &[0, 2, 1]),           // planes, pairs
        (&[1000, 4, 16], &[0, 2, 1]),         // planes, pairs
        (&[3, 30, 62], &[0, 2, 1]),           // planes, pairs, a plane per tile
        (&[300, 3, 5], &[0, 2, 1]),           // planes, b2 (odd sides)
        (&[300, 4, 5], &[0, 2, 1]),           // planes, b2 (odd columns)
        (&[3, 1000, 40], &[0, 2, 1]),         // rows, pairs
        (&[1, 4098, 2], &[0, 2, 1]),          // rows, pairs, two columns
        (&[3, 1001, 40], &[0, 2, 1]),         // rows, b2 (odd rows)
        (&[3, 1000, 41], &[0, 2, 1]),         // rows, b2 (odd columns)
        (&[2, 40, 1000], &[0, 2, 1]),         // cols, pairs, 16-byte loads
        (&[2, 40, 1002], &[0, 2, 1]),         // cols, pairs, word loads
        (&[1, 64, 10_000], &[0, 2, 1]),       // cols, pairs, 64 rows
        (&[2, 40, 1001], &[0, 2, 1]),         // cols, b2 (odd columns)
        (&[2, 41, 1000], &[0, 2, 1]),         // cols, b2 (odd rows)
        (&[513, 700], &[1, 0]),               // tiles, b2, ragged edges
        (&[514, 700], &[1, 0]),               // 64x64 pairs, ragged edges
        (&[4096, 4096], &[1, 0]),             // the 64x64 pair tiles
        (&[3, 130, 198], &[0, 2, 1]),         // batched 64x64 pairs
        (&[4, 130, 6, 34], &[0, 3, 2, 1]),    // 128x32 pairs (an N-D inner pair)
        (&[4, 34, 6, 130], &[0, 3, 2, 1]),    // 32x128 pairs
        (&[34, 100, 300], &[2, 1, 0]),        // tiled inner pair of an N-D permute, 32x128 pairs
        (&[33, 100, 300], &[2, 1, 0]),        // tiled inner pair of an N-D permute, 32x128 b2
        (&[2, 3, 4, 5, 6], &[4, 0, 3, 1, 2]), // 64x64 pairs over three batch dims
        (&[516, 700], &[1, 0]),               // 64x64 quads, ragged edges
        (&[3, 132, 196], &[0, 2, 1]),         // batched 64x64 quads
        (&[4, 132, 6, 36], &[0, 3, 2, 1]),    // 128x32 quads
        (&[4, 36, 6, 132], &[0, 3, 2, 1]),    // 32x128 quads
        (&[36, 100, 300], &[2, 1, 0]),        // N-D inner pair, 32x128 quads
        (&[2, 3, 4, 4, 8], &[4, 0, 3, 1, 2]), // 64x64 quads over three batch dims
        // 64x64 pair tiles whose rows are multiples of 16 bytes: Hopper's
        // bulk tensor copies on sm_90+ (transpose_bulk_b2; NoBulk: quads)
        (&[520, 712], &[1, 0]),            // ragged edges
        (&[3, 136, 200], &[0, 2, 1]),      // batched, ragged
        (&[6, 72, 5, 136], &[0, 3, 2, 1]), // an N-D inner pair, two batch dims
        (&[3, 5, 7, 9], &[3, 1, 0, 2]),    // small N-D
        (&[6, 10, 4, 3], &[2, 1, 0, 3]),   // last dim kept: runs of 3 halves
        (&[6, 10, 4, 5], &[1, 0, 2, 3]),   // runs of 20 halves
        (&[100, 3, 7], &[1, 0, 2]),        // a batched transpose of runs
        // last dim kept, runs of 16-byte vectors under 128 bytes: the lines
        // walk (permute_lines_b16) when K and the output's last dim divide
        (&[6, 10, 4, 32], &[2, 1, 0, 3]),      // runs of 64 bytes
        (&[16, 12, 64, 32], &[2, 1, 0, 3]),    // runs of 64 bytes, many blocks
        (&[8, 5, 16, 8], &[2, 1, 0, 3]),       // runs of 16 bytes
        (&[4, 3, 8, 16], &[2, 1, 0, 3]),       // runs of 32 bytes
        (&[4, 3, 8, 24], &[2, 1, 0, 3]),       // runs of 48 bytes
        (&[4, 4, 2, 6, 32], &[3, 0, 2, 1, 4]), // a walk of rank 6
        (&[2, 4, 6, 32], &[1, 2, 0, 3]),       // a batched transpose of runs
        (&[6, 10, 5, 32], &[2, 1, 0, 3]),      // K odd: permute_b16
        (&[3, 5, 6, 32], &[0, 2, 1, 3]),       // rows odd: transpose_runs_b16
    ];
    for &(shape, perm) in cases {
        permute_case::<bf16>(shape, perm);
        permute_case::<f16>(shape, perm);
    }
}

/// Device conversions of `x` (f32) to `T` and back, against the host.
fn convert_chunk<T: FromF32>(x: &[f32]) {
    let g = shared();
    let t = g.upload(x, &[x.len()]).unwrap();
    let h = g.convert::<f32, T>(&t).unwrap();
    let got = g.download(&h).unwrap();
    let bad = (0..x.len())
        .into_par_iter()
        .find_first(|&i| got[i].to_bits_u64() != T::from_acc_f32(x[i]).to_bits_u64());
    if let Some(i) = bad {
        panic!(
            "{:?} from f32 {:#010x}: got {:#06x}, want {:#06x}",
            T::DTYPE,
            x[i].to_bits(),
            got[i].to_bits_u64(),
            T::from_acc_f32(x[i]).to_bits_u64()
        );
    }
}

#[test]
fn conversions_are_the_hosts_on_every_f32_pattern() {
    const CHUNK: u64 = 1 << 28;
    for c in 0..(1u64 << 32) / CHUNK {
        let x: Vec<f32> = (c * CHUNK..(c + 1) * CHUNK)
            .into_par_iter()
            .map(|i| f32::from_bits(i as u32))
            .collect();
        convert_chunk::<bf16>(&x);
        convert_chunk::<f16>(&x);
    }
    // widening every half pattern, and the half-to-half conversions
    let g = shared();
    let all: Vec<u16> = (0..=u16::MAX).collect();
    let b: Vec<bf16> = all.iter().map(|&u| bf16::from_bits(u)).collect();
    let h: Vec<f16> = all.iter().map(|&u| f16::from_bits(u)).collect();
    let (bd, hd) = (
        g.upload(&b, &[b.len()]).unwrap(),
        g.upload(&h, &[h.len()]).unwrap(),
    );
    let bw: Vec<f32> = b.iter().map(|x| x.to_f32()).collect();
    let hw: Vec<f32> = h.iter().map(|x| x.to_f32()).collect();
    assert_bits(
        "bf16 -> f32",
        &g.download(&g.convert::<bf16, f32>(&bd).unwrap()).unwrap(),
        &bw,
    );
    assert_bits(
        "f16 -> f32",
        &g.download(&g.convert::<f16, f32>(&hd).unwrap()).unwrap(),
        &hw,
    );
    let bh: Vec<f16> = bw.iter().map(|&x| f16::from_f32(x)).collect();
    let hb: Vec<bf16> = hw.iter().map(|&x| bf16::from_f32(x)).collect();
    assert_same(
        "bf16 -> f16",
        &g.download(&g.convert::<bf16, f16>(&bd).unwrap()).unwrap(),
        &bh,
    );
    assert_same(
        "f16 -> bf16",
        &g.download(&g.convert::<f16, bf16>(&hd).unwrap()).unwrap(),
        &hb,
    );
    // the pairs with f64 (through the host) and the same type
    let x64: Vec<f64> = values(51, 1000);
    let t64 = g.upload(&x64, &[1000]).unwrap();
    let want: Vec<bf16> = x64.iter().map(|&v| bf16::from_f64(v)).collect();
    assert_bits(
        "f64 -> bf16",
        &g.download(&g.convert::<f64, bf16>(&t64).unwrap()).unwrap(),
        &want,
    );
    assert_bits(
        "bf16 -> bf16",
        &g.download(&g.convert::<bf16, bf16>(&bd).unwrap()).unwrap(),
        &b,
    );
}

#[test]
fn past_two_to_the_31_half_elements() {
    // gather into [2^31/64 + 1, 64] bf16 (2^31 + 64 elements, 4.3 GB), swap
    // its dims, then scatter it back: 64-bit sizes and index math end to end
    let g = shared();
    let (rows, f) = (1000usize, 64usize);
    let e = (1usize << 31) / f + 1;
    let src: Vec<bf16> = values(2, rows * f);
    let idx: Vec<u32> = (0..e as u64)
        .into_par_iter()
        .map(|i| (splitmix64(5, i) % rows as u64) as u32)
        .collect();
    let out = g
        .index_select(&g.upload(&src, &[rows, f]).unwrap(), &idx)
        .unwrap();
    assert_eq!(out.numel(), (1usize << 31) + 64);
    let host = g.download(&out).unwrap();
    host.par_chunks_exact(f).enumerate().for_each(|(i, row)| {
        let r = idx[i] as usize;
        if row
            .iter()
            .zip(&src[r * f..(r + 1) * f])
            .any(|(a, b)| a.to_bits() != b.to_bits())
        {
            panic!("gather row {i} (index {r}) differs");
        }
    });
    drop(host);
    let t = g.swap_dims(&out, 0, 1).unwrap();
    assert_eq!(t.shape(), &[f, e]);
    let th = g.download(&t).unwrap();
    th.par_chunks_exact(e).enumerate().for_each(|(j, col)| {
        for (i, v) in col.iter().enumerate() {
            let r = idx[i] as usize;
            assert_eq!(
                v.to_bits(),
                src[r * f + j].to_bits(),
                "transposed ({j}, {i})"
            );
        }
    });
    drop(th);
    drop(t);
    let mut d = g.zeros::<bf16>(&[rows, f]).unwrap();
    g.index_add(&mut d, &idx, &out).unwrap();
    let got = g.download(&d).unwrap();
    let mut count = vec![0usize; rows];
    for &r in &idx {
        count[r as usize] += 1;
    }
    for r in 0..rows {
        for j in 0..f {
            let v = src[r * f + j].to_f32();
            let want = bf16::from_f32(canonical_sum(count[r], |_| v).map_or(0.0, |t| 0.0 + t));
            assert_eq!(got[r * f + j].to_bits(), want.to_bits(), "row {r} col {j}");
        }
    }
}

/// `(a, a's shape)` as `op(a)` reads it: `a: [r, c]` row-major, or its
/// transpose `[c, r]` when `trans`.
fn operand<T: Element>(a: &[T], r: usize, c: usize, trans: bool) -> (Vec<T>, [usize; 2]) {
    if trans {
        (rtx_backend::ops::transpose2(a, r, c), [c, r])
    } else {
        (a.to_vec(), [r, c])
    }
}

/// The dense and fused ops of the model on half storage, computed by the
/// device's native half kernels (each stored element widened once, the f32
/// kernel's arithmetic, each output rounded once), against
/// `CpuBackend::reference()`'s half route (the f32 op on the widened inputs,
/// rounded once): every matmul tile and both matmul_dot forms, every
/// transpose, products of one chunk (rounded by the tile) and of many (f32
/// chunk sums, then the column sums climbed in one launch or level by
/// level); column sums of one to three levels over ragged 32-column tiles;
/// per-head dots read as 16-byte vectors, element by element and past one
/// canonical block; both two-gather ops, with and without vectors.
fn dense_case<T: FromF32>(g: &CudaBackend, c: &CpuBackend) {
    use rtx_backend_cuda::{ColSums, MatmulTiles};
    let ty = T::DTYPE.name();
    let forms = [
        (ColSums::Climb, MatmulTiles::ByShape),
        (ColSums::PerLevel, MatmulTiles::ByShape),
        (ColSums::Climb, MatmulTiles::Force64),
    ];
    for (m, k, n) in [
        (37, 300, 9),
        (64, 70_000, 33),
        (5, 256, 1),
        (9, 13, 3),
        (70_001, 20, 65),
        (17, 300, 7_000),
        (20, 300, 24),
        (70_000, 32, 4),
        (64, 70_000, 4),
        (33, 600, 8),
        (32, 1_000, 64),
    ] {
        let (a, b): (Vec<T>, Vec<T>) = (values(31, m * k), values(32, k * n));
        for (ta, tb) in [(false, false), (true, false), (false, true), (true, true)] {
            let (aa, ash) = operand(&a, m, k, ta);
            let (bb, bsh) = operand(&b, k, n, tb);
            let want = c
                .download(
                    &c.matmul(
                        &c.upload(&aa, &ash).unwrap(),
                        ta,
                        &c.upload(&bb, &bsh).unwrap(),
                        tb,
                    )
                    .unwrap(),
                )
                .unwrap();
            let (ga, gb) = (g.upload(&aa, &ash).unwrap(), g.upload(&bb, &bsh).unwrap());
            for (cols, tiles) in forms {
                g.set_col_sums(cols);
                g.set_matmul_tiles(tiles);
                let got = g.download(&g.matmul(&ga, ta, &gb, tb).unwrap()).unwrap();
                let case = format!("{ty} matmul {m}x{k}x{n} ({ta}, {tb}) {cols:?} {tiles:?}");
                assert_bits(&case, &got, &want);
            }
        }
    }
    g.set_matmul_tiles(MatmulTiles::ByShape);
    for (n, f) in [
        (1, 5),
        (256, 3),
        (257, 64),
        (80_000, 33),
        (70_000, 1),
        (131_077, 18),
    ] {
        let x: Vec<T> = values(33, n * f);
        let want = c
            .download(&c.sum_rows(&c.upload(&x, &[n, f]).unwrap()).unwrap())
            .unwrap();
        let gx = g.upload(&x, &[n, f]).unwrap();
        for cols in [ColSums::Climb, ColSums::PerLevel] {
            g.set_col_sums(cols);
            let got = g.download(&g.sum_rows(&gx).unwrap()).unwrap();
            assert_bits(&format!("{ty} sum_rows {n}x{f} {cols:?}"), &got, &want);
        }
        if f % 2 == 0 && f > 0 {
            // head_scale_sum_rows over two heads, a per row and broadcast
            let s: Vec<T> = values(34, n * 2);
            for a_rows in [n, 1] {
                let a: Vec<T> = values(35, a_rows * f);
                let want = c
                    .download(
                        &c.head_scale_sum_rows(
                            &c.upload(&a, &[a_rows, f]).unwrap(),
                            &c.upload(&s, &[n, 2]).unwrap(),
                        )
                        .unwrap(),
                    )
                    .unwrap();
                let (ga, gs) = (
                    g.upload(&a, &[a_rows, f]).unwrap(),
                    g.upload(&s, &[n, 2]).unwrap(),
                );
                for cols in [ColSums::Climb, ColSums::PerLevel] {
                    g.set_col_sums(cols);
                    let got = g
                        .download(&g.head_scale_sum_rows(&ga, &gs).unwrap())
                        .unwrap();
                    let case = format!("{ty} head_scale_sum_rows {n}x{f} a rows {a_rows} {cols:?}");
                    assert_bits(&case, &got, &want);
                }
            }
        }
    }
    g.set_col_sums(ColSums::Climb);
    for (n, heads, ch) in [(1000, 4, 16), (1000, 3, 12), (10, 2, 300), (3, 1, 70_000)] {
        let f = heads * ch;
        let a: Vec<T> = values(36, n * f);
        for b_rows in [1, n] {
            let b: Vec<T> = values(37, b_rows * f);
            let want = c
                .download(
                    &c.head_dot(
                        &c.upload(&a, &[n, f]).unwrap(),
                        &c.upload(&b, &[b_rows, f]).unwrap(),
                        heads,
                    )
                    .unwrap(),
                )
                .unwrap();
            let got = g
                .download(
                    &g.head_dot(
                        &g.upload(&a, &[n, f]).unwrap(),
                        &g.upload(&b, &[b_rows, f]).unwrap(),
                        heads,
                    )
                    .unwrap(),
                )
                .unwrap();
            let case = format!("{ty} head_dot {n}x{heads}x{ch} b rows {b_rows}");
            assert_bits(&case, &got, &want);
        }
    }
    let (na, nb, e) = (700, 900, 5000);
    let (ai, bi) = (indices(38, e, na, true), indices(39, e, nb, false));
    for (heads, ch) in [(4, 16), (3, 5), (1, 300), (8, 8)] {
        let f = heads * ch;
        let (a, b): (Vec<T>, Vec<T>) = (values(40, na * f), values(41, nb * f));
        let (ca, cb) = (
            c.upload(&a, &[na, f]).unwrap(),
            c.upload(&b, &[nb, f]).unwrap(),
        );
        let (ga, gb) = (
            g.upload(&a, &[na, f]).unwrap(),
            g.upload(&b, &[nb, f]).unwrap(),
        );
        let want = c
            .download(&c.gather_head_dot(&ca, &ai, &cb, &bi, heads).unwrap())
            .unwrap();
        let got = g
            .download(&g.gather_head_dot(&ga, &ai, &gb, &bi, heads).unwrap())
            .unwrap();
        assert_bits(&format!("{ty} gather_head_dot {heads}x{ch}"), &got, &want);
        // elementwise: the specials too (NaN payloads are the device's own)
        let (a, b): (Vec<T>, Vec<T>) = (mixed(42, na * f, true), mixed(43, nb * f, true));
        let (ca, cb) = (
            c.upload(&a, &[na, f]).unwrap(),
            c.upload(&b, &[nb, f]).unwrap(),
        );
        let (ga, gb) = (
            g.upload(&a, &[na, f]).unwrap(),
            g.upload(&b, &[nb, f]).unwrap(),
        );
        let want = c
            .download(&c.gather_add(&ca, &ai, &cb, &bi).unwrap())
            .unwrap();
        let got = g
            .download(&g.gather_add(&ga, &ai, &gb, &bi).unwrap())
            .unwrap();
        assert_same(&format!("{ty} gather_add f = {f}"), &got, &want);
    }
}

/// The ops of [`dense_case`] on inputs with NaN (payloads included),
/// infinities, -0.0 and subnormals: bit for bit the device's own f32 op on
/// the widened inputs, rounded once (the NaN a product or sum makes is the
/// device's, so every bit is compared; a one-row column sum passes its
/// element's payload on).
fn special_case<T: FromF32>(g: &CudaBackend) {
    type G = CudaBackend;
    let ty = T::DTYPE.name();
    let up = |v: &[T], shape: &[usize]| g.upload(v, shape).unwrap();
    let w = |t: &BTensor<G, T>| g.convert::<T, f32>(t).unwrap();
    let r = |t: BTensor<G, f32>| g.download(&g.convert::<f32, T>(&t).unwrap()).unwrap();
    for (m, k, n) in [
        (37, 300, 9),
        (5, 256, 1),
        (33, 600, 8),
        (20, 300, 24),
        (70, 16, 70),
    ] {
        let (a, b) = (
            up(&mixed(51, m * k, true), &[m, k]),
            up(&mixed(52, k * n, true), &[k, n]),
        );
        let got = g
            .download(&g.matmul(&a, false, &b, false).unwrap())
            .unwrap();
        let want = r(g.matmul(&w(&a), false, &w(&b), false).unwrap());
        assert_bits(&format!("{ty} matmul {m}x{k}x{n} specials"), &got, &want);
    }
    for (n, f) in [(1, 40), (257, 40), (300, 40)] {
        let x = up(&mixed(53, n * f, true), &[n, f]);
        let got = g.download(&g.sum_rows(&x).unwrap()).unwrap();
        let want = r(g.sum_rows(&w(&x)).unwrap());
        assert_bits(&format!("{ty} sum_rows {n}x{f} specials"), &got, &want);
        let s = up(&mixed(54, n * 2, true), &[n, 2]);
        let got = g.download(&g.head_scale_sum_rows(&x, &s).unwrap()).unwrap();
        let want = r(g.head_scale_sum_rows(&w(&x), &w(&s)).unwrap());
        assert_bits(
            &format!("{ty} head_scale_sum_rows {n}x{f} specials"),
            &got,
            &want,
        );
    }
    for (n, heads, ch) in [(200, 4, 16), (20, 2, 300), (200, 3, 5)] {
        let f = heads * ch;
        let (a, b) = (
            up(&mixed(55, n * f, true), &[n, f]),
            up(&mixed(56, n * f, true), &[n, f]),
        );
        let got = g.download(&g.head_dot(&a, &b, heads).unwrap()).unwrap();
        let want = r(g.head_dot(&w(&a), &w(&b), heads).unwrap());
        assert_bits(
            &format!("{ty} head_dot {n}x{heads}x{ch} specials"),
            &got,
            &want,
        );
        let (ai, bi) = (indices(57, 3 * n, n, true), indices(58, 3 * n, n, false));
        let got = g
            .download(&g.gather_head_dot(&a, &ai, &b, &bi, heads).unwrap())
            .unwrap();
        let want = r(g.gather_head_dot(&w(&a), &ai, &w(&b), &bi, heads).unwrap());
        assert_bits(
            &format!("{ty} gather_head_dot {heads}x{ch} specials"),
            &got,
            &want,
        );
        let got = g
            .download(&g.gather_add(&a, &ai, &b, &bi).unwrap())
            .unwrap();
        let want = r(g.gather_add(&w(&a), &ai, &w(&b), &bi).unwrap());
        assert_bits(&format!("{ty} gather_add f = {f} specials"), &got, &want);
    }
}

#[test]
fn half_dense_and_fused_ops_are_the_f32_ops_rounded_once() {
    // a backend of its own: the test changes its kernel choices
    let g = CudaBackend::new(0).unwrap_or_else(|e| panic!("GPU test needs a CUDA device: {e}"));
    let c = CpuBackend::reference();
    dense_case::<bf16>(&g, &c);
    dense_case::<f16>(&g, &c);
    g.set_col_sums(rtx_backend_cuda::ColSums::Climb);
    special_case::<bf16>(&g);
    special_case::<f16>(&g);
}
