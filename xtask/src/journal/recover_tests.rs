//! Unit tests of [`super::recover`]: hand-made journals, as a killed run or
//! someone else would leave them.

use std::path::{Path, PathBuf};

use super::*;

/// A workspace (canonical root) and a state directory.
fn dirs() -> (tempfile::TempDir, PathBuf, tempfile::TempDir) {
    let ws = tempfile::tempdir().unwrap();
    let root = ws.path().canonicalize().unwrap();
    (ws, root, tempfile::tempdir().unwrap())
}

const RUN: &str = "42-abc";

/// File `n` of a journal: `name` in `root`, as it is on disk now.
fn entry(root: &Path, n: usize, name: &str, old: &str, new: &str) -> Entry {
    let target = root.join(name);
    Entry {
        rel: name.into(),
        temp: temp_name(&target, RUN, n),
        new_hash: record::hash(new.as_bytes()),
        before: Ident::of(&std::fs::metadata(&target).unwrap()),
        target,
        old: Some(old.into()),
        new: Some(new.into()),
    }
}

fn journal(root: &Path, state: State, files: Vec<Entry>) -> Journal {
    Journal {
        tool: record::TOOL.into(),
        version: record::VERSION,
        workspace: root.into(),
        run: RUN.into(),
        state,
        files,
    }
}

fn read(p: &Path) -> String {
    std::fs::read_to_string(p).unwrap()
}

#[test]
fn committed_rolls_forward_when_every_file_is_the_one_planned_from() {
    let (_ws, d, state) = dirs();
    std::fs::write(d.join("a"), "old a").unwrap();
    std::fs::write(d.join("b"), "old b").unwrap();
    let files = vec![
        entry(&d, 0, "a", "old a", "new a"),
        entry(&d, 1, "b", "old b", "new b"),
    ];
    std::fs::write(d.join("b"), "new b").unwrap(); // replaced before the kill
    std::fs::write(&files[0].temp, "new a").unwrap();
    std::fs::write(d.join(".xtask-other.tmp"), "not ours").unwrap();
    record::write(state.path(), &journal(&d, State::Committed, files)).unwrap();
    let mut msg = Vec::new();
    recover(state.path(), &d, &mut msg).unwrap();
    let msg = String::from_utf8(msg).unwrap();
    assert!(
        msg.contains("1 file(s) rolled forward, 1 already done, 0 left alone"),
        "{msg}"
    );
    assert_eq!(read(&d.join("a")), "new a");
    assert_eq!(read(&d.join("b")), "new b");
    assert!(!d.join(format!(".xtask-{RUN}-0.tmp")).exists());
    assert!(d.join(".xtask-other.tmp").exists());
    assert!(!record::exists(state.path()));
    recover(state.path(), &d, &mut Vec::new()).unwrap();
}

#[test]
fn committed_with_a_file_changed_since_undoes_the_fix_and_names_it() {
    let (_ws, d, state) = dirs();
    for n in ["a", "b", "c", "g"] {
        std::fs::write(d.join(n), format!("old {n}")).unwrap();
    }
    let files = vec![
        entry(&d, 0, "a", "old a", "new a"),
        entry(&d, 1, "b", "old b", "new b"),
        entry(&d, 2, "c", "old c", "new c"),
        entry(&d, 3, "g", "old g", "new g"),
    ];
    std::fs::write(d.join("a"), "new a").unwrap(); // replaced before the kill
    std::fs::write(d.join("c"), "someone else's").unwrap();
    // `git checkout`: the same text as before the run, in a new file
    std::fs::remove_file(d.join("g")).unwrap();
    std::thread::sleep(std::time::Duration::from_millis(20));
    std::fs::write(d.join("g"), "old g").unwrap();
    record::write(state.path(), &journal(&d, State::Committed, files)).unwrap();
    let mut msg = Vec::new();
    let e = recover(state.path(), &d, &mut msg).unwrap_err().to_string();
    let msg = String::from_utf8(msg).unwrap();
    assert!(e.contains("was not finished"), "{e}");
    assert!(e.contains("c: holds neither"), "{e}");
    assert!(e.contains("g: rewritten since"), "{e}");
    assert!(msg.contains("restored (the fix is undone) a"), "{msg}");
    assert_eq!(read(&d.join("a")), "old a");
    assert_eq!(read(&d.join("b")), "old b");
    assert_eq!(read(&d.join("c")), "someone else's");
    assert_eq!(read(&d.join("g")), "old g");
    assert!(!record::exists(state.path()));
}

