//! `rtx-bench hetgat` (being built: see its issue).

/// Arguments of `rtx-bench hetgat`.
#[derive(Debug, Clone, clap::Args)]
pub struct Args {}

/// Runs `rtx-bench hetgat`.
pub fn run(_args: &Args) -> anyhow::Result<()> {
    anyhow::bail!("rtx-bench hetgat is not built yet")
}
