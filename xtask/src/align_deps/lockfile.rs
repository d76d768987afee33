//! The informational report: which packages of the resolved graph (as
//! `Cargo.lock` records it) still pull an older major of a policy dependency.
//!
//! Read from `Cargo.lock` directly rather than from `cargo metadata` with
//! dependencies: that is exactly "what the lockfile still carries", it needs no
//! network and no second cargo run (which would double the command's time), and
//! it can never write the lockfile (`cargo metadata` rewrites a stale one, which
//! `--check` must not do).
//!
//! A run reads `Cargo.lock` once, in its load phase ([`read`], taking the
//! read-ahead's [`ReadAhead`] where the file is unchanged since), and hands
//! that read to every use ([`older_majors`], [`may_reach`], the
//! requirement check): nothing here outlives the run.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use cargo_metadata::semver::{Op, Version, VersionReq};
use serde::Deserialize;

use crate::fsutil::FileKey;
use crate::policy::Policy;

#[derive(Debug, Deserialize)]
struct Lock {
    #[serde(default)]
    package: Vec<LockPackage>,
}

#[derive(Debug, Deserialize)]
struct LockPackage {
    name: String,
    version: String,
    source: Option<String>,
    #[serde(default)]
    dependencies: Vec<String>,
}

/// One read of a `Cargo.lock`: its text, parsed (at most once).
pub(crate) struct LockText {
    text: String,
    typed: OnceLock<Result<Lock, String>>,
}

impl LockText {
    fn typed(&self) -> &Result<Lock, String> {
        self.typed
            .get_or_init(|| toml::from_str::<Lock>(&self.text).map_err(|e| e.message().to_string()))
    }

    /// The versions of `name` from crates.io that it locks (none when it
    /// does not parse).
    pub(crate) fn crates_io_versions(&self, name: &str) -> Vec<Version> {
        let Ok(lock) = self.typed() else {
            return Vec::new();
        };
        lock.package
            .iter()
            .filter(|p| p.name == name)
            .filter(|p| p.source.as_deref().is_some_and(|s| s.contains("crates.io")))
            .filter_map(|p| Version::parse(&p.version).ok())
            .collect()
    }
}

/// A lockfile read (and parsed) ahead of its uses, by path, with the state
/// it was read in: [`read`] takes it while the file is unchanged.
pub(crate) struct ReadAhead {
    path: PathBuf,
    key: FileKey,
    text: LockText,
}

/// Opens `path` and reads its state, as [`read`] and [`read_ahead`] do.
fn open(path: &Path) -> std::io::Result<(std::fs::File, FileKey)> {
    let file = std::fs::File::open(path)?;
    let key = FileKey::of(&file.metadata()?);
    Ok((file, key))
}

/// The rest of `file`, as text.
fn text_of(mut file: std::fs::File) -> std::io::Result<LockText> {
    use std::io::Read as _;
    let mut text = String::new();
    file.read_to_string(&mut text)?;
    Ok(LockText {
        text,
        typed: OnceLock::new(),
    })
}

/// Reads and parses `path` ahead of its uses (on the read-ahead thread
/// while `cargo metadata` runs); `None` when it cannot be read (then
/// [`read`] reads it, for its error).
pub(crate) fn read_ahead(path: PathBuf) -> Option<ReadAhead> {
    let (file, key) = open(&path).ok()?;
    let text = text_of(file).ok()?;
    let _ = text.typed();
    Some(ReadAhead { path, key, text })
}

/// `path` read (as `std::fs::read_to_string` would: the same errors), or
/// `ahead`'s text when it read the same path and the file is unchanged
/// since (the same device, inode, size and times).
pub(crate) fn read(path: &Path, ahead: Option<ReadAhead>) -> std::io::Result<LockText> {
    let (file, key) = open(path)?;
    match ahead {
        Some(a) if a.path == path && a.key == key => Ok(a.text),
        _ => text_of(file),
    }
}

/// Informational lines about `root/Cargo.lock`: for each policy dependency,
/// every older version still locked and the non-member packages that pull it,
/// from `lock`, the run's [`read`] of it. Never an error: an absent or
/// unreadable lockfile is itself a line.
pub(crate) fn older_majors(
    root: &Path,
    policy: &Policy,
    members: &BTreeSet<String>,
    lock: &std::io::Result<LockText>,
) -> Vec<String> {
    if policy.dependencies.is_empty() {
        return Vec::new();
    }
    let path = root.join("Cargo.lock");
    let text = match lock {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return vec![format!(
                "no Cargo.lock in {}: the resolved graph is unknown, so it cannot say which packages still pull older majors of {} (run `cargo generate-lockfile` to see)",
                root.display(),
                policy
                    .dependencies
                    .keys()
                    .cloned()
                    .collect::<Vec<_>>()
                    .join(", ")
            )];
        }
        Err(e) => {
            return vec![format!(
                "cannot read {}: {e}; resolved graph not reported",
                path.display()
            )];
        }
    };
    let lock = match text.typed() {
        Ok(l) => l,
        Err(e) => {
            return vec![format!(
                "cannot parse {} ({e}); resolved graph not reported",
                path.display(),
            )];
        }
    };
    report(lock, policy, members)
}

