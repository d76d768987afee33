//! xtask against a hostile but ordinary user: two runs on one workspace
//! with different target directories, journals xtask did not write, Ctrl-C
//! in the middle of a fix, a tree restored by `git checkout` after a kill, a
//! full disk during a rollback, hard links and ownership, terminal control
//! bytes in a source, a rustfmt that never answers, a FIFO as a module.

use std::ffi::OsStr;
use std::os::unix::fs::MetadataExt as _;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use crate::child::{Run, align_args, journal, xtask_files};
use crate::field_safety::{old_and_new, rel_manifests};
use crate::support::{align, crate_name, drifted_fleet, read, snapshot, xtask};

/// Whether cargo can load the workspace at `root`.
fn cargo_loads(root: &Path) -> Result<(), String> {
    xtask::workspace::metadata_no_deps(&root.join("Cargo.toml"))
        .map(drop)
        .map_err(|e| format!("{e:#}"))
}

#[test]
fn two_runs_with_different_target_directories_take_turns() {
    let n = 30;
    let (_, new) = old_and_new(n);
    let dir = tempfile::tempdir().unwrap();
    let fleet = drifted_fleet(&dir.path().join("ws"), n).unwrap();
    let root = &fleet.root;
    let (t1, t2) = (dir.path().join("t1"), dir.path().join("t2"));
    fn env(t: &Path) -> [(&'static str, &std::ffi::OsStr); 1] {
        [("CARGO_TARGET_DIR", t.as_os_str())]
    }
    let mut first = Run::start_env(
        &align_args(root, &[]),
        Some("before-replace:1"),
        None,
        &env(&t1),
    );
    first.wait_paused();
    let mut second = Run::start_env(&align_args(root, &[]), None, None, &env(&t2));
    second.wait_for_err("waiting for it");
    first.go();
    let (a, b) = (first.finish(), second.finish());
    assert_eq!(a.code, Some(0), "{a:?}");
    assert_eq!(b.code, Some(0), "{b:?}");
    assert!(b.out.contains("nothing to change"), "{}", b.out);
    assert_eq!(rel_manifests(root, n), new);
    cargo_loads(root).unwrap();

    // and unpaused, started together: whatever the interleaving, the
    // workspace ends fixed and loadable
    for round in 0..4 {
        let dir = tempfile::tempdir().unwrap();
        let fleet = drifted_fleet(dir.path(), n).unwrap();
        let root = &fleet.root;
        let runs: Vec<Run> = [&t1, &t2]
            .iter()
            .map(|t| Run::start_env(&align_args(root, &[]), None, None, &env(t)))
            .collect();
        for r in runs {
            let done = r.finish();
            assert_eq!(done.code, Some(0), "round {round}: {done:?}");
        }
        assert_eq!(rel_manifests(root, n), new, "round {round}");
        cargo_loads(root).unwrap_or_else(|e| panic!("round {round}: {e}"));
    }
}

/// Writes `text` as the journal xtask would find for `root`.
fn plant_journal(root: &Path, text: &str) -> PathBuf {
    let j = journal(root);
    std::fs::create_dir_all(j.parent().unwrap()).unwrap();
    std::fs::write(&j, text).unwrap();
    j
}

#[test]
fn a_journal_xtask_did_not_write_is_refused_with_nothing_touched() {
    let dir = tempfile::tempdir().unwrap();
    let base = dir.path().canonicalize().unwrap();
    let fleet = drifted_fleet(&base.join("ws"), 2).unwrap();
    let root = &fleet.root;
    let outside = base.join("precious.txt");
    std::fs::write(&outside, "keep me").unwrap();
    std::fs::write(root.join("notes.md"), "mine").unwrap();
    let victim = fleet.manifest(&crate_name(0));
    let victim_text = read(&victim);
    let ws = serde_json::to_string(root.to_str().unwrap()).unwrap();
    let path = |p: &Path| serde_json::to_string(p.to_str().unwrap()).unwrap();
    let entry = |rel: &str, target: &Path, temp: &Path| {
        format!(
            r#"{{"rel": "{rel}", "target": {}, "temp": {}, "new_hash": "0", "before": {{"dev": 0, "ino": 0, "size": 0, "mtime_ns": 0}}}}"#,
            path(target),
            path(temp)
        )
    };
    // staging, naming a file outside the workspace and one of the
    // workspace's own that is not a temporary file
    let staging = format!(
        r#"{{"tool": "xtask", "version": 2, "workspace": {ws}, "run": "1-a", "state": "staging", "files": [{}, {}]}}"#,
        entry("precious.txt", &outside, &outside),
        entry("notes.md", &root.join("notes.md"), &root.join("notes.md")),
    );
    // an unknown version that would write GARBAGE
    let future = format!(
        r#"{{"tool": "xtask", "version": 3, "workspace": {ws}, "run": "1-a", "state": "committed", "files": [{{"rel": "crates/c0000/Cargo.toml", "target": {}, "temp": {}, "old": {}, "new": "GARBAGE"}}]}}"#,
        path(&victim),
        path(&victim.with_file_name(".xtask-1-a-0.tmp")),
        serde_json::to_string(&victim_text).unwrap()
    );
    for (what, text, why) in [
        (
            "staging",
            staging.as_str(),
            "is not the one xtask would have made",
        ),
        ("version 3", future.as_str(), "journal format 3"),
    ] {
        let before = snapshot(root);
        let j = plant_journal(root, text);
        for cmd in [&["align-deps", "--check"][..], &["fmt-check"][..]] {
            let mut args = cmd.to_vec();
            args.extend(["--workspace", root.to_str().unwrap()]);
            let (code, out, err) = xtask(&args);
            assert_eq!(code, 2, "{what}: {out}{err}");
            assert!(err.contains(why), "{what}: {err}");
            assert!(err.contains("nothing was touched"), "{what}: {err}");
            assert!(!err.contains("removed"), "{what}: {err}");
        }
        assert_eq!(snapshot(root), before, "{what}");
        assert_eq!(read(&outside), "keep me", "{what}");
        assert!(j.exists(), "{what}: the journal is evidence, kept");
        std::fs::remove_file(j).unwrap();
    }
}

#[test]
fn sigint_or_sigterm_during_a_fix_rolls_it_back_before_exiting() {
    let n = 6;
    let (old, _) = old_and_new(n);
    for (signal, point, number) in [
        ("INT", "before-replace:2", libc::SIGINT),
        ("TERM", "before-replace:4", libc::SIGTERM),
        ("INT", "after-staging", libc::SIGINT),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let fleet = drifted_fleet(dir.path(), n).unwrap();
        let root = &fleet.root;
        let mut run = Run::start(&align_args(root, &[]), Some(point));
        run.wait_paused();
        run.signal(signal);
        run.go();
        let done = run.finish();
        assert_eq!(done.signal, Some(number), "{signal} at {point}: {done:?}");
        assert!(
            done.err.contains(&format!("interrupted by SIG{signal}")),
            "{}",
            done.err
        );
        assert!(done.err.contains("nothing written"), "{}", done.err);
        assert_eq!(rel_manifests(root, n), old, "{signal} at {point}");
        assert_eq!(
            xtask_files(root),
            Vec::<PathBuf>::new(),
            "{signal} at {point}"
        );
        assert!(!journal(root).exists(), "{signal} at {point}");
    }
}

fn git(root: &Path, args: &[&str]) {
    let st = Command::new("git")
        .args([
            "-c",
            "user.name=t",
            "-c",
            "user.email=t@t",
            "-c",
            "core.hooksPath=/dev/null",
        ])
        .args(args)
        .current_dir(root)
        .output()
        .unwrap();
    assert!(
        st.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&st.stderr)
    );
}

