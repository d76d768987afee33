//! Evaluation metrics, computed on the host in `f64` with a fixed summation
//! order (so the same inputs give the same bits on every run): accuracy and
//! macro-F1 for node classification, MSE, MAE and R² for node regression,
//! each defined as scikit-learn defines it, and [`Metric`], the names a
//! command line selects them by.
//!
//! Bad input is an [`Error::Model`] naming what is wrong (lengths that
//! differ, a class index at or past the class count, a NaN); nothing here
//! panics.
//!
//! ```
//! use rtx_gnn::metrics::{accuracy, argmax_rows, macro_f1};
//!
//! // two nodes, three classes: logits row by row
//! let pred = argmax_rows(&[0.1, 2.0, -1.0, 3.0, 0.0, 3.0], 3)?;
//! assert_eq!(pred, [1, 0]); // the first maximum wins a tie
//! assert_eq!(accuracy(&pred, &[1, 2])?, 0.5);
//! // classes 0, 1 and 2 each appear in labels or predictions; only 1 is right
//! assert!((macro_f1(&pred, &[1, 2], 3)? - 1.0 / 3.0).abs() < 1e-15);
//! # Ok::<(), rtx_gnn::Error>(())
//! ```

use std::fmt;
use std::str::FromStr;

use crate::{Error, Result};

fn same_len(what: &str, a: usize, b: usize) -> Result<()> {
    if a == b {
        Ok(())
    } else {
        Err(Error::Model(format!(
            "{what}: {a} predictions but {b} labels or targets"
        )))
    }
}

/// The fraction of `pred[i] == labels[i]`.
///
/// # Errors
/// Lengths that differ, or no labels at all (accuracy of nothing is not
/// defined).
pub fn accuracy(pred: &[u32], labels: &[u32]) -> Result<f64> {
    same_len("accuracy", pred.len(), labels.len())?;
    if labels.is_empty() {
        return Err(Error::Model("accuracy: no labels".into()));
    }
    let correct = pred.iter().zip(labels).filter(|(p, l)| p == l).count();
    Ok(correct as f64 / labels.len() as f64)
}

/// Macro-averaged F1, as scikit-learn's
/// `f1_score(labels, pred, average="macro", zero_division=0)`: the
/// unweighted mean, over the classes that occur in `labels` or in `pred`
/// (classes in neither are left out of the mean, as scikit-learn leaves
/// them out when it is not given `labels=`), of each class's
/// `F1 = 2 TP / (2 TP + FP + FN)`. A class that is predicted but never
/// true, or true but never predicted, has `TP = 0` and so `F1 = 0` (the
/// `zero_division=0` convention: its undefined precision or recall counts
/// as 0).
///
/// # Errors
/// Lengths that differ, no labels, or a label or prediction `>= classes`
/// (the error names which one and where).
pub fn macro_f1(pred: &[u32], labels: &[u32], classes: usize) -> Result<f64> {
    same_len("macro-F1", pred.len(), labels.len())?;
    if labels.is_empty() {
        return Err(Error::Model("macro-F1: no labels".into()));
    }
    let class = |what: &str, i: usize, c: u32| -> Result<usize> {
        let c = c as usize;
        if c < classes {
            Ok(c)
        } else {
            Err(Error::Model(format!(
                "macro-F1: {what}[{i}] = {c} is not below the class count {classes}"
            )))
        }
    };
    // per class: true positives, false positives, false negatives
    let mut counts = vec![[0u64; 3]; classes];
    for (i, (&p, &l)) in pred.iter().zip(labels).enumerate() {
        let (p, l) = (class("pred", i, p)?, class("labels", i, l)?);
        if p == l {
            counts[p][0] += 1;
        } else {
            counts[p][1] += 1;
            counts[l][2] += 1;
        }
    }
    let (mut sum, mut present) = (0.0f64, 0usize);
    for &[tp, fp, fn_] in &counts {
        if tp + fp + fn_ > 0 {
            sum += (2 * tp) as f64 / (2 * tp + fp + fn_) as f64;
            present += 1;
        }
    }
    // labels is not empty, so at least one class is present
    Ok(sum / present as f64)
}

/// The index of each row's largest logit (`logits` is `[rows, classes]`,
/// row-major); the first maximum wins a tie, as `torch.argmax` and
/// `numpy.argmax` do. Infinities are ordinary values.
///
/// # Errors
/// `classes == 0`, a length that is not a multiple of `classes`, more
/// classes than `u32` indexes, or a row holding a NaN (named by its index).
pub fn argmax_rows(logits: &[f32], classes: usize) -> Result<Vec<u32>> {
    if classes == 0 {
        return Err(Error::Model("argmax: 0 classes".into()));
    }
    if u32::try_from(classes - 1).is_err() {
        return Err(Error::Model(format!(
            "argmax: {classes} classes do not fit u32 class indices"
        )));
    }
    if !logits.len().is_multiple_of(classes) {
        return Err(Error::Model(format!(
            "argmax: {} logits are not rows of {classes} classes",
            logits.len()
        )));
    }
    logits
        .chunks_exact(classes)
        .enumerate()
        .map(|(r, row)| {
            if row.iter().any(|v| v.is_nan()) {
                return Err(Error::Model(format!("argmax: row {r} holds a NaN")));
            }
            let mut best = 0;
            for (c, &v) in row.iter().enumerate().skip(1) {
                if v > row[best] {
                    best = c;
                }
            }
            // classes - 1 fits u32 (checked above)
            Ok(best as u32)
        })
        .collect()
}

