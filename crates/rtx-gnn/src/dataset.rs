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

use std::borrow::Cow;
use std::collections::HashMap;
use std::fmt;
use std::io::Write;
use std::path::{Path, PathBuf};

use half::{bf16, f16};
use rtx_backend::Element;
use safetensors::tensor::{SafeTensorError, TensorView};
use safetensors::{Dtype, SafeTensors};

use crate::graph::NodeType;
use crate::{Error, HeteroGraph, Result};

mod features_only;
pub use features_only::SELF_RELATION;

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

    /// The whole file's bytes (the dataset is valid). Each tensor's bytes
    /// are made while safetensors copies it into the file image (borrowed
    /// outright for features on a little-endian host), so the peak is the
    /// file plus one tensor.
    fn to_bytes(&self, path: &Path) -> Result<Vec<u8>> {
        let mut tensors: Vec<(String, Lazy<'_>)> = Vec::new();
        let mut num_classes = serde_json::Map::new();
        for (i, t) in self.node_types.iter().enumerate() {
            let n = t.nodes;
            if let Some(x) = &self.features[i] {
                let (dtype, payload) = match x {
                    Features::F32 { data, .. } => (Dtype::F32, Payload::F32(data)),
                    Features::Bf16 { data, .. } => (Dtype::BF16, Payload::Bf16(data)),
                    Features::F16 { data, .. } => (Dtype::F16, Payload::F16(data)),
                };
                tensors.push((
                    format!("{}.x", t.name),
                    Lazy::new(dtype, vec![n, x.dim()], payload),
                ));
            }
            match &self.targets[i] {
                Some(Targets::Classes { labels, classes }) => {
                    tensors.push((
                        format!("{}.y", t.name),
                        Lazy::new(Dtype::I64, vec![n], Payload::I64(labels, &[])),
                    ));
                    num_classes.insert(t.name.clone(), (*classes).into());
                }
                Some(Targets::Values { data, dim }) => tensors.push((
                    format!("{}.y", t.name),
                    Lazy::new(Dtype::F32, vec![n, *dim], Payload::F32(data)),
                )),
                None => {}
            }
            for (mask, ids) in self.splits[i].named() {
                if !ids.is_empty() {
                    tensors.push((
                        format!("{}.{mask}", t.name),
                        Lazy::new(Dtype::BOOL, vec![n], Payload::Mask(n, ids)),
                    ));
                }
            }
        }
        for (r, rel) in self.relations.iter().enumerate() {
            tensors.push((
                format!("{}.edge_index", self.relation_key(r)),
                Lazy::new(
                    Dtype::I64,
                    vec![2, rel.src.len()],
                    Payload::I64(&rel.src, &rel.dst),
                ),
            ));
        }
        let mut meta = HashMap::new();
        meta.insert("format".to_string(), FORMAT.to_string());
        meta.insert(
            "node_types".to_string(),
            serde_json::Value::from(self.type_names()).to_string(),
        );
        let edge_types: Vec<serde_json::Value> = self
            .relations
            .iter()
            .map(|r| {
                serde_json::Value::from(vec![
                    self.node_types[r.src_type].name.as_str(),
                    r.name.as_str(),
                    self.node_types[r.dst_type].name.as_str(),
                ])
            })
            .collect();
        meta.insert(
            "edge_types".to_string(),
            serde_json::Value::Array(edge_types).to_string(),
        );
        let num_nodes: serde_json::Map<String, serde_json::Value> = self
            .node_types
            .iter()
            .map(|t| (t.name.clone(), t.nodes.into()))
            .collect();
        meta.insert(
            "num_nodes".to_string(),
            serde_json::Value::Object(num_nodes).to_string(),
        );
        if !num_classes.is_empty() {
            meta.insert(
                "num_classes".to_string(),
                serde_json::Value::Object(num_classes).to_string(),
            );
        }
        safetensors::serialize(tensors, Some(meta))
            .map_err(|e| err(Some(path), "header", format!("cannot write: {e}")))
    }
}

