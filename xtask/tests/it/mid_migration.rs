//! Workspaces caught midway through a migration: a fix must leave a
//! workspace cargo accepts, and a state it cannot settle is a finding that
//! needs a person, never an internal error.

use std::path::Path;
use std::process::Command;

use crate::support::{Fleet, POLICY, align, read};

const ROOT: &str = "[workspace]\nresolver = \"2\"\nmembers = [\"crates/*\"]\n\n[workspace.package]\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[workspace.dependencies]\nthiserror = \"2\"\n";

/// `cargo metadata --offline` with dependency resolution (what refuses a
/// crate that depends on one package under two names): (success, stderr).
/// (Online again only when the registry cache lacks a package.)
fn cargo_resolves(root: &Path) -> (bool, String) {
    let run = |offline: bool| {
        let mut cmd = Command::new(xtask::workspace::cargo());
        cmd.current_dir(root)
            .args(["metadata", "--format-version", "1"]);
        if offline {
            cmd.arg("--offline");
        }
        let o = crate::support::output_within(&mut cmd);
        (
            o.status.success(),
            String::from_utf8_lossy(&o.stderr).into_owned(),
        )
    };
    match run(true) {
        (false, err) if err.contains("offline") => run(false),
        r => r,
    }
}

fn fleet(root: &Path) -> Fleet {
    let fleet = Fleet::new(root, ROOT).unwrap();
    fleet.write("policy/fleet.toml", POLICY).unwrap();
    fleet
        .add_crate("plain", "[dependencies]\nthiserror = \"1\"\n")
        .unwrap();
    fleet
}

#[test]
fn thiserror_1_and_2_side_by_side_are_left_for_a_person_and_cargo_still_accepts_the_workspace() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    let fleet = fleet(&root);
    fleet
        .add_crate(
            "both",
            "[dependencies]\nthiserror = \"1\"\nthiserror2 = { package = \"thiserror\", version = \"2\" }\n",
        )
        .unwrap();
    fleet
        .write(
            "crates/both/src/lib.rs",
            "#[derive(Debug, thiserror::Error)]\n#[error(\"old\")]\npub struct Old;\n\n#[derive(Debug, thiserror2::Error)]\n#[error(\"new\")]\npub struct New;\n",
        )
        .unwrap();
    let (ok, err) = cargo_resolves(&root);
    assert!(ok, "the fixture resolves before: {err}");
    let before = read(&fleet.manifest("both"));

    let (code, out, err) = align(&root, &["--check"]);
    assert_eq!(code, 1, "{out}{err}");
    assert!(out.contains("[needs a person]"), "{out}");
    assert!(out.contains("`thiserror`, `thiserror2`"), "{out}");

    let (code, out, err) = align(&root, &[]);
    assert_eq!(code, 1, "a person must merge the two: {out}{err}");
    assert!(!out.contains("holds the policy"), "{out}");
    assert_eq!(read(&fleet.manifest("both")), before, "left as it was");
    assert!(
        read(&fleet.manifest("plain")).contains("thiserror = { workspace = true }"),
        "the other member is still fixed"
    );
    let (ok, err) = cargo_resolves(&root);
    assert!(ok, "cargo accepts the workspace after the fix: {err}");
}

#[test]
fn a_thiserror_key_naming_another_package_is_a_finding_not_an_internal_error() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    let fleet = fleet(&root);
    fleet
        .add_crate(
            "core",
            "[dependencies]\nthiserror = { package = \"thiserror-core\", version = \"1\", default-features = false }\n",
        )
        .unwrap();
    let lib = "#[derive(Debug, thiserror::Error)]\n#[error(\"unknown {r#type}\")]\npub struct E {\n    r#type: String,\n}\n";
    fleet.write("crates/core/src/lib.rs", lib).unwrap();
    let before = read(&fleet.manifest("core"));

    let (code, out, err) = align(&root, &["--check"]);
    assert_eq!(code, 1, "{out}{err}");
    assert!(!err.contains("internal error"), "{err}");
    assert!(out.contains("thiserror-core"), "the reason is given: {out}");

    let (code, out, err) = align(&root, &[]);
    assert_eq!(code, 1, "{out}{err}");
    assert!(!err.contains("internal error"), "{err}");
    assert!(out.contains("[needs a person]"), "{out}");
    assert_eq!(read(&fleet.manifest("core")), before, "manifest untouched");
    assert_eq!(
        read(&root.join("crates/core/src/lib.rs")),
        lib,
        "sources untouched"
    );
    assert!(
        read(&fleet.manifest("plain")).contains("thiserror = { workspace = true }"),
        "the other member is still fixed"
    );
}

