//! The dataset format (`rtx-hetero/1`): valid files load (bytes written by
//! hand here, not by the writer), the writer round-trips, and every kind of
//! bad input is a clear error naming the key and the problem.

use std::path::{Path, PathBuf};

use rtx_backend::prelude::*;
use rtx_backend_cpu::CpuBackend;
use rtx_gnn::{
    Dataset, DatasetRelation, Features, HetGat, HetGatConfig, NodeType, Splits, Targets,
};
use serde_json::{Value, json};

fn f32s(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}
fn i64s(v: &[i64]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}
fn i32s(v: &[i32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

/// A safetensors file built by hand: `__metadata__` entries and tensors
/// `(key, dtype, shape, bytes)`, laid out in order.
#[derive(Clone)]
struct Raw {
    meta: Vec<(String, String)>,
    tensors: Vec<(String, String, Vec<usize>, Vec<u8>)>,
}

impl Raw {
    /// paper (4 nodes, 2 f32 features, 3 classes, all three masks) and
    /// author (3 nodes, nothing); author-writes-paper (i64, 3 edges) and
    /// paper-cites-paper (i32, 2 edges).
    fn base() -> Raw {
        Raw {
            meta: vec![],
            tensors: vec![],
        }
        .meta("format", "rtx-hetero/1")
        .meta("node_types", r#"["paper", "author"]"#)
        .meta(
            "edge_types",
            r#"[["author", "writes", "paper"], ["paper", "cites", "paper"]]"#,
        )
        .meta("num_nodes", r#"{"paper": 4, "author": 3}"#)
        .meta("num_classes", r#"{"paper": 3}"#)
        .tensor(
            "paper.x",
            "F32",
            &[4, 2],
            f32s(&[0.5, -1.0, 2.0, 0.25, -0.5, 1.5, 3.0, -2.0]),
        )
        .tensor("paper.y", "I64", &[4], i64s(&[0, 2, 1, 2]))
        .tensor("paper.train_mask", "BOOL", &[4], vec![1, 1, 0, 0])
        .tensor("paper.val_mask", "U8", &[4], vec![0, 0, 1, 0])
        .tensor("paper.test_mask", "BOOL", &[4], vec![0, 0, 0, 1])
        .tensor(
            "author__writes__paper.edge_index",
            "I64",
            &[2, 3],
            i64s(&[0, 1, 2, 0, 0, 3]),
        )
        .tensor(
            "paper__cites__paper.edge_index",
            "I32",
            &[2, 2],
            i32s(&[1, 2, 0, 1]),
        )
    }

    fn meta(mut self, k: &str, v: &str) -> Raw {
        self.meta.retain(|(o, _)| o != k);
        self.meta.push((k.into(), v.into()));
        self
    }

    fn no_meta(mut self, k: &str) -> Raw {
        self.meta.retain(|(o, _)| o != k);
        self
    }

    fn tensor(mut self, key: &str, dtype: &str, shape: &[usize], bytes: Vec<u8>) -> Raw {
        if let Some(t) = self.tensors.iter_mut().find(|t| t.0 == key) {
            *t = (key.into(), dtype.into(), shape.to_vec(), bytes);
        } else {
            self.tensors
                .push((key.into(), dtype.into(), shape.to_vec(), bytes));
        }
        self
    }

    fn without(mut self, key: &str) -> Raw {
        self.tensors.retain(|t| t.0 != key);
        self
    }

    /// The header JSON (with `__metadata__` unless empty) and the data.
    fn header_and_data(&self) -> (String, Vec<u8>) {
        let mut header = serde_json::Map::new();
        if !self.meta.is_empty() {
            let m: serde_json::Map<String, Value> = self
                .meta
                .iter()
                .map(|(k, v)| (k.clone(), Value::String(v.clone())))
                .collect();
            header.insert("__metadata__".into(), Value::Object(m));
        }
        let mut data = Vec::new();
        for (k, dtype, shape, bytes) in &self.tensors {
            let start = data.len();
            data.extend_from_slice(bytes);
            header.insert(
                k.clone(),
                json!({"dtype": dtype, "shape": shape, "data_offsets": [start, data.len()]}),
            );
        }
        (Value::Object(header).to_string(), data)
    }

    fn bytes(&self) -> Vec<u8> {
        let (header, data) = self.header_and_data();
        raw_file(&header, &data)
    }
}

/// `8-byte LE header length + header (space-padded to 8) + data`.
fn raw_file(header: &str, data: &[u8]) -> Vec<u8> {
    let mut h = header.as_bytes().to_vec();
    while !h.len().is_multiple_of(8) {
        h.push(b' ');
    }
    let mut out = (h.len() as u64).to_le_bytes().to_vec();
    out.extend(h);
    out.extend_from_slice(data);
    out
}

fn file_with(bytes: &[u8]) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("data.safetensors");
    std::fs::write(&path, bytes).unwrap();
    (dir, path)
}

fn load(bytes: &[u8]) -> rtx_gnn::Result<Dataset> {
    let (_dir, path) = file_with(bytes);
    Dataset::load(&path)
}

/// Loading fails; the message names the file, and contains every `want`.
#[track_caller]
fn load_err(bytes: &[u8], want: &[&str]) -> String {
    let (_dir, path) = file_with(bytes);
    let e = Dataset::load(&path).expect_err("the file must be refused");
    let msg = e.to_string();
    assert!(
        matches!(e, rtx_gnn::Error::Dataset { .. }),
        "not a dataset error: {msg}"
    );
    assert!(
        msg.contains(&path.display().to_string()),
        "the error does not name the file: {msg}"
    );
    for w in want {
        assert!(msg.contains(w), "{msg:?} lacks {w:?}");
    }
    msg
}

fn base_dataset() -> Dataset {
    Dataset {
        node_types: vec![
            NodeType {
                name: "paper".into(),
                nodes: 4,
            },
            NodeType {
                name: "author".into(),
                nodes: 3,
            },
        ],
        relations: vec![
            DatasetRelation {
                src_type: 1,
                name: "writes".into(),
                dst_type: 0,
                src: vec![0, 1, 2],
                dst: vec![0, 0, 3],
            },
            DatasetRelation {
                src_type: 0,
                name: "cites".into(),
                dst_type: 0,
                src: vec![1, 2],
                dst: vec![0, 1],
            },
        ],
        features: vec![
            Some(Features::F32 {
                data: vec![0.5, -1.0, 2.0, 0.25, -0.5, 1.5, 3.0, -2.0],
                dim: 2,
            }),
            None,
        ],
        targets: vec![
            Some(Targets::Classes {
                labels: vec![0, 2, 1, 2],
                classes: 3,
            }),
            None,
        ],
        splits: vec![
            Splits {
                train: vec![0, 1],
                val: vec![2],
                test: vec![3],
            },
            Splits::default(),
        ],
    }
}

// ---------------------------------------------------------------- valid files

#[test]
fn a_hand_written_file_loads_with_every_field() {
    let d = load(&Raw::base().bytes()).unwrap();
    assert_eq!(d, base_dataset());
    assert_eq!(d.type_index("author").unwrap(), 1);
    assert_eq!(d.relation_key(0), "author__writes__paper");
    assert_eq!(d.relation_key(1), "paper__cites__paper");
    assert_eq!(d.require_train(0).unwrap(), &[0, 1]);
    let g = d.graph().unwrap();
    assert_eq!(g.edges(), 5);
    assert_eq!(g.relations()[0].name(), "writes");
    assert_eq!(g.relations()[0].src_type(), 1);
}

#[test]
fn the_writer_round_trips_and_writes_what_a_hand_reader_expects() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("out.safetensors");
    let d = base_dataset();
    d.save(&path).unwrap();
    assert_eq!(Dataset::load(&path).unwrap(), d);
    // The bytes: 8-byte length, then a JSON header with PyG's dtypes.
    let bytes = std::fs::read(&path).unwrap();
    let n = u64::from_le_bytes(bytes[..8].try_into().unwrap()) as usize;
    let header: Value = serde_json::from_slice(&bytes[8..8 + n]).unwrap();
    assert_eq!(header["paper.train_mask"]["dtype"], "BOOL");
    assert_eq!(header["paper.y"]["dtype"], "I64");
    assert_eq!(header["paper.x"]["shape"], json!([4, 2]));
    assert_eq!(header["author__writes__paper.edge_index"]["dtype"], "I64");
    assert_eq!(
        header["author__writes__paper.edge_index"]["shape"],
        json!([2, 3])
    );
    let meta = &header["__metadata__"];
    assert_eq!(meta["format"], "rtx-hetero/1");
    let types: Value = serde_json::from_str(meta["node_types"].as_str().unwrap()).unwrap();
    assert_eq!(types, json!(["paper", "author"]));
    let edges: Value = serde_json::from_str(meta["edge_types"].as_str().unwrap()).unwrap();
    assert_eq!(
        edges,
        json!([["author", "writes", "paper"], ["paper", "cites", "paper"]])
    );
    let nodes: Value = serde_json::from_str(meta["num_nodes"].as_str().unwrap()).unwrap();
    assert_eq!(nodes, json!({"paper": 4, "author": 3}));
    let classes: Value = serde_json::from_str(meta["num_classes"].as_str().unwrap()).unwrap();
    assert_eq!(classes, json!({"paper": 3}));
    // Saving over an existing file replaces it and leaves no temporary file.
    let mut d2 = d.clone();
    d2.splits[0].train = vec![1];
    d2.save(&path).unwrap();
    assert_eq!(Dataset::load(&path).unwrap(), d2);
    let names: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names, ["out.safetensors"]);
    // With the permissions of any new file (not a temporary file's 0600).
    let plain = dir.path().join("plain");
    std::fs::write(&plain, b"").unwrap();
    assert_eq!(
        std::fs::metadata(&path).unwrap().permissions(),
        std::fs::metadata(&plain).unwrap().permissions()
    );
}

#[test]
fn half_features_and_real_targets_round_trip_bit_for_bit() {
    use half::{bf16, f16};
    let xs = [0.5f32, -1.25, 3.0, 1e-3, -7.5, 0.1];
    let bf: Vec<bf16> = xs.iter().map(|&v| bf16::from_f32(v)).collect();
    let hf: Vec<f16> = xs.iter().map(|&v| f16::from_f32(v)).collect();
    let raw = Raw::base()
        .tensor(
            "paper.x",
            "BF16",
            &[4, 1],
            bf[..4]
                .iter()
                .flat_map(|v| v.to_bits().to_le_bytes())
                .collect(),
        )
        .tensor(
            "author.x",
            "F16",
            &[3, 2],
            hf.iter().flat_map(|v| v.to_bits().to_le_bytes()).collect(),
        )
        .no_meta("num_classes")
        .tensor("paper.y", "F32", &[4], f32s(&[1.0, -2.0, 0.5, 4.0]));
    let d = load(&raw.bytes()).unwrap();
    assert_eq!(
        d.features[0],
        Some(Features::Bf16 {
            data: bf[..4].to_vec(),
            dim: 1
        })
    );
    let x1 = d.features[1].as_ref().unwrap();
    assert_eq!((x1.dim(), x1.dtype_name()), (2, "F16"));
    assert_eq!(x1.to_elements::<f16>(), hf);
    assert_eq!(
        x1.to_f32(),
        hf.iter().map(|v| v.to_f32()).collect::<Vec<_>>()
    );
    assert_eq!(
        d.features[0].as_ref().unwrap().to_elements::<bf16>(),
        bf[..4]
    );
    assert_eq!(
        d.targets[0],
        Some(Targets::Values {
            data: vec![1.0, -2.0, 0.5, 4.0],
            dim: 1
        })
    );
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("h.safetensors");
    d.save(&path).unwrap();
    assert_eq!(Dataset::load(&path).unwrap(), d);
}

#[test]
fn integer_label_dtypes_and_shapes_all_load() {
    let labels = [0i64, 2, 1, 2];
    for (dtype, bytes) in [
        ("I32", i32s(&[0, 2, 1, 2])),
        ("U8", vec![0, 2, 1, 2]),
        (
            "I16",
            [0i16, 2, 1, 2]
                .iter()
                .flat_map(|v| v.to_le_bytes())
                .collect(),
        ),
        (
            "U64",
            [0u64, 2, 1, 2]
                .iter()
                .flat_map(|v| v.to_le_bytes())
                .collect(),
        ),
        ("I64", i64s(&labels)),
    ] {
        for shape in [&[4][..], &[4, 1]] {
            let d = load(
                &Raw::base()
                    .tensor("paper.y", dtype, shape, bytes.clone())
                    .bytes(),
            )
            .unwrap_or_else(|e| panic!("{dtype} {shape:?}: {e}"));
            assert_eq!(d.targets[0], base_dataset().targets[0], "{dtype}");
        }
    }
    // Without num_classes, the class count is the largest label + 1.
    let d = load(&Raw::base().no_meta("num_classes").bytes()).unwrap();
    assert_eq!(
        d.targets[0],
        Some(Targets::Classes {
            labels: vec![0, 2, 1, 2],
            classes: 3
        })
    );
    // With it, classes may go unused.
    let d = load(&Raw::base().meta("num_classes", r#"{"paper": 10}"#).bytes()).unwrap();
    assert_eq!(d.targets[0].as_ref().unwrap().out_features(), 10);
}

#[test]
fn an_empty_train_mask_loads_but_is_refused_where_training_needs_it() {
    let d = load(
        &Raw::base()
            .tensor("paper.train_mask", "BOOL", &[4], vec![0; 4])
            .bytes(),
    )
    .unwrap();
    assert!(d.splits[0].train.is_empty());
    let e = d.require_train(0).unwrap_err().to_string();
    assert!(
        e.contains("paper.train_mask") && e.contains("no training nodes"),
        "{e}"
    );
    // No mask at all: the same.
    let d = load(&Raw::base().without("paper.train_mask").bytes()).unwrap();
    let e = d.require_train(0).unwrap_err().to_string();
    assert!(e.contains("paper.train_mask"), "{e}");
    let e = d.require_train(1).unwrap_err().to_string();
    assert!(e.contains("author.train_mask"), "{e}");
    assert!(d.require_train(5).is_err());
    let e = d.require_targets(1).unwrap_err().to_string();
    assert!(e.contains("author.y"), "{e}");
}

#[test]
fn a_relation_with_no_edges_loads_and_trains_nothing_wrong() {
    let raw = Raw::base()
        .meta(
            "edge_types",
            r#"[["author", "writes", "paper"], ["paper", "cites", "paper"], ["paper", "rev_writes", "author"]]"#,
        )
        .tensor("paper__cites__paper.edge_index", "I64", &[2, 0], vec![])
        .tensor(
            "paper__rev_writes__author.edge_index",
            "I32",
            &[2, 3],
            i32s(&[0, 0, 3, 0, 1, 2]),
        )
        .tensor(
            "author.x",
            "F32",
            &[3, 2],
            f32s(&[1.0, 0.0, -1.0, 0.5, 0.25, 2.0]),
        );
    let d = load(&raw.bytes()).unwrap();
    assert!(d.relations[1].src.is_empty() && d.relations[1].dst.is_empty());
    let g = d.graph().unwrap();
    assert_eq!(g.relations()[1].edges(), 0);
    // Training on it: finite losses that go down, as with any graph.
    let b = CpuBackend::new();
    let config = HetGatConfig {
        in_features: vec![2, 2],
        heads: 2,
        channels: 3,
        layers: 2,
        negative_slope: 0.2,
        target: 0,
        ..HetGatConfig::harris()
    };
    let mut model = HetGat::<_, f32>::new(&b, &g, config, 7).unwrap();
    let x: Vec<_> = d
        .features
        .iter()
        .zip(&d.node_types)
        .map(|(f, t)| {
            let f = f.as_ref().unwrap();
            b.upload(&f.to_elements::<f32>(), &[t.nodes, f.dim()])
                .unwrap()
        })
        .collect();
    let losses: Vec<f32> = (0..5)
        .map(|_| model.train_step(&b, &g, &x, 1e-2).unwrap())
        .collect();
    assert!(losses.iter().all(|l| l.is_finite()), "{losses:?}");
    assert!(losses[4] < losses[0], "{losses:?}");
}

#[test]
fn a_node_type_with_no_nodes_loads() {
    let raw = Raw::base()
        .meta("node_types", r#"["paper", "author", "venue"]"#)
        .meta("num_nodes", r#"{"paper": 4, "author": 3, "venue": 0}"#)
        .meta(
            "edge_types",
            r#"[["author", "writes", "paper"], ["paper", "cites", "paper"], ["paper", "in", "venue"]]"#,
        )
        .tensor("venue.x", "F32", &[0, 5], vec![])
        .tensor("venue.train_mask", "BOOL", &[0], vec![])
        .tensor("venue.y", "I64", &[0], vec![])
        .tensor("paper__in__venue.edge_index", "I64", &[2, 0], vec![]);
    let d = load(&raw.bytes()).unwrap();
    assert_eq!(d.node_types[2].nodes, 0);
    assert_eq!(d.features[2].as_ref().unwrap().dim(), 5);
    assert_eq!(
        d.targets[2],
        Some(Targets::Classes {
            labels: vec![],
            classes: 0
        })
    );
    assert_eq!(d.relation_key(2), "paper__in__venue");
    d.graph().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("z.safetensors");
    d.save(&path).unwrap();
    assert_eq!(Dataset::load(&path).unwrap(), d);
}

/// A file written by `peers/rtx_data.py`'s `save` (safetensors.torch 0.8,
/// torch 2.11, PyG 2.8 on the GPU host) from a HeteroData built the PyG way:
/// float64 `x` (written as f32), bf16 `x`, `y` of shape `[50, 1]`, masks
/// sliced from one buffer, an int32 `edge_index`, a relation with no edges,
/// `ToUndirected`'s reverse relation.
#[test]
fn a_file_written_by_the_pyg_peer_loads() {
    // read at run time: a build moved or unpacked elsewhere finds the file
    let dir = std::env::var_os("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR");
    let path = Path::new(&dir).join("tests/data/pyg_written.safetensors");
    let d = Dataset::load(&path).unwrap();
    let names: Vec<_> = d
        .node_types
        .iter()
        .map(|t| (t.name.as_str(), t.nodes))
        .collect();
    assert_eq!(names, [("paper", 50), ("author", 20)]);
    let keys: Vec<_> = (0..d.relations.len())
        .map(|r| (d.relation_key(r), d.relations[r].src.len()))
        .collect();
    assert_eq!(
        keys,
        [
            ("author__writes__paper".to_string(), 80),
            ("paper__cites__paper".to_string(), 0),
            ("paper__rev_writes__author".to_string(), 80)
        ]
    );
    // ToUndirected's reverse is the forward relation reversed.
    assert_eq!(d.relations[2].src, d.relations[0].dst);
    assert_eq!(d.relations[2].dst, d.relations[0].src);
    let x: Vec<_> = d
        .features
        .iter()
        .map(|f| f.as_ref().map(|f| (f.dtype_name(), f.dim())))
        .collect();
    assert_eq!(x, [Some(("F32", 4)), Some(("BF16", 3))]);
    assert_eq!(d.targets[0].as_ref().unwrap().out_features(), 3);
    let s = &d.splits[0];
    assert_eq!(s.train, (0..30).collect::<Vec<u32>>());
    assert_eq!(s.val, (30..40).collect::<Vec<u32>>());
    assert_eq!(s.test, (40..50).collect::<Vec<u32>>());
    d.graph().unwrap();
}

// ------------------------------------------------------- the file's structure

#[test]
fn a_zero_byte_file_is_an_error() {
    load_err(&[], &["header", "0-byte file"]);
}

#[test]
fn a_missing_file_is_an_io_error_naming_the_path() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("nope.safetensors");
    let e = Dataset::load(&path).unwrap_err();
    assert!(matches!(e, rtx_gnn::Error::Io { .. }), "{e}");
    assert!(e.to_string().contains("nope.safetensors"), "{e}");
}

#[test]
fn truncated_files_are_errors() {
    let bytes = Raw::base().bytes();
    // Inside the 8-byte length.
    load_err(&bytes[..5], &["header", "5-byte file", "truncated"]);
    // Inside the header.
    load_err(&bytes[..40], &["header", "truncated, or the length lies"]);
    // Inside the data: the last tensor (by offset) runs past the end.
    load_err(
        &bytes[..bytes.len() - 3],
        &["paper__cites__paper.edge_index", "truncated"],
    );
    // Every cut is refused, none panics.
    for cut in 0..bytes.len() {
        assert!(load(&bytes[..cut]).is_err(), "cut at {cut} loaded");
    }
}

#[test]
fn headers_whose_sizes_lie_are_errors() {
    let raw = Raw::base();
    let (header, data) = raw.header_and_data();
    // A header length past the end of the file.
    let mut bytes = raw_file(&header, &data);
    let twice = bytes.len() as u64 * 2;
    bytes[..8].copy_from_slice(&twice.to_le_bytes());
    load_err(&bytes, &["header", "the length lies"]);
    // A header length of 100 GB.
    bytes[..8].copy_from_slice(&100_000_000_000u64.to_le_bytes());
    load_err(&bytes, &["header", "100 MB"]);
    // A shape that needs more bytes than its offsets hold.
    let lying = header.replace(r#""shape":[4,2]"#, r#""shape":[4,3]"#);
    assert_ne!(lying, header);
    load_err(
        &raw_file(&lying, &data),
        &["paper.x", "[4, 3]", "sizes lie"],
    );
    // Offsets that leave a gap.
    let gap = header.replace(r#""data_offsets":[0,32]"#, r#""data_offsets":[0,24]"#);
    assert_ne!(gap, header);
    load_err(&raw_file(&gap, &data), &["sizes lie"]);
    // Bytes past the last tensor.
    let mut long = raw_file(&header, &data);
    long.extend([0; 16]);
    load_err(&long, &["header", "16 bytes after the last tensor"]);
    // A shape whose byte count overflows.
    let huge = header.replace(r#""shape":[4,2]"#, r#""shape":[4294967296,4294967296]"#);
    assert_ne!(huge, header);
    load_err(
        &raw_file(&huge, &data),
        &["paper.x", "too many", "sizes lie"],
    );
    // Offsets past the end of the data.
    let past = header.replace(r#""data_offsets":[0,32]"#, r#""data_offsets":[0,40]"#);
    assert_ne!(past, header);
    load_err(&raw_file(&past, &data), &["paper.x"]);
    // Not JSON, JSON that is not an object, metadata that is not strings.
    load_err(&raw_file("{not json", &[]), &["header", "JSON"]);
    load_err(&raw_file("[1, 2]", &[]), &["header", "JSON"]);
    load_err(
        &raw_file(r#"{"__metadata__": {"num_nodes": {"paper": 4}}}"#, &[]),
        &["header", "JSON"],
    );
    // Not UTF-8.
    load_err(&raw_file("{\"\u{0}\"}", &[]), &["header"]);
    let mut bad = raw_file("{}", &[]);
    bad[8] = 0xff;
    load_err(&bad, &["header", "UTF-8"]);
}

/// Any single corrupted byte (header or data) loads or is an error: no
/// panic, and what loads is valid.
#[test]
fn corrupted_bytes_never_panic() {
    use rtx_backend::workload::splitmix64;
    let bytes = Raw::base().bytes();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("flip.safetensors");
    let (mut loaded, mut refused) = (0, 0);
    for k in 0..1500u64 {
        let mut b = bytes.clone();
        let r = splitmix64(77, k);
        let at = (r % b.len() as u64) as usize;
        b[at] = (r >> 32) as u8;
        std::fs::write(&path, &b).unwrap();
        match Dataset::load(&path) {
            Ok(d) => {
                d.validate().unwrap();
                loaded += 1;
            }
            Err(e) => {
                assert!(e.to_string().contains("flip.safetensors"), "{e}");
                refused += 1;
            }
        }
    }
    assert!(
        loaded > 0 && refused > 0,
        "{loaded} loaded, {refused} refused"
    );
}

// -------------------------------------------------------------------- dtypes

#[test]
fn wrong_dtypes_are_errors() {
    let cases: [(Raw, &[&str]); 5] = [
        (
            Raw::base().tensor("paper.x", "I64", &[4, 2], i64s(&[0; 8])),
            &["paper.x", "dtype I64", "F32, BF16 or F16"],
        ),
        (
            Raw::base().tensor(
                "author__writes__paper.edge_index",
                "F32",
                &[2, 3],
                f32s(&[0.0; 6]),
            ),
            &[
                "author__writes__paper.edge_index",
                "dtype F32",
                "I64 or I32",
            ],
        ),
        (
            Raw::base().tensor("paper.val_mask", "F32", &[4], f32s(&[0.0; 4])),
            &["paper.val_mask", "dtype F32", "BOOL or U8"],
        ),
        (
            Raw::base().tensor("paper.y", "F64", &[4], vec![0; 32]),
            &["paper.y", "dtype F64"],
        ),
        (
            Raw::base().tensor("paper.x", "F64", &[4, 2], vec![0; 64]),
            &["paper.x", "dtype F64"],
        ),
    ];
    for (raw, want) in cases {
        load_err(&raw.bytes(), want);
    }
    // A dtype safetensors does not know.
    let raw = Raw::base().tensor("paper.x", "F17", &[4, 2], vec![0; 32]);
    load_err(&raw.bytes(), &["header"]);
}

// -------------------------------------------------------------------- shapes

#[test]
fn shapes_that_do_not_fit_are_errors() {
    let cases: [(Raw, &[&str]); 8] = [
        (
            Raw::base().tensor("paper.y", "I64", &[3], i64s(&[0, 1, 2])),
            &["paper.y", "shape [3]", "num_nodes is 4"],
        ),
        (
            Raw::base().tensor("paper.y", "F32", &[5, 1], f32s(&[0.0; 5])),
            &["paper.y", "shape [5, 1]"],
        ),
        (
            Raw::base().tensor("paper.y", "I64", &[2, 2], i64s(&[0; 4])),
            &["paper.y", "shape [2, 2]", "class labels"],
        ),
        (
            Raw::base().tensor("paper.x", "F32", &[3, 2], f32s(&[0.0; 6])),
            &["paper.x", "3 rows", "num_nodes is 4"],
        ),
        (
            Raw::base().tensor("paper.x", "F32", &[8], f32s(&[0.0; 8])),
            &["paper.x", "shape [8]"],
        ),
        (
            Raw::base().tensor(
                "author__writes__paper.edge_index",
                "I64",
                &[3, 2],
                i64s(&[0; 6]),
            ),
            &["author__writes__paper.edge_index", "shape [3, 2]", "[2, E]"],
        ),
        (
            Raw::base().tensor(
                "author__writes__paper.edge_index",
                "I64",
                &[6],
                i64s(&[0; 6]),
            ),
            &["author__writes__paper.edge_index", "shape [6]"],
        ),
        (
            Raw::base().tensor("paper.test_mask", "BOOL", &[5], vec![0; 5]),
            &["paper.test_mask", "shape [5]"],
        ),
    ];
    for (raw, want) in cases {
        load_err(&raw.bytes(), want);
    }
}

// -------------------------------------------------------------------- values

#[test]
fn edge_indices_out_of_range_or_negative_are_errors() {
    let key = "author__writes__paper.edge_index";
    // Source 3 of 3 authors.
    load_err(
        &Raw::base()
            .tensor(key, "I64", &[2, 3], i64s(&[0, 3, 2, 0, 0, 3]))
            .bytes(),
        &[
            key,
            "edge 1",
            "source 3",
            "out of range",
            "\"author\"'s 3 nodes",
        ],
    );
    // Destination 4 of 4 papers.
    load_err(
        &Raw::base()
            .tensor(key, "I64", &[2, 3], i64s(&[0, 1, 2, 0, 0, 4]))
            .bytes(),
        &[key, "edge 2", "destination 4", "out of range"],
    );
    // Negative, in i64 and i32.
    load_err(
        &Raw::base()
            .tensor(key, "I64", &[2, 3], i64s(&[0, -1, 2, 0, 0, 3]))
            .bytes(),
        &[key, "edge 1's source", "-1", "negative"],
    );
    load_err(
        &Raw::base()
            .tensor(key, "I32", &[2, 3], i32s(&[0, 1, 2, 0, -7, 3]))
            .bytes(),
        &[key, "edge 1's destination", "-7", "negative"],
    );
    // Past u32.
    load_err(
        &Raw::base()
            .tensor(key, "I64", &[2, 3], i64s(&[0, 1 << 33, 2, 0, 0, 3]))
            .bytes(),
        &[key, "past u32::MAX"],
    );
}

#[test]
fn labels_at_or_past_the_class_count_or_negative_are_errors() {
    load_err(
        &Raw::base()
            .tensor("paper.y", "I64", &[4], i64s(&[0, 3, 1, 2]))
            .bytes(),
        &["paper.y", "label 3 at node 1", "class count 3"],
    );
    load_err(
        &Raw::base()
            .tensor("paper.y", "I32", &[4], i32s(&[0, 1, -2, 2]))
            .bytes(),
        &["paper.y", "the label of node 2", "-2", "negative"],
    );
    load_err(
        &Raw::base()
            .tensor("paper.y", "I64", &[4], i64s(&[0, 1, 2, 1 << 40]))
            .bytes(),
        &["paper.y", "past u32::MAX"],
    );
    // num_classes for a type without class labels.
    load_err(
        &Raw::base()
            .meta("num_classes", r#"{"paper": 3, "author": 2}"#)
            .bytes(),
        &[
            "__metadata__.num_classes",
            "author",
            "not integer class labels",
        ],
    );
}

#[test]
fn non_finite_targets_and_features_are_errors() {
    load_err(
        &Raw::base()
            .no_meta("num_classes")
            .tensor("paper.y", "F32", &[4, 1], f32s(&[0.0, 1.0, f32::NAN, 2.0]))
            .bytes(),
        &["paper.y", "NaN at node 2, target 0", "finite"],
    );
    load_err(
        &Raw::base()
            .no_meta("num_classes")
            .tensor(
                "paper.y",
                "F32",
                &[2, 2],
                f32s(&[0.0, 1.0, 2.0, f32::INFINITY]),
            )
            .tensor("paper.x", "F32", &[2, 1], f32s(&[0.0, 1.0]))
            .meta("num_nodes", r#"{"paper": 2, "author": 3}"#)
            .without("paper.train_mask")
            .without("paper.val_mask")
            .without("paper.test_mask")
            .tensor(
                "author__writes__paper.edge_index",
                "I64",
                &[2, 1],
                i64s(&[0, 1]),
            )
            .tensor("paper__cites__paper.edge_index", "I64", &[2, 0], vec![])
            .bytes(),
        &["paper.y", "inf at node 1, target 1"],
    );
    let mut x = [0.0f32; 8];
    x[5] = f32::NEG_INFINITY;
    load_err(
        &Raw::base()
            .tensor("paper.x", "F32", &[4, 2], f32s(&x))
            .bytes(),
        &["paper.x", "-inf at node 2, feature 1", "finite"],
    );
    let nan = half::bf16::NAN.to_bits().to_le_bytes();
    let mut bx = vec![0u8; 8];
    bx[2..4].copy_from_slice(&nan);
    load_err(
        &Raw::base().tensor("paper.x", "BF16", &[4, 1], bx).bytes(),
        &["paper.x", "NaN at node 1"],
    );
}

#[test]
fn mask_values_other_than_0_or_1_are_errors() {
    load_err(
        &Raw::base()
            .tensor("paper.val_mask", "U8", &[4], vec![0, 2, 0, 0])
            .bytes(),
        &["paper.val_mask", "value 2 at node 1"],
    );
}

#[test]
fn a_node_count_beyond_u32_is_an_error() {
    let raw = Raw::base().meta("num_nodes", r#"{"paper": 4, "author": 4294967296}"#);
    load_err(
        &raw.bytes(),
        &[
            "__metadata__.num_nodes",
            "\"author\" has 4294967296 nodes",
            "u32",
        ],
    );
    let mut d = base_dataset();
    d.node_types[1].nodes = 1 << 32;
    let e = d.validate().unwrap_err().to_string();
    assert!(e.contains("num_nodes.author") && e.contains("u32"), "{e}");
}

// ------------------------------------------------------------------ metadata

#[test]
fn duplicate_or_missing_metadata_entries_are_errors() {
    let cases: [(Raw, &[&str]); 16] = [
        (
            Raw::base().meta("node_types", r#"["paper", "author", "paper"]"#),
            &["__metadata__.node_types", "\"paper\" is listed twice"],
        ),
        (
            Raw::base().meta(
                "edge_types",
                r#"[["author", "writes", "paper"], ["paper", "cites", "venue"]]"#,
            ),
            &["__metadata__.edge_types", "\"venue\" is not in node_types"],
        ),
        (
            Raw::base().meta(
                "edge_types",
                r#"[["author", "writes", "paper"], ["paper", "cites", "paper"], ["author", "writes", "paper"]]"#,
            ),
            &["__metadata__.edge_types", "listed twice"],
        ),
        (
            Raw::base().tensor("venue.x", "F32", &[1, 1], f32s(&[0.0])),
            &["venue.x", "node type \"venue\" is not in the metadata's node_types"],
        ),
        (
            Raw::base().tensor(
                "paper__refs__paper.edge_index",
                "I64",
                &[2, 0],
                vec![],
            ),
            &["paper__refs__paper.edge_index", "not in the metadata's edge_types"],
        ),
        (
            Raw::base().tensor("paper.z", "F32", &[4], f32s(&[0.0; 4])),
            &["paper.z", "unknown attribute \"z\""],
        ),
        (
            Raw::base().tensor("weights", "F32", &[1], f32s(&[0.0])),
            &["weights", "not a <type>.<attribute>"],
        ),
        (
            Raw::base().meta("num_nodes", r#"{"paper": 4}"#),
            &["__metadata__.num_nodes", "no count for node type \"author\""],
        ),
        (
            Raw::base().meta("num_nodes", r#"{"paper": 4, "author": 3, "paper": 4}"#),
            &["__metadata__.num_nodes", "\"paper\" is listed twice"],
        ),
        (
            Raw::base().meta("num_nodes", r#"{"paper": 4, "author": 3, "venue": 1}"#),
            &["__metadata__.num_nodes", "\"venue\", which is not in node_types"],
        ),
        (
            Raw::base().meta("num_nodes", r#"{"paper": 4, "author": -3}"#),
            &["__metadata__.num_nodes", "non-negative integer"],
        ),
        (
            Raw::base().no_meta("edge_types"),
            &["__metadata__.edge_types", "missing"],
        ),
        (
            Raw::base().meta("format", "rtx-hetero/2"),
            &["__metadata__.format", "rtx-hetero/2"],
        ),
        (
            Raw::base().meta("node_types", r#"{"paper": 1}"#),
            &["__metadata__.node_types", "a JSON list of names"],
        ),
        (
            Raw::base().without("paper__cites__paper.edge_index"),
            &["paper__cites__paper.edge_index", "missing", "[2, 0]"],
        ),
        (
            Raw::base().meta("num_classes", r#"{"paper": 3, "venue": 3}"#),
            &["__metadata__.num_classes", "\"venue\""],
        ),
    ];
    for (raw, want) in cases {
        load_err(&raw.bytes(), want);
    }
    // No __metadata__ at all.
    let mut raw = Raw::base();
    raw.meta.clear();
    load_err(&raw.bytes(), &["__metadata__", "missing"]);
    // Names that cannot be keys.
    load_err(
        &Raw::base()
            .meta("node_types", r#"["pa.per", "author"]"#)
            .bytes(),
        &["__metadata__.node_types", "\"pa.per\""],
    );
}

// -------------------------------------------------------- datasets in memory

#[test]
fn save_refuses_an_invalid_dataset_and_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bad.safetensors");
    let mut d = base_dataset();
    d.targets[0] = Some(Targets::Classes {
        labels: vec![0, 1, 5, 0],
        classes: 3,
    });
    let e = d.save(&path).unwrap_err().to_string();
    assert!(
        e.contains("paper.y") && e.contains("label 5 at node 2"),
        "{e}"
    );
    assert!(e.contains("bad.safetensors"), "{e}");
    assert!(!path.exists());
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);

    let mut d = base_dataset();
    d.relations[1].dst[1] = 4;
    let e = d.validate().unwrap_err().to_string();
    assert!(
        e.contains("in memory")
            && e.contains("paper__cites__paper.edge_index")
            && e.contains("destination 4"),
        "{e}"
    );
    let mut d = base_dataset();
    d.splits[0].val = vec![2, 2];
    assert!(
        d.validate()
            .unwrap_err()
            .to_string()
            .contains("paper.val_mask")
    );
    let mut d = base_dataset();
    d.features[0] = Some(Features::F32 {
        data: vec![0.0; 7],
        dim: 2,
    });
    assert!(d.validate().unwrap_err().to_string().contains("paper.x"));
    let mut d = base_dataset();
    d.relations.push(d.relations[0].clone());
    assert!(
        d.validate()
            .unwrap_err()
            .to_string()
            .contains("listed twice")
    );
    let mut d = base_dataset();
    d.splits.pop();
    assert!(d.validate().is_err());
}

#[test]
fn type_index_names_the_known_types() {
    let d = base_dataset();
    assert_eq!(d.type_index("paper").unwrap(), 0);
    let e = d.type_index("venue").unwrap_err().to_string();
    assert!(
        e.contains("venue") && e.contains(r#"["paper", "author"]"#),
        "{e}"
    );
}

#[test]
fn save_into_a_missing_directory_is_an_io_error() {
    let dir = tempfile::tempdir().unwrap();
    let path: &Path = &dir.path().join("no/such/dir/x.safetensors");
    let e = base_dataset().save(path).unwrap_err();
    assert!(matches!(e, rtx_gnn::Error::Io { .. }), "{e}");
}

// ------------------------------------------------------------ planted datasets

mod planted {
    use rtx_gnn::planted::{self, PlantedSpec};
    use rtx_gnn::{Dataset, Targets};

    fn x(d: &Dataset, t: usize) -> (Vec<f32>, usize) {
        let f = d.features[t].as_ref().unwrap();
        (f.to_f32(), f.dim())
    }

    /// Per node of `t`, the mean of in-neighbours' features over relations
    /// into `t` from sources of the same feature width (none: zeros).
    fn neighbour_mean(d: &Dataset, t: usize, hops: usize) -> Vec<f64> {
        let (own, f) = x(d, t);
        let n = d.node_types[t].nodes;
        let mut cur: Vec<f64> = own.iter().map(|&v| f64::from(v)).collect();
        for _ in 0..hops {
            let mut sum = vec![0.0; n * f];
            let mut cnt = vec![0u32; n];
            for r in d
                .relations
                .iter()
                .filter(|r| r.dst_type == t && r.src_type == t)
            {
                for (&s, &dd) in r.src.iter().zip(&r.dst) {
                    for j in 0..f {
                        sum[dd as usize * f + j] += cur[s as usize * f + j];
                    }
                    cnt[dd as usize] += 1;
                }
            }
            for i in 0..n {
                for j in 0..f {
                    sum[i * f + j] /= f64::from(cnt[i].max(1));
                }
            }
            cur = sum;
        }
        cur
    }

    /// Accuracy on `eval` of the nearest class mean (means from `train`).
    fn nearest_mean_accuracy(
        v: &[f64],
        f: usize,
        labels: &[u32],
        c: usize,
        train: &[u32],
        eval: &[u32],
    ) -> f64 {
        let mut mean = vec![0.0; c * f];
        let mut cnt = vec![0.0; c];
        for &i in train {
            let l = labels[i as usize] as usize;
            cnt[l] += 1.0;
            for j in 0..f {
                mean[l * f + j] += v[i as usize * f + j];
            }
        }
        for l in 0..c {
            for j in 0..f {
                mean[l * f + j] /= f64::max(cnt[l], 1.0);
            }
        }
        let right = eval
            .iter()
            .filter(|&&i| {
                let i = i as usize;
                let best = (0..c)
                    .min_by(|&a, &b| {
                        let da: f64 = (0..f)
                            .map(|j| (v[i * f + j] - mean[a * f + j]).powi(2))
                            .sum();
                        let db: f64 = (0..f)
                            .map(|j| (v[i * f + j] - mean[b * f + j]).powi(2))
                            .sum();
                        da.total_cmp(&db)
                    })
                    .unwrap();
                best == labels[i] as usize
            })
            .count();
        right as f64 / eval.len() as f64
    }

    /// R^2 on `eval` of the least-squares fit (with a bias) of `y` on the
    /// `f`-wide rows of `v`, fitted on `train`.
    fn linear_r2(v: &[f64], f: usize, y: &[f64], train: &[u32], eval: &[u32]) -> f64 {
        let k = f + 1;
        let row = |i: usize| {
            let mut r = v[i * f..(i + 1) * f].to_vec();
            r.push(1.0);
            r
        };
        let mut a = vec![0.0; k * (k + 1)];
        for &i in train {
            let r = row(i as usize);
            for p in 0..k {
                for q in 0..k {
                    a[p * (k + 1) + q] += r[p] * r[q];
                }
                a[p * (k + 1) + k] += r[p] * y[i as usize];
            }
        }
        for p in 0..k {
            a[p * (k + 1) + p] += 1e-9;
        }
        // Gauss-Jordan with partial pivoting.
        for c in 0..k {
            let piv = (c..k)
                .max_by(|&p, &q| {
                    a[p * (k + 1) + c]
                        .abs()
                        .total_cmp(&a[q * (k + 1) + c].abs())
                })
                .unwrap();
            for j in 0..=k {
                a.swap(c * (k + 1) + j, piv * (k + 1) + j);
            }
            let d = a[c * (k + 1) + c];
            for j in 0..=k {
                a[c * (k + 1) + j] /= d;
            }
            for p in (0..k).filter(|&p| p != c) {
                let m = a[p * (k + 1) + c];
                for j in 0..=k {
                    a[p * (k + 1) + j] -= m * a[c * (k + 1) + j];
                }
            }
        }
        let w: Vec<f64> = (0..k).map(|p| a[p * (k + 1) + k]).collect();
        let mean = eval.iter().map(|&i| y[i as usize]).sum::<f64>() / eval.len() as f64;
        let (mut res, mut tot) = (0.0, 0.0);
        for &i in eval {
            let r = row(i as usize);
            let pred: f64 = r.iter().zip(&w).map(|(a, b)| a * b).sum();
            res += (y[i as usize] - pred).powi(2);
            tot += (y[i as usize] - mean).powi(2);
        }
        1.0 - res / tot
    }

    fn values_column(d: &Dataset, t: usize, o: usize) -> Vec<f64> {
        let Some(Targets::Values { data, dim }) = &d.targets[t] else {
            panic!("no values")
        };
        data.iter()
            .skip(o)
            .step_by(*dim)
            .map(|&v| f64::from(v))
            .collect()
    }

    #[test]
    fn the_small_datasets_are_deterministic_and_pinned() {
        let d = planted::small_classification(1);
        assert_eq!(d, planted::small_classification(1));
        assert_ne!(d, planted::small_classification(2));
        // Pinned: counter-based streams give these on every machine.
        let Some(Targets::Classes { labels, classes }) = &d.targets[0] else {
            panic!()
        };
        assert_eq!((&labels[..8], *classes), (&[0, 0, 5, 3, 7, 1, 3, 7][..], 8));
        assert_eq!(d.relations[0].src[..4], [1494, 451, 1291, 1140]);
        assert_eq!(d.relations[0].dst[..4], [1916, 1950, 877, 928]);
        assert_eq!(d.relations[1].src[..4], [585, 924, 319, 863]);
        assert_eq!(d.relations[1].dst[..4], [1605, 1220, 1794, 645]);
        let x = d.features[0].as_ref().unwrap().to_f32();
        assert_eq!(
            x[..3].iter().map(|v| v.to_bits()).collect::<Vec<_>>(),
            [1060534641, 3220773676, 1058626823]
        );
        let r = planted::small_regression(1);
        assert_eq!(r, planted::small_regression(1));
        let y = values_column(&r, 0, 0);
        assert_eq!(
            y[..2]
                .iter()
                .map(|&v| (v as f32).to_bits())
                .collect::<Vec<_>>(),
            [3193226424u32, 3211307522]
        );
    }

    #[test]
    fn the_small_classification_has_its_spec_shape() {
        let d = planted::small_classification(5);
        let names: Vec<_> = d
            .node_types
            .iter()
            .map(|t| (t.name.as_str(), t.nodes))
            .collect();
        assert_eq!(names, [("paper", 2000), ("author", 1000)]);
        let keys: Vec<_> = (0..d.relations.len()).map(|r| d.relation_key(r)).collect();
        assert_eq!(
            keys,
            [
                "paper__cites__paper",
                "author__writes__paper",
                "paper__rev_writes__author"
            ]
        );
        let edges: Vec<_> = d.relations.iter().map(|r| r.src.len()).collect();
        assert_eq!(edges, [10_000, 4_000, 4_000]);
        assert_eq!(
            (d.relations[2].src.clone(), d.relations[2].dst.clone()),
            (d.relations[1].dst.clone(), d.relations[1].src.clone())
        );
        let s = &d.splits[0];
        assert_eq!(s.train, (0..1200).collect::<Vec<u32>>());
        assert_eq!(s.val, (1200..1600).collect::<Vec<u32>>());
        assert_eq!(s.test, (1600..2000).collect::<Vec<u32>>());
        assert_eq!(d.splits[1], Default::default());
        assert_eq!(d.require_train(0).unwrap().len(), 1200);
        assert_eq!(d.features[1].as_ref().unwrap().dim(), 16);
        d.validate().unwrap();
        d.graph().unwrap();
        // Every class is used, and an edge's ends share a class ~80% of the time.
        let Some(Targets::Classes { labels, classes }) = &d.targets[0] else {
            panic!()
        };
        let mut used = vec![0; *classes];
        for &l in labels {
            used[l as usize] += 1;
        }
        assert!(used.iter().all(|&c| c > 150), "{used:?}");
        let cites = &d.relations[0];
        let same = cites
            .src
            .iter()
            .zip(&cites.dst)
            .filter(|(a, b)| labels[**a as usize] == labels[**b as usize])
            .count() as f64
            / cites.src.len() as f64;
        assert!((same - 0.8).abs() < 0.02, "homophily {same}");
    }

    /// The graph carries the labels much better than a node's own features:
    /// the nearest class mean (means from the training nodes) of a node's
    /// 2-hop citation neighbourhood's mean features is right far more often
    /// than that of its own features, which are still better than chance.
    #[test]
    fn the_neighbourhood_predicts_the_class_far_better_than_own_features() {
        for seed in [1, 2] {
            let d = planted::small_classification(seed);
            let Some(Targets::Classes { labels, classes }) = &d.targets[0] else {
                panic!()
            };
            let s = &d.splits[0];
            let acc = |hops| {
                let v = neighbour_mean(&d, 0, hops);
                nearest_mean_accuracy(&v, 16, labels, *classes, &s.train, &s.test)
            };
            let (own, two_hop) = (acc(0), acc(2));
            assert!(own > 0.25 && own < 0.65, "seed {seed}: own features {own}");
            assert!(
                two_hop > own + 0.25,
                "seed {seed}: own {own}, 2-hop {two_hop}"
            );
        }
    }

    /// The regression targets need the graph: a linear fit on a node's own
    /// features explains little of them, one on its neighbourhood's mean
    /// features (1 and 2 hops of citations) much more.
    #[test]
    fn the_regression_targets_need_the_neighbourhood() {
        let d = planted::small_regression(1);
        let s = &d.splits[0];
        let y0 = values_column(&d, 0, 0);
        let y1 = values_column(&d, 0, 1);
        for y in [&y0, &y1] {
            assert!(y.iter().all(|v| v.is_finite()));
            let mean = y.iter().sum::<f64>() / y.len() as f64;
            let var = y.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / y.len() as f64;
            assert!(var > 0.2, "variance {var}");
        }
        let hops: Vec<Vec<f64>> = (0..3).map(|h| neighbour_mean(&d, 0, h)).collect();
        let own = linear_r2(&hops[0], 16, &y0, &s.train, &s.test);
        let n = d.node_types[0].nodes;
        let mut cat = vec![0.0; n * 48];
        for i in 0..n {
            for (h, v) in hops.iter().enumerate() {
                cat[i * 48 + h * 16..i * 48 + h * 16 + 16].copy_from_slice(&v[i * 16..i * 16 + 16]);
            }
        }
        let graph = linear_r2(&cat, 48, &y0, &s.train, &s.test);
        assert!(own < 0.25, "own features explain {own}");
        assert!(graph > own + 0.15, "own {own}, with neighbourhoods {graph}");
        // The second target is quadratic in the 1-hop mean: no linear fit.
        assert!(linear_r2(&hops[0], 16, &y1, &s.train, &s.test) < 0.05);
    }

    #[test]
    fn planted_datasets_round_trip_through_a_file() {
        let dir = tempfile::tempdir().unwrap();
        for (name, d) in [
            ("c", planted::small_classification(3)),
            ("r", planted::small_regression(3)),
        ] {
            let path = dir.path().join(format!("{name}.safetensors"));
            d.save(&path).unwrap();
            assert_eq!(Dataset::load(&path).unwrap(), d);
        }
    }

    #[test]
    fn specs_are_parametric_and_bad_ones_are_errors() {
        // An ogbn-mag-like schema in miniature: hubs, a featureless type,
        // several reverses, a 0-node type.
        let spec = PlantedSpec {
            types: vec![
                ("paper".into(), 500, 8),
                ("author".into(), 700, 0),
                ("institution".into(), 20, 4),
                ("field_of_study".into(), 0, 4),
            ],
            relations: vec![
                ("author".into(), "writes".into(), "paper".into(), 3.0),
                ("paper".into(), "cites".into(), "paper".into(), 4.0),
                (
                    "paper".into(),
                    "has_topic".into(),
                    "field_of_study".into(),
                    2.0,
                ),
                (
                    "author".into(),
                    "affiliated_with".into(),
                    "institution".into(),
                    1.0,
                ),
            ],
            reverses: vec![("rev_writes".into(), 0), ("rev_affiliated_with".into(), 3)],
            target: "paper".into(),
            classes: 5,
            homophily: 0.5,
            feature_signal: 1.0,
            target_signal_only: false,
            power_law: true,
            split: (0.5, 0.25),
            seed: 9,
        };
        let d = planted::classification(&spec).unwrap();
        assert_eq!(d.relations.len(), 6);
        assert!(d.features[1].is_none());
        assert_eq!(d.relations[2].src.len(), 0);
        assert_eq!(d.splits[0].val, (250..375).collect::<Vec<u32>>());
        // Hubs: the most-cited paper has far more than the mean 4.
        let mut indeg = vec![0; 500];
        for &t in &d.relations[1].dst {
            indeg[t as usize] += 1;
        }
        assert!(
            *indeg.iter().max().unwrap() > 40,
            "max in-degree {:?}",
            indeg.iter().max()
        );
        let r = planted::regression(&spec).unwrap();
        assert_eq!(r.targets[0].as_ref().unwrap().out_features(), 2);
        d.graph().unwrap();

        let bad = |f: fn(&mut PlantedSpec), want: &str| {
            let mut s = spec.clone();
            f(&mut s);
            let e = planted::classification(&s).unwrap_err().to_string();
            assert!(e.contains("planted spec") && e.contains(want), "{e}");
        };
        bad(|s| s.target = "venue".into(), "\"venue\"");
        bad(|s| s.classes = 0, "0 classes");
        bad(|s| s.homophily = 1.5, "homophily 1.5");
        bad(|s| s.split = (0.8, 0.5), "split");
        bad(|s| s.reverses.push(("x".into(), 9)), "no relation 9");
        bad(|s| s.relations[0].3 = f64::NAN, "degree NaN");
        bad(|s| s.relations[0].0 = "venue".into(), "\"venue\"");
        let mut s = spec.clone();
        s.types.push(("paper".into(), 1, 1));
        assert!(
            planted::classification(&s)
                .unwrap_err()
                .to_string()
                .contains("listed twice")
        );
    }
}