/// Creates `dir/.<name>.<pid>.<k>.tmp` (a new file; `k` counts up past
/// names that exist), with the permissions a new file gets.
fn create_temp(dir: &Path, name: &str) -> Result<(PathBuf, std::fs::File)> {
    let pid = std::process::id();
    let mut k = 0u32;
    loop {
        let tmp = dir.join(format!(".{name}.{pid}.{k}.tmp"));
        match std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&tmp)
        {
            Ok(f) => return Ok((tmp, f)),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists && k < 1000 => k += 1,
            Err(e) => return Err(io_err(&tmp, "create", e)),
        }
    }
}

/// What a tensor of the writer holds, encoded to little-endian bytes
/// only when safetensors copies it.
#[derive(Debug)]
enum Payload<'a> {
    F32(&'a [f32]),
    Bf16(&'a [bf16]),
    F16(&'a [f16]),
    /// One or two rows of ids as I64 (`edge_index`: src then dst).
    I64(&'a [u32], &'a [u32]),
    /// A BOOL mask of `n` nodes, true at the ids.
    Mask(usize, &'a [u32]),
}

#[derive(Debug)]
struct Lazy<'a> {
    dtype: Dtype,
    shape: Vec<usize>,
    payload: Payload<'a>,
}

impl<'a> Lazy<'a> {
    fn new(dtype: Dtype, shape: Vec<usize>, payload: Payload<'a>) -> Lazy<'a> {
        Lazy {
            dtype,
            shape,
            payload,
        }
    }
}

fn floats<T: Element>(data: &[T], le: impl Fn(&T) -> Vec<u8>) -> Cow<'_, [u8]> {
    if cfg!(target_endian = "little") {
        Cow::Borrowed(rtx_backend::bytes_of(data))
    } else {
        Cow::Owned(data.iter().flat_map(le).collect())
    }
}

impl safetensors::View for Lazy<'_> {
    fn dtype(&self) -> Dtype {
        self.dtype
    }

    fn shape(&self) -> &[usize] {
        &self.shape
    }

    fn data(&self) -> Cow<'_, [u8]> {
        match self.payload {
            Payload::F32(d) => floats(d, |v| v.to_le_bytes().to_vec()),
            Payload::Bf16(d) => floats(d, |v| v.to_le_bytes().to_vec()),
            Payload::F16(d) => floats(d, |v| v.to_le_bytes().to_vec()),
            Payload::I64(a, b) => Cow::Owned(
                a.iter()
                    .chain(b)
                    .flat_map(|&v| i64::from(v).to_le_bytes())
                    .collect(),
            ),
            Payload::Mask(n, ids) => {
                let mut m = vec![0u8; n];
                for &i in ids {
                    m[i as usize] = 1;
                }
                Cow::Owned(m)
            }
        }
    }

    fn data_len(&self) -> usize {
        match self.payload {
            Payload::F32(d) => 4 * d.len(),
            Payload::Bf16(d) => 2 * d.len(),
            Payload::F16(d) => 2 * d.len(),
            Payload::I64(a, b) => 8 * (a.len() + b.len()),
            Payload::Mask(n, _) => n,
        }
    }
}