/// A `#[path]` file shared by two crates is analysed once per crate, but
/// each of its findings is listed and counted once.
#[test]
fn a_path_file_shared_by_two_crates_has_its_findings_listed_once() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    let fleet = Fleet::new(&root, ROOT).unwrap();
    fleet.write("policy/fleet.toml", POLICY).unwrap();
    for c in ["a", "b"] {
        fleet
            .add_crate(c, "[dependencies]\nthiserror = \"1\"\n")
            .unwrap();
        fleet
            .write(
                &format!("crates/{c}/src/lib.rs"),
                "#[path = \"../../../shared/errors.rs\"]\nmod errors;\n",
            )
            .unwrap();
    }
    fleet
        .write(
            "shared/errors.rs",
            "#[derive(Debug, thiserror::Error)]\n#[error(\"unknown {r#type}\")]\npub struct E {\n    r#type: String,\n}\n\n#[derive(Debug, thiserror::Error)]\n#[error(\"{0} {}\", .1)]\npub struct F(String, u32);\n",
        )
        .unwrap();

    let (code, out, err) = align(&root, &["--check"]);
    assert_eq!(code, 1, "{out}{err}");
    let listed = |out: &str, rule: &str| out.lines().filter(|l| l.contains(rule)).count();
    assert_eq!(listed(&out, "[thiserror2-raw-ident-in-format]"), 1, "{out}");
    assert_eq!(
        listed(&out, "[thiserror2-positional-with-numbered]"),
        1,
        "{out}"
    );
    // two manifests and two source findings
    assert!(out.contains("align-deps: 4 violations in 3 files"), "{out}");

    let (code, out, err) = align(&root, &[]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("fixed shared/errors.rs: 2 changes"), "{out}");
    assert!(out.contains("fixed 4 findings in 3 files"), "{out}");
}

/// A package exemption keeps the crate off the plan, toolchain floor
/// included, with `inherit = true` as with `inherit = false`: its own
/// thiserror declaration does not move when the workspace entry does.
#[test]
fn a_package_exemption_clears_the_toolchain_floor_under_inheritance() {
    for inherit in [true, false] {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        let fleet = Fleet::new(
            &root,
            "[workspace]\nresolver = \"2\"\nmembers = [\"crates/*\"]\n\n[workspace.package]\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[workspace.dependencies]\nthiserror = \"1\"\n",
        )
        .unwrap();
        fleet
            .write(
                "policy/fleet.toml",
                &format!(
                    "[dependencies.thiserror]\nversion = \"2\"\ninherit = {inherit}\n\n[[exempt]]\npackage = \"a\"\nreason = \"stays on Rust 1.60\"\n"
                ),
            )
            .unwrap();
        fleet.write("crates/a/src/lib.rs", "").unwrap();
        fleet
            .write(
                "crates/a/Cargo.toml",
                "[package]\nname = \"a\"\nversion.workspace = true\nedition.workspace = true\nrust-version = \"1.60\"\n\n[dependencies]\nthiserror = \"1\"\n",
            )
            .unwrap();
        fleet
            .add_crate("b", "[dependencies]\nthiserror = \"1\"\n")
            .unwrap();
        let a = read(&fleet.manifest("a"));
        let (code, out, err) = align(&root, &[]);
        assert_eq!(code, 0, "inherit = {inherit}: {out}{err}");
        assert!(!out.contains("toolchain-floor"), "{out}");
        assert_eq!(
            read(&fleet.manifest("a")),
            a,
            "the exempt crate is untouched"
        );
        let b = read(&fleet.manifest("b"));
        let wanted = if inherit {
            "thiserror = { workspace = true }"
        } else {
            "thiserror = \"2\""
        };
        assert!(b.contains(wanted), "inherit = {inherit}: {b}");
    }
}

