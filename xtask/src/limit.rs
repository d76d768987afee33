//! Children with a time limit: a probe that hangs (a rustup waiting on a
//! lock, a cargo waiting on the network) ends the run with a message instead
//! of hanging it.

use std::io::Read as _;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

/// Runs `cmd` (stdin closed) to completion and returns its output, as
/// [`Command::output`] does; a child still running after `limit` is killed
/// and the result is an error of kind `TimedOut` naming the limit.
///
/// # Errors
/// The child cannot be started or waited for, or it ran out of time.
pub fn output_within(cmd: &mut Command, limit: Duration) -> std::io::Result<Output> {
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()?;
    let drain = |r: Option<Box<dyn std::io::Read + Send>>| {
        std::thread::spawn(move || {
            let mut buf = Vec::new();
            if let Some(mut r) = r {
                let _ = r.read_to_end(&mut buf);
            }
            buf
        })
    };
    let out = drain(child.stdout.take().map(|s| Box::new(s) as _));
    let err = drain(child.stderr.take().map(|s| Box::new(s) as _));
    let start = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait()? {
            break s;
        }
        if start.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            return Err(std::io::Error::new(
                std::io::ErrorKind::TimedOut,
                format!("still running after {} s; stopped", limit.as_secs()),
            ));
        }
        std::thread::sleep(Duration::from_millis(2));
    };
    Ok(Output {
        status,
        stdout: out.join().unwrap_or_default(),
        stderr: err.join().unwrap_or_default(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_child_past_its_limit_is_stopped() {
        let t = Instant::now();
        let e =
            output_within(Command::new("sleep").arg("30"), Duration::from_millis(200)).unwrap_err();
        assert_eq!(e.kind(), std::io::ErrorKind::TimedOut);
        assert!(t.elapsed() < Duration::from_secs(10));
        let o = output_within(
            Command::new("sh").args(["-c", "echo hi; echo no >&2"]),
            Duration::from_secs(30),
        )
        .unwrap();
        assert!(o.status.success());
        assert_eq!(o.stdout, b"hi\n");
        assert_eq!(o.stderr, b"no\n");
    }
}
