//! Running the built `xtask` binary as a child process, for the tests that
//! need a real process: pausing it at a write-path point through
//! `XTASK_TEST_HOOK`, killing it with SIGKILL, racing it, or giving it a
//! stdout that fails.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The xtask binary cargo built for these tests.
pub fn bin() -> &'static str {
    env!("CARGO_BIN_EXE_xtask")
}

/// A running xtask, its stdout and stderr going to files in a temp dir.
pub struct Run {
    pub child: Child,
    logs: tempfile::TempDir,
    /// The hook's directory (`paused`, `go`), when paused at a point.
    hook: Option<PathBuf>,
}

/// What a finished run left.
#[derive(Debug)]
pub struct Done {
    /// The exit code; `None` when killed by a signal.
    pub code: Option<i32>,
    /// The signal that ended it, if one did.
    pub signal: Option<i32>,
    pub out: String,
    pub err: String,
}

impl Run {
    /// Starts `xtask args`, pausing at `hook_point` (see the `journal::hook`
    /// module) when given.
    pub fn start(args: &[&str], hook_point: Option<&str>) -> Run {
        Run::start_with(args, hook_point, None)
    }

    /// [`Run::start`] with the given stdout instead of a log file.
    pub fn start_with(args: &[&str], hook_point: Option<&str>, stdout: Option<Stdio>) -> Run {
        Run::start_env(args, hook_point, stdout, &[])
    }

    /// [`Run::start_with`] with extra environment variables.
    pub fn start_env(
        args: &[&str],
        hook_point: Option<&str>,
        stdout: Option<Stdio>,
        env: &[(&str, &std::ffi::OsStr)],
    ) -> Run {
        let logs = tempfile::tempdir().unwrap();
        let out = std::fs::File::create(logs.path().join("out")).unwrap();
        let mut cmd = Command::new(bin());
        cmd.args(args)
            .stdin(Stdio::null())
            .stdout(stdout.unwrap_or_else(|| out.into()))
            .stderr(std::fs::File::create(logs.path().join("err")).unwrap())
            .env_remove("XTASK_TEST_HOOK")
            .envs(env.iter().copied());
        let hook = hook_point.map(|p| {
            let dir = logs.path().join("hook");
            std::fs::create_dir(&dir).unwrap();
            cmd.env("XTASK_TEST_HOOK", format!("{p}@{}", dir.display()));
            dir
        });
        Run {
            child: cmd.spawn().unwrap(),
            logs,
            hook,
        }
    }

    /// Its stderr so far.
    pub fn err_so_far(&self) -> String {
        std::fs::read_to_string(self.logs.path().join("err")).unwrap_or_default()
    }

    /// Waits until the run is paused at its hook point (panics after 120 s,
    /// or when it exits first: the point was never reached).
    pub fn wait_paused(&mut self) {
        let dir = self.hook.clone().expect("a run with a hook point");
        let start = Instant::now();
        while !dir.join("paused").exists() {
            if let Some(st) = self.child.try_wait().unwrap() {
                panic!(
                    "exited ({st}) before pausing at its hook point; stderr:\n{}",
                    self.err_so_far()
                );
            }
            assert!(
                start.elapsed() < Duration::from_secs(120),
                "never paused at its hook point; stderr:\n{}",
                self.err_so_far()
            );
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    /// Waits until its stderr contains `text` (panics after 120 s or on exit).
    pub fn wait_for_err(&mut self, text: &str) {
        let start = Instant::now();
        while !self.err_so_far().contains(text) {
            if let Some(st) = self.child.try_wait().unwrap() {
                panic!(
                    "exited ({st}) before saying {text:?}:\n{}",
                    self.err_so_far()
                );
            }
            assert!(
                start.elapsed() < Duration::from_secs(120),
                "{text:?} never came"
            );
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    /// Lets a paused run go on.
    pub fn go(&self) {
        std::fs::write(self.hook.as_ref().unwrap().join("go"), "").unwrap();
    }

    /// Sends `signal` (`INT`, `TERM`) with kill(1).
    pub fn signal(&self, signal: &str) {
        let st = Command::new("kill")
            .arg(format!("-{signal}"))
            .arg(self.child.id().to_string())
            .status()
            .unwrap();
        assert!(st.success());
    }

    /// The process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// SIGKILL (what `Child::kill` sends on Unix), then reaps it.
    pub fn kill9(mut self) -> Done {
        self.child.kill().unwrap();
        self.finish()
    }

    /// Waits for the exit up to `limit`; past it, kills the run and panics
    /// (a hang is a failure, never a test that waits forever).
    pub fn finish_within(mut self, limit: Duration) -> Done {
        let start = Instant::now();
        while self.child.try_wait().unwrap().is_none() {
            if start.elapsed() > limit {
                let err = self.err_so_far();
                let _ = self.child.kill();
                let _ = self.child.wait();
                panic!("still running after {limit:?} (hung), killed; stderr:\n{err}");
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        self.finish()
    }

    /// Waits for the exit.
    pub fn finish(mut self) -> Done {
        let st = self.child.wait().unwrap();
        let read = |n: &str| std::fs::read_to_string(self.logs.path().join(n)).unwrap();
        Done {
            code: st.code(),
            signal: std::os::unix::process::ExitStatusExt::signal(&st),
            out: read("out"),
            err: read("err"),
        }
    }
}

/// `align-deps --workspace <root> extra...` as arguments.
pub fn align_args<'a>(root: &'a Path, extra: &[&'a str]) -> Vec<&'a str> {
    let mut v = vec!["align-deps", "--workspace", root.to_str().unwrap()];
    v.extend_from_slice(extra);
    v
}

/// Every `.xtask-*` file under `root` (the target directory included).
pub fn xtask_files(root: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let e = e.unwrap();
            if e.file_type().unwrap().is_dir() {
                stack.push(e.path());
            } else if e.file_name().to_string_lossy().starts_with(".xtask-") {
                out.push(e.path());
            }
        }
    }
    out
}

/// The journal a run leaves for the fixture at `root`: in its state
/// directory under the target directory cargo reports (`CARGO_TARGET_DIR`,
/// inherited by the runs, when set; else `<root>/target`).
pub fn journal(root: &Path) -> PathBuf {
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .filter(|t| t.is_absolute())
        .unwrap_or_else(|| root.join("target"));
    xtask::journal::state_dir(&target, root).join("journal.json")
}
