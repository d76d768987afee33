//! Generic bounds: the trait thiserror 1 inferred for a placeholder, and
//! whether a field type needs (or already has) that bound.

use syn::visit::{self, Visit};
use syn::{Generics, Ident};

/// The trait thiserror 1 inferred for a placeholder (its last spec character).
pub(super) fn bound_trait(spec_last: Option<char>) -> &'static str {
    match spec_last {
        Some('?') => "Debug",
        Some('o') => "Octal",
        Some('x') => "LowerHex",
        Some('X') => "UpperHex",
        Some('p') => "Pointer",
        Some('b') => "Binary",
        Some('e') => "LowerExp",
        Some('E') => "UpperExp",
        _ => "Display",
    }
}

/// Whether `ty` mentions one of `generics`' type parameters.
pub(super) fn mentions_type_param(ty: &syn::Type, generics: &Generics) -> bool {
    struct Finder<'g> {
        params: Vec<&'g Ident>,
        found: bool,
    }
    impl<'ast> Visit<'ast> for Finder<'_> {
        fn visit_path(&mut self, p: &'ast syn::Path) {
            if p.leading_colon.is_none()
                && let Some(first) = p.segments.first()
                && self.params.contains(&&first.ident)
            {
                self.found = true;
            }
            visit::visit_path(self, p);
        }
    }
    let params: Vec<&Ident> = generics.type_params().map(|p| &p.ident).collect();
    if params.is_empty() {
        return false;
    }
    let mut f = Finder {
        params,
        found: false,
    };
    f.visit_type(ty);
    f.found
}

/// Whether `generics` already bounds `ty` by a trait named `trait_name`.
pub(super) fn has_bound(generics: &Generics, ty: &syn::Type, trait_name: &str) -> bool {
    let names_trait = |b: &syn::TypeParamBound| matches!(b, syn::TypeParamBound::Trait(t) if t.path.segments.last().is_some_and(|s| s.ident == trait_name));
    if let syn::Type::Path(tp) = ty
        && tp.qself.is_none()
        && let Some(ident) = tp.path.get_ident()
        && generics
            .type_params()
            .any(|p| p.ident == *ident && p.bounds.iter().any(names_trait))
    {
        return true;
    }
    generics.where_clause.as_ref().is_some_and(|w| {
        w.predicates.iter().any(|p| {
            matches!(p, syn::WherePredicate::Type(pt) if pt.bounded_ty == *ty && pt.bounds.iter().any(names_trait))
        })
    })
}
