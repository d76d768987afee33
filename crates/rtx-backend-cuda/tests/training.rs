//! GPU tests of rtx-gnn's training surface on the CUDA backend (feature
//! `cuda`): whole epochs (sampled and full-graph; AdamW, Adam, SGD with
//! Nesterov momentum; cross-entropy and MSE; dropout; clipping; f32 and
//! mixed bf16) give the bits of the CPU backend with the reference
//! products (`CpuBackend::reference()`: canonical order, no FMA; the
//! default SIMD GEMM fuses multiply-adds and differs in the last bits):
//! every step's loss, every validation score and every parameter; and an
//! epoch's loss hash (`train::loss_hash`), sampled and on the full
//! Harris-shaped regression.
//!
//! Without a device every test here FAILS with a message saying so.
#![cfg(feature = "cuda")]

use rtx_backend::prelude::*;
use rtx_backend::{Element, SampleOps, TrainOps, bf16};
use rtx_backend_cpu::CpuBackend;
use rtx_backend_cuda::CudaBackend;
use rtx_gnn::dataset::Dataset;
use rtx_gnn::model::LossKind;
use rtx_gnn::optim::{OptimizerConfig, Rule, Schedule};
use rtx_gnn::planted;
use rtx_gnn::train::{EpochEnd, EpochReport, ModelSettings, Task, TrainConfig, Trainer, loss_hash};

fn backend() -> CudaBackend {
    CudaBackend::new(0).unwrap_or_else(|e| panic!("GPU test needs a CUDA device: {e}"))
}

fn config(task: Task, target: &str, batch: Option<usize>, rule: Rule) -> TrainConfig {
    TrainConfig {
        target: target.into(),
        task,
        epochs: 2,
        batch,
        fanouts: vec![6, 4],
        eval_batch: 700,
        seed: 21,
        early_stopping: None,
        model: ModelSettings {
            heads: 2,
            channels: 8,
            input_dropout: 0.2,
            attention_dropout: 0.1,
            ..ModelSettings::default()
        },
        optimizer: OptimizerConfig {
            rule,
            lr: 0.01,
            weight_decay: 0.01,
            clip_norm: Some(2.0),
            schedule: Schedule::Cosine {
                warmup: 2,
                total: 30,
                min_lr: 1e-4,
            },
        },
    }
}

/// Every step's loss bits, every epoch's validation loss bits, and the
/// final parameters' bits.
fn bits<B: Backend + TrainOps + SampleOps + 'static, T: Element>(
    b: &B,
    data: &Dataset,
    cfg: &TrainConfig,
) -> (Vec<u64>, Vec<u64>, Vec<u64>) {
    let mut t = Trainer::<B, T>::new(b, data, cfg.clone()).unwrap();
    let mut steps = Vec::new();
    let mut vals = Vec::new();
    while !t.finished() {
        let end = t
            .run_epoch(&mut |r| {
                steps.push(r.loss.to_bits());
                true
            })
            .unwrap();
        let EpochEnd::Done(r) = end else {
            unreachable!()
        };
        vals.push(r.val.map_or(0, |v| v.loss.to_bits()));
    }
    let params = t
        .model()
        .params()
        .iter()
        .flat_map(|p| b.download(p).unwrap())
        .map(|v| v.to_f64().to_bits())
        .collect();
    (steps, vals, params)
}

fn same<T: Element>(data: &Dataset, cfg: &TrainConfig) {
    let cpu = bits::<_, T>(&CpuBackend::reference(), data, cfg);
    let dev = bits::<_, T>(&backend(), data, cfg);
    assert!(cpu.0.len() > 1, "{} steps", cpu.0.len());
    assert_eq!(cpu.0, dev.0, "step losses, CPU vs CUDA ({})", T::DTYPE);
    assert_eq!(
        cpu.1,
        dev.1,
        "validation losses, CPU vs CUDA ({})",
        T::DTYPE
    );
    assert!(
        cpu.2 == dev.2,
        "final parameters differ, CPU vs CUDA ({})",
        T::DTYPE
    );
}

