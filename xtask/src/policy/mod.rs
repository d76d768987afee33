//! The fleet policy (`policy/fleet.toml`, or the `[workspace.metadata.fleet]`
//! table of the root `Cargo.toml`, see [`load_policy`]): what `align-deps`, `fmt-check` and
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
//!
//! [[exempt]]                 # see [`exempt`]: a package, a declaration or a source
//! package = "enclave-shim"
//! reason = "builds with the thiserror-sgx fork"
//! ```

use std::collections::BTreeMap;
use std::ops::Range;
use std::path::{Path, PathBuf};

use cargo_metadata::semver::VersionReq;
use serde::Deserialize;
use toml::Spanned;

use crate::text::line_col;

pub mod exempt;
mod load;
mod validate;

pub use exempt::{ExemptKind, Exemption};
pub use load::{LoadedPolicy, default_policy_path, load_policy, load_policy_or_default};
use validate::{validate_not_empty, validate_satisfiable, validate_spacing};

/// The whole policy file, validated.
#[derive(Debug, Clone, Default)]
pub struct Policy {
    /// Dependency rules keyed by the crate name on crates.io.
    pub dependencies: BTreeMap<String, DependencyRule>,
    /// `fmt-check` settings.
    pub fmt: FmtPolicy,
    /// The GPU test matrix for `gpu-test`.
    pub gpu_test: Vec<GpuTestEntry>,
    /// `[[exempt]]`: what `align-deps` leaves alone, and why.
    pub exemptions: Vec<Exemption>,
}

/// One `[dependencies.<name>]` rule.
#[derive(Debug, Clone)]
pub struct DependencyRule {
    /// The version requirement every declaration must end up with (e.g. `"2"`),
    /// as written.
    pub version: String,
    /// `version`, parsed (checked when the policy is loaded).
    pub req: VersionReq,
    /// Byte range of the `version` value in the policy text.
    pub version_span: Range<usize>,
    /// Byte range of the rule's name (`thiserror` of `[dependencies.thiserror]`).
    pub name_span: Range<usize>,
    /// Members inherit from `[workspace.dependencies]` with `workspace = true`.
    pub inherit: bool,
}

/// `[fmt]`.
#[derive(Debug, Clone, Default)]
pub struct FmtPolicy {
    /// Globs (relative to the workspace root) of `.rs` files not to check;
    /// each a valid glob (checked when the policy is loaded).
    pub exclude: Vec<String>,
}

/// One `[[gpu-test]]` entry.
#[derive(Debug, Clone, Default)]
pub struct GpuTestEntry {
    /// The workspace package whose tests need a GPU.
    pub package: String,
    /// Byte range of the `package` value in the policy text.
    pub package_span: Range<usize>,
    /// Features that turn the GPU tests on.
    pub features: Vec<String>,
    /// Byte range of each feature's value in the policy text.
    pub feature_spans: Vec<Range<usize>>,
}

fn default_true() -> bool {
    true
}

