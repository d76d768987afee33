//! fmt-check says what rustfmt says and formats as the project formats:
//! rustfmt's warnings once per option,
//! nightly-only options under a stable rustfmt, a pinned toolchain that is
//! not installed, a rustfmt that crashes or is killed on one file of a batch.

use std::os::unix::fs::PermissionsExt as _;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::support::{read, write};

/// A workspace of crates `a`, `b`, `c` (edition 2021), each with an
/// unformatted `src/lib.rs` that has two separate `use` lines.
fn workspace() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    write(
        &root,
        "Cargo.toml",
        "[workspace]\nresolver = \"2\"\nmembers = [\"a\", \"b\", \"c\"]\n",
    );
    for c in ["a", "b", "c"] {
        write(
            &root,
            &format!("{c}/Cargo.toml"),
            &format!("[package]\nname = \"{c}\"\nversion = \"0.1.0\"\nedition = \"2021\"\n"),
        );
        write(
            &root,
            &format!("{c}/src/lib.rs"),
            "use std::fmt::Debug;\nuse std::fmt::Display;\npub fn  f<T: Debug + Display>(t: T) -> String { format!(\"{t:?}\") }\n",
        );
    }
    (dir, root)
}

fn xtask_bin(root: &Path, args: &[&str], env: &[(&str, &Path)]) -> (i32, String, String) {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_xtask"));
    cmd.arg("fmt-check").arg("--workspace").arg(root).args(args);
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = cmd.output().unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// A stable rustfmt ignores nightly-only options: fmt-check says so once per
/// option (not once per file or batch), and `--fix` writes nothing unless
/// `--allow-ignored-options` accepts formatting without them; an unknown key
/// is shown once too.
#[test]
fn nightly_only_options_under_stable_rustfmt_are_named_and_block_fix() {
    let (_d, root) = workspace();
    write(
        &root,
        "rustfmt.toml",
        "edition = \"2021\"\nimports_granularity = \"Crate\"\ngroup_imports = \"StdExternalCrate\"\nno_such_option = true\n",
    );
    write(
        &root,
        "rust-toolchain.toml",
        "[toolchain]\nchannel = \"stable\"\n",
    );
    let before = read(&root.join("a/src/lib.rs"));
    let (code, out, err) =
        crate::support::xtask(&["fmt-check", "--workspace", root.to_str().unwrap()]);
    assert_eq!(code, 1, "{out}{err}");
    for option in ["imports_granularity", "group_imports"] {
        let lines: Vec<&str> = out
            .lines()
            .filter(|l| l.contains(&format!("rustfmt ignores `{option}`")))
            .collect();
        assert_eq!(lines.len(), 1, "{option} once:\n{out}");
        assert!(lines[0].starts_with("rustfmt.toml:"), "{out}");
        assert!(lines[0].contains("nightly-only"), "{out}");
    }
    assert_eq!(out.matches("`no_such_option`").count(), 1, "{out}");

    let (code, out, err) =
        crate::support::xtask(&["fmt-check", "--fix", "--workspace", root.to_str().unwrap()]);
    assert_eq!(code, 2, "{out}{err}");
    assert!(err.contains("--fix wrote nothing"), "{err}");
    assert!(
        err.contains("`imports_granularity`") && err.contains("`group_imports`"),
        "{err}"
    );
    assert!(err.contains("nightly"), "{err}");
    assert!(err.contains("--allow-ignored-options"), "{err}");
    assert!(!out.contains("reformatted"), "{out}");
    assert_eq!(read(&root.join("a/src/lib.rs")), before, "nothing written");

    let (code, out, err) = crate::support::xtask(&[
        "fmt-check",
        "--fix",
        "--allow-ignored-options",
        "--workspace",
        root.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(read(&root.join("a/src/lib.rs")).contains("pub fn f<T: Debug + Display>"));
}

/// A toolchain pinned by the workspace and not installed: one exit-2 message
/// naming it and the install command, no rustup backtrace, nothing per file.
#[test]
fn pinned_toolchain_that_is_not_installed_is_one_clear_error() {
    if Command::new("rustup").arg("--version").output().is_err() {
        return; // no rustup: toolchain files mean nothing here
    }
    let (_d, root) = workspace();
    write(
        &root,
        "rust-toolchain.toml",
        "[toolchain]\nchannel = \"1.61.0\"\n",
    );
    let (code, out, err) =
        crate::support::xtask(&["fmt-check", "--workspace", root.to_str().unwrap()]);
    assert_eq!(code, 2, "{out}{err}");
    assert_eq!(err.matches("not installed").count(), 1, "{err}");
    assert!(err.contains("rust-toolchain.toml"), "{err}");
    assert!(err.contains("`1.61.0`"), "{err}");
    assert!(err.contains("rustup toolchain install 1.61.0"), "{err}");
    assert!(
        !err.contains("backtrace") && !err.contains("Stack"),
        "{err}"
    );
    assert_eq!(err.lines().count(), 1, "{err}");
}

/// A fake rustfmt that runs the real one, except on a batch holding
/// `crates c` where it dies as `how` says (a shell snippet).
fn fake_rustfmt(dir: &Path, how: &str) -> PathBuf {
    let real = xtask::fmt_check::rustfmt::Rustfmt::locate().unwrap().path;
    let fake = dir.join("fake-rustfmt");
    std::fs::write(
        &fake,
        format!(
            "#!/bin/sh\nfor a in \"$@\"; do case \"$a\" in */c/src/lib.rs) {how};; esac; done\nexec '{}' \"$@\"\n",
            real.display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&fake, std::fs::Permissions::from_mode(0o755)).unwrap();
    fake
}

fn crash_case(how: &str, expect: &str) {
    let (d, root) = workspace();
    let fake = fake_rustfmt(d.path(), how);
    let (code, out, err) = xtask_bin(&root, &["--format", "json"], &[("RUSTFMT", &fake)]);
    assert_eq!(code, 2, "{out}{err}");
    let lines: Vec<serde_json::Value> = out
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    for c in ["a", "b"] {
        let f = lines
            .iter()
            .find(|v| v["file"] == format!("{c}/src/lib.rs"))
            .unwrap_or_else(|| panic!("{c}: {out}"));
        assert_eq!(f["kind"], "unformatted", "{out}");
        assert_eq!(f["reached_by_cargo_fmt"], true, "{out}");
    }
    let c = lines.iter().find(|v| v["file"] == "c/src/lib.rs").unwrap();
    assert_eq!(c["kind"], "error", "{out}");
    assert!(c["message"].as_str().unwrap().contains(expect), "{out}");
    let summary = lines.iter().find(|v| v["kind"] == "summary").unwrap();
    assert_eq!(
        summary["standalone"], 0,
        "nothing labelled beyond cargo fmt's reach: {out}"
    );
}

/// rustfmt panicking on one crate root of a batch: the crash is that file's
/// error; the other files keep their verdicts and their crate roots.
#[test]
fn rustfmt_crash_on_one_file_of_a_batch() {
    crash_case(
        "echo \"thread 'main' panicked at src/x.rs:1:1:\" >&2; echo 'boom' >&2; exit 101",
        "rustfmt crashed",
    );
}

/// rustfmt killed by a signal is reported as such.
#[test]
fn rustfmt_killed_by_a_signal_is_reported_as_such() {
    crash_case("kill -SEGV $$", "killed by signal 11 (SIGSEGV)");
}

/// `--fix` that writes nothing (a file rustfmt cannot parse stops it) does
/// not call the other files "reformatted".
#[test]
fn fix_that_writes_nothing_says_not_reformatted() {
    let (_d, root) = workspace();
    write(&root, "c/src/lib.rs", "pub fn broken( {\n");
    let before = read(&root.join("a/src/lib.rs"));
    let (code, out, err) =
        crate::support::xtask(&["fmt-check", "--fix", "--workspace", root.to_str().unwrap()]);
    assert_eq!(code, 2, "{out}{err}");
    assert!(!out.contains("reformatted"), "{out}");
    assert!(out.contains("a/src/lib.rs:3: not formatted"), "{out}");
    assert_eq!(read(&root.join("a/src/lib.rs")), before);
}
