//! Which rustfmt `cargo fmt` would run in a workspace: the toolchain a
//! `rust-toolchain.toml` / `rust-toolchain` file pins (found from the
//! workspace directory upwards, as rustup looks for it), resolved once through
//! `rustup which rustfmt` run in that directory. A pinned toolchain that is
//! not installed is one error naming it and the command that installs it.
//!
//! The toolchain file itself is read by [`crate::toolchain_file`]; this
//! imports only that and [`crate::child`].

use std::path::{Path, PathBuf};
use std::process::Command;

pub use crate::toolchain_file::{Pin, find_pin};

/// Whether the caller chose the toolchain explicitly (`cargo +nightly`,
/// `RUSTUP_TOOLCHAIN=...`): then it wins over the workspace's pin, as it does
/// for `cargo fmt`. Otherwise rustup's choice for the caller's directory is
/// dropped so the workspace's own pin applies.
fn caller_overrides() -> bool {
    overrides(
        std::env::var("RUSTUP_TOOLCHAIN").ok().as_deref(),
        std::env::var("RUSTUP_TOOLCHAIN_SOURCE").ok().as_deref(),
    )
}

/// [`caller_overrides`] on the two variables. A rustup proxy (`cargo
/// xtask`) sets both, `RUSTUP_TOOLCHAIN_SOURCE` saying where its choice came
/// from (`cli`: `+toolchain`; `env`: the user's `RUSTUP_TOOLCHAIN`; else a
/// toolchain file, an override or the default). Without a source, nothing
/// came through a proxy (the binary run directly): a `RUSTUP_TOOLCHAIN` there
/// was set by the user.
fn overrides(toolchain: Option<&str>, source: Option<&str>) -> bool {
    match source {
        Some(s) if !s.is_empty() => matches!(s, "cli" | "env"),
        _ => toolchain.is_some_and(|t| !t.is_empty()),
    }
}

/// The rustfmt binary of the toolchain pinned for `dir`, when `dir` (or a
/// parent) pins one and the caller did not choose a toolchain explicitly.
/// `Ok(None)`: nothing pinned (or rustup absent): the caller's rustfmt is used.
///
/// # Errors
/// The pinned toolchain is not installed (or lacks rustfmt): one message
/// naming the toolchain file, the toolchain and the command that installs it.
pub fn pinned_rustfmt(dir: &Path) -> anyhow::Result<Option<(PathBuf, Pin)>> {
    let Some(pin) = find_pin(dir) else {
        return Ok(None);
    };
    if caller_overrides() {
        return Ok(None);
    }
    let mut cmd = Command::new("rustup");
    cmd.args(["which", "rustfmt"])
        .current_dir(dir)
        .env_remove("RUSTUP_TOOLCHAIN")
        .env_remove("RUSTUP_TOOLCHAIN_SOURCE");
    // one probe, no download behind the user's back
    crate::child::no_rustup_download(&mut cmd);
    let what = format!("`rustup which rustfmt` in {}", dir.display());
    let out = match crate::child::output(&mut cmd, crate::child::Kind::Tool, &what, None) {
        Ok(o) => o,
        // no rustup: the toolchain file means nothing to this installation
        Err(e)
            if e.chain()
                .any(|c| c.downcast_ref::<std::io::Error>().is_some()) =>
        {
            return Ok(None);
        }
        // past its time limit
        Err(e) => return Err(e),
    };
    if out.status.success() {
        let path = String::from_utf8_lossy(&out.stdout).trim().to_string();
        return Ok(Some((PathBuf::from(path), pin)));
    }
    let stderr = String::from_utf8_lossy(&out.stderr);
    let first = stderr
        .lines()
        .find(|l| l.starts_with("error:"))
        .unwrap_or("")
        .trim_start_matches("error:")
        .trim();
    let ch = &pin.channel;
    if stderr.contains("is not installed") {
        anyhow::bail!(
            "{}: pins the toolchain `{ch}`, which is not installed here; cargo fmt formats this workspace with it: \
             install it with `rustup toolchain install {ch} --component rustfmt`",
            pin.file.display()
        );
    }
    anyhow::bail!(
        "{}: pins the toolchain `{ch}`, whose rustfmt is not available ({first}): \
         install it with `rustup component add rustfmt --toolchain {ch}`",
        pin.file.display()
    );
}

/// Whether rustup has the toolchain `channel` with its rustfmt installed
/// (`rustup which rustfmt --toolchain <channel>`, nothing downloaded);
/// `true` when that cannot be told (no rustup: a pin means nothing there).
pub fn rustfmt_installed(channel: &str) -> bool {
    let mut cmd = Command::new("rustup");
    crate::child::no_rustup_download(&mut cmd).args(["which", "rustfmt", "--toolchain", channel]);
    match crate::child::output(&mut cmd, crate::child::Kind::Tool, "`rustup which`", None) {
        Ok(o) => o.status.success(),
        Err(_) => true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_users_toolchain_wins_whether_or_not_a_proxy_passed_it_on() {
        assert!(overrides(Some("stable"), None));
        assert!(overrides(Some("nightly"), Some("cli")));
        assert!(overrides(Some("nightly"), Some("env")));
        assert!(!overrides(Some("stable"), Some("default")));
        assert!(!overrides(Some("stable"), Some("toolchain-file")));
        assert!(!overrides(None, None));
        assert!(!overrides(Some(""), None));
    }
}
