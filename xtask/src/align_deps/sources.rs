//! The source side of `align-deps`: when the policy moves
//! `thiserror` to major 2 or later, the code thiserror 2 rejects is found and
//! fixed in the same run, in the same all-or-nothing [`AlignmentPlan`] as the manifest
//! edits.
//!
//! 1. [`analyze`] picks the members (see [`needs_source_scan`]) and runs
//!    [`thiserror_src::analyze_crate`] on each, in parallel (rayon). It only
//!    reads: a file that does not parse is an error (`path:line:col`, exit 2)
//!    before anything is planned or written.
//! 2. [`new_users`] tells the manifest planner which policy dependencies will
//!    gain a declaration (rule 4), so that the `[workspace.dependencies]`
//!    entry they inherit is planned once, with the others
//!    ([`planner::plan_with_new_users`]).
//! 3. [`plan`] turns the analyses into an [`AlignmentPlan`]: each finding becomes a
//!    [`Finding`] (rule `thiserror2-...`, `path:line:column`, the line before
//!    and after the fix, or what a person must do), each fixed file a
//!    whole-file replacement (so [`WriteSet::apply`](crate::edit::WriteSet::apply) re-checks that the file still
//!    holds the text analysed), and each missing dependency a line added to
//!    the member's manifest in the policy's form (`thiserror = { workspace =
//!    true }` under inheritance, else `thiserror = "R"`), creating the table
//!    when it is absent, in the file's line endings.
//!
//! [`planner::plan_with_new_users`]: super::planner::plan_with_new_users

use std::collections::{BTreeSet, HashMap};
use std::path::Path;

use cargo_metadata::semver::{Op, VersionReq};
use cargo_metadata::{Metadata, Package};

use super::manifest::Manifest;
use super::plan::{AlignmentPlan, Finding, Splice};
use super::planner::{Loaded, NewUser};
use crate::policy::{DependencyRule, Policy};
use crate::text::one_line;
use crate::thiserror_src::{
    self, CrateAnalysis, MissingDependency, Rule, SourceError, SourceFinding,
};

/// The policy dependency whose source side is checked.
pub const THISERROR: &str = "thiserror";

/// The packages whose code can derive thiserror's `Error`: `thiserror`
/// itself and its derive crate.
const THISERROR_PACKAGES: &[&str] = &["thiserror", "thiserror-impl"];

/// Whether every version `req` accepts is at least `major.0.0`: one of its
/// comparators sets a lower bound of that major or above (`"2"`, `"^2.0"`,
/// `"=2.0.3"`, `">=2, <3"`, `">1"`); `"*"` and `"<3"` do not.
pub fn requires_at_least_major(req: &VersionReq, major: u64) -> bool {
    req.comparators.iter().any(|c| {
        let floor = match c.op {
            Op::Exact | Op::GreaterEq | Op::Tilde | Op::Caret | Op::Wildcard => c.major,
            // `>1` is `>=2.0.0`; `>1.2` stays in major 1
            Op::Greater if c.minor.is_none() => c.major + 1,
            Op::Greater => c.major,
            _ => return false,
        };
        floor >= major
    })
}

/// The policy's `thiserror` rule when it asks for major 2 or later (then the
/// source side runs); `None` otherwise.
pub fn thiserror2_rule(policy: &Policy) -> Option<&DependencyRule> {
    policy
        .dependencies
        .get(THISERROR)
        .filter(|r| requires_at_least_major(&r.req, 2))
}

/// Whether a member's sources are scanned: it depends on thiserror from
/// crates.io (which align-deps moves to the policy's version), or it does not
/// depend on thiserror at all (rule 4: it may derive it through a re-export).
/// Members whose only thiserror dependencies are git/path/alternative-registry
/// ones are left alone: align-deps does not move them (they are reported as
/// needing a person), so their version is unknown.
pub fn needs_source_scan(package: &Package) -> bool {
    let deps = thiserror_src::thiserror_dependencies(package);
    deps.is_empty()
        || deps.iter().any(|d| {
            d.path.is_none()
                && d.registry.is_none()
                && d.source
                    .as_ref()
                    .is_none_or(|s| !s.to_string().starts_with("git+"))
        })
}

