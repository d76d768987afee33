//! `--verify-formatting-only` (being built).
use crate::Outcome;
use std::io::Write;
/// Runs it.
///
/// # Errors
/// Not built yet.
pub fn run(
    _args: &super::Args,
    _rev: &str,
    _out: &mut dyn Write,
    _err: &mut dyn Write,
) -> anyhow::Result<Outcome> {
    anyhow::bail!("not built yet")
}
