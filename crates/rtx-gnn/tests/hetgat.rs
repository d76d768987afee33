//! HetGAT: gradients against finite differences (f64), forward against a
//! naive loop implementation, determinism across runs and thread counts,
//! training progress, and the two-modes property (index ops on the host
//! round trip give the same bits as native index ops, step after step).

use rtx_backend::prelude::*;
use rtx_backend::workload::values;
use rtx_backend::{BTensor, Element, HostIndexOps};
use rtx_backend_cpu::{CpuBackend, DenseKernels};
use rtx_gnn::graph::RelationSpec;
use rtx_gnn::{HetGat, HetGatConfig, HeteroGraph, NodeType};

fn graph(na: usize, nb: usize, edges: [usize; 3], seed: u64) -> HeteroGraph {
    rtx_gnn::graph::harris_like(na, nb, edges, seed).unwrap()
}

fn config(features: [usize; 2], heads: usize, channels: usize) -> HetGatConfig {
    HetGatConfig {
        in_features: features.to_vec(),
        heads,
        channels,
        layers: 2,
        negative_slope: 0.2,
        target: 0,
        out_features: 1,
        input_dropout: 0.0,
        attention_dropout: 0.0,
    }
}

fn inputs<B: Backend, T: Element>(
    b: &B,
    g: &HeteroGraph,
    cfg: &HetGatConfig,
) -> Vec<BTensor<B, T>> {
    g.node_types()
        .iter()
        .zip(&cfg.in_features)
        .enumerate()
        .map(|(t, (nt, &f))| {
            b.upload(&values::<T>(40 + t as u64, nt.nodes * f), &[nt.nodes, f])
                .unwrap()
        })
        .collect()
}