/// Runs [`thiserror_src::analyze_crate_with`] on every member that
/// [`needs_source_scan`], in parallel, when the policy asks for thiserror 2
/// (else returns nothing), with the policy's exempt source files set aside.
/// Results are in member order.
///
/// # Errors
/// An unreadable source file or one that does not parse (the first, in member
/// order): `path:line:col: message; nothing written`, the path relative to the
/// workspace root.
pub fn analyze(
    meta: &Metadata,
    root: &Path,
    policy: &Policy,
) -> anyhow::Result<Vec<CrateAnalysis>> {
    let lock = super::lockfile::read(&root.join("Cargo.lock"), None);
    analyze_with(meta, root, policy, None, lock.as_ref().ok())
}

/// [`analyze`], taking the files that `cache` read ahead from there where
/// they are unchanged ([`thiserror_src::prefetch`]: the same answer), and
/// `lock`, the run's read of `root/Cargo.lock` (`None`: it could not be read).
///
/// # Errors
/// As [`analyze`].
pub(crate) fn analyze_with(
    meta: &Metadata,
    root: &Path,
    policy: &Policy,
    cache: Option<std::sync::Arc<thiserror_src::prefetch::SourceCache>>,
    lock: Option<&super::lockfile::LockText>,
) -> anyhow::Result<Vec<CrateAnalysis>> {
    use rayon::prelude::*;
    if thiserror2_rule(policy).is_none() {
        return Ok(Vec::new());
    }
    let members: Vec<&Package> = meta
        .workspace_packages()
        .into_iter()
        .filter(|p| needs_source_scan(p))
        .collect();
    // a member whose locked dependency graph has no thiserror cannot derive
    // its Error (unless a source exemption is about its files)
    let members = match super::lockfile::may_reach(lock, &members, THISERROR_PACKAGES) {
        Some(reach) => members
            .into_iter()
            .filter(|p| {
                let dir = p.manifest_path.parent().map(|d| d.as_std_path());
                reach.contains(p.name.as_str())
                    || policy.exemptions.iter().any(|e| match &e.kind {
                        crate::policy::ExemptKind::Source(s) => {
                            dir.is_some_and(|d| root.join(s).starts_with(d))
                        }
                        _ => false,
                    })
            })
            .collect(),
        None => members,
    };
    // exempt source files are analysed (to tell a stale exemption), then set aside
    let options = thiserror_src::AnalyzeOptions {
        parse_all: false,
        exempt: policy
            .exemptions
            .iter()
            .filter_map(|e| match &e.kind {
                crate::policy::ExemptKind::Source(s) => Some(root.join(s)),
                _ => None,
            })
            .collect(),
        cache,
    };
    // syn recurses per nesting level: parse on threads with a deep stack
    let results: Vec<anyhow::Result<CrateAnalysis>> = thiserror_src::parse_pool().install(|| {
        members
            .par_iter()
            .map(|p| thiserror_src::analyze_crate_with(p, &options))
            .collect()
    });
    let mut out = Vec::with_capacity(results.len());
    for r in results {
        match r {
            Ok(a) => out.push(a),
            Err(e) => {
                if let Some(se) = e.downcast_ref::<SourceError>() {
                    anyhow::bail!(
                        "{}:{}:{}: Rust source does not parse: {}; nothing written",
                        crate::fsutil::rel(root, &se.path),
                        se.line,
                        se.column,
                        se.message
                    );
                }
                return Err(e.context("nothing written"));
            }
        }
    }
    Ok(out)
}

/// Drops the analyses of members whose own thiserror declaration the manifest
/// plan cannot move (a finding that needs a person in their manifest): they
/// stay on their current thiserror after a fix run, where rewritten sources
/// would not compile. Returns an information line for each.
pub fn hold_back(
    analyses: Vec<CrateAnalysis>,
    manifest_plan: &AlignmentPlan,
    root: &Path,
) -> (Vec<CrateAnalysis>, Vec<String>) {
    let blocked: BTreeSet<&str> = manifest_plan
        .findings
        .iter()
        .filter(|f| !f.fixable && f.dependency == THISERROR)
        .map(|f| f.file.as_str())
        .collect();
    let mut info = Vec::new();
    let kept = analyses
        .into_iter()
        .filter(|a| {
            let manifest = crate::fsutil::rel(root, &a.manifest_path);
            if !blocked.contains(manifest.as_str()) {
                return true;
            }
            if !a.findings.is_empty() {
                info.push(format!(
                    "{}: the Rust sources of `{}` were not checked for thiserror 2: its thiserror declaration needs a person first (see above)",
                    manifest, a.package
                ));
            }
            false
        })
        .collect();
    (kept, info)
}

