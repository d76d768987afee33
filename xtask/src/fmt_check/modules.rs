//! What stops `cargo fmt` before it formats a crate: a `mod name;` that
//! leads to no file (`name.rs` and `name/mod.rs` both absent, e.g. a module
//! behind `#[cfg]` whose file is not in the tree, or a directory without a
//! `mod.rs`). rustfmt resolves every such item it reaches from a crate root
//! (also under `#[cfg]` and inside `cfg_if!`, not inside other macros) and
//! fails on the first it cannot (`failed to resolve mod`), so `cargo fmt
//! --check` exits 1; fmt-check names each one (exit 1).

use std::collections::HashSet;
use std::path::PathBuf;

use super::files::FileInventory;
use crate::rust_src::modscan;

/// A `mod name;` with no file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unresolved {
    /// The declaring file, relative to the root.
    pub file: String,
    /// 1-based line of the declaration.
    pub line: usize,
    /// The module name as written.
    pub name: String,
    /// The files rustc would take it from, relative to the root.
    pub candidates: Vec<String>,
}

impl Unresolved {
    /// One line for a person.
    pub fn message(&self) -> String {
        format!(
            "`mod {};` leads to no file ({} absent): cargo fmt stops on it (\"failed to resolve mod\"), \
             as the build does; add the file, or remove or fix the declaration",
            self.name,
            self.candidates.join(" and ")
        )
    }
}

/// Every `mod name;` reachable from the crate roots that leads to no file,
/// in file and line order. `text_of(i)` is the text of `plan.files[i]` when
/// it was read; other files (excluded ones) are read here.
pub fn unresolved<'t>(
    plan: &FileInventory,
    text_of: impl Fn(usize) -> Option<&'t str>,
) -> Vec<Unresolved> {
    let mut out = Vec::new();
    let mut seen: HashSet<PathBuf> = HashSet::new();
    let mut queue: Vec<(PathBuf, bool)> = plan
        .crate_roots
        .iter()
        .map(|r| (r.path.clone(), true))
        .collect();
    while let Some((path, mod_rs)) = queue.pop() {
        if !seen.insert(path.clone()) {
            continue;
        }
        let owned;
        let text = match plan.file_index(&path).and_then(&text_of) {
            Some(t) => t,
            None => match std::fs::read_to_string(&path) {
                Ok(t) => {
                    owned = t;
                    owned.as_str()
                }
                Err(_) => continue,
            },
        };
        if !modscan::may_declare_modules(text.as_bytes()) {
            continue;
        }
        for d in modscan::mod_decls(text).unwrap_or_default() {
            if d.in_macro || d.skip {
                continue;
            }
            let candidates = modscan::resolve(&path, mod_rs, &d);
            match candidates.iter().find(|(p, _)| p.is_file()) {
                Some((p, m)) => queue.push((p.clone(), *m)),
                None => out.push(Unresolved {
                    file: crate::fsutil::rel(&plan.root, &path),
                    line: d.line,
                    name: d.name.clone(),
                    candidates: candidates
                        .iter()
                        .map(|(p, _)| crate::fsutil::rel(&plan.root, p))
                        .collect(),
                }),
            }
        }
    }
    out.sort_by(|a, b| (&a.file, a.line).cmp(&(&b.file, b.line)));
    out
}
