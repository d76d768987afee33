//! The training surface on the CPU backend: the objectives' gradients
//! against finite differences (f64, with dropout), learning on the planted
//! datasets, determinism across runs and thread counts, checkpoints and
//! bit-exact resumption, schedules.

use rtx_backend::Element;
use rtx_backend::prelude::*;
use rtx_backend_cpu::CpuBackend;
use rtx_gnn::checkpoint::{self, Checkpoint};
use rtx_gnn::dataset::Dataset;
use rtx_gnn::metrics::Metric;
use rtx_gnn::model::{LossKind, Objective, Targets};
use rtx_gnn::optim::{OptimizerConfig, Rule, Schedule};
use rtx_gnn::planted;
use rtx_gnn::train::{
    EarlyStopping, EpochEnd, EpochReport, ModelSettings, Task, TrainConfig, Trainer, loss_hash,
};
use rtx_gnn::{HetGat, HetGatConfig, HeteroGraph, NodeType};

fn adamw(lr: f64) -> OptimizerConfig {
    OptimizerConfig {
        rule: Rule::parse("adamw").unwrap(),
        lr,
        weight_decay: 0.01,
        clip_norm: None,
        schedule: Schedule::Constant,
    }
}

fn config(task: Task, epochs: usize, batch: Option<usize>) -> TrainConfig {
    TrainConfig {
        target: "paper".into(),
        task,
        epochs,
        batch,
        fanouts: vec![5, 5],
        eval_batch: 512,
        seed: 11,
        early_stopping: Some(EarlyStopping {
            metric: task.default_metric(),
            patience: usize::MAX,
        }),
        model: ModelSettings {
            heads: 2,
            channels: 8,
            input_dropout: 0.1,
            attention_dropout: 0.1,
            ..ModelSettings::default()
        },
        optimizer: adamw(0.01),
    }
}

/// Runs every epoch; returns the reports.
fn run_all<T: rtx_backend::Element>(t: &mut Trainer<'_, CpuBackend, T>) -> Vec<EpochReport> {
    let mut out = Vec::new();
    while !t.finished() {
        match t.run_epoch(&mut |_| true).unwrap() {
            EpochEnd::Done(r) => out.push(r),
            EpochEnd::Interrupted => unreachable!("nothing interrupts"),
        }
    }
    out
}

fn param_bits<T: rtx_backend::Element>(b: &CpuBackend, t: &Trainer<'_, CpuBackend, T>) -> Vec<u64> {
    t.model()
        .params()
        .iter()
        .flat_map(|p| b.download(p).unwrap())
        .map(|v| v.to_f64().to_bits())
        .collect()
}

/// A tiny two-type graph for the gradient checks.
fn tiny() -> (HeteroGraph, Vec<Vec<f64>>) {
    let types = vec![
        NodeType {
            name: "a".into(),
            nodes: 5,
        },
        NodeType {
            name: "b".into(),
            nodes: 3,
        },
    ];
    let rels = vec![
        (
            "aa".into(),
            0,
            0,
            vec![0, 1, 2, 3, 4, 0],
            vec![1, 2, 3, 4, 0, 2],
        ),
        ("ba".into(), 1, 0, vec![0, 1, 2, 2], vec![0, 0, 3, 4]),
        ("ab".into(), 0, 1, vec![0, 3, 4], vec![0, 1, 2]),
    ];
    let g = HeteroGraph::new(types, rels).unwrap();
    let x = vec![
        (0..15).map(|i| ((i * 7 % 11) as f64 - 5.0) / 4.0).collect(),
        (0..6).map(|i| ((i * 5 % 7) as f64 - 3.0) / 3.0).collect(),
    ];
    (g, x)
}

/// The model of [`tiny`]'s graph: 2 layers x 2 heads x 2 channels, `out`
/// outputs on type 0, input and attention dropout `p_in`, `p_att`.
fn tiny_config(out: usize, (p_in, p_att): (f64, f64)) -> HetGatConfig {
    HetGatConfig {
        in_features: vec![3, 2],
        heads: 2,
        channels: 2,
        layers: 2,
        negative_slope: 0.2,
        target: 0,
        out_features: out,
        input_dropout: p_in,
        attention_dropout: p_att,
    }
}

