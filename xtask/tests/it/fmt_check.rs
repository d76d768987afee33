//! `cargo xtask fmt-check` on fixture workspaces generated into temp dirs,
//! driven in-process through `xtask::cli::run`.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

use xtask::workspace::cargo;

struct Fixture {
    dir: tempfile::TempDir,
}

impl Fixture {
    fn new() -> Fixture {
        Fixture {
            dir: tempfile::tempdir().unwrap(),
        }
    }

    fn path(&self) -> PathBuf {
        self.dir.path().canonicalize().unwrap()
    }

    fn file(&self, rel: &str, text: &str) -> &Fixture {
        let p = self.dir.path().join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
        self
    }

    fn read(&self, rel: &str) -> String {
        std::fs::read_to_string(self.dir.path().join(rel)).unwrap()
    }

    fn package(&self, dir: &str, edition: &str) -> &Fixture {
        let name = dir.rsplit('/').next().unwrap();
        self.file(
            &format!("{dir}/Cargo.toml"),
            &format!(
                "[package]\nname = \"{name}\"\nversion = \"0.1.0\"\nedition = \"{edition}\"\n"
            ),
        )
    }

    fn workspace(&self, members: &[&str], default_edition: &str) -> &Fixture {
        let members: Vec<String> = members.iter().map(|m| format!("\"{m}\"")).collect();
        self.file(
            "Cargo.toml",
            &format!(
                "[workspace]\nresolver = \"2\"\nmembers = [{}]\n\n[workspace.package]\nedition = \"{default_edition}\"\n",
                members.join(", ")
            ),
        )
    }

