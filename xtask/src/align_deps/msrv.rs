//! The toolchain floor: what a fix run writes can need a
//! newer Rust than the workspace says it supports. `workspace = true` and
//! `[workspace.dependencies]` need Cargo 1.64; the new major a source
//! migration moves to declares its own `rust-version`
//! ([`super::migration::Migration::toolchain_floor`]). A crate whose `rust-version` (its
//! own, or `rust-version.workspace = true` from `[workspace.package]`) or a
//! workspace whose pinned toolchain (`rust-toolchain.toml`,
//! `rust-toolchain`) is below what the plan needs gets a `toolchain-floor`
//! finding at that key, and a fix run then writes nothing: raise the floor
//! (or exempt the crate) first.
//!
//! A pinned channel is read as a version: `1.70`, `1.70.0`,
//! `1.70.0-x86_64-unknown-linux-gnu`; `nightly-YYYY-MM-DD` /
//! `beta-YYYY-MM-DD` by the six-week release train (a nightly is two minor
//! versions ahead of the stable of its day, a beta one); `stable`, `beta`,
//! `nightly` without a date always meet the floor.

use std::collections::BTreeMap;
use std::path::Path;

use cargo_metadata::Metadata;

use super::manifest::Manifest;
use super::plan::{AlignmentPlan, Finding};
use super::planner::Loaded;
use super::rule::Rule;
use crate::policy::Policy;

/// Cargo 1.64 stabilized `workspace = true` and `[workspace.dependencies]`.
pub const INHERIT_CARGO: (u64, u64) = (1, 64);

/// What the plan needs, and why.
#[derive(Debug, Default)]
struct Needs {
    /// Manifest (relative) -> the floor and the reason.
    crates: BTreeMap<String, ((u64, u64), String)>,
}

impl Needs {
    fn add(&mut self, manifest: &str, floor: (u64, u64), why: String) {
        let e = self
            .crates
            .entry(manifest.to_string())
            .or_insert(((0, 0), String::new()));
        if floor > e.0 {
            *e = (floor, why);
        } else if floor == e.0 && !e.1.contains(&why) {
            e.1 = format!("{} and {why}", e.1);
        }
    }

    fn max(&self) -> Option<((u64, u64), &str)> {
        self.crates
            .values()
            .max_by_key(|(f, _)| *f)
            .map(|(f, w)| (*f, w.as_str()))
    }
}

/// Whether the member whose manifest is at `manifest` inherits a
/// `[workspace.dependencies]` entry of the package `name`; `None` when that
/// manifest was not read.
fn inherits_entry(loaded: &Loaded, manifest: &Path, name: &str) -> Option<bool> {
    use super::manifest::Decl;
    let m = loaded.manifests.iter().find(|m| m.path == manifest)?;
    let ws: Vec<Decl<'_>> = loaded.manifests[loaded.root]
        .workspace_dependencies()
        .map(|t| Decl::all(t.table))
        .unwrap_or_default();
    Some(m.dependency_tables().iter().any(|t| {
        Decl::all(t.table).iter().any(|d| {
            d.inherited()
                && ws
                    .iter()
                    .any(|w| w.key.get() == d.key.get() && w.package() == name)
        })
    }))
}

