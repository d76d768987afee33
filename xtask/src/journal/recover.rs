//! Settling the journal of a run that was killed (SIGKILL, power loss, a
//! full disk), by the next run of any command, under the workspace lock.
//!
//! A journal is an input like any other (a repository, an artifact cache or
//! a shared target directory can carry one), so it is vouched for first
//! ([`vouch`]): written by this xtask's format, for this workspace, every
//! file reached through a path inside the workspace (a link of the workspace
//! may lead outside: the file it points to is the one), every temporary
//! file named `.xtask-<run>-<n>.tmp` beside its file. Anything else refuses
//! the whole journal (exit 2) with nothing touched.
//!
//! Then, by the run's last decision:
//! - "staging": no file was replaced; its temporary files are deleted.
//! - "committed": when every file is either still the very file the run
//!   planned from (same text, same file: not rewritten since, even with the
//!   same text as `git checkout` does) or holds the new text, the fix is
//!   finished (rolled forward). When any file was changed since, the fix is
//!   not finished over it: the files holding the new text get the old text
//!   back, the changed ones are left alone and named (exit 2).
//! - "rolling-back" (or "committed" with the decision to roll back recorded
//!   beside it, see [`record::decide_rollback`]): each file that holds the
//!   new text gets the old one back; one holding neither text is left alone
//!   and named (exit 2).
//!
//! A temporary file is deleted (or rewritten) only when it holds what the
//! journal recorded (the new text's hash, or the old text a rollback was
//! writing); a file of that name holding anything else (someone's, or a part
//! written by a run killed in the middle of it) is left and named. A file that cannot be
//! written now (a full disk) keeps the journal for the next run. Nothing
//! else is touched: a stray `.xtask-*.tmp` that no journal names may be
//! someone else's.

use std::collections::BTreeSet;
use std::io::Write;
use std::path::Path;

use anyhow::bail;

use super::record::{self, Entry, Ident, Journal, State};
use super::txn::{Owner, parent, temp_name, write_temp};

/// What one file holds now, against the journal.
enum Now {
    /// The very file planned from, with its text.
    Planned,
    /// The text before the run (a committed journal: a file rewritten since).
    OldText,
    /// The new text.
    New,
    /// Anything else (or gone), with why.
    Other(String),
}

/// Recovers the journal in `dir`, if any, for the workspace whose canonical
/// root is `root`, saying on `err` what it did.
///
/// # Errors
/// A journal that cannot be read or vouched for (nothing touched), files
/// changed since the interrupted run (named, left alone), or files that
/// cannot be written now (the journal is kept).
pub fn recover(dir: &Path, root: &Path, err: &mut dyn Write) -> anyhow::Result<()> {
    let Some(journal) = record::read(dir)? else {
        return Ok(());
    };
    if let Err(why) = vouch(&journal, root) {
        bail!(
            "{}: {why}; xtask cannot vouch for this journal, so nothing was touched (check the files it names, then move it away to go on)",
            record::path(dir).display()
        );
    }
    let state = if journal.state == State::Committed && record::rollback_decided(dir, &journal.run)
    {
        State::RollingBack
    } else {
        journal.state
    };
    let what = match state {
        State::Staging => "killed while staging its temporary files; no file had been replaced",
        State::Committed => "killed while replacing files; finishing its fix (roll forward)",
        State::RollingBack => "stopped while restoring files; finishing the restore (roll back)",
    };
    let _ = writeln!(
        err,
        "xtask: recovering an interrupted run ({}, journal {}): {what}",
        journal.run,
        record::path(dir).display()
    );
    let mut settled = Settled::default();
    match state {
        State::Staging => {}
        State::Committed => roll_forward(&journal, &mut settled),
        State::RollingBack => {
            for e in &journal.files {
                match now(e, false) {
                    Now::New => settled.write(e, Text::Old),
                    Now::Planned | Now::OldText => settled.already += 1,
                    Now::Other(why) => settled.changed.push(why),
                }
            }
            settled.verb = "restored";
        }
    }
    let (removed, strange) = remove_temps(&journal);
    let dirs: BTreeSet<&Path> = journal.files.iter().map(|e| parent(&e.target)).collect();
    for d in dirs {
        let _ = record::sync_dir(d);
    }
    // names come from the journal: shown as the diagnostics show text
    let shown = |s: &str| crate::diag::escape_controls(s).into_owned();
    for rel in &settled.moved {
        let _ = writeln!(err, "xtask:   {} {}", settled.verb, shown(rel));
    }
    for s in &strange {
        let _ = writeln!(err, "xtask:   left {}", shown(s));
    }
    if !settled.failed.is_empty() {
        bail!(
            "the interrupted run could not be settled: {}; the journal is kept, so the next run of any xtask command finishes it (free the space or fix the cause first)",
            settled.failed.join("; ")
        );
    }
    record::remove(dir)?;
    let _ = writeln!(
        err,
        "xtask: recovered: {} file(s) {}, {} already done, {} left alone; removed {removed} leftover temporary file(s) and the journal",
        settled.moved.len(),
        settled.verb,
        settled.already,
        settled.changed.len()
    );
    if !settled.changed.is_empty() {
        bail!("{}: {}", settled.headline, settled.changed.join("; "));
    }
    Ok(())
}