/// An exempt crate that inherits the `[workspace.dependencies]` entry moves
/// with it (the entry follows the policy): its floor is still a finding, and
/// the advice is not the exemption it already has.
#[test]
fn an_exempt_crate_inheriting_the_workspace_entry_keeps_its_toolchain_floor() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    let fleet = Fleet::new(
        &root,
        "[workspace]\nresolver = \"2\"\nmembers = [\"crates/*\"]\n\n[workspace.package]\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[workspace.dependencies]\nthiserror = \"1\"\n",
    )
    .unwrap();
    fleet
        .write(
            "policy/fleet.toml",
            "[dependencies.thiserror]\nversion = \"2\"\n\n[[exempt]]\npackage = \"a\"\nreason = \"stays on Rust 1.60\"\n",
        )
        .unwrap();
    fleet.write("crates/a/src/lib.rs", "").unwrap();
    fleet
        .write(
            "crates/a/Cargo.toml",
            "[package]\nname = \"a\"\nversion.workspace = true\nedition.workspace = true\nrust-version = \"1.60\"\n\n[dependencies]\nthiserror = { workspace = true }\n",
        )
        .unwrap();
    let (code, out, err) = align(&root, &[]);
    assert_eq!(code, 1, "{out}{err}");
    assert!(out.contains("rust-version = \"1.60\""), "{out}");
    assert!(out.contains("`a` is exempt, but it inherits"), "{out}");
}

/// A file not scanned for thiserror 2 is reported with its actual reason:
/// one that exists and holds an expression is not called missing.
#[test]
fn a_file_not_scanned_is_reported_with_its_actual_reason() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    let fleet = fleet(&root);
    fleet
        .write(
            "crates/plain/src/lib.rs",
            "pub const TEXT: &str = include!(\"text.rs\");\n\n#[cfg(feature = \"never\")]\nmod gone;\n\n#[derive(Debug, thiserror::Error)]\n#[error(\"plain\")]\npub struct Plain;\n",
        )
        .unwrap();
    fleet
        .write("crates/plain/src/text.rs", "\"an expression\"\n")
        .unwrap();
    let (code, out, err) = align(&root, &["--check"]);
    assert_eq!(code, 1, "{out}{err}");
    let line = |name: &str| {
        format!("{out}{err}")
            .lines()
            .find(|l| l.contains(name) && l.contains("not scanned"))
            .unwrap_or_else(|| panic!("{name} not reported:\n{out}{err}"))
            .to_string()
    };
    let text = line("src/text.rs");
    assert!(text.contains("holds an expression"), "{text}");
    assert!(!text.contains("no such file"), "{text}");
    let gone = line("src/gone.rs");
    assert!(gone.contains("no such file"), "{gone}");
}

/// A stale declaration exemption says which it is: no declaration under
/// that key, or a package the policy has no rule for.
#[test]
fn a_stale_declaration_exemption_says_why_it_matches_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    let fleet = fleet(&root);
    fleet
        .add_crate(
            "other",
            "[dependencies]\nthiserror = { workspace = true }\nanyhow = \"1\"\n",
        )
        .unwrap();
    fleet
        .write(
            "policy/fleet.toml",
            &format!(
                "{POLICY}\n[[exempt]]\nmanifest = \"crates/other/Cargo.toml\"\ndependency = \"errors\"\nreason = \"gone\"\n\n[[exempt]]\nmanifest = \"crates/other/Cargo.toml\"\ndependency = \"anyhow\"\nreason = \"not a policy dependency\"\n"
            ),
        )
        .unwrap();
    let (code, out, err) = align(&root, &["--check"]);
    assert_eq!(code, 1, "{out}{err}");
    assert!(
        out.contains("crates/other/Cargo.toml has no declaration under the key `errors`"),
        "{out}"
    );
    assert!(
        out.contains("`anyhow` in crates/other/Cargo.toml is the package `anyhow`, which the policy has no rule for"),
        "{out}"
    );
    assert!(!out.contains("(or there is none)"), "{out}");
}
