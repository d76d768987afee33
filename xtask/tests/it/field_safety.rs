//! The write path under fire: an edit made by someone else while
//! a fix runs, two runs at once, and a run killed (SIGKILL) at each stage of
//! its write, then recovered by the next run of any command. The timing is
//! made exact with the test-only `XTASK_TEST_HOOK` pause points; a
//! sleep-based variant races a 300-crate fleet fix.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::child::{Run, align_args, journal, xtask_files};
use crate::support::{align, crate_name, drifted_fleet, read, xtask};

/// Every manifest of a fleet of `n` crates (the root first): path -> text.
fn manifests(root: &Path, n: usize) -> BTreeMap<PathBuf, String> {
    let mut m = BTreeMap::new();
    m.insert(root.join("Cargo.toml"), read(&root.join("Cargo.toml")));
    for i in 0..n {
        let p = root.join("crates").join(crate_name(i)).join("Cargo.toml");
        m.insert(p.clone(), read(&p));
    }
    m
}

/// The manifests of a fleet of `n` before (`old`) and after a clean fix (`new`).
pub fn old_and_new(n: usize) -> (BTreeMap<String, String>, BTreeMap<String, String>) {
    let dir = tempfile::tempdir().unwrap();
    let fleet = drifted_fleet(dir.path(), n).unwrap();
    let rel = |m: BTreeMap<PathBuf, String>| -> BTreeMap<String, String> {
        m.into_iter()
            .map(|(p, t)| (crate::support::rel_to(&fleet.root, &p), t))
            .collect()
    };
    let old = rel(manifests(&fleet.root, n));
    let (code, out, err) = align(&fleet.root, &[]);
    assert_eq!(code, 0, "{out}{err}");
    (old, rel(manifests(&fleet.root, n)))
}

/// [`manifests`], relative to `root`.
pub fn rel_manifests(root: &Path, n: usize) -> BTreeMap<String, String> {
    manifests(root, n)
        .into_iter()
        .map(|(p, t)| (crate::support::rel_to(root, &p), t))
        .collect()
}

#[test]
fn a_manifest_written_during_the_fix_is_kept_and_the_replaced_files_restored() {
    let dir = tempfile::tempdir().unwrap();
    let fleet = drifted_fleet(dir.path(), 6).unwrap();
    let root = &fleet.root;
    let before = manifests(root, 6);
    // the run has replaced 2 files and is about to compare the third
    let mut run = Run::start(&align_args(root, &[]), Some("before-replace:2"));
    run.wait_paused();
    let changed: Vec<&PathBuf> = before.keys().filter(|p| read(p) != before[*p]).collect();
    assert_eq!(changed.len(), 2, "{changed:?}");
    // someone else appends to the last manifest, which the fix has not reached
    let victim = fleet.manifest(&crate_name(5));
    let edited = format!("{}# added by someone else\n", before[&victim]);
    std::fs::write(&victim, &edited).unwrap();
    run.go();
    let done = run.finish();
    assert_eq!(done.code, Some(2), "{done:?}");
    assert!(
        done.err
            .contains("crates/c0005/Cargo.toml: changed on disk while the fix ran"),
        "{}",
        done.err
    );
    assert!(done.err.contains("nothing written"), "{}", done.err);
    assert!(
        done.err.contains("already replaced were restored"),
        "{}",
        done.err
    );
    for (p, text) in &before {
        let want = if *p == victim { &edited } else { text };
        assert_eq!(&read(p), want, "{}", p.display());
    }
    assert_eq!(xtask_files(root), Vec::<PathBuf>::new());
    assert!(!journal(root).exists());
}

#[test]
fn stress_an_append_racing_a_300_crate_fix_is_never_lost() {
    const N: usize = 300;
    for delay_ms in [0u64, 150, 400, 900] {
        let dir = tempfile::tempdir().unwrap();
        let fleet = drifted_fleet(dir.path(), N).unwrap();
        let root = &fleet.root;
        let before = manifests(root, N);
        let run = Run::start(&align_args(root, &[]), None);
        std::thread::sleep(Duration::from_millis(delay_ms));
        let victim = fleet.manifest(&crate_name(150));
        let mut f = std::fs::OpenOptions::new()
            .append(true)
            .open(&victim)
            .unwrap();
        std::io::Write::write_all(&mut f, b"# appended during the run\n").unwrap();
        drop(f);
        let done = run.finish();
        assert!(
            read(&victim).contains("# appended during the run"),
            "delay {delay_ms}: the append was lost; {done:?}"
        );
        match done.code {
            Some(0) => {}
            Some(2) => {
                assert!(
                    done.err.contains("crates/c0150/Cargo.toml"),
                    "delay {delay_ms}: {}",
                    done.err
                );
                for (p, text) in &before {
                    if *p != victim {
                        assert_eq!(&read(p), text, "delay {delay_ms}: {}", p.display());
                    }
                }
            }
            _ => panic!("delay {delay_ms}: {done:?}"),
        }
        assert_eq!(xtask_files(root), Vec::<PathBuf>::new(), "delay {delay_ms}");
    }
}

