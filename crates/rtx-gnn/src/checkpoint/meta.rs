//! The metadata of a checkpoint: the model's settings and schema, the
//! task, the run's settings, its position and the optimizer's step counts
//! as JSON values, and back.

use serde_json::{Value, json};

use crate::metrics::Metric;
use crate::model::{HetGat, LossKind};
use crate::optim::{OptimizerConfig, Rule, Schedule};
use crate::train::{
    EarlyStopping, LOSS_HASH_START, ModelSettings, Position, Task, TrainConfig, loss_hash_hex,
};
use rtx_backend::{Backend, Element};

/// The model's settings and schema as the metadata's `config` and `schema`.
pub(super) fn model_meta<B: Backend, A: Element>(model: &HetGat<B, A>) -> (Value, Value) {
    let c = model.config();
    let types = model.node_type_names();
    let in_features: serde_json::Map<String, Value> = types
        .iter()
        .zip(&c.in_features)
        .map(|(t, f)| (t.clone(), json!(f)))
        .collect();
    let config = json!({
        "heads": c.heads, "channels": c.channels, "layers": c.layers,
        "negative_slope": c.negative_slope, "out_features": c.out_features,
        "target": types[c.target], "input_dropout": c.input_dropout,
        "attention_dropout": c.attention_dropout, "in_features": in_features,
    });
    let schema = schema_json(types, &model.relation_keys());
    (config, schema)
}

/// A checkpoint's `schema`: node types in order, and each relation as
/// `[src type, name, dst type]`.
pub(super) fn schema_json<S: AsRef<str>>(types: &[S], relations: &[(&str, usize, usize)]) -> Value {
    let types: Vec<&str> = types.iter().map(AsRef::as_ref).collect();
    json!({
        "node_types": types,
        "edge_types": relations.iter()
            .map(|&(r, s, d)| json!([types[s], r, types[d]])).collect::<Vec<_>>(),
    })
}

pub(super) fn task_meta(task: Task, outputs: usize) -> Value {
    match task {
        Task::Classify => json!({"kind": "classify", "classes": outputs}),
        Task::Regress(l) => json!({"kind": "regress", "dim": outputs, "loss": l.name()}),
    }
}

pub(super) fn schedule_meta(s: Schedule) -> Value {
    match s {
        Schedule::Constant => json!({"kind": "constant"}),
        Schedule::Step { every, gamma } => json!({"kind": "step", "every": every, "gamma": gamma}),
        Schedule::Cosine {
            warmup,
            total,
            min_lr,
        } => json!({"kind": "cosine", "warmup": warmup, "total": total, "min_lr": min_lr}),
    }
}

pub(super) fn optimizer_meta(o: &OptimizerConfig) -> Value {
    let rule = match o.rule {
        Rule::Sgd {
            momentum,
            dampening,
            nesterov,
        } => {
            json!({"kind": "sgd", "momentum": momentum, "dampening": dampening, "nesterov": nesterov})
        }
        Rule::Adam { betas, eps } => {
            json!({"kind": "adam", "betas": [betas.0, betas.1], "eps": eps})
        }
        Rule::AdamW { betas, eps } => {
            json!({"kind": "adamw", "betas": [betas.0, betas.1], "eps": eps})
        }
    };
    json!({"rule": rule, "lr": o.lr, "weight_decay": o.weight_decay,
           "clip_norm": o.clip_norm, "schedule": schedule_meta(o.schedule)})
}

pub(super) fn train_meta(c: &TrainConfig) -> Value {
    let m = &c.model;
    json!({
        "target": c.target, "epochs": c.epochs, "batch": c.batch, "fanouts": c.fanouts,
        "eval_batch": c.eval_batch, "seed": c.seed.to_string(),
        "early_stopping": c.early_stopping.map(|e| json!({"metric": e.metric.name(), "patience": e.patience})),
        "model": {"heads": m.heads, "channels": m.channels, "layers": m.layers,
                  "negative_slope": m.negative_slope, "input_dropout": m.input_dropout,
                  "attention_dropout": m.attention_dropout},
        "optimizer": optimizer_meta(&c.optimizer),
        "task": match c.task { Task::Classify => "classify".to_string(), Task::Regress(l) => format!("regress-{}", l.name()) },
    })
}

