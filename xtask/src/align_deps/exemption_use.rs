//! The policy's `[[exempt]]` entries in a run of `align-deps`.
//! Each entry sets something aside before planning (a package's
//! manifest and sources, one manifest's declarations of a dependency, one
//! Rust source file); this module judges them afterwards: an exemption that
//! covers at least one finding of the plan made without exemptions is shown,
//! with its reason, in every report (a notice); one that covers nothing is
//! stale, itself a finding (`stale-exemption`, exit 1) at its policy line.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use super::plan::Finding;
use super::rule::Rule;
use crate::diag::{Diagnostic, Level};
use crate::policy::LoadedPolicy;
use crate::policy::{ExemptKind, Exemption};
use crate::text::plural;

/// What the run knows about the members, for judging exemptions.
#[derive(Debug, Default)]
pub struct Members {
    /// Package name -> its manifest, relative to the workspace root.
    pub manifests: BTreeMap<String, String>,
    /// Package name -> its Rust source files read by the source side (relative).
    pub sources: BTreeMap<String, BTreeSet<String>>,
    /// Exempt source file (relative) -> the findings it would have had.
    pub exempt_sources: BTreeMap<String, usize>,
}

/// The judged exemptions: notices for those in use, findings for the stale.
#[derive(Debug, Default)]
pub struct Judged {
    /// One notice per exemption in use (every format shows it).
    pub notes: Vec<Diagnostic>,
    /// One `stale-exemption` finding per exemption that covers nothing.
    pub stale: Vec<Finding>,
}

/// The names of the exempt packages.
pub fn packages(exemptions: &[Exemption]) -> BTreeSet<&str> {
    exemptions
        .iter()
        .filter_map(|e| match &e.kind {
            ExemptKind::Package(p) => Some(p.as_str()),
            _ => None,
        })
        .collect()
}

/// How many of `full` (the findings of the plan made without exemptions)
/// exemption `e` covers; `Err(why)` when none.
fn covered(
    e: &Exemption,
    full: &[Finding],
    m: &Members,
    root: &Path,
    policy_deps: &BTreeSet<&str>,
) -> Result<usize, String> {
    match &e.kind {
        ExemptKind::Package(p) => {
            let Some(manifest) = m.manifests.get(p) else {
                let names: Vec<&String> = m.manifests.keys().collect();
                let hint = names
                    .iter()
                    .find(|n| n.replace('-', "_") == p.replace('-', "_"))
                    .map(|n| format!(" (did you mean `{n}`?)"))
                    .unwrap_or_default();
                return Err(format!(
                    "no member of the workspace is the package `{p}`{hint}"
                ));
            };
            let sources = m.sources.get(p);
            let n = full
                .iter()
                .filter(|f| {
                    &f.file == manifest
                        || f.fixed_in.as_ref() == Some(manifest)
                        || (f.is_source() && sources.is_some_and(|s| s.contains(&f.file)))
                })
                .count()
                + sources.map_or(0, |s| {
                    s.iter()
                        .filter_map(|f| m.exempt_sources.get(f))
                        .sum::<usize>()
                });
            if n == 0 {
                Err(format!("`{p}` ({manifest}) holds the policy"))
            } else {
                Ok(n)
            }
        }
        ExemptKind::Declaration {
            manifest,
            dependency,
        } => {
            if !m.manifests.values().any(|x| x == manifest) && manifest != "Cargo.toml" {
                return Err(if root.join(manifest).is_file() {
                    format!("{manifest} is not the manifest of a workspace member")
                } else {
                    format!("there is no {manifest}")
                });
            }
            let n = full
                .iter()
                .filter(|f| {
                    !f.is_source() && &f.file == manifest && f.key.as_ref() == Some(dependency)
                })
                .count();
            if n == 0 {
                Err(declaration_is_stale(
                    root,
                    manifest,
                    dependency,
                    policy_deps,
                ))
            } else {
                Ok(n)
            }
        }
        ExemptKind::Source(s) => match m.exempt_sources.get(s) {
            Some(&n) => Ok(n),
            None if !root.join(s).is_file() => Err(format!("there is no {s}")),
            None if !m.sources.values().any(|files| files.contains(s)) => Err(format!(
                "{s} is in no member's module tree that the {} source side reads",
                super::SOURCE_MIGRATION.dependency()
            )),
            None => Err(format!(
                "{s} has no {} finding",
                super::SOURCE_MIGRATION.title()
            )),
        },
    }
}

