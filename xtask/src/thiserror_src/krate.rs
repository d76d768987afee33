//! A crate as a whole: the module trees of its targets ([`walk_crate`]),
//! each file analysed ([`analyze_crate_with`], parsing only what the
//! [`super::prefilter`] lets through), exempt files set aside, and rule 4.

use std::collections::{BTreeSet, HashMap};
use std::path::{Path, PathBuf};

use anyhow::Context as _;
use cargo_metadata::{DependencyKind, Package};

use super::prefetch::SourceCache;
use super::{
    CrateContext, DepKind, DeriveSite, DeriveVia, FileAnalysis, Rule, SourceError, SourceFinding,
    analyze_parsed, prefilter, scan, with_parsed,
};

/// A source file of a crate and the dependency kinds its targets need.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CrateFile {
    pub path: PathBuf,
    /// One entry per kind of target that includes this file.
    pub needs: Vec<DepKind>,
}

/// The package's dependencies on the `thiserror` package (any table, renamed or not).
pub fn thiserror_dependencies(package: &Package) -> Vec<&cargo_metadata::Dependency> {
    package
        .dependencies
        .iter()
        .filter(|d| d.name == "thiserror")
        .collect()
}

/// Whether code of a target needing `kind` can name `::thiserror`: a direct
/// dependency on the thiserror package, not renamed to another name, in a
/// table that target sees (dev code also sees `[dependencies]`). A
/// platform-specific (`[target.'cfg(..)'.dependencies]`) one counts.
pub fn has_direct_thiserror(package: &Package, kind: DepKind) -> bool {
    thiserror_dependencies(package).into_iter().any(|d| {
        d.rename.as_deref().is_none_or(|r| r == "thiserror")
            && match kind {
                DepKind::Normal => d.kind == DependencyKind::Normal,
                DepKind::Build => d.kind == DependencyKind::Build,
                DepKind::Dev => {
                    matches!(d.kind, DependencyKind::Normal | DependencyKind::Development)
                }
            }
    })
}