#[test]
fn a_tree_restored_with_git_checkout_after_a_kill_is_not_rolled_forward() {
    let n = 4;
    let (old, _) = old_and_new(n);
    let dir = tempfile::tempdir().unwrap();
    let fleet = drifted_fleet(dir.path(), n).unwrap();
    let root = &fleet.root;
    std::fs::write(root.join(".gitignore"), "target/\n").unwrap();
    git(root, &["init", "-q"]);
    git(root, &["add", "-A"]);
    git(root, &["commit", "-qm", "drifted"]);
    let mut run = Run::start(&align_args(root, &[]), Some("before-replace:3"));
    run.wait_paused();
    run.kill9();
    assert_ne!(rel_manifests(root, n), old, "the kill left replaced files");
    git(root, &["checkout", "."]);
    assert_eq!(rel_manifests(root, n), old);
    let (code, _, err) = xtask(&["fmt-check", "--workspace", root.to_str().unwrap()]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("rewritten since"), "{err}");
    assert!(err.contains("was not finished"), "{err}");
    assert_eq!(rel_manifests(root, n), old, "{err}");
    assert_eq!(xtask_files(root), Vec::<PathBuf>::new());
    assert!(!journal(root).exists());
}

#[test]
fn a_rollback_that_runs_out_of_space_is_finished_by_the_next_run() {
    let n = 6;
    let dir = tempfile::tempdir().unwrap();
    let fleet = drifted_fleet(dir.path(), n).unwrap();
    let root = &fleet.root;
    // manifests larger than the file-size limit below, stderr smaller
    let pad: String = (0..100)
        .map(|i| format!("# padding line {i:04} of a long manifest\n"))
        .collect();
    let mut paths = vec![root.join("Cargo.toml")];
    paths.extend((0..n).map(|i| fleet.manifest(&crate_name(i))));
    for p in &paths {
        std::fs::write(p, format!("{}{pad}", read(p))).unwrap();
    }
    let old = rel_manifests(root, n);
    let mut run = Run::start(&align_args(root, &[]), Some("before-replace:2"));
    run.wait_paused();
    // someone edits the next file: the run decides to roll back...
    let victim = fleet.manifest(&crate_name(2));
    let edited = format!("{}# edited during the fix\n", read(&victim));
    std::fs::write(&victim, &edited).unwrap();
    // ...and no file can grow past 2 KiB any more (a full disk, for it)
    let st = Command::new("prlimit")
        .args([format!("--pid={}", run.pid()), "--fsize=2048".into()])
        .status()
        .unwrap();
    assert!(st.success());
    run.go();
    let done = run.finish();
    assert_eq!(done.code, Some(3), "{done:?}");
    assert!(journal(root).exists(), "{done:?}");
    // the next run finishes the rollback the first one decided
    let (code, _, err) = align(root, &["--check"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("finishing the restore"), "{err}");
    assert!(
        err.contains("crates/c0002/Cargo.toml: holds neither"),
        "{err}"
    );
    for (rel, text) in rel_manifests(root, n) {
        let want = if rel == "crates/c0002/Cargo.toml" {
            &edited
        } else {
            &old[&rel]
        };
        assert_eq!(&text, want, "{rel}");
    }
    assert_eq!(xtask_files(root), Vec::<PathBuf>::new());
    assert!(!journal(root).exists());
}

#[test]
fn a_hard_linked_manifest_is_refused_and_owner_and_group_are_kept() {
    let dir = tempfile::tempdir().unwrap();
    let fleet = drifted_fleet(&dir.path().join("ws"), 3).unwrap();
    let root = &fleet.root;
    let linked = fleet.manifest(&crate_name(1));
    let other = dir.path().join("other-name.toml");
    std::fs::hard_link(&linked, &other).unwrap();
    let before = snapshot(root);
    let (code, out, err) = align(root, &[]);
    assert_eq!(code, 2, "{out}{err}");
    assert!(
        err.contains("crates/c0001/Cargo.toml: has 2 hard links"),
        "{err}"
    );
    assert!(err.contains("nothing written"), "{err}");
    assert_eq!(snapshot(root), before);
    assert_eq!(
        std::fs::metadata(&other).unwrap().ino(),
        std::fs::metadata(&linked).unwrap().ino()
    );
    std::fs::remove_file(&other).unwrap();

    // owner and group kept (a file of another user is what root meets)
    let owned = fleet.manifest(&crate_name(0));
    let me = std::fs::metadata(&owned).unwrap();
    let (uid, gid) = if me.uid() == 0 {
        (1234, 5678)
    } else {
        (me.uid(), me.gid())
    };
    std::os::unix::fs::chown(&owned, Some(uid), Some(gid)).unwrap();
    std::fs::set_permissions(&owned, std::os::unix::fs::PermissionsExt::from_mode(0o640)).unwrap();
    let (code, out, err) = align(root, &[]);
    assert_eq!(code, 0, "{out}{err}");
    let md = std::fs::metadata(&owned).unwrap();
    assert_eq!((md.uid(), md.gid()), (uid, gid));
    assert_eq!(md.mode() & 0o7777, 0o640);
    assert!(read(&owned).contains("thiserror = { workspace = true }"));
}

#[test]
fn terminal_control_bytes_from_a_source_are_escaped_in_human_and_github_output() {
    let dir = tempfile::tempdir().unwrap();
    let fleet = drifted_fleet(dir.path(), 1).unwrap();
    let root = &fleet.root;
    let hostile = "\u{1b}]0;pwned\u{7}\u{1b}[2J";
    std::fs::write(
        root.join("crates/c0000/src/lib.rs"),
        format!(
            "#[derive(Debug, thiserror::Error)]\npub enum E {{\n    #[error(\"{hostile} {{r#type}}\")]\n    A {{ r#type: u8 }},\n}}\n"
        ),
    )
    .unwrap();
    let controls = |s: &str| {
        s.chars()
            .filter(|c| c.is_control() && !"\n\t".contains(*c))
            .count()
    };
    for format in ["human", "github"] {
        let (code, out, err) = align(root, &["--check", "--format", format]);
        assert_eq!(code, 1, "{format}: {out}{err}");
        assert!(
            out.contains("thiserror2-raw-ident-in-format"),
            "{format}: {out}"
        );
        assert_eq!(controls(&out), 0, "{format}: raw control bytes in {out:?}");
        assert_eq!(controls(&err), 0, "{format}: raw control bytes in {err:?}");
        // shown the way rustc shows them, never dropped
        assert!(out.contains("␛]0;pwned␇␛[2J"), "{format}: {out}");
    }
    // JSON keeps the text exact (escaped by JSON itself)
    let (_, out, _) = align(root, &["--check", "--format", "json"]);
    assert_eq!(controls(&out), 0, "{out:?}");
    assert!(out.contains("\\u001b]0;pwned\\u0007"), "{out}");
}

#[test]
fn a_rustfmt_that_never_answers_is_killed_at_the_time_limit() {
    let dir = tempfile::tempdir().unwrap();
    let fleet = drifted_fleet(&dir.path().join("ws"), 2).unwrap();
    let real = xtask::fmt_check::rustfmt::Rustfmt::locate().unwrap().path;
    let fake = dir.path().join("hung-rustfmt");
    std::fs::write(
        &fake,
        format!(
            "#!/bin/sh\ncase \"$1\" in --version) exec '{}' --version;; esac\nexec sleep 600\n",
            real.display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&fake, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let ws = fleet.root.to_str().unwrap();
    let env = [
        ("RUSTFMT", fake.as_os_str()),
        ("XTASK_TOOL_TIMEOUT", OsStr::new("2")),
    ];
    let start = std::time::Instant::now();
    let done = Run::start_env(&["fmt-check", "--workspace", ws], None, None, &env)
        .finish_within(Duration::from_secs(90));
    assert_eq!(done.code, Some(2), "{done:?}");
    assert!(
        done.err.contains("did not finish within 2 s"),
        "{}",
        done.err
    );
    assert!(done.err.contains("XTASK_TOOL_TIMEOUT"), "{}", done.err);
    assert!(
        start.elapsed() < Duration::from_secs(60),
        "{:?}",
        start.elapsed()
    );
}

#[test]
fn a_fifo_as_a_module_file_is_an_error_naming_it_not_a_hang() {
    let dir = tempfile::tempdir().unwrap();
    let fleet = drifted_fleet(dir.path(), 1).unwrap();
    let root = &fleet.root;
    std::fs::write(root.join("crates/c0000/src/lib.rs"), "mod stray;\n").unwrap();
    let st = Command::new("mkfifo")
        .arg(root.join("crates/c0000/src/stray.rs"))
        .status()
        .unwrap();
    assert!(st.success());
    let ws = root.to_str().unwrap();
    for args in [
        &["align-deps", "--check", "--workspace", ws][..],
        &["fmt-check", "--workspace", ws][..],
    ] {
        let done = Run::start(args, None).finish_within(Duration::from_secs(90));
        assert_eq!(done.code, Some(2), "{args:?}: {done:?}");
        assert!(
            done.err
                .contains("crates/c0000/src/stray.rs: a FIFO (named pipe), not a regular file"),
            "{args:?}: {}",
            done.err
        );
    }
}
