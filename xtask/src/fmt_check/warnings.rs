//! rustfmt's warnings, said once per option: unknown keys of a rustfmt
//! config, and options the rustfmt in use ignores (nightly-only options under
//! a stable rustfmt), which `--fix` refuses to format without.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::check::RustfmtWarning;
use crate::diag::{Diagnostic, Level};

/// What one warning is about.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub enum Kind {
    /// `can't set `X = V`, unstable features are only available in nightly channel.`
    Ignored {
        /// The option.
        option: String,
        /// Its value as rustfmt printed it.
        value: String,
    },
    /// `Unknown configuration option `X``.
    Unknown {
        /// The key.
        option: String,
    },
    /// Anything else rustfmt warned about.
    Other(String),
}

/// Classifies one warning text.
pub fn classify(text: &str) -> Kind {
    let ticked = text.split('`').nth(1);
    if text.starts_with("can't set")
        && text.contains("nightly")
        && let Some((option, value)) = ticked.and_then(|t| t.split_once(" = "))
    {
        return Kind::Ignored {
            option: option.trim().to_string(),
            value: value.trim().to_string(),
        };
    }
    if text.starts_with("Unknown configuration option")
        && let Some(option) = ticked
    {
        return Kind::Unknown {
            option: option.to_string(),
        };
    }
    Kind::Other(text.to_string())
}

/// The warnings, one per option (or distinct text), each with the configs
/// whose runs printed it.
pub fn grouped(warnings: &[RustfmtWarning]) -> BTreeMap<Kind, Vec<Option<PathBuf>>> {
    let mut out: BTreeMap<Kind, Vec<Option<PathBuf>>> = BTreeMap::new();
    for w in warnings {
        let key = match classify(&w.text) {
            // once per option, whatever value each config gives it
            Kind::Ignored { option, .. } => Kind::Ignored {
                option,
                value: String::new(),
            },
            k => k,
        };
        let configs = out.entry(key).or_default();
        if !configs.contains(&w.config) {
            configs.push(w.config.clone());
        }
    }
    out
}

/// The options the rustfmt in use ignores, each once.
pub fn ignored_options(warnings: &[RustfmtWarning]) -> Vec<String> {
    grouped(warnings)
        .into_keys()
        .filter_map(|k| match k {
            Kind::Ignored { option, .. } => Some(option),
            _ => None,
        })
        .collect()
}

/// The 1-based line of `option` in the config file (1 when not found).
fn line_of(config: &Path, option: &str) -> usize {
    std::fs::read_to_string(config)
        .ok()
        .and_then(|t| {
            t.lines()
                .position(|l| l.trim_start().split(['=', ' ']).next() == Some(option))
        })
        .map_or(1, |i| i + 1)
}

/// One diagnostic per grouped warning. `rustfmt` names the rustfmt in use.
pub fn diagnostics(warnings: &[RustfmtWarning], root: &Path, rustfmt: &str) -> Vec<Diagnostic> {
    let mut out = Vec::new();
    for (kind, configs) in grouped(warnings) {
        let rels: Vec<String> = configs
            .iter()
            .map(|c| {
                c.as_ref().map_or_else(
                    || "rustfmt's config".into(),
                    |c| crate::fsutil::rel(root, c),
                )
            })
            .collect();
        let first = configs.first().cloned().flatten();
        let (option, message) = match &kind {
            Kind::Ignored { option, .. } => (
                Some(option.as_str()),
                format!(
                    "rustfmt ignores `{option}`: it is a nightly-only option and the rustfmt in use is {rustfmt}; \
                     files are formatted as if it were not set"
                ),
            ),
            Kind::Unknown { option } => (
                Some(option.as_str()),
                format!("rustfmt does not know the option `{option}` and ignores it"),
            ),
            Kind::Other(text) => (None, format!("rustfmt: {text}")),
        };
        let file = rels.first().cloned().unwrap_or_default();
        let line = match (&first, option) {
            (Some(c), Some(o)) => line_of(c, o),
            _ => 1,
        };
        let more = if rels.len() > 1 {
            format!(" (also in {})", rels[1..].join(", "))
        } else {
            String::new()
        };
        out.push(Diagnostic {
            level: Level::Notice,
            file: first.is_some().then(|| file.clone()),
            line,
            column: None,
            title: "fmt-check: rustfmt warning".into(),
            message: format!("{message}{more}"),
            human: Some(if first.is_some() {
                format!("{file}:{line}: warning: {message}{more}")
            } else {
                format!("warning: {message}{more}")
            }),
            json: Some(crate::diag::json_row(
                "warning",
                &super::rows::Warning {
                    file: first.as_ref().map(|_| file.clone()),
                    line,
                    option,
                    configs: &rels,
                    message: &message,
                },
            )),
            github: true,
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classifies_rustfmt_warnings() {
        assert_eq!(
            classify(
                "can't set `imports_granularity = Crate`, unstable features are only available in nightly channel."
            ),
            Kind::Ignored {
                option: "imports_granularity".into(),
                value: "Crate".into()
            }
        );
        assert_eq!(
            classify("Unknown configuration option `foo_bar`"),
            Kind::Unknown {
                option: "foo_bar".into()
            }
        );
        let w = |t: &str| RustfmtWarning {
            config: None,
            text: t.into(),
        };
        let ws = [
            w(
                "can't set `group_imports = One`, unstable features are only available in nightly channel.",
            ),
            w(
                "can't set `group_imports = StdExternalCrate`, unstable features are only available in nightly channel.",
            ),
            w("Unknown configuration option `x`"),
        ];
        assert_eq!(ignored_options(&ws), ["group_imports"]);
        assert_eq!(grouped(&ws).len(), 2);
    }
}
