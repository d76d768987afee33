//! `rtx-bench sampled --trainer`: the sampled step of the training surface
//! (`rtx_gnn::train::Trainer`), as a user's run takes it: the planted
//! mag-shaped classification (`planted::mag_classification` at 1/`div`,
//! homophily 0.5, feature signal 0.2), 64 classes, cross-entropy over each
//! mini-batch's seeds, AdamW (lr 0.01, weight decay 0.01), the default
//! HetGAT (2 layers x 4 heads x 16 channels), in f32 or mixed bf16 / f16.
//! A step is everything between two of the trainer's step reports:
//! sampling on the device, the feature gather, forward, backward, the
//! optimizer, the loss read. Row `rtx-trainer-step` (median of the timed
//! steps after 3 warm-up steps) with the loss hash of those steps
//! (`rtx_gnn::train::loss_hash`: equal between runs and backends), and on
//! the GPU the launches, copies, allocations and host waits per timed step
//! (`CudaBackend::activity`): what the step pays for besides kernel time.

use std::time::Instant;

use rtx_backend::{Backend, Element, SampleOps, TrainOps, bf16, f16};
use rtx_backend_cuda::StreamActivity;
use rtx_gnn::optim::{OptimizerConfig, Rule, Schedule};
use rtx_gnn::train::{
    ModelSettings, StepReport, Task, TrainConfig, Trainer, loss_hash, loss_hash_hex,
};
use rtx_gnn::{Dataset, planted};

use crate::hetgat::Precision;

/// Steps before the timed ones.
pub const WARMUP: usize = 3;

/// The run's seed (data, model, shuffle, samples).
const SEED: u64 = 99;

/// The timed steps: each step's milliseconds and loss.
#[derive(Debug, Clone, PartialEq)]
pub struct TrainerSteps {
    /// Milliseconds of each timed step.
    pub ms: Vec<f64>,
    /// The loss of each timed step.
    pub losses: Vec<f64>,
    /// The backend's stream activity over the timed steps (all of them
    /// together), as the caller's probe counts it.
    pub activity: StreamActivity,
}

impl TrainerSteps {
    /// The loss hash of the timed steps, as printed.
    pub fn hash(&self) -> String {
        loss_hash_hex(loss_hash(self.losses.iter().copied()))
    }
}

/// The planted mag-shaped classification at 1/`div`.
///
/// # Errors
/// As [`planted::mag_classification`].
pub fn dataset(div: usize) -> anyhow::Result<Dataset> {
    Ok(planted::mag_classification(div, 0.5, 0.2, SEED)?)
}

/// The trainer's settings: seeds per mini-batch, fanouts, AdamW.
pub fn config(batch: usize, fanouts: &[u32]) -> TrainConfig {
    TrainConfig {
        target: "paper".into(),
        task: Task::Classify,
        epochs: 1,
        batch: Some(batch),
        fanouts: fanouts.to_vec(),
        eval_batch: 4096,
        seed: SEED,
        early_stopping: None,
        model: ModelSettings::default(),
        optimizer: OptimizerConfig {
            rule: Rule::AdamW {
                betas: (0.9, 0.999),
                eps: 1e-8,
            },
            lr: 0.01,
            weight_decay: 0.01,
            clip_norm: None,
            schedule: Schedule::Constant,
        },
    }
}

/// Times `steps` steps after [`WARMUP`] ones (fewer when the epoch is
/// shorter) on `b` in `precision`; `probe` reads the backend's stream
/// activity (`CudaBackend::activity`; a backend without one: the default),
/// read when the timed steps start and when they end.
///
/// # Errors
/// As [`Trainer::new`] and [`Trainer::run_epoch`]; an epoch with no step to
/// time.
pub fn time_steps<B: Backend + TrainOps + SampleOps + 'static>(
    b: &B,
    data: &Dataset,
    config: TrainConfig,
    precision: Precision,
    steps: usize,
    probe: &dyn Fn() -> StreamActivity,
) -> anyhow::Result<TrainerSteps> {
    match precision {
        Precision::F32 => time_in::<B, f32>(b, data, config, steps, probe),
        Precision::Bf16 => time_in::<B, bf16>(b, data, config, steps, probe),
        Precision::F16 => time_in::<B, f16>(b, data, config, steps, probe),
    }
}

