//! `cargo xtask ci`: every check CI runs, in order, each step's outcome
//! reported (ok, FAILED, could not run); every step runs; exit 2 if any step
//! could not run, else 1 if any failed. The fleet commands run in-process on
//! the current workspace with its own policy.
//!
//! `--format github` (for GitHub Actions) hands the format to `fmt-check`,
//! `align-deps` and `gpu-test` (their findings become annotations on the
//! files), folds each step's output into a `::group::`, and annotates each
//! step that fails or cannot run. Clippy's and the tests' own output is
//! cargo's, shown in the step's group.

use std::io::Write;

use crate::Outcome;
use crate::args::{FormatArg, Target};
use crate::diag::{Format, Level, status_annotation};
use crate::workspace::cargo_command;

/// Arguments of `cargo xtask ci`.
#[derive(Debug, Clone, clap::Args)]
pub struct Args {
    /// Skip the named step (repeatable): fmt, clippy, tests, align-deps, gpu-test.
    #[arg(long, value_name = "STEP")]
    pub skip: Vec<String>,
    #[command(flatten)]
    pub format: FormatArg,
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
    let format = args.format.format;
    let github = format == Format::Github;
    let mut verdicts: Vec<(&str, Verdict)> = Vec::new();
    for (name, step) in STEPS {
        if args.skip.iter().any(|s| s == name) {
            writeln!(out, "ci: {name}: skipped (--skip)")?;
            continue;
        }
        if github {
            writeln!(out, "::group::ci: {name}")?;
        }
        let verdict = match step {
            Step::Cargo(cargo_args) => {
                writeln!(out, "ci: {name}: cargo {}", cargo_args.join(" "))?;
                out.flush()?;
                let what = format!("`cargo {}`", cargo_args.join(" "));
                match crate::child::status(
                    cargo_command().args(*cargo_args),
                    crate::child::Kind::Build,
                    &what,
                ) {
                    Ok(st) if st.success() => Verdict::Passed,
                    Ok(_) => Verdict::Failed,
                    Err(e) => {
                        writeln!(err, "error: ci step `{name}`: {e:#}")?;
                        Verdict::CouldNotRun
                    }
                }
            }
            Step::FmtCheck => {
                writeln!(out, "ci: {name}: {} fmt-check", crate::args::invoked_as())?;
                let args = crate::fmt_check::Args {
                    target: Target::default(),
                    format: args.format.clone(),
                    fix: false,
                    allow_ignored_options: false,
                    verify_formatting_only: None,
                };
                in_process(crate::fmt_check::run(&args, out, err), err)?
            }
            Step::AlignDeps => {
                writeln!(
                    out,
                    "ci: {name}: {} align-deps --check",
                    crate::args::invoked_as()
                )?;
                let args = crate::align_deps::Args {
                    check: true,
                    target: Target::default(),
                    format: args.format.clone(),
                };
                in_process(crate::align_deps::run(&args, out, err), err)?
            }
            Step::GpuTest => {
                writeln!(out, "ci: {name}: {} gpu-test", crate::args::invoked_as())?;
                let args = crate::gpu_test::Args {
                    target: Target::default(),
                    require_device: false,
                    archive: None,
                    test_args: Vec::new(),
                    // (json: the step's own lines; the findings formats are the others')
                    format: if github {
                        Format::Github
                    } else {
                        Format::Human
                    },
                };
                in_process(crate::gpu_test::run(&args, out, err), err)?
            }
        };
        let word = match verdict {
            Verdict::Passed => "ok",
            Verdict::Failed => "FAILED",
            Verdict::CouldNotRun => "could not run",
        };
        writeln!(out, "ci: {name}: {word}")?;
        if github {
            writeln!(out, "::endgroup::")?;
            if verdict != Verdict::Passed {
                let a = status_annotation(format, Level::Error, "ci", &format!("{name}: {word}"));
                writeln!(out, "{}", a.unwrap_or_default())?;
            }
        }
        verdicts.push((name, verdict));
    }
    let (summary, result) = conclude(&verdicts);
    writeln!(out, "ci: {summary}")?;
    result
}

