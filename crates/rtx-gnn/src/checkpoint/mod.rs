//! Checkpoints in safetensors: the parameters under PyG's names and
//! layouts, the optimizer state, the run's position, the settings and the
//! schema, so a PyG model (`crates/rtx-bench/peers/rtx_model.py`) loads an
//! rtx checkpoint with `load_state_dict(strict=True)` and rtx loads a
//! PyG-trained one, and a run resumed from one continues bit for bit.
//!
//! Tensors (little-endian, row-major, in the master weights' type):
//!
//! | key | shape | rtx parameter |
//! |---|---|---|
//! | `convs.{l}.convs.<{src}___{rel}___{dst}>.lin_src.weight` | `[H*C, in_src]` | `w_src` transposed |
//! | `convs.{l}.convs.<{src}___{rel}___{dst}>.lin_dst.weight` | `[H*C, in_dst]` | `w_dst` transposed |
//! | `convs.{l}.convs.<{src}___{rel}___{dst}>.att_src` / `.att_dst` | `[1, H, C]` | `att_src` / `att_dst` |
//! | `convs.{l}.convs.<{src}___{rel}___{dst}>.bias` | `[H*C]` | `bias` |
//!
//! (`<s___r___d>` is PyG 2.8's `HeteroConv` key of the edge type, `.` in a
//! name written `#`.)
//! | `head.weight` / `head.bias` | `[out, H*C]` / `[out]` | `head_w` transposed / `head_b` |
//! | `optim.{key}.exp_avg`, `.exp_avg_sq`, `.momentum_buffer` | as `{key}` | the optimizer's state |
//! | `rtx.best.{key}` | as `{key}` | the best parameters so far |
//!
//! Keys under `optim.` and `rtx.` are not the model's: PyG loads the rest.
//! The metadata (`__metadata__`, strings) holds `format` =
//! `rtx-checkpoint/1`, and JSON values: `config` (the model), `schema`
//! (node and edge types in order), `task`, `train` (the run's settings),
//! `position` (epoch, step, floats as their bit patterns) and `optimizer`
//! (the rule's state: steps taken per parameter).

use std::collections::HashMap;
use std::path::Path;

use rtx_backend::prelude::*;
use rtx_backend::{BTensor, DType, Element, SampleOps, TrainOps};
use safetensors::tensor::{Dtype, SafeTensors, TensorView};
use serde_json::{Value, json};

use crate::dataset::Dataset;
use crate::model::HetGat;
use crate::optim::ParamState;
use crate::train::{Position, TrainConfig, Trainer};
use crate::{Error, Result};

mod meta;

use meta::{
    first_difference, model_meta, parse_position, parse_train, position_meta, real, task_meta,
    train_meta, uint,
};

/// The format tag of the metadata.
pub const FORMAT: &str = "rtx-checkpoint/1";

fn err(path: &Path, msg: impl std::fmt::Display) -> Error {
    Error::Checkpoint(format!("{}: {msg}", path.display()))
}

/// The PyG key and whether the tensor is stored transposed, for rtx
/// parameter `name` of a model on `schema` (node type names, relation keys).
fn pyg_key(name: &str, types: &[String], rels: &[(&str, usize, usize)]) -> (String, Layout) {
    if name == "head_w" {
        return ("head.weight".into(), Layout::Transposed);
    }
    if name == "head_b" {
        return ("head.bias".into(), Layout::Flat);
    }
    // conv{l}.{rel}.{which}: the relation name may hold dots, `which` cannot
    let (front, which) = name.rsplit_once('.').unwrap_or((name, ""));
    let (layer, rel) = front.split_once('.').unwrap_or((front, ""));
    let l = layer.trim_start_matches("conv");
    let key = rels
        .iter()
        .find(|r| r.0 == rel)
        .map(|&(r, s, d)| module_key(&types[s], r, &types[d]))
        .unwrap_or_else(|| rel.to_owned());
    let (leaf, layout) = match which {
        "w_src" => ("lin_src.weight", Layout::Transposed),
        "w_dst" => ("lin_dst.weight", Layout::Transposed),
        "att_src" => ("att_src", Layout::Heads),
        "att_dst" => ("att_dst", Layout::Heads),
        _ => ("bias", Layout::Flat),
    };
    (format!("convs.{l}.convs.{key}.{leaf}"), layout)
}

