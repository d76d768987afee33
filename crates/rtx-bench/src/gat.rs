//! `rtx-bench gat` (being built: see its issue).

/// Arguments of `rtx-bench gat`.
#[derive(Debug, Clone, clap::Args)]
pub struct Args {}

/// Runs `rtx-bench gat`.
pub fn run(_args: &Args) -> anyhow::Result<()> {
    anyhow::bail!("rtx-bench gat is not built yet")
}