/// The file as written (spans kept, so errors can point at a value).
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawPolicy {
    #[serde(default)]
    dependencies: BTreeMap<Spanned<String>, RawRule>,
    #[serde(default)]
    fmt: RawFmt,
    #[serde(default, rename = "gpu-test")]
    gpu_test: Vec<RawGpuTest>,
    #[serde(default)]
    exempt: Vec<Spanned<exempt::RawExempt>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawRule {
    version: Spanned<String>,
    #[serde(default = "default_true")]
    inherit: bool,
}

#[derive(Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawFmt {
    #[serde(default)]
    exclude: Vec<Spanned<String>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawGpuTest {
    package: Spanned<String>,
    #[serde(default)]
    features: Vec<Spanned<String>>,
}

/// A root `Cargo.toml` as far as its `[workspace.metadata.fleet]` table
/// (every other key ignored).
#[derive(Deserialize)]
struct InManifest<T> {
    workspace: Option<InWorkspace<T>>,
}

#[derive(Deserialize)]
struct InWorkspace<T> {
    metadata: Option<InMetadata<T>>,
}

#[derive(Deserialize)]
struct InMetadata<T> {
    fleet: Option<T>,
}

/// A policy that could not be loaded: missing, unreadable or malformed.
#[derive(Debug, thiserror::Error)]
pub enum PolicyError {
    /// The file is missing or unreadable (the I/O error is the `source()`).
    #[error("{path}: cannot read policy")]
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
    /// with the line and column when it is not valid TOML, has unknown keys,
    /// values of the wrong type, a version that is not a semver requirement
    /// or an exclude pattern that is not a glob.
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
        let malformed = |offset: usize, message: String| {
            let (line, column) = line_col(text, offset);
            PolicyError::Malformed {
                path: path.to_path_buf(),
                line,
                column,
                message,
            }
        };
        let raw: RawPolicy = toml::from_str(text).map_err(|e| {
            malformed(
                e.span().map_or(0, |s| s.start),
                e.message().trim_end().to_string(),
            )
        })?;
        validate_not_empty(text).map_err(|(at, m)| malformed(at, m))?;
        Policy::from_raw(raw, text, path)
    }

    /// Parses the `[workspace.metadata.fleet]` table of a root `Cargo.toml`
    /// (`text`, at `path`): the same schema as `policy/fleet.toml`, its
    /// errors at the line and column in `Cargo.toml`. `Ok(None)`: the
    /// manifest has no such table.
    ///
    /// # Errors
    /// As [`Policy::load`].
    pub fn parse_in_manifest(text: &str, path: &Path) -> Result<Option<Policy>, PolicyError> {
        let malformed = |offset: usize, message: String| {
            let (line, column) = line_col(text, offset);
            PolicyError::Malformed {
                path: path.to_path_buf(),
                line,
                column,
                message,
            }
        };
        let root: InManifest<Spanned<toml::Table>> = toml::from_str(text).map_err(|e| {
            malformed(
                e.span().map_or(0, |s| s.start),
                e.message().trim_end().to_string(),
            )
        })?;
        let Some(table) = root
            .workspace
            .and_then(|w| w.metadata)
            .and_then(|m| m.fleet)
        else {
            return Ok(None);
        };
        if table.get_ref().is_empty() {
            return Err(malformed(
                table.span().start,
                "[workspace.metadata.fleet] is empty: it enforces nothing; write at least one rule such as `[workspace.metadata.fleet.dependencies.thiserror]` with `version = \"2\"`".into(),
            ));
        }
        let root: InManifest<RawPolicy> = toml::from_str(text).map_err(|e| {
            malformed(
                e.span().map_or(0, |s| s.start),
                format!("[workspace.metadata.fleet]: {}", e.message().trim_end()),
            )
        })?;
        let Some(raw) = root
            .workspace
            .and_then(|w| w.metadata)
            .and_then(|m| m.fleet)
        else {
            return Ok(None);
        };
        Policy::from_raw(raw, text, path).map(Some)
    }

    /// Whether the root `Cargo.toml` text has a `[workspace.metadata.fleet]`
    /// table (`false` for text that is not TOML: cargo reports that).
    pub fn in_manifest(text: &str) -> bool {
        toml::from_str::<InManifest<serde::de::IgnoredAny>>(text).is_ok_and(|r| {
            r.workspace
                .and_then(|w| w.metadata)
                .and_then(|m| m.fleet)
                .is_some()
        })
    }

    /// The validated policy of `raw`, parsed from `text` (whose byte offsets
    /// its spans are); `path` is only used in error messages.
    fn from_raw(raw: RawPolicy, text: &str, path: &Path) -> Result<Policy, PolicyError> {
        let malformed = |offset: usize, message: String| {
            let (line, column) = line_col(text, offset);
            PolicyError::Malformed {
                path: path.to_path_buf(),
                line,
                column,
                message,
            }
        };
        let mut dependencies = BTreeMap::new();
        for (name, rule) in raw.dependencies {
            let name_span = name.span();
            let name = name.into_inner();
            let span = rule.version.span();
            let version = rule.version.into_inner();
            if version.trim().is_empty() {
                return Err(malformed(
                    span.start,
                    format!("dependencies.{name}.version is empty"),
                ));
            }
            validate_spacing(&name, &version, span.start).map_err(|(at, m)| malformed(at, m))?;
            let req = VersionReq::parse(&version).map_err(|e| {
                malformed(
                    span.start,
                    format!(
                        "dependencies.{name}.version = \"{version}\" is not a version requirement ({e}); write one such as \"2\" or \"^2.0.1\""
                    ),
                )
            })?;
            validate_satisfiable(&name, &version, &req).map_err(|m| malformed(span.start, m))?;
            dependencies.insert(
                name,
                DependencyRule {
                    version,
                    req,
                    version_span: span,
                    name_span,
                    inherit: rule.inherit,
                },
            );
        }
        let mut exclude = Vec::new();
        for g in raw.fmt.exclude {
            if let Err(e) = globset::Glob::new(g.get_ref()) {
                return Err(malformed(
                    g.span().start,
                    format!("[fmt] exclude: bad glob `{}`: {}", g.get_ref(), e.kind()),
                ));
            }
            exclude.push(g.into_inner());
        }
        let gpu_test = raw
            .gpu_test
            .into_iter()
            .map(|e| GpuTestEntry {
                package_span: e.package.span(),
                package: e.package.into_inner(),
                feature_spans: e.features.iter().map(Spanned::span).collect(),
                features: e.features.into_iter().map(Spanned::into_inner).collect(),
            })
            .collect();
        let exemptions = exempt::validate(raw.exempt).map_err(|(at, m)| malformed(at, m))?;
        Ok(Policy {
            dependencies,
            fmt: FmtPolicy { exclude },
            gpu_test,
            exemptions,
        })
    }
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
    fn version_must_be_a_requirement_named_at_its_value() {
        // the name first appears in a comment: the error still points at the value
        let e = Policy::parse(
            "# thiserror is pinned below\n[dependencies.thiserror]\nversion = \"banana\"\n",
            Path::new("policy/fleet.toml"),
        )
        .unwrap_err()
        .to_string();
        assert!(e.starts_with("policy/fleet.toml:3:11: "), "{e}");
        assert!(e.contains("\"banana\" is not a version requirement"), "{e}");
        let e = Policy::parse("[dependencies.a]\n\n version = \"\"\n", Path::new("p"))
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("p:3:12: "), "{e}");
        let p = Policy::parse("[dependencies.a]\nversion = \"^2.0.1\"\n", Path::new("p")).unwrap();
        assert!(p.dependencies["a"].req.matches(&"2.1.0".parse().unwrap()));
    }

    #[test]
    fn policy_mistakes_are_errors_at_line_and_column() {
        let e = |t: &str| Policy::parse(t, Path::new("p")).unwrap_err().to_string();
        let empty = e("# nothing here\n\n");
        assert!(
            empty.starts_with("p:1:1: ") && empty.contains("empty"),
            "{empty}"
        );
        let never = e("[dependencies.a]\nversion = \">=2, <1\"\n");
        assert!(
            never.starts_with("p:2:11: ") && never.contains("satisfied by no version"),
            "{never}"
        );
        let spaced = e("[dependencies.a]\nversion = \" 2\"\n");
        assert!(
            spaced.starts_with("p:2:12: ") && spaced.contains("stray spaces"),
            "{spaced}"
        );
        let spaced = e("[dependencies.a]\nversion = \">= 2\"\n");
        assert!(
            spaced.starts_with("p:2:14: ") && spaced.contains("write \">=2\""),
            "{spaced}"
        );
        for ok in ["2", ">=2, <3", "^0.0.3", "~1.2", "=1.0.0", "*", "0.*"] {
            Policy::parse(
                &format!("[dependencies.a]\nversion = \"{ok}\"\n"),
                Path::new("p"),
            )
            .unwrap_or_else(|e| panic!("{ok}: {e}"));
        }
        for never in [">=1.2.4, <=1.2.3", "^1, ^2", ">2, <3", "=1.0.0, >1.0.0"] {
            let m = e(&format!("[dependencies.a]\nversion = \"{never}\"\n"));
            assert!(m.contains("satisfied by no version"), "{never}: {m}");
        }
    }

    #[test]
    fn bad_exclude_glob_is_named_at_its_value() {
        let e = Policy::parse("[fmt]\nexclude = [\"ok/**\", \"a/[\"]\n", Path::new("p"))
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("p:2:21: "), "{e}");
        assert!(e.contains("bad glob `a/[`"), "{e}");
    }

    #[test]
    fn gpu_entries_keep_their_spans() {
        let text = "[[gpu-test]]\npackage = \"x\"\nfeatures = [\"cuda\"]\n";
        let p = Policy::parse(text, Path::new("p")).unwrap();
        assert_eq!(&text[p.gpu_test[0].package_span.clone()], "\"x\"");
        assert_eq!(&text[p.gpu_test[0].feature_spans[0].clone()], "\"cuda\"");
    }

    #[test]
    fn read_error_does_not_repeat_the_os_error() {
        let e = Policy::load(Path::new("/nonexistent/fleet.toml")).unwrap_err();
        let shown = format!("{:#}", anyhow::Error::new(e));
        assert_eq!(shown.matches("No such file").count(), 1, "{shown}");
    }

    #[test]
    fn missing_file_is_a_read_error() {
        let e = Policy::load(Path::new("/nonexistent/fleet.toml")).unwrap_err();
        assert!(matches!(e, PolicyError::Read { .. }));
        assert!(e.to_string().contains("/nonexistent/fleet.toml"));
    }
}
