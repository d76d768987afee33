//! The command line.

use std::path::PathBuf;

use clap::{Parser, ValueEnum};

/// Train a heterogeneous graph-attention network (HetGAT) on your own
/// graph: node classification or regression, full-graph or neighbour-sampled,
/// with the same bits on the CPU and a CUDA GPU, run after run.
///
/// Without --data it trains on a small built-in planted dataset (papers and
/// authors, 8 classes), so it runs anywhere with no files.
#[derive(Debug, Parser)]
#[command(name = "rtx-train", version, max_term_width = 100)]
pub struct Args {
    /// The dataset (safetensors; keys `<type>.x`, `<type>.y`,
    /// `<type>.train_mask`..., `<src>__<rel>__<dst>.edge_index`: see
    /// docs/training.md). Default: the built-in planted dataset.
    #[arg(long, value_name = "FILE")]
    pub data: Option<PathBuf>,

    /// Generate a planted dataset instead of --data:
    /// `mag:DIV:HOMOPHILY:SIGNAL[:SEED]` is ogbn-mag's schema and sizes at
    /// 1/DIV (64 classes on papers, edges sharing a class with probability
    /// HOMOPHILY, paper features SIGNAL times the class mean plus unit
    /// noise; rtx_gnn::planted::mag_classification; seed 0);
    /// `harris:BATCH[:SEED]` is the Harris-shaped benchmark graph of BATCH
    /// copies with two regression targets on type `a` from each node's
    /// 2-hop neighbourhood (rtx_gnn::planted::harris_regression; seed 0;
    /// train it on the full graph). With --export-data it writes the file
    /// PyG loads.
    #[arg(long, value_name = "SPEC", conflicts_with = "data")]
    pub planted: Option<String>,

    /// Train the features-only baseline: the target type alone with a
    /// self-loop relation (`<t>__self__<t>`), so the model sees a node's
    /// own features and no neighbour (an MLP of the same widths).
    #[arg(long)]
    pub features_only: bool,

    /// The node type to classify or regress. Default: the one type with
    /// targets (`<type>.y`).
    #[arg(long, value_name = "TYPE")]
    pub target: Option<String>,

    /// Classification (class labels) or regression (real targets).
    /// Default: what the target type's `.y` holds.
    #[arg(long, value_enum)]
    pub task: Option<TaskArg>,

    /// The regression loss.
    #[arg(long, value_enum)]
    pub loss: Option<LossArg>,

    /// Epochs to train (with --resume: the run's total, default the
    /// checkpoint's). Default 50. 0 trains nothing (e.g. only --predict).
    #[arg(long)]
    pub epochs: Option<usize>,

    /// Seed nodes per mini-batch (neighbour-sampled training). Default:
    /// full-graph training, one step per epoch.
    #[arg(long)]
    pub batch: Option<usize>,

    /// Neighbours drawn per node and relation in each hop, one per layer
    /// (with --batch). Default 15,10.
    #[arg(long, value_delimiter = ',', value_name = "K,K")]
    pub fanouts: Option<Vec<u32>>,

    /// Nodes per evaluation mini-batch (with --batch).
    #[arg(long, default_value_t = 4096)]
    pub eval_batch: usize,

    /// The optimizer (torch.optim's formulas). Default adamw.
    #[arg(long, value_enum)]
    pub optimizer: Option<OptimizerArg>,

    /// The learning rate. Default 0.01.
    #[arg(long)]
    pub lr: Option<f64>,

    /// Weight decay (decoupled for adamw, L2 for sgd and adam). Default 0.01
    /// for adamw, else 0.
    #[arg(long)]
    pub weight_decay: Option<f64>,

    /// SGD momentum. Default 0.
    #[arg(long)]
    pub momentum: Option<f64>,

    /// SGD with Nesterov momentum.
    #[arg(long)]
    pub nesterov: bool,

    /// Clip the gradients' global norm to this.
    #[arg(long, value_name = "NORM")]
    pub clip: Option<f64>,

    /// The learning-rate schedule: `constant`, `step:EVERY:GAMMA`,
    /// `cosine:WARMUP:TOTAL[:MIN_LR]`; counts in steps, or in epochs with
    /// an `e` suffix (`cosine:2e:50e`). Default constant.
    #[arg(long)]
    pub schedule: Option<String>,

    /// Attention heads. Default 4.
    #[arg(long)]
    pub heads: Option<usize>,

    /// Channels per head. Default 16.
    #[arg(long)]
    pub channels: Option<usize>,

    /// Layers. Default 2.
    #[arg(long)]
    pub layers: Option<usize>,

    /// Dropout on every layer's input features. Default 0.
    #[arg(long)]
    pub dropout: Option<f64>,

    /// Dropout on the attention coefficients. Default 0.
    #[arg(long)]
    pub attention_dropout: Option<f64>,

