//! Running rustfmt: finding it (the toolchain the workspace pins, see
//! [`super::toolchain`]), running one batch of files per process in file mode
//! (`-v --emit stdout`: which files it reached and their formatted text, in
//! one run; or `-v --check -l` where a file's text could be mistaken for the
//! output's structure), and formatting one file's text through stdin. rustfmt's
//! warnings (stderr `Warning: ...`) and crashes (a panic, a signal) are
//! returned, never swallowed.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus};

use super::toolchain::{self, Pin};

/// The rustfmt binary fmt-check drives.
#[derive(Debug, Clone)]
pub struct Rustfmt {
    /// Path of the binary.
    pub path: PathBuf,
    /// `rustfmt --version`, trimmed.
    pub version: String,
    /// The toolchain file whose toolchain this rustfmt belongs to, if any.
    pub pin: Option<Pin>,
}

/// The command that installs rustfmt, named in the error when it is missing.
pub const INSTALL_HINT: &str = "rustup component add rustfmt";

/// How a rustfmt process ended when it did not end normally: killed by a
/// signal or panicked (`None`: it ran to its end, whatever its exit code).
pub fn crash_of(status: ExitStatus, stderr: &str) -> Option<String> {
    use std::os::unix::process::ExitStatusExt as _;
    if let Some(sig) = status.signal() {
        return Some(format!(
            "rustfmt was killed by signal {sig} ({})",
            crate::text::signal_name(sig)
        ));
    }
    let panic = stderr.lines().find(|l| l.contains("panicked at"));
    if status.code() == Some(101) || panic.is_some() {
        let detail = stderr
            .lines()
            .skip_while(|l| !l.contains("panicked at"))
            .take(2)
            .collect::<Vec<_>>()
            .join(" ");
        return Some(format!(
            "rustfmt crashed ({status}){}",
            if detail.is_empty() {
                String::new()
            } else {
                format!(": {}", detail.trim())
            }
        ));
    }
    None
}

/// rustfmt's `Warning: ...` lines on stderr, without the prefix.
fn warnings_of(stderr: &str) -> Vec<String> {
    stderr
        .lines()
        .filter_map(|l| l.strip_prefix("Warning: "))
        .map(|w| w.trim().to_string())
        .collect()
}

/// Whether a file's text holds a line rustfmt's verbose output could be
/// mistaken for (`Formatting P`, `Spent ...`, `Using rustfmt config file`):
/// such text keeps its lines verbatim in rustfmt's output (only string
/// literals and comments can hold them), so a batch without it splits exactly.
pub fn looks_like_rustfmt_output(text: &str) -> bool {
    const MARKS: [&str; 3] = ["Formatting ", "Spent ", "Using rustfmt config file "];
    MARKS.iter().any(|m| {
        text.starts_with(m) || text.contains(&format!("\n{m}")) || text.contains(&format!("\r{m}"))
    })
}

/// How a batch is run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// `-v --emit stdout`: the verdict and the formatted text in one run.
    Emit,
    /// `-v --check -l`: which files differ only (their text comes from a
    /// stdin run each): for batches whose text could be mistaken for the output.
    Check,
}

impl Rustfmt {
    /// Finds rustfmt like `cargo fmt` does, preferring the real binary over
    /// the rustup proxy (half the start-up cost): `$RUSTFMT`, else `rustfmt`
    /// beside `$CARGO` (the toolchain's own when cargo started us), else
    /// `rustfmt` on `PATH`. Checks that it runs.
    ///
    /// # Errors
    /// rustfmt is not installed or does not run; the message says how to install it.
    pub fn locate() -> anyhow::Result<Rustfmt> {
        Rustfmt::locate_for(None)
    }

