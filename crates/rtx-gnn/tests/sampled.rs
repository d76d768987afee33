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

/// Every prefix a sample records: relation `r`'s edges of the first `k`
/// hops are the prefix of its lists up to the first edge whose destination
/// was reached in hop `k` or later, and every node they name was reached
/// within their hops.
#[test]
fn a_samples_hops_are_prefixes_of_its_nodes_and_edges() {
    let b = CpuBackend::new();
    let store = mag_store::<CpuBackend, f32>(&b, 2000).unwrap();
    let spec = SampleSpec::uniform(0, &[4, 3, 2], 7, 99, 5);
    let seeds = [5u32, 9, 5, 300, 17];
    let mb = store
        .sample(&b, &b.index_from_host(&seeds).unwrap(), &spec)
        .unwrap();
    let g = &mb.graph;
    assert_eq!(g.hops(), Some(3));
    assert_eq!(g.nodes_within(0, 0), 4, "the distinct seeds");
    for t in 0..4 {
        let reached: Vec<usize> = (0..=3).map(|h| g.nodes_within(t, h)).collect();
        assert!(reached.windows(2).all(|w| w[0] <= w[1]), "{reached:?}");
        assert_eq!(reached[3], Topology::<CpuBackend>::node_types(g)[t].nodes);
        assert_eq!(
            g.nodes_within(t, 9),
            reached[3],
            "past the hops: every node"
        );
    }
    let mut strict = 0;
    for r in 0..7 {
        let (_, st, dt) = Topology::<CpuBackend>::relation_key(g, r);
        let (s, d) = g.relation_edges(r);
        let (s, d) = (b.index_to_host(s).unwrap(), b.index_to_host(d).unwrap());
        for k in 1..=3 {
            let (sk, dk) = g.relation_edges_within(r, k);
            let (sk, dk) = (b.index_to_host(sk).unwrap(), b.index_to_host(dk).unwrap());
            // the naive prefix: edges up to the first into a node of hop >= k
            let end = d
                .iter()
                .position(|&v| v as usize >= g.nodes_within(dt, k - 1))
                .unwrap_or(d.len());
            assert_eq!(*dk, d[..end], "relation {r}, {k} hops");
            assert_eq!(*sk, s[..end], "relation {r}, {k} hops");
            assert!(
                s[..end]
                    .iter()
                    .all(|&u| (u as usize) < g.nodes_within(st, k))
            );
            assert!(
                d[end..]
                    .iter()
                    .all(|&v| v as usize >= g.nodes_within(dt, k - 1))
            );
            strict += usize::from(end > 0 && end < d.len());
        }
    }
    assert!(strict > 0, "some prefix is neither empty nor whole");
    // a graph made of lists reads whole at every hop
    let whole = rtx_gnn::IndexGraph::new(
        &b,
        Topology::<CpuBackend>::node_types(g).to_vec(),
        (0..7)
            .map(|r| {
                let (name, s, d) = Topology::<CpuBackend>::relation_key(g, r);
                let (sl, dl) = g.relation_edges(r);
                (name.to_string(), s, d, sl.clone(), dl.clone())
            })
            .collect(),
    )
    .unwrap();
    assert_eq!(whole.hops(), None);
    assert_eq!(whole.nodes_within(0, 0), g.nodes_within(0, 3));
    assert_eq!(
        b.index_len(whole.relation_edges_within(1, 1).0),
        b.index_len(g.relation_edges(1).0)
    );
}

/// A trimmed pass (each layer on the hops it reads) gives the seeds' rows
/// of the pass over the whole sample bit for bit, the same loss, and the
/// same gradients up to the order of adding exact zeros: with and without
/// dropout, with as many layers as hops, more, and fewer.
#[test]
fn a_trimmed_pass_is_the_whole_samples_on_the_seeds() {
    use rtx_gnn::model::{LossKind, Objective, Targets};
    let b = CpuBackend::reference();
    let store = mag_store::<CpuBackend, f64>(&b, 2000).unwrap();
    let seeds = [7u32, 100, 7, 350, 3, 42];
    for (layers, fanouts, dropout) in [
        (2, vec![4, 3], None),
        (2, vec![4, 3], Some(11)),
        (3, vec![4, 3], Some(12)),
        (1, vec![4, 3], None),
        (3, vec![3, 2, 2], None),
    ] {
        let what = format!("{layers} layers, fanouts {fanouts:?}, dropout {dropout:?}");
        let spec = SampleSpec::uniform(0, &fanouts, 7, 99, 3);
        let mb = store
            .sample(&b, &b.index_from_host(&seeds).unwrap(), &spec)
            .unwrap();
        let mut config = mag_config();
        config.layers = layers;
        config.out_features = 5;
        config.input_dropout = 0.2;
        config.attention_dropout = 0.3;
        let model = HetGat::<CpuBackend, f64>::new(&b, &mb.graph, config, 4).unwrap();
        let (whole, trimmed) = (&mb.graph, mb.graph.trimmed());
        let u = mb.graph.nodes_within(0, 0);
        // evaluation: the first u rows of the whole pass
        let yw = b
            .download(&model.forward(&b, whole, &mb.x).unwrap())
            .unwrap();
        let yt = b
            .download(&model.forward(&b, &trimmed, &mb.x).unwrap())
            .unwrap();
        assert_eq!(yt.len(), u * 5, "{what}");
        let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
        assert_eq!(bits(&yt), bits(&yw[..u * 5]), "{what}");
        // training: cross-entropy over the seeds
        let labels = b
            .index_from_host(&[1, 4, 1, 0, 2, 3][..seeds.len()])
            .unwrap();
        let targets = Targets::Classes(labels);
        let objective = Objective {
            loss: LossKind::CrossEntropy,
            rows: &mb.seeds,
            targets: &targets,
        };
        let gw = model
            .objective_grads(&b, whole, &mb.x, &objective, dropout)
            .unwrap();
        let gt = model
            .objective_grads(&b, &trimmed, &mb.x, &objective, dropout)
            .unwrap();
        let (lw, lt) = (gw.loss.read(&b).unwrap(), gt.loss.read(&b).unwrap());
        assert_eq!(lw.to_bits(), lt.to_bits(), "{what}: loss {lw} vs {lt}");
        let mut nonzero = 0;
        for (i, (a, c)) in gw.grads.iter().zip(&gt.grads).enumerate() {
            let (Some(a), Some(c)) = (a, c) else {
                assert!(a.is_none() && c.is_none(), "{what}: gradient {i}");
                continue;
            };
            let (a, c) = (b.download(a).unwrap(), b.download(c).unwrap());
            let scale = a.iter().fold(1e-30f64, |m, v| m.max(v.abs()));
            for (x, y) in a.iter().zip(&c) {
                assert!(
                    (x - y).abs() <= 1e-12 * scale,
                    "{what}: gradient {i}: {x} vs {y}"
                );
            }
            nonzero += usize::from(a.iter().any(|&v| v != 0.0));
        }
        assert!(nonzero > 4, "{what}: {nonzero} gradients nonzero");
    }
}

