//! The byte scan behind [`super::mod_decls`]: module declarations found
//! in the text with comments and literals blanked, without building tokens.
use super::{ModDecl, is_skip_attr, path_attr};

fn word(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_' || c >= 0x80
}

fn ws(c: u8) -> bool {
    c.is_ascii_whitespace() || c == 0x0b
}

/// What an open bracket started.
struct Frame {
    close: u8,
    inline: bool,
    in_macro: bool,
    skip: bool,
}

/// `code[..end]` without trailing whitespace: the new end.
fn back_ws(code: &[u8], mut end: usize) -> usize {
    while end > 0 && ws(code[end - 1]) {
        end -= 1;
    }
    end
}

/// The word ending at `end` (`code[start..end]`), if `code[end - 1]` is a word byte.
fn word_before(code: &[u8], end: usize) -> Option<usize> {
    let mut s = end;
    while s > 0 && word(code[s - 1]) {
        s -= 1;
    }
    // `r#name`
    if s >= 2 && &code[s - 2..s] == b"r#" {
        s -= 2;
    }
    (s < end).then_some(s)
}

/// The matching open bracket of the close bracket at `close`.
fn open_of(code: &[u8], close: usize) -> Option<usize> {
    let (o, c) = match code[close] {
        b']' => (b'[', b']'),
        b')' => (b'(', b')'),
        _ => (b'{', b'}'),
    };
    let mut depth = 0usize;
    let mut i = close + 1;
    while i > 0 {
        i -= 1;
        if code[i] == c {
            depth += 1;
        } else if code[i] == o {
            depth -= 1;
            if depth == 0 {
                return Some(i);
            }
        }
    }
    None
}

/// The outer attributes of the item whose first word (`mod`, or
/// `unsafe` before it) starts at `at`, each with whitespace removed, in
/// order; `pub` / `pub(..)` and inner attributes between are passed over.
fn attrs_before(text: &str, code: &[u8], at: usize) -> Vec<String> {
    let mut end = back_ws(code, at);
    if let Some(s) = word_before(code, end)
        && &code[s..end] == b"unsafe"
    {
        end = back_ws(code, s);
    }
    let mut out = Vec::new();
    loop {
        // `pub(crate)` / `pub`
        if end > 0
            && code[end - 1] == b')'
            && let Some(o) = open_of(code, end - 1)
            && let e = back_ws(code, o)
            && let Some(s) = word_before(code, e)
            && &code[s..e] == b"pub"
        {
            end = back_ws(code, s);
            continue;
        }
        if let Some(s) = word_before(code, end)
            && &code[s..end] == b"pub"
        {
            end = back_ws(code, s);
            continue;
        }
        if end == 0 || code[end - 1] != b']' {
            break;
        }
        let Some(o) = open_of(code, end - 1) else {
            break;
        };
        let before = back_ws(code, o);
        if before > 0 && code[before - 1] == b'#' {
            let attr: String = text[o + 1..end - 1]
                .chars()
                .filter(|c| !c.is_whitespace())
                .collect();
            out.push(attr);
            end = back_ws(code, before - 1);
        } else if before > 1 && code[before - 1] == b'!' && code[before - 2] == b'#' {
            end = back_ws(code, before - 2); // an inner attribute: passed over
        } else {
            break;
        }
    }
    out.reverse();
    out
}

/// The macro whose body opens at `open`: `name! (`, or `macro_rules! name {`.
fn macro_before(code: &[u8], open: usize) -> Option<&[u8]> {
    let mut e = back_ws(code, open);
    if e > 0 && code[e - 1] != b'!' {
        let s = word_before(code, e)?;
        e = back_ws(code, s);
    }
    if e == 0 || code[e - 1] != b'!' {
        return None;
    }
    let e = back_ws(code, e - 1);
    let s = word_before(code, e)?;
    Some(&code[s..e])
}

/// The bytes the scan stops at: brackets, and `m` (of `mod`).
const STOPS: [bool; 256] = {
    let mut t = [false; 256];
    let mut k = 0;
    let stops = b"{}()[]m";
    while k < stops.len() {
        t[stops[k] as usize] = true;
        k += 1;
    }
    t
};

