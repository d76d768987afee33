//! `cargo xtask align-deps` on fixture workspaces generated into temp dirs,
//! driven in-process through `xtask::cli::run`.

use std::collections::BTreeMap;
use std::os::unix::fs::PermissionsExt as _;
use std::path::Path;
use std::process::Command;

use crate::support::{
    self, DRIFT_FORMS, Fleet, align, crate_name, drifted_fleet, package_header, read, snapshot,
    xtask,
};
use xtask::workspace::cargo;

/// `cargo metadata --no-deps --offline`: must succeed without any warning;
/// returns, per package, how it depends on thiserror (kind, target, rename,
/// optional, default features, features) — its effective features.
fn metadata(root: &Path) -> BTreeMap<String, Vec<String>> {
    let o = Command::new(cargo())
        .args([
            "metadata",
            "--no-deps",
            "--offline",
            "--format-version",
            "1",
            "--manifest-path",
        ])
        .arg(root.join("Cargo.toml"))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(
        o.status.success(),
        "cargo metadata rejected the result:\n{stderr}"
    );
    assert!(
        !stderr.contains("warning"),
        "cargo metadata warned:\n{stderr}"
    );
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let mut out = BTreeMap::new();
    for p in v["packages"].as_array().unwrap() {
        let mut deps = Vec::new();
        for d in p["dependencies"].as_array().unwrap() {
            if d["name"] == "thiserror" || d["name"] == "anyhow" {
                let mut features: Vec<&str> = d["features"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|f| f.as_str().unwrap())
                    .collect();
                features.sort_unstable();
                deps.push(format!(
                    "{} kind={} target={} rename={} optional={} default={} features={features:?}",
                    d["name"],
                    d["kind"],
                    d["target"],
                    d["rename"],
                    d["optional"],
                    d["uses_default_features"]
                ));
            }
        }
        deps.sort();
        out.insert(p["name"].as_str().unwrap().to_string(), deps);
    }
    out
}

/// A workspace root manifest with `[workspace.dependencies]` body `ws_deps`.
fn root_manifest(ws_deps: &str) -> String {
    format!(
        "[workspace]\nresolver = \"2\"\nmembers = [\"crates/*\"]\n\n[workspace.package]\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[workspace.dependencies]\n{ws_deps}"
    )
}

fn temp() -> tempfile::TempDir {
    tempfile::tempdir().unwrap()
}

/// Body of crate `i` of the drifted fleet after the fix (golden text).
fn fixed_body(i: usize) -> &'static str {
    match i % DRIFT_FORMS {
        0 => "[dependencies]\nanyhow = { workspace = true }\nthiserror = { workspace = true }\n",
        1 => {
            "[dependencies]\n# errors, one enum per crate\nthiserror = { workspace = true, features = [\"std\"] } # keep std\n"
        }
        2 => "[dev-dependencies]\nthiserror = { workspace = true }\n",
        3 => "[build-dependencies]\nthiserror.workspace = true\n",
        4 => {
            "[target.'cfg(unix)'.dependencies]\nthiserror = { workspace = true, optional = true }\n\n[features]\nerrors = [\"dep:thiserror\"]\n"
        }
        5 => {
            "[target.x86_64-unknown-linux-gnu.dev-dependencies]\nthiserror = { workspace = true }\n"
        }
        6 => "[dependencies.thiserror]\nworkspace = true\nfeatures = [\"std\"]\n",
        7 => "[dependencies]\nerrors = { workspace = true }\n",
        _ => "[dependencies]\nthiserror.workspace = true\n",
    }
}

