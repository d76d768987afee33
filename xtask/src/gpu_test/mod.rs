//! `cargo xtask gpu-test`: GPU tests that build everywhere, run where a CUDA
//! device is, and never pass by accident.
//!
//! 1. The matrix is the policy's `[[gpu-test]]` entries (package + features),
//!    checked against `cargo metadata`: an unknown package or feature is exit 2.
//! 2. Every entry's tests are built with its features (`cargo test --no-run`),
//!    on every machine: a GPU-only compile error is exit 1 on a CPU-only CI.
//! 3. [`probe()`] asks the CUDA driver whether a device is usable, in a child
//!    process with a time limit ([`isolate`]): a driver that crashes or hangs
//!    is a skip reason (exit 2 with `--require-device`), never xtask's end.
//! 4. Device: each entry's tests run (cargo-nextest when installed, else
//!    `cargo test`; with nextest and several GPUs, one partition per GPU in
//!    parallel, see [`partition`]), the counts are summed into `gpu-test: N passed, N failed`
//!    (`, N skipped`), exit 1 on any failure or when no test ran at all.
//!    No device: `gpu-test: skipped: <reason>`, exit 0, or exit 2 with
//!    `--require-device`.
//!
//! `--archive FILE` instead builds one cargo-nextest archive of the whole
//! matrix (see [`archive`]) for a GPU host without a Rust toolchain.
//!
//! Environment: [`probe::LIBCUDA_ENV`] (`RTX_GPU_TEST_LIBCUDA`) names the driver
//! library to probe; [`RUNNER_ENV`] (`RTX_GPU_TEST_RUNNER` = `nextest` or
//! `cargo-test`) picks the test runner instead of "nextest when installed".

pub(crate) mod archive;
pub mod isolate;
pub mod partition;
pub mod probe;
pub(crate) mod process;
pub(crate) mod results;

use std::io::Write;
use std::path::PathBuf;

use anyhow::bail;

use crate::Outcome;
use crate::args::Target;
use crate::diag::{Format, Level};
use crate::policy::GpuTestEntry;
use crate::workspace::{cargo_command, cargo_in, load_policy, manifest_path, metadata_no_deps};
pub use probe::{DeviceInfo, NoDevice, REQUIRED_DRIVER_API, probe};
use process::Stdout;
use results::{BuildEnd, Counts};

/// Environment variable choosing the test runner: `nextest` or `cargo-test`.
/// Unset or empty: cargo-nextest when `cargo nextest` works, else `cargo test`.
pub const RUNNER_ENV: &str = "RTX_GPU_TEST_RUNNER";

/// Arguments of `cargo xtask gpu-test`.
#[derive(Debug, Clone, clap::Args)]
pub struct Args {
    #[command(flatten)]
    pub target: Target,
    /// Exit 2 (not 0) when no usable CUDA device is found: for GPU runners,
    /// where a missing GPU is a broken runner.
    #[arg(long, conflicts_with = "archive")]
    pub require_device: bool,
    /// Build a self-contained cargo-nextest archive (FILE must end in .tar.zst)
    /// of the GPU tests in the release profile, copy cargo-nextest beside it,
    /// and print the command that runs it on a GPU host with no Rust toolchain.
    /// Does not probe for a device or run anything.
    #[arg(long, value_name = "FILE")]
    pub archive: Option<PathBuf>,
    /// Test filters and arguments for the test runner, after `--`
    /// (e.g. `-- gather` or `-- --exact a::b`); with --archive they go into the
    /// printed command.
    #[arg(last = true, value_name = "TEST ARGS")]
    pub test_args: Vec<String>,
    /// `human` (the default) or `github`: the same lines, plus a GitHub
    /// annotation for a skip, a failure and a missing required device.
    #[arg(long, value_enum, default_value_t = Format::Human)]
    pub format: Format,
}

/// Writes the status line `gpu-test: {text}`, and its GitHub annotation
/// with `--format github`.
fn status(out: &mut dyn Write, format: Format, level: Level, text: &str) -> std::io::Result<()> {
    writeln!(out, "gpu-test: {text}")?;
    if let Some(a) = crate::diag::status_annotation(format, level, "gpu-test", text) {
        writeln!(out, "{a}")?;
    }
    Ok(())
}

/// The validated matrix of one workspace.
#[derive(Debug, Clone)]
pub struct Matrix {
    /// The workspace's root manifest.
    pub manifest: PathBuf,
    /// The workspace root.
    pub root: PathBuf,
    /// The policy file the entries came from.
    pub policy: PathBuf,
    /// The entries, in policy order, every package and feature known to cargo.
    pub entries: Vec<GpuTestEntry>,
}

