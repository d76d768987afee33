//! `cargo xtask fmt-check --verify-formatting-only REV`: proves that a commit
//! (typically a whole-workspace rustfmt pass) only reformats. For every `.rs`
//! file it changed, the token streams before and after ([`tokens`](crate::rust_src::tokens),
//! spacing ignored, rustfmt's own token edits normalized) and the comments
//! ([`lexer`](crate::rust_src::lexer), rustfmt's re-indentation ignored) must be the same.

use std::collections::BTreeMap;
use std::io::{BufRead as _, BufReader, Read as _, Write};
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context as _, bail};
use rayon::prelude::*;

use crate::Outcome;
use crate::diag::{Diagnostic, Level, Printer};
use crate::rust_src::lexer::{Comment, split_comments};
use crate::rust_src::tokens::{Tok, normalized_tokens};

/// Why a changed file is not formatting-only.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Failure {
    /// Path in the repository.
    pub path: String,
    /// Line in the new version the failure points at.
    pub line: usize,
    /// What differs.
    pub message: String,
}

/// Runs the verification.
///
/// # Errors
/// Not a git repository, an unknown revision, git failing.
pub fn run(
    args: &super::Args,
    rev: &str,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> anyhow::Result<Outcome> {
    let dir = match &args.target.workspace {
        Some(d) if d.is_file() => d
            .parent()
            .map_or_else(|| PathBuf::from("."), Path::to_path_buf),
        Some(d) => d.clone(),
        None => std::env::current_dir().context("cannot read the current directory")?,
    };
    let git = Git { dir };
    let commit = git
        .text(&[
            "rev-parse",
            "--verify",
            "--quiet",
            &format!("{rev}^{{commit}}"),
        ])
        .map_err(|_| anyhow::anyhow!("`{rev}` is not a commit in {}", git.dir.display()))?;
    let parents = git.text(&["rev-list", "--parents", "-n", "1", &commit])?;
    let parent = match parents.split_whitespace().nth(1) {
        Some(p) => p.to_string(),
        // a root commit: compare with the empty tree
        None => git.text(&["hash-object", "-t", "tree", "/dev/null"])?,
    };
    let subject = git.text(&["log", "-1", "--format=%s", &commit])?;
    let changes = git.name_status(&parent, &commit)?;

    let mut failures = Vec::new();
    let mut rust = Vec::new();
    let mut other = Vec::new();
    for (status, path) in changes {
        if !path.ends_with(".rs") {
            other.push(format!("{status} {path}"));
        } else if status == "M" {
            rust.push(path);
        } else {
            let what = match status.as_str() {
                "A" => "added",
                "D" => "deleted",
                "T" => "changed type",
                _ => "changed",
            };
            failures.push(Failure {
                path,
                line: 1,
                message: format!("{what} by the commit: formatting does not add or remove files"),
            });
        }
    }
    let mut specs = Vec::new();
    for p in &rust {
        specs.push(format!("{parent}:{p}"));
        specs.push(format!("{commit}:{p}"));
    }
    let blobs = git.blobs(&specs)?;
    let compared: Vec<Option<Failure>> = rust
        .par_iter()
        .enumerate()
        .map(|(k, path)| compare(path, &blobs[2 * k], &blobs[2 * k + 1]))
        .collect();
    failures.extend(compared.into_iter().flatten());
    failures.sort_by(|a, b| a.path.cmp(&b.path));

    let short = &commit[..commit.len().min(12)];
    let mut printer = Printer::new(args.format.format, "verify-formatting-only", out, err);
    for f in &failures {
        printer.diagnostic(&f.diagnostic())?;
    }
    if !other.is_empty() {
        printer.human_only(&format!(
            "non-Rust files changed by {short} (not verified):\n"
        ))?;
    }
    for o in &other {
        printer.diagnostic(&non_rust_change(o))?;
    }
    let n_rust = rust.len() + failures.iter().filter(|f| !rust.contains(&f.path)).count();
    printer.summary(
        &format!(
            "verify-formatting-only {short} ({subject}): {n_rust} Rust files changed, {} not formatting-only, {} non-Rust files changed",
            failures.len(),
            other.len()
        ),
        &super::rows::VerifySummary {
            commit: &commit,
            rust_files: rust.len(),
            failures: failures.len(),
            non_rust_files: other.len(),
        },
    )?;
    Ok(if failures.is_empty() {
        Outcome::Holds
    } else {
        Outcome::Violations
    })
}

impl Failure {
    /// The failure as a diagnostic: `path:line: not formatting-only: ..`.
    pub fn diagnostic(&self) -> Diagnostic {
        Diagnostic::error(
            &self.path,
            self.line,
            "not formatting-only",
            self.message.clone(),
            format!(
                "{}:{}: not formatting-only: {}",
                self.path, self.line, self.message
            ),
            "not_formatting_only",
            &super::rows::AtLine {
                file: &self.path,
                line: self.line,
                message: &self.message,
            },
        )
    }
}

/// A non-Rust file the commit changed (`"M path"`): listed, not verified.
fn non_rust_change(change: &str) -> Diagnostic {
    let (status, path) = change.split_once(' ').unwrap_or(("?", change));
    Diagnostic {
        level: Level::Notice,
        file: Some(path.to_string()),
        line: 1,
        column: None,
        title: "verify-formatting-only".into(),
        message: format!("non-Rust file changed: {change}"),
        human: Some(format!("  {change}")),
        json: Some(crate::diag::json_row(
            "non_rust_change",
            &super::rows::NonRustChange { status, file: path },
        )),
        github: true,
    }
}

/// Compares the two versions of one file; `None` when only formatting differs.
pub fn compare(path: &str, before: &[u8], after: &[u8]) -> Option<Failure> {
    let fail = |line: usize, message: String| {
        Some(Failure {
            path: path.to_string(),
            line,
            message,
        })
    };
    let (Ok(before), Ok(after)) = (std::str::from_utf8(before), std::str::from_utf8(after)) else {
        return fail(1, "not valid UTF-8".into());
    };
    let (cb, blank_b) = split_comments(before);
    let (ca, blank_a) = split_comments(after);
    let tb = match normalized_tokens(&blank_b) {
        Ok(t) => t,
        Err(e) => return fail(1, format!("the old version {e}")),
    };
    let ta = match normalized_tokens(&blank_a) {
        Ok(t) => t,
        Err(e) => return fail(1, format!("the new version {e}")),
    };
    if let Some((line, msg)) = token_difference(&tb, &ta) {
        return fail(line, msg);
    }
    comment_difference(&cb, &ca).and_then(|(line, msg)| fail(line, msg))
}

fn snippet(toks: &[Tok], at: usize) -> String {
    let from = at.saturating_sub(2);
    let to = (at + 3).min(toks.len());
    let s = toks[from..to]
        .iter()
        .map(|t| t.text.as_str())
        .collect::<Vec<_>>()
        .join(" ");
    if s.is_empty() {
        "end of file".to_string()
    } else {
        format!("`{s}`")
    }
}

fn token_difference(before: &[Tok], after: &[Tok]) -> Option<(usize, String)> {
    let at = before
        .iter()
        .zip(after)
        .position(|(a, b)| a != b)
        .or_else(|| (before.len() != after.len()).then(|| before.len().min(after.len())))?;
    let lb = before.get(at).or(before.last()).map_or(1, |t| t.line);
    let la = after.get(at).or(after.last()).map_or(1, |t| t.line);
    Some((
        la,
        format!(
            "tokens differ: before (line {lb}) {}, after (line {la}) {}",
            snippet(before, at),
            snippet(after, at)
        ),
    ))
}

/// Same comments, in order; reordering alone is accepted (rustfmt moves a
/// comment with the `use` item it sorts).
fn comment_difference(before: &[Comment], after: &[Comment]) -> Option<(usize, String)> {
    let nb: Vec<String> = before.iter().map(Comment::normalized).collect();
    let na: Vec<String> = after.iter().map(Comment::normalized).collect();
    if nb == na {
        return None;
    }
    let mut count: BTreeMap<&str, isize> = BTreeMap::new();
    for c in &nb {
        *count.entry(c).or_default() += 1;
    }
    for c in &na {
        *count.entry(c).or_default() -= 1;
    }
    let short = |s: &str| {
        let one = s.lines().next().unwrap_or("");
        if one.len() < s.len() {
            format!("{one} ...")
        } else {
            one.to_string()
        }
    };
    if let Some(k) = nb.iter().position(|c| count[c.as_str()] > 0) {
        let near = na
            .get(k)
            .map_or(after.last().map_or(1, |c| c.line), |_| after[k].line);
        return Some((
            near,
            format!(
                "comment dropped or changed (before, line {}): `{}`",
                before[k].line,
                short(&nb[k])
            ),
        ));
    }
    if let Some(k) = na.iter().position(|c| count[c.as_str()] < 0) {
        return Some((after[k].line, format!("comment added: `{}`", short(&na[k]))));
    }
    None
}

struct Git {
    dir: PathBuf,
}

impl Git {
    fn cmd(&self) -> Command {
        let mut c = Command::new("git");
        c.arg("-C").arg(&self.dir);
        c
    }

    fn text(&self, args: &[&str]) -> anyhow::Result<String> {
        let out = crate::child::output(
            self.cmd().args(args),
            crate::child::Kind::Tool,
            &format!("`git {}`", args.join(" ")),
            None,
        )?;
        if !out.status.success() {
            bail!(
                "git {} failed: {}",
                args.join(" "),
                String::from_utf8_lossy(&out.stderr).trim()
            );
        }
        Ok(String::from_utf8_lossy(&out.stdout).trim().to_string())
    }

    /// `git diff --name-status --no-renames -z FROM TO`: (status letter, path).
    fn name_status(&self, from: &str, to: &str) -> anyhow::Result<Vec<(String, String)>> {
        let out = crate::child::output(
            self.cmd()
                .args(["diff", "--name-status", "--no-renames", "-z", from, to]),
            crate::child::Kind::Tool,
            "`git diff`",
            None,
        )?;
        if !out.status.success() {
            bail!(
                "git diff failed: {}",
                String::from_utf8_lossy(&out.stderr).trim()
            );
        }
        let text = String::from_utf8_lossy(&out.stdout);
        let mut parts = text.split('\0').filter(|s| !s.is_empty());
        let mut v = Vec::new();
        while let (Some(s), Some(p)) = (parts.next(), parts.next()) {
            v.push((s.chars().next().unwrap_or('?').to_string(), p.to_string()));
        }
        Ok(v)
    }

    /// Contents of `rev:path` specs through one `git cat-file --batch`.
    fn blobs(&self, specs: &[String]) -> anyhow::Result<Vec<Vec<u8>>> {
        if specs.is_empty() {
            return Ok(Vec::new());
        }
        let input: String = specs.iter().map(|s| format!("{s}\n")).collect();
        let out = crate::child::output(
            self.cmd().args(["cat-file", "--batch"]),
            crate::child::Kind::Tool,
            "`git cat-file --batch`",
            Some(input.into_bytes()),
        )?;
        if !out.status.success() {
            bail!(
                "git cat-file failed: {}",
                String::from_utf8_lossy(&out.stderr).trim()
            );
        }
        let mut reader = BufReader::new(&out.stdout[..]);
        let mut blobs = Vec::with_capacity(specs.len());
        for spec in specs {
            let mut header = String::new();
            reader.read_line(&mut header)?;
            let size: usize = header
                .split_whitespace()
                .nth(2)
                .and_then(|s| s.parse().ok())
                .with_context(|| format!("git cat-file: no blob for {spec}: {}", header.trim()))?;
            let mut buf = vec![0; size + 1]; // content + LF
            reader.read_exact(&mut buf)?;
            buf.pop();
            blobs.push(buf);
        }
        Ok(blobs)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reformatting_passes() {
        let before = "// keep\nuse b::{y,x};\nfn f(a:u32)->u32{ /* why */ a+1 }\n";
        let after = "// keep\nuse b::{x, y};\nfn f(a: u32) -> u32 {\n    /* why */\n    a + 1\n}\n";
        assert_eq!(compare("f.rs", before.as_bytes(), after.as_bytes()), None);
    }

    #[test]
    fn changed_literal_and_dropped_comment_fail() {
        let f = compare(
            "f.rs",
            b"fn f() -> u32 {\n    1\n}\n",
            b"fn f() -> u32 {\n    2\n}\n",
        )
        .unwrap();
        assert_eq!(f.line, 2);
        assert!(f.message.contains("tokens differ"), "{}", f.message);
        let f = compare("f.rs", b"fn f() {} // why\n", b"fn f() {}\n").unwrap();
        assert!(
            f.message
                .contains("comment dropped or changed (before, line 1): `// why`"),
            "{}",
            f.message
        );
        let f = compare("f.rs", b"/// doc\nfn f() {}\n", b"/// dock\nfn f() {}\n").unwrap();
        assert!(f.message.contains("`/// doc`"), "{}", f.message);
    }
}
