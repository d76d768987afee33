//! A small Rust lexer that finds comments: it skips strings, raw strings,
//! byte/C strings and char literals (telling them from lifetimes), and nests
//! block comments. `proc_macro2` drops comments (doc comments become `#[doc]`
//! attributes), so `--verify-formatting-only` compares comments with this and
//! tokens with `proc_macro2` on the same text with the comments blanked out.

/// One comment of a source file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Comment {
    /// 1-based line where it starts.
    pub line: usize,
    /// The comment as written, markers included (`// x`, `/* x */`, `/// x`).
    pub text: String,
}

impl Comment {
    /// The comment with what rustfmt may change about it taken out: trailing
    /// whitespace of every line, and the indentation of a block comment's
    /// continuation lines (rustfmt re-indents them). Text, markers and the
    /// indentation inside line comments (code blocks in docs) are kept.
    pub fn normalized(&self) -> String {
        let mut lines = self.text.split('\n');
        let mut out = lines.next().unwrap_or("").trim_end().to_string();
        for l in lines {
            out.push('\n');
            out.push_str(l.trim());
        }
        out
    }
}

/// The comments of `src` in order, and `src` with every comment (and a
/// leading `#!` shebang line) replaced by spaces, newlines kept, so that
/// token positions still map to the same lines.
pub fn split_comments(src: &str) -> (Vec<Comment>, String) {
    let b = src.as_bytes();
    let mut comments = Vec::new();
    let mut blanked = src.as_bytes().to_vec();
    let blank = |from: usize, to: usize, blanked: &mut Vec<u8>| {
        for c in &mut blanked[from..to] {
            if *c != b'\n' {
                *c = b' ';
            }
        }
    };
    let mut i = 0;
    let mut line = 1;
    // A shebang (`#!` not starting an inner attribute `#![`) is not Rust tokens.
    if src.starts_with("#!") && !src[2..].trim_start().starts_with('[') {
        let end = src.find('\n').unwrap_or(src.len());
        blank(0, end, &mut blanked);
        i = end;
    }
    while i < b.len() {
        let c = b[i];
        match c {
            b'\n' => {
                line += 1;
                i += 1;
            }
            b'/' if b.get(i + 1) == Some(&b'/') => {
                let end = src[i..].find('\n').map_or(b.len(), |e| i + e);
                comments.push(Comment {
                    line,
                    text: src[i..end].trim_end_matches('\r').to_string(),
                });
                blank(i, end, &mut blanked);
                i = end;
            }
            b'/' if b.get(i + 1) == Some(&b'*') => {
                let start = i;
                let start_line = line;
                i = block_comment_end(b, start);
                line += b[start..i].iter().filter(|&&c| c == b'\n').count();
                let text = src[start..i].replace("\r\n", "\n");
                comments.push(Comment {
                    line: start_line,
                    text,
                });
                blank(start, i, &mut blanked);
            }
            b'"' => i = skip_string(b, i, &mut line),
            b'\'' => i = skip_quote(src, i),
            _ if is_word_byte(c) => {
                let start = i;
                while i < b.len() && is_word_byte(b[i]) {
                    i += 1;
                }
                let word = &src[start..i];
                if matches!(word, "r" | "br" | "cr") {
                    let mut j = i;
                    while b.get(j) == Some(&b'#') {
                        j += 1;
                    }
                    if b.get(j) == Some(&b'"') {
                        i = skip_raw_string(b, j, j - i, &mut line);
                    }
                }
            }
            _ => i += 1,
        }
    }
    // Only ASCII bytes were replaced, and only inside comments (whole UTF-8 sequences).
    let blanked = String::from_utf8(blanked).unwrap_or_else(|_| src.to_string());
    (comments, blanked)
}

