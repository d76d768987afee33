//! GPU tests of the CUDA backend (feature `cuda`; run on a machine with a device).
//!
//! Without a device every test here FAILS with a message saying so: they
//! never pass silently. Without the feature the file is empty, so a plain
//! `cargo test --workspace` stays green on CPU-only CI.
#![cfg(feature = "cuda")]

use rtx_backend::Indices;
use std::sync::OnceLock;

use rtx_backend::order::canonical_sum;
use rtx_backend::prelude::*;
use rtx_backend::workload::{indices, splitmix64, values};
use rtx_backend::{BTensor, Error as BError, IndexPlan, reference};
use rtx_backend_cpu::CpuBackend;
use rtx_backend_cuda::{CudaBackend, Error, ScatterForm, TransposeTile};

/// A backend on device 0, or a panic naming why there is none.
fn backend() -> CudaBackend {
    CudaBackend::new(0).unwrap_or_else(|e| panic!("GPU test needs a CUDA device: {e}"))
}

/// One backend shared by a test binary's threads.
fn shared() -> &'static CudaBackend {
    static B: OnceLock<CudaBackend> = OnceLock::new();
    B.get_or_init(backend)
}

fn bits32(v: &[f32]) -> Vec<u32> {
    v.iter().map(|x| x.to_bits()).collect()
}

fn assert_same(case: &str, got: &[f32], want: &[f32]) {
    assert_eq!(got.len(), want.len(), "{case}: length");
    if let Some(i) = (0..got.len()).find(|&i| got[i].to_bits() != want[i].to_bits()) {
        panic!("{case}: element {i}: got {:?}, want {:?}", got[i], want[i]);
    }
}

mod conformance {
    rtx_backend::conformance_tests!(super::backend());
}

/// Gather and scatter of one anchor-shaped workload against the CPU backend, bit for bit.
fn anchor_case(rows: usize, e: usize, f: usize, hub: bool) {
    let g = shared();
    let cpu = CpuBackend::new();
    let idx = indices(1, e, rows, hub);
    let src: Vec<f32> = values(2, rows * f);
    let gd = g.download(
        &g.index_select(&g.upload(&src, &[rows, f]).unwrap(), &idx)
            .unwrap(),
    );
    let gc = cpu.download(
        &cpu.index_select(&cpu.upload(&src, &[rows, f]).unwrap(), &idx)
            .unwrap(),
    );
    assert_same(
        &format!("gather {rows}x{e}x{f} hub={hub}"),
        &gd.unwrap(),
        &gc.unwrap(),
    );
    let msg: Vec<f32> = values(3, e * f);
    let mut d = g.zeros::<f32>(&[rows, f]).unwrap();
    g.index_add(&mut d, &idx, &g.upload(&msg, &[e, f]).unwrap())
        .unwrap();
    let mut c = cpu.zeros::<f32>(&[rows, f]).unwrap();
    cpu.index_add(&mut c, &idx, &cpu.upload(&msg, &[e, f]).unwrap())
        .unwrap();
    assert_same(
        &format!("scatter {rows}x{e}x{f} hub={hub}"),
        &g.download(&d).unwrap(),
        &cpu.download(&c).unwrap(),
    );
}

#[test]
fn anchors_bit_identical_to_cpu_small() {
    // the anchor workloads at 1/16 scale (harris at full size)
    anchor_case(15_000, 42_955, 64, true);
    anchor_case(1 << 16, 1 << 20, 64, true);
    anchor_case(1 << 16, 1 << 20, 64, false);
    anchor_case(1 << 16, 1 << 20, 16, true);
    anchor_case(6_250, 131_072, 256, true);
    // odd and tiny widths
    anchor_case(1000, 77_777, 1, true);
    anchor_case(1000, 77_777, 3, true);
    anchor_case(1000, 77_777, 6, false);
}

#[test]
fn anchor_1m_16m_hub_bit_identical_to_cpu() {
    anchor_case(1 << 20, 16 << 20, 64, true);
}

