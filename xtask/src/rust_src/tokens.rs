//! Token streams for `--verify-formatting-only`: `proc_macro2` lexes the
//! source (comments blanked out by [`super::lexer`]), and the stream is
//! compared by token kind and text, never spacing.
//!
//! rustfmt's stable defaults also edit a few tokens; both sides are
//! normalized so that exactly those edits compare equal:
//! - trailing commas (before `)`/`]`/`}`, `>`, `;`, `{`) are dropped, except
//!   the comma of a one-element tuple `(a,)`;
//! - in a `match` body, the commas between arms are dropped and an arm body
//!   `{ expr }` without statements is unwrapped (rustfmt adds and removes
//!   those braces with the line width);
//! - a closure body `{ expr }` without statements is unwrapped;
//! - the `;` rustfmt adds after a final `return`/`break`/`continue` is dropped;
//! - `extern` without an ABI gets `"C"` (`force_explicit_abi`);
//! - runs of consecutive `use` items compare as sorted sets of imported
//!   paths (`reorder_imports`, brace flattening); runs of `mod x;` and of
//!   `extern crate` items compare sorted (`reorder_modules`).
//!
//! A literal, identifier, operator or delimiter that changes, appears or
//! disappears anywhere else is a difference.

use std::str::FromStr as _;

use proc_macro2::{Delimiter, TokenStream, TokenTree};

/// What a token is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// An opening delimiter.
    Open,
    /// A closing delimiter.
    Close,
    /// An identifier or keyword.
    Ident,
    /// One punctuation character.
    Punct,
    /// A literal, as written.
    Literal,
    /// One normalized import / `mod` / `extern crate` of a sorted run.
    Item,
}

/// One token of a normalized stream.
#[derive(Debug, Clone)]
pub struct Tok {
    /// Its kind.
    pub kind: Kind,
    /// Its text.
    pub text: String,
    /// 1-based line in the source.
    pub line: usize,
}

impl PartialEq for Tok {
    fn eq(&self, other: &Tok) -> bool {
        self.kind == other.kind && self.text == other.text
    }
}

#[derive(Debug, Clone)]
enum Tt {
    Group {
        delim: Delimiter,
        open: usize,
        close: usize,
        body: Vec<Tt>,
    },
    Leaf(Tok),
}

impl Tt {
    fn is_punct(&self, c: char) -> bool {
        matches!(self, Tt::Leaf(t) if t.kind == Kind::Punct && t.text.len() == 1 && t.text.starts_with(c))
    }
    fn is_ident(&self, s: &str) -> bool {
        matches!(self, Tt::Leaf(t) if t.kind == Kind::Ident && t.text == s)
    }
    fn is_group(&self, d: Delimiter) -> bool {
        matches!(self, Tt::Group { delim, .. } if *delim == d)
    }
    fn line(&self) -> usize {
        match self {
            Tt::Group { open, .. } => *open,
            Tt::Leaf(t) => t.line,
        }
    }
}

/// The normalized token stream of Rust source whose comments are already blanked.
///
/// # Errors
/// The text does not lex (unbalanced delimiters, unterminated literal).
pub fn normalized_tokens(blanked: &str) -> Result<Vec<Tok>, String> {
    let ts = TokenStream::from_str(blanked).map_err(|e| format!("does not lex: {e}"))?;
    let tree = normalize(convert(ts), Delimiter::None, false);
    let mut out = Vec::new();
    flatten(&tree, &mut out);
    Ok(out)
}

fn convert(ts: TokenStream) -> Vec<Tt> {
    ts.into_iter()
        .map(|tt| match tt {
            TokenTree::Group(g) => Tt::Group {
                delim: g.delimiter(),
                open: g.span_open().start().line,
                close: g.span_close().start().line,
                body: convert(g.stream()),
            },
            TokenTree::Ident(i) => leaf(Kind::Ident, i.to_string(), i.span().start().line),
            TokenTree::Punct(p) => {
                leaf(Kind::Punct, p.as_char().to_string(), p.span().start().line)
            }
            TokenTree::Literal(l) => leaf(Kind::Literal, l.to_string(), l.span().start().line),
        })
        .fold(Vec::new(), |mut out: Vec<Tt>, t| {
            // `x.0.1` lexes `0.1` as one float, `x.0 .1` as three tokens
            let digits = |s: &str| !s.is_empty() && s.bytes().all(|c| c.is_ascii_digit());
            if let Tt::Leaf(tok) = &t
                && let Some((a, b)) = tok.text.split_once('.')
                && tok.kind == Kind::Literal
                && digits(a)
                && digits(b)
                && out.last().is_some_and(|p| p.is_punct('.'))
            {
                out.push(leaf(Kind::Literal, a.into(), tok.line));
                out.push(leaf(Kind::Punct, ".".into(), tok.line));
                out.push(leaf(Kind::Literal, b.into(), tok.line));
                return out;
            }
            out.push(t);
            out
        })
}

