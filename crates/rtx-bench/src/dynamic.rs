//! `rtx-bench dynamic`: message passing on index lists that change every
//! step (device-made lists and device-built plans). Each timed call gets a list it has never seen, made on
//! the device, so the scatter plan is built on the device inside the timing.
//! Peer: `peers/torch_dynamic.py` (torch `index_select` + `index_add_`,
//! atomic and deterministic, and PyG's scatter) on the same lists.
//!
//! Cases (`--only` filters by name):
//! * `minibatch-1024x15x10`: 1,024 hub-drawn seeds of a 1M-node graph, 15
//!   then 10 sampled neighbours each (168,960 edges): gather the neighbours'
//!   features (global ids) and sum them into their parents (16,384 local
//!   rows), F = 64.
//! * `1M-2M-f64-hub`, `1M-16M-f64-hub`: the anchors' 1M-row hub lists of 2M
//!   and 16M entries as destinations (docs/workloads.md, seed `1 + k` for draw
//!   `k`), uniform sources, F = 64.
//! * `hetgat-sampled`: the HetGAT (2 layers x 3 relations, 4 heads x 16
//!   channels) trained one step per freshly sampled edge set of a two-type
//!   graph of 200,000 + 100,000 nodes (75,000 edges per step, new plans every
//!   step, made on the device; the step's time includes making them); the
//!   first steps' loss bits checked against `CpuBackend::reference()` on
//!   the same edges built as a host graph.
//!
//! Rows: `rtx-plan-build-device` (the plan alone), `rtx-fresh-scatter`
//! (plan + scatter), `rtx-fresh-layer` (gather + plan + scatter), the
//! `rtx-handle-*` rows with the plan already built, and `rtx-trait-host-seen-*`
//! (the trait with a host list seen before); unless `--no-check`, a
//! `rtx-fresh-layer-check` row says whether a fresh layer's result is
//! bit-identical to the CPU backend's.

use rtx_backend::Indices;
use std::time::Instant;

use rtx_backend::prelude::*;
use rtx_backend::{IndexPlan, workload};
use rtx_backend_cpu::CpuBackend;
use rtx_backend_cuda::{CudaBackend, CudaIndex};
use serde_json::json;

use crate::cuda_timing::{emit, median, values_par};

/// Arguments of `rtx-bench dynamic`.
#[derive(Debug, Clone, clap::Args)]
pub struct Args {
    /// CUDA device ordinal.
    #[arg(long, default_value_t = 0)]
    pub device: usize,
    /// Timed calls per row (each on a fresh list; median reported).
    #[arg(long, default_value_t = 15)]
    pub reps: usize,
    /// Only the cases whose name contains this.
    #[arg(long)]
    pub only: Option<String>,
    /// Skip the bit-identity check against the CPU backend.
    #[arg(long)]
    pub no_check: bool,
}

/// One workload: how to make the `k`-th fresh (source, destination) lists.
struct Case {
    name: &'static str,
    nodes: usize,
    f: usize,
    /// Destination rows.
    rows: usize,
}

const MINIBATCH: Case = Case {
    name: "minibatch-1024x15x10",
    nodes: 1 << 20,
    f: 64,
    rows: 1024 + 1024 * 15,
};

const LARGE: [(Case, usize); 2] = [
    (
        Case {
            name: "1M-2M-f64-hub",
            nodes: 1 << 20,
            f: 64,
            rows: 1 << 20,
        },
        2 << 20,
    ),
    (
        Case {
            name: "1M-16M-f64-hub",
            nodes: 1 << 20,
            f: 64,
            rows: 1 << 20,
        },
        16 << 20,
    ),
];

/// Fresh lists `k` of a case: device lists and, for the check, host twins.
struct Lists {
    src: CudaIndex,
    dst: CudaIndex,
}