/// The `toolchain-floor` findings of `plan` (empty when the workspace's
/// declared and pinned toolchains meet what the fix needs).
pub fn findings(
    meta: &Metadata,
    loaded: &Loaded,
    plan: &AlignmentPlan,
    policy: &Policy,
    root: &Path,
) -> Vec<Finding> {
    let rel = |p: &Path| crate::fsutil::rel(root, p);
    let mut needs = Needs::default();
    let inherit = format!(
        "`workspace = true` needs Cargo {}.{}",
        INHERIT_CARGO.0, INHERIT_CARGO.1
    );
    let migration = super::SOURCE_MIGRATION;
    let dependency = migration.dependency();
    let root_rel = loaded.manifests[loaded.root].rel.clone();
    let mut moves_root = false;
    for f in plan.findings.iter().filter(|f| f.fixable) {
        let target = f.fixed_in.as_deref().unwrap_or(&f.file);
        if !target.ends_with("Cargo.toml") {
            continue;
        }
        if f.rule == Rule::Inherit || f.wanted.contains("workspace = true") {
            needs.add(target, INHERIT_CARGO, inherit.clone());
        }
        if f.dependency == dependency && target == root_rel {
            moves_root = true;
        }
    }
    if let Some(rule) = migration.rule(policy) {
        // a stricter requirement [workspace.dependencies] keeps (or takes
        // from a member) may need a newer Rust than the policy's
        let (version, req) = plan
            .entry_requirements
            .get(dependency)
            .and_then(|v| {
                Some((
                    v.as_str(),
                    cargo_metadata::semver::VersionReq::parse(v).ok()?,
                ))
            })
            .filter(|(_, r)| migration.toolchain_floor(r) > migration.toolchain_floor(&rule.req))
            .unwrap_or((rule.version.as_str(), rule.req.clone()));
        let floor = migration.toolchain_floor(&req);
        let why = format!(
            "{dependency} \"{version}\" needs Rust {}.{} ({})",
            floor.0,
            floor.1,
            migration.floor_note()
        );
        for p in meta.workspace_packages() {
            let manifest = rel(p.manifest_path.as_std_path());
            let moved = plan.findings.iter().any(|f| {
                f.fixable
                    && f.dependency == dependency
                    && f.fixed_in.as_deref().unwrap_or(&f.file) == manifest
            });
            // a crate that inherits the entry moves with it (an exempt one
            // too: the workspace entry always follows the policy); one that
            // declares its own moves only where `moved` says so
            let inherits = moves_root
                && inherits_entry(loaded, p.manifest_path.as_std_path(), dependency)
                    .unwrap_or_else(|| {
                        p.dependencies
                            .iter()
                            .any(|d| d.name == dependency && d.path.is_none() && d.source.is_some())
                    });
            if moved || inherits {
                needs.add(&manifest, floor, why.clone());
            }
        }
    }
    let mut out = Vec::new();
    let Some((top, top_why)) = needs.max() else {
        return out;
    };
    let exempt_packages = super::exemption_use::packages(&policy.exemptions);
    let exempt = |name: &str| exempt_packages.contains(name);
    let mut reported = std::collections::BTreeSet::new();
    for p in meta.workspace_packages() {
        let manifest = rel(p.manifest_path.as_std_path());
        let (Some((floor, why)), Some(declared)) = (needs.crates.get(&manifest), &p.rust_version)
        else {
            continue;
        };
        if (declared.major, declared.minor) >= *floor {
            continue;
        }
        let Some((m, offset, written)) = rust_version_key(loaded, &manifest) else {
            continue;
        };
        if !reported.insert((m.rel.clone(), offset)) {
            continue;
        }
        let (line, column) = m.line_col(offset);
        out.push(Finding {
            file: m.rel.clone(),
            line,
            column,
            rule: Rule::ToolchainFloor.into(),
            dependency: super::SOURCE_MIGRATION.dependency().into(),
            key: None,
            table: None,
            found: format!("rust-version = \"{written}\""),
            wanted: format!("rust-version = \"{}.{}\" or later", floor.0, floor.1),
            fixable: false,
            message: format!(
                "`{}` declares Rust {written}, but the fix needs {}.{}: {why}; {}; align-deps writes nothing until then",
                p.name,
                floor.0,
                floor.1,
                if exempt(p.name.as_str()) {
                    format!(
                        "raise rust-version (`{}` is exempt, but it inherits the [workspace.dependencies] entry, which follows the policy; or give it its own declaration)",
                        p.name
                    )
                } else {
                    format!("raise rust-version, or exempt `{}` in the policy", p.name)
                }
            ),
            fixed_in: None,
        });
    }
    if let Some(pin) = crate::toolchain_file::find_pin(root)
        && let Some(v) = channel_version(&pin.channel)
        && v < top
    {
        let text = std::fs::read_to_string(&pin.file).unwrap_or_default();
        let offset = text.find(pin.channel.as_str()).unwrap_or(0);
        let (line, column) = crate::text::line_col(&text, offset);
        out.push(Finding {
            file: rel(&pin.file),
            line,
            column,
            rule: Rule::ToolchainFloor.into(),
            dependency: super::SOURCE_MIGRATION.dependency().into(),
            key: None,
            table: None,
            found: pin.channel.clone(),
            wanted: format!("a toolchain of Rust {}.{} or later", top.0, top.1),
            fixable: false,
            message: format!(
                "the workspace pins toolchain `{}` (Rust {}.{}), but the fix needs {}.{}: {top_why}; pin a newer toolchain first; align-deps writes nothing until then",
                pin.channel, v.0, v.1, top.0, top.1
            ),
            fixed_in: None,
        });
    }
    out
}

