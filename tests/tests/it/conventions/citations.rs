//! The tracker-citation check: no source file names an issue by number.
//!
//! A comment that says "see issue N" sends the reader to a tracker that a
//! checkout does not carry (and a fork or a mirror may not reach): the
//! source says what the rule is instead.

use std::collections::BTreeMap;
use std::path::PathBuf;

/// The file extensions the check reads.
pub const EXTENSIONS: [&str; 4] = ["rs", "cu", "cuh", "py"];

/// Whether `line` cites an issue by number: the word `issue` or `issues`
/// (any case, not inside a longer word), then optional blanks, an optional
/// `#` and optional blanks, then a digit (the forms the tests below spell
/// out; written here, they would be citations themselves).
pub fn cites_issue(line: &str) -> bool {
    let lower = line.to_ascii_lowercase();
    let b = lower.as_bytes();
    let blanks = |mut j: usize| {
        while b.get(j).is_some_and(|c| *c == b' ' || *c == b'\t') {
            j += 1;
        }
        j
    };
    let mut from = 0;
    while let Some(i) = lower[from..].find("issue") {
        let at = from + i;
        from = at + 1;
        if at > 0 && (b[at - 1].is_ascii_alphanumeric() || b[at - 1] == b'_') {
            continue;
        }
        let mut j = at + "issue".len();
        if b.get(j) == Some(&b's') {
            j += 1;
        }
        j = blanks(j);
        if b.get(j) == Some(&b'#') {
            j = blanks(j + 1);
        }
        if b.get(j).is_some_and(u8::is_ascii_digit) {
            return true;
        }
    }
    false
}

/// `(path:line, message)` of every line of `files` that cites an issue.
pub fn citations(files: &BTreeMap<PathBuf, String>) -> Vec<(String, String)> {
    let mut found = Vec::new();
    for (p, text) in files {
        for (n, line) in text.lines().enumerate() {
            if cites_issue(line) {
                let key = format!("{}:{}", p.display(), n + 1);
                let message = format!(
                    "{key}: `{}` cites an issue tracker entry: say what the rule or the case \
                     is instead",
                    line.trim()
                );
                found.push((key, message));
            }
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `word` followed by `rest`, so this file holds no citation itself.
    fn cite(word: &str, rest: &str) -> String {
        [word, rest].concat()
    }

    #[test]
    fn every_form_of_a_citation_is_found() {
        for line in [
            cite("// see iss", "ue 4"),
            cite("//! The source side (Iss", "ue 14, item 2): ..."),
            cite("# fixed in iss", "ue #27"),
            cite("/* ISS", "UES 3 and 4 */"),
            cite("// iss", "ue#12"),
            cite("// (iss", "ue\t# 9)"),
            cite("iss", "ue 1"),
        ] {
            assert!(cites_issue(&line), "{line}");
        }
    }

    #[test]
    fn words_about_issuing_and_other_numbers_are_not_citations() {
        for line in [
            "// loads issued together, added in order",
            "// thread 0 issues every copy",
            "auto issue = [&](u32 i) {  // tile i of this block",
            "for (u32 i = 0; i < S && i < n; ++i) issue(i);",
            "// an issue with the driver: exit 2",
            "// tissue 4",
            "let reissue_3 = 0;",
            "// issues: none",
        ] {
            assert!(!cites_issue(line), "{line}");
        }
    }

    #[test]
    fn each_citation_is_named_by_path_and_line() {
        let files = BTreeMap::from([
            (
                PathBuf::from("crates/x/src/a.rs"),
                cite("fn a() {}\n// as iss", "ue 4 says\n// issued\n"),
            ),
            (
                PathBuf::from("kernels/b.cu"),
                cite("// iss", "ues 1 and 2\n"),
            ),
        ]);
        let found = citations(&files);
        let keys: Vec<&str> = found.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(keys, ["crates/x/src/a.rs:2", "kernels/b.cu:1"]);
        assert!(found[0].1.contains("say what the rule"), "{}", found[0].1);
    }
}
