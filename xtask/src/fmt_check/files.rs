//! Which files fmt-check looks at, who owns them (edition), and which
//! rustfmt config applies to them.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::Context as _;
use globset::{Glob, GlobSet, GlobSetBuilder};

/// rustfmt's `newline_style`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum NewlineStyle {
    /// Keep the file's own line endings (rustfmt's default).
    #[default]
    Auto,
    /// `\n` on Unix, `\r\n` on Windows.
    Native,
    /// `\n`.
    Unix,
    /// `\r\n`.
    Windows,
}

/// A `rustfmt.toml` / `.rustfmt.toml`, with the few keys fmt-check needs itself.
#[derive(Debug, Clone)]
pub struct RustfmtConfig {
    /// Absolute path of the file.
    pub path: PathBuf,
    /// Its `edition`, if set (used for files outside any package).
    pub edition: Option<String>,
    /// Its `newline_style`.
    pub newline_style: NewlineStyle,
}

/// The config that applies to a file: `None` is rustfmt's defaults.
pub type ConfigRef = Option<Arc<RustfmtConfig>>;

/// Finds configs the way rustfmt does (`resolve_project_file` in rustfmt's
/// `config/mod.rs`): in the directory, then each parent up to the filesystem
/// root, `.rustfmt.toml` before `rustfmt.toml`; if none, the home directory,
/// then `<config dir>/rustfmt/`. Results are cached per directory.
#[derive(Debug, Default)]
pub struct ConfigResolver {
    cache: HashMap<PathBuf, ConfigRef>,
    parsed: HashMap<PathBuf, Arc<RustfmtConfig>>,
}

const CONFIG_FILE_NAMES: [&str; 2] = [".rustfmt.toml", "rustfmt.toml"];

impl ConfigResolver {
    /// The config rustfmt picks for a file in `dir` (absolute, canonical).
    ///
    /// # Errors
    /// A config file that cannot be read or is not TOML.
    pub fn for_dir(&mut self, dir: &Path) -> anyhow::Result<ConfigRef> {
        if let Some(c) = self.cache.get(dir) {
            return Ok(c.clone());
        }
        let found = match CONFIG_FILE_NAMES
            .iter()
            .map(|n| dir.join(n))
            .find(|p| p.is_file())
        {
            Some(path) => Some(self.parse(&path)?),
            None => match dir.parent() {
                Some(parent) => self.for_dir(parent)?,
                None => match user_config_file() {
                    Some(path) => Some(self.parse(&path)?),
                    None => None,
                },
            },
        };
        self.cache.insert(dir.to_path_buf(), found.clone());
        Ok(found)
    }

    fn parse(&mut self, path: &Path) -> anyhow::Result<Arc<RustfmtConfig>> {
        if let Some(c) = self.parsed.get(path) {
            return Ok(c.clone());
        }
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("{}: cannot read rustfmt config", path.display()))?;
        let table: toml::Table = toml::from_str(&text).map_err(|e| {
            let (line, col) = e
                .span()
                .map_or((1, 1), |s| crate::text::line_col(&text, s.start));
            anyhow::anyhow!(
                "{}:{line}:{col}: malformed rustfmt config: {}",
                path.display(),
                e.message()
            )
        })?;
        let edition = table
            .get("edition")
            .and_then(|v| v.as_str())
            .map(str::to_string);
        let newline_style = match table.get("newline_style").and_then(|v| v.as_str()) {
            Some("Native") => NewlineStyle::Native,
            Some("Unix") => NewlineStyle::Unix,
            Some("Windows") => NewlineStyle::Windows,
            _ => NewlineStyle::Auto,
        };
        let c = Arc::new(RustfmtConfig {
            path: path.to_path_buf(),
            edition,
            newline_style,
        });
        self.parsed.insert(path.to_path_buf(), c.clone());
        Ok(c)
    }
}

