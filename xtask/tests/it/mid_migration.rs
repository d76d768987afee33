//! Workspaces caught midway through a migration (issue 40's "wrong
//! answers"): a fix must leave a workspace cargo accepts, and a state it
//! cannot settle is a finding that needs a person, never an internal error.

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
