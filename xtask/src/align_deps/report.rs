//! What `align-deps` prints: the report of `--check` (findings, the diff a
//! fix would apply, the summary) and of a fix run (the files written, what
//! is left for a person), in every `--format` through [`Printer`].

use std::collections::BTreeSet;
use std::path::Path;

use crate::Outcome;
use crate::args::Target;
use crate::diag::{Diagnostic, Level, Printer};
use crate::text::{plural, unified_diff};

use super::plan::AlignmentPlan;

/// The counts of a `--check` summary (JSON).
#[derive(serde::Serialize)]
struct CheckSummary {
    manifests: usize,
    violations: usize,
    fixable: usize,
    files: usize,
    exemptions: usize,
    written: bool,
}

/// The counts of a fix run's summary (JSON).
#[derive(serde::Serialize)]
struct FixSummary {
    fixed: usize,
    files_written: usize,
    need_a_person: usize,
    exemptions: usize,
}

/// Everything a report shows.
pub(super) struct Report<'a> {
    pub(super) plan: &'a AlignmentPlan,
    pub(super) info: &'a [String],
    pub(super) exempt: &'a [Diagnostic],
    pub(super) n_manifests: usize,
    /// What keeps a fix run from writing anything (toolchain-floor
    /// findings, an unsatisfiable requirement), as "... once {blocker}".
    pub(super) blocker: Option<&'static str>,
    /// The command that fixes, with the `--workspace` / `--policy` given.
    pub(super) fix_command: String,
}

/// `cargo xtask align-deps` with the `--workspace` and `--policy` the user
/// gave (quoted for a shell where needed).
pub(super) fn fix_command(target: &Target) -> String {
    let quote = |p: &Path| {
        let s = p.display().to_string();
        if !s.is_empty()
            && s.chars()
                .all(|c| c.is_ascii_alphanumeric() || "/._-+=:,@%".contains(c))
        {
            s
        } else {
            format!("'{}'", s.replace('\'', "'\\''"))
        }
    };
    let mut cmd = format!("{} align-deps", crate::args::invoked_as());
    if let Some(w) = &target.workspace {
        cmd.push_str(&format!(" --workspace {}", quote(w)));
    }
    if let Some(p) = &target.policy {
        cmd.push_str(&format!(" --policy {}", quote(p)));
    }
    cmd
}

/// The report of `--check`, or of a fix run that writes nothing because the
/// workspace's toolchain floor is below what the fix needs (`blocked`).
pub(super) fn report_check(
    r: &Report<'_>,
    blocked: bool,
    printer: &mut Printer<'_>,
) -> anyhow::Result<Outcome> {
    let plan = r.plan;
    for f in &plan.findings {
        printer.diagnostic(&f.diagnostic(false))?;
    }
    if !blocked {
        for e in plan.edits.edits() {
            printer.human_only(&unified_diff(&e.rel, &e.old_text, &e.new_text()))?;
        }
    }
    for d in r.exempt {
        printer.diagnostic(d)?;
    }
    for line in r.info {
        printer.note("info", line)?;
    }
    let fixable = plan.findings.iter().filter(|f| f.fixable).count();
    let files: BTreeSet<&str> = plan.findings.iter().map(|f| f.file.as_str()).collect();
    let violations = plural(plan.findings.len(), "violation", "violations");
    let in_files = plural(files.len(), "file", "files");
    let line = if plan.findings.is_empty() {
        format!(
            "align-deps: {} the policy",
            if r.n_manifests == 1 {
                "1 manifest holds".to_string()
            } else {
                format!("{} manifests hold", r.n_manifests)
            }
        )
    } else if blocked {
        format!(
            "align-deps: nothing written: {violations} in {in_files}; the toolchain floor findings above must be settled first"
        )
    } else if fixable == 0 {
        format!("align-deps: {violations} in {in_files}, none fixable automatically (listed above)")
    } else if let Some(blocker) = r.blocker {
        format!(
            "align-deps: {violations} in {in_files}, {fixable} fixable once {blocker}; until then a fix writes nothing"
        )
    } else if fixable == plan.findings.len() {
        format!(
            "align-deps: {violations} in {in_files}, all fixable; run `{}` to fix them",
            r.fix_command
        )
    } else {
        format!(
            "align-deps: {violations} in {in_files}, {fixable} fixable; run `{}` to fix those, the rest need a person",
            r.fix_command
        )
    };
    let fields = CheckSummary {
        manifests: r.n_manifests,
        violations: plan.findings.len(),
        fixable,
        files: files.len(),
        exemptions: r.exempt.len(),
        written: false,
    };
    printer.summary(&line, &fields)?;
    Ok(if plan.findings.is_empty() {
        Outcome::Holds
    } else {
        Outcome::Violations
    })
}