/// rustfmt's fallbacks after the directory walk: `~/.rustfmt.toml` /
/// `~/rustfmt.toml`, then `<config dir>/rustfmt/{.rustfmt.toml,rustfmt.toml}`
/// (config dir as the `dirs` crate defines it).
fn user_config_file() -> Option<PathBuf> {
    let home = std::env::var_os(if cfg!(windows) { "USERPROFILE" } else { "HOME" })
        .filter(|h| !h.is_empty())
        .map(PathBuf::from);
    let config_dir = if cfg!(windows) {
        std::env::var_os("APPDATA").map(PathBuf::from)
    } else if cfg!(target_os = "macos") {
        home.as_ref().map(|h| h.join("Library/Application Support"))
    } else {
        std::env::var_os("XDG_CONFIG_HOME")
            .map(PathBuf::from)
            .filter(|p| p.is_absolute())
            .or_else(|| home.as_ref().map(|h| h.join(".config")))
    };
    let in_dir = |d: &Path| {
        CONFIG_FILE_NAMES
            .iter()
            .map(|n| d.join(n))
            .find(|p| p.is_file())
    };
    home.as_deref()
        .and_then(in_dir)
        .or_else(|| config_dir.and_then(|d| in_dir(&d.join("rustfmt"))))
}

/// A package whose directory holds `.rs` files.
#[derive(Debug, Clone)]
pub struct Package {
    /// Package name.
    pub name: String,
    /// Directory of its `Cargo.toml`.
    pub dir: PathBuf,
    /// Its edition.
    pub edition: String,
}

/// A `.rs` file to check.
#[derive(Debug, Clone)]
pub struct RsFile {
    /// Absolute, lexically normal path.
    pub path: PathBuf,
    /// Path relative to the workspace root, `/`-separated (for reports).
    pub rel: String,
    /// Index into [`FileInventory::packages`] of the deepest package directory holding it.
    pub owner: Option<usize>,
}

/// A crate root as `cargo fmt` passes it to rustfmt.
#[derive(Debug, Clone)]
pub struct CrateRoot {
    /// Absolute path of the target's `src_path`.
    pub path: PathBuf,
    /// Index into [`FileInventory::packages`].
    pub package: usize,
    /// The target's edition (what `cargo fmt` passes as `--edition`).
    pub edition: String,
}

/// Everything fmt-check decided before running rustfmt.
#[derive(Debug)]
pub struct FileInventory {
    /// Canonical workspace root.
    pub root: PathBuf,
    /// `[workspace.package] edition` of the root manifest.
    pub default_edition: Option<String>,
    /// Packages, members first.
    pub packages: Vec<Package>,
    /// The files to check, sorted by `rel`.
    pub files: Vec<RsFile>,
    /// Every member target's root (what `cargo fmt --all` formats).
    pub crate_roots: Vec<CrateRoot>,
    /// How many `.rs` files the `[fmt] exclude` globs removed.
    pub excluded: usize,
    /// How many directories were not entered because an `[fmt] exclude`
    /// glob matches everything under them (their files are not counted).
    pub excluded_dirs: usize,
    /// Notes for the report (things the user should know, not failures).
    pub notes: Vec<String>,
}

impl FileInventory {
    /// Index of the file at `path` (absolute, lexically normal), if checked.
    pub fn file_index(&self, path: &Path) -> Option<usize> {
        self.files
            .binary_search_by(|f| f.path.as_path().cmp(path))
            .ok()
    }
}

/// Builds the plan: walks `root` for `.rs` files (skipping hidden
/// directories, cargo target directories and `exclude` globs), assigns each
/// to its package, and lists the members' crate roots.
///
/// # Errors
/// A bad glob, an unreadable directory, or a workspace manifest that cannot be read.
pub fn plan(
    metadata: &cargo_metadata::Metadata,
    exclude: &[String],
) -> anyhow::Result<FileInventory> {
    let root = metadata
        .workspace_root
        .as_std_path()
        .canonicalize()
        .with_context(|| {
            format!(
                "{}: cannot resolve the workspace root",
                metadata.workspace_root
            )
        })?;
    let mut notes = Vec::new();
    let default_edition = workspace_default_edition(&root.join("Cargo.toml"))?;
    let target_dir = metadata.target_directory.as_std_path().canonicalize().ok();

    let globs = exclude_globs(exclude)?;
    let (mut packages, crate_roots) = members_and_crate_roots(metadata);
    let walk = Walk {
        root: &root,
        target_dir: target_dir.as_deref(),
        globs: &globs,
        default_edition: default_edition.as_deref(),
    };
    let (mut files, excluded, excluded_dirs) = walk.run(&mut packages, &mut notes)?;
    assign_owners(&mut files, &packages);
    files.sort_by(|a, b| a.path.cmp(&b.path));
    Ok(FileInventory {
        root,
        default_edition,
        packages,
        files,
        crate_roots,
        excluded,
        excluded_dirs,
        notes,
    })
}

