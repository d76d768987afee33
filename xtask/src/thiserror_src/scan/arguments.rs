//! The arguments after an `#[error]` message and the two source rules
//! about them: a named argument that shadows a field whose bound thiserror
//! 1 inferred (rule 2, [`SourceRule::ShadowedFieldBound`]) and `{0}` beside
//! extra positional arguments (rule 3, [`SourceRule::PositionalWithNumbered`]).
//!
//! [`SourceRule::ShadowedFieldBound`]: crate::thiserror_src::Rule::ShadowedFieldBound
//! [`SourceRule::PositionalWithNumbered`]: crate::thiserror_src::Rule::PositionalWithNumbered

use std::collections::BTreeSet;

use proc_macro2::TokenTree;
use syn::Generics;
use syn::spanned::Spanned as _;

use super::{FmtArg, Scanner, unraw};
use crate::edit::{Splice, try_apply_splices};
use crate::thiserror_src::Rule;
use crate::thiserror_src::bounds::{bound_trait, has_bound, mentions_type_param};
use crate::thiserror_src::fmt::{ArgKind, ArgRef, Placeholder};

const KEYWORDS: &[&str] = &[
    "as", "async", "await", "break", "const", "continue", "crate", "dyn", "else", "enum", "extern",
    "false", "fn", "for", "gen", "if", "impl", "in", "let", "loop", "match", "mod", "move", "mut",
    "pub", "ref", "return", "self", "Self", "static", "struct", "super", "trait", "true", "type",
    "unsafe", "use", "where", "while", "abstract", "become", "box", "do", "final", "macro",
    "override", "priv", "try", "typeof", "unsized", "virtual", "yield",
];

/// A name usable as a format argument we introduce: a plain ASCII identifier,
/// no keyword, not thiserror's own `__field...` bindings.
fn usable_name(n: &str) -> bool {
    let mut chars = n.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && n.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        && n != "_"
        && !n.starts_with("__")
        && !KEYWORDS.contains(&n)
}

/// A name suggested by an argument expression: `x`, `.field`, `expr.field`, `expr.method()`.
fn name_from_expr(value: &[TokenTree]) -> Option<String> {
    let is_dot = |t: &TokenTree| matches!(t, TokenTree::Punct(p) if p.as_char() == '.');
    let name = match value {
        [TokenTree::Ident(i)] => i.to_string(),
        [.., d, TokenTree::Ident(i)] if is_dot(d) => i.to_string(),
        [.., d, TokenTree::Ident(i), TokenTree::Group(g)]
            if is_dot(d)
                && g.delimiter() == proc_macro2::Delimiter::Parenthesis
                && g.stream().is_empty() =>
        {
            i.to_string()
        }
        _ => return None,
    };
    usable_name(&name).then_some(name)
}

/// A name for each positional argument of a message, clashing with nothing
/// in it: the argument's own name where it is a plain one, else `argN`.
fn positional_names(phs: &[Placeholder], args: &[FmtArg], positional: &[&FmtArg]) -> Vec<String> {
    let mut taken: BTreeSet<String> = args
        .iter()
        .filter_map(|a| a.name.as_ref().map(|(n, _)| n.clone()))
        .collect();
    taken.extend(
        phs.iter()
            .flat_map(Placeholder::refs)
            .filter_map(|r| r.unraw_name().map(str::to_string)),
    );
    let mut names = Vec::new();
    for (i, a) in positional.iter().enumerate() {
        let name = match name_from_expr(&a.value) {
            Some(n) if !taken.contains(&n) => n,
            _ => {
                let base = format!("arg{}", i + 1);
                (1..)
                    .map(|k| {
                        if k == 1 {
                            base.clone()
                        } else {
                            format!("{base}_{k}")
                        }
                    })
                    .find(|n| !taken.contains(n))
                    .expect("unbounded")
            }
        };
        taken.insert(name.clone());
        names.push(name);
    }
    names
}