/// [`tiny`]'s features on `b`.
fn tiny_inputs(b: &CpuBackend, xs: &[Vec<f64>]) -> Vec<rtx_backend::BTensor<CpuBackend, f64>> {
    vec![
        b.upload(&xs[0], &[5, 3]).unwrap(),
        b.upload(&xs[1], &[3, 2]).unwrap(),
    ]
}

/// The objectives' rows of [`tiny`]'s type 0.
const TINY_ROWS: [u32; 3] = [4, 0, 2];
/// Their classes.
const TINY_LABELS: [u32; 3] = [2, 0, 1];

/// Their regression targets, `out` each.
fn tiny_values(out: usize) -> Vec<f64> {
    (0..3 * out).map(|i| (i as f64 * 0.37).sin()).collect()
}

/// [`TINY_LABELS`] or [`tiny_values`] on `b`, as `loss` reads them.
fn tiny_targets(b: &CpuBackend, loss: LossKind, out: usize) -> Targets<CpuBackend, f64> {
    match loss {
        LossKind::CrossEntropy => Targets::Classes(b.index_from_host(&TINY_LABELS).unwrap()),
        _ => Targets::Values(b.upload(&tiny_values(out), &[3, out]).unwrap()),
    }
}

/// Every parameter element's gradient against central differences of the
/// objective in f64, the same dropout masks in every evaluation.
fn check_objective(loss: LossKind, out: usize) {
    let b = CpuBackend::new();
    let (g, xs) = tiny();
    let mut model =
        HetGat::<CpuBackend, f64>::new(&b, &g, tiny_config(out, (0.3, 0.25)), 5).unwrap();
    // biases start at zero, and a node whose inputs are all dropped then sits
    // on ReLU's kink, where a central difference is not the derivative: move
    // every parameter off its initial value
    for (i, p) in model.params_mut().iter_mut().enumerate() {
        let mut v = b.download(p).unwrap();
        for (j, e) in v.iter_mut().enumerate() {
            *e += 0.1 * f64::from(rtx_backend::workload::value(900 + i as u64, j as u64));
        }
        let shape = p.shape().to_vec();
        *p = b.upload(&v, &shape).unwrap();
    }
    let x = tiny_inputs(&b, &xs);
    let rows = b.index_from_host(&TINY_ROWS).unwrap();
    let targets = tiny_targets(&b, loss, out);
    let obj = Objective {
        loss,
        rows: &rows,
        targets: &targets,
    };
    let drop = Some(42);
    let grads = model.objective_grads(&b, &g, &x, &obj, drop).unwrap().grads;
    let eps = 1e-6;
    let mut checked = 0;
    #[allow(clippy::needless_range_loop)] // the parameters are replaced inside
    for p in 0..model.params().len() {
        let base = b.download(&model.params()[p]).unwrap();
        let shape = model.params()[p].shape().to_vec();
        let grad = grads[p]
            .as_ref()
            .map(|t| b.download(t).unwrap())
            .unwrap_or_else(|| vec![0.0; base.len()]);
        for i in 0..base.len() {
            let mut eval = |d: f64| {
                let mut v = base.clone();
                v[i] += d;
                model.params_mut()[p] = b.upload(&v, &shape).unwrap();
                let l = model
                    .objective_grads(&b, &g, &x, &obj, drop)
                    .unwrap()
                    .loss
                    .read(&b)
                    .unwrap();
                model.params_mut()[p] = b.upload(&base, &shape).unwrap();
                l
            };
            let fd = (eval(eps) - eval(-eps)) / (2.0 * eps);
            let tol = 1e-6 + 1e-4 * fd.abs().max(grad[i].abs());
            assert!(
                (fd - grad[i]).abs() <= tol,
                "{} loss: parameter {} element {i}: analytic {} vs finite difference {fd}",
                loss.name(),
                model.param_names()[p],
                grad[i]
            );
            checked += 1;
        }
    }
    assert!(checked > 100, "only {checked} elements checked");
}

#[test]
fn cross_entropy_gradients_match_finite_differences_with_dropout() {
    check_objective(LossKind::CrossEntropy, 3);
}

#[test]
fn mse_gradients_match_finite_differences_with_dropout() {
    check_objective(LossKind::Mse, 2);
}