/// Parses and checks a whole file's bytes.
fn parse(path: &Path, bytes: &[u8]) -> Result<Dataset> {
    let p = Some(path);
    let st = SafeTensors::deserialize(bytes).map_err(|e| {
        let (key, msg) = diagnose(bytes, &e);
        err(p, key, msg)
    })?;
    let (_, header) = SafeTensors::read_metadata(bytes).map_err(|e| {
        let (key, msg) = diagnose(bytes, &e);
        err(p, key, msg)
    })?;
    let Some(meta) = header.metadata() else {
        return Err(err(
            p,
            "__metadata__",
            format!("missing: an {FORMAT} file has format, node_types, edge_types and num_nodes"),
        ));
    };
    let get = |k: &str| {
        meta.get(k).ok_or_else(|| {
            err(
                p,
                format!("__metadata__.{k}"),
                format!(
                    "missing (an {FORMAT} file has format, node_types, edge_types and num_nodes)"
                ),
            )
        })
    };
    let format = get("format")?;
    if format != FORMAT {
        return Err(err(
            p,
            "__metadata__.format",
            format!("{format:?}: this reader knows {FORMAT:?}"),
        ));
    }
    let names: Vec<String> = json(p, "node_types", get("node_types")?, "a JSON list of names")?;
    for (i, n) in names.iter().enumerate() {
        check_name(p, "__metadata__.node_types", "node type", n)?;
        if names[..i].contains(n) {
            return Err(err(
                p,
                "__metadata__.node_types",
                format!("node type {n:?} is listed twice"),
            ));
        }
    }
    let edge_types: Vec<[String; 3]> = json(
        p,
        "edge_types",
        get("edge_types")?,
        "a JSON list of [src, rel, dst] triples",
    )?;
    let mut rel_types = Vec::with_capacity(edge_types.len());
    for (i, [s, r, d]) in edge_types.iter().enumerate() {
        let key = "__metadata__.edge_types";
        let idx = |t: &String| {
            names.iter().position(|n| n == t).ok_or_else(|| {
                err(
                    p,
                    key,
                    format!(
                        "edge type [{s:?}, {r:?}, {d:?}]: node type {t:?} is not in node_types {names:?}"
                    ),
                )
            })
        };
        let (si, di) = (idx(s)?, idx(d)?);
        check_name(p, key, "relation name", r)?;
        if edge_types[..i].contains(&edge_types[i]) {
            return Err(err(
                p,
                key,
                format!("edge type [{s:?}, {r:?}, {d:?}] is listed twice"),
            ));
        }
        rel_types.push((si, di));
    }
    let num_nodes = json_counts(p, "num_nodes", get("num_nodes")?)?;
    let mut nodes = Vec::with_capacity(names.len());
    for n in &names {
        let Some(&(_, c)) = num_nodes.iter().find(|(k, _)| k == n) else {
            return Err(err(
                p,
                "__metadata__.num_nodes",
                format!("no count for node type {n:?}"),
            ));
        };
        if c > u64::from(u32::MAX) {
            return Err(err(
                p,
                "__metadata__.num_nodes",
                format!(
                    "{n:?} has {c} nodes: node ids are u32, at most {} nodes per type",
                    u32::MAX
                ),
            ));
        }
        nodes.push(c as usize);
    }
    for (k, _) in &num_nodes {
        if !names.contains(k) {
            return Err(err(
                p,
                "__metadata__.num_nodes",
                format!("count for {k:?}, which is not in node_types {names:?}"),
            ));
        }
    }
    let num_classes = match meta.get("num_classes") {
        Some(s) => json_counts(p, "num_classes", s)?,
        None => Vec::new(),
    };
    for (k, _) in &num_classes {
        if !names.contains(k) {
            return Err(err(
                p,
                "__metadata__.num_classes",
                format!("class count for {k:?}, which is not in node_types {names:?}"),
            ));
        }
    }

    let nt = names.len();
    let mut features: Vec<Option<Features>> = vec![None; nt];
    let mut targets: Vec<Option<Targets>> = vec![None; nt];
    let mut splits = vec![Splits::default(); nt];
    let mut edges: Vec<Option<(Vec<u32>, Vec<u32>)>> = vec![None; edge_types.len()];
    let mut keys = st.names();
    keys.sort_unstable();
    for key in keys {
        let view = st
            .tensor(key)
            .map_err(|e| err(p, key, format!("cannot read: {e}")))?;
        let Some((prefix, attr)) = key.rsplit_once('.') else {
            return Err(err(
                p,
                key,
                "not a <type>.<attribute> or <src>__<rel>__<dst>.edge_index key",
            ));
        };
        if attr == "edge_index" {
            let r = edge_types
                .iter()
                .position(|[s, r, d]| prefix == format!("{s}__{r}__{d}"))
                .ok_or_else(|| {
                    err(
                        p,
                        key,
                        format!(
                            "edge type {prefix:?} is not in the metadata's edge_types {edge_types:?}"
                        ),
                    )
                })?;
            edges[r] = Some(edge_index(p, key, &view)?);
            continue;
        }
        let t = names.iter().position(|n| n == prefix).ok_or_else(|| {
            err(
                p,
                key,
                format!("node type {prefix:?} is not in the metadata's node_types {names:?}"),
            )
        })?;
        let n = nodes[t];
        match attr {
            "x" => features[t] = Some(read_features(p, key, &view, n)?),
            "y" => {
                let classes = num_classes
                    .iter()
                    .find(|(k, _)| k == prefix)
                    .map(|&(_, c)| c);
                targets[t] = Some(read_targets(p, key, &view, n, classes)?);
            }
            "train_mask" => splits[t].train = read_mask(p, key, &view, n)?,
            "val_mask" => splits[t].val = read_mask(p, key, &view, n)?,
            "test_mask" => splits[t].test = read_mask(p, key, &view, n)?,
            _ => {
                return Err(err(
                    p,
                    key,
                    format!("unknown attribute {attr:?}: want one of {NODE_ATTRS:?} or edge_index"),
                ));
            }
        }
    }
    for (k, _) in &num_classes {
        let t = names.iter().position(|n| n == k).unwrap_or(0);
        if !matches!(targets[t], Some(Targets::Classes { .. })) {
            return Err(err(
                p,
                "__metadata__.num_classes",
                format!("class count for {k:?}, but {k}.y is not integer class labels"),
            ));
        }
    }
    let mut relations = Vec::with_capacity(edge_types.len());
    for (r, ((si, di), e)) in rel_types.into_iter().zip(edges).enumerate() {
        let [s, name, d] = &edge_types[r];
        let Some((src, dst)) = e else {
            return Err(err(
                p,
                format!("{s}__{name}__{d}.edge_index"),
                "missing: the metadata lists this edge type (a relation with no edges has edge_index [2, 0])",
            ));
        };
        relations.push(DatasetRelation {
            src_type: si,
            name: name.clone(),
            dst_type: di,
            src,
            dst,
        });
    }
    let dataset = Dataset {
        node_types: names
            .into_iter()
            .zip(nodes)
            .map(|(name, nodes)| NodeType { name, nodes })
            .collect(),
        relations,
        features,
        targets,
        splits,
    };
    dataset.validate_at(p)?;
    Ok(dataset)
}