impl Matrix {
    /// Reads the policy of `target`'s workspace and checks every entry against
    /// the workspace's packages and their features.
    ///
    /// # Errors
    /// A missing or malformed manifest or policy; a `[[gpu-test]]` package that
    /// is not a workspace member or a feature that package does not have (the
    /// message names the policy file and line).
    pub fn load(target: &Target) -> anyhow::Result<Matrix> {
        let manifest = manifest_path(target.workspace.as_deref())?;
        let meta = metadata_no_deps(&manifest)?;
        let root = meta.workspace_root.clone().into_std_path_buf();
        let loaded = load_policy(target.policy.as_deref(), &root)?;
        let members = meta.workspace_packages();
        for entry in &loaded.policy.gpu_test {
            let Some(pkg) = members.iter().find(|p| p.name.as_str() == entry.package) else {
                let names: Vec<&str> = members.iter().map(|p| p.name.as_str()).collect();
                bail!(
                    "{}: [[gpu-test]] package `{}` is not a member of the workspace {} (members: {}); \
                     fix the package name in the policy",
                    loaded.at_line(&entry.package_span),
                    entry.package,
                    root.display(),
                    names.join(", ")
                );
            };
            for (f, span) in entry.features.iter().zip(&entry.feature_spans) {
                if f != "default" && !pkg.features.contains_key(f) {
                    let mut known: Vec<&str> = pkg.features.keys().map(String::as_str).collect();
                    known.sort_unstable();
                    bail!(
                        "{}: [[gpu-test]] feature `{f}` is not a feature of package `{}` ({}; its features: {}); \
                         fix the feature in the policy or add it to the package's [features]",
                        loaded.at_line(span),
                        entry.package,
                        pkg.manifest_path,
                        if known.is_empty() {
                            "none".to_string()
                        } else {
                            known.join(", ")
                        }
                    );
                }
            }
        }
        Ok(Matrix {
            manifest,
            root,
            policy: loaded.path,
            entries: loaded.policy.gpu_test,
        })
    }
}

/// `--features` values for `entry`, qualified with the package (`pkg/feat`) so
/// several packages can share one cargo invocation.
pub fn feature_args(entry: &GpuTestEntry) -> Vec<String> {
    entry
        .features
        .iter()
        .flat_map(|f| ["--features".to_string(), format!("{}/{f}", entry.package)])
        .collect()
}

/// `-p P --features P/F ...` for `entries`.
fn select_args(entries: &[GpuTestEntry]) -> Vec<String> {
    let mut args = Vec::new();
    for e in entries {
        args.push("-p".to_string());
        args.push(e.package.clone());
        args.extend(feature_args(e));
    }
    args
}

fn describe(entry: &GpuTestEntry) -> String {
    if entry.features.is_empty() {
        format!("{} (no features)", entry.package)
    } else {
        format!(
            "{} with features {}",
            entry.package,
            entry.features.join(",")
        )
    }
}

/// The test runner for a device run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Runner {
    /// `cargo nextest run`.
    Nextest,
    /// `cargo test`.
    CargoTest,
}

/// Whether `cargo nextest` works here.
pub fn nextest_installed() -> bool {
    crate::child::output(
        cargo_command().args(["nextest", "--version"]),
        crate::child::Kind::Tool,
        "`cargo nextest --version`",
        None,
    )
    .is_ok_and(|o| o.status.success())
}

/// The runner [`RUNNER_ENV`] asks for, else nextest when installed.
///
/// # Errors
/// An unknown [`RUNNER_ENV`] value, or `nextest` asked for but not installed.
pub fn choose_runner() -> anyhow::Result<Runner> {
    match std::env::var(RUNNER_ENV).unwrap_or_default().as_str() {
        "" => Ok(if nextest_installed() {
            Runner::Nextest
        } else {
            Runner::CargoTest
        }),
        "cargo-test" => Ok(Runner::CargoTest),
        "nextest" if nextest_installed() => Ok(Runner::Nextest),
        "nextest" => {
            bail!("{RUNNER_ENV}=nextest but `cargo nextest` does not work here: {NEXTEST_INSTALL}")
        }
        other => bail!("{RUNNER_ENV}=`{other}`: expected `nextest` or `cargo-test`"),
    }
}

/// How to install cargo-nextest.
pub const NEXTEST_INSTALL: &str = "install it with `cargo install cargo-nextest --locked` (or a prebuilt binary from https://nexte.st)";

