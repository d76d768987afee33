//! GPU tests of the model ops and the HetGAT on the CUDA backend (feature
//! `cuda`): the two modes (device index ops, pinned or cached, vs
//! `HostIndexOps<CudaBackend>`) train bit-identically; gradients against
//! central differences in f64 on the device; the dense ops bit-identical to
//! the CPU backend (the canonical order); the fused ops on Harris-sized
//! inputs equal to their compositions.
//!
//! Without a device every test here FAILS with a message saying so.
#![cfg(feature = "cuda")]

use rtx_backend::prelude::*;
use rtx_backend::workload::{indices, values};
use rtx_backend::{BTensor, Binary, Element, HostIndexOps, IndexPlan, Unary, bf16, f16};
use rtx_backend_cpu::CpuBackend;
use rtx_backend_cuda::{ColSums, CudaBackend};
use rtx_gnn::determinism::{mixed_training_bits, training_bits};
use rtx_gnn::gradcheck::check_gradients;
use rtx_gnn::graph::harris_like;
use rtx_gnn::{HetGatConfig, HeteroGraph};

fn backend() -> CudaBackend {
    CudaBackend::new(0).unwrap_or_else(|e| panic!("GPU test needs a CUDA device: {e}"))
}

fn pins(g: &HeteroGraph) -> (Vec<&[u32]>, Vec<&IndexPlan>) {
    let lists = g
        .relations()
        .iter()
        .flat_map(|r| [r.src(), r.dst()])
        .collect();
    let plans = g
        .relations()
        .iter()
        .flat_map(|r| [r.dst_plan(), r.src_plan()])
        .collect();
    (lists, plans)
}

fn two_modes<T: Element>(g: &HeteroGraph, steps: usize) {
    let dev = backend();
    let cached = training_bits::<_, T>(&dev, g, steps).unwrap();
    let (lists, plans) = pins(g);
    let pinned = dev
        .with_static_indices(&lists, &plans, || training_bits::<_, T>(&dev, g, steps))
        .unwrap()
        .unwrap();
    let host = training_bits::<_, T>(&HostIndexOps::new(backend()), g, steps).unwrap();
    assert_eq!(
        cached.0, host.0,
        "loss bits per step: device (cached) vs host index ops"
    );
    assert_eq!(
        pinned.0, host.0,
        "loss bits per step: device (pinned) vs host index ops"
    );
    assert!(
        cached.1 == host.1,
        "final parameters differ: device vs host index ops"
    );
    assert!(
        pinned.1 == host.1,
        "final parameters differ: pinned vs host index ops"
    );
    // and it trains: the loss moves
    assert!(steps < 2 || host.0.windows(2).any(|w| w[0] != w[1]));
}

#[test]
fn two_modes_train_bit_identically_f32() {
    // hub-skewed destinations: node 0 of `a` gets about 300 of the 2000 `aa`
    // edges, so its segments take two levels of chunks
    two_modes::<f32>(&harris_like(300, 150, [2000, 1200, 1100], 5).unwrap(), 5);
}

#[test]
fn two_modes_train_bit_identically_f64() {
    two_modes::<f64>(&harris_like(120, 60, [700, 400, 380], 9).unwrap(), 3);
}

#[test]
fn two_modes_train_bit_identically_on_harris() {
    two_modes::<f32>(&HeteroGraph::harris(1).unwrap(), 3);
}

/// Mixed precision: forward and backward in a half type on the device give
/// the CPU reference's loss and parameter bits, run after run, and the
/// half run really rounds (its losses differ from the f32 run's).
fn mixed_matches_the_cpu<H: Element<Acc = f32>>(g: &HeteroGraph) {
    let dev = backend();
    let cuda = mixed_training_bits::<_, H>(&dev, g, 3).unwrap();
    let cpu = mixed_training_bits::<_, H>(&CpuBackend::reference(), g, 3).unwrap();
    assert_eq!(
        cuda.0,
        cpu.0,
        "{:?}: loss bits per step, cuda vs cpu",
        H::DTYPE
    );
    assert!(
        cuda.1 == cpu.1,
        "{:?}: final parameters, cuda vs cpu",
        H::DTYPE
    );
    let again = mixed_training_bits::<_, H>(&dev, g, 3).unwrap();
    assert_eq!(cuda, again, "{:?}: a second run", H::DTYPE);
    let full = training_bits::<_, f32>(&dev, g, 3).unwrap();
    assert_ne!(cuda.0, full.0, "{:?}: the half run rounds", H::DTYPE);
}

