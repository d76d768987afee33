//! Which rule an `align-deps` finding is of: the manifest rules ([`Rule`])
//! and the thiserror 2 source rules ([`SourceRule`]), as one [`Code`].
//!
//! The one place the codes are defined and described: reports show
//! [`Code::code`] (`[rule]` in human output, `rule` in JSON, the GitHub
//! annotation's title), and the rules table of `docs/fleet.md` is
//! [`rules_table`], checked by a test (as cargo-deny's `DiagnosticCode`
//! and its `codes_unique` test keep its codes).

use serde::{Serialize, Serializer};

pub use crate::thiserror_src::Rule as SourceRule;

/// A manifest rule of `align-deps`: what a declaration, a workspace entry,
/// the policy or a toolchain pin must be for the policy to hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Rule {
    /// A member's own declaration of a policy dependency that must inherit
    /// the `[workspace.dependencies]` entry.
    Inherit,
    /// A requirement that is not the policy's.
    Version,
    /// `default-features` written so that inheriting keeps what a member
    /// had (or a `version` beside `workspace = true`, which cargo ignores).
    DefaultFeatures,
    /// The `[workspace.dependencies]` entry members would inherit is missing.
    WorkspaceEntry,
    /// A git, path or other-registry declaration of a policy dependency.
    Source,
    /// Inheriting would give a member features it did not ask for.
    Features,
    /// The `[workspace.dependencies]` key names another package.
    Conflict,
    /// A cargo-hakari section's declaration shares no version with the policy.
    Hakari,
    /// A `rust-version` or pinned toolchain below what the fix needs.
    ToolchainFloor,
    /// An `[[exempt]]` entry that matches nothing.
    StaleExemption,
    /// The policy's requirement matches no published version.
    Unsatisfiable,
    /// A `[patch]` entry the policy's requirement no longer matches.
    Patch,
    /// A `[replace]` entry the policy's requirement no longer matches.
    Replace,
}

impl Rule {
    /// Every manifest rule, in the order the rules table lists them.
    pub const ALL: [Rule; 13] = [
        Rule::Inherit,
        Rule::Version,
        Rule::DefaultFeatures,
        Rule::WorkspaceEntry,
        Rule::Source,
        Rule::Features,
        Rule::Conflict,
        Rule::Hakari,
        Rule::ToolchainFloor,
        Rule::StaleExemption,
        Rule::Unsatisfiable,
        Rule::Patch,
        Rule::Replace,
    ];

    /// The stable identifier reports show.
    pub fn code(self) -> &'static str {
        match self {
            Rule::Inherit => "inherit",
            Rule::Version => "version",
            Rule::DefaultFeatures => "default-features",
            Rule::WorkspaceEntry => "workspace-entry",
            Rule::Source => "source",
            Rule::Features => "features",
            Rule::Conflict => "conflict",
            Rule::Hakari => "hakari",
            Rule::ToolchainFloor => "toolchain-floor",
            Rule::StaleExemption => "stale-exemption",
            Rule::Unsatisfiable => "unsatisfiable",
            Rule::Patch => "patch",
            Rule::Replace => "replace",
        }
    }

    /// What it finds and what a fix does, one table row's worth.
    fn doc(self) -> (&'static str, &'static str) {
        match self {
            Rule::Inherit => (
                "a member declares a policy dependency itself where the policy says `inherit = true`",
                "yes: `workspace = true` in place of the requirement (and of `package`), the member's other keys kept",
            ),
            Rule::Version => (
                "a requirement (a member's, or the `[workspace.dependencies]` entry's) that is not the policy's `version` and accepts versions the policy does not",
                "yes: the policy's requirement, written as is; a stricter one within the policy (`\"2.0.12\"` under `\"2\"`) is kept, and the workspace entry takes the strictest its inheriting members ask for",
            ),
            Rule::DefaultFeatures => (
                "inheriting would change a member's default features, or a `version` beside `workspace = true` (ignored by cargo)",
                "yes: `default-features` set on the entry or the member as needed; the ignored `version` removed",
            ),
            Rule::WorkspaceEntry => (
                "`[workspace.dependencies]` lacks the entry members would inherit",
                "yes: the entry added (the table created if need be); no, when the table is not a standard one",
            ),
            Rule::Source => (
                "a declaration of a policy dependency from git, a path or another registry",
                "no: align-deps does not move sources",
            ),
            Rule::Features => (
                "inheriting would give a member features of the workspace entry it does not ask for",
                "no: add them to the member or drop them from the entry",
            ),
            Rule::Conflict => (
                "the `[workspace.dependencies]` key a member would inherit is another package, or a crate declares the policy's package under two names (`thiserror = \"1\"` beside `thiserror2 = { package = \"thiserror\", version = \"2\" }`), which cargo refuses once both hold the policy",
                "no: rename one of them, or merge the two declarations",
            ),
            Rule::Hakari => (
                "a declaration inside a cargo-hakari section shares no version with the policy",
                "no: run `cargo hakari generate` after align-deps",
            ),
            Rule::ToolchainFloor => (
                "a crate's `rust-version` or a pinned toolchain is older than what the fix needs",
                "no: a fix run writes nothing until it is raised or the crate exempted",
            ),
            Rule::StaleExemption => (
                "an `[[exempt]]` entry that matches nothing (at its line in the policy)",
                "no: drop the entry",
            ),
            Rule::Unsatisfiable => (
                "no published version matches the policy's requirement (at its line in the policy)",
                "no: a fix run refuses it (exit 2, nothing written)",
            ),
            Rule::Patch => (
                "a `[patch]` entry of a policy dependency at a version the requirement does not match",
                "no: align-deps never edits `[patch]`",
            ),
            Rule::Replace => (
                "a `[replace]` entry of a policy dependency at a version the requirement does not match",
                "no: align-deps never edits `[replace]`",
            ),
        }
    }
}

