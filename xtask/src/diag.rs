//! What the checking commands report, and the one place it is rendered.
//!
//! A command builds [`Diagnostic`]s (a finding, an error, a notice) and hands
//! them, with its notes and its one summary, to a [`Printer`]; only the
//! printer looks at the `--format` ([`Format`]): human text, one JSON object
//! per line, or GitHub Actions workflow commands. (The split cargo-deny's
//! `diag` module and ripgrep's printers make.)
//!
//! A leaf: it imports nothing from the crate.

use std::io::Write;

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

/// How a diagnostic is annotated on GitHub.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Level {
    /// `::error file=..,line=..` (a diagnostic at `file:line`).
    Error,
    /// `::notice file=..` (something done or worth knowing, not a failure).
    Notice,
}

/// One thing a command reports, in every format.
///
/// Each rendering may be left out (`None` / `github: false`) where a format
/// does not show it: a fix run tells people "fixed FILE: N changes" per file
/// but JSON readers one object per finding.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Diagnostic {
    /// The GitHub annotation command.
    pub level: Level,
    /// The file, relative to the workspace or repository root.
    pub file: Option<String>,
    /// 1-based line.
    pub line: usize,
    /// 1-based column, where the finding has one.
    pub column: Option<usize>,
    /// The annotation's title (`fmt-check`, `align-deps: version`).
    pub title: String,
    /// The annotation's message.
    pub message: String,
    /// The text for people: the whole of it (a `file:line: ..` head, then
    /// maybe indented detail or a diff); `None`: not shown to people.
    pub human: Option<String>,
    /// The one-line JSON object; `None`: not in the JSON stream.
    pub json: Option<String>,
    /// Whether the GitHub annotation is printed.
    pub github: bool,
}

impl Diagnostic {
    /// An error at `file:line` shown in every format: `human` for people,
    /// the JSON row `kind` with `fields` ([`json_row`]), `title` and
    /// `message` for GitHub.
    pub fn error(
        file: &str,
        line: usize,
        title: &str,
        message: String,
        human: String,
        kind: &str,
        fields: &impl serde::Serialize,
    ) -> Diagnostic {
        Diagnostic {
            level: Level::Error,
            file: Some(file.to_string()),
            line,
            column: None,
            title: title.to_string(),
            message,
            human: Some(human),
            json: Some(json_row(kind, fields)),
            github: true,
        }
    }
}

/// The JSON rows, made here and nowhere else: a command describes a row as
/// a typed value (a struct deriving `Serialize`) and its `kind`.
///
/// `{"kind": kind, ..fields}` on one line, the keys in byte order (the
/// order of serde_json's map): the form of every row except an `align-deps`
/// finding's ([`json_row_in_order`]).
///
/// # Panics
/// When `fields` does not serialize as a JSON object (a bug in the caller:
/// rows are structs or maps with string keys).
pub fn json_row(kind: &str, fields: &impl serde::Serialize) -> String {
    json_object(&[("kind", kind)], fields).to_string()
}

/// `{"kind": kind, ..fields}` on one line, `kind` first and then the fields
/// in the order their type declares them: the form of an `align-deps`
/// finding.
///
/// # Panics
/// When `fields` is not a struct or map (a bug in the caller).
pub fn json_row_in_order(kind: &str, fields: &impl serde::Serialize) -> String {
    #[derive(serde::Serialize)]
    struct Row<'a, T> {
        kind: &'a str,
        #[serde(flatten)]
        fields: &'a T,
    }
    serde_json::to_string(&Row { kind, fields }).expect("a JSON row is a struct or map")
}

/// `fields` as a JSON object (keys in byte order) with `heads` added.
fn json_object(heads: &[(&str, &str)], fields: &impl serde::Serialize) -> serde_json::Value {
    let mut value = serde_json::to_value(fields).expect("a JSON row serializes");
    let obj = value
        .as_object_mut()
        .expect("a JSON row is a struct or map with string keys");
    for (k, v) in heads {
        obj.insert((*k).to_string(), (*v).into());
    }
    value
}