#[test]
fn mixed_precision_training_is_bit_identical_to_the_cpu_backend() {
    let g = harris_like(300, 150, [2000, 1200, 1100], 5).unwrap();
    mixed_matches_the_cpu::<bf16>(&g);
    mixed_matches_the_cpu::<f16>(&g);
    mixed_matches_the_cpu::<bf16>(&HeteroGraph::harris(1).unwrap());
}

#[test]
fn training_is_bit_identical_to_the_cpu_backend() {
    // one exp everywhere (rtx_backend::exp), the canonical order for sums,
    // the reference order for the dense ops: the same loss and parameter bits
    let g = harris_like(300, 150, [2000, 1200, 1100], 5).unwrap();
    for f64_too in [false, true] {
        let (dev, cpu) = if f64_too {
            (
                training_bits::<_, f64>(&backend(), &g, 3).unwrap(),
                training_bits::<_, f64>(&CpuBackend::reference(), &g, 3).unwrap(),
            )
        } else {
            (
                training_bits::<_, f32>(&backend(), &g, 3).unwrap(),
                training_bits::<_, f32>(&CpuBackend::reference(), &g, 3).unwrap(),
            )
        };
        assert_eq!(
            dev.0, cpu.0,
            "loss bits per step, cuda vs cpu (f64: {f64_too})"
        );
        assert!(
            dev.1 == cpu.1,
            "final parameters, cuda vs cpu (f64: {f64_too})"
        );
    }
}

#[test]
fn exp_is_the_hosts_bit_for_bit() {
    let g = backend();
    let c = CpuBackend::reference();
    let xs: Vec<f64> = (-8000..8000)
        .map(|i| f64::from(i) * 0.0931 + 1e-3 * f64::from(i % 7))
        .chain([
            0.0,
            -0.0,
            1.0,
            709.7,
            710.0,
            -745.0,
            -746.0,
            88.7,
            -103.9,
            f64::NAN,
        ])
        .collect();
    let n = xs.len();
    let d = g
        .download(&g.unary(Unary::Exp, &up(&g, &xs, &[n])).unwrap())
        .unwrap();
    let h = c
        .download(&c.unary(Unary::Exp, &up(&c, &xs, &[n])).unwrap())
        .unwrap();
    assert_eq!(bits(&d), bits(&h), "f64 exp");
    let x32: Vec<f32> = xs.iter().map(|&x| x as f32).collect();
    let d = g
        .download(&g.unary(Unary::Exp, &up(&g, &x32, &[n])).unwrap())
        .unwrap();
    let h = c
        .download(&c.unary(Unary::Exp, &up(&c, &x32, &[n])).unwrap())
        .unwrap();
    assert_eq!(bits(&d), bits(&h), "f32 exp");
}

