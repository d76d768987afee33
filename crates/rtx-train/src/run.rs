//! A training run from the command line: load, set up, train, save,
//! predict.

use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use anyhow::{Context, anyhow};
use indicatif::{ProgressBar, ProgressStyle};
use rtx_backend::prelude::*;
use rtx_backend::{Element, SampleOps, TrainOps};
use rtx_gnn::checkpoint::{self, Checkpoint};
use rtx_gnn::dataset::{Dataset, Targets as DataTargets};
use rtx_gnn::metrics::Metric;
use rtx_gnn::model::LossKind;
use rtx_gnn::optim::{OptimizerConfig, Rule, Schedule};
use rtx_gnn::train::{EarlyStopping, EpochEnd, ModelSettings, Task, TrainConfig, Trainer};
use serde_json::json;

use crate::args::{Args, BackendArg, Format, LossArg, OptimizerArg, PrecisionArg, TaskArg};
use crate::output;

/// How a run ended.
#[derive(Debug)]
pub enum Outcome {
    /// Trained (and saved, predicted) as asked.
    Done,
    /// Ctrl-C: the current step finished and a checkpoint was written.
    Interrupted,
}

/// Why a run failed.
#[derive(Debug)]
pub enum Failure {
    /// Bad arguments or input: nothing was trained (exit 2).
    Input(anyhow::Error),
    /// The run failed (exit 1).
    Run(anyhow::Error),
}

type Res<T> = std::result::Result<T, Failure>;

trait InputErr<T> {
    fn input(self) -> Res<T>;
    fn failed(self) -> Res<T>;
}

impl<T, E: Into<anyhow::Error>> InputErr<T> for std::result::Result<T, E> {
    fn input(self) -> Res<T> {
        self.map_err(|e| Failure::Input(e.into()))
    }
    fn failed(self) -> Res<T> {
        self.map_err(|e| Failure::Run(e.into()))
    }
}

/// Set by the first Ctrl-C; a second one exits at once.
static STOP: AtomicBool = AtomicBool::new(false);

/// The seed of the built-in planted dataset (fixed: the data does not
/// change with `--seed`).
const PLANTED_SEED: u64 = 7;

/// Runs the command line.
///
/// # Errors
/// [`Failure::Input`] before training starts, [`Failure::Run`] after.
pub fn run(args: &Args) -> Res<Outcome> {
    let mut data = match (&args.data, &args.planted) {
        (Some(p), _) => Dataset::load(p)
            .with_context(|| format!("loading the dataset {}", p.display()))
            .input()?,
        (None, Some(spec)) => planted(spec).input()?,
        (None, None) => rtx_gnn::planted::small_classification(PLANTED_SEED),
    };
    if args.features_only {
        let target = match &args.target {
            Some(t) => t.clone(),
            None => only_target(&data)?,
        };
        data = data
            .features_only(&target)
            .context("--features-only")
            .input()?;
    }
    if let Some(p) = &args.export_data {
        data.save(p)
            .with_context(|| format!("writing the dataset {}", p.display()))
            .input()?;
    }
    let resume = args
        .resume
        .as_deref()
        .map(|p| {
            let ck = Checkpoint::load(p).input()?;
            checkpoint::check_dataset(&ck, &data).input()?;
            if let Some((flag, _)) = args.run_settings().iter().find(|(_, given)| *given) {
                return Err(Failure::Input(anyhow!(
                    "{flag} cannot be given with --resume: the run's settings come from the \
                     checkpoint {} (only --epochs may extend the run)",
                    p.display()
                )));
            }
            Ok(ck)
        })
        .transpose()?;
    let init = args
        .init
        .as_deref()
        .map(|p| {
            let ck = Checkpoint::load(p).input()?;
            checkpoint::check_dataset(&ck, &data).input()?;
            Ok::<_, Failure>(ck)
        })
        .transpose()?;
    let config = match &resume {
        Some(ck) => {
            let mut c = ck.train_config().input()?;
            if let Some(e) = args.epochs {
                c.epochs = e;
            }
            c
        }
        None => config_from_args(args, &data, init.as_ref())?,
    };
    if ctrlc::set_handler(|| {
        if STOP.swap(true, Ordering::SeqCst) {
            std::process::exit(130);
        }
    })
    .is_err()
    {
        // a handler already set (a second run in one process): keep it
    }
    let setup = Setup {
        args,
        data: &data,
        config,
        resume: resume.as_ref(),
        init: init.as_ref(),
    };
    match args.backend {
        BackendArg::Cpu => by_precision(&rtx_backend_cpu::CpuBackend::new(), &setup),
        BackendArg::CpuExact => by_precision(&rtx_backend_cpu::CpuBackend::reference(), &setup),
        BackendArg::Cuda => cuda(&setup),
    }
}

