//! The thiserror 1 -> 2 rules are one registered source migration: the
//! alignment core (`xtask/src/align_deps/` but the migration's own files)
//! reaches them only through the `Migration` trait, so no code line of the
//! core names thiserror, but for the one registration.

use std::path::{Path, PathBuf};

/// The migration's own files, and the trait and registry.
const MIGRATION_FILES: &[&str] = &["sources.rs", "thiserror2.rs", "migration.rs"];

/// What the core may say: the registration (`mod thiserror2;`,
/// `SOURCE_MIGRATION = &thiserror2::Thiserror2`), xtask's own error derive
/// (thiserror is its dependency too), and the rule catalogue (`rule.rs`
/// describes every finding's code, the migration's among them).
fn allowed(file: &Path, line: &str) -> bool {
    line.contains("mod thiserror2;")
        || line.contains("&thiserror2::Thiserror2")
        || line.contains("thiserror::Error")
        || file.ends_with("rule.rs")
}

fn rs_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            rs_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

#[test]
fn the_alignment_core_names_thiserror_only_where_it_registers_the_migration() {
    let dir = std::env::var_os("CARGO_MANIFEST_DIR")
        .map_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")), PathBuf::from)
        .join("src/align_deps");
    let mut files = Vec::new();
    rs_files(&dir, &mut files);
    files.sort();
    let mut named = Vec::new();
    for f in &files {
        let name = f.file_name().unwrap().to_str().unwrap();
        if f.parent() == Some(dir.as_path()) && MIGRATION_FILES.contains(&name) {
            continue;
        }
        let text = std::fs::read_to_string(f).unwrap();
        // the code, not its tests (their fixtures are thiserror manifests)
        let code = text.split("\n#[cfg(test)]").next().unwrap_or("");
        for (i, line) in code.lines().enumerate() {
            let t = line.trim_start();
            if t.starts_with("//") || !t.to_ascii_lowercase().contains("thiserror") {
                continue;
            }
            if !allowed(f, t) {
                named.push(format!("{}:{}: {t}", f.display(), i + 1));
            }
        }
    }
    assert!(
        named.is_empty(),
        "the alignment core names thiserror outside the registered migration:\n{}",
        named.join("\n")
    );
    // and the registration is there: one migration, thiserror 1 -> 2
    let registry = std::fs::read_to_string(dir.join("mod.rs")).unwrap();
    assert!(registry.contains("SOURCE_MIGRATION: &dyn Migration = &thiserror2::Thiserror2;"));
}
