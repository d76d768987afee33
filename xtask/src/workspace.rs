//! Locating a workspace and reading its metadata through cargo.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context as _, bail};

use crate::policy::Policy;

/// The cargo to run: `$CARGO` when cargo started us, else `cargo` from PATH.
pub fn cargo() -> PathBuf {
    std::env::var_os("CARGO").map_or_else(|| PathBuf::from("cargo"), PathBuf::from)
}

/// A `Command` running cargo (see [`cargo`]).
pub fn cargo_command() -> Command {
    Command::new(cargo())
}

/// The root manifest for `--workspace DIR` (a directory or a `Cargo.toml` path), or
/// the current directory's workspace.
///
/// # Errors
/// When no `Cargo.toml` is there.
pub fn manifest_path(dir: Option<&Path>) -> anyhow::Result<PathBuf> {
    let base = match dir {
        Some(d) => d.to_path_buf(),
        None => std::env::current_dir().context("cannot read the current directory")?,
    };
    let manifest = if base.is_file() {
        base.clone()
    } else {
        base.join("Cargo.toml")
    };
    if !manifest.is_file() {
        if dir.is_none() {
            // cargo xtask from a subdirectory: ask cargo for the workspace root.
            let out = crate::child::output(
                cargo_command().args([
                    "locate-project",
                    "--workspace",
                    "--message-format",
                    "plain",
                ]),
                crate::child::Kind::Tool,
                "`cargo locate-project`",
                None,
            )?;
            if out.status.success() {
                return Ok(PathBuf::from(String::from_utf8_lossy(&out.stdout).trim()));
            }
        }
        bail!(
            "{}: no Cargo.toml here (pass --workspace DIR pointing at a Cargo workspace)",
            manifest.display()
        );
    }
    Ok(manifest)
}

/// `cargo metadata --no-deps --offline` for the workspace of `manifest`.
///
/// # Errors
/// cargo's own message when it rejects a manifest.
pub fn metadata_no_deps(manifest: &Path) -> anyhow::Result<cargo_metadata::Metadata> {
    let mut cmd = cargo_metadata::MetadataCommand::new();
    cmd.cargo_path(cargo())
        .manifest_path(manifest)
        .no_deps()
        .other_options(vec!["--offline".into()]);
    // run with a time limit (`exec` waits forever), parsed as `exec` does
    let out = crate::child::output(
        &mut cmd.cargo_command(),
        crate::child::Kind::Tool,
        "`cargo metadata`",
        None,
    )
    .with_context(|| format!("cargo metadata failed for {}", manifest.display()))?;
    if !out.status.success() {
        bail!(
            "cargo metadata failed for {}:\n{}",
            manifest.display(),
            String::from_utf8_lossy(&out.stderr).trim_end()
        );
    }
    let stdout = std::str::from_utf8(&out.stdout).with_context(|| {
        format!(
            "cargo metadata failed for {}: output not UTF-8",
            manifest.display()
        )
    })?;
    cargo_metadata::MetadataCommand::parse(stdout)
        .map_err(|e| anyhow::anyhow!("cargo metadata failed for {}: {e}", manifest.display()))
}

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
            "{}: no fleet policy in this workspace: create policy/fleet.toml (see README) or pass --policy FILE",
            path.display()
        );
    }
    let text =
        std::fs::read_to_string(&path).map_err(|source| crate::policy::PolicyError::Read {
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
