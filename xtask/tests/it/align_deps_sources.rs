//! `cargo xtask align-deps` on the source side: one run moves a
//! workspace written for thiserror 1 to thiserror 2 — manifests and Rust
//! sources, in one all-or-nothing plan — and the result compiles. Driven
//! in-process through `xtask::cli::run`; `cargo check` runs for real.

use std::path::Path;

use crate::support::{POLICY, Snapshot, align, cargo_check, read, snapshot, write};

fn assert_unchanged(before: &Snapshot, root: &Path, what: &str) {
    let after = snapshot(root);
    assert_eq!(
        before.keys().collect::<Vec<_>>(),
        after.keys().collect::<Vec<_>>(),
        "{what}: files appeared or vanished"
    );
    for (p, (bytes, mtime, _)) in before {
        let (b2, m2, _) = &after[p];
        assert!(
            bytes == b2,
            "{what}: {} changed:\n{}",
            p.display(),
            String::from_utf8_lossy(b2)
        );
        assert_eq!(mtime, m2, "{what}: {} was rewritten", p.display());
    }
}

// ---- the fixture: a workspace written for thiserror 1 --------------------------------------

const ROOT: &str = "\
[workspace]
resolver = \"2\"
members = [\"app\", \"helper\", \"reexp\", \"reexp2\", \"devonly\"]
";

/// `[package]` of a fixture crate.
fn package(name: &str) -> String {
    format!(
        "[package]\nname = \"{name}\"\nversion = \"0.1.0\"\nedition = \"2021\"\npublish = false\n"
    )
}

/// thiserror 1 code: rules 1, 2 and 3, and the look-alikes that must stay.
const APP_LIB: &str = r##"//! Errors of the app, written for thiserror 1.
//! Look-alikes that stay: `{r#type}` in docs,
// in comments {r#type},
use thiserror::Error;

pub mod codes;

pub const TEMPLATE: &str = "{r#type} stays";
pub const RAW: &str = r#"raw {r#type} stays"#;

#[derive(Debug, Error)]
pub enum AppError {
    #[error("unknown type {r#type}")]
    UnknownType { r#type: String },
    #[error("bad type {r#type:?}, literally {{r#type}}")]
    BadType { r#type: u8 },
    #[error("argument {}", .r#type)]
    Arg { r#type: String },
    #[error("{0} (code {})", .1)]
    Coded(String, u32),
    #[error(
        "{0}: {} of {}",
        .0.len(),
        .1
    )]
    Sized(String, usize),
}

/// Rule 2: thiserror 1 inferred `T: Display` here, thiserror 2 does not.
#[derive(Debug, Error)]
#[error("wrapped {value}", value = "<hidden>")]
pub struct Wrapped<T> {
    pub value: T,
}

/// Not a thiserror type: nothing here changes.
#[derive(Debug)]
pub struct Plain {
    pub r#type: u8,
}

pub fn all() -> Vec<String> {
    let plain = Plain { r#type: 7 };
    vec![
        AppError::UnknownType { r#type: "t".into() }.to_string(),
        AppError::BadType { r#type: plain.r#type }.to_string(),
        AppError::Arg { r#type: "a".into() }.to_string(),
        AppError::Coded("c".into(), 2).to_string(),
        AppError::Sized("abc".into(), 9).to_string(),
        Wrapped { value: 3 }.to_string(),
        codes::Code(404, "not found").to_string(),
    ]
}
"##;

const APP_LIB_FIXED: &str = r##"//! Errors of the app, written for thiserror 1.
//! Look-alikes that stay: `{r#type}` in docs,
// in comments {r#type},
use thiserror::Error;

pub mod codes;

pub const TEMPLATE: &str = "{r#type} stays";
pub const RAW: &str = r#"raw {r#type} stays"#;

#[derive(Debug, Error)]
pub enum AppError {
    #[error("unknown type {type}")]
    UnknownType { r#type: String },
    #[error("bad type {type:?}, literally {{r#type}}")]
    BadType { r#type: u8 },
    #[error("argument {}", .r#type)]
    Arg { r#type: String },
    #[error("{0} (code {arg1})", arg1 = .1)]
    Coded(String, u32),
    #[error(
        "{0}: {len} of {arg2}",
        len = .0.len(),
        arg2 = .1
    )]
    Sized(String, usize),
}

/// Rule 2: thiserror 1 inferred `T: Display` here, thiserror 2 does not.
#[derive(Debug, Error)]
#[error("wrapped {value}", value = "<hidden>")]
pub struct Wrapped<T> {
    pub value: T,
}

/// Not a thiserror type: nothing here changes.
#[derive(Debug)]
pub struct Plain {
    pub r#type: u8,
}

pub fn all() -> Vec<String> {
    let plain = Plain { r#type: 7 };
    vec![
        AppError::UnknownType { r#type: "t".into() }.to_string(),
        AppError::BadType { r#type: plain.r#type }.to_string(),
        AppError::Arg { r#type: "a".into() }.to_string(),
        AppError::Coded("c".into(), 2).to_string(),
        AppError::Sized("abc".into(), 9).to_string(),
        Wrapped { value: 3 }.to_string(),
        codes::Code(404, "not found").to_string(),
    ]
}
"##;

/// A module file (found through `pub mod codes;`), CRLF line endings.
const APP_CODES: &str = "#[derive(Debug, thiserror::Error)]\r\n#[error(\"{0} {}\", .1)]\r\npub struct Code(pub u16, pub &'static str);\r\n";

const APP_TEST: &str = r#"#[derive(Debug, thiserror::Error)]
#[error("in a test {r#type}")]
struct T {
    r#type: u8,
}

#[test]
fn t() {
    assert_eq!(T { r#type: 1 }.to_string(), "in a test 1");
    assert_eq!(app::all().len(), 7);
}
"#;

/// Rule 4: the derive through `helper`'s re-export, no direct `thiserror`
/// (thiserror 1 compiles this: `{code:x}` has a format spec, so its expansion
/// names no `thiserror::` path).
const REEXP_LIB: &str = r#"use helper::Error;

#[derive(Debug, Error)]
#[error("boom (code {code:x})")]
pub struct Boom {
    pub code: u32,
}
"#;

const REEXP2_LIB: &str = r#"#[derive(Debug, helper::Error)]
#[error("other {r#type:?}")]
pub struct Other {
    pub r#type: u8,
}
"#;

const DEVONLY_TEST: &str = r#"#[derive(Debug, helper::Error)]
#[error("dev {0:?}")]
struct D(u8);

#[test]
fn d() {
    assert_eq!(D(1).to_string(), "dev 1");
}
"#;

/// Writes the fixture workspace into `root`.
fn fixture(root: &Path) {
    write(root, "Cargo.toml", ROOT);
    write(root, "policy/fleet.toml", POLICY);
    write(
        root,
        "app/Cargo.toml",
        &format!("{}\n[dependencies]\nthiserror = \"1.0\"\n", package("app")),
    );
    write(root, "app/src/lib.rs", APP_LIB);
    write(root, "app/src/codes.rs", APP_CODES);
    write(root, "app/tests/it.rs", APP_TEST);
    // not in any module tree: never read, never changed (it would not even parse)
    write(
        root,
        "app/tests/fixtures/ui.rs",
        "#[error(\"{r#type}\")] this is no Rust",
    );
    write(
        root,
        "helper/Cargo.toml",
        &format!(
            "{}\n[dependencies]\nthiserror = \"1.0\"\n",
            package("helper")
        ),
    );
    write(root, "helper/src/lib.rs", "pub use thiserror::Error;\n");
    write(
        root,
        "reexp/Cargo.toml",
        &format!(
            "{}\n[dependencies]\n# the error helper\nhelper = {{ path = \"../helper\" }} # re-exports the derive\n",
            package("reexp")
        )
        .replace('\n', "\r\n"),
    );
    write(root, "reexp/src/lib.rs", REEXP_LIB);
    write(
        root,
        "reexp2/Cargo.toml",
        &format!(
            "{}\n[dependencies.helper]\npath = \"../helper\"\n",
            package("reexp2")
        ),
    );
    write(root, "reexp2/src/lib.rs", REEXP2_LIB);
    write(
        root,
        "devonly/Cargo.toml",
        &format!(
            "{}\n[dependencies]\nhelper = {{ path = \"../helper\" }}\n",
            package("devonly")
        ),
    );
    write(root, "devonly/src/lib.rs", "pub fn f() {}\n");
    write(root, "devonly/tests/t.rs", DEVONLY_TEST);
}

/// The manifests after the fix (golden text).
fn fixed_manifests() -> Vec<(&'static str, String)> {
    vec![
        (
            "Cargo.toml",
            format!("{ROOT}\n[workspace.dependencies]\nthiserror = \"2\"\n"),
        ),
        (
            "app/Cargo.toml",
            format!(
                "{}\n[dependencies]\nthiserror = {{ workspace = true }}\n",
                package("app")
            ),
        ),
        (
            "helper/Cargo.toml",
            format!(
                "{}\n[dependencies]\nthiserror = {{ workspace = true }}\n",
                package("helper")
            ),
        ),
        (
            "reexp/Cargo.toml",
            format!(
                "{}\n[dependencies]\n# the error helper\nhelper = {{ path = \"../helper\" }} # re-exports the derive\nthiserror = {{ workspace = true }}\n",
                package("reexp")
            )
            .replace('\n', "\r\n"),
        ),
        (
            "reexp2/Cargo.toml",
            format!(
                "{}\n[dependencies.helper]\npath = \"../helper\"\n\n[dependencies.thiserror]\nworkspace = true\n",
                package("reexp2")
            ),
        ),
        (
            "devonly/Cargo.toml",
            format!(
                "{}\n[dependencies]\nhelper = {{ path = \"../helper\" }}\n\n[dev-dependencies]\nthiserror = {{ workspace = true }}\n",
                package("devonly")
            ),
        ),
    ]
}

/// The finding lines (human format) of a run's output.
fn finding_lines(out: &str) -> Vec<&str> {
    out.lines()
        .filter(|l| l.contains(" -> ") && !l.starts_with(['-', '+', ' ', '@']))
        .collect()
}

/// The issue's "done when": one `align-deps` run moves a workspace written for
/// thiserror 1 to thiserror 2 (manifests and sources); it compiles after,
/// while with the manifests alone it does not; the next run changes nothing.
#[test]
fn one_run_moves_thiserror_1_code_to_thiserror_2_and_it_compiles() {
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().join("ws");
    let target = dir.path().join("target");
    fixture(&ws);

    // the fixture is real thiserror 1 code
    let (ok, err) = cargo_check(&ws, &target);
    assert!(ok, "the thiserror 1 fixture does not compile:\n{err}");
    std::fs::remove_file(ws.join("Cargo.lock")).unwrap();
    let before = snapshot(&ws);

    // --check: every finding with path:line:column and rule, the diffs; nothing written
    let (code, out, _) = align(&ws, &["--check"]);
    assert_eq!(code, 1, "{out}");
    let findings = finding_lines(&out);
    let expected_prefixes = [
        "Cargo.toml:6: (nothing) -> thiserror = \"2\" (create [workspace.dependencies]",
        "app/Cargo.toml:8: thiserror = \"1.0\" -> thiserror = { workspace = true }",
        "app/src/codes.rs:2:19: [thiserror2-positional-with-numbered] #[error(\"{0} {}\", .1)] -> #[error(\"{0} {arg1}\", arg1 = .1)] (struct `Code` uses numbered `{0}`",
        "app/src/lib.rs:13:28: [thiserror2-raw-ident-in-format] #[error(\"unknown type {r#type}\")] -> #[error(\"unknown type {type}\")] (raw identifier `r#type`",
        "app/src/lib.rs:15:24: [thiserror2-raw-ident-in-format] #[error(\"bad type {r#type:?}, literally {{r#type}}\")] -> #[error(\"bad type {type:?}, literally {{r#type}}\")] (",
        "app/src/lib.rs:19:30: [thiserror2-positional-with-numbered] #[error(\"{0} (code {})\", .1)] -> #[error(\"{0} (code {arg1})\", arg1 = .1)] (",
        "app/src/lib.rs:23:9: [thiserror2-positional-with-numbered] \"{0}: {} of {}\", .0.len(), .1 -> \"{0}: {len} of {arg2}\", len = .0.len(), arg2 = .1 (",
        "app/src/lib.rs:31:28: [thiserror2-shadowed-field-bound] #[error(\"wrapped {value}\", value = \"<hidden>\")] -> if the Display impl relied on it, add `where T: ::core::fmt::Display` to the type",
        "app/tests/it.rs:2:21: [thiserror2-raw-ident-in-format] #[error(\"in a test {r#type}\")] -> #[error(\"in a test {type}\")] (",
        "devonly/tests/t.rs:1:17: [thiserror2-missing-direct-dependency] #[derive(Debug, helper::Error)] -> add `thiserror = { workspace = true }` to [dev-dependencies] of devonly/Cargo.toml (`devonly` derives thiserror's Error through `helper::Error`",
        "helper/Cargo.toml:8: thiserror = \"1.0\" -> thiserror = { workspace = true }",
        "reexp/src/lib.rs:3:17: [thiserror2-missing-direct-dependency] #[derive(Debug, Error)] -> add `thiserror = { workspace = true }` to [dependencies] of reexp/Cargo.toml (",
        "reexp2/src/lib.rs:1:17: [thiserror2-missing-direct-dependency] #[derive(Debug, helper::Error)] -> add `thiserror = { workspace = true }` to [dependencies] of reexp2/Cargo.toml (",
        "reexp2/src/lib.rs:2:17: [thiserror2-raw-ident-in-format] #[error(\"other {r#type:?}\")] -> #[error(\"other {type:?}\")] (",
    ];
    assert_eq!(findings.len(), expected_prefixes.len(), "{out}");
    for (line, want) in findings.iter().zip(expected_prefixes) {
        assert!(
            line.starts_with(want),
            "want `{want}`\ngot  `{line}`\n{out}"
        );
    }
    let rule2 = findings
        .iter()
        .find(|l| l.contains("shadowed-field-bound"))
        .unwrap();
    assert!(rule2.contains("[needs a person]"), "{rule2}");
    assert!(
        out.contains("--- a/app/src/lib.rs\n+++ b/app/src/lib.rs\n"),
        "{out}"
    );
    assert!(
        out.contains(
            "-    #[error(\"unknown type {r#type}\")]\n+    #[error(\"unknown type {type}\")]\n"
        ),
        "{out}"
    );
    assert!(
        out.contains("--- a/reexp/Cargo.toml\n+++ b/reexp/Cargo.toml\n"),
        "{out}"
    );
    assert!(
        out.contains("+thiserror = { workspace = true }\r\n"),
        "{out}"
    );
    assert!(
        out.contains(&format!("align-deps: 14 violations in 9 files, 13 fixable; run `cargo xtask align-deps --workspace {}` to fix those, the rest need a person", ws.display())),
        "{out}"
    );
    assert_unchanged(&before, &ws, "--check");

    // the fix: one run; exit 1 because rule 2 needs a person (and says why)
    let (code, out, err) = align(&ws, &[]);
    assert_eq!(code, 1, "{out}{err}");
    for f in [
        "fixed Cargo.toml: 1 change",
        "fixed app/Cargo.toml: 1 change",
        "fixed app/src/lib.rs: 4 changes",
        "fixed app/src/codes.rs: 1 change\n",
        "fixed app/tests/it.rs: 1 change",
        "fixed reexp/Cargo.toml: 1 change",
        "fixed reexp2/src/lib.rs: 1 change\n",
        "fixed reexp2/Cargo.toml: 1 change",
        "fixed devonly/Cargo.toml: 1 change",
        "fixed helper/Cargo.toml: 1 change",
    ] {
        assert!(out.contains(f), "missing `{f}` in\n{out}");
    }
    assert!(
        out.contains("app/src/lib.rs:31:28: [thiserror2-shadowed-field-bound]"),
        "{out}"
    );
    assert!(
        out.contains(
            "align-deps: fixed 13 findings in 10 files; 1 finding needs a person (listed above)"
        ),
        "{out}"
    );
    for (rel, want) in fixed_manifests() {
        assert_eq!(read(&ws.join(rel)), want, "{rel}");
    }
    assert_eq!(read(&ws.join("app/src/lib.rs")), APP_LIB_FIXED);
    assert_eq!(
        read(&ws.join("app/src/codes.rs")),
        APP_CODES.replace("{0} {}\", .1", "{0} {arg1}\", arg1 = .1")
    );
    assert_eq!(
        read(&ws.join("app/tests/it.rs")),
        APP_TEST.replace("in a test {r#type}", "in a test {type}")
    );
    assert_eq!(
        read(&ws.join("reexp2/src/lib.rs")),
        REEXP2_LIB.replace("{r#type:?}", "{type:?}")
    );
    for untouched in [
        "reexp/src/lib.rs",
        "devonly/tests/t.rs",
        "helper/src/lib.rs",
    ] {
        assert_eq!(
            before[&ws.join(untouched)].0,
            std::fs::read(ws.join(untouched)).unwrap()
        );
    }
    assert_eq!(
        read(&ws.join("app/tests/fixtures/ui.rs")),
        "#[error(\"{r#type}\")] this is no Rust"
    );

    // it compiles against thiserror 2 now
    let (ok, err) = cargo_check(&ws, &target);
    assert!(ok, "does not compile after the fix:\n{err}");
    let lock = read(&ws.join("Cargo.lock"));
    assert!(
        lock.contains("name = \"thiserror\"\nversion = \"2."),
        "{lock}"
    );
    assert!(
        !lock.contains("name = \"thiserror\"\nversion = \"1."),
        "{lock}"
    );

    // ... where the manifest alignment alone does not: the same manifests
    // (but rule 4's lines) on the original sources fail on rules 1, 3 and 4
    let only = dir.path().join("manifests-only");
    fixture(&only);
    for (rel, text) in fixed_manifests().into_iter().take(3) {
        write(&only, rel, &text);
    }
    let (ok, err) = cargo_check(&only, &target);
    assert!(
        !ok,
        "thiserror 1 sources unexpectedly compile against thiserror 2"
    );
    for expected in [
        "raw identifiers are not supported",           // rule 1
        "ambiguous reference to positional arguments", // rule 3
        "thiserror",                                   // rule 4
    ] {
        assert!(err.contains(expected), "missing `{expected}` in:\n{err}");
    }
    assert!(
        err.contains("could not find `thiserror`") || err.contains("unresolved"),
        "{err}"
    );

    // the next run changes nothing: only the rule 2 report is left
    let after_fix = snapshot(&ws);
    for extra in [&["--check"][..], &[]] {
        let (code, out, err) = align(&ws, extra);
        assert_eq!(code, 1, "{out}{err}");
        let f = finding_lines(&out);
        assert_eq!(f.len(), 1, "{out}");
        assert!(f[0].contains("shadowed-field-bound"), "{out}");
        assert!(!out.contains("--- a/"), "{out}");
        assert!(!out.contains("fixed "), "{out}");
        assert_unchanged(&after_fix, &ws, "second run");
    }

    // a person follows the suggestion: then the workspace holds
    let lib = ws.join("app/src/lib.rs");
    std::fs::write(
        &lib,
        read(&lib).replace(
            "pub struct Wrapped<T> {",
            "pub struct Wrapped<T: std::fmt::Display> {",
        ),
    )
    .unwrap();
    let (code, out, _) = align(&ws, &[]);
    assert_eq!(code, 0, "{out}");
    assert!(
        out.contains("align-deps: nothing to change; the workspace holds the policy"),
        "{out}"
    );
}

#[test]
fn json_and_github_formats_include_source_findings() {
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path();
    fixture(ws);
    let before = snapshot(ws);

    let (code, out, _) = align(ws, &["--check", "--format", "json"]);
    assert_eq!(code, 1);
    let rows: Vec<serde_json::Value> = out
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .filter(|r: &serde_json::Value| r["kind"] != "summary")
        .collect();
    assert_eq!(rows.len(), 14, "{out}");
    assert!(rows.iter().all(|r| r["kind"] == "violation"), "{out}");
    let raw = rows
        .iter()
        .find(|r| r["file"] == "app/src/lib.rs" && r["line"] == 13)
        .unwrap();
    assert_eq!(raw["column"], 28);
    assert_eq!(raw["rule"], "thiserror2-raw-ident-in-format");
    assert_eq!(raw["dependency"], "thiserror");
    assert_eq!(raw["table"], serde_json::Value::Null);
    assert_eq!(raw["found"], "#[error(\"unknown type {r#type}\")]");
    assert_eq!(raw["wanted"], "#[error(\"unknown type {type}\")]");
    assert_eq!(raw["fixable"], true);
    let r2 = rows
        .iter()
        .find(|r| r["rule"] == "thiserror2-shadowed-field-bound")
        .unwrap();
    assert_eq!(r2["fixable"], false);
    assert_eq!(
        (r2["line"].as_u64(), r2["column"].as_u64()),
        (Some(31), Some(28))
    );
    let r4 = rows
        .iter()
        .find(|r| r["file"] == "reexp/src/lib.rs")
        .unwrap();
    assert_eq!(r4["rule"], "thiserror2-missing-direct-dependency");
    assert_eq!(r4["table"], "dependencies");
    assert_eq!(
        r4["wanted"],
        "add `thiserror = { workspace = true }` to [dependencies] of reexp/Cargo.toml"
    );

    let (code, out, _) = align(ws, &["--check", "--format", "github"]);
    assert_eq!(code, 1);
    assert_eq!(
        out.lines().filter(|l| l.starts_with("::error ")).count(),
        14,
        "{out}"
    );
    assert!(
        out.contains(
            "::error file=app/src/lib.rs,line=13,col=28,title=align-deps%3A thiserror2-raw-ident-in-format::"
        ),
        "{out}"
    );
    assert!(
        out.contains(
            "::error file=devonly/tests/t.rs,line=1,col=17,title=align-deps%3A thiserror2-missing-direct-dependency::"
        ),
        "{out}"
    );
    assert_unchanged(&before, ws, "--check --format json|github");

    // a fix run in JSON lists every finding, source ones included, and applies them
    let (code, out, _) = align(ws, &["--format", "json"]);
    assert_eq!(code, 1, "{out}");
    // 14 findings and the summary
    assert_eq!(out.lines().count(), 15, "{out}");
    assert_eq!(read(&ws.join("app/src/lib.rs")), APP_LIB_FIXED);
}

#[test]
fn a_source_file_that_does_not_parse_is_exit_2_and_nothing_is_written() {
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path();
    fixture(ws);
    // in app's module tree (reached through `pub mod codes;`); a file that
    // cannot hold a thiserror derive is not parsed (the prefilter): cargo reports it
    write(
        ws,
        "app/src/codes.rs",
        "pub struct Code(u8);\nfn broken( {\n",
    );
    let (code, out, err) = align(ws, &["--check"]);
    assert_eq!(code, 1, "{out}{err}");
    assert!(!err.contains("codes.rs"), "{err}");
    // nor is one whose messages cannot matter to thiserror 2 (no `r#`, no arguments)
    write(
        ws,
        "app/src/codes.rs",
        "#[derive(Debug, thiserror::Error)]\n#[error(\"code\")]\npub struct Code(u8);\nfn broken( {\n",
    );
    let (code, out, err) = align(ws, &["--check"]);
    assert_eq!(code, 1, "{out}{err}");
    // nor one whose arguments fill `{}` alone (no `{0}`, no named argument)
    write(
        ws,
        "app/src/codes.rs",
        "#[derive(Debug, thiserror::Error)]\n#[error(\"code {}\", .0)]\npub struct Code(u8);\nfn broken( {\n",
    );
    let (code, out, err) = align(ws, &["--check"]);
    assert_eq!(code, 1, "{out}{err}");
    // one that may hold one is parsed, and not parsing stops the run
    write(
        ws,
        "app/src/codes.rs",
        "#[derive(Debug, thiserror::Error)]\n#[error(\"code {0} {}\", .0)]\npub struct Code(u8);\nfn broken( {\n",
    );
    let before = snapshot(ws);
    for extra in [&["--check"][..], &[]] {
        let (code, out, err) = align(ws, extra);
        assert_eq!(code, 2, "{out}{err}");
        assert!(
            err.contains("app/src/codes.rs:4:"),
            "no path:line:col in {err}"
        );
        assert!(err.contains("nothing written"), "{err}");
        assert!(!out.contains(" -> "), "{out}");
        // manifests (app, helper and the root would change) and sources alike
        assert_unchanged(&before, ws, "parse error");
    }
}

#[test]
fn a_source_file_changed_after_planning_is_not_overwritten() {
    // the plan holds whole-file replacements: Plan::apply re-reads each file
    // and writes nothing at all when one differs from the text analysed
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path();
    fixture(ws);
    let meta = xtask::workspace::metadata_no_deps(&ws.join("Cargo.toml")).unwrap();
    let policy = xtask::policy::Policy::parse(POLICY, Path::new("p")).unwrap();
    let analyses = xtask::align_deps::sources::analyze(&meta, ws, &policy).unwrap();
    assert_eq!(analyses.len(), 5);
    let mut plan = xtask::align_deps::plan::AlignmentPlan::new();
    for a in &analyses {
        for (p, old, new) in a.source_edits() {
            plan.edits.replace_file(p, "x.rs", old, new).unwrap();
        }
    }
    assert_eq!(plan.edits.edits().count(), 4);
    write(ws, "app/tests/it.rs", "// edited meanwhile\n");
    let before = snapshot(ws);
    let e = plan.edits.apply().unwrap_err().to_string();
    assert!(e.contains("changed on disk"), "{e}");
    assert_unchanged(&before, ws, "stale plan");
}

#[test]
fn rule_4_follows_the_policy_form_and_the_workspace_entry() {
    // inherit = false: the requirement itself, in the table, CRLF kept
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path();
    fixture(ws);
    write(
        ws,
        "policy/fleet.toml",
        "[dependencies.thiserror]\nversion = \"2\"\ninherit = false\n",
    );
    let (code, out, err) = align(ws, &[]);
    assert_eq!(code, 1, "{out}{err}");
    assert!(
        read(&ws.join("reexp/Cargo.toml")).ends_with(
            "helper = { path = \"../helper\" } # re-exports the derive\r\nthiserror = \"2\"\r\n"
        ),
        "{}",
        read(&ws.join("reexp/Cargo.toml"))
    );
    assert!(
        read(&ws.join("reexp2/Cargo.toml"))
            .ends_with("\n\n[dependencies.thiserror]\nversion = \"2\"\n")
    );
    assert_eq!(read(&ws.join("Cargo.toml")), ROOT);

    // a workspace entry that disables default features: the new user keeps them
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path();
    fixture(ws);
    write(
        ws,
        "Cargo.toml",
        &format!(
            "{ROOT}\n[workspace.dependencies]\nthiserror = {{ version = \"2\", default-features = false }}\n"
        ),
    );
    let (code, out, err) = align(ws, &[]);
    assert_eq!(code, 1, "{out}{err}");
    assert!(
        read(&ws.join("reexp/Cargo.toml"))
            .ends_with("\r\nthiserror = { workspace = true, default-features = true }\r\n")
    );

    // a `thiserror` workspace key that is another package: reported, not added
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path();
    fixture(ws);
    write(
        ws,
        "Cargo.toml",
        &format!(
            "{ROOT}\n[workspace.dependencies]\nthiserror = {{ package = \"anyhow\", version = \"1\" }}\n"
        ),
    );
    let reexp_before = read(&ws.join("reexp/Cargo.toml"));
    let (code, out, err) = align(ws, &[]);
    assert_eq!(code, 1, "{out}{err}");
    assert_eq!(read(&ws.join("reexp/Cargo.toml")), reexp_before);
    let line = out
        .lines()
        .find(|l| l.starts_with("reexp/src/lib.rs:3:17:"))
        .unwrap();
    assert!(line.contains("[needs a person]"), "{line}");
    assert!(line.contains("align-deps cannot add it"), "{line}");
}

#[test]
fn no_source_side_unless_the_policy_asks_for_thiserror_2() {
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path();
    fixture(ws);
    write(
        ws,
        "policy/fleet.toml",
        "[dependencies.thiserror]\nversion = \"1.0\"\ninherit = false\n",
    );
    let (code, out, _) = align(ws, &["--check"]);
    assert_eq!(code, 0, "{out}");
    assert!(!out.contains("thiserror2-"), "{out}");
}

#[test]
fn sources_of_a_crate_whose_declaration_needs_a_person_are_left_alone() {
    // the workspace entry adds a feature `app` and `helper` lack: their
    // declarations stay on thiserror 1 (reported), so their sources must too
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path();
    fixture(ws);
    write(
        ws,
        "Cargo.toml",
        &format!(
            "{ROOT}\n[workspace.dependencies]\nthiserror = {{ version = \"2\", features = [\"std\"] }}\n"
        ),
    );
    let (code, out, err) = align(ws, &[]);
    assert_eq!(code, 1, "{out}{err}");
    assert_eq!(read(&ws.join("app/src/lib.rs")), APP_LIB);
    assert_eq!(read(&ws.join("app/src/codes.rs")), APP_CODES);
    assert!(
        out.contains(
            "info: app/Cargo.toml: the Rust sources of `app` were not checked for thiserror 2"
        ),
        "{out}"
    );
    assert!(!out.contains("app/src/"), "{out}");
    // crates that do move are still fixed in the same run
    assert_eq!(
        read(&ws.join("reexp2/src/lib.rs")),
        REEXP2_LIB.replace("{r#type:?}", "{type:?}")
    );
}

/// `{r#type}` in an `include!`d file and in a module declared inside a macro
/// invocation (the same module resolver as fmt-check's) is found and fixed,
/// and the crate then compiles against thiserror 2; a module whose file is
/// missing is reported as `info:`, not scanned.
#[test]
fn include_and_macro_declared_modules_are_scanned_and_fixed() {
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().join("ws");
    write(
        &ws,
        "Cargo.toml",
        "[workspace]\nresolver = \"2\"\nmembers = [\"app\"]\n",
    );
    write(&ws, "policy/fleet.toml", POLICY);
    write(
        &ws,
        "app/Cargo.toml",
        &format!("{}\n[dependencies]\nthiserror = \"1.0\"\n", package("app")),
    );
    write(
        &ws,
        "app/src/lib.rs",
        "macro_rules! items {\n    ($($i:item)*) => { $($i)* };\n}\nitems! {\n    pub mod hidden;\n}\n#[cfg(any())]\nmod gone;\ninclude!(\"errors.rs\");\n",
    );
    let raw = |name: &str| {
        format!(
            "#[derive(Debug, thiserror::Error)]\n#[error(\"{name} {{r#type}}\")]\npub struct {name} {{\n    pub r#type: String,\n}}\n"
        )
    };
    write(&ws, "app/src/errors.rs", &raw("Included"));
    write(&ws, "app/src/hidden.rs", &raw("Hidden"));

    let (code, out, _) = align(&ws, &["--check"]);
    assert_eq!(code, 1, "{out}");
    assert!(
        out.contains("app/src/errors.rs:2:20: [thiserror2-raw-ident-in-format]"),
        "{out}"
    );
    assert!(
        out.contains("app/src/hidden.rs:2:18: [thiserror2-raw-ident-in-format]"),
        "{out}"
    );
    assert!(out.contains("info: app/src/gone.rs: "), "{out}");

    let (code, out, err) = align(&ws, &[]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(read(&ws.join("app/src/errors.rs")).contains("#[error(\"Included {type}\")]"));
    assert!(read(&ws.join("app/src/hidden.rs")).contains("#[error(\"Hidden {type}\")]"));
    let (ok, err) = cargo_check(&ws, &dir.path().join("target"));
    assert!(ok, "the fixed crate does not compile:\n{err}");
}