#[cfg(feature = "cuda")]
fn cuda(setup: &Setup<'_>) -> Res<Outcome> {
    let b = rtx_backend_cuda::CudaBackend::new(0)
        .context("starting the CUDA backend on device 0")
        .input()?;
    by_precision(&b, setup)
}

#[cfg(not(feature = "cuda"))]
fn cuda(_setup: &Setup<'_>) -> Res<Outcome> {
    Err(Failure::Input(anyhow!(
        "this rtx-train was built without CUDA support; rebuild with \
         `cargo build --release -p rtx-train --features cuda` (or use --backend cpu)"
    )))
}

/// Everything a run needs besides the backend.
struct Setup<'a> {
    args: &'a Args,
    data: &'a Dataset,
    config: TrainConfig,
    resume: Option<&'a Checkpoint>,
    init: Option<&'a Checkpoint>,
}

fn by_precision<B: Backend + TrainOps + SampleOps + 'static>(b: &B, s: &Setup<'_>) -> Res<Outcome> {
    match s.args.precision {
        PrecisionArg::F32 => train::<B, f32>(b, s),
        PrecisionArg::F64 => train::<B, f64>(b, s),
        PrecisionArg::Bf16 => train::<B, rtx_backend::bf16>(b, s),
        PrecisionArg::F16 => train::<B, rtx_backend::f16>(b, s),
    }
}

/// The run's settings from the command line (and the model's shape from
/// `--init`'s checkpoint).
fn config_from_args(args: &Args, data: &Dataset, init: Option<&Checkpoint>) -> Res<TrainConfig> {
    let target = match &args.target {
        Some(t) => t.clone(),
        None => only_target(data)?,
    };
    let t = data.type_index(&target).input()?;
    let task = match (args.task, &data.targets[t]) {
        (Some(TaskArg::Classify), _) => Task::Classify,
        (Some(TaskArg::Regress), _) => Task::Regress(loss_of(args.loss)),
        (None, Some(DataTargets::Classes { .. })) => Task::Classify,
        (None, Some(DataTargets::Values { .. })) => Task::Regress(loss_of(args.loss)),
        (None, None) => {
            return Err(Failure::Input(anyhow!(
                "node type {target} has no targets ({target}.y)"
            )));
        }
    };
    if task == Task::Classify && args.loss.is_some() {
        return Err(Failure::Input(anyhow!(
            "--loss is for regression; classification uses cross-entropy"
        )));
    }
    let rule = match args.optimizer.unwrap_or(OptimizerArg::Adamw) {
        OptimizerArg::Sgd => Rule::Sgd {
            momentum: args.momentum.unwrap_or(0.0),
            dampening: 0.0,
            nesterov: args.nesterov,
        },
        OptimizerArg::Adam => Rule::parse("adam").input()?,
        OptimizerArg::Adamw => Rule::parse("adamw").input()?,
    };
    if !matches!(rule, Rule::Sgd { .. }) && (args.momentum.is_some() || args.nesterov) {
        return Err(Failure::Input(anyhow!(
            "--momentum and --nesterov are SGD's; add --optimizer sgd"
        )));
    }
    let epochs = args.epochs.unwrap_or(50);
    let steps_per_epoch = match args.batch {
        None => 1,
        Some(0) => return Err(Failure::Input(anyhow!("--batch must be at least 1"))),
        Some(bs) => {
            let n = data.splits[t].train.len();
            n.div_ceil(bs) as u64
        }
    };
    let schedule = match &args.schedule {
        None => Schedule::Constant,
        Some(s) => Schedule::parse(s, steps_per_epoch).input()?,
    };
    let optimizer = OptimizerConfig {
        rule,
        lr: args.lr.unwrap_or(0.01),
        weight_decay: args.weight_decay.unwrap_or(match rule {
            Rule::AdamW { .. } => 0.01,
            _ => 0.0,
        }),
        clip_norm: args.clip,
        schedule,
    };
    optimizer.validate().input()?;
    let metric = match &args.metric {
        Some(m) => m.parse::<Metric>().input()?,
        None => task.default_metric(),
    };
    let shape = match init {
        Some(ck) => Some(ck.model_shape().input()?),
        None => None,
    };
    let pick =
        |given: Option<usize>, from_ck: Option<usize>, default: usize, flag: &str| -> Res<usize> {
            match (given, from_ck) {
                (Some(g), Some(c)) if g != c => Err(Failure::Input(anyhow!(
                    "{flag} {g} differs from the --init checkpoint's {c}"
                ))),
                (Some(g), _) => Ok(g),
                (None, Some(c)) => Ok(c),
                (None, None) => Ok(default),
            }
        };
    let model = ModelSettings {
        heads: pick(args.heads, shape.map(|s| s.heads), 4, "--heads")?,
        channels: pick(args.channels, shape.map(|s| s.channels), 16, "--channels")?,
        layers: pick(args.layers, shape.map(|s| s.layers), 2, "--layers")?,
        negative_slope: shape.map_or(0.2, |s| s.negative_slope),
        input_dropout: args.dropout.unwrap_or(0.0),
        attention_dropout: args.attention_dropout.unwrap_or(0.0),
    };
    Ok(TrainConfig {
        target,
        task,
        epochs,
        batch: args.batch,
        fanouts: args.fanouts.clone().unwrap_or_else(|| vec![15, 10]),
        eval_batch: args.eval_batch,
        seed: args.seed.unwrap_or(0),
        early_stopping: Some(EarlyStopping {
            metric,
            patience: args.patience.unwrap_or(usize::MAX),
        }),
        model,
        optimizer,
    })
}