fn json<T: serde::de::DeserializeOwned>(
    p: Option<&Path>,
    entry: &str,
    s: &str,
    want: &str,
) -> Result<T> {
    serde_json::from_str(s).map_err(|e| {
        err(
            p,
            format!("__metadata__.{entry}"),
            format!("{s:?} is not {want}: {e}"),
        )
    })
}

/// A JSON object of name -> non-negative integer, in the file's order,
/// duplicate names an error.
fn json_counts(p: Option<&Path>, entry: &str, s: &str) -> Result<Vec<(String, u64)>> {
    struct Counts(Vec<(String, u64)>);
    impl<'de> serde::Deserialize<'de> for Counts {
        fn deserialize<D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
            struct V;
            impl<'de> serde::de::Visitor<'de> for V {
                type Value = Counts;
                fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                    f.write_str("a JSON object of name -> non-negative integer")
                }
                fn visit_map<A: serde::de::MapAccess<'de>>(
                    self,
                    mut m: A,
                ) -> std::result::Result<Counts, A::Error> {
                    let mut out: Vec<(String, u64)> = Vec::new();
                    while let Some((k, v)) = m.next_entry::<String, u64>()? {
                        if out.iter().any(|(o, _)| *o == k) {
                            return Err(serde::de::Error::custom(format!("{k:?} is listed twice")));
                        }
                        out.push((k, v));
                    }
                    Ok(Counts(out))
                }
            }
            d.deserialize_map(V)
        }
    }
    json::<Counts>(p, entry, s, "a JSON object of name -> non-negative integer").map(|c| c.0)
}