/// Members that derive thiserror's `Error` but depend on thiserror only
/// under another name (`errors = { package = "thiserror", ... }`): moving
/// them to thiserror 2 would break their build (its derive names
/// `::thiserror`, and cargo refuses a second, direct `thiserror` dependency on
/// the same package), so they are left untouched: their manifests are taken
/// out of the manifest plan (returned), their source fixes dropped, their
/// rule-4 finding kept for a person; an information line says so.
///
/// So are members whose `thiserror` key names another package
/// (`thiserror = { package = "thiserror-core", ... }`) and that need a
/// direct thiserror (rule 4): the key is taken, so it cannot be added.
pub fn hold_renamed(
    analyses: &mut [CrateAnalysis],
    loaded: &Loaded,
    root: &Path,
) -> (BTreeSet<std::path::PathBuf>, Vec<String>) {
    let mut held = BTreeSet::new();
    let mut info = Vec::new();
    for a in analyses.iter_mut() {
        let why = if let Some(name) = a
            .missing_dependencies
            .iter()
            .find_map(|m| m.renamed_as.clone())
        {
            format!(
                "it derives thiserror's Error through the renamed dependency `{name}`, \
                 which thiserror 2's derive cannot use; rename `{name}` to `thiserror` (and its uses)"
            )
        } else if let Some((table, other)) = (!a.missing_dependencies.is_empty())
            .then(|| {
                loaded
                    .manifests
                    .iter()
                    .find(|m| m.path == a.manifest_path)
                    .and_then(thiserror_name_taken)
            })
            .flatten()
        {
            format!(
                "its `{THISERROR}` in [{table}] is the package `{other}`, so the direct thiserror dependency it needs cannot be added; \
                 rename that dependency (or move it to thiserror) by hand"
            )
        } else {
            continue;
        };
        held.insert(a.manifest_path.clone());
        for f in &mut a.files {
            f.analysis.fixed_text = None;
        }
        a.findings
            .retain(|f| f.rule == Rule::MissingDirectDependency);
        info.push(format!(
            "{}: `{}` is left untouched (its thiserror declarations and sources): {why}, then run align-deps again",
            crate::fsutil::rel(root, &a.manifest_path),
            a.package
        ));
    }
    (held, info)
}

/// The dependency table and package of a declaration of `m` whose key is
/// `thiserror` but whose package is another one
/// (`thiserror = { package = "thiserror-core", ... }`).
fn thiserror_name_taken(m: &Manifest) -> Option<(String, String)> {
    m.dependency_tables().into_iter().find_map(|t| {
        super::manifest::Decl::all(t.table)
            .into_iter()
            .find(|d| d.key.get() == THISERROR && d.package() != THISERROR)
            .map(|d| (t.name.clone(), d.package().to_string()))
    })
}

/// The policy dependencies that rule 4 will add to some manifest.
pub fn new_users(analyses: &[CrateAnalysis]) -> BTreeSet<String> {
    analyses
        .iter()
        .flat_map(|a| &a.missing_dependencies)
        .filter(|m| m.renamed_as.is_none())
        .map(|_| THISERROR.to_string())
        .collect()
}

/// One analysed file's lines, before and after its fix, and the runs of
/// changed lines: computed once per file, so that each finding's line and
/// changed block is a lookup (a file with thousands of findings is not
/// rescanned per finding).
struct FileLines<'a> {
    old: Vec<&'a str>,
    /// The fixed text's lines, when the fix keeps the line count (source
    /// fixes never add or remove a line break).
    new: Option<Vec<&'a str>>,
    /// For each line (0-based) that the fix changes, the run of changed
    /// lines around it (`start..end`, 0-based), rendered before and after.
    blocks: Vec<Option<usize>>,
    rendered: Vec<(String, String)>,
}

