//! The all-or-nothing edit plan of every xtask command that writes files
//! (`align-deps`' manifest and source fixes, `fmt-check --fix`).
//!
//! A [`WriteSet`] holds, per file, the [`Splice`]s to make. Splices are byte
//! ranges of the file's text *as it was read*, so two planners that looked at
//! the same file can merge their work; overlapping splices are a conflict (an
//! error, nothing written). Nothing touches the disk until
//! [`WriteSet::apply_with`], which validates every new `.toml` and `.rs` text
//! and hands the files to [`crate::journal::txn`] (links, read-only files,
//! concurrent edits, the journal).

use std::collections::BTreeMap;
use std::ops::Range;
use std::path::{Path, PathBuf};

use anyhow::{Context as _, bail};

use crate::text::line_col;

/// Replace the bytes `range` of the original text with `text` (an insertion
/// when the range is empty).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Splice {
    /// Byte range in the text as read.
    pub range: Range<usize>,
    /// The replacement.
    pub text: String,
}

impl Splice {
    /// Replace `range` with `text`.
    pub fn replace(range: Range<usize>, text: impl Into<String>) -> Splice {
        Splice {
            range,
            text: text.into(),
        }
    }

    /// Insert `text` at `at`.
    pub fn insert(at: usize, text: impl Into<String>) -> Splice {
        Splice {
            range: at..at,
            text: text.into(),
        }
    }

    /// Delete `range`.
    pub fn delete(range: Range<usize>) -> Splice {
        Splice {
            range,
            text: String::new(),
        }
    }
}

/// Applies `splices` (non-overlapping; insertions at one point keep their
/// order) to `text`.
///
/// # Panics
/// When a range is out of bounds, not on a char boundary or overlaps
/// another (a planner bug).
pub fn apply_splices(text: &str, splices: &[Splice]) -> String {
    try_apply_splices(text, 0, splices).unwrap_or_else(|e| panic!("{e} (planner bug)"))
}

/// `text`, which starts at byte `base` of the text the splices were planned
/// on, with `splices` applied (non-overlapping; insertions at one point keep
/// their order).
///
/// # Errors
/// A splice that overlaps another, lies outside `text` or is not on a char
/// boundary.
pub fn try_apply_splices(text: &str, base: usize, splices: &[Splice]) -> Result<String, String> {
    let mut sorted: Vec<&Splice> = splices.iter().collect();
    // stable: equal starts keep insertion order; an insertion sorts before a
    // replacement that starts at the same byte.
    sorted.sort_by_key(|s| (s.range.start, !s.range.is_empty()));
    let mut out = String::with_capacity(text.len() + 64);
    let mut pos = 0;
    for s in sorted {
        let outside = || format!("splice at bytes {:?} is outside the text", s.range);
        let start = s.range.start.checked_sub(base).ok_or_else(outside)?;
        let end = s.range.end.checked_sub(base).ok_or_else(outside)?;
        if start < pos {
            return Err(format!("overlapping splices at byte {}", s.range.start));
        }
        out.push_str(text.get(pos..start).ok_or_else(outside)?);
        out.push_str(&s.text);
        pos = end;
    }
    out.push_str(
        text.get(pos..)
            .ok_or_else(|| format!("splice end {pos} is outside the text"))?,
    );
    Ok(out)
}

/// The planned edits of one file.
#[derive(Debug, Clone)]
pub struct FileEdit {
    /// Absolute path.
    pub path: PathBuf,
    /// Path relative to the workspace root, `/`-separated (for messages).
    pub rel: String,
    /// The text as read when planning.
    pub old_text: String,
    splices: Vec<Splice>,
}

impl FileEdit {
    /// The file's text once every splice is applied.
    pub fn new_text(&self) -> String {
        apply_splices(&self.old_text, &self.splices)
    }
}

/// Every edit of every file, computed before anything is written.
#[derive(Debug, Default)]
pub struct WriteSet {
    files: BTreeMap<PathBuf, FileEdit>,
    /// Do not parse new `.rs` texts with syn in [`WriteSet::validate`].
    skip_rust_validation: bool,
}

