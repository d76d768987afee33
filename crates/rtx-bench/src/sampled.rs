//! `rtx-bench sampled`: neighbour-sampled mini-batch training of the HetGAT
//! on the ogbn-mag-shaped graph (`rtx_gnn::mag`), on the device end to end.
//! Each step samples the subgraph around a batch of paper seeds (an epoch's
//! permutation, `epoch_seeds`) with the given fanouts on the device, gathers
//! its features and trains one step on its device lists (plans built on the
//! device). Peer: `peers/pyg_sampled.py` (PyG HeteroConv of GATConv with a
//! sampler written in torch on the GPU, the same graph and fanouts).
//!
//! Rows (JSON lines, suite `sampled`, case `mag-b{batch}-f{fanouts}`):
//! `rtx-sample` (sampling + feature gather), `rtx-train` (forward, backward,
//! SGD, loss read), `rtx-step` (both) with sampled edges per second,
//! `rtx-infer-all-papers` (sampled inference over every paper in batches),
//! `rtx-graph-store-build` (the CSRs on the device, once), and with
//! `--check-steps K` `rtx-sampled-check` (the first K steps' loss bits on
//! the CPU backend against the device's). `--epoch` trains one whole epoch
//! and reports the FNV-1a hash of its loss bits (equal between runs).

use std::time::Instant;

use rtx_backend::sample::SampleSpec;
use rtx_backend::{BTensor, Backend, SampleOps};
use rtx_backend_cpu::CpuBackend;
use rtx_backend_cuda::CudaBackend;
use rtx_gnn::mag::{epoch_seeds, mag_config, mag_store};
use rtx_gnn::{GraphStore, HetGat};
use serde_json::json;

use crate::cuda_timing::{emit, median};
use crate::hetgat::Precision;
use crate::sampled_trainer;

/// Arguments of `rtx-bench sampled`.
#[derive(Debug, Clone, clap::Args)]
pub struct Args {
    /// CUDA device ordinal.
    #[arg(long, default_value_t = 0)]
    pub device: usize,
    /// Paper seeds per mini-batch.
    #[arg(long, default_value_t = 1024)]
    pub batch: usize,
    /// Fanout per hop (every relation), comma-separated.
    #[arg(long, default_value = "15,10", value_delimiter = ',')]
    pub fanouts: Vec<u32>,
    /// The graph at 1/div of ogbn-mag's size (1: full size).
    #[arg(long, default_value_t = 1)]
    pub div: usize,
    /// Timed steps (after 3 warm-up steps).
    #[arg(long, default_value_t = 30)]
    pub steps: usize,
    /// Train one whole epoch instead and report the hash of its loss bits.
    #[arg(long)]
    pub epoch: bool,
    /// Steps whose loss bits are compared with the CPU backend (0: none).
    #[arg(long, default_value_t = 3)]
    pub check_steps: usize,
    /// Inference batches over the papers (0: every paper).
    #[arg(long, default_value_t = 0)]
    pub infer_batches: usize,
    /// Time the training surface's step instead (`rtx_gnn::train::Trainer`
    /// on the planted mag-shaped classification: cross-entropy over the
    /// seeds, AdamW; `sampled_trainer.rs`): row `rtx-trainer-step`.
    #[arg(long)]
    pub trainer: bool,
    /// With `--trainer`: the element type of the model's passes.
    #[arg(long, value_enum, default_value_t = Precision::F32)]
    pub precision: Precision,
}

/// The run's seed.
const RUN_SEED: u64 = 99;
/// The model's initialization seed.
const MODEL_SEED: u64 = 42;
/// SGD step size.
const LR: f64 = 1e-3;

/// The training loop's state on one backend.
struct Trainer<B: Backend + SampleOps> {
    store: GraphStore<B, f32>,
    model: Option<HetGat<B, f32>>,
    spec: SampleSpec,
    batch: usize,
}

impl<B: Backend + SampleOps> Trainer<B> {
    fn new(b: &B, a: &Args) -> anyhow::Result<Self> {
        let store = mag_store::<B, f32>(b, a.div)?;
        let spec = SampleSpec::uniform(0, &a.fanouts, store.relations().len(), RUN_SEED, 0);
        Ok(Trainer {
            store,
            model: None,
            spec,
            batch: a.batch,
        })
    }

