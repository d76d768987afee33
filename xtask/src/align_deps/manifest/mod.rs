//! A parsed `Cargo.toml` that remembers where everything is: dependency
//! tables, declarations and their keys, and edits expressed as byte
//! [`Splice`](super::plan::Splice)s of the original text (so comments, key order, whitespace,
//! quoting and line endings outside the changed bytes cannot change).

use std::ops::Range;
use std::path::{Path, PathBuf};

use toml_edit::{Document, Item, Key, TableLike, Value};

use crate::text::line_col;

mod edit;

pub use edit::Op;

/// A manifest that is not valid TOML or cannot be read.
#[derive(Debug, thiserror::Error)]
pub enum ManifestError {
    /// Unreadable.
    #[error("{path}: cannot read manifest")]
    Read {
        /// The manifest.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// Not TOML.
    #[error("{path}:{line}:{column}: malformed TOML: {message}")]
    Malformed {
        /// The manifest.
        path: PathBuf,
        /// 1-based line.
        line: usize,
        /// 1-based column.
        column: usize,
        /// The parser's message.
        message: String,
    },
}

/// One parsed manifest.
#[derive(Debug)]
pub struct Manifest {
    /// Absolute path.
    pub path: PathBuf,
    /// Relative to the workspace root, `/`-separated.
    pub rel: String,
    doc: Document<String>,
    /// `"\r\n"` when the file uses CRLF line endings, else `"\n"`.
    pub eol: &'static str,
}

/// The dependency-table names cargo reads (with the legacy underscore spellings).
pub const DEP_TABLES: &[&str] = &[
    "dependencies",
    "dev-dependencies",
    "dev_dependencies",
    "build-dependencies",
    "build_dependencies",
];

/// A dependency table of a manifest.
pub struct DepTable<'a> {
    /// Display name: `dependencies`, `target.'cfg(unix)'.dev-dependencies`, `workspace.dependencies`.
    pub name: String,
    /// The table.
    pub table: &'a dyn TableLike,
    /// The table's item (for its span and form).
    pub item: &'a Item,
}

impl std::fmt::Debug for DepTable<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DepTable")
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

/// How a declaration is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Form {
    /// `thiserror = "1.0"`.
    Simple,
    /// `thiserror = { version = "1", ... }`.
    Inline,
    /// `[dependencies.thiserror]` with key/value lines.
    Table,
    /// `thiserror.version = "1"` lines.
    Dotted,
}

/// One dependency declaration: `key = <item>` in a dependency table.
#[derive(Debug, Clone, Copy)]
pub struct Decl<'a> {
    /// The key as written (`te` for `te = { package = "thiserror", ... }`).
    pub key: &'a Key,
    /// The value: a string or a table-like.
    pub item: &'a Item,
    /// How it is written.
    pub form: Form,
}

impl Manifest {
    /// Reads and parses `path`; `root` is the workspace root for [`Manifest::rel`].
    ///
    /// # Errors
    /// [`ManifestError`] with the path (and line for malformed TOML).
    pub fn load(path: &Path, root: &Path) -> Result<Manifest, ManifestError> {
        let text = std::fs::read_to_string(path).map_err(|source| ManifestError::Read {
            path: path.to_path_buf(),
            source,
        })?;
        Manifest::parse(path, root, text)
    }

    /// Parses `text` as the manifest at `path`.
    ///
    /// # Errors
    /// [`ManifestError::Malformed`] with line and column.
    pub fn parse(path: &Path, root: &Path, text: String) -> Result<Manifest, ManifestError> {
        let eol = if text.contains("\r\n") { "\r\n" } else { "\n" };
        let doc = match Document::parse(text.clone()) {
            Ok(doc) => doc,
            Err(e) => {
                let (line, column) = e.span().map_or((1, 1), |s| line_col(&text, s.start));
                return Err(ManifestError::Malformed {
                    path: path.to_path_buf(),
                    line,
                    column,
                    message: e.message().trim().replace('\n', " "),
                });
            }
        };
        // a member outside the root is named by its whole path
        let rel = crate::fsutil::rel(root, path);
        Ok(Manifest {
            path: path.to_path_buf(),
            rel,
            doc,
            eol,
        })
    }

    /// The text as read.
    pub fn text(&self) -> &str {
        self.doc.raw()
    }

    /// 1-based (line, column) of a byte offset.
    pub fn line_col(&self, offset: usize) -> (usize, usize) {
        line_col(self.text(), offset)
    }

    /// The root table.
    pub fn root(&self) -> &toml_edit::Table {
        self.doc.as_table()
    }

    /// Whether the manifest has a `[workspace]` table.
    pub fn has_workspace(&self) -> bool {
        self.root()
            .get("workspace")
            .is_some_and(Item::is_table_like)
    }

