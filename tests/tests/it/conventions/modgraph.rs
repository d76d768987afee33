//! The module-tree import-cycle check.
//!
//! Rule: for every module that has child modules (the crate root, every
//! `foo/mod.rs` or `foo.rs` with a `foo/` beside it, every inline `mod`), its
//! children — each with its whole subtree of files — form a DAG, where child X
//! -> child Y when any file in X's subtree names an item path inside Y through
//! `crate::`, `super::` or `self::` (in `use` items, expressions, types,
//! patterns and macro arguments). A parent naming its own children, or a
//! child naming its parent's own items, is not a sibling edge.
//!
//! The tree is read with `syn` from a file source (the disk, or an in-memory
//! map in the unit tests): `mod name;` is followed to `name.rs` or
//! `name/mod.rs` (or its `#[path]`), inline `mod name { .. }` nests in place.

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::path::{Path, PathBuf};

use proc_macro2::{TokenStream, TokenTree};
use syn::visit::Visit;

/// Reads a source file; `None` when there is none.
pub type Source<'a> = &'a dyn Fn(&Path) -> Option<String>;

/// A module path below the crate root (`[]` is the root itself).
type ModPath = Vec<String>;

/// A `crate::`/`super::`/`self::` path named in a module, made absolute.
#[derive(Debug, Clone)]
struct Reference {
    /// The module the reference is written in.
    from: ModPath,
    /// The absolute path it names (modules, then maybe an item).
    to: ModPath,
    /// `file:line` where it is written.
    at: String,
}

/// A crate's module tree and every path reference in it.
#[derive(Debug, Default)]
pub struct CrateTree {
    /// Every module (`["fmt_check", "check"]`), with the file that holds
    /// it (for an inline module, the file around it).
    pub modules: BTreeMap<ModPath, PathBuf>,
    refs: Vec<Reference>,
    /// Files named by `mod x;` that the source could not give (or parse).
    pub unreadable: Vec<String>,
}

/// Reads the module tree rooted at `root` (a `lib.rs`, `main.rs`, ...).
pub fn read_tree(root: &Path, source: Source<'_>) -> CrateTree {
    let mut tree = CrateTree::default();
    read_file(&mut tree, root, Vec::new(), true, source);
    tree
}

fn read_file(tree: &mut CrateTree, file: &Path, path: ModPath, owns_dir: bool, source: Source<'_>) {
    let Some(text) = source(file) else {
        tree.unreadable
            .push(format!("{} (no such file)", file.display()));
        return;
    };
    let ast = match syn::parse_file(&text) {
        Ok(ast) => ast,
        Err(e) => {
            tree.unreadable.push(format!("{}: {e}", file.display()));
            return;
        }
    };
    // A root, `mod.rs` or `#[path]` file keeps its children beside it;
    // `foo.rs` keeps them in `foo/`.
    let dir = if owns_dir {
        file.parent().unwrap_or(Path::new("")).to_path_buf()
    } else {
        file.with_extension("")
    };
    tree.modules.insert(path.clone(), file.to_path_buf());
    let mut walker = Walker {
        file: file.to_path_buf(),
        dir,
        module: path,
        inline_depth: 0,
        refs: Vec::new(),
        declared: Vec::new(),
        inline: Vec::new(),
    };
    walker.visit_file(&ast);
    tree.refs.append(&mut walker.refs);
    for m in walker.inline {
        tree.modules.insert(m, file.to_path_buf());
    }
    for (child, explicit) in walker.declared {
        let (file, owns_dir) = match explicit {
            Some(p) => (p, true),
            None => {
                let dir = child.dir.clone();
                let flat = dir.join(format!("{}.rs", child.name));
                if source(&flat).is_some() {
                    (flat, false)
                } else {
                    (dir.join(&child.name).join("mod.rs"), true)
                }
            }
        };
        read_file(tree, &file, child.path, owns_dir, source);
    }
}

/// A `mod name;` declaration seen by the walker.
struct Declared {
    name: String,
    path: ModPath,
    /// The directory its file is looked up in.
    dir: PathBuf,
}

