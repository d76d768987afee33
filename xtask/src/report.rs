//! Output formats shared by the checking commands.

/// How findings are printed (`--format`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum Format {
    /// `path:line: message` lines and unified diffs, for people.
    #[default]
    Human,
    /// One JSON object per finding, one per line.
    Json,
    /// GitHub Actions workflow commands (`::error file=...,line=...::message`).
    Github,
}

/// Escapes a GitHub Actions workflow-command message (`%`, CR, LF).
pub fn github_escape_message(s: &str) -> String {
    s.replace('%', "%25")
        .replace('\r', "%0D")
        .replace('\n', "%0A")
}

/// Escapes a GitHub Actions workflow-command property value (also `:` and `,`).
pub fn github_escape_property(s: &str) -> String {
    github_escape_message(s)
        .replace(':', "%3A")
        .replace(',', "%2C")
}

/// A GitHub `::error` annotation.
pub fn github_error(
    file: &str,
    line: usize,
    col: Option<usize>,
    title: &str,
    message: &str,
) -> String {
    let col = col.map(|c| format!(",col={c}")).unwrap_or_default();
    format!(
        "::error file={},line={line}{col},title={}::{}",
        github_escape_property(file),
        github_escape_property(title),
        github_escape_message(message)
    )
}

/// A GitHub `::notice` annotation (on `file` when given).
pub fn github_notice(file: Option<&str>, title: &str, message: &str) -> String {
    let file = file
        .map(|f| format!("file={},", github_escape_property(f)))
        .unwrap_or_default();
    format!(
        "::notice {file}title={}::{}",
        github_escape_property(title),
        github_escape_message(message)
    )
}

/// Prints an informational note: `{prefix}: {text}` on `out` (human), the
/// same line on `err` (json: stdout carries only JSON objects), a `::notice`
/// titled `title` on `out` (github).
///
/// # Errors
/// Write errors.
pub fn print_note(
    format: Format,
    title: &str,
    prefix: &str,
    text: &str,
    out: &mut dyn std::io::Write,
    err: &mut dyn std::io::Write,
) -> std::io::Result<()> {
    match format {
        Format::Human => writeln!(out, "{prefix}: {text}"),
        Format::Json => writeln!(err, "{prefix}: {text}"),
        Format::Github => writeln!(out, "{}", github_notice(None, title, text)),
    }
}

/// Prints the one summary of a run, on `out` in every format: `line`
/// (human), a `{"kind": "summary", "message": line, ..fields}` object (json),
/// a `::notice` titled `title` (github).
///
/// # Errors
/// Write errors.
pub fn print_summary(
    format: Format,
    title: &str,
    line: &str,
    fields: serde_json::Value,
    out: &mut dyn std::io::Write,
) -> std::io::Result<()> {
    match format {
        Format::Human => writeln!(out, "{line}"),
        Format::Json => {
            let mut obj = serde_json::json!({"kind": "summary", "message": line});
            if let (Some(o), serde_json::Value::Object(f)) = (obj.as_object_mut(), fields) {
                o.extend(f);
            }
            writeln!(out, "{obj}")
        }
        Format::Github => writeln!(out, "{}", github_notice(None, title, line)),
    }
}

/// A unified diff of `old` -> `new`, labelled `a/<path>` / `b/<path>`, three lines of context.
pub fn unified_diff(path: &str, old: &str, new: &str) -> String {
    similar::TextDiff::from_lines(old, new)
        .unified_diff()
        .context_radius(3)
        .header(&format!("a/{path}"), &format!("b/{path}"))
        .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn github_annotation_escapes() {
        assert_eq!(
            github_error("a,b.rs", 3, Some(2), "t:x", "50%\nnext"),
            "::error file=a%2Cb.rs,line=3,col=2,title=t%3Ax::50%25%0Anext"
        );
    }

    #[test]
    fn github_notice_escapes() {
        assert_eq!(
            github_notice(Some("a,b:c.rs"), "fmt-check", "x\ny"),
            "::notice file=a%2Cb%3Ac.rs,title=fmt-check::x%0Ay"
        );
        assert_eq!(github_notice(None, "t", "50%"), "::notice title=t::50%25");
    }

    #[test]
    fn diff_has_headers_and_hunks() {
        let d = unified_diff("Cargo.toml", "a\nb\n", "a\nc\n");
        assert!(d.contains("--- a/Cargo.toml"));
        assert!(d.contains("+++ b/Cargo.toml"));
        assert!(d.contains("-b\n+c\n"));
    }
}