pub(super) fn position_meta(p: &Position) -> Value {
    json!({
        "epoch": p.epoch, "step_in_epoch": p.step_in_epoch, "global_step": p.global_step,
        "epoch_loss_sum_bits": format!("{:016x}", p.epoch_loss_sum.to_bits()),
        "epoch_loss_hash": loss_hash_hex(p.epoch_loss_hash),
        "best": p.best.map(|(v, e)| json!([format!("{:016x}", v.to_bits()), e])),
        "bad_epochs": p.bad_epochs, "stopped": p.stopped,
    })
}

/// The first difference between two JSON values, as `path: theirs vs ours`.
pub(super) fn first_difference(path: &str, theirs: &Value, ours: &Value) -> Option<String> {
    match (theirs, ours) {
        (Value::Object(a), Value::Object(b)) => {
            let mut keys: Vec<&String> = a.keys().chain(b.keys()).collect();
            keys.sort();
            keys.dedup();
            keys.into_iter().find_map(|k| {
                first_difference(
                    &format!("{path}.{k}"),
                    a.get(k).unwrap_or(&Value::Null),
                    b.get(k).unwrap_or(&Value::Null),
                )
            })
        }
        (Value::Array(a), Value::Array(b)) if a.len() == b.len() => a
            .iter()
            .zip(b)
            .enumerate()
            .find_map(|(i, (x, y))| first_difference(&format!("{path}[{i}]"), x, y)),
        (Value::Number(a), Value::Number(b)) if a.as_f64() == b.as_f64() => None,
        _ if theirs == ours => None,
        _ => Some(format!("{path} is {theirs} in the checkpoint, {ours} here")),
    }
}

pub(super) fn f64_bits(v: &Value, what: &str) -> std::result::Result<f64, String> {
    v.as_str()
        .and_then(|s| u64::from_str_radix(s, 16).ok())
        .map(f64::from_bits)
        .ok_or_else(|| format!("{what} is not a 16-digit hex bit pattern"))
}

pub(super) fn uint(v: &Value, what: &str) -> std::result::Result<u64, String> {
    v.as_u64().ok_or_else(|| format!("{what} is not a count"))
}

pub(super) fn parse_position(v: &Value) -> std::result::Result<Position, String> {
    Ok(Position {
        epoch: uint(&v["epoch"], "epoch")? as usize,
        step_in_epoch: uint(&v["step_in_epoch"], "step_in_epoch")? as usize,
        global_step: uint(&v["global_step"], "global_step")?,
        epoch_loss_sum: f64_bits(&v["epoch_loss_sum_bits"], "epoch_loss_sum_bits")?,
        epoch_loss_hash: epoch_loss_hash(v)?,
        best: match &v["best"] {
            Value::Null => None,
            b => Some((
                f64_bits(&b[0], "best[0]")?,
                uint(&b[1], "best[1]")? as usize,
            )),
        },
        bad_epochs: uint(&v["bad_epochs"], "bad_epochs")? as usize,
        stopped: v["stopped"].as_bool().ok_or("stopped is not a bool")?,
    })
}

/// The position's `epoch_loss_hash`; a checkpoint written before there
/// was one has none, which is the start's hash at an epoch's start and an
/// error within one (the resumed epoch's hash would be wrong).
fn epoch_loss_hash(v: &Value) -> std::result::Result<u64, String> {
    match &v["epoch_loss_hash"] {
        Value::Null if v["step_in_epoch"].as_u64() == Some(0) => Ok(LOSS_HASH_START),
        Value::Null => Err(
            "no epoch_loss_hash within an epoch (a checkpoint of an older \
                            rtx-train: resume it from an epoch's end)"
                .into(),
        ),
        h => h
            .as_str()
            .filter(|s| s.len() == 16)
            .and_then(|s| u64::from_str_radix(s, 16).ok())
            .ok_or_else(|| "epoch_loss_hash is not 16 hex digits".into()),
    }
}

pub(super) fn real(v: &Value, what: &str) -> std::result::Result<f64, String> {
    v.as_f64().ok_or_else(|| format!("{what} is not a number"))
}

