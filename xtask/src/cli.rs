//! Argument parsing and dispatch for `cargo xtask` and `cargo fleet` (the
//! same commands; [`run_as`] takes the name the help, version and advice
//! print).

use std::ffi::OsString;
use std::io::Write;

use clap::{CommandFactory, FromArgMatches, Parser, Subcommand};

use crate::{EXIT_ERROR, EXIT_WRITTEN, Outcome, Written};

/// The fleet tool: keeps a Cargo workspace consistent with its policy.
///
/// Exit codes: 0 = holds (or everything fixed), 1 = violation or test failure
/// found, 2 = could not run, nothing written (bad arguments, malformed policy
/// or manifest, missing tool or required device, a file changed, read-only
/// or a broken link), 3 = files were written but the run then failed (its
/// report could not be printed).
#[derive(Debug, Parser)]
#[command(name = "cargo xtask", bin_name = "cargo xtask", version)]
pub struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Run every check CI runs on this workspace (fmt-check, clippy, tests, align-deps --check, gpu-test).
    Ci(crate::ci::Args),
    /// Align every crate's dependency declarations to the fleet policy (policy/fleet.toml or [workspace.metadata.fleet]).
    AlignDeps(crate::align_deps::Args),
    /// rustfmt every .rs file of the workspace with each crate's edition and rustfmt.toml.
    FmtCheck(crate::fmt_check::Args),
    /// Build the GPU tests everywhere; run them where a CUDA device is.
    GpuTest(crate::gpu_test::Args),
}

pub use crate::args::invoked_as;

/// Runs `cargo xtask` with `args` (without the program name), writing normal
/// output to `out` and errors to `err`; returns the exit code.
pub fn run<I, T>(args: I, out: &mut dyn Write, err: &mut dyn Write) -> i32
where
    I: IntoIterator<Item = T>,
    T: Into<OsString> + Clone,
{
    run_as("cargo xtask", args, out, err)
}

/// The arguments `cargo-fleet` was given, as the commands expect them:
/// `cargo fleet X` runs `cargo-fleet fleet X` (cargo's convention for
/// external subcommands), so a leading `fleet` is dropped; `cargo-fleet X`
/// run directly works too.
pub fn cargo_subcommand_args(args: impl IntoIterator<Item = OsString>) -> Vec<OsString> {
    let mut args: Vec<OsString> = args.into_iter().collect();
    if args.first().is_some_and(|a| a == "fleet") {
        args.remove(0);
    }
    args
}

/// [`run`], with `name` (`"cargo fleet"`, `"cargo xtask"`) as the command
/// name in help, `--version` and advice. The first name given in a process
/// is the one kept.
pub fn run_as<I, T>(name: &'static str, args: I, out: &mut dyn Write, err: &mut dyn Write) -> i32
where
    I: IntoIterator<Item = T>,
    T: Into<OsString> + Clone,
{
    let name = crate::args::set_invoked_as(name);
    let args: Vec<OsString> = args.into_iter().map(Into::into).collect();
    if args.len() == 1 && args[0] == crate::gpu_test::isolate::PROBE_SUBCOMMAND {
        // the child of `gpu-test`'s isolated driver probe
        let answer = crate::gpu_test::isolate::encode(&crate::gpu_test::probe());
        let _ = writeln!(out, "{answer}");
        let _ = out.flush();
        return 0;
    }
    if args.is_empty() {
        // matklad's xtask convention: no arguments lists the commands.
        let mut cmd = Cli::command().name(name).bin_name(name);
        let _ = write!(out, "{}", cmd.render_long_help());
        return 0;
    }
    let parsed = Cli::command()
        .name(name)
        .bin_name(name)
        .try_get_matches_from(std::iter::once(OsString::from(name)).chain(args))
        .and_then(|m| Cli::from_arg_matches(&m));
    let cli = match parsed {
        Ok(cli) => cli,
        Err(e) => {
            let code = if e.use_stderr() { EXIT_ERROR } else { 0 };
            let text = e.render().to_string();
            let _ = if e.use_stderr() {
                write!(err, "{text}")
            } else {
                write!(out, "{text}")
            };
            return code;
        }
    };
    let mut out = Stdout {
        inner: out,
        closed: false,
    };
    let out: &mut dyn Write = &mut out;
    let result: anyhow::Result<Outcome> = match cli.command {
        Command::Ci(a) => settle(None, err).and_then(|()| crate::ci::run(&a, out, err)),
        Command::AlignDeps(a) => crate::align_deps::run(&a, out, err),
        Command::FmtCheck(a) if a.verify_formatting_only.is_some() => {
            settle(a.target.workspace.as_deref(), err)
                .and_then(|()| crate::fmt_check::run(&a, out, err))
        }
        Command::FmtCheck(a) => crate::fmt_check::run(&a, out, err),
        Command::GpuTest(a) => settle(a.target.workspace.as_deref(), err)
            .and_then(|()| crate::gpu_test::run(&a, out, err)),
    };
    // a report that could not be printed at the very end: nothing was
    // written (a fix run flushes, and says so, itself)
    let result = result.and_then(|o| {
        out.flush()
            .map(|()| o)
            .map_err(|e| anyhow::Error::new(e).context("cannot print the report"))
    });
    match result {
        Ok(outcome) => outcome.code(),
        Err(e) if e.chain().any(|c| c.is::<Written>()) => {
            let _ = writeln!(
                err,
                "error: {}",
                crate::diag::escape_controls(&format!("{e:#}"))
            );
            EXIT_WRITTEN
        }
        Err(e) => {
            let _ = writeln!(
                err,
                "error: {}",
                crate::diag::escape_controls(&format!("{e:#}"))
            );
            EXIT_ERROR
        }
    }
}

/// For the commands that write nothing themselves (`ci`, `gpu-test`,
/// `fmt-check --verify-formatting-only`): recover an interrupted fix of the
/// workspace first (see [`crate::journal`]). A workspace cargo cannot read is
/// left to the command to report.
fn settle(workspace: Option<&std::path::Path>, err: &mut dyn Write) -> anyhow::Result<()> {
    let Ok(manifest) = crate::workspace::manifest_path(workspace) else {
        return Ok(());
    };
    let Ok(meta) = crate::workspace::metadata_no_deps(&manifest) else {
        return Ok(());
    };
    crate::journal::Guard::settle(
        meta.target_directory.as_std_path(),
        meta.workspace_root.as_std_path(),
        err,
    )
}

/// Standard output as the commands see it: a closed pipe (`| head -1`,
/// `EPIPE`; Rust ignores `SIGPIPE`, so it is an `ErrorKind::BrokenPipe`
/// error) is not an error: printing stops and the run ends with the exit code
/// of its result, as ripgrep does. Any other write error reaches the command.
struct Stdout<'w> {
    inner: &'w mut dyn Write,
    closed: bool,
}

