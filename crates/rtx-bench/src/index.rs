//! `rtx-bench index` (being built: see its issue).

/// Arguments of `rtx-bench index`.
#[derive(Debug, Clone, clap::Args)]
pub struct Args {}

/// Runs `rtx-bench index`.
pub fn run(_args: &Args) -> anyhow::Result<()> {
    anyhow::bail!("rtx-bench index is not built yet")
}
