//! Finds out-of-line `mod` declarations in a file's tokens, to know (a) whether
//! rustfmt in file mode would follow modules from it and (b) which files
//! `cargo fmt` never formats because their `mod` item carries `#[rustfmt::skip]`.

use std::path::{Path, PathBuf};
#[cfg(test)]
use std::str::FromStr as _;

#[cfg(test)]
use proc_macro2::Delimiter;
#[cfg(test)]
use proc_macro2::{TokenStream, TokenTree};

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
/// those inside macro invocations such as `cfg_if!`; `None` if its brackets
/// do not balance (it does not lex).
///
/// A byte scan over the text with comments and literals blanked
/// ([`super::lexer::code_bytes`]): no tokens are built, which on a large
/// workspace is most of the cost of following module trees. It finds what
/// the token-level scan (`mod_decls_tokens`, kept as the reference its
/// tests compare with) finds.
pub fn mod_decls(text: &str) -> Option<Vec<ModDecl>> {
    let code = super::lexer::code_bytes(text);
    fast::decls(text, &code)
}

/// [`mod_decls`] over tokens (`proc_macro2`): the reference implementation.
#[cfg(test)]
pub fn mod_decls_tokens(text: &str) -> Option<Vec<ModDecl>> {
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

#[cfg(test)]
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
                            let inner = inner_skip_tokens(&g.stream());
                            scan(g.stream(), inline, skip || inner, in_macro, out);
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

/// Whether a block's tokens start with inner attributes holding a skip.
#[cfg(test)]
fn inner_skip_tokens(ts: &TokenStream) -> bool {
    let tts: Vec<TokenTree> = ts.clone().into_iter().collect();
    let mut i = 0;
    while let (Some(TokenTree::Punct(h)), Some(TokenTree::Punct(b)), Some(TokenTree::Group(g))) =
        (tts.get(i), tts.get(i + 1), tts.get(i + 2))
    {
        if h.as_char() != '#' || b.as_char() != '!' || g.delimiter() != Delimiter::Bracket {
            break;
        }
        if is_skip_attr(&g.stream().to_string().replace(' ', "")) {
            return true;
        }
        i += 3;
    }
    false
}

/// The name of the macro whose body follows `before`: `name! (..)` or
/// `macro_rules! name {..}` (`macro_rules`); `None` for any other group.
#[cfg(test)]
fn macro_name(before: &[TokenTree]) -> Option<String> {
    let bang = |t: &TokenTree| matches!(t, TokenTree::Punct(p) if p.as_char() == '!');
    match before {
        [.., TokenTree::Ident(m), b] if bang(b) => Some(m.to_string()),
        [.., TokenTree::Ident(m), b, TokenTree::Ident(_)] if bang(b) => Some(m.to_string()),
        _ => None,
    }
}

mod fast;

/// Whether an attribute (its text inside `#[..]`, whitespace removed) is a
/// skip as rustfmt reads it (`is_skip` in rustfmt's `utils.rs`): the path
/// `rustfmt::skip` or `rustfmt_skip` as written (not `::rustfmt::skip`, not
/// `rustfmt::skip::macros(..)`), or `cfg_attr(PRED, ATTR)` with exactly two
/// entries whose second is a skip (the predicate is not evaluated).
pub(crate) fn is_skip_attr(attr: &str) -> bool {
    if attr == "rustfmt::skip" || attr == "rustfmt_skip" {
        return true;
    }
    let Some(list) = attr
        .strip_prefix("cfg_attr(")
        .and_then(|r| r.strip_suffix(')'))
    else {
        return false;
    };
    let parts = top_level_entries(list);
    parts.len() == 2 && is_skip_attr(parts[1])
}

/// The comma-separated entries of an attribute's list (nested brackets and
/// string literals kept whole; a trailing comma adds no entry).
fn top_level_entries(list: &str) -> Vec<&str> {
    let b = list.as_bytes();
    let (mut out, mut depth, mut start, mut i) = (Vec::new(), 0usize, 0, 0);
    while i < b.len() {
        match b[i] {
            b'(' | b'[' | b'{' => depth += 1,
            b')' | b']' | b'}' => depth = depth.saturating_sub(1),
            b'"' => {
                i += 1;
                while i < b.len() && b[i] != b'"' {
                    i += if b[i] == b'\\' { 2 } else { 1 };
                }
            }
            b',' if depth == 0 => {
                out.push(&list[start..i]);
                start = i + 1;
            }
            _ => {}
        }
        i += 1;
    }
    if start < list.len() {
        out.push(&list[start..]);
    }
    out
}

/// Whether the file's inner attributes (the `#![..]` at its top, before
/// any item; comments, a BOM and a shebang line aside) hold a skip
/// ([`is_skip_attr`]): rustfmt leaves such a file alone and, when it reaches
/// the file as a module (not as the crate root it was given), every module
/// below it too (checked against `cargo fmt --check`, rustfmt 1.9).
pub fn inner_skip(text: &str) -> bool {
    let code = super::lexer::code_bytes(text);
    let mut i = 0;
    if code.starts_with("\u{feff}".as_bytes()) {
        i = 3;
    }
    // a shebang line (`#!` not followed by `[`)
    if code[i..].starts_with(b"#!") {
        let mut j = i + 2;
        while j < code.len() && code[j].is_ascii_whitespace() && code[j] != b'\n' {
            j += 1;
        }
        if code.get(j) != Some(&b'[') {
            i = memchr::memchr(b'\n', &code[i..]).map_or(code.len(), |n| i + n);
        }
    }
    inner_skip_at(text, &code, i)
}

/// Whether the inner attributes starting at `code[from..]` (whitespace
/// aside) hold a skip: those of a file, or of an inline module's block.
pub(super) fn inner_skip_at(text: &str, code: &[u8], from: usize) -> bool {
    let ws = |mut i: usize| {
        while i < code.len() && (code[i].is_ascii_whitespace() || code[i] == 0x0b) {
            i += 1;
        }
        i
    };
    let mut i = ws(from);
    loop {
        if code.get(i) != Some(&b'#') {
            return false;
        }
        let bang = ws(i + 1);
        if code.get(bang) != Some(&b'!') {
            return false;
        }
        let open = ws(bang + 1);
        if code.get(open) != Some(&b'[') {
            return false;
        }
        let mut depth = 0usize;
        let mut close = None;
        for (k, &c) in code.iter().enumerate().skip(open) {
            match c {
                b'[' => depth += 1,
                b']' => {
                    depth -= 1;
                    if depth == 0 {
                        close = Some(k);
                        break;
                    }
                }
                _ => {}
            }
        }
        let Some(close) = close else { return false };
        let attr: String = text[open + 1..close]
            .chars()
            .filter(|c| !c.is_whitespace())
            .collect();
        if is_skip_attr(&attr) {
            return true;
        }
        i = ws(close + 1);
    }
}

fn path_attr(attr: &str) -> Option<String> {
    let lit = attr.strip_prefix("path=")?;
    let lit = lit.trim_start_matches('r').trim_matches('#');
    Some(lit.strip_prefix('"')?.strip_suffix('"')?.to_string())
}

/// Whether `text` may invoke `include!`: the word `include` followed,
/// whitespace aside, by `!` (a `/` or non-ASCII byte there lets it
/// through). `false` means [`include_paths`] finds nothing, without lexing.
pub fn may_include(text: &[u8]) -> bool {
    memchr::memmem::find_iter(text, b"include").any(|at| {
        if at > 0 && (text[at - 1].is_ascii_alphanumeric() || text[at - 1] == b'_') {
            return false;
        }
        text[at + "include".len()..]
            .iter()
            .find(|b| !b.is_ascii_whitespace())
            .is_some_and(|&b| b == b'!' || b == b'/' || b >= 0x80)
    })
}

/// The paths named by `include!("...")` invocations in `text` (comments
/// ignored, macro bodies included), as written; an `include!` whose argument
/// is not one string literal (`concat!(env!("OUT_DIR"), ..)`) is skipped.
pub fn include_paths(text: &str) -> Vec<String> {
    if !may_include(text.as_bytes()) {
        return Vec::new();
    }
    let code = super::lexer::code_bytes(text);
    let ws = |mut i: usize| {
        while i < code.len() && code[i].is_ascii_whitespace() {
            i += 1;
        }
        i
    };
    let mut out = Vec::new();
    for at in memchr::memmem::find_iter(&code, b"include") {
        let word = |b: u8| b.is_ascii_alphanumeric() || b == b'_' || b >= 0x80;
        if at > 0 && (word(code[at - 1]) || code[at - 1] == b'#') {
            continue;
        }
        let mut i = ws(at + "include".len());
        if code.get(i) != Some(&b'!') {
            continue;
        }
        i = ws(i + 1);
        if !matches!(code.get(i), Some(b'(' | b'[' | b'{')) {
            continue;
        }
        let close = match code[i] {
            b'(' => b')',
            b'[' => b']',
            _ => b'}',
        };
        // one string literal (`"..."`, `r#"..."#`), an optional `,`, the close
        let start = ws(i + 1);
        let mut j = start;
        if code.get(j) == Some(&b'r') {
            j += 1;
            while code.get(j) == Some(&b'#') {
                j += 1;
            }
        }
        if code.get(j) != Some(&b'"') {
            continue;
        }
        let hashes = j - start - usize::from(j > start);
        let Some(q) = memchr::memchr(b'"', &code[j + 1..]) else {
            continue;
        };
        let end = j + 1 + q + 1 + hashes;
        let mut k = ws(end);
        if code.get(k) == Some(&b',') {
            k = ws(k + 1);
        }
        if code.get(k) != Some(&close) {
            continue;
        }
        if let Some(lit) = text.get(start..end)
            && let Ok(s) = syn::parse_str::<syn::LitStr>(lit)
        {
            out.push(s.value());
        }
    }
    out
}

/// [`include_paths`] over tokens: the reference implementation.
#[cfg(test)]
fn include_paths_tokens(text: &str) -> Vec<String> {
    let (_, blanked) = super::lexer::split_comments(text);
    let Ok(ts) = TokenStream::from_str(&blanked) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    find_includes(ts, &mut out);
    out
}

#[cfg(test)]
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

    /// The byte scan finds what the token scan finds: on the unit texts,
    /// on this workspace's sources and on the unpacked crates in cargo's
    /// registry (real code of every style), up to a budget.
    #[test]
    fn the_byte_scan_agrees_with_the_token_scan() {
        let mut texts: Vec<(String, String)> = [
            "mod a;\npub(crate) mod r#type;\n#[path = \"x/y.rs\"]\n#[cfg(unix)]\npub mod y;",
            "mod inl { #[cfg_attr(rustfmt, rustfmt::skip)] mod z; mod deeper { mod w; } }",
            "cfg_if::cfg_if! { if #[cfg(unix)] { mod u; } else { mod v; } }",
            "m! { mod a; }\nmacro_rules! n { () => { mod b; } }\nfn f() { let s = \"mod no;\"; let c = '{'; }\nmod yes;",
            "#[rustfmt::skip]\nmod r#trait {\n    mod inner;\n}\n/* mod no; */ // mod no;\nunsafe mod u;\n#![allow(x)]\nmod after_inner;",
            "#[path = r#\"raw dir\"#]\nmod p { mod q; }\nimpl X for Y { fn f<'a>(x: &'a str) { if a != b { mod odd; } } }",
            "include!(\"a.rs\");\ninclude!(r#\"b.rs\"#,);\nm! { include![\"c.rs\"] }\ninclude!(concat!(\"d\", \".rs\"));\nlet s = \"include!(\\\"no.rs\\\")\";\n// include!(\"no.rs\");\ninclude ! ( \"e.rs\" ) ;",
        ]
        .iter()
        .map(|t| (String::from("unit"), t.to_string()))
        .collect();
        let mut dirs = vec![Path::new(env!("CARGO_MANIFEST_DIR")).join("..")];
        let home = std::env::var_os("CARGO_HOME")
            .map(std::path::PathBuf::from)
            .or_else(|| std::env::var_os("HOME").map(|h| Path::new(&h).join(".cargo")));
        if let Some(h) = home
            && let Ok(rd) = std::fs::read_dir(h.join("registry").join("src"))
        {
            dirs.extend(rd.flatten().map(|e| e.path()));
        }
        let mut budget: usize = 6 << 20;
        for d in dirs {
            for e in walkdir::WalkDir::new(&d)
                .sort_by_file_name()
                .into_iter()
                .filter_entry(|e| e.file_name() != "target" && e.file_name() != ".git")
                .flatten()
            {
                if budget == 0 || e.path().extension().is_none_or(|x| x != "rs") {
                    continue;
                }
                let Ok(t) = std::fs::read_to_string(e.path()) else {
                    continue;
                };
                if !(may_declare_modules(t.as_bytes()) || may_include(t.as_bytes()))
                    || t.len() > budget
                {
                    continue;
                }
                budget -= t.len();
                texts.push((e.path().display().to_string(), t));
            }
        }
        for (name, t) in &texts {
            assert_eq!(include_paths(t), include_paths_tokens(t), "{name}");
        }
        let mut compared = 0;
        for (name, t) in &texts {
            let Some(want) = mod_decls_tokens(t) else {
                continue; // does not lex: nothing to agree on
            };
            assert_eq!(mod_decls(t), Some(want), "{name}");
            compared += 1;
        }
        assert!(compared >= 20, "{compared}");
    }

    #[test]
    fn finds_include_string_literals() {
        let src = "include!(\"a.rs\");\n// include!(\"c.rs\");\nm! { include!(r\"b/x.rs\",); }\ninclude!(concat!(env!(\"OUT_DIR\"), \"/g.rs\"));\nconst S: &str = include_str!(\"t.txt\");\n";
        assert_eq!(include_paths(src), ["a.rs", "b/x.rs"]);
        assert!(may_include(src.as_bytes()));
        assert!(may_include(b"include !(\"a.rs\")"));
        assert!(!may_include(
            b"// we include nothing\nlet includes = include_str!(\"x\");"
        ));
    }

    /// What rustfmt 1.9 skips (`rustfmt -v` on a crate whose modules carry
    /// each form): exactly rustfmt's `is_skip`.
    #[test]
    fn skip_attributes_are_read_as_rustfmt_reads_them() {
        for a in [
            "rustfmt::skip",
            "rustfmt_skip",
            "cfg_attr(rustfmt,rustfmt_skip)",
            "cfg_attr(any(a,b),rustfmt::skip)",
            "cfg_attr(feature=\"a,b\",rustfmt::skip,)",
        ] {
            assert!(is_skip_attr(a), "{a}");
        }
        for a in [
            "::rustfmt::skip",
            "rustfmt::skip::macros(m)",
            "cfg_attr(x,allow(y),rustfmt::skip)",
            "allow(rustfmt_skip)",
        ] {
            assert!(!is_skip_attr(a), "{a}");
        }
        let src = "mod g {\n    #![rustfmt::skip]\n    mod h;\n}\n#[cfg_attr(rustfmt, rustfmt_skip)]\nmod b;\nmod i { #![allow(x)] mod j; }\n";
        let d = mod_decls(src).unwrap();
        let got: Vec<_> = d.iter().map(|m| (m.name.as_str(), m.skip)).collect();
        assert_eq!(got, [("h", true), ("b", true), ("j", false)]);
        assert_eq!(mod_decls_tokens(src).unwrap(), d);
    }

    #[test]
    fn inner_skip_is_read_at_the_top_of_a_file_only() {
        for t in [
            "#![rustfmt::skip]\nmod a;",
            "\u{feff}//! doc\n#![allow(dead_code)]\n/* c */ #! [ cfg_attr(rustfmt, rustfmt_skip) ]\nfn f() {}",
            "#!/usr/bin/env run-cargo-script\n#![rustfmt::skip]\n",
        ] {
            assert!(inner_skip(t), "{t}");
        }
        for t in [
            "#![allow(x)]\nfn f() {}\n#[rustfmt::skip]\nfn g() {}",
            "// #![rustfmt::skip]\nfn f() {}",
            "#![rustfmt::skip::macros(m)]",
            "#[rustfmt::skip]\nmod a;",
            "",
        ] {
            assert!(!inner_skip(t), "{t}");
        }
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