/// Walks the module tree of every target of `package` (roots from cargo
/// metadata: lib, bins, tests, examples, benches, build script), calling
/// `visit` on each file once. Children are found with the module resolver
/// `fmt-check` uses ([`crate::rust_src::modscan`]: `mod name;`, `#[path]`,
/// modules declared inside macro invocations such as `cfg_if!`), and through
/// `include!("file")` with a string literal (relative to the including
/// file's directory; the included file's own `mod` items are resolved as if
/// it were a `mod.rs` in that directory).
/// Returns the files and the module or include paths that lead to no file
/// (typically platform modules behind `#[cfg]`), which are skipped.
#[allow(clippy::type_complexity)]
fn walk_crate<T: Send>(
    package: &Package,
    cache: Option<&SourceCache>,
    parse: impl Fn(&Path, &[u8], DepKind) -> bool,
    analyze: impl Fn(&Path, &scan::Source<'_>, &syn::File) -> Result<T, SourceError> + Sync,
) -> anyhow::Result<(Vec<(CrateFile, Option<(String, T)>)>, Vec<PathBuf>)> {
    use std::io::ErrorKind;
    use std::os::unix::fs::MetadataExt as _;

    use crate::rust_src::modscan;
    let mut roots: Vec<(PathBuf, DepKind)> = package
        .targets
        .iter()
        .map(|t| {
            (
                t.src_path.clone().into_std_path_buf(),
                DepKind::of_target(&t.kind),
            )
        })
        .collect();
    roots.sort_by_key(|(_, k)| *k);
    let mut files: Vec<(CrateFile, Option<(String, T)>)> = Vec::new();
    // a file is itself (device, inode): reached twice (a symlink, `#[path]`), read once
    let mut index: HashMap<(u64, u64), usize> = HashMap::new();
    let mut missing = BTreeSet::new();
    let mut buf = Vec::new();
    // (index into `files`, text) of each file the prefilter lets through
    let mut to_parse: Vec<(usize, PathBuf, String)> = Vec::new();
    let mut queued: std::collections::HashSet<usize> = std::collections::HashSet::new();
    for (root, kind) in roots {
        // each entry: the candidate files of one module, in order, and
        // whether it is `include!`d
        let mut stack = vec![(vec![(root, true)], false)];
        while let Some((candidates, included)) = stack.pop() {
            // the first candidate that is a file; its metadata names it
            let mut found = None;
            for (p, m) in &candidates {
                // read ahead and unchanged since (see `prefetch`); a file whose
                // bytes it did not keep is read here where they are needed
                if let Some(c) = cache.and_then(|c| c.get(p))
                    && (c.bytes.is_some()
                        || !(included
                            || c.has_includes
                            || (c.has_mods && c.decls.is_none())
                            || parse(p, &[], kind)))
                {
                    let k = c.key;
                    found = Some((p.clone(), *m, (k.dev(), k.ino()), k.size(), Err(c)));
                    break;
                }
                let opened = crate::fsutil::open_nonblocking(p).map(|(f, md)| (md, f));
                match opened {
                    Ok((md, f)) if md.is_file() => {
                        found = Some((p.clone(), *m, (md.dev(), md.ino()), md.len(), Ok(f)));
                        break;
                    }
                    Ok((md, _)) if let Some(what) = crate::fsutil::special_file(&md) => {
                        anyhow::bail!(
                            "{}: {what}, not a regular file: only regular files are read as Rust sources",
                            p.display()
                        );
                    }
                    Ok(_) => {}
                    Err(e)
                        if matches!(e.kind(), ErrorKind::NotFound | ErrorKind::NotADirectory) => {}
                    Err(e) => {
                        return Err(
                            anyhow::Error::new(e).context(format!("{}: cannot read", p.display()))
                        );
                    }
                }
            }
            let Some((path, mod_rs, key, size, source)) = found else {
                missing.extend(candidates.into_iter().next().map(|c| c.0));
                continue;
            };
            if let Some(&i) = index.get(&key) {
                if !files[i].0.needs.contains(&kind) {
                    files[i].0.needs.push(kind);
                    // reached by another kind of target (a build script's
                    // `#[path]` into the lib): what it may hold for this one
                    if !queued.contains(&i) {
                        let bytes = match source {
                            Ok(mut file) => {
                                let n = read_all(&mut file, &mut buf, size)
                                    .with_context(|| format!("{}: cannot read", path.display()))?;
                                buf[..n].to_vec()
                            }
                            Err(c) => match &c.bytes {
                                Some(b) => b.clone(),
                                None => std::fs::read(&path)
                                    .with_context(|| format!("{}: cannot read", path.display()))?,
                            },
                        };
                        if parse(&path, &bytes, kind) {
                            let text = String::from_utf8(bytes).with_context(|| {
                                format!("{}: cannot read: not UTF-8 text", path.display())
                            })?;
                            queued.insert(i);
                            to_parse.push((i, path, text));
                        }
                    }
                }
                continue;
            }
            let (bytes, has_mods, has_includes, cached_decls) = match source {
                Ok(mut file) => {
                    let n = read_all(&mut file, &mut buf, size)
                        .with_context(|| format!("{}: cannot read", path.display()))?;
                    drop(file);
                    let bytes = &buf[..n];
                    (
                        bytes,
                        modscan::may_declare_modules(bytes),
                        modscan::may_include(bytes),
                        None,
                    )
                }
                Err(c) => (
                    c.bytes.as_deref().unwrap_or_default(),
                    c.has_mods,
                    c.has_includes,
                    c.decls.as_deref(),
                ),
            };
            let wanted = parse(&path, bytes, kind);
            // text only where it is needed (most files: none of these)
            let text = if included || has_mods || has_includes || wanted {
                std::str::from_utf8(bytes)
                    .with_context(|| format!("{}: cannot read: not UTF-8 text", path.display()))?
            } else {
                ""
            };
            if included && syn::parse_file(text).is_err() {
                // `include!`d in expression position (not a list of items):
                // not a place for a derive; reported as not scanned
                proc_macro2::extra::invalidate_current_thread_spans();
                missing.insert(path);
                continue;
            }
            let mut children = Vec::new();
            let scanned;
            let decls: &[modscan::ModDecl] = match cached_decls {
                Some(d) => d,
                None if has_mods => {
                    scanned = modscan::mod_decls(text).unwrap_or_default();
                    &scanned
                }
                None => &[],
            };
            for decl in decls {
                children.push((modscan::resolve(&path, mod_rs, decl), false));
            }
            let dir = path.parent().unwrap_or(Path::new("."));
            if has_includes {
                for inc in modscan::include_paths(text) {
                    children.push((vec![(crate::fsutil::normalize(&dir.join(inc)), true)], true));
                }
            }
            // a file the prefilter clears is not parsed, and its text not kept
            // parsed after the walk, in parallel with the other files
            if wanted {
                queued.insert(files.len());
                to_parse.push((files.len(), path.clone(), text.to_string()));
            }
            let analysed = None;
            index.insert(key, files.len());
            files.push((
                CrateFile {
                    path,
                    needs: vec![kind],
                },
                analysed,
            ));
            stack.extend(children.into_iter().rev());
        }
    }
    // a file of a large crate is parsed beside the others (rayon: on the
    // caller's pool, the parsing pool in align-deps)
    use rayon::prelude::*;
    let parsed: Vec<(usize, Result<T, SourceError>)> = to_parse
        .par_iter()
        .map(|(i, path, text)| {
            (
                *i,
                with_parsed(path, text, |src, file| analyze(path, src, file)),
            )
        })
        .collect();
    for ((i, _, text), (_, r)) in to_parse.into_iter().zip(parsed) {
        files[i].1 = Some((text, r?));
    }
    Ok((files, missing.into_iter().collect()))
}

/// Reads `file` (of `size` bytes when opened) into the start of `buf`, and
/// returns how many bytes it read: plain `read` calls into one buffer that
/// only grows (no allocation or zeroing per file, no size query), stopping
/// at `size` bytes (a file that grows meanwhile is read as it was when
/// opened; nothing is written from it unchecked: a fix compares every file
/// with its planned-from text).
fn read_all(file: &mut std::fs::File, buf: &mut Vec<u8>, size: u64) -> std::io::Result<usize> {
    use std::io::Read as _;
    let size = usize::try_from(size).unwrap_or(usize::MAX);
    let mut filled = 0;
    while filled < size || size == 0 {
        if buf.len() < filled + 4096 {
            buf.resize((filled + 4096).max(size.saturating_add(1)), 0);
        }
        match file.read(&mut buf[filled..]) {
            Ok(0) => break,
            Ok(n) => filled += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(filled)
}

/// The Rust source files of every target of `package`, following each
/// target's module tree from its root (see [`analyze_crate`]). Reads them;
/// parses only `include!`d files (to tell a list of items from an expression).
///
/// # Errors
/// An unreadable file, or one that is too deeply nested to parse.
pub fn crate_source_files(package: &Package) -> anyhow::Result<Vec<CrateFile>> {
    let (files, _) = walk_crate(package, None, |_, _, _| false, |_, _, _| Ok(()))?;
    Ok(files.into_iter().map(|(f, _)| f).collect())
}

/// One analysed file of a crate.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AnalyzedFile {
    pub path: PathBuf,
    pub needs: Vec<DepKind>,
    /// The text that was analysed (compare before writing `fixed_text`);
    /// empty for a file the prefilter cleared (not parsed: nothing to find
    /// or fix there).
    pub original: String,
    pub analysis: FileAnalysis,
}

/// Rule 4's manifest edit: `thiserror` must be added to `table` of `manifest_path`.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct MissingDependency {
    pub manifest_path: PathBuf,
    pub kind: DepKind,
    /// Set when the crate depends on thiserror only under another name (then
    /// adding `thiserror` would declare the package twice: a person must rename).
    pub renamed_as: Option<String>,
}

impl MissingDependency {
    /// The table name, e.g. `dependencies`.
    pub fn table(&self) -> &'static str {
        self.kind.table()
    }
}