/// A topology that records the depths the model reads each relation at.
struct Recording<'g> {
    inner: rtx_gnn::Trimmed<'g, CpuBackend>,
    asked: std::cell::RefCell<Vec<(usize, usize)>>,
}

impl Topology<CpuBackend> for Recording<'_> {
    fn node_types(&self) -> &[NodeType] {
        Topology::<CpuBackend>::node_types(&self.inner)
    }
    fn relation_count(&self) -> usize {
        Topology::<CpuBackend>::relation_count(&self.inner)
    }
    fn relation_key(&self, r: usize) -> (&str, usize, usize) {
        Topology::<CpuBackend>::relation_key(&self.inner, r)
    }
    fn edges(&self, r: usize) -> rtx_gnn::RelEdges<'_, CpuBackend> {
        self.asked.borrow_mut().push((r, 0));
        self.inner.edges(r)
    }
    fn nodes_within(&self, t: usize, depth: usize) -> usize {
        self.inner.nodes_within(t, depth)
    }
    fn edges_within(&self, r: usize, depth: usize) -> rtx_gnn::RelEdges<'_, CpuBackend> {
        self.asked.borrow_mut().push((r, depth));
        self.inner.edges_within(r, depth)
    }
    fn trimmed_to(&self) -> Option<usize> {
        self.inner.trimmed_to()
    }
}

/// Each layer reads its relations at its own depth (layer `l` of `L`: `L -
/// l` hops), forward and backward; the input gradients of a pass that read
/// fewer hops than the sample has are the inputs' shapes, zero past the
/// rows it read; a model whose target is not the seeds' type is refused on
/// a trimmed sample (its last layer would compute no target row).
#[test]
fn each_layer_reads_its_own_hops_and_input_gradients_keep_their_shapes() {
    let b = CpuBackend::reference();
    let store = mag_store::<CpuBackend, f64>(&b, 2000).unwrap();
    let spec = SampleSpec::uniform(0, &[4, 3, 2], 7, 99, 1);
    let mb = store
        .sample(&b, &b.index_from_host(&[3, 30, 300]).unwrap(), &spec)
        .unwrap();
    let mut config = mag_config();
    config.layers = 2;
    let model = HetGat::<CpuBackend, f64>::new(&b, &mb.graph, config.clone(), 4).unwrap();
    let rec = Recording {
        inner: mb.graph.trimmed(),
        asked: Default::default(),
    };
    let lg = model.loss_and_grads(&b, &rec, &mb.x, true).unwrap();
    let asked = rec.asked.borrow().clone();
    assert!(asked.iter().all(|&(_, d)| d == 1 || d == 2), "{asked:?}");
    let at = |d| asked.iter().filter(|a| a.1 == d).count();
    assert!(at(1) > 0 && at(2) > 0, "{asked:?}");
    // two layers on three hops: the inputs' rows past two hops get zeros
    for (t, (dx, x)) in lg.input_grads.iter().zip(&mb.x).enumerate() {
        let Some(dx) = dx else { continue };
        assert_eq!(dx.shape(), x.shape(), "type {t}");
        let (read, cols) = (mb.graph.nodes_within(t, 2), x.shape()[1]);
        let v = b.download(dx).unwrap();
        assert!(v[read * cols..].iter().all(|&g| g == 0.0), "type {t}");
        assert!(
            read == 0 || v[..read * cols].iter().any(|&g| g != 0.0),
            "type {t}"
        );
    }
    assert!(lg.input_grads[0].is_some());
    assert!(
        (0..4).any(|t| mb.graph.nodes_within(t, 2) < mb.graph.nodes_within(t, 3)),
        "some input has rows the pass did not read"
    );
    // a target of another type than the seeds'
    let other = HetGat::<CpuBackend, f64>::new(
        &b,
        &mb.graph,
        rtx_gnn::HetGatConfig {
            target: 1,
            ..config
        },
        4,
    )
    .unwrap();
    let e = other.forward(&b, &mb.graph.trimmed(), &mb.x).unwrap_err();
    assert!(e.to_string().contains("seeds' type (paper)"), "{e}");
    assert!(
        other.forward(&b, &mb.graph, &mb.x).is_ok(),
        "the whole sample"
    );
}
