//! The multi-file write: all or nothing, as far as a file system allows.
//!
//! 1. Each planned path is resolved: a symbolic link is written through to
//!    its target (the temporary file goes beside the target and is renamed
//!    over it; the link stays a link); a dangling or looping link, a file
//!    without write permission (or whose mode grants write to no one, which
//!    even root respects here), a file with more than one hard link (a
//!    rename would leave the other names with the old text) and a
//!    read-only directory are refused, and so is a file changed since it
//!    was read. Nothing is written yet.
//! 2. The journal records the temporary file names, the hash of what each
//!    will hold and which file each path held (state "staging"); the
//!    temporary files `.xtask-<run>-<n>.tmp` are written with the file's
//!    mode, owner and group, and fsynced.
//! 3. The decision to roll back is prepared ([`record::prepare_rollback`]),
//!    and the journal rewritten "committed", with each file's text before
//!    and after: from here on a killed run is rolled forward by the next one.
//! 4. Each file in turn is compared with the text planned from, immediately
//!    before its temporary file is renamed over it. A difference (someone
//!    else wrote it meanwhile), a failed rename or SIGINT/SIGTERM
//!    ([`super::signals`]) records the decision to roll back (a rename: it
//!    needs no space), rolls back the files already replaced and is an error
//!    naming the file (or the signal).
//! 5. The directories are fsynced and the journal deleted.
//!
//! What remains: a write by another program in the instant between the
//! comparison and the rename of that one file is not seen.

use std::collections::{BTreeSet, HashMap};
use std::fs::Permissions;
use std::io::Write as _;
use std::os::unix::fs::{MetadataExt as _, OpenOptionsExt as _, PermissionsExt as _};
use std::path::{Path, PathBuf};

use anyhow::{Context as _, anyhow, bail};

use super::Guard;
use super::record::{self, Entry, Ident, Journal, State};
use super::{hook, signals};

/// One file to write.
#[derive(Debug)]
pub struct Planned<'a> {
    /// The path planned on (maybe a symbolic link).
    pub path: &'a Path,
    /// Relative to the workspace root, for messages.
    pub rel: &'a str,
    /// The text planned from.
    pub old: &'a str,
    /// The text to write.
    pub new: String,
}

/// A planned file, resolved.
struct Target<'a> {
    plan: &'a Planned<'a>,
    /// The file to replace: canonical (a link's target; through no linked directory).
    real: PathBuf,
    perms: Permissions,
    /// Its owner and group, kept.
    owner: Owner,
    /// Its extended attributes (ACLs, SELinux labels, `user.*`), kept.
    xattrs: Vec<crate::fsutil::Xattr>,
    /// Whether the planned path is a symbolic link (to `real`).
    link: bool,
    /// The file planned from.
    ident: Ident,
}

/// A file's owner and group.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Owner {
    pub uid: u32,
    pub gid: u32,
}

impl Owner {
    /// The owner and group of the file `md` describes.
    pub fn of(md: &std::fs::Metadata) -> Owner {
        Owner {
            uid: md.uid(),
            gid: md.gid(),
        }
    }
}

impl Target<'_> {
    /// The file for messages: `rel`, and where a link points.
    fn name(&self) -> String {
        if !self.link {
            self.plan.rel.to_string()
        } else {
            format!("{} (a link to {})", self.plan.rel, self.real.display())
        }
    }
}