/// Why a declaration exemption of the key `dependency` in `manifest` covers
/// no finding: that manifest has no declaration under the key, or it is not
/// a policy dependency, or it holds the policy; said as it is.
fn declaration_is_stale(
    root: &Path,
    manifest: &str,
    dependency: &str,
    policy_deps: &BTreeSet<&str>,
) -> String {
    use super::manifest::{Decl, Manifest};
    let Ok(m) = Manifest::load(&root.join(manifest), root) else {
        return format!("no finding of {manifest} is under the key `{dependency}`");
    };
    let mut tables = m.dependency_tables();
    tables.extend(m.workspace_dependencies());
    let packages: BTreeSet<String> = tables
        .iter()
        .flat_map(|t| Decl::all(t.table))
        .filter(|d| d.key.get() == dependency)
        .map(|d| d.package().to_string())
        .collect();
    if packages.is_empty() {
        return format!("{manifest} has no declaration under the key `{dependency}`");
    }
    let ruled: Vec<&String> = packages
        .iter()
        .filter(|p| policy_deps.contains(p.as_str()))
        .collect();
    if ruled.is_empty() {
        let list: Vec<String> = packages.iter().map(|p| format!("`{p}`")).collect();
        return format!(
            "`{dependency}` in {manifest} is the package {}, which the policy has no rule for",
            list.join(", ")
        );
    }
    let renamed = if ruled.iter().all(|p| p.as_str() == dependency) {
        String::new()
    } else {
        format!(
            " (package {})",
            ruled
                .iter()
                .map(|p| p.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        )
    };
    format!("its declaration `{dependency}`{renamed} in {manifest} already holds the policy")
}

/// Judges every exemption of `lp` against `full`, the findings of the plan
/// made without any exemption.
pub fn judge(lp: &LoadedPolicy, root: &Path, full: &[Finding], m: &Members) -> Judged {
    let policy_rel = crate::fsutil::rel(root, &lp.path);
    let mut judged = Judged::default();
    let policy_deps: BTreeSet<&str> = lp.policy.dependencies.keys().map(String::as_str).collect();
    for e in &lp.policy.exemptions {
        let (line, column) = crate::text::line_col(&lp.text, e.span.start);
        let kind = e.kind.name();
        let what = e.kind.what();
        match covered(e, full, m, root, &policy_deps) {
            Ok(n) => {
                let not_reported = plural(n, "finding", "findings");
                let human = format!(
                    "exempt: {what} ({kind} exemption, {policy_rel}:{line}): {}; {not_reported} not reported",
                    e.reason
                );
                let json = crate::diag::json_row(
                    "exempt",
                    &ExemptRow {
                        exemption: kind,
                        what: &what,
                        reason: &e.reason,
                        findings: n,
                        policy: &policy_rel,
                        line,
                    },
                );
                judged.notes.push(Diagnostic {
                    level: Level::Notice,
                    file: Some(policy_rel.clone()),
                    line,
                    column: Some(column),
                    title: "align-deps: exempt".into(),
                    message: format!(
                        "{what} ({kind} exemption): {}; {not_reported} not reported",
                        e.reason
                    ),
                    human: Some(human),
                    json: Some(json),
                    github: true,
                });
            }
            Err(why) => {
                let found = crate::text::one_line(
                    lp.text[..e.span.end]
                        .rsplit('\n')
                        .next()
                        .unwrap_or_default(),
                    " ",
                );
                let dependency = match &e.kind {
                    ExemptKind::Declaration { dependency, .. } => dependency.clone(),
                    _ => String::new(),
                };
                judged.stale.push(Finding {
                    file: policy_rel.clone(),
                    line,
                    column,
                    rule: Rule::StaleExemption.into(),
                    dependency,
                    key: None,
                    table: None,
                    found,
                    wanted: "(no such entry)".into(),
                    fixable: false,
                    message: format!(
                        "this {kind} exemption matches nothing: {why}; drop the [[exempt]] entry (its reason: {})",
                        e.reason
                    ),
                    fixed_in: None,
                });
            }
        }
    }
    judged
}

/// The JSON row of an exemption in use (`kind` `exempt`).
#[derive(serde::Serialize)]
struct ExemptRow<'a> {
    exemption: &'a str,
    what: &'a str,
    reason: &'a str,
    findings: usize,
    policy: &'a str,
    line: usize,
}
