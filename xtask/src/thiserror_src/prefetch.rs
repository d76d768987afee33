//! Reading a workspace's Rust files while `cargo metadata` runs.
//!
//! `cargo metadata` is single-threaded and the source walk needs its answer
//! (the targets' roots), so the walk used to start only once cargo was done,
//! with the second core idle meanwhile. [`Prefetch::start`] reads, on a
//! thread of its own, the module trees the walk will most likely follow:
//! from the target roots the manifests name or cargo would find (the root
//! package and the `[workspace] members`, their `[lib]`, `[[bin]]`, ...
//! `path`s and `src/lib.rs`, `src/main.rs`, `src/bin/`, `build.rs`,
//! `tests/`, `examples/`, `benches/`), following `mod` items and
//! `include!`s, into a [`SourceCache`] (never the rest of the tree: a real
//! workspace's `tests/` can hold ten thousand files of other languages),
//! with the prefilter's context-free tests
//! ([`modscan::may_declare_modules`], [`modscan::may_include`]) done there
//! too; [`Prefetch::finish`] stops it (as soon as cargo has answered) and
//! hands over what it read. (The caller's `first` work runs on that thread
//! before, its result handed over with the files: `align-deps` reads and
//! parses `Cargo.lock` there.)
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
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

pub(crate) use crate::fsutil::FileKey;
use crate::rust_src::modscan;

/// The most bytes the thread keeps (a tree far larger than its module trees
/// is not copied whole into memory).
const BUDGET: usize = 512 << 20;

/// One file as the thread read it.
pub(crate) struct Cached {
    pub(crate) key: FileKey,
    /// Its bytes, kept only when it holds both `derive` and `Error` (what
    /// either prefilter needs before it lets a file through): a file without
    /// them is never parsed, so the walk needs no more of it than the
    /// facts below (where it does, an `include!`d file, an exemption, it
    /// reads the file itself).
    pub(crate) bytes: Option<Vec<u8>>,
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

/// The reading thread (see the module docs), and what its `first` work
/// returns.
#[derive(Debug)]
pub struct Prefetch<T = ()> {
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<(T, SourceCache)>>,
}

impl<T: Send + 'static> Prefetch<T> {
    /// Starts reading the `.rs` files under `root` (an absolute path), after
    /// running `first` on the same thread.
    pub fn start(root: PathBuf, first: impl FnOnce() -> T + Send + 'static) -> Prefetch<T> {
        let stop = Arc::new(AtomicBool::new(false));
        let flag = Arc::clone(&stop);
        let thread = std::thread::Builder::new()
            .name("prefetch".into())
            .spawn(move || {
                let first = first();
                (first, read_tree(&root, &flag))
            })
            .ok();
        Prefetch { stop, thread }
    }

    /// Stops the thread (after the file it is reading) and returns what
    /// `first` returned (`None` when the thread could not be started or
    /// panicked) and what it read.
    pub fn finish(mut self) -> (Option<T>, SourceCache) {
        self.stop.store(true, Ordering::Relaxed);
        match self.thread.take().and_then(|t| t.join().ok()) {
            Some((first, cache)) => (Some(first), cache),
            None => (None, SourceCache::default()),
        }
    }
}

