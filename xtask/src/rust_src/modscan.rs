//! Finds out-of-line `mod` declarations in a file's tokens, to know (a) whether
//! rustfmt in file mode would follow modules from it and (b) which files
//! `cargo fmt` never formats because their `mod` item carries `#[rustfmt::skip]`.

use std::path::{Path, PathBuf};
use std::str::FromStr as _;

use proc_macro2::{Delimiter, TokenStream, TokenTree};

/// One `mod name;` item.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModDecl {
    /// The module name.
    pub name: String,
    /// Its `#[path = "..."]`, if any.
    pub path_attr: Option<String>,
    /// `#[rustfmt::skip]` (or `#[cfg_attr(.., rustfmt::skip)]`, `#[rustfmt_skip]`)
    /// on it or on an inline module around it.
    pub skip: bool,
    /// Inline modules around it (`mod a { mod b { mod name; } }` -> `["a", "b"]`),
    /// each its `#[path]` if it has one.
    pub inline: Vec<String>,
    /// 1-based line of its name.
    pub line: usize,
    /// Inside a macro invocation or definition other than `cfg_if!` (rustfmt
    /// follows `cfg_if!` bodies only; rustc only what the macro expands to).
    pub in_macro: bool,
}

/// The out-of-line `mod` declarations of `text` (comments ignored), also
/// those inside macro invocations such as `cfg_if!`; `None` if it does not lex.
pub fn mod_decls(text: &str) -> Option<Vec<ModDecl>> {
    let (_, blanked) = super::lexer::split_comments(text);
    let ts = TokenStream::from_str(&blanked).ok()?;
    let mut out = Vec::new();
    scan(ts, &mut Vec::new(), false, false, &mut out);
    Some(out)
}

/// Whether `text` may hold an out-of-line `mod name;` item: the word `mod`,
/// whitespace, an identifier, optional whitespace, `;` (a `/` where
/// whitespace may be lets a comment through). `false` means [`mod_decls`]
/// finds nothing (or the text does not lex), without lexing it: most files
/// of a large workspace declare no module, and lexing costs far more than
/// this search.
pub fn may_declare_modules(text: &[u8]) -> bool {
    let b = text;
    let ident = |c: u8| c.is_ascii_alphanumeric() || c == b'_' || c >= 0x80;
    let skip_ws = |mut i: usize| {
        while i < b.len() && (b[i].is_ascii_whitespace() || b[i] == 0x0b) {
            i += 1;
        }
        i
    };
    // a non-ASCII byte where whitespace may be: Unicode whitespace or an
    // identifier; `/`: a comment. Either lets the file through.
    let unsure = |i: usize| b.get(i).is_some_and(|&c| c >= 0x80 || c == b'/');
    memchr::memmem::find_iter(b, b"mod").any(|at| {
        if at > 0 && ident(b[at - 1]) {
            return false;
        }
        let mut i = skip_ws(at + 3);
        if unsure(i) {
            return true;
        }
        if i == at + 3 {
            return false; // part of a longer word (`modules`), or `mod{`
        }
        if b.get(i) == Some(&b'r') && b.get(i + 1) == Some(&b'#') {
            i += 2;
        }
        let start = i;
        while i < b.len() && ident(b[i]) {
            i += 1;
        }
        let end = skip_ws(i);
        i > start && (unsure(end) || b.get(end) == Some(&b';'))
    })
}

