//! Valid Rust never crashes the tool: deeply nested
//! generics, parentheses and modules, which cargo compiles, are analysed
//! (no stack overflow); what still cannot be parsed is exit 2 naming the file.
//! Runs the built binary: a stack overflow aborts the whole process.

use std::process::Command;

use crate::support::{drifted_fleet, snapshot};

/// A file with a thiserror type whose message has a named argument (so the
/// prefilter lets it through to the parser) and the given nesting (the
/// parentheses in a constant: a function body that cannot matter to the
/// rules is not parsed).
fn deep_source(generics: usize, parens: usize, modules: usize) -> String {
    format!(
        "use thiserror::Error;\n\n#[derive(Debug, Error)]\n#[error(\"e {{x}}\", x = 1)]\npub struct E;\n\npub type Deep = {}u8{};\n\npub const P: u32 = {}1{};\n\n{}pub fn inner() {{}}\n{}\n",
        "Vec<".repeat(generics),
        ">".repeat(generics),
        "(".repeat(parens),
        ")".repeat(parens),
        "pub mod m {\n".repeat(modules),
        "}\n".repeat(modules),
    )
}

fn run(root: &std::path::Path, args: &[&str]) -> (Option<i32>, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_xtask"))
        .arg("align-deps")
        .args(args)
        .arg("--workspace")
        .arg(root)
        .output()
        .unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn deeply_nested_valid_rust_is_analysed() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    let fleet = drifted_fleet(&root, 2).unwrap();
    fleet
        .write("crates/c0000/src/lib.rs", &deep_source(300, 700, 400))
        .unwrap();
    let (code, out, err) = run(&root, &["--check"]);
    assert!(matches!(code, Some(0 | 1)), "{code:?}\n{out}\n{err}");
    let (code, out, err) = run(&root, &[]);
    assert_eq!(code, Some(0), "{out}\n{err}");
}

#[test]
fn nesting_beyond_what_can_be_parsed_is_exit_2_naming_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    let fleet = drifted_fleet(&root, 2).unwrap();
    fleet
        .write("crates/c0001/src/lib.rs", &deep_source(1, 200_000, 1))
        .unwrap();
    let before = snapshot(&root);
    for args in [&["--check"][..], &[][..]] {
        let (code, out, err) = run(&root, args);
        assert_eq!(code, Some(2), "{out}\n{err}");
        assert!(err.contains("crates/c0001/src/lib.rs"), "{err}");
        assert!(err.contains("nested too deeply"), "{err}");
    }
    assert_eq!(snapshot(&root), before);
}
