//! The `version` rule and a requirement that already holds the policy,
//! stricter (`"2.0.12"` under a policy of `"2"`): it is kept as written,
//! never lowered (a lower minimum breaks `-Z minimal-versions` builds and
//! crates that need a fix of the stricter release). With inheritance the
//! `[workspace.dependencies]` entry takes the strictest one within the
//! policy, so no inheriting member's minimum drops.

use crate::support::{Fleet, align, read};

fn fleet(root: &std::path::Path, ws_entry: &str, inherit: bool) -> Fleet {
    let fleet = Fleet::new(
        root,
        &format!(
            "[workspace]\nresolver = \"2\"\nmembers = [\"crates/*\"]\n\n[workspace.package]\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[workspace.dependencies]\nthiserror = \"{ws_entry}\"\n"
        ),
    )
    .unwrap();
    fleet
        .write(
            "policy/fleet.toml",
            &format!("[dependencies.thiserror]\nversion = \"2\"\ninherit = {inherit}\n"),
        )
        .unwrap();
    fleet
}

#[test]
fn a_stricter_requirement_is_kept_in_place_without_inheritance() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    let fleet = fleet(&root, "2", false);
    fleet
        .add_crate("strict", "[dependencies]\nthiserror = \"2.0.12\"\n")
        .unwrap();
    fleet
        .add_crate("old", "[dependencies]\nthiserror = \"1\"\n")
        .unwrap();
    let (code, out, err) = align(&root, &[]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(read(&fleet.manifest("strict")).contains("thiserror = \"2.0.12\""));
    assert!(read(&fleet.manifest("old")).contains("thiserror = \"2\""));
    let (code, out, _) = align(&root, &["--check"]);
    assert_eq!(code, 0, "a second run finds nothing: {out}");
}

#[test]
fn a_stricter_workspace_entry_is_kept() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    let fleet = fleet(&root, "2.0.12", true);
    fleet
        .add_crate("old", "[dependencies]\nthiserror = \"1\"\n")
        .unwrap();
    let (code, out, err) = align(&root, &[]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(read(&root.join("Cargo.toml")).contains("thiserror = \"2.0.12\""));
    assert!(read(&fleet.manifest("old")).contains("thiserror = { workspace = true }"));
}

#[test]
fn a_member_converting_to_the_workspace_entry_keeps_its_minimum() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    let fleet = fleet(&root, "1", true);
    fleet
        .add_crate("strict", "[dependencies]\nthiserror = \"2.0.12\"\n")
        .unwrap();
    fleet
        .add_crate("old", "[dependencies]\nthiserror = \"1\"\n")
        .unwrap();
    let (code, out, err) = align(&root, &[]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(
        read(&root.join("Cargo.toml")).contains("thiserror = \"2.0.12\""),
        "{}",
        read(&root.join("Cargo.toml"))
    );
    for c in ["strict", "old"] {
        assert!(read(&fleet.manifest(c)).contains("thiserror = { workspace = true }"));
    }
    let (code, out, _) = align(&root, &["--check"]);
    assert_eq!(code, 0, "a second run finds nothing: {out}");
}

#[test]
fn a_looser_requirement_is_still_raised_to_the_policy() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    let fleet = fleet(&root, "2", false);
    fleet
        .write(
            "policy/fleet.toml",
            "[dependencies.thiserror]\nversion = \"2.0.12\"\ninherit = false\n",
        )
        .unwrap();
    fleet
        .add_crate("loose", "[dependencies]\nthiserror = \"2\"\n")
        .unwrap();
    let (code, out, err) = align(&root, &[]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(read(&fleet.manifest("loose")).contains("thiserror = \"2.0.12\""));
    assert!(read(&root.join("Cargo.toml")).contains("thiserror = \"2.0.12\""));
}

/// A stricter requirement kept in `[workspace.dependencies]` counts for the
/// toolchain floor: thiserror 2.0.21 declares Rust 1.77, so a member on 1.70
/// that would inherit it is a `toolchain-floor` finding (with "2" alone,
/// 1.61 would do).
#[test]
fn the_toolchain_floor_counts_the_stricter_requirement_kept() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    let fleet = fleet(&root, "2.0.21", true);
    fleet.write("crates/old/src/lib.rs", "").unwrap();
    fleet
        .write(
            "crates/old/Cargo.toml",
            "[package]\nname = \"old\"\nversion.workspace = true\nedition.workspace = true\nrust-version = \"1.70\"\n\n[dependencies]\nthiserror = \"1\"\n",
        )
        .unwrap();
    let (code, out, err) = align(&root, &["--check"]);
    assert_eq!(code, 1, "{out}{err}");
    assert!(
        out.contains("rust-version = \"1.70\" -> rust-version = \"1.77\" or later"),
        "{out}"
    );
    assert!(
        out.contains("thiserror \"2.0.21\" needs Rust 1.77"),
        "{out}"
    );
}
