//! The fleet policy (`policy/fleet.toml`): what `align-deps`, `fmt-check` and
//! `gpu-test` enforce. Unknown keys anywhere are an error: a typo in policy must
//! never silently weaken it.
//!
//! ```toml
//! [dependencies.thiserror]
//! version = "2"      # the requirement every declaration must end up with
//! inherit = true     # members use `workspace = true`
//!
//! [fmt]
//! exclude = ["**/fixtures/**"]
//!
//! [[gpu-test]]
//! package = "rtx-backend-cuda"
//! features = ["cuda"]
//! ```

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;

/// The whole policy file.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Policy {
    /// Dependency rules keyed by the crate name on crates.io.
    #[serde(default)]
    pub dependencies: BTreeMap<String, DependencyRule>,
    /// `fmt-check` settings.
    #[serde(default)]
    pub fmt: FmtPolicy,
    /// The GPU test matrix for `gpu-test`.
    #[serde(default, rename = "gpu-test")]
    pub gpu_test: Vec<GpuTestEntry>,
}

/// One `[dependencies.<name>]` rule.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DependencyRule {
    /// The version requirement every declaration must end up with (e.g. `"2"`).
    pub version: String,
    /// Members inherit from `[workspace.dependencies]` with `workspace = true`.
    #[serde(default = "default_true")]
    pub inherit: bool,
}

fn default_true() -> bool {
    true
}

/// `[fmt]`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FmtPolicy {
    /// Globs (relative to the workspace root) of `.rs` files not to check.
    #[serde(default)]
    pub exclude: Vec<String>,
}

/// One `[[gpu-test]]` entry.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GpuTestEntry {
    /// The workspace package whose tests need a GPU.
    pub package: String,
    /// Features that turn the GPU tests on.
    #[serde(default)]
    pub features: Vec<String>,
}

/// A policy that could not be loaded: missing, unreadable or malformed.
#[derive(Debug, thiserror::Error)]
pub enum PolicyError {
    /// The file is missing or unreadable.
    #[error("{path}: cannot read policy: {source}")]
    Read {
        /// The policy file.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// The file is not valid TOML or does not match the schema.
    #[error("{path}:{line}:{column}: malformed policy: {message}")]
    Malformed {
        /// The policy file.
        path: PathBuf,
        /// 1-based line.
        line: usize,
        /// 1-based column.
        column: usize,
        /// What was wrong (from the TOML parser, including unknown keys).
        message: String,
    },
}

impl Policy {
    /// Loads and validates a policy file.
    ///
    /// # Errors
    /// [`PolicyError::Read`] when the file cannot be read, [`PolicyError::Malformed`]
    /// with the line and column when it is not valid TOML, has unknown keys or
    /// values of the wrong type.
    pub fn load(path: &Path) -> Result<Policy, PolicyError> {
        let text = std::fs::read_to_string(path).map_err(|source| PolicyError::Read {
            path: path.to_path_buf(),
            source,
        })?;
        Policy::parse(&text, path)
    }

    /// Parses policy text; `path` is only used in error messages.
    ///
    /// # Errors
    /// As [`Policy::load`].
    pub fn parse(text: &str, path: &Path) -> Result<Policy, PolicyError> {
        let policy: Policy = toml::from_str(text).map_err(|e| {
            let (line, column) = e
                .span()
                .map(|s| line_col(text, s.start))
                .unwrap_or((1, 1));
            PolicyError::Malformed {
                path: path.to_path_buf(),
                line,
                column,
                message: e.message().to_string(),
            }
        })?;
        for (name, rule) in &policy.dependencies {
            if rule.version.trim().is_empty() {
                let (line, column) = find_line(text, name);
                return Err(PolicyError::Malformed {
                    path: path.to_path_buf(),
                    line,
                    column,
                    message: format!("dependencies.{name}.version is empty"),
                });
            }
        }
        Ok(policy)
    }
}

/// 1-based line and column of byte offset `offset` in `text`.
pub fn line_col(text: &str, offset: usize) -> (usize, usize) {
    let offset = offset.min(text.len());
    let before = &text[..offset];
    let line = before.matches('\n').count() + 1;
    let column = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    (line, column)
}

fn find_line(text: &str, needle: &str) -> (usize, usize) {
    text.find(needle).map_or((1, 1), |o| line_col(text, o))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_full_schema() {
        let p = Policy::parse(
            "[dependencies.thiserror]\nversion = \"2\"\ninherit = false\n\n[fmt]\nexclude = [\"a/**\"]\n\n[[gpu-test]]\npackage = \"x\"\nfeatures = [\"cuda\"]\n",
            Path::new("p.toml"),
        )
        .unwrap();
        assert_eq!(p.dependencies["thiserror"].version, "2");
        assert!(!p.dependencies["thiserror"].inherit);
        assert_eq!(p.fmt.exclude, ["a/**"]);
        assert_eq!(p.gpu_test[0].package, "x");
    }

    #[test]
    fn inherit_defaults_to_true() {
        let p = Policy::parse("[dependencies.a]\nversion = \"1\"\n", Path::new("p")).unwrap();
        assert!(p.dependencies["a"].inherit);
    }

    #[test]
    fn unknown_key_is_an_error_with_its_line() {
        let e = Policy::parse(
            "[dependencies.thiserror]\nversion = \"2\"\ninherrit = true\n",
            Path::new("policy/fleet.toml"),
        )
        .unwrap_err()
        .to_string();
        assert!(e.starts_with("policy/fleet.toml:3:"), "{e}");
        assert!(e.contains("inherrit"), "{e}");
    }

    #[test]
    fn malformed_toml_names_the_line() {
        let e = Policy::parse("[fmt]\nexclude = [\n", Path::new("f.toml"))
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("f.toml:"), "{e}");
    }

    #[test]
    fn missing_file_is_a_read_error() {
        let e = Policy::load(Path::new("/nonexistent/fleet.toml")).unwrap_err();
        assert!(matches!(e, PolicyError::Read { .. }));
        assert!(e.to_string().contains("/nonexistent/fleet.toml"));
    }
}
