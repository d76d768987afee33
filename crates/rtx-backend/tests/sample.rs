//! The host sampler against a naive one written from the definition alone
//! (edge lists scanned, a hash map per type, Floyd with a set), and the
//! properties of a uniform sample without replacement.

use std::collections::{HashMap, HashSet};

use rtx_backend::Error;
use rtx_backend::sample::{Csr, SampleSpec, choose, csr_host, draw, sample_host, sample_key};
use rtx_backend::workload::index;

/// A relation as plain edge lists.
struct Rel {
    s: usize,
    d: usize,
    src: Vec<u32>,
    dst: Vec<u32>,
}

/// What the naive sampler returns: per type the global ids in local order,
/// per relation the local (source, destination) pairs, the seeds' local ids.
type NaiveSample = (Vec<Vec<u32>>, Vec<Vec<(u32, u32)>>, Vec<u32>);

/// The naive sampler: neighbours of `v` are the sources of the edges into
/// `v` in edge order; picks by Floyd with a `HashSet`; ids in a `HashMap`.
fn naive(counts: &[usize], rels: &[Rel], seeds: &[u32], spec: &SampleSpec) -> NaiveSample {
    let mut ids: Vec<HashMap<u32, u32>> = vec![HashMap::new(); counts.len()];
    let mut nodes: Vec<Vec<u32>> = vec![Vec::new(); counts.len()];
    let mut id = |t: usize, g: u32, nodes: &mut Vec<Vec<u32>>| {
        *ids[t].entry(g).or_insert_with(|| {
            nodes[t].push(g);
            nodes[t].len() as u32 - 1
        })
    };
    let seed_ids: Vec<u32> = seeds
        .iter()
        .map(|&s| id(spec.seed_type, s, &mut nodes))
        .collect();
    let mut front: Vec<Vec<u32>> = vec![Vec::new(); counts.len()];
    front[spec.seed_type] = (0..nodes[spec.seed_type].len() as u32).collect();
    let mut edges = vec![Vec::new(); rels.len()];
    for fan in &spec.fanouts {
        let before: Vec<usize> = nodes.iter().map(Vec::len).collect();
        for (r, rel) in rels.iter().enumerate() {
            if fan[r] == 0 {
                continue;
            }
            let key = sample_key(spec.seed, spec.step, r);
            for &vl in &front[rel.d] {
                let v = nodes[rel.d][vl as usize];
                let nbrs: Vec<u32> = rel
                    .dst
                    .iter()
                    .zip(&rel.src)
                    .filter(|(d, _)| **d == v)
                    .map(|(_, s)| *s)
                    .collect();
                let (deg, k) = (nbrs.len() as u32, fan[r]);
                let picks: Vec<u32> = if deg <= k {
                    (0..deg).collect()
                } else {
                    let mut set = HashSet::new();
                    let mut order = Vec::new();
                    for s in 0..k {
                        let j = deg - k + s;
                        let t = ((draw(key, v, s) as u128 * (j as u128 + 1)) >> 64) as u32;
                        let p = if set.contains(&t) { j } else { t };
                        set.insert(p);
                        order.push(p);
                    }
                    order
                };
                for p in picks {
                    let u = id(rel.s, nbrs[p as usize], &mut nodes);
                    edges[r].push((u, vl));
                }
            }
        }
        for t in 0..counts.len() {
            front[t] = (before[t] as u32..nodes[t].len() as u32).collect();
        }
    }
    (nodes, edges, seed_ids)
}

/// Two types (0: 300 nodes, 1: 50 nodes), three relations with hub-skewed
/// destinations (so some nodes have hundreds of neighbours, many none).
fn graph() -> (Vec<usize>, Vec<Rel>) {
    let counts = vec![300, 50];
    let mk = |s: usize, d: usize, e: u64, seed: u64| Rel {
        s,
        d,
        src: (0..e).map(|k| index(seed, k, counts[s], false)).collect(),
        dst: (0..e)
            .map(|k| index(seed + 1, k, counts[d], true))
            .collect(),
    };
    (
        counts.clone(),
        vec![mk(0, 0, 2000, 1), mk(1, 0, 700, 3), mk(0, 1, 900, 5)],
    )
}

fn host_csrs<'a>(
    counts: &[usize],
    rels: &[Rel],
    store: &'a mut Vec<(Vec<u32>, Vec<u32>)>,
) -> Vec<Csr<&'a [u32]>> {
    *store = rels
        .iter()
        .map(|r| csr_host(&r.src, &r.dst, counts[r.s], counts[r.d]).unwrap())
        .collect();
    rels.iter()
        .zip(store.iter())
        .map(|(r, (o, n))| {
            Csr::from_parts(
                (r.s, counts[r.s]),
                (r.d, counts[r.d]),
                o.as_slice(),
                n.as_slice(),
            )
        })
        .collect()
}

#[test]
fn the_sampler_is_the_naive_definition() {
    let (counts, rels) = graph();
    let mut store = Vec::new();
    let csrs = host_csrs(&counts, &rels, &mut store);
    // hubs (low ids), isolated nodes, duplicate seeds, fanouts above and below degrees
    let seeds = [0u32, 1, 0, 299, 17, 1, 250];
    for (fanouts, step) in [
        (vec![vec![3, 2, 4], vec![2, 0, 1]], 0),
        (vec![vec![1000, 1000, 1000]], 3),
        (vec![vec![1, 1, 1], vec![1, 1, 1], vec![5, 5, 5]], 9),
    ] {
        let spec = SampleSpec {
            seed_type: 0,
            fanouts,
            seed: 7,
            step,
        };
        let got = sample_host(&counts, &csrs, &seeds, &spec).unwrap();
        let (nodes, edges, seed_ids) = naive(&counts, &rels, &seeds, &spec);
        assert_eq!(got.nodes, nodes);
        assert_eq!(got.seeds, seed_ids);
        assert_eq!(got.seeds, [0, 1, 0, 2, 3, 1, 4]);
        for (r, want) in edges.iter().enumerate() {
            let pairs: Vec<(u32, u32)> = got.src[r]
                .iter()
                .copied()
                .zip(got.dst[r].iter().copied())
                .collect();
            assert_eq!(&pairs, want, "relation {r}");
            assert!(
                got.dst[r].is_sorted(),
                "relation {r}: destinations in order, as Sampled::dst says"
            );
        }
        assert_eq!(got.counts, nodes.iter().map(Vec::len).collect::<Vec<_>>());
    }
}