impl<'a> FileLines<'a> {
    fn new(original: &'a str, fixed: Option<&'a str>) -> Self {
        let old: Vec<&str> = original.lines().collect();
        let new = fixed
            .map(|t| t.lines().collect::<Vec<&str>>())
            .filter(|n| n.len() == old.len());
        let mut blocks = vec![None; old.len()];
        let mut rendered = Vec::new();
        if let Some(new) = &new {
            let mut i = 0;
            while i < old.len() {
                if old[i] == new[i] {
                    i += 1;
                    continue;
                }
                let start = i;
                while i < old.len() && old[i] != new[i] {
                    blocks[i] = Some(rendered.len());
                    i += 1;
                }
                rendered.push((
                    one_line(&old[start..i].join("\n"), " "),
                    one_line(&new[start..i].join("\n"), " "),
                ));
            }
        }
        FileLines {
            old,
            new,
            blocks,
            rendered,
        }
    }

    /// Line `n` (1-based), trimmed.
    fn line(&self, n: usize) -> &str {
        n.checked_sub(1)
            .and_then(|i| self.old.get(i))
            .map_or("", |l| l.trim())
    }

    /// The run of lines around line `n` (1-based) that the fix changes,
    /// before and after, each on one line; `None` when line `n` does not change.
    fn changed_block(&self, n: usize) -> Option<&(String, String)> {
        self.new.as_ref()?;
        let b = (*self.blocks.get(n.checked_sub(1)?)?)?;
        self.rendered.get(b)
    }
}

/// The plan of the source side: findings, whole-file source replacements and
/// rule 4's manifest lines. `form` is how a new `thiserror` declaration must
/// be written (from [`super::planner::plan_with_new_users`]).
///
/// # Errors
/// Conflicting edits (nothing may be written).
pub fn plan(
    analyses: &[CrateAnalysis],
    loaded: &Loaded,
    form: Option<&NewUser>,
    root: &Path,
) -> anyhow::Result<AlignmentPlan> {
    let mut plan = AlignmentPlan::new();
    // a file reached by two crates (`#[path]`) is analysed once per crate:
    // its findings are listed (and counted) once; rule 4's are per manifest
    let mut listed: BTreeSet<(&Path, usize, usize, Rule)> = BTreeSet::new();
    for a in analyses {
        for (path, old, new) in a.source_edits() {
            plan.edits
                .replace_file(path, &crate::fsutil::rel(root, path), old, new)?;
        }
        let mut used = vec![false; a.missing_dependencies.len()];
        // each file's lines, split once (findings come sorted by file)
        let mut lines: HashMap<&Path, FileLines<'_>> = HashMap::new();
        let by_path: HashMap<&Path, &thiserror_src::AnalyzedFile> =
            a.files.iter().map(|f| (f.path.as_path(), f)).collect();
        for sf in &a.findings {
            if sf.rule != Rule::MissingDirectDependency
                && !listed.insert((sf.path.as_path(), sf.line, sf.column, sf.rule))
            {
                continue;
            }
            let file = by_path.get(sf.path.as_path()).copied();
            let fl = lines.entry(sf.path.as_path()).or_insert_with(|| {
                FileLines::new(
                    file.map_or("", |f| f.original.as_str()),
                    file.and_then(|f| f.analysis.fixed_text.as_deref()),
                )
            });
            let found = fl.line(sf.line).to_string();
            let mut finding = Finding {
                file: crate::fsutil::rel(root, &sf.path),
                line: sf.line,
                column: sf.column,
                rule: sf.rule.into(),
                dependency: THISERROR.to_string(),
                key: None,
                table: None,
                found,
                wanted: String::new(),
                fixable: sf.fixable,
                message: sf.message.clone(),
                fixed_in: None,
            };
            if sf.rule == Rule::MissingDirectDependency {
                let i = missing_of(a, sf, &used);
                if let Some(i) = i {
                    used[i] = true;
                }
                let missing = i.map(|i| &a.missing_dependencies[i]);
                plan_missing(&mut plan, &mut finding, a, missing, loaded, form, root)?;
            } else {
                match fl.changed_block(sf.line) {
                    Some((old, new)) if sf.fixable => {
                        finding.found = old.clone();
                        finding.wanted = new.clone();
                    }
                    _ => finding.wanted = one_line(sf.suggestion.as_deref().unwrap_or(""), " "),
                }
                if let Some(s) = &sf.suggestion {
                    let s = one_line(s, " ");
                    if s != finding.wanted {
                        finding.message = format!("{}; {s}", finding.message);
                    }
                }
            }
            finding.message = one_line(&finding.message, " ");
            plan.push_finding(finding);
        }
    }
    Ok(plan)
}

