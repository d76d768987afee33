//! A string literal's source text decoded into its value, each value character
//! mapped back to the source bytes that spell it (so that an edit to the value
//! becomes an edit of exactly those bytes of the file).

use std::ops::Range;

/// One character of a literal's value and the bytes of the literal's source
/// text that produce it (one byte or more for a plain character, the whole
/// escape for `\x7b`, `\u{7b}`, `\n`, ...).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Piece {
    pub ch: char,
    pub src: Range<usize>,
}

/// Decodes the source text of a string literal (`"..."`, `r"..."`, `r#"..."#`,
/// optionally with a suffix). `None` for anything else or a malformed escape.
pub(crate) fn decode(src: &str) -> Option<Vec<Piece>> {
    if let Some(rest) = src.strip_prefix('r') {
        let hashes = rest.bytes().take_while(|&b| b == b'#').count();
        let open = 1 + hashes;
        if src.as_bytes().get(open) != Some(&b'"') {
            return None;
        }
        let body_start = open + 1;
        let closing = format!("\"{}", "#".repeat(hashes));
        let end = body_start + src[body_start..].find(&closing)?;
        Some(
            src[body_start..end]
                .char_indices()
                .map(|(i, ch)| Piece {
                    ch,
                    src: body_start + i..body_start + i + ch.len_utf8(),
                })
                .collect(),
        )
    } else if src.starts_with('"') {
        decode_cooked(src)
    } else {
        None
    }
}

fn decode_cooked(src: &str) -> Option<Vec<Piece>> {
    let mut out = Vec::new();
    let mut it = src.char_indices().skip(1).peekable();
    while let Some((i, c)) = it.next() {
        match c {
            '"' => return Some(out),
            '\\' => {
                let (_, e) = it.next()?;
                let ch = match e {
                    'n' => '\n',
                    'r' => '\r',
                    't' => '\t',
                    '\\' => '\\',
                    '0' => '\0',
                    '\'' => '\'',
                    '"' => '"',
                    'x' => {
                        let (_, h) = it.next()?;
                        let (_, l) = it.next()?;
                        let v = u8::from_str_radix(&format!("{h}{l}"), 16).ok()?;
                        if v > 0x7f {
                            return None;
                        }
                        char::from(v)
                    }
                    'u' => {
                        if it.next()?.1 != '{' {
                            return None;
                        }
                        let mut hex = String::new();
                        loop {
                            let (_, d) = it.next()?;
                            match d {
                                '}' => break,
                                '_' => {}
                                d if d.is_ascii_hexdigit() => hex.push(d),
                                _ => return None,
                            }
                        }
                        char::from_u32(u32::from_str_radix(&hex, 16).ok()?)?
                    }
                    '\n' | '\r' => {
                        // line continuation: the backslash, the newline and the
                        // whitespace that follows produce nothing
                        while it
                            .next_if(|&(_, w)| matches!(w, ' ' | '\t' | '\n' | '\r'))
                            .is_some()
                        {}
                        continue;
                    }
                    _ => return None,
                };
                let end = it.peek().map_or(src.len(), |&(j, _)| j);
                out.push(Piece { ch, src: i..end });
            }
            _ => out.push(Piece {
                ch: c,
                src: i..i + c.len_utf8(),
            }),
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn value(src: &str) -> String {
        decode(src).unwrap().iter().map(|p| p.ch).collect()
    }

    #[test]
    fn plain_raw_and_escapes() {
        assert_eq!(value(r#""a{b}""#), "a{b}");
        assert_eq!(value(r##"r#"a"b"#"##), "a\"b");
        assert_eq!(value(r#"r"x\n""#), "x\\n");
        assert_eq!(value(r#""\x7b\u{7D}\n\"""#), "{}\n\"");
        assert_eq!(value("\"a\\\n   b\""), "ab");
        assert_eq!(value("\"é{\""), "é{");
    }

    #[test]
    fn pieces_point_at_source_bytes() {
        let src = r#""\u{7b}r#x}""#;
        let p = decode(src).unwrap();
        assert_eq!(&src[p[0].src.clone()], r"\u{7b}");
        assert_eq!(&src[p[1].src.clone()], "r");
        let src = "\"é{\"";
        let p = decode(src).unwrap();
        assert_eq!(&src[p[1].src.clone()], "{");
    }

    #[test]
    fn not_a_string() {
        assert!(decode("b\"x\"").is_none());
        assert!(decode("'x'").is_none());
        assert!(decode(r#""\q""#).is_none());
    }
}