#[test]
fn f64_scatter_bit_identical_to_cpu() {
    let g = shared();
    let cpu = CpuBackend::new();
    for (rows, e, f) in [(3000, 200_000, 2), (3000, 200_000, 5), (10, 300_000, 4)] {
        let idx = indices(7, e, rows, true);
        let msg: Vec<f64> = values(3, e * f);
        let dst0: Vec<f64> = values(4, rows * f);
        let mut d = g.upload(&dst0, &[rows, f]).unwrap();
        g.index_add(&mut d, &idx, &g.upload(&msg, &[e, f]).unwrap())
            .unwrap();
        let mut c = cpu.upload(&dst0, &[rows, f]).unwrap();
        cpu.index_add(&mut c, &idx, &cpu.upload(&msg, &[e, f]).unwrap())
            .unwrap();
        let (a, b) = (g.download(&d).unwrap(), cpu.download(&c).unwrap());
        assert!(
            a.iter().zip(&b).all(|(x, y)| x.to_bits() == y.to_bits()),
            "f64 scatter {rows}x{e}x{f}"
        );
    }
}

#[test]
fn extreme_hub_every_index_on_one_row() {
    let g = shared();
    let (rows, e, f) = (1000, 4 << 20, 16);
    let idx = vec![417u32; e];
    let msg: Vec<f32> = values(3, e * f);
    let mut d = g.zeros::<f32>(&[rows, f]).unwrap();
    g.index_add(&mut d, &idx, &g.upload(&msg, &[e, f]).unwrap())
        .unwrap();
    let got = g.download(&d).unwrap();
    let plan = IndexPlan::new(&idx, rows).unwrap();
    let mut want = vec![0.0f32; rows * f];
    reference::index_add(&mut want, f, &plan, &msg).unwrap();
    assert_same("extreme hub", &got, &want);
}

#[test]
fn past_two_to_the_31_elements() {
    // gather into [2^31/64 + 1, 64] f32 (2^31 + 64 elements, 8.6 GB), then
    // scatter it back: 64-bit sizes and index math end to end.
    let g = shared();
    let (rows, f) = (1000usize, 64usize);
    let e = (1usize << 31) / f + 1;
    let src: Vec<f32> = values(2, rows * f);
    let idx: Vec<u32> = (0..e as u64)
        .map(|i| (splitmix64(5, i) % rows as u64) as u32)
        .collect();
    let out = g
        .index_select(&g.upload(&src, &[rows, f]).unwrap(), &idx)
        .unwrap();
    assert_eq!(out.numel(), (1usize << 31) + 64);
    let host = g.download(&out).unwrap();
    for (i, &r) in idx.iter().enumerate() {
        let r = r as usize;
        if host[i * f..(i + 1) * f]
            .iter()
            .zip(&src[r * f..(r + 1) * f])
            .any(|(a, b)| a.to_bits() != b.to_bits())
        {
            panic!("gather row {i} (index {r}) differs");
        }
    }
    drop(host);
    let mut d = g.zeros::<f32>(&[rows, f]).unwrap();
    g.index_add(&mut d, &idx, &out).unwrap();
    let got = g.download(&d).unwrap();
    let mut count = vec![0usize; rows];
    for &r in &idx {
        count[r as usize] += 1;
    }
    // every contribution to row r is src row r: the canonical sum of k copies
    for r in 0..rows {
        for j in 0..f {
            let v = src[r * f + j];
            let want = canonical_sum(count[r], |_| v).map_or(0.0, |t| 0.0 + t);
            assert_eq!(got[r * f + j].to_bits(), want.to_bits(), "row {r} col {j}");
        }
    }
}

fn check_swap(shape: &[usize], a: usize, b: usize) {
    let g = shared();
    let n: usize = shape.iter().product();
    let x: Vec<f32> = values(9, n);
    let t = g.upload(&x, shape).unwrap();
    let s = g.swap_dims(&t, a, b).unwrap();
    let mut perm: Vec<usize> = (0..shape.len()).collect();
    perm.swap(a, b);
    let want = rtx_tensor::permute_host(&x, shape, &perm).unwrap();
    assert!(
        s.layout().is_contiguous(),
        "{shape:?}: output not contiguous"
    );
    let out_shape: Vec<usize> = perm.iter().map(|&p| shape[p]).collect();
    assert_eq!(s.shape(), &out_shape[..]);
    assert_eq!(
        s.layout().strides(),
        &rtx_tensor::contiguous_strides(&out_shape).unwrap()[..],
        "{shape:?}: strides must be the contiguous strides of the output shape"
    );
    assert_same(
        &format!("swap {shape:?} ({a},{b})"),
        &g.download(&s).unwrap(),
        &want,
    );
}

