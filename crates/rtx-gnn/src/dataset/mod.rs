//! Heterogeneous datasets on disk: a safetensors file with PyG
//! `HeteroData`'s key names, read by memory-mapping it ([`Dataset::load`])
//! and written atomically ([`Dataset::save`]).
//!
//! The format (`rtx-hetero/1`, docs/training.md "The dataset format"):
//!
//! | key | dtype | shape |
//! | --- | --- | --- |
//! | `<type>.x` | F32, BF16 or F16 | `[n, f]` |
//! | `<type>.y` | F32 (targets) | `[n, d]` (or `[n]`: `d = 1`) |
//! | `<type>.y` | I64, I32, I16, I8, U64, U32, U16 or U8 (class labels) | `[n]` (or `[n, 1]`) |
//! | `<type>.train_mask`, `.val_mask`, `.test_mask` | BOOL or U8 (0 or 1) | `[n]` |
//! | `<src>__<rel>__<dst>.edge_index` | I64 or I32 | `[2, E]` |
//!
//! and the string-to-string `__metadata__`: `format` = `"rtx-hetero/1"`,
//! `node_types` (a JSON list of names, in order), `edge_types` (a JSON list
//! of `[src, rel, dst]`, in order), `num_nodes` (a JSON object, name to
//! count, every node type), and optionally `num_classes` (a JSON object,
//! type to class count, only for types with class labels).
//!
//! Every tensor and every metadata entry is checked before [`Dataset::load`]
//! returns; an error ([`Error::Dataset`]) names the file, the key and what is
//! wrong, and nothing is returned half-loaded.
//!
//! ```
//! use rtx_gnn::{Dataset, Targets, planted};
//!
//! let dir = tempfile::tempdir()?;
//! let path = dir.path().join("planted.safetensors");
//! planted::small_classification(7).save(&path)?;
//!
//! let data = Dataset::load(&path)?;
//! let paper = data.type_index("paper")?;
//! let Some(Targets::Classes { classes, .. }) = &data.targets[paper] else { unreachable!() };
//! assert_eq!(*classes, 8);
//! assert_eq!(data.require_train(paper)?.len(), 1200);
//! assert_eq!(data.relation_key(1), "author__writes__paper");
//! let graph = data.graph()?; // the HeteroGraph the model trains on
//! assert_eq!(graph.edges(), 18_000);
//! let x: Vec<f32> = data.features[paper].as_ref().unwrap().to_elements();
//! assert_eq!(x.len(), 2000 * 16);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use std::fmt;
use std::path::{Path, PathBuf};

use half::{bf16, f16};
use rtx_backend::Element;

use crate::graph::NodeType;
use crate::{Error, HeteroGraph, Result};

mod features_only;
mod read;
mod write;

pub use features_only::SELF_RELATION;
use read::parse;
pub use write::write_atomic;

/// The value of the `format` metadata entry.
pub const FORMAT: &str = "rtx-hetero/1";

/// The node attributes a file may hold per node type.
pub const NODE_ATTRS: [&str; 5] = ["x", "y", "train_mask", "val_mask", "test_mask"];

/// A heterogeneous dataset: node types, relations, and per node type its
/// input features, targets and train/validation/test split. `features`,
/// `targets` and `splits` are indexed by node type.
#[derive(Debug, Clone, PartialEq)]
pub struct Dataset {
    /// Node types, in the file's order.
    pub node_types: Vec<NodeType>,
    /// Relations (edge types), in the file's order.
    pub relations: Vec<DatasetRelation>,
    /// Input features per node type (`<type>.x`), if any.
    pub features: Vec<Option<Features>>,
    /// Targets per node type (`<type>.y`), if any.
    pub targets: Vec<Option<Targets>>,
    /// Splits per node type (the masks).
    pub splits: Vec<Splits>,
}

/// A relation `src -name-> dst` with its edges (`<src>__<name>__<dst>.edge_index`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DatasetRelation {
    /// Source node type (an index into [`Dataset::node_types`]).
    pub src_type: usize,
    /// The relation's name (PyG's middle part of the edge type).
    pub name: String,
    /// Destination node type.
    pub dst_type: usize,
    /// Source node of every edge (row 0 of `edge_index`).
    pub src: Vec<u32>,
    /// Destination node of every edge (row 1 of `edge_index`).
    pub dst: Vec<u32>,
}

