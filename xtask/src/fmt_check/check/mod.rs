//! The check itself: which rustfmt run formats which file, and the verdicts.
//!
//! Pass 1 does what `cargo fmt --all` does: every member target's root in
//! file mode, so rustfmt follows `mod` declarations and each module file gets
//! its crate root's edition and config, exactly as with `cargo fmt`. Pass 2
//! formats every file pass 1 did not reach (`include!`d files, modules
//! declared inside macros, stray files) on its own, with its owning package's
//! edition and the config rustfmt picks from the file's own directory.
//! Files behind `#[rustfmt::skip] mod` are left alone, as `cargo fmt` leaves them.

use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};

use rayon::prelude::*;

use super::batch::{BatchResult, run_batch};
use super::files::{ConfigRef, ConfigResolver, FileInventory};
use super::rustfmt::{Mode, Rustfmt, looks_like_rustfmt_output};
use crate::rust_src::modscan;

mod inputs;
mod verdict;

use inputs::{add_outside_modules, read_texts, unread_and_unreached};

use verdict::reports;
pub use verdict::{FileReport, Verdict, Via};

/// Where a file's edition came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EditionSource {
    /// The package that owns the file (or whose crate root reaches it).
    Package(String),
    /// Outside any package: the root manifest's `[workspace.package] edition`.
    WorkspaceDefault,
    /// Outside any package, no workspace default: the `edition` of its rustfmt config.
    RustfmtConfig,
    /// Outside any package, nothing set: 2015, cargo's and rustfmt's default.
    Fallback,
}

/// Least source bytes per pass-1 rustfmt process when a group is split.
const MIN_UNIT_BYTES: u64 = 64 * 1024;

/// Pass 1 groups crate roots by (edition, config path).
type UnitKey = (String, Option<PathBuf>);

/// One pass-1 rustfmt process.
struct Unit {
    edition: String,
    config: ConfigRef,
    /// (crate root, package index)
    roots: Vec<(PathBuf, usize)>,
    weight: u64,
}

/// Pass 2 batches share (edition, config path).
type BatchKey = (String, Option<PathBuf>);

struct Assigned {
    /// `Ok(None)`: rustfmt says the file is formatted; `Ok(Some(text))`: what
    /// it should be; `Err`: rustfmt's message.
    formatted: Result<Option<String>, String>,
    edition: String,
    edition_source: EditionSource,
    config: ConfigRef,
    via: Via,
    /// Why `--fix` must not write it (a person must format it).
    needs_person: Option<String>,
}

impl Assigned {
    fn key(&self) -> (&str, Option<&Path>) {
        (
            &self.edition,
            self.config.as_ref().map(|c| c.path.as_path()),
        )
    }

    /// "edition 2021 (crate `a`, rustfmt.toml)" for messages.
    fn describe(&self, root: &Path) -> String {
        let krate = match &self.edition_source {
            EditionSource::Package(p) => format!("crate `{p}`, "),
            _ => String::new(),
        };
        let config = self.config.as_ref().map_or_else(
            || "default config".to_string(),
            |c| crate::fsutil::rel(root, &c.path),
        );
        format!("edition {} ({krate}{config})", self.edition)
    }

    /// The newline style its config sets.
    pub(super) fn style(&self) -> super::files::NewlineStyle {
        self.config
            .as_ref()
            .map_or(super::files::NewlineStyle::Auto, |c| c.newline_style)
    }
}

/// A warning rustfmt printed, with the config of the run that printed it.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct RustfmtWarning {
    /// The config passed to that run (`None`: rustfmt's own lookup).
    pub config: Option<PathBuf>,
    /// The warning, without `Warning: `.
    pub text: String,
}

/// What a check found: every file's verdict, and rustfmt's warnings (each once).
#[derive(Debug, Default)]
pub struct CheckResult {
    /// The verdicts, in `plan.files` order.
    pub reports: Vec<FileReport>,
    /// rustfmt's warnings, deduplicated, sorted.
    pub warnings: Vec<RustfmtWarning>,
}