/// The `[fmt] exclude` globs.
fn exclude_globs(exclude: &[String]) -> anyhow::Result<GlobSet> {
    let mut globs = GlobSetBuilder::new();
    for g in exclude {
        globs.add(Glob::new(g).with_context(|| format!("[fmt] exclude: bad glob `{g}`"))?);
    }
    globs
        .build()
        .context("[fmt] exclude: cannot build the glob set")
}

/// The workspace members (sorted by manifest path) and their targets' crate roots.
fn members_and_crate_roots(metadata: &cargo_metadata::Metadata) -> (Vec<Package>, Vec<CrateRoot>) {
    let mut packages: Vec<Package> = Vec::new();
    let mut crate_roots = Vec::new();
    let mut members: Vec<&cargo_metadata::Package> = metadata.workspace_packages();
    members.sort_by(|a, b| a.manifest_path.cmp(&b.manifest_path));
    for p in members {
        let dir = canonical_parent(p.manifest_path.as_std_path());
        let idx = packages.len();
        packages.push(Package {
            name: p.name.to_string(),
            dir,
            edition: p.edition.as_str().to_string(),
        });
        for t in &p.targets {
            // the directory canonical, the file name as it is: a crate root
            // that is a link stays the link, as the walk lists it
            let path = canonical_parent(t.src_path.as_std_path())
                .join(t.src_path.file_name().unwrap_or_default());
            crate_roots.push(CrateRoot {
                path,
                package: idx,
                edition: t.edition.as_str().to_string(),
            });
        }
    }
    crate_roots.sort_by(|a, b| a.path.cmp(&b.path));
    crate_roots.dedup_by(|a, b| a.path == b.path && a.edition == b.edition);
    (packages, crate_roots)
}

/// The walk over the workspace for `.rs` files.
struct Walk<'a> {
    root: &'a Path,
    target_dir: Option<&'a Path>,
    globs: &'a GlobSet,
    default_edition: Option<&'a str>,
}

