//! The source side of the thiserror 1 -> 2 upgrade: finds, in a
//! crate's Rust sources, the code that thiserror 2.0 rejects or reads
//! differently, and computes the fixes. Pure: it reads files, never writes;
//! `cargo xtask align-deps` folds the result into its all-or-nothing plan.
//!
//! # Rules (thiserror 2.0.0 release notes)
//! 1. [`Rule::RawIdentInFormat`]: `{r#type}` / `{r#type:?}` in an `#[error]`
//!    format string -> `{type}` / `{type:?}`. Fixed: only the two bytes `r#`
//!    are removed (the edit is located through the literal's source bytes, so
//!    raw strings and escapes are handled; `{{r#type}}` is text and stays).
//! 2. [`Rule::ShadowedFieldBound`]: `{name}` where `name` is a field and also
//!    an explicit named argument: thiserror 1 inferred a `Display`/`Debug`/...
//!    bound on the field, thiserror 2 does not. Reported (never fixed) when the
//!    field's type mentions a type parameter that is not already bounded by
//!    that trait (for a concrete type the bound made no difference).
//! 3. [`Rule::PositionalWithNumbered`]: tuple struct/variant message with
//!    `{0}`-style access and extra positional arguments. Fixed by naming the
//!    positional arguments (`"{0} {}", x` -> `"{0} {x}", x = x`; names come from
//!    simple expressions `x`, `.field`, `a.b()`, else `arg1`, `arg2`, ...,
//!    never clashing with any name in the message); reported unfixable when
//!    that would be ambiguous (`.*` precision, closures/generics in arguments,
//!    references to positional arguments that do not exist).
//! 4. [`Rule::MissingDirectDependency`]: the crate derives thiserror's `Error`
//!    (through a re-export such as `helper::Error`) without a direct,
//!    unrenamed `thiserror` dependency usable by that target. Decided per crate
//!    by [`analyze_crate`]; the manifest edit is left to align-deps
//!    ([`CrateAnalysis::missing_dependencies`]).
//!
//! # Which derives count
//! A `derive(...)` (also inside `cfg_attr(..., derive(...))`, nested or not) is
//! thiserror's when its path, after following `use` / `extern crate` aliases in
//! the enclosing module or block, starts with a name under which the crate
//! depends on thiserror (`thiserror::Error`, `use thiserror::Error as TE`,
//! `use thiserror::*`); or when its last segment ends in `Error`, its crate is
//! not `std`/`core`/`derive_more`/`snafu`/..., and the type or a variant carries
//! a thiserror-style helper (`#[error("...")]`, `#[error(transparent)]`,
//! `#[error(fmt = ...)]`) — the re-export heuristic.
//!
//! # API for align-deps
//! * [`analyze_crate`]`(&package)` for each member package: walks every
//!   target's module tree, returns [`CrateAnalysis`] with `findings` (all rules,
//!   sorted), `files[i].analysis.fixed_text` (the whole new text of a file to
//!   write, when some fix applies) and `missing_dependencies` (rule 4: which
//!   dependency table of which manifest needs `thiserror`).
//! * [`analyze_file`]`(path, text, &ctx)` for one file's text (what
//!   `analyze_crate` runs per file; pure).
//! * [`has_direct_thiserror`] / [`thiserror_dependencies`] for a package's
//!   declared dependencies.
//!
//! Parsing uses `syn` with `proc-macro2`'s span locations. `analyze_file`
//! calls `proc_macro2::extra::invalidate_current_thread_spans()` when done with
//! a file (so a 500-crate run does not keep every file's text alive): spans
//! from earlier parses in the same thread become invalid.

mod bounds;
mod fmt;
mod krate;
mod lit;
mod macros;
pub mod prefetch;
pub mod prefilter;
mod scan;
mod scope;

use std::path::{Path, PathBuf};

use cargo_metadata::{Package, TargetKind};

pub use krate::{
    AnalyzeOptions, AnalyzedFile, CrateAnalysis, CrateFile, MissingDependency, analyze_crate,
    analyze_crate_with, crate_source_files, has_direct_thiserror, thiserror_dependencies,
};