/// Runs rustfmt over the plan. Reports come in `plan.files` order.
///
/// Each batch is one rustfmt run that gives both the verdict and the
/// formatted text ([`Mode::Emit`]); only when some file's text holds lines
/// that look like rustfmt's own output is the check done the slower way
/// ([`Mode::Check`], then one stdin run per unformatted file), so that no
/// file's text can be mistaken for the output's structure.
///
/// # Errors
/// rustfmt cannot be started, or a rustfmt config is malformed.
pub fn check(
    rustfmt: &Rustfmt,
    plan: &mut FileInventory,
    configs: &mut ConfigResolver,
    notes: &mut Vec<String>,
    timing: &mut crate::timing::Timing,
) -> anyhow::Result<CheckResult> {
    let mut texts = read_texts(plan);
    add_outside_modules(plan, &mut texts);
    let plan: &FileInventory = plan;
    timing.mark("read files");
    let mode = if texts
        .par_iter()
        .any(|t| t.as_deref().is_ok_and(looks_like_rustfmt_output))
    {
        Mode::Check
    } else {
        Mode::Emit
    };
    let mut run = Run {
        rustfmt,
        plan,
        texts: &texts,
        mode,
        assigned: (0..plan.files.len()).map(|_| None).collect(),
        also: Vec::new(),
        to_format: Vec::new(),
        warnings: std::collections::BTreeSet::new(),
    };
    let units = pass1_units(plan, &texts, configs)?;
    run.pass1(&units)?;
    timing.mark("pass 1 (crate roots, as cargo fmt)");
    note_config_divergence(plan, &run.assigned, configs, notes)?;

    // Files behind `#[rustfmt::skip] mod`: cargo fmt never formats them.
    let skipped = skipped_files(plan, &texts);
    let pending = pass2_pending(plan, &run.assigned, &skipped, &texts, configs)?;
    run.pass2(pending)?;
    run.format_unformatted()?;
    run.reconcile()?;
    timing.mark("pass 2 (files cargo fmt does not reach)");
    let warnings = run.warnings.into_iter().collect();
    let not_read = unread_and_unreached(plan, &texts);
    Ok(CheckResult {
        reports: reports(plan, &texts, run.assigned, &skipped, &not_read),
        warnings,
    })
}

/// Pass 1's rustfmt processes: cargo fmt's inputs. Roots sharing (edition,
/// config) are packed into at most `threads` rustfmt processes, balanced by
/// package size: few spawns (cargo fmt spawns one per edition) and every
/// core busy.
fn pass1_units(
    plan: &FileInventory,
    texts: &[Result<String, String>],
    configs: &mut ConfigResolver,
) -> anyhow::Result<Vec<Unit>> {
    let mut weight = vec![0u64; plan.packages.len()];
    for (f, t) in plan.files.iter().zip(texts) {
        if let (Some(o), Ok(t)) = (f.owner, t) {
            weight[o] += t.len() as u64;
        }
    }
    let mut keyed: BTreeMap<UnitKey, (ConfigRef, BTreeMap<usize, Vec<PathBuf>>)> = BTreeMap::new();
    for r in &plan.crate_roots {
        let config = configs.for_dir(r.path.parent().unwrap_or(&plan.root))?;
        let key = (r.edition.clone(), config.as_ref().map(|c| c.path.clone()));
        let entry = keyed
            .entry(key)
            .or_insert_with(|| (config, BTreeMap::new()));
        entry.1.entry(r.package).or_default().push(r.path.clone());
    }
    let threads = rayon::current_num_threads().max(1);
    let mut units: Vec<Unit> = Vec::new();
    for ((edition, _), (config, packages)) in keyed {
        let mut pkgs: Vec<(usize, Vec<PathBuf>)> = packages.into_iter().collect();
        pkgs.sort_by_key(|(p, _)| (std::cmp::Reverse(weight[*p]), *p));
        // A rustfmt start costs about what formatting ~20 KB does: split only
        // where every process gets a real share of the work.
        let total: u64 = pkgs.iter().map(|(p, _)| weight[*p]).sum();
        let worth = usize::try_from(total / MIN_UNIT_BYTES)
            .unwrap_or(usize::MAX)
            .max(1);
        let bins = threads.min(pkgs.len()).min(worth);
        let first = units.len();
        for _ in 0..bins {
            units.push(Unit {
                edition: edition.clone(),
                config: config.clone(),
                roots: Vec::new(),
                weight: 0,
            });
        }
        for (pkg, roots) in pkgs {
            let bin = (first..first + bins)
                .min_by_key(|&b| (units[b].weight, b))
                .unwrap_or(first);
            units[bin].weight += weight[pkg];
            units[bin].roots.extend(roots.into_iter().map(|r| (r, pkg)));
        }
    }
    Ok(units)
}

