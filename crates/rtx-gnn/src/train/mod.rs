//! Training a [`HetGat`] on a [`Dataset`]: full-graph or neighbour-sampled
//! epochs, deterministic shuffling and dropout, evaluation on the
//! validation and test splits every epoch, metrics, early stopping on a
//! validation metric with the best parameters kept.
//!
//! Everything random is a pure function of the run's seed and a position:
//! the epoch's order of the training nodes (`shuffle(seed, epoch)`), the
//! neighbour sample of optimizer step `s` (`SampleSpec { seed, step: s }`),
//! the dropout masks of step `s` (`splitmix64(seed ^ DROPOUT, s)`). A run
//! resumed from a checkpoint at any step therefore continues with the bits
//! of a run that never stopped, and two runs give the same bits on every
//! backend whose ops do (the CPU and CUDA backends). Each epoch's report
//! carries the [`loss_hash`] of its steps' losses (`hash.rs`), so two runs'
//! loss bits compare at a glance.
//!
//! The model computes in `T` (`f32`, `f64`, or `bf16` / `f16` for mixed
//! precision); its master weights, the optimizer state and the loss are in
//! `T::Acc`.

use rtx_backend::prelude::*;
use rtx_backend::workload::splitmix64;
use rtx_backend::{BTensor, Element, SampleOps, TrainOps};

use crate::dataset::{Dataset, Targets as DataTargets};
use crate::graph::HeteroGraph;
use crate::metrics::Metric;
use crate::model::{HetGat, HetGatConfig, LossKind, Objective, Targets};
use crate::optim::{Optimizer, OptimizerConfig, ParamState, StepInfo};
use crate::store::{GraphStore, StoreRelation};
use crate::{Error, Result};

mod data;
mod eval;
mod hash;
mod sampled;

use data::{features, split_data, widen_grads_acc};
pub use data::{score, shuffle};
use eval::EvalSplit;
pub use hash::{LOSS_HASH_START, loss_hash, loss_hash_hex, loss_hash_step};

/// Stream tags of the run's seed.
const SHUFFLE: u64 = 0x5348_5546_464c_4531;
const DROPOUT: u64 = 0x4452_4f50_4f55_5431;
const EVAL_SAMPLE: u64 = 0x4556_414c_5341_4d31;

/// What is learned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Task {
    /// Node classification: softmax cross-entropy over the classes.
    Classify,
    /// Node regression with MSE or L1.
    Regress(LossKind),
}

impl Task {
    /// The loss the task minimises.
    pub fn loss(self) -> LossKind {
        match self {
            Task::Classify => LossKind::CrossEntropy,
            Task::Regress(l) => l,
        }
    }

    /// The metric early stopping watches by default: validation accuracy
    /// for classification, validation MSE for regression.
    pub fn default_metric(self) -> Metric {
        match self {
            Task::Classify => Metric::Accuracy,
            Task::Regress(_) => Metric::Mse,
        }
    }
}

/// The model's hyper-parameters (the rest of [`HetGatConfig`] comes from
/// the data: feature widths, the target type, the output width).
#[derive(Debug, Clone, PartialEq)]
pub struct ModelSettings {
    /// Attention heads.
    pub heads: usize,
    /// Channels per head.
    pub channels: usize,
    /// Layers.
    pub layers: usize,
    /// LeakyReLU slope of the attention logits.
    pub negative_slope: f64,
    /// Dropout on every layer's input features.
    pub input_dropout: f64,
    /// Dropout on the attention coefficients.
    pub attention_dropout: f64,
}

impl Default for ModelSettings {
    /// 4 heads x 16 channels, 2 layers, slope 0.2, no dropout.
    fn default() -> Self {
        ModelSettings {
            heads: 4,
            channels: 16,
            layers: 2,
            negative_slope: 0.2,
            input_dropout: 0.0,
            attention_dropout: 0.0,
        }
    }
}

/// Early stopping: stop after `patience` epochs without a better
/// validation `metric` than the best so far.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct EarlyStopping {
    /// The validation metric watched.
    pub metric: Metric,
    /// Epochs without improvement before stopping.
    pub patience: usize,
}