/// A thiserror 2 source rule. Comments and docs number them 1 to 4 in
/// declaration order ("rule 4" is [`Rule::MissingDirectDependency`]); its
/// [`Rule::code`] is what reports show.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Rule {
    /// 1: `{r#type}` in a format string.
    RawIdentInFormat,
    /// 2: a named argument shadows a field; its bound is no longer inferred.
    ShadowedFieldBound,
    /// 3: `{0}` together with extra positional arguments in a tuple struct/variant.
    PositionalWithNumbered,
    /// 4: `derive(Error)` without a direct `thiserror` dependency.
    MissingDirectDependency,
}

impl Rule {
    /// A stable identifier, e.g. for `--format json` / GitHub annotation
    /// titles; listed and described in [`crate::align_deps::rule`].
    pub fn code(self) -> &'static str {
        match self {
            Rule::RawIdentInFormat => "thiserror2-raw-ident-in-format",
            Rule::ShadowedFieldBound => "thiserror2-shadowed-field-bound",
            Rule::PositionalWithNumbered => "thiserror2-positional-with-numbered",
            Rule::MissingDirectDependency => "thiserror2-missing-direct-dependency",
        }
    }
}

/// Serialized as its [`Rule::code`], the one name a rule has.
impl serde::Serialize for Rule {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.code())
    }
}

impl std::fmt::Display for Rule {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.code())
    }
}

/// One place in a source file that thiserror 2 rejects or reads differently.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct SourceFinding {
    pub path: PathBuf,
    /// 1-based.
    pub line: usize,
    /// 1-based, in characters.
    pub column: usize,
    pub rule: Rule,
    pub message: String,
    /// The change to make (what a fix does, or what a person should do).
    pub suggestion: Option<String>,
    /// Whether align-deps fixes it (rules 1 and 3 in the file's `fixed_text`,
    /// rule 4 in the manifest).
    pub fixable: bool,
}

impl std::fmt::Display for SourceFinding {
    /// `path:line:column: [rule] message (suggestion)`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{}:{}:{}: [{}] {}",
            self.path.display(),
            self.line,
            self.column,
            self.rule,
            self.message
        )?;
        if let Some(s) = &self.suggestion {
            write!(f, "; {s}")?;
        }
        Ok(())
    }
}

/// How a thiserror derive was reached.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub enum DeriveVia {
    /// Through the crate's own `thiserror` dependency (`thiserror::Error`, `use thiserror::Error`).
    Direct,
    /// Through another path, e.g. a crate that re-exports thiserror (`helper::Error`).
    ReExport { path: String },
    /// A bare name not imported in this file (a glob import, a prelude), taken
    /// as thiserror's because of its `#[error("...")]` helpers.
    Unresolved,
}

/// A `derive(...)` entry that is thiserror's `Error`.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct DeriveSite {
    pub path: PathBuf,
    pub line: usize,
    pub column: usize,
    /// The derive path as written (`Error`, `thiserror::Error`, `helper::Error`).
    pub written: String,
    pub via: DeriveVia,
}

/// What [`analyze_file`] found in one file.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FileAnalysis {
    /// Rules 1-3, in file order.
    pub findings: Vec<SourceFinding>,
    /// The whole new text of the file when a fix applies (only the bytes of
    /// the fixes differ from the input); `None` when nothing changes.
    pub fixed_text: Option<String>,
    /// Every thiserror derive in the file.
    pub derives: Vec<DeriveSite>,
    /// Some type in the file derives thiserror's `Error`.
    pub derives_thiserror_error: bool,
    /// Some derive reaches it through the crate's own thiserror dependency.
    pub uses_thiserror_directly: bool,
}

/// A file that does not parse (or an internal inconsistency), with its location.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}:{line}:{column}: {message}", path.display())]
pub struct SourceError {
    pub path: PathBuf,
    pub line: usize,
    pub column: usize,
    pub message: String,
}

/// What a file is analysed against: the names under which its crate depends on
/// thiserror (`thiserror` always counts; a renamed dependency adds its name).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CrateContext {
    pub thiserror_names: Vec<String>,
}

impl Default for CrateContext {
    fn default() -> Self {
        CrateContext {
            thiserror_names: vec!["thiserror".into()],
        }
    }
}

