//! `docs/fleet.md` is the fleet tool's one reference, kept true by these
//! tests: its rules table is the one `xtask::align_deps::rule` generates
//! (a rule code in the code and not in the docs, or the other way round,
//! fails), and its environment table lists exactly the `XTASK_*` and
//! `RTX_GPU_TEST_*` variables the code reads.

use std::collections::BTreeSet;
use std::path::PathBuf;

use xtask::align_deps::rule::{Code, rules_table};

/// The repository root of the checkout the tests run in (the run-time
/// `CARGO_MANIFEST_DIR`, which nextest remaps, else the build's).
fn repo() -> PathBuf {
    let dir = std::env::var_os("CARGO_MANIFEST_DIR")
        .map_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")), PathBuf::from);
    dir.join("..")
}

fn fleet_md() -> String {
    let path = repo().join("docs/fleet.md");
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The text between the `<!-- NAME:begin ... -->` line and `<!-- NAME:end -->`.
fn section<'a>(doc: &'a str, name: &str) -> &'a str {
    let begin = format!("<!-- {name}:begin");
    let end = format!("<!-- {name}:end -->");
    let start = doc
        .find(&begin)
        .unwrap_or_else(|| panic!("docs/fleet.md has no `{begin}` line"));
    let start = start + doc[start..].find('\n').expect("a line after the marker") + 1;
    let stop = doc[start..]
        .find(&end)
        .unwrap_or_else(|| panic!("docs/fleet.md has no `{end}` line"));
    &doc[start..start + stop]
}

#[test]
fn the_rules_table_is_the_one_the_rule_enums_generate() {
    let doc = fleet_md();
    let table = section(&doc, "rules");
    let want = rules_table();
    assert!(
        table == want,
        "docs/fleet.md: the rules table between `<!-- rules:begin` and `<!-- rules:end -->` \
         is not the one xtask/src/align_deps/rule.rs describes (a rule added, removed, renamed \
         or redescribed on one side only); replace it with:\n{want}"
    );
    // every code has its row, and every row is a code (also said by the
    // equality above, named here)
    let rows: BTreeSet<&str> = table
        .lines()
        .filter_map(|l| l.strip_prefix("| `")?.split('`').next())
        .collect();
    let codes: BTreeSet<&str> = Code::all().map(Code::code).collect();
    assert_eq!(
        rows, codes,
        "docs/fleet.md's rules table and the rule codes differ"
    );
}

#[test]
fn every_source_rule_code_the_docs_name_exists() {
    let doc = fleet_md();
    let codes: BTreeSet<&str> = Code::all().map(Code::code).collect();
    for (i, _) in doc.match_indices("`thiserror2-") {
        let name = doc[i + 1..].split('`').next().unwrap();
        assert!(
            codes.contains(name),
            "docs/fleet.md names `{name}`, which is no rule code (xtask/src/align_deps/rule.rs)"
        );
    }
}

/// `XTASK_*` and `RTX_GPU_TEST_*` names in string literals of `text`.
fn env_names(text: &str, out: &mut BTreeSet<String>) {
    for prefix in ["\"XTASK_", "\"RTX_GPU_TEST_"] {
        for (i, _) in text.match_indices(prefix) {
            let name: String = text[i + 1..]
                .chars()
                .take_while(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || *c == '_')
                .collect();
            if text[i + 1 + name.len()..].starts_with('"') {
                out.insert(name);
            }
        }
    }
}

#[test]
fn the_environment_table_lists_exactly_the_variables_the_code_reads() {
    let mut read = BTreeSet::new();
    for entry in walkdir::WalkDir::new(repo().join("xtask/src")) {
        let entry = entry.unwrap();
        let name = entry.file_name().to_string_lossy().into_owned();
        if !name.ends_with(".rs") || name.ends_with("tests.rs") {
            continue;
        }
        let text = std::fs::read_to_string(entry.path()).unwrap();
        // a module's own tests may name variables nothing reads
        let code = text
            .find("#[cfg(test)]\nmod tests")
            .map_or(text.as_str(), |at| &text[..at]);
        env_names(code, &mut read);
    }
    assert!(
        read.contains("XTASK_TOOL_TIMEOUT"),
        "the scan finds nothing: {read:?}"
    );
    let doc = fleet_md();
    let at = doc
        .find("## Environment variables")
        .expect("docs/fleet.md has an `## Environment variables` section");
    let documented: BTreeSet<String> = doc[at..]
        .lines()
        .filter_map(|l| l.strip_prefix("| `")?.split('`').next())
        .filter(|n| n.starts_with("XTASK_") || n.starts_with("RTX_GPU_TEST_"))
        .map(str::to_string)
        .collect();
    let undocumented: Vec<_> = read.difference(&documented).collect();
    let gone: Vec<_> = documented.difference(&read).collect();
    assert!(
        undocumented.is_empty() && gone.is_empty(),
        "docs/fleet.md's environment table: add {undocumented:?} (read by xtask/src), \
         drop {gone:?} (read nowhere)"
    );
}