#[test]
fn field_case_56_crates_fixed_in_one_run_and_clean_on_the_next() {
    let dir = temp();
    let fleet = drifted_fleet(dir.path(), 56).unwrap();
    let before_meta = metadata(&fleet.root);
    let before = snapshot(&fleet.root);

    // --check: every violation with its line, the diff, exit 1, nothing written
    let (code, out, _) = align(&fleet.root, &["--check"]);
    assert_eq!(code, 1, "{out}");
    assert!(
        out.contains(
            "crates/c0000/Cargo.toml:9: thiserror = \"1.0\" -> thiserror = { workspace = true }"
        ),
        "{out}"
    );
    assert!(
        out.contains("crates/c0006/Cargo.toml:8: version = \"1.0.50\" -> workspace = true"),
        "{out}"
    );
    assert!(
        out.contains(
            "Cargo.toml:14: (nothing) -> errors = { package = \"thiserror\", version = \"2\" }"
        ),
        "{out}"
    );
    assert!(
        out.contains("--- a/crates/c0002/Cargo.toml\n+++ b/crates/c0002/Cargo.toml\n"),
        "{out}"
    );
    assert!(
        out.contains("-thiserror = '1.0.40'\n+thiserror = { workspace = true }\n"),
        "{out}"
    );
    let inherited_already = (0..56)
        .filter(|i| i % DRIFT_FORMS == DRIFT_FORMS - 1)
        .count();
    let findings = out
        .lines()
        .filter(|l| l.contains("Cargo.toml:") && l.contains(" -> "))
        .count();
    assert_eq!(findings, 56 - inherited_already + 1, "{out}");
    assert!(
        out.contains(&format!(
            "align-deps: {} violations",
            56 - inherited_already + 1
        )),
        "{out}"
    );
    assert_eq!(snapshot(&fleet.root), before, "--check wrote something");

    // fix: one run
    let (code, out, err) = align(&fleet.root, &[]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(
        out.contains("fixed crates/c0055/Cargo.toml: 1 change"),
        "{out}"
    );
    for i in 0..56 {
        let name = crate_name(i);
        assert_eq!(
            read(&fleet.manifest(&name)),
            format!("{}\n{}", package_header(&name), fixed_body(i)),
            "crate {name}"
        );
    }
    assert_eq!(
        read(&fleet.root.join("Cargo.toml")),
        format!(
            "{}errors = {{ package = \"thiserror\", version = \"2\" }}\n",
            support::DRIFTED_ROOT
        )
    );
    // excluded (vendored) crate and the lockfile untouched
    let after = snapshot(&fleet.root);
    for p in [
        "vendor/old-errors/Cargo.toml",
        "Cargo.lock",
        "policy/fleet.toml",
    ] {
        assert_eq!(
            after[&fleet.root.join(p)],
            before[&fleet.root.join(p)],
            "{p} changed"
        );
    }
    // cargo accepts the result, without warnings, and every crate keeps its features
    let after_meta = metadata(&fleet.root);
    assert_eq!(after_meta, before_meta);

    // next run: clean, writes nothing
    let (code, out, _) = align(&fleet.root, &["--check"]);
    assert_eq!(code, 0, "{out}");
    assert!(
        out.contains("align-deps: 57 manifests hold the policy"),
        "{out}"
    );
    let (code, out, _) = align(&fleet.root, &[]);
    assert_eq!(code, 0, "{out}");
    assert!(
        out.contains("align-deps: nothing to change; the workspace holds the policy"),
        "{out}"
    );
    assert!(!out.contains("fixed "), "{out}");
    assert_eq!(snapshot(&fleet.root), after, "a second run wrote something");
}

/// `cargo metadata` that may warn (for "before" states that cargo only warns about).
fn metadata_allowing_warnings(root: &Path) -> (BTreeMap<String, Vec<String>>, String) {
    let o = Command::new(cargo())
        .args([
            "metadata",
            "--no-deps",
            "--offline",
            "--format-version",
            "1",
            "--manifest-path",
        ])
        .arg(root.join("Cargo.toml"))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&o.stderr).to_string();
    assert!(o.status.success(), "{stderr}");
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let mut out = BTreeMap::new();
    for p in v["packages"].as_array().unwrap() {
        let d: Vec<String> = p["dependencies"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|d| d["name"] == "thiserror")
            .map(|d| {
                format!(
                    "default={} features={}",
                    d["uses_default_features"], d["features"]
                )
            })
            .collect();
        out.insert(p["name"].as_str().unwrap().to_string(), d);
    }
    (out, stderr)
}

/// A fleet with `root` as root manifest and crates `(name, body)`.
fn fleet_of(dir: &Path, root: &str, crates: &[(&str, &str)]) -> Fleet {
    let fleet = Fleet::new(dir, root).unwrap();
    for (name, body) in crates {
        fleet.add_crate(name, body).unwrap();
    }
    fleet
}

fn body_of(fleet: &Fleet, name: &str) -> String {
    let text = read(&fleet.manifest(name));
    text.strip_prefix(&format!("{}\n", package_header(name)))
        .unwrap_or(&text)
        .to_string()
}

#[test]
fn every_table_kind_and_declaration_form() {
    let dir = temp();
    let before = r#"[dependencies]
# above
thiserror = "1.0" # beside
anyhow = "1.0"

[dev-dependencies]
thiserror = { version = "1", features = ["std"] }

[build-dependencies.thiserror]
version = "1.0" # pinned
# inside
features = []

[target.'cfg(unix)'.dependencies]
thiserror.version = "1"
thiserror.optional = true

[target.'cfg(windows)'.dev-dependencies]
thiserror = "=1.0.69"

[target."cfg(target_os = \"linux\")".build-dependencies]
thiserror = {version="1.0"}

[target.x86_64-unknown-linux-gnu.dependencies]
errs = { package = "thiserror", version = "1.0", optional = true }

[target.x86_64-unknown-linux-gnu.dev-dependencies]
thiserror = { workspace = true }

[target.aarch64-apple-darwin.build-dependencies]
thiserror = '1'

[features]
x = ["dep:errs"]
"#;
    let after = r#"[dependencies]
# above
thiserror = { workspace = true } # beside
anyhow = "1.0"

[dev-dependencies]
thiserror = { workspace = true, features = ["std"] }

[build-dependencies.thiserror]
workspace = true # pinned
# inside
features = []

[target.'cfg(unix)'.dependencies]
thiserror.workspace = true
thiserror.optional = true

[target.'cfg(windows)'.dev-dependencies]
thiserror = { workspace = true }

[target."cfg(target_os = \"linux\")".build-dependencies]
thiserror = {workspace = true}

[target.x86_64-unknown-linux-gnu.dependencies]
errs = { workspace = true, optional = true }

[target.x86_64-unknown-linux-gnu.dev-dependencies]
thiserror = { workspace = true }

[target.aarch64-apple-darwin.build-dependencies]
thiserror = { workspace = true }

[features]
x = ["dep:errs"]
"#;
    let fleet = fleet_of(
        dir.path(),
        &root_manifest("thiserror = \"2\"\n"),
        &[("all", before)],
    );
    let meta_before = metadata(&fleet.root);
    let (code, out, _) = align(&fleet.root, &["--check"]);
    assert_eq!(code, 1);
    for table in [
        "[dependencies] thiserror",
        "[dev-dependencies] thiserror",
        "[build-dependencies] thiserror",
        "[target.'cfg(unix)'.dependencies] thiserror",
        "[target.'cfg(windows)'.dev-dependencies] thiserror",
        "[target.'cfg(target_os = \"linux\")'.build-dependencies] thiserror",
        "[target.x86_64-unknown-linux-gnu.dependencies] thiserror (renamed `errs`)",
        "[target.aarch64-apple-darwin.build-dependencies] thiserror",
    ] {
        assert!(out.contains(table), "{table} missing in:\n{out}");
    }
    // the already-inherited one is left alone
    assert!(
        !out.lines().any(|l| l.contains(" -> ")
            && l.contains("[target.x86_64-unknown-linux-gnu.dev-dependencies]")),
        "{out}"
    );
    let (code, out, err) = align(&fleet.root, &[]);
    assert_eq!(code, 0, "{out}{err}");
    assert_eq!(body_of(&fleet, "all"), after);
    assert_eq!(
        read(&fleet.root.join("Cargo.toml")),
        root_manifest("thiserror = \"2\"\nerrs = { package = \"thiserror\", version = \"2\" }\n")
    );
    assert_eq!(metadata(&fleet.root), meta_before);
    assert_eq!(align(&fleet.root, &["--check"]).0, 0);
}