    /// Runs `fmt-check --workspace <fixture> args...`: (exit code, stdout, stderr).
    fn run(&self, args: &[&str]) -> (i32, String, String) {
        let mut argv = vec![
            "fmt-check".to_string(),
            "--workspace".into(),
            self.path().display().to_string(),
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

    /// Paths (relative) fmt-check reports as unformatted, from `--format json`.
    fn unformatted(&self) -> BTreeSet<String> {
        let (_, out, _) = self.run(&["--format", "json"]);
        json_lines(&out)
            .into_iter()
            .filter(|v| v["kind"] == "unformatted")
            .map(|v| v["file"].as_str().unwrap().to_string())
            .collect()
    }

    /// `cargo fmt --all --check`: (passed, relative paths it reports).
    fn cargo_fmt_check(&self) -> (bool, BTreeSet<String>) {
        let out = Command::new(cargo())
            .args(["fmt", "--all", "--check"])
            .current_dir(self.path())
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        let root = self.path();
        let files = stdout
            .lines()
            .filter_map(|l| match l.strip_prefix("Diff in ") {
                Some(d) => d.trim_end_matches(':').rsplit_once(':').map(|x| x.0),
                None => l.strip_prefix("Incorrect newline style in "),
            })
            .map(|p| {
                Path::new(p)
                    .strip_prefix(&root)
                    .unwrap()
                    .display()
                    .to_string()
            })
            .collect();
        (out.status.success(), files)
    }
}

fn rustfmt() -> PathBuf {
    xtask::fmt_check::rustfmt::Rustfmt::locate().unwrap().path
}

fn json_lines(out: &str) -> Vec<serde_json::Value> {
    out.lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect()
}

fn set(items: &[&str]) -> BTreeSet<String> {
    items.iter().map(|s| s.to_string()).collect()
}

/// Three crates: `new` on edition 2024 (2024 style sorts `a9` before `a10`;
/// `async fn`), `old` on 2018 (`gen` is an identifier, reserved in 2024) with a
/// module declared by a macro, `narrow` with its own rustfmt.toml
/// (`max_width = 40`); `include!`d files; a stray file outside any package.
fn three_crates() -> Fixture {
    let f = Fixture::new();
    f.workspace(&["crates/new", "crates/old", "crates/narrow"], "2024")
        .package("crates/new", "2024")
        .file(
            "crates/new/src/lib.rs",
            "mod m;\npub use m::{a9, a10};\n\ninclude!(\"extra.rs\");\n\npub async fn run() -> u32 {\n    m::a9() + m::a10()\n}\n\npub fn long_name(a: u32, b: u32) -> u32 {\n    a + b\n}\n",
        )
        .file("crates/new/src/m.rs", "pub fn a9() -> u32 {\n    9\n}\npub fn a10() -> u32 {\n    10\n}\n")
        // include!d, out of format: cargo fmt never sees it
        .file("crates/new/src/extra.rs", "pub fn extra( )->u32{ 1 }\n")
        .package("crates/old", "2018")
        .file(
            "crates/old/src/lib.rs",
            "macro_rules! declare {\n    ($name:ident) => {\n        mod $name;\n    };\n}\ndeclare!(hidden);\n\ninclude!(\"more.rs\");\n\npub fn gen() -> u32 {\n    let gen = 1;\n    gen\n}\n",
        )
        // a module declared inside a macro, out of format
        .file("crates/old/src/hidden.rs", "pub fn h( ) {}\n")
        // include!d, formatted, but only parses on edition 2018 (gen)
        .file("crates/old/src/more.rs", "pub fn more() -> u32 {\n    let gen = 2;\n    gen\n}\n")
        .package("crates/narrow", "2021")
        .file("crates/narrow/rustfmt.toml", "max_width = 40\n")
        .file("crates/narrow/src/lib.rs", "pub fn long_name(a: u32, b: u32) -> u32 {\n    a + b\n}\n")
        // outside any package: workspace default edition (2024 style)
        .file("scripts/tool.rs", "use std::{u8, u16};\n\npub use x::{a9, a10};\n");
    f
}

#[test]
fn finds_what_cargo_fmt_misses_and_agrees_on_what_it_reaches() {
    let f = three_crates();
    let (passed, cargo_says) = f.cargo_fmt_check();
    assert!(!passed);
    // cargo fmt sees only narrow's crate root; the include!d file and the
    // macro-declared module are out of format and it passes over them.
    assert_eq!(cargo_says, set(&["crates/narrow/src/lib.rs"]));

    let (code, out, err) = f.run(&[]);
    assert_eq!(code, 1, "{out}\n{err}");
    assert_eq!(
        f.unformatted(),
        set(&[
            "crates/narrow/src/lib.rs",
            "crates/new/src/extra.rs",
            "crates/old/src/hidden.rs"
        ])
    );
    assert!(out.contains("crates/new/src/extra.rs:1: not formatted (edition 2024, default config, cargo fmt does not reach it)"), "{out}");
    assert!(
        out.contains(
            "crates/narrow/src/lib.rs:1: not formatted (edition 2021, crates/narrow/rustfmt.toml)"
        ),
        "{out}"
    );
    assert!(
        out.contains(
            "+++ b/crates/old/src/hidden.rs\n@@ -1 +1 @@\n-pub fn h( ) {}\n+pub fn h() {}\n"
        ),
        "{out}"
    );
    assert!(out.contains("note: scripts/tool.rs: outside any package, formatted with edition 2024 (the workspace default"), "{out}");
    assert!(
        out.contains("8 files checked (4 beyond cargo fmt's reach"),
        "{out}"
    );
}

#[test]
fn include_only_drift_fails_where_cargo_fmt_passes() {
    let f = Fixture::new();
    f.workspace(&["a"], "2021")
        .package("a", "2021")
        .file("a/src/lib.rs", "include!(\"gen/table.rs\");\n")
        .file("a/src/gen/table.rs", "pub const T: [u8; 2] = [1,2];\n");
    let (passed, _) = f.cargo_fmt_check();
    assert!(passed, "cargo fmt --check does not look at include!d files");
    let (code, out, _) = f.run(&[]);
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("a/src/gen/table.rs:1: not formatted"), "{out}");
}

#[test]
fn agrees_with_cargo_fmt_file_by_file() {
    let f = Fixture::new();
    f.workspace(&["p", "q"], "2021")
        .package("p", "2021")
        .package("q", "2018");
    let formatted = "pub fn f(x: u32) -> u32 {\n    x + 1\n}\n";
    let unformatted = "pub fn f(x:u32)->u32{x+1}\n";
    let mut expect = BTreeSet::new();
    for (pkg, files) in [("p", 6), ("q", 4)] {
        let mods: String = (0..files).map(|i| format!("mod m{i};\n")).collect();
        f.file(&format!("{pkg}/src/lib.rs"), &mods);
        f.file(&format!("{pkg}/src/main.rs"), "fn main( ) { }\n");
        expect.insert(format!("{pkg}/src/main.rs"));
        f.file(&format!("{pkg}/tests/t.rs"), "#[test]\nfn t() {}\n");
        for i in 0..files {
            let bad = (i + pkg.len()) % 3 == 0;
            f.file(
                &format!("{pkg}/src/m{i}.rs"),
                if bad { unformatted } else { formatted },
            );
            if bad {
                expect.insert(format!("{pkg}/src/m{i}.rs"));
            }
        }
    }
    let (_, cargo_says) = f.cargo_fmt_check();
    assert_eq!(cargo_says, expect);
    assert_eq!(f.unformatted(), expect);
    let (_, out, _) = f.run(&["--format", "json"]);
    let summary = json_lines(&out)
        .into_iter()
        .find(|v| v["kind"] == "summary")
        .unwrap();
    assert_eq!(summary["checked"], 16);
    assert_eq!(summary["standalone"], 0, "{out}");
}

#[test]
fn a_file_that_does_not_parse_is_an_error_and_the_rest_is_still_reported() {
    let f = Fixture::new();
    f.workspace(&["a"], "2021")
        .package("a", "2021")
        .file("a/src/lib.rs", "mod broken;\nmod fine;\n")
        .file("a/src/broken.rs", "pub fn b( {\n")
        .file("a/src/fine.rs", "pub fn f( ) {}\n")
        .file("a/src/stray.rs", "fn s( ) {}\n");
    let (code, out, err) = f.run(&[]);
    assert_eq!(code, 2, "{out}\n{err}");
    assert!(
        out.contains("a/src/broken.rs:1: error: rustfmt cannot format it:"),
        "{out}"
    );
    assert!(out.contains("--> a/src/broken.rs:1:"), "{out}");
    assert!(out.contains("a/src/fine.rs:1: not formatted"), "{out}");
    assert!(out.contains("a/src/stray.rs:1: not formatted"), "{out}");
    assert!(err.contains("1 file cannot be formatted"), "{err}");
    // --fix writes nothing while any file cannot be formatted
    let (code, _, err) = f.run(&["--fix"]);
    assert_eq!(code, 2);
    assert!(err.contains("--fix wrote nothing"), "{err}");
    assert_eq!(f.read("a/src/fine.rs"), "pub fn f( ) {}\n");
    let (_, out, _) = f.run(&["--format", "github"]);
    assert!(
        out.contains(
            "::error file=a/src/broken.rs,line=1,title=fmt-check%3A rustfmt cannot format it::"
        ),
        "{out}"
    );
}

#[test]
fn crlf_files_follow_newline_style() {
    let f = Fixture::new();
    f.workspace(&["a", "u"], "2021")
        .package("a", "2021")
        .file("a/src/lib.rs", "mod bad;\nmod ok;\n")
        .file("a/src/ok.rs", "pub fn ok() {}\r\npub fn ok2() {}\r\n")
        .file("a/src/bad.rs", "pub fn bad( ) {}\r\npub fn b2() {}\r\n")
        .package("u", "2021")
        .file("u/rustfmt.toml", "newline_style = \"Unix\"\n")
        .file("u/src/lib.rs", "pub fn u() {}\r\n");
    let (_, cargo_says) = f.cargo_fmt_check();
    assert_eq!(f.unformatted(), cargo_says);
    assert_eq!(cargo_says, set(&["a/src/bad.rs", "u/src/lib.rs"]));
    let (_, out, _) = f.run(&[]);
    assert!(
        out.contains("u/src/lib.rs:1: line endings differ from the config's newline_style"),
        "{out}"
    );
    let (code, out, _) = f.run(&["--fix"]);
    assert_eq!(code, 0, "{out}");
    // Auto keeps the file's CRLF; the explicit Unix style converts.
    assert_eq!(
        f.read("a/src/bad.rs"),
        "pub fn bad() {}\r\npub fn b2() {}\r\n"
    );
    assert_eq!(
        f.read("a/src/ok.rs"),
        "pub fn ok() {}\r\npub fn ok2() {}\r\n"
    );
    assert_eq!(f.read("u/src/lib.rs"), "pub fn u() {}\n");
    assert_eq!(f.run(&[]).0, 0);
    assert!(f.cargo_fmt_check().0);
}

#[test]
fn excluded_globs_and_hidden_and_target_dirs_are_skipped() {
    let f = Fixture::new();
    f.workspace(&["a"], "2021")
        .package("a", "2021")
        .file("a/src/lib.rs", "pub fn a() {}\n")
        .file("a/fixtures/bad.rs", "fn x( {\n")
        .file("a/vendor/v.rs", "fn v( ) {}\n")
        .file(".hidden/h.rs", "fn h( ) {}\n")
        .file("target/debug/build/x/out/g.rs", "fn g( ) {}\n")
        .file(
            "target/CACHEDIR.TAG",
            "Signature: 8a477f597d28d172789f06886806bc55\n",
        )
        .file(
            "policy/fleet.toml",
            "[fmt]\nexclude = [\"**/fixtures/**\", \"a/vendor/*.rs\"]\n",
        );
    let (code, out, _) = f.run(&[]);
    assert_eq!(code, 0, "{out}");
    // `**/fixtures/**` covers a/fixtures whole: not entered, its files not counted
    assert!(out.contains("1 file checked (0 beyond cargo fmt's reach, 0 behind #[rustfmt::skip], 1 excluded by policy and 1 directory not entered)"), "{out}");
    f.file("policy/fleet.toml", "[fmt]\nexclude = [\"[\"]\n");
    let (code, _, err) = f.run(&[]);
    assert_eq!(code, 2);
    assert!(err.contains("bad glob"), "{err}");
}

#[test]
fn rustfmt_skip_modules_are_left_alone_like_cargo_fmt_does() {
    let f = Fixture::new();
    f.workspace(&["a"], "2021")
        .package("a", "2021")
        .file(
            "a/src/lib.rs",
            "#[rustfmt::skip]\nmod generated;\nmod inner;\n",
        )
        .file("a/src/generated.rs", "pub fn g( ) {}\nmod deep;\n")
        .file("a/src/generated/deep.rs", "fn d( ) {}\n")
        .file("a/src/inner.rs", "#![rustfmt::skip]\nfn i( ) {}\n");
    assert!(f.cargo_fmt_check().0);
    let (code, out, _) = f.run(&[]);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("3 behind #[rustfmt::skip]"), "{out}");
}

