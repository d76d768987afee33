//! The journal file, `<state dir>/journal.json`: what a writing run intends,
//! written atomically (a temporary `journal.json.tmp`, fsynced, renamed,
//! the directory fsynced) so that it is always whole or absent.

use std::io::Write as _;
use std::path::{Path, PathBuf};

use anyhow::Context as _;
use serde::{Deserialize, Serialize};

const FILE: &str = "journal.json";
const TMP: &str = "journal.json.tmp";
/// Written with the committed journal (holding the run id), renamed to
/// [`ROLLBACK`] when the run decides to roll back: a rename needs no new
/// space, so the decision is recorded even on a full disk.
const ROLLBACK_PENDING: &str = "rollback.pending";
/// The recorded decision to roll back (see [`ROLLBACK_PENDING`]).
const ROLLBACK: &str = "rollback";

/// The format this xtask writes and the only one it recovers.
pub const VERSION: u32 = 2;

/// The `tool` of every journal xtask writes.
pub const TOOL: &str = "xtask";

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

/// Which file a path held when the run planned from it: a file rewritten
/// since (even with the same text, as `git checkout` does) is another file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Ident {
    pub dev: u64,
    pub ino: u64,
    pub size: u64,
    /// Modification time, nanoseconds since the epoch.
    pub mtime_ns: i128,
}

impl Ident {
    /// The identity of the file `md` describes.
    pub fn of(md: &std::fs::Metadata) -> Ident {
        use std::os::unix::fs::MetadataExt as _;
        Ident {
            dev: md.dev(),
            ino: md.ino(),
            size: md.size(),
            mtime_ns: i128::from(md.mtime()) * 1_000_000_000 + i128::from(md.mtime_nsec()),
        }
    }
}

/// One file of the run.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Entry {
    /// Relative to the workspace root, `/`-separated: the path planned on
    /// (maybe a link), `<workspace>/<rel>`.
    pub rel: String,
    /// The file replaced: the planned path, or a link's target (never the
    /// link).
    pub target: PathBuf,
    /// The run's temporary file beside `target`, `.xtask-<run>-<n>.tmp`.
    pub temp: PathBuf,
    /// [`hash`] of the text to write (what the temporary file holds).
    pub new_hash: String,
    /// The file planned from.
    pub before: Ident,
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
    /// Who wrote it ([`TOOL`]).
    pub tool: String,
    /// The format ([`VERSION`]).
    pub version: u32,
    /// The canonical root of the workspace the run wrote in.
    pub workspace: PathBuf,
    /// The run's id (also in its temporary file names).
    pub run: String,
    /// How far it got.
    pub state: State,
    /// Its files, in the order they are replaced.
    pub files: Vec<Entry>,
}

/// The hash the journal keeps of a text: FNV-1a 64, in hex. Not a
/// cryptographic hash: it tells the run's own temporary file from another
/// file of the same name; recovery also checks the name and the place.
pub fn hash(bytes: &[u8]) -> String {
    format!("{:016x}", super::fnv1a(bytes))
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
    let refuse = |why: String| {
        anyhow::anyhow!(
            "{}: {why}; not a journal this xtask wrote, so nothing was touched (check the files it names, then move it away to go on)",
            p.display()
        )
    };
    // the version first, so that another format is named as such
    let head: serde_json::Value =
        serde_json::from_slice(&text).map_err(|e| refuse(format!("not JSON ({e})")))?;
    let version = head.get("version").and_then(serde_json::Value::as_u64);
    if head.get("tool").and_then(serde_json::Value::as_str) != Some(TOOL)
        || version != Some(u64::from(VERSION))
    {
        return Err(refuse(format!(
            "journal format {} of tool {}, this xtask writes and recovers format {VERSION}",
            version.map_or_else(|| "(none)".to_string(), |v| v.to_string()),
            head.get("tool")
                .map_or_else(|| "(none)".to_string(), ToString::to_string),
        )));
    }
    let j: Journal =
        serde_json::from_value(head).map_err(|e| refuse(format!("not a journal ({e})")))?;
    Ok(Some(j))
}

/// Deletes the journal of `dir` (durably), then the rollback markers.
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
    sync_dir(dir).with_context(|| format!("{}: cannot sync", dir.display()))?;
    let _ = std::fs::remove_file(dir.join(ROLLBACK_PENDING));
    let _ = std::fs::remove_file(dir.join(ROLLBACK));
    Ok(())
}

/// Prepares the decision to roll back run `run` ([`ROLLBACK_PENDING`]),
/// durably, while the run still has the space to write it.
///
/// # Errors
/// Any I/O error.
pub fn prepare_rollback(dir: &Path, run: &str) -> anyhow::Result<()> {
    let _ = std::fs::remove_file(dir.join(ROLLBACK));
    let p = dir.join(ROLLBACK_PENDING);
    let io = || -> std::io::Result<()> {
        let mut f = std::fs::File::create(&p)?;
        f.write_all(run.as_bytes())?;
        f.sync_all()?;
        sync_dir(dir)
    };
    io().with_context(|| format!("{}: cannot write", p.display()))
}

/// Records the decision to roll back (a rename of the prepared marker,
/// made durable).
///
/// # Errors
/// Any I/O error (the decision is then not recorded).
pub fn decide_rollback(dir: &Path) -> anyhow::Result<()> {
    std::fs::rename(dir.join(ROLLBACK_PENDING), dir.join(ROLLBACK))
        .and_then(|()| sync_dir(dir))
        .with_context(|| {
            format!(
                "{}: cannot record the decision to roll back",
                dir.join(ROLLBACK).display()
            )
        })
}

/// Whether the decision to roll back run `run` is recorded in `dir`.
pub fn rollback_decided(dir: &Path, run: &str) -> bool {
    std::fs::read(dir.join(ROLLBACK)).is_ok_and(|t| t == run.as_bytes())
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
            tool: TOOL.into(),
            version: VERSION,
            workspace: d.path().into(),
            run: "r".into(),
            state: State::Committed,
            files: vec![Entry {
                rel: "a.rs".into(),
                target: d.path().join("a.rs"),
                temp: d.path().join(".xtask-r-0.tmp"),
                new_hash: hash(b"n"),
                before: Ident::of(&std::fs::metadata(d.path()).unwrap()),
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
        // another format, or another tool's file, is refused by name
        std::fs::write(path(d.path()), r#"{"tool": "xtask", "version": 1}"#).unwrap();
        let e = format!("{:#}", read(d.path()).unwrap_err());
        assert!(e.contains("journal format 1 of tool \"xtask\""), "{e}");
        assert!(e.contains("nothing was touched"), "{e}");
        std::fs::write(path(d.path()), r#"{"version": 2}"#).unwrap();
        assert!(read(d.path()).is_err());
    }
}