fn leaf(kind: Kind, text: String, line: usize) -> Tt {
    Tt::Leaf(Tok { kind, text, line })
}

fn delims(d: Delimiter) -> (&'static str, &'static str) {
    match d {
        Delimiter::Parenthesis => ("(", ")"),
        Delimiter::Brace => ("{", "}"),
        Delimiter::Bracket => ("[", "]"),
        Delimiter::None => ("", ""),
    }
}

fn flatten(seq: &[Tt], out: &mut Vec<Tok>) {
    for t in seq {
        match t {
            Tt::Leaf(tok) => out.push(tok.clone()),
            Tt::Group {
                delim,
                open,
                close,
                body,
            } => {
                let (o, c) = delims(*delim);
                out.push(Tok {
                    kind: Kind::Open,
                    text: o.into(),
                    line: *open,
                });
                flatten(body, out);
                out.push(Tok {
                    kind: Kind::Close,
                    text: c.into(),
                    line: *close,
                });
            }
        }
    }
}

fn render(seq: &[Tt]) -> String {
    let mut toks = Vec::new();
    flatten(seq, &mut toks);
    toks.iter()
        .map(|t| t.text.as_str())
        .collect::<Vec<_>>()
        .join(" ")
}

fn has_top_level_semi(body: &[Tt]) -> bool {
    body.iter().any(|t| t.is_punct(';'))
}

/// A `{ expr }` whose braces rustfmt may add or remove: non-empty, no statements.
fn unwrappable(t: &Tt) -> Option<&Vec<Tt>> {
    match t {
        Tt::Group {
            delim: Delimiter::Brace,
            body,
            ..
        } if !body.is_empty() && !has_top_level_semi(body) => Some(body),
        _ => None,
    }
}

/// Whether a `( ... )` group after `prev` (and `prev2` before it) can be a
/// tuple or tuple pattern/type, where `(a,)` and `(a)` differ; after a name
/// (call, fn declaration, tuple struct), a generic `>` or a macro `!` it is
/// an argument or parameter list, whose trailing comma rustfmt edits freely.
fn tuple_context(prev: Option<&Tt>, prev2: Option<&Tt>) -> bool {
    const EXPR_KEYWORDS: [&str; 12] = [
        "return", "break", "in", "match", "if", "while", "yield", "let", "mut", "ref", "else",
        "move",
    ];
    match prev {
        None => true,
        Some(Tt::Leaf(t)) if t.kind == Kind::Ident => EXPR_KEYWORDS.contains(&t.text.as_str()),
        Some(p) if p.is_punct('>') => prev2.is_some_and(|q| q.is_punct('-') || q.is_punct('=')),
        Some(p) if p.is_punct('!') => false,
        Some(Tt::Group { delim, .. }) => *delim == Delimiter::Brace,
        Some(_) => true,
    }
}

