//! Loading the policy file a command uses: `--policy FILE`, else
//! `<workspace root>/policy/fleet.toml`, with the rule for a missing one.

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

/// The default policy of a workspace: `<root>/policy/fleet.toml`.
pub fn default_policy_path(workspace_root: &Path) -> PathBuf {
    workspace_root.join("policy").join("fleet.toml")
}

/// The policy to use: `explicit` (`--policy FILE`), else `<workspace root>/policy/fleet.toml`.
///
/// One rule for every command: a missing policy is an error (exit 2) whose
/// message says to create `policy/fleet.toml` or pass `--policy`. (Only
/// `fmt-check` goes on without one, through [`load_policy_or_default`].)
///
/// # Errors
/// A missing or malformed policy (path and line in the message).
pub fn load_policy(explicit: Option<&Path>, workspace_root: &Path) -> anyhow::Result<LoadedPolicy> {
    let path = explicit.map_or_else(|| default_policy_path(workspace_root), Path::to_path_buf);
    if explicit.is_none() && !path.exists() {
        bail!(
            "{}: no fleet policy in this workspace: create policy/fleet.toml (see docs/fleet.md) or pass --policy FILE",
            path.display()
        );
    }
    let text = std::fs::read_to_string(&path).map_err(|source| PolicyError::Read {
        path: path.clone(),
        source,
    })?;
    let policy = Policy::parse(&text, &path)?;
    Ok(LoadedPolicy { path, text, policy })
}

/// [`load_policy`], except that a missing *default* policy gives the empty
/// policy and a note saying so (`fmt-check` must work on any workspace; its
/// policy only adds exclude globs). A missing `--policy FILE` is still an error.
///
/// # Errors
/// As [`load_policy`].
pub fn load_policy_or_default(
    explicit: Option<&Path>,
    workspace_root: &Path,
) -> anyhow::Result<(LoadedPolicy, Option<String>)> {
    let path = default_policy_path(workspace_root);
    if explicit.is_none() && !path.exists() {
        let note = "no policy/fleet.toml: no [fmt] exclude globs".to_string();
        let empty = LoadedPolicy {
            path,
            text: String::new(),
            policy: Policy::default(),
        };
        return Ok((empty, Some(note)));
    }
    Ok((load_policy(explicit, workspace_root)?, None))
}
