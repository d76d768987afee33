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

/// Phase timings of one run, recorded only when the environment variable
/// named at [`Timing::new`] is set (`XTASK_ALIGN_TIMING`, `XTASK_FMT_TIMING`).
#[derive(Debug)]
pub struct Timing {
    start: std::time::Instant,
    last: std::time::Instant,
    on: bool,
    lines: Vec<String>,
}

impl Timing {
    /// Starts the clock; records phases when `env_var` is set.
    pub fn new(env_var: &str) -> Timing {
        let now = std::time::Instant::now();
        Timing {
            start: now,
            last: now,
            on: std::env::var_os(env_var).is_some(),
            lines: Vec::new(),
        }
    }

    /// Records the phase that just ended: `timing: <phase>: N ms (total N ms)`.
    pub fn mark(&mut self, phase: &str) {
        if self.on {
            let now = std::time::Instant::now();
            self.lines.push(format!(
                "timing: {phase}: {:.1} ms (total {:.1} ms)",
                (now - self.last).as_secs_f64() * 1e3,
                (now - self.start).as_secs_f64() * 1e3
            ));
            self.last = now;
        }
    }

    /// Writes the recorded lines (to stderr, by the commands).
    ///
    /// # Errors
    /// Write errors.
    pub fn write_to(&self, err: &mut dyn std::io::Write) -> std::io::Result<()> {
        for l in &self.lines {
            writeln!(err, "{l}")?;
        }
        Ok(())
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
    fn timing_records_only_when_its_variable_is_set() {
        let mut off = Timing::new("XTASK_NO_SUCH_TIMING_VARIABLE");
        off.mark("a");
        let mut buf = Vec::new();
        off.write_to(&mut buf).unwrap();
        assert!(buf.is_empty());
        let mut on = Timing::new("PATH");
        on.mark("a");
        on.mark("b");
        on.write_to(&mut buf).unwrap();
        let text = String::from_utf8(buf).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 2, "{text}");
        assert!(lines[1].starts_with("timing: b: ") && lines[1].contains(" ms (total "));
    }

    #[test]
    fn diff_has_headers_and_hunks() {
        let d = unified_diff("Cargo.toml", "a\nb\n", "a\nc\n");
        assert!(d.contains("--- a/Cargo.toml"));
        assert!(d.contains("+++ b/Cargo.toml"));
        assert!(d.contains("-b\n+c\n"));
    }
}