#[test]
fn l1_gradients_match_finite_differences_with_dropout() {
    check_objective(LossKind::L1, 2);
}

/// The loss over a few rows (a mini-batch's seeds) against the host
/// computed from the forward's outputs: torch's `cross_entropy`,
/// `mse_loss` and `l1_loss` means over those rows alone, in f64.
#[test]
fn an_objective_over_some_rows_is_the_host_mean_over_those_rows() {
    let b = CpuBackend::new();
    let (g, xs) = tiny();
    let x = tiny_inputs(&b, &xs);
    let rows = b.index_from_host(&TINY_ROWS).unwrap();
    for (loss, out) in [
        (LossKind::CrossEntropy, 3usize),
        (LossKind::Mse, 2),
        (LossKind::L1, 2),
    ] {
        let model =
            HetGat::<CpuBackend, f64>::new(&b, &g, tiny_config(out, (0.0, 0.0)), 11).unwrap();
        let y = b.download(&model.forward(&b, &g, &x).unwrap()).unwrap();
        let (labels, values) = (TINY_LABELS, tiny_values(out));
        let targets = tiny_targets(&b, loss, out);
        let obj = Objective {
            loss,
            rows: &rows,
            targets: &targets,
        };
        let got = model
            .objective_grads(&b, &g, &x, &obj, None)
            .unwrap()
            .loss
            .read(&b)
            .unwrap();
        let row = |k: usize| &y[TINY_ROWS[k] as usize * out..(TINY_ROWS[k] as usize + 1) * out];
        let want = match loss {
            LossKind::CrossEntropy => {
                (0..3)
                    .map(|k| {
                        let z = row(k);
                        let lse = z.iter().map(|v| v.exp()).sum::<f64>().ln();
                        lse - z[labels[k] as usize]
                    })
                    .sum::<f64>()
                    / 3.0
            }
            LossKind::Mse => {
                (0..3)
                    .flat_map(|k| (0..out).map(move |j| (k, j)))
                    .map(|(k, j)| (row(k)[j] - values[k * out + j]).powi(2))
                    .sum::<f64>()
                    / (3 * out) as f64
            }
            LossKind::L1 => {
                (0..3)
                    .flat_map(|k| (0..out).map(move |j| (k, j)))
                    .map(|(k, j)| (row(k)[j] - values[k * out + j]).abs())
                    .sum::<f64>()
                    / (3 * out) as f64
            }
        };
        assert!(
            (got - want).abs() <= 1e-12 * want.abs().max(1.0),
            "{}: {got} vs the host's {want}",
            loss.name()
        );
    }
}

#[test]
fn full_graph_classification_learns_the_planted_labels() {
    let b = CpuBackend::new();
    let data = planted::small_classification(7);
    let mut t =
        Trainer::<CpuBackend, f32>::new(&b, &data, config(Task::Classify, 30, None)).unwrap();
    let reports = run_all(&mut t);
    assert_eq!(reports.len(), 30);
    let first = reports[0].train_loss;
    let last = reports.last().unwrap().train_loss;
    assert!(last < 0.5 * first, "loss {first} -> {last}");
    let acc = reports
        .last()
        .unwrap()
        .val
        .as_ref()
        .unwrap()
        .get(Metric::Accuracy)
        .unwrap();
    let classes = t.outputs() as f64;
    assert!(
        acc > 3.0 / classes,
        "val accuracy {acc} after 30 epochs ({classes} classes)"
    );
}

/// An epoch's validation and test scores (one full-graph forward for both,
/// or sampled batches) are the scores of each split's own outputs.
#[test]
fn epoch_scores_are_the_scores_of_each_splits_outputs() {
    let b = CpuBackend::new();
    let data = planted::small_classification(7);
    for batch in [None, Some(256)] {
        let mut t =
            Trainer::<CpuBackend, f32>::new(&b, &data, config(Task::Classify, 2, batch)).unwrap();
        let reports = run_all(&mut t);
        let last = reports.last().unwrap();
        let sp = &data.splits[t.target()];
        assert!(!sp.val.is_empty() && !sp.test.is_empty());
        for (nodes, got) in [(&sp.val, &last.val), (&sp.test, &last.test)] {
            let out = t.outputs_of(nodes).unwrap();
            let want =
                rtx_gnn::train::score(&out, &data.targets[t.target()], nodes, Task::Classify)
                    .unwrap();
            assert_eq!(got.as_ref(), Some(&want), "batch {batch:?}");
        }
        assert_eq!(
            t.evaluate_splits().unwrap(),
            (last.val.clone(), last.test.clone())
        );
    }
}