    /// Finds the rustfmt `cargo fmt` would run in `dir`: `$RUSTFMT` when set;
    /// else, when `dir` (or a parent) pins a toolchain and the caller did not
    /// pick one (`cargo +toolchain`), that toolchain's rustfmt (one `rustup which`
    /// run there); else as [`Rustfmt::locate`].
    ///
    /// # Errors
    /// As [`Rustfmt::locate`]; a pinned toolchain that is not installed.
    pub fn locate_for(dir: Option<&Path>) -> anyhow::Result<Rustfmt> {
        let explicit = std::env::var_os("RUSTFMT").filter(|p| !p.is_empty());
        if explicit.is_none()
            && let Some(dir) = dir
            && let Some((path, pin)) = toolchain::pinned_rustfmt(dir)?
        {
            let mut r = Rustfmt::at(&path)?;
            r.pin = Some(pin);
            return Ok(r);
        }
        let candidate = if let Some(p) = std::env::var_os("RUSTFMT").filter(|p| !p.is_empty()) {
            PathBuf::from(p)
        } else {
            std::env::var_os("CARGO")
                .map(PathBuf::from)
                .and_then(|c| {
                    c.parent()
                        .map(|d| d.join(format!("rustfmt{}", std::env::consts::EXE_SUFFIX)))
                })
                .filter(|p| p.is_file())
                .unwrap_or_else(|| PathBuf::from("rustfmt"))
        };
        Rustfmt::at(&candidate)
    }

    /// The rustfmt at `path`, checked with `--version`.
    ///
    /// # Errors
    /// As [`Rustfmt::locate`].
    pub fn at(path: &Path) -> anyhow::Result<Rustfmt> {
        let missing = |why: String| {
            anyhow::anyhow!("rustfmt is not available ({why}): install it with `{INSTALL_HINT}`")
        };
        let mut cmd = Command::new(path);
        cmd.arg("--version");
        let out = crate::child::output(
            &mut cmd,
            crate::child::Kind::Tool,
            &format!("`{} --version`", path.display()),
            None,
        )
        .map_err(|e| {
            if e.chain()
                .any(|c| c.downcast_ref::<std::io::Error>().is_some())
            {
                missing(format!("cannot run `{}`: {e:#}", path.display()))
            } else {
                e
            }
        })?;
        if !out.status.success() {
            let msg = String::from_utf8_lossy(&out.stderr);
            return Err(missing(format!(
                "`{} --version` failed: {}",
                path.display(),
                msg.trim()
            )));
        }
        let version = String::from_utf8_lossy(&out.stdout).trim().to_string();
        Ok(Rustfmt {
            path: path.to_path_buf(),
            version,
            pin: None,
        })
    }

    /// Whether this rustfmt honours nightly-only options.
    pub fn is_nightly(&self) -> bool {
        self.version.contains("-nightly") || self.version.contains("-dev")
    }

    /// The toolchain this rustfmt comes from, in words.
    pub fn describe(&self) -> String {
        match &self.pin {
            Some(p) => format!(
                "{} (toolchain `{}` pinned by {})",
                self.version,
                p.channel,
                p.file.display()
            ),
            None => self.version.clone(),
        }
    }

    fn stdin_command(&self, cwd: &Path, edition: Option<&str>, config: Option<&Path>) -> Command {
        let mut cmd = Command::new(&self.path);
        cmd.current_dir(cwd)
            .args(["--emit", "stdout", "--color", "never"]);
        if let Some(e) = edition {
            cmd.args(["--edition", e]);
        }
        if let Some(c) = config {
            cmd.arg("--config-path").arg(c);
        }
        cmd
    }

