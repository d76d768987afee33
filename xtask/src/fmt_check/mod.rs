//! `cargo xtask fmt-check`: rustfmt every `.rs` file of a workspace with its
//! own package's edition and the rustfmt config rustfmt picks for it,
//! including the files `cargo fmt` never reaches (`include!`d files, modules
//! declared inside macros, stray files).
//!
//! - [`files`]: the walk, package ownership (editions), rustfmt config lookup.
//! - [`rustfmt`]: locating and running rustfmt, parsing its output.
//! - [`check`]: which rustfmt run formats which file; verdicts (line endings).
//! - [`modscan`]: `mod` declarations (`#[rustfmt::skip]`, module following).
//! - [`verify`], [`lexer`], [`tokens`]: `--verify-formatting-only REV`.

pub mod check;
pub mod files;
pub mod rustfmt;
pub mod verify;

use std::io::Write;

use serde_json::json;

use crate::Outcome;
use crate::args::{FormatArg, Target};
use crate::report::{Format, github_error, github_notice, print_note, print_summary, unified_diff};
use check::{EditionSource, FileReport, Verdict, Via};

/// Arguments of `cargo xtask fmt-check`.
#[derive(Debug, Clone, clap::Args)]
pub struct Args {
    #[command(flatten)]
    pub target: Target,
    #[command(flatten)]
    pub format: FormatArg,
    /// Write the formatted files (atomic replace, permissions kept) and report
    /// what changed. Writes nothing if any file cannot be formatted.
    #[arg(long, conflicts_with = "verify_formatting_only")]
    pub fix: bool,
    /// Prove that commit REV only reformats: every `.rs` file it changed keeps
    /// its tokens and comments. Lists the files where that fails (exit 1) and the
    /// non-Rust files the commit changed.
    #[arg(long, value_name = "REV")]
    pub verify_formatting_only: Option<String>,
}

/// Runs `cargo xtask fmt-check`.
///
/// # Errors
/// Anything that stops the command from running (exit 2): no workspace, a
/// malformed policy or rustfmt config, rustfmt missing, or a file rustfmt
/// cannot parse (reported after every other file has been checked).
pub fn run(args: &Args, out: &mut dyn Write, err: &mut dyn Write) -> anyhow::Result<Outcome> {
    if let Some(rev) = &args.verify_formatting_only {
        return verify::run(args, rev, out, err);
    }
    let mut timing = crate::report::Timing::new("XTASK_FMT_TIMING");
    // `rustfmt --version` runs while cargo metadata does.
    let probe = std::thread::spawn(rustfmt::Rustfmt::locate);
    let manifest = crate::workspace::manifest_path(args.target.workspace.as_deref())?;
    let metadata = crate::workspace::metadata_no_deps(&manifest)?;
    let root = metadata.workspace_root.as_std_path();
    let mut notes = Vec::new();
    let (policy, note) =
        crate::workspace::load_policy_or_default(args.target.policy.as_deref(), root)?;
    notes.extend(note);
    let policy = policy.policy;
    let mut plan = files::plan(&metadata, &policy.fmt.exclude)?;
    notes.append(&mut plan.notes);
    let rustfmt = probe
        .join()
        .map_err(|_| anyhow::anyhow!("rustfmt probe panicked"))??;
    timing.mark("cargo metadata, policy, walk");
    let mut configs = files::ConfigResolver::default();
    let reports = check::check(&rustfmt, &plan, &mut configs, &mut notes, &mut timing)?;
    timing.write_to(err)?;
    Report {
        plan: &plan,
        reports: &reports,
        notes,
        format: args.format.format,
        fix: args.fix,
    }
    .emit(out, err)
}

struct Report<'a> {
    plan: &'a files::FileInventory,
    reports: &'a [FileReport],
    notes: Vec<String>,
    format: Format,
    fix: bool,
}