/// Regression metrics of [`regression_metrics`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RegressionMetrics {
    /// Mean squared error over every element.
    pub mse: f64,
    /// Mean absolute error over every element.
    pub mae: f64,
    /// R², averaged uniformly over the outputs.
    pub r2: f64,
}

/// MSE, MAE and R² of `pred` against `target`, both `[rows, dim]` row-major.
///
/// * `mse` and `mae`: means over all `rows * dim` elements (scikit-learn's
///   `mean_squared_error` / `mean_absolute_error` with the default
///   `multioutput="uniform_average"`, which weighs every element equally
///   since every output has `rows` of them).
/// * `r2`: scikit-learn's `r2_score(multioutput="uniform_average")`: per
///   output column `j`, `1 - SS_res / SS_tot` with
///   `SS_res = sum_i (t_ij - p_ij)^2` and
///   `SS_tot = sum_i (t_ij - mean_i t_ij)^2`, then the mean over the
///   columns. A column whose targets are constant (`SS_tot = 0`) scores as
///   scikit-learn's `force_finite=True` rule scores it: `1.0` if its
///   prediction is perfect (`SS_res = 0`), else `0.0`. (A perfect column
///   scores `1.0` whatever `SS_tot` is.)
///
/// # Errors
/// `dim == 0`, lengths that differ or are not rows of `dim`, fewer than 2
/// rows (R² is not defined there; scikit-learn returns NaN with a warning),
/// or a NaN or infinite value (scikit-learn rejects those too; the error
/// names the first).
pub fn regression_metrics(pred: &[f32], target: &[f32], dim: usize) -> Result<RegressionMetrics> {
    if dim == 0 {
        return Err(Error::Model("regression metrics: dim 0".into()));
    }
    same_len("regression metrics", pred.len(), target.len())?;
    if !target.len().is_multiple_of(dim) {
        return Err(Error::Model(format!(
            "regression metrics: {} values are not rows of {dim}",
            target.len()
        )));
    }
    let rows = target.len() / dim;
    if rows < 2 {
        return Err(Error::Model(format!(
            "regression metrics: R² needs at least 2 rows, got {rows}"
        )));
    }
    for (what, xs) in [("pred", pred), ("target", target)] {
        if let Some(i) = xs.iter().position(|v| !v.is_finite()) {
            return Err(Error::Model(format!(
                "regression metrics: {what}[{i}] = {} is not finite",
                xs[i]
            )));
        }
    }
    let (mut se, mut ae) = (0.0f64, 0.0f64);
    for (&p, &t) in pred.iter().zip(target) {
        let d = f64::from(p) - f64::from(t);
        se += d * d;
        ae += d.abs();
    }
    let n = target.len() as f64;
    let mut r2_sum = 0.0f64;
    for j in 0..dim {
        let mean = column(target, j, dim).sum::<f64>() / rows as f64;
        let ss_res: f64 = column(target, j, dim)
            .zip(column(pred, j, dim))
            .map(|(t, p)| (t - p) * (t - p))
            .sum();
        let ss_tot: f64 = column(target, j, dim)
            .map(|t| (t - mean) * (t - mean))
            .sum();
        r2_sum += if ss_res == 0.0 {
            1.0
        } else if ss_tot == 0.0 {
            0.0
        } else {
            1.0 - ss_res / ss_tot
        };
    }
    Ok(RegressionMetrics {
        mse: se / n,
        mae: ae / n,
        r2: r2_sum / dim as f64,
    })
}

/// Column `j` of a row-major `[rows, dim]` slice, in `f64`.
fn column(xs: &[f32], j: usize, dim: usize) -> impl Iterator<Item = f64> + '_ {
    xs.iter().skip(j).step_by(dim).map(|&v| f64::from(v))
}

/// A metric to report or to select the best epoch by (`--metric`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Metric {
    /// [`accuracy`] (classification).
    Accuracy,
    /// [`macro_f1`] (classification).
    MacroF1,
    /// [`RegressionMetrics::mse`].
    Mse,
    /// [`RegressionMetrics::mae`].
    Mae,
    /// [`RegressionMetrics::r2`].
    R2,
    /// The training objective's value.
    Loss,
}

impl Metric {
    /// Every metric, in the order of the names [`Metric::from_str`] lists.
    pub const ALL: [Metric; 6] = [
        Metric::Accuracy,
        Metric::MacroF1,
        Metric::Mse,
        Metric::Mae,
        Metric::R2,
        Metric::Loss,
    ];

    /// The command-line name: `accuracy`, `macro-f1`, `mse`, `mae`, `r2`,
    /// `loss`.
    pub fn name(self) -> &'static str {
        match self {
            Metric::Accuracy => "accuracy",
            Metric::MacroF1 => "macro-f1",
            Metric::Mse => "mse",
            Metric::Mae => "mae",
            Metric::R2 => "r2",
            Metric::Loss => "loss",
        }
    }

    /// Whether a larger value is better (accuracy, macro-F1, R²) or a
    /// smaller one (MSE, MAE, loss).
    pub fn higher_is_better(self) -> bool {
        matches!(self, Metric::Accuracy | Metric::MacroF1 | Metric::R2)
    }
}

impl fmt::Display for Metric {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Metric {
    type Err = Error;

    /// A metric by its [`Metric::name`] (ASCII case ignored).
    fn from_str(s: &str) -> Result<Metric> {
        Metric::ALL
            .into_iter()
            .find(|m| m.name().eq_ignore_ascii_case(s))
            .ok_or_else(|| {
                let names: Vec<_> = Metric::ALL.iter().map(|m| m.name()).collect();
                Error::Model(format!(
                    "unknown metric {s:?}: expected one of {}",
                    names.join(", ")
                ))
            })
    }
}
