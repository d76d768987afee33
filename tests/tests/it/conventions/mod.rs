//! Workspace conventions, checked on every crate's sources:
//!
//! - no import cycles between sibling modules ([`modgraph`]);
//! - no file under a `src/`, and no CUDA source under `kernels/`, over
//!   [`sizes::MAX_LINES`] lines ([`sizes`]);
//! - no backend crate reads files through the build machine's path
//!   (`env!("CARGO_MANIFEST_DIR")`): its tests go into the GPU test archive,
//!   which runs in a checkout at another path;
//! - no `.rs`, `.cu`, `.cuh` or `.py` file under `crates/`, `kernels/`,
//!   `xtask/` or `tests/` cites an issue tracker entry by number
//!   ([`citations`]): the source says what the rule is.
//!
//! The checkers are unit-tested on in-memory fixtures in their modules, so
//! these tests cannot pass by reading nothing.

mod citations;
mod modgraph;
mod sizes;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Import cycles tolerated, as `<target root> <parent>: <members>`: none.
/// An entry needs a reason beside it; a stale entry fails the test.
const ALLOWED_CYCLES: &[&str] = &[];

/// Long files tolerated (workspace-relative paths): none. An entry needs a
/// reason beside it; a stale entry fails the test.
const ALLOWED_LONG_FILES: &[&str] = &[];

fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("the tests package sits in the workspace root")
        .to_path_buf()
}

/// Every member directory of the workspace (workspace-relative), from the root `Cargo.toml`.
fn members(root: &Path) -> Vec<PathBuf> {
    let text = std::fs::read_to_string(root.join("Cargo.toml")).expect("root Cargo.toml");
    let manifest: toml::Table = text.parse().expect("root Cargo.toml parses");
    let list = manifest["workspace"]["members"]
        .as_array()
        .expect("[workspace] members");
    let mut out = Vec::new();
    for m in list {
        let m = m.as_str().expect("a member is a string");
        if let Some(dir) = m.strip_suffix("/*") {
            for e in std::fs::read_dir(root.join(dir)).expect("member glob directory") {
                let p = e.expect("directory entry").path();
                if p.join("Cargo.toml").is_file() {
                    out.push(p.strip_prefix(root).expect("under the root").to_path_buf());
                }
            }
        } else {
            out.push(PathBuf::from(m));
        }
    }
    out.sort();
    out
}

/// The root files of a member's targets: lib, bins, tests, examples, benches, build script.
fn target_roots(root: &Path, member: &Path) -> Vec<PathBuf> {
    let dir = root.join(member);
    let mut roots: Vec<PathBuf> = ["src/lib.rs", "src/main.rs", "build.rs"]
        .iter()
        .map(|f| dir.join(f))
        .filter(|p| p.is_file())
        .collect();
    for sub in ["src/bin", "tests", "examples", "benches"] {
        let Ok(entries) = std::fs::read_dir(dir.join(sub)) else {
            continue;
        };
        for e in entries {
            let p = e.expect("directory entry").path();
            if p.extension().is_some_and(|x| x == "rs") {
                roots.push(p);
            } else if p.join("main.rs").is_file() {
                roots.push(p.join("main.rs"));
            }
        }
    }
    roots.sort();
    roots
        .into_iter()
        .map(|p| p.strip_prefix(root).expect("under the root").to_path_buf())
        .collect()
}