/// A HetGAT trained on a freshly sampled subgraph every step (new edge
/// lists, so new plans, each step) of a large two-type graph: the loss bits
/// of every step equal on the CUDA and CPU backends.
#[test]
fn training_on_freshly_sampled_subgraphs_matches_the_cpu_bit_for_bit() {
    use rtx_gnn::HetGat;
    let (na, nb) = (200_000usize, 100_000usize);
    let cfg = HetGatConfig {
        in_features: vec![32, 32],
        ..HetGatConfig::harris()
    };
    let g0 = harris_like(na, nb, [30_000, 20_000, 25_000], 1000).unwrap();
    let (dev, cpu) = (backend(), CpuBackend::reference());
    let mut md = HetGat::<CudaBackend, f32>::new(&dev, &g0, cfg.clone(), 42).unwrap();
    let mut mc = HetGat::<CpuBackend, f32>::new(&cpu, &g0, cfg, 42).unwrap();
    let xs = |t: u64, n: usize| values::<f32>(40 + t, n * 32);
    let xd = [
        up(&dev, &xs(0, na), &[na, 32]),
        up(&dev, &xs(1, nb), &[nb, 32]),
    ];
    let xc = [
        up(&cpu, &xs(0, na), &[na, 32]),
        up(&cpu, &xs(1, nb), &[nb, 32]),
    ];
    for step in 0..4u64 {
        let sub = harris_like(
            na,
            nb,
            [30_000 + 11 * step as usize, 20_000, 25_000],
            2000 + 97 * step,
        )
        .unwrap();
        let ld = md.train_step(&dev, &sub, &xd, 1e-2).unwrap();
        let lc = mc.train_step(&cpu, &sub, &xc, 1e-2).unwrap();
        assert_eq!(
            ld.to_bits(),
            lc.to_bits(),
            "step {step}: loss {ld} on cuda, {lc} on cpu"
        );
    }
}

fn up<B: Backend, T: Element>(b: &B, v: &[T], shape: &[usize]) -> BTensor<B, T> {
    b.upload(v, shape).unwrap()
}

fn bits<T: Element>(v: &[T]) -> Vec<u64> {
    v.iter().map(|x| x.to_bits_u64()).collect()
}

#[test]
fn dense_ops_bit_identical_to_the_cpu_backend() {
    let g = backend();
    let c = CpuBackend::reference();
    // inner dims below, at and past one canonical block, and two levels past
    // it; every output tile (launch::matmul_tile: 32 or 64 wide by side),
    // with ragged edges; products of at most 8 columns (matmul_dot)
    for (m, k, n) in [
        (37, 300, 9),
        (80_000 / 50, 32, 64),
        (64, 70_000, 33),
        (5, 256, 1),
        (70_001, 20, 65),
        (70_000, 40, 31),
        (17, 300, 70_000),
        (20, 300, 24),
        (70_000, 32, 4),
        (64, 70_000, 4),
        (7_001, 64, 1),
        (33, 600, 8),
    ] {
        let a: Vec<f32> = values(1, m * k);
        let b: Vec<f32> = values(2, k * n);
        let at = rtx_backend::ops::transpose2(&a, m, k);
        let bt = rtx_backend::ops::transpose2(&b, k, n);
        for (ta, tb) in [(false, false), (true, false), (false, true), (true, true)] {
            let (aa, ash) = if ta { (&at, [k, m]) } else { (&a, [m, k]) };
            let (bb, bsh) = if tb { (&bt, [n, k]) } else { (&b, [k, n]) };
            let gd = g
                .download(
                    &g.matmul(&up(&g, aa, &ash), ta, &up(&g, bb, &bsh), tb)
                        .unwrap(),
                )
                .unwrap();
            let cd = c
                .download(
                    &c.matmul(&up(&c, aa, &ash), ta, &up(&c, bb, &bsh), tb)
                        .unwrap(),
                )
                .unwrap();
            assert_eq!(bits(&gd), bits(&cd), "matmul {m}x{k}x{n} ({ta}, {tb})");
        }
    }
    for (n, f) in [(1, 5), (256, 3), (257, 64), (80_000, 64), (70_000, 1)] {
        let x: Vec<f64> = values(3, n * f);
        let gd = g
            .download(&g.sum_rows(&up(&g, &x, &[n, f])).unwrap())
            .unwrap();
        let cd = c
            .download(&c.sum_rows(&up(&c, &x, &[n, f])).unwrap())
            .unwrap();
        assert_eq!(bits(&gd), bits(&cd), "sum_rows {n}x{f}");
    }
    for (n, heads, ch) in [(1000, 4, 16), (10, 2, 300), (3, 1, 70_000)] {
        let a: Vec<f32> = values(4, n * heads * ch);
        let b: Vec<f32> = values(5, heads * ch);
        let gd = g
            .download(
                &g.head_dot(
                    &up(&g, &a, &[n, heads * ch]),
                    &up(&g, &b, &[1, heads * ch]),
                    heads,
                )
                .unwrap(),
            )
            .unwrap();
        let cd = c
            .download(
                &c.head_dot(
                    &up(&c, &a, &[n, heads * ch]),
                    &up(&c, &b, &[1, heads * ch]),
                    heads,
                )
                .unwrap(),
            )
            .unwrap();
        assert_eq!(bits(&gd), bits(&cd), "head_dot {n}x{heads}x{ch}");
    }
}