/// PyG 2.8's `HeteroConv` ModuleDict key of edge type `(s, r, d)`:
/// `<s___r___d>`, with any `.` of a name written `#` (a module name cannot
/// hold a dot).
fn module_key(s: &str, r: &str, d: &str) -> String {
    format!("<{s}___{r}___{d}>").replace('.', "#")
}

/// How a parameter's PyG tensor is laid out against rtx's `[r, c]`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Layout {
    /// `[c, r]`, the transpose (a `Linear`'s weight).
    Transposed,
    /// `[1, heads, channels]` of `[1, heads * channels]`.
    Heads,
    /// `[c]` of `[1, c]`.
    Flat,
}

fn pyg_shape(layout: Layout, shape: &[usize], heads: usize) -> Vec<usize> {
    match layout {
        Layout::Transposed => vec![shape[1], shape[0]],
        Layout::Heads => vec![1, heads, shape[1] / heads.max(1)],
        Layout::Flat => vec![shape[1]],
    }
}

fn transpose<T: Copy>(v: &[T], rows: usize, cols: usize) -> Vec<T> {
    let mut out = Vec::with_capacity(v.len());
    for c in 0..cols {
        out.extend((0..rows).map(|r| v[r * cols + c]));
    }
    out
}

fn st_dtype(d: DType) -> Dtype {
    match d {
        DType::F32 => Dtype::F32,
        DType::F64 => Dtype::F64,
        DType::BF16 => Dtype::BF16,
        DType::F16 => Dtype::F16,
    }
}

/// A parameter-shaped tensor as PyG lays it out: `(key, shape, bytes)`.
fn pyg_tensor<B: Backend, A: Element>(
    b: &B,
    key: String,
    layout: Layout,
    t: &BTensor<B, A>,
    heads: usize,
) -> Result<(String, Vec<usize>, Vec<u8>)> {
    let shape = t.shape().to_vec();
    let mut v = b.download(t)?;
    if layout == Layout::Transposed {
        v = transpose(&v, shape[0], shape[1]);
    }
    Ok((
        key,
        pyg_shape(layout, &shape, heads),
        rtx_backend::bytes_of(&v).to_vec(),
    ))
}

/// Writes `trainer`'s state to `path` (atomically: a temporary file in the
/// same directory, synced, then renamed over `path`).
///
/// # Errors
/// [`Error::Io`] naming the path; backend errors.
pub fn save<B: Backend + TrainOps + SampleOps + 'static, T: Element>(
    path: &Path,
    trainer: &Trainer<'_, B, T>,
) -> Result<()> {
    crate::dataset::write_atomic(path, &to_bytes(trainer)?)
}

/// `trainer`'s state as the bytes of a checkpoint file (what [`save`]
/// writes: write them to several files without reading the device again).
///
/// # Errors
/// Backend errors.
pub fn to_bytes<B: Backend + TrainOps + SampleOps + 'static, T: Element>(
    trainer: &Trainer<'_, B, T>,
) -> Result<Vec<u8>> {
    let path = Path::new("checkpoint");
    let b = trainer.backend();
    let model = trainer.model();
    let heads = model.config().heads;
    let types = model.node_type_names().to_vec();
    let rels = model.relation_keys();
    let mut tensors: Vec<(String, Vec<usize>, Vec<u8>)> = Vec::new();
    let mut param_steps = Vec::new();
    let state = trainer.optimizer().state();
    let best = trainer.best_params();
    for (i, (p, name)) in model.params().iter().zip(model.param_names()).enumerate() {
        let (key, layout) = pyg_key(name, &types, &rels);
        tensors.push(pyg_tensor(b, key.clone(), layout, p, heads)?);
        match &state[i] {
            ParamState::Empty => param_steps.push(Value::Null),
            ParamState::Momentum(buf) => {
                param_steps.push(json!("momentum"));
                tensors.push(pyg_tensor(
                    b,
                    format!("optim.{key}.momentum_buffer"),
                    layout,
                    buf,
                    heads,
                )?);
            }
            ParamState::Adam { m, v, steps } => {
                param_steps.push(json!(steps));
                tensors.push(pyg_tensor(
                    b,
                    format!("optim.{key}.exp_avg"),
                    layout,
                    m,
                    heads,
                )?);
                tensors.push(pyg_tensor(
                    b,
                    format!("optim.{key}.exp_avg_sq"),
                    layout,
                    v,
                    heads,
                )?);
            }
        }
        if let Some(best) = best {
            tensors.push(pyg_tensor(
                b,
                format!("rtx.best.{key}"),
                layout,
                &best[i],
                heads,
            )?);
        }
    }
    let (config, schema) = model_meta(model);
    let mut meta = HashMap::new();
    meta.insert("format".to_string(), FORMAT.to_string());
    meta.insert("config".to_string(), config.to_string());
    meta.insert("schema".to_string(), schema.to_string());
    meta.insert(
        "task".to_string(),
        task_meta(trainer.config().task, trainer.outputs()).to_string(),
    );
    meta.insert(
        "train".to_string(),
        train_meta(trainer.config()).to_string(),
    );
    meta.insert(
        "position".to_string(),
        position_meta(&trainer.position()).to_string(),
    );
    meta.insert(
        "optimizer".to_string(),
        json!({"steps": trainer.optimizer().steps(), "param_steps": param_steps}).to_string(),
    );
    meta.insert(
        "dtype".to_string(),
        <T::Acc as Element>::DTYPE.name().to_string(),
    );
    let dtype = st_dtype(<T::Acc as Element>::DTYPE);
    let views = tensors
        .iter()
        .map(|(k, s, d)| {
            TensorView::new(dtype, s.clone(), d)
                .map(|v| (k.clone(), v))
                .map_err(|e| err(path, format!("tensor {k}: {e}")))
        })
        .collect::<Result<Vec<_>>>()?;
    safetensors::serialize(views, Some(meta)).map_err(|e| err(path, e))
}