impl WriteSet {
    /// An empty plan.
    pub fn new() -> WriteSet {
        WriteSet::default()
    }

    /// Adds `splices` to the edits of `path`, whose text as read is `old_text`.
    ///
    /// # Errors
    /// When `path` was planned from a different text, or a splice overlaps one
    /// already planned (two fixes disagree: nothing may be written).
    pub fn add_splices(
        &mut self,
        path: &Path,
        rel: &str,
        old_text: &str,
        splices: Vec<Splice>,
    ) -> anyhow::Result<()> {
        if splices.is_empty() {
            return Ok(());
        }
        let edit = self
            .files
            .entry(path.to_path_buf())
            .or_insert_with(|| FileEdit {
                path: path.to_path_buf(),
                rel: rel.to_string(),
                old_text: old_text.to_string(),
                splices: Vec::new(),
            });
        if edit.old_text != old_text {
            bail!(
                "{rel}: planned from two different texts (the file changed while planning); nothing written"
            );
        }
        for s in splices {
            if s.range.end > old_text.len() || s.range.start > s.range.end {
                bail!(
                    "{rel}: internal error: edit {:?} is outside the file; nothing written",
                    s.range
                );
            }
            if let Some(o) = edit.splices.iter().find(|o| overlaps(&o.range, &s.range)) {
                if *o == s {
                    continue; // two planners want exactly the same change
                }
                let (line, col) = line_col(old_text, s.range.start);
                bail!(
                    "{rel}:{line}:{col}: two planned fixes overlap ({:?} and {:?}); nothing written",
                    o.range,
                    s.range
                );
            }
            edit.splices.push(s);
        }
        Ok(())
    }

    /// Replaces the whole text of `path` (for planners that rewrite a file).
    ///
    /// # Errors
    /// As [`WriteSet::add_splices`].
    pub fn replace_file(
        &mut self,
        path: &Path,
        rel: &str,
        old_text: &str,
        new_text: &str,
    ) -> anyhow::Result<()> {
        if old_text == new_text {
            return Ok(());
        }
        self.add_splices(
            path,
            rel,
            old_text,
            vec![Splice::replace(0..old_text.len(), new_text)],
        )
    }

    /// Merges `other` (e.g. the source planner's plan) into this one.
    ///
    /// # Errors
    /// Conflicting edits of one file (see [`WriteSet::add_splices`]).
    pub fn merge(&mut self, other: WriteSet) -> anyhow::Result<()> {
        for (path, edit) in other.files {
            self.add_splices(&path, &edit.rel, &edit.old_text, edit.splices)?;
        }
        Ok(())
    }

    /// The files that would change, in path order.
    pub fn edits(&self) -> impl Iterator<Item = &FileEdit> {
        self.files.values().filter(|e| !e.splices.is_empty())
    }

    /// Leaves new `.rs` texts out of [`WriteSet::validate`], for a caller that
    /// checks them its own way (`fmt-check --fix` compares tokens and
    /// comments with the original; rustfmt may accept syntax syn does not).
    pub fn skip_rust_validation(&mut self) {
        self.skip_rust_validation = true;
    }

    /// Checks that every edited `.toml` file is still valid TOML, and every
    /// edited `.rs` file still valid Rust, after the edit (a planner bug must
    /// not reach the disk).
    ///
    /// # Errors
    /// The first file whose new text does not parse.
    pub fn validate(&self) -> anyhow::Result<()> {
        use rayon::prelude::*;
        let edits: Vec<&FileEdit> = self.edits().collect();
        // syn recurses once per nesting level: parse on threads with the
        // same large stack the planners parse with (valid but deeply nested
        // Rust must not overflow here either).
        let pool = rayon::ThreadPoolBuilder::new()
            .stack_size(VALIDATE_STACK)
            .build()
            .context("cannot start the validation threads")?;
        let problems: Vec<Option<String>> = pool.install(|| {
            edits
                .par_iter()
                .map(|e| invalid(e, !self.skip_rust_validation))
                .collect()
        });
        match problems.into_iter().flatten().next() {
            Some(p) => bail!("{p}; nothing written"),
            None => Ok(()),
        }
    }

