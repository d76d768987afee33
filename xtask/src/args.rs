//! Argument types shared by several commands (`--workspace`, `--policy`,
//! `--format`). A leaf: the commands and [`crate::cli`] import it, it imports
//! no command.

use std::path::PathBuf;

use clap::Args;

use crate::diag::Format;

/// `--workspace`, `--policy`: where a command looks.
#[derive(Debug, Clone, Args, Default)]
pub struct Target {
    /// The Cargo workspace (or single-package directory) to work on [default: the current one].
    #[arg(long, value_name = "DIR")]
    pub workspace: Option<PathBuf>,
    /// The policy file [default: WORKSPACE/policy/fleet.toml].
    #[arg(long, value_name = "FILE")]
    pub policy: Option<PathBuf>,
}

/// `--format`.
#[derive(Debug, Clone, Args, Default)]
pub struct FormatArg {
    /// Output format for findings.
    #[arg(long, value_enum, default_value_t = Format::Human)]
    pub format: Format,
}