/// Which recorded text a file is brought to.
#[derive(Clone, Copy)]
enum Text {
    Old,
    New,
}

/// What the recovery did to the files.
struct Settled<'j> {
    /// Rewritten, by `rel`.
    moved: Vec<&'j str>,
    verb: &'static str,
    already: usize,
    /// Left alone: changed since the run (named, why).
    changed: Vec<String>,
    /// Could not be written now (named, why).
    failed: Vec<String>,
    /// The error's first words when files are left alone.
    headline: &'static str,
}

impl Default for Settled<'_> {
    fn default() -> Self {
        Settled {
            moved: Vec::new(),
            verb: "rolled forward",
            already: 0,
            changed: Vec::new(),
            failed: Vec::new(),
            headline: "the interrupted run's files were settled except these, left as they are (check them, then run again)",
        }
    }
}

impl<'j> Settled<'j> {
    /// Brings `e`'s file to `text` through its temporary file (the staged
    /// one when it already holds the new text).
    fn write(&mut self, e: &'j Entry, text: Text) {
        let (Some(old), Some(new)) = (&e.old, &e.new) else {
            return;
        };
        let to = match text {
            Text::Old => old,
            Text::New => new,
        };
        let md = match std::fs::metadata(&e.target) {
            Ok(m) => m,
            Err(err) => {
                return self
                    .failed
                    .push(format!("{}: cannot read it: {err}", e.rel));
            }
        };
        let staged = matches!(text, Text::New) && is_ours(&e.temp, e, false);
        // a file of the temporary name that is not the run's is not
        // overwritten (a run killed while writing it leaves a part)
        if !staged && std::fs::symlink_metadata(&e.temp).is_ok() && !is_ours(&e.temp, e, true) {
            return self.failed.push(format!(
                "{}: its temporary file {} exists and does not hold what the run wrote there; \
                 not overwritten (delete it if it is a leftover)",
                e.rel,
                e.temp.display()
            ));
        }
        let ready = if staged {
            Ok(())
        } else {
            crate::fsutil::xattrs(&e.target).and_then(|xattrs| {
                write_temp(
                    &e.temp,
                    to.as_bytes(),
                    &md.permissions(),
                    Owner::of(&md),
                    &xattrs,
                    false,
                )
            })
        };
        match ready.and_then(|()| std::fs::rename(&e.temp, &e.target)) {
            Ok(()) => self.moved.push(&e.rel),
            Err(err) => {
                let _ = std::fs::remove_file(&e.temp);
                self.failed
                    .push(format!("{}: cannot write it: {err}", e.rel));
            }
        }
    }
}

/// A committed journal: finishes the fix when no file was changed since,
/// else undoes it and names the changed files.
fn roll_forward<'j>(journal: &'j Journal, settled: &mut Settled<'j>) {
    let states: Vec<Now> = journal.files.iter().map(|e| now(e, true)).collect();
    let changed: Vec<String> = journal
        .files
        .iter()
        .zip(&states)
        .filter_map(|(e, s)| match s {
            Now::OldText => Some(format!(
                "{}: rewritten since the interrupted run planned from it (it holds the text from before the run, but is not the same file: restored by hand or by `git checkout`?)",
                e.rel
            )),
            Now::Other(why) => Some(why.clone()),
            _ => None,
        })
        .collect();
    if changed.is_empty() {
        for (e, s) in journal.files.iter().zip(&states) {
            match s {
                Now::Planned => settled.write(e, Text::New),
                _ => settled.already += 1,
            }
        }
        return;
    }
    // never finish a fix over someone's changes: undo it instead
    settled.verb = "restored (the fix is undone)";
    settled.headline = "the interrupted run's fix was not finished, because files it planned from were changed since; the files it had replaced got their text back, these are left as they are (check them, then run again)";
    for (e, s) in journal.files.iter().zip(&states) {
        match s {
            Now::New => settled.write(e, Text::Old),
            Now::Planned => settled.already += 1,
            _ => {}
        }
    }
    settled.changed = changed;
}