/// The shape of a checkpoint's model.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ModelShape {
    /// Attention heads.
    pub heads: usize,
    /// Channels per head.
    pub channels: usize,
    /// Layers.
    pub layers: usize,
    /// LeakyReLU slope.
    pub negative_slope: f64,
}

/// A checkpoint read from disk: its tensors (bytes) and parsed metadata.
#[derive(Debug)]
pub struct Checkpoint {
    path: std::path::PathBuf,
    tensors: HashMap<String, (Dtype, Vec<usize>, Vec<u8>)>,
    meta: HashMap<String, Value>,
}

impl Checkpoint {
    /// Reads and parses `path` (read whole: every tensor is copied out).
    ///
    /// # Errors
    /// [`Error::Io`]; [`Error::Checkpoint`] for a file that is not a
    /// safetensors file or lacks the metadata this format needs (naming it).
    pub fn load(path: &Path) -> Result<Checkpoint> {
        let map = std::fs::read(path).map_err(|e| Error::Io {
            path: path.to_owned(),
            what: "read".into(),
            source: e,
        })?;
        let st = SafeTensors::deserialize(&map)
            .map_err(|e| err(path, format!("not a safetensors file: {e}")))?;
        let (_, header) = SafeTensors::read_metadata(&map)
            .map_err(|e| err(path, format!("not a safetensors file: {e}")))?;
        let raw = header.metadata().clone().unwrap_or_default();
        let mut meta = HashMap::new();
        for key in ["config", "schema", "task"] {
            let v = raw.get(key).ok_or_else(|| {
                err(
                    path,
                    format!("no `{key}` in the metadata: not an rtx checkpoint"),
                )
            })?;
            let v: Value = serde_json::from_str(v)
                .map_err(|e| err(path, format!("metadata `{key}` is not JSON: {e}")))?;
            meta.insert(key.to_string(), v);
        }
        for key in ["train", "position", "optimizer"] {
            if let Some(v) = raw.get(key) {
                let v: Value = serde_json::from_str(v)
                    .map_err(|e| err(path, format!("metadata `{key}` is not JSON: {e}")))?;
                meta.insert(key.to_string(), v);
            }
        }
        let tensors = st
            .iter()
            .map(|(k, v)| {
                (
                    k.to_string(),
                    (v.dtype(), v.shape().to_vec(), v.data().to_vec()),
                )
            })
            .collect();
        Ok(Checkpoint {
            path: path.to_owned(),
            tensors,
            meta,
        })
    }

    /// The model's shape as the metadata's `config` gives it.
    ///
    /// # Errors
    /// [`Error::Checkpoint`] naming a missing or malformed field.
    pub fn model_shape(&self) -> Result<ModelShape> {
        let c = self.meta("config").unwrap_or(&Value::Null);
        let bad = |m: String| err(&self.path, format!("metadata `config`: {m}"));
        Ok(ModelShape {
            heads: uint(&c["heads"], "heads").map_err(bad)? as usize,
            channels: uint(&c["channels"], "channels").map_err(bad)? as usize,
            layers: uint(&c["layers"], "layers").map_err(bad)? as usize,
            negative_slope: real(&c["negative_slope"], "negative_slope").map_err(bad)?,
        })
    }