/// The column sums climb their levels in one launch (ColSums::Climb, the
/// default): the same bits as one launch per level and as the CPU backend,
/// for one to four levels, ragged column tiles and both element types; again
/// on a second run and in recorded replays (the climb counters return to
/// zero after each launch).
#[test]
fn column_sums_in_one_launch_give_the_per_level_bits() {
    // Every repeat and replay sums new data (x += d between them), so an
    // output buffer the pool hands back holding the last repeat's bits, or a
    // replay that left its output alone, cannot pass.
    fn case<T: Element>(g: &CudaBackend, c: &CpuBackend, n: usize, f: usize) {
        let (x, d) = (values::<T>(21, n * f), values::<T>(26, n * f));
        let (a, s) = (values::<T>(22, n * f), values::<T>(23, n * 2));
        let (mut gx, ga, gs) = (up(g, &x, &[n, f]), up(g, &a, &[n, f]), up(g, &s, &[n, 2]));
        let (mut cx, cd, gd) = (up(c, &x, &[n, f]), up(c, &d, &[n, f]), up(g, &d, &[n, f]));
        let mut step = |gx: &mut BTensor<CudaBackend, T>| {
            g.axpy(gx, 1.0, &gd).unwrap();
            c.axpy(&mut cx, 1.0, &cd).unwrap();
            bits(&c.download(&c.sum_rows(&cx).unwrap()).unwrap())
        };
        let want_hs = bits(
            &c.download(
                &c.head_scale_sum_rows(&up(c, &a, &[n, f]), &up(c, &s, &[n, 2]))
                    .unwrap(),
            )
            .unwrap(),
        );
        for form in [ColSums::Climb, ColSums::Climb, ColSums::PerLevel] {
            g.set_col_sums(form);
            let want_sum = step(&mut gx);
            let got = bits(&g.download(&g.sum_rows(&gx).unwrap()).unwrap());
            assert_eq!(got, want_sum, "sum_rows [{n}, {f}] {form:?}");
            let got = bits(
                &g.download(&g.head_scale_sum_rows(&ga, &gs).unwrap())
                    .unwrap(),
            );
            assert_eq!(got, want_hs, "head_scale_sum_rows [{n}, {f}] {form:?}");
        }
        g.set_col_sums(ColSums::Climb);
        let mut rec = g.record(|b| b.sum_rows(&gx)).unwrap();
        for replay in 0..3 {
            let want_sum = step(&mut gx);
            let got = bits(&g.download(rec.replay().unwrap()).unwrap());
            assert_eq!(got, want_sum, "sum_rows [{n}, {f}] replay {replay}");
        }
    }
    let g = backend();
    let c = CpuBackend::reference();
    // levels past the first: 0, 1, 2 (ragged tiles: 34 columns of f32 are
    // two tiles, the second of 2), 2 (f64: 16-column tiles), 3
    case::<f32>(&g, &c, 200, 34);
    case::<f32>(&g, &c, 70_001, 34);
    case::<f64>(&g, &c, 65_537 * 2 + 3, 18);
    case::<f32>(&g, &c, 256 * 256 * 256 + 5, 2);
    // a product's inner dimension past 256: its chunk sums, then one climb
    let (m, k, n) = (33, 256 * 300 + 7, 40);
    let (a, b) = (values::<f32>(24, m * k), values::<f32>(25, k * n));
    let want = bits(
        &c.download(
            &c.matmul(&up(&c, &a, &[k, m]), true, &up(&c, &b, &[k, n]), false)
                .unwrap(),
        )
        .unwrap(),
    );
    for form in [ColSums::Climb, ColSums::PerLevel] {
        g.set_col_sums(form);
        let got = g
            .matmul(&up(&g, &a, &[k, m]), true, &up(&g, &b, &[k, n]), false)
            .unwrap();
        assert_eq!(
            bits(&g.download(&got).unwrap()),
            want,
            "matmul {m}x{k}x{n} {form:?}"
        );
    }
}

