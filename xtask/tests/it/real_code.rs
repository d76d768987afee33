//! `align-deps` and `fmt-check` on the code and configuration real projects
//! contain: raw-identifier module names, members outside the workspace root,
//! error types written inside macros, `[patch]`/`[replace]` of the aligned
//! package, requirements no registry can satisfy, exemptions beside renamed
//! declarations, `include!`d expressions and modules without a file.

use std::path::Path;

use crate::support::{POLICY, align, read, write};

/// `[package]` of a fixture crate.
fn package(name: &str) -> String {
    format!(
        "[package]\nname = \"{name}\"\nversion = \"0.1.0\"\nedition = \"2021\"\npublish = false\n"
    )
}

/// A workspace at `ws` with one member `app` on thiserror 1.0, the fleet
/// policy, and `lib` as `app/src/lib.rs`.
fn one_member(ws: &Path, lib: &str) {
    write(
        ws,
        "Cargo.toml",
        "[workspace]\nresolver = \"2\"\nmembers = [\"app\"]\n",
    );
    write(ws, "policy/fleet.toml", POLICY);
    write(
        ws,
        "app/Cargo.toml",
        &format!("{}\n[dependencies]\nthiserror = \"1.0\"\n", package("app")),
    );
    write(ws, "app/src/lib.rs", lib);
}

/// `mod r#trait;` lives in `trait.rs` (rustc strips the `r#`): its
/// `{r#type}` is found and fixed, and the module is not "not scanned".
#[test]
fn a_raw_identifier_module_is_scanned_in_its_unraw_file() {
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().join("ws");
    one_member(&ws, "pub mod r#trait;\n");
    write(
        &ws,
        "app/src/trait.rs",
        "#[derive(Debug, thiserror::Error)]\n#[error(\"bad {r#type}\")]\npub struct Bad {\n    pub r#type: String,\n}\n",
    );
    let (code, out, err) = align(&ws, &["--check"]);
    assert_eq!(code, 1, "{out}{err}");
    assert!(
        out.contains("app/src/trait.rs:2:15: [thiserror2-raw-ident-in-format]"),
        "{out}"
    );
    assert!(!out.contains("not scanned"), "{out}");
    let (code, out, err) = align(&ws, &[]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(read(&ws.join("app/src/trait.rs")).contains("#[error(\"bad {type}\")]"));
}

/// A member outside the workspace root is named by its absolute path, with
/// one leading slash, in every format and in the diff headers.
#[test]
fn a_member_outside_the_root_is_named_with_one_leading_slash() {
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().join("ws");
    let outside = dir.path().join("outside");
    write(
        &ws,
        "Cargo.toml",
        "[workspace]\nresolver = \"2\"\nmembers = [\"../outside\"]\n",
    );
    write(&ws, "policy/fleet.toml", POLICY);
    write(
        &outside,
        "Cargo.toml",
        &format!(
            "{}workspace = \"../ws\"\n\n[dependencies]\nthiserror = \"1.0\"\n",
            package("outside")
        ),
    );
    write(&outside, "src/lib.rs", "");
    let abs = outside.join("Cargo.toml").display().to_string();
    assert!(abs.starts_with('/') && !abs.starts_with("//"));
    for format in ["human", "json", "github"] {
        let (code, out, err) = align(&ws, &["--check", "--format", format]);
        assert_eq!(code, 1, "{out}{err}");
        assert!(out.contains(&abs), "{format}: {out}");
        assert!(!out.contains(&format!("/{abs}")), "{format}: {out}");
    }
    let (_, out, _) = align(&ws, &["--check"]);
    assert!(out.contains(&format!("--- {abs}\n+++ {abs}\n")), "{out}");
}

/// `RUSTUP_TOOLCHAIN` set by the user wins over the workspace's pin also when
/// the binary runs directly (no rustup proxy, so no `RUSTUP_TOOLCHAIN_SOURCE`),
/// as docs/fleet.md says: a pin to a toolchain that is not installed is then no error.
#[test]
fn rustup_toolchain_set_by_the_user_wins_over_the_pin() {
    if std::process::Command::new("rustup")
        .arg("--version")
        .output()
        .is_err()
    {
        return; // no rustup: toolchain files mean nothing here
    }
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path();
    write(
        ws,
        "Cargo.toml",
        "[workspace]\nresolver = \"2\"\nmembers = [\"a\"]\n",
    );
    write(ws, "a/Cargo.toml", &package("a"));
    write(ws, "a/src/lib.rs", "pub fn f() {}\n");
    write(
        ws,
        "rust-toolchain.toml",
        "[toolchain]\nchannel = \"1.61.0\"\n",
    );
    let run = |toolchain: Option<&str>| {
        let mut cmd = std::process::Command::new(crate::child::bin());
        cmd.args(["fmt-check", "--workspace", ws.to_str().unwrap()])
            .env_remove("RUSTUP_TOOLCHAIN_SOURCE")
            .env_remove("RUSTUP_TOOLCHAIN");
        if let Some(t) = toolchain {
            cmd.env("RUSTUP_TOOLCHAIN", t);
        }
        let out = crate::support::output_within(&mut cmd);
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stdout).into_owned()
                + &String::from_utf8_lossy(&out.stderr),
        )
    };
    // without it the pin applies: 1.61.0 is not installed
    let (code, text) = run(None);
    assert_eq!(code, Some(2), "{text}");
    assert!(text.contains("`1.61.0`"), "{text}");
    // with it, the user's toolchain formats the workspace
    let (code, text) = run(Some("stable"));
    assert_eq!(code, Some(0), "{text}");
    assert!(!text.contains("not installed"), "{text}");
}

