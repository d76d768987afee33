//! What large fleets need from align-deps: exemptions
//! with reasons (each kind; shown in every format; a stale one is a
//! finding), the toolchain floor (`rust-version`, pinned toolchains) checked
//! before anything is written, cargo-hakari sections left alone, and the
//! summary lines' wording.

use std::path::Path;

use crate::support::{Fleet, align, package_header, read, snapshot};

const ROOT: &str = "[workspace]\nresolver = \"2\"\nmembers = [\"crates/*\"]\n\n[workspace.package]\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[workspace.dependencies]\nthiserror = \"2\"\n";

const POLICY: &str = "[dependencies.thiserror]\nversion = \"2\"\ninherit = true\n";

/// A fleet: `crates/<name>` for each (name, dependency section, lib.rs).
fn fleet(root: &Path, root_manifest: &str, crates: &[(&str, &str, &str)]) -> Fleet {
    let fleet = Fleet::new(root, root_manifest).unwrap();
    fleet.write("policy/fleet.toml", POLICY).unwrap();
    for (name, deps, lib) in crates {
        fleet.add_crate(name, deps).unwrap();
        fleet
            .write(&format!("crates/{name}/src/lib.rs"), lib)
            .unwrap();
    }
    fleet
}

const RAW_IDENT: &str =
    "#[derive(Debug, thiserror::Error)]\n#[error(\"bad {r#type}\")]\npub struct E { r#type: u8 }\n";

/// enclave: a git fork (declaration); shim: thiserror 1 (package); legacy:
/// a rule-1 message in `src/error.rs` (source); ok: holds the policy.
fn exempt_fleet(root: &Path) -> Fleet {
    fleet(
        root,
        ROOT,
        &[
            (
                "enclave",
                "[dependencies]\nthiserror = { git = \"https://example.com/thiserror-sgx\" }\n",
                "",
            ),
            ("shim", "[dependencies]\nthiserror = \"1.0\"\n", RAW_IDENT),
            (
                "legacy",
                "[dependencies]\nthiserror = { workspace = true }\n",
                "mod error;\n",
            ),
            (
                "ok",
                "[dependencies]\nthiserror = { workspace = true }\n",
                "",
            ),
        ],
    )
}

const EXEMPTIONS: &str = "\n[[exempt]]\nmanifest = \"crates/enclave/Cargo.toml\"\ndependency = \"thiserror\"\nreason = \"thiserror-sgx fork for the enclave target\"\n\n[[exempt]]\npackage = \"shim\"\nreason = \"vendored shim, upgraded upstream first\"\n\n[[exempt]]\nsource = \"crates/legacy/src/error.rs\"\nreason = \"frozen until the rewrite\"\n";

#[test]
fn exemptions_of_each_kind_hold_with_their_reasons_shown() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    let fleet = exempt_fleet(&root);
    fleet
        .write("crates/legacy/src/error.rs", RAW_IDENT)
        .unwrap();
    // without exemptions: one finding of each kind
    let (code, out, err) = align(&root, &["--check"]);
    assert_eq!(code, 1, "{out}{err}");
    for at in [
        "crates/enclave/Cargo.toml:8: thiserror = { git",
        "crates/shim/Cargo.toml:8: thiserror = \"1.0\"",
        "crates/legacy/src/error.rs:2:",
    ] {
        assert!(out.contains(at), "{at}: {out}");
    }
    fleet
        .write("policy/fleet.toml", &format!("{POLICY}{EXEMPTIONS}"))
        .unwrap();
    let (code, out, err) = align(&root, &["--check"]);
    assert_eq!(code, 0, "{out}{err}");
    for line in [
        "exempt: crates/enclave/Cargo.toml: thiserror (declaration exemption, policy/fleet.toml:6): thiserror-sgx fork for the enclave target; 1 finding not reported",
        "exempt: package `shim` (package exemption, policy/fleet.toml:11): vendored shim, upgraded upstream first; 2 findings not reported",
        "exempt: crates/legacy/src/error.rs (source exemption, policy/fleet.toml:15): frozen until the rewrite; 1 finding not reported",
        "align-deps: 5 manifests hold the policy",
    ] {
        assert!(out.contains(line), "{line}\n{out}");
    }
    // every format shows them
    let (_, json, _) = align(&root, &["--check", "--format", "json"]);
    let exempt: Vec<serde_json::Value> = json
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .filter(|v| v["kind"] == "exempt")
        .collect();
    assert_eq!(exempt.len(), 3, "{json}");
    assert_eq!(
        exempt[1]["reason"],
        "vendored shim, upgraded upstream first"
    );
    assert_eq!(exempt[1]["exemption"], "package");
    let (_, gh, _) = align(&root, &["--check", "--format", "github"]);
    assert!(
        gh.contains("::notice file=policy/fleet.toml,title=align-deps%3A exempt::crates/legacy/src/error.rs (source exemption): frozen until the rewrite"),
        "{gh}"
    );
    // a fix run leaves every exempt thing alone and still shows why
    let before = snapshot(&root);
    let (code, out, err) = align(&root, &[]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("exempt: package `shim`"), "{out}");
    assert_eq!(snapshot(&root), before);
}