/// The one node type with targets.
fn only_target(data: &Dataset) -> Res<String> {
    let with_y: Vec<&str> = data
        .node_types
        .iter()
        .zip(&data.targets)
        .filter(|(_, y)| y.is_some())
        .map(|(t, _)| t.name.as_str())
        .collect();
    match with_y.as_slice() {
        [one] => Ok(one.to_string()),
        [] => Err(Failure::Input(anyhow!(
            "the dataset has no targets (no `<type>.y`): nothing to learn"
        ))),
        many => Err(Failure::Input(anyhow!(
            "several node types have targets ({}): choose one with --target",
            many.join(", ")
        ))),
    }
}

/// The dataset of `--planted SPEC`: `mag:DIV:HOMOPHILY:SIGNAL[:SEED]` or
/// `harris:BATCH[:SEED]`.
fn planted(spec: &str) -> anyhow::Result<Dataset> {
    let parts: Vec<&str> = spec.split(':').collect();
    if parts[0] == "harris" {
        return planted_harris(spec, &parts);
    }
    let usage = || {
        anyhow!(
            "--planted {spec:?}: want mag:DIV:HOMOPHILY:SIGNAL[:SEED], e.g. mag:16:0.5:0.3 \
             (1/16 of ogbn-mag, homophily 0.5, feature signal 0.3), or harris:BATCH[:SEED]"
        )
    };
    let (["mag", div, h, sig] | ["mag", div, h, sig, _]) = parts.as_slice() else {
        return Err(usage());
    };
    let div: usize = div.parse().map_err(|_| usage())?;
    let h: f64 = h.parse().map_err(|_| usage())?;
    let sig: f64 = sig.parse().map_err(|_| usage())?;
    let seed: u64 = match parts.get(4) {
        Some(s) => s.parse().map_err(|_| usage())?,
        None => 0,
    };
    if div == 0 {
        return Err(usage());
    }
    Ok(rtx_gnn::planted::mag_classification(div, h, sig, seed)?)
}

/// `--planted harris:BATCH[:SEED]`: the Harris-shaped regression of
/// `BATCH` copies (`planted::harris_regression`).
fn planted_harris(spec: &str, parts: &[&str]) -> anyhow::Result<Dataset> {
    let bad = |what: String| {
        anyhow!(
            "--planted {spec:?}: {what}; want harris:BATCH[:SEED], e.g. harris:4 (4 copies of \
             the Harris-shaped graph, seed 0)"
        )
    };
    let (["harris", batch] | ["harris", batch, _]) = parts else {
        return Err(bad(match parts.len() {
            1 => "no BATCH".to_string(),
            n => format!("{n} fields, not 2 or 3"),
        }));
    };
    let batch: usize = match batch.parse() {
        Ok(b) if b > 0 => b,
        _ => return Err(bad(format!("BATCH {batch:?} is not a count of at least 1"))),
    };
    let seed: u64 = match parts.get(2) {
        Some(s) => s
            .parse()
            .map_err(|_| bad(format!("SEED {s:?} is not an unsigned integer")))?,
        None => 0,
    };
    rtx_gnn::planted::harris_regression(batch, seed).map_err(|e| anyhow!("--planted {spec:?}: {e}"))
}