/// Input features `[n, dim]`, row-major, in the file's precision.
#[derive(Debug, Clone, PartialEq)]
pub enum Features {
    /// `f32` features.
    F32 {
        /// `n * dim` values, row-major.
        data: Vec<f32>,
        /// Features per node.
        dim: usize,
    },
    /// `bf16` features.
    Bf16 {
        /// `n * dim` values, row-major.
        data: Vec<bf16>,
        /// Features per node.
        dim: usize,
    },
    /// `f16` features.
    F16 {
        /// `n * dim` values, row-major.
        data: Vec<f16>,
        /// Features per node.
        dim: usize,
    },
}

impl Features {
    /// Features per node.
    pub fn dim(&self) -> usize {
        match self {
            Features::F32 { dim, .. } | Features::Bf16 { dim, .. } | Features::F16 { dim, .. } => {
                *dim
            }
        }
    }

    /// Number of values (`n * dim`).
    pub fn len(&self) -> usize {
        match self {
            Features::F32 { data, .. } => data.len(),
            Features::Bf16 { data, .. } => data.len(),
            Features::F16 { data, .. } => data.len(),
        }
    }

    /// Whether there are no values.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The safetensors dtype name (`F32`, `BF16`, `F16`).
    pub fn dtype_name(&self) -> &'static str {
        match self {
            Features::F32 { .. } => "F32",
            Features::Bf16 { .. } => "BF16",
            Features::F16 { .. } => "F16",
        }
    }

    /// The values as `f32` (exact for every variant).
    pub fn to_f32(&self) -> Vec<f32> {
        match self {
            Features::F32 { data, .. } => data.clone(),
            Features::Bf16 { data, .. } => data.iter().map(|v| v.to_f32()).collect(),
            Features::F16 { data, .. } => data.iter().map(|v| v.to_f32()).collect(),
        }
    }

    /// The values as backend elements `T`: widened exactly through `f32`
    /// and rounded once (to nearest even) where `T` is narrower, so a file's
    /// `bf16` features come back with the same bits as `bf16`.
    pub fn to_elements<T: Element>(&self) -> Vec<T> {
        match self {
            Features::F32 { data, .. } => data.iter().map(|&v| T::from_f32(v)).collect(),
            Features::Bf16 { data, .. } => data.iter().map(|v| T::from_f32(v.to_f32())).collect(),
            Features::F16 { data, .. } => data.iter().map(|v| T::from_f32(v.to_f32())).collect(),
        }
    }

    /// The first non-finite value: `(position, value)`.
    fn first_non_finite(&self) -> Option<(usize, f32)> {
        match self {
            Features::F32 { data, .. } => data
                .iter()
                .position(|v| !v.is_finite())
                .map(|i| (i, data[i])),
            Features::Bf16 { data, .. } => data
                .iter()
                .position(|v| !v.is_finite())
                .map(|i| (i, data[i].to_f32())),
            Features::F16 { data, .. } => data
                .iter()
                .position(|v| !v.is_finite())
                .map(|i| (i, data[i].to_f32())),
        }
    }
}

/// Targets of a node type (`<type>.y`).
#[derive(Debug, Clone, PartialEq)]
pub enum Targets {
    /// Class labels, one per node, each below `classes`.
    Classes {
        /// The label of every node.
        labels: Vec<u32>,
        /// The class count (metadata `num_classes`, else max label + 1).
        classes: usize,
    },
    /// Real-valued targets `[n, dim]`, row-major.
    Values {
        /// `n * dim` values.
        data: Vec<f32>,
        /// Targets per node.
        dim: usize,
    },
}

impl Targets {
    /// Number of nodes with targets.
    pub fn rows(&self) -> usize {
        match self {
            Targets::Classes { labels, .. } => labels.len(),
            Targets::Values { data, dim } => data.len().checked_div(*dim).unwrap_or(0),
        }
    }

