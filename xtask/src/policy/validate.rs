//! Validation beyond the schema: a policy mistake is exit 2 at the value
//! that is wrong, never a silent pass. Each check returns the byte offset to
//! point at and the message.

use cargo_metadata::semver::VersionReq;

/// A policy with no table or key at all says nothing: surely a mistake
/// (an emptied or truncated file), never a silent pass.
pub(super) fn validate_not_empty(text: &str) -> Result<(), (usize, String)> {
    let says_something = text.lines().any(|l| {
        let l = l.trim();
        !l.is_empty() && !l.starts_with('#')
    });
    if says_something {
        Ok(())
    } else {
        Err((
            0,
            "the policy is empty: it enforces nothing; write at least one rule such as `[dependencies.thiserror]` with `version = \"2\"`".into(),
        ))
    }
}

/// A requirement is written without stray spaces: no leading or trailing
/// space, none between an operator and its version, exactly one after each
/// comma (the form every manifest gets).
pub(super) fn validate_spacing(
    name: &str,
    version: &str,
    value_start: usize,
) -> Result<(), (usize, String)> {
    let canonical = version
        .split(',')
        .map(|c| {
            c.chars()
                .filter(|ch| !ch.is_whitespace())
                .collect::<String>()
        })
        .collect::<Vec<_>>()
        .join(", ");
    if canonical == version {
        return Ok(());
    }
    let at = version
        .bytes()
        .zip(canonical.bytes().chain(std::iter::repeat(0)))
        .position(|(a, b)| a != b)
        .unwrap_or(0);
    Err((
        value_start + 1 + at,
        format!(
            "dependencies.{name}.version = \"{version}\" has stray spaces (it is written into every manifest as is); write \"{canonical}\""
        ),
    ))
}

/// (major, minor, patch) as one ordered number.
type Triple = (u64, u64, u64);

/// The versions (pre-releases aside) one comparator accepts: `[low, high)`.
fn comparator_range(c: &cargo_metadata::semver::Comparator) -> (Triple, Option<Triple>) {
    use cargo_metadata::semver::Op;
    let (ma, mi, pa) = (c.major, c.minor, c.patch);
    let at = (ma, mi.unwrap_or(0), pa.unwrap_or(0));
    // the first version above everything `ma[.mi[.pa]]` names
    let after = match (mi, pa) {
        (None, _) => (ma + 1, 0, 0),
        (Some(mi), None) => (ma, mi + 1, 0),
        (Some(mi), Some(pa)) => (ma, mi, pa + 1),
    };
    match c.op {
        Op::Exact | Op::Wildcard => (at, Some(after)),
        Op::Greater => (after, None),
        Op::GreaterEq => (at, None),
        Op::Less => ((0, 0, 0), Some(at)),
        Op::LessEq => ((0, 0, 0), Some(after)),
        Op::Tilde => match mi {
            None => (at, Some((ma + 1, 0, 0))),
            Some(mi) => (at, Some((ma, mi + 1, 0))),
        },
        _ => {
            // caret (and anything newer: treated as caret, its closest kin)
            let high = match (ma, mi, pa) {
                (0, None, _) => (1, 0, 0),
                (0, Some(0), None) => (0, 1, 0),
                (0, Some(0), Some(p)) => (0, 0, p + 1),
                (0, Some(m), _) => (0, m + 1, 0),
                (m, _, _) => (m + 1, 0, 0),
            };
            (at, Some(high))
        }
    }
}

/// A requirement that no version satisfies (`">=2, <1"`) would be written
/// into every manifest and break every build.
pub(super) fn validate_satisfiable(
    name: &str,
    version: &str,
    req: &VersionReq,
) -> Result<(), String> {
    let mut low: Triple = (0, 0, 0);
    let mut high: Option<Triple> = None;
    for c in &req.comparators {
        let (l, h) = comparator_range(c);
        low = low.max(l);
        high = match (high, h) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
    }
    match high {
        Some(h) if h <= low => Err(format!(
            "dependencies.{name}.version = \"{version}\" is satisfied by no version (it asks for >= {}.{}.{} and < {}.{}.{} at once); write one requirement such as \"2\"",
            low.0, low.1, low.2, h.0, h.1, h.2
        )),
        _ => Ok(()),
    }
}