struct Walker {
    file: PathBuf,
    /// Where the children of the current (file or inline) module live.
    dir: PathBuf,
    /// The current module, inline modules included.
    module: ModPath,
    inline_depth: usize,
    refs: Vec<Reference>,
    declared: Vec<(Declared, Option<PathBuf>)>,
    inline: Vec<ModPath>,
}

impl Walker {
    /// Records `segments` (as written, first one `crate`/`super`/`self`).
    fn reference(&mut self, segments: &[String], line: usize) {
        let Some(to) = absolute(&self.module, segments) else {
            return;
        };
        self.refs.push(Reference {
            from: self.module.clone(),
            to,
            at: format!("{}:{line}", self.file.display()),
        });
    }

    fn use_tree(&mut self, prefix: &mut Vec<String>, tree: &syn::UseTree, line: usize) {
        match tree {
            syn::UseTree::Path(p) => {
                let line = if prefix.is_empty() {
                    p.ident.span().start().line
                } else {
                    line
                };
                prefix.push(p.ident.to_string());
                self.use_tree(prefix, &p.tree, line);
                prefix.pop();
            }
            syn::UseTree::Name(n) => {
                prefix.push(n.ident.to_string());
                self.reference(prefix, line.max(n.ident.span().start().line));
                prefix.pop();
            }
            syn::UseTree::Rename(r) => {
                prefix.push(r.ident.to_string());
                self.reference(prefix, line.max(r.ident.span().start().line));
                prefix.pop();
            }
            syn::UseTree::Glob(_) => self.reference(prefix, line),
            syn::UseTree::Group(g) => {
                for t in &g.items {
                    self.use_tree(prefix, t, line);
                }
            }
        }
    }

    /// Finds `crate :: a :: b`, `super :: x`, `self :: y` in macro arguments.
    fn tokens(&mut self, tokens: TokenStream) {
        let tts: Vec<TokenTree> = tokens.into_iter().collect();
        let mut i = 0;
        while i < tts.len() {
            if let TokenTree::Group(g) = &tts[i] {
                self.tokens(g.stream());
                i += 1;
                continue;
            }
            let starts = matches!(&tts[i], TokenTree::Ident(id) if id == "crate" || id == "super" || id == "self")
                && !(i > 0 && matches!(&tts[i - 1], TokenTree::Punct(p) if p.as_char() == '$'));
            if !starts {
                i += 1;
                continue;
            }
            let line = tts[i].span().start().line;
            let mut segments = vec![tts[i].to_string()];
            let mut j = i + 1;
            while j + 2 < tts.len()
                && matches!(&tts[j], TokenTree::Punct(p) if p.as_char() == ':')
                && matches!(&tts[j + 1], TokenTree::Punct(p) if p.as_char() == ':')
            {
                match &tts[j + 2] {
                    TokenTree::Ident(id) => segments.push(id.to_string()),
                    _ => break,
                }
                j += 3;
            }
            if segments.len() > 1 {
                self.reference(&segments, line);
            }
            i = j.max(i + 1);
        }
    }
}

/// `segments` (starting `crate`, `super` or `self`) made absolute from
/// `module`; `None` for any other path or one that climbs above the root.
fn absolute(module: &[String], segments: &[String]) -> Option<ModPath> {
    let (first, rest) = segments.split_first()?;
    let mut abs: ModPath = match first.as_str() {
        "crate" => Vec::new(),
        "self" => module.to_vec(),
        "super" => module[..module.len().checked_sub(1)?].to_vec(),
        _ => return None,
    };
    let mut rest = rest;
    while let Some((s, tail)) = rest.split_first() {
        match s.as_str() {
            "super" if first == "super" || first == "self" => {
                abs.pop()?;
            }
            "self" => {}
            _ => abs.push(s.clone()),
        }
        rest = tail;
    }
    Some(abs)
}

