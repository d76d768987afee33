//! The syntax walk over one parsed file: which types derive thiserror's
//! `Error` (however it was imported), their `#[error(...)]` attributes, and
//! rules 1-3 on those attributes' format strings.

use std::ops::Range;
use std::path::Path;

use proc_macro2::{Span, TokenTree};
use syn::punctuated::Punctuated;
use syn::spanned::Spanned as _;
use syn::visit::{self, Visit};
use syn::{Attribute, Fields, Generics, Ident, Meta, MetaList, Token};

use super::fmt::{self, ArgKind, Placeholder};
use super::scope::Scope;
use super::{CrateContext, DeriveSite, DeriveVia, Rule, SourceFinding, lit, macros};
use crate::edit::Splice;

mod arguments;

/// The file's text and the map from the parser's byte offsets (relative to
/// what `syn::parse_file` tokenizes, i.e. after a BOM or shebang line) to
/// offsets, lines and columns of the file.
#[derive(Debug)]
pub(crate) struct Source<'a> {
    pub text: &'a str,
    /// Offset in `text` of what the tokenizer saw.
    pub content_start: usize,
    line_starts: Vec<usize>,
}

impl<'a> Source<'a> {
    pub fn new(text: &'a str) -> Self {
        // mirrors `syn::parse_file`: strip a BOM, then a shebang line (not `#![attr]`)
        let mut start = if text.starts_with('\u{feff}') {
            '\u{feff}'.len_utf8()
        } else {
            0
        };
        let rest = &text[start..];
        if let Some(after) = rest.strip_prefix("#!")
            && !after.trim_start().starts_with('[')
        {
            start += rest.find('\n').unwrap_or(rest.len());
        }
        let line_starts = std::iter::once(0)
            .chain(text.match_indices('\n').map(|(i, _)| i + 1))
            .collect();
        Source {
            text,
            content_start: start,
            line_starts,
        }
    }

    /// The file bytes of `span`.
    pub fn range(&self, span: Span) -> Range<usize> {
        let r = span.byte_range();
        r.start + self.content_start..r.end + self.content_start
    }

    /// 1-based line and column (in characters) of byte `offset`.
    pub fn line_col(&self, offset: usize) -> (usize, usize) {
        let line = self.line_starts.partition_point(|&s| s <= offset);
        let start = self.line_starts[line - 1];
        let col = self
            .text
            .get(start..offset)
            .map_or(offset - start, |s| s.chars().count());
        (line, col + 1)
    }
}

/// What the walk found in one file.
#[derive(Debug, Default)]
pub(crate) struct Scan {
    pub findings: Vec<SourceFinding>,
    pub edits: Vec<Splice>,
    pub derives: Vec<DeriveSite>,
    pub error: Option<String>,
}

pub(crate) fn scan(path: &Path, src: &Source<'_>, file: &syn::File, ctx: &CrateContext) -> Scan {
    let mut s = Scanner {
        path,
        src,
        ctx,
        scopes: Vec::new(),
        out: Scan::default(),
    };
    s.visit_file(file);
    s.out
}

/// Crates whose `Error` derives are not thiserror's, even with `#[error]` helpers.
const NOT_THISERROR: &[&str] = &[
    "std",
    "core",
    "alloc",
    "derive_more",
    "snafu",
    "failure",
    "displaydoc",
];

/// An argument of a format message: `expr` or `name = expr`.
#[derive(Debug)]
struct FmtArg {
    /// The unraw name and its span, for a named argument.
    name: Option<(String, Span)>,
    value: Vec<TokenTree>,
    /// File bytes of the whole argument (name included).
    range: Range<usize>,
    /// A top-level `|` or `<`: a closure or generics whose commas may have
    /// been split wrongly; such an argument list is not rewritten.
    complex: bool,
}

struct Scanner<'a> {
    path: &'a Path,
    src: &'a Source<'a>,
    ctx: &'a CrateContext,
    scopes: Vec<Scope>,
    out: Scan,
}

