//! The driver probe in a child process with a time limit: a driver library
//! whose `cuInit` crashes (SIGSEGV) or hangs cannot take xtask down. The
//! child is this same xtask binary run with the hidden subcommand
//! [`PROBE_SUBCOMMAND`]; it prints one line ([`encode`]) that the parent reads.
//!
//! When the running program is not the xtask binary (the library driven
//! in-process by tests), the child does not answer with that line and the
//! probe runs in-process, as before.

use std::io::Read as _;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use super::probe::{self, NoDevice};

/// The hidden subcommand that runs the probe and prints its answer.
pub const PROBE_SUBCOMMAND: &str = "__probe-gpu";

/// Environment variable: the probe's time limit in seconds (default
/// [`DEFAULT_TIMEOUT_S`]).
pub const TIMEOUT_ENV: &str = "RTX_GPU_TEST_PROBE_TIMEOUT";

/// How long the driver may take to answer: `cuInit` on a real machine takes
/// well under a few seconds, even with persistence mode off.
pub const DEFAULT_TIMEOUT_S: u64 = 60;

const ANSWER: &str = "xtask-gpu-probe:";

/// What the child prints: `xtask-gpu-probe: device: ...` or `... none: ...`.
pub fn encode(result: &Result<probe::DeviceInfo, NoDevice>) -> String {
    match result {
        Ok(d) => format!("{ANSWER} device: {d}"),
        Err(e) => format!("{ANSWER} none: {}", e.to_string().replace('\n', " ")),
    }
}

/// The probe's time limit: [`TIMEOUT_ENV`] read as every limit is
/// ([`crate::child::env_limit`]: fractions of a second allowed).
///
/// # Errors
/// The variable holds something other than a positive number of seconds.
pub fn timeout() -> anyhow::Result<Duration> {
    crate::child::env_limit(TIMEOUT_ENV, Duration::from_secs(DEFAULT_TIMEOUT_S))
}

/// Runs the probe in a child process, killed past `timeout`. `Ok(text)`: a
/// usable device, described.
///
/// # Errors
/// Why there is no usable device, including a probe that crashed or did not
/// answer in time ([`NoDevice::ProbeCrashed`], [`NoDevice::ProbeHung`]).
pub fn probe_isolated(timeout: Duration) -> Result<String, NoDevice> {
    let in_process = || probe::probe().map(|d| d.to_string());
    let Ok(exe) = std::env::current_exe() else {
        return in_process();
    };
    let Ok(mut child) = Command::new(exe)
        .arg(PROBE_SUBCOMMAND)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
    else {
        return in_process();
    };
    let mut stdout = child.stdout.take();
    let reader = std::thread::spawn(move || {
        let mut s = String::new();
        if let Some(o) = stdout.as_mut() {
            let _ = o.read_to_string(&mut s);
        }
        s
    });
    let mut stderr = child.stderr.take();
    let err_reader = std::thread::spawn(move || {
        let mut s = String::new();
        if let Some(e) = stderr.as_mut() {
            let _ = e.read_to_string(&mut s);
        }
        s
    });
    let start = Instant::now();
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) if start.elapsed() >= timeout => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(NoDevice::ProbeHung { limit: timeout });
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(20)),
            Err(_) => return in_process(),
        }
    };
    let out = reader.join().unwrap_or_default();
    let err = err_reader.join().unwrap_or_default();
    if let Some(line) = out.lines().find_map(|l| l.strip_prefix(ANSWER)) {
        let line = line.trim();
        return match (line.strip_prefix("device: "), line.strip_prefix("none: ")) {
            (Some(d), _) => Ok(d.to_string()),
            (_, Some(why)) => Err(NoDevice::Reported(why.to_string())),
            _ => Err(NoDevice::ProbeCrashed {
                how: format!("it answered `{line}`"),
            }),
        };
    }
    use std::os::unix::process::ExitStatusExt as _;
    if let Some(sig) = status.signal() {
        return Err(NoDevice::ProbeCrashed {
            how: format!(
                "it was killed by signal {sig} ({})",
                crate::text::signal_name(sig)
            ),
        });
    }
    if status.success() && err.trim().is_empty() {
        // not the xtask binary (a test harness): probe here
        return in_process();
    }
    Err(NoDevice::ProbeCrashed {
        how: format!(
            "it exited with {status}{}",
            err.lines()
                .last()
                .map(|l| format!(": {}", l.trim()))
                .unwrap_or_default()
        ),
    })
}