impl Write for Stdout<'_> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        if self.closed {
            return Ok(buf.len());
        }
        match self.inner.write(buf) {
            Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => {
                self.closed = true;
                Ok(buf.len())
            }
            r => r,
        }
    }

    fn flush(&mut self) -> std::io::Result<()> {
        if self.closed {
            return Ok(());
        }
        match self.inner.flush() {
            Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => {
                self.closed = true;
                Ok(())
            }
            r => r,
        }
    }
}

#[cfg(test)]
mod tests {
    fn run(args: &[&str]) -> (i32, String, String) {
        let (mut out, mut err) = (Vec::new(), Vec::new());
        let code = super::run(args.iter().copied(), &mut out, &mut err);
        (
            code,
            String::from_utf8(out).unwrap(),
            String::from_utf8(err).unwrap(),
        )
    }

    #[test]
    fn no_arguments_lists_the_commands() {
        let (code, out, _) = run(&[]);
        assert_eq!(code, 0);
        for c in ["align-deps", "fmt-check", "gpu-test", "ci"] {
            assert!(out.contains(&format!("  {c}")), "{c}: {out}");
        }
    }

    #[test]
    fn cargo_runs_the_subcommand_with_its_name_first() {
        let args = |v: &[&str]| v.iter().map(std::ffi::OsString::from).collect::<Vec<_>>();
        assert_eq!(
            super::cargo_subcommand_args(args(&["fleet", "align-deps", "--check"])),
            args(&["align-deps", "--check"])
        );
        assert_eq!(
            super::cargo_subcommand_args(args(&["fmt-check"])),
            args(&["fmt-check"])
        );
    }

    #[test]
    fn unknown_flag_is_exit_2() {
        let (code, _, err) = run(&["fmt-check", "--no-such-flag"]);
        assert_eq!(code, 2);
        assert!(err.contains("--no-such-flag"), "{err}");
        assert_eq!(run(&["no-such-command"]).0, 2);
    }

    #[test]
    fn unknown_ci_skip_is_exit_2() {
        let (code, _, err) = run(&["ci", "--skip", "lint"]);
        assert_eq!(code, 2);
        assert!(err.contains("unknown step `lint`"), "{err}");
    }

    #[test]
    fn missing_workspace_is_exit_2_naming_the_path() {
        for cmd in ["align-deps", "fmt-check", "gpu-test"] {
            let (code, _, err) = run(&[cmd, "--workspace", "/nonexistent/ws"]);
            assert_eq!(code, 2, "{cmd}");
            assert!(err.contains("/nonexistent/ws"), "{cmd}: {err}");
        }
    }
}
