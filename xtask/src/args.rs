//! Argument types shared by several commands (`--workspace`, `--policy`,
//! `--format`). A leaf: the commands and [`crate::cli`] import it, it imports
//! no command.

use std::path::PathBuf;
use std::sync::OnceLock;

use clap::Args;

use crate::diag::Format;

/// `--workspace`, `--policy`: where a command looks.
#[derive(Debug, Clone, Args, Default)]
pub struct Target {
    /// The Cargo workspace (or single-package directory) to work on [default: the current one].
    #[arg(long, value_name = "DIR")]
    pub workspace: Option<PathBuf>,
    /// The policy file [default: WORKSPACE/policy/fleet.toml, or [workspace.metadata.fleet] in WORKSPACE/Cargo.toml].
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

/// The name the tool was invoked as (`cargo xtask` unless
/// [`crate::cli::run_as`] was given another): what help, `--version` and
/// advice such as "run `cargo xtask fmt-check --fix`" print.
static INVOKED_AS: OnceLock<&'static str> = OnceLock::new();

/// The command line a user types to run the tool: `cargo xtask` in this
/// workspace, `cargo fleet` through the installed `cargo-fleet` binary.
pub fn invoked_as() -> &'static str {
    INVOKED_AS.get().copied().unwrap_or("cargo xtask")
}

/// Sets [`invoked_as`] (the first name given in a process is kept); returns it.
pub(crate) fn set_invoked_as(name: &'static str) -> &'static str {
    INVOKED_AS.get_or_init(|| name)
}
