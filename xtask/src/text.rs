//! Text helpers shared by the commands: positions in a text and one-line
//! renderings. A leaf: it imports nothing from the crate.

/// 1-based line and column of byte offset `offset` in `text`.
pub fn line_col(text: &str, offset: usize) -> (usize, usize) {
    let offset = offset.min(text.len());
    let before = &text[..offset];
    let line = before.matches('\n').count() + 1;
    let column = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    (line, column)
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