#[test]
fn transpose_rows_past_the_grid_y_limit() {
    // field bug 1: rows on grid.y failed past 65,535 * 32 rows
    check_swap(&[65_536 * 32 + 33, 3], 0, 1);
    check_swap(&[4_211_136, 2], 0, 1);
    check_swap(&[4_211_136, 32], 0, 1);
}

#[test]
fn transpose_cols_past_the_grid_y_limit() {
    check_swap(&[3, 65_536 * 32 + 33], 0, 1);
    check_swap(&[32, 4_211_136], 0, 1);
}

#[test]
fn vector_4211136_relabels_without_a_kernel() {
    let g = shared();
    let x: Vec<f32> = values(4, 4_211_136);
    for shape in [[4_211_136usize, 1], [1, 4_211_136]] {
        let t = g.upload(&x, &shape).unwrap();
        let s = g.swap_dims(&t, 0, 1).unwrap();
        assert!(s.shares_storage_with(&t), "{shape:?} must share the buffer");
        assert_eq!(s.shape(), &[shape[1], shape[0]]);
        assert!(s.layout().is_contiguous());
        assert_same("relabel", &g.download(&s).unwrap(), &x);
    }
}

#[test]
fn permute_is_not_a_copy_and_decodes_the_output_shape() {
    // field bug 2: a permute that decoded with swapped input strides was a plain copy
    let g = shared();
    let a: Vec<f32> = (0..24).map(|x| x as f32).collect();
    let t = g.upload(&a, &[2, 3, 4]).unwrap();
    let s = g.permute(&t, &[2, 1, 0]).unwrap();
    let got = g.download(&s).unwrap();
    assert_ne!(got, a, "permute must move elements");
    assert_eq!(got[6], 1.0, "b[1][0][0]");
    // field bug 3: outputs carry the contiguous strides of their own shape
    assert_eq!(s.layout().strides(), &[6, 2, 1]);
    for shape in [[7usize, 1, 5, 3], [2, 9, 1, 11]] {
        for (a, b) in [(0, 2), (1, 3), (0, 3), (2, 3)] {
            check_swap(&shape, a, b);
        }
    }
}

#[test]
fn four_d_swap02_with_contiguous_inner_runs() {
    check_swap(&[64, 128, 256, 32], 0, 2);
    check_swap(&[5, 7, 9, 3], 0, 2);
    check_swap(&[5, 7, 9, 6], 0, 2);
    // f64 runs and batched transposes of wide elements
    let g = shared();
    for (shape, a, b) in [
        (vec![33usize, 17, 2], 0usize, 1usize),
        (vec![3, 33, 17, 4], 1, 2),
        (vec![45, 19, 5], 0, 1),
    ] {
        let n: usize = shape.iter().product();
        let x: Vec<f64> = values(9, n);
        let s = g.swap_dims(&g.upload(&x, &shape).unwrap(), a, b).unwrap();
        let mut perm: Vec<usize> = (0..shape.len()).collect();
        perm.swap(a, b);
        let want = rtx_tensor::permute_host(&x, &shape, &perm).unwrap();
        let got = g.download(&s).unwrap();
        assert!(
            got.iter()
                .zip(&want)
                .all(|(p, q)| p.to_bits() == q.to_bits()),
            "f64 swap {shape:?} ({a},{b})"
        );
    }
}

