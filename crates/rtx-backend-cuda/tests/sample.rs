//! GPU tests of the device graph store and neighbour sampler (feature
//! `cuda`): the CSR built on the device is the host's; samples are the CPU
//! backend's (the host reference) bit for bit; bad requests are errors; the
//! HetGAT on sampled batches gives the CPU's loss, gradient and parameter
//! bits (f32, f64), twice; a 100-step sampled loop does not grow device
//! memory.
//!
//! Without a device every test here FAILS with a message saying so.
#![cfg(feature = "cuda")]

use rtx_backend::prelude::*;
use rtx_backend::sample::{SampleSpec, csr_host};
use rtx_backend::{Error, Indices, SampleOps};
use rtx_backend_cpu::CpuBackend;
use rtx_backend_cuda::CudaBackend;
use rtx_gnn::Topology;
use rtx_gnn::determinism::sampled_training_bits;
use rtx_gnn::mag::{mag_node_types, mag_relations, mag_store};

fn backend() -> CudaBackend {
    CudaBackend::new(0).unwrap_or_else(|e| panic!("GPU test needs a CUDA device: {e}"))
}

#[test]
fn the_device_csr_is_the_host_csr() {
    let g = backend();
    let types = mag_node_types(100);
    for (name, s, d, src, dst) in mag_relations(100) {
        let (ns, nd) = (types[s].nodes, types[d].nodes);
        let c = g
            .csr_by_dst(
                &g.index_from_host(&src).unwrap(),
                &g.index_from_host(&dst).unwrap(),
                (s, ns),
                (d, nd),
            )
            .unwrap();
        let (o, n) = csr_host(&src, &dst, ns, nd).unwrap();
        assert_eq!(
            &*g.index_to_host(c.offsets()).unwrap(),
            &o[..],
            "{name}: offsets"
        );
        assert_eq!(
            &*g.index_to_host(c.neighbors()).unwrap(),
            &n[..],
            "{name}: neighbours"
        );
    }
    // an endpoint out of range names its position
    let e = g
        .csr_by_dst(
            &g.index_from_host(&[0, 9]).unwrap(),
            &g.index_from_host(&[1, 1]).unwrap(),
            (0, 5),
            (0, 5),
        )
        .unwrap_err();
    assert!(
        matches!(
            e,
            Error::IndexOutOfRange {
                position: 1,
                value: 9,
                bound: 5
            }
        ),
        "{e}"
    );
}

