//! Deterministic planted-label datasets: graphs whose labels a graph model
//! can learn and a model of a node's own features alone cannot (well).
//!
//! Every node of every type gets a hidden class; an edge's endpoints share
//! a class with probability `homophily`; a node's features are its class's
//! mean (a `±1` vector per type and class) times `feature_signal` plus unit
//! noise. [`classification`] labels the target type with those classes;
//! [`regression`] gives it targets that are a fixed nonlinear function of
//! its 2-hop neighbourhood's features (so message passing is needed).
//!
//! All randomness is counter-based ([`splitmix64`], [`unit()`] of
//! `docs/workloads.md`) on streams derived from the seed, so a spec and
//! a seed give the same dataset, bit for bit, on every machine.
//!
//! [`small_classification`] and [`small_regression`] are small enough to
//! train in seconds in a debug build; [`mag_classification`]
//! ([`PlantedSpec::mag`]) has ogbn-mag's schema and sizes (or 1/div of
//! them), for comparing what rtx and PyG learn and how soon
//! (docs/training.md "Planted mag-shaped tasks"); [`harris_regression`]
//! puts [`regression`]'s targets ([`two_hop_targets`]) on the Harris-shaped
//! benchmark graph (`harris.rs`).

use rtx_backend::exp::exp64;
use rtx_backend::workload::{index, splitmix64, unit, value};

use crate::dataset::{Dataset, DatasetRelation, Features, Splits, Targets};
use crate::graph::NodeType;
use crate::mag::{MAG_FEATURES, MAG_NODES, MAG_RELATIONS, MAG_REVERSE};
use crate::{Error, Result};

mod harris;

pub use harris::{HARRIS_SPLIT, HARRIS_TARGET, harris_regression};

/// What [`classification`] and [`regression`] generate.
#[derive(Debug, Clone, PartialEq)]
pub struct PlantedSpec {
    /// Node types: `(name, nodes, features per node)`; 0 features: no `x`.
    pub types: Vec<(String, usize, usize)>,
    /// Relations `(src type, name, dst type, average out-degree)`: the
    /// relation has `round(degree * src nodes)` edges.
    pub relations: Vec<(String, String, String, f64)>,
    /// Reverse relations `(name, index into relations)`: the same edges
    /// reversed (PyG's `ToUndirected`), after the relations.
    pub reverses: Vec<(String, usize)>,
    /// The node type with the labels or targets and the split.
    pub target: String,
    /// Number of hidden classes (labels of [`classification`]).
    pub classes: usize,
    /// Probability that an edge's endpoints share a class (`0..=1`).
    pub homophily: f64,
    /// Class-mean strength in the features against unit-variance noise.
    pub feature_signal: f64,
    /// Only the target type's features carry the class means; the other
    /// types' features are the noise alone (random features, as
    /// [`PlantedSpec::mag`] gives ogbn-mag's featureless types).
    pub target_signal_only: bool,
    /// Skew edge endpoints toward low ids (hubs, `P(id < x) = (x/n)^(1/3)`
    /// within a class) instead of uniform.
    pub power_law: bool,
    /// `(train, val)` fractions of the target type: train is nodes
    /// `0..a`, val `a..b`, test `b..n` (contiguous, like ogbn-mag's year
    /// split), `a = round(train * n)`, `b = round((train + val) * n)`.
    pub split: (f64, f64),
    /// The seed of every stream.
    pub seed: u64,
}

impl PlantedSpec {
    /// The spec of [`small_classification`]: `paper` (2000 nodes, 16
    /// features) and `author` (1000, 16); `paper -cites-> paper` (5 per
    /// paper), `author -writes-> paper` (4 per author) and its reverse
    /// `paper -rev_writes-> author`; 8 classes, homophily 0.8, feature
    /// signal 0.35, uniform degrees, split 60 / 20 / 20 %.
    pub fn small(seed: u64) -> PlantedSpec {
        PlantedSpec {
            types: vec![("paper".into(), 2000, 16), ("author".into(), 1000, 16)],
            relations: vec![
                ("paper".into(), "cites".into(), "paper".into(), 5.0),
                ("author".into(), "writes".into(), "paper".into(), 4.0),
            ],
            reverses: vec![("rev_writes".into(), 1)],
            target: "paper".into(),
            classes: 8,
            homophily: 0.8,
            feature_signal: 0.35,
            target_signal_only: false,
            power_law: false,
            split: (0.6, 0.2),
            seed,
        }
    }

