//! Running rustfmt: finding it, one batch of files per process (file mode,
//! parsing its verbose `--emit stdout` output), or one file through stdin.

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

    fn command(&self, cwd: &Path, edition: Option<&str>, config: Option<&Path>) -> Command {
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

    /// Formats `files` in file mode (`rustfmt -v --emit stdout FILE...`): each
    /// file and the out-of-line modules rustfmt reaches from it, all with
    /// `config` (or rustfmt's own lookup from each file's directory when `None`).
    /// Returns every formatted file rustfmt printed (absolute, lexically
    /// normal paths); a file that failed (and its modules) is just missing.
    ///
    /// # Errors
    /// rustfmt could not be started.
    pub fn format_files(
        &self,
        cwd: &Path,
        edition: Option<&str>,
        config: Option<&Path>,
        files: &[PathBuf],
    ) -> anyhow::Result<Vec<(PathBuf, String)>> {
        let out = self
            .command(cwd, edition, config)
            .arg("-v")
            .args(files)
            .stdin(Stdio::null())
            .output()
            .with_context(|| format!("cannot run {}", self.path.display()))?;
        let stdout = String::from_utf8_lossy(&out.stdout);
        Ok(parse_verbose_stdout(&stdout)
            .into_iter()
            .map(|(p, t)| (super::files::normalize(&cwd.join(p)), t))
            .collect())
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
            .command(cwd, edition, config)
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

/// Splits rustfmt's `-v --emit stdout` output into files. Each file is
/// `Formatting P\nP:\n\n<text>`; each input file ends with a `Spent ... phase` line.
pub fn parse_verbose_stdout(stdout: &str) -> Vec<(PathBuf, String)> {
    let mut out = Vec::new();
    let mut cur: Option<(PathBuf, String)> = None;
    let mut lines = stdout.split_inclusive('\n');
    while let Some(line) = lines.next() {
        let body = line.strip_suffix('\n').unwrap_or(line);
        if let Some(p) = body.strip_prefix("Formatting ") {
            let mut look = lines.clone();
            if look
                .next()
                .is_some_and(|l| l.strip_suffix(":\n") == Some(p))
                && look.next() == Some("\n")
            {
                out.extend(cur.take());
                lines = look;
                cur = Some((PathBuf::from(p), String::new()));
                continue;
            }
        }
        if body.starts_with("Spent ") && body.ends_with(" secs in the formatting phase") {
            out.extend(cur.take());
            continue;
        }
        if let Some((_, text)) = &mut cur {
            text.push_str(line);
        }
    }
    out.extend(cur);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_verbose_output() {
        let s = "Formatting /a/lib.rs\n/a/lib.rs:\n\nmod b;\nFormatting /a/b.rs\n/a/b.rs:\n\nfn b() {}\r\n\nSpent 0.001 secs in the parsing phase, and 0.000 secs in the formatting phase\nFormatting /a/e.rs\n/a/e.rs:\n\n\nSpent 0.000 secs in the parsing phase, and 0.000 secs in the formatting phase\n";
        let v = parse_verbose_stdout(s);
        assert_eq!(v.len(), 3);
        assert_eq!(v[0], (PathBuf::from("/a/lib.rs"), "mod b;\n".to_string()));
        assert_eq!(
            v[1],
            (PathBuf::from("/a/b.rs"), "fn b() {}\r\n\n".to_string())
        );
        assert_eq!(v[2], (PathBuf::from("/a/e.rs"), "\n".to_string()));
    }

    #[test]
    fn missing_rustfmt_says_how_to_install() {
        let e = Rustfmt::at(Path::new("/nonexistent/rustfmt"))
            .unwrap_err()
            .to_string();
        assert!(e.contains(INSTALL_HINT), "{e}");
    }
}