impl Report<'_> {
    fn emit(mut self, out: &mut dyn Write, err: &mut dyn Write) -> anyhow::Result<Outcome> {
        let plan = self.plan;
        let rel = |r: &FileReport| plan.files[r.file].rel.as_str();
        let unformatted: Vec<&FileReport> = self
            .reports
            .iter()
            .filter(|r| matches!(r.verdict, Verdict::Unformatted { .. }))
            .collect();
        let errors: Vec<&FileReport> = self
            .reports
            .iter()
            .filter(|r| matches!(r.verdict, Verdict::Error(_)))
            .collect();
        let skipped = self
            .reports
            .iter()
            .filter(|r| matches!(r.verdict, Verdict::Skipped(_)))
            .count();
        let standalone = self
            .reports
            .iter()
            .filter(|r| {
                r.via == Via::Standalone
                    && !matches!(r.verdict, Verdict::Skipped(_) | Verdict::Error(_))
            })
            .count();
        self.edition_notes();

        // Safety net: rustfmt's output must keep every token and comment of
        // the file; a file where it does not is never written.
        let unsafe_fixes: Vec<verify::Failure> = if self.fix {
            use rayon::prelude::*;
            unformatted
                .par_iter()
                .filter_map(|r| match &r.verdict {
                    Verdict::Unformatted { fixed, .. } => {
                        verify::compare(rel(r), r.original.as_bytes(), fixed.as_bytes())
                    }
                    _ => None,
                })
                .collect()
        } else {
            Vec::new()
        };
        if !unsafe_fixes.is_empty() {
            for f in &unsafe_fixes {
                let msg = format!(
                    "rustfmt's output changes more than formatting ({}); not written",
                    f.message
                );
                match self.format {
                    Format::Human => writeln!(out, "{}:{}: error: {msg}", f.path, f.line)?,
                    Format::Json => writeln!(
                        out,
                        "{}",
                        json!({"kind": "error", "file": f.path, "line": f.line, "message": msg})
                    )?,
                    Format::Github => writeln!(
                        out,
                        "{}",
                        github_error(&f.path, f.line, None, "fmt-check", &msg)
                    )?,
                }
            }
            anyhow::bail!(
                "{} file(s) would change beyond formatting; --fix wrote nothing",
                unsafe_fixes.len()
            );
        }
        // --fix: plan every file, apply all or nothing, and only then report.
        let wrote = if self.fix && errors.is_empty() {
            let mut edits = crate::edit::WriteSet::new();
            for r in &unformatted {
                if let Verdict::Unformatted { fixed, .. } = &r.verdict {
                    let f = &plan.files[r.file];
                    edits.replace_file(&f.path, &f.rel, &r.original, fixed)?;
                }
            }
            // verify::compare above stands in for the edit plan's syn check:
            // rustfmt may accept syntax syn does not know yet
            edits.skip_rust_validation();
            edits.apply()?.len()
        } else {
            0
        };

        for r in &unformatted {
            let Verdict::Unformatted {
                fixed,
                line_endings_only,
            } = &r.verdict
            else {
                continue;
            };
            let old = r.original.replace("\r\n", "\n");
            let new = fixed.replace("\r\n", "\n");
            let line = first_changed_line(&old, &new);
            let what = if *line_endings_only {
                "line endings differ from the config's newline_style".to_string()
            } else if self.fix {
                "reformatted".to_string()
            } else {
                "not formatted".to_string()
            };
            let context = describe(plan, r);
            match self.format {
                Format::Human => {
                    writeln!(out, "{}:{line}: {what} ({context})", rel(r))?;
                    if !*line_endings_only && !self.fix {
                        write!(out, "{}", unified_diff(rel(r), &old, &new))?;
                    }
                }
                Format::Json => {
                    let obj = json!({
                        "kind": if self.fix { "fixed" } else { "unformatted" },
                        "file": rel(r),
                        "line": line,
                        "line_endings_only": line_endings_only,
                        "edition": r.edition,
                        "edition_source": edition_source_str(&r.edition_source),
                        "config": r.config.as_ref().map(|c| crate::fsutil::rel(&plan.root, c)),
                        "reached_by_cargo_fmt": matches!(r.via, Via::CrateRoot(_)),
                        "diff": if self.fix { String::new() } else { unified_diff(rel(r), &old, &new) },
                    });
                    writeln!(out, "{obj}")?;
                }
                Format::Github if !self.fix => {
                    let msg = format!("{what} ({context}); run `cargo xtask fmt-check --fix`");
                    writeln!(
                        out,
                        "{}",
                        github_error(rel(r), line, None, "fmt-check", &msg)
                    )?;
                }
                Format::Github => writeln!(
                    out,
                    "{}",
                    github_notice(Some(rel(r)), "fmt-check", "reformatted")
                )?,
            }
        }
        for r in &errors {
            let Verdict::Error(msg) = &r.verdict else {
                continue;
            };
            let line = error_line(msg).unwrap_or(1);
            match self.format {
                Format::Human => {
                    writeln!(out, "{}:{line}: error: rustfmt cannot format it:", rel(r))?;
                    for l in msg.lines() {
                        writeln!(out, "    {l}")?;
                    }
                }
                Format::Json => writeln!(
                    out,
                    "{}",
                    json!({"kind": "error", "file": rel(r), "line": line, "message": msg})
                )?,
                Format::Github => writeln!(
                    out,
                    "{}",
                    github_error(
                        rel(r),
                        line,
                        None,
                        "fmt-check: rustfmt cannot format it",
                        msg
                    )
                )?,
            }
        }
        for n in &self.notes {
            print_note(self.format, "fmt-check", "note", n, out, err)?;
        }

        let checked = self.reports.len() - skipped;
        let summary = format!(
            "{checked} files checked ({standalone} beyond cargo fmt's reach, {skipped} behind #[rustfmt::skip], {} excluded by policy): {} {}, {} cannot be formatted",
            plan.excluded,
            unformatted.len(),
            if self.fix {
                "reformatted"
            } else {
                "not formatted"
            },
            errors.len()
        );
        print_summary(
            self.format,
            "fmt-check",
            &format!("fmt-check: {summary}"),
            json!({"checked": checked, "standalone": standalone, "skipped": skipped,
                   "excluded": plan.excluded, "unformatted": if self.fix { 0 } else { unformatted.len() },
                   "fixed": wrote, "errors": errors.len()}),
            out,
        )?;
        if !errors.is_empty() {
            let mut msg = format!(
                "{} file(s) cannot be formatted by rustfmt (see above)",
                errors.len()
            );
            if self.fix && !unformatted.is_empty() {
                msg.push_str("; --fix wrote nothing: fix or exclude them first");
            }
            anyhow::bail!(msg);
        }
        Ok(if unformatted.is_empty() || self.fix {
            Outcome::Holds
        } else {
            Outcome::Violations
        })
    }

    /// "N files outside any package were formatted with edition E (why)".
    fn edition_notes(&mut self) {
        let mut outside: std::collections::BTreeMap<(String, String), Vec<&str>> =
            Default::default();
        for r in self.reports {
            if matches!(r.verdict, Verdict::Skipped(_) | Verdict::Error(_)) || r.edition.is_empty()
            {
                continue;
            }
            if !matches!(r.edition_source, EditionSource::Package(_)) {
                let key = (
                    r.edition.clone(),
                    edition_source_str(&r.edition_source).to_string(),
                );
                outside
                    .entry(key)
                    .or_default()
                    .push(&self.plan.files[r.file].rel);
            }
        }
        for ((edition, source), files) in outside {
            let more = if files.len() > 1 {
                format!(" and {} more", files.len() - 1)
            } else {
                String::new()
            };
            self.notes.push(format!(
                "{}{more}: outside any package, formatted with edition {edition} ({source})",
                files[0]
            ));
        }
    }
}

