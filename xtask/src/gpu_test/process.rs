//! Running cargo as a child: output streamed to the caller's writers as it
//! arrives (so users watch a long build) and captured (so it can be parsed),
//! within the build time limit ([`crate::child::Kind::Build`]).

use std::io::{BufRead as _, BufReader, Read, Write};
use std::process::{Command, ExitStatus, Stdio};
use std::sync::mpsc;

use anyhow::Context as _;

/// What a finished child printed, and how it ended.
#[derive(Debug)]
pub struct Captured {
    /// The exit status.
    pub status: ExitStatus,
    /// Everything on stdout.
    pub stdout: String,
    /// Everything on stderr.
    pub stderr: String,
}

/// Where the child's stdout goes besides the capture.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stdout {
    /// Copied to `out` line by line.
    Echo,
    /// Captured only (machine-readable output such as cargo's JSON messages).
    Quiet,
}

enum Line {
    Out(Vec<u8>),
    Err(Vec<u8>),
}

/// Runs `cmd`, streaming its stderr to `err` and (with [`Stdout::Echo`]) its
/// stdout to `out`, and returns both captured.
///
/// # Errors
/// When the child cannot be started or waited for, ran past the build time
/// limit (killed), or a writer fails.
pub fn run(
    cmd: &mut Command,
    stdout: Stdout,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> anyhow::Result<Captured> {
    run_within(cmd, stdout, out, err, crate::child::Kind::Build.limit()?)
}

/// [`run`] with the time limit `limit`.
///
/// # Errors
/// As [`run`].
pub fn run_within(
    cmd: &mut Command,
    stdout: Stdout,
    out: &mut dyn Write,
    err: &mut dyn Write,
    limit: std::time::Duration,
) -> anyhow::Result<Captured> {
    let start = std::time::Instant::now();
    let program = cmd.get_program().to_string_lossy().into_owned();
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .with_context(|| format!("cannot start `{program}`"))?;
    let (tx, rx) = mpsc::channel();
    let child_out = child.stdout.take().context("child stdout")?;
    let child_err = child.stderr.take().context("child stderr")?;
    let readers = [
        spawn_reader(child_out, tx.clone(), Line::Out),
        spawn_reader(child_err, tx, Line::Err),
    ];
    let (mut cap_out, mut cap_err) = (Vec::new(), Vec::new());
    // Ends when both readers have hung up (the child closed both pipes), or
    // at the time limit.
    let what = format!("`{program}`");
    let mut ended = None;
    loop {
        let left = limit.saturating_sub(start.elapsed());
        let line = match rx.recv_timeout(left) {
            Ok(l) => l,
            Err(mpsc::RecvTimeoutError::Disconnected) => break,
            Err(mpsc::RecvTimeoutError::Timeout) => {
                // killed past the limit (an error), or it ended just now
                // and something it started keeps the pipes: stop reading
                ended = Some(crate::child::wait(
                    &mut child,
                    crate::child::Kind::Build,
                    (start, limit),
                    &what,
                )?);
                break;
            }
        };
        match line {
            Line::Out(l) => {
                if stdout == Stdout::Echo {
                    out.write_all(&l)?;
                    out.flush()?;
                }
                cap_out.extend_from_slice(&l);
            }
            Line::Err(l) => {
                err.write_all(&l)?;
                err.flush()?;
                cap_err.extend_from_slice(&l);
            }
        }
    }
    let status = match ended {
        Some(st) => st,
        None => {
            for r in readers {
                let _ = r.join();
            }
            crate::child::wait(&mut child, crate::child::Kind::Build, (start, limit), &what)?
        }
    };
    Ok(Captured {
        status,
        stdout: String::from_utf8_lossy(&cap_out).into_owned(),
        stderr: String::from_utf8_lossy(&cap_err).into_owned(),
    })
}

fn spawn_reader<R: Read + Send + 'static>(
    pipe: R,
    tx: mpsc::Sender<Line>,
    wrap: fn(Vec<u8>) -> Line,
) -> std::thread::JoinHandle<()> {
    std::thread::spawn(move || {
        let mut reader = BufReader::new(pipe);
        loop {
            let mut buf = Vec::new();
            match reader.read_until(b'\n', &mut buf) {
                Ok(0) | Err(_) => break,
                Ok(_) => {
                    if tx.send(wrap(buf)).is_err() {
                        break;
                    }
                }
            }
        }
    })
}

/// `cmd` as a shell-ready line (program and arguments quoted where needed).
pub fn display(cmd: &Command) -> String {
    std::iter::once(cmd.get_program())
        .chain(cmd.get_args())
        .map(|a| shell_quote(&a.to_string_lossy()))
        .collect::<Vec<_>>()
        .join(" ")
}

/// Quotes `s` for a POSIX shell when it has anything but plainly safe characters.
pub fn shell_quote(s: &str) -> String {
    let safe = !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || "_-./:=,+@%".contains(c));
    if safe {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', r"'\''"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn streams_and_captures_both_pipes() {
        let mut cmd = Command::new("sh");
        cmd.args(["-c", "echo out1; echo err1 >&2; echo out2; exit 3"]);
        let (mut out, mut err) = (Vec::new(), Vec::new());
        let c = run(&mut cmd, Stdout::Echo, &mut out, &mut err).unwrap();
        assert_eq!(c.status.code(), Some(3));
        assert_eq!(c.stdout, "out1\nout2\n");
        assert_eq!(c.stderr, "err1\n");
        assert_eq!(String::from_utf8(out).unwrap(), "out1\nout2\n");
        assert_eq!(String::from_utf8(err).unwrap(), "err1\n");
    }

    #[test]
    fn quiet_stdout_is_only_captured() {
        let mut cmd = Command::new("sh");
        cmd.args(["-c", "echo json"]);
        let (mut out, mut err) = (Vec::new(), Vec::new());
        let c = run(&mut cmd, Stdout::Quiet, &mut out, &mut err).unwrap();
        assert_eq!(c.stdout, "json\n");
        assert!(out.is_empty());
    }

    #[test]
    fn a_child_that_keeps_its_pipes_open_past_the_limit_is_killed() {
        let mut cmd = Command::new("sh");
        cmd.args(["-c", "echo started; exec sleep 30"]);
        let start = std::time::Instant::now();
        let e = run_within(
            &mut cmd,
            Stdout::Echo,
            &mut Vec::new(),
            &mut Vec::new(),
            std::time::Duration::from_millis(300),
        )
        .unwrap_err()
        .to_string();
        assert!(start.elapsed() < std::time::Duration::from_secs(10));
        assert!(e.contains("did not finish within 0.3 s"), "{e}");
        assert!(e.contains("XTASK_BUILD_TIMEOUT"), "{e}");
    }

    #[test]
    fn missing_program_is_an_error() {
        let mut cmd = Command::new("/nonexistent/cargo");
        let e = run(&mut cmd, Stdout::Echo, &mut Vec::new(), &mut Vec::new()).unwrap_err();
        assert!(e.to_string().contains("/nonexistent/cargo"), "{e}");
    }

    #[test]
    fn quoting() {
        assert_eq!(shell_quote(".gpu/tests.tar.zst"), ".gpu/tests.tar.zst");
        assert_eq!(shell_quote("a b"), "'a b'");
        assert_eq!(shell_quote("it's"), r"'it'\''s'");
        assert_eq!(shell_quote(""), "''");
    }
}
