//! Every child process xtask starts has a time limit: a tool that never
//! answers (a hung rustfmt, a FIFO it opened, a cargo waiting on a lock
//! held by a stuck build) is killed and named, never a hang of CI.
//!
//! Two limits, in seconds, each configurable by the environment:
//! - [`Kind::Tool`] (`XTASK_TOOL_TIMEOUT`, default [`TOOL_DEFAULT`]):
//!   `cargo metadata`, `cargo locate-project`, rustfmt, rustup, git;
//! - [`Kind::Build`] (`XTASK_BUILD_TIMEOUT`, default [`BUILD_DEFAULT`]):
//!   builds and test runs (`gpu-test`'s cargo, `ci`'s steps).
//!
//! (The GPU driver probe has its own, `RTX_GPU_TEST_PROBE_TIMEOUT`, read by
//! the same [`env_limit`].) The
//! child is killed with SIGKILL when its time is up; its output so far is
//! dropped and the error says which limit to raise.
//!
//! A leaf: it imports nothing from the crate.

use std::io::{Read, Write as _};
use std::process::{Child, Command, ExitStatus, Output, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context as _, bail};

/// The default limit of a tool run: five minutes (rustfmt formats a large
/// batch in seconds).
pub const TOOL_DEFAULT: Duration = Duration::from_secs(300);

/// The default limit of a build or test run: two hours (well inside the
/// six hours a GitHub Actions job may take).
pub const BUILD_DEFAULT: Duration = Duration::from_secs(7200);

/// Which limit a child gets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A tool that answers in seconds.
    Tool,
    /// A build or a test run.
    Build,
}

impl Kind {
    fn var(self) -> &'static str {
        match self {
            Kind::Tool => "XTASK_TOOL_TIMEOUT",
            Kind::Build => "XTASK_BUILD_TIMEOUT",
        }
    }

    /// The limit: the environment's, else the default.
    ///
    /// # Errors
    /// The variable is set to something other than a positive number of
    /// seconds.
    pub fn limit(self) -> anyhow::Result<Duration> {
        let default = match self {
            Kind::Tool => TOOL_DEFAULT,
            Kind::Build => BUILD_DEFAULT,
        };
        env_limit(self.var(), default)
    }
}

/// The time limit the environment variable `var` sets, in seconds (a
/// fraction allowed: `1.5`), else `default`: the one reading of every
/// limit xtask takes from the environment (`XTASK_TOOL_TIMEOUT`,
/// `XTASK_BUILD_TIMEOUT`, `RTX_GPU_TEST_PROBE_TIMEOUT`).
///
/// # Errors
/// The variable is set to something other than a positive number of
/// seconds (never silently the default).
pub fn env_limit(var: &str, default: Duration) -> anyhow::Result<Duration> {
    match std::env::var_os(var) {
        None => Ok(default),
        Some(v) => parse_limit(var, &v.to_string_lossy()),
    }
}

/// The value `v` of the limit variable `var`, in seconds.
pub fn parse_limit(var: &str, v: &str) -> anyhow::Result<Duration> {
    match v.trim().parse::<f64>() {
        Ok(s) if s.is_finite() && s > 0.0 && s < 1e9 => Ok(Duration::from_secs_f64(s)),
        _ => bail!("{var}={v:?}: not a positive number of seconds"),
    }
}

/// `cmd` told not to download a toolchain behind the user's back (a pinned
/// toolchain that is missing is then an error xtask turns into one line of
/// advice) nor to print a backtrace.
pub fn no_rustup_download(cmd: &mut Command) -> &mut Command {
    cmd.env("RUSTUP_AUTO_INSTALL", "0")
        .env("RUST_BACKTRACE", "0")
}

