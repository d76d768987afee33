//! `cargo xtask align-deps` on fixture workspaces generated into temp dirs,
//! driven in-process through `xtask::cli::run`.

use std::collections::BTreeMap;
use std::os::unix::fs::PermissionsExt as _;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::SystemTime;

use xtask::align_deps::fixture::{
    self, DRIFT_FORMS, Fleet, crate_name, drifted_fleet, package_header,
};

/// Runs `cargo xtask <args>`; returns (exit code, stdout, stderr).
fn xtask(args: &[&str]) -> (i32, String, String) {
    let (mut out, mut err) = (Vec::new(), Vec::new());
    let code = xtask::cli::run(args.iter().copied(), &mut out, &mut err);
    (
        code,
        String::from_utf8(out).unwrap(),
        String::from_utf8(err).unwrap(),
    )
}

fn align(root: &Path, extra: &[&str]) -> (i32, String, String) {
    let mut args = vec!["align-deps", "--workspace", root.to_str().unwrap()];
    args.extend_from_slice(extra);
    xtask(&args)
}

fn read(p: &Path) -> String {
    std::fs::read_to_string(p).unwrap()
}

/// Every file under `root` with its bytes, mtime and mode.
fn snapshot(root: &Path) -> BTreeMap<PathBuf, (Vec<u8>, SystemTime, u32)> {
    let mut out = BTreeMap::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let e = e.unwrap();
            let md = e.metadata().unwrap();
            if md.is_dir() {
                if e.file_name() != "target" {
                    stack.push(e.path());
                }
            } else {
                out.insert(
                    e.path(),
                    (
                        std::fs::read(e.path()).unwrap(),
                        md.modified().unwrap(),
                        md.permissions().mode(),
                    ),
                );
            }
        }
    }
    out
}

fn cargo() -> PathBuf {
    std::env::var_os("CARGO").map_or_else(|| "cargo".into(), PathBuf::from)
}

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
            if d["name"] == "thiserror" {
                let mut features: Vec<&str> = d["features"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|f| f.as_str().unwrap())
                    .collect();
                features.sort_unstable();
                deps.push(format!(
                    "kind={} target={} rename={} optional={} default={} features={features:?}",
                    d["kind"], d["target"], d["rename"], d["optional"], d["uses_default_features"]
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
            fixture::DRIFTED_ROOT
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
    assert!(out.contains("align-deps: nothing to change; the workspace holds the policy"), "{out}");
    assert!(!out.contains("fixed "), "{out}");
    assert_eq!(snapshot(&fleet.root), after, "a second run wrote something");
}
