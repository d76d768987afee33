//! `cargo xtask fmt-check`: rustfmt every `.rs` file of a workspace with its
//! own package's edition and the rustfmt config rustfmt picks for it,
//! including the files `cargo fmt` never reaches (`include!`d files, modules
//! declared inside macros, stray files).
//!
//! - [`files`]: the walk, package ownership (editions), rustfmt config lookup.
//! - [`rustfmt`]: locating and running rustfmt, parsing its output.
//! - [`check`]: which rustfmt run formats which file; verdicts (line endings).
//! - [`modscan`](crate::rust_src::modscan): `mod` declarations (`#[rustfmt::skip]`, module following).
//! - [`included`]: `include!`d expression files (not formattable as items).
//! - [`modules`]: `mod name;` items that lead to no file (cargo fmt stops on them).
//! - [`verify`], [`lexer`](crate::rust_src::lexer), [`tokens`](crate::rust_src::tokens):
//!   `--verify-formatting-only REV`.

pub(crate) mod batch;
pub(crate) mod check;
pub(crate) mod files;
pub(crate) mod included;
pub(crate) mod modules;
mod rows;
pub mod rustfmt;
pub(crate) mod toolchain;
pub(crate) mod verify;
pub(crate) mod warnings;

use std::io::Write;

use crate::Outcome;
use crate::args::{FormatArg, Target};
use crate::diag::{Diagnostic, Level, Printer};
use crate::text::unified_diff;
use check::{EditionSource, FileReport, RustfmtWarning, Verdict, Via};

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
    /// With --fix: write even though the rustfmt in use ignores options the
    /// rustfmt config sets (nightly-only options under a stable rustfmt), i.e.
    /// format away from the project's configured style.
    #[arg(long, requires = "fix")]
    pub allow_ignored_options: bool,
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
    let mut timing = crate::timing::Timing::new("XTASK_FMT_TIMING");
    let manifest = crate::workspace::manifest_path(args.target.workspace.as_deref())?;
    // The rustfmt `cargo fmt` would run there (the workspace's pinned
    // toolchain), probed while cargo metadata runs.
    let dir = manifest.parent().map_or_else(
        || std::path::PathBuf::from("."),
        std::path::Path::to_path_buf,
    );
    let probe = std::thread::spawn(move || rustfmt::Rustfmt::locate_for(Some(&dir)));
    let metadata = crate::workspace::metadata_no_deps(&manifest)?;
    // one run at a time; an interrupted run is recovered before anything is read
    let guard = crate::journal::Guard::acquire(
        metadata.target_directory.as_std_path(),
        metadata.workspace_root.as_std_path(),
        args.fix,
        err,
    )?;
    let root = metadata.workspace_root.as_std_path();
    let mut notes = Vec::new();
    let (policy, note) =
        crate::policy::load_policy_or_default(args.target.policy.as_deref(), root)?;
    notes.extend(note);
    let policy = policy.policy;
    let mut plan = files::plan(&metadata, &policy.fmt.exclude)?;
    notes.append(&mut plan.notes);
    let rustfmt = probe
        .join()
        .map_err(|_| anyhow::anyhow!("rustfmt probe panicked"))??;
    timing.mark("cargo metadata, policy, walk");
    let mut configs = files::ConfigResolver::default();
    let mut checked = check::check(&rustfmt, &mut plan, &mut configs, &mut notes, &mut timing)?;
    included::set_aside(&plan, &mut checked.reports);
    let unresolved = modules::unresolved(&plan, |i| {
        checked
            .reports
            .get(i)
            .filter(|r| r.file == i)
            .map(|r| r.original.as_str())
    });
    timing.write_to(err)?;
    let mut printer = Printer::new(args.format.format, "fmt-check", out, err);
    Report {
        plan: &plan,
        reports: &checked.reports,
        warnings: &checked.warnings,
        unresolved: &unresolved,
        rustfmt: &rustfmt,
        notes,
        fix: args.fix,
        allow_ignored: args.allow_ignored_options,
        guard: &guard,
    }
    .emit(&mut printer)
}