fn normalize(seq: Vec<Tt>, delim: Delimiter, tuple_like: bool) -> Vec<Tt> {
    // children first
    let mut seq = seq;
    for i in 0..seq.len() {
        let tuple = tuple_context(
            i.checked_sub(1).map(|k| &seq[k]),
            i.checked_sub(2).map(|k| &seq[k]),
        );
        if let Tt::Group { delim, body, .. } = &mut seq[i] {
            *body = normalize(
                std::mem::take(body),
                *delim,
                tuple && *delim == Delimiter::Parenthesis,
            );
        }
    }

    // `extern` without an ABI: rustfmt writes `extern "C"`.
    let mut i = 0;
    while i < seq.len() {
        if seq[i].is_ident("extern") {
            let next_is_abi =
                matches!(seq.get(i + 1), Some(Tt::Leaf(t)) if t.kind == Kind::Literal);
            if !next_is_abi && !seq.get(i + 1).is_some_and(|t| t.is_ident("crate")) {
                let line = seq[i].line();
                seq.insert(i + 1, leaf(Kind::Literal, "\"C\"".into(), line));
            }
        }
        i += 1;
    }

    // `return x` -> `return x;` at the end of a block (trailing_semicolon).
    if delim == Delimiter::Brace && seq.last().is_some_and(|t| t.is_punct(';')) {
        let end = seq.len() - 1;
        let last_jump = seq[..end]
            .iter()
            .rposition(|t| t.is_ident("return") || t.is_ident("break") || t.is_ident("continue"));
        if last_jump.is_some_and(|k| !has_top_level_semi(&seq[k..end])) {
            seq.pop();
        }
    }

    // closure bodies `|x| { x }` -> `|x| x`
    let mut out: Vec<Tt> = Vec::with_capacity(seq.len());
    for t in seq {
        let after_bar = out.last().is_some_and(|p| p.is_punct('|'));
        match (after_bar, unwrappable(&t)) {
            (true, Some(body)) => out.extend(body.iter().cloned()),
            _ => out.push(t),
        }
    }
    let mut seq = out;

    // match bodies: no commas between arms, `=> { expr }` -> `=> expr`
    let mut k = 0;
    while k < seq.len() {
        if seq[k].is_ident("match") {
            // the arms: the first `{}` after `match` that is not a block in the scrutinee
            let block_kw = ["unsafe", "async", "move", "const", "else"];
            let arms = (k + 1..seq.len()).find(|&j| {
                seq[j].is_group(Delimiter::Brace)
                    && !block_kw.iter().any(|kw| seq[j - 1].is_ident(kw))
            });
            if let Some(j) = arms {
                if let Tt::Group { body, .. } = &mut seq[j] {
                    *body = normalize_arms(std::mem::take(body));
                }
                k = j;
            }
        }
        k += 1;
    }

    // trailing commas
    let top_commas = seq.iter().filter(|t| t.is_punct(',')).count();
    let mut out: Vec<Tt> = Vec::with_capacity(seq.len());
    for idx in 0..seq.len() {
        if seq[idx].is_punct(',') {
            let next = seq.get(idx + 1);
            let trailing = match next {
                None => !(tuple_like && top_commas == 1),
                Some(n) => n.is_punct('>') || n.is_punct(';') || n.is_group(Delimiter::Brace),
            };
            if trailing {
                continue;
            }
        }
        out.push(seq[idx].clone());
    }
    sort_item_runs(out)
}

fn normalize_arms(body: Vec<Tt>) -> Vec<Tt> {
    let mut out: Vec<Tt> = Vec::with_capacity(body.len());
    let mut angle = 0usize; // inside a turbofish `::<A, B>`
    for t in body {
        let n = out.len();
        if t.is_punct('<')
            && (angle > 0 || (n >= 2 && out[n - 1].is_punct(':') && out[n - 2].is_punct(':')))
        {
            angle += 1;
        } else if t.is_punct('>') && angle > 0 {
            angle -= 1;
        } else if t.is_punct(',') && angle == 0 {
            continue;
        }
        let after_arrow =
            out.len() >= 2 && out[out.len() - 2].is_punct('=') && out[out.len() - 1].is_punct('>');
        match (after_arrow, unwrappable(&t)) {
            (true, Some(inner)) => out.extend(inner.iter().cloned()),
            _ => out.push(t),
        }
    }
    out
}

#[derive(PartialEq, Eq, Clone, Copy)]
enum ItemKind {
    Use,
    Mod,
    ExternCrate,
}

/// Parses `#[attr]* vis? (use ...; | mod x; | extern crate x ...;)` at `i`:
/// (kind, index after the `;`, the sorted units it contributes).
fn parse_item(seq: &[Tt], i: usize) -> Option<(ItemKind, usize, Vec<String>)> {
    let mut k = i;
    while seq.get(k).is_some_and(|t| t.is_punct('#'))
        && seq
            .get(k + 1)
            .is_some_and(|t| t.is_group(Delimiter::Bracket))
    {
        k += 2;
    }
    if seq.get(k).is_some_and(|t| t.is_ident("pub")) {
        k += 1;
        if seq
            .get(k)
            .is_some_and(|t| t.is_group(Delimiter::Parenthesis))
        {
            k += 1;
        }
    }
    let head = render(&seq[i..k]);
    let kind = if seq.get(k).is_some_and(|t| t.is_ident("use")) {
        ItemKind::Use
    } else if seq.get(k).is_some_and(|t| t.is_ident("mod"))
        && matches!(seq.get(k + 1), Some(Tt::Leaf(t)) if t.kind == Kind::Ident)
        && seq.get(k + 2).is_some_and(|t| t.is_punct(';'))
    {
        ItemKind::Mod
    } else if seq.get(k).is_some_and(|t| t.is_ident("extern"))
        && seq.get(k + 1).is_some_and(|t| t.is_ident("crate"))
    {
        ItemKind::ExternCrate
    } else {
        return None;
    };
    let semi = (k..seq.len()).find(|&j| seq[j].is_punct(';'))?;
    let units = match kind {
        ItemKind::Use => {
            let mut leaves = Vec::new();
            use_leaves(&seq[k + 1..semi], &format!("{head} use "), &mut leaves);
            leaves
        }
        _ => vec![render(&seq[i..=semi])],
    };
    Some((kind, semi + 1, units))
}