pub(super) fn parse_train(t: &Value) -> std::result::Result<TrainConfig, String> {
    let m = &t["model"];
    let o = &t["optimizer"];
    let r = &o["rule"];
    let rule = match r["kind"].as_str() {
        Some("sgd") => Rule::Sgd {
            momentum: real(&r["momentum"], "momentum")?,
            dampening: real(&r["dampening"], "dampening")?,
            nesterov: r["nesterov"].as_bool().ok_or("nesterov is not a bool")?,
        },
        Some(k @ ("adam" | "adamw")) => {
            let betas = (
                real(&r["betas"][0], "betas[0]")?,
                real(&r["betas"][1], "betas[1]")?,
            );
            let eps = real(&r["eps"], "eps")?;
            if k == "adam" {
                Rule::Adam { betas, eps }
            } else {
                Rule::AdamW { betas, eps }
            }
        }
        other => return Err(format!("unknown optimizer {other:?}")),
    };
    let s = &o["schedule"];
    let schedule = match s["kind"].as_str() {
        Some("constant") => Schedule::Constant,
        Some("step") => Schedule::Step {
            every: uint(&s["every"], "every")?,
            gamma: real(&s["gamma"], "gamma")?,
        },
        Some("cosine") => Schedule::Cosine {
            warmup: uint(&s["warmup"], "warmup")?,
            total: uint(&s["total"], "total")?,
            min_lr: real(&s["min_lr"], "min_lr")?,
        },
        other => return Err(format!("unknown schedule {other:?}")),
    };
    let task = match t["task"].as_str() {
        Some("classify") => Task::Classify,
        Some("regress-mse") => Task::Regress(LossKind::Mse),
        Some("regress-l1") => Task::Regress(LossKind::L1),
        other => return Err(format!("unknown task {other:?}")),
    };
    let early_stopping = match &t["early_stopping"] {
        Value::Null => None,
        e => Some(EarlyStopping {
            metric: e["metric"]
                .as_str()
                .ok_or("early_stopping.metric is not a string")?
                .parse::<Metric>()
                .map_err(|e| e.to_string())?,
            patience: uint(&e["patience"], "patience")? as usize,
        }),
    };
    Ok(TrainConfig {
        target: t["target"]
            .as_str()
            .ok_or("target is not a string")?
            .to_string(),
        task,
        epochs: uint(&t["epochs"], "epochs")? as usize,
        batch: match &t["batch"] {
            Value::Null => None,
            v => Some(uint(v, "batch")? as usize),
        },
        fanouts: t["fanouts"]
            .as_array()
            .ok_or("fanouts is not a list")?
            .iter()
            .map(|v| uint(v, "a fanout").map(|x| x as u32))
            .collect::<std::result::Result<_, _>>()?,
        eval_batch: uint(&t["eval_batch"], "eval_batch")? as usize,
        seed: t["seed"]
            .as_str()
            .and_then(|s| s.parse().ok())
            .ok_or("seed is not a decimal string")?,
        early_stopping,
        model: ModelSettings {
            heads: uint(&m["heads"], "heads")? as usize,
            channels: uint(&m["channels"], "channels")? as usize,
            layers: uint(&m["layers"], "layers")? as usize,
            negative_slope: real(&m["negative_slope"], "negative_slope")?,
            input_dropout: real(&m["input_dropout"], "input_dropout")?,
            attention_dropout: real(&m["attention_dropout"], "attention_dropout")?,
        },
        optimizer: OptimizerConfig {
            rule,
            lr: real(&o["lr"], "lr")?,
            weight_decay: real(&o["weight_decay"], "weight_decay")?,
            clip_norm: o["clip_norm"].as_f64(),
            schedule,
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_epoch_loss_hash_round_trips_and_an_older_checkpoint_has_none_only_at_an_epochs_start() {
        let p = Position {
            step_in_epoch: 3,
            epoch_loss_hash: 0x0123_4567_89ab_cdef,
            ..Position::default()
        };
        let mut v = position_meta(&p);
        assert_eq!(v["epoch_loss_hash"], "0123456789abcdef");
        assert_eq!(parse_position(&v), Ok(p));
        v.as_object_mut().unwrap().remove("epoch_loss_hash");
        let e = parse_position(&v).unwrap_err();
        assert!(e.contains("no epoch_loss_hash within an epoch"), "{e}");
        v["step_in_epoch"] = json!(0);
        assert_eq!(
            parse_position(&v).map(|p| p.epoch_loss_hash),
            Ok(LOSS_HASH_START)
        );
        v["epoch_loss_hash"] = json!("xyz");
        assert!(parse_position(&v).is_err());
    }
}