/// The mini-batch's lists of draw `k`: sources are sampled global ids (hub
/// skewed), destinations the parents' local ids (seeds 0..1024, then the
/// first hop's 15,360 nodes).
fn minibatch(g: &CudaBackend, k: u64) -> anyhow::Result<Lists> {
    let n = MINIBATCH.nodes;
    let (h1, h2) = (1024 * 15, 1024 * 15 * 10);
    let s1 = g.index_random(1000 + 2 * k, 0, h1, n, true)?;
    let s2 = g.index_random(1001 + 2 * k, 0, h2, n, true)?;
    let src = g.index_concat(&[(&s1, 0), (&s2, 0)])?;
    let d1 = g.index_repeat(1024, 15, 0)?;
    let d2 = g.index_repeat(1024 * 15, 10, 1024)?;
    let dst = g.index_concat(&[(&d1, 0), (&d2, 0)])?;
    Ok(Lists { src, dst })
}

/// The large cases' lists of draw `k`: the anchors' hub list of seed
/// `1 + k` as destinations, a uniform list as sources.
fn large(g: &CudaBackend, c: &Case, e: usize, k: u64) -> anyhow::Result<Lists> {
    let dst = g.index_random(1 + k, 0, e, c.rows, true)?;
    let src = g.index_random(500 + k, 0, e, c.nodes, false)?;
    Ok(Lists { src, dst })
}

/// Wall-clock ms of `f` between two synchronizations (the plan build's
/// readback makes device-event timing of one call meaningless).
fn wall(g: &CudaBackend, f: impl FnOnce() -> anyhow::Result<()>) -> anyhow::Result<f64> {
    g.synchronize()?;
    let t = Instant::now();
    f()?;
    g.synchronize()?;
    Ok(t.elapsed().as_secs_f64() * 1e3)
}

/// The median of `reps` [`wall`] timings of `f`.
fn median_wall(
    g: &CudaBackend,
    reps: usize,
    mut f: impl FnMut() -> anyhow::Result<()>,
) -> anyhow::Result<f64> {
    let t = (0..reps)
        .map(|_| wall(g, &mut f))
        .collect::<anyhow::Result<Vec<_>>>()?;
    Ok(median(t))
}

/// Runs `rtx-bench dynamic`.
///
/// # Errors
/// Backend errors; no CUDA device.
pub fn run(args: &Args) -> anyhow::Result<()> {
    let g = CudaBackend::new(args.device)?;
    g.load_kernels()?;
    println!(
        "{}",
        json!({"device": g.device_name(), "impl": "rtx", "arch": g.arch(), "suite": "dynamic"})
    );
    let want = |name: &str| args.only.as_deref().is_none_or(|o| name.contains(o));
    if want(MINIBATCH.name) {
        run_case(&g, &MINIBATCH, args, &|k| minibatch(&g, k))?;
    }
    for (c, e) in &LARGE {
        if want(c.name) {
            run_case(&g, c, args, &|k| large(&g, c, *e, k))?;
        }
    }
    if want("hetgat-sampled") {
        hetgat_sampled(&g, args)?;
    }
    Ok(())
}