#[test]
fn a_stale_exemption_is_a_finding_at_its_policy_line() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    let fleet = exempt_fleet(&root);
    fleet.write("crates/legacy/src/error.rs", "").unwrap();
    fleet
        .write(
            "policy/fleet.toml",
            &format!(
                "{POLICY}{EXEMPTIONS}\n[[exempt]]\npackage = \"gone\"\nreason = \"was removed\"\n\n[[exempt]]\nmanifest = \"crates/ok/Cargo.toml\"\ndependency = \"thiserror\"\nreason = \"no longer needed\"\n"
            ),
        )
        .unwrap();
    let before = snapshot(&root);
    for extra in [&["--check"][..], &[][..]] {
        let (code, out, err) = align(&root, extra);
        assert_eq!(code, 1, "{out}{err}");
        for line in [
            "policy/fleet.toml:15: source = \"crates/legacy/src/error.rs\" -> (no such entry) [needs a person] (this source exemption matches nothing: crates/legacy/src/error.rs has no thiserror 2 finding; drop the [[exempt]] entry (its reason: frozen until the rewrite))",
            "policy/fleet.toml:19: package = \"gone\" -> (no such entry) [needs a person] (this package exemption matches nothing: no member of the workspace is the package `gone`",
            "policy/fleet.toml:23: manifest = \"crates/ok/Cargo.toml\" -> (no such entry) [needs a person] (this declaration exemption matches nothing: its declaration `thiserror` in crates/ok/Cargo.toml already holds the policy",
        ] {
            assert!(out.contains(line), "{line}\n{out}");
        }
        // the exemptions in use are still shown
        assert!(out.contains("exempt: package `shim`"), "{out}");
    }
    // in JSON a stale exemption names a dependency only when it is about one
    let (_, out, _) = align(&root, &["--check", "--format", "json"]);
    let stale: Vec<serde_json::Value> = out
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .filter(|r| r["rule"] == "stale-exemption")
        .collect();
    assert_eq!(stale.len(), 3, "{out}");
    for r in &stale {
        let declaration = r["found"].as_str().unwrap().starts_with("manifest");
        assert_eq!(r.get("dependency").is_some(), declaration, "{r}");
        assert_ne!(r["dependency"], "", "{r}");
    }
    assert_eq!(snapshot(&root), before);
}

#[test]
fn policy_mistakes_in_exemptions_are_exit_2_at_their_place() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    let fleet = exempt_fleet(&root);
    let before = snapshot(&root);
    for (entry, at, says) in [
        ("package = \"shim\"\n", "6:11", "has no reason"),
        (
            "package = \"shim\"\nreason = \"x\"\nwhy = \"y\"\n",
            "8:1",
            "unknown field `why`",
        ),
        (
            "source = \"/abs/src/lib.rs\"\nreason = \"x\"\n",
            "6:10",
            "is absolute",
        ),
    ] {
        fleet
            .write(
                "policy/fleet.toml",
                &format!("{POLICY}\n[[exempt]]\n{entry}"),
            )
            .unwrap();
        let (code, out, err) = align(&root, &["--check"]);
        assert_eq!(code, 2, "{out}{err}");
        let want = format!("{}:{at}: ", root.join("policy/fleet.toml").display());
        assert!(
            err.contains(&want) && err.contains(says),
            "{want} {says}: {err}"
        );
    }
    fleet.write("policy/fleet.toml", POLICY).unwrap();
    let mut after = snapshot(&root);
    after.remove(&root.join("policy/fleet.toml"));
    let mut before = before;
    before.remove(&root.join("policy/fleet.toml"));
    assert_eq!(after, before);
}

/// A member converted to `workspace = true` under a workspace that
/// declares Rust 1.60 for every member.
fn old_toolchain_fleet(root: &Path, rust_version: &str) -> Fleet {
    let manifest = ROOT.replace(
        "edition = \"2021\"\n",
        &format!("edition = \"2021\"\nrust-version = \"{rust_version}\"\n"),
    );
    let f = fleet(
        root,
        &manifest,
        &[("a", "[dependencies]\nthiserror = \"1.0\"\n", "")],
    );
    f.write(
        "crates/a/Cargo.toml",
        &format!(
            "{}rust-version.workspace = true\n\n[dependencies]\nthiserror = \"1.0\"\n",
            package_header("a")
        ),
    )
    .unwrap();
    f
}

