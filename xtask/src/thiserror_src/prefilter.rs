//! The textual prefilter of the source side: which files
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
//!    identifier `error` in attribute position, after `[` or `,`
//!    (`#[error("..")]`, `cfg_attr(.., error(..))`), followed by `(`,
//!    whitespace aside (a comment on either side is let through, as is any
//!    `/` or non-ASCII byte; `x.error(..)` is no helper).
//!
//! Rule 4 is the only rule a derive site alone can trigger, and only in a
//! crate that lacks a direct `thiserror` dependency for some kind of target
//! it has. In a crate that has one for every kind, a file is parsed only
//! when some helper's arguments can matter to rules 1-3
//! ([`may_hold_a_format_finding_in`]): rule 1 needs `r#` in the message,
//! rules 2 and 3 need arguments after it, so a helper that is one plain
//! string literal without `r#` or a backslash, directly followed by `)`
//! (`#[error("index {0} out of range")]`), gives nothing; nor does
//! `#[error(transparent)]`.
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

/// Whether `text` may hold a finding of rules 1-3 (not rule 4's derive
/// site): a `derive`, `Error`, and a thiserror helper in attribute position
/// whose arguments may matter ([`helper_may_matter`]). Enough for a crate
/// that depends on thiserror directly from every kind of target it has
/// (there rule 4 cannot apply, so derive sites alone find nothing).
pub fn may_hold_a_format_finding_in(text: &[u8]) -> bool {
    let has = |needle: &str| memchr::memmem::find(text, needle.as_bytes()).is_some();
    has("derive") && has("Error") && helpers(text).any(|after| helper_may_matter(&text[after..]))
}

/// Whether `text` holds a thiserror helper list in attribute position
/// (`error(` after `[` or `,`; see [`helpers`]).
pub(crate) fn has_helper(text: &[u8]) -> bool {
    helpers(text).next().is_some()
}

/// Whether `text` contains `thiserror` (always a thiserror name), or a
/// thiserror helper list in attribute position ([`helpers`]).
fn thiserror_or_error_list(text: &[u8]) -> bool {
    memchr::memmem::find(text, b"thiserror").is_some() || helpers(text).next().is_some()
}

fn is_ws(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | b'\r' | 0x0b | 0x0c)
}

/// The offsets just after the `(` of each `error(` that may be a helper
/// attribute: the identifier `error` (or `r#error`) right after `[` (an
/// attribute, `#[error(..)]`) or `,` (inside `cfg_attr(.., error(..))`),
/// and before `(`, whitespace aside. A `/` on either side (a comment), a
/// non-ASCII byte (Unicode whitespace) or a `//` comment on the line before
/// lets it through; `x.error(..)` and `fn error(..)` are not helpers.
fn helpers(text: &[u8]) -> impl Iterator<Item = usize> + '_ {
    memchr::memmem::find_iter(text, b"error").filter_map(move |i| {
        let ident = |b: u8| b.is_ascii_alphanumeric() || b == b'_';
        let mut k = i;
        if k >= 2 && &text[k - 2..k] == b"r#" {
            k -= 2;
        }
        if k > 0 && (ident(text[k - 1]) || text[k - 1] == b'#') {
            return None;
        }
        // before: `[` or `,`, whitespace (and comments) aside
        let mut crossed_line = false;
        while k > 0 && is_ws(text[k - 1]) {
            crossed_line |= text[k - 1] == b'\n';
            k -= 1;
        }
        let before_ok = k == 0
            || matches!(text[k - 1], b'[' | b',' | b'/')
            || text[k - 1] >= 0x80
            || (crossed_line && {
                let line_start = text[..k]
                    .iter()
                    .rposition(|&b| b == b'\n')
                    .map_or(0, |p| p + 1);
                memchr::memmem::find(&text[line_start..k], b"//").is_some()
            });
        // after: `(`, whitespace aside
        let mut j = i + "error".len();
        if j < text.len() && ident(text[j]) {
            return None;
        }
        while j < text.len() && is_ws(text[j]) {
            j += 1;
        }
        let after = text.get(j).copied()?;
        (before_ok && (after == b'(' || after == b'/' || after >= 0x80)).then_some(j + 1)
    })
}