/// A training run's settings.
#[derive(Debug, Clone, PartialEq)]
pub struct TrainConfig {
    /// The node type whose nodes are classified or regressed.
    pub target: String,
    /// Classification or regression.
    pub task: Task,
    /// Epochs to run (an epoch is one pass over the training nodes).
    pub epochs: usize,
    /// Seeds per mini-batch; `None`: full-graph training (one step per epoch).
    pub batch: Option<usize>,
    /// Neighbours drawn per node and relation in each hop (mini-batches only).
    pub fanouts: Vec<u32>,
    /// Nodes per evaluation batch (mini-batch mode only).
    pub eval_batch: usize,
    /// The run's seed: initialisation, shuffling, sampling, dropout.
    pub seed: u64,
    /// The metric the best parameters are chosen by, and when to stop early.
    pub early_stopping: Option<EarlyStopping>,
    /// The model.
    pub model: ModelSettings,
    /// The optimizer.
    pub optimizer: OptimizerConfig,
}

/// One split's scores.
#[derive(Debug, Clone, PartialEq)]
pub struct Scores {
    /// The mean loss over the split (computed on the host in `f64`).
    pub loss: f64,
    /// The task's metrics (accuracy and macro-F1, or MSE, MAE and R²).
    pub metrics: Vec<(Metric, f64)>,
}

impl Scores {
    /// The value of `metric` (`Metric::Loss` is the loss).
    pub fn get(&self, metric: Metric) -> Option<f64> {
        if metric == Metric::Loss {
            return Some(self.loss);
        }
        self.metrics
            .iter()
            .find(|(m, _)| *m == metric)
            .map(|&(_, v)| v)
    }
}

/// Where a run stands: what a checkpoint saves to resume bit for bit.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Position {
    /// The epoch in progress (0-based).
    pub epoch: usize,
    /// Steps of that epoch done.
    pub step_in_epoch: usize,
    /// Optimizer steps taken over the run.
    pub global_step: u64,
    /// The sum of the epoch's step losses so far.
    pub epoch_loss_sum: f64,
    /// The [`loss_hash`] of the epoch's step losses so far.
    pub epoch_loss_hash: u64,
    /// The best validation value so far and its epoch.
    pub best: Option<(f64, usize)>,
    /// Epochs since the best one.
    pub bad_epochs: usize,
    /// Whether early stopping ended the run.
    pub stopped: bool,
}

impl Default for Position {
    /// The start of a run: epoch 0, no step, no best epoch.
    fn default() -> Self {
        Position {
            epoch: 0,
            step_in_epoch: 0,
            global_step: 0,
            epoch_loss_sum: 0.0,
            epoch_loss_hash: LOSS_HASH_START,
            best: None,
            bad_epochs: 0,
            stopped: false,
        }
    }
}

/// One step's report (for progress displays).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct StepReport {
    /// The epoch.
    pub epoch: usize,
    /// The step within the epoch (0-based) and the epoch's step count.
    pub step: usize,
    /// Steps per epoch.
    pub steps: usize,
    /// The step's loss.
    pub loss: f64,
    /// The optimizer's step.
    pub info: StepInfo,
}

/// One epoch's report.
#[derive(Debug, Clone, PartialEq)]
pub struct EpochReport {
    /// The epoch (0-based).
    pub epoch: usize,
    /// Optimizer steps taken over the run after it.
    pub global_step: u64,
    /// The mean training loss of its steps.
    pub train_loss: f64,
    /// The [`loss_hash`] of its steps' losses, in order (`hash.rs`).
    pub loss_hash: u64,
    /// The learning rate of its last step.
    pub lr: f64,
    /// Validation scores (`None` without a validation split).
    pub val: Option<Scores>,
    /// Test scores (`None` without a test split).
    pub test: Option<Scores>,
    /// Whether its parameters are the best so far.
    pub best: bool,
    /// Whether early stopping ends the run after it.
    pub stop: bool,
}

/// What [`Trainer::run_epoch`] ended with.
#[derive(Debug, Clone, PartialEq)]
pub enum EpochEnd {
    /// The epoch finished.
    Done(EpochReport),
    /// The step callback asked to stop; the position is after the last
    /// finished step.
    Interrupted,
}

/// The model of a pass: the master weights, or their copy rounded to `T`.
enum PassModel<'m, B: Backend, T: Element> {
    Master(&'m HetGat<B, T>),
    Rounded(Box<HetGat<B, T>>),
}