    /// Runs rustfmt in file mode on `files`: each file and the out-of-line
    /// modules rustfmt reaches from it, all with `config` (or rustfmt's own
    /// lookup from each file's directory when `None`). Returns which files
    /// rustfmt reached and, per [`Mode`], their formatted text or which of
    /// them differ (absolute, lexically normal paths); a file that failed
    /// (and its modules) is just missing from `reached`. Also rustfmt's
    /// warnings, and how it crashed if it did.
    ///
    /// # Errors
    /// rustfmt could not be started.
    pub fn run_files(
        &self,
        cwd: &Path,
        edition: Option<&str>,
        config: Option<&Path>,
        files: &[PathBuf],
        mode: Mode,
    ) -> anyhow::Result<FileRun> {
        let mut cmd = Command::new(&self.path);
        cmd.current_dir(cwd).args(match mode {
            Mode::Emit => ["-v", "--emit", "stdout", "--color", "never"].as_slice(),
            Mode::Check => ["-v", "--check", "-l", "--color", "never"].as_slice(),
        });
        if let Some(e) = edition {
            cmd.args(["--edition", e]);
        }
        if let Some(c) = config {
            cmd.arg("--config-path").arg(c);
        }
        cmd.args(files);
        let out = crate::child::output(
            &mut cmd,
            crate::child::Kind::Tool,
            &format!(
                "rustfmt ({}) on {} file(s) from {}",
                self.path.display(),
                files.len(),
                files
                    .first()
                    .map_or_else(String::new, |f| f.display().to_string())
            ),
            None,
        )?;
        let stdout = String::from_utf8_lossy(&out.stdout);
        let stderr = String::from_utf8_lossy(&out.stderr);
        // rustfmt names each file on a line of its own, by its canonical path:
        // a newline in the workspace's path would split those lines, so the
        // path is read as one token (a stand-in without a newline), then put back
        let shield = Shield::new(cwd, &stdout);
        let stdout = shield.hide(&stdout);
        let norm = |p: PathBuf| crate::fsutil::normalize(&cwd.join(shield.path(p)));
        let mut run = FileRun {
            warnings: warnings_of(&stderr),
            crash: crash_of(out.status, &stderr),
            ..FileRun::default()
        };
        match mode {
            Mode::Emit => {
                // a file with no text failed: it was not reached
                for (p, text) in parse_emit_stdout(&stdout) {
                    if let Some(t) = text {
                        let p = norm(p);
                        run.reached.push(p.clone());
                        run.texts.insert(p, shield.show(t));
                    }
                }
            }
            Mode::Check => {
                let parsed = parse_check_stdout(&stdout);
                run.reached = parsed.reached.into_iter().map(norm).collect();
                run.differ = parsed.differ.into_iter().map(norm).collect();
            }
        }
        Ok(run)
    }

    /// Formats one file's text through stdin (rustfmt does not follow `mod`
    /// declarations then). `Ok(Err(message))` when rustfmt rejects it, with
    /// `<stdin>` in the message replaced by `display_path`.
    ///
    /// # Errors
    /// rustfmt could not be started.
    pub fn format_text(
        &self,
        cwd: &Path,
        edition: Option<&str>,
        config: Option<&Path>,
        text: &str,
        display_path: &str,
    ) -> anyhow::Result<Formatted> {
        // the text is written from a thread, so a large file cannot
        // deadlock against rustfmt's stdout
        let out = crate::child::output(
            &mut self.stdin_command(cwd, edition, config),
            crate::child::Kind::Tool,
            &format!("rustfmt ({}) on {display_path}", self.path.display()),
            Some(text.as_bytes().to_vec()),
        )?;
        let stderr = String::from_utf8_lossy(&out.stderr).replace("<stdin>", display_path);
        let warnings = warnings_of(&stderr);
        let result = if let Some(crash) = crash_of(out.status, &stderr) {
            Err(crash)
        } else if out.status.success() {
            Ok(String::from_utf8_lossy(&out.stdout).into_owned())
        } else {
            let msg: Vec<&str> = stderr
                .lines()
                .filter(|l| !l.starts_with("Warning: "))
                .collect();
            let msg = msg.join("\n");
            Err(if msg.trim().is_empty() {
                format!("rustfmt exited with {}", out.status)
            } else {
                msg.trim_end().to_string()
            })
        };
        Ok(Formatted { result, warnings })
    }
}