    /// Stop after this many epochs without a better validation metric.
    #[arg(long)]
    pub patience: Option<usize>,

    /// The validation metric the best epoch is chosen by: accuracy,
    /// macro-f1, mse, mae, r2, loss. Default accuracy (classify), mse
    /// (regress).
    #[arg(long)]
    pub metric: Option<String>,

    /// The run's seed (initialisation, shuffling, sampling, dropout).
    /// Default 0.
    #[arg(long)]
    pub seed: Option<u64>,

    /// Compute precision: f32, f64, or bf16 / f16 (mixed: activations in
    /// half, master weights, optimizer and loss in f32).
    #[arg(long, value_enum, default_value_t = PrecisionArg::F32)]
    pub precision: PrecisionArg,

    /// Where to train.
    #[arg(long, value_enum, default_value_t = BackendArg::Cpu)]
    pub backend: BackendArg,

    /// Write a checkpoint here after every epoch (and on Ctrl-C); the best
    /// epoch's parameters go to FILE with `.best` before the extension.
    #[arg(long, value_name = "FILE")]
    pub save: Option<PathBuf>,

    /// Continue the run saved in this checkpoint, bit for bit. The run's
    /// settings come from the checkpoint (only --epochs may extend it).
    #[arg(long, value_name = "FILE", conflicts_with = "init")]
    pub resume: Option<PathBuf>,

    /// Start from the parameters of this checkpoint (rtx's or a PyG-trained
    /// one in the same format); the model's shape comes from it.
    #[arg(long, value_name = "FILE")]
    pub init: Option<PathBuf>,

    /// After training, write every target node's outputs (values, or logits
    /// and the class) to this safetensors file, from the best parameters.
    #[arg(long, value_name = "FILE")]
    pub predict: Option<PathBuf>,

    /// Write the dataset trained on (e.g. the built-in one) to this file in
    /// the dataset format, so PyG can load it (`rtx_data.py`).
    #[arg(long, value_name = "FILE")]
    pub export_data: Option<PathBuf>,

    /// Output: a progress bar and a line per epoch, or one JSON object per
    /// epoch on stdout.
    #[arg(long, value_enum, default_value_t = Format::Human)]
    pub format: Format,
}

/// `--task`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum TaskArg {
    /// Node classification (softmax cross-entropy).
    Classify,
    /// Node regression (MSE or L1).
    Regress,
}

/// `--loss`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum LossArg {
    /// Mean squared error.
    Mse,
    /// Mean absolute error.
    L1,
}

/// `--optimizer`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum OptimizerArg {
    /// torch.optim.SGD.
    Sgd,
    /// torch.optim.Adam.
    Adam,
    /// torch.optim.AdamW.
    Adamw,
}

/// `--precision`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum PrecisionArg {
    /// f32 throughout.
    F32,
    /// f64 throughout.
    F64,
    /// bf16 activations, f32 weights, optimizer and loss.
    Bf16,
    /// f16 activations, f32 weights, optimizer and loss.
    F16,
}

/// `--backend`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum BackendArg {
    /// The CPU backend (rayon; a SIMD GEMM with fused multiply-adds: the
    /// same bits on any thread count, not CUDA's).
    Cpu,
    /// The CPU backend with the reference products (canonical order, no
    /// FMA): slower, and the CUDA backend's bits.
    CpuExact,
    /// The CUDA backend on device 0 (a build with `--features cuda`).
    Cuda,
}

/// `--format`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Format {
    /// A progress bar on a terminal and a line per epoch.
    Human,
    /// One JSON object per line: each epoch, then the end.
    Json,
}

impl Args {
    /// The run settings given on the command line (which --resume forbids),
    /// as `(flag, given)`.
    pub fn run_settings(&self) -> [(&'static str, bool); 20] {
        [
            ("--target", self.target.is_some()),
            ("--task", self.task.is_some()),
            ("--loss", self.loss.is_some()),
            ("--batch", self.batch.is_some()),
            ("--fanouts", self.fanouts.is_some()),
            ("--optimizer", self.optimizer.is_some()),
            ("--lr", self.lr.is_some()),
            ("--weight-decay", self.weight_decay.is_some()),
            ("--momentum", self.momentum.is_some()),
            ("--nesterov", self.nesterov),
            ("--clip", self.clip.is_some()),
            ("--schedule", self.schedule.is_some()),
            ("--heads", self.heads.is_some()),
            ("--channels", self.channels.is_some()),
            ("--layers", self.layers.is_some()),
            ("--dropout", self.dropout.is_some()),
            ("--attention-dropout", self.attention_dropout.is_some()),
            ("--patience", self.patience.is_some()),
            ("--metric", self.metric.is_some()),
            ("--seed", self.seed.is_some()),
        ]
    }
}