impl<'ast> Visit<'ast> for Walker {
    fn visit_item_mod(&mut self, m: &'ast syn::ItemMod) {
        let name = m.ident.to_string();
        let mut path = self.module.clone();
        path.push(name.clone());
        if let Some((_, items)) = &m.content {
            let dir = self.dir.join(&name);
            let outer_dir = std::mem::replace(&mut self.dir, dir);
            self.module.push(name);
            self.inline_depth += 1;
            self.inline.push(path);
            for attr in &m.attrs {
                self.visit_attribute(attr);
            }
            for item in items {
                self.visit_item(item);
            }
            self.inline_depth -= 1;
            self.module.pop();
            self.dir = outer_dir;
        } else {
            let explicit = m.attrs.iter().find_map(|a| {
                if !a.path().is_ident("path") {
                    return None;
                }
                match &a.meta {
                    syn::Meta::NameValue(syn::MetaNameValue {
                        value:
                            syn::Expr::Lit(syn::ExprLit {
                                lit: syn::Lit::Str(s),
                                ..
                            }),
                        ..
                    }) => Some(self.file.parent().unwrap_or(Path::new("")).join(s.value())),
                    _ => None,
                }
            });
            self.declared.push((
                Declared {
                    name,
                    path,
                    dir: self.dir.clone(),
                },
                explicit,
            ));
        }
    }

    fn visit_item_use(&mut self, u: &'ast syn::ItemUse) {
        let line = u.use_token.span.start().line;
        self.use_tree(&mut Vec::new(), &u.tree, line);
    }

    fn visit_path(&mut self, p: &'ast syn::Path) {
        if p.leading_colon.is_none() && p.segments.len() > 1 {
            let segments: Vec<String> = p.segments.iter().map(|s| s.ident.to_string()).collect();
            self.reference(&segments, p.segments[0].ident.span().start().line);
        }
        syn::visit::visit_path(self, p);
    }

    fn visit_macro(&mut self, m: &'ast syn::Macro) {
        self.tokens(m.tokens.clone());
        syn::visit::visit_macro(self, m);
    }

    fn visit_attribute(&mut self, _: &'ast syn::Attribute) {
        // Doc links and cfg predicates are not imports.
    }
}

/// One sibling edge: child `from` of `parent` names an item inside child `to`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Edge {
    pub from: String,
    pub to: String,
    /// The first `file:line` that makes the edge.
    pub at: String,
}

/// An import cycle among the children of one module.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cycle {
    /// The module whose children form it (`crate`, `crate::fmt_check`).
    pub parent: String,
    /// Every child in the strongly connected set, sorted.
    pub members: Vec<String>,
    /// One cycle through them, edge by edge, each with one reference.
    pub edges: Vec<Edge>,
}

impl Cycle {
    /// `crate::device: cache model` — what an allowlist names.
    pub fn key(&self) -> String {
        format!("{}: {}", self.parent, self.members.join(" "))
    }
}

impl std::fmt::Display for Cycle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        writeln!(f, "import cycle among the children of `{}`:", self.parent)?;
        for e in &self.edges {
            writeln!(f, "    {} -> {}    ({})", e.from, e.to, e.at)?;
        }
        write!(
            f,
            "  fix: move what both sides need into a leaf module (one that imports none of {}) \
             and import it from there, or move the item to the side that owns it",
            self.members.join(", ")
        )
    }
}

fn display(parent: &[String]) -> String {
    std::iter::once("crate".to_string())
        .chain(parent.iter().cloned())
        .collect::<Vec<_>>()
        .join("::")
}

impl CrateTree {
    /// The sibling edges, by parent module: `parent -> (from, to) -> first reference`.
    fn edges(&self) -> BTreeMap<ModPath, BTreeMap<(String, String), String>> {
        let mut out: BTreeMap<ModPath, BTreeMap<(String, String), String>> = BTreeMap::new();
        for r in &self.refs {
            let k = r.from.iter().zip(&r.to).take_while(|(a, b)| a == b).count();
            if k == r.from.len() || k == r.to.len() {
                continue; // into its own subtree, or an ancestor module itself
            }
            let parent = r.from[..k].to_vec();
            let target = r.to[..=k].to_vec();
            if !self.modules.contains_key(&target) {
                continue; // an item of the parent, not a sibling module
            }
            out.entry(parent)
                .or_default()
                .entry((r.from[k].clone(), r.to[k].clone()))
                .or_insert_with(|| r.at.clone());
        }
        out
    }