    fn papers(&self) -> usize {
        self.store.node_types()[0].nodes
    }

    fn steps_per_epoch(&self) -> usize {
        self.papers().div_ceil(self.batch)
    }

    /// Samples step `step`'s batch: (ms, the batch). Synchronizes.
    fn sample(&self, b: &B, step: usize) -> anyhow::Result<(f64, rtx_gnn::MiniBatch<B, f32>)> {
        let seeds = epoch_seeds(self.papers(), self.batch, step % self.steps_per_epoch())?;
        b.synchronize()?;
        let t = Instant::now();
        let seeds = b.index_from_host(&seeds)?;
        let spec = SampleSpec {
            step: step as u64,
            ..self.spec.clone()
        };
        let mb = self.store.sample(b, &seeds, &spec)?;
        b.synchronize()?;
        Ok((t.elapsed().as_secs_f64() * 1e3, mb))
    }

    /// One step: (sample ms, train ms, edges, loss).
    fn step(&mut self, b: &B, step: usize) -> anyhow::Result<(f64, f64, usize, f32)> {
        let (ms_sample, mb) = self.sample(b, step)?;
        let t = Instant::now();
        let model = match &mut self.model {
            Some(m) => m,
            None => self
                .model
                .insert(HetGat::new(b, &mb.graph, mag_config(), MODEL_SEED)?),
        };
        let loss = model.train_step(b, &mb.graph, &mb.x, LR)?;
        Ok((
            ms_sample,
            t.elapsed().as_secs_f64() * 1e3,
            mb.graph.edges(),
            loss,
        ))
    }
}

/// FNV-1a 64 of the loss bits.
fn fnv(losses: &[f32]) -> String {
    let mut h = 0xcbf2_9ce4_8422_2325u64;
    for l in losses {
        for byte in l.to_bits().to_le_bytes() {
            h ^= u64::from(byte);
            h = h.wrapping_mul(0x0100_0000_01b3);
        }
    }
    format!("{h:016x}")
}

/// Runs `rtx-bench sampled`.
///
/// # Errors
/// Backend errors; no CUDA device; a CPU check that differs.
pub fn run(a: &Args) -> anyhow::Result<()> {
    let g = CudaBackend::new(a.device)?;
    g.load_kernels()?;
    println!(
        "{}",
        json!({"device": g.device_name(), "impl": "rtx", "arch": g.arch(), "suite": "sampled"})
    );
    let fan: Vec<String> = a.fanouts.iter().map(u32::to_string).collect();
    let case = format!(
        "mag{}-b{}-f{}",
        if a.div == 1 {
            String::new()
        } else {
            format!("-div{}", a.div)
        },
        a.batch,
        fan.join("x")
    );
    if a.trainer {
        return trainer_step(&g, a, &case);
    }
    let t = Instant::now();
    let mut tr = Trainer::new(&g, a)?;
    g.synchronize()?;
    emit(
        "sampled",
        &case,
        "rtx-graph-store-build",
        t.elapsed().as_secs_f64() * 1e3,
        None,
        &[("edges", json!(tr.store.edges()))],
    );
    let mut losses = Vec::new();
    if a.epoch {
        let steps = tr.steps_per_epoch();
        let t = Instant::now();
        for s in 0..steps {
            losses.push(tr.step(&g, s)?.3);
        }
        let ms = t.elapsed().as_secs_f64() * 1e3;
        emit(
            "sampled",
            &case,
            "rtx-epoch",
            ms,
            None,
            &[
                ("steps", json!(steps)),
                ("loss_bits_fnv", json!(fnv(&losses))),
                ("first_loss", json!(losses[0])),
                ("last_loss", json!(losses[steps - 1])),
            ],
        );
    } else {
        let (mut ts, mut tt, mut tot, mut eps) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
        for s in 0..a.steps + 3 {
            let (ms_s, ms_t, edges, loss) = tr.step(&g, s)?;
            losses.push(loss);
            if s >= 3 {
                ts.push(ms_s);
                tt.push(ms_t);
                tot.push(ms_s + ms_t);
                eps.push(edges as f64);
            }
        }
        let edges = median(eps);
        let extra = [("edges", json!(edges)), ("batch", json!(a.batch))];
        emit("sampled", &case, "rtx-sample", median(ts), None, &extra);
        emit("sampled", &case, "rtx-train", median(tt), None, &extra);
        let step = median(tot);
        emit(
            "sampled",
            &case,
            "rtx-step",
            step,
            None,
            &[
                ("edges", json!(edges)),
                ("sampled_edges_per_s", json!((edges / step * 1e3).round())),
                ("loss_bits_fnv", json!(fnv(&losses))),
            ],
        );
        infer(&g, &tr, a, &case)?;
    }
    if a.check_steps > 0 {
        check(a, &case, &losses)?;
    }
    Ok(())
}

