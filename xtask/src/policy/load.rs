//! Loading the policy a command uses: `--policy FILE`, else
//! `<workspace root>/policy/fleet.toml` or the `[workspace.metadata.fleet]`
//! table of `<workspace root>/Cargo.toml`, with the rules for a missing one
//! and for two.

use std::path::{Path, PathBuf};

use anyhow::bail;

use super::{Policy, PolicyError};

/// A loaded policy: where it came from, its text, and the validated policy
/// (whose entries keep byte spans into `text`, see [`LoadedPolicy::at`]).
#[derive(Debug, Clone)]
pub struct LoadedPolicy {
    /// The policy file.
    pub path: PathBuf,
    /// Its text.
    pub text: String,
    /// The validated policy.
    pub policy: Policy,
}

impl LoadedPolicy {
    /// `path:line:column` of byte offset `span.start` in the policy.
    pub fn at(&self, span: &std::ops::Range<usize>) -> String {
        let (line, col) = crate::text::line_col(&self.text, span.start);
        format!("{}:{line}:{col}", self.path.display())
    }

    /// `path:line` of byte offset `span.start` in the policy.
    pub fn at_line(&self, span: &std::ops::Range<usize>) -> String {
        let (line, _) = crate::text::line_col(&self.text, span.start);
        format!("{}:{line}", self.path.display())
    }
}

/// The default policy file of a workspace: `<root>/policy/fleet.toml`.
pub fn default_policy_path(workspace_root: &Path) -> PathBuf {
    workspace_root.join("policy").join("fleet.toml")
}

/// Where a workspace's policy is when `--policy` is not given.
enum Found {
    /// `<root>/policy/fleet.toml`.
    File(PathBuf),
    /// The `[workspace.metadata.fleet]` table of `<root>/Cargo.toml` (path, text).
    Manifest(PathBuf, String),
    /// Neither.
    None,
}

/// Looks in both places; both holding a policy is an error (which one
/// rules would be a guess).
fn find(workspace_root: &Path) -> anyhow::Result<Found> {
    let file = default_policy_path(workspace_root);
    let manifest = workspace_root.join("Cargo.toml");
    // an unreadable manifest: cargo metadata has read it; its reader reports
    let text = std::fs::read_to_string(&manifest).unwrap_or_default();
    let in_manifest = Policy::in_manifest(&text);
    match (file.exists(), in_manifest) {
        (true, true) => bail!(
            "two fleet policies: {} and [workspace.metadata.fleet] in {}; keep one (see docs/fleet.md)",
            file.display(),
            manifest.display()
        ),
        (true, false) => Ok(Found::File(file)),
        (false, true) => Ok(Found::Manifest(manifest, text)),
        (false, false) => Ok(Found::None),
    }
}

/// The message of a workspace without a policy, naming where it looked.
fn not_found(workspace_root: &Path) -> String {
    format!(
        "no fleet policy in this workspace: looked for {} and for [workspace.metadata.fleet] in {}; create one (see docs/fleet.md) or pass --policy FILE",
        default_policy_path(workspace_root).display(),
        workspace_root.join("Cargo.toml").display()
    )
}

/// The policy to use: `explicit` (`--policy FILE`), else the workspace's:
/// `<workspace root>/policy/fleet.toml` or the `[workspace.metadata.fleet]`
/// table of `<workspace root>/Cargo.toml` (both at once is an error).
///
/// One rule for every command: a missing policy is an error (exit 2) whose
/// message names where it looked and says to create one or pass `--policy`.
/// (Only `fmt-check` goes on without one, through [`load_policy_or_default`].)
///
/// # Errors
/// A missing, doubled or malformed policy (path and line in the message).
pub fn load_policy(explicit: Option<&Path>, workspace_root: &Path) -> anyhow::Result<LoadedPolicy> {
    if let Some(path) = explicit {
        return load_file(path.to_path_buf());
    }
    match find(workspace_root)? {
        Found::File(path) => load_file(path),
        Found::Manifest(path, text) => load_manifest(path, text),
        Found::None => bail!("{}", not_found(workspace_root)),
    }
}

fn load_file(path: PathBuf) -> anyhow::Result<LoadedPolicy> {
    let text = std::fs::read_to_string(&path).map_err(|source| PolicyError::Read {
        path: path.clone(),
        source,
    })?;
    let policy = Policy::parse(&text, &path)?;
    Ok(LoadedPolicy { path, text, policy })
}