#[test]
fn fused_ops_equal_their_compositions_at_harris_scale() {
    let g = backend();
    // batch-8 Harris `aa`: 160,000 edges into 80,000 hub-skewed rows, 4 heads x 16
    let (n, e, heads, ch) = (80_000usize, 160_000usize, 4usize, 16usize);
    let f = heads * ch;
    let src = indices(10, e, n, false);
    let dst = indices(11, e, n, true);
    let plan = IndexPlan::new(&dst, n).unwrap();
    let idx = rtx_backend::ops::plan_indices(&plan);
    assert_eq!(idx, dst);
    let x = up(&g, &values::<f32>(12, n * f), &[n, f]);
    let z = up(
        &g,
        &values::<f32>(13, e * heads)
            .iter()
            .map(|v| v * 6.0)
            .collect::<Vec<_>>(),
        &[e, heads],
    );
    let alpha = g.segment_softmax(&z, &plan).unwrap();
    let m = g.segment_max(&z, &plan).unwrap();
    let ex = g
        .unary(
            Unary::Exp,
            &g.binary(Binary::Sub, &z, &g.index_select(&m, &dst).unwrap())
                .unwrap(),
        )
        .unwrap();
    let den = g
        .index_select(&g.segment_sum(&ex, &plan).unwrap(), &dst)
        .unwrap();
    let composed = g.binary(Binary::Div, &ex, &den).unwrap();
    let a = g.download(&alpha).unwrap();
    assert_eq!(
        bits(&a),
        bits(&g.download(&composed).unwrap()),
        "segment_softmax"
    );
    let gss = g.gather_scale_scatter(&x, &src, &alpha, &plan).unwrap();
    let msg = g
        .head_scale(&g.index_select(&x, &src).unwrap(), &alpha)
        .unwrap();
    let composed = g.segment_sum(&msg, &plan).unwrap();
    assert_eq!(
        bits(&g.download(&gss).unwrap()),
        bits(&g.download(&composed).unwrap()),
        "gather_scale_scatter"
    );
    // and against the host reference (no exp involved past alpha)
    let xh = g.download(&x).unwrap();
    let want = rtx_backend::ops::gather_scale_scatter(&xh, &src, &a, heads, ch, &plan);
    assert_eq!(
        bits(&g.download(&gss).unwrap()),
        bits(&want),
        "gather_scale_scatter vs host"
    );
    let grad = up(&g, &values::<f32>(14, e * heads), &[e, heads]);
    let back = g.segment_softmax_backward(&alpha, &grad, &plan).unwrap();
    let t = g.binary(Binary::Mul, &alpha, &grad).unwrap();
    let sg = g
        .index_select(&g.segment_sum(&t, &plan).unwrap(), &dst)
        .unwrap();
    let composed = g
        .binary(
            Binary::Mul,
            &alpha,
            &g.binary(Binary::Sub, &grad, &sg).unwrap(),
        )
        .unwrap();
    assert_eq!(
        bits(&g.download(&back).unwrap()),
        bits(&g.download(&composed).unwrap()),
        "segment_softmax_backward"
    );
    let y = up(&g, &values::<f32>(15, n * f), &[n, f]);
    let ghd = g.gather_head_dot(&y, &dst, &x, &src, heads).unwrap();
    let composed = g
        .head_dot(
            &g.index_select(&y, &dst).unwrap(),
            &g.index_select(&x, &src).unwrap(),
            heads,
        )
        .unwrap();
    assert_eq!(
        bits(&g.download(&ghd).unwrap()),
        bits(&g.download(&composed).unwrap()),
        "gather_head_dot"
    );
    // head_scale_sum_rows: [80,000, 64] (three levels of row sums), a row of
    // a broadcast, and a short one (one level); also against the host reference
    let s = up(&g, &values::<f32>(16, n * heads), &[n, heads]);
    let row = up(&g, &values::<f32>(17, f), &[1, f]);
    for (what, a, rows) in [
        ("[n, f]", &x, n),
        ("[1, f] broadcast", &row, n),
        ("200 rows", &x, 200),
    ] {
        let s = if rows == n {
            s.clone()
        } else {
            up(&g, &values::<f32>(18, rows * heads), &[rows, heads])
        };
        let a = if rows == n || what.contains("broadcast") {
            a.clone()
        } else {
            up(&g, &values::<f32>(19, rows * f), &[rows, f])
        };
        let fused = g.download(&g.head_scale_sum_rows(&a, &s).unwrap()).unwrap();
        let composed = g
            .download(&g.sum_rows(&g.head_scale(&a, &s).unwrap()).unwrap())
            .unwrap();
        assert_eq!(
            bits(&fused),
            bits(&composed),
            "head_scale_sum_rows, a {what}"
        );
        let (ha, hs) = (g.download(&a).unwrap(), g.download(&s).unwrap());
        let a_rows = a.shape()[0];
        let prod = rtx_backend::ops::head_scale(&ha, &hs, rows, heads, ch, a_rows);
        let want = rtx_backend::ops::sum_rows(&prod, rows, f);
        assert_eq!(
            bits(&fused),
            bits(&want),
            "head_scale_sum_rows vs host, a {what}"
        );
    }
}

