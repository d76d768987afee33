//! What the rtx-against-PyG learning comparison rests on: the mag-shaped planted
//! classification (ogbn-mag's schema and sizes, deterministic bits,
//! balanced classes, the homophily it promises, contiguous splits) and the
//! features-only baseline (`Dataset::features_only`: predictions that
//! ignore every other node).

use rtx_backend_cpu::CpuBackend;
use rtx_gnn::dataset::SELF_RELATION;
use rtx_gnn::mag::{MAG_NODES, MAG_RELATIONS, MAG_REVERSE};
use rtx_gnn::metrics::Metric;
use rtx_gnn::optim::{OptimizerConfig, Rule, Schedule};
use rtx_gnn::planted::{self, MAG_CLASSES, MAG_SPLIT, PlantedSpec};
use rtx_gnn::train::{EarlyStopping, EpochEnd, ModelSettings, Task, TrainConfig, Trainer};
use rtx_gnn::{Dataset, Features, Targets};

#[test]
fn the_mag_spec_has_ogbn_mags_schema_sizes_and_split() {
    for div in [1usize, 16] {
        let spec = PlantedSpec::mag(div, 0.5, 0.3, 0);
        let types: Vec<(&str, usize, usize)> = spec
            .types
            .iter()
            .map(|(n, c, f)| (n.as_str(), *c, *f))
            .collect();
        let want: Vec<(&str, usize, usize)> =
            MAG_NODES.iter().map(|&(n, c)| (n, c / div, 128)).collect();
        assert_eq!(types, want);
        for ((s, name, d, degree), &(mname, ms, md, edges, _)) in
            spec.relations.iter().zip(&MAG_RELATIONS)
        {
            assert_eq!(
                (s.as_str(), name.as_str(), d.as_str()),
                (MAG_NODES[ms].0, mname, MAG_NODES[md].0)
            );
            let src = MAG_NODES[ms].1 / div;
            assert_eq!(
                (degree * src as f64).round() as usize,
                edges / div,
                "{name}"
            );
        }
        let rev: Vec<(&str, usize)> = spec
            .reverses
            .iter()
            .map(|(n, r)| (n.as_str(), *r))
            .collect();
        assert_eq!(rev, MAG_REVERSE);
        assert_eq!((spec.target.as_str(), spec.classes), ("paper", MAG_CLASSES));
        assert!(spec.power_law && spec.target_signal_only);
    }
    // ogbn-mag's own split sizes at full size
    let (tr, va) = PlantedSpec::mag(1, 0.5, 0.3, 0).split;
    let n = MAG_SPLIT.0 as f64;
    assert_eq!((tr * n).round() as usize, 629_571);
    assert_eq!(((tr + va) * n).round() as usize, 629_571 + 64_879);
}