impl<'ast> Visit<'ast> for Scanner<'_> {
    fn visit_file(&mut self, f: &'ast syn::File) {
        self.scopes.push(Scope::of_items(true, f.items.iter()));
        visit::visit_file(self, f);
        self.scopes.pop();
    }

    fn visit_item_mod(&mut self, m: &'ast syn::ItemMod) {
        if let Some((_, items)) = &m.content {
            self.scopes.push(Scope::of_items(true, items.iter()));
            visit::visit_item_mod(self, m);
            self.scopes.pop();
        }
    }

    fn visit_block(&mut self, b: &'ast syn::Block) {
        let items = b.stmts.iter().filter_map(|s| match s {
            syn::Stmt::Item(i) => Some(i),
            _ => None,
        });
        self.scopes.push(Scope::of_items(false, items));
        visit::visit_block(self, b);
        self.scopes.pop();
    }

    fn visit_item_struct(&mut self, s: &'ast syn::ItemStruct) {
        self.check_item(&s.attrs, &s.generics, &s.ident, Body::Struct(&s.fields));
        visit::visit_item_struct(self, s);
    }

    fn visit_item_enum(&mut self, e: &'ast syn::ItemEnum) {
        self.check_item(&e.attrs, &e.generics, &e.ident, Body::Enum(&e.variants));
        visit::visit_item_enum(self, e);
    }

    /// A macro invocation or `macro_rules!` definition: its tokens that are
    /// items are scanned as items (in the enclosing scope); see [`macros`].
    fn visit_macro(&mut self, m: &'ast syn::Macro) {
        if !macros::may_hold(&m.tokens) {
            return;
        }
        let mut found = macros::MacroTokens::default();
        let src = self.src;
        let locate = macros::Locate {
            text: src.text,
            range: &|span| src.range(span),
            line_col: &|at| src.line_col(at),
        };
        macros::read(m.tokens.clone(), self.path, &locate, &mut found);
        self.out.findings.append(&mut found.findings);
        for file in &found.items {
            self.scopes.push(Scope::of_items(false, file.items.iter()));
            for item in &file.items {
                self.visit_item(item);
            }
            self.scopes.pop();
        }
    }
}