/// Files without out-of-line modules can share a rustfmt process (file mode
/// follows modules, so the others go through stdin one by one): the batches
/// by (edition, config) and the singles, as indices into `pending`.
fn pass2_batches(
    pending: &[Pending],
    texts: &[Result<String, String>],
) -> (BTreeMap<BatchKey, Vec<usize>>, Vec<usize>) {
    let mut batches: BTreeMap<BatchKey, Vec<usize>> = BTreeMap::new();
    let mut singles = Vec::new();
    for (k, (i, edition, _, config)) in pending.iter().enumerate() {
        let text = texts[*i].as_deref().unwrap_or("");
        let no_mods =
            !text.contains("mod") || modscan::mod_decls(text).is_some_and(|d| d.is_empty());
        if no_mods {
            batches
                .entry((edition.clone(), config.as_ref().map(|c| c.path.clone())))
                .or_default()
                .push(k);
        } else {
            singles.push(k);
        }
    }
    (batches, singles)
}

/// The files pass 1 did not reach and that are not skipped, each with the
/// edition and config it is formatted with on its own.
fn pass2_pending(
    plan: &FileInventory,
    assigned: &[Option<Assigned>],
    skipped: &BTreeMap<usize, String>,
    texts: &[Result<String, String>],
    configs: &mut ConfigResolver,
) -> anyhow::Result<Vec<Pending>> {
    let mut pending: Vec<Pending> = Vec::new();
    for (i, f) in plan.files.iter().enumerate() {
        if assigned[i].is_some() || skipped.contains_key(&i) || texts[i].is_err() {
            continue;
        }
        let config = configs.for_dir(f.path.parent().unwrap_or(&plan.root))?;
        let (edition, source) = match f.owner {
            Some(o) => (
                plan.packages[o].edition.clone(),
                EditionSource::Package(plan.packages[o].name.clone()),
            ),
            None => match (
                &plan.default_edition,
                config.as_ref().and_then(|c| c.edition.clone()),
            ) {
                (Some(e), _) => (e.clone(), EditionSource::WorkspaceDefault),
                (None, Some(e)) => (e, EditionSource::RustfmtConfig),
                (None, None) => ("2015".to_string(), EditionSource::Fallback),
            },
        };
        pending.push((i, edition, source, config));
    }
    Ok(pending)
}

/// A pass-2 file: (file index, edition, where the edition came from, config).
type Pending = (usize, String, EditionSource, ConfigRef);

/// The state of one check: who formats which file, and which files need
/// their formatted text.
struct Run<'a> {
    rustfmt: &'a Rustfmt,
    plan: &'a FileInventory,
    texts: &'a [Result<String, String>],
    /// How batches run.
    mode: Mode,
    assigned: Vec<Option<Assigned>>,
    /// Further pass-1 runs that reached a file with another edition or
    /// config (a `#[path]` module of two crates): (file, that run).
    also: Vec<(usize, Assigned)>,
    /// [`Mode::Check`]: files rustfmt found unformatted: (file, the directory
    /// rustfmt ran its config lookup from, which run: `None` the file's
    /// first, `Some(k)` `also[k]`) for the stdin pass that gets their
    /// formatted text.
    to_format: Vec<(usize, PathBuf, Option<usize>)>,
    /// rustfmt's warnings, each once.
    warnings: std::collections::BTreeSet<RustfmtWarning>,
}