/// Little-endian integers of any integer dtype, widened to `i128`.
fn ints<'a>(view: &'a TensorView<'_>) -> Option<Box<dyn Iterator<Item = i128> + 'a>> {
    let d = view.data();
    Some(match view.dtype() {
        Dtype::I64 => Box::new(
            d.chunks_exact(8)
                .map(|c| i128::from(i64::from_le_bytes(c.try_into().unwrap_or_default()))),
        ),
        Dtype::U64 => Box::new(
            d.chunks_exact(8)
                .map(|c| i128::from(u64::from_le_bytes(c.try_into().unwrap_or_default()))),
        ),
        Dtype::I32 => Box::new(
            d.chunks_exact(4)
                .map(|c| i128::from(i32::from_le_bytes(c.try_into().unwrap_or_default()))),
        ),
        Dtype::U32 => Box::new(
            d.chunks_exact(4)
                .map(|c| i128::from(u32::from_le_bytes(c.try_into().unwrap_or_default()))),
        ),
        Dtype::I16 => Box::new(
            d.chunks_exact(2)
                .map(|c| i128::from(i16::from_le_bytes(c.try_into().unwrap_or_default()))),
        ),
        Dtype::U16 => Box::new(
            d.chunks_exact(2)
                .map(|c| i128::from(u16::from_le_bytes(c.try_into().unwrap_or_default()))),
        ),
        Dtype::I8 => Box::new(d.iter().map(|&b| i128::from(b as i8))),
        Dtype::U8 => Box::new(d.iter().map(|&b| i128::from(b))),
        _ => return None,
    })
}

/// Integer ids as `u32`: a negative value or one past `u32::MAX` is an
/// error naming its position (`what(position)`).
fn ids(
    p: Option<&Path>,
    key: &str,
    vals: impl Iterator<Item = i128>,
    cap: usize,
    what: impl Fn(usize) -> String,
) -> Result<Vec<u32>> {
    let mut out = Vec::with_capacity(cap);
    for (i, v) in vals.enumerate() {
        let Ok(u) = u32::try_from(v) else {
            let why = if v < 0 { "negative" } else { "past u32::MAX" };
            return Err(err(p, key, format!("{} is {v}: {why}", what(i))));
        };
        out.push(u);
    }
    Ok(out)
}

fn shape_str(s: &[usize]) -> String {
    format!("{s:?}")
}

fn edge_index(p: Option<&Path>, key: &str, view: &TensorView<'_>) -> Result<(Vec<u32>, Vec<u32>)> {
    if !matches!(view.dtype(), Dtype::I64 | Dtype::I32) {
        return Err(err(
            p,
            key,
            format!("dtype {:?}: edge_index must be I64 or I32", view.dtype()),
        ));
    }
    let shape = view.shape();
    let [2, e] = shape[..] else {
        return Err(err(
            p,
            key,
            format!("shape {}: edge_index must be [2, E]", shape_str(shape)),
        ));
    };
    let all = ids(p, key, ints(view).into_iter().flatten(), 2 * e, |i| {
        format!(
            "edge {}'s {}",
            i % e.max(1),
            if i < e {
                "source (row 0)"
            } else {
                "destination (row 1)"
            }
        )
    })?;
    let dst = all[e..].to_vec();
    let mut src = all;
    src.truncate(e);
    Ok((src, dst))
}

fn read_features(p: Option<&Path>, key: &str, view: &TensorView<'_>, n: usize) -> Result<Features> {
    let shape = view.shape();
    let [rows, dim] = shape[..] else {
        return Err(err(
            p,
            key,
            format!(
                "shape {}: features must be [num_nodes, features]",
                shape_str(shape)
            ),
        ));
    };
    if rows != n {
        return Err(err(
            p,
            key,
            format!(
                "shape {}: {rows} rows, but num_nodes is {n}",
                shape_str(shape)
            ),
        ));
    }
    let d = view.data();
    let half = |c: &[u8]| u16::from_le_bytes([c[0], c[1]]);
    Ok(match view.dtype() {
        Dtype::F32 => Features::F32 {
            data: d
                .chunks_exact(4)
                .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
                .collect(),
            dim,
        },
        Dtype::BF16 => Features::Bf16 {
            data: d
                .chunks_exact(2)
                .map(|c| bf16::from_bits(half(c)))
                .collect(),
            dim,
        },
        Dtype::F16 => Features::F16 {
            data: d.chunks_exact(2).map(|c| f16::from_bits(half(c))).collect(),
            dim,
        },
        other => {
            return Err(err(
                p,
                key,
                format!("dtype {other:?}: features must be F32, BF16 or F16"),
            ));
        }
    })
}

