//! Name resolution for derive paths: the names a module or block brings
//! into scope with `use` and `extern crate`.

use std::collections::HashMap;

use syn::{Item, UseTree};

/// The names a module or block brings into scope with `use` / `extern crate`.
#[derive(Debug, Default)]
pub(super) struct Scope {
    pub(super) module: bool,
    pub(super) names: HashMap<String, Vec<String>>,
    pub(super) globs: Vec<Vec<String>>,
}

impl Scope {
    pub(super) fn of_items<'a>(module: bool, items: impl Iterator<Item = &'a Item>) -> Scope {
        let mut scope = Scope {
            module,
            ..Scope::default()
        };
        for item in items {
            match item {
                Item::Use(u) => collect_use(&u.tree, &mut Vec::new(), &mut scope),
                Item::ExternCrate(e) => {
                    let name = e.rename.as_ref().map_or(&e.ident, |(_, r)| r).to_string();
                    scope.names.insert(name, vec![e.ident.to_string()]);
                }
                _ => {}
            }
        }
        scope
    }
}

fn collect_use(tree: &UseTree, prefix: &mut Vec<String>, scope: &mut Scope) {
    match tree {
        UseTree::Path(p) => {
            prefix.push(p.ident.to_string());
            collect_use(&p.tree, prefix, scope);
            prefix.pop();
        }
        UseTree::Name(n) if n.ident == "self" => {
            if let Some(last) = prefix.last() {
                scope.names.insert(last.clone(), prefix.clone());
            }
        }
        UseTree::Name(n) => {
            let mut p = prefix.clone();
            p.push(n.ident.to_string());
            scope.names.insert(n.ident.to_string(), p);
        }
        UseTree::Rename(r) => {
            let mut p = prefix.clone();
            if r.ident != "self" {
                p.push(r.ident.to_string());
            }
            scope.names.insert(r.rename.to_string(), p);
        }
        UseTree::Glob(_) => scope.globs.push(prefix.clone()),
        UseTree::Group(g) => {
            for t in &g.items {
                collect_use(t, prefix, scope);
            }
        }
    }
}