/// `--trainer`: the training surface's sampled step (`sampled_trainer`).
fn trainer_step(g: &CudaBackend, a: &Args, case: &str) -> anyhow::Result<()> {
    let t = Instant::now();
    let data = sampled_trainer::dataset(a.div)?;
    let made = t.elapsed().as_secs_f64() * 1e3;
    let config = sampled_trainer::config(a.batch, &a.fanouts);
    let run =
        sampled_trainer::time_steps(g, &data, config, a.precision, a.steps, &|| g.activity())?;
    let steps = run.ms.len() as f64;
    let per_step = |n: u64| n as f64 / steps;
    emit(
        "sampled",
        case,
        "rtx-trainer-step",
        median(run.ms.clone()),
        None,
        &[
            ("steps", json!(run.ms.len())),
            (
                "precision",
                json!(format!("{:?}", a.precision).to_lowercase()),
            ),
            ("objective", json!("cross-entropy over the seeds, adamw")),
            ("loss_hash", json!(run.hash())),
            ("launches_per_step", json!(per_step(run.activity.launches))),
            ("copies_per_step", json!(per_step(run.activity.copies))),
            (
                "allocations_per_step",
                json!(per_step(run.activity.allocations)),
            ),
            ("waits_per_step", json!(per_step(run.activity.waits))),
            (
                "wait_ms_per_step",
                json!(per_step(run.activity.wait_us) / 1000.0),
            ),
            ("dataset_ms", json!(made)),
        ],
    );
    Ok(())
}

/// Sampled inference over the papers in batches (the model as trained).
fn infer(g: &CudaBackend, tr: &Trainer<CudaBackend>, a: &Args, case: &str) -> anyhow::Result<()> {
    let Some(model) = &tr.model else {
        return Ok(());
    };
    let n = if a.infer_batches == 0 {
        tr.steps_per_epoch()
    } else {
        a.infer_batches.min(tr.steps_per_epoch())
    };
    g.synchronize()?;
    let t = Instant::now();
    for s in 0..n {
        let (_, mb) = tr.sample(g, s)?;
        let y: BTensor<CudaBackend, f32> = model.forward(g, &mb.graph, &mb.x)?;
        drop(y);
    }
    g.synchronize()?;
    let ms = t.elapsed().as_secs_f64() * 1e3;
    emit(
        "sampled",
        case,
        "rtx-infer-all-papers",
        ms,
        None,
        &[
            ("batches", json!(n)),
            ("ms_per_batch", json!(ms / n as f64)),
        ],
    );
    Ok(())
}

/// The first `check_steps` steps again on the CPU backend with the
/// reference dense kernels (the device's summation orders): the same loss bits.
fn check(a: &Args, case: &str, device: &[f32]) -> anyhow::Result<()> {
    let cpu = CpuBackend::reference();
    let mut tr = Trainer::new(&cpu, a)?;
    let k = a.check_steps.min(device.len());
    let mut same = true;
    for (s, &want) in device.iter().enumerate().take(k) {
        let got = tr.step(&cpu, s)?.3;
        same &= got.to_bits() == want.to_bits();
    }
    emit(
        "sampled",
        case,
        "rtx-sampled-check",
        0.0,
        None,
        &[("steps", json!(k)), ("loss_bits_equal_cpu", json!(same))],
    );
    anyhow::ensure!(
        same,
        "{case}: a loss of the first {k} steps differs between CUDA and the CPU"
    );
    Ok(())
}