impl SourceRule {
    /// Every source rule, numbered 1 to 4 in this order.
    pub const ALL: [SourceRule; 4] = [
        SourceRule::RawIdentInFormat,
        SourceRule::ShadowedFieldBound,
        SourceRule::PositionalWithNumbered,
        SourceRule::MissingDirectDependency,
    ];

    /// What it finds and what a fix does, one table row's worth.
    fn doc(self) -> (&'static str, &'static str) {
        match self {
            SourceRule::RawIdentInFormat => (
                "`{r#type}`, `{r#type:?}` in an `#[error]` message",
                "yes: `r#` removed",
            ),
            SourceRule::ShadowedFieldBound => (
                "a named argument shadows a generic field whose bound thiserror 1 inferred",
                "no: reported with the `where` bound to add",
            ),
            SourceRule::PositionalWithNumbered => (
                "`{0}` plus extra positional arguments in a tuple struct or variant",
                "yes: arguments named (`{arg1}`, `arg1 = .1`); reported when ambiguous",
            ),
            SourceRule::MissingDirectDependency => (
                "the derive reached through a re-export, no direct `thiserror`",
                "yes: the manifest line, in the policy's form; no, when thiserror is only a renamed dependency (thiserror 2's derive names `::thiserror`) or the key `thiserror` is another package",
            ),
        }
    }
}

/// The rule of one finding: a manifest rule or a source rule.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Code {
    /// A manifest (or policy, or toolchain pin) rule.
    Manifest(Rule),
    /// A thiserror 2 source rule.
    Source(SourceRule),
}

impl Code {
    /// Every code: the manifest rules, then the source rules.
    pub fn all() -> impl Iterator<Item = Code> {
        Rule::ALL
            .into_iter()
            .map(Code::Manifest)
            .chain(SourceRule::ALL.into_iter().map(Code::Source))
    }

    /// The stable identifier reports show.
    pub fn code(self) -> &'static str {
        match self {
            Code::Manifest(r) => r.code(),
            Code::Source(r) => r.code(),
        }
    }
}

impl From<Rule> for Code {
    fn from(r: Rule) -> Code {
        Code::Manifest(r)
    }
}

impl From<SourceRule> for Code {
    fn from(r: SourceRule) -> Code {
        Code::Source(r)
    }
}

impl PartialEq<Rule> for Code {
    fn eq(&self, other: &Rule) -> bool {
        *self == Code::Manifest(*other)
    }
}

impl std::fmt::Display for Code {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.code())
    }
}

impl Serialize for Code {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.code())
    }
}

/// The rules table of `docs/fleet.md`, in Markdown: one row per code,
/// manifest rules first, then the source rules numbered 1 to 4.
pub fn rules_table() -> String {
    let mut out = String::from("| rule | finds | fixed |\n|---|---|---|\n");
    for r in Rule::ALL {
        let (finds, fixed) = r.doc();
        out.push_str(&format!("| `{}` | {finds} | {fixed} |\n", r.code()));
    }
    for (i, r) in SourceRule::ALL.into_iter().enumerate() {
        let (finds, fixed) = r.doc();
        out.push_str(&format!(
            "| `{}` (source rule {}) | {finds} | {fixed} |\n",
            r.code(),
            i + 1
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_unique() {
        let mut seen = std::collections::BTreeSet::new();
        for c in Code::all() {
            assert!(seen.insert(c.code()), "two rules share the code {c}");
        }
        assert_eq!(seen.len(), Rule::ALL.len() + SourceRule::ALL.len());
    }

    #[test]
    fn all_lists_every_variant_once() {
        // a variant left out of ALL has no row in the docs: ALL must be
        // exhaustive, which the match below makes the compiler check
        for r in Rule::ALL {
            let i = match r {
                Rule::Inherit => 0,
                Rule::Version => 1,
                Rule::DefaultFeatures => 2,
                Rule::WorkspaceEntry => 3,
                Rule::Source => 4,
                Rule::Features => 5,
                Rule::Conflict => 6,
                Rule::Hakari => 7,
                Rule::ToolchainFloor => 8,
                Rule::StaleExemption => 9,
                Rule::Unsatisfiable => 10,
                Rule::Patch => 11,
                Rule::Replace => 12,
            };
            assert_eq!(Rule::ALL[i], r);
        }
        for (i, r) in SourceRule::ALL.into_iter().enumerate() {
            let n = match r {
                SourceRule::RawIdentInFormat => 0,
                SourceRule::ShadowedFieldBound => 1,
                SourceRule::PositionalWithNumbered => 2,
                SourceRule::MissingDirectDependency => 3,
            };
            assert_eq!(n, i);
        }
    }

    #[test]
    fn codes_serialize_as_their_strings() {
        assert_eq!(
            serde_json::to_string(&Code::from(Rule::ToolchainFloor)).unwrap(),
            "\"toolchain-floor\""
        );
        assert_eq!(
            serde_json::to_string(&Code::from(SourceRule::RawIdentInFormat)).unwrap(),
            "\"thiserror2-raw-ident-in-format\""
        );
        // the source rules keep thiserror_src's own serialization
        for r in SourceRule::ALL {
            assert_eq!(
                serde_json::to_string(&r).unwrap(),
                serde_json::to_string(&Code::from(r)).unwrap()
            );
        }
    }
}