/// The HetGAT trained on a fresh edge sample every step (see the module
/// docs): the edges made on the device (`index_random`, bit for bit
/// `harris_like`'s host lists), the model on their device lists.
fn hetgat_sampled(g: &CudaBackend, args: &Args) -> anyhow::Result<()> {
    use rtx_gnn::graph::{harris_like, harris_like_lists};
    use rtx_gnn::{HetGat, HetGatConfig, IndexGraph};
    let (na, nb) = (200_000usize, 100_000usize);
    let edges = [30_000usize, 20_000, 25_000];
    let cfg = HetGatConfig {
        in_features: vec![32, 32],
        ..HetGatConfig::harris()
    };
    let seed_of = |step: u64| 5000 + 97 * step;
    let host_sample = |step: u64| harris_like(na, nb, edges, seed_of(step));
    // the same lists as `harris_like`, made on the device
    let device_sample = |step: u64| -> anyhow::Result<IndexGraph<CudaBackend>> {
        let (types, rels) = harris_like_lists(na, nb, edges, seed_of(step), |s, e, rows, hub| {
            g.index_random(s, 0, e, rows, hub)
        })?;
        Ok(IndexGraph::new(g, types, rels)?)
    };
    let g0 = host_sample(0)?;
    let mut model = HetGat::<CudaBackend, f32>::new(g, &g0, cfg.clone(), 42)?;
    let feats = |t: u64, n: usize| workload::values::<f32>(40 + t, n * 32);
    let x = [
        g.upload(&feats(0, na), &[na, 32])?,
        g.upload(&feats(1, nb), &[nb, 32])?,
    ];
    let cpu = CpuBackend::reference();
    let mut check = if args.no_check {
        None
    } else {
        let m = HetGat::<CpuBackend, f32>::new(&cpu, &g0, cfg.clone(), 42)?;
        let xc = [
            cpu.upload(&feats(0, na), &[na, 32])?,
            cpu.upload(&feats(1, nb), &[nb, 32])?,
        ];
        Some((m, xc))
    };
    let (mut t_build, mut t_step, mut same) = (Vec::new(), Vec::new(), true);
    for step in 0..(args.reps + 2) as u64 {
        let mut loss = 0.0f32;
        let mut build = 0.0;
        let ms = wall(g, || {
            let t = Instant::now();
            let sub = device_sample(step + 1)?;
            build = t.elapsed().as_secs_f64() * 1e3;
            loss = model.train_step(g, &sub, &x, 1e-2)?;
            Ok(())
        })?;
        if step >= 2 {
            t_step.push(ms);
            t_build.push(build);
        }
        if step < 3
            && let Some((m, xc)) = check.as_mut()
        {
            let lc = m.train_step(&cpu, &host_sample(step + 1)?, xc, 1e-2)?;
            same &= lc.to_bits() == loss.to_bits();
        }
    }
    let extra = [
        ("edges", json!(edges.iter().sum::<usize>())),
        ("nodes", json!(na + nb)),
    ];
    emit(
        "dynamic",
        "hetgat-sampled",
        "rtx-cuda-train-step",
        median(t_step),
        None,
        &extra,
    );
    emit(
        "dynamic",
        "hetgat-sampled",
        "rtx-device-graph-build",
        median(t_build),
        None,
        &extra,
    );
    if check.is_some() {
        emit(
            "dynamic",
            "hetgat-sampled",
            "rtx-hetgat-sampled-check",
            0.0,
            None,
            &[("loss_bits_equal_cpu_first_3_steps", json!(same))],
        );
        anyhow::ensure!(
            same,
            "hetgat-sampled: a loss differs between CUDA and the CPU"
        );
    }
    Ok(())
}