#[test]
fn a_rust_version_below_what_the_fix_needs_is_a_finding_and_nothing_is_written() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    old_toolchain_fleet(&root, "1.60");
    let before = snapshot(&root);
    let (code, out, err) = align(&root, &["--check"]);
    assert_eq!(code, 1, "{out}{err}");
    assert!(
        out.contains("Cargo.toml:8: rust-version = \"1.60\" -> rust-version = \"1.64\" or later [needs a person] (`a` declares Rust 1.60, but the fix needs 1.64: `workspace = true` needs Cargo 1.64; raise rust-version, or exempt `a` in the policy; align-deps writes nothing until then)"),
        "{out}"
    );
    // the summary of --check says that a fix would write nothing
    assert!(
        out.contains("align-deps: 2 violations in 2 files, 1 fixable once the toolchain floor findings above are settled; until then a fix writes nothing"),
        "{out}"
    );
    assert!(!out.contains("run `cargo xtask align-deps"), "{out}");
    // and the command to run keeps the --policy the user gave
    let policy = root.join("policy/fleet.toml");
    let (_, out, _) = align(&root, &["--check", "--policy", policy.to_str().unwrap()]);
    assert!(out.contains("1 fixable once the toolchain floor"), "{out}");
    let (code, out, err) = align(&root, &[]);
    assert_eq!(code, 1, "{out}{err}");
    assert!(
        out.contains("align-deps: nothing written: 2 violations in 2 files; the toolchain floor findings above must be settled first"),
        "{out}"
    );
    assert_eq!(snapshot(&root), before, "nothing written");
    // at the floor: the fix goes through
    old_toolchain_fleet(&root, "1.64");
    let (code, out, err) = align(&root, &[]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(read(&root.join("crates/a/Cargo.toml")).contains("thiserror = { workspace = true }"));
}

#[test]
fn thiserror_2_needs_its_own_rust_version_without_inheritance() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    let f = fleet(
        &root,
        ROOT,
        &[("a", "[dependencies]\nthiserror = \"1.0\"\n", "")],
    );
    f.write(
        "policy/fleet.toml",
        "[dependencies.thiserror]\nversion = \"2\"\ninherit = false\n",
    )
    .unwrap();
    let member = |rv: &str| {
        f.write(
            "crates/a/Cargo.toml",
            &format!(
                "{}rust-version = \"{rv}\"\n\n[dependencies]\nthiserror = \"1.0\"\n",
                package_header("a")
            ),
        )
        .unwrap();
    };
    member("1.60");
    let (code, out, _) = align(&root, &["--check"]);
    assert_eq!(code, 1);
    assert!(
        out.contains("crates/a/Cargo.toml:6: rust-version = \"1.60\" -> rust-version = \"1.61\" or later [needs a person] (`a` declares Rust 1.60, but the fix needs 1.61: thiserror \"2\" needs Rust 1.61"),
        "{out}"
    );
    member("1.61");
    let (_, out, _) = align(&root, &["--check"]);
    assert!(!out.contains("[needs a person]"), "{out}");
    assert!(out.contains("1 violation in 1 file, all fixable"), "{out}");
}

#[test]
fn a_pinned_toolchain_below_the_floor_is_a_finding() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    let f = old_toolchain_fleet(&root, "1.70");
    for (file, text, finding) in [
        (
            "rust-toolchain",
            "1.63.0\n",
            Some(
                "rust-toolchain:1: 1.63.0 -> a toolchain of Rust 1.64 or later [needs a person] (the workspace pins toolchain `1.63.0` (Rust 1.63), but the fix needs 1.64: `workspace = true` needs Cargo 1.64; pin a newer toolchain first",
            ),
        ),
        (
            "rust-toolchain.toml",
            "[toolchain]\nchannel = \"nightly-2022-06-01\"\n",
            Some("rust-toolchain.toml:2: nightly-2022-06-01 -> a toolchain of Rust 1.64 or later"),
        ),
        (
            "rust-toolchain.toml",
            "[toolchain]\nchannel = \"stable\"\n",
            None,
        ),
        (
            "rust-toolchain.toml",
            "[toolchain]\nchannel = \"1.80.0\"\n",
            None,
        ),
    ] {
        let _ = std::fs::remove_file(root.join("rust-toolchain"));
        let _ = std::fs::remove_file(root.join("rust-toolchain.toml"));
        f.write(file, text).unwrap();
        let before = snapshot(&root);
        let (code, out, err) = align(&root, &[]);
        match finding {
            Some(line) => {
                assert_eq!(code, 1, "{out}{err}");
                assert!(out.contains(line), "{line}\n{out}");
                assert_eq!(snapshot(&root), before, "{file}: nothing written");
            }
            None => {
                assert_eq!(code, 0, "{text}: {out}{err}");
                assert!(!out.contains("toolchain-floor"), "{out}");
                old_toolchain_fleet(&root, "1.70");
            }
        }
    }
}