struct Report<'a> {
    plan: &'a files::FileInventory,
    reports: &'a [FileReport],
    warnings: &'a [RustfmtWarning],
    /// `mod name;` items with no file (cargo fmt stops on them: exit 1).
    unresolved: &'a [modules::Unresolved],
    rustfmt: &'a rustfmt::Rustfmt,
    notes: Vec<String>,
    fix: bool,
    allow_ignored: bool,
    guard: &'a crate::journal::Guard,
}

/// The reports sorted by verdict.
struct Tally<'a> {
    /// Every unformatted file, those that need a person included.
    unformatted: Vec<&'a FileReport>,
    /// Unformatted files `--fix` does not write ([`FileReport::needs_person`]).
    needs_person: usize,
    /// Unreadable files nothing reaches (not checked; a note each).
    not_read: Vec<&'a FileReport>,
    errors: Vec<&'a FileReport>,
    skipped: usize,
    /// `include!`d expression files (not formattable as items).
    not_items: Vec<&'a FileReport>,
    /// Checked files `cargo fmt` does not reach.
    standalone: usize,
}

impl<'a> Tally<'a> {
    fn of(reports: &'a [FileReport]) -> Tally<'a> {
        let with = |f: fn(&Verdict) -> bool| reports.iter().filter(move |r| f(&r.verdict));
        Tally {
            unformatted: with(|v| matches!(v, Verdict::Unformatted { .. })).collect(),
            needs_person: reports
                .iter()
                .filter(|r| {
                    r.needs_person.is_some() && matches!(r.verdict, Verdict::Unformatted { .. })
                })
                .count(),
            not_read: with(|v| matches!(v, Verdict::NotRead(_))).collect(),
            errors: with(|v| matches!(v, Verdict::Error(_))).collect(),
            skipped: with(|v| matches!(v, Verdict::Skipped(_))).count(),
            not_items: with(|v| matches!(v, Verdict::NotItems(_))).collect(),
            standalone: reports
                .iter()
                .filter(|r| {
                    r.via == Via::Standalone
                        && !matches!(
                            r.verdict,
                            Verdict::Skipped(_)
                                | Verdict::Error(_)
                                | Verdict::NotItems(_)
                                | Verdict::NotRead(_)
                        )
                })
                .count(),
        }
    }
}

impl Report<'_> {
    /// Reports every verdict (writing the fixes first on `--fix`), the notes
    /// and the summary; a file rustfmt cannot format is an error (exit 2).
    fn emit(mut self, printer: &mut Printer<'_>) -> anyhow::Result<Outcome> {
        let tally = Tally::of(self.reports);
        self.edition_notes();
        for d in warnings::diagnostics(self.warnings, &self.plan.root, &self.rustfmt.describe()) {
            printer.diagnostic(&d)?;
        }
        self.refuse_ignored_options(&tally)?;
        self.refuse_unsafe_fixes(&tally, printer)?;
        let wrote = self.write_fixes(&tally)?;
        self.print(&tally, wrote.len(), printer)
            .map_err(|e| crate::Written::report_failed("fmt-check --fix", &wrote, e))?;
        if !tally.errors.is_empty() {
            let mut msg = format!(
                "{} cannot be formatted by rustfmt (see above)",
                crate::text::plural(tally.errors.len(), "file", "files")
            );
            if self.fix && !tally.unformatted.is_empty() {
                msg.push_str("; --fix wrote nothing: fix or exclude them first");
            }
            anyhow::bail!(msg);
        }
        let left = if self.fix {
            tally.needs_person
        } else {
            tally.unformatted.len()
        };
        Ok(if left == 0 && self.unresolved.is_empty() {
            Outcome::Holds
        } else {
            Outcome::Violations
        })
    }