impl Run<'_> {
    /// Runs the pass-1 units and assigns every file they reach.
    fn pass1(&mut self, units: &[Unit]) -> anyhow::Result<()> {
        let (plan, rustfmt, mode) = (self.plan, self.rustfmt, self.mode);
        let mut by_weight: Vec<usize> = (0..units.len()).collect();
        by_weight.sort_by_key(|&u| std::cmp::Reverse(units[u].weight));
        let mut pass1: Vec<(usize, anyhow::Result<BatchResult>)> = by_weight
            .par_iter()
            .with_max_len(1)
            .map(|&u| {
                let unit = &units[u];
                let roots: Vec<PathBuf> = unit.roots.iter().map(|(r, _)| r.clone()).collect();
                let cfg = unit.config.as_ref().map(|c| c.path.as_path());
                (
                    u,
                    run_batch(rustfmt, &plan.root, Some(&unit.edition), cfg, &roots, mode),
                )
            })
            .collect();
        pass1.sort_by_key(|(u, _)| *u); // deterministic merge order
        for (u, checked) in pass1 {
            let unit = &units[u];
            let mut checked = checked?;
            self.keep_warnings(&unit.config, std::mem::take(&mut checked.warnings));
            let crashed = checked.crashed.iter().map(|(p, m)| (p, Err(m.clone())));
            let reached = checked.reached.iter().map(|p| (p, Ok(())));
            for (path, crash) in crashed.chain(reached) {
                let Some(i) = plan.file_index(path) else {
                    continue;
                };
                // reached again, by a crate root of another edition or config:
                // cargo fmt checks it once per crate, so every one counts
                let again = match &self.assigned[i] {
                    None => false,
                    Some(a) => {
                        let key = (
                            unit.edition.as_str(),
                            unit.config.as_ref().map(|c| c.path.as_path()),
                        );
                        if a.key() == key
                            || self.also.iter().any(|(j, b)| *j == i && b.key() == key)
                        {
                            continue;
                        }
                        true
                    }
                };
                // the root whose directory holds the file most closely
                let (root, pkg) = unit
                    .roots
                    .iter()
                    .filter(|(r, _)| path.starts_with(r.parent().unwrap_or(r)))
                    .max_by_key(|(r, _)| r.components().count())
                    .unwrap_or(&unit.roots[0]);
                let formatted = match crash {
                    Err(m) => Err(m),
                    Ok(()) => Ok(checked.texts.remove(path)),
                };
                let slot = again.then_some(self.also.len());
                if checked.differ.contains(path) {
                    self.to_format.push((
                        i,
                        root.parent().unwrap_or(&plan.root).to_path_buf(),
                        slot,
                    ));
                }
                let a = Assigned {
                    formatted,
                    edition: unit.edition.clone(),
                    edition_source: EditionSource::Package(plan.packages[*pkg].name.clone()),
                    config: unit.config.clone(),
                    via: Via::CrateRoot(root.clone()),
                    needs_person: None,
                };
                if again {
                    self.also.push((i, a));
                } else {
                    self.assigned[i] = Some(a);
                }
            }
        }
        Ok(())
    }

    fn keep_warnings(&mut self, config: &ConfigRef, warnings: Vec<String>) {
        let config = config.as_ref().map(|c| c.path.clone());
        self.warnings
            .extend(warnings.into_iter().map(|text| RustfmtWarning {
                config: config.clone(),
                text,
            }));
    }

    /// Formats the `pending` files on their own: in batches where they
    /// declare no modules, else (and where a batch failed) one by one.
    fn pass2(&mut self, pending: Vec<Pending>) -> anyhow::Result<()> {
        let (plan, rustfmt, texts, mode) = (self.plan, self.rustfmt, self.texts, self.mode);
        let (batches, mut singles) = pass2_batches(&pending, texts);
        let threads = rayon::current_num_threads().max(1);
        let chunk = (pending.len() / (threads * 4)).clamp(8, 128);
        let jobs: Vec<(&BatchKey, &[usize])> = batches
            .iter()
            .flat_map(|(key, ks)| ks.chunks(chunk).map(move |c| (key, c)))
            .collect();
        let pass2: Vec<anyhow::Result<BatchResult>> = jobs
            .par_iter()
            .with_max_len(1)
            .map(|((edition, config), ks)| {
                let files: Vec<PathBuf> = ks
                    .iter()
                    .map(|&k| plan.files[pending[k].0].path.clone())
                    .collect();
                run_batch(
                    rustfmt,
                    &plan.root,
                    Some(edition),
                    config.as_deref(),
                    &files,
                    mode,
                )
            })
            .collect();
        let mut reached: HashSet<usize> = HashSet::new();
        let mut differ: HashSet<usize> = HashSet::new();
        let mut emitted: BTreeMap<usize, Result<String, String>> = BTreeMap::new();
        for (r, (_, ks)) in pass2.into_iter().zip(&jobs) {
            let mut checked = r?;
            let config = ks.first().and_then(|&k| pending[k].3.clone());
            self.keep_warnings(&config, std::mem::take(&mut checked.warnings));
            for (path, crash) in &checked.crashed {
                if let Some(i) = plan.file_index(path) {
                    reached.insert(i);
                    emitted.insert(i, Err(crash.clone()));
                }
            }
            for path in &checked.reached {
                if let Some(i) = plan.file_index(path) {
                    reached.insert(i);
                    if checked.differ.contains(path) {
                        differ.insert(i);
                    }
                    if let Some(t) = checked.texts.remove(path) {
                        emitted.insert(i, Ok(t));
                    }
                }
            }
        }
        for (k, (i, ..)) in pending.iter().enumerate() {
            if !reached.contains(i) && !singles.contains(&k) {
                singles.push(k); // failed in a batch: redo alone for its own message
            }
        }
        let single_results: Vec<anyhow::Result<(usize, super::rustfmt::Formatted)>> = singles
            .par_iter()
            .with_max_len(1)
            .map(|&k| {
                let (i, edition, _, config) = &pending[k];
                let f = &plan.files[*i];
                let dir = f.path.parent().unwrap_or(&plan.root);
                let cfg = config.as_ref().map(|c| c.path.as_path());
                let r = rustfmt.format_text(
                    dir,
                    Some(edition),
                    cfg,
                    texts[*i].as_deref().unwrap_or(""),
                    &f.rel,
                )?;
                Ok((k, r))
            })
            .collect();
        let mut single_map: BTreeMap<usize, Result<String, String>> = BTreeMap::new();
        for r in single_results {
            let (k, res) = r?;
            self.keep_warnings(&pending[k].3, res.warnings);
            single_map.insert(k, res.result);
        }
        for (k, (i, edition, source, config)) in pending.into_iter().enumerate() {
            let formatted = match single_map.remove(&k).or_else(|| emitted.remove(&i)) {
                Some(r) => r.map(Some),
                None => {
                    if differ.contains(&i) {
                        self.to_format.push((
                            i,
                            plan.files[i].path.parent().unwrap_or(&plan.root).into(),
                            None,
                        ));
                    }
                    Ok(None)
                }
            };
            self.assigned[i] = Some(Assigned {
                formatted,
                edition,
                edition_source: source,
                config,
                via: Via::Standalone,
                needs_person: None,
            });
        }

        Ok(())
    }

    /// The formatted text of every file rustfmt found unformatted, one file
    /// through stdin each, with the edition and config its check used.
    fn format_unformatted(&mut self) -> anyhow::Result<()> {
        let (plan, rustfmt, texts, assigned, also) = (
            self.plan,
            self.rustfmt,
            self.texts,
            &self.assigned,
            &self.also,
        );
        let texts_of: Vec<anyhow::Result<(usize, super::rustfmt::Formatted)>> = self
            .to_format
            .par_iter()
            .with_max_len(1)
            .enumerate()
            .map(|(k, (i, dir, slot))| {
                let a = match slot {
                    Some(s) => &also[*s].1,
                    None => assigned[*i].as_ref().expect("assigned before formatting"),
                };
                let cfg = a.config.as_ref().map(|c| c.path.as_path());
                let r = rustfmt.format_text(
                    dir,
                    Some(&a.edition),
                    cfg,
                    texts[*i].as_deref().unwrap_or(""),
                    &plan.files[*i].rel,
                )?;
                Ok((k, r))
            })
            .collect();
        for r in texts_of {
            let (k, res) = r?;
            let (i, _, slot) = &self.to_format[k];
            let a = match slot {
                Some(s) => Some(&mut self.also[*s].1),
                None => self.assigned[*i].as_mut(),
            };
            if let Some(a) = a {
                a.formatted = res.result.map(Some);
                let config = a.config.clone();
                self.keep_warnings(&config, res.warnings);
            }
        }
        Ok(())
    }

    /// A file that crate roots of several editions or configs reach must
    /// satisfy each (cargo fmt checks it once per crate). Unformatted for
    /// one is unformatted; the fix is the first run's text that every other
    /// run keeps as it is (checked through stdin); when there is none (2021
    /// and 2024 sort `use` lists differently), the file needs a person:
    /// reported, never written.
    fn reconcile(&mut self) -> anyhow::Result<()> {
        let mut by_file: BTreeMap<usize, Vec<Assigned>> = BTreeMap::new();
        for (i, a) in std::mem::take(&mut self.also) {
            by_file.entry(i).or_default().push(a);
        }
        for (i, extra) in by_file {
            let Ok(text) = &self.texts[i] else { continue };
            let Some(first) = self.assigned[i].take() else {
                continue;
            };
            let mut runs = vec![first];
            runs.extend(extra);
            let verdicts: Vec<Option<String>> = runs
                .iter()
                .map(|a| match &a.formatted {
                    Ok(Some(f)) => match verdict::verdict(text, f, a.style()) {
                        Verdict::Unformatted { fixed, .. } => Some(fixed),
                        _ => None,
                    },
                    _ => None,
                })
                .collect();
            if let Some(k) = runs.iter().position(|a| a.formatted.is_err()) {
                let mut a = runs.swap_remove(k);
                let with = a.describe(&self.plan.root);
                if let Err(m) = &mut a.formatted {
                    *m = format!("with {with}: {m}");
                }
                self.assigned[i] = Some(a);
                continue;
            }
            if verdicts.iter().all(Option::is_none) {
                self.assigned[i] = Some(runs.swap_remove(0));
                continue;
            }
            let mut chosen = None;
            for (k, fixed) in verdicts.iter().enumerate() {
                let Some(fixed) = fixed else { continue };
                let mut all = true;
                for (j, b) in runs.iter().enumerate() {
                    if j == k || !all {
                        continue;
                    }
                    let dir = match &b.via {
                        Via::CrateRoot(r) => r.parent().unwrap_or(&self.plan.root),
                        Via::Standalone => &self.plan.root,
                    };
                    let cfg = b.config.as_ref().map(|c| c.path.as_path());
                    let out = self.rustfmt.format_text(
                        dir,
                        Some(&b.edition),
                        cfg,
                        fixed,
                        &self.plan.files[i].rel,
                    )?;
                    all = out.result.is_ok_and(|o| {
                        verdict::verdict(fixed, &o, b.style()) == Verdict::Formatted
                    });
                }
                if all {
                    chosen = Some(k);
                    break;
                }
            }
            let needs_person = chosen.is_none().then(|| {
                let who: Vec<String> = runs
                    .iter()
                    .map(|a| a.describe(&self.plan.root))
                    .collect();
                format!(
                    "it is a module of crates formatted with {}, which format it differently, and no text rustfmt gives satisfies every one: \
                     fmt-check --fix does not write it; format it by hand into a form each accepts (cargo fmt checks it once per crate)",
                    who.join(" and ")
                )
            });
            let k =
                chosen.unwrap_or_else(|| verdicts.iter().position(Option::is_some).unwrap_or(0));
            let mut a = runs.swap_remove(k);
            a.needs_person = needs_person;
            self.assigned[i] = Some(a);
        }
        Ok(())
    }
}

