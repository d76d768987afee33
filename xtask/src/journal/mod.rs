//! Field safety of the commands that write people's files (`align-deps`,
//! `fmt-check --fix`): one run at a time per workspace, and a multi-file
//! write that a kill at any instant cannot leave half done for good.
//!
//! - [`lock`]: the workspace lock (an exclusive `flock`); a second run waits
//!   for it (saying so) and gives up after [`lock::WAIT`].
//! - [`record`]: the journal (intent log): which temporary files a run
//!   creates, and, once committed, each file's text before and after.
//! - [`txn`]: the write itself: links resolved, read-only files refused,
//!   every file compared with the text planned from right before it is
//!   replaced, rollback on any failure.
//! - [`recover`]: what the next run of any command does with the journal of
//!   a run that was killed.
//! - [`hook`]: the test-only pause points (`XTASK_TEST_HOOK`).
//!
//! # Where the lock and the journal live
//! In `<target dir>/xtask/` (the target directory `cargo metadata` reports:
//! `target/` unless `CARGO_TARGET_DIR` or `build.target-dir` says otherwise).
//! Every command already asks cargo for the workspace's metadata, so it
//! finds the place with no extra work; version control ignores it in every
//! Rust repository; cargo keeps its own build lock there. A dot directory in
//! the workspace root would show up in `git status` of every user. The price:
//! a run killed and rerun with another target directory does not see the
//! journal (its temporary files stay, named in the journal it left), and
//! `cargo clean` after a kill deletes the journal.
//!
//! A leaf apart from [`crate::fsutil`]: the commands and [`crate::edit`] use it.

pub(crate) mod hook;
pub(crate) mod lock;
pub(crate) mod record;
pub(crate) mod recover;
pub(crate) mod txn;

use std::io::Write;
use std::path::{Path, PathBuf};

/// The directory of the lock and the journal for a workspace whose target
/// directory is `target_directory`.
pub fn state_dir(target_directory: &Path) -> PathBuf {
    target_directory.join("xtask")
}

/// The workspace lock, held by a running command, with any interrupted run
/// already recovered. Dropping it releases the lock.
#[derive(Debug)]
pub struct Guard {
    dir: PathBuf,
    /// `None`: a read-only run that could not create the state directory
    /// (and found no journal there), so it runs unlocked.
    lock: Option<lock::Lock>,
}

impl Guard {
    /// Takes the lock of the workspace whose target directory is
    /// `target_directory` (waiting for another run to finish, with a message
    /// on `err`), then recovers an interrupted run, saying on `err` what it did.
    ///
    /// `writing`: the command may write files. A run that only reads goes
    /// on without the lock when the state directory cannot be created (a
    /// read-only checkout) and holds no journal.
    ///
    /// # Errors
    /// The lock cannot be taken (or was held too long by another run), or
    /// the recovery found a file it cannot settle (exit 2, naming it).
    pub fn acquire(
        target_directory: &Path,
        writing: bool,
        err: &mut dyn Write,
    ) -> anyhow::Result<Guard> {
        let dir = state_dir(target_directory);
        let lock = match lock::Lock::open(&dir) {
            Ok(l) => l,
            Err(_) if !writing && !record::exists(&dir) => return Ok(Guard { dir, lock: None }),
            Err(e) => return Err(e),
        };
        let lock = lock.wait(err)?;
        recover::recover(&dir, err)?;
        Ok(Guard {
            dir,
            lock: Some(lock),
        })
    }

    /// Takes the lock, recovers an interrupted run, and lets the lock go
    /// (for the commands that write nothing themselves: `gpu-test`, `ci`).
    ///
    /// # Errors
    /// As [`Guard::acquire`].
    pub fn settle(target_directory: &Path, err: &mut dyn Write) -> anyhow::Result<()> {
        Guard::acquire(target_directory, false, err).map(drop)
    }

    /// The state directory (lock and journal).
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Whether the lock is held (a journal may be written).
    pub fn locked(&self) -> bool {
        self.lock.is_some()
    }
}
