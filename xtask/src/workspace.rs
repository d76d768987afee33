//! Locating a workspace and reading its metadata through cargo. (The policy
//! is loaded by [`crate::policy`]; `gpu-test` still names its loader here.)

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context as _, bail};

pub use crate::policy::{LoadedPolicy, load_policy};

/// The cargo to run: `$CARGO` when cargo started us, else `cargo` from PATH.
pub fn cargo() -> PathBuf {
    std::env::var_os("CARGO").map_or_else(|| PathBuf::from("cargo"), PathBuf::from)
}

/// A `Command` running cargo (see [`cargo`]).
pub fn cargo_command() -> Command {
    Command::new(cargo())
}

/// A `Command` running cargo as it would run in the workspace of `manifest`:
/// from the manifest's directory, so that the workspace's own cargo
/// configuration (`.cargo/config.toml`: `[build] target-dir`, registries,
/// ...) applies whatever directory xtask was started from.
pub fn cargo_in(manifest: &Path) -> Command {
    let mut cmd = cargo_command();
    if let Some(dir) = manifest.parent().filter(|d| !d.as_os_str().is_empty()) {
        cmd.current_dir(dir);
    }
    cmd
}

/// The root manifest for `--workspace DIR` (a directory or a `Cargo.toml` path), or
/// the current directory's workspace; always an absolute path.
///
/// # Errors
/// When no `Cargo.toml` is there.
pub fn manifest_path(dir: Option<&Path>) -> anyhow::Result<PathBuf> {
    let base = match dir {
        Some(d) => std::path::absolute(d)
            .with_context(|| format!("{}: cannot resolve the path", d.display()))?,
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
                crate::child::no_rustup_download(&mut cargo_command()).args([
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
            if let Some(advice) = toolchain_missing(Some(&base), &out.stderr) {
                bail!("{advice}");
            }
        }
        bail!(
            "{}: no Cargo.toml here (pass --workspace DIR pointing at a Cargo workspace)",
            manifest.display()
        );
    }
    Ok(manifest)
}

/// When cargo (through rustup) refused to run because the toolchain pinned
/// for `dir` (`rust-toolchain.toml` / `rust-toolchain`, also in a parent)
/// is not installed: one line naming the file, the toolchain and the command
/// that installs it, whatever directory xtask was started from.
fn toolchain_missing(dir: Option<&Path>, stderr: &[u8]) -> Option<String> {
    let stderr = String::from_utf8_lossy(stderr);
    if !stderr.contains("is not installed") {
        return None;
    }
    let pin = crate::toolchain_file::find_pin(dir?)?;
    let ch = &pin.channel;
    stderr.contains(&format!("'{ch}")).then(|| {
        format!(
            "{}: pins the toolchain `{ch}`, which is not installed here; cargo runs this workspace with it: \
             install it with `rustup toolchain install {ch}`",
            pin.file.display()
        )
    })
}

/// `cargo metadata --no-deps --offline` for the workspace of `manifest`, run
/// from its directory ([`cargo_in`]).
///
/// # Errors
/// cargo's own message when it rejects a manifest.
pub fn metadata_no_deps(manifest: &Path) -> anyhow::Result<cargo_metadata::Metadata> {
    let absolute = std::path::absolute(manifest);
    let manifest = absolute.as_deref().unwrap_or(manifest);
    let mut cmd = cargo_metadata::MetadataCommand::new();
    cmd.cargo_path(cargo())
        .manifest_path(manifest)
        .no_deps()
        .other_options(vec!["--offline".into()]);
    // run with a time limit (`exec` waits forever), parsed as `exec` does;
    // from the workspace, as cargo would be run there (its .cargo/config.toml)
    let mut command = cmd.cargo_command();
    if let Some(dir) = manifest.parent().filter(|d| !d.as_os_str().is_empty()) {
        command.current_dir(dir);
    }
    // a pinned toolchain that is not installed: one line of advice, not
    // rustup's error and backtrace, and no download behind the user's back
    crate::child::no_rustup_download(&mut command);
    let out = crate::child::output(
        &mut command,
        crate::child::Kind::Tool,
        "`cargo metadata`",
        None,
    )
    .with_context(|| format!("cargo metadata failed for {}", manifest.display()))?;
    if !out.status.success() {
        if let Some(advice) = toolchain_missing(manifest.parent(), &out.stderr) {
            bail!("{advice}");
        }
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