    /// The path it was read from.
    pub fn path(&self) -> &Path {
        &self.path
    }

    fn meta(&self, key: &str) -> Option<&Value> {
        self.meta.get(key)
    }

    /// Whether it holds a run's position and optimizer state (an rtx
    /// training checkpoint, not only a model).
    pub fn resumable(&self) -> bool {
        self.meta("position").is_some() && self.meta("train").is_some()
    }

    /// The run settings saved with it, with `epochs` replaced when given.
    ///
    /// # Errors
    /// [`Error::Checkpoint`] when it holds no run settings or they do not
    /// parse, naming the field.
    pub fn train_config(&self) -> Result<TrainConfig> {
        let t = self.meta("train").ok_or_else(|| {
            err(
                &self.path,
                "holds a model but no run settings: it cannot be resumed",
            )
        })?;
        parse_train(t).map_err(|m| err(&self.path, format!("metadata `train`: {m}")))
    }

    /// Checks that the checkpoint's model is the one `model` is: schema,
    /// settings and shapes, naming the first difference.
    ///
    /// # Errors
    /// [`Error::Checkpoint`] naming the first difference.
    pub fn check_model<B: Backend, A: Element>(&self, model: &HetGat<B, A>) -> Result<()> {
        let (config, schema) = model_meta(model);
        let theirs = self.meta("schema").cloned().unwrap_or(Value::Null);
        if let Some(d) = first_difference("schema", &theirs, &schema) {
            return Err(err(
                &self.path,
                format!("the checkpoint is for another graph schema: {d}"),
            ));
        }
        let mut theirs = self.meta("config").cloned().unwrap_or(Value::Null);
        let mut ours = config;
        // dropout is a training setting, not the model's shape
        for v in [&mut theirs, &mut ours] {
            if let Some(o) = v.as_object_mut() {
                o.remove("input_dropout");
                o.remove("attention_dropout");
            }
        }
        if let Some(d) = first_difference("config", &theirs, &ours) {
            return Err(err(
                &self.path,
                format!("the checkpoint is for another model: {d}"),
            ));
        }
        Ok(())
    }

    /// The tensor `key` as `A` in rtx's layout `shape` (`[r, c]`).
    fn param<B: Backend, A: Element>(
        &self,
        b: &B,
        key: &str,
        layout: Layout,
        shape: &[usize],
        heads: usize,
    ) -> Result<BTensor<B, A>> {
        let (dtype, got, bytes) = self
            .tensors
            .get(key)
            .ok_or_else(|| err(&self.path, format!("no tensor `{key}`")))?;
        let want = pyg_shape(layout, shape, heads);
        if *got != want {
            return Err(err(
                &self.path,
                format!("tensor `{key}` has shape {got:?}; this model's is {want:?}"),
            ));
        }
        let v: Vec<A> = match dtype {
            Dtype::F32 => to_elements::<f32, A>(bytes),
            Dtype::F64 => to_elements::<f64, A>(bytes),
            Dtype::BF16 => to_elements::<half::bf16, A>(bytes),
            Dtype::F16 => to_elements::<half::f16, A>(bytes),
            d => {
                return Err(err(
                    &self.path,
                    format!("tensor `{key}` is {d:?}; parameters are F32, F64, BF16 or F16"),
                ));
            }
        };
        if let Some(i) = v.iter().position(|x| !x.to_f64().is_finite()) {
            return Err(err(
                &self.path,
                format!("tensor `{key}` holds {:?} at element {i}", v[i]),
            ));
        }
        let v = if layout == Layout::Transposed {
            transpose(&v, shape[1], shape[0])
        } else {
            v
        };
        Ok(b.upload(&v, shape)?)
    }

    /// The model's parameters (PyG keys, checked against `model`'s shapes),
    /// in `model`'s order.
    ///
    /// # Errors
    /// [`Error::Checkpoint`] naming a missing tensor or a shape; backend errors.
    pub fn params<B: Backend, A: Element>(
        &self,
        b: &B,
        model: &HetGat<B, A>,
        prefix: &str,
    ) -> Result<Vec<BTensor<B, A>>> {
        self.check_model(model)?;
        let heads = model.config().heads;
        let types = model.node_type_names().to_vec();
        let rels = model.relation_keys();
        model
            .params()
            .iter()
            .zip(model.param_names())
            .map(|(p, name)| {
                let (key, layout) = pyg_key(name, &types, &rels);
                self.param(b, &format!("{prefix}{key}"), layout, p.shape(), heads)
            })
            .collect()
    }