impl Walk<'_> {
    /// Every `.rs` file not excluded (and how many files and directories
    /// were), skipping hidden and target directories and not entering a
    /// directory an exclude glob covers whole; a `Cargo.toml` of no member
    /// adds its package. A directory that cannot be read is a note, not an
    /// error: cargo fmt reads only the module files it reaches (one of them
    /// there fails its rustfmt run, and fmt-check's with it).
    fn run(
        &self,
        packages: &mut Vec<Package>,
        notes: &mut Vec<String>,
    ) -> anyhow::Result<(Vec<RsFile>, usize, usize)> {
        let (root, target_dir, globs, default_edition) =
            (self.root, self.target_dir, self.globs, self.default_edition);
        let member_dirs: Vec<PathBuf> = packages.iter().map(|p| p.dir.clone()).collect();
        let mut files = Vec::new();
        let (mut excluded, mut excluded_dirs) = (0, 0);
        let mut walk = walkdir::WalkDir::new(root)
            .follow_links(false)
            .sort_by_file_name()
            .into_iter();
        while let Some(entry) = walk.next() {
            let entry = match entry {
                Ok(e) => e,
                Err(e) if e.depth() > 0 && e.io_error().is_some() => {
                    let at = e.path().unwrap_or(root);
                    notes.push(format!(
                        "{}: cannot read this directory ({}): the Rust files in it are not checked (cargo fmt reads only the module files it reaches)",
                        crate::fsutil::rel(root, at),
                        e.io_error().map_or_else(String::new, ToString::to_string)
                    ));
                    continue;
                }
                Err(e) => {
                    return Err(anyhow::Error::new(e)
                        .context(format!("{}: cannot walk the workspace", root.display())));
                }
            };
            let path = entry.path();
            if entry.file_type().is_dir() {
                if entry.depth() > 0 && skip_dir(path, root, target_dir, &member_dirs) {
                    walk.skip_current_dir();
                } else if entry.depth() > 0
                    && excludes_whole(globs, &crate::fsutil::rel(root, path))
                {
                    excluded_dirs += 1;
                    walk.skip_current_dir();
                }
                continue;
            }
            let name = entry.file_name().to_string_lossy();
            // only regular files are read as sources: rustfmt would wait
            // forever on a FIFO a `mod` declaration reaches
            let special = (name.ends_with(".rs") && !entry.file_type().is_file())
                .then(|| std::fs::metadata(path).ok())
                .flatten()
                .and_then(|m| crate::fsutil::special_file(&m));
            if let Some(what) = special {
                anyhow::bail!(
                    "{}: {what}, not a regular file: only regular files are read as Rust sources (remove it)",
                    crate::fsutil::rel(root, path)
                );
            }
            // a link to a file is checked as the file (cargo fmt follows it);
            // one that does not resolve is kept, to be reported when read
            if entry.file_type().is_symlink() {
                if std::fs::metadata(path).is_ok_and(|m| !m.is_file()) {
                    continue;
                }
            } else if !entry.file_type().is_file() {
                continue;
            }
            let rel = crate::fsutil::rel(root, path);
            // a file of a hidden directory entered for a member within it
            if (rel.starts_with('.') || rel.contains("/."))
                && path
                    .parent()
                    .is_some_and(|d| hidden_outside_members(d, root, &member_dirs, false))
            {
                continue;
            }
            if name == "Cargo.toml" && entry.depth() > 0 {
                let dir = path.parent().unwrap_or(root).to_path_buf();
                if !packages.iter().any(|p| p.dir == dir) {
                    match foreign_package(path, default_edition) {
                        Ok(Some(p)) => packages.push(p),
                        Ok(None) => {}
                        Err(e) => notes.push(format!("{rel}: not read as a package ({e:#}); its files count as outside any package")),
                    }
                }
            }
            if !name.ends_with(".rs") {
                continue;
            }
            if globs.is_match(&rel) {
                excluded += 1;
                continue;
            }
            files.push(RsFile {
                path: path.to_path_buf(),
                rel,
                owner: None,
            });
        }
        Ok((files, excluded, excluded_dirs))
    }
}

/// Whether `dir` is hidden, or inside a hidden directory, other than
/// through a member: `.ci` holding the member `.ci/tool` is entered
/// (`entering`) for that member only, its own files (`.ci/x.rs`) and other
/// directories stay out; a hidden directory inside a member (`a/.cache`)
/// stays out too.
fn hidden_outside_members(dir: &Path, root: &Path, members: &[PathBuf], entering: bool) -> bool {
    let hidden = |p: &Path| {
        p.components()
            .any(|c| c.as_os_str().as_encoded_bytes().starts_with(b"."))
    };
    let Ok(rel) = dir.strip_prefix(root) else {
        return false;
    };
    if !hidden(rel) || (entering && members.iter().any(|m| m.starts_with(dir))) {
        return false;
    }
    members
        .iter()
        .filter(|m| dir.starts_with(m) && m.starts_with(root))
        .max_by_key(|m| m.components().count())
        .is_none_or(|m| dir.strip_prefix(m).is_ok_and(hidden))
}

/// Whether the exclude globs cover everything under directory `rel`: they
/// match the directory followed by `/` and a file two levels below it
/// (`dir/**`, `**/fixtures/**`, `dir/*`: `*` crosses `/` in these globs),
/// so the walk need not (and does not) enter it.
fn excludes_whole(globs: &GlobSet, rel: &str) -> bool {
    !globs.is_empty()
        && globs.is_match(format!("{rel}/"))
        && globs.is_match(format!("{rel}/_/_.rs"))
}

/// Each file's owner: the deepest package directory containing it.
fn assign_owners(files: &mut [RsFile], packages: &[Package]) {
    let by_dir: BTreeMap<&Path, usize> = packages
        .iter()
        .enumerate()
        .map(|(i, p)| (p.dir.as_path(), i))
        .collect();
    for f in files.iter_mut() {
        f.owner = f
            .path
            .ancestors()
            .skip(1)
            .find_map(|a| by_dir.get(a).copied());
    }
}