/// Runs `cmd` to its end within its limit, stdin empty (unless `input` is
/// given: written from a thread), stdout and stderr captured.
///
/// # Errors
/// The child cannot be started, or it ran past its limit (killed; the
/// error names `what` and the limit's variable).
pub fn output(
    cmd: &mut Command,
    kind: Kind,
    what: &str,
    input: Option<Vec<u8>>,
) -> anyhow::Result<Output> {
    let limit = kind.limit()?;
    let start = Instant::now();
    let mut child = cmd
        .stdin(if input.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .with_context(|| format!("cannot run {what}"))?;
    let writer = match (input, child.stdin.take()) {
        (Some(bytes), Some(mut stdin)) => Some(std::thread::spawn(move || stdin.write_all(&bytes))),
        _ => None,
    };
    // each drain says when its pipe closed (the child ended, as a rule):
    // waited on without polling, so the end is seen at once
    let (closed_tx, closed) = std::sync::mpsc::channel::<()>();
    let drain = |pipe: Option<Box<dyn Read + Send>>| {
        let closed_tx = closed_tx.clone();
        std::thread::spawn(move || {
            let mut buf = Vec::new();
            if let Some(mut p) = pipe {
                let _ = p.read_to_end(&mut buf);
            }
            let _ = closed_tx.send(());
            buf
        })
    };
    let out = drain(
        child
            .stdout
            .take()
            .map(|p| Box::new(p) as Box<dyn Read + Send>),
    );
    let err = drain(
        child
            .stderr
            .take()
            .map(|p| Box::new(p) as Box<dyn Read + Send>),
    );
    drop(closed_tx);
    for _ in 0..2 {
        // past the limit, `wait` kills the child (its pipes then close)
        let left = limit.saturating_sub(start.elapsed());
        if closed.recv_timeout(left).is_err() {
            break;
        }
    }
    let status = wait(&mut child, kind, (start, limit), what)?;
    if let Some(w) = writer {
        let _ = w.join();
    }
    Ok(Output {
        status,
        stdout: out.join().unwrap_or_default(),
        stderr: err.join().unwrap_or_default(),
    })
}

/// Runs `cmd` with the caller's stdio to its end within its limit.
///
/// # Errors
/// As [`output`].
pub fn status(cmd: &mut Command, kind: Kind, what: &str) -> anyhow::Result<ExitStatus> {
    let limit = kind.limit()?;
    let start = Instant::now();
    let mut child = cmd.spawn().with_context(|| format!("cannot run {what}"))?;
    wait(&mut child, kind, (start, limit), what)
}

/// Waits for `child`, started at `start`, up to `limit` after that; kills
/// it (SIGKILL) past it.
///
/// # Errors
/// It ran past `limit` (killed), or waiting failed.
pub fn wait(
    child: &mut Child,
    kind: Kind,
    (start, limit): (Instant, Duration),
    what: &str,
) -> anyhow::Result<ExitStatus> {
    let mut pause = Duration::from_micros(200);
    loop {
        if let Some(st) = child
            .try_wait()
            .with_context(|| format!("cannot wait for {what}"))?
        {
            return Ok(st);
        }
        if start.elapsed() >= limit {
            let _ = child.kill();
            let _ = child.wait();
            bail!(
                "{what} did not finish within {} s, so it was killed (a tool that never answers? \
                 set {}=SECONDS for a longer limit)",
                limit.as_secs_f64(),
                kind.var()
            );
        }
        std::thread::sleep(pause);
        pause = (pause * 2).min(Duration::from_millis(50));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_child_past_its_limit_is_killed_and_named() {
        let start = Instant::now();
        let mut child = Command::new("sleep").arg("30").spawn().unwrap();
        let e = wait(
            &mut child,
            Kind::Tool,
            (start, Duration::from_millis(200)),
            "`sleep 30`",
        )
        .unwrap_err()
        .to_string();
        assert!(start.elapsed() < Duration::from_secs(10));
        assert!(e.contains("`sleep 30` did not finish within 0.2 s"), "{e}");
        assert!(e.contains("XTASK_TOOL_TIMEOUT"), "{e}");
        // reaped: the process is gone
        assert!(child.try_wait().unwrap().is_some());
    }

    #[test]
    fn output_captures_both_pipes_and_feeds_stdin() {
        let mut cmd = Command::new("sh");
        cmd.args(["-c", "cat; echo err >&2; exit 3"]);
        let o = output(&mut cmd, Kind::Tool, "sh", Some(b"in\n".to_vec())).unwrap();
        assert_eq!(o.status.code(), Some(3));
        assert_eq!(o.stdout, b"in\n");
        assert_eq!(o.stderr, b"err\n");
    }

    #[test]
    fn limits_are_positive_seconds() {
        assert_eq!(parse_limit("V", "2").unwrap(), Duration::from_secs(2));
        assert_eq!(
            parse_limit("V", " 0.5 ").unwrap(),
            Duration::from_millis(500)
        );
        for bad in ["0", "-1", "abc", "", "inf", "NaN"] {
            let e = parse_limit("XTASK_TOOL_TIMEOUT", bad)
                .unwrap_err()
                .to_string();
            assert!(e.starts_with("XTASK_TOOL_TIMEOUT="), "{e}");
        }
    }

    #[test]
    fn defaults_are_what_a_ci_job_accepts() {
        assert_eq!(TOOL_DEFAULT.as_secs(), 300);
        assert_eq!(BUILD_DEFAULT.as_secs(), 7200);
    }
}
