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
