//! A `format_args!` format string, parsed into its placeholders, each part
//! located by character index (an index into the decoded literal's pieces).

use std::ops::Range;

/// What a placeholder's argument (or a `name$` / `N$` count parameter) names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum ArgKind {
    /// `{}` / `{:?}`: the next positional argument.
    Implicit,
    /// `{0}`, `{1:?}`, `1$`.
    Index(usize),
    /// `{name}`, `{r#type}`, `name$`, as written (a raw identifier keeps its `r#`).
    Name(String),
}

/// An argument reference and the characters that spell it (empty for
/// [`ArgKind::Implicit`]: then `chars.start` is where a name would go).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ArgRef {
    pub kind: ArgKind,
    pub chars: Range<usize>,
}

impl ArgRef {
    /// The name without `r#`, for a named reference.
    pub fn unraw_name(&self) -> Option<&str> {
        match &self.kind {
            ArgKind::Name(n) => Some(n.strip_prefix("r#").unwrap_or(n)),
            _ => None,
        }
    }
}

/// One `{...}` placeholder.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Placeholder {
    pub arg: ArgRef,
    /// `width$` parameter.
    pub width: Option<ArgRef>,
    /// `.precision$` parameter.
    pub precision: Option<ArgRef>,
    /// `.*` precision (takes an extra implicit positional argument).
    pub star: bool,
    /// The character before the closing `}` when there is anything between the
    /// argument and the `}` (what thiserror looks at to pick the bound trait).
    pub spec_last: Option<char>,
}

impl Placeholder {
    /// The argument references of this placeholder: the argument, then its parameters.
    pub fn refs(&self) -> impl Iterator<Item = &ArgRef> {
        std::iter::once(&self.arg)
            .chain(self.width.as_ref())
            .chain(self.precision.as_ref())
    }
}

fn is_ident_start(c: char) -> bool {
    c.is_alphabetic() || c == '_'
}

fn is_ident_continue(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// Reads an integer or an identifier (raw identifiers included) at `*i`.
fn arg_at(chars: &[char], i: &mut usize) -> Option<ArgRef> {
    let start = *i;
    let c = *chars.get(start)?;
    if c.is_ascii_digit() {
        while chars.get(*i).is_some_and(char::is_ascii_digit) {
            *i += 1;
        }
        let text: String = chars[start..*i].iter().collect();
        let kind = text.parse().map_or(ArgKind::Name(text), ArgKind::Index);
        return Some(ArgRef {
            kind,
            chars: start..*i,
        });
    }
    let mut j = start;
    if c == 'r'
        && chars.get(j + 1) == Some(&'#')
        && chars.get(j + 2).is_some_and(|&c| is_ident_start(c))
    {
        j += 2;
    } else if !is_ident_start(c) {
        return None;
    }
    while chars.get(j).is_some_and(|&c| is_ident_continue(c)) {
        j += 1;
    }
    *i = j;
    Some(ArgRef {
        kind: ArgKind::Name(chars[start..j].iter().collect()),
        chars: start..j,
    })
}

/// A `N$` / `name$` count parameter at `*i`; `*i` unchanged when there is none.
fn param_at(chars: &[char], i: &mut usize) -> Option<ArgRef> {
    let mut j = *i;
    let arg = arg_at(chars, &mut j)?;
    if chars.get(j) == Some(&'$') {
        *i = j + 1;
        Some(arg)
    } else {
        None
    }
}

fn skip_digits(chars: &[char], i: &mut usize) {
    while chars.get(*i).is_some_and(char::is_ascii_digit) {
        *i += 1;
    }
}

/// The placeholders of a format string. `None` when it is malformed (an
/// unclosed `{`): such a string is left alone.
pub(crate) fn parse(chars: &[char]) -> Option<Vec<Placeholder>> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        match chars[i] {
            '{' if chars.get(i + 1) == Some(&'{') => i += 2,
            '}' if chars.get(i + 1) == Some(&'}') => i += 2,
            '{' => {
                i += 1;
                let arg = arg_at(chars, &mut i).unwrap_or(ArgRef {
                    kind: ArgKind::Implicit,
                    chars: i..i,
                });
                let after_arg = i;
                let (mut width, mut precision, mut star) = (None, None, false);
                if chars.get(i) == Some(&':') {
                    i += 1;
                    let is_align = |c: Option<&char>| matches!(c, Some('<' | '^' | '>'));
                    if chars.get(i).is_some_and(|&c| c != '}') && is_align(chars.get(i + 1)) {
                        i += 2;
                    } else if is_align(chars.get(i)) {
                        i += 1;
                    }
                    if matches!(chars.get(i), Some('+' | '-')) {
                        i += 1;
                    }
                    if chars.get(i) == Some(&'#') {
                        i += 1;
                    }
                    if chars.get(i) == Some(&'0') && chars.get(i + 1) != Some(&'$') {
                        i += 1;
                    }
                    width = param_at(chars, &mut i);
                    if width.is_none() {
                        skip_digits(chars, &mut i);
                    }
                    if chars.get(i) == Some(&'.') {
                        i += 1;
                        if chars.get(i) == Some(&'*') {
                            star = true;
                            i += 1;
                        } else {
                            precision = param_at(chars, &mut i);
                            if precision.is_none() {
                                skip_digits(chars, &mut i);
                            }
                        }
                    }
                }
                let close = i + chars[i..].iter().position(|&c| c == '}')?;
                let spec_last = (close > after_arg).then(|| chars[close - 1]);
                out.push(Placeholder {
                    arg,
                    width,
                    precision,
                    star,
                    spec_last,
                });
                i = close + 1;
            }
            _ => i += 1,
        }
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ph(s: &str) -> Vec<Placeholder> {
        parse(&s.chars().collect::<Vec<_>>()).unwrap()
    }

    #[test]
    fn kinds() {
        let p = ph("a {} {0} {name:?} {r#type} {{r#x}} }}");
        let kinds: Vec<_> = p.iter().map(|p| p.arg.kind.clone()).collect();
        assert_eq!(
            kinds,
            vec![
                ArgKind::Implicit,
                ArgKind::Index(0),
                ArgKind::Name("name".into()),
                ArgKind::Name("r#type".into())
            ]
        );
        assert_eq!(p[2].spec_last, Some('?'));
        assert_eq!(p[3].spec_last, None);
        assert_eq!(p[3].arg.chars, 19..25);
        assert_eq!(p[3].arg.unraw_name(), Some("type"));
    }

    #[test]
    fn specs_and_params() {
        let p = ph("{:>w$} {x:1$.r#p$} {:.*} {:x} {:05} {:0$}");
        assert_eq!(p[0].width.as_ref().unwrap().kind, ArgKind::Name("w".into()));
        assert_eq!(p[1].width.as_ref().unwrap().kind, ArgKind::Index(1));
        assert_eq!(
            p[1].precision.as_ref().unwrap().kind,
            ArgKind::Name("r#p".into())
        );
        assert!(p[2].star);
        assert_eq!(p[3].width, None);
        assert_eq!(p[3].spec_last, Some('x'));
        assert_eq!(p[4].width, None);
        assert_eq!(p[5].width.as_ref().unwrap().kind, ArgKind::Index(0));
    }

    #[test]
    fn malformed() {
        assert!(parse(&"{unclosed".chars().collect::<Vec<_>>()).is_none());
    }
}