/// `src` with every comment and the inside of every string, byte string,
/// raw string and char literal replaced by spaces (newlines kept; a
/// literal's quotes stay), so that a byte scan sees only code: brackets,
/// words and punctuation at their offsets in `src`.
pub fn code_bytes(src: &str) -> Vec<u8> {
    let b = src.as_bytes();
    let mut out = b.to_vec();
    let blank = |from: usize, to: usize, out: &mut Vec<u8>| {
        for c in &mut out[from..to.min(b.len())] {
            if *c != b'\n' {
                *c = b' ';
            }
        }
    };
    let mut line = 1;
    let mut i = 0;
    if src.starts_with("#!") && !src[2..].trim_start().starts_with('[') {
        i = src.find('\n').unwrap_or(src.len());
        blank(0, i, &mut out);
    }
    // only `/`, `"` and `'` can start a comment or a literal: jump between them
    while let Some(off) = memchr::memchr3(b'/', b'"', b'\'', &b[i..]) {
        let p = i + off;
        match b[p] {
            b'/' if b.get(p + 1) == Some(&b'/') => {
                let end = memchr::memchr(b'\n', &b[p..]).map_or(b.len(), |e| p + e);
                blank(p, end, &mut out);
                i = end;
            }
            b'/' if b.get(p + 1) == Some(&b'*') => {
                let k = block_comment_end(b, p);
                blank(p, k, &mut out);
                i = k;
            }
            b'"' => {
                // a raw string: `r`, `br` or `cr` (a whole word), then `#`s
                let mut h = p;
                while h > 0 && b[h - 1] == b'#' {
                    h -= 1;
                }
                let hashes = p - h;
                let word_start = |at: usize| at == 0 || !is_word_byte(b[at - 1]);
                let raw = h > 0
                    && b[h - 1] == b'r'
                    && (word_start(h - 1)
                        || (h >= 2 && matches!(b[h - 2], b'b' | b'c') && word_start(h - 2)));
                if raw {
                    let end = skip_raw_string(b, p, hashes, &mut line);
                    blank(p + 1, end.saturating_sub(1 + hashes).max(p + 1), &mut out);
                    i = end;
                } else if hashes == 0 {
                    let end = skip_string(b, p, &mut line);
                    blank(p + 1, end.saturating_sub(1).max(p + 1), &mut out);
                    i = end;
                } else {
                    i = p + 1;
                }
            }
            b'\'' => {
                let end = skip_quote(src, p);
                if end > p + 2 {
                    blank(p + 1, end - 1, &mut out);
                }
                i = end.max(p + 1);
            }
            _ => i = p + 1,
        }
    }
    out
}

/// [`code_bytes`] byte by byte: the reference its test compares with.
#[cfg(test)]
fn code_bytes_slow(src: &str) -> Vec<u8> {
    let b = src.as_bytes();
    let mut out = b.to_vec();
    let blank = |from: usize, to: usize, out: &mut Vec<u8>| {
        for c in &mut out[from..to.min(b.len())] {
            if *c != b'\n' {
                *c = b' ';
            }
        }
    };
    let mut line = 1;
    let mut i = 0;
    if src.starts_with("#!") && !src[2..].trim_start().starts_with('[') {
        i = src.find('\n').unwrap_or(src.len());
        blank(0, i, &mut out);
    }
    while i < b.len() {
        match b[i] {
            b'/' if b.get(i + 1) == Some(&b'/') => {
                let end = memchr::memchr(b'\n', &b[i..]).map_or(b.len(), |e| i + e);
                blank(i, end, &mut out);
                i = end;
            }
            b'/' if b.get(i + 1) == Some(&b'*') => {
                let start = i;
                // its own loop: the reference stays independent of the fast scan
                let mut depth = 0usize;
                while i < b.len() {
                    if b[i] == b'/' && b.get(i + 1) == Some(&b'*') {
                        depth += 1;
                        i += 2;
                    } else if b[i] == b'*' && b.get(i + 1) == Some(&b'/') {
                        depth -= 1;
                        i += 2;
                        if depth == 0 {
                            break;
                        }
                    } else {
                        i += 1;
                    }
                }
                blank(start, i, &mut out);
            }
            b'"' => {
                let end = skip_string(b, i, &mut line);
                blank(i + 1, end.saturating_sub(1).max(i + 1), &mut out);
                i = end;
            }
            b'\'' => {
                let end = skip_quote(src, i);
                if end > i + 2 {
                    blank(i + 1, end - 1, &mut out);
                }
                i = end.max(i + 1);
            }
            c if is_word_byte(c) => {
                let start = i;
                while i < b.len() && is_word_byte(b[i]) {
                    i += 1;
                }
                if matches!(&src[start..i], "r" | "br" | "cr") {
                    let mut j = i;
                    while b.get(j) == Some(&b'#') {
                        j += 1;
                    }
                    if b.get(j) == Some(&b'"') {
                        let hashes = j - i;
                        let end = skip_raw_string(b, j, hashes, &mut line);
                        blank(j + 1, end.saturating_sub(1 + hashes).max(j + 1), &mut out);
                        i = end;
                    }
                }
            }
            _ => i += 1,
        }
    }
    out
}

fn is_word_byte(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_' || c >= 0x80
}

/// `b[start..]` opens a block comment (`/*`); returns the index after its
/// closing `*/`, nested comments included (the end of `b` when unclosed).
fn block_comment_end(b: &[u8], start: usize) -> usize {
    let (mut i, mut depth) = (start, 0usize);
    while i < b.len() {
        if b[i] == b'/' && b.get(i + 1) == Some(&b'*') {
            depth += 1;
            i += 2;
        } else if b[i] == b'*' && b.get(i + 1) == Some(&b'/') {
            depth -= 1;
            i += 2;
            if depth == 0 {
                break;
            }
        } else {
            i += 1;
        }
    }
    i
}

