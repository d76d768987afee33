//! The thiserror 1 -> 2 source analysis: every pattern, the
//! look-alikes that must not change, idempotence, byte-exactness, whole crates
//! through cargo metadata, and a real `cargo check` against thiserror 2.

use std::path::{Path, PathBuf};

use crate::support::{cargo_check, write};
use xtask::thiserror_src::{
    CrateContext, DeriveVia, FileAnalysis, Rule, analyze_crate, analyze_file,
};

fn analyze(text: &str) -> FileAnalysis {
    analyze_file(Path::new("src/lib.rs"), text, &CrateContext::default()).unwrap()
}

/// The fixed text, after checking that a second analysis of it finds nothing
/// fixable and changes nothing (idempotence).
fn fixed(text: &str) -> String {
    let a = analyze(text);
    let out = a.fixed_text.unwrap_or_else(|| text.to_string());
    let again = analyze(&out);
    assert_eq!(
        again.fixed_text, None,
        "second run changed the text:\n{out}"
    );
    assert!(
        again.findings.iter().all(|f| !f.fixable),
        "second run: {:?}",
        again.findings
    );
    out
}

fn rules(a: &FileAnalysis) -> Vec<Rule> {
    a.findings.iter().map(|f| f.rule).collect()
}

/// Asserts that `text` is left exactly as it is, with no finding.
fn unchanged(text: &str) {
    let a = analyze(text);
    assert_eq!(a.fixed_text, None, "changed:\n{text}");
    assert!(a.findings.is_empty(), "{:?}", a.findings);
}

// ---- rule 1: {r#type} -> {type} ----------------------------------------------------------

#[test]
fn raw_ident_in_format_is_unrawed() {
    let src = "use thiserror::Error;\n\n#[derive(Debug, Error)]\n#[error(\"bad type {r#type}\")]\npub struct E {\n    r#type: String,\n}\n";
    let a = analyze(src);
    assert_eq!(rules(&a), vec![Rule::RawIdentInFormat]);
    let f = &a.findings[0];
    assert_eq!(
        (f.path.as_path(), f.line, f.column),
        (Path::new("src/lib.rs"), 4, 20)
    );
    assert!(f.fixable);
    assert_eq!(
        f.suggestion.as_deref(),
        Some("write `type` instead of `r#type`")
    );
    assert_eq!(fixed(src), src.replace("{r#type}", "{type}"));
    assert!(a.derives_thiserror_error && a.uses_thiserror_directly);
}

