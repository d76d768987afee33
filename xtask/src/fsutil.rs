//! File helpers shared by every xtask command.

use std::io::Write;
use std::os::unix::fs::MetadataExt as _;
use std::path::{Component, Path, PathBuf};

use anyhow::Context as _;

/// What names a file's state (device, inode, size, modification and
/// status-change times): what was read of a file is used only while its
/// [`std::fs::Metadata`] still gives the same key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct FileKey {
    dev: u64,
    ino: u64,
    size: u64,
    mtime: (i64, i64),
    ctime: (i64, i64),
}

impl FileKey {
    pub(crate) fn dev(&self) -> u64 {
        self.dev
    }

    pub(crate) fn ino(&self) -> u64 {
        self.ino
    }

    pub(crate) fn size(&self) -> u64 {
        self.size
    }

    pub(crate) fn of(md: &std::fs::Metadata) -> FileKey {
        FileKey {
            dev: md.dev(),
            ino: md.ino(),
            size: md.len(),
            mtime: (md.mtime(), md.mtime_nsec()),
            ctime: (md.ctime(), md.ctime_nsec()),
        }
    }
}

/// Writes `contents` to a new temporary file beside `path` (same directory,
/// so a rename replaces `path` atomically), with `perms` (`None`: `0o644`),
/// fsynced. Persist it over `path` to replace the file; dropping it deletes
/// it. (The fleet commands' multi-file writes go through
/// [`crate::journal::txn`] instead.)
///
/// # Errors
/// Any I/O error, with the path and the operation in the message.
pub fn stage_with_permissions(
    path: &Path,
    contents: &[u8],
    perms: Option<std::fs::Permissions>,
) -> anyhow::Result<tempfile::NamedTempFile> {
    use std::os::unix::fs::PermissionsExt as _;
    let dir = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let mut tmp = tempfile::Builder::new()
        .prefix(".xtask-")
        .suffix(".tmp")
        .tempfile_in(dir)
        .with_context(|| format!("{}: cannot create a temporary file", dir.display()))?;
    let perms = perms.unwrap_or_else(|| std::fs::Permissions::from_mode(0o644));
    tmp.write_all(contents)
        .and_then(|()| std::fs::set_permissions(tmp.path(), perms))
        .and_then(|()| tmp.as_file().sync_all())
        .with_context(|| format!("{}: cannot write its temporary file", path.display()))?;
    Ok(tmp)
}

/// Opens `path` to read it, with its metadata, never blocking: a FIFO is
/// opened non-blocking (a plain open waits for a writer forever), so that
/// the caller can see what it is and refuse it ([`special_file`]).
///
/// # Errors
/// Any I/O error.
pub fn open_nonblocking(path: &Path) -> std::io::Result<(std::fs::File, std::fs::Metadata)> {
    use std::os::unix::fs::OpenOptionsExt as _;
    let f = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)?;
    let md = f.metadata()?;
    Ok((f, md))
}

/// What a file that is neither a regular file nor a directory is (a FIFO,
/// a socket, a device), in words; `None` for a regular file or a directory.
/// Only regular files are read as sources: reading a FIFO waits for a
/// writer forever, a device may never end.
pub fn special_file(md: &std::fs::Metadata) -> Option<&'static str> {
    use std::os::unix::fs::FileTypeExt as _;
    let t = md.file_type();
    if t.is_file() || t.is_dir() {
        None
    } else if t.is_fifo() {
        Some("a FIFO (named pipe)")
    } else if t.is_socket() {
        Some("a socket")
    } else if t.is_block_device() || t.is_char_device() {
        Some("a device")
    } else {
        Some("not a regular file")
    }
}

/// One extended attribute of a file: its name (`user.x`,
/// `system.posix_acl_access`, `security.selinux`) and value.
pub type Xattr = (std::ffi::CString, Vec<u8>);

/// Whether an xattr call failed only because the file system has none.
fn no_xattrs(e: rustix::io::Errno) -> bool {
    e == rustix::io::Errno::NOTSUP || e == rustix::io::Errno::OPNOTSUPP
}

