//! Reading a workspace's Rust files while `cargo metadata` runs.
//!
//! `cargo metadata` is single-threaded and the source walk needs its answer
//! (the targets' roots), so the walk used to start only once cargo was done,
//! with the second core idle meanwhile. [`Prefetch::start`] reads, on a
//! thread of its own, every `.rs` file under the presumed workspace root
//! (hidden directories, `target` and `node_modules` aside) into a
//! [`SourceCache`], with the prefilter's context-free tests
//! ([`modscan::may_declare_modules`], [`modscan::may_include`]) done there
//! too; [`Prefetch::finish`] stops it (as soon as cargo has answered) and
//! hands over what it read. (The caller's `first` work runs on that thread
//! before: `align-deps` reads and parses `Cargo.lock` there.)
//!
//! # Why the walk's answer cannot change
//! The cache only saves the `read`: the walk still asks the file system
//! about every file it reaches (`stat` of the same path, following symbolic
//! links as `open` does), and takes the cached bytes only when the file is
//! still the regular file that was read: the same device, inode, size,
//! modification and status-change times (nanoseconds). Any write, rename
//! over it or truncation since (a journal recovery included) changes the
//! status-change time, so such a file is read again as before. A file the
//! cache does not hold (a path spelled otherwise, a symbolic link, a file
//! outside the root, one the thread had not reached) is read as before.

use std::collections::HashMap;
use std::os::unix::fs::MetadataExt as _;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use crate::rust_src::modscan;

/// The most bytes the thread keeps (a tree far larger than its module trees
/// is not copied whole into memory).
const BUDGET: usize = 512 << 20;

/// What names a file's state: a cached file is used only while its
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

/// One file as the thread read it.
pub(crate) struct Cached {
    pub(crate) key: FileKey,
    pub(crate) bytes: Vec<u8>,
    pub(crate) has_mods: bool,
    pub(crate) has_includes: bool,
    /// `modscan::mod_decls` of the text, when it may declare modules and is
    /// UTF-8 (the walk scans it itself otherwise).
    pub(crate) decls: Option<Vec<modscan::ModDecl>>,
}

/// The files read ahead, by absolute path (see the module docs).
#[derive(Default)]
pub struct SourceCache {
    files: HashMap<PathBuf, Cached>,
}

impl std::fmt::Debug for SourceCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "SourceCache({} files)", self.files.len())
    }
}

impl SourceCache {
    /// How many files it holds.
    pub fn len(&self) -> usize {
        self.files.len()
    }

    /// Whether it holds none.
    pub fn is_empty(&self) -> bool {
        self.files.is_empty()
    }

    /// The cached file at `path` when it is still the regular file that
    /// was read (one `stat`), with its key; `None` otherwise (read it).
    pub(crate) fn get(&self, path: &Path) -> Option<&Cached> {
        let c = self.files.get(path)?;
        let md = std::fs::metadata(path).ok()?;
        (md.is_file() && FileKey::of(&md) == c.key).then_some(c)
    }
}

/// The reading thread (see the module docs).
#[derive(Debug)]
pub struct Prefetch {
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<SourceCache>>,
}

impl Prefetch {
    /// Starts reading the `.rs` files under `root` (an absolute path), after
    /// running `first` on the same thread.
    pub fn start(root: PathBuf, first: impl FnOnce() + Send + 'static) -> Prefetch {
        let stop = Arc::new(AtomicBool::new(false));
        let flag = Arc::clone(&stop);
        let thread = std::thread::Builder::new()
            .name("prefetch".into())
            .spawn(move || {
                first();
                read_tree(&root, &flag)
            })
            .ok();
        Prefetch { stop, thread }
    }

    /// Stops the thread (after the file it is reading) and returns what it read.
    pub fn finish(mut self) -> SourceCache {
        self.stop.store(true, Ordering::Relaxed);
        self.thread
            .take()
            .and_then(|t| t.join().ok())
            .unwrap_or_default()
    }
}