/// Files `cargo fmt` never formats: the targets of `#[rustfmt::skip] mod x;`
/// and every module below them; a file whose inner attributes hold a skip
/// (`#![rustfmt::skip]`, `#![cfg_attr(rustfmt, rustfmt_skip)]`) and, when it
/// is not a crate root, every module below it (rustfmt reaches those only
/// through it; a crate root's own modules are still formatted, as rustfmt
/// 1.9 does). Value: why (for the report).
fn skipped_files(
    plan: &FileInventory,
    texts: &[Result<String, String>],
) -> BTreeMap<usize, String> {
    let roots: HashSet<&Path> = plan.crate_roots.iter().map(|r| r.path.as_path()).collect();
    let mut out = BTreeMap::new();
    let mut queue: Vec<(PathBuf, bool, String)> = Vec::new();
    for (i, f) in plan.files.iter().enumerate() {
        let Ok(text) = &texts[i] else { continue };
        if !(text.contains("rustfmt::skip") || text.contains("rustfmt_skip")) {
            continue;
        }
        let mod_rs = is_mod_rs(&f.path, &roots);
        if modscan::inner_skip(text) {
            let why = format!("an inner skip attribute (`#![rustfmt::skip]`) in {}", f.rel);
            out.insert(i, why.clone());
            if !roots.contains(f.path.as_path()) {
                for d in modscan::mod_decls(text).unwrap_or_default() {
                    for (p, m) in modscan::resolve(&f.path, mod_rs, &d) {
                        queue.push((p, m, why.clone()));
                    }
                }
                continue;
            }
        }
        for d in modscan::mod_decls(text)
            .unwrap_or_default()
            .into_iter()
            .filter(|d| d.skip)
        {
            let why = format!("`#[rustfmt::skip] mod {}` in {}", d.name, f.rel);
            for (p, m) in modscan::resolve(&f.path, mod_rs, &d) {
                queue.push((p, m, why.clone()));
            }
        }
    }
    while let Some((path, mod_rs, why)) = queue.pop() {
        let Some(i) = plan.file_index(&path) else {
            continue;
        };
        if out.contains_key(&i) {
            continue;
        }
        out.insert(i, why.clone());
        if let Ok(text) = &texts[i] {
            for d in modscan::mod_decls(text).unwrap_or_default() {
                for (p, m) in modscan::resolve(&path, mod_rs, &d) {
                    queue.push((p, m, why.clone()));
                }
            }
        }
    }
    out
}

