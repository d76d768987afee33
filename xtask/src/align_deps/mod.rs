//! `cargo xtask align-deps`: align every crate's dependency declarations to
//! the fleet policy (`policy/fleet.toml`, schema in [`crate::policy`]).
//!
//! # How it works
//! 1. `cargo metadata --no-deps --offline` names the members and their
//!    manifests (crates outside the workspace — `exclude`d, vendored, other
//!    workspaces — are never read). When cargo rejects a manifest, the
//!    manifests its message names are parsed to report `path:line:col`.
//!    While it runs, another thread reads `Cargo.lock` and the `.rs` files
//!    under the manifest's directory ([`migration::Prefetch`]); later
//!    steps use what it read only where the file is unchanged, and none of
//!    it when taking the lock meant waiting for another run or recovering one.
//! 2. The root manifest and each member manifest are parsed (in parallel) into
//!    [`manifest::Manifest`], which keeps byte spans of every key and value.
//! 3. When the policy asks for the new major of the dependency a source
//!    migration is registered for ([`SOURCE_MIGRATION`], see [`migration`]:
//!    today thiserror 1 -> 2, [`thiserror2`] and [`sources`]),
//!    [`Migration::analyze`] runs its source analysis on every member it
//!    concerns, in parallel. A source file that does not parse stops the run
//!    here (exit 2, `path:line:col`, nothing written).
//! 4. [`planner::plan_with_new_users`] computes every manifest finding and,
//!    for the fixable ones, byte [`plan::Splice`]s of the original texts
//!    (including the `[workspace.dependencies]` entry that crates gaining a
//!    direct dependency through the migration will inherit);
//!    [`Migration::plan`] adds the source findings, the whole-file source
//!    replacements and those crates' new manifest lines; the two plans merge
//!    into one. Nothing is written yet.
//! 5. `--check` prints the findings and the unified diff of the plan
//!    (manifests and sources); a fix run applies the whole plan through
//!    [`crate::edit::WriteSet::apply`] (re-check that no file changed, validate TOML and
//!    Rust, atomic writes, roll back on failure).
//! 6. [`lockfile::older_majors`] reports, as information, which packages of
//!    `Cargo.lock` still pull an older major of a policy dependency.
//!
//! # Rules (per policy dependency `name`, requirement `R`)
//! - A declaration is any entry of `[dependencies]`, `[dev-dependencies]`,
//!   `[build-dependencies]` (and the `_` spellings), top level or under
//!   `[target.<cfg or triple>]`, whose key or `package = ...` is `name`, in any
//!   form (string, inline table, `[dependencies.name]`, dotted keys).
//! - `git`/`path`/`registry` declarations are reported (`source`, not
//!   fixable, exit 1) and never touched.
//! - `inherit = true` in a workspace: each own declaration becomes
//!   `workspace = true` in place of its `version` (`package` dropped: the
//!   workspace entry carries the rename under the same key); `features` and
//!   `optional` stay. `[workspace.dependencies]` gets `key = "R"` (created if
//!   needed, after the existing entries, comments kept) or has its
//!   requirement rewritten to `R`. Already-inherited declarations are left
//!   alone unless their `default-features` needs the fix below.
//! - `inherit = false`, or a single-package manifest (no `[workspace]` to
//!   inherit from): the requirement is rewritten in place (quote style kept).
//! - The requirement matches when it is textually `R`, or accepts only
//!   versions `R` accepts (stricter, e.g. `"2.0.12"` under `"2"`: kept, never
//!   lowered; the workspace entry takes the strictest of those its converting
//!   members have, `planner::stricter`).
//!
//! # default-features
//! With inheritance cargo ignores a member's `default-features = false`
//! unless the workspace entry also says `default-features = false` (a warning;
//! an error on edition 2024); with a workspace `false`, a member without the
//! key gets no default features and one with `default-features = true` gets
//! them. So, per workspace key: if any user (declaration being converted, or
//! already inheriting) effectively disables default features today, the
//! workspace entry gets `default-features = false` and every user that
//! effectively has them gets an explicit `default-features = true`;
//! otherwise no `default-features = false` is left on a member (it was
//! ignored). Every crate keeps exactly its effective features, with no
//! warning. A converting declaration that would gain `features` from an
//! existing workspace entry is reported (`features`, not fixable).