/// `s` with the characters that would drive a terminal (or hide text)
/// replaced as rustc's and cargo's emitters do (their `OUTPUT_REPLACEMENTS`):
/// C0 control characters and DEL by their Unicode control pictures (ESC is
/// `␛`, BEL `␇`), the bidirectional text controls by `�`. Also the C1
/// controls (U+0080 to U+009F, which some terminals act on) by `�`. Kept: tab,
/// line feed, and a carriage return before a line feed (a CRLF line ending).
/// Source text reaches the output (an `#[error]` message, a diff), so a
/// file must not be able to retitle a terminal or clear the screen.
pub fn escape_controls(s: &str) -> std::borrow::Cow<'_, str> {
    let harmful = |c: char, next: Option<char>| match c {
        '\t' | '\n' => false,
        '\r' => next != Some('\n'),
        '\u{0}'..='\u{1f}' | '\u{7f}' | '\u{80}'..='\u{9f}' => true,
        '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}' => true,
        _ => false,
    };
    let mut chars = s.chars().peekable();
    let mut clean = true;
    while let Some(c) = chars.next() {
        if harmful(c, chars.peek().copied()) {
            clean = false;
            break;
        }
    }
    if clean {
        return std::borrow::Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 8);
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        if !harmful(c, chars.peek().copied()) {
            out.push(c);
            continue;
        }
        out.push(match c {
            '\u{0}'..='\u{1f}' => char::from_u32(0x2400 + c as u32).unwrap_or('\u{fffd}'),
            '\u{7f}' => '\u{2421}',
            _ => '\u{fffd}',
        });
    }
    std::borrow::Cow::Owned(out)
}

/// Escapes a GitHub Actions workflow-command message (`%`, CR, LF; control
/// characters as [`escape_controls`]).
fn github_escape_message(s: &str) -> String {
    escape_controls(s)
        .replace('%', "%25")
        .replace('\r', "%0D")
        .replace('\n', "%0A")
}

/// Escapes a GitHub Actions workflow-command property value (also `:` and `,`).
fn github_escape_property(s: &str) -> String {
    github_escape_message(s)
        .replace(':', "%3A")
        .replace(',', "%2C")
}

/// A GitHub `::error` annotation.
fn github_error(file: &str, line: usize, col: Option<usize>, title: &str, message: &str) -> String {
    let col = col.map(|c| format!(",col={c}")).unwrap_or_default();
    format!(
        "::error file={},line={line}{col},title={}::{}",
        github_escape_property(file),
        github_escape_property(title),
        github_escape_message(message)
    )
}

/// A GitHub annotation without a file for a command's own status line
/// (`gpu-test: skipped: ...`, `ci: clippy: FAILED`): `::error title=..::..`
/// or `::notice title=..::..` with `--format github`, `None` otherwise.
pub fn status_annotation(
    format: Format,
    level: Level,
    title: &str,
    message: &str,
) -> Option<String> {
    if format != Format::Github {
        return None;
    }
    let kind = match level {
        Level::Error => "error",
        Level::Notice => "notice",
    };
    Some(format!(
        "::{kind} title={}::{}",
        github_escape_property(title),
        github_escape_message(message)
    ))
}

/// A GitHub `::notice` annotation (on `file` when given).
fn github_notice(file: Option<&str>, title: &str, message: &str) -> String {
    let file = file
        .map(|f| format!("file={},", github_escape_property(f)))
        .unwrap_or_default();
    format!(
        "::notice {file}title={}::{}",
        github_escape_property(title),
        github_escape_message(message)
    )
}

/// Prints a command's diagnostics, notes and summary in one [`Format`]:
/// normal output on `out`; in JSON, notes go to `err` (stdout carries only
/// JSON objects).
pub struct Printer<'w> {
    format: Format,
    /// The annotation title of notes and the summary (`fmt-check`).
    command: &'static str,
    out: &'w mut dyn Write,
    err: &'w mut dyn Write,
}

impl std::fmt::Debug for Printer<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Printer")
            .field("format", &self.format)
            .field("command", &self.command)
            .finish_non_exhaustive()
    }
}

