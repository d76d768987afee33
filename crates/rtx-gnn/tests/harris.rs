//! The Harris-shaped planted regression (`planted::harris_regression`): the
//! benchmark graph and features, deterministic bits from a seed,
//! contiguous disjoint splits, and targets that are the naive 2-hop
//! function of `planted::two_hop_targets`, recomputed here with plain loops,
//! which depend on a node's 2-hop in-neighbourhood and on no node that
//! reaches no one.

use rtx_backend::exp::exp64;
use rtx_gnn::graph::{HARRIS_FEATURES, HARRIS_NODES, HARRIS_RELATIONS, HeteroGraph};
use rtx_gnn::planted::{self, HARRIS_SPLIT, HARRIS_TARGET};
use rtx_gnn::{Dataset, Features, Targets, harris_features};

fn targets(d: &Dataset) -> &[f32] {
    match &d.targets[HARRIS_TARGET] {
        Some(Targets::Values { data, dim: 2 }) => data,
        other => panic!("{other:?}"),
    }
}

fn bits(v: &[f32]) -> Vec<u32> {
    v.iter().map(|x| x.to_bits()).collect()
}

#[test]
fn the_harris_dataset_is_the_benchmark_graph_with_its_features() {
    let d = planted::harris_regression(2, 0).unwrap();
    let g = HeteroGraph::harris(2).unwrap();
    assert_eq!(d.node_types, g.node_types());
    let names: Vec<&str> = d.node_types.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, ["a", "b"]);
    assert_eq!(
        (d.node_types[0].nodes, d.node_types[1].nodes),
        (2 * HARRIS_NODES[0].1, 2 * HARRIS_NODES[1].1)
    );
    for ((r, gr), &(name, s, t, edges, _)) in
        d.relations.iter().zip(g.relations()).zip(&HARRIS_RELATIONS)
    {
        assert_eq!((r.name.as_str(), r.src_type, r.dst_type), (name, s, t));
        assert_eq!(r.src.len(), 2 * edges, "{name}");
        assert_eq!((&r.src[..], &r.dst[..]), (gr.src(), gr.dst()), "{name}");
    }
    for (f, want) in d.features.iter().zip(harris_features::<f32>(2)) {
        let Some(Features::F32 { data, dim }) = f else {
            panic!("{f:?}")
        };
        assert_eq!(*dim, HARRIS_FEATURES);
        assert_eq!(bits(data), bits(&want));
    }
    assert!(d.targets[1].is_none());
    assert_eq!(targets(&d).len(), 2 * d.node_types[0].nodes);
    d.validate().unwrap();
    assert!(planted::harris_regression(0, 0).is_err());
}

#[test]
fn the_same_seed_gives_the_same_bits_and_another_seed_other_targets() {
    let d = planted::harris_regression(1, 9).unwrap();
    let again = planted::harris_regression(1, 9).unwrap();
    assert_eq!(bits(targets(&d)), bits(targets(&again)));
    assert_eq!(d, again);
    // another seed: the same graph and features, other targets
    let other = planted::harris_regression(1, 10).unwrap();
    assert_eq!(
        (&d.relations, &d.features, &d.splits),
        (&other.relations, &other.features, &other.splits)
    );
    let (a, b) = (targets(&d), targets(&other));
    let differ = a
        .iter()
        .zip(b)
        .filter(|(x, y)| x.to_bits() != y.to_bits())
        .count();
    // the nodes with no in-neighbour share a constant target in every seed
    assert!(
        differ > a.len() / 2,
        "{differ} of {} targets differ",
        a.len()
    );
    // the targets spread: column 0 is tanh(2 z), column 1 z^2 - 1 (mean 0)
    let col = |c: usize| {
        a.iter()
            .skip(c)
            .step_by(2)
            .map(|&v| f64::from(v))
            .collect::<Vec<_>>()
    };
    let (c0, c1) = (col(0), col(1));
    let var0 = c0.iter().map(|v| v * v).sum::<f64>() / c0.len() as f64;
    let mean1 = c1.iter().sum::<f64>() / c1.len() as f64;
    assert!(var0 > 0.2, "column 0: mean square {var0}");
    assert!(
        mean1.abs() < 1e-4 && c1.iter().all(|&v| v >= -1.0),
        "column 1: mean {mean1}"
    );
}