pub(crate) mod exemption_use;
pub(crate) mod lockfile;
pub(crate) mod manifest;
pub(crate) mod migration;
pub(crate) mod msrv;
pub(crate) mod outside;
pub(crate) mod patches;
mod phases;
pub mod plan;
pub(crate) mod planner;
mod report;
pub mod rule;
pub(crate) mod satisfiable;
pub mod sources;
pub(crate) mod thiserror2;

use std::collections::BTreeSet;
use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::Context as _;

use crate::Outcome;
use crate::args::{FormatArg, Target};
use manifest::Manifest;
use migration::{Analysis, Migration};
use plan::AlignmentPlan;
use planner::Loaded;

/// The source migration of a run: the one registered today, thiserror 1 ->
/// 2 (see [`migration`]); the only place the core names it.
pub(crate) static SOURCE_MIGRATION: &dyn Migration = &thiserror2::Thiserror2;

/// Arguments of `cargo xtask align-deps`.
#[derive(Debug, Clone, clap::Args)]
pub struct Args {
    /// Change nothing: list every violation as `path:line: declared -> wanted` with the diff a fix
    /// would apply; exit 1 if there is any.
    #[arg(long)]
    pub check: bool,
    #[command(flatten)]
    pub target: Target,
    #[command(flatten)]
    pub format: FormatArg,
}

/// Runs `cargo xtask align-deps`: load the inputs, plan, judge, report
/// (see [`phases`]), each phase a function of the previous one's output.
///
/// # Errors
/// Anything that stops the command from running (exit 2): no manifest, a
/// malformed or unreadable manifest or policy (nothing is written), an I/O
/// error while writing (files already written are restored).
pub fn run(args: &Args, out: &mut dyn Write, err: &mut dyn Write) -> anyhow::Result<Outcome> {
    let mut timing = crate::timing::Timing::new("XTASK_ALIGN_TIMING");
    let inputs = phases::load(args, err, &mut timing)?;
    let planned = phases::plan(inputs)?;
    let judged = phases::judge(planned, &mut timing);
    phases::report(judged, args, out, err, &mut timing)
}

/// The members as the exemptions see them (names, manifests, source files).
fn exempt_view(
    meta: &cargo_metadata::Metadata,
    analyses: &[Analysis],
    root: &Path,
) -> exemption_use::Members {
    let rel = |p: &Path| crate::fsutil::rel(root, p);
    let mut m = exemption_use::Members::default();
    for p in meta.workspace_packages() {
        m.manifests
            .insert(p.name.to_string(), rel(p.manifest_path.as_std_path()));
    }
    for a in analyses {
        m.sources.insert(
            a.package.clone(),
            a.files.iter().map(|f| rel(&f.path)).collect(),
        );
        for (p, n) in &a.exempted {
            m.exempt_sources.insert(rel(p), *n);
        }
    }
    m
}

/// The plan for `loaded`'s members and `analyses` under `policy`: manifest
/// and source findings and edits, and the information lines.
fn plan_once(
    loaded: &mut Loaded,
    mut analyses: Vec<Analysis>,
    policy: &crate::policy::Policy,
    root: &Path,
) -> anyhow::Result<(AlignmentPlan, Vec<String>)> {
    // crates the migration would break stay as they are (e.g. on a renamed dependency)
    let (mut held, mut renamed_info) = SOURCE_MIGRATION.hold_renamed(&mut analyses, loaded, root);
    // nor crates whose fix would write outside the workspace
    let (outside, outside_info) = outside::hold(&mut analyses, root, SOURCE_MIGRATION.dependency());
    held.extend(outside);
    renamed_info.extend(outside_info);
    let all_members = loaded.members.clone();
    let manifests = &loaded.manifests;
    loaded
        .members
        .retain(|&i| !held.contains(&manifests[i].path));
    let planned = plan_members(loaded, analyses, policy, root);
    loaded.members = all_members;
    let (plan, mut info) = planned?;
    info.extend(renamed_info);
    Ok((plan, info))
}