const HAKARI: &str = "[package]\nname = \"workspace-hack\"\nversion = \"0.1.0\"\nedition = \"2021\"\npublish = false\n\n[dev-dependencies]\nthiserror = \"1.0\"\n\n### BEGIN HAKARI SECTION\n[dependencies]\nthiserror = { version = \"1\", default-features = false, features = [\"std\"] }\nthiserror-impl = { version = \"1\" }\n\n### END HAKARI SECTION\n";

#[test]
fn a_hakari_section_is_left_alone_with_the_command_to_run() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    let f = fleet(
        &root,
        ROOT,
        &[("a", "[dependencies]\nthiserror = \"1.0\"\n", "")],
    );
    f.write("crates/workspace-hack/Cargo.toml", HAKARI).unwrap();
    f.write("crates/workspace-hack/src/lib.rs", "").unwrap();
    let (code, out, err) = align(&root, &["--check"]);
    assert_eq!(code, 1, "{out}{err}");
    assert!(
        out.contains("crates/workspace-hack/Cargo.toml:12: thiserror = { version = \"1\", default-features = false, features = [\"std\"] } -> thiserror \"2\", written by `cargo hakari generate` [needs a person] (inside the section cargo-hakari manages (### BEGIN HAKARI SECTION): align-deps does not edit it, `cargo hakari generate` rewrites it; after align-deps has moved the workspace, run `cargo hakari generate`"),
        "{out}"
    );
    let (code, out, err) = align(&root, &[]);
    assert_eq!(code, 1, "{out}{err}");
    let hack = read(&root.join("crates/workspace-hack/Cargo.toml"));
    let section = &hack[hack.find("### BEGIN").unwrap()..];
    assert_eq!(section, &HAKARI[HAKARI.find("### BEGIN").unwrap()..]);
    // outside the section it is an ordinary declaration
    assert!(
        hack.starts_with(&HAKARI[..HAKARI.find("thiserror = \"1.0\"").unwrap()]),
        "{hack}"
    );
    assert!(
        hack.contains("[dev-dependencies]\nthiserror = { workspace = true }\n"),
        "{hack}"
    );
    // once `cargo hakari generate` wrote thiserror 2 there, it holds
    f.write(
        "crates/workspace-hack/Cargo.toml",
        &hack.replace("version = \"1\", default", "version = \"2\", default"),
    )
    .unwrap();
    let (code, out, err) = align(&root, &["--check"]);
    assert_eq!(code, 0, "{out}{err}");
}

#[test]
fn summary_lines_count_right() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    // one crate, a git fork: one violation, not fixable
    let f = fleet(
        &root,
        "[package]\nname = \"solo\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[dependencies]\nthiserror = { git = \"https://example.com/fork\" }\n",
        &[],
    );
    f.write("src/lib.rs", "").unwrap();
    let (code, out, _) = align(&root, &["--check"]);
    assert_eq!(code, 1);
    assert!(
        out.contains(
            "align-deps: 1 violation in 1 file, none fixable automatically (listed above)"
        ),
        "{out}"
    );
    let (code, out, _) = align(&root, &[]);
    assert_eq!(code, 1);
    assert!(
        out.contains(
            "align-deps: nothing to fix automatically; 1 finding needs a person (listed above)"
        ),
        "{out}"
    );
    f.write(
        "Cargo.toml",
        "[package]\nname = \"solo\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[dependencies]\nthiserror = \"1\"\n",
    )
    .unwrap();
    let (code, out, _) = align(&root, &["--check"]);
    assert_eq!(code, 1);
    assert!(
        out.contains(&format!("align-deps: 1 violation in 1 file, all fixable; run `cargo xtask align-deps --workspace {}` to fix them", root.display())),
        "{out}"
    );
    let policy = root.join("policy/fleet.toml");
    let (_, out, _) = align(&root, &["--check", "--policy", policy.to_str().unwrap()]);
    assert!(
        out.contains(&format!(
            "run `cargo xtask align-deps --workspace {} --policy {}` to fix them",
            root.display(),
            policy.display()
        )),
        "{out}"
    );
    let (code, out, _) = align(&root, &[]);
    assert_eq!(code, 0);
    assert!(out.contains("fixed Cargo.toml: 1 change\n"), "{out}");
    assert!(
        out.contains("align-deps: fixed 1 finding in 1 file; the workspace holds the policy"),
        "{out}"
    );
    let (code, out, _) = align(&root, &["--check"]);
    assert_eq!(code, 0);
    assert!(
        out.contains("align-deps: 1 manifest holds the policy"),
        "{out}"
    );
}
