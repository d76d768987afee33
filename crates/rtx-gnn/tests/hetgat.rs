//! HetGAT: gradients against finite differences (f64), forward against a
//! naive loop implementation, determinism across runs and thread counts,
//! training progress, and the two-modes property (index ops on the host
//! round trip give the same bits as native index ops, step after step).

use rtx_backend::workload::values;
use rtx_backend::{BTensor, Backend, Element, HostIndexOps};
use rtx_backend_cpu::CpuBackend;
use rtx_gnn::{HetGat, HetGatConfig, HeteroGraph};

fn graph(na: usize, nb: usize, edges: [usize; 3], seed: u64) -> HeteroGraph {
    rtx_gnn::testing::harris_like(na, nb, edges, seed).unwrap()
}

fn config(features: [usize; 2], heads: usize, channels: usize) -> HetGatConfig {
    HetGatConfig {
        in_features: features.to_vec(),
        heads,
        channels,
        layers: 2,
        negative_slope: 0.2,
        target: 0,
    }
}

fn inputs<B: Backend, T: Element>(
    b: &B,
    g: &HeteroGraph,
    cfg: &HetGatConfig,
) -> Vec<BTensor<B, T>> {
    g.node_types
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
    let cfg = config([3, 4], 2, 3);
    let mut model = HetGat::<_, f64>::new(&b, &g, cfg.clone(), 11).unwrap();
    // nonzero biases so their paths are exercised away from their zero init
    for i in 0..model.params().len() {
        if model.param_names()[i].ends_with(".bias") {
            let n = model.params()[i].numel();
            let v: Vec<f64> = values::<f64>(90 + i as u64, n)
                .iter()
                .map(|x| 0.3 * x)
                .collect();
            model.params_mut()[i] = b.upload(&v, &[1, n]).unwrap();
        }
    }
    let mut x = inputs::<_, f64>(&b, &g, &cfg);
    let out = model.loss_and_grads(&b, &g, &x, true).unwrap();
    let h = 1e-5;
    let check = |name: &str, an: f64, fd: f64| {
        assert!(
            (an - fd).abs() <= 1e-6 * an.abs().max(fd.abs()) + 1e-9,
            "{name}: analytic {an:e}, central difference {fd:e}"
        );
    };
    let mut checked = 0;
    for i in 0..model.params().len() {
        let name = model.param_names()[i].clone();
        let p0 = b.download(&model.params()[i]).unwrap();
        let shape = model.params()[i].shape().to_vec();
        let an = match &out.grads[i] {
            Some(t) => b.download(t).unwrap(),
            None => vec![0.0; p0.len()],
        };
        for j in 0..p0.len() {
            let mut loss_at = |v: f64| {
                let mut p = p0.clone();
                p[j] = v;
                model.params_mut()[i] = b.upload(&p, &shape).unwrap();
                model.loss(&b, &g, &x).unwrap()
            };
            let fd = (loss_at(p0[j] + h) - loss_at(p0[j] - h)) / (2.0 * h);
            check(&format!("{name}[{j}]"), an[j], fd);
            checked += 1;
        }
        model.params_mut()[i] = b.upload(&p0, &shape).unwrap();
    }
    for t in 0..x.len() {
        let x0 = b.download(&x[t]).unwrap();
        let shape = x[t].shape().to_vec();
        let an = b
            .download(out.input_grads[t].as_ref().expect("input grad"))
            .unwrap();
        for j in 0..x0.len() {
            let mut loss_at = |v: f64| {
                let mut p = x0.clone();
                p[j] = v;
                x[t] = b.upload(&p, &shape).unwrap();
                model.loss(&b, &g, &x).unwrap()
            };
            let fd = (loss_at(x0[j] + h) - loss_at(x0[j] - h)) / (2.0 * h);
            check(&format!("x[{t}][{j}]"), an[j], fd);
            checked += 1;
        }
        x[t] = b.upload(&x0, &shape).unwrap();
    }
    assert!(checked > 300, "only {checked} entries checked");
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
    let nrel = g.relations.len();
    let mut cur: Vec<Vec<f64>> = x.to_vec();
    let mut fin: Vec<usize> = cfg.in_features.clone();
    for l in 0..cfg.layers {
        let mut pre: Vec<Option<Vec<f64>>> = vec![None; g.node_types.len()];
        for (r, rel) in g.relations.iter().enumerate() {
            let p = |k: usize| &params[(l * nrel + r) * 5 + k];
            let (ns, nd) = (
                g.node_types[rel.src_type].nodes,
                g.node_types[rel.dst_type].nodes,
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
            let hs = lin(&cur[rel.src_type], ns, fin[rel.src_type], p(0));
            let hd = lin(&cur[rel.dst_type], nd, fin[rel.dst_type], p(1));
            let score = |hv: &Vec<f64>, att: &Vec<f64>, i: usize, h: usize| -> f64 {
                (0..cc)
                    .map(|c| hv[i * hid + h * cc + c] * att[h * cc + c])
                    .sum()
            };
            let mut out = vec![0.0; nd * hid];
            for d in 0..nd {
                let es: Vec<usize> = (0..rel.edges())
                    .filter(|&e| rel.dst[e] as usize == d)
                    .collect();
                for h in 0..hh {
                    let logit: Vec<f64> = es
                        .iter()
                        .map(|&e| {
                            let v =
                                score(&hs, p(2), rel.src[e] as usize, h) + score(&hd, p(3), d, h);
                            if v > 0.0 { v } else { 0.2 * v }
                        })
                        .collect();
                    let m = logit.iter().copied().fold(f64::NEG_INFINITY, f64::max);
                    let den: f64 = logit.iter().map(|v| (v - m).exp()).sum();
                    for (q, &e) in es.iter().enumerate() {
                        let a = (logit[q] - m).exp() / den;
                        for c in 0..cc {
                            out[d * hid + h * cc + c] +=
                                a * hs[rel.src[e] as usize * hid + h * cc + c];
                        }
                    }
                }
                for k in 0..hid {
                    out[d * hid + k] += p(4)[k];
                }
            }
            match &mut pre[rel.dst_type] {
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
    let n = g.node_types[cfg.target].nodes;
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
    rtx_gnn::testing::training_bits::<B, f32>(b, &g, steps).unwrap()
}

#[test]
fn training_is_deterministic_across_runs_and_thread_counts() {
    let one = train(&CpuBackend::with_threads(1).unwrap(), 4);
    assert_eq!(
        train(&CpuBackend::with_threads(1).unwrap(), 4),
        one,
        "two runs differ"
    );
    assert_eq!(
        train(&CpuBackend::with_threads(3).unwrap(), 4),
        one,
        "1 vs 3 threads differ"
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
    let native = train(&CpuBackend::new(), 5);
    let host = train(&HostIndexOps::new(CpuBackend::new()), 5);
    assert_eq!(host.0, native.0, "losses differ");
    assert_eq!(host.1, native.1, "parameters differ");
}

#[test]
fn harris_graph_runs_and_bad_inputs_are_errors() {
    let b = CpuBackend::new();
    let g = HeteroGraph::harris(1).unwrap();
    let model = HetGat::<_, f32>::new(&b, &g, HetGatConfig::harris(), 1).unwrap();
    assert_eq!(model.params().len(), 2 * 3 * 5 + 2);
    let x: Vec<_> = rtx_gnn::harris_features::<f32>(1)
        .iter()
        .zip(&g.node_types)
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
