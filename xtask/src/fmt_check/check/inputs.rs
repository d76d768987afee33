//! What the check reads before any rustfmt runs: every file's text, the
//! module files outside the workspace a `#[path]` reaches, and the unread
//! files nothing reaches.

use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};

use rayon::prelude::*;

use super::is_mod_rs;
use crate::fmt_check::files::FileInventory;
use crate::rust_src::modscan;

/// The module files outside the workspace directory that a `#[path]`
/// reaches from a checked file (and the modules below them), added to the
/// plan with their texts: cargo fmt formats them with the crate that reaches
/// them, so they are checked (but never written: see
/// [`super::verdict::OUTSIDE`]). Files inside the workspace are all in the walk
/// already (or excluded).
pub(super) fn add_outside_modules(
    plan: &mut FileInventory,
    texts: &mut Vec<Result<String, String>>,
) {
    let known: HashSet<PathBuf> = plan.files.iter().map(|f| f.path.clone()).collect();
    let roots: HashSet<&Path> = plan.crate_roots.iter().map(|r| r.path.as_path()).collect();
    let mut queue: Vec<(PathBuf, bool, String)> = Vec::new();
    for (f, t) in plan.files.iter().zip(texts.iter()) {
        let Ok(t) = t else { continue };
        if !may_have_path_attr(t.as_bytes()) {
            continue;
        }
        queue.push((f.path.clone(), is_mod_rs(&f.path, &roots), t.clone()));
    }
    let mut added: Vec<(PathBuf, Result<String, String>)> = Vec::new();
    let mut seen: HashSet<PathBuf> = HashSet::new();
    while let Some((path, mod_rs, text)) = queue.pop() {
        let inside = path.starts_with(&plan.root);
        for d in modscan::mod_decls(&text).unwrap_or_default() {
            // what rustfmt follows: not behind a skip, not inside a macro
            if d.skip || d.in_macro || (inside && d.path_attr.is_none()) {
                continue;
            }
            let Some((p, m)) = modscan::resolve(&path, mod_rs, &d)
                .into_iter()
                .find(|(p, _)| p.is_file())
            else {
                continue;
            };
            if p.starts_with(&plan.root) || known.contains(&p) || !seen.insert(p.clone()) {
                continue;
            }
            let read = std::fs::read_to_string(&p).map_err(|e| format!("cannot read: {e}"));
            if let Ok(t) = &read {
                queue.push((p.clone(), m, t.clone()));
            }
            added.push((p, read));
        }
    }
    if added.is_empty() {
        return;
    }
    for (path, text) in added {
        let rel = crate::fsutil::rel(&plan.root, &path);
        plan.files.push(crate::fmt_check::files::RsFile {
            path,
            rel,
            owner: None,
        });
        texts.push(text);
    }
    let mut order: Vec<usize> = (0..plan.files.len()).collect();
    order.sort_by(|&a, &b| plan.files[a].path.cmp(&plan.files[b].path));
    let mut files: Vec<Option<crate::fmt_check::files::RsFile>> = std::mem::take(&mut plan.files)
        .into_iter()
        .map(Some)
        .collect();
    let mut old: Vec<Option<Result<String, String>>> =
        std::mem::take(texts).into_iter().map(Some).collect();
    for i in order {
        plan.files.extend(files[i].take());
        texts.extend(old[i].take());
    }
}

/// Whether `text` may hold a `#[path = ..]` attribute: the word `path`
/// after `[` or `,` (whitespace aside; a `/` or non-ASCII byte there lets
/// it through). `false`: no `mod` item of it has one.
fn may_have_path_attr(text: &[u8]) -> bool {
    memchr::memmem::find_iter(text, b"path").any(|at| {
        let mut k = at;
        while k > 0 && text[k - 1].is_ascii_whitespace() {
            k -= 1;
        }
        k > 0 && matches!(text[k - 1], b'[' | b',' | b'/' | 0x80..=0xff)
    })
}

/// Files that cannot be read (an editor's lock file `.#lib.rs`, a dangling
/// link) and that nothing reaches: no target's root, no `mod` item of a
/// readable file. cargo fmt never opens them, so neither is their state an
/// error here: each gets a note. Value: why it cannot be read.
pub(super) fn unread_and_unreached(
    plan: &FileInventory,
    texts: &[Result<String, String>],
) -> BTreeMap<usize, String> {
    let mut unread: BTreeMap<usize, String> = texts
        .iter()
        .enumerate()
        .filter_map(|(i, t)| t.as_ref().err().map(|e| (i, e.clone())))
        .collect();
    if unread.is_empty() {
        return unread;
    }
    let roots: HashSet<&Path> = plan.crate_roots.iter().map(|r| r.path.as_path()).collect();
    let mut reached: HashSet<PathBuf> = roots.iter().map(|p| p.to_path_buf()).collect();
    for (f, t) in plan.files.iter().zip(texts) {
        let Ok(t) = t else { continue };
        if !modscan::may_declare_modules(t.as_bytes()) {
            continue;
        }
        let mod_rs = is_mod_rs(&f.path, &roots);
        for d in modscan::mod_decls(t).unwrap_or_default() {
            reached.extend(
                modscan::resolve(&f.path, mod_rs, &d)
                    .into_iter()
                    .map(|c| c.0),
            );
        }
    }
    unread.retain(|&i, _| !reached.contains(&plan.files[i].path));
    unread
}

/// Every file's text, or why it cannot be read.
pub(super) fn read_texts(plan: &FileInventory) -> Vec<Result<String, String>> {
    plan.files
        .par_iter()
        .map(|f| match std::fs::read(&f.path) {
            Ok(b) => String::from_utf8(b)
                .map_err(|_| "not valid UTF-8; rustfmt cannot read it".to_string()),
            Err(e) if f.path.is_symlink() => Err(format!(
                "a symbolic link that does not resolve (dangling, or a loop): {e}"
            )),
            Err(e) => Err(format!("cannot read: {e}")),
        })
        .collect()
}