    /// Writes every planned edit, all or nothing as far as the file system
    /// allows, without the journal and the workspace lock (see
    /// [`WriteSet::apply_with`], which the commands use).
    ///
    /// # Errors
    /// As [`WriteSet::apply_with`].
    pub fn apply(&self) -> anyhow::Result<Vec<&FileEdit>> {
        self.apply_inner(None)
    }

    /// Writes every planned edit, all or nothing as far as the file system
    /// allows (see [`crate::journal::txn`]): validates the new texts, then
    /// resolves links (written through), refuses read-only files and
    /// directories, stages every file beside its target and replaces them
    /// one by one, each compared with the text planned from right before;
    /// the journal in `guard`'s directory makes a killed run recoverable.
    ///
    /// Returns the edited files.
    ///
    /// # Errors
    /// An invalid result, a file changed on disk, a link that does not
    /// resolve, a read-only file or an I/O error (nothing written; files
    /// already replaced are restored), or a failure after files were
    /// written ([`crate::Written`]).
    pub fn apply_with(&self, guard: &crate::journal::Guard) -> anyhow::Result<Vec<&FileEdit>> {
        self.apply_inner(Some(guard))
    }

    fn apply_inner(&self, guard: Option<&crate::journal::Guard>) -> anyhow::Result<Vec<&FileEdit>> {
        self.validate()?;
        let edits: Vec<&FileEdit> = self.edits().collect();
        let planned: Vec<crate::journal::txn::Planned<'_>> = edits
            .iter()
            .map(|e| crate::journal::txn::Planned {
                path: &e.path,
                rel: &e.rel,
                old: &e.old_text,
                new: e.new_text(),
            })
            .collect();
        crate::journal::txn::write_all(&planned, guard)?;
        Ok(edits)
    }
}

/// Why `e`'s new text is not valid TOML (`.toml`) or Rust (`.rs`), if it is not.
/// Stack of the threads that parse new `.rs` texts (reserved, not touched
/// unless a deep file needs it); equal to the planners' parse stack.
const VALIDATE_STACK: usize = 512 << 20;

fn invalid(e: &FileEdit, rust: bool) -> Option<String> {
    let ext = e.path.extension()?;
    if ext == "rs" && rust {
        let new = e.new_text();
        let parsed = syn::parse_file(&new).map_err(|err| {
            let lc = err.span().start();
            format!("{}:{}: {err}", lc.line, lc.column + 1)
        });
        // free proc-macro2's per-thread copy of the parsed text
        proc_macro2::extra::invalidate_current_thread_spans();
        return parsed.err().map(|at| {
            format!(
                "{}: internal error: the planned edit is not valid Rust (at {at})",
                e.rel
            )
        });
    }
    if ext == "toml" {
        let new = e.new_text();
        if let Err(err) = toml_edit::Document::parse(new.as_str()) {
            let (line, col) = err.span().map_or((1, 1), |s| line_col(&new, s.start));
            return Some(format!(
                "{}: internal error: the planned edit is not valid TOML (at {line}:{col}: {})",
                e.rel,
                err.message()
            ));
        }
    }
    None
}

