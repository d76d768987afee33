//! Locating a workspace and reading its metadata through cargo.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context as _, bail};

use crate::cli::Target;
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
    let manifest = if base.is_file() { base.clone() } else { base.join("Cargo.toml") };
    if !manifest.is_file() {
        if dir.is_none() {
            // cargo xtask from a subdirectory: ask cargo for the workspace root.
            let out = cargo_command()
                .args(["locate-project", "--workspace", "--message-format", "plain"])
                .output()
                .context("cannot run `cargo locate-project`")?;
            if out.status.success() {
                return Ok(PathBuf::from(String::from_utf8_lossy(&out.stdout).trim()));
            }
        }
        bail!("{}: no Cargo.toml here (pass --workspace DIR pointing at a Cargo workspace)", manifest.display());
    }
    Ok(manifest)
}

/// `cargo metadata --no-deps --offline` for the workspace of `manifest`.
///
/// # Errors
/// cargo's own message when it rejects a manifest.
pub fn metadata_no_deps(manifest: &Path) -> anyhow::Result<cargo_metadata::Metadata> {
    let mut cmd = cargo_metadata::MetadataCommand::new();
    cmd.cargo_path(cargo()).manifest_path(manifest).no_deps().other_options(vec!["--offline".into()]);
    cmd.exec().map_err(|e| match e {
        cargo_metadata::Error::CargoMetadata { stderr } => {
            anyhow::anyhow!("cargo metadata failed for {}:\n{}", manifest.display(), stderr.trim_end())
        }
        other => anyhow::anyhow!("cargo metadata failed for {}: {other}", manifest.display()),
    })
}

/// The policy for `target`: `--policy FILE`, else `<workspace root>/policy/fleet.toml`.
///
/// # Errors
/// A missing or malformed policy (path and line in the message).
pub fn load_policy(target: &Target, workspace_root: &Path) -> anyhow::Result<Policy> {
    let path = target
        .policy
        .clone()
        .unwrap_or_else(|| workspace_root.join("policy").join("fleet.toml"));
    Ok(Policy::load(&path)?)
}
