//! Error types written inside macros: the tokens of a macro invocation
//! (`passthru! { #[derive(thiserror::Error)] enum E { .. } }`) or of a
//! `macro_rules!` definition are not items to syn, so the scan reads them
//! here. Every token group that parses as a list of items is scanned like
//! the file's own items (its findings located and fixed at their bytes in
//! the file); an `#[error("...")]` helper left in tokens that are not items
//! (a `macro_rules!` body using `$name` metavariables, a custom syntax)
//! cannot be tied to a type, so when its message holds what thiserror 2
//! rejects or reads differently, it is a finding that needs a person.
//!
//! Only macros whose tokens hold the identifier `derive`, an identifier
//! ending in `Error` and a helper `error(..)` are read (what the textual
//! [`super::prefilter`] lets through).

use proc_macro2::{Delimiter, TokenStream, TokenTree};

use super::fmt::{self, ArgKind};
use super::{Rule, SourceFinding, lit};

/// Where tokens are in the file: its text, the file bytes of a span, and
/// the 1-based line and column of a byte offset (the scan's `Source`).
pub(super) struct Locate<'a> {
    pub text: &'a str,
    pub range: &'a dyn Fn(proc_macro2::Span) -> std::ops::Range<usize>,
    pub line_col: &'a dyn Fn(usize) -> (usize, usize),
}

/// What a macro's tokens hold: lists of items to scan, and the findings of
/// helpers outside any item.
#[derive(Default)]
pub(super) struct MacroTokens {
    pub items: Vec<syn::File>,
    pub findings: Vec<SourceFinding>,
}

/// Whether `ts` may hold a thiserror derive or helper (see the module docs).
pub(super) fn may_hold(ts: &TokenStream) -> bool {
    #[derive(Default)]
    struct Seen {
        derive: bool,
        error_type: bool,
        helper: bool,
    }
    fn walk(ts: TokenStream, seen: &mut Seen) {
        let mut prev_error = false;
        for t in ts {
            match &t {
                TokenTree::Ident(i) => {
                    let s = i.to_string();
                    seen.derive |= s == "derive";
                    seen.error_type |= s.ends_with("Error");
                    prev_error = s == "error" || s == "r#error";
                    continue;
                }
                TokenTree::Group(g) => {
                    seen.helper |= prev_error && g.delimiter() == Delimiter::Parenthesis;
                    walk(g.stream(), seen);
                }
                _ => {}
            }
            prev_error = false;
        }
    }
    let mut seen = Seen::default();
    walk(ts.clone(), &mut seen);
    seen.derive && seen.error_type && seen.helper
}

/// Splits `ts` into lists of items and findings for the helpers outside them.
pub(super) fn read(
    ts: TokenStream,
    path: &std::path::Path,
    src: &Locate<'_>,
    out: &mut MacroTokens,
) {
    if let Ok(file) = syn::parse2::<syn::File>(ts.clone()) {
        out.items.push(file);
        return;
    }
    let tts: Vec<TokenTree> = ts.into_iter().collect();
    for (i, t) in tts.iter().enumerate() {
        let TokenTree::Group(g) = t else { continue };
        let is_attr = g.delimiter() == Delimiter::Bracket
            && i > 0
            && matches!(&tts[i - 1], TokenTree::Punct(p) if p.as_char() == '#');
        if is_attr && let Some(f) = helper_finding(g.stream(), path, src) {
            out.findings.push(f);
            continue;
        }
        read(g.stream(), path, src, out);
    }
}

/// The finding for one attribute's tokens `error("...", args)` outside any
/// item, when its message holds something thiserror 2 rejects or reads
/// differently (rules 1-3 cannot be told without the type): `None` otherwise.
fn helper_finding(
    attr: TokenStream,
    path: &std::path::Path,
    src: &Locate<'_>,
) -> Option<SourceFinding> {
    let mut it = attr.into_iter();
    match it.next()? {
        TokenTree::Ident(i) if i == "error" || i == "r#error" => {}
        _ => return None,
    }
    let TokenTree::Group(args) = it.next()? else {
        return None;
    };
    let toks: Vec<TokenTree> = args.stream().into_iter().collect();
    let TokenTree::Literal(l) = toks.first()? else {
        return None;
    };
    let range = (src.range)(l.span());
    let text = src.text.get(range.clone())?;
    let pieces = lit::decode(text)?;
    let chars: Vec<char> = pieces.iter().map(|p| p.ch).collect();
    let phs = fmt::parse(&chars)?;
    // the arguments after the literal: named (`x = ..`) or positional
    let mut named = Vec::new();
    let mut positional = 0;
    for seg in toks[1..].split(|t| matches!(t, TokenTree::Punct(p) if p.as_char() == ',')) {
        match seg {
            [] => {}
            [TokenTree::Ident(n), TokenTree::Punct(eq), _, ..] if eq.as_char() == '=' => {
                named.push(n.to_string().trim_start_matches("r#").to_string());
            }
            _ => positional += 1,
        }
    }
    let refs: Vec<&fmt::ArgRef> = phs.iter().flat_map(fmt::Placeholder::refs).collect();
    let raw = refs.iter().find_map(|r| match &r.kind {
        ArgKind::Name(n) if n.starts_with("r#") => Some(n.clone()),
        _ => None,
    });
    let numbered = refs.iter().any(|r| matches!(r.kind, ArgKind::Index(_)));
    let shadow = refs
        .iter()
        .filter_map(|r| r.unraw_name())
        .find(|n| named.iter().any(|a| a == n));
    let (rule, what) = if let Some(n) = raw {
        (
            Rule::RawIdentInFormat,
            format!(
                "raw identifier `{n}`: thiserror 2 rejects `r#` inside format strings (write `{}`)",
                &n[2..]
            ),
        )
    } else if numbered && positional > 0 {
        (
            Rule::PositionalWithNumbered,
            "numbered `{N}` together with extra positional arguments: thiserror 2 rejects this on a tuple struct or variant (name the extra arguments)".to_string(),
        )
    } else if let Some(n) = shadow {
        (
            Rule::ShadowedFieldBound,
            format!(
                "named argument `{n}`: if it shadows a field, thiserror 2 no longer infers that field's bound"
            ),
        )
    } else {
        return None;
    };
    let (line, column) = (src.line_col)(range.start);
    Some(SourceFinding {
        path: path.to_path_buf(),
        line,
        column,
        rule,
        message: format!(
            "an #[error] message inside a macro whose tokens are not Rust items (`$` metavariables or a custom syntax): \
             align-deps cannot tell the type it belongs to, so it cannot decide or fix it: {what}"
        ),
        suggestion: Some(
            "check this message by hand against thiserror 2 (the type the macro expands to)".into(),
        ),
        fixable: false,
    })
}
