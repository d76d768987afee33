//! Settling the journal of a run that was killed (SIGKILL, power loss), by
//! the next run of any command, under the workspace lock:
//!
//! - "staging": no file was replaced; its temporary files are deleted.
//! - "committed": each file that still holds its old text gets the new one
//!   (rolled forward); one that already holds the new text is left as is.
//! - "rolling-back": each file that holds the new text gets the old one back.
//!
//! A file holding neither text (edited since) is left alone and named: the
//! recovery is then an error (exit 2). Every temporary file the journal
//! names is deleted, then the journal. Nothing else is touched: a stray
//! `.xtask-*.tmp` that no journal names may be someone else's.

use std::collections::BTreeSet;
use std::io::Write;
use std::path::Path;

use anyhow::bail;

use super::record::{self, Entry, Journal, State};
use super::txn::{parent, write_temp};

/// What became of one file.
enum Fate {
    /// Now holds the text the journal's state asks for (it was rewritten).
    Moved,
    /// Already held it.
    Already,
    /// Holds neither text: left alone.
    Neither(String),
}

/// Recovers the journal in `dir`, if any, saying on `err` what it did.
///
/// # Errors
/// An unreadable journal, or files left alone (named).
pub fn recover(dir: &Path, err: &mut dyn Write) -> anyhow::Result<()> {
    let Some(journal) = record::read(dir)? else {
        return Ok(());
    };
    let what = match journal.state {
        State::Staging => "killed while staging its temporary files; no file had been replaced",
        State::Committed => "killed while replacing files; finishing its fix (roll forward)",
        State::RollingBack => "killed while restoring files; finishing the restore (roll back)",
    };
    let _ = writeln!(
        err,
        "xtask: recovering an interrupted run ({}, journal {}): {what}",
        journal.run,
        record::path(dir).display()
    );
    let mut moved = Vec::new();
    let mut already = 0;
    let mut neither = Vec::new();
    if journal.state != State::Staging {
        for e in &journal.files {
            match settle(e, journal.state) {
                Fate::Moved => moved.push(e.rel.as_str()),
                Fate::Already => already += 1,
                Fate::Neither(why) => neither.push(why),
            }
        }
    }
    let removed = remove_temps(&journal);
    let dirs: BTreeSet<&Path> = journal.files.iter().map(|e| parent(&e.target)).collect();
    for d in dirs {
        let _ = record::sync_dir(d);
    }
    record::remove(dir)?;
    let verb = if journal.state == State::RollingBack {
        "restored"
    } else {
        "rolled forward"
    };
    for rel in &moved {
        let _ = writeln!(err, "xtask:   {verb} {rel}");
    }
    let _ = writeln!(
        err,
        "xtask: recovered: {} file(s) {verb}, {already} already done, {} left alone; removed {removed} leftover temporary file(s) and the journal",
        moved.len(),
        neither.len()
    );
    if !neither.is_empty() {
        bail!(
            "the interrupted run's files were settled except these, left as they are (check them, then run again): {}",
            neither.join("; ")
        );
    }
    Ok(())
}

/// Brings one file to the text `state` asks for.
fn settle(e: &Entry, state: State) -> Fate {
    let (Some(old), Some(new)) = (&e.old, &e.new) else {
        return Fate::Neither(format!("{}: the journal lacks its texts", e.rel));
    };
    let (from, to) = if state == State::RollingBack {
        (new, old)
    } else {
        (old, new)
    };
    let now = match std::fs::read(&e.target) {
        Ok(b) => b,
        Err(err) => return Fate::Neither(format!("{}: cannot read it: {err}", e.rel)),
    };
    if now == to.as_bytes() {
        return Fate::Already;
    }
    if now != from.as_bytes() {
        return Fate::Neither(format!(
            "{}: holds neither the text before nor the text after the interrupted run (edited since?)",
            e.rel
        ));
    }
    let perms = match std::fs::metadata(&e.target) {
        Ok(m) => m.permissions(),
        Err(err) => return Fate::Neither(format!("{}: cannot read it: {err}", e.rel)),
    };
    // the staged file when it holds the text, else the journal's own
    // temporary name rewritten: a kill now leaves the journal, and the next
    // recovery does this again
    let staged =
        state == State::Committed && std::fs::read(&e.temp).is_ok_and(|t| t == to.as_bytes());
    let ready = if staged {
        Ok(())
    } else {
        write_temp(&e.temp, to.as_bytes(), &perms, false)
    };
    match ready.and_then(|()| std::fs::rename(&e.temp, &e.target)) {
        Ok(()) => Fate::Moved,
        Err(err) => Fate::Neither(format!("{}: cannot write it: {err}", e.rel)),
    }
}

/// Deletes the temporary files the journal names; how many there were.
fn remove_temps(journal: &Journal) -> usize {
    journal
        .files
        .iter()
        .filter(|e| std::fs::remove_file(&e.temp).is_ok())
        .count()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(d: &Path, name: &str, old: &str, new: &str) -> Entry {
        Entry {
            rel: name.into(),
            target: d.join(name),
            temp: d.join(format!(".xtask-r-{name}.tmp")),
            old: Some(old.into()),
            new: Some(new.into()),
        }
    }

    #[test]
    fn committed_rolls_forward_and_names_what_it_cannot() {
        let ws = tempfile::tempdir().unwrap();
        let state = tempfile::tempdir().unwrap();
        let d = ws.path();
        std::fs::write(d.join("a"), "old a").unwrap();
        std::fs::write(d.join("b"), "new b").unwrap();
        std::fs::write(d.join("c"), "someone else's").unwrap();
        std::fs::write(d.join(".xtask-r-a.tmp"), "new a").unwrap();
        std::fs::write(d.join(".xtask-other.tmp"), "not ours").unwrap();
        let j = Journal {
            version: 1,
            run: "r".into(),
            state: State::Committed,
            files: vec![
                entry(d, "a", "old a", "new a"),
                entry(d, "b", "old b", "new b"),
                entry(d, "c", "old c", "new c"),
            ],
        };
        record::write(state.path(), &j).unwrap();
        let mut msg = Vec::new();
        let e = recover(state.path(), &mut msg).unwrap_err().to_string();
        let msg = String::from_utf8(msg).unwrap();
        assert!(e.contains("c: holds neither"), "{e}");
        assert!(msg.contains("rolled forward a"), "{msg}");
        assert!(msg.contains("1 file(s) rolled forward, 1 already done, 1 left alone"));
        assert_eq!(std::fs::read_to_string(d.join("a")).unwrap(), "new a");
        assert_eq!(
            std::fs::read_to_string(d.join("c")).unwrap(),
            "someone else's"
        );
        assert!(!d.join(".xtask-r-a.tmp").exists());
        assert!(d.join(".xtask-other.tmp").exists());
        assert!(!record::exists(state.path()));
        // nothing left to do
        recover(state.path(), &mut Vec::new()).unwrap();
    }
}