/// `permute(shape, perm)` of f32 and f64 values against `permute_host`, bit
/// for bit, with the output's shape and contiguous strides.
fn check_permute(g: &CudaBackend, shape: &[usize], perm: &[usize]) {
    fn one<T: rtx_backend::Element + PartialEq + std::fmt::Debug>(
        g: &CudaBackend,
        x: &[T],
        shape: &[usize],
        perm: &[usize],
    ) {
        let s = g.permute(&g.upload(x, shape).unwrap(), perm).unwrap();
        let out_shape: Vec<usize> = perm.iter().map(|&p| shape[p]).collect();
        assert_eq!(s.shape(), &out_shape[..], "{shape:?} {perm:?}");
        assert!(s.layout().is_contiguous(), "{shape:?} {perm:?}");
        let got = g.download(&s).unwrap();
        let want = rtx_tensor::permute_host(x, shape, perm).unwrap();
        if let Some(i) = (0..got.len()).find(|&i| got[i].to_bits_u64() != want[i].to_bits_u64()) {
            panic!(
                "permute {shape:?} {perm:?} ({}): element {i}: got {:?}, want {:?}",
                std::any::type_name::<T>(),
                got[i],
                want[i]
            );
        }
    }
    let n: usize = shape.iter().product();
    one::<f32>(g, &values(11, n), shape, perm);
    one::<f64>(g, &values(12, n), shape, perm);
}

/// A permutation of `0..n` from `seed` (Fisher-Yates on splitmix64).
fn shuffled(n: usize, seed: u64) -> Vec<usize> {
    let mut p: Vec<usize> = (0..n).collect();
    for i in (1..n).rev() {
        let j = (splitmix64(seed, i as u64) % (i as u64 + 1)) as usize;
        p.swap(i, j);
    }
    p
}

/// The shapes of the permute benchmark suite (small planes in large
/// batches, long matrices of few rows or columns), each class's kernel.
#[test]
fn the_permute_suite_shapes_match_the_host() {
    let g = shared();
    for shape in [
        [2_000_000usize, 4, 16],
        [500_000, 16, 4],
        [70_000, 3, 5],
        [8, 4_194_304, 2],
        [7, 2_097_187, 2],
    ] {
        check_permute(g, &shape, &[0, 2, 1]);
    }
}

#[test]
fn span_kernels_at_their_edges() {
    let g = shared();
    for shape in [
        // planes: one plane, one plane filling the span, odd planes (unaligned
        // spans), a last span of fewer planes, f64 planes past the f64 span
        [1usize, 4, 16],
        [1, 64, 64],
        [3, 64, 64],
        [1001, 3, 5],
        [333, 7, 9],
        [5, 45, 45],
        [2, 1, 3],
        // rows (<= 64 columns): odd rows, unaligned planes, partial last tile
        [5, 1001, 3],
        [3, 4099, 2],
        [2, 2049, 64],
        [1, 100_003, 7],
        [4, 70, 64],
        // cols (<= 64 rows): the same the other way
        [5, 3, 1001],
        [3, 2, 4099],
        [2, 64, 2049],
        [1, 7, 100_003],
        [4, 64, 70],
        // tiled: planes past the span, odd sizes
        [2, 65, 65],
        [3, 129, 67],
        [1, 1000, 777],
    ] {
        check_permute(g, &shape, &[0, 2, 1]);
    }
    for shape in [[4099usize, 2], [2, 4099], [65, 65], [3, 5], [100_003, 64]] {
        check_permute(g, &shape, &[1, 0]);
    }
}

#[test]
fn nd_permutes_whose_last_dim_moves() {
    let g = shared();
    for (shape, perm) in [
        (vec![6usize, 70, 5, 130], vec![0usize, 3, 2, 1]),
        (vec![6, 70, 5, 130], vec![3, 2, 1, 0]),
        (vec![6, 70, 5, 130], vec![2, 0, 3, 1]),
        (vec![3, 5, 7], vec![2, 1, 0]),
        (vec![2, 3, 2, 3, 2, 3, 2, 3], vec![7, 5, 3, 1, 6, 4, 2, 0]),
        (vec![33, 2, 65, 3], vec![1, 3, 0, 2]),
        (vec![64, 128, 16, 32], vec![0, 3, 2, 1]),
    ] {
        check_permute(g, &shape, &perm);
    }
    // the classic 32x32 tile on the same shapes
    let g = backend();
    g.set_transpose_tile(TransposeTile::Force32);
    check_permute(&g, &[6, 70, 5, 130], &[2, 0, 3, 1]);
    check_permute(&g, &[2_000, 4, 16], &[0, 2, 1]);
    check_permute(&g, &[7, 20_011, 2], &[0, 2, 1]);
}