fn rust_files_under(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries {
        let p = e.expect("directory entry").path();
        if p.is_dir() {
            rust_files_under(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// Offenders not in `allowed`, and `allowed` entries that no longer offend.
fn judge(found: &[(String, String)], allowed: &[&str]) -> Vec<String> {
    let mut problems: Vec<String> = found
        .iter()
        .filter(|(key, _)| !allowed.contains(&key.as_str()))
        .map(|(_, message)| message.clone())
        .collect();
    for a in allowed {
        if !found.iter().any(|(key, _)| key == a) {
            problems.push(format!(
                "allowlisted `{a}` no longer offends: remove it from the allowlist"
            ));
        }
    }
    problems
}

#[test]
fn no_import_cycles_in_any_crate() {
    let root = workspace_root();
    let source = |p: &Path| std::fs::read_to_string(root.join(p)).ok();
    let mut found = Vec::new();
    let mut unreadable = Vec::new();
    let mut modules = 0;
    for member in members(&root) {
        for target in target_roots(&root, &member) {
            let tree = modgraph::read_tree(&target, &source);
            modules += tree.modules.len();
            unreadable.extend(tree.unreadable.iter().cloned());
            for c in tree.cycles() {
                let key = format!("{} {}", target.display(), c.key());
                found.push((key.clone(), format!("{key}\n{c}")));
            }
        }
    }
    assert!(
        unreadable.is_empty(),
        "module files not read:\n{}",
        unreadable.join("\n")
    );
    // Not vacuous: xtask alone has dozens of modules.
    assert!(modules > 50, "only {modules} modules read");
    let problems = judge(&found, ALLOWED_CYCLES);
    assert!(problems.is_empty(), "\n{}\n", problems.join("\n\n"));
}

#[test]
fn no_long_source_files_in_any_crate() {
    let root = workspace_root();
    let mut files = BTreeMap::new();
    for member in members(&root) {
        let mut list = Vec::new();
        rust_files_under(&root.join(&member).join("src"), &mut list);
        for p in list {
            let text = std::fs::read_to_string(&p).expect("readable source");
            files.insert(
                p.strip_prefix(&root).expect("under the root").to_path_buf(),
                text,
            );
        }
    }
    assert!(files.len() > 50, "only {} files read", files.len());
    let found: Vec<(String, String)> = sizes::long_files(&files, sizes::MAX_LINES)
        .into_iter()
        .map(|(p, n)| {
            let key = p.display().to_string();
            let message = format!(
                "{key}: {n} lines (at most {}): cut it into modules by what each part does",
                sizes::MAX_LINES
            );
            (key, message)
        })
        .collect();
    let problems = judge(&found, ALLOWED_LONG_FILES);
    assert!(problems.is_empty(), "\n{}\n", problems.join("\n"));
}

#[test]
fn no_long_kernel_files() {
    let root = workspace_root();
    let mut files = BTreeMap::new();
    for e in std::fs::read_dir(root.join("kernels")).expect("kernels/") {
        let p = e.expect("directory entry").path();
        if p.extension().is_some_and(|x| x == "cu" || x == "cuh") {
            let text = std::fs::read_to_string(&p).expect("readable kernel source");
            files.insert(
                p.strip_prefix(&root).expect("under the root").to_path_buf(),
                text,
            );
        }
    }
    assert!(files.len() >= 5, "only {} kernel files read", files.len());
    let found: Vec<(String, String)> = sizes::long_files(&files, sizes::MAX_LINES)
        .into_iter()
        .map(|(p, n)| {
            let key = p.display().to_string();
            let message = format!(
                "{key}: {n} lines (at most {}): split it by op family into files listed in \
                 KERNEL_FILES (crates/rtx-backend-cuda/src/source.rs), shared device helpers \
                 in one header",
                sizes::MAX_LINES
            );
            (key, message)
        })
        .collect();
    let problems = judge(&found, &[]);
    assert!(problems.is_empty(), "\n{}\n", problems.join("\n"));
}

/// Every file under `dir` (recursively) whose extension is one of `exts`,
/// leaving out build outputs (`target/`) and hidden directories.
fn files_under(dir: &Path, exts: &[&str], out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries {
        let p = e.expect("directory entry").path();
        let name = p.file_name().map(|n| n.to_string_lossy().into_owned());
        if p.is_dir() {
            if name.is_some_and(|n| n != "target" && !n.starts_with('.')) {
                files_under(&p, exts, out);
            }
        } else if p.extension().is_some_and(|x| exts.iter().any(|e| x == *e)) {
            out.push(p);
        }
    }
}

#[test]
fn no_issue_tracker_citations_in_sources() {
    let root = workspace_root();
    let mut files = BTreeMap::new();
    for dir in ["crates", "kernels", "xtask", "tests"] {
        let mut list = Vec::new();
        files_under(&root.join(dir), &citations::EXTENSIONS, &mut list);
        for p in list {
            let text = std::fs::read_to_string(&p).expect("readable source");
            files.insert(
                p.strip_prefix(&root).expect("under the root").to_path_buf(),
                text,
            );
        }
    }
    // Not vacuous: every kind of file is read.
    for ext in citations::EXTENSIONS {
        assert!(
            files
                .keys()
                .any(|p| p.extension().is_some_and(|x| x == ext)),
            "no .{ext} file read"
        );
    }
    assert!(files.len() > 100, "only {} files read", files.len());
    let problems = judge(&citations::citations(&files), &[]);
    assert!(
        problems.is_empty(),
        "{} citations of issue numbers:\n{}\n",
        problems.len(),
        problems.join("\n")
    );
}

/// `path:line` of every use of the compile-time manifest directory in `files`.
fn compile_time_manifest_dirs(files: &BTreeMap<PathBuf, String>) -> Vec<(String, String)> {
    let needle = ["env!(\"", "CARGO_MANIFEST_DIR\")"].concat();
    let mut found = Vec::new();
    for (p, text) in files {
        for (n, line) in text.lines().enumerate() {
            if line.contains(&needle) && !line.trim_start().starts_with("//") {
                let key = format!("{}:{}", p.display(), n + 1);
                let message = format!(
                    "{key}: {needle} is where the crate was built; a test archive runs elsewhere: read \
                     std::env::var_os(\"CARGO_MANIFEST_DIR\") at run time (cargo and nextest set it)"
                );
                found.push((key, message));
            }
        }
    }
    found
}

#[test]
fn backend_tests_read_files_through_the_run_time_manifest_dir() {
    let root = workspace_root();
    let mut files = BTreeMap::new();
    let crates: Vec<PathBuf> = members(&root)
        .into_iter()
        .filter(|m| m.starts_with("crates"))
        .collect();
    for member in &crates {
        let mut list = Vec::new();
        for sub in ["src", "tests", "benches"] {
            rust_files_under(&root.join(member).join(sub), &mut list);
        }
        for p in list {
            let text = std::fs::read_to_string(&p).expect("readable source");
            files.insert(
                p.strip_prefix(&root).expect("under the root").to_path_buf(),
                text,
            );
        }
    }
    assert!(files.len() > 50, "only {} files read", files.len());
    let problems = judge(&compile_time_manifest_dirs(&files), &[]);
    assert!(problems.is_empty(), "\n{}\n", problems.join("\n"));
    // the checker finds what it looks for
    let fixture = BTreeMap::from([(
        PathBuf::from("crates/x/src/a.rs"),
        [
            "// env!(\"",
            "CARGO_MANIFEST_DIR\")\nlet p = env!(\"",
            "CARGO_MANIFEST_DIR\");\n",
        ]
        .concat(),
    )]);
    let found = compile_time_manifest_dirs(&fixture);
    assert_eq!(found.len(), 1);
    assert_eq!(found[0].0, "crates/x/src/a.rs:2");
}

#[test]
fn every_member_is_seen() {
    let root = workspace_root();
    let members = members(&root);
    for m in [
        "xtask",
        "tests",
        "crates/rtx-backend-cuda",
        "crates/rtx-tensor",
    ] {
        assert!(
            members.contains(&PathBuf::from(m)),
            "{m} not in {members:?}"
        );
    }
    assert!(
        target_roots(&root, Path::new("xtask")).contains(&PathBuf::from("xtask/tests/it/main.rs"))
    );
}

#[test]
fn judge_reports_new_offenders_and_stale_allowlist_entries() {
    let found = vec![
        ("a".to_string(), "a is bad".to_string()),
        ("b".to_string(), "b is bad".to_string()),
    ];
    let problems = judge(&found, &["a", "c"]);
    assert_eq!(problems.len(), 2, "{problems:?}");
    assert_eq!(problems[0], "b is bad");
    assert!(problems[1].contains("`c` no longer offends"));
}