/// `cargo fmt --all --check` on `ws`: its exit code (the reference).
fn cargo_fmt_check(ws: &Path) -> Option<i32> {
    let mut cmd = xtask::workspace::cargo_command();
    cmd.current_dir(ws).args(["fmt", "--all", "--check"]);
    crate::support::output_within(&mut cmd).status.code()
}

/// `mod missing;` (no file) and `mod dir;` (a directory without `mod.rs`):
/// `cargo fmt --check` fails on them; fmt-check names each one, exit 1.
#[test]
fn modules_without_a_file_are_named_and_fail_like_cargo_fmt() {
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path();
    write(
        ws,
        "Cargo.toml",
        "[workspace]\nresolver = \"2\"\nmembers = [\"a\"]\n",
    );
    write(ws, "a/Cargo.toml", &package("a"));
    write(
        ws,
        "a/src/lib.rs",
        "mod dir;\nmod fine;\n#[cfg(windows)]\nmod missing;\n\npub fn f() {}\n",
    );
    write(ws, "a/src/fine.rs", "pub fn g() {}\n");
    write(ws, "a/src/dir/other.rs", "pub fn h() {}\n");
    assert_eq!(cargo_fmt_check(ws), Some(1));
    let (code, out, err) =
        crate::support::xtask(&["fmt-check", "--workspace", ws.to_str().unwrap()]);
    assert_eq!(code, 1, "{out}{err}");
    assert!(
        out.contains("a/src/lib.rs:1: error: `mod dir;` leads to no file (a/src/dir.rs and a/src/dir/mod.rs absent)"),
        "{out}"
    );
    assert!(
        out.contains("a/src/lib.rs:4: error: `mod missing;`"),
        "{out}"
    );
    assert!(out.contains("2 modules without a file"), "{out}");
    // with the files there, both agree that the workspace is formatted
    write(ws, "a/src/dir/mod.rs", "pub mod other;\n");
    write(ws, "a/src/missing.rs", "pub fn m() {}\n");
    assert_eq!(cargo_fmt_check(ws), Some(0));
    let (code, out, err) =
        crate::support::xtask(&["fmt-check", "--workspace", ws.to_str().unwrap()]);
    assert_eq!(code, 0, "{out}{err}");
}