#[test]
fn bulk_copies_and_register_tiles_match_the_host() {
    // On sm_90+ the 64x64 f32 tiles of the first six take Hopper's bulk
    // tensor copies (rows and batch strides of multiples of 16 bytes, at most
    // 3 batch dims; ragged edges clipped by the maps); the last two keep the
    // register tile (4 batch dims; output rows of 260 bytes), as does every
    // f64 case and the NoBulk knob.
    let cases: [(&[usize], &[usize]); 8] = [
        (&[1000, 776], &[1, 0]),
        (&[132, 260], &[1, 0]),
        (&[3, 100, 132], &[0, 2, 1]),
        (&[6, 68, 5, 132], &[0, 3, 2, 1]),
        (&[4, 8, 12, 16], &[0, 3, 2, 1]),
        (&[2, 3, 4, 52, 56], &[1, 0, 2, 4, 3]),
        (&[2, 2, 2, 2, 68, 132], &[1, 0, 3, 2, 5, 4]),
        (&[65, 132], &[1, 0]),
    ];
    for tile in [TransposeTile::ByShape, TransposeTile::NoBulk] {
        let g = backend();
        g.set_transpose_tile(tile);
        for (shape, perm) in cases {
            check_permute(&g, shape, perm);
        }
        // the same launch again on the same buffers' sizes (cached wave)
        check_permute(&g, &[1000, 776], &[1, 0]);
    }
}

#[test]
fn every_transpose_tile_matches() {
    // by shape: 64x64, 128x32 or 32x128; Force32: 32x32
    let g = backend();
    for force in [TransposeTile::ByShape, TransposeTile::Force32] {
        g.set_transpose_tile(force);
        for shape in [[1000usize, 777], [5000, 7], [7, 5000], [129, 33], [33, 129]] {
            let x: Vec<f32> = values(9, shape[0] * shape[1]);
            let s = g.swap_dims(&g.upload(&x, &shape).unwrap(), 0, 1).unwrap();
            let want = rtx_tensor::permute_host(&x, &shape, &[1, 0]).unwrap();
            assert_same(
                &format!("tile {force:?} {shape:?}"),
                &g.download(&s).unwrap(),
                &want,
            );
            let xd: Vec<f64> = values(9, shape[0] * shape[1]);
            let s = g.swap_dims(&g.upload(&xd, &shape).unwrap(), 0, 1).unwrap();
            let want = rtx_tensor::permute_host(&xd, &shape, &[1, 0]).unwrap();
            assert_eq!(
                g.download(&s).unwrap(),
                want,
                "f64 tile {force:?} {shape:?}"
            );
        }
    }
}

/// Every form of the scatter into a destination that is not zero, against
/// the CPU backend, bit for bit: hub rows of several levels, and rows
/// without hubs (which `Auto` never windows), in f32 and f64.
fn scatter_forms_case<T: rtx_backend::Element>(g: &CudaBackend) {
    let cpu = CpuBackend::new();
    for (rows, e, f, hub) in [
        (2000, 300_000, 64, true),
        (50, 100_000, 5, true),
        (3000, 40_000, 2, false),
        (15_000, 42_955, 16, true),
        // 32 vectors a row (the most the windowed form takes), then 33
        (400, 30_000, 128, true),
        (400, 30_000, 132, true),
    ] {
        let idx = indices(11, e, rows, hub);
        let msg: Vec<T> = values(12, e * f);
        let dst: Vec<T> = values(13, rows * f);
        let mut c = cpu.upload(&dst, &[rows, f]).unwrap();
        cpu.index_add(&mut c, &idx, &cpu.upload(&msg, &[e, f]).unwrap())
            .unwrap();
        let want = cpu.download(&c).unwrap();
        let m = g.upload(&msg, &[e, f]).unwrap();
        for form in [
            ScatterForm::Batched,
            ScatterForm::Pipelined,
            ScatterForm::Windowed,
            ScatterForm::Auto,
        ] {
            g.set_scatter_form(form);
            let mut d = g.upload(&dst, &[rows, f]).unwrap();
            g.index_add(&mut d, &idx, &m).unwrap();
            let got = g.download(&d).unwrap();
            let case = format!("{:?} form {form:?} {rows}x{e}x{f}", T::DTYPE);
            if let Some(i) = (0..got.len()).find(|&i| got[i].to_bits_u64() != want[i].to_bits_u64())
            {
                panic!("{case}: element {i}: got {:?}, want {:?}", got[i], want[i]);
            }
        }
    }
    g.set_scatter_form(ScatterForm::Auto);
}