/// An inner skip (`#![rustfmt::skip]`,
/// `#![cfg_attr(rustfmt, rustfmt_skip)]`) at the top of a module file skips
/// it and the modules below it, as cargo fmt does; at the top of a crate
/// root it skips the root only (cargo fmt still formats its modules).
#[test]
fn inner_skip_attributes_skip_like_cargo_fmt() {
    let f = Fixture::new();
    f.workspace(&["a", "b"], "2021")
        .package("a", "2021")
        .file(
            "a/src/lib.rs",
            "mod gen;\nmod legacy;\nmod inl {\n    #![rustfmt::skip]\n    mod deep;\n}\n",
        )
        .file(
            "a/src/gen.rs",
            "//! generated\n#![allow(dead_code)]\n#![rustfmt::skip]\nmod table;\nfn g( ) {}\n",
        )
        .file("a/src/gen/table.rs", "pub const T: [u8; 2] = [1,2];\n")
        .file(
            "a/src/legacy.rs",
            "#![cfg_attr(rustfmt, rustfmt_skip)]\nmod old;\nfn l( ) {}\n",
        )
        .file("a/src/legacy/old.rs", "fn o( ) {}\n")
        .file("a/src/inl/deep.rs", "fn d( ) {}\n")
        .package("b", "2021")
        .file("b/src/lib.rs", "#![rustfmt::skip]\nmod m;\nfn r( ) {}\n")
        .file("b/src/m.rs", "fn m( ) {}\n");
    let (passed, cargo_says) = f.cargo_fmt_check();
    assert!(!passed);
    assert_eq!(cargo_says, set(&["b/src/m.rs"]));
    assert_eq!(f.unformatted(), cargo_says);
    let (code, out, _) = f.run(&[]);
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("6 behind #[rustfmt::skip]"), "{out}");
    f.file("b/src/m.rs", "fn m() {}\n");
    assert!(f.cargo_fmt_check().0);
    let (code, out, _) = f.run(&[]);
    assert_eq!(code, 0, "{out}");
}

