//! `rtx-bench`: the HetGAT training demo and the benchmark suites.
//!
//! Suites print JSON lines in the format of `anchors/torch_anchors.py`
//! (`{"suite", "case", "impl", "ms", "gbps", ...}`), so `anchors/compare.py`
//! can put them beside the peers measured in the same run.

use clap::{Parser, Subcommand};

#[cfg(feature = "cuda")]
mod cuda;
mod cuda_timing;
#[cfg(feature = "cuda")]
mod dense;
#[cfg(feature = "cuda")]
mod dynamic;
mod gat;
#[cfg(feature = "cuda")]
mod half;
mod hetgat;
mod index;
mod parallel;
mod permute;
#[cfg(feature = "cuda")]
mod sampled;
#[cfg(any(feature = "cuda", test))]
mod sampled_trainer;
mod transpose;

/// rtx benchmarks and demo.
#[derive(Debug, Parser)]
#[command(name = "rtx-bench", version, arg_required_else_help = true)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Train the HetGAT on the Harris-shaped graph (CPU by default; --backend cuda on a GPU).
    Hetgat(hetgat::Args),
    /// Gather / scatter-add suite over the anchors' index workloads (JSON lines).
    Index(index::Args),
    /// swap_dims / transpose suite over the anchors' transpose workloads (JSON lines).
    Transpose(transpose::Args),
    /// HetGAT train / inference timings (JSON lines).
    Gat(gat::Args),
    /// Message passing on index lists made fresh on the device every call (JSON lines; `cuda` feature).
    #[cfg(feature = "cuda")]
    Dynamic(dynamic::Args),
    /// The HetGAT's dense ops at the batch-8 shapes, one at a time (JSON lines; `cuda` feature).
    #[cfg(feature = "cuda")]
    Dense(dense::Args),
    /// bf16 / f16 gather, scatter-add and permute beside f32 on the device (JSON lines; `cuda` feature).
    #[cfg(feature = "cuda")]
    Half(half::Args),
    /// Neighbour-sampled mini-batch training on the ogbn-mag-shaped graph, on the device (JSON lines; `cuda` feature).
    #[cfg(feature = "cuda")]
    Sampled(sampled::Args),
}

fn main() -> std::process::ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Hetgat(a) => hetgat::run(&a),
        Command::Index(a) => index::run(&a),
        Command::Transpose(a) => transpose::run(&a),
        Command::Gat(a) => gat::run(&a),
        #[cfg(feature = "cuda")]
        Command::Dynamic(a) => dynamic::run(&a),
        #[cfg(feature = "cuda")]
        Command::Dense(a) => dense::run(&a),
        #[cfg(feature = "cuda")]
        Command::Half(a) => half::run(&a),
        #[cfg(feature = "cuda")]
        Command::Sampled(a) => sampled::run(&a),
    };
    match result {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e:#}");
            std::process::ExitCode::FAILURE
        }
    }
}