/// `b[i]` is the opening `"`; returns the index after the closing one.
fn skip_string(b: &[u8], mut i: usize, line: &mut usize) -> usize {
    i += 1;
    while i < b.len() {
        match b[i] {
            b'\\' => i += 2,
            b'"' => return i + 1,
            b'\n' => {
                *line += 1;
                i += 1;
            }
            _ => i += 1,
        }
    }
    b.len()
}

/// `b[quote]` is the opening `"` of a raw string with `hashes` `#`s.
fn skip_raw_string(b: &[u8], quote: usize, hashes: usize, line: &mut usize) -> usize {
    let mut i = quote + 1;
    while i < b.len() {
        if b[i] == b'\n' {
            *line += 1;
        } else if b[i] == b'"'
            && b[i + 1..]
                .iter()
                .take(hashes)
                .filter(|&&h| h == b'#')
                .count()
                == hashes
        {
            return i + 1 + hashes;
        }
        i += 1;
    }
    b.len()
}

/// `src[i]` is `'`: a char literal (`'x'`, `'\n'`, `'\u{1F600}'`) or a
/// lifetime / label (`'a`, `'static`). Returns the index after it.
fn skip_quote(src: &str, i: usize) -> usize {
    let rest = &src[i + 1..];
    let mut chars = rest.char_indices();
    match chars.next() {
        Some((_, '\\')) => {
            // escaped char literal: up to the closing quote
            let b = src.as_bytes();
            let mut j = i + 3; // past `'\` and the escaped char
            while j < b.len() && b[j] != b'\'' && b[j] != b'\n' {
                j += 1;
            }
            (j + 1).min(b.len())
        }
        Some((_, c)) => match chars.next() {
            Some((k, '\'')) if c != '\'' => i + 1 + k + 1,
            // a lifetime or label: just the quote; the name lexes as a word
            _ => i + 1,
        },
        None => src.len(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn code_bytes_jumps_to_the_same_result() {
        let mut texts: Vec<String> = [
            "let s = \"a // b\"; // c\nlet r = r#\"x \" y\"#; /* d /* e */ f */ let c = '\"';",
            "fn f<'a>(x: &'a str) -> char { let b = b'{'; let s = br\"}\"; let t = cr##\"a\"#b\"##; '}' }",
            "let bar = \"q\"; let rr = r\"z\"; let e = '\\''; // end",
        ]
        .iter()
        .map(|t| t.to_string())
        .collect();
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
        for e in walkdir::WalkDir::new(dir).into_iter().flatten() {
            if e.path().extension().is_some_and(|x| x == "rs") {
                texts.push(std::fs::read_to_string(e.path()).unwrap());
            }
        }
        for t in &texts {
            assert_eq!(code_bytes(t), code_bytes_slow(t), "{t}");
        }
    }

    fn texts(src: &str) -> Vec<String> {
        split_comments(src).0.into_iter().map(|c| c.text).collect()
    }

    #[test]
    fn finds_line_block_and_doc_comments() {
        let src = "//! crate\n/// item\nfn f() { /* a /* nested */ b */ x // tail\n}\n";
        assert_eq!(
            texts(src),
            ["//! crate", "/// item", "/* a /* nested */ b */", "// tail"]
        );
        let (c, blanked) = split_comments(src);
        assert_eq!(c[2].line, 3);
        assert_eq!(blanked.lines().count(), src.lines().count());
        assert!(!blanked.contains("//"));
        assert!(blanked.contains("fn f()"));
    }

    #[test]
    fn comment_markers_inside_literals_are_not_comments() {
        let src = r####"let a = "// no"; let b = r#"/* no "# "#; let c = '"'; let d = b"/*"; let e: &'static str = "\"//";
let f = '\''; let g = cr##"x"#//"##; let h = br"//"; let i = 'é'; // yes
fn l<'a>(x: &'a str) {} // two"####;
        assert_eq!(texts(src), ["// yes", "// two"]);
    }

    #[test]
    fn raw_identifiers_are_not_raw_strings() {
        assert_eq!(texts("let r#type = 1; // c\n"), ["// c"]);
    }

    #[test]
    fn shebang_is_blanked() {
        let (c, b) = split_comments("#!/usr/bin/env run\nfn main() {}\n");
        assert!(c.is_empty());
        assert!(b.starts_with("  "));
        let (_, b) = split_comments("#![allow(x)]\n");
        assert!(b.starts_with("#![allow"));
    }

    #[test]
    fn normalization_drops_reindentation_and_trailing_space() {
        let c = Comment {
            line: 1,
            text: "/* a  \n       * b\n */".into(),
        };
        assert_eq!(c.normalized(), "/* a\n* b\n*/");
        let c = Comment {
            line: 1,
            text: "///     code  ".into(),
        };
        assert_eq!(c.normalized(), "///     code");
    }
}