/// What `e`'s file holds now; `committed`: tell the very file planned from
/// from a file rewritten since with the same text.
fn now(e: &Entry, committed: bool) -> Now {
    let (Some(old), Some(new)) = (&e.old, &e.new) else {
        return Now::Other(format!("{}: the journal lacks its texts", e.rel));
    };
    let text = match std::fs::read(&e.target) {
        Ok(b) => b,
        Err(err) => return Now::Other(format!("{}: cannot read it: {err}", e.rel)),
    };
    if text == new.as_bytes() {
        return Now::New;
    }
    if text != old.as_bytes() {
        return Now::Other(format!(
            "{}: holds neither the text before nor the text after the interrupted run (edited since?)",
            e.rel
        ));
    }
    let same = std::fs::metadata(&e.target).is_ok_and(|m| Ident::of(&m) == e.before);
    if committed && !same {
        Now::OldText
    } else {
        Now::Planned
    }
}

/// Whether `temp` is a regular file (not a link) holding what the journal
/// recorded for `e`: the new text, or (`or_old`) the old one.
fn is_ours(temp: &Path, e: &Entry, or_old: bool) -> bool {
    if !std::fs::symlink_metadata(temp).is_ok_and(|m| m.file_type().is_file()) {
        return false;
    }
    let Ok(text) = std::fs::read(temp) else {
        return false;
    };
    record::hash(&text) == e.new_hash
        || (or_old && e.old.as_deref().map(str::as_bytes) == Some(&text[..]))
}

/// Deletes the temporary files the journal names that hold what it
/// recorded; how many there were, and the others (named, left).
fn remove_temps(journal: &Journal) -> (usize, Vec<String>) {
    let mut removed = 0;
    let mut strange = Vec::new();
    for e in &journal.files {
        if std::fs::symlink_metadata(&e.temp).is_err() {
            continue;
        }
        if is_ours(&e.temp, e, true) && std::fs::remove_file(&e.temp).is_ok() {
            removed += 1;
        } else {
            strange.push(format!(
                "{}: named in the journal but not holding what the run wrote there; not deleted",
                e.temp.display()
            ));
        }
    }
    (removed, strange)
}

/// Why the journal cannot be trusted, if it cannot: see the module docs.
pub fn vouch(journal: &Journal, root: &Path) -> Result<(), String> {
    if journal.workspace != root {
        return Err(format!(
            "it is the journal of the workspace {}, not of this one ({})",
            journal.workspace.display(),
            root.display()
        ));
    }
    let run_ok = journal.run.split_once('-').is_some_and(|(pid, t)| {
        !pid.is_empty()
            && pid.bytes().all(|b| b.is_ascii_digit())
            && !t.is_empty()
            && t.bytes().all(|b| b.is_ascii_hexdigit())
    });
    if !run_ok {
        return Err(format!("run id {:?} is not of xtask's form", journal.run));
    }
    for (n, e) in journal.files.iter().enumerate() {
        let rel = Path::new(&e.rel);
        if !crate::fsutil::is_inside_rel(&e.rel) {
            return Err(format!(
                "file {:?} is not a path inside the workspace",
                e.rel
            ));
        }
        if e.temp != temp_name(&e.target, &journal.run, n) {
            return Err(format!(
                "{}: its temporary file {} is not the one xtask would have made (.xtask-{}-{n}.tmp beside it)",
                e.rel,
                e.temp.display(),
                journal.run
            ));
        }
        let path = root.join(rel);
        let leads_there = match (
            std::fs::canonicalize(&path),
            std::fs::canonicalize(&e.target),
        ) {
            (Ok(a), Ok(b)) => a == b,
            // a file of the workspace deleted since
            (Err(_), _) => e.target == path,
            (Ok(_), Err(_)) => false,
        };
        if !leads_there {
            return Err(format!(
                "{}: names {}, which is not where {} leads",
                e.rel,
                e.target.display(),
                path.display()
            ));
        }
        if journal.state != State::Staging && (e.old.is_none() || e.new.is_none()) {
            return Err(format!("{}: the committed journal lacks its texts", e.rel));
        }
    }
    Ok(())
}

#[cfg(test)]
#[path = "recover_tests.rs"]
mod tests;