#[test]
fn raw_ident_with_format_spec_and_in_variants() {
    let src = r#"
#[derive(Debug, thiserror::Error)]
pub enum E {
    #[error("kind {r#type:?} / {r#type:>8} / {r#match:#x}")]
    Kind { r#type: u8, r#match: u32 },
    #[error("width {0:r#w$}", r#w = 3)]
    Width(u8),
}
"#;
    let out = fixed(src);
    assert_eq!(
        out,
        src.replace(
            "{r#type:?} / {r#type:>8} / {r#match:#x}",
            "{type:?} / {type:>8} / {match:#x}"
        )
        .replace("{0:r#w$}", "{0:w$}")
    );
    // the named argument `r#w = 3` is an identifier in code: kept
    assert!(out.contains("r#w = 3"));
}

#[test]
fn raw_string_literal_format() {
    let src = "#[derive(Debug, thiserror::Error)]\n#[error(r#\"say \"{r#type}\" {{r#type}}\"#)]\npub struct E { r#type: String }\n";
    assert_eq!(fixed(src), src.replacen("{r#type}\"", "{type}\"", 1));
}

#[test]
fn escaped_braces_are_text() {
    unchanged(
        "#[derive(Debug, thiserror::Error)]\n#[error(\"{{r#type}} and {{ r#x }}\")]\npub struct E { r#type: u8 }\n",
    );
    // `{{{r#type}}}`: an escaped brace, then a real placeholder, then an escaped brace
    let src = "#[derive(Debug, thiserror::Error)]\n#[error(\"{{{r#type}}}\")]\npub struct E { r#type: u8 }\n";
    assert_eq!(fixed(src), src.replace("{{{r#type}}}", "{{{type}}}"));
}

#[test]
fn escapes_and_line_continuations_in_the_literal() {
    // `\u{7b}` is `{`: the placeholder starts in an escape; only the `r#` bytes go
    let src = "#[derive(Debug, thiserror::Error)]\n#[error(\"\\u{7b}r#type} a \\\n    {r#type}\")]\npub struct E { r#type: u8 }\n";
    let out = fixed(src);
    assert_eq!(
        out,
        src.replace("\\u{7b}r#type}", "\\u{7b}type}")
            .replace("    {r#type}", "    {type}")
    );
}

#[test]
fn look_alikes_in_code_strings_and_comments_stay() {
    unchanged(
        r##"
use thiserror::Error;
// a comment about {r#type} and r#type
/* block {r#type} */
/// doc {r#type}
#[derive(Debug, Error)]
#[error("{}", .r#type)]
pub struct Arg {
    r#type: String,
}
#[derive(Debug, Error)]
#[error("kind {kind}", kind = self.r#type.len())]
pub struct Call {
    r#type: String,
}
pub const S: &str = "{r#type}";
pub const R: &str = r#"{r#type}"#;
pub fn f(x: Arg) -> String {
    format!("{}", x.r#type)
}
"##,
    );
}

#[test]
fn non_thiserror_types_are_ignored() {
    // no derive(Error) at all; a derive_more-style `error(ignore)` helper; std's Error
    unchanged(
        r#"
#[derive(Debug)]
#[error("{r#type}")]
pub struct NotDerived { r#type: u8 }

#[derive(Debug, derive_more::Error, derive_more::Display)]
pub struct Dm { #[error(ignore)] r#type: u8 }

#[derive(Debug, helper::Error)]
pub struct NoHelperAttrs { r#type: u8 }
"#,
    );
}

// ---- how derive(Error) is reached ------------------------------------------------------------

#[test]
fn derive_forms() {
    let cases: &[(&str, Option<DeriveVia>)] = &[
        (
            "use thiserror::Error;\n#[derive(Debug, Error)]",
            Some(DeriveVia::Direct),
        ),
        (
            "use thiserror::Error as ThisError;\n#[derive(Debug, ThisError)]",
            Some(DeriveVia::Direct),
        ),
        (
            "use thiserror::*;\n#[derive(Debug, Error)]",
            Some(DeriveVia::Direct),
        ),
        (
            "#[derive(Debug, ::thiserror::Error)]",
            Some(DeriveVia::Direct),
        ),
        (
            "#[derive(\n    Debug,\n    thiserror::Error,\n)]",
            Some(DeriveVia::Direct),
        ),
        (
            "#[cfg_attr(feature = \"std\", derive(thiserror::Error))]",
            Some(DeriveVia::Direct),
        ),
        (
            "#[cfg_attr(a, cfg_attr(b, derive(Debug, thiserror::Error)))]",
            Some(DeriveVia::Direct),
        ),
        (
            "#[derive(Debug, helper::Error)]",
            Some(DeriveVia::ReExport {
                path: "helper::Error".into(),
            }),
        ),
        (
            "use helper::Error;\n#[derive(Debug, Error)]",
            Some(DeriveVia::ReExport {
                path: "helper::Error".into(),
            }),
        ),
        (
            "use helper::errors::ThisError as TE;\n#[derive(Debug, TE)]",
            Some(DeriveVia::ReExport {
                path: "helper::errors::ThisError".into(),
            }),
        ),
        (
            "use crate::prelude::*;\n#[derive(Debug, Error)]",
            Some(DeriveVia::Unresolved),
        ),
        ("use std::error::Error;\n#[derive(Debug, Error)]", None),
        ("#[derive(Debug, Clone)]", None),
    ];
    for (head, want) in cases {
        let src = format!("{head}\n#[error(\"bad {{r#type}}\")]\npub struct E {{ r#type: u8 }}\n");
        let a = analyze(&src);
        let got = a.derives.first().map(|d| d.via.clone());
        assert_eq!(&got, want, "{head}");
        assert_eq!(a.fixed_text.is_some(), want.is_some(), "{head}");
    }
}

#[test]
fn renamed_dependency_is_direct_and_scopes_are_followed() {
    let ctx = CrateContext {
        thiserror_names: vec!["thiserror".into(), "te".into()],
    };
    let a = analyze_file(
        Path::new("a.rs"),
        "#[derive(Debug, te::Error)]\n#[error(\"x\")]\npub struct E;\n",
        &ctx,
    )
    .unwrap();
    assert_eq!(a.derives[0].via, DeriveVia::Direct);
    // a module does not see its parent's imports unless it globs `super::*`
    let src = "use thiserror::Error;\nmod a {\n    use super::*;\n    #[derive(Debug, Error)]\n    #[error(\"x\")]\n    pub struct A;\n}\nmod b {\n    #[derive(Debug, Error)]\n    #[error(\"x\")]\n    pub struct B;\n}\nfn f() {\n    use helper::Error;\n    #[derive(Debug, Error)]\n    #[error(\"x\")]\n    struct C;\n}\n";
    let a = analyze(src);
    let vias: Vec<_> = a.derives.iter().map(|d| (d.line, d.via.clone())).collect();
    assert_eq!(
        vias,
        vec![
            (4, DeriveVia::Direct),
            (9, DeriveVia::Unresolved),
            (
                15,
                DeriveVia::ReExport {
                    path: "helper::Error".into()
                }
            )
        ]
    );
}

#[test]
fn error_helper_inside_cfg_attr() {
    let src = "#[cfg_attr(feature = \"std\", derive(Debug, thiserror::Error), error(\"bad {r#type}\"))]\npub struct E { r#type: u8 }\n";
    assert_eq!(fixed(src), src.replace("{r#type}", "{type}"));
}

#[test]
fn multi_line_attributes() {
    let src = r#"
#[derive(
    Debug,
    thiserror::Error
)]
pub enum E {
    #[error(
        "a {r#type} b {}",
        .r#type.len(),
    )]
    A { r#type: String },
}
"#;
    let a = analyze(src);
    assert_eq!(a.findings[0].line, 8);
    assert_eq!(a.findings[0].column, 13);
    assert_eq!(fixed(src), src.replace("a {r#type} b", "a {type} b"));
}

// ---- rule 3: {0} with extra positional arguments ----------------------------------------

#[test]
fn positional_with_numbered_is_named() {
    let cases = [
        (
            r#"#[error("{0} {}", .1)] pub struct T(String, u32);"#,
            r#"#[error("{0} {arg1}", arg1 = .1)] pub struct T(String, u32);"#,
        ),
        (
            r#"#[error("{0}: {} {:?}", .0.len(), .1)] pub struct T(String, u32);"#,
            r#"#[error("{0}: {len} {arg2:?}", len = .0.len(), arg2 = .1)] pub struct T(String, u32);"#,
        ),
        (
            r#"#[error("{0} {}", x)] pub struct T(u8);"#,
            r#"#[error("{0} {x}", x = x)] pub struct T(u8);"#,
        ),
        // `{1}` is no field of a one-field tuple: it is positional argument 1
        (
            r#"#[error("{0} {1} {}", a, b)] pub struct T(u8);"#,
            r#"#[error("{0} {b} {a}", a = a, b = b)] pub struct T(u8);"#,
        ),
        // names never clash with names already in the message
        (
            r#"#[error("{0} {len} {}", .0.len(), len = 3)] pub struct T(String);"#,
            r#"#[error("{0} {len} {arg1}", arg1 = .0.len(), len = 3)] pub struct T(String);"#,
        ),
        (
            r#"#[error("{0} {arg1} {}", .1, arg1 = 3)] pub struct T(u8, u8);"#,
            r#"#[error("{0} {arg1} {arg1_2}", arg1_2 = .1, arg1 = 3)] pub struct T(u8, u8);"#,
        ),
        // width parameters by index are positional arguments too
        (
            r#"#[error("{0:>1$} {}", w, z)] pub struct T(u8);"#,
            r#"#[error("{0:>z$} {w}", w = w, z = z)] pub struct T(u8);"#,
        ),
    ];
    for (before, after) in cases {
        let src = format!("#[derive(Debug, thiserror::Error)]\n{before}\n");
        let a = analyze(&src);
        assert_eq!(rules(&a), vec![Rule::PositionalWithNumbered], "{before}");
        assert!(a.findings[0].fixable);
        assert_eq!(
            fixed(&src),
            format!("#[derive(Debug, thiserror::Error)]\n{after}\n"),
            "{before}"
        );
    }
}

#[test]
fn positional_with_numbered_in_a_variant_with_suggestion() {
    let src = "#[derive(Debug, thiserror::Error)]\npub enum E {\n    #[error(\"{0} (code {})\", .1)]\n    Coded(String, u32),\n}\n";
    let a = analyze(src);
    let f = &a.findings[0];
    assert_eq!(
        (f.rule, f.line, f.column),
        (Rule::PositionalWithNumbered, 3, 30)
    );
    assert_eq!(
        f.suggestion.as_deref(),
        Some("#[error(\"{0} (code {arg1})\", arg1 = .1)]")
    );
    assert!(f.message.contains("variant `E::Coded`"));
    assert_eq!(
        fixed(src),
        src.replace("(code {})\", .1", "(code {arg1})\", arg1 = .1")
    );
}

#[test]
fn positional_with_numbered_ambiguous_is_reported_not_rewritten() {
    for attr in [
        r#"#[error("{0} {:.*}", 2, x)]"#,
        r#"#[error("{0} {}", f::<A, B>())]"#,
        r#"#[error("{0} {} {}", x)]"#,
    ] {
        let src = format!("#[derive(Debug, thiserror::Error)]\n{attr}\npub struct T(u8);\n");
        let a = analyze(&src);
        assert_eq!(rules(&a), vec![Rule::PositionalWithNumbered], "{attr}");
        assert!(!a.findings[0].fixable, "{attr}");
        assert_eq!(a.fixed_text, None, "{attr}");
    }
}

#[test]
fn closures_inside_groups_split_correctly() {
    let src = "#[derive(Debug, thiserror::Error)]\n#[error(\"{0} {}\", f(|a, b| a + b))]\npub struct T(u8);\n";
    assert_eq!(fixed(src), src.replace("{}\", f(", "{arg1}\", arg1 = f("));
}

#[test]
fn positional_or_numbered_alone_is_fine() {
    unchanged(
        r#"
#[derive(Debug, thiserror::Error)]
pub enum E {
    #[error("{0} {1}")]
    Numbered(u8, u8),
    #[error("{} {}", .0, .1)]
    Positional(u8, u8),
    #[error("{0} {n}", n = .1)]
    Named(u8, u8),
    #[error("{code} {}", .code)]
    Struct { code: u8 },
    #[error("{0} {}", 1)]
    Unit,
}
"#,
    );
}

// ---- rule 2: a named argument shadows a generic field -----------------------------------

#[test]
fn shadowed_generic_field_is_reported() {
    let src = "#[derive(Debug, thiserror::Error)]\n#[error(\"{source:?} {n}\", source = \"io\", n = 1)]\npub struct E<T: std::error::Error + 'static> {\n    source: T,\n}\n";
    let a = analyze(src);
    assert_eq!(rules(&a), vec![Rule::ShadowedFieldBound]);
    let f = &a.findings[0];
    assert_eq!((f.line, f.column, f.fixable), (2, 27, false));
    assert!(f.message.contains("`T: Debug`"), "{}", f.message);
    assert!(
        f.suggestion
            .as_deref()
            .unwrap()
            .contains("where T: ::core::fmt::Debug")
    );
    assert_eq!(a.fixed_text, None);
}

#[test]
fn shadowing_without_effect_is_not_reported() {
    unchanged(
        r#"
#[derive(Debug, thiserror::Error)]
#[error("{msg}", msg = "x")]
pub struct Concrete { msg: String }

#[derive(Debug, thiserror::Error)]
#[error("{msg}", msg = "x")]
pub struct Bounded<T: std::fmt::Display> { msg: T }

#[derive(Debug, thiserror::Error)]
#[error("{msg:?}", msg = "x")]
pub struct WhereBounded<T> where Vec<T>: core::fmt::Debug { msg: Vec<T> }

#[derive(Debug, thiserror::Error)]
#[error("{msg}")]
pub struct NotShadowed<T: std::fmt::Display> { msg: T }
"#,
    );
}

// ---- errors, byte-exactness -------------------------------------------------------------

#[test]
fn parse_error_has_location() {
    let e = analyze_file(
        Path::new("src/bad.rs"),
        "fn ok() {}\n\nfn bad( {\n",
        &CrateContext::default(),
    )
    .unwrap_err();
    assert_eq!(e.path, PathBuf::from("src/bad.rs"));
    assert_eq!(e.line, 3);
    assert!(e.to_string().starts_with("src/bad.rs:3:"), "{e}");
}

#[test]
fn only_the_intended_bytes_change() {
    // CRLF, a BOM, non-ASCII text before the literal, tabs, a shebang-like inner attribute
    let src = "\u{feff}#![allow(dead_code)]\r\n// é ü {r#type}\r\nuse thiserror::Error;\r\n#[derive(Debug,\tError)]\r\npub enum E {\r\n\t#[error(\"ü {r#type} {0:?}\")] A { r#type: u8 },\r\n\t#[error(\"{0} {}\", .0.len())] B(String),\r\n}\r\n";
    let out = fixed(src);
    let want = src
        .replacen("ü {r#type} {0:?}", "ü {type} {0:?}", 1)
        .replace("{0} {}\", .0.len()", "{0} {len}\", len = .0.len()");
    assert_eq!(out, want);
    // the finding's column counts characters: `\t#[error("ü {` is 13 of them, `r` is the 14th
    let a = analyze(src);
    assert_eq!((a.findings[0].line, a.findings[0].column), (6, 14));
}

// ---- whole crates (cargo metadata), rule 4, and cargo check against thiserror 2 ----------

const HELPER_LIB: &str = "pub use thiserror::Error;\n";

/// thiserror 1 code: rules 1 and 3, with look-alikes, spread over a module tree.
const APP_LIB: &str = r#"//! thiserror 1 code
use thiserror::Error;

mod nested;
#[path = "elsewhere/other.rs"]
mod other;

/// Look-alikes: `r#` in code, strings and comments.
// {r#type}
pub const S: &str = "{r#type}";

#[derive(Debug, Error)]
pub enum AppError {
    #[error("unknown type {r#type}")]
    UnknownType { r#type: String },
    #[error("kind {r#type:?} {{r#type}}")]
    Kind { r#type: u8 },
    #[error("{}", .r#type)]
    Arg { r#type: String },
    #[error(
        "{0} (code {})",
        .1
    )]
    Coded(String, u32),
}

pub fn make() -> Vec<AppError> {
    vec![
        AppError::UnknownType { r#type: "t".into() },
        AppError::Coded("x".into(), 2),
        nested::deeper::Deep(String::new()).into(),
        other::Other { r#match: 1 }.into(),
    ]
}
"#;

const APP_NESTED: &str = "pub mod deeper;\n";
const APP_DEEPER: &str = r#"#[derive(Debug, thiserror::Error)]
#[error("{0}: {} bytes", .0.len())]
pub struct Deep(pub String);

impl From<Deep> for crate::AppError {
    fn from(d: Deep) -> Self {
        crate::AppError::Arg { r#type: d.to_string() }
    }
}
"#;
const APP_OTHER: &str = r#"#[derive(Debug, thiserror::Error)]
#[error(r"match {r#match}")]
pub struct Other {
    pub r#match: u8,
}

impl From<Other> for crate::AppError {
    fn from(o: Other) -> Self {
        crate::AppError::Kind { r#type: o.r#match }
    }
}
"#;
const APP_TEST: &str = r#"#[derive(Debug, thiserror::Error)]
#[error("in a test {r#type}")]
struct T { r#type: u8 }

#[test]
fn t() { let _ = T { r#type: 1 }.to_string(); }
"#;
const APP_BUILD: &str = "fn main() {}\n";

/// A crate that reaches the derive through `helper`'s re-export only (rule 4).
const REEXP_LIB: &str = r#"use helper::Error;

#[derive(Debug, Error)]
#[error("boom {code}")]
pub struct Boom {
    pub code: u32,
}
"#;

pub(crate) fn fixture(root: &Path) {
    write(
        root,
        "Cargo.toml",
        "[workspace]\nresolver = \"2\"\nmembers = [\"app\", \"helper\", \"reexp\"]\n\n[workspace.dependencies]\nthiserror = \"2\"\n",
    );
    let pkg = |name: &str, deps: &str| {
        format!(
            "[package]\nname = \"{name}\"\nversion = \"0.1.0\"\nedition = \"2021\"\npublish = false\n\n[dependencies]\n{deps}"
        )
    };
    write(
        root,
        "helper/Cargo.toml",
        &pkg("helper", "thiserror = { workspace = true }\n"),
    );
    write(root, "helper/src/lib.rs", HELPER_LIB);
    write(
        root,
        "app/Cargo.toml",
        &pkg("app", "thiserror = { workspace = true }\n"),
    );
    write(root, "app/src/lib.rs", APP_LIB);
    write(root, "app/src/nested.rs", APP_NESTED);
    write(root, "app/src/nested/deeper.rs", APP_DEEPER);
    write(root, "app/src/elsewhere/other.rs", APP_OTHER);
    write(root, "app/tests/it.rs", APP_TEST);
    write(root, "app/build.rs", APP_BUILD);
    // not in any module tree: never read (it would not even parse)
    write(root, "app/src/stray.rs", "this is not rust {r#type}");
    write(
        root,
        "reexp/Cargo.toml",
        &pkg("reexp", "helper = { path = \"../helper\" }\n"),
    );
    write(root, "reexp/src/lib.rs", REEXP_LIB);
}

pub(crate) fn packages(root: &Path) -> Vec<cargo_metadata::Package> {
    let meta = xtask::workspace::metadata_no_deps(&root.join("Cargo.toml")).unwrap();
    let mut p = meta
        .workspace_packages()
        .into_iter()
        .cloned()
        .collect::<Vec<_>>();
    p.sort_by(|a, b| a.name.cmp(&b.name));
    p
}

#[test]
fn crate_analysis_walks_module_trees_and_decides_rule_4() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    fixture(root);
    let pkgs = packages(root);
    let [app, helper, reexp] = pkgs.as_slice() else {
        panic!("{pkgs:?}")
    };

    let a = analyze_crate(app).unwrap();
    let rel = |p: &Path| {
        p.strip_prefix(root.join("app"))
            .unwrap()
            .to_string_lossy()
            .into_owned()
    };
    let mut files: Vec<String> = a.files.iter().map(|f| rel(&f.path)).collect();
    files.sort();
    assert_eq!(
        files,
        [
            "build.rs",
            "src/elsewhere/other.rs",
            "src/lib.rs",
            "src/nested.rs",
            "src/nested/deeper.rs",
            "tests/it.rs"
        ]
    );
    let found: Vec<(String, usize, Rule)> = a
        .findings
        .iter()
        .map(|f| (rel(&f.path), f.line, f.rule))
        .collect();
    assert_eq!(
        found,
        vec![
            ("src/elsewhere/other.rs".into(), 2, Rule::RawIdentInFormat),
            ("src/lib.rs".into(), 14, Rule::RawIdentInFormat),
            ("src/lib.rs".into(), 16, Rule::RawIdentInFormat),
            ("src/lib.rs".into(), 22, Rule::PositionalWithNumbered),
            (
                "src/nested/deeper.rs".into(),
                2,
                Rule::PositionalWithNumbered
            ),
            ("tests/it.rs".into(), 2, Rule::RawIdentInFormat),
        ]
    );
    assert!(a.findings.iter().all(|f| f.fixable));
    assert!(a.missing_dependencies.is_empty());
    assert_eq!(a.source_edits().count(), 4);

    let h = analyze_crate(helper).unwrap();
    assert!(h.findings.is_empty() && h.source_edits().next().is_none());

    let r = analyze_crate(reexp).unwrap();
    assert_eq!(r.findings.len(), 1);
    let f = &r.findings[0];
    assert_eq!(
        (f.rule, f.line, f.column, f.fixable),
        (Rule::MissingDirectDependency, 3, 17, true)
    );
    assert!(
        f.message.contains("through `helper::Error`"),
        "{}",
        f.message
    );
    assert_eq!(
        f.suggestion.as_deref().unwrap().split(" to ").next(),
        Some("add `thiserror = { workspace = true }`")
    );
    assert_eq!(r.missing_dependencies.len(), 1);
    assert_eq!(r.missing_dependencies[0].table(), "dependencies");
    assert_eq!(
        r.missing_dependencies[0].manifest_path,
        root.join("reexp/Cargo.toml")
    );
    assert!(!xtask::thiserror_src::has_direct_thiserror(
        reexp,
        xtask::thiserror_src::DepKind::Normal
    ));
    assert!(xtask::thiserror_src::has_direct_thiserror(
        app,
        xtask::thiserror_src::DepKind::Dev
    ));
}

#[test]
fn crate_source_files_lists_module_trees_with_their_dependency_kinds() {
    use xtask::thiserror_src::DepKind;
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    fixture(root);
    let files = xtask::thiserror_src::crate_source_files(&packages(root)[0]).unwrap();
    let mut got: Vec<(String, Vec<DepKind>)> = files
        .iter()
        .map(|f| {
            (
                f.path
                    .strip_prefix(root)
                    .unwrap()
                    .to_string_lossy()
                    .into_owned(),
                f.needs.clone(),
            )
        })
        .collect();
    got.sort();
    let n = || vec![DepKind::Normal];
    assert_eq!(
        got,
        vec![
            ("app/build.rs".into(), vec![DepKind::Build]),
            ("app/src/elsewhere/other.rs".into(), n()),
            ("app/src/lib.rs".into(), n()),
            ("app/src/nested.rs".into(), n()),
            ("app/src/nested/deeper.rs".into(), n()),
            ("app/tests/it.rs".into(), vec![DepKind::Dev]),
        ]
    );
}

#[test]
fn rule_4_respects_tables_and_renames() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    fixture(root);
    // reexp's derive only in a test; thiserror only in dev-dependencies: satisfied
    write(root, "reexp/src/lib.rs", "");
    write(root, "reexp/tests/t.rs", REEXP_LIB);
    write(
        root,
        "reexp/Cargo.toml",
        "[package]\nname = \"reexp\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[dependencies]\nhelper = { path = \"../helper\" }\n\n[dev-dependencies]\nthiserror = \"2\"\n",
    );
    let r = analyze_crate(&packages(root)[2]).unwrap();
    assert!(r.findings.is_empty(), "{:?}", r.findings);
    // renamed only: not a `::thiserror` path; reported for a person
    write(
        root,
        "reexp/Cargo.toml",
        "[package]\nname = \"reexp\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[dependencies]\nhelper = { path = \"../helper\" }\nte = { package = \"thiserror\", version = \"2\" }\n",
    );
    let r = analyze_crate(&packages(root)[2]).unwrap();
    assert_eq!(r.findings.len(), 1);
    assert!(!r.findings[0].fixable);
    assert_eq!(
        r.missing_dependencies[0].kind,
        xtask::thiserror_src::DepKind::Dev
    );
    assert_eq!(r.missing_dependencies[0].renamed_as.as_deref(), Some("te"));
}

#[test]
fn unparsable_file_in_a_module_tree_is_an_error_with_location() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    fixture(root);
    // a file that may hold a thiserror derive is parsed: not parsing is an error
    write(
        root,
        "app/src/nested.rs",
        "pub mod deeper;\n#[derive(thiserror::Error)]\n#[error(\"{r#type}\")]\nfn (\n",
    );
    let e = analyze_crate(&packages(root)[0]).unwrap_err().to_string();
    assert!(e.contains("app/src/nested.rs:4:"), "{e}");
    // one that cannot hold a finding is not parsed (cargo reports it when it builds)
    write(root, "app/src/nested.rs", "pub mod deeper;\nfn (\n");
    let a = analyze_crate(&packages(root)[0]).unwrap();
    let parse_all = xtask::thiserror_src::AnalyzeOptions {
        parse_all: true,
        ..Default::default()
    };
    let e = xtask::thiserror_src::analyze_crate_with(&packages(root)[0], &parse_all)
        .unwrap_err()
        .to_string();
    assert!(e.contains("app/src/nested.rs:2:"), "{e}");
    assert!(a.files.iter().any(|f| f.path.ends_with("nested.rs")));
}

/// The issue's "done when": thiserror 1 code does not compile against thiserror 2;
/// after applying the analysis (source fixes + the missing dependency) it does.
#[test]
fn fixture_compiles_against_thiserror_2_only_after_the_fixes() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("ws");
    let target = dir.path().join("target");
    fixture(&root);

    let (ok, err) = cargo_check(&root, &target);
    eprintln!("before the fixes, cargo check said:\n{err}");
    assert!(
        !ok,
        "thiserror 1 code unexpectedly compiles against thiserror 2"
    );
    for expected in [
        "raw identifiers are not supported",           // rule 1
        "ambiguous reference to positional arguments", // rule 3
        "thiserror",                                   // rule 4: `::thiserror` unresolved in reexp
    ] {
        assert!(err.contains(expected), "missing `{expected}` in:\n{err}");
    }
    assert!(
        err.contains("could not find `thiserror`") || err.contains("unresolved"),
        "{err}"
    );

    for p in packages(&root) {
        let a = analyze_crate(&p).unwrap();
        assert!(!a.has_unfixable(), "{:?}", a.findings);
        for (path, old, new) in a.source_edits() {
            assert_eq!(std::fs::read_to_string(path).unwrap(), old);
            std::fs::write(path, new).unwrap();
        }
        for m in &a.missing_dependencies {
            let manifest = std::fs::read_to_string(&m.manifest_path).unwrap();
            let header = format!("[{}]\n", m.table());
            assert!(manifest.contains(&header));
            let manifest = manifest.replace(
                &header,
                &format!("{header}thiserror = {{ workspace = true }}\n"),
            );
            std::fs::write(&m.manifest_path, manifest).unwrap();
        }
    }
    let (ok, err) = cargo_check(&root, &target);
    assert!(ok, "still fails after the fixes:\n{err}");

    // and a second analysis finds nothing left to do
    for p in packages(&root) {
        let a = analyze_crate(&p).unwrap();
        assert!(a.findings.is_empty(), "{:?}", a.findings);
    }
}