#[test]
fn gradients_match_central_differences_in_f64_on_the_device() {
    let b = backend();
    let g = harris_like(7, 5, [14, 9, 10], 3).unwrap();
    let cfg = HetGatConfig {
        in_features: vec![3, 4],
        heads: 2,
        channels: 3,
        layers: 2,
        negative_slope: 0.2,
        target: 0,
        out_features: 1,
        input_dropout: 0.0,
        attention_dropout: 0.0,
    };
    let check = check_gradients(&b, &g, cfg, 11).unwrap();
    assert!(
        check.mismatches.is_empty(),
        "{} of {} entries off: {:#?}",
        check.mismatches.len(),
        check.checked,
        &check.mismatches[..check.mismatches.len().min(10)]
    );
    assert!(
        check.checked > 300,
        "only {} entries checked",
        check.checked
    );
}

#[test]
fn pins_are_scoped_and_an_unpinned_copy_still_works() {
    let b = backend();
    let idx = indices(20, 5000, 700, true);
    let plan = IndexPlan::new(&idx, 700).unwrap();
    let x = up(&b, &values::<f32>(21, 5000 * 4), &[5000, 4]);
    let want = b.download(&b.segment_softmax(&x, &plan).unwrap()).unwrap();
    let got = b
        .with_static_indices(&[&idx[..]], &[&plan], || {
            // a copy at another address goes through the cache; the pinned one by address
            let copy = plan.clone();
            let a = b.download(&b.segment_softmax(&x, &plan).unwrap()).unwrap();
            let c = b.download(&b.segment_softmax(&x, &copy).unwrap()).unwrap();
            assert_eq!(bits(&a), bits(&c));
            a
        })
        .unwrap();
    assert_eq!(bits(&got), bits(&want));
    // nested scopes, then out of scope: still correct
    let n = b
        .with_static_indices(&[&idx[..]], &[&plan], || {
            b.with_static_indices(&[&idx[..]], &[&plan], || b.segment_max(&x, &plan).unwrap())
                .unwrap()
        })
        .unwrap();
    assert_eq!(
        bits(&b.download(&n).unwrap()),
        bits(&rtx_backend::ops::segment_max(
            &b.download(&x).unwrap(),
            4,
            &plan
        ))
    );
}
