//! Text helpers shared by the commands: positions in a text, one-line
//! renderings, unified diffs. A leaf: it imports nothing from the crate.

/// 1-based line and column of byte offset `offset` in `text`.
pub fn line_col(text: &str, offset: usize) -> (usize, usize) {
    let offset = offset.min(text.len());
    let before = &text[..offset];
    let line = before.matches('\n').count() + 1;
    let column = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    (line, column)
}

/// `n` and the noun for it: `1 file`, `2 files`, `0 files`.
pub fn plural(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

/// The name of a Unix signal number, for "killed by signal 11 (SIGSEGV)".
pub fn signal_name(sig: i32) -> &'static str {
    match sig {
        1 => "SIGHUP",
        2 => "SIGINT",
        4 => "SIGILL",
        6 => "SIGABRT",
        7 => "SIGBUS",
        8 => "SIGFPE",
        9 => "SIGKILL",
        11 => "SIGSEGV",
        13 => "SIGPIPE",
        15 => "SIGTERM",
        _ => "a signal",
    }
}

/// `s` on one line (a finding is one line of output): its lines trimmed,
/// blank ones dropped, joined with `sep` (`"; "` for manifest lines, `" "`
/// for Rust source).
pub fn one_line(s: &str, sep: &str) -> String {
    s.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect::<Vec<_>>()
        .join(sep)
}

/// A diff header's file name: `a/rel` for a path relative to the root; a
/// path outside it (absolute) as it is, without a doubled slash.
fn side(prefix: &str, path: &str) -> String {
    if path.starts_with('/') {
        path.to_string()
    } else {
        format!("{prefix}/{path}")
    }
}

/// A unified diff of `old` -> `new`, labelled `a/<path>` / `b/<path>`
/// (an absolute path as it is), three lines of context.
pub fn unified_diff(path: &str, old: &str, new: &str) -> String {
    similar::TextDiff::from_lines(old, new)
        .unified_diff()
        .context_radius(3)
        .header(&side("a", path), &side("b", path))
        .to_string()
}

/// A writer that passes everything on to another and counts the bytes.
pub struct CountingWriter<'a> {
    inner: &'a mut dyn std::io::Write,
    written: usize,
}

impl<'a> CountingWriter<'a> {
    /// Counts what goes to `inner`.
    pub fn new(inner: &'a mut dyn std::io::Write) -> Self {
        CountingWriter { inner, written: 0 }
    }

    /// The bytes written so far.
    pub fn written(&self) -> usize {
        self.written
    }
}

impl std::io::Write for CountingWriter<'_> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let n = self.inner.write(buf)?;
        self.written += n;
        Ok(n)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.inner.flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn diff_has_headers_and_hunks() {
        let d = unified_diff("Cargo.toml", "a\nb\n", "a\nc\n");
        assert!(d.contains("--- a/Cargo.toml"));
        assert!(d.contains("+++ b/Cargo.toml"));
        assert!(d.contains("-b\n+c\n"));
    }
}