fn is_mod_rs(path: &Path, roots: &HashSet<&Path>) -> bool {
    roots.contains(path)
        || path
            .file_name()
            .is_some_and(|n| n == "mod.rs" || n == "lib.rs" || n == "main.rs")
}

/// `cargo fmt` gives every module its crate root's config; rustfmt on the file
/// alone (and editors) would pick the config nearest the file. Say so where
/// the two differ, so nobody is surprised that a deeper rustfmt.toml "does nothing".
fn note_config_divergence(
    plan: &FileInventory,
    assigned: &[Option<Assigned>],
    configs: &mut ConfigResolver,
    notes: &mut Vec<String>,
) -> anyhow::Result<()> {
    let mut seen = BTreeMap::new();
    for (i, a) in assigned.iter().enumerate() {
        let Some(a) = a else { continue };
        let f = &plan.files[i];
        let nearest = configs.for_dir(f.path.parent().unwrap_or(&plan.root))?;
        let used = a.config.as_ref().map(|c| c.path.clone());
        let near = nearest.as_ref().map(|c| c.path.clone());
        if used != near {
            seen.entry(near)
                .or_insert_with(Vec::new)
                .push((f.rel.clone(), used));
        }
    }
    for (near, files) in seen {
        let near = near.map_or_else(
            || "rustfmt's defaults".to_string(),
            |p| crate::fsutil::rel(&plan.root, &p),
        );
        let (first, used) = &files[0];
        let used = used.as_ref().map_or_else(
            || "rustfmt's defaults".to_string(),
            |p| crate::fsutil::rel(&plan.root, p),
        );
        notes.push(format!(
            "{near} does not apply to {first}{}: cargo fmt formats it as a module of its crate root, with {used}; fmt-check agrees with cargo fmt",
            if files.len() > 1 { format!(" and {} more", files.len() - 1) } else { String::new() }
        ));
    }
    Ok(())
}