    /// ogbn-mag's shape at `1 / div` of its size ([`crate::mag`]'s schema
    /// and counts, at least one node and edge each): `paper` (736,389 / div),
    /// `author` (1,134,649 / div), `institution` (8,740 / div) and
    /// `field_of_study` (59,965 / div), 128 features each; `author -writes->
    /// paper`, `paper -cites-> paper`, `paper -has_topic-> field_of_study`,
    /// `author -affiliated_with-> institution` with ogbn-mag's edge counts /
    /// div, and the reverses `rev_writes`, `rev_has_topic`,
    /// `rev_affiliated_with` (`cites` stays directed, as in
    /// [`crate::mag`]); power-law endpoints (hubs); [`MAG_CLASSES`] classes
    /// on papers, every node of every type with a hidden class (an author
    /// writes mostly in its own class, a paper cites mostly its own class);
    /// only papers' features carry the class signal, the other types'
    /// features are unit noise; papers split as ogbn-mag splits them by
    /// year, contiguous: the first 629,571 / 736,389 train, the next
    /// 64,879 / 736,389 validation, the rest (5.7 %) test.
    pub fn mag(div: usize, homophily: f64, feature_signal: f64, seed: u64) -> PlantedSpec {
        let div = div.max(1);
        let types: Vec<(String, usize, usize)> = MAG_NODES
            .iter()
            .map(|&(name, n)| (name.to_string(), (n / div).max(1), MAG_FEATURES))
            .collect();
        let relations = MAG_RELATIONS
            .iter()
            .map(|&(name, s, d, e, _)| {
                let edges = (e / div).max(1);
                let degree = edges as f64 / types[s].1 as f64;
                (
                    types[s].0.clone(),
                    name.to_string(),
                    types[d].0.clone(),
                    degree,
                )
            })
            .collect();
        let (n, train, val) = MAG_SPLIT;
        PlantedSpec {
            types,
            relations,
            reverses: MAG_REVERSE
                .iter()
                .map(|&(name, r)| (name.to_string(), r))
                .collect(),
            target: "paper".into(),
            classes: MAG_CLASSES,
            homophily,
            feature_signal,
            target_signal_only: true,
            power_law: true,
            split: (train as f64 / n as f64, val as f64 / n as f64),
            seed,
        }
    }
}

/// The class count of [`PlantedSpec::mag`] (ogbn-mag has 349 venues).
pub const MAG_CLASSES: usize = 64;

/// ogbn-mag's paper split by year: `(papers, train, validation)`; the
/// rest (41,939) is the test split.
pub const MAG_SPLIT: (usize, usize, usize) = (736_389, 629_571, 64_879);

/// Stream `tag` of `seed`.
fn stream(seed: u64, tag: u64) -> u64 {
    splitmix64(seed, tag)
}

const CLASS_TAG: u64 = 1000;
const NOISE_TAG: u64 = 2000;
const MEAN_TAG: u64 = 3000;
const EDGE_TAG: u64 = 4000;
const WEIGHT_TAG: u64 = 5000;

/// The graph, features and hidden classes of a spec (no targets yet).
struct Planted {
    dataset: Dataset,
    classes: Vec<Vec<u32>>,
    target: usize,
}

fn bad(msg: String) -> Error {
    Error::Dataset {
        origin: crate::dataset::Origin(None),
        key: "planted spec".into(),
        msg,
    }
}

/// Every node's hidden class, per node type of the spec (uniform over
/// `0..classes`, independent per node): the labels of the target type, and
/// what the edges of every relation are homophilous by.
pub fn hidden_classes(spec: &PlantedSpec) -> Vec<Vec<u32>> {
    let c = spec.classes.max(1) as u64;
    spec.types
        .iter()
        .enumerate()
        .map(|(t, &(_, n, _))| {
            let s = stream(spec.seed, CLASS_TAG + t as u64);
            (0..n as u64)
                .map(|i| (splitmix64(s, i) % c) as u32)
                .collect()
        })
        .collect()
}

