//! fmt-check against `cargo fmt --check` on what people's trees contain
//! (what real trees hold): a file two editions reach, members in
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
        let out = crate::support::output_within(
            Command::new(cargo())
                .args(["fmt", "--all", "--check"])
                .current_dir(&self.root),
        );
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

/// Item 9: cargo fmt checks a `#[path]` module once per crate that reaches
/// it, each with its own edition; 2021 and 2024 sort `use` lists
/// differently, so no text satisfies both: the file needs a person, and
/// `--fix` does not write it. Where the editions agree, `--fix` writes the
/// text every one accepts.
#[test]
fn a_module_of_a_2021_and_a_2024_crate() {
    let w = Ws::new("ws");
    w.workspace(&["a", "b"])
        .package("a", "2021")
        .package("b", "2024")
        .file("a/src/lib.rs", "#[path = \"../../shared/s.rs\"]\nmod s;\n")
        .file("b/src/lib.rs", "#[path = \"../../shared/s.rs\"]\nmod s;\n")
        // what 2021 keeps and 2024 sorts the other way
        .file("shared/s.rs", "pub use x::{a10, a9};\n");
    assert!(!w.cargo_fmt_check().0);
    let (code, out, err) = w.run(&[]);
    assert_eq!(code, 1, "{out}{err}");
    assert!(
        out.contains("shared/s.rs:1: not formatted (edition 2024"),
        "{out}"
    );
    assert!(out.contains("needs a person"), "{out}");
    assert_eq!(w.json_files(&[], "unformatted"), set(&["shared/s.rs"]));
    let (code, out, _) = w.run(&["--fix"]);
    assert_eq!(code, 1, "{out}");
    assert!(
        out.contains(
            "edition 2021 (crate `a`, default config) and edition 2024 (crate `b`, default config)"
        ),
        "{out}"
    );
    assert!(out.contains("1 file a person must format"), "{out}");
    assert_eq!(w.read("shared/s.rs"), "pub use x::{a10, a9};\n");

    // both editions agree on this one: fixed, and cargo fmt then passes
    w.file("shared/s.rs", "pub fn f( ) {}\n");
    assert!(!w.cargo_fmt_check().0);
    let (code, out, _) = w.run(&["--fix"]);
    assert_eq!(code, 0, "{out}");
    assert_eq!(w.read("shared/s.rs"), "pub fn f() {}\n");
    assert!(w.cargo_fmt_check().0);
    assert_eq!(w.run(&[]).0, 0);
}

/// Item 10: `cargo fmt --all` formats every member, one in a hidden
/// directory too; the rest of that hidden directory stays out of the walk.
#[test]
fn a_member_in_a_hidden_directory() {
    let w = Ws::new("ws");
    w.workspace(&[".ci/tool"])
        .package(".ci/tool", "2021")
        .file(".ci/tool/src/main.rs", "mod m;\nfn main( ) {}\n")
        .file(".ci/tool/src/m.rs", "pub fn m( ) {}\n")
        .file(".ci/tool/.cache/c.rs", "fn c( ) {}\n")
        .file(".ci/scratch/s.rs", "fn s( ) {}\n")
        .file(".ci/x.rs", "fn x( ) {}\n");
    let (passed, out) = w.cargo_fmt_check();
    assert!(!passed, "{out}");
    assert_eq!(
        w.json_files(&[], "unformatted"),
        set(&[".ci/tool/src/m.rs", ".ci/tool/src/main.rs"])
    );
    let (code, out, _) = w.run(&["--fix"]);
    assert_eq!(code, 0, "{out}");
    assert!(w.cargo_fmt_check().0);
    assert_eq!(w.read(".ci/x.rs"), "fn x( ) {}\n");
}