#[test]
fn a_sampled_adamw_cross_entropy_epoch_gives_the_cpus_bits() {
    let data = planted::small_classification(7);
    let cfg = config(
        Task::Classify,
        "paper",
        Some(256),
        Rule::parse("adamw").unwrap(),
    );
    same::<f32>(&data, &cfg);
    same::<bf16>(&data, &cfg);
}

#[test]
fn full_graph_runs_of_every_optimizer_give_the_cpus_bits() {
    let data = planted::small_classification(7);
    for rule in [
        Rule::parse("adam").unwrap(),
        Rule::Sgd {
            momentum: 0.9,
            dampening: 0.0,
            nesterov: true,
        },
    ] {
        same::<f32>(&data, &config(Task::Classify, "paper", None, rule));
    }
    same::<f64>(
        &data,
        &config(Task::Classify, "paper", None, Rule::parse("adamw").unwrap()),
    );
}

#[test]
fn a_regression_run_gives_the_cpus_bits() {
    let data = planted::small_regression(3);
    let target = data.node_types[data.targets.iter().position(Option::is_some).unwrap()]
        .name
        .clone();
    for loss in [LossKind::Mse, LossKind::L1] {
        let cfg = config(
            Task::Regress(loss),
            &target,
            None,
            Rule::parse("adamw").unwrap(),
        );
        same::<f32>(&data, &cfg);
    }
}

/// The first epoch's report on `b`, checked against the hash of its step
/// losses.
fn first_epoch<B: Backend + TrainOps + SampleOps + 'static>(
    b: &B,
    data: &Dataset,
    cfg: &TrainConfig,
) -> EpochReport {
    let mut t = Trainer::<B, f32>::new(b, data, cfg.clone()).unwrap();
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
    assert_eq!(r.loss_hash, loss_hash(steps), "{}", b.name());
    r
}

#[test]
fn an_epochs_loss_hash_is_the_cpus_and_repeats() {
    let dev = backend();
    let cpu = CpuBackend::reference();
    // a sampled classification epoch (dropout, clipping, cosine warm-up)
    let data = planted::small_classification(7);
    let cfg = config(
        Task::Classify,
        "paper",
        Some(256),
        Rule::parse("adamw").unwrap(),
    );
    let c = first_epoch(&cpu, &data, &cfg);
    let d = first_epoch(&dev, &data, &cfg);
    assert_eq!(
        format!("{:016x}", c.loss_hash),
        format!("{:016x}", d.loss_hash),
        "sampled classification epoch, CPU vs CUDA"
    );
    assert_eq!(d.loss_hash, first_epoch(&dev, &data, &cfg).loss_hash);
    // a full-graph epoch of the Harris-shaped regression, rtx-train's
    // defaults (`rtx-train --planted harris:1 --backend cuda`)
    let harris = planted::harris_regression(1, 0).unwrap();
    let cfg = TrainConfig {
        target: "a".into(),
        task: Task::Regress(LossKind::Mse),
        epochs: 1,
        batch: None,
        fanouts: vec![],
        eval_batch: 4096,
        seed: 0,
        early_stopping: None,
        model: ModelSettings::default(),
        optimizer: OptimizerConfig {
            rule: Rule::parse("adamw").unwrap(),
            lr: 0.01,
            weight_decay: 0.01,
            clip_norm: None,
            schedule: Schedule::Constant,
        },
    };
    let c = first_epoch(&cpu, &harris, &cfg);
    let d = first_epoch(&dev, &harris, &cfg);
    assert_eq!(
        format!("{:016x}", c.loss_hash),
        format!("{:016x}", d.loss_hash),
        "full-graph Harris regression epoch, CPU vs CUDA"
    );
    assert_eq!(d.loss_hash, first_epoch(&dev, &harris, &cfg).loss_hash);
    assert_eq!(
        c.val.map(|v| v.loss.to_bits()),
        d.val.map(|v| v.loss.to_bits()),
        "validation loss"
    );
}