fn use_leaves(tree: &[Tt], prefix: &str, out: &mut Vec<String>) {
    match tree.last() {
        Some(Tt::Group {
            delim: Delimiter::Brace,
            body,
            ..
        }) => {
            let head = format!("{prefix}{} ", render(&tree[..tree.len() - 1]));
            for part in body.split(|t| t.is_punct(',')).filter(|p| !p.is_empty()) {
                use_leaves(part, &head, out);
            }
        }
        _ => out.push(
            format!("{prefix}{}", render(tree))
                .split_whitespace()
                .collect::<Vec<_>>()
                .join(" "),
        ),
    }
}

fn sort_item_runs(seq: Vec<Tt>) -> Vec<Tt> {
    let mut out = Vec::with_capacity(seq.len());
    let mut i = 0;
    let mut at_start = true;
    while i < seq.len() {
        if at_start && let Some((kind, mut end, mut units)) = parse_item(&seq, i) {
            let line = seq[i].line();
            while let Some((_, e2, u2)) = parse_item(&seq, end).filter(|(k2, ..)| *k2 == kind) {
                units.extend(u2);
                end = e2;
            }
            units.sort();
            out.extend(units.into_iter().map(|u| leaf(Kind::Item, u, line)));
            i = end;
            continue;
        }
        at_start = seq[i].is_punct(';')
            || seq[i].is_group(Delimiter::Brace)
            || seq[i].is_group(Delimiter::Bracket);
        out.push(seq[i].clone());
        i += 1;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn same(a: &str, b: &str) -> bool {
        normalized_tokens(a).unwrap() == normalized_tokens(b).unwrap()
    }

    #[test]
    fn spacing_does_not_matter_but_tokens_do() {
        assert!(same("fn f(){let x=-1;}", "fn f() {\n    let x = -1;\n}\n"));
        assert!(!same("fn f() { 1 }", "fn f() { 2 }"));
        assert!(!same("fn f() { a + b }", "fn f() { a - b }"));
        assert!(!same("fn f() { \"a\" }", "fn f() { \"b\" }"));
    }

    #[test]
    fn rustfmt_token_edits_compare_equal() {
        assert!(same("f(a, b,);", "f(a, b);"));
        assert!(same(
            "struct S<T,> where T: X, { a: T, }",
            "struct S<T> where T: X { a: T }"
        ));
        assert!(same(
            "match x { A => { f(a) }, B => g(), }",
            "match x {\n A => f(a),\n B => g()\n}"
        ));
        assert!(same(
            "match x { A => f(a), B => {} }",
            "match x { A => f(a), B => {}, }"
        ));
        assert!(same("v.map(|x| { x + 1 });", "v.map(|x| x + 1);"));
        assert!(same("fn f() { return 1 }", "fn f() { return 1; }"));
        assert!(same("extern { fn f(); }", "extern \"C\" { fn f(); }"));
        assert!(same(
            "use b::{y, x};\nuse a;\nmod z;\nmod c;",
            "use a;\nuse b::{x, y};\nmod c;\nmod z;"
        ));
        assert!(same("use a::{b};", "use a::b;"));
        assert!(same(
            "match unsafe { p() } { A => P::<F, ()>::new(), B => {} }",
            "match unsafe { p() } { A => { P::<F, ()>::new() } B => {} }"
        ));
        assert!(same("f(&self.0.1)", "f(&self.0 .1)"));
    }

    #[test]
    fn semantics_changes_still_differ() {
        assert!(!same("let t = (a,);", "let t = (a);"));
        assert!(!same(
            "fn f() -> (u8,) { g((a,)) }",
            "fn f() -> (u8) { g((a)) }"
        ));
        assert!(same(
            "fn f(\n    x: u8,\n) { g(a,); m!(b,); }",
            "fn f(x: u8) { g(a); m!(b); }"
        ));
        assert!(!same("fn f() { g(); }", "fn f() { g() }"));
        assert!(!same("use a::{b, c};", "use a::{b, d};"));
        assert!(!same(
            "match x { A => { f(); g() } }",
            "match x { A => g() }"
        ));
    }
}