#[test]
fn sampled_classification_learns_and_repeats_bit_for_bit() {
    let b = CpuBackend::new();
    let data = planted::small_classification(7);
    let cfg = config(Task::Classify, 3, Some(256));
    let mut t1 = Trainer::<CpuBackend, f32>::new(&b, &data, cfg.clone()).unwrap();
    let r1 = run_all(&mut t1);
    assert!(r1[2].train_loss < r1[0].train_loss, "{r1:?}");
    // another run, on another thread count: the same bits
    let b4 = CpuBackend::with_threads(3).unwrap();
    let mut t2 = Trainer::<CpuBackend, f32>::new(&b4, &data, cfg).unwrap();
    let r2 = run_all(&mut t2);
    let losses = |r: &[EpochReport]| r.iter().map(|e| e.train_loss.to_bits()).collect::<Vec<_>>();
    assert_eq!(losses(&r1), losses(&r2));
    assert_eq!(param_bits(&b, &t1), param_bits(&b4, &t2));
}

#[test]
fn regression_learns_the_two_hop_targets() {
    // the small planted regression overfits (train MSE falls to 0.06 in 60
    // epochs while the validation R² peaks near 0.14 after 10): early
    // stopping on the validation MSE keeps the peak
    let b = CpuBackend::new();
    let data = planted::small_regression(3);
    let mut cfg = config(Task::Regress(LossKind::Mse), 30, None);
    cfg.target = data.node_types[data.targets.iter().position(Option::is_some).unwrap()]
        .name
        .clone();
    cfg.model = ModelSettings::default();
    cfg.early_stopping = Some(EarlyStopping {
        metric: Metric::Mse,
        patience: 5,
    });
    let mut t = Trainer::<CpuBackend, f32>::new(&b, &data, cfg).unwrap();
    let reports = run_all(&mut t);
    let first = reports[0].train_loss;
    let last = reports.last().unwrap().train_loss;
    assert!(last < 0.9 * first, "train mse {first} -> {last}");
    let stop = reports.last().unwrap();
    assert!(
        stop.stop && reports.len() < 30,
        "early stopping ended the run: {}",
        reports.len()
    );
    let (best, epoch) = t.position().best.unwrap();
    let best_report = &reports[epoch];
    assert!(best_report.best);
    assert_eq!(
        best_report.val.as_ref().unwrap().get(Metric::Mse),
        Some(best)
    );
    let r2 = best_report.val.as_ref().unwrap().get(Metric::R2).unwrap();
    assert!(r2 > 0.05, "best validation r2 {r2}");
    // the kept parameters are the best epoch's
    t.use_best().unwrap();
    let (val, _) = t.evaluate_splits().unwrap();
    assert_eq!(val.unwrap().get(Metric::Mse), Some(best));
}