fn scan(
    ts: TokenStream,
    inline: &mut Vec<String>,
    skip_all: bool,
    in_macro: bool,
    out: &mut Vec<ModDecl>,
) {
    let tts: Vec<TokenTree> = ts.into_iter().collect();
    let mut attrs: Vec<String> = Vec::new();
    let mut i = 0;
    while i < tts.len() {
        match &tts[i] {
            TokenTree::Punct(p) if p.as_char() == '#' => {
                let inner =
                    matches!(tts.get(i + 1), Some(TokenTree::Punct(q)) if q.as_char() == '!');
                let g = i + 1 + usize::from(inner);
                if let Some(TokenTree::Group(grp)) = tts.get(g)
                    && grp.delimiter() == Delimiter::Bracket
                {
                    if !inner {
                        attrs.push(grp.stream().to_string().replace(' ', ""));
                    }
                    i = g + 1;
                    continue;
                }
                attrs.clear();
            }
            TokenTree::Ident(id) if id == "pub" => {
                if matches!(tts.get(i + 1), Some(TokenTree::Group(g)) if g.delimiter() == Delimiter::Parenthesis)
                {
                    i += 1;
                }
            }
            TokenTree::Ident(id)
                if id == "mod"
                    || id == "unsafe"
                        && matches!(tts.get(i + 1), Some(TokenTree::Ident(m)) if m == "mod") =>
            {
                let at = if id == "mod" { i } else { i + 1 };
                if let Some(TokenTree::Ident(name)) = tts.get(at + 1) {
                    let skip = skip_all || attrs.iter().any(|a| is_skip_attr(a));
                    let path_attr = attrs.iter().find_map(|a| path_attr(a));
                    match tts.get(at + 2) {
                        Some(TokenTree::Punct(p)) if p.as_char() == ';' => {
                            out.push(ModDecl {
                                name: name.to_string(),
                                path_attr,
                                skip,
                                inline: inline.clone(),
                                line: name.span().start().line,
                                in_macro,
                            });
                            i = at + 3;
                            attrs.clear();
                            continue;
                        }
                        Some(TokenTree::Group(g)) if g.delimiter() == Delimiter::Brace => {
                            inline.push(path_attr.unwrap_or_else(|| {
                                let n = name.to_string();
                                n.strip_prefix("r#")
                                    .map_or_else(|| n.clone(), str::to_string)
                            }));
                            scan(g.stream(), inline, skip, in_macro, out);
                            inline.pop();
                            i = at + 3;
                            attrs.clear();
                            continue;
                        }
                        _ => {}
                    }
                }
                attrs.clear();
            }
            TokenTree::Group(g) => {
                // macro bodies (cfg_if!), blocks: keep looking, same directory
                let macro_body = macro_name(&tts[..i]).is_some_and(|m| m != "cfg_if");
                scan(g.stream(), inline, skip_all, in_macro || macro_body, out);
                attrs.clear();
            }
            _ => attrs.clear(),
        }
        i += 1;
    }
}

/// The name of the macro whose body follows `before`: `name! (..)` or
/// `macro_rules! name {..}` (`macro_rules`); `None` for any other group.
fn macro_name(before: &[TokenTree]) -> Option<String> {
    let bang = |t: &TokenTree| matches!(t, TokenTree::Punct(p) if p.as_char() == '!');
    match before {
        [.., TokenTree::Ident(m), b] if bang(b) => Some(m.to_string()),
        [.., TokenTree::Ident(m), b, TokenTree::Ident(_)] if bang(b) => Some(m.to_string()),
        _ => None,
    }
}

fn is_skip_attr(attr: &str) -> bool {
    attr == "rustfmt_skip"
        || attr
            .match_indices("rustfmt::skip")
            .any(|(k, m)| !attr[k + m.len()..].starts_with("::"))
}

fn path_attr(attr: &str) -> Option<String> {
    let lit = attr.strip_prefix("path=")?;
    let lit = lit.trim_start_matches('r').trim_matches('#');
    Some(lit.strip_prefix('"')?.strip_suffix('"')?.to_string())
}

/// The paths named by `include!("...")` invocations in `text` (comments
/// ignored, macro bodies included), as written; an `include!` whose argument
/// is not one string literal (`concat!(env!("OUT_DIR"), ..)`) is skipped.
pub fn include_paths(text: &str) -> Vec<String> {
    if memchr::memmem::find(text.as_bytes(), b"include").is_none() {
        return Vec::new();
    }
    let (_, blanked) = super::lexer::split_comments(text);
    let Ok(ts) = TokenStream::from_str(&blanked) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    find_includes(ts, &mut out);
    out
}

fn find_includes(ts: TokenStream, out: &mut Vec<String>) {
    let tts: Vec<TokenTree> = ts.into_iter().collect();
    for (i, tt) in tts.iter().enumerate() {
        match tt {
            TokenTree::Ident(id) if id == "include" => {
                let bang =
                    matches!(tts.get(i + 1), Some(TokenTree::Punct(p)) if p.as_char() == '!');
                if let (true, Some(TokenTree::Group(g))) = (bang, tts.get(i + 2)) {
                    let args: Vec<TokenTree> = g.stream().into_iter().collect();
                    let lit = match args.as_slice() {
                        [TokenTree::Literal(l)] => Some(l),
                        [TokenTree::Literal(l), TokenTree::Punct(p)] if p.as_char() == ',' => {
                            Some(l)
                        }
                        _ => None,
                    };
                    if let Some(s) =
                        lit.and_then(|l| syn::parse_str::<syn::LitStr>(&l.to_string()).ok())
                    {
                        out.push(s.value());
                    }
                }
            }
            TokenTree::Group(g) => find_includes(g.stream(), out),
            _ => {}
        }
    }
}