    /// `[workspace.dependencies]`, when present.
    pub fn workspace_dependencies(&self) -> Option<DepTable<'_>> {
        let ws = self.root().get("workspace")?.as_table_like()?;
        let item = ws.get("dependencies")?;
        Some(DepTable {
            name: "workspace.dependencies".into(),
            table: item.as_table_like()?,
            item,
        })
    }

    /// Every dependency table of the package: top level and under each
    /// `[target.<cfg or triple>]`, in document order of discovery.
    pub fn dependency_tables(&self) -> Vec<DepTable<'_>> {
        let mut out = Vec::new();
        let root = self.root();
        for name in DEP_TABLES {
            if let Some(item) = root.get(name)
                && let Some(table) = item.as_table_like()
            {
                out.push(DepTable {
                    name: (*name).to_string(),
                    table,
                    item,
                });
            }
        }
        if let Some(targets) = root.get("target").and_then(Item::as_table_like) {
            for (platform, titem) in targets.iter() {
                let Some(ttable) = titem.as_table_like() else {
                    continue;
                };
                let shown = display_key(platform);
                for name in DEP_TABLES {
                    if let Some(item) = ttable.get(name)
                        && let Some(table) = item.as_table_like()
                    {
                        out.push(DepTable {
                            name: format!("target.{shown}.{name}"),
                            table,
                            item,
                        });
                    }
                }
            }
        }
        out
    }

    /// The byte offset of the start of the line holding `offset`.
    pub fn line_start(&self, offset: usize) -> usize {
        self.text()[..offset].rfind('\n').map_or(0, |i| i + 1)
    }

    /// The byte offset just past the newline ending the line holding `offset`
    /// (the file's length on the last line).
    pub fn next_line_start(&self, offset: usize) -> usize {
        self.text()[offset..]
            .find('\n')
            .map_or(self.text().len(), |i| offset + i + 1)
    }

    /// The byte offset of the end of the line holding `offset`, before any `\r\n`/`\n`.
    pub fn line_end(&self, offset: usize) -> usize {
        let t = self.text();
        let end = t[offset..].find('\n').map_or(t.len(), |i| offset + i);
        if end > offset && t.as_bytes()[end - 1] == b'\r' {
            end - 1
        } else {
            end
        }
    }
}

/// A key as it would be written in a dotted path: bare when possible, else quoted.
pub fn display_key(k: &str) -> String {
    if !k.is_empty()
        && k.chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
    {
        k.to_string()
    } else {
        format!("'{k}'")
    }
}