    /// Every verdict, the notes and the summary.
    fn print(
        &self,
        tally: &Tally<'_>,
        wrote: usize,
        printer: &mut Printer<'_>,
    ) -> std::io::Result<()> {
        for r in &tally.unformatted {
            let written = wrote > 0 && r.needs_person.is_none();
            printer.diagnostic(&self.unformatted(r, written))?;
        }
        for r in &tally.errors {
            printer.diagnostic(&self.cannot_format(r))?;
        }
        for r in &tally.not_items {
            if let Verdict::NotItems(by) = &r.verdict {
                printer.note(
                    "note",
                    &format!(
                        "{}: include!d by {by} as an expression: not formattable as items (rustfmt formats files of items; cargo fmt does not reach it); not checked",
                        self.rel(r)
                    ),
                )?;
            }
        }
        for r in &tally.not_read {
            if let Verdict::NotRead(why) = &r.verdict {
                printer.note(
                    "note",
                    &format!(
                        "{}: not checked: {why}; no target and no `mod` item reaches it, so cargo fmt never reads it either",
                        self.rel(r)
                    ),
                )?;
            }
        }
        for u in self.unresolved {
            let msg = u.message();
            printer.diagnostic(&Diagnostic::error(
                &u.file,
                u.line,
                "fmt-check: module without a file",
                msg.clone(),
                format!("{}:{}: error: {msg}", u.file, u.line),
                "unresolved-module",
                &rows::UnresolvedModule {
                    file: &u.file,
                    line: u.line,
                    module: &u.name,
                    candidates: &u.candidates,
                    message: &msg,
                },
            ))?;
        }
        for n in &self.notes {
            printer.note("note", n)?;
        }
        self.summary(tally, wrote, printer)?;
        printer.flush()
    }

    fn rel(&self, r: &FileReport) -> &str {
        &self.plan.files[r.file].rel
    }

    /// `--fix` does not format away from the configured style: when the
    /// rustfmt in use ignores options the config sets, nothing is written
    /// unless `--allow-ignored-options` says so.
    fn refuse_ignored_options(&self, tally: &Tally<'_>) -> anyhow::Result<()> {
        let ignored = warnings::ignored_options(self.warnings);
        if !self.fix || self.allow_ignored || ignored.is_empty() || tally.unformatted.is_empty() {
            return Ok(());
        }
        let list: Vec<String> = ignored.iter().map(|o| format!("`{o}`")).collect();
        let install = "`rustup toolchain install nightly --component rustfmt`";
        // the workspace's own pin, also when the caller overrode it
        let pin = self
            .rustfmt
            .pin
            .clone()
            .or_else(|| toolchain::find_pin(&self.plan.root));
        let how = match &pin {
            Some(p)
                if p.channel.starts_with("nightly")
                    && !toolchain::rustfmt_installed(&p.channel) =>
            {
                format!(
                    "the workspace pins `{}` in {}, whose rustfmt honours them, but it is not installed here: \
                     install it with `rustup toolchain install {} --component rustfmt`, then run fmt-check without the toolchain override",
                    p.channel,
                    p.file.display(),
                    p.channel
                )
            }
            Some(p) if p.channel.starts_with("nightly") => format!(
                "the workspace pins `{}` in {}, whose rustfmt honours them: run fmt-check without the toolchain override \
                 (`cargo +toolchain`, RUSTUP_TOOLCHAIN) so that the pinned rustfmt is used",
                p.channel,
                p.file.display()
            ),
            Some(p) => format!(
                "a nightly rustfmt honours them: pin a nightly toolchain in {} (or run `cargo +nightly xtask fmt-check --fix`, with {install})",
                p.file.display()
            ),
            None => format!(
                "a nightly rustfmt honours them: run `cargo +nightly xtask fmt-check --fix` (install it with {install}), or pin nightly in rust-toolchain.toml"
            ),
        };
        anyhow::bail!(
            "--fix wrote nothing: {} ignores {} (nightly-only options set in the rustfmt config; see the warnings above), \
             so it would rewrite the {} without them, possibly away from the project's style; {how}; \
             or pass --allow-ignored-options to format without them",
            self.rustfmt.describe(),
            list.join(", "),
            crate::text::plural(
                tally.unformatted.len(),
                "unformatted file",
                "unformatted files"
            )
        );
    }

