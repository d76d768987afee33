//! Field safety of the commands that write people's files (`align-deps`,
//! `fmt-check --fix`): one run at a time per workspace, and a multi-file
//! write that a kill at any instant cannot leave half done for good.
//!
//! - [`lock`]: the workspace lock (an exclusive `flock` on the workspace
//!   directory itself); a second run waits for it (saying so) and gives up
//!   after [`lock::WAIT`].
//! - [`record`]: the journal (intent log): which temporary files a run
//!   creates (with the hash of what each holds), which file each path held,
//!   and, once committed, each file's text before and after; the decision to
//!   roll back, recorded by a rename.
//! - [`txn`]: the write itself: links resolved, read-only and hard-linked
//!   files refused, owner, group and mode kept, every file compared with the
//!   text planned from right before it is replaced, rollback on any failure
//!   and on SIGINT/SIGTERM ([`signals`]).
//! - [`recover`]: what the next run of any command does with the journal of
//!   a run that was killed: vouch for it first (a journal is an input like
//!   any other), then finish what that run decided, never over a file
//!   changed since.
//! - [`hook`]: the test-only pause points (`XTASK_TEST_HOOK`).
//!
//! # Where the lock and the journal live
//! The lock is the workspace root directory itself (see [`lock`]): two runs
//! on one workspace take turns whatever target directories they were given.
//!
//! The journal is in `<target dir>/xtask/` (the target directory `cargo
//! metadata` reports: `target/` unless `CARGO_TARGET_DIR` or
//! `build.target-dir` says otherwise). Every command already asks cargo for
//! the workspace's metadata, so it finds the place with no extra work;
//! version control ignores it in every Rust repository. A dot directory in
//! the workspace root would show up in `git status` of every user. The price:
//! a run killed and rerun with another target directory does not see the
//! journal (its temporary files stay, named in the journal it left), and
//! `cargo clean` after a kill deletes the journal.
//!
//! A target directory outside the workspace may be shared by several
//! workspaces (`CARGO_TARGET_DIR` set once for all of them): there each
//! workspace has its own `<target dir>/xtask/ws-<name>-<hash>/`, keyed by its
//! canonical root ([`state_dir`]), so runs in different workspaces never
//! recover each other's journals (and a journal naming another workspace is
//! refused).
//!
//! A leaf apart from [`crate::fsutil`]: the commands and [`crate::edit`] use it.

pub(crate) mod hook;
pub(crate) mod lock;
pub(crate) mod record;
pub(crate) mod recover;
pub mod signals;
pub(crate) mod txn;

use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::Context as _;

/// The directory of the journal for the workspace at
/// `workspace_root` whose target directory is `target_directory`:
/// `<target>/xtask` when the target directory is inside the workspace, else
/// `<target>/xtask/ws-<root's last name>-<FNV-1a of the canonical root>`.
pub fn state_dir(target_directory: &Path, workspace_root: &Path) -> PathBuf {
    let base = target_directory.join("xtask");
    let canonical = |p: &Path| std::fs::canonicalize(p).unwrap_or_else(|_| p.into());
    let root = canonical(workspace_root);
    // as cargo reports them first (the default `<root>/target` is inside even
    // before it exists), then with links resolved
    if target_directory.starts_with(workspace_root)
        || canonical(target_directory).starts_with(&root)
    {
        return base;
    }
    base.join(workspace_key(&root))
}

/// `ws-<root's last name>-<FNV-1a of the root>`: a name for the workspace
/// whose canonical root is `root`, the same on every run.
pub fn workspace_key(root: &Path) -> String {
    let name: String = root
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .take(40)
        .collect();
    format!(
        "ws-{name}-{:016x}",
        fnv1a(root.as_os_str().as_encoded_bytes())
    )
}

/// FNV-1a 64: a hash that stays the same across Rust versions and machines
/// (the state directory of a workspace must not move between runs).
fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