#[test]
fn workspace_dependencies_created_after_the_workspace_table_with_comments_kept() {
    let dir = temp();
    let root = "# The fleet\n[workspace]\n# members\nmembers = [\"crates/*\"] # all of them\nresolver = \"2\"\n\n# shared metadata\n[workspace.package]\nversion = \"0.1.0\"\nedition = \"2021\"\n";
    let fleet = fleet_of(
        dir.path(),
        root,
        &[("a", "[dependencies]\nthiserror = \"1\"\n")],
    );
    let (code, out, err) = align(&fleet.root, &[]);
    assert_eq!(code, 0, "{out}{err}");
    assert_eq!(
        read(&fleet.root.join("Cargo.toml")),
        "# The fleet\n[workspace]\n# members\nmembers = [\"crates/*\"] # all of them\nresolver = \"2\"\n\n[workspace.dependencies]\nthiserror = \"2\"\n\n# shared metadata\n[workspace.package]\nversion = \"0.1.0\"\nedition = \"2021\"\n"
    );
    assert_eq!(
        body_of(&fleet, "a"),
        "[dependencies]\nthiserror = { workspace = true }\n"
    );
    metadata(&fleet.root);
    // a root whose [workspace] is implicit (only [workspace.package]): appended at the end
    let dir = temp();
    let root = "[workspace.package]\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[package]\nname = \"top\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[dependencies]\nthiserror = \"1\"\n";
    let fleet = fleet_of(dir.path(), root, &[]);
    fleet.write("src/lib.rs", "").unwrap();
    let (code, out, err) = align(&fleet.root, &[]);
    assert_eq!(code, 0, "{out}{err}");
    assert_eq!(
        read(&fleet.root.join("Cargo.toml")),
        "[workspace.package]\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[package]\nname = \"top\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[dependencies]\nthiserror = { workspace = true }\n\n[workspace.dependencies]\nthiserror = \"2\"\n"
    );
    metadata(&fleet.root);
}

#[test]
fn workspace_dependencies_updated_with_comments_kept() {
    let dir = temp();
    let ws = "# errors\nthiserror = \"1.0\" # old major\n# serialization\nserde = \"1\"\nte = { package = \"thiserror\", version = '1', features = [\"std\"] } # renamed\n";
    let fleet = fleet_of(
        dir.path(),
        &root_manifest(ws),
        &[
            (
                "a",
                "[dependencies]\nthiserror = { workspace = true }\nte.workspace = true\n",
            ),
            (
                "b",
                "[dependencies]\nerrs = { package = \"thiserror\", version = \"1\" }\n",
            ),
        ],
    );
    let (code, out, err) = align(&fleet.root, &["--check"]);
    assert_eq!(code, 1);
    assert!(
        out.contains(
            "Cargo.toml:11: thiserror = \"1.0\" # old major -> thiserror = \"2\" # old major"
        ),
        "{out}"
    );
    assert!(out.contains("Cargo.toml:14: te = { package = \"thiserror\", version = '1', features = [\"std\"] } # renamed -> te = { package = \"thiserror\", version = '2', features = [\"std\"] } # renamed"), "{out}{err}");
    let (code, out, err) = align(&fleet.root, &[]);
    assert_eq!(code, 0, "{out}{err}");
    assert_eq!(
        read(&fleet.root.join("Cargo.toml")),
        root_manifest(
            "# errors\nthiserror = \"2\" # old major\n# serialization\nserde = \"1\"\nte = { package = \"thiserror\", version = '2', features = [\"std\"] } # renamed\nerrs = { package = \"thiserror\", version = \"2\" }\n"
        )
    );
    assert_eq!(
        body_of(&fleet, "a"),
        "[dependencies]\nthiserror = { workspace = true }\nte.workspace = true\n"
    );
    assert_eq!(
        body_of(&fleet, "b"),
        "[dependencies]\nerrs = { workspace = true }\n"
    );
    metadata(&fleet.root);
    // a [workspace.dependencies.thiserror] table
    let dir = temp();
    let fleet = fleet_of(
        dir.path(),
        &root_manifest("\n[workspace.dependencies.thiserror]\nversion = \"1\"\n"),
        &[("a", "[dependencies]\nthiserror.workspace = true\n")],
    );
    assert_eq!(align(&fleet.root, &[]).0, 0);
    assert_eq!(
        read(&fleet.root.join("Cargo.toml")),
        root_manifest("\n[workspace.dependencies.thiserror]\nversion = \"2\"\n")
    );
}

