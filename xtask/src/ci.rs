//! `cargo xtask ci`: every check CI runs, in order, each step's outcome
//! reported; exit 1 if any step fails. The fleet commands run in-process on
//! the current workspace with its own policy.

use std::io::Write;

use anyhow::Context as _;

use crate::Outcome;
use crate::cli::{FormatArg, Target};
use crate::workspace::cargo_command;

/// Arguments of `cargo xtask ci`.
#[derive(Debug, Clone, clap::Args)]
pub struct Args {
    /// Skip the named step (repeatable): fmt, clippy, tests, align-deps, gpu-test.
    #[arg(long, value_name = "STEP")]
    pub skip: Vec<String>,
}

/// How a step runs.
#[derive(Debug, Clone, Copy)]
pub enum Step {
    /// `cargo <args>`.
    Cargo(&'static [&'static str]),
    /// `cargo xtask fmt-check` (every `.rs` file, each crate's edition and config).
    FmtCheck,
    /// `cargo xtask align-deps --check` (the fleet dependency policy).
    AlignDeps,
    /// `cargo xtask gpu-test` (builds the GPU tests; runs them if a device is here).
    GpuTest,
}

/// The steps of `ci`, in order.
pub const STEPS: &[(&str, Step)] = &[
    ("fmt", Step::FmtCheck),
    (
        "clippy",
        Step::Cargo(&[
            "clippy",
            "--workspace",
            "--all-targets",
            "--locked",
            "--",
            "-D",
            "warnings",
        ]),
    ),
    ("tests", Step::Cargo(&["test", "--workspace", "--locked"])),
    ("align-deps", Step::AlignDeps),
    ("gpu-test", Step::GpuTest),
];

/// Runs `cargo xtask ci`.
///
/// # Errors
/// An unknown `--skip` step, or cargo that cannot be started.
pub fn run(args: &Args, out: &mut dyn Write, err: &mut dyn Write) -> anyhow::Result<Outcome> {
    for s in &args.skip {
        anyhow::ensure!(
            STEPS.iter().any(|(n, _)| n == s),
            "unknown step `{s}` for --skip (steps: {})",
            STEPS.iter().map(|(n, _)| *n).collect::<Vec<_>>().join(", ")
        );
    }
    let mut failed = Vec::new();
    for (name, step) in STEPS {
        if args.skip.iter().any(|s| s == name) {
            writeln!(out, "ci: {name}: skipped (--skip)")?;
            continue;
        }
        let ok = match step {
            Step::Cargo(cargo_args) => {
                writeln!(out, "ci: {name}: cargo {}", cargo_args.join(" "))?;
                out.flush()?;
                cargo_command()
                    .args(*cargo_args)
                    .status()
                    .with_context(|| format!("ci step `{name}`: cannot start cargo"))?
                    .success()
            }
            Step::FmtCheck => {
                writeln!(out, "ci: {name}: cargo xtask fmt-check")?;
                let args = crate::fmt_check::Args {
                    target: Target::default(),
                    format: FormatArg::default(),
                    fix: false,
                    verify_formatting_only: None,
                };
                in_process(crate::fmt_check::run(&args, out, err), err)?
            }
            Step::AlignDeps => {
                writeln!(out, "ci: {name}: cargo xtask align-deps --check")?;
                let args = crate::align_deps::Args {
                    check: true,
                    target: Target::default(),
                    format: FormatArg::default(),
                };
                in_process(crate::align_deps::run(&args, out, err), err)?
            }
            Step::GpuTest => {
                writeln!(out, "ci: {name}: cargo xtask gpu-test")?;
                let args = crate::gpu_test::Args {
                    target: Target::default(),
                    require_device: false,
                    archive: None,
                    test_args: Vec::new(),
                };
                in_process(crate::gpu_test::run(&args, out, err), err)?
            }
        };
        if ok {
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

/// An in-process command's result as a step verdict (its error is printed).
fn in_process(result: anyhow::Result<Outcome>, err: &mut dyn Write) -> anyhow::Result<bool> {
    match result {
        Ok(outcome) => Ok(outcome == Outcome::Holds),
        Err(e) => {
            writeln!(err, "error: {e:#}")?;
            Ok(false)
        }
    }
}