/// A step's result.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// It holds / passed (exit 0).
    Passed,
    /// A violation or test failure (exit 1).
    Failed,
    /// It could not run: bad policy or manifest, missing tool (exit 2).
    CouldNotRun,
}

/// The summary line and the result of the whole run: an error (exit 2) if any
/// step could not run, else `Violations` (exit 1) if any failed, else `Holds`.
/// Every step runs either way.
pub fn conclude(verdicts: &[(&str, Verdict)]) -> (String, anyhow::Result<Outcome>) {
    let names = |v: Verdict| -> Vec<&str> {
        verdicts
            .iter()
            .filter(|(_, x)| *x == v)
            .map(|(n, _)| *n)
            .collect()
    };
    let (failed, broken) = (names(Verdict::Failed), names(Verdict::CouldNotRun));
    let mut parts = Vec::new();
    if !failed.is_empty() {
        parts.push(format!("failed steps: {}", failed.join(", ")));
    }
    if !broken.is_empty() {
        parts.push(format!("steps that could not run: {}", broken.join(", ")));
    }
    if parts.is_empty() {
        return ("all steps passed".to_string(), Ok(Outcome::Holds));
    }
    let summary = parts.join("; ");
    let result = if broken.is_empty() {
        Ok(Outcome::Violations)
    } else {
        Err(anyhow::anyhow!(
            "ci: {} could not run (see the errors above)",
            broken.join(", ")
        ))
    };
    (summary, result)
}

/// An in-process command's result as a step verdict (its error is printed).
fn in_process(result: anyhow::Result<Outcome>, err: &mut dyn Write) -> anyhow::Result<Verdict> {
    Ok(match result {
        Ok(Outcome::Holds) => Verdict::Passed,
        Ok(Outcome::Violations) => Verdict::Failed,
        Err(e) => {
            writeln!(
                err,
                "error: {}",
                crate::diag::escape_controls(&format!("{e:#}"))
            )?;
            Verdict::CouldNotRun
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn github_format_groups_each_step_and_reaches_the_fleet_commands() {
        let skip = ["fmt", "clippy", "tests", "gpu-test"]
            .map(String::from)
            .to_vec();
        let args = Args {
            skip,
            format: FormatArg {
                format: Format::Github,
            },
        };
        let (mut out, mut err) = (Vec::new(), Vec::new());
        let outcome = run(&args, &mut out, &mut err).unwrap();
        let out = String::from_utf8(out).unwrap();
        assert_eq!(outcome, Outcome::Holds, "{out}");
        assert!(
            out.contains(
                "::group::ci: align-deps\nci: align-deps: cargo xtask align-deps --check\n"
            ),
            "{out}"
        );
        // align-deps itself speaks GitHub: its summary is a notice
        assert!(
            out.contains("::notice title=align-deps::align-deps: "),
            "{out}"
        );
        assert!(out.contains("ci: align-deps: ok\n::endgroup::\n"), "{out}");
        assert!(!out.contains("::error"), "{out}");
    }

    #[test]
    fn could_not_run_is_exit_2_failed_is_exit_1() {
        use Verdict::*;
        let code = |v: &[(&str, Verdict)]| match conclude(v).1 {
            Ok(o) => o.code(),
            Err(_) => crate::EXIT_ERROR,
        };
        assert_eq!(code(&[("fmt", Passed), ("tests", Passed)]), 0);
        assert_eq!(code(&[("fmt", Failed), ("tests", Passed)]), 1);
        assert_eq!(code(&[("fmt", CouldNotRun), ("tests", Passed)]), 2);
        assert_eq!(code(&[("fmt", Failed), ("gpu-test", CouldNotRun)]), 2);
        let (summary, _) = conclude(&[("fmt", Failed), ("gpu-test", CouldNotRun)]);
        assert_eq!(
            summary,
            "failed steps: fmt; steps that could not run: gpu-test"
        );
    }
}