impl<'a> Decl<'a> {
    /// The declaration `key = item`, or `None` when the item is not a dependency shape.
    pub fn new(key: &'a Key, item: &'a Item) -> Option<Decl<'a>> {
        let form = match item {
            Item::Value(Value::String(_)) => Form::Simple,
            Item::Value(Value::InlineTable(_)) => Form::Inline,
            Item::Table(t) if t.is_dotted() => Form::Dotted,
            Item::Table(_) => Form::Table,
            _ => return None,
        };
        Some(Decl { key, item, form })
    }

    /// Every declaration of a dependency table, in order.
    pub fn all(table: &'a dyn TableLike) -> Vec<Decl<'a>> {
        table
            .iter()
            .filter_map(|(k, item)| Decl::new(table.key(k)?, item))
            .collect()
    }

    fn get(&self, k: &str) -> Option<&'a Item> {
        self.item.as_table_like()?.get(k)
    }

    /// The package this declaration is for: `package = "..."`, else the key.
    pub fn package(&self) -> &'a str {
        self.get("package")
            .and_then(Item::as_str)
            .unwrap_or(self.key.get())
    }

    /// The version requirement as written, and its span.
    pub fn version(&self) -> Option<(&'a str, Range<usize>)> {
        let item = match self.form {
            Form::Simple => self.item,
            _ => self.get("version")?,
        };
        Some((item.as_str()?, item.span()?))
    }

    /// `workspace = true`.
    pub fn inherited(&self) -> bool {
        self.get("workspace").and_then(Item::as_bool) == Some(true)
    }

    /// `default-features` (or `default_features`) as written.
    pub fn default_features(&self) -> Option<(&'static str, bool)> {
        ["default-features", "default_features"]
            .into_iter()
            .find_map(|k| Some((k, self.get(k)?.as_bool()?)))
    }

    /// `features` as written.
    pub fn features(&self) -> Vec<&'a str> {
        self.get("features")
            .and_then(Item::as_array)
            .map(|a| a.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default()
    }

    /// The non-registry source (`git`, `path`) or alternative registry
    /// (`registry`, `registry-index`) this declaration names, if any.
    pub fn source(&self) -> Option<&'static str> {
        ["git", "path", "registry", "registry-index"]
            .into_iter()
            .find(|k| self.get(k).is_some())
    }

    /// Whether `key` is present.
    pub fn has(&self, key: &str) -> bool {
        self.get(key).is_some()
    }

    /// The span of the whole declaration's value (for a table, its header).
    pub fn span(&self) -> Range<usize> {
        match self.form {
            Form::Dotted => self.key.span().unwrap_or(0..0),
            _ => self.item.span().unwrap_or(0..0),
        }
    }

    /// Where the declaration starts (its key) for locating findings.
    pub fn key_offset(&self) -> usize {
        match self.form {
            Form::Table => self.item.span().map_or(0, |s| s.start),
            _ => self.key.span().map_or(0, |s| s.start),
        }
    }

    /// The quote character of the version string (`'` or `"`), to keep the style.
    pub fn quote(&self, text: &str) -> char {
        self.version()
            .and_then(|(_, span)| text[span].chars().next())
            .filter(|c| *c == '\'')
            .unwrap_or('"')
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::align_deps::plan::apply_splices;

    fn m(text: &str) -> Manifest {
        Manifest::parse(
            Path::new("/w/Cargo.toml"),
            Path::new("/w"),
            text.to_string(),
        )
        .unwrap()
    }

    fn edit(text: &str, table: &str, key: &str, ops: &[Op]) -> String {
        let m = m(text);
        let t = m
            .dependency_tables()
            .into_iter()
            .find(|t| t.name == table)
            .unwrap();
        let d = Decl::all(t.table)
            .into_iter()
            .find(|d| d.key.get() == key)
            .unwrap();
        apply_splices(text, &m.decl_splices(&d, ops))
    }

    #[test]
    fn finds_every_table_kind() {
        let m = m(
            "[dependencies]\na = \"1\"\n[dev-dependencies]\n[build-dependencies]\n[target.'cfg(unix)'.dependencies]\n[target.x86_64-unknown-linux-gnu.build-dependencies]\n",
        );
        let names: Vec<String> = m.dependency_tables().into_iter().map(|t| t.name).collect();
        assert_eq!(
            names,
            [
                "dependencies",
                "dev-dependencies",
                "build-dependencies",
                "target.'cfg(unix)'.dependencies",
                "target.x86_64-unknown-linux-gnu.build-dependencies"
            ]
        );
    }

    #[test]
    fn inline_replace_remove_insert() {
        let t = "[dependencies]\nte = { package = \"thiserror\", version = \"1\", default-features = false }\n";
        let out = edit(
            t,
            "dependencies",
            "te",
            &[
                Op::Remove("package"),
                Op::ReplaceKv("version", "workspace = true".into()),
            ],
        );
        assert_eq!(
            out,
            "[dependencies]\nte = { workspace = true, default-features = false }\n"
        );
        let out = edit(
            t,
            "dependencies",
            "te",
            &[
                Op::Remove("package"),
                Op::Remove("default-features"),
                Op::InsertLast("x = 1".into()),
            ],
        );
        assert_eq!(out, "[dependencies]\nte = { version = \"1\", x = 1 }\n");
        let out = edit(
            t,
            "dependencies",
            "te",
            &[
                Op::Remove("package"),
                Op::Remove("version"),
                Op::Remove("default-features"),
                Op::InsertFirst("workspace = true".into()),
            ],
        );
        assert_eq!(out, "[dependencies]\nte = { workspace = true }\n");
    }

    #[test]
    fn table_and_dotted_keep_line_prefix_and_crlf() {
        let t = "[dependencies.thiserror]\r\n  version = \"1\" # v\r\n  optional = true\r\n";
        let m = m(t);
        let root = m.root();
        let deps = root.get("dependencies").unwrap().as_table_like().unwrap();
        let d = Decl::all(deps).into_iter().next().unwrap();
        assert_eq!(d.form, Form::Table);
        let out = apply_splices(
            t,
            &m.decl_splices(
                &d,
                &[
                    Op::ReplaceKv("version", "workspace = true".into()),
                    Op::InsertLast("default-features = true".into()),
                ],
            ),
        );
        assert_eq!(
            out,
            "[dependencies.thiserror]\r\n  workspace = true # v\r\n  optional = true\r\n  default-features = true\r\n"
        );
        let t = "[dependencies]\nthiserror.version = \"1\"\nthiserror.default-features = false\nx = 1\n";
        let out = edit(
            t,
            "dependencies",
            "thiserror",
            &[
                Op::ReplaceKv("version", "workspace = true".into()),
                Op::Remove("default-features"),
            ],
        );
        assert_eq!(out, "[dependencies]\nthiserror.workspace = true\nx = 1\n");
    }

    #[test]
    fn malformed_names_line_and_column() {
        let e = Manifest::parse(
            Path::new("/w/Cargo.toml"),
            Path::new("/w"),
            "[package]\nname = \n".into(),
        )
        .unwrap_err();
        let ManifestError::Malformed { line, .. } = &e else {
            panic!("{e}")
        };
        assert_eq!(*line, 2, "{e}");
        assert!(e.to_string().starts_with("/w/Cargo.toml:2:"), "{e}");
    }
}