/// What [`analyze_crate`] found in one package.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CrateAnalysis {
    pub package: String,
    pub manifest_path: PathBuf,
    pub files: Vec<AnalyzedFile>,
    /// Every finding of every file plus rule 4's, sorted by path, line, column.
    pub findings: Vec<SourceFinding>,
    /// Rule 4: dependency tables that need `thiserror` (align-deps adds
    /// `thiserror` there in the form its policy wants, e.g. `{ workspace = true }`).
    pub missing_dependencies: Vec<MissingDependency>,
    /// `mod x;` declarations whose file does not exist (skipped).
    pub unresolved_modules: Vec<PathBuf>,
    /// The exempt files ([`AnalyzeOptions::exempt`]) that would have been
    /// reported, with how many findings: those are not in `findings`.
    pub exempted: Vec<(PathBuf, usize)>,
}

impl CrateAnalysis {
    /// `(path, original text, fixed text)` of each file a fix changes.
    pub fn source_edits(&self) -> impl Iterator<Item = (&Path, &str, &str)> {
        self.files.iter().filter_map(|f| {
            f.analysis
                .fixed_text
                .as_deref()
                .map(|new| (f.path.as_path(), f.original.as_str(), new))
        })
    }

    /// Whether any finding is left for a person.
    pub fn has_unfixable(&self) -> bool {
        self.findings.iter().any(|f| !f.fixable)
    }
}