/// Item 11: a `#[path]` module outside the workspace directory is checked
/// (cargo fmt formats it with its crate) but never written: it needs a person.
#[test]
fn a_path_module_outside_the_workspace() {
    let w = Ws::new("ws");
    let outside = w.root.parent().unwrap().join("elsewhere/o.rs");
    std::fs::create_dir_all(outside.parent().unwrap()).unwrap();
    std::fs::write(&outside, "pub fn o( ) {}\n").unwrap();
    w.workspace(&["a"]).package("a", "2021").file(
        "a/src/lib.rs",
        "#[path = \"../../../elsewhere/o.rs\"]\nmod o;\nfn a( ) {}\n",
    );
    let (passed, out) = w.cargo_fmt_check();
    assert!(!passed);
    assert!(out.contains("elsewhere/o.rs"), "{out}");
    let shown = outside.display().to_string();
    assert_eq!(
        w.json_files(&[], "unformatted"),
        set(&[&shown, "a/src/lib.rs"])
    );
    let (code, out, _) = w.run(&["--fix"]);
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("lies outside the workspace"), "{out}");
    assert_eq!(
        w.read("a/src/lib.rs"),
        "#[path = \"../../../elsewhere/o.rs\"]\nmod o;\nfn a() {}\n"
    );
    assert_eq!(
        std::fs::read_to_string(&outside).unwrap(),
        "pub fn o( ) {}\n"
    );
}

/// A directory path longer than the system allows (`ENAMETOOLONG`): one
/// that cannot be read, also for root (file modes do not stop root).
fn unreadable_dir(base: &Path) {
    use rustix::fs::{Mode, OFlags};
    std::fs::create_dir_all(base).unwrap();
    let mut fd = rustix::fs::open(base, OFlags::DIRECTORY | OFlags::RDONLY, Mode::empty()).unwrap();
    let name = "d".repeat(200);
    for _ in 0..25 {
        rustix::fs::mkdirat(&fd, name.as_str(), Mode::from_raw_mode(0o755)).unwrap();
        fd = rustix::fs::openat(
            &fd,
            name.as_str(),
            OFlags::DIRECTORY | OFlags::RDONLY,
            Mode::empty(),
        )
        .unwrap();
    }
    rustix::fs::openat(
        &fd,
        "x.rs",
        OFlags::CREATE | OFlags::WRONLY,
        Mode::from_raw_mode(0o644),
    )
    .unwrap();
}

/// Item 14: an editor's lock file (`src/.#lib.rs`, a dangling link) is
/// not an error (cargo fmt never opens it) and `--fix` writes the rest; a
/// module file that does not resolve stays one. A directory that cannot be
/// read is a note, and one `[fmt] exclude` covers is not entered at all.
#[test]
fn lock_files_and_unreadable_directories() {
    let w = Ws::new("ws");
    w.workspace(&["a"])
        .package("a", "2021")
        .file("a/src/lib.rs", "fn a( ) {}\n");
    std::os::unix::fs::symlink("user@host.1234:1700000000", w.root.join("a/src/.#lib.rs")).unwrap();
    unreadable_dir(&w.root.join("gen"));
    w.file("policy/fleet.toml", "[fmt]\nexclude = [\"gen/**\"]\n");
    assert!(!w.cargo_fmt_check().0);
    let (code, out, err) = w.run(&[]);
    assert_eq!(code, 1, "{out}{err}");
    assert!(
        out.contains("a/src/.#lib.rs: not checked: a symbolic link that does not resolve"),
        "{out}"
    );
    assert!(out.contains("1 file not read"), "{out}");
    assert!(out.contains("1 directory not entered"), "{out}");
    let (code, out, err) = w.run(&["--fix"]);
    assert_eq!(code, 0, "{out}{err}");
    assert_eq!(w.read("a/src/lib.rs"), "fn a() {}\n");
    assert!(w.cargo_fmt_check().0);

    // not excluded: a note, and cargo fmt (which never reads it) agrees
    w.file("policy/fleet.toml", "[fmt]\nexclude = []\n");
    let (code, out, err) = w.run(&[]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains(": cannot read this directory ("), "{out}");

    // a module whose file is a dangling link: rustfmt cannot read it either
    w.file("a/src/lib.rs", "mod gone;\nfn a() {}\n");
    std::os::unix::fs::symlink("nowhere.rs", w.root.join("a/src/gone.rs")).unwrap();
    assert!(!w.cargo_fmt_check().0);
    let (code, out, err) = w.run(&[]);
    assert_eq!(code, 2, "{out}{err}");
    assert!(out.contains("a/src/gone.rs:1: error"), "{out}");
}
