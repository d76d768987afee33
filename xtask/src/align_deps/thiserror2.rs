//! The one registered [`Migration`]: thiserror 1 -> 2. Its source rules are
//! in [`crate::thiserror_src`], their place in a run of align-deps in
//! [`super::sources`]; here are the migration's name, when it applies, and
//! the Rust its releases need.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use cargo_metadata::Metadata;
use cargo_metadata::semver::{Version, VersionReq};

use super::lockfile::LockText;
use super::migration::{Analysis, Migration, SourceCache};
use super::plan::AlignmentPlan;
use super::planner::{Loaded, NewUser};
use super::sources;
use crate::policy::{DependencyRule, Policy};

/// thiserror 1 -> 2.
#[derive(Debug)]
pub(crate) struct Thiserror2;

/// The `rust-version` thiserror 2 releases declare, from the first patch
/// release that declares it (crates.io index, read 2026-12-03): 2.0.0-2.0.17
/// 1.61, 2.0.18 1.68, 2.0.19-2.0.20 1.71, 2.0.21 1.77.
pub const THISERROR2_RUST: &[(u64, (u64, u64))] =
    &[(0, (1, 61)), (18, (1, 68)), (19, (1, 71)), (21, (1, 77))];

/// The lowest Rust that some thiserror release matching `req` supports
/// (the floor of the oldest matching release).
fn thiserror_floor(req: &VersionReq) -> (u64, u64) {
    let newest = THISERROR2_RUST.last().map_or(0, |e| e.0);
    (0..=newest)
        .find(|p| req.matches(&Version::new(2, 0, *p)))
        .map_or(THISERROR2_RUST[THISERROR2_RUST.len() - 1].1, |p| {
            THISERROR2_RUST
                .iter()
                .rev()
                .find(|(from, _)| *from <= p)
                .map_or(THISERROR2_RUST[0].1, |e| e.1)
        })
}

impl Migration for Thiserror2 {
    fn dependency(&self) -> &'static str {
        sources::THISERROR
    }

    fn title(&self) -> &'static str {
        "thiserror 2"
    }

    fn rule<'p>(&self, policy: &'p Policy) -> Option<&'p DependencyRule> {
        sources::thiserror2_rule(policy)
    }

    fn toolchain_floor(&self, req: &VersionReq) -> (u64, u64) {
        thiserror_floor(req)
    }

    fn floor_note(&self) -> &'static str {
        "its releases declare rust-version 1.61 to 1.77"
    }

    fn analyze(
        &self,
        meta: &Metadata,
        root: &Path,
        policy: &Policy,
        cache: Option<Arc<SourceCache>>,
        lock: Option<&LockText>,
    ) -> anyhow::Result<Vec<Analysis>> {
        sources::analyze_with(meta, root, policy, cache, lock)
    }

    fn hold_renamed(
        &self,
        analyses: &mut [Analysis],
        loaded: &Loaded,
        root: &Path,
    ) -> (BTreeSet<PathBuf>, Vec<String>) {
        sources::hold_renamed(analyses, loaded, root)
    }

    fn new_users(&self, analyses: &[Analysis]) -> BTreeSet<String> {
        sources::new_users(analyses)
    }

    fn hold_back(
        &self,
        analyses: Vec<Analysis>,
        manifest_plan: &AlignmentPlan,
        root: &Path,
    ) -> (Vec<Analysis>, Vec<String>) {
        sources::hold_back(analyses, manifest_plan, root)
    }

    fn plan(
        &self,
        analyses: &[Analysis],
        loaded: &Loaded,
        form: Option<&NewUser>,
        root: &Path,
    ) -> anyhow::Result<AlignmentPlan> {
        sources::plan(analyses, loaded, form, root)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thiserror_floors() {
        let f = |r: &str| thiserror_floor(&VersionReq::parse(r).unwrap());
        assert_eq!(f("2"), (1, 61));
        assert_eq!(f("^2.0.12"), (1, 61));
        assert_eq!(f("^2.0.18"), (1, 68));
        assert_eq!(f("=2.0.20"), (1, 71));
        assert_eq!(f("^2.0.21"), (1, 77));
        assert_eq!(f("^2.1"), (1, 77));
    }
}
