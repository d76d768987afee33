//! A requirement that already holds the policy, stricter: `"2.0.12"` under
//! a policy of `"2"` accepts only versions the policy accepts, and raises
//! the minimum (a crate may need a fix of 2.0.12; `-Z minimal-versions`
//! builds would break if it became `"2"`). Such a requirement is kept as
//! written; with inheritance the `[workspace.dependencies]` entry takes the
//! strictest one its users ask for, so no member's minimum drops.

use cargo_metadata::semver::{Comparator, Op, Version, VersionReq};

/// The versions a comparator accepts: `[low, high)`, `high` `None` when
/// unbounded (pre-releases aside).
fn range(c: &Comparator) -> (Version, Option<Version>) {
    let (ma, mi, pa) = (c.major, c.minor, c.patch);
    let low = Version::new(ma, mi.unwrap_or(0), pa.unwrap_or(0));
    // the end of "exactly what is written": =2 is 2.x, =2.1 is 2.1.x
    let next = || match (mi, pa) {
        (None, _) => Version::new(ma + 1, 0, 0),
        (Some(mi), None) => Version::new(ma, mi + 1, 0),
        (Some(mi), Some(pa)) => Version::new(ma, mi, pa + 1),
    };
    match c.op {
        Op::Exact | Op::Wildcard => (low, Some(next())),
        Op::Tilde => match mi {
            None => (low, Some(Version::new(ma + 1, 0, 0))),
            Some(mi) => (low, Some(Version::new(ma, mi + 1, 0))),
        },
        Op::Caret => {
            let high = match (ma, mi, pa) {
                (0, None, _) => Version::new(1, 0, 0),
                (0, Some(0), None) => Version::new(0, 1, 0),
                (0, Some(0), Some(p)) => Version::new(0, 0, p + 1),
                (0, Some(m), _) => Version::new(0, m + 1, 0),
                (m, _, _) => Version::new(m + 1, 0, 0),
            };
            (low, Some(high))
        }
        Op::Greater => (next(), None),
        Op::GreaterEq => (low, None),
        Op::Less => (Version::new(0, 0, 0), Some(low)),
        Op::LessEq => (Version::new(0, 0, 0), Some(next())),
        _ => (Version::new(0, 0, 0), None),
    }
}

/// The versions a requirement accepts, `[low, high)`; `None` for one with a
/// pre-release (not compared) or that accepts nothing.
fn bounds(req: &VersionReq) -> Option<(Version, Option<Version>)> {
    let mut low = Version::new(0, 0, 0);
    let mut high: Option<Version> = None;
    for c in &req.comparators {
        if !c.pre.is_empty() {
            return None;
        }
        let (l, h) = range(c);
        low = low.max(l);
        high = match (high, h) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
    }
    match &high {
        Some(h) if *h <= low => None,
        _ => Some((low, high)),
    }
}

/// Whether `written` accepts only versions that `policy` accepts (so it
/// already holds the policy, at least as strictly): then it is kept.
pub(crate) fn within(written: &str, policy: &VersionReq) -> bool {
    let Ok(req) = VersionReq::parse(written) else {
        return false;
    };
    let (Some((low, high)), Some((plow, phigh))) = (bounds(&req), bounds(policy)) else {
        return false;
    };
    low >= plow
        && match (high, phigh) {
            (_, None) => true,
            (Some(h), Some(ph)) => h <= ph,
            (None, Some(_)) => false,
        }
}

/// The lowest version `written` accepts (for picking the strictest of
/// several requirements that are [`within`] the policy).
pub(crate) fn minimum(written: &str) -> Option<Version> {
    bounds(&VersionReq::parse(written).ok()?).map(|(low, _)| low)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stricter_requirements_are_within_the_policy() {
        let p = |s: &str| VersionReq::parse(s).unwrap();
        assert!(within("2.0.12", &p("2")));
        assert!(within("^2.0.12", &p("2")));
        assert!(within("~2.0.12", &p("2")));
        assert!(within("=2.0.12", &p("2")));
        assert!(within(">=2.0.12, <2.1", &p("2")));
        assert!(within("2", &p("2")));
        assert!(within("2.0", &p("2")));
        assert!(!within("2", &p("2.0.12")), "looser");
        assert!(!within("1", &p("2")));
        assert!(!within(">=2.0.12", &p("2")), "no upper bound");
        assert!(!within("*", &p("2")));
        assert!(!within("2.0.0-rc.1", &p("2")));
        assert!(!within("not a requirement", &p("2")));
        assert!(within("0.3.5", &p("0.3")));
        assert!(!within("0.4", &p("0.3")));
        assert_eq!(minimum("2.0.12"), Some(Version::new(2, 0, 12)));
        assert_eq!(minimum("2"), Some(Version::new(2, 0, 0)));
    }
}