impl<'w> Printer<'w> {
    /// A printer for `command`'s output in `format`.
    pub fn new(
        format: Format,
        command: &'static str,
        out: &'w mut dyn Write,
        err: &'w mut dyn Write,
    ) -> Printer<'w> {
        Printer {
            format,
            command,
            out,
            err,
        }
    }

    /// Prints `d` as its format shows it (or not at all).
    ///
    /// # Errors
    /// Write errors.
    pub fn diagnostic(&mut self, d: &Diagnostic) -> std::io::Result<()> {
        match self.format {
            Format::Human => match d.human.as_deref().map(escape_controls) {
                Some(text) if text.ends_with('\n') => write!(self.out, "{text}"),
                Some(text) => writeln!(self.out, "{text}"),
                None => Ok(()),
            },
            Format::Json => match &d.json {
                Some(obj) => writeln!(self.out, "{obj}"),
                None => Ok(()),
            },
            Format::Github if !d.github => Ok(()),
            Format::Github => {
                let line = match (d.level, &d.file) {
                    (Level::Error, Some(file)) => {
                        github_error(file, d.line, d.column, &d.title, &d.message)
                    }
                    (_, file) => github_notice(file.as_deref(), &d.title, &d.message),
                };
                writeln!(self.out, "{line}")
            }
        }
    }

    /// Text only people read (a heading, a diff): printed as is in the human
    /// format, left out of the others.
    ///
    /// # Errors
    /// Write errors.
    pub fn human_only(&mut self, text: &str) -> std::io::Result<()> {
        if self.format == Format::Human {
            write!(self.out, "{}", escape_controls(text))?;
        }
        Ok(())
    }

    /// An informational note: `{prefix}: {text}` on `out` (human), the same
    /// line on `err` (json), a `::notice` on `out` (github).
    ///
    /// # Errors
    /// Write errors.
    pub fn note(&mut self, prefix: &str, text: &str) -> std::io::Result<()> {
        match self.format {
            Format::Human => writeln!(self.out, "{prefix}: {}", escape_controls(text)),
            Format::Json => writeln!(self.err, "{prefix}: {}", escape_controls(text)),
            Format::Github => writeln!(self.out, "{}", github_notice(None, self.command, text)),
        }
    }

    /// Flushes the output (so that a failing stdout is seen by the command).
    ///
    /// # Errors
    /// Write errors.
    pub fn flush(&mut self) -> std::io::Result<()> {
        self.out.flush()
    }

    /// The one summary of a run, on `out` in every format: `line` (human), a
    /// `{"kind": "summary", "message": line, ..fields}` object (json), a
    /// `::notice` (github).
    ///
    /// # Errors
    /// Write errors.
    pub fn summary(&mut self, line: &str, fields: &impl serde::Serialize) -> std::io::Result<()> {
        match self.format {
            Format::Human => writeln!(self.out, "{}", escape_controls(line)),
            Format::Json => {
                let obj = json_object(&[("kind", "summary"), ("message", line)], fields);
                writeln!(self.out, "{obj}")
            }
            Format::Github => writeln!(self.out, "{}", github_notice(None, self.command, line)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn control_characters_are_shown_as_rustc_shows_them() {
        // rustc's and cargo's table: C0 and DEL as control pictures, the
        // bidirectional controls as the replacement character
        let pictures = "␀␁␂␃␄␅␆␇␈␉␊␋␌␍␎␏␐␑␒␓␔␕␖␗␘␙␚␛␜␝␞␟";
        for (b, picture) in (0u8..0x20).zip(pictures.chars()) {
            let c = char::from(b);
            let s = format!("a{c}b");
            let want = match c {
                '\t' | '\n' => s.clone(),
                _ => format!("a{picture}b"),
            };
            assert_eq!(escape_controls(&s), want, "{b:#x}");
        }
        assert_eq!(escape_controls("\u{7f}"), "␡");
        assert_eq!(
            escape_controls("x\u{202e}y\u{2066}\u{9b}"),
            "x\u{fffd}y\u{fffd}\u{fffd}"
        );
        assert_eq!(escape_controls("crlf\r\nlone\r"), "crlf\r\nlone␍");
        assert!(matches!(
            escape_controls("plain é"),
            std::borrow::Cow::Borrowed(_)
        ));
        assert_eq!(
            github_escape_message("\u{1b}]0;pwned\u{7}\u{1b}[2J\n"),
            "␛]0;pwned␇␛[2J%0A"
        );
    }

    #[test]
    fn github_annotation_escapes() {
        assert_eq!(
            github_error("a,b.rs", 3, Some(2), "t:x", "50%\nnext"),
            "::error file=a%2Cb.rs,line=3,col=2,title=t%3Ax::50%25%0Anext"
        );
    }

    #[test]
    fn status_annotations_only_for_github() {
        assert_eq!(
            status_annotation(Format::Github, Level::Error, "ci", "clippy: FAILED, 50%"),
            Some("::error title=ci::clippy: FAILED, 50%25".into())
        );
        assert_eq!(
            status_annotation(
                Format::Github,
                Level::Notice,
                "gpu-test",
                "skipped: no device"
            ),
            Some("::notice title=gpu-test::skipped: no device".into())
        );
        assert_eq!(
            status_annotation(Format::Human, Level::Error, "ci", "x"),
            None
        );
        assert_eq!(
            status_annotation(Format::Json, Level::Error, "ci", "x"),
            None
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

    fn render(format: Format, f: impl FnOnce(&mut Printer<'_>)) -> (String, String) {
        let (mut out, mut err) = (Vec::new(), Vec::new());
        f(&mut Printer::new(format, "cmd", &mut out, &mut err));
        (
            String::from_utf8(out).unwrap(),
            String::from_utf8(err).unwrap(),
        )
    }

    #[derive(serde::Serialize)]
    struct Fields {
        file: &'static str,
    }

    #[test]
    fn one_diagnostic_in_each_format() {
        let d = Diagnostic::error(
            "a.rs",
            3,
            "cmd: rule",
            "it broke".into(),
            "a.rs:3: it broke\n    detail".into(),
            "error",
            &Fields { file: "a.rs" },
        );
        let show = |format| render(format, |p| p.diagnostic(&d).unwrap()).0;
        assert_eq!(show(Format::Human), "a.rs:3: it broke\n    detail\n");
        assert_eq!(
            show(Format::Json),
            "{\"file\":\"a.rs\",\"kind\":\"error\"}\n"
        );
        assert_eq!(
            show(Format::Github),
            "::error file=a.rs,line=3,title=cmd%3A rule::it broke\n"
        );
        let hidden = Diagnostic {
            human: None,
            json: None,
            github: false,
            ..d
        };
        for format in [Format::Human, Format::Json, Format::Github] {
            assert_eq!(render(format, |p| p.diagnostic(&hidden).unwrap()).0, "");
        }
    }

    #[test]
    fn notes_keep_stdout_pure_json_and_summaries_carry_fields() {
        let note = |format| render(format, |p| p.note("info", "x").unwrap());
        assert_eq!(note(Format::Human), ("info: x\n".into(), String::new()));
        assert_eq!(note(Format::Json), (String::new(), "info: x\n".into()));
        assert_eq!(note(Format::Github).0, "::notice title=cmd::x\n");
        let (out, _) = render(Format::Json, |p| {
            p.summary("done", &std::collections::BTreeMap::from([("n", 1)]))
                .unwrap();
        });
        assert_eq!(out, "{\"kind\":\"summary\",\"message\":\"done\",\"n\":1}\n");
    }

    #[test]
    fn rows_sort_their_keys_or_keep_the_declared_order() {
        #[derive(serde::Serialize)]
        struct R {
            zeta: u8,
            alpha: Option<&'static str>,
        }
        let r = R {
            zeta: 1,
            alpha: None,
        };
        assert_eq!(json_row("k", &r), r#"{"alpha":null,"kind":"k","zeta":1}"#);
        assert_eq!(
            json_row_in_order("k", &r),
            r#"{"kind":"k","zeta":1,"alpha":null}"#
        );
    }
}