fn time_in<B: Backend + TrainOps + SampleOps + 'static, T: Element>(
    b: &B,
    data: &Dataset,
    config: TrainConfig,
    steps: usize,
    probe: &dyn Fn() -> StreamActivity,
) -> anyhow::Result<TrainerSteps> {
    let mut trainer = Trainer::<B, T>::new(b, data, config)?;
    let want = WARMUP + steps;
    let mut out = TrainerSteps {
        ms: Vec::new(),
        losses: Vec::new(),
        activity: StreamActivity::default(),
    };
    let mut last = Instant::now();
    let mut seen = 0;
    let mut start = StreamActivity::default();
    trainer.run_epoch(&mut |r: &StepReport| {
        let now = Instant::now();
        if seen >= WARMUP {
            out.ms.push(now.duration_since(last).as_secs_f64() * 1e3);
            out.losses.push(r.loss);
            out.activity = probe().since(&start);
        } else if seen + 1 == WARMUP {
            start = probe();
        }
        last = now;
        seen += 1;
        seen < want
    })?;
    anyhow::ensure!(
        !out.ms.is_empty(),
        "an epoch of {seen} steps leaves none to time after {WARMUP} warm-up steps: \
         a smaller --batch or --div"
    );
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rtx_backend_cpu::CpuBackend;

    #[test]
    fn the_timed_steps_repeat_their_losses_on_the_cpu() {
        let cpu = CpuBackend::reference();
        let data = dataset(256).unwrap();
        let none = StreamActivity::default;
        let run =
            || time_steps(&cpu, &data, config(64, &[5, 3]), Precision::F32, 2, &none).unwrap();
        let (a, b) = (run(), run());
        assert_eq!(a.ms.len(), 2);
        assert!(a.ms.iter().all(|&t| t > 0.0));
        assert!(a.losses.iter().all(|l| l.is_finite() && *l > 0.0), "{a:?}");
        assert_eq!(a.losses, b.losses, "the same steps");
        assert_eq!(a.hash(), b.hash());
        assert_eq!(a.hash().len(), 16);
        let other = time_steps(&cpu, &data, config(32, &[5, 3]), Precision::F32, 2, &none).unwrap();
        assert_ne!(a.hash(), other.hash(), "other batches, other losses");
    }

    #[test]
    fn too_few_steps_to_time_is_an_error() {
        let cpu = CpuBackend::new();
        let data = dataset(256).unwrap();
        let papers = data.node_types[data.type_index("paper").unwrap()].nodes;
        let none = StreamActivity::default;
        let e =
            time_steps(&cpu, &data, config(papers, &[2]), Precision::F32, 1, &none).unwrap_err();
        assert!(e.to_string().contains("warm-up"), "{e}");
    }

    #[test]
    fn the_activity_is_the_probes_change_over_the_timed_steps() {
        // a probe that counts its own reads as launches: read once when the
        // warm-up ends and once per timed step, the last read minus the
        // first is the number of timed steps
        let cpu = CpuBackend::new();
        let data = dataset(256).unwrap();
        let reads = std::cell::Cell::new(0u64);
        let probe = || {
            reads.set(reads.get() + 1);
            StreamActivity {
                launches: reads.get(),
                waits: 7 * reads.get(),
                ..StreamActivity::default()
            }
        };
        let run = time_steps(&cpu, &data, config(64, &[5, 3]), Precision::F32, 3, &probe).unwrap();
        assert_eq!(run.ms.len(), 3);
        assert_eq!(reads.get(), 4, "one read at the start, one per timed step");
        assert_eq!(run.activity.launches, 3);
        assert_eq!(run.activity.waits, 21);
        assert_eq!(run.activity.copies, 0);
    }
}