/// The members whose dependency graph, as `lock` (the run's read of
/// `Cargo.lock`) records it, may reach one of `packages` (anywhere in it):
/// only their code can use what
/// those packages offer (a derive, directly or through a re-export), so only
/// their sources can hold a finding of a migration of them. The
/// lockfile lists every dependency whatever the features and platforms, so
/// the graph is a superset of any build's. A member the lockfile does not
/// know, or one declaring a dependency its entry lacks (a stale lockfile),
/// is kept. `None` without a readable lockfile: keep every member.
pub(crate) fn may_reach(
    lock: Option<&LockText>,
    members: &[&cargo_metadata::Package],
    packages: &[&str],
) -> Option<BTreeSet<String>> {
    let lock = lock?.typed().as_ref().ok()?;
    // name -> the names it depends on (every version's, together)
    let mut deps: BTreeMap<&str, BTreeSet<&str>> = BTreeMap::new();
    // name -> the names that depend on it
    let mut users: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    let mut local: BTreeSet<&str> = BTreeSet::new();
    for p in &lock.package {
        let e = deps.entry(p.name.as_str()).or_default();
        for d in &p.dependencies {
            let d = d.split(' ').next().unwrap_or(d);
            e.insert(d);
            users.entry(d).or_default().push(p.name.as_str());
        }
        if p.source.is_none() {
            local.insert(p.name.as_str());
        }
    }
    // everything that reaches `packages`: one walk back from them (not one
    // walk forward per member)
    let mut reaches: BTreeSet<&str> = BTreeSet::new();
    let mut todo: Vec<&str> = packages.to_vec();
    while let Some(n) = todo.pop() {
        if reaches.insert(n) {
            todo.extend(users.get(n).into_iter().flatten().copied());
        }
    }
    let mut out = BTreeSet::new();
    for m in members {
        let name = m.name.as_str();
        let listed = deps.get(name);
        let stale = !local.contains(name)
            || m.dependencies
                .iter()
                .any(|d| listed.is_none_or(|l| !l.contains(d.name.as_str())));
        if stale || reaches.contains(name) {
            out.insert(name.to_string());
        }
    }
    Some(out)
}