/// The workspace lock, held by a running command, with any interrupted run
/// already recovered. Dropping it releases the lock.
#[derive(Debug)]
pub struct Guard {
    dir: PathBuf,
    /// The workspace root, canonical.
    root: PathBuf,
    /// `None`: a read-only run that could not open the workspace directory
    /// for its lock (and found no journal), so it runs unlocked.
    lock: Option<lock::Lock>,
}

impl Guard {
    /// Takes the lock of the workspace at `workspace_root` (the directory
    /// itself, see [`lock`]; waiting for another run to finish, with a
    /// message on `err`), then recovers an interrupted run whose journal is
    /// in the state directory for `target_directory` ([`state_dir`]), saying
    /// on `err` what it did.
    ///
    /// `writing`: the command may write files (the state directory is
    /// created). A run that only reads goes on without the lock when the
    /// workspace directory cannot be opened and there is no journal.
    ///
    /// # Errors
    /// The lock cannot be taken (or was held too long by another run), or
    /// the recovery found a file it cannot settle (exit 2, naming it).
    pub fn acquire(
        target_directory: &Path,
        workspace_root: &Path,
        writing: bool,
        err: &mut dyn Write,
    ) -> anyhow::Result<Guard> {
        let dir = state_dir(target_directory, workspace_root);
        let root = std::fs::canonicalize(workspace_root).unwrap_or_else(|_| workspace_root.into());
        let lock = match lock::Lock::open(&root) {
            Ok(l) => l,
            Err(_) if !writing && !record::exists(&dir) => {
                return Ok(Guard {
                    dir,
                    root,
                    lock: None,
                });
            }
            Err(e) => return Err(e),
        };
        let lock = lock.wait(err)?;
        if writing {
            std::fs::create_dir_all(&dir).with_context(|| {
                format!("{}: cannot create xtask's state directory", dir.display())
            })?;
        }
        recover::recover(&dir, &root, err)?;
        Ok(Guard {
            dir,
            root,
            lock: Some(lock),
        })
    }

    /// Takes the lock, recovers an interrupted run, and lets the lock go
    /// (for the commands that write nothing themselves: `gpu-test`, `ci`).
    ///
    /// # Errors
    /// As [`Guard::acquire`].
    pub fn settle(
        target_directory: &Path,
        workspace_root: &Path,
        err: &mut dyn Write,
    ) -> anyhow::Result<()> {
        Guard::acquire(target_directory, workspace_root, false, err).map(drop)
    }

    /// The state directory (the journal).
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The workspace root, canonical.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Whether the lock is held and the state directory exists (a journal
    /// may be written).
    pub fn locked(&self) -> bool {
        self.lock.is_some() && self.dir.is_dir()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_shared_target_directory_gives_each_workspace_its_own_state() {
        let tmp = tempfile::tempdir().unwrap();
        let (a, b, shared) = (
            tmp.path().join("a"),
            tmp.path().join("b c"),
            tmp.path().join("t"),
        );
        for d in [&a, &b, &shared] {
            std::fs::create_dir_all(d).unwrap();
        }
        // inside the workspace, existing or not yet: the plain <target>/xtask
        assert_eq!(state_dir(&a.join("target"), &a), a.join("target/xtask"));
        std::fs::create_dir_all(a.join("target")).unwrap();
        assert_eq!(state_dir(&a.join("target"), &a), a.join("target/xtask"));
        // a target directory outside: one state directory per workspace,
        // the same on every run, named after the root
        let (sa, sb) = (state_dir(&shared, &a), state_dir(&shared, &b));
        assert_ne!(sa, sb);
        assert_eq!(sa, state_dir(&shared, &a));
        assert_eq!(sa.parent(), Some(shared.join("xtask").as_path()));
        let name = sb.file_name().unwrap().to_str().unwrap();
        assert!(
            name.starts_with("ws-b_c-") && name.len() == "ws-b_c-".len() + 16,
            "{name}"
        );
        // a link to the workspace is the same workspace
        let link = tmp.path().join("link");
        std::os::unix::fs::symlink(&a, &link).unwrap();
        assert_eq!(state_dir(&shared, &link), sa);
        assert_eq!(fnv1a(b""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(fnv1a(b"a"), 0xaf63_dc4c_8601_ec8c);
    }
}