/// Whether the arguments of a helper (`rest` starts just after its `(`) may
/// give rules 1-3 something. Rule 1 needs `r#` in the message; rule 3 a
/// numbered placeholder (`{0}`) and a positional argument after the
/// message; rule 2 a named argument (`name = ..`) after it. So a helper
/// clears when its message is one plain string literal without `r#` and
/// either nothing follows it (`#[error("index {0} out of range")]`), or only
/// arguments follow that hold no `=` (no named argument) while the message
/// holds no `{` before a digit and no `$` (nothing numbered):
/// `#[error("{}: {}", .path, .source)]`. Anything unsure lets it through: a
/// raw string, a `\x` or `\u` escape (it may spell `r#`, `{` or a digit),
/// a comment, a char literal or lifetime, non-ASCII, brackets that do not
/// close. `transparent`, `fmt = ..` and other non-literals give nothing.
fn helper_may_matter(rest: &[u8]) -> bool {
    let mut i = 0;
    while i < rest.len() && is_ws(rest[i]) {
        i += 1;
    }
    match rest.get(i) {
        Some(b'"') => {}
        Some(&c) if c.is_ascii_alphabetic() && c != b'r' => return false,
        _ => return true,
    }
    i += 1;
    let start = i;
    while i < rest.len() && rest[i] != b'"' {
        if rest[i] == b'\\' {
            // `\x7b`, `\u{..}` may spell anything; other escapes are one character
            if matches!(rest.get(i + 1), Some(b'x' | b'u') | None) {
                return true;
            }
            i += 1;
        } else if rest[i] >= 0x80 {
            return true;
        }
        i += 1;
    }
    let message = &rest[start..i.min(rest.len())];
    if memchr::memmem::find(message, b"r#").is_some() {
        return true;
    }
    i += 1;
    while i < rest.len() && is_ws(rest[i]) {
        i += 1;
    }
    match rest.get(i) {
        Some(b')') => return false,
        Some(b',') => {}
        _ => return true,
    }
    let numbered = memchr::memchr(b'$', message).is_some()
        || memchr::memchr_iter(b'{', message).any(|k| {
            message[k + 1..]
                .iter()
                .find(|b| !is_ws(**b))
                .is_some_and(u8::is_ascii_digit)
        });
    // the arguments, to the helper's `)`: a named one (`=`) or, with a
    // numbered placeholder, any argument at all may matter
    let mut depth = 0usize;
    let mut any_arg = false;
    i += 1;
    while i < rest.len() {
        let c = rest[i];
        match c {
            b'(' | b'[' | b'{' => depth += 1,
            b')' | b']' | b'}' if depth == 0 => {
                return any_arg && numbered;
            }
            b')' | b']' | b'}' => depth -= 1,
            b'"' => {
                i += 1;
                while i < rest.len() && rest[i] != b'"' {
                    i += if rest[i] == b'\\' { 2 } else { 1 };
                }
            }
            b'=' | b'\'' | b'/' | b'#' => return true,
            c if c >= 0x80 => return true,
            c if !is_ws(c) && c != b',' => any_arg = true,
            _ => {}
        }
        i += 1;
    }
    true
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
            "#[derive(Debug)] pub struct MyError; fn f(p: P) { p.error(\"x\") }",
            "#[derive(Debug)] pub struct MyError; fn error(x: u8) {}",
        ] {
            assert!(!may(text), "{text}");
        }
    }

    #[test]
    fn helpers_in_attribute_position_only() {
        let found = |t: &str| helpers(t.as_bytes()).count();
        assert_eq!(found("#[error(\"x\")]"), 1);
        assert_eq!(found("#[ error (\"x\")]"), 1);
        assert_eq!(found("#[cfg_attr(x, error(\"x\"))]"), 1);
        assert_eq!(found("#[r#error(\"x\")]"), 1);
        assert_eq!(found("#[\n    // the message\n    error(\"x\")\n]"), 1);
        assert_eq!(found("#[/* c */ error(\"x\")]"), 1);
        assert_eq!(
            found("p.error(\"x\"); fn error() {} let errors = 1; e.error ;"),
            0
        );
    }

    #[test]
    fn format_findings_need_arguments_or_raw_identifiers() {
        let fmt = |t: &str| may_hold_a_format_finding_in(t.as_bytes());
        let item =
            |attr: &str| format!("#[derive(Debug, thiserror::Error)]\n{attr}\npub struct E(u8);\n");
        for needs in [
            "#[error(\"{r#type}\")]",
            "#[error(\"{0} {}\", .1)]",
            "#[error(\"{x}\", x = 1)]",
            "#[error(r\"{0}\")]",
            "#[error(\"\\x7br\\x23type}\")]",
            "#[error(\"{0}\" /* c */)]",
            "#[cfg_attr(all(), error(\"{0}\", .0))]",
        ] {
            assert!(fmt(&item(needs)), "{needs}");
        }
        for needs in [
            "#[error(\"{0} {}\", .1)]",
            "#[error(\"{ 0}\", x)]",
            "#[error(\"{:1$}\", .0, .1)]",
            "#[error(\"{}\", f(a = 1))]",
            "#[error(\"{}\", c == '(')]",
            "#[error(\"\\u{7b}0}\", .1)]",
            "#[error(\"{}\" , x /* y */)]",
            "#[error(\"{0}\", x(\")\"))]",
        ] {
            assert!(fmt(&item(needs)), "{needs}");
        }
        for clear in [
            "#[error(\"{}: {}\", .path, .source)]",
            "#[error(\"'{}'{}\", .url, .loc.as_ref().map(|l| format!(\" to '{}'\", l)).unwrap_or_default())]",
            "#[error(\"{}\\n  at {}\", .kind, .config_url)]",
            "#[error(\n    \"a long message {0}\"\n)]",
            "#[error(\"plain {0}\")]",
            "#[error( \"plain\" )]",
            "#[error(transparent)]",
            "#[error(fmt = my_fmt)]",
        ] {
            assert!(!fmt(&item(clear)), "{clear}");
        }
    }
}