/// Candidate files for `decl` declared in `file` (`mod_rs`: `file` is a crate
/// root, a `mod.rs`, or was loaded through `#[path]`, so its modules live
/// beside it rather than in a directory named after it). Each candidate comes
/// with whether it is itself mod-rs.
pub fn resolve(file: &Path, mod_rs: bool, decl: &ModDecl) -> Vec<(PathBuf, bool)> {
    let dir = file.parent().unwrap_or(Path::new(""));
    let mut base = if mod_rs {
        dir.to_path_buf()
    } else {
        dir.join(file.file_stem().unwrap_or_default())
    };
    if let Some(p) = &decl.path_attr {
        let origin = if decl.inline.is_empty() {
            dir.to_path_buf()
        } else {
            base.clone()
        };
        let mut b = origin;
        b.extend(&decl.inline);
        return vec![(crate::fsutil::normalize(&b.join(p)), true)];
    }
    base.extend(&decl.inline);
    // `mod r#trait;` lives in `trait.rs`
    let name = decl.name.strip_prefix("r#").unwrap_or(&decl.name);
    vec![
        (base.join(format!("{name}.rs")), false),
        (base.join(name).join("mod.rs"), true),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn may_declare_modules_is_a_superset_of_mod_decls() {
        for text in [
            "mod a;",
            "pub mod b ;",
            "pub(crate) mod r#type;",
            "mod /* c */ d;",
            "mod e /* c */;",
            "mod\n\tf\n;",
            "mod \u{e9}t\u{e9};",
            "cfg_if! { if #[cfg(unix)] { mod unix; } }",
            "#[path = \"x.rs\"] mod g;",
        ] {
            assert!(!mod_decls(text).unwrap().is_empty(), "{text}");
            assert!(may_declare_modules(text.as_bytes()), "{text}");
        }
        for text in [
            "fn f() {}",
            "mod tests { fn t() {} }",
            "#[cfg(test)]\nmod tests {\n}\n",
            "// modules: none\nlet modulo = 3;",
            "use crate::model;",
        ] {
            assert!(mod_decls(text).unwrap_or_default().is_empty(), "{text}");
            assert!(!may_declare_modules(text.as_bytes()), "{text}");
        }
    }

    #[test]
    fn finds_decls_skip_and_path() {
        let src = "#[rustfmt::skip]\nmod gen;\n#[path = \"x/y.rs\"]\npub(crate) mod y;\nmod inl { #[cfg_attr(rustfmt, rustfmt::skip)] mod z; }\ncfg_if::cfg_if! { if #[cfg(unix)] { mod u; } }\n#[rustfmt::skip::macros(m)]\nmod m;\n// mod c;\nmod real {}\n";
        let d = mod_decls(src).unwrap();
        let names: Vec<_> = d.iter().map(|m| (m.name.as_str(), m.skip)).collect();
        assert_eq!(
            names,
            [
                ("gen", true),
                ("y", false),
                ("z", true),
                ("u", false),
                ("m", false)
            ]
        );
        assert_eq!(d[1].path_attr.as_deref(), Some("x/y.rs"));
        assert_eq!(d[2].inline, ["inl"]);
        assert_eq!(
            d.iter().map(|m| m.line).collect::<Vec<_>>(),
            [2, 4, 5, 6, 8]
        );
        assert!(d.iter().all(|m| !m.in_macro), "{d:?}");
        let d = mod_decls("m! { mod a; }\nmacro_rules! n { () => { mod b; } }\n").unwrap();
        assert!(d.iter().all(|m| m.in_macro), "{d:?}");
    }

    #[test]
    fn finds_include_string_literals() {
        let src = "include!(\"a.rs\");\n// include!(\"c.rs\");\nm! { include!(r\"b/x.rs\",); }\ninclude!(concat!(env!(\"OUT_DIR\"), \"/g.rs\"));\nconst S: &str = include_str!(\"t.txt\");\n";
        assert_eq!(include_paths(src), ["a.rs", "b/x.rs"]);
    }

    #[test]
    fn resolves_like_rustc() {
        let decl = |name: &str| ModDecl {
            name: name.into(),
            path_attr: None,
            skip: false,
            inline: vec![],
            line: 1,
            in_macro: false,
        };
        let r = resolve(Path::new("/c/src/lib.rs"), true, &decl("a"));
        assert_eq!(r[0].0, Path::new("/c/src/a.rs"));
        assert_eq!(r[1].0, Path::new("/c/src/a/mod.rs"));
        let r = resolve(Path::new("/c/src/a.rs"), false, &decl("b"));
        assert_eq!(r[0].0, Path::new("/c/src/a/b.rs"));
        let r = resolve(Path::new("/c/src/lib.rs"), true, &decl("r#trait"));
        assert_eq!(r[0].0, Path::new("/c/src/trait.rs"));
        assert_eq!(r[1].0, Path::new("/c/src/trait/mod.rs"));
        let p = ModDecl {
            path_attr: Some("../g.rs".into()),
            ..decl("g")
        };
        assert_eq!(
            resolve(Path::new("/c/src/a.rs"), false, &p)[0].0,
            Path::new("/c/g.rs")
        );
    }
}
