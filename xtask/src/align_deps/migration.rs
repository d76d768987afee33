//! Source migrations: the code changes a policy dependency's new major
//! needs, found and fixed in the same run and the same all-or-nothing plan
//! as the manifest edits. The alignment core (the phases, the plans, the
//! toolchain floors, the exemptions, the rule for files outside the
//! workspace) reaches the source side only through [`Migration`]; the one
//! migration registered today is thiserror 1 -> 2 (`super::SOURCE_MIGRATION`,
//! its rules in `super::thiserror2` and `super::sources`).

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use cargo_metadata::Metadata;
use cargo_metadata::semver::VersionReq;

use super::lockfile::LockText;
use super::plan::AlignmentPlan;
use super::planner::{Loaded, NewUser};
use crate::policy::{DependencyRule, Policy};

/// One crate's source analysis, as the registered migration makes it (its
/// files, their fixed texts, its findings, the dependencies it lacks).
pub(crate) use crate::thiserror_src::CrateAnalysis as Analysis;
/// The `.rs` files read ahead while `cargo metadata` runs (any migration's
/// analysis takes them where they are unchanged).
pub(crate) use crate::thiserror_src::prefetch::{Prefetch, SourceCache};

/// A source migration of one policy dependency. Each method is one step the
/// core takes, in this order: [`Migration::analyze`] (read only),
/// [`Migration::hold_renamed`], [`Migration::new_users`],
/// [`Migration::hold_back`], [`Migration::plan`]; [`Migration::rule`] and
/// [`Migration::toolchain_floor`] for the toolchain floors.
pub(crate) trait Migration: Sync {
    /// The package (and policy key) whose sources it migrates.
    fn dependency(&self) -> &'static str;

    /// What the migrated code is written for, in messages ("... not
    /// scanned for {title}", "has no {title} finding").
    fn title(&self) -> &'static str;

    /// The policy's rule for [`Migration::dependency`] when it asks for the
    /// new major (then the source side runs); `None` otherwise.
    fn rule<'p>(&self, policy: &'p Policy) -> Option<&'p DependencyRule>;

    /// The lowest Rust that some release matching `req` supports.
    fn toolchain_floor(&self, req: &VersionReq) -> (u64, u64);

    /// Where the floors come from, in a `toolchain-floor` message.
    fn floor_note(&self) -> &'static str;

    /// The analysis of every member it concerns (nothing when
    /// [`Migration::rule`] is `None`), in member order; reads only (`lock`:
    /// the run's read of `Cargo.lock`, `None` when it could not be read).
    ///
    /// # Errors
    /// An unreadable source file or one that does not parse.
    fn analyze(
        &self,
        meta: &Metadata,
        root: &Path,
        policy: &Policy,
        cache: Option<Arc<SourceCache>>,
        lock: Option<&LockText>,
    ) -> anyhow::Result<Vec<Analysis>>;

    /// Holds the crates whose migration would break their build however the
    /// manifests are planned: their manifests (taken out of the manifest
    /// plan) and an information line for each.
    fn hold_renamed(
        &self,
        analyses: &mut [Analysis],
        loaded: &Loaded,
        root: &Path,
    ) -> (BTreeSet<PathBuf>, Vec<String>);

    /// The policy dependencies the migration will add to some manifest.
    fn new_users(&self, analyses: &[Analysis]) -> BTreeSet<String>;

    /// Drops the analyses of crates whose declaration the manifest plan
    /// cannot move; an information line for each.
    fn hold_back(
        &self,
        analyses: Vec<Analysis>,
        manifest_plan: &AlignmentPlan,
        root: &Path,
    ) -> (Vec<Analysis>, Vec<String>);

    /// The source plan: findings, whole-file replacements and the manifest
    /// lines of added dependencies (`form`: how a new declaration of
    /// [`Migration::dependency`] is written).
    ///
    /// # Errors
    /// Conflicting edits.
    fn plan(
        &self,
        analyses: &[Analysis],
        loaded: &Loaded,
        form: Option<&NewUser>,
        root: &Path,
    ) -> anyhow::Result<AlignmentPlan>;
}