#[test]
fn splits_are_contiguous_disjoint_and_cover_the_target_type() {
    for batch in [1usize, 3] {
        let d = planted::harris_regression(batch, 0).unwrap();
        let n = d.node_types[HARRIS_TARGET].nodes;
        let s = &d.splits[HARRIS_TARGET];
        let a = (HARRIS_SPLIT.0 * n as f64).round() as u32;
        let b = ((HARRIS_SPLIT.0 + HARRIS_SPLIT.1) * n as f64).round() as u32;
        assert_eq!((a, b), (6_000 * batch as u32, 8_000 * batch as u32));
        assert_eq!(s.train, (0..a).collect::<Vec<_>>());
        assert_eq!(s.val, (a..b).collect::<Vec<_>>());
        assert_eq!(s.test, (b..n as u32).collect::<Vec<_>>());
        let mut seen = vec![0u8; n];
        for &i in s.train.iter().chain(&s.val).chain(&s.test) {
            seen[i as usize] += 1;
        }
        assert!(
            seen.iter().all(|&k| k == 1),
            "batch {batch}: not a partition"
        );
        assert_eq!(d.splits[1], Default::default());
    }
}

/// `planted::two_hop_targets`, naively: per node its in-neighbours
/// gathered first, then plain means, standardisation and `tanh`.
fn naive_targets(d: &Dataset, seed: u64) -> Vec<f64> {
    let tanh = |x: f64| 1.0 - 2.0 / (exp64(2.0 * x) + 1.0);
    let h: Vec<Vec<f64>> = (0..d.node_types.len())
        .map(|t| {
            let x = d.features[t].as_ref().unwrap().to_f32();
            let f = HARRIS_FEATURES;
            let w = planted::projection(seed, t, f);
            let mut h = Vec::new();
            for i in 0..d.node_types[t].nodes {
                let mut dot = 0.0;
                for j in 0..f {
                    dot += w[j] * f64::from(x[i * f + j]);
                }
                h.push(tanh(dot / (f as f64).sqrt()));
            }
            h
        })
        .collect();
    // in-neighbours (type, node) of every node of every type
    let mut inn: Vec<Vec<Vec<(usize, usize)>>> = d
        .node_types
        .iter()
        .map(|t| vec![Vec::new(); t.nodes])
        .collect();
    for r in &d.relations {
        for e in 0..r.src.len() {
            inn[r.dst_type][r.dst[e] as usize].push((r.src_type, r.src[e] as usize));
        }
    }
    let mean_in = |v: &Vec<Vec<f64>>| -> Vec<Vec<f64>> {
        inn.iter()
            .map(|nodes| {
                nodes
                    .iter()
                    .map(|ns| {
                        if ns.is_empty() {
                            return 0.0;
                        }
                        let mut s = 0.0;
                        for &(t, i) in ns {
                            s += v[t][i];
                        }
                        s / ns.len() as f64
                    })
                    .collect()
            })
            .collect()
    };
    let m1 = mean_in(&h);
    let m2 = mean_in(&m1);
    let z = |v: &[f64]| -> Vec<f64> {
        let n = v.len() as f64;
        let mean = v.iter().sum::<f64>() / n;
        let sd = (v.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / n).sqrt();
        v.iter().map(|x| (x - mean) / sd).collect()
    };
    let (z1, z2) = (z(&m1[HARRIS_TARGET]), z(&m2[HARRIS_TARGET]));
    let mut out = Vec::new();
    for i in 0..z1.len() {
        out.push(tanh(2.0 * z2[i]));
        out.push(z1[i] * z1[i] - 1.0);
    }
    out
}