fn generate(spec: &PlantedSpec) -> Result<Planted> {
    if spec.classes == 0 || spec.classes > u32::MAX as usize {
        return Err(bad(format!("{} classes: want at least 1", spec.classes)));
    }
    if !(0.0..=1.0).contains(&spec.homophily) || !spec.feature_signal.is_finite() {
        return Err(bad(format!(
            "homophily {} (want 0..=1), feature_signal {} (want finite)",
            spec.homophily, spec.feature_signal
        )));
    }
    let (tr, va) = spec.split;
    if !(tr >= 0.0 && va >= 0.0 && tr + va <= 1.0) {
        return Err(bad(format!(
            "split ({tr}, {va}): want fractions >= 0 that sum to at most 1"
        )));
    }
    let type_of = |name: &str| {
        spec.types
            .iter()
            .position(|t| t.0 == name)
            .ok_or_else(|| bad(format!("node type {name:?} is not in the spec's types")))
    };
    let target = type_of(&spec.target)?;
    let c = spec.classes as u64;
    let node_types: Vec<NodeType> = spec
        .types
        .iter()
        .map(|(name, n, _)| NodeType {
            name: name.clone(),
            nodes: *n,
        })
        .collect();
    let classes = hidden_classes(spec);
    // Features: signal * mean[class] + unit-variance uniform noise.
    let sqrt3 = 3f64.sqrt();
    let features: Vec<Option<Features>> = spec
        .types
        .iter()
        .enumerate()
        .map(|(t, &(_, n, f))| {
            (f > 0).then(|| {
                let ms = stream(spec.seed, MEAN_TAG + t as u64);
                let ns = stream(spec.seed, NOISE_TAG + t as u64);
                let signal = if spec.target_signal_only && t != target {
                    0.0
                } else {
                    spec.feature_signal
                };
                let mut data = Vec::with_capacity(n * f);
                for (i, &cl) in classes[t].iter().enumerate() {
                    let cl = u64::from(cl);
                    for j in 0..f as u64 {
                        let mean = if signal == 0.0 || value(ms, cl * f as u64 + j) < 0.0 {
                            -1.0
                        } else {
                            1.0
                        };
                        let k = i as u64 * f as u64 + j;
                        let noise = f64::from(value(ns, k)) * sqrt3;
                        data.push((signal * mean + noise) as f32);
                    }
                }
                Features::F32 { data, dim: f }
            })
        })
        .collect();
    // Nodes of each type by class, for the endpoints of homophilous edges.
    let buckets: Vec<Vec<Vec<u32>>> = classes
        .iter()
        .map(|cl| {
            let mut b = vec![Vec::new(); spec.classes];
            for (i, &k) in cl.iter().enumerate() {
                b[k as usize].push(i as u32);
            }
            b
        })
        .collect();
    let mut relations = Vec::with_capacity(spec.relations.len() + spec.reverses.len());
    for (r, (s, name, d, degree)) in spec.relations.iter().enumerate() {
        let (si, di) = (type_of(s)?, type_of(d)?);
        let (ns, nd) = (node_types[si].nodes, node_types[di].nodes);
        if !(degree.is_finite() && *degree >= 0.0) {
            return Err(bad(format!("relation {name}: degree {degree}")));
        }
        let e = if ns == 0 || nd == 0 {
            0
        } else {
            (degree * ns as f64).round() as u64
        };
        let base = stream(spec.seed, EDGE_TAG + r as u64);
        let (s_src, s_coin, s_cls, s_dst) = (
            stream(base, 0),
            stream(base, 1),
            stream(base, 2),
            stream(base, 3),
        );
        let mut src = Vec::with_capacity(e as usize);
        let mut dst = Vec::with_capacity(e as usize);
        for k in 0..e {
            let a = index(s_src, k, ns, spec.power_law);
            let ca = u64::from(classes[si][a as usize]);
            let cb = if c == 1 || unit(s_coin, k) < spec.homophily {
                ca
            } else {
                (ca + 1 + splitmix64(s_cls, k) % (c - 1)) % c
            };
            let bucket = &buckets[di][cb as usize];
            let b = if bucket.is_empty() {
                index(s_dst, k, nd, spec.power_law)
            } else {
                bucket[index(s_dst, k, bucket.len(), spec.power_law) as usize]
            };
            src.push(a);
            dst.push(b);
        }
        relations.push(DatasetRelation {
            src_type: si,
            name: name.clone(),
            dst_type: di,
            src,
            dst,
        });
    }
    for (name, r) in &spec.reverses {
        let Some(fwd) = relations.get(*r).filter(|_| *r < spec.relations.len()) else {
            return Err(bad(format!("reverse {name}: no relation {r}")));
        };
        let rev = DatasetRelation {
            src_type: fwd.dst_type,
            name: name.clone(),
            dst_type: fwd.src_type,
            src: fwd.dst.clone(),
            dst: fwd.src.clone(),
        };
        relations.push(rev);
    }
    let mut splits = vec![Splits::default(); node_types.len()];
    splits[target] = contiguous_splits(node_types[target].nodes, spec.split);
    let nt = node_types.len();
    let dataset = Dataset {
        node_types,
        relations,
        features,
        targets: vec![None; nt],
        splits,
    };
    Ok(Planted {
        dataset,
        classes,
        target,
    })
}