impl<T> Drop for Prefetch<T> {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

/// Reads the module trees of the presumed targets of the packages under
/// `root` (see the module docs), until `stop` is set or the budget is spent.
fn read_tree(root: &Path, stop: &AtomicBool) -> SourceCache {
    let mut cache = SourceCache::default();
    let mut kept = 0usize;
    let mut buf = Vec::new();
    // (candidates of one module in order, whether its directory is its own (mod-rs))
    let mut stack: Vec<Vec<(PathBuf, bool)>> = Vec::new();
    for dir in package_dirs(root) {
        stack.extend(
            target_roots(&dir)
                .into_iter()
                .rev()
                .map(|r| vec![(r, true)]),
        );
    }
    stack.reverse();
    while let Some(candidates) = stack.pop() {
        if stop.load(Ordering::Relaxed) || kept > BUDGET {
            break;
        }
        for (path, mod_rs) in candidates {
            if cache.files.contains_key(&path) {
                break;
            }
            let Some(c) = read_one(&path, &mut buf) else {
                continue;
            };
            if let Some(decls) = &c.decls {
                for d in decls.iter().rev() {
                    stack.push(modscan::resolve(&path, mod_rs, d));
                }
            }
            if c.has_includes
                && let Ok(text) = std::str::from_utf8(&buf)
            {
                let dir = path.parent().unwrap_or(Path::new("."));
                for inc in modscan::include_paths(text) {
                    stack.push(vec![(crate::fsutil::normalize(&dir.join(inc)), true)]);
                }
            }
            kept += c.bytes.as_ref().map_or(0, Vec::len);
            cache.files.insert(path, c);
            break;
        }
    }
    cache
}

/// The package directories of the workspace at `root` as its manifest
/// names them: the root package and the `[workspace] members` (globs
/// expanded; `exclude` left out). Empty when the manifest cannot be read.
fn package_dirs(root: &Path) -> Vec<PathBuf> {
    let Some(doc) = std::fs::read_to_string(root.join("Cargo.toml"))
        .ok()
        .and_then(|t| toml::from_str::<toml::Table>(&t).ok())
    else {
        return Vec::new();
    };
    let mut dirs = Vec::new();
    if doc.contains_key("package") {
        dirs.push(root.to_path_buf());
    }
    let ws = doc.get("workspace").and_then(toml::Value::as_table);
    let list = |key: &str| -> Vec<String> {
        ws.and_then(|w| w.get(key))
            .and_then(toml::Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(|v| v.as_str().map(str::to_string))
                    .collect()
            })
            .unwrap_or_default()
    };
    let excluded: Vec<PathBuf> = list("exclude")
        .iter()
        .map(|e| crate::fsutil::normalize(&root.join(e)))
        .collect();
    for pattern in list("members") {
        for dir in expand(root, &pattern) {
            if !dirs.contains(&dir)
                && !excluded.iter().any(|e| dir.starts_with(e))
                && dir.join("Cargo.toml").is_file()
            {
                dirs.push(dir);
            }
        }
    }
    dirs
}

/// What a member's manifest says about its targets, read line by line (a
/// hint only, so no TOML parser: one per member costs more than the
/// reading it guides): the `path = ".."` of `[lib]`, `[[bin]]`, `[[test]]`,
/// `[[example]]`, `[[bench]]`, and `build` of `[package]` (`None`: absent;
/// `Some(None)`: `false`).
fn target_paths(dir: &Path) -> (Vec<String>, Option<Option<String>>) {
    let Ok(text) = std::fs::read_to_string(dir.join("Cargo.toml")) else {
        return (Vec::new(), None);
    };
    let (mut paths, mut build) = (Vec::new(), None);
    let mut table = String::new();
    for line in text.lines() {
        let line = line.trim();
        if line.starts_with('[') {
            table = line
                .trim_matches(|c| c == '[' || c == ']')
                .trim()
                .to_string();
            continue;
        }
        let Some((key, value)) = line.split_once('=') else {
            continue;
        };
        let (key, value) = (key.trim(), value.trim());
        let string = || {
            value
                .strip_prefix('"')
                .and_then(|v| v.split_once('"'))
                .map(|(v, _)| v.to_string())
        };
        match (table.as_str(), key) {
            ("lib" | "bin" | "test" | "example" | "bench", "path") => paths.extend(string()),
            ("package", "build") => build = Some(string()),
            _ => {}
        }
    }
    (paths, build)
}

/// The directories a `members` entry names (`crates/*`: each directory of
/// `crates` whose name the glob matches).
fn expand(root: &Path, pattern: &str) -> Vec<PathBuf> {
    let mut dirs = vec![root.to_path_buf()];
    for part in pattern.split('/').filter(|p| !p.is_empty() && *p != ".") {
        if !part.contains(['*', '?', '[']) {
            dirs = dirs.into_iter().map(|d| d.join(part)).collect();
            continue;
        }
        let Ok(glob) = globset::Glob::new(part) else {
            return Vec::new();
        };
        let m = glob.compile_matcher();
        let mut next = Vec::new();
        for d in dirs {
            let Ok(rd) = std::fs::read_dir(&d) else {
                continue;
            };
            let mut names: Vec<PathBuf> = rd
                .flatten()
                .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()) && m.is_match(e.file_name()))
                .map(|e| e.path())
                .collect();
            names.sort();
            next.extend(names);
        }
        dirs = next;
    }
    dirs.into_iter()
        .map(|d| crate::fsutil::normalize(&d))
        .collect()
}