fn plan_members(
    loaded: &Loaded,
    analyses: Vec<Analysis>,
    policy: &crate::policy::Policy,
    root: &Path,
) -> anyhow::Result<(AlignmentPlan, Vec<String>)> {
    let migration = SOURCE_MIGRATION;
    let (mut plan, new_forms) =
        planner::plan_with_new_users(loaded, policy, &migration.new_users(&analyses))?;
    let not_scanned: Vec<String> = analyses
        .iter()
        .flat_map(|a| {
            a.unresolved_modules.iter().map(|p| {
                // the actual reason, as fmt-check gives it
                let why = if p.is_file() {
                    "it holds an expression, not a list of items (it is include!d as an expression), so it holds no error type"
                } else {
                    "no such file (e.g. a module behind #[cfg])"
                };
                format!(
                    "{}: a module or include!d file of `{}` that was not scanned for {}: {why}",
                    crate::fsutil::rel(root, p),
                    a.package,
                    migration.title()
                )
            })
        })
        .collect();
    let (analyses, mut held_back) = migration.hold_back(analyses, &plan, root);
    held_back.extend(not_scanned);
    let source_plan = migration.plan(
        &analyses,
        loaded,
        new_forms.get(migration.dependency()),
        root,
    )?;
    plan.merge(source_plan)?;
    Ok((plan, held_back))
}

/// One `unsatisfiable` finding (at the policy's `version` value) per policy
/// dependency whose requirement no published version matches, and the
/// information lines for those that could not be told
/// ([`satisfiable::check`]).
fn requirement_findings(
    lp: &crate::policy::LoadedPolicy,
    root: &Path,
    lock: Option<&lockfile::LockText>,
) -> (Vec<plan::Finding>, Vec<String>) {
    let (mut findings, mut info) = (Vec::new(), Vec::new());
    let policy_rel = crate::fsutil::rel(root, &lp.path);
    for (name, rule) in &lp.policy.dependencies {
        match satisfiable::check(lock, name, &rule.req, &rule.version) {
            satisfiable::Answer::Yes => {}
            satisfiable::Answer::Unknown(why) => info.push(format!(
                "{}: could not confirm that crates.io has a {name} version matching \"{}\" ({why}); \
                 if it has none, cargo cannot resolve the workspace after a fix",
                lp.at_line(&rule.version_span),
                rule.version
            )),
            satisfiable::Answer::No(why) => {
                let (line, column) = crate::text::line_col(&lp.text, rule.version_span.start);
                findings.push(plan::Finding {
                    file: policy_rel.clone(),
                    line,
                    column,
                    rule: rule::Rule::Unsatisfiable.into(),
                    dependency: name.clone(),
                    key: None,
                    table: None,
                    found: format!("version = \"{}\"", rule.version),
                    wanted: format!("a requirement that a published {name} version matches"),
                    fixable: false,
                    message: format!(
                        "[dependencies.{name}] version = \"{}\": no published {name} version matches it ({why}); \
                         a fix would leave a workspace cargo cannot resolve, so align-deps writes nothing; fix the requirement in the policy",
                        rule.version
                    ),
                    fixed_in: None,
                });
            }
        }
    }
    (findings, info)
}

/// Every policy rule must be about a package the workspace declares: a rule
/// for a name no manifest declares (`[dependencies.thiserorr]`) is a typo or
/// a stale rule, and a policy without rules enforces nothing; both are exit 2
/// at the policy's line and column, before anything is planned or written.
fn check_rules_match(loaded: &Loaded, lp: &crate::policy::LoadedPolicy) -> anyhow::Result<()> {
    if lp.policy.dependencies.is_empty() {
        anyhow::bail!(
            "{}:1:1: the policy has no [dependencies.<name>] rule: align-deps has nothing to enforce; nothing written",
            lp.path.display()
        );
    }
    let mut declared = BTreeSet::new();
    for m in &loaded.manifests {
        let mut tables = m.dependency_tables();
        tables.extend(m.workspace_dependencies());
        for t in tables {
            for d in manifest::Decl::all(t.table) {
                declared.insert(d.package().to_string());
            }
        }
    }
    for (name, rule) in &lp.policy.dependencies {
        if !declared.contains(name) {
            let close: Vec<&String> = declared
                .iter()
                .filter(|d| d.replace('-', "_") == name.replace('-', "_") || similar(d, name))
                .collect();
            let hint = match close.first() {
                Some(c) => format!(" (did you mean `{c}`?)"),
                None => String::new(),
            };
            anyhow::bail!(
                "{}: [dependencies.{name}]: no manifest of the workspace declares the package `{name}`{hint}; \
                 fix the name or drop the rule; nothing written",
                lp.at(&rule.name_span)
            );
        }
    }
    Ok(())
}