/// A dataset whose target type is labelled with its nodes' hidden classes
/// (`Targets::Classes`, `spec.classes` classes).
///
/// # Errors
/// [`Error::Dataset`] (key `planted spec`) for a spec that does not fit:
/// an unknown type, 0 classes, homophily outside `0..=1`, bad fractions;
/// and what [`Dataset::validate`] finds (duplicate names, too many nodes).
pub fn classification(spec: &PlantedSpec) -> Result<Dataset> {
    let Planted {
        mut dataset,
        classes,
        target,
    } = generate(spec)?;
    dataset.targets[target] = Some(Targets::Classes {
        labels: classes[target].clone(),
        classes: spec.classes,
    });
    dataset.validate()?;
    Ok(dataset)
}

/// The contiguous splits of `n` nodes by fractions `(train, val)`: train
/// `0..a`, validation `a..b`, test `b..n`, `a = round(train * n)`, `b =
/// round((train + val) * n)` (clamped to `0..=n`).
fn contiguous_splits(n: usize, (tr, va): (f64, f64)) -> Splits {
    let a = ((tr * n as f64).round() as usize).min(n);
    let b = (((tr + va) * n as f64).round() as usize).clamp(a, n);
    Splits {
        train: (0..a as u32).collect(),
        val: (a as u32..b as u32).collect(),
        test: (b as u32..n as u32).collect(),
    }
}

/// Per node of every type, the mean of `value[src]` over its incoming edges
/// (all relations into its type, in relation order), 0 with none.
fn in_mean(dataset: &Dataset, value: &[Vec<f64>]) -> Vec<Vec<f64>> {
    let mut sum: Vec<Vec<f64>> = dataset
        .node_types
        .iter()
        .map(|t| vec![0.0; t.nodes])
        .collect();
    let mut count: Vec<Vec<u32>> = dataset
        .node_types
        .iter()
        .map(|t| vec![0; t.nodes])
        .collect();
    for r in &dataset.relations {
        for (&s, &d) in r.src.iter().zip(&r.dst) {
            sum[r.dst_type][d as usize] += value[r.src_type][s as usize];
            count[r.dst_type][d as usize] += 1;
        }
    }
    for (s, c) in sum.iter_mut().zip(&count) {
        for (v, &k) in s.iter_mut().zip(c) {
            if k > 0 {
                *v /= f64::from(k);
            }
        }
    }
    sum
}

/// `tanh` through the portable [`exp64`] (a platform `tanh` may differ in
/// the last bit between libms), so the targets are the same on every machine.
fn tanh(x: f64) -> f64 {
    1.0 - 2.0 / (exp64(2.0 * x) + 1.0)
}

fn standardized(v: &[f64]) -> Vec<f64> {
    let n = v.len().max(1) as f64;
    let mean = v.iter().sum::<f64>() / n;
    let var = v.iter().map(|x| (x - mean) * (x - mean)).sum::<f64>() / n;
    let sd = if var > 0.0 { var.sqrt() } else { 1.0 };
    v.iter().map(|x| (x - mean) / sd).collect()
}

/// The weights `w_t` of the fixed projection of node type `t`'s `f`
/// features in [`two_hop_targets`]: `sqrt(3) value(s, j)`, `j < f`, `s` the
/// seed's stream of type `t` (uniform in `[-sqrt(3), sqrt(3))`, unit
/// variance).
pub fn projection(seed: u64, node_type: usize, features: usize) -> Vec<f64> {
    let ws = stream(seed, WEIGHT_TAG + node_type as u64);
    (0..features as u64)
        .map(|j| f64::from(value(ws, j)) * 3f64.sqrt())
        .collect()
}