fn edition_source_str(s: &EditionSource) -> &'static str {
    match s {
        EditionSource::Package(_) => "package",
        EditionSource::WorkspaceDefault => "the workspace default, [workspace.package] edition",
        EditionSource::RustfmtConfig => "the edition of its rustfmt config",
        EditionSource::Fallback => {
            "2015, cargo's and rustfmt's default: set [workspace.package] edition"
        }
    }
}

fn describe(plan: &files::FileInventory, r: &FileReport) -> String {
    let config = r.config.as_ref().map_or_else(
        || "default config".to_string(),
        |c| crate::fsutil::rel(&plan.root, c),
    );
    let via = match &r.via {
        Via::CrateRoot(_) => String::new(),
        Via::Standalone => ", cargo fmt does not reach it".to_string(),
    };
    format!("edition {}, {config}{via}", r.edition)
}

/// 1-based first line where `old` and `new` differ.
fn first_changed_line(old: &str, new: &str) -> usize {
    let mut o = old.lines();
    let mut n = new.lines();
    let mut line = 1;
    loop {
        match (o.next(), n.next()) {
            (Some(a), Some(b)) if a == b => line += 1,
            (None, None) => return 1,
            _ => return line,
        }
    }
}

/// The line of a rustc-style ` --> path:LINE:COL` in a rustfmt message.
fn error_line(msg: &str) -> Option<usize> {
    let at = msg
        .lines()
        .find_map(|l| l.trim_start().strip_prefix("--> "))?;
    let mut parts = at.rsplitn(3, ':');
    let _col = parts.next()?;
    parts.next()?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn first_changed_line_counts_from_one() {
        assert_eq!(first_changed_line("a\nb\nc\n", "a\nB\nc\n"), 2);
        assert_eq!(first_changed_line("a\n", "a\nb\n"), 2);
    }

    #[test]
    fn error_line_reads_rustc_location() {
        assert_eq!(error_line("error: x\n --> src/a.rs:7:3\n  |"), Some(7));
        assert_eq!(error_line("no location"), None);
    }
}