impl Drop for Prefetch {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

/// Reads the regular `.rs` files under `root`, directories breadth first,
/// until `stop` is set or the budget is spent.
fn read_tree(root: &Path, stop: &AtomicBool) -> SourceCache {
    let mut cache = SourceCache::default();
    let mut kept = 0usize;
    let mut dirs = std::collections::VecDeque::from([root.to_path_buf()]);
    while let Some(dir) = dirs.pop_front() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries {
            if stop.load(Ordering::Relaxed) || kept > BUDGET {
                return cache;
            }
            let Ok(entry) = entry else { continue };
            let Ok(t) = entry.file_type() else { continue };
            let name = entry.file_name();
            let name = name.as_encoded_bytes();
            if t.is_dir() {
                if !name.starts_with(b".") && name != b"target" && name != b"node_modules" {
                    dirs.push_back(entry.path());
                }
            } else if t.is_file() && name.ends_with(b".rs") {
                let path = entry.path();
                if let Some(c) = read_one(&path) {
                    kept += c.bytes.len();
                    cache.files.insert(path, c);
                }
            }
        }
    }
    cache
}

/// One file: its key when opened, then its bytes (as the walk reads them).
fn read_one(path: &Path) -> Option<Cached> {
    use std::io::Read as _;
    let (mut f, md) = crate::fsutil::open_nonblocking(path).ok()?;
    if !md.is_file() {
        return None;
    }
    let key = FileKey::of(&md);
    let size = usize::try_from(md.len()).ok()?;
    let mut bytes = Vec::with_capacity(size);
    f.by_ref().take(md.len()).read_to_end(&mut bytes).ok()?;
    // a file that shrank meanwhile is left to the walk
    if bytes.len() != size {
        return None;
    }
    let has_mods = modscan::may_declare_modules(&bytes);
    let decls = has_mods
        .then(|| std::str::from_utf8(&bytes).ok())
        .flatten()
        .map(|text| modscan::mod_decls(text).unwrap_or_default());
    Some(Cached {
        decls,
        has_mods,
        has_includes: modscan::may_include(&bytes),
        key,
        bytes,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cached_file_is_used_only_while_unchanged() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        for (p, t) in [
            ("src/lib.rs", "mod a;\npub fn f() {}\n"),
            ("src/a.rs", "pub fn g() {}\n"),
            ("target/debug/x.rs", "fn x() {}\n"),
            (".git/y.rs", "fn y() {}\n"),
            ("README.md", "text\n"),
        ] {
            std::fs::create_dir_all(root.join(p).parent().unwrap()).unwrap();
            std::fs::write(root.join(p), t).unwrap();
        }
        let mut p = Prefetch::start(root.to_path_buf(), || {});
        // read to the end (not stopped)
        let cache = p.thread.take().unwrap().join().unwrap();
        // only the `.rs` files outside hidden directories and `target`
        assert_eq!(cache.len(), 2, "{cache:?}");
        let lib = cache.get(&root.join("src/lib.rs")).unwrap();
        assert_eq!(lib.bytes, b"mod a;\npub fn f() {}\n");
        assert!(lib.has_mods && !lib.has_includes);
        assert_eq!(lib.decls.as_ref().map(Vec::len), Some(1));
        // rewritten (another size, or renamed over): read again
        std::fs::write(root.join("src/a.rs"), "pub fn g2() {}\n").unwrap();
        assert!(cache.get(&root.join("src/a.rs")).is_none());
        std::fs::write(root.join("x.tmp"), "mod a;\npub fn f() {}\n").unwrap();
        std::fs::rename(root.join("x.tmp"), root.join("src/lib.rs")).unwrap();
        assert!(cache.get(&root.join("src/lib.rs")).is_none());
        // removed, or never read: nothing
        std::fs::remove_file(root.join("src/a.rs")).unwrap();
        assert!(cache.get(&root.join("src/a.rs")).is_none());
        assert!(cache.get(&root.join("src/b.rs")).is_none());
    }

    #[test]
    fn a_stopped_prefetch_hands_over_what_it_read() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("a.rs"), "fn a() {}\n").unwrap();
        let p = Prefetch::start(dir.path().to_path_buf(), || {});
        let cache = p.finish();
        assert!(cache.len() <= 1);
    }
}