/// Two real targets per node of type `target` (row-major `[n, 2]`), a
/// fixed nonlinear function of its 2-hop neighbourhood in `dataset`: with
/// `h = tanh(w_t . x / sqrt(f))` per node of every type (`w_t` =
/// [`projection`]`(seed, t, f)`, `h = 0` without features), `m1` the mean
/// of `h` over a node's in-neighbours (every relation into its type) and
/// `m2` the mean of `m1` over its in-neighbours (0 with none), the targets
/// are `tanh(2 z(m2))` and `z(m1)^2 - 1`, `z` standardising over the
/// target type's nodes (`tanh` through the portable [`exp64`]; sums in
/// `f64`, in relation and edge order). A node's own features enter its
/// targets only through 2-hop cycles and self-loops. The targets of
/// [`regression`] and [`harris_regression`].
pub fn two_hop_targets(dataset: &Dataset, target: usize, seed: u64) -> Vec<f32> {
    let h: Vec<Vec<f64>> = dataset
        .features
        .iter()
        .enumerate()
        .map(|(t, x)| {
            let n = dataset.node_types[t].nodes;
            let Some(x) = x else {
                return vec![0.0; n];
            };
            let f = x.dim();
            let w = projection(seed, t, f);
            let x = x.to_f32();
            (0..n)
                .map(|i| {
                    let dot: f64 = (0..f).map(|j| w[j] * f64::from(x[i * f + j])).sum();
                    tanh(dot / (f as f64).sqrt())
                })
                .collect()
        })
        .collect();
    let m1 = in_mean(dataset, &h);
    let m2 = in_mean(dataset, &m1);
    let (z1, z2) = (standardized(&m1[target]), standardized(&m2[target]));
    let mut data = Vec::with_capacity(2 * z1.len());
    for (a, b) in z1.iter().zip(&z2) {
        data.push(tanh(2.0 * b) as f32);
        data.push((a * a - 1.0) as f32);
    }
    data
}

/// A dataset whose target type has two real targets per node, a fixed
/// nonlinear function of its 2-hop neighbourhood: [`two_hop_targets`]
/// with the spec's seed.
///
/// # Errors
/// As [`classification`].
pub fn regression(spec: &PlantedSpec) -> Result<Dataset> {
    let Planted {
        mut dataset,
        target,
        ..
    } = generate(spec)?;
    let data = two_hop_targets(&dataset, target, spec.seed);
    dataset.targets[target] = Some(Targets::Values { data, dim: 2 });
    dataset.validate()?;
    Ok(dataset)
}

/// [`classification`] of [`PlantedSpec::small`]: 3000 nodes, 18,000 edges,
/// 8 classes on `paper`.
///
/// # Panics
/// Never: the spec is valid.
pub fn small_classification(seed: u64) -> Dataset {
    classification(&PlantedSpec::small(seed)).expect("the small spec is valid")
}

/// [`classification`] of [`PlantedSpec::mag`]: ogbn-mag's schema and
/// sizes at `1 / div`, [`MAG_CLASSES`] classes on papers. `div` 16 (46,024
/// papers, 2.3 million edges) takes about half a second to generate and
/// write in a release build; `div` 1 (1.94 million nodes, 36.8 million
/// edges, 1 GB of features) about 6 s (docs/training.md).
///
/// # Errors
/// As [`classification`] (homophily outside `0..=1`, a signal that is not
/// finite).
pub fn mag_classification(
    div: usize,
    homophily: f64,
    feature_signal: f64,
    seed: u64,
) -> Result<Dataset> {
    classification(&PlantedSpec::mag(div, homophily, feature_signal, seed))
}

/// [`regression`] of [`PlantedSpec::small`] with features that carry no
/// class signal (`feature_signal` 0): 2 targets on `paper`.
///
/// # Panics
/// Never: the spec is valid.
pub fn small_regression(seed: u64) -> Dataset {
    let spec = PlantedSpec {
        feature_signal: 0.0,
        ..PlantedSpec::small(seed)
    };
    regression(&spec).expect("the small spec is valid")
}
