//! fmt-check against `cargo fmt --check` on what people's trees contain
//! (issue #40, items 9-12 and 14): a file two editions reach, members in
//! hidden directories, `#[path]` modules outside the workspace, a newline in
//! the workspace path, editor lock files and unreadable directories.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

use xtask::workspace::cargo;

/// A workspace at `<tempdir>/<sub>` (`sub` may hold any byte a path can).
struct Ws {
    _dir: tempfile::TempDir,
    root: PathBuf,
}

impl Ws {
    fn new(sub: &str) -> Ws {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap().join(sub);
        std::fs::create_dir_all(&root).unwrap();
        Ws { _dir: dir, root }
    }

    fn file(&self, rel: &str, text: &str) -> &Ws {
        let p = self.root.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
        self
    }

    fn read(&self, rel: &str) -> String {
        std::fs::read_to_string(self.root.join(rel)).unwrap()
    }

    fn package(&self, dir: &str, edition: &str) -> &Ws {
        let name = dir.rsplit('/').next().unwrap().trim_start_matches('.');
        self.file(
            &format!("{dir}/Cargo.toml"),
            &format!(
                "[package]\nname = \"{name}\"\nversion = \"0.1.0\"\nedition = \"{edition}\"\n"
            ),
        )
    }

    fn workspace(&self, members: &[&str]) -> &Ws {
        let members: Vec<String> = members.iter().map(|m| format!("\"{m}\"")).collect();
        self.file(
            "Cargo.toml",
            &format!(
                "[workspace]\nresolver = \"2\"\nmembers = [{}]\n",
                members.join(", ")
            ),
        )
    }

    fn run(&self, args: &[&str]) -> (i32, String, String) {
        let mut argv = vec![
            "fmt-check".to_string(),
            "--workspace".into(),
            self.root.to_str().unwrap().to_string(),
        ];
        argv.extend(args.iter().map(|s| s.to_string()));
        let (mut out, mut err) = (Vec::new(), Vec::new());
        let code = xtask::cli::run(argv, &mut out, &mut err);
        (
            code,
            String::from_utf8(out).unwrap(),
            String::from_utf8(err).unwrap(),
        )
    }

    /// The `file`s of the JSON rows of `kind`.
    fn json_files(&self, args: &[&str], kind: &str) -> BTreeSet<String> {
        let mut a = vec!["--format", "json"];
        a.extend_from_slice(args);
        let (_, out, _) = self.run(&a);
        out.lines()
            .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
            .filter(|v| v["kind"] == kind)
            .map(|v| v["file"].as_str().unwrap().to_string())
            .collect()
    }

    /// `cargo fmt --all --check` in the workspace: (passed, stdout).
    fn cargo_fmt_check(&self) -> (bool, String) {
        let out = Command::new(cargo())
            .args(["fmt", "--all", "--check"])
            .current_dir(&self.root)
            .output()
            .unwrap();
        (
            out.status.success(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
        )
    }
}

fn set(items: &[&str]) -> BTreeSet<String> {
    items.iter().map(|s| s.to_string()).collect()
}

/// Item 12: rustfmt's verbose output names each file it formats on a line
/// of its own; a newline in the workspace path split that line, so the crate
/// root was classed as beyond cargo fmt's reach.
#[test]
fn a_newline_in_the_workspace_path() {
    let w = Ws::new("ws\nwith a newline");
    w.workspace(&["a"])
        .package("a", "2021")
        .file("a/src/lib.rs", "mod m;\npub fn a( ) {}\n")
        .file("a/src/m.rs", "pub fn m() {}\n");
    assert!(!w.cargo_fmt_check().0);
    let (code, out, err) = w.run(&["--format", "json"]);
    assert_eq!(code, 1, "{out}{err}");
    let rows: Vec<serde_json::Value> = out
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let lib = rows.iter().find(|v| v["file"] == "a/src/lib.rs").unwrap();
    assert_eq!(lib["kind"], "unformatted");
    assert_eq!(lib["reached_by_cargo_fmt"], true, "{out}");
    let summary = rows.iter().find(|v| v["kind"] == "summary").unwrap();
    assert_eq!(summary["checked"], 2, "{out}");
    assert_eq!(summary["standalone"], 0, "{out}");
    let (code, out, _) = w.run(&["--fix"]);
    assert_eq!(code, 0, "{out}");
    assert_eq!(w.read("a/src/lib.rs"), "mod m;\npub fn a() {}\n");
    assert!(w.cargo_fmt_check().0);
}
