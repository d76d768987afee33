//! `align_deps::run` reads as its phases: load inputs -> plan -> judge ->
//! report, each a function of the previous one's output
//! (`xtask/src/align_deps/phases.rs`), and nothing else.

use std::path::PathBuf;

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
