//! `[[exempt]]` entries: what `align-deps` leaves alone on
//! purpose, each with the reason every report shows.
//!
//! ```toml
//! [[exempt]]
//! package = "enclave-shim"                # a member: its manifest and sources
//! reason = "builds for the SGX target with the thiserror-sgx fork"
//!
//! [[exempt]]
//! manifest = "crates/enclave/Cargo.toml"  # one declaration: `dependency` there
//! dependency = "thiserror"
//! reason = "git fork thiserror-sgx, kept on purpose"
//!
//! [[exempt]]
//! source = "crates/legacy/src/error.rs"   # one Rust source file
//! reason = "frozen until the 2027 rewrite"
//! ```
//!
//! Mistakes are errors at `path:line:column` (exit 2): no kind or two kinds
//! in one entry, `dependency` without `manifest` (or the other way round), a
//! missing or blank `reason`, a path that is absolute, leaves the workspace
//! (`..`), is not `/`-separated or does not name a `Cargo.toml` / `.rs` file,
//! a `dependency` no policy rule is about, the same exemption twice.

use std::ops::Range;

use serde::Deserialize;
use toml::Spanned;

/// What an exemption leaves alone.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub enum ExemptKind {
    /// A workspace member, by package name: its manifest and its sources.
    Package(String),
    /// One declaration of a policy dependency in one manifest
    /// (workspace-relative path), named by its key.
    Declaration {
        /// The manifest, relative to the workspace root, `/`-separated.
        manifest: String,
        /// The declaration's key: the package name (`thiserror`), or the
        /// name a renamed declaration is under (`thiserror_sgx`).
        dependency: String,
    },
    /// One Rust source file (workspace-relative path).
    Source(String),
}

impl ExemptKind {
    /// `package`, `declaration` or `source`.
    pub fn name(&self) -> &'static str {
        match self {
            ExemptKind::Package(_) => "package",
            ExemptKind::Declaration { .. } => "declaration",
            ExemptKind::Source(_) => "source",
        }
    }

    /// What it names, for people: `enclave-shim`,
    /// `crates/enclave/Cargo.toml: thiserror`, `crates/legacy/src/error.rs`.
    pub fn what(&self) -> String {
        match self {
            ExemptKind::Package(p) => format!("package `{p}`"),
            ExemptKind::Declaration {
                manifest,
                dependency,
            } => format!("{manifest}: {dependency}"),
            ExemptKind::Source(s) => s.clone(),
        }
    }
}

/// One `[[exempt]]` entry, validated.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Exemption {
    /// What it leaves alone.
    pub kind: ExemptKind,
    /// Why (never blank).
    pub reason: String,
    /// Byte range, in the policy text, of the value that names what it
    /// leaves alone (`package`, `manifest` or `source`).
    pub span: Range<usize>,
}

/// An `[[exempt]]` entry as written.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawExempt {
    package: Option<Spanned<String>>,
    manifest: Option<Spanned<String>>,
    dependency: Option<Spanned<String>>,
    source: Option<Spanned<String>>,
    reason: Option<Spanned<String>>,
}