/// Trains `split` epochs, checkpoints (mid-epoch when `mid_step`), loads
/// the checkpoint into a fresh trainer and finishes: the same bits as an
/// uninterrupted run.
fn resume_matches(batch: Option<usize>, mid_step: Option<usize>, rule: Rule) {
    let b = CpuBackend::new();
    let data = planted::small_classification(7);
    let mut cfg = config(Task::Classify, 4, batch);
    cfg.optimizer.rule = rule;
    cfg.optimizer.clip_norm = Some(1.0);
    cfg.optimizer.schedule = Schedule::Cosine {
        warmup: 2,
        total: 20,
        min_lr: 0.001,
    };
    let mut whole = Trainer::<CpuBackend, f32>::new(&b, &data, cfg.clone()).unwrap();
    let whole_reports = run_all(&mut whole);

    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("run.safetensors");
    let mut first = Trainer::<CpuBackend, f32>::new(&b, &data, cfg.clone()).unwrap();
    for _ in 0..2 {
        assert!(matches!(
            first.run_epoch(&mut |_| true).unwrap(),
            EpochEnd::Done(_)
        ));
    }
    if let Some(k) = mid_step {
        let mut n = 0;
        let end = first
            .run_epoch(&mut |_| {
                n += 1;
                n < k
            })
            .unwrap();
        assert_eq!(end, EpochEnd::Interrupted);
        assert_eq!(first.position().step_in_epoch, k);
    }
    checkpoint::save(&path, &first).unwrap();
    drop(first);

    let ck = Checkpoint::load(&path).unwrap();
    let mut resumed =
        Trainer::<CpuBackend, f32>::new(&b, &data, ck.train_config().unwrap()).unwrap();
    ck.restore(&mut resumed, false).unwrap();
    let rest = run_all(&mut resumed);
    assert_eq!(
        param_bits(&b, &whole),
        param_bits(&b, &resumed),
        "parameters after resuming"
    );
    let tail: Vec<u64> = whole_reports[2..]
        .iter()
        .map(|r| r.train_loss.to_bits())
        .collect();
    let got: Vec<u64> = rest.iter().map(|r| r.train_loss.to_bits()).collect();
    assert_eq!(tail, got, "epoch losses after resuming");
    let hashes = |r: &[EpochReport]| r.iter().map(|e| e.loss_hash).collect::<Vec<_>>();
    assert_eq!(
        hashes(&whole_reports[2..]),
        hashes(&rest),
        "epoch loss hashes after resuming"
    );
}

/// An epoch's `loss_hash` is `train::loss_hash` of its steps' losses, in
/// order: the same in a second run, another with another seed.
#[test]
fn an_epochs_loss_hash_hashes_its_step_losses_in_order() {
    let b = CpuBackend::new();
    let data = planted::small_classification(7);
    let run = |seed: u64, batch: Option<usize>| {
        let mut cfg = config(Task::Classify, 2, batch);
        cfg.seed = seed;
        let mut t = Trainer::<CpuBackend, f32>::new(&b, &data, cfg).unwrap();
        let mut out = Vec::new();
        while !t.finished() {
            let mut steps = Vec::new();
            let EpochEnd::Done(r) = t
                .run_epoch(&mut |s| {
                    steps.push(s.loss);
                    true
                })
                .unwrap()
            else {
                unreachable!()
            };
            assert_eq!(r.loss_hash, loss_hash(steps.iter().copied()), "{steps:?}");
            out.push(r.loss_hash);
        }
        out
    };
    for batch in [None, Some(500)] {
        let first = run(3, batch);
        assert_ne!(first[0], first[1], "{batch:?}");
        assert_eq!(first, run(3, batch), "{batch:?}");
        let other = run(4, batch);
        assert!(first.iter().zip(&other).all(|(a, b)| a != b), "{batch:?}");
    }
}

#[test]
fn a_full_graph_run_resumed_from_a_checkpoint_continues_bit_for_bit() {
    resume_matches(None, None, Rule::parse("adamw").unwrap());
}

#[test]
fn a_sampled_run_resumed_mid_epoch_continues_bit_for_bit() {
    resume_matches(Some(300), Some(2), Rule::parse("adam").unwrap());
    resume_matches(
        Some(300),
        Some(1),
        Rule::Sgd {
            momentum: 0.9,
            dampening: 0.0,
            nesterov: true,
        },
    );
}