#[test]
fn the_targets_are_the_naive_two_hop_function() {
    let seed = 5;
    let d = planted::harris_regression(1, seed).unwrap();
    let want = naive_targets(&d, seed);
    let got = targets(&d);
    assert_eq!(got.len(), want.len());
    for (k, (&g, &w)) in got.iter().zip(&want).enumerate() {
        assert!(
            (f64::from(g) - w).abs() <= 1e-5 * w.abs().max(1.0),
            "node {} column {}: {g} vs naive {w}",
            k / 2,
            k % 2
        );
    }
}

/// In-neighbours `(type, node)` of node `i` of type `t`.
fn in_neighbours(d: &Dataset, t: usize, i: u32) -> Vec<(usize, u32)> {
    d.relations
        .iter()
        .filter(|r| r.dst_type == t)
        .flat_map(|r| {
            r.src
                .iter()
                .zip(&r.dst)
                .filter(|&(_, &v)| v == i)
                .map(|(&s, _)| (r.src_type, s))
        })
        .collect()
}

/// Replaces the features of node `i` of type `t` with other values.
fn perturbed(d: &Dataset, t: usize, i: u32) -> Dataset {
    let mut p = d.clone();
    let Some(Features::F32 { data, dim }) = &mut p.features[t] else {
        panic!()
    };
    let dim = *dim;
    for v in &mut data[i as usize * dim..(i as usize + 1) * dim] {
        *v = -3.0 * *v + 0.5;
    }
    p
}

#[test]
fn a_target_follows_its_two_hop_neighbours_and_ignores_a_node_reaching_no_one() {
    let seed = 2;
    let d = planted::harris_regression(1, seed).unwrap();
    let base = targets(&d).to_vec();
    assert_eq!(
        bits(&planted::two_hop_targets(&d, HARRIS_TARGET, seed)),
        bits(&base)
    );
    // an `a` node with one in-neighbour k that has few in-neighbours of its own;
    // j, an in-neighbour of k, is a 2-hop in-neighbour of i
    let (i, k, j) = (0..d.node_types[0].nodes as u32)
        .rev()
        .find_map(|i| {
            let [k] = in_neighbours(&d, 0, i)[..] else {
                return None;
            };
            let kn = in_neighbours(&d, k.0, k.1);
            (1..=3).contains(&kn.len()).then(|| (i, k, kn[0]))
        })
        .expect("a node with one in-neighbour of in-degree 1 to 3");
    assert!(
        !in_neighbours(&d, 0, i).contains(&j),
        "{j:?} is a 1-hop in-neighbour of {i}"
    );
    let moved = planted::two_hop_targets(&perturbed(&d, j.0, j.1), HARRIS_TARGET, seed);
    let delta: Vec<f64> = base
        .iter()
        .zip(&moved)
        .map(|(a, b)| f64::from(a - b).abs())
        .collect();
    let mut sorted: Vec<f64> = delta.iter().step_by(2).copied().collect();
    sorted.sort_by(f64::total_cmp);
    let median = sorted[sorted.len() / 2];
    // every target moves a little (the standardisation over all nodes);
    // node i's m2 target far more than most
    assert!(
        delta[2 * i as usize] > 100.0 * median && delta[2 * i as usize] > 1e-3,
        "node {i} (via {k:?} from {j:?}): change {} against the median {median}",
        delta[2 * i as usize]
    );
    // a node with no out-edge feeds no mean: no target moves, bit for bit
    for t in 0..2 {
        let lonely = (0..d.node_types[t].nodes as u32)
            .find(|&u| {
                d.relations
                    .iter()
                    .all(|r| r.src_type != t || !r.src.contains(&u))
            })
            .expect("a node with no out-edge");
        let moved = planted::two_hop_targets(&perturbed(&d, t, lonely), HARRIS_TARGET, seed);
        assert_eq!(bits(&moved), bits(&base), "type {t} node {lonely}");
    }
}