#[test]
fn fix_writes_what_rustfmt_writes_and_keeps_permissions() {
    use std::os::unix::fs::PermissionsExt as _;
    let f = three_crates();
    let copy = Fixture::new();
    copy_dir(&f.path(), &copy.path());
    let exec = f.path().join("crates/new/src/extra.rs");
    std::fs::set_permissions(&exec, std::fs::Permissions::from_mode(0o751)).unwrap();

    let (code, out, _) = f.run(&["--fix"]);
    assert_eq!(code, 0, "{out}");
    assert!(
        out.contains("crates/new/src/extra.rs:1: reformatted"),
        "{out}"
    );
    assert_eq!(
        std::fs::metadata(&exec).unwrap().permissions().mode() & 0o777,
        0o751
    );
    assert_eq!(f.run(&[]).0, 0, "a second run finds nothing");
    assert!(f.unformatted().is_empty());

    // What cargo fmt writes for the files it reaches, rustfmt on its own for the rest.
    let st = Command::new(cargo())
        .args(["fmt", "--all"])
        .current_dir(copy.path())
        .status()
        .unwrap();
    assert!(st.success());
    for (file, edition) in [
        ("crates/new/src/extra.rs", "2024"),
        ("crates/old/src/hidden.rs", "2018"),
    ] {
        let st = Command::new(rustfmt())
            .args(["--edition", edition, file])
            .current_dir(copy.path())
            .status()
            .unwrap();
        assert!(st.success());
    }
    for file in [
        "crates/narrow/src/lib.rs",
        "crates/new/src/extra.rs",
        "crates/old/src/hidden.rs",
        "crates/new/src/lib.rs",
    ] {
        assert_eq!(f.read(file), copy.read(file), "{file}");
    }
}