fn default_features_case(edition: &str) {
    let dir = temp();
    let root = root_manifest("thiserror = \"2\"\n")
        .replace("edition = \"2021\"", &format!("edition = \"{edition}\""));
    let fleet = fleet_of(
        dir.path(),
        &root,
        &[
            (
                "a",
                "[dependencies]\nthiserror = { version = \"1\", default-features = false }\n",
            ),
            ("b", "[dependencies]\nthiserror = \"1\"\n"),
            ("c", "[dependencies]\nthiserror = { workspace = true }\n"),
            (
                "d",
                "[dependencies.thiserror]\nversion = \"1\"\ndefault-features = true\n",
            ),
            (
                "e",
                "[dev-dependencies]\nthiserror = { version = \"1\", features = [\"std\"], default-features = false }\n",
            ),
        ],
    );
    let before = metadata(&fleet.root);
    let (code, out, err) = align(&fleet.root, &[]);
    assert_eq!(code, 0, "{out}{err}");
    assert_eq!(
        read(&fleet.root.join("Cargo.toml")),
        root.replace(
            "thiserror = \"2\"",
            "thiserror = { version = \"2\", default-features = false }"
        )
    );
    assert_eq!(
        body_of(&fleet, "a"),
        "[dependencies]\nthiserror = { workspace = true, default-features = false }\n"
    );
    assert_eq!(
        body_of(&fleet, "b"),
        "[dependencies]\nthiserror = { workspace = true, default-features = true }\n"
    );
    assert_eq!(
        body_of(&fleet, "c"),
        "[dependencies]\nthiserror = { workspace = true, default-features = true }\n"
    );
    assert_eq!(
        body_of(&fleet, "d"),
        "[dependencies.thiserror]\nworkspace = true\ndefault-features = true\n"
    );
    assert_eq!(
        body_of(&fleet, "e"),
        "[dev-dependencies]\nthiserror = { workspace = true, features = [\"std\"], default-features = false }\n"
    );
    // valid for cargo (no warning, no edition-2024 error) and every crate keeps its features
    assert_eq!(metadata(&fleet.root), before);
    assert_eq!(align(&fleet.root, &["--check"]).0, 0);
}

#[test]
fn default_features_false_moves_to_the_workspace_entry_edition_2021() {
    default_features_case("2021");
}

#[test]
fn default_features_false_moves_to_the_workspace_entry_edition_2024() {
    default_features_case("2024");
}

#[test]
fn ignored_default_features_false_on_an_inherited_dependency_is_removed() {
    let dir = temp();
    let fleet = fleet_of(
        dir.path(),
        &root_manifest("thiserror = \"2\"\n"),
        &[(
            "a",
            "[dependencies]\nthiserror = { workspace = true, default-features = false } # no std\n",
        )],
    );
    // cargo ignores the member's `false` (edition 2024 rejects it): default features are on
    let (before, _) = metadata_allowing_warnings(&fleet.root);
    assert_eq!(before["a"], ["default=true features=[]"]);
    let (code, out, err) = align(&fleet.root, &[]);
    assert_eq!(code, 0, "{out}{err}");
    assert_eq!(
        body_of(&fleet, "a"),
        "[dependencies]\nthiserror = { workspace = true } # no std\n"
    );
    let (after, warnings) = metadata_allowing_warnings(&fleet.root);
    assert!(!warnings.contains("warning"), "{warnings}");
    assert_eq!(after, before);
}