#[test]
fn a_second_run_waits_for_the_first_and_then_finds_nothing_to_do() {
    let dir = tempfile::tempdir().unwrap();
    let fleet = drifted_fleet(dir.path(), 4).unwrap();
    let root = &fleet.root;
    let (_, new) = old_and_new(4);
    let mut first = Run::start(&align_args(root, &[]), Some("before-replace:1"));
    first.wait_paused();
    let mut second = Run::start(&align_args(root, &[]), None);
    second.wait_for_err("waiting for it");
    first.go();
    let (a, b) = (first.finish(), second.finish());
    assert_eq!(a.code, Some(0), "{a:?}");
    assert_eq!(b.code, Some(0), "{b:?}");
    assert!(b.err.contains("got the workspace lock"), "{}", b.err);
    assert!(b.out.contains("nothing to change"), "{}", b.out);
    assert_eq!(rel_manifests(root, 4), new);
}

/// Kills a fix of a 6-crate fleet at `point`, then runs `rerun`: returns
/// (what the kill left: `.xtask-*` files and maybe the journal, the rerun's
/// exit code and stderr, the fixture).
fn kill_at(point: &str, rerun: &[&str]) -> (Vec<PathBuf>, i32, String, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let fleet = drifted_fleet(dir.path(), 6).unwrap();
    let root = fleet.root.clone();
    let mut run = Run::start(&align_args(&root, &[]), Some(point));
    run.wait_paused();
    let killed = run.kill9();
    assert_eq!(killed.code, None, "{killed:?}");
    let mut left = xtask_files(&root);
    if journal(&root).exists() {
        left.push(journal(&root));
    }
    // a temporary file of somebody else's: no journal names it
    let stray = root.join("crates/c0000/.xtask-someone-else.tmp");
    std::fs::write(&stray, "not ours").unwrap();
    let mut args: Vec<&str> = rerun.to_vec();
    let ws = root.to_str().unwrap().to_string();
    args.extend(["--workspace", &ws]);
    let (code, _, err) = xtask(&args);
    assert_eq!(read(&stray), "not ours", "{point}");
    std::fs::remove_file(&stray).unwrap();
    (left, code, err, dir)
}

#[test]
fn a_fix_killed_at_any_stage_is_settled_by_the_next_run_of_any_command() {
    let n = 6;
    let (old, new) = old_and_new(n);
    // (kill point, rerun command, rolled forward, the rerun's own exit code:
    // fmt-check finds the fixture's empty lib.rs files unformatted)
    let cases: [(&str, &[&str], bool, i32); 6] = [
        ("after-staging", &["align-deps", "--check"], false, 1),
        ("after-journal", &["fmt-check"], true, 1),
        ("before-replace:1", &["gpu-test"], true, 0),
        ("before-replace:3", &["align-deps"], true, 0),
        ("before-replace:5", &["align-deps", "--check"], true, 0),
        ("after-replaces", &["align-deps", "--check"], true, 0),
    ];
    for (point, rerun, forward, want) in cases {
        let (left, code, err, dir) = kill_at(point, rerun);
        let root = dir.path();
        assert!(
            left.iter().any(|p| p.ends_with("journal.json")),
            "{point}: the kill left no journal: {left:?}"
        );
        if point != "after-replaces" {
            assert!(left.len() > 1, "{point}: no temporary file left: {left:?}");
        }
        assert!(
            err.contains("xtask: recovering an interrupted run"),
            "{point}: {err}"
        );
        assert_eq!(code, want, "{point}: {err}");
        let now = rel_manifests(root, n);
        if forward {
            assert_eq!(now, new, "{point}: not rolled forward; {err}");
            assert!(err.contains("rolled forward"), "{point}: {err}");
        } else {
            assert_eq!(now, old, "{point}: a file changed; {err}");
            assert!(err.contains("no file had been replaced"), "{point}: {err}");
        }
        assert!(err.contains("removed"), "{point}: {err}");
        assert_eq!(xtask_files(root), Vec::<PathBuf>::new(), "{point}");
        assert!(!journal(root).exists(), "{point}");
    }
}

#[test]
fn recovery_does_not_finish_a_fix_over_a_file_edited_after_the_kill() {
    let n = 4;
    let (old, _) = old_and_new(n);
    let dir = tempfile::tempdir().unwrap();
    let fleet = drifted_fleet(dir.path(), n).unwrap();
    let root = &fleet.root;
    let mut run = Run::start(&align_args(root, &[]), Some("before-replace:1"));
    run.wait_paused();
    run.kill9();
    let victim = fleet.manifest(&crate_name(3));
    let edited = format!("{}# edited after the crash\n", read(&victim));
    std::fs::write(&victim, &edited).unwrap();
    let (code, _, err) = align(root, &["--check"]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("crates/c0003/Cargo.toml: holds neither"),
        "{err}"
    );
    assert!(err.contains("was not finished"), "{err}");
    assert_eq!(read(&victim), edited);
    // the file the run had replaced got its text back; none was rolled forward
    for (rel, text) in rel_manifests(root, n) {
        if rel != "crates/c0003/Cargo.toml" {
            assert_eq!(text, old[&rel], "{rel}");
        }
    }
    assert_eq!(xtask_files(root), Vec::<PathBuf>::new());
    assert!(!journal(root).exists());
    // settled: the next run goes on
    let (code, out, err) = align(root, &["--check"]);
    assert_ne!(code, 2, "{out}{err}");
    assert!(!err.contains("recovering"), "{err}");
}
