//! `rtx-bench transpose` (being built: see its issue).

/// Arguments of `rtx-bench transpose`.
#[derive(Debug, Clone, clap::Args)]
pub struct Args {}

/// Runs `rtx-bench transpose`.
pub fn run(_args: &Args) -> anyhow::Result<()> {
    anyhow::bail!("rtx-bench transpose is not built yet")
}