#[test]
fn every_scatter_form_is_bit_identical() {
    let g = backend();
    scatter_forms_case::<f32>(&g);
    scatter_forms_case::<f64>(&g);
}

#[test]
fn fused_sums_follow_the_scatter_form_with_the_same_bits() {
    // the fused segment sums run the scatter's level chain: its form setting
    // applies to their levels past 0, with the same bits in every form
    let g = backend();
    for (rows, e, f, heads, hub) in [
        (50, 100_000, 8, 2, true),
        (3000, 40_000, 4, 1, false),
        (20, 300_000, 2, 2, true),
    ] {
        let idx = indices(13, e, rows, hub);
        let plan = IndexPlan::new(&idx, rows).unwrap();
        let gather = indices(14, e, rows, false);
        let x = g.upload(&values::<f32>(15, rows * f), &[rows, f]).unwrap();
        let w = g
            .upload(&values::<f32>(16, e * heads), &[e, heads])
            .unwrap();
        let s = g.upload(&values::<f32>(17, e * f), &[e, f]).unwrap();
        let mut first: Option<(Vec<f32>, Vec<f32>, Vec<f32>)> = None;
        for form in [
            ScatterForm::Auto,
            ScatterForm::Batched,
            ScatterForm::Pipelined,
        ] {
            g.set_scatter_form(form);
            let gss = g.download(&g.gather_scale_scatter(&x, &gather, &w, &plan).unwrap());
            let smx = g.download(&g.segment_softmax(&s, &plan).unwrap());
            let smb = g.download(&g.segment_softmax_backward(&s, &s, &plan).unwrap());
            let got = (gss.unwrap(), smx.unwrap(), smb.unwrap());
            match &first {
                None => first = Some(got),
                Some(want) => {
                    let case = format!("form {form:?} {rows}x{e}x{f}");
                    assert_same(&format!("gather_scale_scatter {case}"), &got.0, &want.0);
                    assert_same(&format!("segment_softmax {case}"), &got.1, &want.1);
                    assert_same(&format!("segment_softmax_backward {case}"), &got.2, &want.2);
                }
            }
        }
        g.set_scatter_form(ScatterForm::Auto);
    }
}