fn load_manifest(path: PathBuf, text: String) -> anyhow::Result<LoadedPolicy> {
    let Some(policy) = Policy::parse_in_manifest(&text, &path)? else {
        bail!(
            "{}: no [workspace.metadata.fleet] table any more",
            path.display()
        );
    };
    Ok(LoadedPolicy { path, text, policy })
}

/// [`load_policy`], except that a workspace without a policy gives the empty
/// policy and a note saying so (`fmt-check` must work on any workspace; its
/// policy only adds exclude globs). A missing `--policy FILE` is still an
/// error, and so are two policies.
///
/// # Errors
/// As [`load_policy`].
pub fn load_policy_or_default(
    explicit: Option<&Path>,
    workspace_root: &Path,
) -> anyhow::Result<(LoadedPolicy, Option<String>)> {
    if explicit.is_none() && matches!(find(workspace_root)?, Found::None) {
        let note = "no policy/fleet.toml or [workspace.metadata.fleet]: no [fmt] exclude globs"
            .to_string();
        let empty = LoadedPolicy {
            path: default_policy_path(workspace_root),
            text: String::new(),
            policy: Policy::default(),
        };
        return Ok((empty, Some(note)));
    }
    Ok((load_policy(explicit, workspace_root)?, None))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ws(policy_file: Option<&str>, manifest: &str) -> tempfile::TempDir {
        let d = tempfile::tempdir().unwrap();
        std::fs::write(d.path().join("Cargo.toml"), manifest).unwrap();
        if let Some(p) = policy_file {
            std::fs::create_dir(d.path().join("policy")).unwrap();
            std::fs::write(d.path().join("policy/fleet.toml"), p).unwrap();
        }
        d
    }

    const WS: &str = "[workspace]\nmembers = []\n";

    #[test]
    fn policy_in_workspace_metadata_is_found_with_cargo_toml_lines() {
        let d = ws(
            None,
            "[workspace]\nmembers = []\n\n[workspace.metadata.fleet.dependencies.thiserror]\nversion = \"2\"\n\n[workspace.metadata.other]\nx = 1\n",
        );
        let lp = load_policy(None, d.path()).unwrap();
        assert_eq!(lp.path, d.path().join("Cargo.toml"));
        let rule = &lp.policy.dependencies["thiserror"];
        assert_eq!(rule.version, "2");
        assert!(
            lp.at(&rule.version_span).ends_with("Cargo.toml:5:11"),
            "{}",
            lp.at(&rule.version_span)
        );
    }

    #[test]
    fn a_mistake_in_workspace_metadata_points_into_cargo_toml() {
        let d = ws(
            None,
            "[workspace]\nmembers = []\n[workspace.metadata.fleet.dependencies.thiserror]\nversion = \"2\"\ninherit = true\ntypo = 1\n",
        );
        let e = format!("{:#}", load_policy(None, d.path()).unwrap_err());
        assert!(e.contains("Cargo.toml:6:"), "{e}");
        assert!(e.contains("typo"), "{e}");
        let d = ws(
            None,
            "[workspace]\nmembers = []\n[workspace.metadata.fleet]\n",
        );
        let e = format!("{:#}", load_policy(None, d.path()).unwrap_err());
        assert!(e.contains("Cargo.toml:3:") && e.contains("is empty"), "{e}");
    }

    #[test]
    fn both_places_is_an_error_naming_both() {
        let d = ws(
            Some("[dependencies.a]\nversion = \"1\"\n"),
            "[workspace]\nmembers = []\n[workspace.metadata.fleet.dependencies.a]\nversion = \"1\"\n",
        );
        for e in [
            format!("{:#}", load_policy(None, d.path()).unwrap_err()),
            format!("{:#}", load_policy_or_default(None, d.path()).unwrap_err()),
        ] {
            assert!(e.contains("two fleet policies"), "{e}");
            assert!(
                e.contains("policy/fleet.toml") && e.contains("Cargo.toml"),
                "{e}"
            );
        }
        // --policy decides
        let p = d.path().join("policy/fleet.toml");
        assert!(load_policy(Some(&p), d.path()).is_ok());
    }

    #[test]
    fn neither_place_names_where_it_looked() {
        let d = ws(None, WS);
        let e = format!("{:#}", load_policy(None, d.path()).unwrap_err());
        assert!(e.contains("policy/fleet.toml"), "{e}");
        assert!(
            e.contains("[workspace.metadata.fleet]") && e.contains("Cargo.toml"),
            "{e}"
        );
        let (lp, note) = load_policy_or_default(None, d.path()).unwrap();
        assert!(lp.policy.dependencies.is_empty());
        assert!(note.is_some());
    }
}