#[test]
fn a_recorded_decision_to_roll_back_is_finished_not_reversed() {
    let (_ws, d, state) = dirs();
    std::fs::write(d.join("a"), "old a").unwrap();
    std::fs::write(d.join("b"), "old b").unwrap();
    let files = vec![
        entry(&d, 0, "a", "old a", "new a"),
        entry(&d, 1, "b", "old b", "new b"),
    ];
    std::fs::write(d.join("a"), "new a").unwrap();
    record::write(state.path(), &journal(&d, State::Committed, files)).unwrap();
    record::prepare_rollback(state.path(), RUN).unwrap();
    // prepared only: still a roll forward
    assert!(!record::rollback_decided(state.path(), RUN));
    record::decide_rollback(state.path()).unwrap();
    let mut msg = Vec::new();
    recover(state.path(), &d, &mut msg).unwrap();
    let msg = String::from_utf8(msg).unwrap();
    assert!(msg.contains("finishing the restore"), "{msg}");
    assert_eq!(read(&d.join("a")), "old a");
    assert_eq!(read(&d.join("b")), "old b");
    assert!(!state.path().join("rollback").exists());
}

/// A journal refused with nothing touched: the message has `why`.
fn refused(d: &Path, state: &Path, j: &Journal, why: &str) {
    record::write(state, j).unwrap();
    let e = recover(state, d, &mut Vec::new()).unwrap_err().to_string();
    assert!(e.contains(why), "{e}");
    assert!(e.contains("nothing was touched"), "{e}");
    assert!(record::exists(state));
}

#[test]
fn a_journal_it_cannot_vouch_for_is_refused_and_nothing_is_touched() {
    let (_ws, d, state) = dirs();
    let outside = tempfile::tempdir().unwrap();
    let out = outside.path().canonicalize().unwrap();
    std::fs::write(out.join("precious"), "keep").unwrap();
    std::fs::write(d.join("Cargo.toml"), "[workspace]").unwrap();
    std::fs::write(d.join("notes.txt"), "mine").unwrap();
    // staging: temporary files outside the workspace, and a file of the
    // workspace that is no temporary file
    let mut j = journal(&d, State::Staging, vec![]);
    let mut e = entry(&out, 0, "precious", "", "keep");
    e.rel = "precious".into();
    j.files = vec![e];
    refused(&d, state.path(), &j, "is not where");
    let mut e = entry(&d, 0, "Cargo.toml", "", "x");
    e.temp = d.join("notes.txt");
    j.files = vec![e];
    refused(&d, state.path(), &j, "is not the one xtask would have made");
    let mut e = entry(&d, 0, "Cargo.toml", "", "x");
    e.rel = "../x/Cargo.toml".into();
    j.files = vec![e];
    refused(&d, state.path(), &j, "not a path inside the workspace");
    // another workspace's, another run id form
    j.files = vec![entry(&d, 0, "Cargo.toml", "[workspace]", "GARBAGE")];
    j.state = State::Committed;
    j.workspace = out.clone();
    refused(&d, state.path(), &j, "not of this one");
    j.workspace = d.clone();
    j.run = "../../x".into();
    refused(&d, state.path(), &j, "not of xtask's form");
    assert_eq!(read(&out.join("precious")), "keep");
    assert_eq!(read(&d.join("notes.txt")), "mine");
    assert_eq!(read(&d.join("Cargo.toml")), "[workspace]");
}

#[test]
fn a_temporary_file_is_deleted_only_when_it_holds_what_the_run_wrote() {
    let (_ws, d, state) = dirs();
    std::fs::write(d.join("a"), "old a").unwrap();
    std::fs::write(d.join("b"), "old b").unwrap();
    let files = vec![
        entry(&d, 0, "a", "", "new a"),
        entry(&d, 1, "b", "", "new b"),
    ];
    std::fs::write(&files[0].temp, "new a").unwrap();
    std::fs::write(&files[1].temp, "someone's own file of that name").unwrap();
    let temps = (files[0].temp.clone(), files[1].temp.clone());
    let mut j = journal(&d, State::Staging, files);
    for e in &mut j.files {
        e.old = None;
        e.new = None;
    }
    record::write(state.path(), &j).unwrap();
    let mut msg = Vec::new();
    recover(state.path(), &d, &mut msg).unwrap();
    let msg = String::from_utf8(msg).unwrap();
    assert!(!temps.0.exists());
    assert_eq!(read(&temps.1), "someone's own file of that name");
    assert!(
        msg.contains("not holding what the run wrote there"),
        "{msg}"
    );
    assert!(msg.contains("removed 1 leftover"), "{msg}");
}