fn loss_of(l: Option<LossArg>) -> LossKind {
    match l {
        Some(LossArg::L1) => LossKind::L1,
        _ => LossKind::Mse,
    }
}

/// `FILE` with `.best` before its extension (`run.safetensors` ->
/// `run.best.safetensors`).
pub fn best_path(save: &Path) -> PathBuf {
    let stem = save
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    let name = match save.extension() {
        Some(ext) => format!("{stem}.best.{}", ext.to_string_lossy()),
        None => format!("{stem}.best"),
    };
    save.with_file_name(name)
}

/// Where Ctrl-C's checkpoint goes without --save.
const INTERRUPTED: &str = "rtx-train-interrupted.safetensors";

fn train<B: Backend + TrainOps + SampleOps + 'static, T: Element>(
    b: &B,
    s: &Setup<'_>,
) -> Res<Outcome> {
    let args = s.args;
    let started = Instant::now();
    let mut trainer = Trainer::<B, T>::new(b, s.data, s.config.clone()).input()?;
    if let Some(ck) = s.resume {
        ck.restore(&mut trainer, false).input()?;
    }
    if let Some(ck) = s.init {
        ck.restore(&mut trainer, true).input()?;
    }
    let human = args.format == Format::Human;
    let config = trainer.config().clone();
    if human {
        let nodes: usize = s.data.node_types.iter().map(|t| t.nodes).sum();
        let edges: usize = s.data.relations.iter().map(|r| r.src.len()).sum();
        let params: usize = trainer.model().params().iter().map(|p| p.numel()).sum();
        let mode = match config.batch {
            None => "full graph".to_string(),
            Some(bs) => format!("mini-batches of {bs}, fanouts {:?}", config.fanouts),
        };
        println!(
            "rtx-train on {}: {} ({nodes} nodes, {edges} edges), {} on {} ({} outputs), \
             {} layers x {} heads x {} channels, {params} parameters; {mode}; {} lr {}; {}",
            b.name(),
            match (&args.data, &args.planted) {
                (Some(p), _) => p.display().to_string(),
                (None, Some(spec)) => format!("planted {spec}"),
                (None, None) => "built-in planted dataset".into(),
            } + if args.features_only {
                " (features only)"
            } else {
                ""
            },
            match config.task {
                Task::Classify => "classification",
                Task::Regress(_) => "regression",
            },
            config.target,
            trainer.outputs(),
            config.model.layers,
            config.model.heads,
            config.model.channels,
            config.optimizer.rule.name(),
            config.optimizer.lr,
            T::DTYPE.name(),
        );
    }
    let steps = trainer.steps_per_epoch() as u64;
    let total = steps * config.epochs as u64;
    let bar = (human && std::io::stderr().is_terminal() && total > 0).then(|| {
        let pb = ProgressBar::new(total);
        pb.set_style(
            ProgressStyle::with_template("{bar:30} {pos}/{len} steps  {msg}  [{elapsed} < {eta}]")
                .unwrap_or_else(|_| ProgressStyle::default_bar()),
        );
        pb.set_position(trainer.position().global_step.min(total));
        pb
    });
    let mut out = std::io::stdout().lock();
    let mut interrupted = false;
    let training = Instant::now();
    while !trainer.finished() {
        let epoch_start = Instant::now();
        let mut running = 0.0;
        let mut seen = 0usize;
        let end = trainer
            .run_epoch(&mut |r| {
                running += r.loss;
                seen += 1;
                if let Some(pb) = &bar {
                    pb.inc(1);
                    pb.set_message(format!(
                        "{:.1} steps/s  loss {:.4}",
                        pb.per_sec(),
                        running / seen as f64
                    ));
                }
                !STOP.load(Ordering::SeqCst)
            })
            .failed()?;
        match end {
            EpochEnd::Interrupted => {
                interrupted = true;
                break;
            }
            EpochEnd::Done(report) => {
                let secs = epoch_start.elapsed().as_secs_f64();
                if let Some(save) = &args.save {
                    // one read of the device, written to both files
                    let bytes = checkpoint::to_bytes(&trainer).failed()?;
                    let best = report.best.then(|| best_path(save));
                    for path in std::iter::once(save).chain(best.as_ref()) {
                        rtx_gnn::dataset::write_atomic(path, &bytes)
                            .with_context(|| format!("writing the checkpoint {}", path.display()))
                            .failed()?;
                    }
                }
                let line = if human {
                    output::epoch_line(&report, config.epochs, secs)
                } else {
                    output::epoch_json(&report, secs, training.elapsed().as_secs_f64()).to_string()
                };
                match &bar {
                    Some(pb) => pb.println(line),
                    None => writeln!(out, "{line}").failed()?,
                }
                if STOP.load(Ordering::SeqCst) && !trainer.finished() {
                    interrupted = true;
                    break;
                }
            }
        }
    }
    if let Some(pb) = &bar {
        pb.finish_and_clear();
    }
    if interrupted {
        let path = args
            .save
            .clone()
            .unwrap_or_else(|| PathBuf::from(INTERRUPTED));
        checkpoint::save(&path, &trainer)
            .with_context(|| format!("writing the checkpoint {}", path.display()))
            .failed()?;
        let p = trainer.position();
        if human {
            eprintln!(
                "rtx-train: interrupted at epoch {} step {}; checkpoint written to {} \
                 (continue with --resume {})",
                p.epoch + 1,
                p.step_in_epoch,
                path.display(),
                path.display()
            );
        } else {
            writeln!(
                out,
                "{}",
                json!({"event": "interrupted", "epoch": p.epoch, "step_in_epoch": p.step_in_epoch,
                       "global_step": p.global_step, "checkpoint": path.display().to_string()})
            )
            .failed()?;
        }
        return Ok(Outcome::Interrupted);
    }
    trainer.use_best().failed()?;
    if let Some(pred) = &args.predict {
        write_predictions(&trainer, pred)
            .with_context(|| format!("writing the predictions {}", pred.display()))
            .failed()?;
    }
    let (val, test) = trainer.evaluate_splits().failed()?;
    let p = trainer.position();
    let best = p.best;
    if human {
        let mut line = format!(
            "done: {} epochs, {} steps in {:.2} s",
            p.epoch,
            p.global_step,
            started.elapsed().as_secs_f64()
        );
        if let Some((v, e)) = best {
            let metric = config.early_stopping.map_or(Metric::Loss, |e| e.metric);
            line.push_str(&format!(
                "; best epoch {} (val {} {v:.4})",
                e + 1,
                metric.name()
            ));
        }
        if let Some(t) = &test {
            for (m, v) in &t.metrics {
                line.push_str(&format!("; test {} {v:.4}", m.name()));
            }
        }
        writeln!(out, "{line}").failed()?;
    } else {
        writeln!(
            out,
            "{}",
            json!({"event": "done", "epochs": p.epoch, "global_step": p.global_step,
                   "seconds": started.elapsed().as_secs_f64(),
                   "best_epoch": best.map(|b| b.1),
                   "val": val.as_ref().map(output::scores_json),
                   "test": test.as_ref().map(output::scores_json)})
        )
        .failed()?;
    }
    out.flush().failed()?;
    Ok(Outcome::Done)
}

