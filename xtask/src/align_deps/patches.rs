//! `[patch.crates-io]` and `[replace]` entries of the root manifest that
//! replace a policy dependency: once every declaration asks for the policy's
//! requirement, cargo uses a patch only when the patched package's version
//! matches it (else it warns "patch ... was not used in the crate graph" and
//! builds the registry's version), and a `[replace]` only for the version
//! its key names. Such an entry is a finding that needs a person (move the
//! fork to a matching version, or drop the entry); align-deps never edits it.
//!
//! The patched version is read from the `path` package's manifest; for a
//! `git` patch, from the package `Cargo.lock` records from that source
//! (unknown without a lockfile: then nothing is said).

use std::path::Path;

use cargo_metadata::semver::Version;

use super::manifest::{Decl, Manifest};
use super::plan::Finding;
use super::rule::Rule;
use crate::policy::Policy;
use crate::text::one_line;

/// The registry names under which `[patch]` patches crates.io.
const CRATES_IO: &[&str] = &[
    "crates-io",
    "https://github.com/rust-lang/crates.io-index",
    "sparse+https://index.crates.io/",
];

/// One finding per `[patch.crates-io]` / `[replace]` entry of `root` (the
/// root manifest, at `root_dir`) that replaces a policy dependency with a
/// version its requirement does not match.
pub fn findings(root: &Manifest, root_dir: &Path, policy: &Policy) -> Vec<Finding> {
    let mut out = Vec::new();
    let doc = root.root();
    if let Some(patch) = doc.get("patch").and_then(|p| p.as_table_like()) {
        for (registry, item) in patch.iter() {
            if !CRATES_IO.contains(&registry) {
                continue;
            }
            let Some(t) = item.as_table_like() else {
                continue;
            };
            for d in Decl::all(t) {
                let table = format!("patch.{}", super::manifest::display_key(registry));
                if let Some(f) = patch_finding(root, root_dir, policy, &d, &table) {
                    out.push(f);
                }
            }
        }
    }
    if let Some(replace) = doc.get("replace").and_then(|p| p.as_table_like()) {
        for d in Decl::all(replace) {
            if let Some(f) = replace_finding(root, policy, &d) {
                out.push(f);
            }
        }
    }
    out
}

/// The version a `[patch]` entry stands for, when it can be told.
fn patched_version(root_dir: &Path, d: &Decl<'_>) -> Option<(Version, String)> {
    let item = d.item.as_table_like()?;
    if let Some(path) = item.get("path").and_then(|p| p.as_str()) {
        let text = std::fs::read_to_string(root_dir.join(path).join("Cargo.toml")).ok()?;
        let doc: toml::Table = toml::from_str(&text).ok()?;
        let v = doc.get("package")?.get("version")?.as_str()?;
        return Some((Version::parse(v).ok()?, format!("path {path}")));
    }
    let git = item.get("git").and_then(|g| g.as_str())?;
    let text = std::fs::read_to_string(root_dir.join("Cargo.lock")).ok()?;
    let lock: toml::Table = toml::from_str(&text).ok()?;
    let url = git.trim_end_matches('/').trim_end_matches(".git");
    lock.get("package")?.as_array()?.iter().find_map(|p| {
        let name = p.get("name")?.as_str()?;
        let source = p.get("source")?.as_str()?;
        let v = p.get("version")?.as_str()?;
        (name == d.package() && source.starts_with("git+") && source[4..].starts_with(url))
            .then(|| Version::parse(v).ok())
            .flatten()
            .map(|v| (v, format!("git {git}")))
    })
}

fn patch_finding(
    root: &Manifest,
    root_dir: &Path,
    policy: &Policy,
    d: &Decl<'_>,
    table: &str,
) -> Option<Finding> {
    let name = d.package();
    let rule = policy.dependencies.get(name)?;
    let (version, from) = patched_version(root_dir, d)?;
    if rule.req.matches(&version) {
        return None;
    }
    let key = d.key.get();
    Some(finding(
        root,
        d,
        Rule::Patch,
        name,
        table,
        format!(
            "[{table}] {key} replaces {name} with {version} ({from}), which the policy's \"{}\" does not match: \
             once the declarations ask for \"{}\", cargo leaves the patch unused (\"patch ... was not used in the crate graph\") \
             and builds {name} from crates.io; move the fork to a version \"{}\" matches, or drop the patch; align-deps does not edit it",
            rule.version, rule.version, rule.version
        ),
        format!(
            "a patch of {name} at a version \"{}\" matches",
            rule.version
        ),
    ))
}

fn replace_finding(root: &Manifest, policy: &Policy, d: &Decl<'_>) -> Option<Finding> {
    // the key is a package id spec: `name:version`, `name@version`, or a URL form
    let spec = d.key.get();
    let (name, version) = spec
        .rsplit_once('@')
        .or_else(|| spec.rsplit_once(':'))
        .filter(|(n, _)| !n.contains('/'))?;
    let rule = policy.dependencies.get(name)?;
    let version = Version::parse(version).ok()?;
    if rule.req.matches(&version) {
        return None;
    }
    Some(finding(
        root,
        d,
        Rule::Replace,
        name,
        "replace",
        format!(
            "[replace] \"{spec}\" replaces {name} {version} only, which the policy's \"{}\" does not match: once the declarations ask for \"{}\", \
             cargo no longer uses it; point it at a version \"{}\" matches, or drop it; align-deps does not edit it",
            rule.version, rule.version, rule.version
        ),
        format!(
            "a replacement of a {name} version \"{}\" matches",
            rule.version
        ),
    ))
}

fn finding(
    root: &Manifest,
    d: &Decl<'_>,
    rule: Rule,
    name: &str,
    table: &str,
    message: String,
    wanted: String,
) -> Finding {
    let at = d.key_offset();
    let (line, column) = root.line_col(at);
    Finding {
        file: root.rel.clone(),
        line,
        column,
        rule: rule.into(),
        dependency: name.into(),
        key: Some(d.key.get().to_string()),
        table: Some(table.into()),
        found: one_line(&root.text()[root.line_start(at)..root.line_end(at)], "; "),
        wanted,
        fixable: false,
        message,
        fixed_in: None,
    }
}