    /// The model's output width: the class count or the target width.
    pub fn out_features(&self) -> usize {
        match self {
            Targets::Classes { classes, .. } => *classes,
            Targets::Values { dim, .. } => *dim,
        }
    }
}

/// A node type's split: the ascending node ids where each mask is true
/// (empty where the file has no such mask).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Splits {
    /// Training nodes (`train_mask`).
    pub train: Vec<u32>,
    /// Validation nodes (`val_mask`).
    pub val: Vec<u32>,
    /// Test nodes (`test_mask`).
    pub test: Vec<u32>,
}

impl Splits {
    /// The three splits with their mask names.
    pub fn named(&self) -> [(&'static str, &[u32]); 3] {
        [
            ("train_mask", &self.train),
            ("val_mask", &self.val),
            ("test_mask", &self.test),
        ]
    }
}

/// Where an error is: the file, or `None` for a [`Dataset`] in memory.
/// Shown by [`Error::Dataset`]'s message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Origin(pub Option<PathBuf>);

impl fmt::Display for Origin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.0 {
            Some(p) => write!(f, "dataset {}", p.display()),
            None => f.write_str("dataset (in memory)"),
        }
    }
}

fn err(path: Option<&Path>, key: impl Into<String>, msg: impl Into<String>) -> Error {
    Error::Dataset {
        origin: Origin(path.map(Path::to_path_buf)),
        key: key.into(),
        msg: msg.into(),
    }
}

fn io_err(path: &Path, what: &str, source: std::io::Error) -> Error {
    Error::Io {
        path: path.to_path_buf(),
        what: what.to_string(),
        source,
    }
}

/// A name usable in a key: not empty, no `.`, no `__`.
fn check_name(path: Option<&Path>, key: &str, what: &str, name: &str) -> Result<()> {
    if name.is_empty() || name.contains('.') || name.contains("__") {
        return Err(err(
            path,
            key,
            format!("{what} {name:?}: a name must be non-empty, without '.' and without \"__\""),
        ));
    }
    Ok(())
}

impl Dataset {
    /// The index of node type `name`.
    ///
    /// # Errors
    /// [`Error::Dataset`] naming the known types when there is none.
    pub fn type_index(&self, name: &str) -> Result<usize> {
        self.node_types
            .iter()
            .position(|t| t.name == name)
            .ok_or_else(|| {
                err(
                    None,
                    name,
                    format!(
                        "no such node type; the node types are {:?}",
                        self.type_names()
                    ),
                )
            })
    }

    fn type_names(&self) -> Vec<&str> {
        self.node_types.iter().map(|t| t.name.as_str()).collect()
    }

    /// `"src__rel__dst"` of relation `r` (PyG's `HeteroConv` module key and
    /// the prefix of its `edge_index` key).
    ///
    /// # Panics
    /// When `r` or its node types are out of range.
    pub fn relation_key(&self, r: usize) -> String {
        let rel = &self.relations[r];
        format!(
            "{}__{}__{}",
            self.node_types[rel.src_type].name, rel.name, self.node_types[rel.dst_type].name
        )
    }

    /// The training nodes of node type `node_type`.
    ///
    /// # Errors
    /// [`Error::Dataset`] (key `<type>.train_mask`) when the type has no
    /// training node (no mask, or a mask that is all false), or the type
    /// is out of range.
    pub fn require_train(&self, node_type: usize) -> Result<&[u32]> {
        let Some(t) = self.node_types.get(node_type) else {
            return Err(err(
                None,
                format!("node type {node_type}"),
                format!("out of range: {} node types", self.node_types.len()),
            ));
        };
        let train = self.splits.get(node_type).map_or(&[][..], |s| &s.train[..]);
        if train.is_empty() {
            return Err(err(
                None,
                format!("{}.train_mask", t.name),
                "no training nodes: the train mask is absent or all false",
            ));
        }
        Ok(train)
    }

