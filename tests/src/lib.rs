//! Workspace-level integration tests live in `tests/tests/it/` (one binary).
//!
//! The Rust examples of README.md, docs/backend.md and docs/training.md are compiled and run
//! as doctests from here, and a unit test checks that every code path
//! ARCHITECTURE.md names exists, so the documents cannot drift from the
//! code.

#[cfg(doctest)]
#[doc = include_str!("../../README.md")]
mod readme {}

#[cfg(doctest)]
#[doc = include_str!("../../docs/backend.md")]
mod backend_guide {}

#[cfg(doctest)]
#[doc = include_str!("../../docs/training.md")]
mod training_guide {}

#[cfg(test)]
mod tests {
    use std::path::{Path, PathBuf};

    /// How many code paths the document `text` names, and those that name
    /// nothing in `tree` (every path of the checkout, relative, `/`-separated).
    ///
    /// A backticked token is a code path when it has a `/` or a source file's
    /// extension (`.rs`, `.cu`, `.cuh`, `.toml`, `.py`, `.yml`, `.jsonl`;
    /// documents, `.md`, are links and not checked). It names something when
    /// it is a path from the root; or from the directory of the current
    /// `` ### `dir` `` section of the code map (or its `src/`, `tests/`,
    /// `src/device/` or `tests/it/`); or the tail of a path under that
    /// directory (under the root outside a section). Braces `{a,b}` and `*`
    /// are expanded.
    fn architecture_paths(text: &str, tree: &[String]) -> (usize, Vec<String>) {
        const EXT: [&str; 7] = [".rs", ".cu", ".cuh", ".toml", ".py", ".yml", ".jsonl"];
        let mut section = String::new();
        let (mut checked, mut missing) = (0, Vec::new());
        for line in text.lines() {
            if let Some(dir) = line.strip_prefix("### `").and_then(|r| r.split('`').next()) {
                section = dir.trim_end_matches('/').to_string();
                continue;
            }
            if line.starts_with("## ") {
                section.clear();
            }
            for token in line.split('`').skip(1).step_by(2) {
                let token = token.trim_end_matches(['.', ',', ';', ':']);
                let skip = token.is_empty()
                    || token.contains(char::is_whitespace)
                    || ["::", "=", "<"].iter().any(|s| token.contains(s))
                    || token.starts_with(['-', '$', '.'])
                    || token.ends_with(".md")
                    || !(token.contains('/') || EXT.iter().any(|e| token.ends_with(e)));
                if skip {
                    continue;
                }
                for path in expand_braces(token) {
                    checked += 1;
                    let path = path.trim_end_matches('/');
                    let mut bases = vec![String::new()];
                    if !section.is_empty() {
                        for sub in ["", "/src", "/tests", "/src/device", "/tests/it"] {
                            bases.push(format!("{section}{sub}/"));
                        }
                    }
                    let names = |candidate: &str| tree.iter().any(|t| wildcard(candidate, t));
                    // or a tail of a path below the section's directory (or the root)
                    let tail = match section.as_str() {
                        "" => format!("*/{path}"),
                        dir => format!("{dir}/*/{path}"),
                    };
                    let found = bases.iter().any(|b| names(&format!("{b}{path}"))) || names(&tail);
                    if !found {
                        missing.push(if section.is_empty() {
                            path.to_string()
                        } else {
                            format!("{path} (section `{section}`)")
                        });
                    }
                }
            }
        }
        (checked, missing)
    }

    /// `a{b,c}d` as `abd`, `acd`.
    fn expand_braces(token: &str) -> Vec<String> {
        match (token.find('{'), token.find('}')) {
            (Some(open), Some(close)) if open < close => token[open + 1..close]
                .split(',')
                .flat_map(|alt| {
                    expand_braces(&format!("{}{alt}{}", &token[..open], &token[close + 1..]))
                })
                .collect(),
            _ => vec![token.to_string()],
        }
    }

    /// Whether `text` matches `pattern`, where `*` stands for any run of characters.
    fn wildcard(pattern: &str, text: &str) -> bool {
        match pattern.split_once('*') {
            None => pattern == text,
            Some((head, rest)) => {
                text.starts_with(head)
                    && (head.len()..=text.len())
                        .any(|i| text.is_char_boundary(i) && wildcard(rest, &text[i..]))
            }
        }
    }

    /// Every path under `root`, relative and `/`-separated (no `.git`, no `target`).
    fn tree(root: &Path) -> Vec<String> {
        let mut out = Vec::new();
        let mut todo = vec![PathBuf::new()];
        while let Some(rel) = todo.pop() {
            for entry in std::fs::read_dir(root.join(&rel)).expect("readable directory") {
                let entry = entry.expect("readable entry");
                let name = entry.file_name().to_string_lossy().into_owned();
                if rel.as_os_str().is_empty() && (name == ".git" || name == "target") {
                    continue;
                }
                let path = rel.join(&name);
                out.push(path.to_string_lossy().replace('\\', "/"));
                if entry.file_type().expect("file type").is_dir() {
                    todo.push(path);
                }
            }
        }
        out.sort();
        out
    }

    #[test]
    fn every_code_path_in_architecture_md_exists() {
        // the run-time manifest dir: the checkout the test runs in
        let manifest = std::env::var_os("CARGO_MANIFEST_DIR").expect("cargo sets it");
        let root = Path::new(&manifest)
            .parent()
            .expect("tests/ sits in the root");
        let text = std::fs::read_to_string(root.join("ARCHITECTURE.md")).expect("ARCHITECTURE.md");
        let (checked, missing) = architecture_paths(&text, &tree(root));
        assert!(
            checked > 100,
            "only {checked} paths found: is the code map still there?"
        );
        assert!(
            missing.is_empty(),
            "ARCHITECTURE.md names paths that are not in the tree (fix the code map):\n  {}",
            missing.join("\n  ")
        );
    }

    #[test]
    fn a_missing_or_moved_path_is_reported() {
        let tree: Vec<String> = [
            "crates",
            "crates/a",
            "crates/a/src",
            "crates/a/src/lib.rs",
            "crates/a-b/src/old.rs", // a sibling whose name extends `crates/a`
        ]
        .map(String::from)
        .to_vec();
        let doc = "# A\n\n## Code map\n### `crates/a`\n`src/lib.rs`, `lib.rs`, `src/gone.rs`, \
                   `{lib,old}.rs`, `Layout::new`\n\n## Invariants\n`crates/a/src/*.rs`, `a/src/lib.rs`, \
                   `src/lib.rs`, `docs/guide.md`, every `.rs` file\n";
        let (checked, missing) = architecture_paths(doc, &tree);
        assert_eq!(checked, 8);
        assert_eq!(
            missing,
            [
                "src/gone.rs (section `crates/a`)",
                "old.rs (section `crates/a`)"
            ]
        );
    }

    #[test]
    fn braces_and_wildcards() {
        assert_eq!(
            expand_braces("a/{b,c}_ops.rs"),
            ["a/b_ops.rs", "a/c_ops.rs"]
        );
        assert!(wildcard("*/src/*_ops.rs", "crates/x/src/index_ops.rs"));
        assert!(!wildcard("*/src/*_ops.rs", "crates/x/src/lib.rs"));
    }
}
