//! The findings of `align-deps`, and its plan: findings plus the
//! all-or-nothing file edits ([`crate::edit::WriteSet`]) that fix the fixable ones.

use serde::Serialize;

use super::rule::Code;
use crate::diag::{Diagnostic, Level};
pub use crate::edit::{FileEdit, Splice, apply_splices};

/// What a planner found: one violation at one place.
///
/// Reported as a [`Diagnostic`] ([`Finding::diagnostic`]): `file:line:
/// found -> wanted` (human), one JSON object per line (json) or an `::error`
/// annotation (github).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Finding {
    /// Path relative to the workspace root, `/`-separated.
    pub file: String,
    /// 1-based line.
    pub line: usize,
    /// 1-based column.
    pub column: usize,
    /// Which rule ([`Code`]: a manifest rule or a source rule), shown by
    /// its code.
    pub rule: Code,
    /// The dependency (package name on crates.io) the finding is about.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub dependency: String,
    /// The key of the declaration in its manifest, when a manifest finding
    /// is about one declaration (`thiserror_sgx` for `thiserror_sgx = {
    /// package = "thiserror", .. }`); what a declaration exemption can name.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub key: Option<String>,
    /// The dependency table (`dependencies`, `target.'cfg(unix)'.dev-dependencies`,
    /// `workspace.dependencies`); for a finding in a Rust source file `None`,
    /// except the missing-dependency rule, which names the table the
    /// dependency goes into.
    pub table: Option<String>,
    /// What is there now (the source text of the changed lines).
    pub found: String,
    /// What the policy wants there (the same lines after the fix), or a
    /// description when it cannot be fixed automatically.
    pub wanted: String,
    /// Whether `align-deps` (without `--check`) fixes it.
    pub fixable: bool,
    /// One sentence of context; for unfixable findings, what a person must do.
    pub message: String,
    /// The file the fix edits when it is not `file` (a missing dependency
    /// found in a Rust source is added to the crate's manifest).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fixed_in: Option<String>,
}

impl Finding {
    /// Whether the finding is in a Rust source file (the thiserror source side).
    pub fn is_source(&self) -> bool {
        self.file.ends_with(".rs")
    }

    /// `file:line: found -> wanted (message)`; for a Rust source file
    /// `file:line:column: [rule] found -> wanted (message)`.
    fn human(&self) -> String {
        let found = if self.found.is_empty() {
            "(nothing)"
        } else {
            &self.found
        };
        let tag = if self.fixable {
            ""
        } else {
            " [needs a person]"
        };
        if self.is_source() {
            return format!(
                "{}:{}:{}: [{}] {found} -> {}{tag} ({})",
                self.file, self.line, self.column, self.rule, self.wanted, self.message
            );
        }
        format!(
            "{}:{}: {found} -> {}{tag} ({})",
            self.file, self.line, self.wanted, self.message
        )
    }

    /// One line of JSON: the finding's fields after `kind` (`fixed` for a
    /// fixable finding of a fix run, else `violation`).
    fn json(&self, fix_run: bool) -> String {
        let kind = if fix_run && self.fixable {
            "fixed"
        } else {
            "violation"
        };
        crate::diag::json_row_in_order(kind, self)
    }
}

impl Finding {
    /// The finding as a diagnostic. In a fix run (`fix_run`) a fixable
    /// finding was just fixed: it stays in the JSON stream (as `fixed`) but
    /// is no longer shown to people or annotated.
    pub fn diagnostic(&self, fix_run: bool) -> Diagnostic {
        let found = if self.found.is_empty() {
            "(nothing)"
        } else {
            &self.found
        };
        let shown = !(fix_run && self.fixable);
        Diagnostic {
            level: Level::Error,
            file: Some(self.file.clone()),
            line: self.line,
            column: Some(self.column),
            title: format!("align-deps: {}", self.rule),
            message: format!("{found} -> {} ({})", self.wanted, self.message),
            human: shown.then(|| self.human()),
            json: Some(self.json(fix_run)),
            github: shown,
        }
    }
}

/// Every finding and every edit, computed before anything is written.
#[derive(Debug, Default)]
pub struct AlignmentPlan {
    /// The file edits: splices and whole-file replacements, validated and
    /// applied all-or-nothing by [`crate::edit::WriteSet`].
    pub edits: crate::edit::WriteSet,
    /// All findings, fixable or not, in the order found.
    pub findings: Vec<Finding>,
    /// Per policy dependency, the requirement `[workspace.dependencies]`
    /// ends with where it is stricter than the policy's (its toolchain
    /// floor may be higher).
    pub entry_requirements: std::collections::BTreeMap<String, String>,
}

impl AlignmentPlan {
    /// An empty plan.
    pub fn new() -> AlignmentPlan {
        AlignmentPlan::default()
    }

    /// Adds a finding.
    pub fn push_finding(&mut self, finding: Finding) {
        self.findings.push(finding);
    }

    /// Merges `other` (e.g. the source planner's plan) into this one.
    ///
    /// # Errors
    /// Conflicting edits of one file.
    pub fn merge(&mut self, other: AlignmentPlan) -> anyhow::Result<()> {
        self.edits.merge(other.edits)?;
        self.findings.extend(other.findings);
        self.entry_requirements.extend(other.entry_requirements);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finding_formats() {
        let f = Finding {
            file: "crates/a/Cargo.toml".into(),
            line: 7,
            column: 13,
            rule: crate::align_deps::rule::Rule::Inherit.into(),
            dependency: "thiserror".into(),
            key: Some("thiserror".into()),
            table: Some("dependencies".into()),
            found: "thiserror = \"1.0\"".into(),
            wanted: "thiserror = { workspace = true }".into(),
            fixable: true,
            message: "inherit".into(),
            fixed_in: None,
        };
        assert_eq!(
            f.human(),
            "crates/a/Cargo.toml:7: thiserror = \"1.0\" -> thiserror = { workspace = true } (inherit)"
        );
        let j: serde_json::Value = serde_json::from_str(&f.json(false)).unwrap();
        assert_eq!(j["kind"], "violation");
        assert_eq!(j["file"], "crates/a/Cargo.toml");
        assert_eq!(j["line"], 7);
        assert_eq!(j["table"], "dependencies");
        assert_eq!(j["fixable"], true);
        let d = f.diagnostic(false);
        assert_eq!(d.human.as_deref(), Some(f.human().as_str()));
        assert_eq!((d.line, d.column), (7, Some(13)));
        assert_eq!(d.title, "align-deps: inherit");
        let fixed = f.diagnostic(true);
        assert_eq!((fixed.human, fixed.github), (None, false));
        assert!(fixed.json.unwrap().contains("\"kind\":\"fixed\""));
    }
}