    /// Safety net of `--fix`: rustfmt's output must keep every token and
    /// comment of the file; if it does not for some file, those files are
    /// reported and nothing is written.
    fn refuse_unsafe_fixes(
        &self,
        tally: &Tally<'_>,
        printer: &mut Printer<'_>,
    ) -> anyhow::Result<()> {
        if !self.fix {
            return Ok(());
        }
        use rayon::prelude::*;
        let unsafe_fixes: Vec<verify::Failure> = tally
            .unformatted
            .par_iter()
            .filter_map(|r| match &r.verdict {
                Verdict::Unformatted { fixed, .. } if r.needs_person.is_none() => {
                    verify::compare(self.rel(r), r.original.as_bytes(), fixed.as_bytes())
                }
                _ => None,
            })
            .collect();
        if unsafe_fixes.is_empty() {
            return Ok(());
        }
        for f in &unsafe_fixes {
            let msg = format!(
                "rustfmt's output changes more than formatting ({}); not written",
                f.message
            );
            printer.diagnostic(&Diagnostic::error(
                &f.path,
                f.line,
                "fmt-check",
                msg.clone(),
                format!("{}:{}: error: {msg}", f.path, f.line),
                "error",
                &rows::AtLine {
                    file: &f.path,
                    line: f.line,
                    message: &msg,
                },
            ))?;
        }
        anyhow::bail!(
            "{} would change beyond formatting; --fix wrote nothing",
            crate::text::plural(unsafe_fixes.len(), "file", "files")
        );
    }

    /// `--fix` with no file rustfmt cannot format: writes every fix, all or
    /// nothing; returns the files written.
    fn write_fixes(&self, tally: &Tally<'_>) -> anyhow::Result<Vec<&str>> {
        if !self.fix || !tally.errors.is_empty() {
            return Ok(Vec::new());
        }
        let mut edits = crate::edit::WriteSet::new();
        let writable: Vec<&&FileReport> = tally
            .unformatted
            .iter()
            .filter(|r| r.needs_person.is_none())
            .collect();
        if writable.is_empty() {
            return Ok(Vec::new());
        }
        for r in &writable {
            if let Verdict::Unformatted { fixed, .. } = &r.verdict {
                let f = &self.plan.files[r.file];
                edits.replace_file(&f.path, &f.rel, &r.original, fixed)?;
            }
        }
        // refuse_unsafe_fixes stands in for the write set's syn check:
        // rustfmt may accept syntax syn does not know yet
        edits.skip_rust_validation();
        edits.apply_with(self.guard)?;
        Ok(writable.iter().map(|r| self.rel(r)).collect())
    }

    /// An unformatted (or, when `--fix` wrote it, reformatted) file.
    fn unformatted(&self, r: &FileReport, written: bool) -> Diagnostic {
        let Verdict::Unformatted {
            fixed: text,
            line_endings_only,
        } = &r.verdict
        else {
            unreachable!("only unformatted files are reported as such");
        };
        let fixed = self.fix && written;
        let rel = self.rel(r);
        let old = r.original.replace("\r\n", "\n");
        let new = text.replace("\r\n", "\n");
        let line = first_changed_line(&old, &new);
        let what = if *line_endings_only {
            "line endings differ from the config's newline_style"
        } else if fixed {
            "reformatted"
        } else {
            "not formatted"
        };
        let context = describe(self.plan, r);
        let diff = if fixed {
            String::new()
        } else {
            unified_diff(rel, &old, &new)
        };
        let person = r
            .needs_person
            .as_ref()
            .map_or_else(String::new, |why| format!("; needs a person: {why}"));
        let mut human = format!("{rel}:{line}: {what} ({context}){person}");
        if !*line_endings_only && !fixed {
            human = format!("{human}\n{diff}");
        }
        let json = crate::diag::json_row(
            if fixed { "fixed" } else { "unformatted" },
            &rows::FileVerdict {
                file: rel,
                line,
                line_endings_only: *line_endings_only,
                edition: &r.edition,
                edition_source: edition_source_str(&r.edition_source),
                config: r
                    .config
                    .as_ref()
                    .map(|c| crate::fsutil::rel(&self.plan.root, c)),
                reached_by_cargo_fmt: matches!(r.via, Via::CrateRoot(_)),
                needs_a_person: r.needs_person.as_deref(),
                diff: &diff,
            },
        );
        let (level, message) = if fixed {
            (Level::Notice, "reformatted".to_string())
        } else if r.needs_person.is_some() {
            (Level::Error, format!("{what} ({context}){person}"))
        } else {
            (
                Level::Error,
                format!(
                    "{what} ({context}); run `{} fmt-check --fix`",
                    crate::args::invoked_as()
                ),
            )
        };
        Diagnostic {
            level,
            file: Some(rel.to_string()),
            line,
            column: None,
            title: "fmt-check".into(),
            message,
            human: Some(human),
            json: Some(json),
            github: true,
        }
    }

