//! Running rustfmt: finding it, checking one batch of files per process
//! (file mode, `--check -l`: which files it reached, which differ), and
//! formatting one file's text through stdin.

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use anyhow::Context as _;

/// The rustfmt binary fmt-check drives.
#[derive(Debug, Clone)]
pub struct Rustfmt {
    /// Path of the binary.
    pub path: PathBuf,
    /// `rustfmt --version`, trimmed.
    pub version: String,
}

/// The command that installs rustfmt, named in the error when it is missing.
pub const INSTALL_HINT: &str = "rustup component add rustfmt";

impl Rustfmt {
    /// Finds rustfmt like `cargo fmt` does, preferring the real binary over
    /// the rustup proxy (half the start-up cost): `$RUSTFMT`, else `rustfmt`
    /// beside `$CARGO` (the toolchain's own when cargo started us), else
    /// `rustfmt` on `PATH`. Checks that it runs.
    ///
    /// # Errors
    /// rustfmt is not installed or does not run; the message says how to install it.
    pub fn locate() -> anyhow::Result<Rustfmt> {
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
        let out = Command::new(path)
            .arg("--version")
            .stdin(Stdio::null())
            .output()
            .map_err(|e| missing(format!("cannot run `{}`: {e}", path.display())))?;
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
        })
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

    /// Checks `files` in file mode (`rustfmt -v --check -l FILE...`): each
    /// file and the out-of-line modules rustfmt reaches from it, all with
    /// `config` (or rustfmt's own lookup from each file's directory when `None`).
    /// Returns which files rustfmt reached and which of them are not formatted
    /// (absolute, lexically normal paths); a file that failed (and its modules)
    /// is just missing from `reached`.
    ///
    /// rustfmt prints no file text in this mode, only `Formatting P` lines,
    /// the names of the files that differ and timing lines, so nothing in a
    /// file's contents can be mistaken for the output's structure. The
    /// formatted text of a file that differs comes from [`Rustfmt::format_text`].
    ///
    /// # Errors
    /// rustfmt could not be started.
    pub fn check_files(
        &self,
        cwd: &Path,
        edition: Option<&str>,
        config: Option<&Path>,
        files: &[PathBuf],
    ) -> anyhow::Result<Checked> {
        let mut cmd = Command::new(&self.path);
        cmd.current_dir(cwd)
            .args(["-v", "--check", "-l", "--color", "never"]);
        if let Some(e) = edition {
            cmd.args(["--edition", e]);
        }
        if let Some(c) = config {
            cmd.arg("--config-path").arg(c);
        }
        let out = cmd
            .args(files)
            .stdin(Stdio::null())
            .stderr(Stdio::null())
            .output()
            .with_context(|| format!("cannot run {}", self.path.display()))?;
        let stdout = String::from_utf8_lossy(&out.stdout);
        let parsed = parse_check_stdout(&stdout);
        let norm = |p: PathBuf| crate::fsutil::normalize(&cwd.join(p));
        Ok(Checked {
            reached: parsed.reached.into_iter().map(norm).collect(),
            differ: parsed.differ.into_iter().map(norm).collect(),
        })
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
    ) -> anyhow::Result<Result<String, String>> {
        let mut child = self
            .stdin_command(cwd, edition, config)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .with_context(|| format!("cannot run {}", self.path.display()))?;
        let mut stdin = child.stdin.take().context("rustfmt stdin")?;
        let input = text.to_string();
        // Write from a thread so a large file cannot deadlock against rustfmt's stdout.
        let writer = std::thread::spawn(move || stdin.write_all(input.as_bytes()));
        let out = child.wait_with_output().context("waiting for rustfmt")?;
        let _ = writer.join();
        if out.status.success() {
            Ok(Ok(String::from_utf8_lossy(&out.stdout).into_owned()))
        } else {
            let msg = String::from_utf8_lossy(&out.stderr).replace("<stdin>", display_path);
            let msg = if msg.trim().is_empty() {
                format!("rustfmt exited with {}", out.status)
            } else {
                msg.trim_end().to_string()
            };
            Ok(Err(msg))
        }
    }
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
    fn missing_rustfmt_says_how_to_install() {
        let e = Rustfmt::at(Path::new("/nonexistent/rustfmt"))
            .unwrap_err()
            .to_string();
        assert!(e.contains(INSTALL_HINT), "{e}");
    }
}