fn run_case(
    g: &CudaBackend,
    c: &Case,
    args: &Args,
    make: &dyn Fn(u64) -> anyhow::Result<Lists>,
) -> anyhow::Result<()> {
    let f = c.f;
    let x = g.upload(&values_par(2, c.nodes * f), &[c.nodes, f])?;
    let probe = make(0)?;
    let e = probe.dst.len();
    let msg = g.upload(&values_par(3, e * f), &[e, f])?;
    let extra = [("edges", json!(e)), ("rows", json!(c.rows))];
    let scatter_bytes = (e * f * 4 + c.rows * f * 8 + e * 4) as f64;
    let layer_bytes = scatter_bytes + (e * f * 4 * 2 + e * 4) as f64;
    let mut draw = 1u64;
    let mut fresh = || {
        draw += 1;
        make(draw)
    };
    // warm-up: kernels, pool
    for _ in 0..2 {
        let l = fresh()?;
        let mut d = g.zeros::<f32>(&[c.rows, f])?;
        g.index_add(&mut d, Indices::held(&l.dst), &msg)?;
    }
    let mut t_plan = Vec::new();
    let mut t_scatter = Vec::new();
    let mut t_layer = Vec::new();
    for _ in 0..args.reps {
        let l = fresh()?;
        t_plan.push(wall(g, || Ok(g.prepare_scatter(&l.dst)?))?);
        let l = fresh()?;
        let mut d = g.zeros::<f32>(&[c.rows, f])?;
        t_scatter.push(wall(g, || {
            Ok(g.index_add(&mut d, Indices::held(&l.dst), &msg)?)
        })?);
        let l = fresh()?;
        t_layer.push(wall(g, || {
            let m = g.index_select(&x, Indices::held(&l.src))?;
            g.segment_sum(&m, Indices::held(&l.dst).with_rows(c.rows))?;
            Ok(())
        })?);
    }
    emit(
        "dynamic",
        c.name,
        "rtx-plan-build-device",
        median(t_plan),
        None,
        &extra,
    );
    emit(
        "dynamic",
        c.name,
        "rtx-fresh-scatter",
        median(t_scatter),
        Some(scatter_bytes),
        &extra,
    );
    emit(
        "dynamic",
        c.name,
        "rtx-fresh-layer",
        median(t_layer),
        Some(layer_bytes),
        &extra,
    );

    // the same list again: the plan is on the device
    let l = fresh()?;
    g.prepare_scatter(&l.dst)?;
    let mut d = g.zeros::<f32>(&[c.rows, f])?;
    let ms = median_wall(g, args.reps, || {
        Ok(g.index_add(&mut d, Indices::held(&l.dst), &msg)?)
    })?;
    emit(
        "dynamic",
        c.name,
        "rtx-handle-scatter",
        ms,
        Some(scatter_bytes),
        &extra,
    );
    let ms = median_wall(g, args.reps, || {
        Ok(g.index_select(&x, Indices::held(&l.src)).map(drop)?)
    })?;
    emit("dynamic", c.name, "rtx-handle-gather", ms, None, &extra);

    // the trait with host lists it has seen before
    let (hs, hd) = (
        g.index_to_host(&l.src)?.into_owned(),
        g.index_to_host(&l.dst)?.into_owned(),
    );
    g.index_add(&mut d, &hd, &msg)?;
    g.index_select(&x, &hs)?;
    let ms = median_wall(g, args.reps, || Ok(g.index_add(&mut d, &hd, &msg)?))?;
    emit(
        "dynamic",
        c.name,
        "rtx-trait-host-seen-scatter",
        ms,
        Some(scatter_bytes),
        &extra,
    );
    let ms = median_wall(g, args.reps, || Ok(g.index_select(&x, &hs).map(drop)?))?;
    emit(
        "dynamic",
        c.name,
        "rtx-trait-host-seen-gather",
        ms,
        None,
        &extra,
    );

    // the host plan build (rayon over every core) of the list, for scale:
    // the median of 5 builds (the first also starts rayon's threads)
    let host_ms = median(
        (0..5)
            .map(|_| {
                let t = Instant::now();
                IndexPlan::new(&hd, c.rows)?;
                Ok(t.elapsed().as_secs_f64() * 1e3)
            })
            .collect::<anyhow::Result<Vec<_>>>()?,
    );
    emit(
        "dynamic",
        c.name,
        "rtx-plan-build-host",
        host_ms,
        None,
        &extra,
    );

    if !args.no_check {
        check(g, c, &x, &hs, &hd)?;
    }
    Ok(())
}

/// One fresh layer on the device against the CPU backend with the host lists.
fn check(
    g: &CudaBackend,
    c: &Case,
    x: &rtx_backend::BTensor<CudaBackend, f32>,
    hs: &[u32],
    hd: &[u32],
) -> anyhow::Result<()> {
    let cpu = CpuBackend::new();
    let f = c.f;
    let fresh_src = g.index_from_host(hs)?;
    let fresh_dst = g.index_from_host(hd)?;
    let got = g.download(&g.segment_sum(
        &g.index_select(x, Indices::held(&fresh_src))?,
        Indices::held(&fresh_dst).with_rows(c.rows),
    )?)?;
    let cx = cpu.upload(&g.download(x)?, &[c.nodes, f])?;
    let want =
        cpu.download(&cpu.segment_sum(&cpu.index_select(&cx, hs)?, &IndexPlan::new(hd, c.rows)?)?)?;
    let same = got
        .iter()
        .zip(&want)
        .all(|(a, b)| a.to_bits() == b.to_bits());
    emit(
        "dynamic",
        c.name,
        "rtx-fresh-layer-check",
        0.0,
        None,
        &[(
            "bit_identical_to_cpu",
            json!(same && got.len() == want.len()),
        )],
    );
    anyhow::ensure!(
        same,
        "{}: the fresh layer differs from the CPU backend",
        c.name
    );
    Ok(())
}