    /// Restores everything into `trainer`: parameters, optimizer state,
    /// position, best parameters. With `model_only`, only the parameters
    /// (a PyG-trained checkpoint; the run starts at epoch 0).
    ///
    /// # Errors
    /// [`Error::Checkpoint`] naming the first difference; nothing changes then.
    pub fn restore<B: Backend + TrainOps + SampleOps + 'static, T: Element>(
        &self,
        trainer: &mut Trainer<'_, B, T>,
        model_only: bool,
    ) -> Result<()> {
        let b = trainer.backend();
        let model = trainer.model();
        let params = self.params(b, model, "")?;
        if model_only {
            let steps = trainer.optimizer().state().len();
            return trainer.restore(
                params,
                0,
                (0..steps).map(|_| ParamState::Empty).collect(),
                Position::default(),
                None,
            );
        }
        if !self.resumable() {
            return Err(err(
                &self.path,
                "holds a model but no run position: it cannot be resumed",
            ));
        }
        let heads = model.config().heads;
        let types = model.node_type_names().to_vec();
        let rels = model.relation_keys();
        let om = self.meta("optimizer").cloned().unwrap_or(Value::Null);
        let per = om["param_steps"].as_array().cloned().unwrap_or_default();
        if per.len() != params.len() {
            return Err(err(
                &self.path,
                format!(
                    "optimizer state for {} parameters; the model has {}",
                    per.len(),
                    params.len()
                ),
            ));
        }
        let mut state = Vec::with_capacity(params.len());
        for ((p, name), s) in model.params().iter().zip(model.param_names()).zip(&per) {
            let (key, layout) = pyg_key(name, &types, &rels);
            let get = |leaf: &str| {
                self.param::<B, T::Acc>(b, &format!("optim.{key}.{leaf}"), layout, p.shape(), heads)
            };
            state.push(match s {
                Value::Null => ParamState::Empty,
                Value::String(m) if m == "momentum" => {
                    ParamState::Momentum(get("momentum_buffer")?)
                }
                Value::Number(n) => ParamState::Adam {
                    m: get("exp_avg")?,
                    v: get("exp_avg_sq")?,
                    steps: n
                        .as_u64()
                        .ok_or_else(|| err(&self.path, format!("step count {n} of {key}")))?,
                },
                other => return Err(err(&self.path, format!("optimizer state {other} of {key}"))),
            });
        }
        let steps = om["steps"]
            .as_u64()
            .ok_or_else(|| err(&self.path, "metadata `optimizer` has no step count"))?;
        let position = parse_position(self.meta("position").unwrap_or(&Value::Null))
            .map_err(|m| err(&self.path, format!("metadata `position`: {m}")))?;
        let best = if self.tensors.keys().any(|k| k.starts_with("rtx.best.")) {
            Some(self.params(b, model, "rtx.best.")?)
        } else {
            None
        };
        trainer.restore(params, steps, state, position, best)
    }
}

fn to_elements<S: Element, A: Element>(bytes: &[u8]) -> Vec<A> {
    rtx_backend::vec_from_bytes::<S>(bytes)
        .into_iter()
        .map(|v| A::from_f64(v.to_f64()))
        .collect()
}

/// Checks that the dataset is the one the checkpoint's schema names (node
/// and edge types in order), naming the first difference.
///
/// # Errors
/// [`Error::Checkpoint`].
pub fn check_dataset(ck: &Checkpoint, data: &Dataset) -> Result<()> {
    let types: Vec<&str> = data.node_types.iter().map(|t| t.name.as_str()).collect();
    let relations: Vec<(&str, usize, usize)> = data
        .relations
        .iter()
        .map(|r| (r.name.as_str(), r.src_type, r.dst_type))
        .collect();
    let ours = meta::schema_json(&types, &relations);
    let theirs = ck.meta("schema").cloned().unwrap_or(Value::Null);
    match first_difference("schema", &theirs, &ours) {
        Some(d) => Err(err(
            ck.path(),
            format!("the checkpoint is for another dataset: {d}"),
        )),
        None => Ok(()),
    }
}