/// Validates the entries. `Err((offset, message))` for the first mistake.
/// (A declaration exemption's `dependency` is a key of some manifest, which
/// only a run can check: one that names no declaration is stale.)
pub(super) fn validate(raw: Vec<Spanned<RawExempt>>) -> Result<Vec<Exemption>, (usize, String)> {
    let mut out: Vec<Exemption> = Vec::new();
    for entry in raw {
        let entry_at = entry.span().start;
        let e = entry.into_inner();
        let kinds: Vec<(&str, &Spanned<String>)> = [
            ("package", &e.package),
            ("manifest", &e.manifest),
            ("source", &e.source),
        ]
        .into_iter()
        .filter_map(|(k, v)| v.as_ref().map(|v| (k, v)))
        .collect();
        let (key, value) = match kinds.as_slice() {
            [] => {
                return Err((
                    e.dependency
                        .as_ref()
                        .or(e.reason.as_ref())
                        .map_or(entry_at, |v| v.span().start),
                    "[[exempt]] names nothing: give one of `package = \"<member>\"`, `manifest = \"<path>/Cargo.toml\"` with `dependency = \"<name>\"`, or `source = \"<path>.rs\"`".into(),
                ));
            }
            [one] => *one,
            [_, (second, v), ..] => {
                return Err((
                    v.span().start,
                    format!(
                        "[[exempt]] names two things (`{}` and `{second}`): one exemption per entry",
                        kinds[0].0
                    ),
                ));
            }
        };
        let at = value.span().start;
        let text = value.get_ref().as_str();
        if text.trim().is_empty() {
            return Err((at, format!("[[exempt]] {key} is empty")));
        }
        let kind = match key {
            "package" => {
                if let Some(d) = &e.dependency {
                    return Err((
                        d.span().start,
                        "[[exempt]] `dependency` goes with `manifest` (one declaration), not with `package`".into(),
                    ));
                }
                ExemptKind::Package(text.to_string())
            }
            "manifest" => {
                check_path(key, text, "Cargo.toml").map_err(|m| (at, m))?;
                let Some(dep) = &e.dependency else {
                    return Err((
                        at,
                        format!(
                            "[[exempt]] manifest = \"{text}\" needs `dependency = \"<name>\"`: the package whose declaration there is exempt"
                        ),
                    ));
                };
                ExemptKind::Declaration {
                    manifest: text.to_string(),
                    dependency: dep.get_ref().clone(),
                }
            }
            _ => {
                if let Some(d) = &e.dependency {
                    return Err((
                        d.span().start,
                        "[[exempt]] `dependency` goes with `manifest` (one declaration), not with `source`".into(),
                    ));
                }
                check_path(key, text, ".rs").map_err(|m| (at, m))?;
                ExemptKind::Source(text.to_string())
            }
        };
        let reason = match &e.reason {
            Some(r) if !r.get_ref().trim().is_empty() => r.get_ref().trim().to_string(),
            Some(r) => {
                return Err((
                    r.span().start,
                    "[[exempt]] reason is blank: say why this is exempt (every report shows it)"
                        .into(),
                ));
            }
            None => {
                return Err((
                    at,
                    format!(
                        "[[exempt]] {key} = \"{text}\" has no reason: add `reason = \"...\"` saying why (every report shows it)"
                    ),
                ));
            }
        };
        if out.iter().any(|x| x.kind == kind) {
            return Err((at, format!("[[exempt]] {} is exempted twice", kind.what())));
        }
        out.push(Exemption {
            kind,
            reason,
            span: value.span(),
        });
    }
    Ok(out)
}

