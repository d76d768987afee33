//! The JSON rows of `fmt-check` (one type per `kind`, and the summaries'
//! counts), rendered by [`crate::diag`]; what each field means is in
//! docs/fleet.md.

use serde::Serialize;

/// `error` (a file rustfmt cannot format, a fix that would change more than
/// formatting) and `not_formatting_only` (`--verify-formatting-only`).
#[derive(Serialize)]
pub(crate) struct AtLine<'a> {
    pub file: &'a str,
    pub line: usize,
    pub message: &'a str,
}

/// `unresolved-module`: a `mod name;` that leads to no file.
#[derive(Serialize)]
pub(crate) struct UnresolvedModule<'a> {
    pub file: &'a str,
    pub line: usize,
    pub module: &'a str,
    pub candidates: &'a [String],
    pub message: &'a str,
}

/// `unformatted` / `fixed`: one file's verdict.
#[derive(Serialize)]
pub(crate) struct FileVerdict<'a> {
    pub file: &'a str,
    pub line: usize,
    pub line_endings_only: bool,
    pub edition: &'a str,
    pub edition_source: &'a str,
    pub config: Option<String>,
    pub reached_by_cargo_fmt: bool,
    /// Why `--fix` does not write it, when it does not.
    pub needs_a_person: Option<&'a str>,
    pub diff: &'a str,
}

/// `warning`: one of rustfmt's warnings, once per option.
#[derive(Serialize)]
pub(crate) struct Warning<'a> {
    pub file: Option<String>,
    pub line: usize,
    pub option: Option<&'a str>,
    pub configs: &'a [String],
    pub message: &'a str,
}

/// `non_rust_change`: a non-Rust file the verified commit changed.
#[derive(Serialize)]
pub(crate) struct NonRustChange<'a> {
    pub status: &'a str,
    pub file: &'a str,
}

/// The counts of a check's summary.
#[derive(Serialize)]
pub(crate) struct Summary {
    pub checked: usize,
    pub standalone: usize,
    pub skipped: usize,
    pub excluded: usize,
    pub excluded_dirs: usize,
    pub unformatted: usize,
    pub needs_a_person: usize,
    pub not_read: usize,
    pub fixed: usize,
    pub errors: usize,
    pub unresolved_modules: usize,
    pub not_items: usize,
}

/// The counts of `--verify-formatting-only`'s summary.
#[derive(Serialize)]
pub(crate) struct VerifySummary<'a> {
    pub commit: &'a str,
    pub rust_files: usize,
    pub failures: usize,
    pub non_rust_files: usize,
}