/// A file whose text holds lines that look like rustfmt's verbose output
/// (`Formatting P`, `P:`, `Spent ... formatting phase`) is fixed whole: the
/// formatted text never comes from splitting rustfmt's output stream.
#[test]
fn fix_keeps_files_whose_text_looks_like_rustfmt_output() {
    let f = Fixture::new();
    f.workspace(&["crates/a"], "2021")
        .package("crates/a", "2021");
    let root = f.path();
    for (rel, name) in [
        ("crates/a/src/lib.rs", "lib"),
        ("crates/a/src/inc.rs", "inc"),
    ] {
        let abs = root.join(rel).display().to_string();
        let head = if name == "lib" {
            "include!(\"inc.rs\");\n"
        } else {
            ""
        };
        f.file(
            rel,
            &format!(
                "{head}pub const {}: &str = r\"\nFormatting {abs}\n{abs}:\n\nSpent 0.001 secs in the parsing phase, and 0.000 secs in the formatting phase\ntail\";\npub fn  {name}( )->u32 {{ 1 }}\n",
                name.to_uppercase()
            ),
        );
    }
    let (code, out, err) = f.run(&["--fix"]);
    assert_eq!(code, 0, "{out}{err}");
    for (rel, name) in [
        ("crates/a/src/lib.rs", "lib"),
        ("crates/a/src/inc.rs", "inc"),
    ] {
        let text = f.read(rel);
        let st = Command::new(rustfmt())
            .args(["--edition", "2021", "--check", rel])
            .current_dir(&root)
            .status()
            .unwrap();
        assert!(st.success(), "{rel} is formatted after --fix:\n{text}");
        assert!(
            text.contains("formatting phase\ntail\";\n"),
            "{rel} kept its text:\n{text}"
        );
        assert!(
            text.contains(&format!("pub fn {name}() -> u32 {{")),
            "{text}"
        );
    }
    assert_eq!(f.run(&[]).0, 0, "a second run finds nothing");
}