enum Body<'a> {
    Struct(&'a Fields),
    Enum(&'a Punctuated<syn::Variant, Token![,]>),
}

/// `derive(...)` paths and `error(...)` lists of `attrs`, looking inside `cfg_attr`.
fn collect_attrs(attrs: &[Attribute]) -> (Vec<syn::Path>, Vec<MetaList>) {
    fn walk(meta: &Meta, derives: &mut Vec<syn::Path>, errors: &mut Vec<MetaList>) {
        let Meta::List(list) = meta else { return };
        if list.path.is_ident("derive") {
            if let Ok(paths) =
                list.parse_args_with(Punctuated::<syn::Path, Token![,]>::parse_terminated)
            {
                derives.extend(paths);
            }
        } else if list.path.is_ident("cfg_attr") {
            if let Ok(metas) = list.parse_args_with(Punctuated::<Meta, Token![,]>::parse_terminated)
            {
                for m in metas.iter().skip(1) {
                    walk(m, derives, errors);
                }
            }
        } else if list.path.is_ident("error") {
            errors.push(list.clone());
        }
    }
    let (mut derives, mut errors) = (Vec::new(), Vec::new());
    for a in attrs {
        walk(&a.meta, &mut derives, &mut errors);
    }
    (derives, errors)
}

/// `error("...")`, `error(transparent)` or `error(fmt = ...)`: thiserror's helper,
/// not derive_more's `error(source)` / `error(ignore)`.
fn is_thiserror_helper(list: &MetaList) -> bool {
    match list.tokens.clone().into_iter().next() {
        Some(TokenTree::Literal(l)) => matches!(syn::Lit::new(l), syn::Lit::Str(_)),
        Some(TokenTree::Ident(i)) => i == "transparent" || i == "fmt",
        _ => false,
    }
}

fn unraw(s: &str) -> &str {
    s.strip_prefix("r#").unwrap_or(s)
}

impl Scanner<'_> {
    fn fail(&mut self, msg: String) {
        self.out.error.get_or_insert(msg);
    }

    fn finding(
        &mut self,
        at: usize,
        rule: Rule,
        message: String,
        suggestion: Option<String>,
        fixable: bool,
    ) {
        let (line, column) = self.src.line_col(at);
        self.out.findings.push(SourceFinding {
            path: self.path.to_path_buf(),
            line,
            column,
            rule,
            message,
            suggestion,
            fixable,
        });
    }

    /// The path a name leads to through `use` / `extern crate`, innermost scope
    /// first; a module does not see its parent's names unless it `use super::*`.
    fn lookup(&self, name: &str) -> Option<Vec<String>> {
        for scope in self.scopes.iter().rev() {
            if let Some(p) = scope.names.get(name) {
                return Some(p.clone());
            }
            for g in &scope.globs {
                if g.len() == 1 && self.ctx.is_thiserror_name(&g[0]) && name == "Error" {
                    return Some(vec![g[0].clone(), "Error".into()]);
                }
            }
            if scope.module && !scope.globs.iter().any(|g| g.len() == 1 && g[0] == "super") {
                break;
            }
        }
        None
    }

    /// Where a derive path leads, if it can be thiserror's `Error`.
    fn classify(&self, path: &syn::Path) -> Option<DeriveVia> {
        let segs: Vec<String> = path.segments.iter().map(|s| s.ident.to_string()).collect();
        let resolved = match segs.first().map(String::as_str) {
            None => return None,
            Some("crate" | "self" | "super") => segs.clone(),
            Some(first) if path.leading_colon.is_none() => match self.lookup(first) {
                Some(mut p) => {
                    p.extend(segs[1..].iter().cloned());
                    p
                }
                None => segs.clone(),
            },
            Some(_) => segs.clone(),
        };
        if !resolved.last().is_some_and(|l| l.ends_with("Error")) {
            return None;
        }
        if resolved.len() == 1 {
            return Some(DeriveVia::Unresolved);
        }
        if self.ctx.is_thiserror_name(&resolved[0]) {
            return Some(DeriveVia::Direct);
        }
        if NOT_THISERROR.contains(&resolved[0].as_str()) {
            return None;
        }
        Some(DeriveVia::ReExport {
            path: resolved.join("::"),
        })
    }

    fn check_item(
        &mut self,
        attrs: &[Attribute],
        generics: &Generics,
        name: &Ident,
        body: Body<'_>,
    ) {
        let (derives, type_errors) = collect_attrs(attrs);
        if derives.is_empty() {
            return;
        }
        let variants: Vec<(&syn::Variant, Vec<MetaList>)> = match &body {
            Body::Struct(_) => Vec::new(),
            Body::Enum(vs) => vs.iter().map(|v| (v, collect_attrs(&v.attrs).1)).collect(),
        };
        let helper_seen = type_errors
            .iter()
            .chain(variants.iter().flat_map(|(_, e)| e))
            .any(is_thiserror_helper);
        let Some((path, via)) = derives.iter().find_map(|p| match self.classify(p)? {
            DeriveVia::Direct => Some((p, DeriveVia::Direct)),
            via if helper_seen => Some((p, via)),
            _ => None,
        }) else {
            return;
        };
        let at = self.src.range(path.span()).start;
        let (line, column) = self.src.line_col(at);
        let written = path
            .segments
            .iter()
            .map(|s| s.ident.to_string())
            .collect::<Vec<_>>()
            .join("::");
        let written = if path.leading_colon.is_some() {
            format!("::{written}")
        } else {
            written
        };
        self.out.derives.push(DeriveSite {
            path: self.path.to_path_buf(),
            line,
            column,
            written,
            via,
        });

        match body {
            Body::Struct(fields) => {
                for list in &type_errors {
                    self.check_error_attr(
                        list,
                        Some(fields),
                        generics,
                        &format!("struct `{name}`"),
                    );
                }
            }
            Body::Enum(_) => {
                for list in &type_errors {
                    self.check_error_attr(list, None, generics, &format!("enum `{name}`"));
                }
                for (v, lists) in &variants {
                    for list in lists {
                        let what = format!("variant `{name}::{}`", v.ident);
                        self.check_error_attr(list, Some(&v.fields), generics, &what);
                    }
                }
            }
        }
    }

    /// Splits the tokens after the format literal into arguments.
    fn split_args(&self, toks: &[TokenTree]) -> Option<Vec<FmtArg>> {
        let mut segments: Vec<Vec<TokenTree>> = vec![Vec::new()];
        for t in toks {
            match t {
                TokenTree::Punct(p) if p.as_char() == ',' => segments.push(Vec::new()),
                _ => segments.last_mut().expect("never empty").push(t.clone()),
            }
        }
        if !segments[0].is_empty() {
            return None;
        }
        if segments.len() > 1 && segments.last().is_some_and(Vec::is_empty) {
            segments.pop();
        }
        let mut out = Vec::new();
        for seg in segments.into_iter().skip(1) {
            let (first, last) = (seg.first()?, seg.last()?);
            let range = self.src.range(first.span()).start..self.src.range(last.span()).end;
            let (name, value) = match seg.as_slice() {
                [TokenTree::Ident(i), TokenTree::Punct(eq), rest @ ..]
                    if eq.as_char() == '='
                        && eq.spacing() == proc_macro2::Spacing::Alone
                        && !rest.is_empty() =>
                {
                    (
                        Some((unraw(&i.to_string()).to_string(), i.span())),
                        rest.to_vec(),
                    )
                }
                _ => (None, seg.clone()),
            };
            let complex = value
                .iter()
                .any(|t| matches!(t, TokenTree::Punct(p) if matches!(p.as_char(), '|' | '<')));
            out.push(FmtArg {
                name,
                value,
                range,
                complex,
            });
        }
        Some(out)
    }

    /// Rules 1-3 on one `error(...)` list. `fields` is `None` for an enum-level message.
    fn check_error_attr(
        &mut self,
        list: &MetaList,
        fields: Option<&Fields>,
        generics: &Generics,
        what: &str,
    ) {
        let toks: Vec<TokenTree> = list.tokens.clone().into_iter().collect();
        let Some(TokenTree::Literal(l)) = toks.first() else {
            return;
        };
        if !matches!(syn::Lit::new(l.clone()), syn::Lit::Str(_)) {
            return;
        }
        let lit_range = self.src.range(l.span());
        if self.src.text.get(lit_range.clone()) != Some(l.to_string().as_str()) {
            self.fail(format!("internal error: a string literal's span does not match the file's bytes at {lit_range:?}"));
            return;
        }
        let Some(pieces) = lit::decode(&self.src.text[lit_range.clone()]) else {
            return;
        };
        let chars: Vec<char> = pieces.iter().map(|p| p.ch).collect();
        let Some(phs) = fmt::parse(&chars) else {
            return;
        };
        let base = lit_range.start;
        // file offset of the start / end of value character `i`
        let start_of = |i: usize| base + pieces[i].src.start;
        let end_of = |i: usize| base + pieces[i].src.end;

        // Rule 1: `{r#name}` (and `r#name$` parameters) -> `{name}`
        for r in phs.iter().flat_map(Placeholder::refs) {
            if let ArgKind::Name(n) = &r.kind
                && n.starts_with("r#")
            {
                let del = start_of(r.chars.start)..end_of(r.chars.start + 1);
                let bare = &n[2..];
                self.out.edits.push(Splice::delete(del.clone()));
                self.finding(
                    del.start,
                    Rule::RawIdentInFormat,
                    format!("raw identifier `{n}` in the #[error] message of {what}: thiserror 2 rejects `r#` inside format strings"),
                    Some(format!("write `{bare}` instead of `{n}`")),
                    true,
                );
            }
        }

        let Some(args) = self.split_args(&toks[1..]) else {
            return;
        };
        let Some(fields) = fields else { return };
        match fields {
            Fields::Named(named) => self.rule2(&phs, &args, named, generics, what),
            Fields::Unnamed(u) if !u.unnamed.is_empty() => {
                let edits = self.rule3(
                    &phs,
                    &args,
                    u.unnamed.len(),
                    &start_of,
                    &end_of,
                    what,
                    lit_range.start,
                );
                self.out.edits.extend(edits);
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn line_col_is_one_based_and_counts_characters() {
        let s = Source::new("ab\néé x\n");
        assert_eq!(s.line_col(0), (1, 1));
        assert_eq!(s.line_col(3), (2, 1));
        assert_eq!(s.line_col(8), (2, 4)); // after "éé " (5 bytes, 3 chars)
    }

    #[test]
    fn content_start_skips_bom_and_shebang_but_not_inner_attributes() {
        assert_eq!(Source::new("\u{feff}fn f() {}").content_start, 3);
        assert_eq!(
            Source::new("#!/usr/bin/env run\nfn f() {}").content_start,
            18
        );
        assert_eq!(Source::new("#![allow(x)]\nfn f() {}").content_start, 0);
    }
}