/// How [`analyze_crate_with`] reads a crate.
#[derive(Debug, Clone, Default)]
pub struct AnalyzeOptions {
    /// Parse every file, also those [`prefilter::may_hold_a_finding`] clears
    /// (what the prefilter's exactness is tested against).
    pub parse_all: bool,
    /// Files the policy exempts (absolute paths): analysed, so that an
    /// exemption that covers nothing can be told, but their findings, fixes
    /// and derive sites are dropped before rule 4 is decided.
    pub exempt: Vec<PathBuf>,
    /// Files read ahead ([`super::prefetch`]): used where still unchanged.
    pub cache: Option<std::sync::Arc<SourceCache>>,
}

/// Analyses every source file of `package` (the module trees of all its targets) with
/// [`analyze_file`](super::analyze_file) and decides rule 4 (see [`analyze_crate_with`]).
///
/// # Errors
/// As [`analyze_crate_with`].
pub fn analyze_crate(package: &Package) -> anyhow::Result<CrateAnalysis> {
    analyze_crate_with(package, &AnalyzeOptions::default())
}

/// Analyses every source file of `package` (the module trees of all its
/// targets) and decides rule 4. A file that [`prefilter::may_hold_a_finding`]
/// clears is read (for its `mod` items) but not parsed: it cannot hold a
/// thiserror derive, so its analysis is empty either way (unless
/// `options.parse_all`).
///
/// Run it on every member whose thiserror is (or is being aligned to) 2 —
/// and for rule 4 on members that have no thiserror dependency at all but
/// derive it through a crate that re-exports thiserror 2.
///
/// # Errors
/// An unreadable file, or one that is parsed and does not parse
/// (`path:line:column: message`).
pub fn analyze_crate_with(
    package: &Package,
    options: &AnalyzeOptions,
) -> anyhow::Result<CrateAnalysis> {
    let ctx = CrateContext::for_package(package);
    let exempt: Vec<PathBuf> = options
        .exempt
        .iter()
        .map(|p| crate::fsutil::normalize(p))
        .collect();
    let is_exempt = |p: &Path| !exempt.is_empty() && exempt.contains(&crate::fsutil::normalize(p));
    // rule 4 can apply only to the code of a kind of target (lib, build
    // script, tests) that lacks a direct thiserror; elsewhere a file matters
    // only for rules 1-3 (a build script without a thiserror
    // build-dependency leaves the lib's files to the narrow test)
    let rule4 =
        [DepKind::Normal, DepKind::Build, DepKind::Dev].map(|k| !has_direct_thiserror(package, k));
    let parse = |path: &Path, text: &[u8], kind: DepKind| {
        options.parse_all
            || is_exempt(path)
            || if rule4[kind as usize] {
                prefilter::may_hold_a_finding_in(text, &ctx)
            } else {
                prefilter::may_hold_a_format_finding_in(text)
            }
    };
    let (files, unresolved_modules) = walk_crate(
        package,
        options.cache.as_deref(),
        parse,
        |path, src, file| analyze_parsed(path, src, file, &ctx),
    )?;
    let mut files: Vec<AnalyzedFile> = files
        .into_iter()
        .map(|(cf, analysed)| {
            let (original, analysis) = analysed.unwrap_or_default();
            AnalyzedFile {
                path: cf.path,
                needs: cf.needs,
                original,
                analysis,
            }
        })
        .collect();
    let manifest_path = package.manifest_path.clone().into_std_path_buf();
    let mut exempted = Vec::new();
    if files.iter().any(|f| is_exempt(&f.path)) {
        // what the exempt files would have been reported for, then without them
        let (all, _) = crate_findings(package, &files, &manifest_path);
        for f in files.iter_mut().filter(|f| is_exempt(&f.path)) {
            let n = all.iter().filter(|x| x.path == f.path).count();
            if n > 0 {
                exempted.push((f.path.clone(), n));
            }
            f.analysis = FileAnalysis::default();
        }
    }
    let (findings, missing_dependencies) = crate_findings(package, &files, &manifest_path);
    Ok(CrateAnalysis {
        package: package.name.to_string(),
        manifest_path,
        files,
        findings,
        missing_dependencies,
        unresolved_modules,
        exempted,
    })
}