    /// The targets of node type `node_type`.
    ///
    /// # Errors
    /// [`Error::Dataset`] (key `<type>.y`) when the type has none.
    pub fn require_targets(&self, node_type: usize) -> Result<&Targets> {
        let name = self
            .node_types
            .get(node_type)
            .map_or("?", |t| t.name.as_str());
        self.targets
            .get(node_type)
            .and_then(Option::as_ref)
            .ok_or_else(|| err(None, format!("{name}.y"), "no targets for this node type"))
    }

    /// The [`HeteroGraph`] of the dataset's topology (relation name = `rel`).
    ///
    /// # Errors
    /// What [`HeteroGraph::new`] returns (never for a valid dataset).
    pub fn graph(&self) -> Result<HeteroGraph> {
        HeteroGraph::new(
            self.node_types.clone(),
            self.relations
                .iter()
                .map(|r| {
                    (
                        r.name.clone(),
                        r.src_type,
                        r.dst_type,
                        r.src.clone(),
                        r.dst.clone(),
                    )
                })
                .collect(),
        )
    }

    /// Checks everything [`Dataset::load`] checks of a file's content.
    ///
    /// # Errors
    /// [`Error::Dataset`] naming the key and the problem.
    pub fn validate(&self) -> Result<()> {
        self.validate_at(None)
    }

    fn validate_at(&self, path: Option<&Path>) -> Result<()> {
        let nt = self.node_types.len();
        for (what, len) in [
            ("features", self.features.len()),
            ("targets", self.targets.len()),
            ("splits", self.splits.len()),
        ] {
            if len != nt {
                return Err(err(
                    path,
                    what,
                    format!("{len} entries for {nt} node types"),
                ));
            }
        }
        for (i, t) in self.node_types.iter().enumerate() {
            check_name(path, "node_types", "node type", &t.name)?;
            if self.node_types[..i].iter().any(|u| u.name == t.name) {
                return Err(err(
                    path,
                    "node_types",
                    format!("node type {:?} is listed twice", t.name),
                ));
            }
            if t.nodes > u32::MAX as usize {
                return Err(err(
                    path,
                    format!("num_nodes.{}", t.name),
                    format!(
                        "{} nodes: node ids are u32, at most {} nodes per type",
                        t.nodes,
                        u32::MAX
                    ),
                ));
            }
            let n = t.nodes;
            let name = &t.name;
            if let Some(x) = &self.features[i] {
                let key = format!("{name}.x");
                if n.checked_mul(x.dim()) != Some(x.len()) {
                    return Err(err(
                        path,
                        key,
                        format!("{} values for {n} nodes of {} features", x.len(), x.dim()),
                    ));
                }
                if let Some((p, v)) = x.first_non_finite() {
                    return Err(err(
                        path,
                        key,
                        format!(
                            "{v} at node {}, feature {}: features must be finite",
                            p / x.dim(),
                            p % x.dim()
                        ),
                    ));
                }
            }
            if let Some(y) = &self.targets[i] {
                let key = format!("{name}.y");
                match y {
                    Targets::Classes { labels, classes } => {
                        if labels.len() != n {
                            return Err(err(
                                path,
                                key,
                                format!("{} labels for {n} nodes", labels.len()),
                            ));
                        }
                        if let Some(p) = labels.iter().position(|&l| l as usize >= *classes) {
                            return Err(err(
                                path,
                                key,
                                format!(
                                    "label {} at node {p} is at or past the class count {classes}",
                                    labels[p]
                                ),
                            ));
                        }
                    }
                    Targets::Values { data, dim } => {
                        if *dim == 0 || n.checked_mul(*dim) != Some(data.len()) {
                            return Err(err(
                                path,
                                key,
                                format!("{} values for {n} nodes of {dim} targets", data.len()),
                            ));
                        }
                        if let Some(p) = data.iter().position(|v| !v.is_finite()) {
                            return Err(err(
                                path,
                                key,
                                format!(
                                    "{} at node {}, target {}: targets must be finite",
                                    data[p],
                                    p / dim,
                                    p % dim
                                ),
                            ));
                        }
                    }
                }
            }
            for (mask, ids) in self.splits[i].named() {
                let key = format!("{name}.{mask}");
                if let Some(p) = ids.iter().position(|&v| v as usize >= n) {
                    return Err(err(
                        path,
                        key,
                        format!("node {} is out of range for {n} nodes", ids[p]),
                    ));
                }
                if let Some(p) = ids.windows(2).position(|w| w[0] >= w[1]) {
                    return Err(err(
                        path,
                        key,
                        format!(
                            "node ids must be ascending and distinct: {} then {}",
                            ids[p],
                            ids[p + 1]
                        ),
                    ));
                }
            }
        }
        for (r, rel) in self.relations.iter().enumerate() {
            let (Some(s), Some(d)) = (
                self.node_types.get(rel.src_type),
                self.node_types.get(rel.dst_type),
            ) else {
                return Err(err(
                    path,
                    format!("relation {r} ({})", rel.name),
                    format!(
                        "node types {} -> {}, but there are {nt} node types",
                        rel.src_type, rel.dst_type
                    ),
                ));
            };
            let key = format!("{}.edge_index", self.relation_key(r));
            check_name(path, &key, "relation name", &rel.name)?;
            if self.relations[..r].iter().any(|o| {
                o.name == rel.name && o.src_type == rel.src_type && o.dst_type == rel.dst_type
            }) {
                return Err(err(
                    path,
                    "edge_types",
                    format!(
                        "edge type [{:?}, {:?}, {:?}] is listed twice",
                        s.name, rel.name, d.name
                    ),
                ));
            }
            if rel.src.len() != rel.dst.len() {
                return Err(err(
                    path,
                    key,
                    format!(
                        "{} sources but {} destinations",
                        rel.src.len(),
                        rel.dst.len()
                    ),
                ));
            }
            for (row, ids, t) in [(0, &rel.src, s), (1, &rel.dst, d)] {
                if let Some(e) = ids.iter().position(|&v| v as usize >= t.nodes) {
                    return Err(err(
                        path,
                        key,
                        format!(
                            "edge {e}: {} {} is out of range for {:?}'s {} nodes (row {row})",
                            if row == 0 { "source" } else { "destination" },
                            ids[e],
                            t.name,
                            t.nodes
                        ),
                    ));
                }
            }
        }
        Ok(())
    }