impl<B: Backend, T: Element> std::ops::Deref for PassModel<'_, B, T> {
    type Target = HetGat<B, T>;

    fn deref(&self) -> &HetGat<B, T> {
        match self {
            PassModel::Master(m) => m,
            PassModel::Rounded(m) => m,
        }
    }
}

/// The training split: its rows on the backend and their targets.
#[derive(Debug)]
struct SplitData<B: Backend, A: Element> {
    /// Node ids (global, ascending).
    nodes: Vec<u32>,
    /// The same on the backend.
    rows: B::Index,
    /// Their targets on the backend.
    targets: Targets<B, A>,
}

/// The graph as training reads it.
#[derive(Debug)]
enum Graph<B: Backend + SampleOps, T: Element> {
    /// Static topology and every node's features.
    Full {
        graph: std::sync::Arc<HeteroGraph>,
        x: Vec<BTensor<B, T>>,
    },
    /// A store sampled each step.
    Sampled(GraphStore<B, T>),
}

/// A training run: the model (master weights in `T::Acc`), the optimizer,
/// the data on the backend and the position.
#[derive(Debug)]
pub struct Trainer<'a, B: Backend + TrainOps + SampleOps + 'static, T: Element> {
    b: &'a B,
    data: &'a Dataset,
    config: TrainConfig,
    target: usize,
    /// Classes (classification) or outputs per node (regression).
    outputs: usize,
    model: HetGat<B, T::Acc>,
    optimizer: Optimizer<B, T::Acc>,
    graph: Graph<B, T>,
    train: SplitData<B, T::Acc>,
    val: Option<EvalSplit<B>>,
    test: Option<EvalSplit<B>>,
    position: Position,
    /// The best parameters so far (early stopping's metric, or the last).
    best_params: Option<Vec<BTensor<B, T::Acc>>>,
    /// Where the next mini-batch is sampled while a step trains (a second
    /// stream: [`SampleOps::beside`]); `None` samples in line.
    side: Option<std::sync::Arc<B>>,
    /// The next step's mini-batch, sampled and planned ahead.
    ahead: Option<sampled::Ahead<'a, B, T>>,
}

impl<B: Backend + TrainOps + SampleOps + 'static, T: Element> Drop for Trainer<'_, B, T> {
    fn drop(&mut self) {
        // the side may still read the store's memory, which the main
        // handle frees in its own order when the fields drop
        if let Some(side) = &self.side {
            // an error here is the device's; nothing is left to report it to
            let _ = self.b.wait_for(side);
        }
    }
}

