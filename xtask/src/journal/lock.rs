//! The workspace lock: an exclusive `flock` on the workspace root directory
//! itself.
//!
//! Keyed by the workspace, not by where its state lives: two runs on one
//! workspace take turns whatever target directories they were given
//! (`CARGO_TARGET_DIR` differs between a shell and an IDE, a CI step and a
//! cache), and a link to the workspace is the same directory. Nothing is
//! created for it, so a read-only checkout locks too and `git status` shows
//! nothing. The kernel drops a `flock` when its holder dies (even by
//! SIGKILL), so a killed run never leaves the workspace locked. Cargo and
//! git take no `flock` on a workspace directory, so no other tool waits on it.
//!
//! Where a file system cannot `flock` a directory opened read-only (NFS
//! emulates `flock` with POSIX locks, which need a file open for writing),
//! the lock is a file keyed by the workspace's canonical root in a per-user
//! directory instead ([`fallback_path`]): every run on that file system
//! takes the same way, so they still take turns.

use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{Context as _, bail};
use rustix::fs::FlockOperation;

/// How long a run waits for another run's lock before it gives up (exit 2,
/// nothing written). A fix of a few hundred crates takes seconds.
pub const WAIT: Duration = Duration::from_secs(120);

/// How often a waiting run tries again.
const POLL: Duration = Duration::from_millis(50);

/// The lock file, opened but not yet locked.
#[derive(Debug)]
pub struct Unlocked {
    file: File,
    path: PathBuf,
}

/// The held lock; dropping it (closing the file) releases it.
#[derive(Debug)]
pub struct Lock {
    _file: File,
}

impl Lock {
    /// Opens the workspace root directory `root` for its lock.
    ///
    /// # Errors
    /// The directory cannot be opened.
    pub fn open(root: &Path) -> anyhow::Result<Unlocked> {
        let file = std::fs::File::open(root).with_context(|| {
            format!(
                "{}: cannot open the workspace directory to lock it",
                root.display()
            )
        })?;
        Ok(Unlocked {
            file,
            path: root.to_path_buf(),
        })
    }
}

/// The lock file of the workspace at `root` (canonical) where its directory
/// cannot be locked: `$XDG_RUNTIME_DIR/xtask-locks/`, else
/// `<temp dir>/xtask-locks-<uid>/`, named `ws-<name>-<hash of the root>.lock`.
pub fn fallback_path(root: &Path) -> PathBuf {
    let dir = std::env::var_os("XDG_RUNTIME_DIR")
        .map(PathBuf::from)
        .filter(|d| d.is_absolute())
        .map(|d| d.join("xtask-locks"))
        .unwrap_or_else(|| {
            // SAFETY: getuid has no preconditions and cannot fail.
            let uid = unsafe { libc::getuid() };
            std::env::temp_dir().join(format!("xtask-locks-{uid}"))
        });
    dir.join(format!("{}.lock", super::workspace_key(root)))
}

impl Unlocked {
    /// The per-user lock file of the workspace at `root` ([`fallback_path`]),
    /// opened (created, in a directory only the user may write).
    fn fallback(root: &Path) -> anyhow::Result<Unlocked> {
        use std::os::unix::fs::DirBuilderExt as _;
        let path = fallback_path(root);
        let dir = super::txn::parent(&path);
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir)
            .with_context(|| format!("{}: cannot create the lock directory", dir.display()))?;
        let file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&path)
            .with_context(|| format!("{}: cannot open the workspace lock", path.display()))?;
        Ok(Unlocked { file, path })
    }

    /// Locks, waiting up to [`WAIT`] (saying so on `err`) while another run
    /// holds the lock.
    ///
    /// # Errors
    /// Another run held it for [`WAIT`], or `flock` failed.
    pub fn wait(mut self, err: &mut dyn Write) -> anyhow::Result<Lock> {
        let start = Instant::now();
        let mut said = false;
        let mut fell_back = false;
        loop {
            match rustix::fs::flock(&self.file, FlockOperation::NonBlockingLockExclusive) {
                Ok(()) => {
                    if said {
                        let _ = writeln!(
                            err,
                            "xtask: got the workspace lock after {:.1} s",
                            start.elapsed().as_secs_f64()
                        );
                    }
                    return Ok(Lock { _file: self.file });
                }
                Err(rustix::io::Errno::WOULDBLOCK) | Err(rustix::io::Errno::INTR) => {}
                Err(
                    rustix::io::Errno::BADF
                    | rustix::io::Errno::NOLCK
                    | rustix::io::Errno::NOTSUP
                    | rustix::io::Errno::INVAL,
                ) if !fell_back => {
                    // no `flock` on this directory: the per-user lock file
                    self = Unlocked::fallback(&self.path)?;
                    fell_back = true;
                    continue;
                }
                Err(e) => {
                    return Err(std::io::Error::from(e)).with_context(|| {
                        format!("{}: cannot lock the workspace", self.path.display())
                    });
                }
            }
            if !said {
                let _ = writeln!(
                    err,
                    "xtask: another xtask run is working on this workspace ({}, locked); waiting for it (up to {} s)",
                    self.path.display(),
                    WAIT.as_secs()
                );
                said = true;
            }
            if start.elapsed() >= WAIT {
                bail!(
                    "{}: another xtask run has held the workspace lock for {} s; gave up, nothing written (is a run stuck? the process holding the lock is still alive)",
                    self.path.display(),
                    WAIT.as_secs()
                );
            }
            std::thread::sleep(POLL);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_fallback_lock_file_is_one_per_workspace_and_excludes() {
        let d = tempfile::tempdir().unwrap();
        let (a, b) = (d.path().join("a"), d.path().join("b"));
        assert_ne!(fallback_path(&a), fallback_path(&b));
        assert_eq!(fallback_path(&a), fallback_path(&a));
        let name = fallback_path(&a)
            .file_name()
            .unwrap()
            .to_string_lossy()
            .into_owned();
        assert!(
            name.starts_with("ws-a-") && name.ends_with(".lock"),
            "{name}"
        );
        let first = Unlocked::fallback(&a).unwrap();
        rustix::fs::flock(&first.file, FlockOperation::NonBlockingLockExclusive).unwrap();
        let second = Unlocked::fallback(&a).unwrap();
        assert_eq!(
            rustix::fs::flock(&second.file, FlockOperation::NonBlockingLockExclusive),
            Err(rustix::io::Errno::WOULDBLOCK)
        );
        let _ = std::fs::remove_file(fallback_path(&a));
    }

    #[test]
    fn a_second_lock_waits_until_the_first_is_dropped() {
        let d = tempfile::tempdir().unwrap();
        let first = Lock::open(d.path()).unwrap().wait(&mut Vec::new()).unwrap();
        let dir = d.path().to_path_buf();
        let waiter = std::thread::spawn(move || {
            let mut msg = Vec::new();
            let l = Lock::open(&dir).unwrap().wait(&mut msg);
            (l.is_ok(), String::from_utf8(msg).unwrap())
        });
        std::thread::sleep(Duration::from_millis(300));
        drop(first);
        let (ok, msg) = waiter.join().unwrap();
        assert!(ok);
        assert!(msg.contains("waiting for it"), "{msg}");
        assert!(msg.contains("got the workspace lock"), "{msg}");
    }
}