#[test]
fn git_and_path_dependencies_are_reported_and_not_touched() {
    let dir = temp();
    let root = root_manifest("thiserror = \"2\"\n").replace(
        "members = [\"crates/*\"]",
        "members = [\"crates/*\"]\nexclude = [\"vendor\"]",
    );
    let git = "[dependencies]\nthiserror = { git = \"https://github.com/dtolnay/thiserror\", tag = \"1.0.69\" }\n";
    let path =
        "[dev-dependencies]\nthiserror = { path = \"../../vendor/thiserror\", version = \"1\" }\n";
    let fleet = fleet_of(
        dir.path(),
        &root,
        &[
            ("g", git),
            ("p", path),
            ("r", "[dependencies]\nthiserror = \"1\"\n"),
        ],
    );
    fleet
        .write(
            "vendor/thiserror/Cargo.toml",
            "[package]\nname = \"thiserror\"\nversion = \"1.0.69\"\nedition = \"2021\"\n",
        )
        .unwrap();
    fleet.write("vendor/thiserror/src/lib.rs", "").unwrap();
    let vendored = snapshot(&fleet.root.join("vendor"));
    let (code, out, _) = align(&fleet.root, &["--check", "--format", "json"]);
    assert_eq!(code, 1);
    let findings: Vec<serde_json::Value> = out
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .filter(|f: &serde_json::Value| f["kind"] != "summary")
        .collect();
    assert_eq!(findings.len(), 3, "{out}");
    let g = findings
        .iter()
        .find(|f| f["file"] == "crates/g/Cargo.toml")
        .unwrap();
    assert_eq!(g["rule"], "source");
    assert_eq!(g["fixable"], false);
    assert_eq!(g["line"], 8);
    assert_eq!(g["column"], 1);
    assert_eq!(g["dependency"], "thiserror");
    assert_eq!(g["table"], "dependencies");
    assert!(g["found"].as_str().unwrap().contains("git = "), "{g}");
    let p = findings
        .iter()
        .find(|f| f["file"] == "crates/p/Cargo.toml")
        .unwrap();
    assert_eq!(
        (p["fixable"].as_bool(), p["table"].as_str()),
        (Some(false), Some("dev-dependencies"))
    );
    let r = findings
        .iter()
        .find(|f| f["file"] == "crates/r/Cargo.toml")
        .unwrap();
    assert_eq!(r["fixable"], true);
    assert_eq!(r["found"], "thiserror = \"1\"");
    assert_eq!(r["wanted"], "thiserror = { workspace = true }");

    let (code, out, _) = align(&fleet.root, &[]);
    assert_eq!(code, 1, "{out}");
    assert!(
        out.contains("crates/g/Cargo.toml:8: thiserror = { git = "),
        "{out}"
    );
    assert!(out.contains("[needs a person]"), "{out}");
    assert_eq!(body_of(&fleet, "g"), git);
    assert_eq!(body_of(&fleet, "p"), path);
    assert_eq!(
        body_of(&fleet, "r"),
        "[dependencies]\nthiserror = { workspace = true }\n"
    );
    assert_eq!(snapshot(&fleet.root.join("vendor")), vendored);
    // the fixable part is done; what remains still fails the check
    let (code, out, _) = align(&fleet.root, &["--check"]);
    assert_eq!(code, 1);
    assert_eq!(
        out.lines()
            .filter(|l| l.contains("[needs a person]"))
            .count(),
        2,
        "{out}"
    );
}

#[test]
fn non_members_and_excluded_crates_are_not_touched() {
    let dir = temp();
    let root = "[workspace]\nresolver = \"2\"\nmembers = [\"crates/a\"]\nexclude = [\"crates/vendored\"]\n\n[workspace.dependencies]\nthiserror = \"2\"\n";
    let old = "[dependencies]\nthiserror = \"1.0\"\n";
    let fleet = fleet_of(dir.path(), root, &[("a", old), ("vendored", old)]);
    fleet
        .write("elsewhere/Cargo.toml", "[package]\nname = \"elsewhere\"\nversion = \"0.1.0\"\n\n[dependencies]\nthiserror = \"1.0\"\n")
        .unwrap();
    let before = snapshot(&fleet.root);
    // crates/a inherits version/edition from [workspace.package], which this root lacks: give it its own
    std::fs::write(
        fleet.manifest("a"),
        "[package]\nname = \"a\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[dependencies]\nthiserror = \"1.0\"\n",
    )
    .unwrap();
    let (code, out, err) = align(&fleet.root, &[]);
    assert_eq!(code, 0, "{out}{err}");
    assert_eq!(
        read(&fleet.manifest("a")),
        "[package]\nname = \"a\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[dependencies]\nthiserror = { workspace = true }\n"
    );
    let after = snapshot(&fleet.root);
    for p in [
        "crates/vendored/Cargo.toml",
        "elsewhere/Cargo.toml",
        "Cargo.toml",
    ] {
        assert_eq!(
            after[&fleet.root.join(p)],
            before[&fleet.root.join(p)],
            "{p} changed"
        );
    }
}

#[test]
fn malformed_manifest_anywhere_is_exit_2_and_nothing_is_written() {
    let dir = temp();
    let fleet = drifted_fleet(dir.path(), 10).unwrap();
    fleet
        .add_crate("bad", "[dependencies]\nthiserror = { version = \"1\"\n")
        .unwrap();
    let before = snapshot(&fleet.root);
    for extra in [&[][..], &["--check"][..]] {
        let (code, out, err) = align(&fleet.root, extra);
        assert_eq!(code, 2, "{out}{err}");
        assert!(err.contains("crates/bad/Cargo.toml:8:"), "{err}");
        assert!(err.contains("malformed TOML"), "{err}");
        assert!(err.contains("nothing written"), "{err}");
        assert_eq!(snapshot(&fleet.root), before, "something was written");
    }
    // the root manifest itself
    std::fs::write(
        fleet.manifest("bad"),
        format!(
            "{}\n[dependencies]\nthiserror = \"1\"\n",
            package_header("bad")
        ),
    )
    .unwrap();
    std::fs::write(
        fleet.root.join("Cargo.toml"),
        format!("{}\n[profile.release\n", support::DRIFTED_ROOT),
    )
    .unwrap();
    let before = snapshot(&fleet.root);
    let (code, _, err) = align(&fleet.root, &[]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("Cargo.toml:15:17: malformed TOML"), "{err}");
    assert_eq!(snapshot(&fleet.root), before);
}

#[test]
fn unreadable_manifest_is_exit_2_and_nothing_is_written() {
    let dir = temp();
    let fleet = drifted_fleet(dir.path(), 5).unwrap();
    fleet.add_crate("latin1", "").unwrap();
    let mut bytes = std::fs::read(fleet.manifest("latin1")).unwrap();
    bytes.extend_from_slice(b"# caf\xe9\n");
    std::fs::write(fleet.manifest("latin1"), bytes).unwrap();
    let before = snapshot(&fleet.root);
    let (code, _, err) = align(&fleet.root, &[]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("crates/latin1/Cargo.toml"), "{err}");
    assert_eq!(snapshot(&fleet.root), before);
}

