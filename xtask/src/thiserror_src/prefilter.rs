//! The textual prefilter of the source side (issue 14, item 2): which files
//! are worth parsing. Parsing every Rust file of a large workspace with syn
//! costs many times what `cargo metadata` does; most files cannot hold a
//! finding, and a few substring searches tell them apart.
//!
//! # Why it is exact
//! Every finding of the source side (rules 1-3, and rule 4's derive site)
//! comes from a `derive(...)` entry that [`super::scan`] takes for
//! thiserror's `Error`, or from an `#[error(..)]` helper inside a macro's
//! tokens. The scan sees what syn parses as items, and the tokens of a macro
//! invocation or definition only when they hold the identifiers `derive`, one
//! ending in `Error` and `error` followed by `(..)` (never another file); and
//! identifiers reach it as written (the parser does not normalize them). So a
//! file the scan reports on contains, as text:
//! 1. `derive`: the attribute (`#[derive(..)]`, or inside `cfg_attr`);
//! 2. `Error`: the derive path's last segment, as written in the derive or in
//!    the `use` / `extern crate` item it resolves through, ends in `Error`;
//! 3. and either one of the names under which the crate depends on thiserror
//!    (`thiserror`, a renamed dependency: a derive resolved to
//!    `thiserror::..` names it in the derive or its `use` item, e.g.
//!    `use thiserror::Error as E`, `use thiserror::*`,
//!    `extern crate thiserror as te`), or a thiserror helper list: the
//!    identifier `error` followed, after whitespace, by `(` (`#[error("..")]`,
//!    `cfg_attr(.., error(..))`; a comment after `error` is let through too,
//!    as is any `/`).
//!
//! Each test is a superset of what it stands for (a comment or string that
//! mentions these words lets a file through, which only costs a parse). A
//! file that is not parsed gets an empty analysis, the one the scan would
//! give; a file that does not parse is no longer an error when it cannot
//! hold a finding (cargo reports it when it builds). The tests compare the
//! filtered run with the parse-everything run over the generated fleets and
//! the fixtures (`prefilter_is_exact` in `tests/it/thiserror_src.rs`).

use super::CrateContext;

/// Whether `text` may hold a finding of the source side: a `derive` that
/// the scan could take for thiserror's `Error` (see the module docs). `false`
/// means the file's analysis is empty without parsing it.
pub fn may_hold_a_finding(text: &str, ctx: &CrateContext) -> bool {
    may_hold_a_finding_in(text.as_bytes(), ctx)
}

/// [`may_hold_a_finding`] on a file's bytes (before they are known to be
/// UTF-8: a file that is not cannot hold a finding either way).
pub fn may_hold_a_finding_in(text: &[u8], ctx: &CrateContext) -> bool {
    let has = |needle: &str| memchr::memmem::find(text, needle.as_bytes()).is_some();
    has("derive")
        && has("Error")
        && (thiserror_or_error_list(text)
            || ctx
                .thiserror_names
                .iter()
                .any(|n| n != "thiserror" && has(n)))
}

/// Whether `text` contains `thiserror` (always a thiserror name), or the
/// identifier `error` followed, after whitespace, by `(` or `/`. One pass
/// over the `error`s. Rust's whitespace outside ASCII (Unicode
/// `Pattern_White_Space`: U+0085, U+200E, U+200F, U+2028, U+2029) is not
/// decoded: any non-ASCII byte there lets the file through.
fn thiserror_or_error_list(text: &[u8]) -> bool {
    memchr::memmem::find_iter(text, b"error").any(|i| {
        if i >= 4 && &text[i - 4..i] == b"this" {
            return true;
        }
        // a byte of an ASCII identifier before it: another identifier
        // (a non-ASCII byte may end a whitespace character: let it through)
        let starts_ident = i == 0 || {
            let b = text[i - 1];
            !(b.is_ascii_alphanumeric() || b == b'_')
        };
        let after = text[i + "error".len()..]
            .iter()
            .find(|b| !matches!(b, b' ' | b'\t' | b'\n' | b'\r' | 0x0b | 0x0c));
        starts_ident && after.is_some_and(|&b| b == b'(' || b == b'/' || b >= 0x80)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn may(text: &str) -> bool {
        may_hold_a_finding(text, &CrateContext::default())
    }

    #[test]
    fn lets_through_every_way_to_reach_the_derive() {
        for text in [
            "#[derive(thiserror::Error)] enum E {}",
            "use thiserror::Error as E; #[derive(Debug, E)] enum X {}",
            "use thiserror::*; #[derive(Error)] enum X {}",
            "extern crate thiserror as te; #[derive(te::Error)] struct X;",
            "#[derive(helper::Error)] #[error(\"x\")] struct X;",
            "#[derive(Error)]\n#[error\n  (transparent)] struct X;",
            "#[derive(Error)] #[error /* c */ (\"x\")] struct X;",
            "#[cfg_attr(x, derive(Error), error(\"x\"))] struct X;",
            "#[derive(Error)] #[error\u{200E}(\"x\")] struct X;",
            "#[derive(Error)] #[r#error(\"x\")] struct X;",
        ] {
            assert!(may(text), "{text}");
        }
        let renamed = CrateContext {
            thiserror_names: vec!["thiserror".into(), "te".into()],
        };
        assert!(may_hold_a_finding(
            "#[derive(te::Error)] struct X;",
            &renamed
        ));
    }

    #[test]
    fn clears_files_without_a_possible_derive() {
        for text in [
            "pub fn f() {}",
            "#[derive(Debug)] struct X; // no error type",
            "use std::error::Error; #[derive(Debug)] struct E; impl Error for E {}",
            "#[derive(Debug)] pub struct MyError; fn f() { tracing::error!(\"x\") }",
            "#[derive(Debug)] pub struct MyError; fn f() { myerror(1) }",
            "use thiserror::Error; // imported, never used",
        ] {
            assert!(!may(text), "{text}");
        }
    }
}