/// Stopped after every step and run on (the same trainer, no checkpoint):
/// the steps' losses, the epochs' hashes and the parameters are those of an
/// uninterrupted run, and each stop leaves the position after its step
/// (whatever the trainer had begun of the next one is discarded).
#[test]
fn a_sampled_run_stopped_after_every_step_continues_bit_for_bit() {
    let b = CpuBackend::new();
    let data = planted::small_classification(3);
    let cfg = config(Task::Classify, 2, Some(200));
    let mut whole = Trainer::<CpuBackend, f32>::new(&b, &data, cfg.clone()).unwrap();
    let mut losses = Vec::new();
    let mut reports = Vec::new();
    for _ in 0..2 {
        match whole
            .run_epoch(&mut |s| {
                losses.push(s.loss.to_bits());
                true
            })
            .unwrap()
        {
            EpochEnd::Done(r) => reports.push(r),
            EpochEnd::Interrupted => unreachable!("nothing interrupts"),
        }
    }
    let mut stopped = Trainer::<CpuBackend, f32>::new(&b, &data, cfg).unwrap();
    let mut got = Vec::new();
    let mut got_reports = Vec::new();
    while got_reports.len() < 2 {
        let before = stopped.position().global_step;
        let end = stopped
            .run_epoch(&mut |s| {
                got.push(s.loss.to_bits());
                false
            })
            .unwrap();
        assert_eq!(stopped.position().global_step, before + 1, "one step a run");
        if let EpochEnd::Done(r) = end {
            got_reports.push(r);
        }
    }
    assert!(losses.len() > 4, "several steps an epoch");
    assert_eq!(got, losses, "step losses");
    let hashes = |r: &[EpochReport]| r.iter().map(|e| e.loss_hash).collect::<Vec<_>>();
    assert_eq!(hashes(&got_reports), hashes(&reports), "epoch loss hashes");
    assert_eq!(
        param_bits(&b, &stopped),
        param_bits(&b, &whole),
        "parameters"
    );
}

/// A diverging run stops with an error at the first step whose loss is not
/// finite, naming it; the position stays before that step.
#[test]
fn a_non_finite_loss_names_its_step() {
    let b = CpuBackend::new();
    let data = planted::small_classification(3);
    let mut cfg = config(Task::Classify, 1, Some(200));
    cfg.optimizer.rule = Rule::Sgd {
        momentum: 0.0,
        dampening: 0.0,
        nesterov: false,
    };
    cfg.optimizer.lr = 1e30;
    let mut t = Trainer::<CpuBackend, f32>::new(&b, &data, cfg).unwrap();
    let mut seen = Vec::new();
    let e = t
        .run_epoch(&mut |s| {
            seen.push(s.loss);
            true
        })
        .unwrap_err()
        .to_string();
    let k = seen.len();
    assert!(k > 0 && seen.iter().all(|l| l.is_finite()), "{seen:?}");
    assert!(
        e.contains(&format!("at epoch 0, step {k}:")) && e.contains("lower the learning rate"),
        "{e}"
    );
    assert_eq!(
        t.position().step_in_epoch,
        k,
        "the position is before step {k}"
    );
    assert_eq!(t.position().global_step, k as u64);
}

#[test]
fn a_checkpoint_for_another_model_or_dataset_names_the_first_difference() {
    let b = CpuBackend::new();
    let data = planted::small_classification(7);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("a.safetensors");
    let mut t =
        Trainer::<CpuBackend, f32>::new(&b, &data, config(Task::Classify, 1, None)).unwrap();
    run_all(&mut t);
    checkpoint::save(&path, &t).unwrap();
    let ck = Checkpoint::load(&path).unwrap();
    // another model shape
    let mut cfg = config(Task::Classify, 1, None);
    cfg.model.channels = 4;
    let mut other = Trainer::<CpuBackend, f32>::new(&b, &data, cfg).unwrap();
    let before = param_bits(&b, &other);
    let e = ck.restore(&mut other, false).unwrap_err().to_string();
    assert!(
        e.contains("config.channels") && e.contains("8") && e.contains("4"),
        "{e}"
    );
    assert_eq!(
        before,
        param_bits(&b, &other),
        "nothing changes on an error"
    );
    // another dataset schema
    checkpoint::check_dataset(&ck, &data).unwrap();
    let mut renamed = data.clone();
    renamed.relations[1].name = "quotes".into();
    let e = checkpoint::check_dataset(&ck, &renamed)
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("schema.edge_types[1][1]") && e.contains("quotes"),
        "{e}"
    );
    // not a checkpoint at all
    let junk = dir.path().join("junk.safetensors");
    std::fs::write(&junk, b"\x08\x00\x00\x00\x00\x00\x00\x00{}      ").unwrap();
    assert!(Checkpoint::load(&junk).is_err());
}