impl CrateContext {
    /// The context of `package`: `thiserror` plus the names of its renamed
    /// thiserror dependencies.
    pub fn for_package(package: &Package) -> Self {
        let mut names = vec!["thiserror".to_string()];
        for d in thiserror_dependencies(package) {
            if let Some(r) = &d.rename {
                let r = r.replace('-', "_");
                if !names.contains(&r) {
                    names.push(r);
                }
            }
        }
        CrateContext {
            thiserror_names: names,
        }
    }

    fn is_thiserror_name(&self, name: &str) -> bool {
        name == "thiserror" || self.thiserror_names.iter().any(|n| n == name)
    }
}

/// The deepest nesting of `(`, `[` and `{` the source side parses: syn (and
/// the visitors after it) recurse once or more per level; at this depth they
/// stay within [`PARSE_STACK`] even in a debug build (a test checks it).
/// Anything deeper is exit 2 naming the file, never a crash.
pub const MAX_NESTING: usize = 4096;

/// The stack of the threads that parse and analyse sources (syn's parser and
/// visitors are recursive): deep but valid nesting must not overflow it.
pub const PARSE_STACK: usize = 512 << 20;

/// Where and how deep a text's bracket nesting passes [`MAX_NESTING`].
struct Depth {
    at: usize,
    levels: usize,
}

/// The first place where nesting (outside comments and literals: `code` is
/// the text's [`code_bytes`](crate::rust_src::lexer::code_bytes)) passes
/// [`MAX_NESTING`]; `None` when it never does. Nesting counts `(`, `[`, `{`
/// and generic `<` (a `<` counts until its `>` or the end of the statement:
/// `;`, `{`, `}` reset it, so comparisons cannot add up across statements).
fn too_deep(code: &[u8]) -> Option<Depth> {
    if code.len() < MAX_NESTING {
        return None;
    }
    let bytes = code;
    let (mut brackets, mut angles) = (0usize, 0usize);
    let mut max = (0usize, 0usize);
    for (i, &b) in bytes.iter().enumerate() {
        match b {
            b'(' | b'[' | b'{' => {
                brackets += 1;
                if b == b'{' {
                    angles = 0;
                }
            }
            b')' | b']' | b'}' => {
                brackets = brackets.saturating_sub(1);
                if b == b'}' {
                    angles = 0;
                }
            }
            b';' => angles = 0,
            b'<' => angles += 1,
            b'>' if i > 0 && matches!(bytes[i - 1], b'-' | b'=') => {}
            b'>' => angles = angles.saturating_sub(1),
            _ => continue,
        }
        if brackets + angles > max.0 {
            max = (brackets + angles, i);
        }
    }
    (max.0 > MAX_NESTING).then_some(Depth {
        at: max.1,
        levels: max.0,
    })
}

/// A thread pool whose threads have a [`PARSE_STACK`] stack, for parsing.
pub fn parse_pool() -> &'static rayon::ThreadPool {
    static POOL: std::sync::OnceLock<rayon::ThreadPool> = std::sync::OnceLock::new();
    POOL.get_or_init(|| {
        rayon::ThreadPoolBuilder::new()
            .stack_size(PARSE_STACK)
            .thread_name(|i| format!("xtask-parse-{i}"))
            .build()
            .expect("cannot start the parsing threads")
    })
}

