//! `rtx-train`: train a HetGAT on a graph in the rtx dataset format
//! (safetensors with PyG's `HeteroData` keys), on the CPU or a CUDA GPU;
//! evaluate every epoch, keep the best parameters, write checkpoints PyG
//! can load, resume bit for bit, and write predictions.
//!
//! Exit codes: 0 done; 1 the run failed (a device error, a loss that
//! diverged); 2 bad arguments or input (a dataset, a checkpoint, settings
//! that do not fit), nothing trained; 130 interrupted by Ctrl-C after the
//! current step, with a checkpoint written.

mod args;
mod output;
mod run;

use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    let args = args::Args::parse();
    match run::run(&args) {
        Ok(run::Outcome::Done) => ExitCode::SUCCESS,
        Ok(run::Outcome::Interrupted) => ExitCode::from(130),
        Err(run::Failure::Input(e)) => {
            eprintln!("rtx-train: error: {e:#}");
            ExitCode::from(2)
        }
        Err(run::Failure::Run(e)) => {
            eprintln!("rtx-train: error: {e:#}");
            ExitCode::from(1)
        }
    }
}