/// A directory path that holds a newline, as it appears in rustfmt's
/// output, swapped for a stand-in that holds none (and that the output does
/// not already hold) while the output is read line by line.
struct Shield {
    /// (the path as rustfmt prints it, its stand-in)
    swap: Option<(String, String)>,
}

impl Shield {
    fn new(dir: &Path, stdout: &str) -> Shield {
        let swap = dir.to_str().filter(|d| d.contains('\n')).map(|d| {
            let stand_in = (0..)
                .map(|k| format!("\u{1}xtask-dir-{k}\u{1}"))
                .find(|s| !stdout.contains(s.as_str()))
                .expect("unbounded");
            (d.to_string(), stand_in)
        });
        Shield { swap }
    }

    fn hide<'a>(&self, text: &'a str) -> std::borrow::Cow<'a, str> {
        match &self.swap {
            Some((dir, s)) if text.contains(dir.as_str()) => text.replace(dir.as_str(), s).into(),
            _ => text.into(),
        }
    }

    fn show(&self, text: String) -> String {
        match &self.swap {
            Some((dir, s)) if text.contains(s.as_str()) => text.replace(s.as_str(), dir),
            _ => text,
        }
    }

    fn path(&self, p: PathBuf) -> PathBuf {
        match (&self.swap, p.to_str()) {
            (Some(_), Some(t)) => PathBuf::from(self.show(t.to_string())),
            _ => p,
        }
    }
}

/// What one stdin run says: the formatted text or rustfmt's message, and its warnings.
#[derive(Debug, Clone)]
pub struct Formatted {
    /// The formatted text, or why there is none.
    pub result: Result<String, String>,
    /// rustfmt's warnings.
    pub warnings: Vec<String>,
}

/// What one file-mode run says.
#[derive(Debug, Clone, Default)]
pub struct FileRun {
    /// Every file rustfmt formatted (in memory), in its order.
    pub reached: Vec<PathBuf>,
    /// [`Mode::Emit`]: the formatted text of each reached file.
    pub texts: HashMap<PathBuf, String>,
    /// [`Mode::Check`]: the reached files whose text is not formatted.
    pub differ: std::collections::HashSet<PathBuf>,
    /// rustfmt's warnings (`Warning: ` dropped).
    pub warnings: Vec<String>,
    /// How rustfmt crashed, if it did.
    pub crash: Option<String>,
}

/// Reads rustfmt's `-v --emit stdout` output: per file `Formatting P`, then
/// `P:`, an empty line and the formatted text; `Spent ... phase` after each
/// input; `Using rustfmt config file ...` lines before a file. A file that
/// failed has its `Formatting` line only (`None`). Exact when no file's text
/// [`looks_like_rustfmt_output`].
pub fn parse_emit_stdout(stdout: &str) -> Vec<(PathBuf, Option<String>)> {
    let lines: Vec<&str> = stdout.split_inclusive('\n').collect();
    let bare = |l: &str| l.trim_end_matches('\n').trim_end_matches('\r').to_string();
    let mut out: Vec<(PathBuf, Option<String>)> = Vec::new();
    let mut current: Option<String> = None;
    let mut k = 0;
    let close = |out: &mut Vec<(PathBuf, Option<String>)>, current: &mut Option<String>| {
        if let (Some(text), Some(last)) = (current.take(), out.last_mut()) {
            last.1 = Some(text);
        }
    };
    while k < lines.len() {
        let line = bare(lines[k]);
        if let Some(p) = line.strip_prefix("Formatting ") {
            close(&mut out, &mut current);
            out.push((PathBuf::from(p), None));
            let header = lines.get(k + 1).map(|l| bare(l)) == Some(format!("{p}:"))
                && lines.get(k + 2).map(|l| bare(l)).as_deref() == Some("");
            if header {
                current = Some(String::new());
                k += 3;
            } else {
                k += 1;
            }
            continue;
        }
        let using_config = line.starts_with("Using rustfmt config file ")
            && lines
                .get(k + 1)
                .is_some_and(|l| l.starts_with("Formatting "));
        if using_config || (line.starts_with("Spent ") && line.ends_with(" formatting phase")) {
            close(&mut out, &mut current);
        } else if let Some(text) = current.as_mut() {
            text.push_str(lines[k]);
        }
        k += 1;
    }
    close(&mut out, &mut current);
    out
}