fn canonical_parent(manifest: &Path) -> PathBuf {
    let dir = manifest.parent().unwrap_or(manifest);
    dir.canonicalize()
        .unwrap_or_else(|_| crate::fsutil::normalize(dir))
}

/// Hidden directories (but those that are or hold a member: `cargo fmt
/// --all` formats every member, `.ci/tool` too), the workspace's target
/// directory, and any directory cargo marked as a build directory
/// (`CACHEDIR.TAG` / `.rustc_info.json`, e.g. a nested fixture's `target/`).
/// A source module named `target` is kept.
fn skip_dir(path: &Path, root: &Path, target_dir: Option<&Path>, members: &[PathBuf]) -> bool {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy())
        .unwrap_or_default();
    hidden_outside_members(path, root, members, true)
        || target_dir == Some(path)
        || (name == "target"
            && (path.join("CACHEDIR.TAG").is_file() || path.join(".rustc_info.json").is_file()))
}

/// `[workspace.package] edition` of the root manifest (or `[package] edition`
/// of a root package that sets it literally).
fn workspace_default_edition(manifest: &Path) -> anyhow::Result<Option<String>> {
    let text = std::fs::read_to_string(manifest)
        .with_context(|| format!("{}: cannot read", manifest.display()))?;
    let doc: toml::Table =
        toml::from_str(&text).with_context(|| format!("{}: not valid TOML", manifest.display()))?;
    let ws = doc
        .get("workspace")
        .and_then(|w| w.get("package"))
        .and_then(|p| p.get("edition"))
        .and_then(|e| e.as_str());
    let pkg = doc
        .get("package")
        .and_then(|p| p.get("edition"))
        .and_then(|e| e.as_str());
    Ok(ws.or(pkg).map(str::to_string))
}

/// A `Cargo.toml` inside the workspace directory that is not a member (a
/// nested workspace, an excluded crate, a fixture): its `[package] edition`,
/// `edition.workspace = true` -> the workspace default, unset -> 2015 (cargo's default).
fn foreign_package(
    manifest: &Path,
    default_edition: Option<&str>,
) -> anyhow::Result<Option<Package>> {
    let text = std::fs::read_to_string(manifest)?;
    let doc: toml::Table = toml::from_str(&text)?;
    let Some(pkg) = doc.get("package") else {
        return Ok(None);
    };
    let name = pkg
        .get("name")
        .and_then(|n| n.as_str())
        .unwrap_or("?")
        .to_string();
    let edition = match pkg.get("edition") {
        Some(toml::Value::String(s)) => s.clone(),
        Some(toml::Value::Table(t))
            if t.get("workspace").and_then(toml::Value::as_bool) == Some(true) =>
        {
            default_edition.unwrap_or("2015").to_string()
        }
        Some(_) => {
            anyhow::bail!("`package.edition` is neither a string nor `{{ workspace = true }}`")
        }
        None => "2015".to_string(),
    };
    let dir = manifest.parent().unwrap_or(manifest).to_path_buf();
    Ok(Some(Package { name, dir, edition }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resolver_prefers_dot_file_and_walks_up() {
        let d = tempfile::tempdir().unwrap();
        let root = d.path().canonicalize().unwrap();
        std::fs::create_dir_all(root.join("a/b")).unwrap();
        std::fs::write(root.join("a/rustfmt.toml"), "max_width = 80\n").unwrap();
        std::fs::write(
            root.join("a/.rustfmt.toml"),
            "newline_style = \"Windows\"\nedition = \"2021\"\n",
        )
        .unwrap();
        let mut r = ConfigResolver::default();
        let c = r.for_dir(&root.join("a/b")).unwrap().unwrap();
        assert_eq!(c.path, root.join("a/.rustfmt.toml"));
        assert_eq!(c.newline_style, NewlineStyle::Windows);
        assert_eq!(c.edition.as_deref(), Some("2021"));
    }

    #[test]
    fn malformed_config_names_file_and_line() {
        let d = tempfile::tempdir().unwrap();
        let root = d.path().canonicalize().unwrap();
        std::fs::write(root.join("rustfmt.toml"), "max_width = 80\nnope\n").unwrap();
        let e = ConfigResolver::default()
            .for_dir(&root)
            .unwrap_err()
            .to_string();
        assert!(e.contains("rustfmt.toml:2:"), "{e}");
    }
}
