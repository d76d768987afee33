//! The verdicts: what rustfmt's output says about each file, compared the
//! way `rustfmt --check` compares (line endings and a BOM as rustfmt reads
//! them).

use std::collections::BTreeMap;
use std::path::PathBuf;

use super::{Assigned, EditionSource};
use crate::fmt_check::files::{FileInventory, NewlineStyle};

/// How rustfmt got to a file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Via {
    /// Through the module tree of this crate root, as `cargo fmt` does.
    CrateRoot(PathBuf),
    /// On its own: `cargo fmt` does not reach it.
    Standalone,
}

/// The verdict on one file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// Formatted.
    Formatted,
    /// Not formatted: what it should be (line endings as the file should have them).
    Unformatted {
        /// The formatted file, ready to write.
        fixed: String,
        /// Only the line endings are wrong (explicit `newline_style`).
        line_endings_only: bool,
    },
    /// rustfmt rejected it (does not parse) or it could not be read.
    Error(String),
    /// Not checked: `cargo fmt` skips it too.
    Skipped(String),
    /// Not checked: an expression `include!`d by the named file, not a list
    /// of items (rustfmt formats items only; `cargo fmt` does not reach it).
    NotItems(String),
    /// Not checked: it cannot be read (why) and nothing reaches it as a
    /// module (an editor's lock file `.#lib.rs`): `cargo fmt` never opens it.
    NotRead(String),
}

/// Why `--fix` does not write a file outside the workspace directory.
pub const OUTSIDE: &str = "it lies outside the workspace (a `#[path]` module): fmt-check --fix writes only inside the workspace; format it where it lives";

/// One checked file.
#[derive(Debug, Clone)]
pub struct FileReport {
    /// Index into [`FileInventory::files`].
    pub file: usize,
    /// The file's text as read (empty on a read error).
    pub original: String,
    /// The verdict.
    pub verdict: Verdict,
    /// The edition it was formatted with.
    pub edition: String,
    /// Where the edition came from.
    pub edition_source: EditionSource,
    /// The rustfmt config used (`None`: rustfmt's defaults).
    pub config: Option<PathBuf>,
    /// How rustfmt reached it.
    pub via: Via,
    /// Unformatted, but `--fix` does not write it: why (a person must format it).
    pub needs_person: Option<String>,
}

/// The verdicts, in `plan.files` order.
pub(super) fn reports(
    plan: &FileInventory,
    texts: &[Result<String, String>],
    mut assigned: Vec<Option<Assigned>>,
    skipped: &BTreeMap<usize, String>,
    not_read: &BTreeMap<usize, String>,
) -> Vec<FileReport> {
    plan.files
        .iter()
        .enumerate()
        .map(|(i, f)| {
            let original = texts[i].clone().unwrap_or_default();
            match (&texts[i], assigned[i].take()) {
                (Err(e), _) => FileReport {
                    file: i,
                    original,
                    verdict: if not_read.contains_key(&i) {
                        Verdict::NotRead(e.clone())
                    } else {
                        Verdict::Error(e.clone())
                    },
                    edition: String::new(),
                    edition_source: EditionSource::Fallback,
                    config: None,
                    via: Via::Standalone,
                    needs_person: None,
                },
                (Ok(_), None) => FileReport {
                    file: i,
                    original,
                    verdict: Verdict::Skipped(skipped.get(&i).cloned().unwrap_or_default()),
                    edition: String::new(),
                    edition_source: EditionSource::Fallback,
                    config: None,
                    via: Via::Standalone,
                    needs_person: None,
                },
                (Ok(text), Some(a)) => {
                    let style = a.style();
                    let verdict = match &a.formatted {
                        Ok(None) => Verdict::Formatted,
                        Ok(Some(f)) => verdict(text, f, style),
                        Err(msg) => Verdict::Error(msg.clone()),
                    };
                    let needs_person = match &verdict {
                        Verdict::Unformatted { .. } if !f.path.starts_with(&plan.root) => {
                            Some(OUTSIDE.to_string())
                        }
                        Verdict::Unformatted { .. } => a.needs_person,
                        _ => None,
                    };
                    FileReport {
                        file: i,
                        original,
                        verdict,
                        edition: a.edition,
                        edition_source: a.edition_source,
                        config: a.config.map(|c| c.path.clone()),
                        via: a.via,
                        needs_person,
                    }
                }
            }
        })
        .collect()
}

/// Compares a file with rustfmt's output the way `rustfmt --check` does.
///
/// rustfmt parses through rustc, which drops a BOM and turns `\r\n` into
/// `\n`; with `newline_style = Auto` (the default) it compares its output with
/// that normalized text, so line endings never make a file "unformatted".
/// With an explicit style it compares with the file's real bytes. The fixed
/// text keeps the file's BOM and, under `Auto`, its line endings (the file's
/// first line ending, as `Auto` is documented: rustfmt 1.9 itself would
/// write `\n` when it rewrites a `\r\n` file).
pub fn verdict(original: &str, formatted: &str, style: NewlineStyle) -> Verdict {
    let (bom, body) = match original.strip_prefix('\u{feff}') {
        Some(b) => ("\u{feff}", b),
        None => ("", original),
    };
    match style {
        NewlineStyle::Auto => {
            if body.replace("\r\n", "\n") == formatted {
                return Verdict::Formatted;
            }
            let crlf = body
                .find('\n')
                .is_some_and(|k| k > 0 && body.as_bytes()[k - 1] == b'\r');
            let fixed = if crlf {
                formatted.replace("\r\n", "\n").replace('\n', "\r\n")
            } else {
                formatted.to_string()
            };
            Verdict::Unformatted {
                fixed: format!("{bom}{fixed}"),
                line_endings_only: false,
            }
        }
        _ => {
            if body == formatted {
                return Verdict::Formatted;
            }
            let line_endings_only = body.replace('\r', "") == formatted.replace('\r', "");
            Verdict::Unformatted {
                fixed: format!("{bom}{formatted}"),
                line_endings_only,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn auto_ignores_crlf_and_keeps_it_when_fixing() {
        assert_eq!(
            verdict("fn a() {}\r\n", "fn a() {}\n", NewlineStyle::Auto),
            Verdict::Formatted
        );
        let v = verdict(
            "fn  a() {}\r\nfn b() {}\r\n",
            "fn a() {}\nfn b() {}\n",
            NewlineStyle::Auto,
        );
        assert_eq!(
            v,
            Verdict::Unformatted {
                fixed: "fn a() {}\r\nfn b() {}\r\n".into(),
                line_endings_only: false
            }
        );
    }

    #[test]
    fn explicit_style_compares_bytes() {
        let v = verdict("fn a() {}\r\n", "fn a() {}\n", NewlineStyle::Unix);
        assert_eq!(
            v,
            Verdict::Unformatted {
                fixed: "fn a() {}\n".into(),
                line_endings_only: true
            }
        );
        assert_eq!(
            verdict("fn a() {}\r\n", "fn a() {}\r\n", NewlineStyle::Windows),
            Verdict::Formatted
        );
    }

    #[test]
    fn bom_is_kept() {
        assert_eq!(
            verdict("\u{feff}fn a() {}\n", "fn a() {}\n", NewlineStyle::Auto),
            Verdict::Formatted
        );
        let v = verdict("\u{feff}fn  a() {}\n", "fn a() {}\n", NewlineStyle::Auto);
        assert_eq!(
            v,
            Verdict::Unformatted {
                fixed: "\u{feff}fn a() {}\n".into(),
                line_endings_only: false
            }
        );
    }
}