/// The index of the missing dependency a rule-4 finding is about: the one
/// whose first derive site (as [`thiserror_src::analyze_crate`] picks it) is
/// the finding's place.
fn missing_of(a: &CrateAnalysis, sf: &SourceFinding, used: &[bool]) -> Option<usize> {
    let site_of = |m: &MissingDependency| {
        a.files
            .iter()
            .filter(|f| f.needs.contains(&m.kind))
            .find_map(|f| f.analysis.derives.first())
    };
    let at = |m: &MissingDependency| {
        site_of(m).is_some_and(|d| d.path == sf.path && d.line == sf.line && d.column == sf.column)
    };
    a.missing_dependencies
        .iter()
        .enumerate()
        .find(|(i, m)| !used[*i] && at(m))
        .or_else(|| {
            a.missing_dependencies
                .iter()
                .enumerate()
                .find(|(i, _)| !used[*i])
        })
        .map(|(i, _)| i)
}

/// Rule 4: the line that adds `thiserror` to the member's manifest, planned
/// into `plan`; `finding` gets what is wanted, or becomes unfixable when the
/// manifest cannot take it.
fn plan_missing(
    plan: &mut AlignmentPlan,
    finding: &mut Finding,
    a: &CrateAnalysis,
    missing: Option<&MissingDependency>,
    loaded: &Loaded,
    form: Option<&NewUser>,
    root: &Path,
) -> anyhow::Result<()> {
    let Some(missing) = missing else {
        anyhow::bail!(
            "{}: internal error: a thiserror2-missing-direct-dependency finding without its missing dependency; nothing written",
            finding.file
        );
    };
    let table = missing.table();
    let manifest_rel = crate::fsutil::rel(root, &missing.manifest_path);
    finding.table = Some(table.to_string());
    if missing.renamed_as.is_some() || !finding.fixable {
        finding.fixable = false;
        finding.wanted = format!("a direct `thiserror` dependency in [{table}] of {manifest_rel}");
        return Ok(());
    }
    let Some(manifest) = loaded
        .manifests
        .iter()
        .find(|m| m.path == missing.manifest_path)
    else {
        anyhow::bail!(
            "{manifest_rel}: internal error: the manifest of `{}` was not read; nothing written",
            a.package
        );
    };
    if let Some((t, other)) = thiserror_name_taken(manifest) {
        return unfixable(
            finding,
            table,
            &manifest_rel,
            &format!(
                "the key `{THISERROR}` in its [{t}] is the package `{other}` (a crate has one dependency per name); \
                 rename that dependency, or move it to thiserror, by hand"
            ),
        );
    }
    let fields: Vec<(&str, String)> = match form {
        Some(NewUser::Inherit {
            default_features_true,
        }) => {
            let mut f = vec![("workspace", "true".to_string())];
            if *default_features_true {
                f.push(("default-features", "true".to_string()));
            }
            f
        }
        Some(NewUser::Own { version }) => vec![("version", format!("\"{version}\""))],
        Some(NewUser::Blocked(why)) => {
            return unfixable(finding, table, &manifest_rel, why);
        }
        None => anyhow::bail!(
            "{manifest_rel}: internal error: no form planned for the new thiserror dependency; nothing written"
        ),
    };
    let line = match fields.as_slice() {
        [("version", v)] => format!("{THISERROR} = {v}"),
        _ => {
            let kv: Vec<String> = fields.iter().map(|(k, v)| format!("{k} = {v}")).collect();
            format!("{THISERROR} = {{ {} }}", kv.join(", "))
        }
    };
    let in_hakari = |at: usize| {
        super::planner::hakari_sections(manifest.text())
            .iter()
            .any(|s| s.start < at && at < s.end)
    };
    match add_dependency_line(manifest, table, &line, &fields) {
        Ok(splice) if in_hakari(splice.range.start) => unfixable(
            finding,
            table,
            &manifest_rel,
            &format!(
                "its [{table}] is inside the section cargo-hakari manages; add it outside that section by hand"
            ),
        ),
        Ok(splice) => {
            plan.edits
                .add_splices(&manifest.path, &manifest.rel, manifest.text(), vec![splice])?;
            finding.wanted = format!("add `{line}` to [{table}] of {manifest_rel}");
            finding.fixed_in = Some(manifest_rel);
            Ok(())
        }
        Err(why) => unfixable(finding, table, &manifest_rel, &why),
    }
}