#[test]
fn gradients_match_central_differences_in_f64() {
    let b = CpuBackend::new();
    let g = graph(7, 5, [14, 9, 10], 3);
    let check = rtx_gnn::gradcheck::check_gradients(&b, &g, config([3, 4], 2, 3), 11).unwrap();
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

/// The model written as plain loops over nodes and edges, in f64.
fn naive_forward(
    g: &HeteroGraph,
    cfg: &HetGatConfig,
    params: &[Vec<f64>],
    x: &[Vec<f64>],
) -> Vec<f64> {
    let (hh, cc) = (cfg.heads, cfg.channels);
    let hid = hh * cc;
    let nrel = g.relations().len();
    let mut cur: Vec<Vec<f64>> = x.to_vec();
    let mut fin: Vec<usize> = cfg.in_features.clone();
    for l in 0..cfg.layers {
        let mut pre: Vec<Option<Vec<f64>>> = vec![None; g.node_types().len()];
        for (r, rel) in g.relations().iter().enumerate() {
            let p = |k: usize| &params[(l * nrel + r) * 5 + k];
            let (ns, nd) = (
                g.node_types()[rel.src_type()].nodes,
                g.node_types()[rel.dst_type()].nodes,
            );
            let lin = |xv: &Vec<f64>, n: usize, f: usize, w: &Vec<f64>| {
                let mut o = vec![0.0; n * hid];
                for i in 0..n {
                    for k in 0..hid {
                        o[i * hid + k] = (0..f).map(|q| xv[i * f + q] * w[q * hid + k]).sum();
                    }
                }
                o
            };
            let hs = lin(&cur[rel.src_type()], ns, fin[rel.src_type()], p(0));
            let hd = lin(&cur[rel.dst_type()], nd, fin[rel.dst_type()], p(1));
            let score = |hv: &Vec<f64>, att: &Vec<f64>, i: usize, h: usize| -> f64 {
                (0..cc)
                    .map(|c| hv[i * hid + h * cc + c] * att[h * cc + c])
                    .sum()
            };
            let mut out = vec![0.0; nd * hid];
            for d in 0..nd {
                let es: Vec<usize> = (0..rel.edges())
                    .filter(|&e| rel.dst()[e] as usize == d)
                    .collect();
                for h in 0..hh {
                    let logit: Vec<f64> = es
                        .iter()
                        .map(|&e| {
                            let v =
                                score(&hs, p(2), rel.src()[e] as usize, h) + score(&hd, p(3), d, h);
                            if v > 0.0 { v } else { 0.2 * v }
                        })
                        .collect();
                    let m = logit.iter().copied().fold(f64::NEG_INFINITY, f64::max);
                    let den: f64 = logit.iter().map(|v| (v - m).exp()).sum();
                    for (q, &e) in es.iter().enumerate() {
                        let a = (logit[q] - m).exp() / den;
                        for c in 0..cc {
                            out[d * hid + h * cc + c] +=
                                a * hs[rel.src()[e] as usize * hid + h * cc + c];
                        }
                    }
                }
                for k in 0..hid {
                    out[d * hid + k] += p(4)[k];
                }
            }
            match &mut pre[rel.dst_type()] {
                Some(s) => s.iter_mut().zip(&out).for_each(|(a, b)| *a += b),
                slot => *slot = Some(out),
            }
        }
        cur = pre
            .into_iter()
            .map(|p| p.unwrap_or_default().iter().map(|v| v.max(0.0)).collect())
            .collect();
        fin = vec![hid; fin.len()];
    }
    let w = &params[cfg.layers * nrel * 5];
    let bias = params[cfg.layers * nrel * 5 + 1][0];
    let n = g.node_types()[cfg.target].nodes;
    (0..n)
        .map(|i| {
            bias + (0..hid)
                .map(|k| cur[cfg.target][i * hid + k] * w[k])
                .sum::<f64>()
        })
        .collect()
}

#[test]
fn forward_matches_naive_loops() {
    let b = CpuBackend::new();
    let g = graph(9, 6, [20, 11, 12], 5);
    let cfg = config([4, 3], 2, 4);
    let model = HetGat::<_, f64>::new(&b, &g, cfg.clone(), 2).unwrap();
    let x = inputs::<_, f64>(&b, &g, &cfg);
    let y = b.download(&model.forward(&b, &g, &x).unwrap()).unwrap();
    let params: Vec<Vec<f64>> = model
        .params()
        .iter()
        .map(|p| b.download(p).unwrap())
        .collect();
    let xs: Vec<Vec<f64>> = x.iter().map(|t| b.download(t).unwrap()).collect();
    let want = naive_forward(&g, &cfg, &params, &xs);
    assert_eq!(y.len(), want.len());
    for (i, (a, w)) in y.iter().zip(&want).enumerate() {
        assert!(
            (a - w).abs() <= 1e-12 * w.abs().max(1.0),
            "node {i}: {a} vs naive {w}"
        );
    }
    assert!(
        want.iter().any(|v| v.abs() > 1e-3),
        "a trivial output proves nothing"
    );
}

fn train<B: Backend>(b: &B, steps: usize) -> (Vec<u64>, Vec<Vec<u64>>) {
    let g = graph(400, 200, [800, 460, 460], 7);
    rtx_gnn::determinism::training_bits::<B, f32>(b, &g, steps).unwrap()
}

/// The loss and parameter bits of every step are the same on every run and
/// every thread count (1, 2, 3, 7, 16), with the fast dense kernels (the
/// default) and with the reference ones; and the two settings differ (else
/// this would not test the fast GEMM).
#[test]
fn training_is_deterministic_across_runs_and_thread_counts() {
    for dense in [DenseKernels::Fast, DenseKernels::Reference] {
        let on = |threads: usize| {
            train(
                &CpuBackend::with_threads(threads).unwrap().with_dense(dense),
                4,
            )
        };
        let one = on(1);
        assert_eq!(on(1), one, "{dense:?}: two runs differ");
        for threads in [2, 3, 7, 16] {
            assert_eq!(on(threads), one, "{dense:?}: 1 vs {threads} threads differ");
        }
        let global = CpuBackend::new().with_dense(dense);
        assert_eq!(train(&global, 4), one, "{dense:?}: the global pool differs");
    }
    assert_ne!(
        train(&CpuBackend::new(), 2).0,
        train(&CpuBackend::reference(), 2).0,
        "the fast kernels give the reference bits: is the fast GEMM in use?"
    );
}

#[test]
fn loss_decreases() {
    let (losses, _) = train(&CpuBackend::new(), 8);
    let l: Vec<f32> = losses.iter().map(|&b| f32::from_bits(b as u32)).collect();
    assert!(l.windows(2).all(|w| w[1] < w[0]), "losses {l:?}");
}

/// The two-modes property on the CPU: index ops through the host round-trip
/// defaults give the same loss bits, step after step, and the same parameters.
#[test]
fn host_round_trip_index_ops_give_identical_training() {
    for dense in [DenseKernels::Fast, DenseKernels::Reference] {
        let native = train(&CpuBackend::new().with_dense(dense), 5);
        let host = train(&HostIndexOps::new(CpuBackend::new().with_dense(dense)), 5);
        assert_eq!(host.0, native.0, "{dense:?}: losses differ");
        assert_eq!(host.1, native.1, "{dense:?}: parameters differ");
    }
}

#[test]
fn harris_graph_runs_and_bad_inputs_are_errors() {
    let b = CpuBackend::new();
    let g = HeteroGraph::harris(1).unwrap();
    let model = HetGat::<_, f32>::new(&b, &g, HetGatConfig::harris(), 1).unwrap();
    assert_eq!(model.params().len(), 2 * 3 * 5 + 2);
    let x: Vec<_> = rtx_gnn::harris_features::<f32>(1)
        .iter()
        .zip(g.node_types())
        .map(|(v, t)| b.upload(v, &[t.nodes, 32]).unwrap())
        .collect();
    let y = model.forward(&b, &g, &x).unwrap();
    assert_eq!(y.shape(), &[10_000, 1]);
    let e = model.forward(&b, &g, &x[..1]).unwrap_err();
    assert!(e.to_string().contains("inputs"), "{e}");
    let bad = vec![x[0].clone(), x[0].clone()];
    let e = model.forward(&b, &g, &bad).unwrap_err();
    assert!(e.to_string().contains("[10000, 32]"), "{e}");
}

/// The relations of `g` as `HeteroGraph::new` takes them, in the order `order`.
fn specs(g: &HeteroGraph, order: &[usize]) -> Vec<RelationSpec> {
    order
        .iter()
        .map(|&r| {
            let rel = &g.relations()[r];
            (
                rel.name().to_owned(),
                rel.src_type(),
                rel.dst_type(),
                rel.src().to_vec(),
                rel.dst().to_vec(),
            )
        })
        .collect()
}

#[test]
fn a_graph_of_another_schema_is_an_error_naming_the_relation() {
    let b = CpuBackend::new();
    let g = graph(7, 5, [14, 9, 10], 3);
    let cfg = config([4, 4], 2, 3);
    let model = HetGat::<_, f64>::new(&b, &g, cfg.clone(), 11).unwrap();
    let x = inputs::<_, f64>(&b, &g, &cfg);
    // the same relations reordered: before, Ok with the wrong output
    let reordered = HeteroGraph::new(g.node_types().to_vec(), specs(&g, &[2, 0, 1])).unwrap();
    let e = model.forward(&b, &reordered, &x).unwrap_err().to_string();
    assert!(
        e.contains("relation 0 of the graph is ba (b -> a)") && e.contains("built for aa (a -> a)"),
        "{e}"
    );
    let e = model
        .loss_and_grads(&b, &reordered, &x, false)
        .unwrap_err()
        .to_string();
    assert!(e.contains("relation 0"), "{e}");
    // another node type name at the same index
    let mut types = g.node_types().to_vec();
    types[1].name = "c".into();
    let renamed = HeteroGraph::new(types, specs(&g, &[0, 1, 2])).unwrap();
    let e = model.forward(&b, &renamed, &x).unwrap_err().to_string();
    assert!(e.contains("node type 1 of the graph is c"), "{e}");
    // one more node type (and an input for it): before, an index panic
    let mut types = g.node_types().to_vec();
    types.push(NodeType {
        name: "c".into(),
        nodes: 2,
    });
    let wider = HeteroGraph::new(types, specs(&g, &[0, 1, 2])).unwrap();
    let mut xw = x.clone();
    xw.push(b.upload(&[0.0; 8], &[2, 4]).unwrap());
    let e = model.forward(&b, &wider, &xw).unwrap_err().to_string();
    assert!(
        e.contains("3 node types") && e.contains("model has 2 node types"),
        "{e}"
    );
    // the same schema at another size (another batch) is fine, and in the
    // model's order the rebuilt graph gives the same output bits
    let bigger = graph(9, 6, [20, 11, 12], 5);
    let xb = inputs::<_, f64>(&b, &bigger, &cfg);
    assert_eq!(model.forward(&b, &bigger, &xb).unwrap().shape(), &[9, 1]);
    let same = HeteroGraph::new(g.node_types().to_vec(), specs(&g, &[0, 1, 2])).unwrap();
    assert_eq!(
        b.download(&model.forward(&b, &same, &x).unwrap()).unwrap(),
        b.download(&model.forward(&b, &g, &x).unwrap()).unwrap()
    );
}

#[test]
fn oversized_configs_are_errors_not_panics() {
    let b = CpuBackend::new();
    let g = graph(7, 5, [14, 9, 10], 3);
    let huge = config([3, 4], 1 << 32, 1 << 32);
    let e = huge.hidden().unwrap_err().to_string();
    assert!(e.contains("overflows"), "{e}");
    let e = HetGat::<_, f32>::new(&b, &g, huge, 0)
        .unwrap_err()
        .to_string();
    assert!(e.contains("overflows"), "{e}");
    // a feature count whose fan sum or parameter size overflows
    for f in [usize::MAX, usize::MAX / 2, 1 << 62] {
        let e = HetGat::<_, f32>::new(&b, &g, config([f, 4], 2, 3), 0)
            .unwrap_err()
            .to_string();
        assert!(e.contains("do not fit in memory"), "{f}: {e}");
    }
    // so many layers that the parameter count overflows
    let mut deep = config([3, 4], 2, 3);
    deep.layers = usize::MAX;
    let e = HetGat::<_, f32>::new(&b, &g, deep, 0)
        .unwrap_err()
        .to_string();
    assert!(e.contains("do not fit in memory"), "{e}");
}

#[test]
fn sgd_with_a_misshapen_gradient_changes_no_parameter() {
    let b = CpuBackend::new();
    let g = graph(7, 5, [14, 9, 10], 3);
    let cfg = config([3, 4], 2, 3);
    let mut model = HetGat::<_, f64>::new(&b, &g, cfg.clone(), 11).unwrap();
    let x = inputs::<_, f64>(&b, &g, &cfg);
    let snapshot = |m: &HetGat<CpuBackend, f64>| -> Vec<Vec<f64>> {
        m.params().iter().map(|p| b.download(p).unwrap()).collect()
    };
    let before = snapshot(&model);
    let mut grads = model.loss_and_grads(&b, &g, &x, false).unwrap().grads;
    assert!(grads.iter().filter(|g| g.is_some()).count() > 10);
    let last = grads.len() - 1; // head_b, [1, 1]
    let good = grads[last].replace(b.upload(&[1.0, 2.0], &[2, 1]).unwrap());
    let e = model.sgd(&b, &grads, 0.1).unwrap_err().to_string();
    assert!(e.contains("head_b") && e.contains("[2, 1]"), "{e}");
    assert_eq!(snapshot(&model), before, "a failed sgd changed parameters");
    grads[last] = good;
    model.sgd(&b, &grads, 0.1).unwrap();
    assert_ne!(snapshot(&model), before);
}

/// `plan_lists` names, in relation order, the sum-by lists of exactly the
/// relations live in some layer (here every relation but `ac`, whose
/// output never reaches the head on `a`), each with its row count, and
/// for a backward pass each relation's sources after its destinations.
#[test]
fn plan_lists_are_the_live_relations_sum_by_lists() {
    let b = CpuBackend::new();
    let (na, nb, nc) = (5usize, 4usize, 3usize);
    let ty = |name: &str, nodes| NodeType {
        name: name.into(),
        nodes,
    };
    let rel = |name: &str, s, d, src: Vec<u32>, dst: Vec<u32>| -> RelationSpec {
        (name.into(), s, d, src, dst)
    };
    let g = HeteroGraph::new(
        vec![ty("a", na), ty("b", nb), ty("c", nc)],
        vec![
            rel("aa", 0, 0, vec![0, 1, 4], vec![1, 2, 0]),
            rel("ba", 1, 0, vec![3, 0], vec![4, 4]),
            rel("ac", 0, 2, vec![2], vec![1]),
            rel("cb", 2, 1, vec![0, 2, 1], vec![3, 3, 0]),
        ],
    )
    .unwrap();
    let three_types = HetGatConfig {
        in_features: vec![2, 3, 1],
        ..config([2, 3], 1, 2)
    };
    let model = HetGat::<_, f32>::new(&b, &g, three_types, 0).unwrap();
    let seen = |backward| -> Vec<(Vec<u32>, Option<usize>)> {
        model
            .plan_lists(&g, backward)
            .iter()
            .map(|l| (l.host_list(&b).unwrap().into_owned(), l.rows()))
            .collect()
    };
    let by = |list: &[u32], rows| (list.to_vec(), Some(rows));
    assert_eq!(
        seen(false),
        [by(&[1, 2, 0], na), by(&[4, 4], na), by(&[3, 3, 0], nb)]
    );
    assert_eq!(
        seen(true),
        [
            by(&[1, 2, 0], na),
            by(&[0, 1, 4], na),
            by(&[4, 4], na),
            by(&[3, 0], nb),
            by(&[3, 3, 0], nb),
            by(&[0, 2, 1], nc),
        ]
    );
    // and prepare_plans makes them ready
    model.prepare_plans(&b, &g, true).unwrap();
}