#[test]
fn missing_or_malformed_policy_is_exit_2_with_its_line() {
    let dir = temp();
    let fleet = drifted_fleet(dir.path(), 3).unwrap();
    fleet
        .write(
            "policy/fleet.toml",
            "[dependencies.thiserror]\nversion = \"2\"\ninherrit = true\n",
        )
        .unwrap();
    let before = snapshot(&fleet.root);
    let (code, _, err) = align(&fleet.root, &[]);
    assert_eq!(code, 2);
    assert!(err.contains("policy/fleet.toml:3:"), "{err}");
    assert!(err.contains("inherrit"), "{err}");
    let missing = fleet.root.join("nope.toml");
    let (code, _, err) = align(&fleet.root, &["--policy", missing.to_str().unwrap()]);
    assert_eq!(code, 2);
    assert!(err.contains("nope.toml"), "{err}");
    assert_eq!(snapshot(&fleet.root), before);
    // --policy FILE elsewhere is honoured
    let good = dir.path().join("other-policy.toml");
    std::fs::write(&good, support::POLICY).unwrap();
    assert_eq!(
        align(
            &fleet.root,
            &["--check", "--policy", good.to_str().unwrap()]
        )
        .0,
        1
    );
}

#[test]
fn policy_version_that_is_not_a_requirement_is_exit_2_at_its_value() {
    let dir = temp();
    let fleet = drifted_fleet(dir.path(), 3).unwrap();
    fleet
        .write(
            "policy/fleet.toml",
            "# thiserror: see below\n[dependencies.thiserror]\nversion = \"banana\"\n",
        )
        .unwrap();
    let before = snapshot(&fleet.root);
    for extra in [&[][..], &["--check"][..]] {
        let (code, out, err) = align(&fleet.root, extra);
        assert_eq!(code, 2, "{out}{err}");
        assert!(err.contains("policy/fleet.toml:3:11: "), "{err}");
        assert!(err.contains("banana"), "{err}");
    }
    assert_eq!(snapshot(&fleet.root), before, "nothing written");
}

#[test]
fn crlf_line_endings_survive() {
    let dir = temp();
    let root = root_manifest("")
        .replace("\n[workspace.dependencies]\n", "")
        .replace('\n', "\r\n");
    let fleet = fleet_of(dir.path(), &root, &[]);
    let body = "[dependencies]\r\n# errors\r\nthiserror = { version = \"1.0\", features = [\"std\"] } # std\r\n\r\n[dev-dependencies.thiserror]\r\nversion = \"1\"\r\ndefault-features = false\r\n";
    fleet.write("crates/w/src/lib.rs", "").unwrap();
    let header = package_header("w").replace('\n', "\r\n");
    fleet
        .write("crates/w/Cargo.toml", &format!("{header}\r\n{body}"))
        .unwrap();
    let before = metadata(&fleet.root);
    let (code, out, err) = align(&fleet.root, &[]);
    assert_eq!(code, 0, "{out}{err}");
    let after_root = read(&fleet.root.join("Cargo.toml"));
    assert_eq!(
        after_root,
        root.replace(
            "members = [\"crates/*\"]\r\n",
            "members = [\"crates/*\"]\r\n\r\n[workspace.dependencies]\r\nthiserror = { version = \"2\", default-features = false }\r\n"
        )
    );
    assert_eq!(
        read(&fleet.manifest("w")),
        format!(
            "{header}\r\n[dependencies]\r\n# errors\r\nthiserror = {{ workspace = true, features = [\"std\"], default-features = true }} # std\r\n\r\n[dev-dependencies.thiserror]\r\nworkspace = true\r\ndefault-features = false\r\n"
        )
    );
    for text in [after_root, read(&fleet.manifest("w"))] {
        assert!(
            !text.replace("\r\n", "").contains('\n'),
            "a bare LF crept in: {text:?}"
        );
    }
    assert_eq!(metadata(&fleet.root), before);
}

#[test]
fn file_permissions_survive() {
    let dir = temp();
    let fleet = drifted_fleet(dir.path(), 3).unwrap();
    let set = |p: &Path, mode: u32| {
        std::fs::set_permissions(p, std::fs::Permissions::from_mode(mode)).unwrap()
    };
    set(&fleet.manifest("c0000"), 0o640);
    set(&fleet.manifest("c0001"), 0o755);
    set(&fleet.root.join("Cargo.toml"), 0o600);
    let (code, out, err) = align(&fleet.root, &[]);
    assert_eq!(code, 0, "{out}{err}");
    let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&fleet.manifest("c0000")), 0o640);
    assert_eq!(mode(&fleet.manifest("c0001")), 0o755);
    assert_eq!(mode(&fleet.root.join("Cargo.toml")), 0o600);
    assert!(read(&fleet.manifest("c0000")).contains("thiserror = { workspace = true }"));
    // no temporary files left behind
    let leftovers: Vec<_> = snapshot(&fleet.root)
        .into_keys()
        .filter(|p| p.to_string_lossy().contains(".xtask-"))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
}