/// Builds the tests of `entries` (one cargo invocation) with `profile_args`,
/// streaming cargo's output. `Ok(true)` when built, `Ok(false)` on a compile
/// error (the compiler's output has gone to `err`).
///
/// # Errors
/// cargo could not be started or stopped before compiling (exit 2).
pub fn build(
    matrix: &Matrix,
    entries: &[GpuTestEntry],
    profile_args: &[&str],
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> anyhow::Result<bool> {
    let mut cmd = cargo_in(&matrix.manifest);
    cmd.args([
        "test",
        "--no-run",
        "--message-format",
        "json-render-diagnostics",
        "--manifest-path",
    ])
    .arg(&matrix.manifest)
    .args(profile_args)
    .args(select_args(entries));
    writeln!(out, "gpu-test: build: {}", process::display(&cmd))?;
    out.flush()?;
    let c = process::run(&mut cmd, Stdout::Quiet, out, err)?;
    match results::classify_build(&c.stdout, c.status.success()) {
        BuildEnd::Built => Ok(true),
        BuildEnd::CompileFailed { .. } => Ok(false),
        BuildEnd::DidNotBuild => bail!(
            "`{}` stopped before compiling ({}): see cargo's message above",
            process::display(&cmd),
            c.status
        ),
    }
}

/// The runner's command for one entry, for partition `part = (i, n)`
/// (1-based `i` of `n`) when given.
fn entry_command(
    matrix: &Matrix,
    entry: &GpuTestEntry,
    runner: Runner,
    test_args: &[String],
    part: Option<(u32, u32)>,
) -> std::process::Command {
    let mut cmd = cargo_in(&matrix.manifest);
    match runner {
        // One entry matching no test is not an error by itself (a filter may
        // select another entry's tests; a partition may hold none); no test
        // at all is, checked by `run`.
        Runner::Nextest => cmd.args(["nextest", "run"]).env("NEXTEST_NO_TESTS", "warn"),
        Runner::CargoTest => cmd.arg("test"),
    };
    cmd.arg("--manifest-path")
        .arg(&matrix.manifest)
        .arg("--no-fail-fast")
        .args(select_args(std::slice::from_ref(entry)));
    if let Some((i, n)) = part {
        cmd.arg("--partition").arg(format!("count:{i}/{n}"));
    }
    if !test_args.is_empty() {
        cmd.arg("--").args(test_args);
    }
    cmd
}

/// Runs the tests of one entry (in `partitions` parallel partitions, one
/// per GPU, when more than one) and returns its counts; `Ok(None)` when the
/// runner failed without reporting test results (its output explains).
fn run_entry(
    matrix: &Matrix,
    entry: &GpuTestEntry,
    runner: Runner,
    test_args: &[String],
    partitions: u32,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> anyhow::Result<(Option<Counts>, bool)> {
    if partitions > 1 {
        let whole = entry_command(matrix, entry, runner, test_args, None);
        writeln!(
            out,
            "gpu-test: run: {} (as {partitions} partitions, one per GPU)",
            process::display(&whole)
        )?;
        return partition::run_partitions(
            partitions,
            |i, n| entry_command(matrix, entry, runner, test_args, Some((i + 1, n))),
            out,
            err,
        );
    }
    let mut cmd = entry_command(matrix, entry, runner, test_args, None);
    writeln!(out, "gpu-test: run: {}", process::display(&cmd))?;
    out.flush()?;
    let c = process::run(&mut cmd, Stdout::Echo, out, err)?;
    let counts = match runner {
        Runner::Nextest => results::parse_nextest(&c.stderr),
        Runner::CargoTest => results::parse_libtest(&c.stdout),
    };
    Ok((counts, c.status.success()))
}

/// Runs `cargo xtask gpu-test`.
///
/// # Errors
/// Anything that stops the command from running (exit 2): a bad manifest or
/// policy, an unknown package or feature, a missing tool, and with
/// `--require-device` the absence of a usable CUDA device.
pub fn run(args: &Args, out: &mut dyn Write, err: &mut dyn Write) -> anyhow::Result<Outcome> {
    let format = args.format;
    if format == Format::Json {
        bail!(
            "gpu-test: --format json is not supported (its output is the test runner's); use --format human or --format github"
        );
    }
    let matrix = Matrix::load(&args.target)?;
    if matrix.entries.is_empty() {
        // a GPU runner (--require-device) or an archive for one must never
        // "pass" with nothing in it
        if args.require_device || args.archive.is_some() {
            let flag = if args.require_device {
                "--require-device"
            } else {
                "--archive"
            };
            bail!(
                "{}: no [[gpu-test]] entries, so there are no GPU tests for {flag}; add an entry such as `[[gpu-test]] package = \"rtx-backend-cuda\", features = [\"cuda\"]`",
                matrix.policy.display()
            );
        }
        writeln!(
            out,
            "gpu-test: nothing to test: {} has no [[gpu-test]] entries",
            matrix.policy.display()
        )?;
        return Ok(Outcome::Holds);
    }
    if let Some(file) = &args.archive {
        return archive::run(&matrix, file, &args.test_args, out, err);
    }
    let runner = choose_runner()?;
    // read before the build: a mistyped limit is exit 2, never the default
    let probe_timeout = isolate::timeout()?;

    let mut broken = Vec::new();
    for entry in &matrix.entries {
        writeln!(out, "gpu-test: building the tests of {}", describe(entry))?;
        if !build(&matrix, std::slice::from_ref(entry), &[], out, err)? {
            writeln!(
                out,
                "gpu-test: build FAILED: {} (compiler output above)",
                describe(entry)
            )?;
            broken.push(describe(entry));
        }
    }
    if !broken.is_empty() {
        let text = format!(
            "FAILED: the GPU tests do not compile: {}",
            broken.join("; ")
        );
        status(out, format, Level::Error, &text)?;
        return Ok(Outcome::Violations);
    }

    // in a child process with a time limit: a crashing or hanging driver
    // cannot take xtask down
    let device = match isolate::probe_isolated(probe_timeout) {
        Ok(d) => d,
        Err(reason) if args.require_device => {
            let text = format!("no usable CUDA device, and --require-device was given: {reason}");
            if let Some(a) = crate::diag::status_annotation(format, Level::Error, "gpu-test", &text)
            {
                writeln!(out, "{a}")?;
            }
            bail!("gpu-test: {text}")
        }
        Err(reason) => {
            status(out, format, Level::Notice, &format!("skipped: {reason}"))?;
            return Ok(Outcome::Holds);
        }
    };
    writeln!(out, "gpu-test: device: {device}")?;
    let partitions = partition::partition_count(
        partition::device_count(&device),
        runner,
        std::env::var(partition::PARTITIONS_ENV).ok().as_deref(),
    )?;
    if partitions > 1 {
        writeln!(
            out,
            "gpu-test: {partitions} partitions in parallel, one per GPU (cargo-nextest --partition)"
        )?;
    }

    let mut total = Counts::default();
    let mut problems = Vec::new();
    for entry in &matrix.entries {
        let (counts, success) = run_entry(
            &matrix,
            entry,
            runner,
            &args.test_args,
            partitions,
            out,
            err,
        )?;
        match counts {
            Some(c) => {
                total += c;
                if !success && c.failed == 0 {
                    problems.push(format!(
                        "{}: the test runner failed without a failing test (see above)",
                        describe(entry)
                    ));
                }
            }
            None => problems.push(format!(
                "{}: the test runner reported no results (see above)",
                describe(entry)
            )),
        }
    }
    if total.ran() == 0 {
        problems.push(
            "no GPU test ran (an empty matrix or a filter that matches nothing never counts as a pass)".into(),
        );
    }
    for p in &problems {
        status(out, format, Level::Error, &format!("FAILED: {p}"))?;
    }
    if total.failed > 0 {
        let text = format!(
            "FAILED: {} failed (see above)",
            crate::text::plural(
                usize::try_from(total.failed).unwrap_or(usize::MAX),
                "GPU test",
                "GPU tests"
            )
        );
        if let Some(a) = crate::diag::status_annotation(format, Level::Error, "gpu-test", &text) {
            writeln!(out, "{a}")?;
        }
    }
    // The last line, always: what ran and how it went.
    writeln!(out, "gpu-test: {total}")?;
    Ok(if total.failed == 0 && problems.is_empty() {
        Outcome::Holds
    } else {
        Outcome::Violations
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const POLICY: &str = "[fmt]\nexclude = []\n\n[[gpu-test]]\npackage = \"a\"\nfeatures = [\"x\"]\n\n[[gpu-test]]\npackage = \"b\"\nfeatures = [\n  \"cuda\",\n  \"x\",\n]\n";

    #[test]
    fn policy_lines_are_found() {
        // the spans the policy keeps point at each entry's own lines
        let loaded = crate::workspace::LoadedPolicy {
            path: "p".into(),
            text: POLICY.into(),
            policy: crate::policy::Policy::parse(POLICY, std::path::Path::new("p")).unwrap(),
        };
        let g = &loaded.policy.gpu_test;
        assert_eq!(loaded.at(&g[0].package_span), "p:5:11");
        assert_eq!(loaded.at(&g[0].feature_spans[0]), "p:6:13");
        assert_eq!(loaded.at(&g[1].package_span), "p:9:11");
        assert_eq!(loaded.at(&g[1].feature_spans[1]), "p:12:3");
    }

    #[test]
    fn features_are_qualified_with_the_package() {
        let e = GpuTestEntry {
            package: "p".into(),
            features: vec!["cuda".into(), "f16".into()],
            ..GpuTestEntry::default()
        };
        assert_eq!(
            select_args(std::slice::from_ref(&e)),
            ["-p", "p", "--features", "p/cuda", "--features", "p/f16"]
        );
    }
}