/// Writes every planned file (see the module docs); with `guard` (holding
/// the workspace lock) through the journal.
///
/// # Errors
/// Anything that stops the write, with the file named; the message says
/// "nothing written" only where that is true.
pub fn write_all(files: &[Planned<'_>], guard: Option<&Guard>) -> anyhow::Result<()> {
    // one rule with recovery: a file outside the workspace is never written
    // (a journal naming it could not be vouched for); planners keep such
    // files out of a plan, this is the backstop
    if let Some(p) = files.iter().find(|p| !crate::fsutil::is_inside_rel(p.rel)) {
        bail!(
            "{}: outside the workspace; xtask never writes there (internal error: it was planned); nothing written",
            p.rel
        );
    }
    let targets = resolve(files)?;
    if targets.is_empty() {
        return Ok(());
    }
    for t in &targets {
        check_writable(t)?;
        if std::fs::read(&t.real).ok().as_deref() != Some(t.plan.old.as_bytes()) {
            bail!(
                "{}: changed on disk since it was read; nothing written (run it again)",
                t.name()
            );
        }
    }
    let journal_dir = guard.filter(|g| g.locked()).map(Guard::dir);
    let run = run_id();
    let mut journal = Journal {
        tool: record::TOOL.into(),
        version: record::VERSION,
        workspace: guard.map(|g| g.root().to_path_buf()).unwrap_or_default(),
        run: run.clone(),
        state: State::Staging,
        files: targets
            .iter()
            .enumerate()
            .map(|(n, t)| Entry {
                rel: t.plan.rel.to_string(),
                target: t.real.clone(),
                temp: temp_name(&t.real, &run, n),
                new_hash: record::hash(t.plan.new.as_bytes()),
                before: t.ident,
                old: None,
                new: None,
            })
            .collect(),
    };
    // from here to the last replace, SIGINT/SIGTERM roll back
    let _caught = signals::catch();
    let abandon = |journal: &Journal, err: anyhow::Error| {
        for e in &journal.files {
            let _ = std::fs::remove_file(&e.temp);
        }
        if let Some(dir) = journal_dir {
            let _ = record::remove(dir);
        }
        err.context("nothing written")
    };
    if let Some(dir) = journal_dir {
        record::write(dir, &journal).context("nothing written")?;
    }
    if let Err(e) = stage(&targets, &journal.files) {
        return Err(abandon(&journal, e));
    }
    hook::point("after-staging");
    if let Some(sig) = signals::pending() {
        return Err(abandon(&journal, interrupted(sig)));
    }
    if let Some(dir) = journal_dir {
        journal.state = State::Committed;
        for (e, t) in journal.files.iter_mut().zip(&targets) {
            e.old = Some(t.plan.old.to_string());
            e.new = Some(t.plan.new.clone());
        }
        let commit =
            record::prepare_rollback(dir, &run).and_then(|()| record::write(dir, &journal));
        if let Err(err) = commit {
            return Err(abandon(&journal, err));
        }
    }
    hook::point("after-journal");
    for (k, (t, e)) in targets.iter().zip(&journal.files).enumerate() {
        hook::point(&format!("before-replace:{k}"));
        if let Some(sig) = signals::pending() {
            let cause = format!("{}", interrupted(sig));
            return Err(roll_back(&targets, &journal, k, journal_dir, &cause));
        }
        if std::fs::read(&t.real).ok().as_deref() != Some(t.plan.old.as_bytes()) {
            let cause = format!(
                "{}: changed on disk while the fix ran (another program wrote it)",
                t.name()
            );
            return Err(roll_back(&targets, &journal, k, journal_dir, &cause));
        }
        if let Err(err) = std::fs::rename(&e.temp, &t.real) {
            let cause = format!("{}: cannot replace it: {err}", t.name());
            return Err(roll_back(&targets, &journal, k, journal_dir, &cause));
        }
    }
    let written = || format!("every file ({}) was written", targets.len());
    sync_dirs(&targets).map_err(|e| {
        crate::Written(format!(
            "{}, but syncing their directories failed: {e}",
            written()
        ))
    })?;
    hook::point("after-replaces");
    if let Some(dir) = journal_dir {
        record::remove(dir).map_err(|e| crate::Written(format!("{}, but {e:#}", written())))?;
    }
    Ok(())
}

/// The error of a write stopped by signal `sig`.
fn interrupted(sig: i32) -> anyhow::Error {
    anyhow!("interrupted by {}", signals::name(sig))
}

/// The temporary file of file `n` of run `run` whose target is `target`.
pub fn temp_name(target: &Path, run: &str, n: usize) -> PathBuf {
    parent(target).join(format!(".xtask-{run}-{n}.tmp"))
}

/// Resolves links and merges planned paths that are one file (a link and
/// its target, hard links): one write where they agree, an error where not.
fn resolve<'a>(files: &'a [Planned<'a>]) -> anyhow::Result<Vec<Target<'a>>> {
    let mut out: Vec<Target<'a>> = Vec::with_capacity(files.len());
    let mut seen: HashMap<(u64, u64), usize> = HashMap::new();
    for p in files {
        let link = std::fs::symlink_metadata(p.path)
            .with_context(|| format!("{}: cannot read it; nothing written", p.rel))?;
        let real = if link.file_type().is_symlink() {
            std::fs::canonicalize(p.path).map_err(|e| {
                anyhow!(
                    "{}: a symbolic link that does not resolve (dangling, or a loop): {e}; nothing written",
                    p.rel
                )
            })?
        } else {
            // canonical, so the journal names the real file even when the
            // workspace was given through a link that is gone by recovery
            std::fs::canonicalize(p.path).unwrap_or_else(|_| p.path.to_path_buf())
        };
        let md = std::fs::metadata(&real)
            .with_context(|| format!("{}: cannot read it; nothing written", p.rel))?;
        if !md.is_file() {
            bail!("{}: not a regular file; nothing written", p.rel);
        }
        if md.nlink() > 1 {
            bail!(
                "{}: has {} hard links; replacing it would leave the other names with the old text, \
                 so it is not replaced, nothing written (make it a single file, e.g. `cp` it to a new \
                 name and rename that over it, to fix it)",
                p.rel,
                md.nlink()
            );
        }
        if let Some(&i) = seen.get(&(md.dev(), md.ino())) {
            let first = &out[i];
            if first.plan.old == p.old && first.plan.new == p.new {
                continue;
            }
            bail!(
                "{} and {} are one file (a link); their fixes differ; nothing written",
                first.plan.rel,
                p.rel
            );
        }
        seen.insert((md.dev(), md.ino()), out.len());
        let xattrs = crate::fsutil::xattrs(&real).with_context(|| {
            format!(
                "{}: cannot read its extended attributes; nothing written",
                p.rel
            )
        })?;
        out.push(Target {
            plan: p,
            real,
            perms: md.permissions(),
            owner: Owner::of(&md),
            xattrs,
            link: link.file_type().is_symlink(),
            ident: Ident::of(&md),
        });
    }
    Ok(out)
}

/// Refuses a file we may not write, or whose mode grants write to no one
/// (root may write anything, but a file made read-only says "not this one"),
/// and a directory where the temporary file cannot be created.
fn check_writable(t: &Target<'_>) -> anyhow::Result<()> {
    use rustix::fs::Access;
    let mode = t.perms.mode();
    if mode & 0o222 == 0 || rustix::fs::access(&t.real, Access::WRITE_OK).is_err() {
        bail!(
            "{}: read-only (mode {:o}); not replaced, nothing written (make it writable to fix it)",
            t.name(),
            mode & 0o7777
        );
    }
    let dir = parent(&t.real);
    let dmode = std::fs::metadata(dir)
        .with_context(|| format!("{}: cannot read its directory; nothing written", t.name()))?
        .permissions()
        .mode();
    if dmode & 0o222 == 0 || rustix::fs::access(dir, Access::WRITE_OK | Access::EXEC_OK).is_err() {
        bail!(
            "{}: its directory {} is read-only (mode {:o}), so the file cannot be replaced there; nothing written",
            t.name(),
            dir.display(),
            dmode & 0o7777
        );
    }
    Ok(())
}

/// Writes every temporary file (in parallel, on a small I/O pool: the file
/// system batches the syncs).
fn stage(targets: &[Target<'_>], entries: &[Entry]) -> anyhow::Result<()> {
    use rayon::prelude::*;
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(targets.len().clamp(1, 8))
        .build()
        .context("cannot start the writer threads")?;
    pool.install(|| {
        targets.par_iter().zip(entries).try_for_each(|(t, e)| {
            write_temp(
                &e.temp,
                t.plan.new.as_bytes(),
                &t.perms,
                t.owner,
                &t.xattrs,
                true,
            )
            .with_context(|| {
                format!(
                    "{}: cannot write its temporary file {}",
                    t.name(),
                    e.temp.display()
                )
            })
        })
    })
}

/// Writes `contents` to `temp` with `perms`, `owner` and group and the
/// extended attributes `xattrs`, fsynced;
/// `fresh`: the file must not exist yet (a run's own new name).
///
/// # Errors
/// Any I/O error; the owner or group cannot be given to the file (the
/// message says so).
pub fn write_temp(
    temp: &Path,
    contents: &[u8],
    perms: &Permissions,
    owner: Owner,
    xattrs: &[crate::fsutil::Xattr],
    fresh: bool,
) -> std::io::Result<()> {
    let mut opts = std::fs::OpenOptions::new();
    opts.write(true).mode(0o600);
    if fresh {
        opts.create_new(true);
    } else {
        opts.create(true).truncate(true);
    }
    let mut f = opts.open(temp)?;
    f.write_all(contents)?;
    if Owner::of(&f.metadata()?) != owner {
        std::os::unix::fs::fchown(&f, Some(owner.uid), Some(owner.gid)).map_err(|e| {
            std::io::Error::new(
                e.kind(),
                format!(
                    "cannot keep its owner and group (uid {}, gid {}): {e}",
                    owner.uid, owner.gid
                ),
            )
        })?;
    }
    // after the owner: chown clears set-user-ID and set-group-ID bits
    f.set_permissions(perms.clone())?;
    // after the mode: an access ACL sets the group bits as they were
    crate::fsutil::set_xattrs(&f, xattrs)?;
    f.sync_all()
}

/// Records the decision to roll back, restores the `replaced` files
/// already replaced (those still holding the new text), deletes the other
/// temporary files and the journal; the error names the file that stopped
/// the write (`cause`) and says what happened. The decision is recorded
/// first, so that a rollback that cannot finish (a full disk) is finished
/// by the next run, never turned into a roll forward.
fn roll_back(
    targets: &[Target<'_>],
    journal: &Journal,
    replaced: usize,
    journal_dir: Option<&Path>,
    cause: &str,
) -> anyhow::Error {
    let mut problems = Vec::new();
    if let Some(dir) = journal_dir
        && let Err(e) = record::decide_rollback(dir)
    {
        problems.push(format!("{e:#}"));
    }
    for k in (0..replaced).rev() {
        if let Err(p) = restore(&targets[k], &journal.files[k]) {
            problems.push(p);
        }
    }
    for e in &journal.files[replaced..] {
        let _ = std::fs::remove_file(&e.temp);
    }
    if let Err(e) = sync_dirs(&targets[..replaced]) {
        problems.push(format!("syncing the restored files' directories: {e}"));
    }
    if problems.is_empty() {
        if let Some(dir) = journal_dir {
            let _ = record::remove(dir);
        }
        return if replaced == 0 {
            anyhow!("{cause}; nothing written (run it again)")
        } else {
            anyhow!(
                "{cause}; nothing written: the {replaced} file(s) already replaced were restored (run it again)"
            )
        };
    }
    let next = if journal_dir.is_some() {
        " (the journal is kept: the next run of any xtask command finishes the restore)"
    } else {
        ""
    };
    crate::Written(format!(
        "{cause}; {replaced} file(s) were already replaced and restoring them failed{next}: {}",
        problems.join("; ")
    ))
    .into()
}

/// Puts the planned-from text back into a replaced file that still holds
/// the new text.
fn restore(t: &Target<'_>, e: &Entry) -> Result<(), String> {
    let now = std::fs::read(&t.real).map_err(|err| format!("{}: {err}", t.name()))?;
    if now == t.plan.old.as_bytes() {
        return Ok(());
    }
    if now != t.plan.new.as_bytes() {
        return Err(format!(
            "{}: changed again after it was replaced; left as it is",
            t.name()
        ));
    }
    write_temp(
        &e.temp,
        t.plan.old.as_bytes(),
        &t.perms,
        t.owner,
        &t.xattrs,
        false,
    )
    .and_then(|()| std::fs::rename(&e.temp, &t.real))
    .map_err(|err| {
        // a half-written temporary file helps nobody (a full disk)
        let _ = std::fs::remove_file(&e.temp);
        format!("{}: cannot restore it: {err}", t.name())
    })
}

/// fsyncs the directory of every target (makes the renames durable), on a
/// small I/O pool as the staging does.
fn sync_dirs(targets: &[Target<'_>]) -> std::io::Result<()> {
    use rayon::prelude::*;
    let dirs: Vec<&Path> = targets
        .iter()
        .map(|t| parent(&t.real))
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    match rayon::ThreadPoolBuilder::new()
        .num_threads(dirs.len().clamp(1, 8))
        .build()
    {
        Ok(pool) => pool.install(|| dirs.par_iter().try_for_each(|d| record::sync_dir(d))),
        Err(_) => dirs.into_iter().try_for_each(record::sync_dir),
    }
}

/// The directory of `path` (`.` for a bare name).
pub fn parent(path: &Path) -> &Path {
    path.parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."))
}

/// A run id, unique on this machine: the process id and the time.
fn run_id() -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    format!("{}-{nanos:x}", std::process::id())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_outside_the_workspace_is_never_written() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("outside.rs");
        std::fs::write(&file, "old").unwrap();
        for rel in ["../outside.rs", "/abs/outside.rs", ""] {
            let planned = [Planned {
                path: &file,
                rel,
                old: "old",
                new: "new".into(),
            }];
            let e = write_all(&planned, None).unwrap_err().to_string();
            assert!(e.contains("outside the workspace"), "{rel}: {e}");
            assert_eq!(std::fs::read_to_string(&file).unwrap(), "old");
        }
    }
}