/// `--fix` never writes a file whose "formatted" text changes tokens or
/// comments (a rustfmt bug must not reach the disk): a fake rustfmt that
/// changes a literal is caught by the token comparison, and nothing is written.
#[test]
fn fix_refuses_output_that_changes_more_than_formatting() {
    use std::os::unix::fs::PermissionsExt as _;
    let f = Fixture::new();
    f.workspace(&["a"], "2021")
        .package("a", "2021")
        .file("a/src/lib.rs", "pub fn  a() -> u32 { 1 }\n");
    let fake = f.path().join("fake-rustfmt");
    std::fs::write(
        &fake,
        "#!/bin/sh\n\
         case \"$1\" in --version) echo 'rustfmt 1.0.0-fake'; exit 0;; esac\n\
         if [ \"$1\" = -v ]; then for a in \"$@\"; do case \"$a\" in *.rs) echo \"Formatting $a\"; echo \"$a\";; esac; done; exit 1; fi\n\
         sed 's/1/2/; s/  / /'\n",
    )
    .unwrap();
    std::fs::set_permissions(&fake, std::fs::Permissions::from_mode(0o755)).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_xtask"))
        .args(["fmt-check", "--fix", "--workspace"])
        .arg(f.path())
        .env("RUSTFMT", &fake)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(2), "{stdout}");
    assert!(
        stdout.contains("a/src/lib.rs:1: error: rustfmt's output changes more than formatting"),
        "{stdout}"
    );
    assert_eq!(f.read("a/src/lib.rs"), "pub fn  a() -> u32 { 1 }\n");
}