/// Same length within one, and at most two characters differ in place or
/// one is dropped (a typo).
fn similar(a: &str, b: &str) -> bool {
    let (a, b): (Vec<char>, Vec<char>) = (a.chars().collect(), b.chars().collect());
    if a.len().abs_diff(b.len()) > 1 || a.len() < 3 {
        return false;
    }
    if a.len() == b.len() {
        return a.iter().zip(&b).filter(|(x, y)| x != y).count() <= 2;
    }
    let (long, short) = if a.len() > b.len() {
        (&a, &b)
    } else {
        (&b, &a)
    };
    (0..long.len()).any(|skip| {
        long.iter()
            .enumerate()
            .filter(|(i, _)| *i != skip)
            .map(|(_, c)| c)
            .eq(short.iter())
    })
}

/// `cargo metadata --no-deps --offline`; when cargo rejects a manifest, the
/// manifests named in its message are parsed to name the file, line and column.
fn load_metadata(manifest: &Path) -> anyhow::Result<cargo_metadata::Metadata> {
    match crate::workspace::metadata_no_deps(manifest) {
        Ok(m) => Ok(m),
        Err(e) => {
            let msg = format!("{e:#}");
            let mut candidates: Vec<PathBuf> = backticked(&msg)
                .into_iter()
                .map(PathBuf::from)
                .map(|p| if p.is_dir() { p.join("Cargo.toml") } else { p })
                .filter(|p| p.extension().is_some_and(|x| x == "toml"))
                .collect();
            candidates.push(manifest.to_path_buf());
            for p in candidates {
                if let Err(me) = Manifest::load(&p, Path::new("")) {
                    return Err(anyhow::anyhow!("{me}; nothing written\n\n{msg}"));
                }
            }
            Err(e.context("nothing written"))
        }
    }
}

/// The directory of `manifest`, absolute: where cargo will most likely put
/// the workspace root (a guess: a wrong one only makes the read-ahead miss).
fn presumed_root(manifest: &Path) -> Option<PathBuf> {
    let dir = manifest.parent()?;
    let dir = if dir.is_absolute() {
        dir.to_path_buf()
    } else {
        std::env::current_dir().ok()?.join(dir)
    };
    Some(crate::fsutil::normalize(&dir))
}

/// The `` `quoted` `` spans of a message.
fn backticked(msg: &str) -> Vec<&str> {
    msg.split('`').skip(1).step_by(2).collect()
}

/// Parses the root manifest and every member manifest (in parallel).
fn load_manifests(
    meta: &cargo_metadata::Metadata,
    root: &Path,
) -> anyhow::Result<(Loaded, BTreeSet<String>)> {
    use rayon::prelude::*;
    let root_manifest = root.join("Cargo.toml");
    let mut paths = vec![root_manifest.clone()];
    let mut seen = std::collections::HashSet::from([root_manifest.clone()]);
    let mut names = BTreeSet::new();
    for p in meta.workspace_packages() {
        names.insert(p.name.to_string());
        let mp = p.manifest_path.clone().into_std_path_buf();
        if seen.insert(mp.clone()) {
            paths.push(mp);
        }
    }
    let parsed: Vec<Result<Manifest, manifest::ManifestError>> =
        paths.par_iter().map(|p| Manifest::load(p, root)).collect();
    let mut manifests = Vec::with_capacity(parsed.len());
    let mut errors = Vec::new();
    for r in parsed {
        match r {
            Ok(m) => manifests.push(m),
            // `{:#}`: the message and its source (the I/O error), once each
            Err(e) => errors.push(format!("{:#}", anyhow::Error::new(e))),
        }
    }
    if !errors.is_empty() {
        anyhow::bail!("{}; nothing written", errors.join("\n"));
    }
    let index: std::collections::HashMap<&Path, usize> = manifests
        .iter()
        .enumerate()
        .map(|(i, m)| (m.path.as_path(), i))
        .collect();
    let members: Vec<usize> = meta
        .workspace_packages()
        .iter()
        .filter_map(|p| index.get(p.manifest_path.as_std_path()).copied())
        .collect();
    let root_idx = *index
        .get(root_manifest.as_path())
        .context("the root manifest was not read")?;
    drop(index);
    Ok((
        Loaded {
            manifests,
            root: root_idx,
            members,
        },
        names,
    ))
}
