//! Writing a dataset: its tensors encoded as the file is made (features in
//! their precision, labels and edge indices as I64, masks as BOOL), and
//! the all-or-nothing file write checkpoints and predictions share.

use std::borrow::Cow;
use std::collections::HashMap;
use std::io::Write;
use std::path::{Path, PathBuf};

use half::{bf16, f16};
use rtx_backend::Element;
use safetensors::Dtype;

use super::{Dataset, FORMAT, Features, Targets, err, io_err};
use crate::Result;

impl Dataset {
    /// The whole file's bytes (the dataset is valid). Each tensor's bytes
    /// are made while safetensors copies it into the file image (borrowed
    /// outright for features on a little-endian host), so the peak is the
    /// file plus one tensor.
    pub(super) fn to_bytes(&self, path: &Path) -> Result<Vec<u8>> {
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
pub(super) fn create_temp(dir: &Path, name: &str) -> Result<(PathBuf, std::fs::File)> {
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

/// Writes `bytes` to `path` all or nothing: to a temporary file in the same
/// directory, synced to disk, then renamed over `path` (and the directory
/// synced, where the file system allows), so `path` holds either its old
/// contents or all of the new ones, whenever the process stops.
///
/// # Errors
/// [`Error::Io`](crate::Error::Io) naming the path and what failed.
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
