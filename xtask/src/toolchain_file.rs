//! The toolchain file of a directory: the `rust-toolchain.toml` or
//! `rust-toolchain` that rustup applies there (from the directory upwards),
//! and the channel it pins. Read by fmt-check (which rustfmt), align-deps
//! (the toolchain floor) and cargo's runs (a pin that is not installed).
//!
//! A leaf: it imports nothing from the crate.

use std::path::{Path, PathBuf};

/// A toolchain pinned by a toolchain file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pin {
    /// The `rust-toolchain.toml` or `rust-toolchain` file.
    pub file: PathBuf,
    /// Its channel (`nightly-2025-01-01`, `1.80.0`, `stable`), as written.
    pub channel: String,
}

/// The toolchain file that applies to `dir`: the nearest `rust-toolchain.toml`
/// or `rust-toolchain` in `dir` or a parent (rustup's lookup; in one
/// directory the legacy `rust-toolchain` wins, as with rustup). Its channel is
/// the `[toolchain] channel` of the TOML form or the legacy single line.
pub fn find_pin(dir: &Path) -> Option<Pin> {
    let mut d = Some(dir);
    while let Some(here) = d {
        for name in ["rust-toolchain", "rust-toolchain.toml"] {
            let file = here.join(name);
            if let Ok(text) = std::fs::read_to_string(&file) {
                return channel_of(&text).map(|channel| Pin { file, channel });
            }
        }
        d = here.parent();
    }
    None
}

/// The channel of a toolchain file's text (TOML `[toolchain] channel`, or a
/// legacy file holding only the name).
fn channel_of(text: &str) -> Option<String> {
    let trimmed = text.trim();
    if !trimmed.is_empty() && !trimmed.contains(['\n', '=', '[']) {
        return Some(trimmed.to_string());
    }
    let value: toml::Table = toml::from_str(text).ok()?;
    value
        .get("toolchain")?
        .get("channel")?
        .as_str()
        .map(str::to_string)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn channels_of_both_file_forms() {
        assert_eq!(
            channel_of("nightly-2025-01-01\n").as_deref(),
            Some("nightly-2025-01-01")
        );
        assert_eq!(
            channel_of("[toolchain]\nchannel = \"1.80.0\"\ncomponents = [\"rustfmt\"]\n")
                .as_deref(),
            Some("1.80.0")
        );
        assert_eq!(channel_of("[toolchain]\nprofile = \"minimal\"\n"), None);
    }
}