fn read_targets(
    p: Option<&Path>,
    key: &str,
    view: &TensorView<'_>,
    n: usize,
    classes: Option<u64>,
) -> Result<Targets> {
    let shape = view.shape();
    if view.dtype() == Dtype::F32 {
        let dim = match shape[..] {
            [rows] if rows == n => 1,
            [rows, dim] if rows == n && dim > 0 => dim,
            _ => {
                return Err(err(
                    p,
                    key,
                    format!(
                        "shape {}: F32 targets must be [num_nodes, d] with d >= 1 (num_nodes is {n})",
                        shape_str(shape)
                    ),
                ));
            }
        };
        let data = view
            .data()
            .chunks_exact(4)
            .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
            .collect();
        return Ok(Targets::Values { data, dim });
    }
    let Some(vals) = ints(view) else {
        return Err(err(
            p,
            key,
            format!(
                "dtype {:?}: targets must be F32 values or integer class labels (I64, I32, U8, ...)",
                view.dtype()
            ),
        ));
    };
    match shape[..] {
        [rows] | [rows, 1] if rows == n => {}
        _ => {
            return Err(err(
                p,
                key,
                format!(
                    "shape {}: class labels must be [num_nodes] (num_nodes is {n})",
                    shape_str(shape)
                ),
            ));
        }
    }
    let labels = ids(p, key, vals, n, |i| format!("the label of node {i}"))?;
    let classes = match classes {
        Some(c) => usize::try_from(c).unwrap_or(usize::MAX),
        None => labels.iter().max().map_or(0, |&m| m as usize + 1),
    };
    Ok(Targets::Classes { labels, classes })
}

fn read_mask(p: Option<&Path>, key: &str, view: &TensorView<'_>, n: usize) -> Result<Vec<u32>> {
    if !matches!(view.dtype(), Dtype::BOOL | Dtype::U8) {
        return Err(err(
            p,
            key,
            format!("dtype {:?}: masks must be BOOL or U8", view.dtype()),
        ));
    }
    let shape = view.shape();
    if shape != [n] {
        return Err(err(
            p,
            key,
            format!(
                "shape {}: a mask must be [num_nodes] (num_nodes is {n})",
                shape_str(shape)
            ),
        ));
    }
    let mut out = Vec::new();
    for (i, &b) in view.data().iter().enumerate() {
        match b {
            0 => {}
            1 => out.push(i as u32),
            v => {
                return Err(err(
                    p,
                    key,
                    format!("value {v} at node {i}: a mask holds 0 or 1"),
                ));
            }
        }
    }
    Ok(out)
}