/// A file `include!`d in expression position (a raw string literal):
/// `cargo fmt --all --check` passes (it never reaches the file); fmt-check
/// reports it as not formattable as items and does not fail on it.
#[test]
fn an_included_expression_is_set_aside_not_a_failure() {
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path();
    write(
        ws,
        "Cargo.toml",
        "[workspace]\nresolver = \"2\"\nmembers = [\"a\"]\n",
    );
    write(ws, "a/Cargo.toml", &package("a"));
    write(
        ws,
        "a/src/lib.rs",
        "pub const TRACE: &str = include!(\"./example-trace-str.rs\");\n",
    );
    write(
        ws,
        "a/src/example-trace-str.rs",
        "r#\"\n  0: main\n    at src/main.rs:1\n\"#\n",
    );
    assert_eq!(cargo_fmt_check(ws), Some(0));
    let (code, out, err) =
        crate::support::xtask(&["fmt-check", "--workspace", ws.to_str().unwrap()]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(
        out.contains("note: a/src/example-trace-str.rs: include!d by a/src/lib.rs as an expression: not formattable as items"),
        "{out}"
    );
    assert!(
        out.contains("1 file checked") && out.contains("1 file include!d as an expression"),
        "{out}"
    );
    // a file that is neither items nor an expression is still an error
    write(ws, "a/src/example-trace-str.rs", "fn (\n");
    let (code, _, err) = crate::support::xtask(&["fmt-check", "--workspace", ws.to_str().unwrap()]);
    assert_eq!(code, 2, "{err}");
}

/// A manifest with a plain thiserror 1 declaration beside a renamed git one.
fn plain_and_sgx(ws: &Path, exempt_key: &str) {
    write(
        ws,
        "Cargo.toml",
        "[workspace]\nresolver = \"2\"\nmembers = [\"enclave\"]\n",
    );
    write(
        ws,
        "policy/fleet.toml",
        &format!(
            "{POLICY}\n[[exempt]]\nmanifest = \"enclave/Cargo.toml\"\ndependency = \"{exempt_key}\"\nreason = \"the SGX fork\"\n"
        ),
    );
    write(
        ws,
        "enclave/Cargo.toml",
        &format!(
            "{}\n[dependencies]\nthiserror = {{ version = \"1.0.26\", optional = true }}\nthiserror_sgx = {{ package = \"thiserror\", git = \"https://github.com/example/thiserror-sgx\" }}\n",
            package("enclave")
        ),
    );
    write(ws, "enclave/src/lib.rs", "");
}

/// A declaration exemption covers the one declaration it names, by key:
/// naming the renamed git declaration leaves the plain one to be fixed;
/// naming `thiserror` leaves the git one reported, under its own key.
#[test]
fn a_declaration_exemption_covers_the_one_declaration_its_key_names() {
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().join("ws");
    plain_and_sgx(&ws, "thiserror_sgx");
    let (code, out, err) = align(&ws, &["--check", "--format", "json"]);
    assert_eq!(code, 1, "{out}{err}");
    let rows: Vec<serde_json::Value> = out
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let violations: Vec<&serde_json::Value> =
        rows.iter().filter(|r| r["kind"] == "violation").collect();
    assert!(
        violations
            .iter()
            .all(|v| v["key"] != "thiserror_sgx" && v["rule"] != "source"),
        "{out}"
    );
    assert!(
        violations
            .iter()
            .any(|v| v["file"] == "enclave/Cargo.toml" && v["key"] == "thiserror"),
        "{out}"
    );
    let exempt = rows.iter().find(|r| r["kind"] == "exempt").expect(&out);
    assert_eq!(exempt["findings"], 1, "{out}");
    let (code, out, err) = align(&ws, &[]);
    assert_eq!(code, 0, "{out}{err}");
    let manifest = read(&ws.join("enclave/Cargo.toml"));
    assert!(!manifest.contains("1.0.26"), "{manifest}");
    assert!(
        manifest.contains("thiserror_sgx = { package = \"thiserror\", git = \"https://github.com/example/thiserror-sgx\" }"),
        "{manifest}"
    );

    // the other way round: the git declaration is reported under its key
    let ws = dir.path().join("ws2");
    plain_and_sgx(&ws, "thiserror");
    let (code, out, err) = align(&ws, &["--check"]);
    assert_eq!(code, 1, "{out}{err}");
    assert!(
        out.contains("[dependencies] thiserror_sgx (package thiserror) is a `git` dependency"),
        "{out}"
    );
    assert!(
        out.contains("exempt this one declaration in the policy ([[exempt]] manifest = \"enclave/Cargo.toml\", dependency = \"thiserror_sgx\""),
        "{out}"
    );
    assert!(!out.contains("drop the policy rule"), "{out}");
    assert!(
        !out.contains("1.0.26\" -> "),
        "the exempt declaration is reported:\n{out}"
    );
}

/// `--fix` refused because the rustfmt in use (stable, chosen by the user
/// over the workspace's nightly pin) ignores nightly-only options: the
/// message is one clean sentence, tells to drop the override rather than to
/// pin nightly (the workspace pins it already), and does not claim how
/// many files would end off-style.
#[test]
fn the_fix_refusal_under_an_override_of_a_nightly_pin_says_what_to_do() {
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path();
    write(
        ws,
        "Cargo.toml",
        "[workspace]\nresolver = \"2\"\nmembers = [\"a\"]\n",
    );
    write(ws, "a/Cargo.toml", &package("a"));
    write(ws, "a/src/lib.rs", "pub fn f()   {}\n");
    write(ws, "rustfmt.toml", "imports_granularity = \"Crate\"\n");
    write(
        ws,
        "rust-toolchain.toml",
        "[toolchain]\nchannel = \"nightly\"\n",
    );
    let mut cmd = std::process::Command::new(crate::child::bin());
    cmd.args(["fmt-check", "--fix", "--workspace", ws.to_str().unwrap()])
        .env_remove("RUSTUP_TOOLCHAIN_SOURCE")
        .env("RUSTUP_TOOLCHAIN", "stable");
    let out = crate::support::output_within(&mut cmd);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("--fix wrote nothing"), "{err}");
    assert!(!err.contains("  "), "runs of spaces: {err}");
    assert!(
        err.contains("the workspace pins `nightly` in ")
            && err.contains("without the toolchain override"),
        "{err}"
    );
    assert!(
        !err.contains("pin nightly") && !err.contains("pin a nightly"),
        "{err}"
    );
    assert!(!err.contains("formatted away"), "{err}");
    assert!(
        err.contains("rewrite the 1 unformatted file without them"),
        "{err}"
    );
    assert_eq!(read(&ws.join("a/src/lib.rs")), "pub fn f()   {}\n");
}