/// `--fix` is all-or-nothing: a file edited on disk while fmt-check ran
/// (here by a fake rustfmt, as an editor would) stops the whole fix before
/// anything is written, and nothing is reported as reformatted.
#[test]
fn fix_writes_nothing_when_a_file_changed_on_disk_meanwhile() {
    use std::os::unix::fs::PermissionsExt as _;
    let f = Fixture::new();
    f.workspace(&["a"], "2021")
        .package("a", "2021")
        .file("a/src/lib.rs", "pub fn  a() {}\ninclude!(\"b.rs\");\n")
        .file("a/src/b.rs", "pub fn  b() {}\n");
    let b = f.path().join("a/src/b.rs");
    let fake = f.path().join("fake-rustfmt");
    std::fs::write(
        &fake,
        format!(
            "#!/bin/sh\n\
             case \"$1\" in --version) echo 'rustfmt 1.0.0-fake'; exit 0;; esac\n\
             if [ \"$1\" = -v ]; then for a in \"$@\"; do case \"$a\" in *.rs) echo \"Formatting $a\"; echo \"$a\";; esac; done; exit 1; fi\n\
             mkdir '{b}.once' 2>/dev/null && echo '// edited meanwhile' >> '{b}'\n\
             sed 's/  / /'\n",
            b = b.display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&fake, std::fs::Permissions::from_mode(0o755)).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_xtask"))
        .args(["fmt-check", "--fix", "--workspace"])
        .arg(f.path())
        .env("RUSTFMT", &fake)
        .output()
        .unwrap();
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert_eq!(out.status.code(), Some(2), "{stdout}{stderr}");
    assert!(stderr.contains("a/src/b.rs: changed on disk"), "{stderr}");
    assert!(!stdout.contains("reformatted"), "{stdout}");
    assert_eq!(
        f.read("a/src/lib.rs"),
        "pub fn  a() {}\ninclude!(\"b.rs\");\n"
    );
    assert_eq!(
        f.read("a/src/b.rs"),
        "pub fn  b() {}\n// edited meanwhile\n"
    );
}

#[test]
fn json_and_github_formats() {
    let f = three_crates();
    let (_, out, _) = f.run(&["--format", "github"]);
    assert!(
        out.contains("::error file=crates/old/src/hidden.rs,line=1,title=fmt-check::not formatted (edition 2018, default config, cargo fmt does not reach it); run `cargo xtask fmt-check --fix`"),
        "{out}"
    );
    let (_, out, _) = f.run(&["--format", "json"]);
    let v = json_lines(&out);
    let narrow = v
        .iter()
        .find(|v| v["file"] == "crates/narrow/src/lib.rs")
        .unwrap();
    assert_eq!(narrow["edition"], "2021");
    assert_eq!(narrow["config"], "crates/narrow/rustfmt.toml");
    assert_eq!(narrow["reached_by_cargo_fmt"], true);
    assert!(
        narrow["diff"]
            .as_str()
            .unwrap()
            .contains("+pub fn long_name(")
    );
}

#[test]
fn missing_workspace_is_exit_2() {
    let d = tempfile::tempdir().unwrap();
    let (mut out, mut err) = (Vec::new(), Vec::new());
    let code = xtask::cli::run(
        ["fmt-check", "--workspace", d.path().to_str().unwrap()],
        &mut out,
        &mut err,
    );
    assert_eq!(code, 2);
    assert!(String::from_utf8(err).unwrap().contains("no Cargo.toml"));
}

fn copy_dir(from: &Path, to: &Path) {
    for e in walkdir::WalkDir::new(from) {
        let e = e.unwrap();
        let dest = to.join(e.path().strip_prefix(from).unwrap());
        if e.file_type().is_dir() {
            std::fs::create_dir_all(&dest).unwrap();
        } else {
            std::fs::copy(e.path(), &dest).unwrap();
        }
    }
}

fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .args([
            "-c",
            "user.name=t",
            "-c",
            "user.email=t@example.com",
            "-c",
            "commit.gpgsign=false",
        ])
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn verify_formatting_only_accepts_a_rustfmt_pass_and_rejects_edits() {
    let f = Fixture::new();
    f.workspace(&["a"], "2021")
        .package("a", "2021")
        .file("a/src/lib.rs", "mod b;\nuse std::{fmt, io};\npub fn limit()->u32{ // the limit\n    match 1 { 1 => { 10 }, _ => 20 } }\n")
        .file("a/src/b.rs", "/// Doc.\npub fn b(x:u32,y:u32)->u32{ x+y }\n")
        .file("README.md", "hi\n");
    let dir = f.path();
    git(&dir, &["init", "-q"]);
    git(&dir, &["add", "-A"]);
    git(&dir, &["commit", "-qm", "root"]);
    // a root commit adds files: not formatting-only, and it does not crash
    let (code, out, _) = f.run(&["--verify-formatting-only", "HEAD"]);
    assert_eq!(code, 1, "{out}");
    assert!(
        out.contains("a/src/b.rs:1: not formatting-only: added by the commit"),
        "{out}"
    );

    // a pure rustfmt pass (plus a README edit) passes and lists the README
    assert_eq!(f.run(&["--fix"]).0, 0);
    assert!(
        f.read("a/src/lib.rs")
            .contains("match 1 {\n        1 => 10,"),
        "{}",
        f.read("a/src/lib.rs")
    );
    f.file("README.md", "hello\n");
    git(&dir, &["commit", "-qam", "rustfmt"]);
    let (code, out, _) = f.run(&["--verify-formatting-only", "HEAD"]);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("non-Rust files changed by"), "{out}");
    assert!(out.contains("  M README.md"), "{out}");
    assert!(
        out.contains("2 Rust files changed, 0 not formatting-only, 1 non-Rust files changed"),
        "{out}"
    );

    // reformatting that also changes a literal fails, naming the file and line
    let lib = f.read("a/src/lib.rs");
    f.file(
        "a/src/lib.rs",
        &lib.replace("=> 20", "=> 21")
            .replace("    match", "  match"),
    );
    git(&dir, &["commit", "-qam", "sneaky literal"]);
    let (code, out, _) = f.run(&["--verify-formatting-only", "HEAD"]);
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("a/src/lib.rs:7: not formatting-only: tokens differ: before (line 7) `= > 20 } }`, after (line 7) `= > 21 } }`"), "{out}");

    // dropping a comment fails too; earlier commits still verify by name
    let b = f.read("a/src/b.rs");
    f.file("a/src/b.rs", &b.replace("/// Doc.\n", ""));
    git(&dir, &["commit", "-qam", "drop a doc comment"]);
    let (code, out, _) = f.run(&["--verify-formatting-only", "HEAD", "--format", "json"]);
    assert_eq!(code, 1, "{out}");
    let v = json_lines(&out);
    assert_eq!(v[0]["file"], "a/src/b.rs");
    assert!(
        v[0]["message"]
            .as_str()
            .unwrap()
            .contains("comment dropped or changed (before, line 1): `/// Doc.`"),
        "{out}"
    );
    assert_eq!(f.run(&["--verify-formatting-only", "HEAD~2"]).0, 0);
    let (code, _, err) = f.run(&["--verify-formatting-only", "nope"]);
    assert_eq!(code, 2);
    assert!(err.contains("`nope` is not a commit"), "{err}");
}