pub(super) fn apply_and_report(
    r: &Report<'_>,
    printer: &mut Printer<'_>,
    guard: &crate::journal::Guard,
) -> anyhow::Result<Outcome> {
    let applied = r.plan.edits.apply_with(guard)?;
    report_fix(r, &applied, printer).map_err(|e| {
        let files: Vec<&str> = applied.iter().map(|e| e.rel.as_str()).collect();
        crate::Written::report_failed("align-deps", &files, e)
    })
}

/// The report of a fix run, once the files are written.
fn report_fix(
    r: &Report<'_>,
    applied: &[&crate::edit::FileEdit],
    printer: &mut Printer<'_>,
) -> std::io::Result<Outcome> {
    let plan = r.plan;
    // fixed findings per file, counted once
    let mut fixed_per_file: std::collections::HashMap<&str, usize> = Default::default();
    for f in plan.findings.iter().filter(|f| f.fixable) {
        *fixed_per_file
            .entry(f.fixed_in.as_ref().unwrap_or(&f.file).as_str())
            .or_default() += 1;
    }
    // People read one line per written file, then what is left for them.
    for e in applied {
        let n = fixed_per_file.get(e.rel.as_str()).copied().unwrap_or(0);
        let changes = plural(n, "change", "changes");
        printer.diagnostic(&Diagnostic {
            level: Level::Notice,
            file: Some(e.rel.clone()),
            line: 1,
            column: None,
            title: "align-deps".into(),
            message: format!("fixed: {changes}"),
            human: Some(format!("fixed {}: {changes}", e.rel)),
            json: None,
            github: false,
        })?;
    }
    for f in &plan.findings {
        printer.diagnostic(&f.diagnostic(true))?;
    }
    for d in r.exempt {
        printer.diagnostic(d)?;
    }
    for line in r.info {
        printer.note("info", line)?;
    }
    let unfixable = plan.findings.iter().filter(|f| !f.fixable).count();
    let fixed = plan.findings.len() - unfixable;
    let fixed_in = || {
        format!(
            "fixed {} in {}",
            plural(fixed, "finding", "findings"),
            plural(applied.len(), "file", "files")
        )
    };
    let line = if plan.findings.is_empty() {
        "align-deps: nothing to change; the workspace holds the policy".to_string()
    } else if unfixable == 0 {
        format!("align-deps: {}; the workspace holds the policy", fixed_in())
    } else if fixed == 0 {
        format!(
            "align-deps: nothing to fix automatically; {} {} a person (listed above)",
            plural(unfixable, "finding", "findings"),
            if unfixable == 1 { "needs" } else { "need" }
        )
    } else {
        format!(
            "align-deps: {}; {} {} a person (listed above)",
            fixed_in(),
            plural(unfixable, "finding", "findings"),
            if unfixable == 1 { "needs" } else { "need" }
        )
    };
    let fields = FixSummary {
        fixed,
        files_written: applied.len(),
        need_a_person: unfixable,
        exemptions: r.exempt.len(),
    };
    printer.summary(&line, &fields)?;
    printer.flush()?;
    Ok(if unfixable == 0 {
        Outcome::Holds
    } else {
        Outcome::Violations
    })
}