/// The same refusal when the pinned nightly is not installed: it does not
/// advise dropping the override "so that the pinned rustfmt is used" (there
/// is none), but installing it first.
#[test]
fn the_fix_refusal_under_an_override_of_a_pin_that_is_not_installed_says_to_install_it() {
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path();
    write(
        ws,
        "Cargo.toml",
        "[workspace]\nresolver = \"2\"\nmembers = [\"a\"]\n",
    );
    write(ws, "a/Cargo.toml", &package("a"));
    write(ws, "a/src/lib.rs", "pub fn f()   {}\n");
    write(ws, "rustfmt.toml", "imports_granularity = \"Crate\"\n");
    // a nightly no machine running these tests keeps installed
    write(
        ws,
        "rust-toolchain.toml",
        "[toolchain]\nchannel = \"nightly-2020-01-01\"\n",
    );
    let mut cmd = std::process::Command::new(crate::child::bin());
    cmd.args(["fmt-check", "--fix", "--workspace", ws.to_str().unwrap()])
        .env_remove("RUSTUP_TOOLCHAIN_SOURCE")
        .env("RUSTUP_TOOLCHAIN", "stable");
    let out = crate::support::output_within(&mut cmd);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("--fix wrote nothing"), "{err}");
    assert!(!err.contains("so that the pinned rustfmt is used"), "{err}");
    assert!(
        err.contains("is not installed here")
            && err.contains("rustup toolchain install nightly-2020-01-01 --component rustfmt"),
        "{err}"
    );
    assert_eq!(read(&ws.join("a/src/lib.rs")), "pub fn f()   {}\n");
}

