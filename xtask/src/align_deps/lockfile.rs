//! The informational report: which packages of the resolved graph (as
//! `Cargo.lock` records it) still pull an older major of a policy dependency.
//!
//! Read from `Cargo.lock` directly rather than from `cargo metadata` with
//! dependencies: that is exactly "what the lockfile still carries", it needs no
//! network and no second cargo run (which would double the command's time), and
//! it can never write the lockfile (`cargo metadata` rewrites a stale one, which
//! `--check` must not do).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};

use cargo_metadata::semver::{Op, Version, VersionReq};
use serde::Deserialize;

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

/// The last lockfile read, by path, with the state it was read in.
type Memo = (PathBuf, super::migration::FileKey, Arc<LockText>);
static LAST: Mutex<Option<Memo>> = Mutex::new(None);

/// `path` read (as `std::fs::read_to_string` would: the same errors), or
/// the earlier read of it while the file is unchanged (the same device,
/// inode, size and times): the lockfile is read and parsed once per run,
/// and may be while `cargo metadata` runs ([`warm`]).
pub(crate) fn read(path: &Path) -> std::io::Result<Arc<LockText>> {
    use std::io::Read as _;
    let mut file = std::fs::File::open(path)?;
    let key = super::migration::FileKey::of(&file.metadata()?);
    let mut last = LAST
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    if let Some((p, k, t)) = last.as_ref()
        && p == path
        && *k == key
    {
        return Ok(Arc::clone(t));
    }
    let mut text = String::new();
    file.read_to_string(&mut text)?;
    let t = Arc::new(LockText {
        text,
        typed: OnceLock::new(),
    });
    *last = Some((path.to_path_buf(), key, Arc::clone(&t)));
    Ok(t)
}

/// Forgets the earlier read (the next [`read`] reads the file).
pub fn forget() {
    *LAST
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner) = None;
}

/// Reads and parses `root/Cargo.lock` ahead of its uses.
pub fn warm(root: &Path) {
    if let Ok(t) = read(&root.join("Cargo.lock")) {
        let _ = t.typed();
    }
}

/// Informational lines about `root/Cargo.lock`: for each policy dependency,
/// every older version still locked and the non-member packages that pull it.
/// Never an error: an absent or unreadable lockfile is itself a line.
pub fn older_majors(root: &Path, policy: &Policy, members: &BTreeSet<String>) -> Vec<String> {
    if policy.dependencies.is_empty() {
        return Vec::new();
    }
    let path = root.join("Cargo.lock");
    let text = match read(&path) {
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

/// The members whose dependency graph, as `root/Cargo.lock` records it, may
/// reach one of `packages` (anywhere in it): only their code can use what
/// those packages offer (a derive, directly or through a re-export), so only
/// their sources can hold a finding of a migration of them. The
/// lockfile lists every dependency whatever the features and platforms, so
/// the graph is a superset of any build's. A member the lockfile does not
/// know, or one declaring a dependency its entry lacks (a stale lockfile),
/// is kept. `None` without a readable lockfile: keep every member.
pub fn may_reach(
    root: &Path,
    members: &[&cargo_metadata::Package],
    packages: &[&str],
) -> Option<BTreeSet<String>> {
    let text = read(&root.join("Cargo.lock")).ok()?;
    let lock = text.typed().as_ref().ok()?;
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
    fn missing_lockfile_is_an_info_line() {
        let dir = tempfile::tempdir().unwrap();
        let lines = older_majors(dir.path(), &policy(), &BTreeSet::new());
        assert_eq!(lines.len(), 1);
        assert!(lines[0].starts_with("no Cargo.lock"), "{lines:?}");
    }
}