/// Where the `rust-version` of the member with manifest `rel` is written:
/// its own `package.rust-version`, or the root's
/// `workspace.package.rust-version` when it inherits it; with the value as
/// written there (`1.60`, not cargo's `1.60.0`).
fn rust_version_key<'m>(loaded: &'m Loaded, rel: &str) -> Option<(&'m Manifest, usize, String)> {
    let m = loaded.manifests.iter().find(|m| m.rel == rel)?;
    let item = m.root().get("package")?.get("rust-version")?;
    if let Some(s) = item.as_str() {
        return Some((m, item.span()?.start, s.to_string()));
    }
    // `rust-version.workspace = true` / `rust-version = { workspace = true }`
    let root = &loaded.manifests[loaded.root];
    let item = root
        .root()
        .get("workspace")?
        .get("package")?
        .get("rust-version")?;
    Some((root, item.span()?.start, item.as_str()?.to_string()))
}

/// The Rust (major, minor) a pinned channel stands for; `None` for a
/// channel without a version (`stable`, `nightly`): it meets any floor.
fn channel_version(channel: &str) -> Option<(u64, u64)> {
    let c = channel.trim();
    let mut parts = c.split(['.', '-']);
    if let (Some(ma), Some(mi)) = (parts.next(), parts.next())
        && let (Ok(ma), Ok(mi)) = (ma.parse::<u64>(), mi.parse::<u64>())
    {
        return Some((ma, mi));
    }
    let (train, date) = c.split_once('-')?;
    let ahead = match train {
        "nightly" => 2,
        "beta" => 1,
        _ => return None,
    };
    // `YYYY-MM-DD`, maybe followed by `-<host triple>`
    let mut d = date.splitn(3, '-');
    let (y, m, day) = (d.next()?, d.next()?, d.next()?.get(..2)?);
    let (y, m, day): (i64, i64, i64) = (y.parse().ok()?, m.parse().ok()?, day.parse().ok()?);
    // Rust 1.0 was released on 2015-05-15; a stable every 42 days since
    let days = days_from_civil(y, m, day) - days_from_civil(2015, 5, 15);
    let minor = u64::try_from(days.max(0) / 42).ok()? + ahead;
    Some((1, minor))
}

/// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's algorithm).
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn channels_as_versions() {
        assert_eq!(channel_version("1.60"), Some((1, 60)));
        assert_eq!(channel_version("1.63.0"), Some((1, 63)));
        assert_eq!(
            channel_version("1.70.0-x86_64-unknown-linux-gnu"),
            Some((1, 70))
        );
        assert_eq!(channel_version("stable"), None);
        assert_eq!(channel_version("nightly"), None);
        // 1.64.0 was released on 2022-09-22: that day's nightly was 1.66, beta 1.65
        assert_eq!(channel_version("nightly-2022-09-23"), Some((1, 66)));
        assert_eq!(channel_version("beta-2022-09-23"), Some((1, 65)));
        // 1.83.0: 2024-11-28
        assert_eq!(channel_version("nightly-2024-11-29"), Some((1, 85)));
    }
}