    /// Every import cycle in the tree, one per strongly connected set.
    pub fn cycles(&self) -> Vec<Cycle> {
        let mut cycles = Vec::new();
        for (parent, edges) in self.edges() {
            let mut next: BTreeMap<&str, BTreeSet<&str>> = BTreeMap::new();
            for (from, to) in edges.keys() {
                next.entry(from).or_default().insert(to);
            }
            let reach = |start: &str| -> BTreeSet<String> {
                let mut seen = BTreeSet::new();
                let mut todo = vec![start.to_string()];
                while let Some(n) = todo.pop() {
                    for m in next.get(n.as_str()).into_iter().flatten() {
                        if seen.insert(m.to_string()) {
                            todo.push(m.to_string());
                        }
                    }
                }
                seen
            };
            let nodes: BTreeSet<&str> = next.keys().copied().collect();
            let reaches: BTreeMap<&str, BTreeSet<String>> =
                nodes.iter().map(|n| (*n, reach(n))).collect();
            let mut done = BTreeSet::new();
            for n in &nodes {
                if done.contains(*n) || !reaches[n].contains(*n) {
                    continue;
                }
                let members: Vec<String> = nodes
                    .iter()
                    .filter(|m| reaches[n].contains(**m) && reaches[**m].contains(*n))
                    .map(|m| m.to_string())
                    .collect();
                done.extend(members.iter().cloned());
                let path = shortest_cycle(n, &next);
                let edges = path
                    .windows(2)
                    .map(|w| Edge {
                        from: w[0].clone(),
                        to: w[1].clone(),
                        at: edges[&(w[0].clone(), w[1].clone())].clone(),
                    })
                    .collect();
                cycles.push(Cycle {
                    parent: display(&parent),
                    members,
                    edges,
                });
            }
        }
        cycles
    }
}