#[test]
fn device_samples_are_the_cpu_samples() {
    let (g, cpu) = (backend(), CpuBackend::reference());
    let gs = mag_store::<CudaBackend, f32>(&g, 50).unwrap();
    let cs = mag_store::<CpuBackend, f32>(&cpu, 50).unwrap();
    let papers = gs.node_types()[0].nodes as u32;
    // hubs (low ids), duplicates, the last node; fanouts above hub degrees too
    let seeds: Vec<u32> = [0u32, 1, 2, 0, papers - 1, 77, 1]
        .into_iter()
        .chain((0..500).map(|i| (i * 7919) % papers))
        .collect();
    let specs = [
        SampleSpec::uniform(0, &[15, 10], 7, 99, 0),
        SampleSpec::uniform(0, &[15, 10], 7, 99, 1),
        SampleSpec::uniform(0, &[100_000], 7, 3, 5),
        SampleSpec {
            seed_type: 0,
            fanouts: vec![
                vec![3, 0, 1, 0, 0, 2, 0],
                vec![0, 5, 0, 4, 1, 0, 9],
                vec![1; 7],
            ],
            seed: 5,
            step: 2,
        },
    ];
    for spec in &specs {
        let before = g.activity();
        let a = gs
            .sample(&g, &g.index_from_host(&seeds).unwrap(), spec)
            .unwrap();
        // one wait for the seeds' relabelling, two a hop (its edge totals,
        // then its relabellings' counts), whatever the count of relations;
        // none for the feature gathers: a sample's lists carry their bounds
        let waits = g.activity().since(&before).waits as usize;
        assert!(
            waits <= 1 + 2 * spec.fanouts.len(),
            "{waits} waits for {} hops, {spec:?}",
            spec.fanouts.len()
        );
        // gathers by the sample's local ids wait for no range check either
        let before = g.activity();
        let seed_rows = g.index_select(&a.x[0], Indices::held(&a.seeds)).unwrap();
        for r in 0..7 {
            let (s, d) = a.graph.relation_edges(r);
            let (_, st, dt) = a.graph.relation_key(r);
            g.index_select(&a.x[st], Indices::held(s)).unwrap();
            g.index_select(&a.x[dt], Indices::held(d)).unwrap();
        }
        assert_eq!(g.activity().since(&before).waits, 0, "{spec:?}");
        let b = cs
            .sample(&cpu, &cpu.index_from_host(&seeds).unwrap(), spec)
            .unwrap();
        let host = |l| g.index_to_host(l).unwrap().into_owned();
        let chost = |l| cpu.index_to_host(l).unwrap().into_owned();
        assert_eq!(host(&a.seeds), chost(&b.seeds), "{spec:?}");
        assert_eq!(
            g.download(&seed_rows).unwrap(),
            cpu.download(&cpu.index_select(&b.x[0], Indices::held(&b.seeds)).unwrap())
                .unwrap(),
            "the seeds' rows, {spec:?}"
        );
        for t in 0..4 {
            assert_eq!(host(&a.nodes[t]), chost(&b.nodes[t]), "type {t}, {spec:?}");
            assert_eq!(
                g.download(&a.x[t]).unwrap(),
                cpu.download(&b.x[t]).unwrap(),
                "features of type {t}"
            );
        }
        for r in 0..7 {
            let ((sa, da), (sb, db)) = (a.graph.relation_edges(r), b.graph.relation_edges(r));
            assert_eq!(host(sa), chost(sb), "relation {r} sources, {spec:?}");
            assert_eq!(host(da), chost(db), "relation {r} destinations, {spec:?}");
        }
        // each hop's prefixes: the host's, and gathers by them (with the
        // rows a trimmed layer reads) wait for no range check
        let hops = spec.fanouts.len();
        for h in 0..=hops {
            for t in 0..4 {
                assert_eq!(
                    a.graph.nodes_within(t, h),
                    b.graph.nodes_within(t, h),
                    "{spec:?}"
                );
            }
        }
        for k in 1..=hops {
            for r in 0..7 {
                let (sa, da) = a.graph.relation_edges_within(r, k);
                let (sb, db) = b.graph.relation_edges_within(r, k);
                assert_eq!(host(sa), chost(sb), "relation {r}, {k} hops, {spec:?}");
                assert_eq!(host(da), chost(db), "relation {r}, {k} hops, {spec:?}");
                // the bounds the rows below claim hold for every entry
                let (_, st, dt) = a.graph.relation_key(r);
                let (ns, nd) = (a.graph.nodes_within(st, k), a.graph.nodes_within(dt, k - 1));
                assert!(
                    host(sa).iter().all(|&v| (v as usize) < ns),
                    "{r}, {k}, {spec:?}"
                );
                assert!(
                    host(da).iter().all(|&v| (v as usize) < nd),
                    "{r}, {k}, {spec:?}"
                );
                // and the destinations are in order: their plans skip the sort
                assert!(host(da).is_sorted(), "{r}, {k}, {spec:?}");
            }
        }
        let before = g.activity();
        for k in 1..=hops {
            for r in 0..7 {
                let (sa, da) = a.graph.relation_edges_within(r, k);
                let (_, st, dt) = a.graph.relation_key(r);
                let (ns, nd) = (a.graph.nodes_within(st, k), a.graph.nodes_within(dt, k - 1));
                let xs = g.resize_rows(&a.x[st], ns).unwrap();
                let xd = g.resize_rows(&a.x[dt], nd).unwrap();
                g.index_select(&xs, Indices::held(sa).with_rows(ns))
                    .unwrap();
                g.index_select(&xd, Indices::held(da).with_rows(nd))
                    .unwrap();
            }
        }
        let seeds_only = g.resize_rows(&a.x[0], a.graph.nodes_within(0, 0)).unwrap();
        g.index_select(&seeds_only, Indices::held(&a.seeds))
            .unwrap();
        assert_eq!(g.activity().since(&before).waits, 0, "{spec:?}");
        assert!(a.graph.edges() > 0);
    }
}

