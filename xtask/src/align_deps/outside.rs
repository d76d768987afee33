//! One rule for files outside the workspace: align-deps never writes them.
//!
//! A `#[path = "../../shared/errors.rs"]` module may lie outside the
//! workspace root. Writing it would put a path the journal cannot vouch for
//! into the journal (recovery only trusts files reached through paths inside
//! the workspace), so a run killed mid-replace would leave every later
//! command refusing its own journal. Instead a crate whose source fix would
//! write such a file is left untouched as a whole (its manifest too: moving
//! it to the new major without its sources would break its build), and every
//! finding of its files needs a person.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use super::migration::Analysis;

/// Whether `path` lies outside the workspace at `root`: its path relative to
/// the root leaves it (`..`) or is not relative at all.
pub fn is_outside(root: &Path, path: &Path) -> bool {
    !crate::fsutil::is_inside_rel(&crate::fsutil::rel(root, path))
}

/// Holds the crates of `analyses` whose source fix would write a file
/// outside the workspace: their fixes are dropped, their findings made ones
/// that need a person; returns their manifests (to take out of the manifest
/// plan) and an information line for each (`dependency`: the migrated one).
pub fn hold(
    analyses: &mut [Analysis],
    root: &Path,
    dependency: &str,
) -> (BTreeSet<PathBuf>, Vec<String>) {
    let mut held = BTreeSet::new();
    let mut info = Vec::new();
    for a in analyses.iter_mut() {
        let outside: Vec<String> = a
            .files
            .iter()
            .filter(|f| f.analysis.fixed_text.is_some() && is_outside(root, &f.path))
            .map(|f| crate::fsutil::normalize(&f.path).display().to_string())
            .collect();
        if outside.is_empty() {
            continue;
        }
        held.insert(a.manifest_path.clone());
        for f in &mut a.files {
            f.analysis.fixed_text = None;
        }
        for f in &mut a.findings {
            if f.fixable {
                f.fixable = false;
                if is_outside(root, &f.path) {
                    f.message = format!(
                        "{}; not fixed: the file is outside the workspace, and align-deps never writes outside it",
                        f.message
                    );
                }
            }
        }
        info.push(format!(
            "{}: `{}` is left untouched (its {dependency} declarations and sources): its fix would rewrite {}, outside the workspace, \
             and align-deps never writes outside the workspace; fix that file by hand (or run align-deps in the workspace that holds it), then run align-deps again",
            crate::fsutil::rel(root, &a.manifest_path),
            a.package,
            outside.join(", ")
        ));
    }
    (held, info)
}