/// The extended attributes of the file at `path` (following links): empty
/// where the file system has none.
///
/// # Errors
/// Any other error reading them.
pub fn xattrs(path: &Path) -> std::io::Result<Vec<Xattr>> {
    let size = match rustix::fs::listxattr_query(path) {
        Ok(n) => n,
        Err(e) if no_xattrs(e) => return Ok(Vec::new()),
        Err(e) => return Err(e.into()),
    };
    if size == 0 {
        return Ok(Vec::new());
    }
    // (room for an attribute added meanwhile)
    let mut names = vec![0u8; size + 256];
    let n = rustix::fs::listxattr(path, &mut names[..])?;
    names.truncate(n);
    let mut out = Vec::new();
    for name in names.split(|b| *b == 0).filter(|n| !n.is_empty()) {
        let name = std::ffi::CString::new(name).map_err(std::io::Error::other)?;
        let len = match rustix::fs::getxattr_query(path, name.as_c_str()) {
            Ok(n) => n,
            // removed meanwhile
            Err(rustix::io::Errno::NODATA) => continue,
            Err(e) => return Err(e.into()),
        };
        let mut value = vec![0u8; len + 256];
        let n = rustix::fs::getxattr(path, name.as_c_str(), &mut value[..])?;
        value.truncate(n);
        out.push((name, value));
    }
    Ok(out)
}

/// Gives the open file `f` the extended attributes `attrs` (those it does
/// not already hold with the same value).
///
/// # Errors
/// An attribute cannot be set (the message names it).
pub fn set_xattrs(f: &std::fs::File, attrs: &[Xattr]) -> std::io::Result<()> {
    for (name, value) in attrs {
        let mut now = vec![0u8; value.len()];
        if rustix::fs::fgetxattr(f, name.as_c_str(), &mut now[..])
            .is_ok_and(|n| now[..n] == value[..] && n == value.len())
        {
            continue;
        }
        rustix::fs::fsetxattr(f, name.as_c_str(), value, rustix::fs::XattrFlags::empty()).map_err(
            |e| {
                std::io::Error::new(
                    std::io::Error::from(e).kind(),
                    format!(
                        "cannot keep its extended attribute `{}`: {e}",
                        name.to_string_lossy()
                    ),
                )
            },
        )?;
    }
    Ok(())
}

/// `path` relative to `root`, `/`-separated (for messages and reports); a
/// path outside `root` is shown whole.
pub fn rel(root: &Path, path: &Path) -> String {
    match path.strip_prefix(root) {
        // (an empty root strips nothing: an absolute path stays whole)
        Ok(r) if !r.has_root() => r
            .components()
            .map(|c| c.as_os_str().to_string_lossy())
            .collect::<Vec<_>>()
            .join("/"),
        _ => path.to_string_lossy().into_owned(),
    }
}

/// Whether `rel`, a path relative to a workspace's root, names a file inside
/// it: not empty, and every component a plain name (no `..`, `.`, root or
/// prefix). The one rule of what xtask may write (the planners, the
/// journal's write path and recovery all ask it).
pub fn is_inside_rel(rel: &str) -> bool {
    !rel.is_empty()
        && Path::new(rel)
            .components()
            .all(|c| matches!(c, std::path::Component::Normal(_)))
}

/// `path` with `.` and `..` resolved lexically (no filesystem access).
pub fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in path.components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            other => out.push(other),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rel_names_a_path_outside_the_root_whole_with_one_leading_slash() {
        assert_eq!(
            rel(Path::new("/w"), Path::new("/w/a/Cargo.toml")),
            "a/Cargo.toml"
        );
        assert_eq!(
            rel(Path::new("/w"), Path::new("/o/Cargo.toml")),
            "/o/Cargo.toml"
        );
        assert_eq!(
            rel(Path::new(""), Path::new("/o/Cargo.toml")),
            "/o/Cargo.toml"
        );
    }

    #[test]
    fn stage_leaves_the_target_alone_until_persisted() {
        use std::os::unix::fs::PermissionsExt as _;
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("new.txt");
        let tmp = stage_with_permissions(&p, b"x", None).unwrap();
        assert!(!p.exists());
        tmp.persist(&p).unwrap();
        assert_eq!(std::fs::read(&p).unwrap(), b"x");
        let mode = std::fs::metadata(&p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o644);
        drop(stage_with_permissions(&p, b"y", None).unwrap());
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
    }

    #[test]
    fn normalize_resolves_dots() {
        assert_eq!(
            normalize(Path::new("/a/b/../c/./d.rs")),
            Path::new("/a/c/d.rs")
        );
    }
}