#[test]
fn relabelled_edges_map_back_to_edges_of_the_graph() {
    let (counts, rels) = graph();
    let mut store = Vec::new();
    let csrs = host_csrs(&counts, &rels, &mut store);
    let spec = SampleSpec::uniform(0, &[4, 3], 3, 11, 2);
    let s = sample_host(&counts, &csrs, &[5, 9, 123, 0], &spec).unwrap();
    let all: Vec<HashSet<(u32, u32)>> = rels
        .iter()
        .map(|r| r.src.iter().copied().zip(r.dst.iter().copied()).collect())
        .collect();
    for (r, rel) in rels.iter().enumerate() {
        let mut per_dst: HashMap<u32, Vec<u32>> = HashMap::new();
        for (&u, &v) in s.src[r].iter().zip(&s.dst[r]) {
            let (gu, gv) = (s.nodes[rel.s][u as usize], s.nodes[rel.d][v as usize]);
            assert!(
                all[r].contains(&(gu, gv)),
                "relation {r}: ({gu}, {gv}) is not an edge"
            );
            per_dst.entry(gv).or_default().push(gu);
        }
        // without replacement: a node's picks are distinct edges of its list
        for (v, us) in per_dst {
            let deg = rel.dst.iter().filter(|&&d| d == v).count();
            assert!(
                us.len() <= deg.min(4),
                "node {v}: {} picks of {deg}",
                us.len()
            );
        }
    }
    // every local id names a distinct global node
    for n in &s.nodes {
        assert_eq!(n.iter().collect::<HashSet<_>>().len(), n.len());
    }
}

#[test]
fn floyd_picks_are_distinct_and_uniform() {
    let (deg, k) = (10u32, 3u32);
    let mut hits = vec![0u32; deg as usize];
    let mut out = Vec::new();
    let trials = 30_000u32;
    for node in 0..trials {
        out.clear();
        choose(42, node, deg, k, &mut out);
        assert_eq!(out.len(), k as usize);
        assert_eq!(
            out.iter().collect::<HashSet<_>>().len(),
            k as usize,
            "{out:?}"
        );
        for &p in &out {
            assert!(p < deg);
            hits[p as usize] += 1;
        }
    }
    // each position is picked with probability k / deg: 9,000 of 30,000
    let want = f64::from(trials * k) / f64::from(deg);
    for (p, &h) in hits.iter().enumerate() {
        assert!(
            (f64::from(h) - want).abs() < 0.05 * want,
            "position {p}: {h} picks, want about {want}"
        );
    }
    out.clear();
    choose(42, 1, 2, 5, &mut out);
    assert_eq!(
        out,
        [0, 1],
        "a fanout above the degree takes every neighbour in order"
    );
}

#[test]
fn bad_requests_are_errors_not_clamps() {
    let (counts, rels) = graph();
    let mut store = Vec::new();
    let csrs = host_csrs(&counts, &rels, &mut store);
    let ok = SampleSpec::uniform(0, &[2], 3, 1, 0);
    let msg = |seeds: &[u32], spec: &SampleSpec| {
        sample_host(&counts, &csrs, seeds, spec)
            .unwrap_err()
            .to_string()
    };
    assert!(msg(&[], &ok).contains("seed set is empty"));
    let e = sample_host(&counts, &csrs, &[3, 300], &ok).unwrap_err();
    assert!(
        matches!(
            e,
            Error::IndexOutOfRange {
                position: 1,
                value: 300,
                bound: 300
            }
        ),
        "{e}"
    );
    assert!(
        msg(
            &[1],
            &SampleSpec {
                seed_type: 2,
                ..ok.clone()
            }
        )
        .contains("seed type 2")
    );
    assert!(
        msg(
            &[1],
            &SampleSpec {
                fanouts: vec![],
                ..ok.clone()
            }
        )
        .contains("no hops")
    );
    assert!(
        msg(
            &[1],
            &SampleSpec {
                fanouts: vec![vec![1, 1]],
                ..ok.clone()
            }
        )
        .contains("hop 0 has 2 fanouts for 3 relations")
    );
    assert!(
        msg(
            &[1],
            &SampleSpec {
                fanouts: vec![vec![1, 1, 1], vec![0, 0, 0]],
                ..ok.clone()
            }
        )
        .contains("every fanout of hop 1 is 0")
    );
}

#[test]
fn the_csr_groups_sources_by_destination_in_edge_order() {
    let (o, n) = csr_host(&[7, 8, 9, 10], &[2, 0, 2, 1], 11, 4).unwrap();
    assert_eq!(o, [0, 1, 2, 4, 4]);
    assert_eq!(n, [8, 10, 7, 9]);
    assert!(csr_host(&[7, 11], &[0, 0], 11, 4).is_err());
    assert!(csr_host(&[7], &[0, 0], 11, 4).is_err());
    assert!(csr_host(&[7], &[4], 11, 4).is_err());
}