fn unfixable(
    finding: &mut Finding,
    table: &str,
    manifest_rel: &str,
    why: &str,
) -> anyhow::Result<()> {
    finding.fixable = false;
    finding.wanted = format!("a direct `thiserror` dependency in [{table}] of {manifest_rel}");
    finding.message = format!("{}; align-deps cannot add it: {why}", finding.message);
    Ok(())
}

/// The splice that adds `line` (`thiserror = ...`, or the key/value `fields`
/// of a `[table.thiserror]` table) to `table` of `m`: after the table's last
/// entry; a new `[table]` at the end of the file when the table is absent;
/// `[table.thiserror]` at the end when the table exists only through
/// sub-tables (`[dependencies.x]`). `Err(why)` for a table written inline or
/// as dotted keys.
fn add_dependency_line(
    m: &Manifest,
    table: &str,
    line: &str,
    fields: &[(&str, String)],
) -> Result<Splice, String> {
    let item = m
        .root()
        .get(table)
        .or_else(|| m.root().get(&table.replace('-', "_")));
    let eol = m.eol;
    let text = m.text();
    let at_end = |block: String| {
        let lead = if text.is_empty() {
            String::new()
        } else if text.ends_with('\n') {
            eol.to_string()
        } else {
            format!("{eol}{eol}")
        };
        Splice::insert(
            text.len(),
            format!("{lead}{}{eol}", block.replace('\n', eol)),
        )
    };
    match item {
        None => Ok(at_end(format!("[{table}]\n{line}"))),
        Some(item) => {
            if let Some(at) = m.table_append_point(item) {
                return Ok(m.insert_lines_after(at, line));
            }
            match item.as_table() {
                Some(t) if t.is_implicit() && !t.is_dotted() => {
                    let body: Vec<String> =
                        fields.iter().map(|(k, v)| format!("{k} = {v}")).collect();
                    Ok(at_end(format!(
                        "[{table}.{THISERROR}]\n{}",
                        body.join("\n")
                    )))
                }
                _ => Err(format!(
                    "[{table}] of {} is written inline or as dotted keys; add `{line}` by hand",
                    m.rel
                )),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn changed_blocks_are_the_runs_of_changed_lines() {
        let fl = FileLines::new("a\n  b\nc\nd\ne\n", Some("a\n  B\nC\nd\nE\n"));
        assert_eq!(fl.line(2), "b");
        assert_eq!(fl.line(9), "");
        assert_eq!(fl.changed_block(1), None);
        let bc = Some(&("b c".to_string(), "B C".to_string()));
        assert_eq!(fl.changed_block(2), bc);
        assert_eq!(fl.changed_block(3), bc);
        assert_eq!(fl.changed_block(4), None);
        assert_eq!(
            fl.changed_block(5),
            Some(&("e".to_string(), "E".to_string()))
        );
        assert_eq!(fl.changed_block(0), None);
        // a fix that changed the line count is not shown line by line
        assert_eq!(FileLines::new("a\n", Some("a\nb\n")).changed_block(1), None);
        assert_eq!(FileLines::new("a\n", None).changed_block(1), None);
    }

    #[test]
    fn majors() {
        let at2 = |r: &str| requires_at_least_major(&VersionReq::parse(r).unwrap(), 2);
        assert!(at2("2"));
        assert!(at2("^2.0.1"));
        assert!(at2("=10.1"));
        assert!(at2(">=2, <3"));
        assert!(at2(">1"));
        assert!(!at2("1.0"));
        assert!(!at2(">1.2"));
        assert!(!at2("<3"));
        assert!(!at2("*"));
    }
}