pub(super) fn decls(text: &str, code: &[u8]) -> Option<Vec<ModDecl>> {
    // lines counted as far as the last declaration found (they come in order)
    let mut counted = (0usize, 1usize);
    let mut line_of = |at: usize| {
        let (from, line) = counted;
        let l = line + memchr::memchr_iter(b'\n', &code[from..at]).count();
        counted = (at, l);
        l
    };
    let mut out = Vec::new();
    let mut stack: Vec<Frame> = Vec::new();
    let mut inline: Vec<String> = Vec::new();
    let (mut in_macro, mut skip_all) = (false, false);
    // an inline `mod name {`: where its brace is, what it pushes, skip
    let mut pending: Option<(usize, String, bool)> = None;
    let mut i = 0;
    while i < code.len() {
        let c = code[i];
        if !STOPS[c as usize] {
            i += 1;
            continue;
        }
        match c {
            b'[' if back_ws(code, i) > 0 && {
                let e = back_ws(code, i);
                code[e - 1] == b'#' || (code[e - 1] == b'!' && e > 1 && code[e - 2] == b'#')
            } =>
            {
                // an attribute: nothing inside it is an item
                let mut depth = 0usize;
                while i < code.len() {
                    match code[i] {
                        b'[' => depth += 1,
                        b']' => {
                            depth -= 1;
                            if depth == 0 {
                                break;
                            }
                        }
                        _ => {}
                    }
                    i += 1;
                }
                i += 1;
            }
            b'{' | b'(' | b'[' => {
                let close = match c {
                    b'{' => b'}',
                    b'(' => b')',
                    _ => b']',
                };
                let mut frame = Frame {
                    close,
                    inline: false,
                    in_macro,
                    skip: skip_all,
                };
                match pending.take() {
                    Some((at, name, skip)) if at == i => {
                        inline.push(name);
                        frame.inline = true;
                        // `mod m { #![rustfmt::skip] .. }` skips as the outer form does
                        skip_all = skip || super::inner_skip_at(text, code, i + 1);
                    }
                    _ => {
                        if let Some(m) = macro_before(code, i) {
                            in_macro |= m != b"cfg_if";
                        }
                    }
                }
                stack.push(frame);
                i += 1;
            }
            b'}' | b')' | b']' => {
                let f = stack.pop()?;
                if f.close != c {
                    return None;
                }
                if f.inline {
                    inline.pop();
                }
                in_macro = f.in_macro;
                skip_all = f.skip;
                i += 1;
            }
            _ => {
                // `m`: the word `mod`, or part of another word
                let start = i;
                i += 1;
                if !code[start..].starts_with(b"mod")
                    || (start > 0 && (word(code[start - 1]) || code[start - 1] == b'#'))
                    || code.get(start + 3).is_some_and(|&b| word(b))
                {
                    continue;
                }
                i = start + 3;
                let mut j = i;
                while j < code.len() && ws(code[j]) {
                    j += 1;
                }
                let name_start = j;
                if code[j..].starts_with(b"r#") {
                    j += 2;
                }
                let ident_start = j;
                while j < code.len() && word(code[j]) {
                    j += 1;
                }
                if j == ident_start || j == i {
                    continue;
                }
                let name = &text[name_start..j];
                let mut k = j;
                while k < code.len() && ws(code[k]) {
                    k += 1;
                }
                match code.get(k) {
                    Some(b';') | Some(b'{') => {}
                    _ => continue,
                }
                let attrs = attrs_before(text, code, start);
                let skip = skip_all || attrs.iter().any(|a| is_skip_attr(a));
                let path = attrs.iter().find_map(|a| path_attr(a));
                if code[k] == b';' {
                    out.push(ModDecl {
                        name: name.to_string(),
                        path_attr: path,
                        skip,
                        inline: inline.clone(),
                        line: line_of(name_start),
                        in_macro,
                    });
                    i = k + 1;
                } else {
                    let dir =
                        path.unwrap_or_else(|| name.strip_prefix("r#").unwrap_or(name).to_string());
                    pending = Some((k, dir, skip));
                    i = k;
                }
            }
        }
    }
    stack.is_empty().then_some(out)
}