fn report(lock: &Lock, policy: &Policy, members: &BTreeSet<String>) -> Vec<String> {
    let mut lines = Vec::new();
    for (name, rule) in &policy.dependencies {
        let req = &rule.req;
        let locked: Vec<&LockPackage> = lock.package.iter().filter(|p| &p.name == name).collect();
        let old: Vec<&LockPackage> = locked
            .iter()
            .copied()
            .filter(|p| Version::parse(&p.version).is_ok_and(|v| is_older(&v, req)))
            .collect();
        for o in old {
            let mut pullers: BTreeMap<String, bool> = BTreeMap::new(); // "name version" -> member
            for p in &lock.package {
                let pulls = p.dependencies.iter().any(|d| {
                    let mut parts = d.split_whitespace();
                    let (dn, dv) = (parts.next(), parts.next());
                    dn == Some(name.as_str())
                        && dv.is_none_or(|v| v == o.version)
                        && (dv.is_some() || locked.len() == 1)
                });
                if pulls {
                    let member = p.source.is_none() && members.contains(&p.name);
                    pullers.insert(format!("{} {}", p.name, p.version), member);
                }
            }
            let third: Vec<&String> = pullers
                .iter()
                .filter(|(_, m)| !**m)
                .map(|(k, _)| k)
                .collect();
            if !third.is_empty() {
                lines.push(format!(
                    "Cargo.lock still carries {name} {} (policy: \"{}\"), pulled by {}: {}",
                    o.version,
                    rule.version,
                    if third.len() == 1 {
                        "a package outside the workspace"
                    } else {
                        "packages outside the workspace"
                    },
                    third
                        .iter()
                        .map(|s| s.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                ));
            } else if !pullers.is_empty() {
                lines.push(format!(
                    "Cargo.lock still records {name} {} for workspace members only; once they are aligned, the next cargo build or `cargo update --workspace` drops it",
                    o.version
                ));
            }
        }
    }
    lines
}

/// Whether `v` is below every version `req` accepts (an older major for `^` requirements).
fn is_older(v: &Version, req: &VersionReq) -> bool {
    if req.matches(v) {
        return false;
    }
    req.comparators.iter().any(|c| {
        let floor = Version::new(c.major, c.minor.unwrap_or(0), c.patch.unwrap_or(0));
        matches!(
            c.op,
            Op::Caret | Op::Tilde | Op::Exact | Op::Wildcard | Op::Greater | Op::GreaterEq
        ) && *v < floor
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const LOCK: &str = r#"
version = 4

[[package]]
name = "app"
version = "0.1.0"
dependencies = ["old-errors", "thiserror 2.0.12"]

[[package]]
name = "old-errors"
version = "0.3.0"
source = "registry+https://github.com/rust-lang/crates.io-index"
dependencies = ["thiserror 1.0.69"]

[[package]]
name = "thiserror"
version = "1.0.69"
source = "registry+https://github.com/rust-lang/crates.io-index"

[[package]]
name = "thiserror"
version = "2.0.12"
source = "registry+https://github.com/rust-lang/crates.io-index"
"#;

    fn policy() -> Policy {
        Policy::parse(
            "[dependencies.thiserror]\nversion = \"2\"\n",
            Path::new("p"),
        )
        .unwrap()
    }

    #[test]
    fn names_third_party_pullers_of_old_majors() {
        let lock: Lock = toml::from_str(LOCK).unwrap();
        let members = BTreeSet::from(["app".to_string()]);
        let lines = report(&lock, &policy(), &members);
        assert_eq!(lines.len(), 1, "{lines:?}");
        assert!(lines[0].contains("thiserror 1.0.69"), "{lines:?}");
        assert!(lines[0].contains("old-errors 0.3.0"), "{lines:?}");
    }

    #[test]
    fn members_only_is_a_different_note_and_current_is_silent() {
        let lock: Lock = toml::from_str(
            "[[package]]\nname = \"app\"\nversion = \"0.1.0\"\ndependencies = [\"thiserror\"]\n\n[[package]]\nname = \"thiserror\"\nversion = \"1.0.69\"\nsource = \"registry+x\"\n",
        )
        .unwrap();
        let members = BTreeSet::from(["app".to_string()]);
        let lines = report(&lock, &policy(), &members);
        assert_eq!(lines.len(), 1);
        assert!(lines[0].contains("workspace members only"), "{lines:?}");
        let lock: Lock = toml::from_str(
            "[[package]]\nname = \"app\"\nversion = \"0.1.0\"\ndependencies = [\"thiserror\"]\n\n[[package]]\nname = \"thiserror\"\nversion = \"2.0.1\"\n",
        )
        .unwrap();
        assert!(report(&lock, &policy(), &members).is_empty());
    }

    #[test]
    fn a_read_ahead_is_taken_only_for_its_unchanged_file() {
        let dir = tempfile::tempdir().unwrap();
        let (a, b) = (dir.path().join("a.lock"), dir.path().join("b.lock"));
        std::fs::write(&a, LOCK).unwrap();
        std::fs::write(&b, "").unwrap();
        let versions = |t: &LockText| t.crates_io_versions("thiserror").len();
        // the same file, unchanged: the read-ahead's text
        let t = read(&a, read_ahead(a.clone())).unwrap();
        assert_eq!(versions(&t), 2);
        // another path: that file, read
        let t = read(&b, read_ahead(a.clone())).unwrap();
        assert_eq!(versions(&t), 0);
        // rewritten since: read again
        let ahead = read_ahead(a.clone());
        std::fs::write(&a, "").unwrap();
        assert_eq!(versions(&read(&a, ahead).unwrap()), 0);
        // gone since: the error, as without a read-ahead
        std::fs::write(&a, LOCK).unwrap();
        let ahead = read_ahead(a.clone());
        std::fs::remove_file(&a).unwrap();
        let e = read(&a, ahead).err().unwrap();
        assert_eq!(e.kind(), std::io::ErrorKind::NotFound);
    }

    #[test]
    fn the_report_is_of_the_read_it_is_handed() {
        // the run's one read, not the file as it is by the time of the report
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("Cargo.lock");
        std::fs::write(&path, LOCK).unwrap();
        let lock = read(&path, None);
        std::fs::remove_file(&path).unwrap();
        let members = BTreeSet::from(["app".to_string()]);
        let lines = older_majors(dir.path(), &policy(), &members, &lock);
        assert_eq!(lines.len(), 1, "{lines:?}");
        assert!(lines[0].contains("old-errors 0.3.0"), "{lines:?}");
        let members_of =
            |lock: Option<&LockText>| may_reach(lock, &[], &["thiserror"]).map(|m| m.len());
        assert_eq!(members_of(lock.as_ref().ok()), Some(0));
        assert_eq!(members_of(None), None, "no lockfile: every member kept");
    }

    #[test]
    fn missing_lockfile_is_an_info_line() {
        let dir = tempfile::tempdir().unwrap();
        let lock = read(&dir.path().join("Cargo.lock"), None);
        let lines = older_majors(dir.path(), &policy(), &BTreeSet::new(), &lock);
        assert_eq!(lines.len(), 1);
        assert!(lines[0].starts_with("no Cargo.lock"), "{lines:?}");
    }
}