/// The target roots of the package in `dir` as cargo would find them: the
/// `path`s its manifest gives (`[lib]`, `[[bin]]`, `[[test]]`, ...,
/// `package.build`), and the conventional places.
fn target_roots(dir: &Path) -> Vec<PathBuf> {
    let (paths, build) = target_paths(dir);
    let mut roots: Vec<PathBuf> = paths.iter().map(|p| dir.join(p)).collect();
    match build {
        Some(Some(b)) => roots.push(dir.join(b)),
        Some(None) => {}
        None => roots.push(dir.join("build.rs")),
    }
    roots.push(dir.join("src/lib.rs"));
    roots.push(dir.join("src/main.rs"));
    for sub in ["src/bin", "tests", "examples", "benches"] {
        let Ok(rd) = std::fs::read_dir(dir.join(sub)) else {
            continue;
        };
        let mut found: Vec<PathBuf> = rd
            .flatten()
            .filter_map(|e| {
                let t = e.file_type().ok()?;
                let p = e.path();
                if t.is_dir() {
                    Some(p.join("main.rs"))
                } else {
                    p.extension().is_some_and(|x| x == "rs").then_some(p)
                }
            })
            .collect();
        found.sort();
        roots.extend(found);
    }
    roots
        .into_iter()
        .map(|p| crate::fsutil::normalize(&p))
        .filter(|p| p.is_file())
        .collect()
}

/// One file: its key when opened, then its bytes (as the walk reads them),
/// read into `buf` (one buffer for every file: no allocation, no fresh
/// pages) and copied out only when they may be parsed.
fn read_one(path: &Path, buf: &mut Vec<u8>) -> Option<Cached> {
    use std::io::Read as _;
    let (mut f, md) = crate::fsutil::open_nonblocking(path).ok()?;
    if !md.is_file() {
        return None;
    }
    let key = FileKey::of(&md);
    let size = usize::try_from(md.len()).ok()?;
    buf.clear();
    f.by_ref().take(md.len()).read_to_end(buf).ok()?;
    // a file that shrank meanwhile is left to the walk
    if buf.len() != size {
        return None;
    }
    let bytes = buf.as_slice();
    let has_mods = modscan::may_declare_modules(bytes);
    let decls = has_mods
        .then(|| std::str::from_utf8(bytes).ok())
        .flatten()
        .map(|text| modscan::mod_decls(text).unwrap_or_default());
    let has = |w: &[u8]| memchr::memmem::find(bytes, w).is_some();
    Some(Cached {
        decls,
        has_mods,
        has_includes: modscan::may_include(bytes),
        key,
        bytes: (has(b"derive") && has(b"Error")).then(|| bytes.to_vec()),
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
            (
                "Cargo.toml",
                "[package]\nname = \"p\"\n\n[workspace]\nmembers = [\"crates/*\"]\n",
            ),
            ("src/lib.rs", "mod a;\npub fn f() {}\n"),
            ("src/a.rs", "pub fn g() {}\n"),
            ("target/debug/x.rs", "fn x() {}\n"),
            (".git/y.rs", "fn y() {}\n"),
            ("stray/z.rs", "fn z() {}\n"),
            ("README.md", "text\n"),
            (
                "crates/c/Cargo.toml",
                "[package]\nname = \"c\"\n\n[lib]\npath = \"lib.rs\"\n",
            ),
            ("crates/c/lib.rs", "include!(\"gen/t.rs\");\n"),
            ("crates/c/gen/t.rs", "pub const T: u8 = 1;\n"),
            (
                "crates/c/tests/t.rs",
                "#[derive(Debug, thiserror::Error)]\n#[error(\"x\")]\npub struct E;\n",
            ),
        ] {
            std::fs::create_dir_all(root.join(p).parent().unwrap()).unwrap();
            std::fs::write(root.join(p), t).unwrap();
        }
        let mut p = Prefetch::start(root.to_path_buf(), || {});
        // read to the end (not stopped)
        let ((), cache) = p.thread.take().unwrap().join().unwrap();
        // the module trees of the targets the manifests name, nothing else
        assert_eq!(cache.len(), 5, "{cache:?}");
        for p in ["target/debug/x.rs", ".git/y.rs", "stray/z.rs"] {
            assert!(cache.get(&root.join(p)).is_none(), "{p}");
        }
        assert!(cache.get(&root.join("crates/c/gen/t.rs")).is_some());
        let t = cache.get(&root.join("crates/c/tests/t.rs")).unwrap();
        assert!(t.bytes.is_some(), "`derive` and `Error`: kept");
        let lib = cache.get(&root.join("src/lib.rs")).unwrap();
        // no `derive` and `Error`: never parsed, so its bytes are not kept
        assert_eq!(lib.bytes, None);
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
        let p = Prefetch::start(dir.path().to_path_buf(), || 7);
        let (first, cache) = p.finish();
        assert_eq!(first, Some(7), "what `first` returned is handed over");
        assert!(cache.len() <= 1);
    }
}