    /// Reads a dataset file: memory-maps it, checks the safetensors header,
    /// the metadata and every tensor, and returns the dataset only when all
    /// of it is valid.
    ///
    /// The file must not be truncated by another process while it is read
    /// (as for any memory-mapped file).
    ///
    /// # Errors
    /// [`Error::Io`] when the file cannot be opened or mapped;
    /// [`Error::Dataset`] naming the file, the key and the problem for
    /// anything that does not fit the format.
    pub fn load(path: &Path) -> Result<Dataset> {
        let file = std::fs::File::open(path).map_err(|e| io_err(path, "open", e))?;
        let len = file.metadata().map_err(|e| io_err(path, "stat", e))?.len();
        if len == 0 {
            return Err(err(
                Some(path),
                "header",
                "0-byte file: not a safetensors file (no 8-byte header length)",
            ));
        }
        // SAFETY: the map is read-only and private to this call; the bytes
        // are only read through the slice below, which does not outlive the
        // map. Another process truncating the file while it is read would
        // fault (documented on this function), as with any mapped file.
        let map =
            unsafe { memmap2::Mmap::map(&file) }.map_err(|e| io_err(path, "memory-map", e))?;
        parse(path, &map)
    }

    /// Writes the dataset in the format [`Dataset::load`] reads: to a
    /// temporary file in the same directory (`.<name>.<pid>.<n>.tmp`,
    /// created with the usual permissions), flushed to disk, then renamed
    /// over `path`, so `path` is either the old file or the whole new one.
    /// Features are written in their precision, labels and edge indices as
    /// I64, masks as BOOL (a mask only where its split is not empty).
    ///
    /// # Errors
    /// [`Error::Dataset`] for an invalid dataset (the checks of
    /// [`Dataset::validate`]), nothing written; [`Error::Io`] when writing
    /// fails (the temporary file is removed).
    pub fn save(&self, path: &Path) -> Result<()> {
        self.validate_at(Some(path))?;
        let bytes = self.to_bytes(path)?;
        write_atomic(path, &bytes)
    }
}