/// A workspace-relative, `/`-separated path to a file ending in `suffix`.
fn check_path(key: &str, p: &str, suffix: &str) -> Result<(), String> {
    let bad = |why: &str| {
        Err(format!(
            "[[exempt]] {key} = \"{p}\" {why}; write the path from the workspace root with `/`, e.g. \"{}\"",
            if suffix == ".rs" {
                "crates/legacy/src/error.rs"
            } else {
                "crates/enclave/Cargo.toml"
            }
        ))
    };
    if p.starts_with('/') || p.contains(':') {
        return bad("is absolute");
    }
    if p.contains('\\') {
        return bad("is not `/`-separated");
    }
    if p.split('/').any(|c| c.is_empty() || c == "." || c == "..") {
        return bad("has an empty, `.` or `..` part");
    }
    if p.contains(['*', '?', '[', '{']) {
        return bad("is a pattern (one file per exemption)");
    }
    let ok = if suffix == ".rs" {
        p.ends_with(".rs")
    } else {
        p == "Cargo.toml" || p.ends_with("/Cargo.toml")
    };
    if !ok {
        return bad(&format!("does not name a `{suffix}` file"));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use crate::policy::Policy;

    const RULE: &str = "[dependencies.thiserror]\nversion = \"2\"\n\n";

    fn parse(exempt: &str) -> Result<Policy, String> {
        Policy::parse(&format!("{RULE}{exempt}"), Path::new("p.toml")).map_err(|e| e.to_string())
    }

    #[test]
    fn each_kind_parses_with_its_reason_and_span() {
        let text = "[[exempt]]\npackage = \"shim\"\nreason = \"SGX fork\"\n\n[[exempt]]\nmanifest = \"crates/e/Cargo.toml\"\ndependency = \"thiserror\"\nreason = \" kept \"\n\n[[exempt]]\nsource = \"crates/l/src/error.rs\"\nreason = \"frozen\"\n";
        let p = parse(text).unwrap();
        let full = format!("{RULE}{text}");
        let kinds: Vec<(&str, String, &str, &str)> = p
            .exemptions
            .iter()
            .map(|e| {
                (
                    e.kind.name(),
                    e.kind.what(),
                    e.reason.as_str(),
                    &full[e.span.clone()],
                )
            })
            .collect();
        assert_eq!(
            kinds,
            [
                (
                    "package",
                    "package `shim`".to_string(),
                    "SGX fork",
                    "\"shim\""
                ),
                (
                    "declaration",
                    "crates/e/Cargo.toml: thiserror".to_string(),
                    "kept",
                    "\"crates/e/Cargo.toml\""
                ),
                (
                    "source",
                    "crates/l/src/error.rs".to_string(),
                    "frozen",
                    "\"crates/l/src/error.rs\""
                ),
            ]
        );
    }

    #[test]
    fn mistakes_are_errors_at_line_and_column() {
        let cases: &[(&str, &str, &str)] = &[
            (
                "[[exempt]]\npackage = \"shim\"\n",
                "p.toml:5:11: ",
                "has no reason",
            ),
            (
                "[[exempt]]\npackage = \"shim\"\nreason = \"  \"\n",
                "p.toml:6:10: ",
                "reason is blank",
            ),
            (
                "[[exempt]]\npackage = \"shim\"\nreason = \"x\"\nwhy = \"y\"\n",
                "p.toml:7:1: ",
                "unknown field `why`",
            ),
            (
                "[[exempt]]\nreason = \"x\"\n",
                "p.toml:5:10: ",
                "names nothing",
            ),
            (
                "[[exempt]]\npackage = \"a\"\nsource = \"a/b.rs\"\nreason = \"x\"\n",
                "p.toml:6:10: ",
                "names two things",
            ),
            (
                "[[exempt]]\nmanifest = \"crates/e/Cargo.toml\"\nreason = \"x\"\n",
                "p.toml:5:12: ",
                "needs `dependency",
            ),
            (
                "[[exempt]]\nmanifest = \"/abs/Cargo.toml\"\ndependency = \"thiserror\"\nreason = \"x\"\n",
                "p.toml:5:12: ",
                "is absolute",
            ),
            (
                "[[exempt]]\nsource = \"../other/src/lib.rs\"\nreason = \"x\"\n",
                "p.toml:5:10: ",
                "`..` part",
            ),
            (
                "[[exempt]]\nsource = \"crates/a/src/*.rs\"\nreason = \"x\"\n",
                "p.toml:5:10: ",
                "is a pattern",
            ),
            (
                "[[exempt]]\nsource = \"crates/a/Cargo.toml\"\nreason = \"x\"\n",
                "p.toml:5:10: ",
                "does not name a `.rs` file",
            ),
            (
                "[[exempt]]\nmanifest = \"crates/a/lib.rs\"\ndependency = \"thiserror\"\nreason = \"x\"\n",
                "p.toml:5:12: ",
                "does not name a `Cargo.toml` file",
            ),
            (
                "[[exempt]]\nsource = \"a/b.rs\"\ndependency = \"thiserror\"\nreason = \"x\"\n",
                "p.toml:6:14: ",
                "goes with `manifest`",
            ),
            (
                "[[exempt]]\npackage = \"a\"\nreason = \"x\"\n[[exempt]]\npackage = \"a\"\nreason = \"y\"\n",
                "p.toml:8:11: ",
                "exempted twice",
            ),
        ];
        for (text, at, says) in cases {
            let e = parse(text).unwrap_err();
            assert!(e.starts_with(at) && e.contains(says), "{text:?}: {e}");
        }
        // a declaration is named by its key, which only a run can check
        assert!(
            parse("[[exempt]]\nmanifest = \"crates/e/Cargo.toml\"\ndependency = \"thiserror_sgx\"\nreason = \"x\"\n")
                .is_ok()
        );
    }
}