#[test]
fn a_sample_made_beside_is_used_on_the_main_stream() {
    let g = backend();
    let store = mag_store::<CudaBackend, f32>(&g, 50).unwrap();
    let papers = store.node_types()[0].nodes;
    let side = g.beside().unwrap();
    let seeds: Vec<u32> = (0..300).map(|i| (i * 7919 % papers) as u32).collect();
    for step in 0..3 {
        let spec = SampleSpec::uniform(0, &[15, 10], 7, 3, step);
        let here = store
            .sample(&g, &g.index_from_host(&seeds).unwrap(), &spec)
            .unwrap();
        // queued on the side stream while the main one has work of its own
        let busy = g
            .index_select(store.features(0), Indices::held(&here.nodes[0]))
            .unwrap();
        let there = store
            .sample(&side, &side.index_from_host(&seeds).unwrap(), &spec)
            .unwrap();
        g.wait_for(&side).unwrap();
        // the main stream reads the side's lists and features: the same bits
        let rows = |mb: &rtx_gnn::MiniBatch<CudaBackend, f32>| {
            g.download(&g.index_select(&mb.x[0], Indices::held(&mb.seeds)).unwrap())
                .unwrap()
        };
        assert_eq!(rows(&there), rows(&here), "step {step}: the seeds' rows");
        for t in 0..4 {
            assert_eq!(
                g.index_to_host(&there.nodes[t]).unwrap(),
                g.index_to_host(&here.nodes[t]).unwrap(),
                "step {step}: nodes of type {t}"
            );
            assert_eq!(
                g.download(&there.x[t]).unwrap(),
                g.download(&here.x[t]).unwrap(),
                "step {step}: features of type {t}"
            );
        }
        drop(busy);
        // the side's sample goes after the main stream's work with it
        side.wait_for(&g).unwrap();
        drop(there);
    }
    // the side's work counts into the main backend's activity
    let before = g.activity();
    side.synchronize().unwrap();
    assert_eq!(g.activity().since(&before).waits, 1);
}

#[test]
fn bad_sample_requests_are_errors() {
    let g = backend();
    let store = mag_store::<CudaBackend, f32>(&g, 1000).unwrap();
    let papers = store.node_types()[0].nodes as u32;
    let spec = SampleSpec::uniform(0, &[2], 7, 1, 0);
    let e = store
        .sample(&g, &g.index_from_host(&[0, papers, 1]).unwrap(), &spec)
        .unwrap_err();
    assert!(e.to_string().contains(&format!("idx[1] = {papers}")), "{e}");
    let e = store
        .sample(&g, &g.index_from_host(&[]).unwrap(), &spec)
        .unwrap_err();
    assert!(e.to_string().contains("seed set is empty"), "{e}");
    let e = store
        .sample(
            &g,
            &g.index_from_host(&[1]).unwrap(),
            &SampleSpec::uniform(0, &[0], 7, 1, 0),
        )
        .unwrap_err();
    assert!(e.to_string().contains("every fanout of hop 0 is 0"), "{e}");
}

#[test]
fn sampled_training_is_the_cpus_bit_for_bit_and_repeats() {
    let (g, cpu) = (backend(), CpuBackend::reference());
    let a = sampled_training_bits::<_, f32>(&g, 200, 64, &[15, 10], 5).unwrap();
    let b = sampled_training_bits::<_, f32>(&g, 200, 64, &[15, 10], 5).unwrap();
    let c = sampled_training_bits::<_, f32>(&cpu, 200, 64, &[15, 10], 5).unwrap();
    assert_eq!(a, b, "CUDA twice");
    assert_eq!(a.losses, c.losses, "loss bits CUDA vs CPU");
    assert_eq!(a.edges, c.edges);
    assert!(a.grads == c.grads, "first-step gradients CUDA vs CPU");
    assert!(a.params == c.params, "final parameters CUDA vs CPU");
    let a = sampled_training_bits::<_, f64>(&g, 400, 32, &[5, 5], 3).unwrap();
    let c = sampled_training_bits::<_, f64>(&cpu, 400, 32, &[5, 5], 3).unwrap();
    assert!(a == c, "f64: CUDA vs CPU");
}

#[test]
fn a_hundred_sampled_steps_do_not_grow_device_memory() {
    use rtx_backend::sample::SampleSpec;
    use rtx_gnn::mag::{epoch_seeds, mag_config};
    let g = backend();
    let store = mag_store::<CudaBackend, f32>(&g, 100).unwrap();
    let papers = store.node_types()[0].nodes;
    let seeds = |s: usize| {
        g.index_from_host(&epoch_seeds(papers, 256, s % papers.div_ceil(256)).unwrap())
            .unwrap()
    };
    let spec = |s: usize| SampleSpec::uniform(0, &[15, 10], 7, 1, s as u64);
    let first = store.sample(&g, &seeds(0), &spec(0)).unwrap();
    let mut model =
        rtx_gnn::HetGat::<CudaBackend, f32>::new(&g, &first.graph, mag_config(), 1).unwrap();
    let mut free = Vec::new();
    for s in 0..100 {
        let mb = store.sample(&g, &seeds(s), &spec(s)).unwrap();
        model.train_step(&g, &mb.graph, &mb.x, 1e-3).unwrap();
        if s == 20 || s == 99 {
            g.synchronize().unwrap();
            free.push(g.memory_in_use().unwrap());
        }
    }
    assert!(
        free[1] <= free[0] + (64 << 20),
        "device memory in use grew from {} to {} bytes over 80 steps",
        free[0],
        free[1]
    );
}