mod properties {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(96))]
        #[test]
        fn random_swaps_match_the_host(
            shape in proptest::collection::vec(1usize..9, 1..7),
            a in 0usize..6,
            b in 0usize..6,
            seed in 0u64..1000,
        ) {
            let g = shared();
            let (a, b) = (a % shape.len(), b % shape.len());
            let n: usize = shape.iter().product();
            let x: Vec<f32> = values(seed, n);
            let s = g.swap_dims(&g.upload(&x, &shape).unwrap(), a, b).unwrap();
            let mut perm: Vec<usize> = (0..shape.len()).collect();
            perm.swap(a, b);
            let want = rtx_tensor::permute_host(&x, &shape, &perm).unwrap();
            prop_assert!(s.layout().is_contiguous());
            prop_assert_eq!(bits32(&g.download(&s).unwrap()), bits32(&want));
        }

        #[test]
        fn random_permutes_match_the_host(
            shape in prop_oneof![
                proptest::collection::vec(1usize..6, 1..9),
                proptest::collection::vec(1usize..80, 2..5),
                proptest::collection::vec(1usize..3000, 1..3),
            ],
            seed in 0u64..100_000,
        ) {
            let n: usize = shape.iter().product();
            prop_assume!(n <= 1 << 22);
            let perm = shuffled(shape.len(), seed);
            check_permute(shared(), &shape, &perm);
        }

        #[test]
        fn random_scatters_match_the_cpu(
            rows in 1usize..400,
            e in 0usize..3000,
            f in 1usize..20,
            hub in any::<bool>(),
            seed in 0u64..1000,
        ) {
            let g = shared();
            let cpu = CpuBackend::new();
            let idx = indices(seed, e, rows, hub);
            let msg: Vec<f32> = values(seed + 1, e * f);
            let dst0: Vec<f32> = values(seed + 2, rows * f);
            let mut d = g.upload(&dst0, &[rows, f]).unwrap();
            g.index_add(&mut d, &idx, &g.upload(&msg, &[e, f]).unwrap()).unwrap();
            let mut c = cpu.upload(&dst0, &[rows, f]).unwrap();
            cpu.index_add(&mut c, &idx, &cpu.upload(&msg, &[e, f]).unwrap()).unwrap();
            prop_assert_eq!(bits32(&g.download(&d).unwrap()), bits32(&cpu.download(&c).unwrap()));
        }
    }
}

#[test]
fn many_threads_share_one_backend() {
    let g = shared();
    std::thread::scope(|s| {
        for t in 0..8u64 {
            s.spawn(move || {
                let cpu = CpuBackend::new();
                let (rows, e, f) = (500, 60_000, 12);
                let idx = indices(100 + t % 3, e, rows, true); // some lists repeat across threads
                let msg: Vec<f32> = values(200 + t, e * f);
                for round in 0..3 {
                    let mut d = g.zeros::<f32>(&[rows, f]).unwrap();
                    g.index_add(&mut d, &idx, &g.upload(&msg, &[e, f]).unwrap())
                        .unwrap();
                    let mut c = cpu.zeros::<f32>(&[rows, f]).unwrap();
                    cpu.index_add(&mut c, &idx, &cpu.upload(&msg, &[e, f]).unwrap())
                        .unwrap();
                    assert_same(
                        &format!("thread {t} round {round}"),
                        &g.download(&d).unwrap(),
                        &cpu.download(&c).unwrap(),
                    );
                }
            });
        }
    });
}

#[test]
fn same_inputs_same_bits_hub_1m() {
    let g = shared();
    let (rows, e, f) = (1 << 20, 4 << 20, 64);
    let idx = indices(1, e, rows, true);
    let msg = g.upload(&values::<f32>(3, e * f), &[e, f]).unwrap();
    let run = || {
        let mut d = g.zeros::<f32>(&[rows, f]).unwrap();
        g.index_add(&mut d, &idx, &msg).unwrap();
        bits32(&g.download(&d).unwrap())
    };
    let first = run();
    g.clear_index_cache(); // the second run rebuilds and re-uploads the plan
    assert_eq!(run(), first, "two identical scatter-adds differ");
}

#[test]
fn out_of_memory_is_an_error_value() {
    let g = backend();
    let e = g
        .zeros::<f32>(&[1 << 40])
        .expect_err("4 TiB must not fit on the device");
    let BError::Backend { source, .. } = &e else {
        panic!("want a backend error, got {e}")
    };
    let inner = source
        .downcast_ref::<Error>()
        .expect("the CUDA backend's error");
    assert!(matches!(inner, Error::OutOfMemory { .. }), "got {inner}");
    assert!(e.to_string().contains("out of memory"), "{e}");
    // the backend still works
    let t = g.upload(&[1.0f32, 2.0], &[2, 1]).unwrap();
    assert_eq!(g.download(&t).unwrap(), [1.0, 2.0]);
}