/// The key and message for an error of the safetensors reader: the
/// reader's own message, made specific (which tensor's sizes lie) by a
/// second look at the header with serde_json.
fn diagnose(bytes: &[u8], e: &SafeTensorError) -> (String, String) {
    let total = bytes.len();
    let header_len = bytes
        .get(..8)
        .map(|b| u64::from_le_bytes(b.try_into().unwrap_or_default()));
    let header = || {
        let n = usize::try_from(header_len?).ok()?;
        let text = std::str::from_utf8(bytes.get(8..8usize.checked_add(n)?)?).ok()?;
        let v: serde_json::Map<String, serde_json::Value> = serde_json::from_str(text).ok()?;
        Some((n, v))
    };
    let h = "header".to_string();
    match e {
        SafeTensorError::HeaderTooSmall => (
            h,
            format!("{total}-byte file: shorter than the 8-byte header length (truncated, or not safetensors)"),
        ),
        SafeTensorError::InvalidHeaderLength => (
            h,
            format!(
                "the header length says {} bytes but only {} follow it: truncated, or the length lies",
                header_len.unwrap_or(0),
                total.saturating_sub(8)
            ),
        ),
        SafeTensorError::HeaderTooLarge => (
            h,
            format!(
                "the header length {} is past safetensors' 100 MB limit (not a safetensors file?)",
                header_len.unwrap_or(0)
            ),
        ),
        SafeTensorError::InvalidHeader(u) => (h, format!("the header is not UTF-8: {u}")),
        SafeTensorError::InvalidHeaderDeserialization(j) => {
            (h, format!("the header is not a safetensors JSON header: {j}"))
        }
        SafeTensorError::InvalidOffset(name) => (
            name.clone(),
            "data_offsets do not start where the previous tensor's end (a gap or an overlap): the header's sizes lie"
                .to_string(),
        ),
        other => {
            // Find the tensor whose sizes do not fit, or the one that runs
            // past the end of the file.
            let Some((n, map)) = header() else {
                return (h, other.to_string());
            };
            let data_len = total.saturating_sub(8 + n);
            let mut entries: Vec<(String, Dtype, Vec<usize>, usize, usize)> = map
                .into_iter()
                .filter(|(k, _)| k != "__metadata__")
                .filter_map(|(k, v)| {
                    let info: safetensors::tensor::TensorInfo = serde_json::from_value(v).ok()?;
                    Some((k, info.dtype, info.shape, info.data_offsets.0, info.data_offsets.1))
                })
                .collect();
            entries.sort_by_key(|e| (e.3, e.4));
            for (k, dtype, shape, s, end) in &entries {
                let need = shape
                    .iter()
                    .try_fold(1usize, |a, &b| a.checked_mul(b))
                    .and_then(|c| c.checked_mul(dtype.bitsize()))
                    .map(|b| b / 8);
                if need != end.checked_sub(*s) {
                    return (
                        k.clone(),
                        format!(
                            "shape {} of {dtype:?} needs {} bytes but data_offsets [{s}, {end}] hold {}: the header's sizes lie",
                            shape_str(shape),
                            need.map_or("too many".to_string(), |b| b.to_string()),
                            end.saturating_sub(*s)
                        ),
                    );
                }
            }
            if let Some((k, _, _, _, end)) = entries.last() {
                if *end > data_len {
                    return (
                        k.clone(),
                        format!(
                            "its data ends at byte {end} of the data section, but the file has {data_len}: truncated"
                        ),
                    );
                }
                if *end < data_len {
                    return (
                        h,
                        format!(
                            "{} bytes after the last tensor's data: the header's sizes lie, or the file has trailing bytes",
                            data_len - end
                        ),
                    );
                }
            }
            (h, other.to_string())
        }
    }
}

/// Writes `bytes` to `path` all or nothing: to a temporary file in the same
/// directory, synced to disk, then renamed over `path` (and the directory
/// synced, where the file system allows), so `path` holds either its old
/// contents or all of the new ones, whenever the process stops.
///
/// # Errors
/// [`Error::Io`] naming the path and what failed.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<()> {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    let name = path
        .file_name()
        .map_or_else(|| "file".into(), |n| n.to_string_lossy().into_owned());
    let (tmp, mut file) = create_temp(dir, &name)?;
    let written = file
        .write_all(bytes)
        .and_then(|()| file.sync_all())
        .map_err(|e| io_err(&tmp, "write", e))
        .and_then(|()| {
            drop(file);
            std::fs::rename(&tmp, path)
                .map_err(|e| io_err(path, &format!("rename {} to", tmp.display()), e))
        });
    if let Err(e) = written {
        let _ = std::fs::remove_file(&tmp);
        return Err(e);
    }
    // The rename is durable once the directory is synced (best effort:
    // some file systems refuse to sync a directory).
    if let Ok(d) = std::fs::File::open(dir) {
        let _ = d.sync_all();
    }
    Ok(())
}
