//! `align_deps::run` reads as its phases: load inputs -> plan -> judge ->
//! report, each a function of the previous one's output
//! (`xtask/src/align_deps/phases.rs`), and nothing else; `Cargo.lock` reaches
//! the phases through their inputs, not through state of the process.

use std::path::{Path, PathBuf};

#[test]
fn align_deps_run_is_load_plan_judge_report() {
    let path = std::env::var_os("CARGO_MANIFEST_DIR")
        .map_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")), PathBuf::from)
        .join("src/align_deps/mod.rs");
    let text = std::fs::read_to_string(&path).unwrap();
    let start = text
        .find("pub fn run(")
        .unwrap_or_else(|| panic!("{}: no `pub fn run(`", path.display()));
    let body = &text[start..];
    let body = &body[..body.find("\n}\n").expect("the end of run") + 3];
    let calls = [
        "phases::load(",
        "phases::plan(",
        "phases::judge(",
        "phases::report(",
    ];
    let at: Vec<usize> = calls
        .iter()
        .map(|c| {
            body.find(c)
                .unwrap_or_else(|| panic!("run does not call {c}:\n{body}"))
        })
        .collect();
    assert!(
        at.windows(2).all(|w| w[0] < w[1]),
        "run calls the phases out of order:\n{body}"
    );
    // the phases' outputs feed each other; nothing else happens in run
    assert!(body.contains("phases::plan(inputs)"), "{body}");
    assert!(body.contains("phases::judge(planned,"), "{body}");
    assert!(body.contains("phases::report(judged,"), "{body}");
    assert!(
        body.lines().count() <= 10,
        "run is {} lines:\n{body}",
        body.lines().count()
    );
}

/// `xtask/src/` in this checkout.
fn src() -> PathBuf {
    std::env::var_os("CARGO_MANIFEST_DIR")
        .map_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")), PathBuf::from)
        .join("src")
}

/// The `.rs` files under `dir`, with their texts, their comment lines left out.
fn rust_files(dir: &Path) -> Vec<(PathBuf, String)> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            out.extend(rust_files(&p));
        } else if p.extension().is_some_and(|x| x == "rs") {
            let text = std::fs::read_to_string(&p).unwrap();
            let code: Vec<&str> = text
                .lines()
                .filter(|l| !l.trim_start().starts_with("//"))
                .collect();
            out.push((p, code.join("\n")));
        }
    }
    out
}

#[test]
fn cargo_lock_reaches_the_phases_through_their_inputs() {
    let dir = src().join("align_deps");
    let files = rust_files(&dir);
    let (_, lockfile) = files
        .iter()
        .find(|(p, _)| p.ends_with("align_deps/lockfile.rs"))
        .expect("align_deps/lockfile.rs");
    // no memo of the process: nothing one run (or test) leaves for the next
    for state in ["static ", "Mutex", "RwLock", "thread_local!", "Atomic"] {
        assert!(
            !lockfile.contains(state),
            "lockfile.rs holds process-wide state (`{state}`)"
        );
    }
    // read once, in the load phase; every other use is handed that read (the
    // one exception: `sources::analyze`, the analysis outside a run)
    for (path, text) in &files {
        let rel = path.strip_prefix(&dir).unwrap().to_string_lossy();
        let mut reads = text.matches("lockfile::read(").count();
        if rel == "sources.rs" {
            let start = text.find("pub fn analyze(").expect("sources::analyze");
            let body = &text[start..];
            let body = &body[..body.find("\n}\n").expect("the end of analyze")];
            reads -= body.matches("lockfile::read(").count();
        }
        let expected = usize::from(rel == "phases.rs");
        assert_eq!(
            reads, expected,
            "{rel} reads Cargo.lock {reads} times (the load phase reads it, once)"
        );
        if rel != "phases.rs" && rel != "lockfile.rs" {
            assert!(
                !text.contains("read_ahead("),
                "{rel}: only the load phase reads ahead"
            );
        }
    }
}