impl Scanner<'_> {
    /// Rule 2: `{name}` where `name` is both a field and a named argument, on a
    /// field whose type mentions a type parameter not already bounded.
    pub(super) fn rule2(
        &mut self,
        phs: &[Placeholder],
        args: &[FmtArg],
        named: &syn::FieldsNamed,
        generics: &Generics,
        what: &str,
    ) {
        let mut seen = BTreeSet::new();
        for ph in phs {
            let Some(name) = ph.arg.unraw_name() else {
                continue;
            };
            let Some((_, span)) = args
                .iter()
                .filter_map(|a| a.name.as_ref())
                .find(|(n, _)| n == name)
            else {
                continue;
            };
            let Some(field) = named.named.iter().find(|f| {
                f.ident
                    .as_ref()
                    .is_some_and(|i| unraw(&i.to_string()) == name)
            }) else {
                continue;
            };
            let trait_name = bound_trait(ph.spec_last);
            if !mentions_type_param(&field.ty, generics)
                || has_bound(generics, &field.ty, trait_name)
                || !seen.insert((name.to_string(), trait_name))
            {
                continue;
            }
            let ty_range = self.src.range(field.ty.span());
            let ty = self
                .src
                .text
                .get(ty_range)
                .unwrap_or("the field's type")
                .to_string();
            let at = self.src.range(*span).start;
            self.finding(
                at,
                Rule::ShadowedFieldBound,
                format!(
                    "named argument `{name}` shadows field `{name}: {ty}` in the #[error] message of {what}: \
                     thiserror 1 inferred `{ty}: {trait_name}` for it, thiserror 2 no longer does"
                ),
                Some(format!(
                    "if the Display impl relied on it, add `where {ty}: ::core::fmt::{trait_name}` to the type \
                     (or rename the argument, e.g. `{name}_ = ...` with `{{{name}_}}`)"
                )),
                false,
            );
        }
    }

    /// Rule 3: numbered `{0}` together with extra positional arguments in a
    /// tuple struct or variant. Returns the edits that name the positional
    /// arguments, or none (and an unfixable finding) when that is ambiguous.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn rule3(
        &mut self,
        phs: &[Placeholder],
        args: &[FmtArg],
        nfields: usize,
        start_of: &dyn Fn(usize) -> usize,
        end_of: &dyn Fn(usize) -> usize,
        what: &str,
        attr_start: usize,
    ) -> Vec<Splice> {
        let positional: Vec<&FmtArg> = args.iter().filter(|a| a.name.is_none()).collect();
        let Some(numbered) = phs.iter().find_map(|p| match p.arg.kind {
            ArgKind::Index(n) => Some(n),
            _ => None,
        }) else {
            return Vec::new();
        };
        let Some(first) = positional.first() else {
            return Vec::new();
        };
        let message = format!(
            "{what} uses numbered `{{{numbered}}}` together with extra positional arguments in its #[error] message: \
             thiserror 2 rejects this"
        );
        let at = first.range.start;
        let unfixable = |s: &mut Self, why: &str| {
            s.finding(
                at,
                Rule::PositionalWithNumbered,
                format!("{message} (not rewritten: {why})"),
                Some("turn the extra positional arguments into named ones: `#[error(\"{0} {n}\", n = x)]`".into()),
                false,
            );
            Vec::new()
        };
        if phs.iter().any(|p| p.star) {
            return unfixable(self, "`.*` precision takes positional arguments");
        }
        if positional.iter().any(|a| a.complex) {
            return unfixable(self, "an argument contains a closure or generics");
        }

        let names = positional_names(phs, args, &positional);

        let mut edits = Vec::new();
        let mut implicit = 0;
        for ph in phs {
            let refs: [(bool, Option<&ArgRef>); 3] = [
                (true, Some(&ph.arg)),
                (false, ph.width.as_ref()),
                (false, ph.precision.as_ref()),
            ];
            for (is_arg, r) in refs {
                let Some(r) = r else { continue };
                let index = match r.kind {
                    ArgKind::Implicit => {
                        implicit += 1;
                        implicit - 1
                    }
                    // `{N}` names field N when there is one (thiserror 1 and 2 agree)
                    ArgKind::Index(n) if is_arg && n < nfields => continue,
                    ArgKind::Index(n) => n,
                    ArgKind::Name(_) => continue,
                };
                let Some(name) = names.get(index) else {
                    return unfixable(self, &format!("positional argument {index} does not exist"));
                };
                let range = if r.chars.is_empty() {
                    start_of(r.chars.start)..start_of(r.chars.start)
                } else {
                    start_of(r.chars.start)..end_of(r.chars.end - 1)
                };
                edits.push(Splice::replace(range, name.clone()));
            }
        }
        for (a, name) in positional.iter().zip(&names) {
            edits.push(Splice::insert(a.range.start, format!("{name} = ")));
        }
        let end = args.last().map_or(attr_start, |a| a.range.end);
        let suggestion = try_apply_splices(&self.src.text[attr_start..end], attr_start, &edits)
            .map(|s| format!("#[error({s})]"))
            .ok();
        self.finding(at, Rule::PositionalWithNumbered, message, suggestion, true);
        edits
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_from_simple_expressions_only() {
        let toks = |s: &str| {
            s.parse::<proc_macro2::TokenStream>()
                .unwrap()
                .into_iter()
                .collect::<Vec<_>>()
        };
        assert_eq!(name_from_expr(&toks("x")), Some("x".into()));
        assert_eq!(name_from_expr(&toks(".code")), Some("code".into()));
        assert_eq!(name_from_expr(&toks(".0.len()")), Some("len".into()));
        assert_eq!(name_from_expr(&toks("self.a.b")), Some("b".into()));
        assert_eq!(name_from_expr(&toks(".1")), None);
        assert_eq!(name_from_expr(&toks(".r#type")), None);
        assert_eq!(name_from_expr(&toks("f(x)")), None);
        assert_eq!(name_from_expr(&toks("__private")), None);
        assert_eq!(name_from_expr(&toks("a + b")), None);
    }

    #[test]
    fn bound_traits_follow_thiserror() {
        assert_eq!(bound_trait(None), "Display");
        assert_eq!(bound_trait(Some('?')), "Debug");
        assert_eq!(bound_trait(Some('x')), "LowerHex");
        assert_eq!(bound_trait(Some('5')), "Display");
    }
}