#[test]
fn checkpoint_tensors_have_pygs_names_and_layouts() {
    let b = CpuBackend::new();
    let data = planted::small_classification(7);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("a.safetensors");
    let mut t =
        Trainer::<CpuBackend, f32>::new(&b, &data, config(Task::Classify, 1, None)).unwrap();
    run_all(&mut t);
    checkpoint::save(&path, &t).unwrap();
    let bytes = std::fs::read(&path).unwrap();
    let st = safetensors::SafeTensors::deserialize(&bytes).unwrap();
    let m = t.model();
    let hidden = 16;
    let head = st.tensor("head.weight").unwrap();
    assert_eq!(head.shape(), [t.outputs(), hidden]);
    // head.weight is head_w transposed
    let head_w = b.download(&m.params()[m.params().len() - 2]).unwrap();
    let stored: Vec<f32> = rtx_backend::vec_from_bytes(head.data());
    for o in 0..t.outputs() {
        for h in 0..hidden {
            assert_eq!(stored[o * hidden + h], head_w[h * t.outputs() + o]);
        }
    }
    let (s, r, d) = {
        let rel = &data.relations[0];
        (
            &data.node_types[rel.src_type].name,
            &rel.name,
            &data.node_types[rel.dst_type].name,
        )
    };
    let key = format!("convs.0.convs.<{s}___{r}___{d}>");
    let att = st.tensor(&format!("{key}.att_src")).unwrap();
    assert_eq!(att.shape(), [1, 2, 8]);
    assert_eq!(st.tensor(&format!("{key}.bias")).unwrap().shape(), [hidden]);
    let feats = data.features[data.relations[0].src_type]
        .as_ref()
        .unwrap()
        .dim();
    assert_eq!(
        st.tensor(&format!("{key}.lin_src.weight")).unwrap().shape(),
        [hidden, feats]
    );
    assert!(st.tensor(&format!("optim.{key}.att_src.exp_avg")).is_ok());
}

#[test]
fn schedules_give_torchs_rates() {
    let s = Schedule::parse("step:10:0.5", 1).unwrap();
    assert_eq!(s.lr(0.1, 9), 0.1);
    assert_eq!(s.lr(0.1, 10), 0.05);
    assert_eq!(s.lr(0.1, 25), 0.025);
    let c = Schedule::parse("cosine:2e:10e:0.01", 2).unwrap();
    assert_eq!(
        c,
        Schedule::Cosine {
            warmup: 4,
            total: 20,
            min_lr: 0.01
        }
    );
    assert_eq!(c.lr(1.0, 0), 0.25);
    assert_eq!(c.lr(1.0, 3), 1.0);
    assert_eq!(c.lr(1.0, 4), 1.0);
    // half way through the decay: min + (max - min) / 2
    assert!((c.lr(1.0, 12) - 0.505).abs() < 1e-12);
    assert_eq!(c.lr(1.0, 20), 0.01);
    assert_eq!(c.lr(1.0, 99), 0.01);
    for bad in [
        "",
        "step:0:0.5",
        "step:3",
        "cosine:5:5",
        "cosine:1:x",
        "linear",
    ] {
        let e = Schedule::parse(bad, 1).unwrap_err().to_string();
        assert!(e.contains("want constant"), "{bad}: {e}");
    }
}

#[test]
fn a_dataset_written_and_read_back_trains_the_same() {
    let b = CpuBackend::new();
    let data = planted::small_classification(7);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("d.safetensors");
    data.save(&path).unwrap();
    let back = Dataset::load(&path).unwrap();
    let mut a =
        Trainer::<CpuBackend, f32>::new(&b, &data, config(Task::Classify, 2, None)).unwrap();
    let mut c =
        Trainer::<CpuBackend, f32>::new(&b, &back, config(Task::Classify, 2, None)).unwrap();
    run_all(&mut a);
    run_all(&mut c);
    assert_eq!(param_bits(&b, &a), param_bits(&b, &c));
}

#[test]
fn mixed_precision_trains_with_the_loss_in_f32() {
    let b = CpuBackend::new();
    let data = planted::small_classification(7);
    let mut t =
        Trainer::<CpuBackend, rtx_backend::bf16>::new(&b, &data, config(Task::Classify, 10, None))
            .unwrap();
    let r = run_all(&mut t);
    assert!(
        r[9].train_loss < r[0].train_loss,
        "{:?}",
        r.iter().map(|e| e.train_loss).collect::<Vec<_>>()
    );
}
