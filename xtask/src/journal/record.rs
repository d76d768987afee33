//! The journal file, `<state dir>/journal.json`: what a writing run intends,
//! written atomically (a temporary `journal.json.tmp`, fsynced, renamed,
//! the directory fsynced) so that it is always whole or absent.

use std::io::Write as _;
use std::path::{Path, PathBuf};

use anyhow::Context as _;
use serde::{Deserialize, Serialize};

const FILE: &str = "journal.json";
const TMP: &str = "journal.json.tmp";

/// How far the run got.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum State {
    /// Creating the temporary files; no file replaced yet.
    Staging,
    /// Every temporary file written; replacing files (roll forward).
    Committed,
    /// A replace failed or a file changed on disk: restoring (roll back).
    RollingBack,
}

/// One file of the run.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Entry {
    /// Relative to the workspace root, for messages.
    pub rel: String,
    /// The file replaced: a link's target, never the link.
    pub target: PathBuf,
    /// The run's temporary file beside `target`.
    pub temp: PathBuf,
    /// The text planned from (in the committed journal).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub old: Option<String>,
    /// The text to write (in the committed journal).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub new: Option<String>,
}

/// The journal of one run.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Journal {
    /// The format (1).
    pub version: u32,
    /// The run's id (also in its temporary file names).
    pub run: String,
    /// How far it got.
    pub state: State,
    /// Its files, in the order they are replaced.
    pub files: Vec<Entry>,
}

/// Whether `dir` holds a journal.
pub fn exists(dir: &Path) -> bool {
    dir.join(FILE).exists()
}

/// The journal's path in `dir`.
pub fn path(dir: &Path) -> PathBuf {
    dir.join(FILE)
}

/// Writes `journal` into `dir` atomically and durably.
///
/// # Errors
/// Any I/O error.
pub fn write(dir: &Path, journal: &Journal) -> anyhow::Result<()> {
    let tmp = dir.join(TMP);
    let text = serde_json::to_vec(journal).context("cannot encode the journal")?;
    let io = || -> std::io::Result<()> {
        let mut f = std::fs::File::create(&tmp)?;
        f.write_all(&text)?;
        f.sync_all()?;
        std::fs::rename(&tmp, dir.join(FILE))?;
        sync_dir(dir)
    };
    io().with_context(|| format!("{}: cannot write the journal", path(dir).display()))
}

/// The journal in `dir`, if any (a leftover `journal.json.tmp` is removed:
/// only a whole journal counts).
///
/// # Errors
/// A journal that cannot be read or decoded.
pub fn read(dir: &Path) -> anyhow::Result<Option<Journal>> {
    let _ = std::fs::remove_file(dir.join(TMP));
    let p = path(dir);
    let text = match std::fs::read(&p) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => {
            return Err(e).with_context(|| format!("{}: cannot read the journal", p.display()));
        }
    };
    let j: Journal = serde_json::from_slice(&text).with_context(|| {
        format!(
            "{}: not a journal xtask can read (move it away to go on, after checking the files it names)",
            p.display()
        )
    })?;
    Ok(Some(j))
}

/// Deletes the journal of `dir` (durably).
///
/// # Errors
/// An I/O error other than "not found".
pub fn remove(dir: &Path) -> anyhow::Result<()> {
    match std::fs::remove_file(path(dir)) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => {
            return Err(e)
                .with_context(|| format!("{}: cannot delete the journal", path(dir).display()));
        }
    }
    sync_dir(dir).with_context(|| format!("{}: cannot sync", dir.display()))
}

/// fsyncs a directory (makes renames and deletions in it durable).
///
/// # Errors
/// Any I/O error.
pub fn sync_dir(dir: &Path) -> std::io::Result<()> {
    std::fs::File::open(dir)?.sync_all()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_removal() {
        let d = tempfile::tempdir().unwrap();
        assert!(read(d.path()).unwrap().is_none());
        let j = Journal {
            version: 1,
            run: "r".into(),
            state: State::Committed,
            files: vec![Entry {
                rel: "a.rs".into(),
                target: d.path().join("a.rs"),
                temp: d.path().join(".xtask-r-0.tmp"),
                old: Some("o".into()),
                new: Some("n".into()),
            }],
        };
        write(d.path(), &j).unwrap();
        std::fs::write(d.path().join(TMP), "half").unwrap();
        let back = read(d.path()).unwrap().unwrap();
        assert_eq!(back.state, State::Committed);
        assert_eq!(back.files[0].new.as_deref(), Some("n"));
        assert!(!d.path().join(TMP).exists());
        remove(d.path()).unwrap();
        assert!(!exists(d.path()));
    }
}