/// `cargo generate-lockfile --offline` in `ws`: (success, stderr).
fn generate_lockfile(ws: &Path) -> (bool, String) {
    let mut cmd = xtask::workspace::cargo_command();
    cmd.current_dir(ws)
        .args(["generate-lockfile", "--offline", "--color", "never"]);
    let out = crate::support::output_within(&mut cmd);
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// A `[patch.crates-io]` pointing thiserror at a 1.x fork, and a `[replace]`
/// of a 1.x version: after the fix cargo leaves them unused (the
/// reference: cargo's own "was not used" warning); align-deps reports them
/// as findings for a person and never edits them.
#[test]
fn a_patch_or_replacement_the_new_requirement_no_longer_matches_is_a_finding() {
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().join("ws");
    one_member(&ws, "");
    write(
        dir.path(),
        "forks/thiserror/Cargo.toml",
        "[package]\nname = \"thiserror\"\nversion = \"1.0.69\"\nedition = \"2021\"\n",
    );
    write(dir.path(), "forks/thiserror/src/lib.rs", "");
    let root = "[workspace]\nresolver = \"2\"\nmembers = [\"app\"]\n\n[patch.crates-io]\nthiserror = { path = \"../forks/thiserror\" }\n";
    write(&ws, "Cargo.toml", root);
    let (ok, err) = generate_lockfile(&ws);
    assert!(ok && !err.contains("was not used"), "{err}");

    let (code, out, err) = align(&ws, &["--check"]);
    assert_eq!(code, 1, "{out}{err}");
    assert!(
        out.contains("Cargo.toml:6: thiserror = { path = \"../forks/thiserror\" } -> a patch of thiserror at a version \"2\" matches [needs a person] ([patch.crates-io] thiserror replaces thiserror with 1.0.69 (path ../forks/thiserror)"),
        "{out}"
    );
    let (code, out, err) = align(&ws, &[]);
    assert_eq!(code, 1, "{out}{err}");
    assert!(out.contains("1 finding needs a person"), "{out}");
    let after = read(&ws.join("Cargo.toml"));
    assert!(
        after.ends_with("\n[patch.crates-io]\nthiserror = { path = \"../forks/thiserror\" }\n"),
        "the patch is not edited:\n{after}"
    );
    let (_, err) = generate_lockfile(&ws);
    assert!(err.contains("was not used in the crate graph"), "{err}");

    // a fork at 2.x is used by cargo and is no finding
    write(
        dir.path(),
        "forks/thiserror/Cargo.toml",
        "[package]\nname = \"thiserror\"\nversion = \"2.0.99\"\nedition = \"2021\"\n",
    );
    let (code, out, err) = align(&ws, &["--check"]);
    assert_eq!(code, 0, "{out}{err}");

    // [replace] of a 1.x version
    one_member(&ws, "");
    write(
        &ws,
        "Cargo.toml",
        "[workspace]\nresolver = \"2\"\nmembers = [\"app\"]\n\n[replace]\n\"thiserror:1.0.69\" = { path = \"../forks/thiserror\" }\n",
    );
    let (code, out, err) = align(&ws, &["--check", "--format", "json"]);
    assert_eq!(code, 1, "{out}{err}");
    let row = out
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .find(|r| r["rule"] == "replace")
        .expect(&out);
    assert_eq!(row["file"], "Cargo.toml");
    assert_eq!(row["line"], 6);
    assert_eq!(row["fixable"], false);
}

/// A requirement no published version matches (`"99"`, `"2.0.999"`): cargo
/// cannot resolve a workspace that asks for it (the reference); the fix is
/// refused with exit 2 and nothing written; `--check` reports it at the
/// policy's line and says a fix would write nothing.
#[test]
fn an_impossible_requirement_is_refused_and_nothing_is_written() {
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().join("ws");
    for version in ["99", "2.0.999"] {
        one_member(&ws, "");
        // the reference: cargo cannot select a version for it
        write(
            &ws,
            "app/Cargo.toml",
            &format!(
                "{}\n[dependencies]\nthiserror = \"{version}\"\n",
                package("app")
            ),
        );
        let (ok, err) = generate_lockfile(&ws);
        assert!(!ok && err.contains("failed to select a version"), "{err}");
        std::fs::remove_file(ws.join("Cargo.lock")).ok();

        one_member(&ws, "");
        write(
            &ws,
            "policy/fleet.toml",
            &format!("[dependencies.thiserror]\nversion = \"{version}\"\ninherit = true\n"),
        );
        let before = crate::support::snapshot(&ws);
        let (code, out, err) = align(&ws, &[]);
        assert_eq!(code, 2, "{version}: {out}{err}");
        assert!(
            err.contains("policy/fleet.toml:2:11: [dependencies.thiserror] version = \"")
                && err.contains("no published thiserror version matches it")
                && err.contains("nothing written"),
            "{err}"
        );
        assert_eq!(crate::support::snapshot(&ws), before, "nothing written");

        let (code, out, err) = align(&ws, &["--check"]);
        assert_eq!(code, 1, "{out}{err}");
        assert!(
            out.contains(&format!(
                "policy/fleet.toml:2: version = \"{version}\" -> a requirement that a published thiserror version matches [needs a person]"
            )),
            "{out}"
        );
        assert!(
            out.contains("fixable once the policy's requirement above is fixed; until then a fix writes nothing"),
            "{out}"
        );
    }
    // a requirement that is published goes through
    one_member(&ws, "");
    let (code, out, err) = align(&ws, &[]);
    assert_eq!(code, 0, "{out}{err}");
}

/// Error types written inside a macro invocation and inside a
/// `macro_rules!` body, in thiserror 1 style.
const MACRO_LIB: &str = r#"macro_rules! passthru {
    ($($t:tt)*) => { $($t)* };
}