/// Every finding of `files` plus rule 4's (sorted by path, line, column),
/// and rule 4's manifest edits.
fn crate_findings(
    package: &Package,
    files: &[AnalyzedFile],
    manifest_path: &Path,
) -> (Vec<SourceFinding>, Vec<MissingDependency>) {
    let mut findings: Vec<SourceFinding> = files
        .iter()
        .flat_map(|f| f.analysis.findings.iter().cloned())
        .collect();
    let mut missing_dependencies = Vec::new();
    for kind in [DepKind::Normal, DepKind::Build, DepKind::Dev] {
        let Some(site) = files
            .iter()
            .filter(|f| f.needs.contains(&kind))
            .find_map(|f| f.analysis.derives.first())
        else {
            continue;
        };
        if has_direct_thiserror(package, kind) {
            continue;
        }
        // dev code is also satisfied by [dependencies]: a missing Normal one is reported once
        if kind == DepKind::Dev
            && missing_dependencies
                .iter()
                .any(|m: &MissingDependency| m.kind == DepKind::Normal)
        {
            continue;
        }
        let (finding, missing) = missing_dependency(package, kind, site, manifest_path);
        findings.push(finding);
        missing_dependencies.push(missing);
    }
    findings.sort_by(|a, b| {
        (&a.path, a.line, a.column, a.rule).cmp(&(&b.path, b.line, b.column, b.rule))
    });
    (findings, missing_dependencies)
}

/// Rule 4 for one dependency kind: `package` derives thiserror's `Error` at
/// `site` in code of that kind but has no direct `thiserror` dependency.
fn missing_dependency(
    package: &Package,
    kind: DepKind,
    site: &DeriveSite,
    manifest_path: &Path,
) -> (SourceFinding, MissingDependency) {
    let renamed_as = thiserror_dependencies(package)
        .iter()
        .find_map(|d| d.rename.clone());
    let how = match &site.via {
        DeriveVia::ReExport { path } => format!(" through `{path}`"),
        _ => String::new(),
    };
    let table = kind.table();
    let manifest = manifest_path.display();
    let (message, suggestion) = match &renamed_as {
        None => (
            format!(
                "`{}` derives thiserror's Error{how} but has no direct `thiserror` in [{table}]: \
                 thiserror 2's derive expands to `::thiserror::` paths and needs the crate as a direct dependency",
                package.name
            ),
            format!("add `thiserror = {{ workspace = true }}` to [{table}] of {manifest}"),
        ),
        Some(r) => (
            format!(
                "`{}` derives thiserror's Error{how} but depends on thiserror only as `{r}`: \
                 thiserror 2's derive expands to `::thiserror::` paths",
                package.name
            ),
            format!(
                "rename the dependency `{r}` to `thiserror` in {manifest} (and its uses), or add `extern crate {r} as thiserror;` at the crate root"
            ),
        ),
    };
    let finding = SourceFinding {
        path: site.path.clone(),
        line: site.line,
        column: site.column,
        rule: Rule::MissingDirectDependency,
        message,
        suggestion: Some(suggestion),
        fixable: renamed_as.is_none(),
    };
    let missing = MissingDependency {
        manifest_path: manifest_path.to_path_buf(),
        kind,
        renamed_as,
    };
    (finding, missing)
}