fn overlaps(a: &Range<usize>, b: &Range<usize>) -> bool {
    if a.is_empty() || b.is_empty() {
        // an insertion conflicts only with a replacement strictly around it
        let (ins, other) = if a.is_empty() { (a, b) } else { (b, a) };
        return other.start < ins.start && ins.start < other.end;
    }
    a.start < b.end && b.start < a.end
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn edits_apply_in_order_and_overlaps_are_refused() {
        let e = |r: Range<usize>, t: &str| Splice::replace(r, t);
        assert_eq!(
            try_apply_splices("abcdef", 0, &[e(4..5, "X"), e(1..1, "+"), e(1..2, "")]).unwrap(),
            "a+cdXf"
        );
        assert_eq!(try_apply_splices("cdef", 2, &[e(3..4, "")]).unwrap(), "cef");
        assert!(try_apply_splices("abcdef", 0, &[e(1..3, ""), e(2..4, "")]).is_err());
        assert!(try_apply_splices("cdef", 2, &[e(1..2, "")]).is_err());
    }

    #[test]
    fn splices_apply_in_order_with_insertions_first() {
        let t = "abcdef";
        let s = vec![
            Splice::replace(2..4, "XY"),
            Splice::insert(2, "<"),
            Splice::insert(6, "!"),
            Splice::delete(0..1),
        ];
        assert_eq!(apply_splices(t, &s), "b<XYef!");
    }

    #[test]
    fn overlapping_splices_conflict_and_identical_ones_merge() {
        let mut p = WriteSet::new();
        let path = Path::new("/x/Cargo.toml");
        p.add_splices(
            path,
            "Cargo.toml",
            "abcdef",
            vec![Splice::replace(1..3, "Z")],
        )
        .unwrap();
        p.add_splices(
            path,
            "Cargo.toml",
            "abcdef",
            vec![Splice::replace(1..3, "Z")],
        )
        .unwrap();
        assert_eq!(p.edits().next().unwrap().new_text(), "aZdef");
        let e = p
            .add_splices(
                path,
                "Cargo.toml",
                "abcdef",
                vec![Splice::replace(2..4, "Q")],
            )
            .unwrap_err();
        assert!(e.to_string().contains("overlap"), "{e}");
        let e = p
            .add_splices(path, "Cargo.toml", "abcdef", vec![Splice::insert(2, "Q")])
            .unwrap_err();
        assert!(e.to_string().contains("overlap"), "{e}");
        // touching ranges are fine
        p.add_splices(
            path,
            "Cargo.toml",
            "abcdef",
            vec![Splice::insert(3, "+"), Splice::delete(3..4)],
        )
        .unwrap();
        assert_eq!(p.edits().next().unwrap().new_text(), "aZ+ef");
    }

    #[test]
    fn different_old_text_is_refused() {
        let mut p = WriteSet::new();
        let path = Path::new("/x/a.rs");
        p.add_splices(path, "a.rs", "one", vec![Splice::insert(0, "x")])
            .unwrap();
        assert!(
            p.add_splices(path, "a.rs", "two", vec![Splice::insert(0, "x")])
                .is_err()
        );
    }

    #[test]
    fn merge_combines_files() {
        let mut a = WriteSet::new();
        a.add_splices(
            Path::new("/w/Cargo.toml"),
            "Cargo.toml",
            "x = 1\n",
            vec![Splice::replace(4..5, "2")],
        )
        .unwrap();
        let mut b = WriteSet::new();
        b.replace_file(Path::new("/w/src/lib.rs"), "src/lib.rs", "old", "new")
            .unwrap();
        a.merge(b).unwrap();
        assert_eq!(a.edits().count(), 2);
    }

    #[test]
    fn invalid_toml_result_is_refused_before_writing() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("Cargo.toml");
        std::fs::write(&path, "a = 1\n").unwrap();
        let mut p = WriteSet::new();
        p.add_splices(
            &path,
            "Cargo.toml",
            "a = 1\n",
            vec![Splice::replace(4..5, "[")],
        )
        .unwrap();
        let e = p.apply().unwrap_err().to_string();
        assert!(e.contains("not valid TOML"), "{e}");
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "a = 1\n");
    }

    #[test]
    fn file_changed_since_planning_is_not_written() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("Cargo.toml");
        std::fs::write(&path, "a = 1\n").unwrap();
        let mut p = WriteSet::new();
        p.add_splices(
            &path,
            "Cargo.toml",
            "a = 1\n",
            vec![Splice::replace(4..5, "2")],
        )
        .unwrap();
        std::fs::write(&path, "a = 3\n").unwrap();
        assert!(
            p.apply()
                .unwrap_err()
                .to_string()
                .contains("changed on disk")
        );
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "a = 3\n");
    }
}
