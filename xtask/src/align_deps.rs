//! `cargo xtask align-deps` (being built: see its issue).

use std::io::Write;

use crate::Outcome;
use crate::cli::{FormatArg, Target};

/// Arguments of `cargo xtask align-deps`.
#[derive(Debug, Clone, clap::Args)]
pub struct Args {
    #[command(flatten)]
    pub target: Target,
    #[command(flatten)]
    pub format: FormatArg,
}

/// Runs `cargo xtask align-deps`.
///
/// # Errors
/// Anything that stops the command from running (exit 2).
pub fn run(_args: &Args, _out: &mut dyn Write, _err: &mut dyn Write) -> anyhow::Result<Outcome> {
    anyhow::bail!("align-deps is not built yet")
}
