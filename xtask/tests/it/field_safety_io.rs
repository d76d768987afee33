//! The file system and stdout as users have them: symbolic links
//! (written through, never replaced; checked by fmt-check as cargo fmt does),
//! read-only files and directories, a stdout that is full or a closed pipe.

use std::os::unix::fs::PermissionsExt as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use crate::child::{Run, align_args, xtask_files};
use crate::field_safety::{old_and_new, rel_manifests};
use crate::support::{add_sources, align, crate_name, drifted_fleet, read, snapshot, write, xtask};

/// Moves `link` to `target` and puts a symbolic link to it in its place.
fn make_link(link: &Path, target: &Path) {
    std::fs::create_dir_all(target.parent().unwrap()).unwrap();
    std::fs::rename(link, target).unwrap();
    std::os::unix::fs::symlink(target, link).unwrap();
}

fn assert_link(link: &Path, target: &Path) {
    let md = std::fs::symlink_metadata(link).unwrap();
    assert!(
        md.file_type().is_symlink(),
        "{} is no longer a link",
        link.display()
    );
    assert_eq!(std::fs::read_link(link).unwrap(), target);
}

fn set_mode(p: &Path, mode: u32) {
    std::fs::set_permissions(p, std::fs::Permissions::from_mode(mode)).unwrap();
}

#[test]
fn a_linked_manifest_and_a_linked_source_stay_links_with_their_targets_fixed() {
    let dir = tempfile::tempdir().unwrap();
    let (root, outside) = (dir.path().join("ws"), dir.path().join("outside"));
    let fleet = drifted_fleet(&root, 3).unwrap();
    add_sources(&fleet, 3).unwrap();
    let manifest = fleet.manifest(&crate_name(1));
    let manifest_target = outside.join("c0001.toml");
    make_link(&manifest, &manifest_target);
    let source = root.join("crates/c0000/src/lib.rs");
    let source_target = outside.join("lib0.rs");
    make_link(&source, &source_target);
    let source_before = read(&source_target);
    let (code, out, err) = align(&root, &[]);
    assert_ne!(code, 2, "{out}{err}");
    assert_link(&manifest, &manifest_target);
    assert_link(&source, &source_target);
    let (_, new) = old_and_new(3);
    assert_eq!(read(&manifest_target), new["crates/c0001/Cargo.toml"]);
    assert_ne!(read(&source_target), source_before, "{out}");
    assert!(out.contains("fixed crates/c0000/src/lib.rs"), "{out}");
    assert_eq!(xtask_files(dir.path()), Vec::<PathBuf>::new());
}

/// A one-member workspace `a` whose crate root is a link to `shared/lib.rs`
/// outside the workspace, holding `lib`.
fn linked_crate_root(lib: &str) -> (tempfile::TempDir, PathBuf, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let base = dir.path().canonicalize().unwrap();
    let root = base.join("ws");
    write(
        &root,
        "Cargo.toml",
        "[workspace]\nresolver = \"2\"\nmembers = [\"a\"]\n",
    );
    write(
        &root,
        "a/Cargo.toml",
        "[package]\nname = \"a\"\nversion = \"0.1.0\"\nedition = \"2021\"\n",
    );
    let target = base.join("shared/lib.rs");
    write(&base, "shared/lib.rs", lib);
    std::fs::create_dir_all(root.join("a/src")).unwrap();
    std::os::unix::fs::symlink(&target, root.join("a/src/lib.rs")).unwrap();
    (dir, root, target)
}

fn fmt(root: &Path, extra: &[&str]) -> (i32, String, String) {
    let mut args = vec!["fmt-check", "--workspace", root.to_str().unwrap()];
    args.extend_from_slice(extra);
    xtask(&args)
}

#[test]
fn fmt_check_checks_and_fixes_a_crate_root_linked_from_outside_the_crate() {
    let (_dir, root, target) = linked_crate_root("pub fn f( ) -> u32 { 1 }\n");
    let cargo_fmt = Command::new(xtask::workspace::cargo())
        .args(["fmt", "--all", "--check"])
        .current_dir(&root)
        .output()
        .unwrap();
    assert!(!cargo_fmt.status.success(), "cargo fmt --check reports it");
    let (code, out, err) = fmt(&root, &[]);
    assert_eq!(code, 1, "{out}{err}");
    assert!(out.contains("a/src/lib.rs:1: not formatted"), "{out}");
    let (code, out, err) = fmt(&root, &["--fix"]);
    assert_eq!(code, 0, "{out}{err}");
    assert_link(&root.join("a/src/lib.rs"), &target);
    assert_eq!(read(&target), "pub fn f() -> u32 {\n    1\n}\n");
    assert_eq!(fmt(&root, &[]).0, 0);
}

