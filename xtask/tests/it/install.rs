//! `cargo install --path xtask` gives `cargo fleet` on any workspace: the
//! package is installed from this checkout into a
//! temporary root, offline (the registry cache holds every dependency once
//! the workspace has built), and run through cargo on a generated workspace
//! with the install directory first on `PATH`, as a user would.

use std::path::Path;
use std::process::Command;

use crate::support::{DRIFTED_ROOT, POLICY, build_within, drifted_fleet, output_within, read};

/// Installs `cargo-fleet` under `root` (`root/bin/cargo-fleet`). `--debug`
/// and a target directory kept between runs (under cargo's per-test
/// temporary directory, not the workspace's own target directory, whose lock
/// the running `cargo test` may hold) keep a rerun short; `--locked` builds
/// what the workspace's `Cargo.lock` says, so `--offline` has it all.
fn install(root: &Path) {
    let target = Path::new(env!("CARGO_TARGET_TMPDIR")).join("cargo-fleet-install");
    let mut cmd = xtask::workspace::cargo_command();
    cmd.env("CARGO_TARGET_DIR", &target).args([
        "install",
        "--path",
        env!("CARGO_MANIFEST_DIR"),
        "--bin",
        "cargo-fleet",
        "--root",
        root.to_str().unwrap(),
        "--debug",
        "--locked",
        "--offline",
        "--quiet",
        "--color",
        "never",
    ]);
    let out = build_within(&mut cmd);
    assert!(
        out.status.success(),
        "cargo install failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(root.join("bin/cargo-fleet").is_file());
}

/// `cargo fleet <args>` in `dir`, with `bin` first on `PATH`; (exit code, stdout, stderr).
fn cargo_fleet(bin: &Path, dir: &Path, args: &[&str]) -> (i32, String, String) {
    let path = std::env::var_os("PATH").unwrap_or_default();
    let path = std::env::join_paths(
        std::iter::once(bin.to_path_buf()).chain(std::env::split_paths(&path)),
    )
    .unwrap();
    let mut cmd: Command = xtask::workspace::cargo_command();
    cmd.current_dir(dir)
        .env("PATH", path)
        .arg("fleet")
        .args(args);
    let out = output_within(&mut cmd);
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn cargo_install_gives_cargo_fleet_on_any_workspace() {
    let root = tempfile::tempdir().unwrap();
    install(root.path());
    let bin = root.path().join("bin");

    let dir = tempfile::tempdir().unwrap();
    let (code, out, err) = cargo_fleet(&bin, dir.path(), &["--version"]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(
        out.trim(),
        format!("cargo fleet {}", env!("CARGO_PKG_VERSION")),
        "{out}"
    );
    for cmd in ["align-deps", "fmt-check", "gpu-test", "ci"] {
        let (code, out, err) = cargo_fleet(&bin, dir.path(), &[cmd, "--help"]);
        assert_eq!(code, 0, "{cmd}: {err}");
        assert!(
            out.contains(&format!("Usage: cargo fleet {cmd}")),
            "{cmd}: {out}"
        );
    }

    // a generated workspace, its policy in policy/fleet.toml
    let ws = dir.path().join("ws");
    let fleet = drifted_fleet(&ws, 3).unwrap();
    let (code, out, err) = cargo_fleet(&bin, &ws, &["align-deps", "--check"]);
    assert_eq!(code, 1, "{out}{err}");
    assert!(out.contains("crates/c0000/Cargo.toml"), "{out}");
    assert!(
        out.contains("cargo fleet align-deps"),
        "the advice names the command run: {out}"
    );

    // the same policy in [workspace.metadata.fleet] instead: the same findings
    std::fs::remove_file(ws.join("policy/fleet.toml")).unwrap();
    let in_manifest = POLICY.replace("[dependencies.", "[workspace.metadata.fleet.dependencies.");
    fleet
        .write("Cargo.toml", &format!("{DRIFTED_ROOT}\n{in_manifest}"))
        .unwrap();
    let (code, again, err) = cargo_fleet(&bin, &ws, &["align-deps", "--check"]);
    assert_eq!(code, 1, "{again}{err}");
    assert!(again.contains("crates/c0000/Cargo.toml"), "{again}");

    // fixed through cargo fleet, then it holds
    let (code, out, err) = cargo_fleet(&bin, &ws, &["align-deps"]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(
        read(&fleet.manifest("c0000")).contains("thiserror = { workspace = true }")
            || read(&fleet.manifest("c0000")).contains("thiserror.workspace = true"),
        "{}",
        read(&fleet.manifest("c0000"))
    );
    let (code, out, err) = cargo_fleet(&bin, &ws, &["align-deps", "--check"]);
    assert_eq!(code, 0, "{out}{err}");

    // both places at once, and neither: exit 2 naming where it looked
    fleet.write("policy/fleet.toml", POLICY).unwrap();
    let (code, _, err) = cargo_fleet(&bin, &ws, &["align-deps", "--check"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("two fleet policies"), "{err}");
    std::fs::remove_file(ws.join("policy/fleet.toml")).unwrap();
    fleet.write("Cargo.toml", DRIFTED_ROOT).unwrap();
    let (code, _, err) = cargo_fleet(&bin, &ws, &["align-deps", "--check"]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("policy/fleet.toml") && err.contains("[workspace.metadata.fleet]"),
        "{err}"
    );
}