/// FNV-1a over every label, edge and feature bit of a dataset.
fn fingerprint(d: &Dataset) -> u64 {
    let mut h = 0xcbf2_9ce4_8422_2325u64;
    let mut eat = |v: u64| {
        for b in v.to_le_bytes() {
            h = (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
        }
    };
    for t in &d.targets {
        if let Some(Targets::Classes { labels, classes }) = t {
            eat(*classes as u64);
            labels.iter().for_each(|&l| eat(u64::from(l)));
        }
    }
    for r in &d.relations {
        r.src.iter().chain(&r.dst).for_each(|&v| eat(u64::from(v)));
    }
    for f in d.features.iter().flatten() {
        f.to_f32().iter().for_each(|v| eat(u64::from(v.to_bits())));
    }
    h
}

#[test]
fn the_mag_dataset_is_the_same_bits_from_a_seed() {
    let d = planted::mag_classification(1024, 0.5, 0.3, 11).unwrap();
    assert_eq!(d, planted::mag_classification(1024, 0.5, 0.3, 11).unwrap());
    assert_ne!(
        fingerprint(&d),
        fingerprint(&planted::mag_classification(1024, 0.5, 0.3, 12).unwrap())
    );
    let nodes: Vec<usize> = d.node_types.iter().map(|t| t.nodes).collect();
    assert_eq!(nodes, [719, 1108, 8, 58]);
    let edges: Vec<usize> = d.relations.iter().map(|r| r.src.len()).collect();
    assert_eq!(edges, [6978, 5289, 7329, 1019, 6978, 7329, 1019]);
    // Pinned: counter-based streams give these on every machine.
    let Some(Targets::Classes { labels, .. }) = &d.targets[0] else {
        panic!()
    };
    assert_eq!(labels[..6], PINNED_LABELS);
    assert_eq!(d.relations[1].src[..4], PINNED_CITES_SRC);
    assert_eq!(fingerprint(&d), PINNED_FINGERPRINT);
}

const PINNED_LABELS: [u32; 6] = [22, 43, 26, 8, 30, 30];
const PINNED_CITES_SRC: [u32; 4] = [0, 619, 156, 111];
const PINNED_FINGERPRINT: u64 = 11_643_143_273_257_916_227;

#[test]
fn mag_classes_are_balanced_edges_homophilous_and_splits_contiguous() {
    let (div, h) = (64, 0.6);
    let spec = PlantedSpec::mag(div, h, 0.3, 5);
    let d = planted::classification(&spec).unwrap();
    let classes = planted::hidden_classes(&spec);
    let Some(Targets::Classes { labels, classes: c }) = &d.targets[0] else {
        panic!()
    };
    assert_eq!((labels, *c), (&classes[0], MAG_CLASSES));
    // balanced: every class within 35 % of n / K on papers and authors
    for (t, cl) in classes.iter().enumerate().take(2) {
        let n = cl.len();
        let mut count = vec![0usize; MAG_CLASSES];
        cl.iter().for_each(|&k| count[k as usize] += 1);
        let mean = n as f64 / MAG_CLASSES as f64;
        for (k, &m) in count.iter().enumerate() {
            assert!(
                (m as f64 - mean).abs() < 0.35 * mean,
                "type {t} class {k}: {m} of {n}"
            );
        }
    }
    // homophilous: the share of edges whose endpoints share a class is h
    // (an edge leaves its class for a uniform other one), in every relation
    // whose endpoint types have a node of every class (institutions at 1/64
    // have two a class: an empty class's edges go anywhere)
    let every_class = |t: usize| {
        let mut seen = [false; MAG_CLASSES];
        classes[t].iter().for_each(|&k| seen[k as usize] = true);
        seen.iter().all(|&v| v)
    };
    assert!(!every_class(2) && every_class(3));
    for r in d
        .relations
        .iter()
        .filter(|r| every_class(r.src_type) && every_class(r.dst_type))
    {
        let same = r
            .src
            .iter()
            .zip(&r.dst)
            .filter(|&(&s, &t)| classes[r.src_type][s as usize] == classes[r.dst_type][t as usize])
            .count();
        let share = same as f64 / r.src.len() as f64;
        assert!((share - h).abs() < 0.02, "{}: {share}", r.name);
    }
    // power law: hubs with far more than the mean degree
    let mut indeg = vec![0usize; d.node_types[0].nodes];
    d.relations[1]
        .dst
        .iter()
        .for_each(|&t| indeg[t as usize] += 1);
    let mean = d.relations[1].dst.len() as f64 / indeg.len() as f64;
    assert!(
        *indeg.iter().max().unwrap() as f64 > 20.0 * mean,
        "{:?} {mean}",
        indeg.iter().max()
    );
    // splits: contiguous, disjoint, covering the papers in ogbn-mag's shares
    let n = d.node_types[0].nodes as u32;
    let s = &d.splits[0];
    let (a, b) = (s.train.len() as u32, (s.train.len() + s.val.len()) as u32);
    assert_eq!(s.train, (0..a).collect::<Vec<_>>());
    assert_eq!(s.val, (a..b).collect::<Vec<_>>());
    assert_eq!(s.test, (b..n).collect::<Vec<_>>());
    let share = |k: usize| k as f64 / n as f64;
    assert!((share(s.train.len()) - 629_571.0 / 736_389.0).abs() < 1e-3);
    assert!((share(s.val.len()) - 64_879.0 / 736_389.0).abs() < 1e-3);
    assert!(d.splits[1..].iter().all(|s| *s == Default::default()));
    // only papers' features carry the class: per class, the mean of feature
    // 0 over a class's nodes is about +-signal on papers, about 0 elsewhere
    for (t, want) in [(0usize, 0.3), (1, 0.0)] {
        let x = d.features[t].as_ref().unwrap().to_f32();
        let mut sum = vec![(0.0f64, 0usize); MAG_CLASSES];
        for (i, &k) in classes[t].iter().enumerate() {
            sum[k as usize].0 += f64::from(x[i * 128]);
            sum[k as usize].1 += 1;
        }
        let spread = sum.iter().map(|&(s, m)| (s / m as f64).abs()).sum::<f64>() / 64.0;
        assert!((spread - want).abs() < 0.1, "type {t}: {spread}");
    }
}

fn config(batch: Option<usize>, epochs: usize) -> TrainConfig {
    TrainConfig {
        target: "paper".into(),
        task: Task::Classify,
        epochs,
        batch,
        fanouts: vec![3, 2],
        eval_batch: 512,
        seed: 4,
        early_stopping: Some(EarlyStopping {
            metric: Metric::Accuracy,
            patience: 10,
        }),
        model: ModelSettings {
            heads: 2,
            channels: 4,
            ..ModelSettings::default()
        },
        optimizer: OptimizerConfig {
            rule: Rule::parse("adamw").unwrap(),
            lr: 0.01,
            weight_decay: 0.01,
            clip_norm: None,
            schedule: Schedule::Constant,
        },
    }
}

#[test]
fn features_only_keeps_the_type_with_a_self_loop_per_node() {
    let d = planted::small_classification(7);
    let f = d.features_only("paper").unwrap();
    f.validate().unwrap();
    assert_eq!(f.node_types, d.node_types[..1]);
    assert_eq!(f.relations.len(), 1);
    assert_eq!(f.relation_key(0), format!("paper__{SELF_RELATION}__paper"));
    let ids: Vec<u32> = (0..2000).collect();
    assert_eq!((&f.relations[0].src, &f.relations[0].dst), (&ids, &ids));
    assert_eq!(
        (&f.features[0], &f.targets[0], &f.splits[0]),
        (&d.features[0], &d.targets[0], &d.splits[0])
    );
    assert!(d.features_only("venue").is_err());
    let mut bare = d.clone();
    bare.features[0] = None;
    let e = bare.features_only("paper").unwrap_err().to_string();
    assert!(e.contains("paper.x"), "{e}");
}

/// The outputs of every paper of `data` from `params`' trained model.
fn outputs(data: &Dataset, batch: Option<usize>, ck: &std::path::Path) -> Vec<f32> {
    let b = CpuBackend::new();
    let mut t = Trainer::<CpuBackend, f32>::new(&b, data, config(batch, 0)).unwrap();
    rtx_gnn::checkpoint::Checkpoint::load(ck)
        .unwrap()
        .restore(&mut t, true)
        .unwrap();
    let n = data.node_types[0].nodes as u32;
    t.outputs_of(&(0..n).collect::<Vec<_>>()).unwrap()
}

/// A features-only model's output for a node is a function of that node's
/// features alone: changing every other node's features (full graph and
/// sampled) leaves it bit for bit, and it learns.
#[test]
fn features_only_predictions_ignore_every_other_node() {
    let dir = tempfile::tempdir().unwrap();
    let data = planted::small_classification(7)
        .features_only("paper")
        .unwrap();
    for batch in [None, Some(256)] {
        let b = CpuBackend::new();
        let mut t = Trainer::<CpuBackend, f32>::new(&b, &data, config(batch, 3)).unwrap();
        let mut acc = 0.0;
        while !t.finished() {
            if let EpochEnd::Done(r) = t.run_epoch(&mut |_| true).unwrap() {
                acc = r.val.unwrap().get(Metric::Accuracy).unwrap();
            }
        }
        assert!(
            acc > 0.2,
            "{batch:?}: validation accuracy {acc} (chance 0.125)"
        );
        let ck = dir.path().join("ck.safetensors");
        rtx_gnn::checkpoint::save(&ck, &t).unwrap();
        let base = outputs(&data, batch, &ck);
        // every odd node's features replaced
        let mut other = data.clone();
        let Some(Features::F32 { data: x, dim }) = &mut other.features[0] else {
            panic!()
        };
        let dim = *dim;
        for (i, row) in x.chunks_mut(dim).enumerate() {
            if i % 2 == 1 {
                row.iter_mut().for_each(|v| *v = -3.0 * *v + 1.0);
            }
        }
        let changed = outputs(&other, batch, &ck);
        let c = 8;
        let mut differ = 0;
        for (i, (a, b)) in base.chunks(c).zip(changed.chunks(c)).enumerate() {
            let same = a.iter().zip(b).all(|(p, q)| p.to_bits() == q.to_bits());
            if i % 2 == 0 {
                assert!(same, "{batch:?}: node {i}: {a:?} vs {b:?}");
            } else {
                differ += usize::from(!same);
            }
        }
        assert!(
            differ > 900,
            "{batch:?}: only {differ} changed nodes changed"
        );
    }
}
