//! Reading a dataset file: every tensor and metadata entry checked against
//! the format, each error naming the file, the key and what is wrong.

use std::fmt;
use std::path::Path;

use half::{bf16, f16};

use safetensors::tensor::{SafeTensorError, TensorView};
use safetensors::{Dtype, SafeTensors};

use super::{
    Dataset, DatasetRelation, FORMAT, Features, NODE_ATTRS, Splits, Targets, check_name, err,
};
use crate::Result;
use crate::graph::NodeType;

/// Parses and checks a whole file's bytes.
pub(super) fn parse(path: &Path, bytes: &[u8]) -> Result<Dataset> {
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
