//! A crate may depend on one package under one name only: cargo refuses a
//! crate that "depends on crate `thiserror v2.0.12` multiple times with
//! different names", in any mix of dependency kinds. A member midway through
//! a migration often has `thiserror = "1"` beside
//! `thiserror2 = { package = "thiserror", version = "2" }`; once the fix gave
//! both the policy's requirement, cargo would refuse the workspace. Such
//! declarations are left as they are, each a `conflict` finding that needs a
//! person (merging them means renaming the uses in the sources). Names that
//! already share a version (refused by cargo before the fix too) are fixed
//! as before: the fix creates no clash there.

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;

use cargo_metadata::semver::VersionReq;

use super::set_aside::overlap;
use super::{Ctx, Use};
use crate::align_deps::manifest::Decl;
use crate::align_deps::rule::Rule;

impl Ctx<'_, '_> {
    /// `own` and `inherited` without the crates.io declarations of members
    /// that declare the package under two or more keys (each of those gets
    /// its `conflict` finding).
    pub(super) fn two_names<'u>(
        &mut self,
        own: Vec<Use<'u>>,
        inherited: Vec<Use<'u>>,
        ws_decls: &[Decl<'_>],
    ) -> (Vec<Use<'u>>, Vec<Use<'u>>) {
        // from crates.io once fixed: an own declaration without another
        // source, or one inheriting an entry without one (git and path
        // declarations are other packages to cargo, and never moved)
        let crates_io = |u: &Use<'_>| {
            if u.decl.inherited() {
                ws_decls
                    .iter()
                    .find(|w| w.key.get() == u.decl.key.get())
                    .is_some_and(|w| w.source().is_none())
            } else {
                u.decl.source().is_none()
            }
        };
        // the requirement a declaration has now (an inherited one, its entry's)
        let now = |u: &Use<'_>| {
            let v = if u.decl.inherited() {
                ws_decls
                    .iter()
                    .find(|w| w.key.get() == u.decl.key.get())
                    .and_then(|w| w.version())
            } else {
                u.decl.version()
            };
            v.and_then(|(v, _)| VersionReq::parse(v).ok())
        };
        let mut keys: BTreeMap<PathBuf, Vec<(String, Option<VersionReq>)>> = BTreeMap::new();
        for u in own.iter().chain(&inherited).filter(|u| crates_io(u)) {
            keys.entry(u.m.path.clone())
                .or_default()
                .push((u.decl.key.get().to_string(), now(u)));
        }
        // two names that share a version now are refused by cargo already:
        // the fix makes that no worse; two that do not (1 and 2) are the
        // clash the fix would create
        keys.retain(|_, decls| {
            let (mut apart, mut shared) = (false, false);
            for (i, a) in decls.iter().enumerate() {
                for b in decls[i + 1..].iter().filter(|b| b.0 != a.0) {
                    match (&a.1, &b.1) {
                        (Some(x), Some(y)) if !overlap(x, y) => apart = true,
                        _ => shared = true,
                    }
                }
            }
            apart && !shared
        });
        let keys: BTreeMap<PathBuf, BTreeSet<String>> = keys
            .into_iter()
            .map(|(p, k)| (p, k.into_iter().map(|(k, _)| k).collect()))
            .collect();
        if keys.is_empty() {
            return (own, inherited);
        }
        let (name, version) = (self.name, self.rule.version.clone());
        let mut keep = |uses: Vec<Use<'u>>| -> Vec<Use<'u>> {
            let mut kept = Vec::with_capacity(uses.len());
            for u in uses {
                let Some(names) = keys.get(&u.m.path).filter(|_| crates_io(&u)) else {
                    kept.push(u);
                    continue;
                };
                let list = names
                    .iter()
                    .map(|k| format!("`{k}`"))
                    .collect::<Vec<_>>()
                    .join(", ");
                let message = format!(
                    "{} declares the package {name} under {} names ({list}); once each held the policy's \"{version}\", \
                     cargo would refuse the crate (it depends on one package under one name only): \
                     merge them into one `{name}` declaration and rename the uses in its sources by hand, then run align-deps again",
                    u.m.rel,
                    names.len()
                );
                let f = self.unfixable(
                    &u,
                    Rule::Conflict,
                    &format!("one declaration of {name}"),
                    &message,
                );
                self.plan.push_finding(f);
            }
            kept
        };
        let own = keep(own);
        let inherited = keep(inherited);
        (own, inherited)
    }
}