#[test]
fn github_format_prints_annotations() {
    let dir = temp();
    let fleet = drifted_fleet(dir.path(), 2).unwrap();
    let (code, out, _) = align(&fleet.root, &["--check", "--format", "github"]);
    assert_eq!(code, 1);
    let errors: Vec<&str> = out.lines().filter(|l| l.starts_with("::error ")).collect();
    assert_eq!(errors.len(), 2, "{out}");
    assert!(
        errors[0].starts_with("::error file=crates/c0000/Cargo.toml,line=9,col=13,title=align-deps%3A inherit::thiserror = \"1.0\" -> thiserror = { workspace = true }"),
        "{out}"
    );
    assert!(
        out.lines()
            .any(|l| l.starts_with("::notice ") && l.contains("old-errors 0.3.0")),
        "{out}"
    );
    assert!(!out.contains("--- a/"), "no diff in github format: {out}");
}

#[test]
fn inherit_false_rewrites_the_requirement_in_place() {
    let dir = temp();
    let fleet = fleet_of(
        dir.path(),
        &root_manifest("thiserror = \"1\"\n"),
        &[
            ("a", "[dependencies]\nthiserror = \"1.0\" # c\n"),
            (
                "b",
                "[dependencies]\nthiserror = { version = '1', features = [\"std\"] }\n",
            ),
            (
                "c",
                "[dependencies.thiserror]\nversion = \"1\"\noptional = true\n",
            ),
            ("d", "[dependencies]\nthiserror = { workspace = true }\n"),
        ],
    );
    fleet
        .write(
            "policy/fleet.toml",
            "[dependencies.thiserror]\nversion = \"2\"\ninherit = false\n",
        )
        .unwrap();
    let (code, out, err) = align(&fleet.root, &[]);
    assert_eq!(code, 0, "{out}{err}");
    assert_eq!(
        read(&fleet.root.join("Cargo.toml")),
        root_manifest("thiserror = \"2\"\n")
    );
    assert_eq!(
        body_of(&fleet, "a"),
        "[dependencies]\nthiserror = \"2\" # c\n"
    );
    assert_eq!(
        body_of(&fleet, "b"),
        "[dependencies]\nthiserror = { version = '2', features = [\"std\"] }\n"
    );
    assert_eq!(
        body_of(&fleet, "c"),
        "[dependencies.thiserror]\nversion = \"2\"\noptional = true\n"
    );
    assert_eq!(
        body_of(&fleet, "d"),
        "[dependencies]\nthiserror = { workspace = true }\n"
    );
    metadata(&fleet.root);
    assert_eq!(align(&fleet.root, &["--check"]).0, 0);
}

#[test]
fn single_package_manifest_is_rewritten_in_place() {
    let dir = temp();
    let text = "[package]\nname = \"solo\"\nversion = \"0.1.0\"\nedition = \"2024\"\n\n[dependencies]\nthiserror = \"1.0\"\n\n[dev-dependencies]\nthiserror = { version = \"1\", features = [\"std\"] }\n";
    let fleet = Fleet::new(dir.path(), text).unwrap();
    fleet.write("src/lib.rs", "").unwrap();
    let (code, out, err) = align(&fleet.root, &["--check"]);
    assert_eq!(code, 1, "{out}{err}");
    assert!(
        out.contains("Cargo.toml:7: thiserror = \"1.0\" -> thiserror = \"2\""),
        "{out}"
    );
    let (code, out, err) = align(&fleet.root.join("Cargo.toml"), &[]);
    assert_eq!(code, 0, "{out}{err}");
    assert_eq!(
        read(&fleet.root.join("Cargo.toml")),
        text.replace("\"1.0\"", "\"2\"")
            .replace("version = \"1\"", "version = \"2\"")
    );
    metadata(&fleet.root);
}

#[test]
fn workspace_features_that_a_member_lacks_are_not_inherited_silently() {
    let dir = temp();
    let fleet = fleet_of(
        dir.path(),
        &root_manifest("thiserror = { version = \"2\", features = [\"std\"] }\n"),
        &[
            (
                "a",
                "[dependencies]\nthiserror = { version = \"1\", default-features = false }\n",
            ),
            (
                "b",
                "[dependencies]\nthiserror = { version = \"1\", features = [\"std\"] }\n",
            ),
        ],
    );
    let (code, out, _) = align(&fleet.root, &[]);
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("crates/a/Cargo.toml:8: thiserror = { version = \"1\", default-features = false } -> workspace = true [needs a person]"), "{out}");
    assert_eq!(
        body_of(&fleet, "a"),
        "[dependencies]\nthiserror = { version = \"1\", default-features = false }\n"
    );
    assert_eq!(
        body_of(&fleet, "b"),
        "[dependencies]\nthiserror = { workspace = true, features = [\"std\"] }\n"
    );
    metadata(&fleet.root);
}

#[test]
fn a_workspace_key_naming_another_package_is_a_conflict() {
    let dir = temp();
    let fleet = fleet_of(
        dir.path(),
        &root_manifest("errs = \"1\"\n"),
        &[(
            "a",
            "[dependencies]\nerrs = { package = \"thiserror\", version = \"1\" }\n",
        )],
    );
    let (code, out, _) = align(&fleet.root, &[]);
    assert_eq!(code, 1, "{out}");
    assert!(
        out.contains("conflict") || out.contains("is the package `errs`"),
        "{out}"
    );
    assert_eq!(
        body_of(&fleet, "a"),
        "[dependencies]\nerrs = { package = \"thiserror\", version = \"1\" }\n"
    );
}