#[test]
fn index_handle_matches_the_trait_and_checks_ranges() {
    let g = shared();
    let (rows, e, f) = (300, 20_000, 8);
    let idx = indices(3, e, rows, true);
    let src = g.upload(&values::<f32>(2, rows * f), &[rows, f]).unwrap();
    let h = g.index(&idx).unwrap();
    assert_eq!(h.len(), e);
    assert_eq!(h.max_index(), idx.iter().copied().max());
    let a = g
        .download(&g.index_select(&src, Indices::held(&h)).unwrap())
        .unwrap();
    let b = g.download(&g.index_select(&src, &idx).unwrap()).unwrap();
    assert_same("handle gather", &a, &b);
    let msg = g.upload(&values::<f32>(5, e * f), &[e, f]).unwrap();
    let mut d1 = g.zeros::<f32>(&[rows, f]).unwrap();
    g.index_add(&mut d1, Indices::held(&h), &msg).unwrap();
    let mut d2 = g.zeros::<f32>(&[rows, f]).unwrap();
    g.index_add(&mut d2, &idx, &msg).unwrap();
    assert_same(
        "handle scatter",
        &g.download(&d1).unwrap(),
        &g.download(&d2).unwrap(),
    );
    // a destination with too few rows: the trait's range error, dst untouched
    let small0: Vec<f32> = values(6, 10 * f);
    let mut small = g.upload(&small0, &[10, f]).unwrap();
    let err = g
        .index_add(&mut small, Indices::held(&h), &msg)
        .unwrap_err();
    let first = idx.iter().position(|&i| i >= 10).unwrap();
    assert!(
        matches!(err, BError::IndexOutOfRange { position, bound: 10, .. } if position == first),
        "{err}"
    );
    assert_same("untouched", &g.download(&small).unwrap(), &small0);
    // a handle of another backend is refused
    let other = backend();
    let x = other
        .upload(&values::<f32>(2, rows * f), &[rows, f])
        .unwrap();
    assert!(other.index_select(&x, Indices::held(&h)).is_err());
}

#[test]
fn index_cache_is_bounded_and_keyed_by_the_exact_list() {
    let g = backend();
    let src = g.upload(&values::<f32>(2, 100 * 4), &[100, 4]).unwrap();
    let a = indices(1, 10_000, 100, false);
    let mut b = a.clone();
    b[9_999] = (b[9_999] + 1) % 100;
    g.index_select(&src, &a).unwrap();
    g.index_select(&src, &a).unwrap();
    assert_eq!(g.index_cache_stats().0, 1, "same list, one entry");
    let out_b = g.download(&g.index_select(&src, &b).unwrap()).unwrap();
    assert_eq!(
        g.index_cache_stats().0,
        2,
        "a list differing in one index is another entry"
    );
    let s = g.download(&src).unwrap();
    assert_same(
        "last row",
        &out_b[9_999 * 4..],
        &s[b[9_999] as usize * 4..][..4],
    );
    g.set_index_cache_limit(100_000); // room for one 10k list (40 kB host + 40 kB device)
    g.index_select(&src, &a).unwrap();
    let (n, bytes) = g.index_cache_stats();
    assert!(n <= 1 && bytes <= 100_000, "{n} entries, {bytes} bytes");
    g.set_index_cache_limit(0);
    g.index_select(&src, &a).unwrap();
    assert_eq!(g.index_cache_stats(), (0, 0));
}

#[test]
fn make_unique_copies_on_the_device() {
    let g = shared();
    let x: Vec<f32> = values(2, 64);
    let a = g.upload(&x, &[16, 4]).unwrap();
    let mut b: BTensor<CudaBackend, f32> = a.clone();
    g.index_add(&mut b, &[0], &g.upload(&[1.0f32; 4], &[1, 4]).unwrap())
        .unwrap();
    assert!(!b.shares_storage_with(&a));
    assert_same("shared source untouched", &g.download(&a).unwrap(), &x);
    assert_eq!(g.download(&b).unwrap()[0], x[0] + 1.0);
}

#[test]
fn names_and_kernels() {
    let g = shared();
    assert_eq!(g.name(), "cuda:0");
    assert!(g.arch().starts_with("sm_"), "{}", g.arch());
    assert!(g.driver_version() >= rtx_backend_cuda::REQUIRED_DRIVER_VERSION);
    g.load_kernels().unwrap();
    assert!(
        CudaBackend::new(1000).is_err(),
        "device 1000 must not exist"
    );
}
