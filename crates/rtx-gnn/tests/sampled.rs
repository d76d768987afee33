//! Mini-batch training on sampled subgraphs (CPU backend): the model on a
//! [`IndexGraph`] of backend lists gives exactly what it gives on the same
//! subgraph built as a host [`HeteroGraph`] (host lists, host plans), and a
//! run of steps repeats bit for bit.

use rtx_backend::prelude::*;
use rtx_backend::sample::SampleSpec;
use rtx_backend_cpu::CpuBackend;
use rtx_gnn::mag::{epoch_seeds, mag_config, mag_store};
use rtx_gnn::{GraphStore, HetGat, HeteroGraph, NodeType, Topology};

/// The losses of `steps` training steps on fresh samples, and the
/// parameters' bits after them.
fn run<T: rtx_backend::Element>(
    b: &CpuBackend,
    store: &GraphStore<CpuBackend, T>,
    steps: usize,
    as_host: bool,
) -> (Vec<u64>, Vec<u64>) {
    let n = store.node_types()[0].nodes;
    let first = store
        .sample(
            b,
            &b.index_from_host(&epoch_seeds(n, 16, 0).unwrap()).unwrap(),
            &spec(0),
        )
        .unwrap();
    let mut model = HetGat::<CpuBackend, T>::new(b, &first.graph, mag_config(), 3).unwrap();
    let mut losses = Vec::new();
    for step in 0..steps {
        let seeds = b
            .index_from_host(&epoch_seeds(n, 16, step).unwrap())
            .unwrap();
        let batch = store.sample(b, &seeds, &spec(step as u64)).unwrap();
        let loss = if as_host {
            let g = host_graph(b, &batch.graph);
            model.train_step(b, &g, &batch.x, 1e-2).unwrap()
        } else {
            model.train_step(b, &batch.graph, &batch.x, 1e-2).unwrap()
        };
        losses.push(loss.to_f64().to_bits());
    }
    let params = model
        .params()
        .iter()
        .flat_map(|p| b.download(p).unwrap())
        .map(|v| v.to_f64().to_bits())
        .collect();
    (losses, params)
}

fn spec(step: u64) -> SampleSpec {
    SampleSpec::uniform(0, &[4, 3], 7, 99, step)
}

/// The sampled subgraph as a host graph (host lists, host plans).
fn host_graph(b: &CpuBackend, g: &rtx_gnn::IndexGraph<CpuBackend>) -> HeteroGraph {
    let types: Vec<NodeType> = Topology::<CpuBackend>::node_types(g).to_vec();
    let rels = (0..Topology::<CpuBackend>::relation_count(g))
        .map(|r| {
            let (name, s, d) = Topology::<CpuBackend>::relation_key(g, r);
            let (src, dst) = g.relation_edges(r);
            (
                name.to_string(),
                s,
                d,
                b.index_to_host(src).unwrap().into_owned(),
                b.index_to_host(dst).unwrap().into_owned(),
            )
        })
        .collect();
    HeteroGraph::new(types, rels).unwrap()
}

#[test]
fn sampled_training_is_the_host_graph_training_and_repeats() {
    let b = CpuBackend::new();
    let store = mag_store::<CpuBackend, f32>(&b, 2000).unwrap();
    let (l1, p1) = run(&b, &store, 4, false);
    let (l2, p2) = run(&b, &store, 4, false);
    let (l3, p3) = run(&b, &store, 4, true);
    assert_eq!(l1, l2, "the same run twice");
    assert_eq!(p1, p2);
    assert_eq!(l1, l3, "backend lists vs host lists and plans");
    assert_eq!(p1, p3);
    assert!(l1.windows(2).any(|w| w[0] != w[1]), "the batches differ");
    // f64 and another thread count give their own exact runs
    let f64store = mag_store::<CpuBackend, f64>(&b, 2000).unwrap();
    let (a, _) = run(&b, &f64store, 2, false);
    let (c, _) = run(&b, &f64store, 2, true);
    assert_eq!(a, c);
}

#[test]
fn a_sample_holds_seeds_first_and_features_of_its_nodes() {
    let b = CpuBackend::new();
    let store = mag_store::<CpuBackend, f32>(&b, 2000).unwrap();
    let seeds = [5u32, 9, 5, 300];
    let batch = store
        .sample(&b, &b.index_from_host(&seeds).unwrap(), &spec(1))
        .unwrap();
    let g = &batch.graph;
    assert_eq!(&*b.index_to_host(&batch.seeds).unwrap(), &[0, 1, 0, 2]);
    let papers = b.index_to_host(&batch.nodes[0]).unwrap();
    assert_eq!(&papers[..3], &[5, 9, 300]);
    assert!(g.edges() > 0);
    for t in 0..4 {
        let ids = b.index_to_host(&batch.nodes[t]).unwrap();
        let x = b.download(&batch.x[t]).unwrap();
        let full = b.download(store.features(t)).unwrap();
        assert_eq!(x.len(), ids.len() * 128);
        for (i, &id) in ids.iter().enumerate() {
            assert_eq!(
                x[i * 128..(i + 1) * 128],
                full[id as usize * 128..(id as usize + 1) * 128]
            );
        }
    }
    let bad = store
        .sample(&b, &b.index_from_host(&[0, 368]).unwrap(), &spec(1))
        .unwrap_err();
    assert!(bad.to_string().contains("idx[1] = 368"), "{bad}");
}