#[test]
fn lockfile_report_is_information_not_failure() {
    let dir = temp();
    let fleet = drifted_fleet(dir.path(), 9).unwrap();
    assert_eq!(align(&fleet.root, &[]).0, 0);
    let (code, out, _) = align(&fleet.root, &["--check"]);
    assert_eq!(code, 0, "{out}");
    assert!(
        out.contains("info: Cargo.lock still carries thiserror 1.0.69 (policy: \"2\"), pulled by a package outside the workspace: old-errors 0.3.0"),
        "{out}"
    );
    std::fs::remove_file(fleet.root.join("Cargo.lock")).unwrap();
    let (code, out, _) = align(&fleet.root, &["--check"]);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("info: no Cargo.lock"), "{out}");
    // json keeps stdout to findings and the summary object
    let (code, out, err) = align(&fleet.root, &["--check", "--format", "json"]);
    assert_eq!(code, 0);
    let rows: Vec<serde_json::Value> = out
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(rows.len(), 1, "{out}");
    assert_eq!(rows[0]["kind"], "summary", "{out}");
    assert!(err.contains("info: no Cargo.lock"), "{err}");
}

#[test]
fn this_workspace_holds_the_policy() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
    let (code, out, err) = align(root, &["--check"]);
    assert_eq!(code, 0, "{out}{err}");
}

#[test]
fn several_policy_dependencies_share_one_new_workspace_table() {
    let dir = temp();
    let root = "[workspace]\nresolver = \"2\"\nmembers = [\"crates/*\"]\n\n[workspace.package]\nversion = \"0.1.0\"\nedition = \"2021\"\n";
    let fleet = fleet_of(
        dir.path(),
        root,
        &[
            (
                "a",
                "[dependencies]\nthiserror = \"1\"\nanyhow = \"1.0.40\"\n",
            ),
            (
                "b",
                "[dependencies]\nanyhow = { version = \"1\", default-features = false }\n",
            ),
        ],
    );
    fleet
        .write(
            "policy/fleet.toml",
            "[dependencies.thiserror]\nversion = \"2\"\n\n[dependencies.anyhow]\nversion = \"1.0.86\"\n",
        )
        .unwrap();
    let before = metadata(&fleet.root);
    let (code, out, err) = align(&fleet.root, &[]);
    assert_eq!(code, 0, "{out}{err}");
    assert_eq!(
        read(&fleet.root.join("Cargo.toml")),
        "[workspace]\nresolver = \"2\"\nmembers = [\"crates/*\"]\n\n[workspace.dependencies]\nanyhow = { version = \"1.0.86\", default-features = false }\nthiserror = \"2\"\n\n[workspace.package]\nversion = \"0.1.0\"\nedition = \"2021\"\n"
    );
    assert_eq!(
        body_of(&fleet, "a"),
        "[dependencies]\nthiserror = { workspace = true }\nanyhow = { workspace = true, default-features = true }\n"
    );
    assert_eq!(
        body_of(&fleet, "b"),
        "[dependencies]\nanyhow = { workspace = true, default-features = false }\n"
    );
    assert_eq!(metadata(&fleet.root), before);
    assert_eq!(align(&fleet.root, &["--check"]).0, 0);
}

#[test]
fn members_are_not_converted_when_the_workspace_entry_cannot_be_written() {
    let dir = temp();
    let root = "[workspace]\nresolver = \"2\"\nmembers = [\"crates/*\"]\ndependencies = { anyhow = \"1\" }\n\n[workspace.package]\nversion = \"0.1.0\"\nedition = \"2021\"\n";
    let body = "[dependencies]\nthiserror = \"1\"\n";
    let fleet = fleet_of(dir.path(), root, &[("a", body)]);
    let before = snapshot(&fleet.root);
    let (code, out, _) = align(&fleet.root, &[]);
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("[needs a person]"), "{out}");
    assert_eq!(snapshot(&fleet.root), before);
}

/// One rule for a missing default policy: align-deps and gpu-test exit 2 and
/// say where they looked (policy/fleet.toml, [workspace.metadata.fleet]) and
/// to create one or pass --policy; fmt-check (whose policy
/// only adds exclude globs) still runs. A missing --policy FILE names the OS
/// error once.
#[test]
fn missing_default_policy_is_one_rule_across_commands() {
    let dir = temp();
    let root = dir.path();
    std::fs::write(
        root.join("Cargo.toml"),
        "[package]\nname = \"solo\"\nversion = \"0.1.0\"\nedition = \"2021\"\n",
    )
    .unwrap();
    std::fs::create_dir_all(root.join("src")).unwrap();
    std::fs::write(root.join("src/lib.rs"), "pub fn a() {}\n").unwrap();
    let ws = root.to_str().unwrap();
    for cmd in ["align-deps", "gpu-test"] {
        let (code, out, err) = xtask(&[cmd, "--workspace", ws]);
        assert_eq!(code, 2, "{cmd}: {out}{err}");
        assert!(
            err.contains("no fleet policy in this workspace: looked for ")
                && err.contains("policy/fleet.toml and for [workspace.metadata.fleet] in "),
            "{cmd}: {err}"
        );
        assert!(err.contains("or pass --policy FILE"), "{cmd}: {err}");
    }
    let (code, out, err) = xtask(&["fmt-check", "--workspace", ws]);
    assert_eq!(code, 0, "fmt-check runs without a policy: {out}{err}");
    assert!(out.contains("no policy/fleet.toml"), "{out}");
    let (code, _, err) = xtask(&[
        "align-deps",
        "--workspace",
        ws,
        "--policy",
        "/nonexistent/p.toml",
    ]);
    assert_eq!(code, 2);
    assert_eq!(err.matches("No such file").count(), 1, "{err}");
}