/// Parses `text` (the contents of `path`), runs `f` on it, then frees the
/// thread's span table.
fn with_parsed<T>(
    path: &Path,
    text: &str,
    f: impl FnOnce(&scan::Source<'_>, &syn::File) -> Result<T, SourceError>,
) -> Result<T, SourceError> {
    with_parsed_as(path, text, true, f)
}

/// [`with_parsed`], with the [`skeleton_of`] the file (`blank`) or the whole file.
fn with_parsed_as<T>(
    path: &Path,
    text: &str,
    blank: bool,
    f: impl FnOnce(&scan::Source<'_>, &syn::File) -> Result<T, SourceError>,
) -> Result<T, SourceError> {
    // comments and literals blanked, once for both uses (small files need neither)
    let code = (text.len() >= MAX_NESTING.min(SKELETON_MIN))
        .then(|| crate::rust_src::lexer::code_bytes(text));
    if let Some(depth) = code.as_deref().and_then(too_deep) {
        let (line, column) = crate::text::line_col(text, depth.at);
        return Err(SourceError {
            path: path.to_path_buf(),
            line,
            column,
            message: format!(
                "nested too deeply to parse: {} levels of brackets and generics here, the most align-deps parses is {MAX_NESTING}",
                depth.levels
            ),
        });
    }
    let src = scan::Source::new(text);
    // the function bodies that cannot matter are blanked first (the same
    // bytes elsewhere, so every span is the file's own); should that text
    // not parse, the file itself is parsed, for its own error
    let sk = code
        .as_deref()
        .filter(|_| blank)
        .and_then(|c| skeleton_of(text, c));
    let parsed = match sk {
        Some(sk) => syn::parse_file(&sk).or_else(|_| syn::parse_file(text)),
        None => syn::parse_file(text),
    };
    let result = match parsed {
        Ok(file) => f(&src, &file),
        Err(e) => {
            let lc = e.span().start();
            let (line, column) = if lc.line == 0 {
                (text.lines().count().max(1), 1)
            } else {
                (lc.line, lc.column + 1)
            };
            Err(SourceError {
                path: path.to_path_buf(),
                line,
                column,
                message: e.to_string(),
            })
        }
    };
    proc_macro2::extra::invalidate_current_thread_spans();
    result
}

/// Files smaller than this are parsed as they are (blanking saves little).
const SKELETON_MIN: usize = 8 << 10;

/// [`skeleton_of`], computing the code bytes.
#[cfg(test)]
fn skeleton(text: &str) -> Option<String> {
    skeleton_of(text, &crate::rust_src::lexer::code_bytes(text))
}

/// `text` (`code`: its [`code_bytes`](crate::rust_src::lexer::code_bytes))
/// with the inside of every function body that cannot matter to the source
/// rules replaced by spaces (line breaks kept), or `None` when
/// there is none (or the file is small). Parsing a large file is mostly
/// parsing its function bodies; the rules need only the items around them.
///
/// A body is blanked when it is a function's, an `impl`'s, a trait's or an
/// inline module's (`{` after `fn NAME`, `impl`, `trait NAME`, `mod NAME`
/// since the last `;`, `{` or `}` of its level: never a struct's fields or
/// an enum's variants), lies inside no macro's brackets (a macro's tokens
/// are scanned as a whole), and holds neither `derive` nor a helper
/// `error(` in attribute position (the prefilter's test): every finding
/// comes from a derive or a helper (see [`prefilter`]), a `use` item in a
/// body scopes that body alone, and rule 2's bounds are the item's own
/// generics. The blanked text has the same bytes at every other
/// offset, so spans, lines and columns are those of the file. Tested
/// against whole-file parsing (`skeleton_analysis_equals_whole_file`).
fn skeleton_of(text: &str, code: &[u8]) -> Option<String> {
    if text.len() < SKELETON_MIN {
        return None;
    }
    let word = |c: u8| c.is_ascii_alphanumeric() || c == b'_' || c >= 0x80;
    // per open bracket: (close byte, inside a macro, `fn NAME` seen at
    // this level since its last `;`/`{`/`}`, where a fn body opened)
    struct Level {
        in_macro: bool,
        fn_seen: bool,
        body: Option<usize>,
    }
    let mut stack = vec![Level {
        in_macro: false,
        fn_seen: false,
        body: None,
    }];
    let mut blank: Vec<(usize, usize)> = Vec::new();
    let mut i = 0;
    while i < code.len() {
        let c = code[i];
        match c {
            b'{' | b'(' | b'[' => {
                let top = stack.last_mut()?;
                let fn_body = c == b'{' && top.fn_seen && !top.in_macro;
                if c == b'{' {
                    top.fn_seen = false;
                }
                // `name! (`, `name! {`, `macro_rules! name {`
                let mut e = i;
                while e > 0 && code[e - 1].is_ascii_whitespace() {
                    e -= 1;
                }
                let mut w = e;
                while w > 0 && word(code[w - 1]) {
                    w -= 1;
                }
                if w < e {
                    while w > 0 && code[w - 1].is_ascii_whitespace() {
                        w -= 1;
                    }
                    e = w;
                }
                let macro_body = e > 0 && code[e - 1] == b'!';
                let in_macro = top.in_macro || macro_body;
                stack.push(Level {
                    in_macro,
                    fn_seen: false,
                    body: fn_body.then_some(i),
                });
            }
            b'}' | b')' | b']' => {
                let level = stack.pop()?;
                if stack.is_empty() {
                    return None; // does not balance: parse the file as it is
                }
                if c == b'}' {
                    stack.last_mut()?.fn_seen = false;
                }
                if let Some(open) = level.body {
                    let body = &text.as_bytes()[open + 1..i];
                    if memchr::memmem::find(body, b"derive").is_none()
                        && !prefilter::has_helper(body)
                    {
                        blank.push((open + 1, i));
                    }
                }
            }
            b';' => stack.last_mut()?.fn_seen = false,
            b'f' | b'i' | b't' | b'm' if i == 0 || !(word(code[i - 1]) || code[i - 1] == b'#') => {
                // `fn NAME`, `trait NAME`, `mod NAME`, `impl`: the next `{`
                // of this level is the body of one (it holds items or
                // statements, never a field or variant list)
                let mut j = i;
                while j < code.len() && word(code[j]) {
                    j += 1;
                }
                let kw = &code[i..j];
                let named = matches!(kw, b"fn" | b"trait" | b"mod");
                if named || kw == b"impl" {
                    let mut k = j;
                    while k < code.len() && code[k].is_ascii_whitespace() {
                        k += 1;
                    }
                    if kw == b"impl" || (k > j && code.get(k).is_some_and(|&b| word(b))) {
                        stack.last_mut()?.fn_seen = true;
                    }
                }
                i = j.max(i + 1);
                continue;
            }
            _ => {}
        }
        i += 1;
    }
    if blank.is_empty() || stack.len() != 1 {
        return None;
    }
    let mut out = text.as_bytes().to_vec();
    for (from, to) in blank {
        for b in &mut out[from..to] {
            if *b != b'\n' {
                *b = b' ';
            }
        }
    }
    // whole UTF-8 sequences were replaced (a region starts after `{` and ends before `}`)
    String::from_utf8(out).ok()
}

fn analyze_parsed(
    path: &Path,
    src: &scan::Source<'_>,
    file: &syn::File,
    ctx: &CrateContext,
) -> Result<FileAnalysis, SourceError> {
    let s = scan::scan(path, src, file, ctx);
    let internal = |message: String| SourceError {
        path: path.to_path_buf(),
        line: 1,
        column: 1,
        message,
    };
    if let Some(e) = s.error {
        return Err(internal(e));
    }
    let fixed = crate::edit::try_apply_splices(src.text, 0, &s.edits).map_err(internal)?;
    let mut findings = s.findings;
    findings.sort_by_key(|f| (f.line, f.column, f.rule));
    Ok(FileAnalysis {
        findings,
        fixed_text: (fixed != src.text).then_some(fixed),
        derives_thiserror_error: !s.derives.is_empty(),
        uses_thiserror_directly: s.derives.iter().any(|d| d.via == DeriveVia::Direct),
        derives: s.derives,
    })
}

/// Rules 1-3 on one file's text. Pure: `path` only labels findings.
///
/// # Errors
/// A file that does not parse: `path:line:column` and syn's message.
pub fn analyze_file(
    path: &Path,
    text: &str,
    ctx: &CrateContext,
) -> Result<FileAnalysis, SourceError> {
    with_parsed(path, text, |src, file| analyze_parsed(path, src, file, ctx))
}

/// Which dependency table a target's code can use.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum DepKind {
    /// lib, bins, proc-macro: `[dependencies]`.
    Normal,
    /// build script: `[build-dependencies]`.
    Build,
    /// tests, examples, benches: `[dev-dependencies]` (or `[dependencies]`).
    Dev,
}

impl DepKind {
    /// The manifest table a missing dependency of this kind goes into.
    pub fn table(self) -> &'static str {
        match self {
            DepKind::Normal => "dependencies",
            DepKind::Build => "build-dependencies",
            DepKind::Dev => "dev-dependencies",
        }
    }

    pub(super) fn of_target(kinds: &[TargetKind]) -> DepKind {
        if kinds.contains(&TargetKind::CustomBuild) {
            DepKind::Build
        } else if kinds.iter().all(|k| {
            matches!(
                k,
                TargetKind::Test | TargetKind::Example | TargetKind::Bench
            )
        }) {
            DepKind::Dev
        } else {
            DepKind::Normal
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What a file's analysis is when its function bodies are blanked
    /// first equals the whole file's: on this workspace's sources and the
    /// unpacked crates in cargo's registry (real code of every style) that
    /// the skeleton changes, up to a budget, and on texts made to tempt it.
    #[test]
    fn skeleton_analysis_equals_whole_file() {
        let pad = "// padding\n".repeat(SKELETON_MIN / 10);
        let mut texts: Vec<(String, String)> = [
            // a derive inside a fn body, a helper in a macro's fn, a fn-pointer default
            "fn f() {\n    use thiserror::Error;\n    #[derive(Debug, Error)]\n    #[error(\"{r#type}\")]\n    struct J { r#type: u8 }\n}\n",
            "macro_rules! m { () => { #[derive(Debug, helper::Error)] pub struct A; fn f() { #[error(\"{r#type}\")] x } } }\n",
            "#[derive(Debug, thiserror::Error)]\n#[error(\"{x}\", x = 1)]\npub struct S<F = fn() -> u8> { x: F }\nfn g() -> u8 { let e = E::new(); e.error(\"x\"); 3 }\n",
            "mod inner {\n    use thiserror::Error as E;\n    #[derive(Debug, E)]\n    #[error(\"{r#type}\")]\n    pub struct Q { r#type: u8 }\n}\nimpl Foo { fn a() {} }\ntrait T { fn b() {} }\nmod empty { pub fn c() {} }\n#[derive(Debug, thiserror::Error)]\n#[error(\"{x}\", x = 1)]\npub struct G<X> { x: X }\n",
            "pub fn h() -> S<{ 3 }> { todo!() }\nimpl X { fn r#fn(&self) { } async fn a() -> Result<(), Error> { Err(Error::X)? } }\n#[derive(Debug, thiserror::Error)]\npub enum E { #[error(\"{0} {}\", .1)] X(u8, u8) }\n",
        ]
        .iter()
        .map(|t| ("unit".to_string(), format!("{pad}{t}")))
        .collect();
        let mut dirs = vec![Path::new(env!("CARGO_MANIFEST_DIR")).join("..")];
        let home = std::env::var_os("CARGO_HOME")
            .map(PathBuf::from)
            .or_else(|| std::env::var_os("HOME").map(|h| Path::new(&h).join(".cargo")));
        if let Some(h) = home
            && let Ok(rd) = std::fs::read_dir(h.join("registry").join("src"))
        {
            dirs.extend(rd.flatten().map(|e| e.path()));
        }
        let mut budget: usize = 3 << 20;
        'dirs: for d in dirs {
            for e in walkdir::WalkDir::new(&d)
                .sort_by_file_name()
                .into_iter()
                .filter_entry(|e| e.file_name() != "target" && e.file_name() != ".git")
                .flatten()
            {
                if budget < SKELETON_MIN {
                    break 'dirs;
                }
                // the size first: a file over the budget is not read at all
                let fits = e.metadata().is_ok_and(|m| m.len() as usize <= budget);
                if !fits || e.path().extension().is_none_or(|x| x != "rs") {
                    continue;
                }
                let Ok(t) = std::fs::read_to_string(e.path()) else {
                    continue;
                };
                // files that may hold a finding and that the skeleton changes
                if t.len() > budget
                    || !prefilter::may_hold_a_finding(&t, &CrateContext::default())
                    || skeleton(&t).is_none()
                {
                    continue;
                }
                budget -= t.len();
                texts.push((e.path().display().to_string(), t));
            }
        }
        let ctx = CrateContext::default();
        let mut compared = 0;
        for (name, t) in &texts {
            let path = Path::new(name);
            let whole = with_parsed_as(path, t, false, |src, file| {
                analyze_parsed(path, src, file, &ctx)
            });
            let Ok(whole) = whole else { continue };
            let blanked = analyze_file(path, t, &ctx);
            assert_eq!(blanked, Ok(whole), "{name}");
            compared += 1;
        }
        assert!(compared >= 4, "{compared}");
    }
}
