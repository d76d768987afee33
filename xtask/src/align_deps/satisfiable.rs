//! Whether crates.io has a version of a policy dependency that the
//! policy's requirement matches: a fix that writes `thiserror = "99"` into
//! every manifest leaves a workspace cargo cannot resolve ("failed to select
//! a version"). Asked in order, stopping at the first answer:
//! 1. `Cargo.lock` (as the run read it): a crates.io package of that name at
//!    a matching version;
//! 2. cargo's local index cache (`$CARGO_HOME/registry/index/*/.cache`):
//!    a matching version that is not yanked;
//! 3. cargo's resolver on a one-dependency probe package in a temporary
//!    directory (`cargo generate-lockfile`, time-limited): it resolves, or
//!    says "failed to select a version".
//!
//! When the local index knows the package but no matching version and the
//! resolver cannot be asked (offline), the local index decides. With no
//! evidence at all nothing is refused (an information line says so).

use std::path::{Path, PathBuf};

use cargo_metadata::semver::{Version, VersionReq};

use super::lockfile::LockText;

/// What is known about a requirement.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Answer {
    /// Some published version matches.
    Yes,
    /// No published version matches: why (what was asked).
    No(String),
    /// Could not be told: why.
    Unknown(String),
}

/// Whether crates.io has a `name` version that `req` matches (see the
/// module docs); `lock`: the run's read of `Cargo.lock`, when it could be read.
pub(crate) fn check(
    lock: Option<&LockText>,
    name: &str,
    req: &VersionReq,
    written: &str,
) -> Answer {
    let locked = lock.map(|l| l.crates_io_versions(name)).unwrap_or_default();
    if locked.iter().any(|v| req.matches(v)) {
        return Answer::Yes;
    }
    let local = indexed(name);
    if local.iter().any(|v| req.matches(v)) {
        return Answer::Yes;
    }
    match probe(name, written) {
        Probe::Resolves => Answer::Yes,
        Probe::NoMatch(msg) => Answer::No(format!("cargo's resolver: {msg}")),
        Probe::Failed(msg) if !local.is_empty() => {
            let newest = local
                .iter()
                .max()
                .map(ToString::to_string)
                .unwrap_or_default();
            Answer::No(format!(
                "cargo's local index knows {} versions of {name}, the newest {newest}, none matching; \
                 the resolver could not be asked ({msg})",
                local.len()
            ))
        }
        Probe::Failed(msg) => Answer::Unknown(msg),
    }
}

/// Where cargo keeps its files.
fn cargo_home() -> Option<PathBuf> {
    std::env::var_os("CARGO_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| Path::new(&h).join(".cargo")))
}

/// The index cache's file name of a package (cargo's layout: `1/a`, `2/ab`,
/// `3/a/abc`, `ab/cd/abcd...`).
fn index_path(name: &str) -> PathBuf {
    let n = name.to_lowercase();
    match n.len() {
        1 => Path::new("1").join(&n),
        2 => Path::new("2").join(&n),
        3 => Path::new("3").join(&n[..1]).join(&n),
        _ => Path::new(&n[..2]).join(&n[2..4]).join(&n),
    }
}

/// The versions of `name` that are not yanked, in cargo's local index cache
/// of crates.io (every cached crates.io index, sparse or git).
fn indexed(name: &str) -> Vec<Version> {
    let Some(home) = cargo_home() else {
        return Vec::new();
    };
    let Ok(dirs) = std::fs::read_dir(home.join("registry").join("index")) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for d in dirs.flatten() {
        let dir_name = d.file_name().to_string_lossy().into_owned();
        if !dir_name.contains("crates.io") && !dir_name.starts_with("github.com-") {
            continue;
        }
        let Ok(bytes) = std::fs::read(d.path().join(".cache").join(index_path(name))) else {
            continue;
        };
        // entries: `version \0 json \0`, after a small header
        for chunk in bytes
            .split(|&b| b == 0)
            .filter(|c| c.first() == Some(&b'{'))
        {
            let Ok(entry) = serde_json::from_slice::<serde_json::Value>(chunk) else {
                continue;
            };
            if entry["yanked"].as_bool() == Some(true) || entry["name"].as_str() != Some(name) {
                continue;
            }
            if let Some(v) = entry["vers"].as_str().and_then(|v| Version::parse(v).ok()) {
                out.push(v);
            }
        }
    }
    out
}

enum Probe {
    Resolves,
    NoMatch(String),
    Failed(String),
}

/// cargo's resolver on a package that depends only on `name = "written"`:
/// offline first (the local index), then online.
fn probe(name: &str, written: &str) -> Probe {
    let Ok(dir) = tempfile::Builder::new().prefix("xtask-probe-").tempdir() else {
        return Probe::Failed("cannot create a temporary directory".into());
    };
    let manifest = format!(
        "[package]\nname = \"xtask-requirement-probe\"\nversion = \"0.0.0\"\nedition = \"2021\"\n\n[dependencies]\n{name} = {}\n",
        toml::Value::String(written.to_string())
    );
    if std::fs::create_dir_all(dir.path().join("src")).is_err()
        || std::fs::write(dir.path().join("src/lib.rs"), "").is_err()
        || std::fs::write(dir.path().join("Cargo.toml"), manifest).is_err()
    {
        return Probe::Failed("cannot write the probe package".into());
    }
    let mut last = String::new();
    for offline in [true, false] {
        let mut cmd = crate::workspace::cargo_command();
        cmd.current_dir(dir.path())
            .env("CARGO_TARGET_DIR", dir.path().join("target"))
            .args(["generate-lockfile", "--quiet", "--color", "never"]);
        if offline {
            cmd.arg("--offline");
        }
        let out = match crate::child::output(
            &mut cmd,
            crate::child::Kind::Tool,
            "`cargo generate-lockfile`",
            None,
        ) {
            Ok(o) => o,
            Err(e) => return Probe::Failed(format!("{e:#}")),
        };
        if out.status.success() {
            return Probe::Resolves;
        }
        let err = String::from_utf8_lossy(&out.stderr);
        let first = err
            .lines()
            .find(|l| l.starts_with("error:"))
            .unwrap_or("")
            .trim_start_matches("error:")
            .trim()
            .to_string();
        // offline, a missing match may only be missing from the cache
        if !offline && err.contains("failed to select a version") {
            return Probe::NoMatch(first);
        }
        last = first;
    }
    Probe::Failed(last)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn index_paths_follow_cargo() {
        assert_eq!(index_path("a"), Path::new("1/a"));
        assert_eq!(index_path("ab"), Path::new("2/ab"));
        assert_eq!(index_path("abc"), Path::new("3/a/abc"));
        assert_eq!(index_path("ThisError"), Path::new("th/is/thiserror"));
    }
}
