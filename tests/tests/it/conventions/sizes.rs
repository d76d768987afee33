//! The file-length check: no source file under a `src/` over the limit.
//!
//! Exempt: files in a `tests/` directory, and a `tests.rs` that its parent
//! declares `#[cfg(test)] mod tests;` (test-only code).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The longest a source file may be, in lines.
pub const MAX_LINES: usize = 800;

/// Every file of `files` (path -> text, all under some `src/`) longer than
/// `limit` lines and not exempt, with its line count, in path order.
pub fn long_files(files: &BTreeMap<PathBuf, String>, limit: usize) -> Vec<(PathBuf, usize)> {
    files
        .iter()
        .filter(|(path, _)| !exempt(path, files))
        .map(|(path, text)| (path.clone(), text.lines().count()))
        .filter(|(_, n)| *n > limit)
        .collect()
}

fn exempt(path: &Path, files: &BTreeMap<PathBuf, String>) -> bool {
    let in_tests_dir = path
        .parent()
        .is_some_and(|d| d.components().any(|c| c.as_os_str() == "tests"));
    in_tests_dir || (path.file_name().is_some_and(|n| n == "tests.rs") && test_only(path, files))
}

/// Whether the module file that owns `dir/tests.rs` declares it under `#[cfg(test)]`.
fn test_only(path: &Path, files: &BTreeMap<PathBuf, String>) -> bool {
    let Some(dir) = path.parent() else {
        return false;
    };
    let mut owners = vec![dir.join("mod.rs"), dir.join("lib.rs"), dir.join("main.rs")];
    if let (Some(up), Some(name)) = (dir.parent(), dir.file_name()) {
        owners.push(up.join(format!("{}.rs", name.to_string_lossy())));
    }
    owners.iter().filter_map(|o| files.get(o)).any(|text| {
        let lines: Vec<&str> = text.lines().map(str::trim).collect();
        lines.windows(2).any(|w| {
            w[0] == "#[cfg(test)]" && (w[1] == "mod tests;" || w[1] == "pub(crate) mod tests;")
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn files(list: &[(&str, usize)]) -> BTreeMap<PathBuf, String> {
        list.iter()
            .map(|(p, n)| (PathBuf::from(p), "x\n".repeat(*n)))
            .collect()
    }

    #[test]
    fn a_file_over_the_limit_is_named_with_its_length() {
        let f = files(&[
            ("a/src/lib.rs", 801),
            ("a/src/ok.rs", 800),
            ("a/src/m/big.rs", 1200),
        ]);
        assert_eq!(
            long_files(&f, MAX_LINES),
            [
                (PathBuf::from("a/src/lib.rs"), 801),
                (PathBuf::from("a/src/m/big.rs"), 1200)
            ]
        );
    }

    #[test]
    fn test_only_files_are_exempt_and_other_tests_rs_are_not() {
        let mut f = files(&[
            ("a/src/m/tests.rs", 900),
            ("a/src/n/tests.rs", 900),
            ("a/src/tests/fixtures.rs", 900),
        ]);
        f.insert(
            "a/src/m/mod.rs".into(),
            "pub fn f() {}\n#[cfg(test)]\nmod tests;\n".into(),
        );
        f.insert("a/src/n.rs".into(), "pub mod tests;\n".into());
        assert_eq!(
            long_files(&f, MAX_LINES),
            [(PathBuf::from("a/src/n/tests.rs"), 900)]
        );
    }
}
