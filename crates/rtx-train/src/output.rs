//! What the trainer prints: a line per epoch, or a JSON object per epoch.

use rtx_gnn::metrics::Metric;
use rtx_gnn::train::{EpochReport, Scores, loss_hash_hex};
use serde_json::{Map, Value, json};

/// `loss 0.1234 accuracy 0.8123 macro-f1 0.8001`.
fn scores_text(s: &Scores) -> String {
    let mut out = format!("loss {:.4}", s.loss);
    for (m, v) in &s.metrics {
        out.push_str(&format!(" {} {v:.4}", m.name()));
    }
    out
}

/// `{"loss": .., "accuracy": .., ...}`.
pub fn scores_json(s: &Scores) -> Value {
    let mut o = Map::new();
    o.insert("loss".into(), json!(s.loss));
    for (m, v) in &s.metrics {
        o.insert(key(*m), json!(v));
    }
    Value::Object(o)
}

/// A metric's JSON key (`macro_f1`, not `macro-f1`).
pub fn key(m: Metric) -> String {
    m.name().replace('-', "_")
}

/// The human line of an epoch (`(hash ...)`: the loss hash of its steps).
pub fn epoch_line(r: &EpochReport, epochs: usize, seconds: f64) -> String {
    let mut line = format!(
        "epoch {:>3}/{epochs}  train loss {:.4} (hash {})  lr {:.3e}",
        r.epoch + 1,
        r.train_loss,
        loss_hash_hex(r.loss_hash),
        r.lr
    );
    if let Some(v) = &r.val {
        line.push_str(&format!("  | val {}", scores_text(v)));
    }
    if let Some(t) = &r.test {
        line.push_str(&format!("  | test {}", scores_text(t)));
    }
    line.push_str(&format!("  {seconds:.2} s"));
    if r.best {
        line.push_str("  *");
    }
    if r.stop {
        line.push_str("  (early stop)");
    }
    line
}

/// The JSON object of an epoch: `seconds` the epoch's (its steps and its
/// evaluation), `elapsed` the run's since its first epoch began (set-up,
/// loading and uploads excluded; checkpoint writing included), for
/// time-to-accuracy comparisons (`peers/learn_compare.py`); `loss_hash` the
/// 16 hex digits of the FNV-1a 64 hash of its steps' loss bits
/// (`rtx_gnn::train::loss_hash`).
pub fn epoch_json(r: &EpochReport, seconds: f64, elapsed: f64) -> Value {
    json!({
        "event": "epoch",
        "epoch": r.epoch,
        "global_step": r.global_step,
        "train_loss": r.train_loss,
        "loss_hash": loss_hash_hex(r.loss_hash),
        "lr": r.lr,
        "val": r.val.as_ref().map(scores_json),
        "test": r.test.as_ref().map(scores_json),
        "best": r.best,
        "stop": r.stop,
        "seconds": seconds,
        "elapsed": elapsed,
    })
}
