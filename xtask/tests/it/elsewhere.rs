//! A workspace worked on from somewhere else: given with `--workspace` from
//! another directory (its own cargo configuration must still apply), or
//! through a symbolic link (the journal must name real paths).

use std::path::Path;
use std::process::Command;

use crate::support::write;

/// The xtask binary run from `cwd` with `args`, without the test run's
/// `CARGO_TARGET_DIR` (which would override the workspace's own setting):
/// (exit code, stdout, stderr).
fn xtask_from(cwd: &Path, args: &[&str]) -> (i32, String, String) {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_xtask"));
    cmd.current_dir(cwd)
        .args(args)
        .env_remove("CARGO_TARGET_DIR")
        .env_remove("CARGO_BUILD_TARGET_DIR");
    let o = crate::support::output_within(&mut cmd);
    (
        o.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

/// A one-member workspace whose `.cargo/config.toml` puts the target
/// directory at `_build`, holding an unformatted generated file there.
fn build_dir_workspace(ws: &Path) {
    write(
        ws,
        "Cargo.toml",
        "[workspace]\nresolver = \"2\"\nmembers = [\"a\"]\n",
    );
    write(
        ws,
        "a/Cargo.toml",
        "[package]\nname = \"a\"\nversion = \"0.1.0\"\nedition = \"2021\"\n",
    );
    write(ws, "a/src/lib.rs", "pub fn a() -> u32 {\n    1\n}\n");
    write(
        ws,
        ".cargo/config.toml",
        "[build]\ntarget-dir = \"_build\"\n",
    );
    write(
        ws,
        "_build/debug/build/a-0123/out/generated.rs",
        "pub   const  X:u32=1;\n",
    );
}

#[test]
fn the_workspace_cargo_config_applies_when_run_from_another_directory() {
    let dir = tempfile::tempdir().unwrap();
    let base = dir.path().canonicalize().unwrap();
    let ws = base.join("ws");
    build_dir_workspace(&ws);
    let elsewhere = base.join("elsewhere");
    std::fs::create_dir_all(&elsewhere).unwrap();

    // from the root: _build is the target directory, never checked
    let (code, out, err) = xtask_from(&ws, &["fmt-check"]);
    assert_eq!(code, 0, "{out}{err}");
    // from elsewhere, the same answer: cargo runs in the workspace
    let (code, out, err) = xtask_from(&elsewhere, &["fmt-check", "--workspace", "../ws"]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(!out.contains("generated.rs"), "{out}");
    assert!(
        !elsewhere.join("target").exists(),
        "nothing made where xtask was started"
    );
}

/// A fix started on `--workspace LINK`, killed while replacing, the link
/// then removed: the next run on the real path settles the journal (it names
/// the real paths, not paths through the link).
#[test]
fn a_fix_through_a_link_killed_then_the_link_removed_is_settled_on_the_real_path() {
    use crate::child::{Run, align_args, xtask_files};
    let dir = tempfile::tempdir().unwrap();
    let base = dir.path().canonicalize().unwrap();
    let real = base.join("real");
    crate::support::drifted_fleet(&real, 4).unwrap();
    let link = base.join("link");
    std::os::unix::fs::symlink(&real, &link).unwrap();

    let mut run = Run::start(&align_args(&link, &[]), Some("before-replace:2"));
    run.wait_paused();
    let killed = run.kill9();
    assert_eq!(killed.code, None, "{killed:?}");
    assert!(
        !xtask_files(&real).is_empty(),
        "the kill left temporary files"
    );
    std::fs::remove_file(&link).unwrap();

    let (code, out, err) = crate::support::align(&real, &[]);
    assert!(
        err.contains("xtask: recovering an interrupted run"),
        "{code}: {out}{err}"
    );
    assert_eq!(code, 0, "{out}{err}");
    assert!(xtask_files(&real).is_empty(), "{:?}", xtask_files(&real));
    let (code, out, err) = crate::support::align(&real, &["--check"]);
    assert_eq!(code, 0, "{out}{err}");
}

/// One rule for files outside the workspace: a `#[path]` module there is
/// never written (a journal could not vouch for it), so its crate is left
/// untouched and its findings need a person; the other crates are fixed.
#[test]
fn a_path_module_outside_the_workspace_is_never_written() {
    use crate::support::{Fleet, POLICY, align, read};
    let dir = tempfile::tempdir().unwrap();
    let base = dir.path().canonicalize().unwrap();
    let root = base.join("ws");
    let fleet = Fleet::new(
        &root,
        "[workspace]\nresolver = \"2\"\nmembers = [\"crates/*\"]\n\n[workspace.package]\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[workspace.dependencies]\nthiserror = \"2\"\n",
    )
    .unwrap();
    fleet.write("policy/fleet.toml", POLICY).unwrap();
    fleet
        .add_crate("a", "[dependencies]\nthiserror = \"1\"\n")
        .unwrap();
    fleet
        .write(
            "crates/a/src/lib.rs",
            "#[path = \"../../../../shared/errors.rs\"]\nmod errors;\n",
        )
        .unwrap();
    let shared = "#[derive(Debug, thiserror::Error)]\n#[error(\"unknown {r#type}\")]\npub struct E {\n    r#type: String,\n}\n";
    write(&base, "shared/errors.rs", shared);
    fleet
        .add_crate("b", "[dependencies]\nthiserror = \"1\"\n")
        .unwrap();
    let manifest_a = read(&fleet.manifest("a"));

    let (code, out, err) = align(&root, &[]);
    assert_eq!(code, 1, "a person must fix the outside file: {out}{err}");
    assert_eq!(
        read(&base.join("shared/errors.rs")),
        shared,
        "never written"
    );
    assert_eq!(
        read(&fleet.manifest("a")),
        manifest_a,
        "its crate untouched"
    );
    assert!(out.contains("outside the workspace"), "{out}{err}");
    assert!(out.contains("[needs a person]"), "{out}");
    assert!(
        read(&fleet.manifest("b")).contains("thiserror = { workspace = true }"),
        "the other crate is fixed"
    );
    assert!(crate::child::xtask_files(&base).is_empty());
}

/// The rustup proxy `cargo` beside `rustup` on `PATH`, if any.
fn rustup_cargo() -> Option<std::path::PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .find(|d| d.join("rustup").is_file())
        .map(|d| d.join("cargo"))
        .filter(|c| c.is_file())
}

/// Run from inside a workspace (or from elsewhere with `--workspace`) whose
/// pinned toolchain is not installed: one line of advice naming the file,
/// the toolchain and the command that installs it, never rustup's error and
/// backtrace.
#[test]
fn a_pinned_toolchain_that_is_not_installed_is_one_line_of_advice() {
    let Some(proxy) = rustup_cargo() else {
        eprintln!("SKIPPED: no rustup on PATH, so no toolchain file applies");
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().canonicalize().unwrap().join("ws");
    build_dir_workspace(&ws);
    // a release no machine running these tests keeps installed
    write(
        &ws,
        "rust-toolchain.toml",
        "[toolchain]\nchannel = \"1.42.0\"\n",
    );
    let run = |cwd: &Path, args: &[&str]| {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_xtask"));
        cmd.current_dir(cwd)
            .args(args)
            .env("CARGO", &proxy)
            .env("RUST_BACKTRACE", "1")
            .env_remove("RUSTUP_TOOLCHAIN")
            .env_remove("RUSTUP_TOOLCHAIN_SOURCE")
            .env_remove("CARGO_TARGET_DIR");
        let o = crate::support::output_within(&mut cmd);
        (
            o.status.code(),
            String::from_utf8_lossy(&o.stderr).into_owned(),
        )
    };
    let ws_arg = ws.to_str().unwrap();
    for (cwd, args) in [
        (ws.clone(), vec!["align-deps", "--check"]),
        (ws.join("a"), vec!["fmt-check"]),
        (
            dir.path().to_path_buf(),
            vec!["align-deps", "--workspace", ws_arg],
        ),
    ] {
        let (code, err) = run(&cwd, &args);
        assert_eq!(code, Some(2), "{args:?}: {err}");
        assert_eq!(
            err.trim_end().lines().count(),
            1,
            "{args:?}: one line:\n{err}"
        );
        assert!(
            err.contains("rust-toolchain.toml: pins the toolchain `1.42.0`"),
            "{err}"
        );
        assert!(err.contains("rustup toolchain install 1.42.0"), "{err}");
        assert!(!err.contains("backtrace"), "{err}");
    }
}

/// Through `--workspace LINK` a plain file is still named as itself in
/// messages, not as "a link to" its real path.
#[test]
fn a_file_reached_through_a_linked_workspace_is_not_called_a_link() {
    use std::os::unix::fs::PermissionsExt as _;
    let dir = tempfile::tempdir().unwrap();
    let base = dir.path().canonicalize().unwrap();
    let real = base.join("real");
    let fleet = crate::support::drifted_fleet(&real, 2).unwrap();
    let link = base.join("link");
    std::os::unix::fs::symlink(&real, &link).unwrap();
    std::fs::set_permissions(
        fleet.manifest("c0000"),
        std::fs::Permissions::from_mode(0o444),
    )
    .unwrap();
    let (code, out, err) = crate::support::align(&link, &[]);
    assert_eq!(code, 2, "{out}{err}");
    assert!(err.contains("crates/c0000/Cargo.toml: read-only"), "{err}");
    assert!(!err.contains("a link to"), "{err}");
}
