//! File helpers shared by every xtask command.

use std::io::Write;
use std::path::Path;

/// Replaces `path` with `contents` atomically: a temporary file in the same
/// directory, fsynced, given the original file's permissions, then renamed
/// over the original. Readers see the old file or the new one, never a mix.
///
/// # Errors
/// Any I/O error, with the path and the operation in the message.
pub fn atomic_write(path: &Path, contents: &[u8]) -> anyhow::Result<()> {
    use anyhow::Context as _;
    let dir = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let perms = std::fs::metadata(path).ok().map(|m| m.permissions());
    let mut tmp = tempfile::Builder::new()
        .prefix(".xtask-")
        .suffix(".tmp")
        .tempfile_in(dir)
        .with_context(|| format!("{}: cannot create a temporary file", dir.display()))?;
    tmp.write_all(contents)
        .and_then(|()| tmp.as_file().sync_all())
        .with_context(|| format!("{}: cannot write temporary file", path.display()))?;
    if let Some(perms) = perms {
        std::fs::set_permissions(tmp.path(), perms)
            .with_context(|| format!("{}: cannot set permissions", path.display()))?;
    }
    tmp.persist(path)
        .map_err(|e| e.error)
        .with_context(|| format!("{}: cannot replace file", path.display()))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replaces_contents_and_keeps_permissions() {
        use std::os::unix::fs::PermissionsExt as _;
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("f.txt");
        std::fs::write(&p, "old").unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o640)).unwrap();
        atomic_write(&p, b"new").unwrap();
        assert_eq!(std::fs::read_to_string(&p).unwrap(), "new");
        let mode = std::fs::metadata(&p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o640);
        // no temporary file left behind
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
    }
}
