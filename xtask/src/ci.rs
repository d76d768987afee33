//! `cargo xtask ci`: every check CI runs, in order, each step's outcome
//! reported; exit 1 if any step fails.

use std::io::Write;
use std::process::Command;

use anyhow::Context as _;

use crate::Outcome;
use crate::workspace::cargo_command;

/// Arguments of `cargo xtask ci`.
#[derive(Debug, Clone, clap::Args)]
pub struct Args {
    /// Skip the named steps (repeatable): fmt, clippy, tests, align-deps, gpu-test.
    #[arg(long, value_name = "STEP")]
    pub skip: Vec<String>,
}

/// The steps of `ci`, in order: (name, cargo arguments).
pub const STEPS: &[(&str, &[&str])] = &[
    ("fmt", &["fmt", "--all", "--check"]),
    ("clippy", &["clippy", "--workspace", "--all-targets", "--locked", "--", "-D", "warnings"]),
    ("tests", &["test", "--workspace", "--locked"]),
];

/// Runs `cargo xtask ci`.
///
/// # Errors
/// An unknown `--skip` step, or cargo that cannot be started.
pub fn run(args: &Args, out: &mut dyn Write, _err: &mut dyn Write) -> anyhow::Result<Outcome> {
    for s in &args.skip {
        anyhow::ensure!(
            STEPS.iter().any(|(n, _)| n == s),
            "unknown step `{s}` for --skip (steps: {})",
            STEPS.iter().map(|(n, _)| *n).collect::<Vec<_>>().join(", ")
        );
    }
    let mut failed = Vec::new();
    for (name, cargo_args) in STEPS {
        if args.skip.iter().any(|s| s == name) {
            writeln!(out, "ci: {name}: skipped (--skip)")?;
            continue;
        }
        writeln!(out, "ci: {name}: cargo {}", cargo_args.join(" "))?;
        out.flush()?;
        let status = run_step(cargo_command().args(*cargo_args))
            .with_context(|| format!("ci step `{name}`"))?;
        if status {
            writeln!(out, "ci: {name}: ok")?;
        } else {
            writeln!(out, "ci: {name}: FAILED")?;
            failed.push(*name);
        }
    }
    if failed.is_empty() {
        writeln!(out, "ci: all steps passed")?;
        Ok(Outcome::Holds)
    } else {
        writeln!(out, "ci: failed steps: {}", failed.join(", "))?;
        Ok(Outcome::Violations)
    }
}

fn run_step(cmd: &mut Command) -> anyhow::Result<bool> {
    Ok(cmd.status().context("cannot start cargo")?.success())
}