/// Writes every target node's outputs: `<type>.out` `[n, outputs]` (f32)
/// and, for classification, `<type>.pred` `[n]` (i64, the argmax).
fn write_predictions<B: Backend + TrainOps + SampleOps + 'static, T: Element>(
    trainer: &Trainer<'_, B, T>,
    path: &Path,
) -> anyhow::Result<()> {
    let data = trainer.data();
    let t = trainer.target();
    let name = &data.node_types[t].name;
    let n = data.node_types[t].nodes;
    let nodes: Vec<u32> = (0..n as u32).collect();
    let out = trainer.outputs_of(&nodes)?;
    let c = trainer.outputs();
    let mut tensors: Vec<(String, safetensors::Dtype, Vec<usize>, Vec<u8>)> = vec![(
        format!("{name}.out"),
        safetensors::Dtype::F32,
        vec![n, c],
        out.iter().flat_map(|v| v.to_le_bytes()).collect(),
    )];
    if trainer.config().task == Task::Classify {
        let pred = rtx_gnn::metrics::argmax_rows(&out, c)?;
        tensors.push((
            format!("{name}.pred"),
            safetensors::Dtype::I64,
            vec![n],
            pred.iter()
                .flat_map(|&v| i64::from(v).to_le_bytes())
                .collect(),
        ));
    }
    let views = tensors
        .iter()
        .map(|(k, d, s, bytes)| {
            Ok((
                k.clone(),
                safetensors::tensor::TensorView::new(*d, s.clone(), bytes)?,
            ))
        })
        .collect::<anyhow::Result<Vec<_>>>()?;
    let meta = std::collections::HashMap::from([
        ("format".to_string(), "rtx-predictions/1".to_string()),
        ("target".to_string(), name.clone()),
    ]);
    let bytes = safetensors::serialize(views, Some(meta))?;
    rtx_gnn::dataset::write_atomic(path, &bytes)?;
    Ok(())
}