passthru! {
    #[derive(Debug, thiserror::Error)]
    pub enum InCall {
        #[error("{0} (code {})", .1)]
        C(String, i32),
    }
}

macro_rules! make_errors {
    () => {
        #[derive(Debug, thiserror::Error)]
        pub enum InBody {
            #[error("kind {r#type}")]
            K { r#type: u8 },
        }
    };
}

make_errors!();
"#;

/// Both are found and fixed, and the crate then compiles against
/// thiserror 2 (before the fix it compiles against thiserror 1). Where the
/// macro's tokens are not items (`$name`), the message cannot be decided:
/// a finding that needs a person (exit 1), never "holds the policy".
#[test]
fn error_types_inside_macros_are_found_fixed_or_left_to_a_person() {
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().join("ws");
    let target = dir.path().join("target");
    one_member(&ws, MACRO_LIB);
    let (ok, err) = crate::support::cargo_check(&ws, &target);
    assert!(ok, "the thiserror 1 fixture does not compile:\n{err}");
    std::fs::remove_file(ws.join("Cargo.lock")).ok();

    let (code, out, err) = align(&ws, &["--check"]);
    assert_eq!(code, 1, "{out}{err}");
    assert!(
        out.contains("app/src/lib.rs:8:34: [thiserror2-positional-with-numbered]"),
        "{out}"
    );
    assert!(
        out.contains("app/src/lib.rs:17:28: [thiserror2-raw-ident-in-format]"),
        "{out}"
    );
    let (code, out, err) = align(&ws, &[]);
    assert_eq!(code, 0, "{out}{err}");
    let fixed = read(&ws.join("app/src/lib.rs"));
    assert!(
        fixed.contains("#[error(\"{0} (code {arg1})\", arg1 = .1)]"),
        "{fixed}"
    );
    assert!(fixed.contains("#[error(\"kind {type}\")]"), "{fixed}");
    let (ok, err) = crate::support::cargo_check(&ws, &target);
    assert!(
        ok,
        "the fixed crate does not compile against thiserror 2:\n{err}"
    );

    // a macro_rules! body whose enum takes its name from a metavariable
    let ws = dir.path().join("ws2");
    one_member(
        &ws,
        "macro_rules! named {\n    ($name:ident) => {\n        #[derive(Debug, thiserror::Error)]\n        pub enum $name {\n            #[error(\"{0} (code {})\", .1)]\n            C(String, i32),\n            #[error(\"plain\")]\n            P,\n        }\n    };\n}\n\nnamed!(Made);\n",
    );
    let (code, out, err) = align(&ws, &["--check"]);
    assert_eq!(code, 1, "{out}{err}");
    let lines: Vec<&str> = out
        .lines()
        .filter(|l| l.starts_with("app/src/lib.rs:"))
        .collect();
    assert_eq!(lines.len(), 1, "{out}");
    assert!(
        lines[0].starts_with("app/src/lib.rs:5:21: [thiserror2-positional-with-numbered]")
            && lines[0].contains("[needs a person]")
            && lines[0].contains("cannot tell the type it belongs to"),
        "{out}"
    );
    let (code, out, err) = align(&ws, &[]);
    assert_eq!(code, 1, "{out}{err}");
    assert!(!out.contains("holds the policy"), "{out}");
    assert!(out.contains("1 finding needs a person"), "{out}");
}

/// Only members whose locked dependency graph reaches thiserror can derive
/// its `Error`: with a `Cargo.lock` (cargo's own resolution, the reference)
/// the others' sources are not read, so a look-alike derive there (its
/// helper crate does not exist) is no finding; a member that reaches
/// thiserror through a re-exporting helper is still checked and fixed.
/// Without a lockfile every member is read, as before.
#[test]
fn members_whose_locked_graph_lacks_thiserror_are_not_read() {
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().join("ws");
    write(
        &ws,
        "Cargo.toml",
        "[workspace]\nresolver = \"2\"\nmembers = [\"helper\", \"user\", \"plain\"]\n",
    );
    write(&ws, "policy/fleet.toml", POLICY);
    write(
        &ws,
        "helper/Cargo.toml",
        &format!(
            "{}\n[dependencies]\nthiserror = \"1.0\"\n",
            package("helper")
        ),
    );
    write(&ws, "helper/src/lib.rs", "pub use thiserror::Error;\n");
    write(
        &ws,
        "user/Cargo.toml",
        &format!(
            "{}\n[dependencies]\nhelper = {{ path = \"../helper\" }}\n",
            package("user")
        ),
    );
    let derive = |krate: &str| {
        format!(
            "#[derive(Debug, {krate}::Error)]\n#[error(\"bad {{r#type}}\")]\npub struct Bad {{\n    pub r#type: u8,\n}}\n"
        )
    };
    write(&ws, "user/src/lib.rs", &derive("helper"));
    write(&ws, "plain/Cargo.toml", &package("plain"));
    write(&ws, "plain/src/lib.rs", &derive("lookalike"));

    let (code, out, err) = align(&ws, &["--check"]);
    assert_eq!(code, 1, "{out}{err}");
    assert!(
        out.contains("plain/src/lib.rs:2:"),
        "without a lockfile every member is read:\n{out}"
    );
    assert!(out.contains("user/src/lib.rs:2:"), "{out}");

    let (ok, err) = generate_lockfile(&ws);
    assert!(ok, "{err}");
    let lock = read(&ws.join("Cargo.lock"));
    assert!(
        lock.contains("name = \"plain\"") && lock.contains("name = \"thiserror\""),
        "{lock}"
    );
    let (code, out, err) = align(&ws, &["--check"]);
    assert_eq!(code, 1, "{out}{err}");
    assert!(!out.contains("plain/src/lib.rs"), "{out}");
    assert!(
        out.contains("user/src/lib.rs:2:15: [thiserror2-raw-ident-in-format]")
            && out.contains("[thiserror2-missing-direct-dependency]"),
        "{out}"
    );
    // a lockfile that does not know a member's dependency is stale: read it
    write(
        &ws,
        "plain/Cargo.toml",
        &format!(
            "{}\n[dependencies]\nhelper = {{ path = \"../helper\" }}\n",
            package("plain")
        ),
    );
    let (_, out, _) = align(&ws, &["--check"]);
    assert!(out.contains("plain/src/lib.rs:2:"), "{out}");
}