impl<'a, B: Backend + TrainOps + SampleOps + 'static, T: Element> Trainer<'a, B, T> {
    /// A run of `config` on `data`: validates the task against the data,
    /// uploads the graph, features and splits, and initialises the model
    /// from the seed as PyG initialises it.
    ///
    /// # Errors
    /// [`Error::Model`] naming what does not fit: an unknown target type, a
    /// target type without `.y`, targets of the other task, an empty
    /// training split, a mini-batch of 0 or no fanouts; backend errors.
    pub fn new(b: &'a B, data: &'a Dataset, config: TrainConfig) -> Result<Self> {
        let target = data.type_index(&config.target)?;
        let tname = &data.node_types[target].name;
        let outputs = match (&data.targets[target], config.task) {
            (Some(DataTargets::Classes { classes, .. }), Task::Classify) => *classes,
            (Some(DataTargets::Values { dim, .. }), Task::Regress(l)) => {
                if l == LossKind::CrossEntropy {
                    return Err(Error::Model("a regression takes an MSE or L1 loss".into()));
                }
                *dim
            }
            (Some(DataTargets::Classes { .. }), Task::Regress(_)) => {
                return Err(Error::Model(format!(
                    "{tname}.y holds class labels: train with --task classify"
                )));
            }
            (Some(DataTargets::Values { .. }), Task::Classify) => {
                return Err(Error::Model(format!(
                    "{tname}.y holds real-valued targets: train with --task regress"
                )));
            }
            (None, _) => {
                return Err(Error::Model(format!(
                    "node type {tname} has no targets ({tname}.y): nothing to learn there"
                )));
            }
        };
        if outputs == 0 {
            return Err(Error::Model(format!("{tname}.y has no classes or columns")));
        }
        data.require_train(target)?;
        if config.batch == Some(0) || config.eval_batch == 0 {
            return Err(Error::Model("a batch holds at least one node".into()));
        }
        if config.batch.is_some() && config.fanouts.is_empty() {
            return Err(Error::Model(
                "mini-batch training needs fanouts (one per layer, e.g. 15,10)".into(),
            ));
        }
        let in_features: Vec<usize> = data
            .features
            .iter()
            .map(|f| f.as_ref().map_or(1, |f| f.dim()))
            .collect();
        let ms = &config.model;
        let model_config = HetGatConfig {
            in_features,
            heads: ms.heads,
            channels: ms.channels,
            layers: ms.layers,
            negative_slope: ms.negative_slope,
            target,
            out_features: outputs,
            input_dropout: ms.input_dropout,
            attention_dropout: ms.attention_dropout,
        };
        let x = features::<B, T>(b, data)?;
        let graph = match config.batch {
            None => Graph::Full {
                graph: std::sync::Arc::new(data.graph()?),
                x,
            },
            Some(_) => {
                let rels = data
                    .relations
                    .iter()
                    .map(|r| -> Result<StoreRelation<B::Index>> {
                        Ok((
                            r.name.clone(),
                            r.src_type,
                            r.dst_type,
                            b.index_from_host(&r.src)?,
                            b.index_from_host(&r.dst)?,
                        ))
                    })
                    .collect::<Result<Vec<_>>>()?;
                Graph::Sampled(GraphStore::new(b, data.node_types.clone(), rels, x)?)
            }
        };
        let model = match &graph {
            Graph::Full { graph, .. } => HetGat::new(b, &**graph, model_config, config.seed)?,
            Graph::Sampled(store) => HetGat::with_schema(
                b,
                store.node_types(),
                store.relations(),
                model_config,
                config.seed,
            )?,
        };
        let optimizer = Optimizer::new(config.optimizer, model.params().len())?;
        // after the store's upload: the side starts behind it
        let side = match graph {
            Graph::Sampled(_) => b.beside()?.map(std::sync::Arc::new),
            Graph::Full { .. } => None,
        };
        let sp = &data.splits[target];
        let train = split_data::<B, T::Acc>(b, data, target, &sp.train)?;
        let eval = |nodes: &Vec<u32>| -> Result<EvalSplit<B>> {
            Ok(EvalSplit {
                nodes: nodes.clone(),
                rows: b.index_from_host(nodes)?,
            })
        };
        let val = (!sp.val.is_empty()).then(|| eval(&sp.val)).transpose()?;
        let test = (!sp.test.is_empty()).then(|| eval(&sp.test)).transpose()?;
        Ok(Trainer {
            b,
            data,
            config,
            target,
            outputs,
            model,
            optimizer,
            graph,
            train,
            val,
            test,
            position: Position::default(),
            best_params: None,
            side,
            ahead: None,
        })
    }

    /// The settings.
    pub fn config(&self) -> &TrainConfig {
        &self.config
    }

    /// The backend.
    pub fn backend(&self) -> &'a B {
        self.b
    }

    /// The dataset.
    pub fn data(&self) -> &'a Dataset {
        self.data
    }

    /// The model (master weights).
    pub fn model(&self) -> &HetGat<B, T::Acc> {
        &self.model
    }

    /// The optimizer.
    pub fn optimizer(&self) -> &Optimizer<B, T::Acc> {
        &self.optimizer
    }

    /// Where the run stands.
    pub fn position(&self) -> Position {
        self.position
    }

    /// The target node type's index.
    pub fn target(&self) -> usize {
        self.target
    }

    /// Classes (classification) or outputs per node (regression).
    pub fn outputs(&self) -> usize {
        self.outputs
    }

    /// Whether the run is over (every epoch run, or stopped early).
    pub fn finished(&self) -> bool {
        self.position.stopped || self.position.epoch >= self.config.epochs
    }

    /// Optimizer steps per epoch.
    pub fn steps_per_epoch(&self) -> usize {
        match self.config.batch {
            None => 1,
            Some(bs) => self.train.nodes.len().div_ceil(bs),
        }
    }

    /// The best parameters so far (by the early-stopping metric; without
    /// one, the last epoch's), `None` before the first epoch ends.
    pub fn best_params(&self) -> Option<&[BTensor<B, T::Acc>]> {
        self.best_params.as_deref()
    }

    /// Restores a checkpoint's state: parameters, optimizer, position (and
    /// the best parameters, when saved).
    ///
    /// # Errors
    /// [`Error::Model`] when a part does not fit; nothing changes then.
    pub fn restore(
        &mut self,
        params: Vec<BTensor<B, T::Acc>>,
        optimizer_steps: u64,
        optimizer_state: Vec<ParamState<B, T::Acc>>,
        position: Position,
        best: Option<Vec<BTensor<B, T::Acc>>>,
    ) -> Result<()> {
        if position.step_in_epoch > self.steps_per_epoch() {
            return Err(Error::Model(format!(
                "the checkpoint stands at step {} of an epoch of {} steps: another batch size \
                 or training split than this run's",
                position.step_in_epoch,
                self.steps_per_epoch()
            )));
        }
        if let Some(best) = &best
            && best.len() != params.len()
        {
            return Err(Error::Model(
                "the best parameters do not fit the model".into(),
            ));
        }
        // all checks before any change
        let mut model = self.model.to_precision::<T::Acc>(self.b)?;
        model.set_params(params)?;
        let mut optimizer = Optimizer::new(self.config.optimizer, model.params().len())?;
        optimizer.restore(optimizer_steps, optimizer_state, model.params())?;
        self.model = model;
        self.optimizer = optimizer;
        self.position = position;
        self.best_params = best;
        self.ahead = None;
        Ok(())
    }

    /// Runs the rest of the current epoch, then evaluates. `on_step` sees
    /// every step and returns `false` to stop after it (Ctrl-C): then the
    /// position is after that step, ready for a checkpoint.
    ///
    /// # Errors
    /// Backend and model errors; a NaN or infinite loss (naming the step).
    pub fn run_epoch(&mut self, on_step: &mut dyn FnMut(&StepReport) -> bool) -> Result<EpochEnd> {
        // a static graph stays resident for the epoch: no per-op lookup of
        // its lists and plans on a device
        if let Graph::Full { graph, .. } = &self.graph {
            let graph = std::sync::Arc::clone(graph);
            let b = self.b;
            return graph.with_resident(b, || self.epoch(on_step))?;
        }
        self.epoch(on_step)
    }

    /// [`Trainer::run_epoch`]'s steps and evaluation.
    fn epoch(&mut self, on_step: &mut dyn FnMut(&StepReport) -> bool) -> Result<EpochEnd> {
        let steps = self.steps_per_epoch();
        let epoch = self.position.epoch;
        let order = match self.config.batch {
            None => Vec::new(),
            Some(_) => shuffle(&self.train.nodes, self.config.seed, epoch as u64),
        };
        let mut last_lr = self.optimizer.next_lr();
        match self.config.batch {
            None => {
                while self.position.step_in_epoch < steps {
                    let (loss, info) = self.full_step()?;
                    last_lr = info.lr;
                    if !self.report_step(loss, info, steps, on_step)? {
                        return Ok(EpochEnd::Interrupted);
                    }
                }
            }
            Some(bs) => {
                if !self.sampled_steps(&order, bs, steps, &mut last_lr, on_step)? {
                    return Ok(EpochEnd::Interrupted);
                }
            }
        }
        let (val, test) = self.evaluate_splits()?;
        let (best, stop) = self.judge(epoch, val.as_ref())?;
        let train_loss = self.position.epoch_loss_sum / steps.max(1) as f64;
        let loss_hash = self.position.epoch_loss_hash;
        self.position.epoch += 1;
        self.position.step_in_epoch = 0;
        self.position.epoch_loss_sum = 0.0;
        self.position.epoch_loss_hash = LOSS_HASH_START;
        self.position.stopped = stop;
        Ok(EpochEnd::Done(EpochReport {
            epoch,
            global_step: self.position.global_step,
            train_loss,
            loss_hash,
            lr: last_lr,
            val,
            test,
            best,
            stop,
        }))
    }

    /// Takes the loss of the step at the position into the position and
    /// reports it; `false` when `on_step` stops the run before the epoch's
    /// end.
    ///
    /// # Errors
    /// A NaN or infinite loss, naming the step.
    fn report_step(
        &mut self,
        loss: f64,
        info: StepInfo,
        steps: usize,
        on_step: &mut dyn FnMut(&StepReport) -> bool,
    ) -> Result<bool> {
        let (epoch, k) = (self.position.epoch, self.position.step_in_epoch);
        if !loss.is_finite() {
            return Err(Error::Model(format!(
                "the training loss is {loss} at epoch {epoch}, step {k}: lower the \
                 learning rate, or clip the gradients (--clip)"
            )));
        }
        self.position.step_in_epoch += 1;
        self.position.global_step += 1;
        self.position.epoch_loss_sum += loss;
        self.position.epoch_loss_hash = loss_hash_step(self.position.epoch_loss_hash, loss);
        let report = StepReport {
            epoch,
            step: k,
            steps,
            loss,
            info,
        };
        Ok(on_step(&report) || self.position.step_in_epoch == steps)
    }

    /// Whether this epoch is the best so far (keeping its parameters), and
    /// whether early stopping ends the run.
    fn judge(&mut self, epoch: usize, val: Option<&Scores>) -> Result<(bool, bool)> {
        let watched = self.config.early_stopping.and_then(|es| {
            val.and_then(|v| v.get(es.metric))
                .map(|value| (value, es.metric.higher_is_better(), es.patience))
        });
        let best = match (watched, self.position.best) {
            (None, _) => true,
            (Some(_), None) => true,
            (Some((value, higher, _)), Some((prev, _))) => {
                if higher {
                    value > prev
                } else {
                    value < prev
                }
            }
        };
        if best {
            self.best_params = Some(self.model.to_precision::<T::Acc>(self.b)?.params().to_vec());
            self.position.bad_epochs = 0;
            if let Some((value, _, _)) = watched {
                self.position.best = Some((value, epoch));
            }
        } else {
            self.position.bad_epochs += 1;
        }
        let stop =
            matches!(watched, Some((_, _, patience)) if self.position.bad_epochs >= patience);
        Ok((best, stop))
    }

    /// The model a pass runs: the master model itself when the pass
    /// computes in its type (`f32`, `f64`: no copy of the parameters), else
    /// its weights rounded to `T` (mixed precision).
    fn pass_model(&self) -> Result<PassModel<'_, B, T>> {
        match (&self.model as &dyn std::any::Any).downcast_ref::<HetGat<B, T>>() {
            Some(m) => Ok(PassModel::Master(m)),
            None => Ok(PassModel::Rounded(Box::new(
                self.model.to_precision::<T>(self.b)?,
            ))),
        }
    }

    /// The dropout seed of optimizer step `global_step` (`None` without
    /// dropout).
    fn dropout_seed(&self, global_step: u64) -> Option<u64> {
        let ms = &self.config.model;
        (ms.input_dropout > 0.0 || ms.attention_dropout > 0.0)
            .then(|| splitmix64(self.config.seed ^ DROPOUT, global_step))
    }

    /// One full-graph step over the training split.
    fn full_step(&mut self) -> Result<(f64, StepInfo)> {
        let Graph::Full { graph, x } = &self.graph else {
            return Err(Error::Model("full_step on a sampled run".into()));
        };
        let objective = Objective {
            loss: self.config.task.loss(),
            rows: &self.train.rows,
            targets: &self.train.targets,
        };
        let drop = self.dropout_seed(self.position.global_step);
        let low = self.pass_model()?;
        let out = low.objective_grads(self.b, &**graph, x, &objective, drop)?;
        let grads = widen_grads_acc::<B, T>(self.b, out.grads)?;
        let info = self
            .optimizer
            .step(self.b, self.model.params_mut(), &grads)?;
        // read after the update is queued: the wait then covers it too
        Ok((out.loss.read(self.b)?, info))
    }

    /// Puts the best parameters in place (after training, for predictions).
    ///
    /// # Errors
    /// As [`HetGat::set_params`].
    pub fn use_best(&mut self) -> Result<()> {
        if let Some(best) = &self.best_params {
            self.model.set_params(best.clone())?;
        }
        Ok(())
    }
}