#[test]
fn fmt_check_names_a_dangling_or_looping_link() {
    let (_dir, root, _) = linked_crate_root("pub fn f() {}\n");
    std::os::unix::fs::symlink(root.join("a/nowhere.rs"), root.join("a/src/dangling.rs")).unwrap();
    std::os::unix::fs::symlink(root.join("a/src/looping.rs"), root.join("a/src/looping.rs"))
        .unwrap();
    // nothing reaches them: cargo fmt never opens them, so they are notes
    // (an editor's lock file, `src/.#lib.rs`, is such a link)
    let (code, out, err) = fmt(&root, &[]);
    assert_eq!(code, 0, "{out}{err}");
    for name in ["a/src/dangling.rs", "a/src/looping.rs"] {
        assert!(
            out.contains(&format!(
                "note: {name}: not checked: a symbolic link that does not resolve"
            )),
            "{name}: {out}"
        );
    }
    // a module whose file they are: an error, named at the file
    std::fs::write(
        root.join("a/src/main.rs"),
        "mod dangling;\nmod looping;\nfn main() {}\n",
    )
    .unwrap();
    let (code, out, err) = fmt(&root, &[]);
    assert_eq!(code, 2, "{out}{err}");
    for name in ["a/src/dangling.rs", "a/src/looping.rs"] {
        assert!(
            out.contains(&format!("{name}:1: error")) && out.contains("does not resolve"),
            "{name}: {out}"
        );
    }
}

#[test]
fn a_read_only_manifest_or_directory_is_refused_and_nothing_is_written() {
    let dir = tempfile::tempdir().unwrap();
    let fleet = drifted_fleet(dir.path(), 3).unwrap();
    let manifest = fleet.manifest(&crate_name(1));
    set_mode(&manifest, 0o444);
    let before = snapshot(&fleet.root);
    let (code, out, err) = align(&fleet.root, &[]);
    assert_eq!(code, 2, "{out}{err}");
    assert!(
        err.contains("crates/c0001/Cargo.toml: read-only (mode 444)"),
        "{err}"
    );
    assert!(err.contains("nothing written"), "{err}");
    assert_eq!(snapshot(&fleet.root), before);

    set_mode(&manifest, 0o644);
    let crate_dir = fleet.root.join("crates").join(crate_name(2));
    set_mode(&crate_dir, 0o555);
    let before = snapshot(&fleet.root);
    let (code, out, err) = align(&fleet.root, &[]);
    set_mode(&crate_dir, 0o755);
    assert_eq!(code, 2, "{out}{err}");
    assert!(
        err.contains("crates/c0002/Cargo.toml: its directory") && err.contains("is read-only"),
        "{err}"
    );
    assert_eq!(snapshot(&fleet.root), before);
}

#[test]
fn a_read_only_source_is_not_reformatted() {
    let (_dir, root, target) = linked_crate_root("pub fn f() {}\n");
    write(&root, "a/src/extra.rs", "pub fn e( ) {}\n");
    set_mode(&root.join("a/src/extra.rs"), 0o444);
    write(target.parent().unwrap(), "lib.rs", "pub fn f( ) {}\n");
    let (code, out, err) = fmt(&root, &["--fix"]);
    assert_eq!(code, 2, "{out}{err}");
    assert!(err.contains("a/src/extra.rs: read-only"), "{err}");
    assert_eq!(read(&root.join("a/src/extra.rs")), "pub fn e( ) {}\n");
    assert_eq!(read(&target), "pub fn f( ) {}\n", "nothing written");
}

#[test]
fn a_fix_whose_report_cannot_be_printed_says_that_the_files_were_written() {
    let dir = tempfile::tempdir().unwrap();
    let fleet = drifted_fleet(dir.path(), 3).unwrap();
    let full = || Some(Stdio::from(std::fs::File::create("/dev/full").unwrap()));
    let done = Run::start_with(&align_args(&fleet.root, &[]), None, full()).finish();
    assert_eq!(done.code, Some(3), "{done:?}");
    assert!(done.err.contains("WROTE 3 file(s)"), "{}", done.err);
    assert!(done.err.contains("could not be printed"), "{}", done.err);
    assert!(!done.err.contains("nothing written"), "{}", done.err);
    let (_, new) = old_and_new(3);
    assert_eq!(rel_manifests(&fleet.root, 3), new);
    // nothing to write: a report that fails is exit 2, and true
    let done = Run::start_with(&align_args(&fleet.root, &["--check"]), None, full()).finish();
    assert_eq!(done.code, Some(2), "{done:?}");
}

#[test]
fn a_closed_pipe_is_not_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let fleet = drifted_fleet(dir.path(), 3).unwrap();
    let closed = |args: &[&str]| {
        let mut run = Run::start_with(args, None, Some(Stdio::piped()));
        drop(run.child.stdout.take()); // `| head -0`
        run.finish()
    };
    let done = closed(&align_args(&fleet.root, &["--check"]));
    assert_eq!(done.code, Some(1), "the violations decide: {done:?}");
    assert!(!done.err.contains("error"), "{}", done.err);
    let done = closed(&align_args(&fleet.root, &[]));
    assert_eq!(done.code, Some(0), "{done:?}");
    assert!(!done.err.contains("error"), "{}", done.err);
    let (_, new) = old_and_new(3);
    assert_eq!(rel_manifests(&fleet.root, 3), new);
}