/// What one `rustfmt -v --check -l` run says.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Checked {
    /// Every file rustfmt formatted (in memory), in its order.
    pub reached: Vec<PathBuf>,
    /// The files among them whose text is not formatted.
    pub differ: std::collections::HashSet<PathBuf>,
}

/// Reads rustfmt's `-v --check -l` output: `Formatting P` when it starts on a
/// file, `P` (or `Incorrect newline style in P`) when that file is not formatted, `Spent ... phase` after each input.
/// A listed name always follows its own `Formatting` line, so a file whose
/// path happened to start with `Formatting ` is still read right.
pub fn parse_check_stdout(stdout: &str) -> Checked {
    let mut out = Checked::default();
    let mut seen = std::collections::HashSet::new();
    for line in stdout.lines() {
        let line = line.strip_suffix('\r').unwrap_or(line);
        if line.is_empty() {
            continue;
        }
        let named = line
            .strip_prefix("Incorrect newline style in ")
            .filter(|p| seen.contains(*p))
            .unwrap_or(line);
        if seen.contains(named) {
            out.differ.insert(PathBuf::from(named));
        } else if let Some(p) = line.strip_prefix("Formatting ") {
            seen.insert(p.to_string());
            out.reached.push(PathBuf::from(p));
        }
        // anything else: `Spent ... secs in the formatting phase`, warnings
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_check_output() {
        let s = "Formatting /a/b.rs\nFormatting /a/lib.rs\n/a/lib.rs\nSpent 0.002 secs in the parsing phase, and 0.000 secs in the formatting phase\nFormatting /a/c.rs\nFormatting /a/d.rs\nIncorrect newline style in /a/d.rs\nSpent 0.000 secs in the parsing phase, and 0.000 secs in the formatting phase\n";
        let c = parse_check_stdout(s);
        assert_eq!(
            c.reached,
            ["/a/b.rs", "/a/lib.rs", "/a/c.rs", "/a/d.rs"].map(PathBuf::from)
        );
        assert_eq!(c.differ.len(), 2);
        assert!(c.differ.contains(Path::new("/a/d.rs")));
        assert!(c.differ.contains(Path::new("/a/lib.rs")));
    }

    #[test]
    fn parses_emit_output() {
        let s = "Formatting /a/lib.rs\n/a/lib.rs:\n\nmod m;\nfn a() {}\nFormatting /a/bad.rs\nFormatting /a/m.rs\n/a/m.rs:\n\nfn b() {}\r\nSpent 0.001 secs in the parsing phase, and 0.000 secs in the formatting phase\nUsing rustfmt config file /a/rustfmt.toml for /a/e.rs\nFormatting /a/e.rs\n/a/e.rs:\n\nSpent 0.0 secs in the parsing phase, and 0.0 secs in the formatting phase\n";
        let got = parse_emit_stdout(s);
        let want: Vec<(PathBuf, Option<String>)> = vec![
            ("/a/lib.rs".into(), Some("mod m;\nfn a() {}\n".into())),
            ("/a/bad.rs".into(), None),
            ("/a/m.rs".into(), Some("fn b() {}\r\n".into())),
            ("/a/e.rs".into(), Some(String::new())),
        ];
        assert_eq!(got, want);
        assert!(looks_like_rustfmt_output("const A: &str = \"\nSpent 1\";"));
        assert!(!looks_like_rustfmt_output("// Formatting x\n"));
    }

    #[test]
    fn missing_rustfmt_says_how_to_install() {
        let e = Rustfmt::at(Path::new("/nonexistent/rustfmt"))
            .unwrap_err()
            .to_string();
        assert!(e.contains(INSTALL_HINT), "{e}");
    }
}
