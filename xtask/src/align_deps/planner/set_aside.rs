//! Declarations the plan leaves alone: the one a declaration exemption of
//! the policy names (`[[exempt]]` with `manifest` and `dependency`, the
//! declaration's key: `thiserror`, or `thiserror_sgx` for `thiserror_sgx = {
//! package = "thiserror", .. }`; judged in `align_deps::exemption_use`), and those inside a
//! section that cargo-hakari manages.
//!
//! cargo-hakari writes a `workspace-hack` crate's dependencies between
//! `### BEGIN HAKARI SECTION` and `### END HAKARI SECTION` and rewrites them
//! on every `cargo hakari generate`: an edit there is overwritten, and may
//! leave the section inconsistent meanwhile (`thiserror` moved to 2 while
//! `thiserror-impl` stayed at 1). So a declaration inside is never edited; when its
//! requirement shares no version with the policy's it is reported
//! (`hakari`, needs a person) with the command to run.

use std::ops::Range;

use cargo_metadata::semver::{Op, Version, VersionReq};

use super::{Ctx, Use};
use crate::align_deps::plan::Finding;
use crate::align_deps::rule::Rule;
use crate::policy::ExemptKind;
use crate::text::one_line;

/// The byte ranges of `text` inside cargo-hakari's managed sections: from a
/// line `### BEGIN HAKARI SECTION` (any number of `#`) to the line
/// `### END HAKARI SECTION`, or to the end of the text when that is missing.
pub(crate) fn hakari_sections(text: &str) -> Vec<Range<usize>> {
    let marker = |line: &str, what: &str| {
        let l = line.trim();
        l.starts_with('#') && l.trim_start_matches('#').trim() == what
    };
    let mut out = Vec::new();
    let mut start = None;
    let mut at = 0;
    for line in text.split_inclusive('\n') {
        if start.is_none() && marker(line, "BEGIN HAKARI SECTION") {
            start = Some(at);
        } else if let Some(s) = start
            && marker(line, "END HAKARI SECTION")
        {
            out.push(s..at + line.len());
            start = None;
        }
        at += line.len();
    }
    if let Some(s) = start {
        out.push(s..text.len());
    }
    out
}

/// The lowest version `req` accepts (pre-releases aside): the highest lower
/// bound among its comparators.
fn lowest(req: &VersionReq) -> Version {
    req.comparators
        .iter()
        .map(|c| {
            let (mi, pa) = (c.minor.unwrap_or(0), c.patch.unwrap_or(0));
            match c.op {
                Op::Greater => match (c.minor, c.patch) {
                    (None, _) => Version::new(c.major + 1, 0, 0),
                    (Some(mi), None) => Version::new(c.major, mi + 1, 0),
                    (Some(mi), Some(pa)) => Version::new(c.major, mi, pa + 1),
                },
                Op::Less | Op::LessEq => Version::new(0, 0, 0),
                _ => Version::new(c.major, mi, pa),
            }
        })
        .max()
        .unwrap_or(Version::new(0, 0, 0))
}

/// Whether some version satisfies both requirements (tried at each one's
/// lowest version; enough for the requirements manifests carry).
pub(super) fn overlap(a: &VersionReq, b: &VersionReq) -> bool {
    [lowest(a), lowest(b)]
        .iter()
        .any(|v| a.matches(v) && b.matches(v))
}

impl<'a> Ctx<'_, 'a> {
    /// `uses` without the declarations the plan leaves alone; a hakari
    /// declaration that shares no version with the policy gets its finding.
    pub(super) fn set_aside<'u>(&mut self, uses: Vec<Use<'u>>) -> Vec<Use<'u>> {
        let mut kept = Vec::with_capacity(uses.len());
        for u in uses {
            let exempt = self.exemptions.iter().any(|e| {
                matches!(&e.kind, ExemptKind::Declaration { manifest, dependency }
                    if *manifest == u.m.rel && dependency == u.decl.key.get())
            });
            if exempt {
                continue;
            }
            let at = u.decl.key_offset();
            if !hakari_sections(u.m.text()).iter().any(|s| s.contains(&at)) {
                kept.push(u);
                continue;
            }
            let declared = u
                .decl
                .version()
                .and_then(|(v, _)| VersionReq::parse(v).ok());
            if declared.is_none_or(|d| overlap(&d, &self.rule.req)) {
                continue;
            }
            let (line, column) = u.m.line_col(at);
            let found = one_line(&u.m.text()[u.m.line_start(at)..u.m.line_end(at)], "; ");
            self.plan.push_finding(Finding {
                file: u.m.rel.clone(),
                line,
                column,
                rule: Rule::Hakari.into(),
                dependency: self.name.into(),
                key: Some(u.decl.key.get().to_string()),
                table: Some(u.table.into()),
                found,
                wanted: format!(
                    "{} \"{}\", written by `cargo hakari generate`",
                    self.name, self.rule.version
                ),
                fixable: false,
                message: format!(
                    "inside the section cargo-hakari manages (### BEGIN HAKARI SECTION): align-deps does not edit it, `cargo hakari generate` rewrites it; \
                     after align-deps has moved the workspace, run `cargo hakari generate` (it also moves {}'s companion crates, e.g. {}-impl)",
                    self.name, self.name
                ),
                fixed_in: None,
            });
        }
        kept
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sections_from_begin_to_end_or_eof() {
        let text = "[package]\nname = \"workspace-hack\"\n\n### BEGIN HAKARI SECTION\n[dependencies]\nthiserror = \"1\"\n\n### END HAKARI SECTION\n[features]\n";
        let s = hakari_sections(text);
        assert_eq!(s.len(), 1);
        assert!(text[s[0].clone()].starts_with("### BEGIN"));
        assert!(text[s[0].clone()].ends_with("### END HAKARI SECTION\n"));
        let open = "# BEGIN HAKARI SECTION\nx = 1\n";
        assert_eq!(hakari_sections(open), vec![(0..open.len())]);
        assert!(hakari_sections("# BEGIN HAKARI SECTIONS\n").is_empty());
    }

    #[test]
    fn overlapping_requirements() {
        let r = |s: &str| VersionReq::parse(s).unwrap();
        assert!(!overlap(&r("1"), &r("2")));
        assert!(overlap(&r("2"), &r("^2.0.3")));
        assert!(overlap(&r("2.0.12"), &r("2")));
        assert!(!overlap(&r("1.0.69"), &r("2")));
        assert!(overlap(&r(">=1, <3"), &r("2")));
    }
}