    /// A file rustfmt cannot format, with rustfmt's message.
    fn cannot_format(&self, r: &FileReport) -> Diagnostic {
        let Verdict::Error(msg) = &r.verdict else {
            unreachable!("only errors are reported as such");
        };
        let rel = self.rel(r);
        let line = error_line(msg).unwrap_or(1);
        let mut human = format!("{rel}:{line}: error: rustfmt cannot format it:");
        for l in msg.lines() {
            human.push_str(&format!("\n    {l}"));
        }
        Diagnostic::error(
            rel,
            line,
            "fmt-check: rustfmt cannot format it",
            msg.clone(),
            human,
            "error",
            &rows::AtLine {
                file: rel,
                line,
                message: msg,
            },
        )
    }

    fn summary(
        &self,
        tally: &Tally<'_>,
        wrote: usize,
        printer: &mut Printer<'_>,
    ) -> std::io::Result<()> {
        let Tally {
            unformatted,
            needs_person,
            not_read,
            errors,
            skipped,
            not_items,
            standalone,
        } = tally;
        let checked = self.reports.len() - skipped - not_items.len() - not_read.len();
        let excluded_dirs = match self.plan.excluded_dirs {
            0 => String::new(),
            n => format!(
                " and {} not entered",
                crate::text::plural(n, "directory", "directories")
            ),
        };
        let left = unformatted.len() - wrote;
        let outcome = match (wrote, left) {
            (0, n) => format!("{n} not formatted"),
            (w, 0) => format!("{w} reformatted"),
            (w, n) => format!("{w} reformatted, {n} not formatted"),
        };
        let mut summary = format!(
            "{} checked ({standalone} beyond cargo fmt's reach, {skipped} behind #[rustfmt::skip], {} excluded by policy{excluded_dirs}): {outcome}, {} cannot be formatted",
            crate::text::plural(checked, "file", "files"),
            self.plan.excluded,
            errors.len()
        );
        if *needs_person > 0 {
            summary.push_str(&format!(
                ", {} a person must format (see above)",
                crate::text::plural(*needs_person, "file", "files")
            ));
        }
        if !not_read.is_empty() {
            summary.push_str(&format!(
                ", {} not read (see the notes)",
                crate::text::plural(not_read.len(), "file", "files")
            ));
        }
        if !not_items.is_empty() {
            summary.push_str(&format!(
                ", {} include!d as an expression, not formattable as items (not checked)",
                crate::text::plural(not_items.len(), "file", "files")
            ));
        }
        if !self.unresolved.is_empty() {
            summary.push_str(&format!(
                ", {} without a file (cargo fmt stops on them)",
                crate::text::plural(self.unresolved.len(), "module", "modules")
            ));
        }
        printer.summary(
            &format!("fmt-check: {summary}"),
            &rows::Summary {
                checked,
                standalone: *standalone,
                skipped: *skipped,
                excluded: self.plan.excluded,
                excluded_dirs: self.plan.excluded_dirs,
                unformatted: left,
                needs_a_person: *needs_person,
                not_read: not_read.len(),
                fixed: wrote,
                errors: errors.len(),
                unresolved_modules: self.unresolved.len(),
                not_items: not_items.len(),
            },
        )
    }

    /// "N files outside any package were formatted with edition E (why)".
    fn edition_notes(&mut self) {
        let mut outside: std::collections::BTreeMap<(String, String), Vec<&str>> =
            Default::default();
        for r in self.reports {
            if matches!(
                r.verdict,
                Verdict::Skipped(_)
                    | Verdict::Error(_)
                    | Verdict::NotItems(_)
                    | Verdict::NotRead(_)
            ) || r.edition.is_empty()
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