/// The shortest `start -> .. -> start` walk (breadth first).
fn shortest_cycle(start: &str, next: &BTreeMap<&str, BTreeSet<&str>>) -> Vec<String> {
    let mut came_from: BTreeMap<String, String> = BTreeMap::new();
    let mut queue = VecDeque::from([start.to_string()]);
    while let Some(n) = queue.pop_front() {
        for m in next.get(n.as_str()).into_iter().flatten() {
            if *m == start {
                // Walk back from n to start, then turn it around and close it.
                let mut walk = vec![start.to_string()];
                let mut cur = n.clone();
                loop {
                    walk.push(cur.clone());
                    if cur == start {
                        break;
                    }
                    cur = came_from[&cur].clone();
                }
                walk.reverse();
                return walk;
            }
            if !came_from.contains_key(*m) {
                came_from.insert(m.to_string(), n.clone());
                queue.push_back(m.to_string());
            }
        }
    }
    Vec::new()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tree(files: &[(&str, &str)]) -> CrateTree {
        let map: BTreeMap<PathBuf, String> = files
            .iter()
            .map(|(p, t)| (PathBuf::from(p), t.to_string()))
            .collect();
        let source = move |p: &Path| map.get(p).cloned();
        let t = read_tree(Path::new("src/lib.rs"), &source);
        assert!(t.unreadable.is_empty(), "{:?}", t.unreadable);
        t
    }

    #[test]
    fn two_siblings_naming_each_other_are_a_cycle() {
        let t = tree(&[
            ("src/lib.rs", "mod cli;\nmod cmd;\n"),
            (
                "src/cli.rs",
                "pub struct Target;\nfn f() { crate::cmd::run(); }\n",
            ),
            ("src/cmd.rs", "\nuse crate::cli::Target;\npub fn run() {}\n"),
        ]);
        let cycles = t.cycles();
        assert_eq!(cycles.len(), 1, "{cycles:?}");
        let c = &cycles[0];
        assert_eq!(c.key(), "crate: cli cmd");
        assert_eq!(
            c.edges,
            vec![
                Edge {
                    from: "cli".into(),
                    to: "cmd".into(),
                    at: "src/cli.rs:2".into()
                },
                Edge {
                    from: "cmd".into(),
                    to: "cli".into(),
                    at: "src/cmd.rs:2".into()
                },
            ]
        );
        let text = c.to_string();
        assert!(text.contains("cli -> cmd    (src/cli.rs:2)"), "{text}");
        assert!(text.contains("leaf module"), "{text}");
    }

    #[test]
    fn three_modules_cycle_through_a_subtree() {
        // a -> b (from a file deep in a's subtree), b -> c, c -> a (macro argument).
        let t = tree(&[
            ("src/lib.rs", "pub mod a;\npub mod b;\npub mod c;\n"),
            ("src/a/mod.rs", "mod deep;\npub struct A;\n"),
            ("src/a/deep.rs", "use super::super::b::B;\n"),
            (
                "src/b.rs",
                "pub struct B;\nfn f() -> crate::c::C { todo!() }\n",
            ),
            (
                "src/c.rs",
                "pub struct C;\nfn f() { let _ = format!(\"{:?}\", crate::a::A); }\n",
            ),
        ]);
        let cycles = t.cycles();
        assert_eq!(cycles.len(), 1, "{cycles:?}");
        assert_eq!(cycles[0].key(), "crate: a b c");
        let ats: Vec<&str> = cycles[0].edges.iter().map(|e| e.at.as_str()).collect();
        assert_eq!(ats, ["src/a/deep.rs:1", "src/b.rs:2", "src/c.rs:2"]);
    }

    #[test]
    fn a_cycle_below_the_root_is_named_by_its_parent() {
        let t = tree(&[
            ("src/lib.rs", "mod x;\n"),
            ("src/x.rs", "mod p;\nmod q;\n"),
            ("src/x/p.rs", "use super::q::Q;\npub struct P;\n"),
            ("src/x/q.rs", "pub struct Q(self::super::p::P);\n"),
        ]);
        let keys: Vec<String> = t.cycles().iter().map(Cycle::key).collect();
        assert_eq!(keys, ["crate::x: p q"]);
    }

    #[test]
    fn parent_and_child_naming_each_other_are_not_a_cycle() {
        // mod.rs uses its child; the child uses its parent's own items, an
        // item re-exported by the parent, the crate root's items, and itself.
        let t = tree(&[
            (
                "src/lib.rs",
                "pub mod dev;\npub struct Outcome;\nfn f() { dev::model::g(); }\n",
            ),
            (
                "src/dev/mod.rs",
                "pub mod model;\npub mod mem;\npub use mem::Buf;\npub struct Dev;\nimpl Dev { fn k(&self) { model::g(); self::model::g(); } }\n",
            ),
            (
                "src/dev/model.rs",
                "use super::{Dev, Buf};\nuse crate::Outcome;\npub fn g() { let _ = self::g; }\n#[cfg(test)]\nmod tests { use super::*; use super::super::Dev as D; }\n",
            ),
            (
                "src/dev/mem.rs",
                "pub struct Buf;\nfn f() { super::Dev; }\n",
            ),
        ]);
        assert_eq!(t.cycles(), Vec::new());
        assert!(t.edges().is_empty(), "{:?}", t.edges());
    }

    #[test]
    fn one_way_sibling_edges_are_fine_and_seen() {
        let t = tree(&[
            ("src/lib.rs", "mod args;\nmod cli;\n"),
            ("src/args.rs", "pub struct Target;\n"),
            ("src/cli.rs", "use crate::{args::Target, Outcome};\n"),
        ]);
        assert!(t.cycles().is_empty());
        let edges = t.edges();
        assert_eq!(edges[&Vec::new()].len(), 1, "{edges:?}");
    }

    #[test]
    fn inline_test_modules_resolve_super_to_their_file() {
        // `super::` inside `mod tests { }` in b.rs is b, not the root.
        let t = tree(&[
            ("src/lib.rs", "mod a;\nmod b;\n"),
            ("src/a.rs", "pub fn f() { crate::b::g(); }\n"),
            (
                "src/b.rs",
                "pub fn g() {}\nmod tests { use super::g; fn t() { super::super::b::g(); } }\n",
            ),
        ]);
        assert!(t.cycles().is_empty(), "{:?}", t.cycles());
    }

    #[test]
    fn missing_module_file_is_reported() {
        let map: BTreeMap<PathBuf, String> =
            [(PathBuf::from("src/lib.rs"), "mod gone;\n".to_string())].into();
        let source = move |p: &Path| map.get(p).cloned();
        let t = read_tree(Path::new("src/lib.rs"), &source);
        assert_eq!(t.unreadable, ["src/gone/mod.rs (no such file)"]);
    }
}
