//! `rtx-bench hetgat`: trains the HetGAT of `docs/workloads.md` on the
//! Harris-shaped graph, with a progress bar, the loss per step and a summary.

use std::time::{Duration, Instant};

use anyhow::Context;
use indicatif::{ProgressBar, ProgressStyle};
use rtx_backend::prelude::*;
use rtx_backend::{BTensor, bf16, f16};
use rtx_backend_cpu::CpuBackend;
use rtx_gnn::graph::{HARRIS_FEATURES, HARRIS_NODES};
use rtx_gnn::{DeviceLoss, HetGat, HetGatConfig, HeteroGraph, MixedHetGat, harris_features};

/// Which backend runs the model.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum BackendKind {
    /// The CPU backend (rayon; any machine).
    Cpu,
    /// The CUDA backend (needs a build with `--features cuda` and a GPU).
    Cuda,
}

/// The element type of the model's activations and messages.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Precision {
    /// Everything in f32.
    F32,
    /// Mixed: forward and backward in bf16 (each op computing in f32 and
    /// rounding once), master weights, loss and SGD in f32.
    Bf16,
    /// Mixed, as `bf16` with f16.
    F16,
}

impl Precision {
    /// The value of `--precision`.
    fn flag(self) -> &'static str {
        match self {
            Precision::F32 => "f32",
            Precision::Bf16 => "bf16",
            Precision::F16 => "f16",
        }
    }

    /// What the run's header says.
    fn name(self) -> &'static str {
        match self {
            Precision::F32 => "f32",
            Precision::Bf16 => "mixed bf16",
            Precision::F16 => "mixed f16",
        }
    }
}

/// Arguments of `rtx-bench hetgat`.
#[derive(Debug, Clone, clap::Args)]
pub struct Args {
    /// Backend to train on.
    #[arg(long, value_enum, default_value = "cpu")]
    pub backend: BackendKind,
    /// Training steps.
    #[arg(long, default_value_t = 20)]
    pub steps: usize,
    /// Disjoint copies of the graph per batch (42,955 links each).
    #[arg(long, default_value_t = 1)]
    pub batch: usize,
    /// SGD learning rate.
    #[arg(long, default_value_t = 1e-3)]
    pub lr: f64,
    /// Seed of the parameter initialization.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Data-parallel over this many GPUs (NCCL; GPU r is rank r), the batch
    /// split by copies; prints a JSON scaling row (see `parallel.rs`).
    #[arg(long, conflicts_with = "cpu_ranks")]
    pub gpus: Option<usize>,
    /// Data-parallel over this many CPU ranks (threads, host communicator).
    #[arg(long)]
    pub cpu_ranks: Option<usize>,
    /// With `--gpus 1`: rounds of `--steps` steps alternating the
    /// single-device step and the one-rank data-parallel step (0: no
    /// comparison).
    #[arg(long, default_value_t = 0)]
    pub rounds: usize,
    /// Precision of the activations and messages (single-device runs).
    #[arg(long, value_enum, default_value = "f32")]
    pub precision: Precision,
    /// After the steps, this many replays of the step recorded once (a CUDA
    /// graph; backends that cannot record skip them), their median printed.
    #[arg(long, default_value_t = 0)]
    pub replay: usize,
}

impl Args {
    /// The defaults, for tests.
    #[cfg(test)]
    pub(crate) fn for_tests() -> Args {
        Args {
            backend: BackendKind::Cpu,
            steps: 1,
            batch: 1,
            lr: 1e-3,
            seed: 0,
            gpus: None,
            cpu_ranks: None,
            rounds: 0,
            precision: Precision::F32,
            replay: 0,
        }
    }
}

/// The Harris workload on a backend: model and inputs over a graph whose
/// index plans were built once.
pub(crate) struct Workload<'g, B: Backend> {
    pub graph: &'g HeteroGraph,
    pub model: HetGat<B, f32>,
    pub x: Vec<BTensor<B, f32>>,
    /// The mixed-precision trainers, made by the first mixed step: a copy
    /// of `model` and `x` rounded once to bf16 or f16.
    mixed_bf16: Option<Mixed<B, bf16>>,
    mixed_f16: Option<Mixed<B, f16>>,
}

/// A mixed-precision trainer and its inputs in `H`.
pub(crate) struct Mixed<B: Backend, H: rtx_backend::Element<Acc = f32>> {
    model: MixedHetGat<B, H>,
    x: Vec<BTensor<B, H>>,
}

impl<B: Backend, H: rtx_backend::Element<Acc = f32>> Mixed<B, H> {
    /// The trainer of a copy of `model` (its weights now) on `x` rounded once to `H`.
    fn of(b: &B, model: &HetGat<B, f32>, x: &[BTensor<B, f32>]) -> anyhow::Result<Self> {
        Ok(Mixed {
            model: MixedHetGat::new(b, model.to_precision::<f32>(b)?)?,
            x: x.iter()
                .map(|x| b.convert::<f32, H>(x))
                .collect::<rtx_backend::Result<_>>()?,
        })
    }

    /// One step enqueued, the loss left on the device.
    fn step(&mut self, b: &B, graph: &HeteroGraph, lr: f64) -> anyhow::Result<DeviceLoss<B, f32>> {
        Ok(self.model.train_step_enqueued(b, graph, &self.x, lr)?)
    }
}

impl<'g, B: Backend> Workload<'g, B> {
    /// Builds the workload of `graph` (`HeteroGraph::harris(batch)`, the
    /// batch read off its node counts) on `b`.
    ///
    /// # Errors
    /// A graph whose node types are not the Harris ones at some batch; model
    /// and backend errors.
    pub(crate) fn new(b: &B, graph: &'g HeteroGraph, seed: u64) -> anyhow::Result<Self> {
        let batch = harris_batch(graph)?;
        let model = HetGat::new(b, graph, HetGatConfig::harris(), seed)?;
        let x = harris_features::<f32>(batch)
            .iter()
            .zip(graph.node_types())
            .map(|(v, t)| b.upload(v, &[t.nodes, HARRIS_FEATURES]))
            .collect::<rtx_backend::Result<Vec<_>>>()?;
        Ok(Workload {
            graph,
            model,
            x,
            mixed_bf16: None,
            mixed_f16: None,
        })
    }

    /// One training step; returns the loss.
    pub(crate) fn train_step(&mut self, b: &B, lr: f64) -> anyhow::Result<f32> {
        Ok(self.model.train_step(b, self.graph, &self.x, lr)?)
    }

    /// One training step at `precision`, enqueued (the loss left on the
    /// device): f32 trains `model`; a mixed precision trains its own copy
    /// of it ([`MixedHetGat`], made by the first mixed step, on the inputs
    /// rounded once).
    pub(crate) fn step_enqueued(
        &mut self,
        b: &B,
        lr: f64,
        precision: Precision,
    ) -> anyhow::Result<DeviceLoss<B, f32>> {
        let (graph, model, x) = (self.graph, &self.model, &self.x);
        Ok(match precision {
            Precision::F32 => self.model.train_step_enqueued(b, graph, &self.x, lr)?,
            Precision::Bf16 => {
                let m = match &mut self.mixed_bf16 {
                    Some(m) => m,
                    slot => slot.insert(Mixed::of(b, model, x)?),
                };
                m.step(b, graph, lr)?
            }
            Precision::F16 => {
                let m = match &mut self.mixed_f16 {
                    Some(m) => m,
                    slot => slot.insert(Mixed::of(b, model, x)?),
                };
                m.step(b, graph, lr)?
            }
        })
    }

    /// One training step at `precision` ([`Workload::step_enqueued`]);
    /// returns the f32 loss.
    pub(crate) fn train_step_at(
        &mut self,
        b: &B,
        lr: f64,
        precision: Precision,
    ) -> anyhow::Result<f32> {
        Ok(self.step_enqueued(b, lr, precision)?.read(b)?)
    }

    /// One inference (forward) pass, finished on the device.
    pub(crate) fn infer(&self, b: &B) -> anyhow::Result<()> {
        let y = self.model.forward(b, self.graph, &self.x)?;
        b.synchronize()?;
        drop(y);
        Ok(())
    }
}

/// The batch of a Harris-shaped graph: the `b` with node counts
/// `HARRIS_NODES[t].1 * b` for every type `t`.
fn harris_batch(graph: &HeteroGraph) -> anyhow::Result<usize> {
    let types = graph.node_types();
    let batch = types.first().map_or(0, |t| t.nodes / HARRIS_NODES[0].1);
    let fits = batch > 0
        && types.len() == HARRIS_NODES.len()
        && types
            .iter()
            .zip(HARRIS_NODES)
            .all(|(t, (name, n))| t.name == name && Some(t.nodes) == n.checked_mul(batch));
    anyhow::ensure!(
        fits,
        "not a Harris-shaped graph: node types {:?}, want {HARRIS_NODES:?} times a batch",
        types
            .iter()
            .map(|t| (t.name.as_str(), t.nodes))
            .collect::<Vec<_>>()
    );
    Ok(batch)
}

/// What [`StaticGraph::time_recorded`] measures: `(train step ms, forward
/// ms, loss of the last replayed step)`.
pub(crate) type Recorded = (Vec<f64>, Vec<f64>, f32);

/// A backend that can also replay a recorded step (CUDA graphs).
pub(crate) trait StaticGraph: rtx_backend::Backend + Sized {
    /// Wall times (ms) of `reps` train steps (SGD at `lr`) and `infer_reps`
    /// forwards (finished on the device) replayed from a recording (a CUDA
    /// graph), when the backend can record work: `(train, infer, loss of the
    /// last replayed step)`.
    fn time_recorded(
        &self,
        _w: &mut Workload<'_, Self>,
        _lr: f64,
        _reps: usize,
        _infer_reps: usize,
    ) -> anyhow::Result<Option<Recorded>> {
        Ok(None)
    }

    /// Wall times (ms) of `reps` train steps at `precision` replayed from a
    /// recording, each waiting for its loss, and the last loss, when the
    /// backend can record work. Runs one unrecorded step first (a mixed
    /// step makes its trainer then), and the recording runs one more.
    fn time_replayed(
        &self,
        _w: &mut Workload<'_, Self>,
        _lr: f64,
        _precision: Precision,
        _reps: usize,
    ) -> anyhow::Result<Option<(Vec<f64>, f32)>> {
        Ok(None)
    }
}

impl StaticGraph for CpuBackend {}

impl<B: Backend> StaticGraph for rtx_backend::HostIndexOps<B> {}

#[cfg(feature = "cuda")]
impl StaticGraph for rtx_backend_cuda::CudaBackend {
    fn time_recorded(
        &self,
        w: &mut Workload<'_, Self>,
        lr: f64,
        reps: usize,
        infer_reps: usize,
    ) -> anyhow::Result<Option<Recorded>> {
        let (graph, x) = (w.graph, &w.x);
        let model = &mut w.model;
        // recording runs the step once (one more SGD update)
        let mut step = self.record(|b| model.train_step_enqueued(b, graph, x, lr))?;
        let mut loss = 0.0;
        let mut train = Vec::with_capacity(reps);
        for _ in 0..reps {
            let t = Instant::now();
            loss = step.replay()?.read(self)?;
            train.push(t.elapsed().as_secs_f64() * 1e3);
        }
        drop(step);
        let mut fwd = self.record(|b| model.forward(b, graph, x))?;
        let mut infer = Vec::with_capacity(infer_reps);
        for _ in 0..infer_reps {
            let t = Instant::now();
            fwd.replay()?;
            self.synchronize()?;
            infer.push(t.elapsed().as_secs_f64() * 1e3);
        }
        Ok(Some((train, infer, loss)))
    }

    fn time_replayed(
        &self,
        w: &mut Workload<'_, Self>,
        lr: f64,
        precision: Precision,
        reps: usize,
    ) -> anyhow::Result<Option<(Vec<f64>, f32)>> {
        w.train_step_at(self, lr, precision)?;
        let mut step = self.record(|b| w.step_enqueued(b, lr, precision))?;
        let mut loss = 0.0;
        let mut times = Vec::with_capacity(reps);
        for _ in 0..reps {
            let t = Instant::now();
            loss = step.replay()?.read(self)?;
            times.push(t.elapsed().as_secs_f64() * 1e3);
        }
        Ok(Some((times, loss)))
    }
}

/// Runs `rtx-bench hetgat`.
pub fn run(args: &Args) -> anyhow::Result<()> {
    anyhow::ensure!(args.steps > 0, "--steps must be at least 1");
    anyhow::ensure!(args.batch > 0, "--batch must be at least 1");
    let dp = crate::parallel::Options {
        batch: args.batch,
        steps: args.steps,
        lr: args.lr,
        seed: args.seed,
        rounds: args.rounds,
    };
    anyhow::ensure!(
        args.precision == Precision::F32 || (args.gpus.is_none() && args.cpu_ranks.is_none()),
        "--precision {} applies to single-device runs; data-parallel runs train in f32",
        args.precision.flag()
    );
    if let Some(n) = args.gpus {
        anyhow::ensure!(n > 0, "--gpus must be at least 1");
        return crate::parallel::run_gpus(&dp, n);
    }
    if let Some(n) = args.cpu_ranks {
        anyhow::ensure!(n > 0, "--cpu-ranks must be at least 1");
        return crate::parallel::run_cpu_ranks(&dp, n);
    }
    match args.backend {
        BackendKind::Cpu => train(&CpuBackend::new(), args),
        BackendKind::Cuda => run_cuda(args),
    }
}

#[cfg(feature = "cuda")]
fn run_cuda(args: &Args) -> anyhow::Result<()> {
    train(&crate::cuda::cuda_backend()?, args)
}

#[cfg(not(feature = "cuda"))]
fn run_cuda(_args: &Args) -> anyhow::Result<()> {
    Err(no_cuda())
}

/// The error of `--backend cuda` in a build without the `cuda` feature.
#[cfg(not(feature = "cuda"))]
pub(crate) fn no_cuda() -> anyhow::Error {
    anyhow::anyhow!(
        "this rtx-bench was built without CUDA support; rebuild with \
         `cargo build --release -p rtx-bench --features cuda` (or use --backend cpu)"
    )
}

fn train<B: StaticGraph>(b: &B, args: &Args) -> anyhow::Result<()> {
    let setup = Instant::now();
    let graph = HeteroGraph::harris(args.batch).context("building the graph")?;
    let mut w = Workload::new(b, &graph, args.seed).context("building the workload")?;
    let nodes: usize = w.graph.node_types().iter().map(|t| t.nodes).sum();
    println!(
        "HetGAT on {}: Harris-shaped graph x{} ({} nodes, {} links), 2 layers x 3 relations, \
         4 heads x 16 channels, {} parameters; {}; SGD lr {}; setup {:.2} s",
        b.name(),
        args.batch,
        nodes,
        w.graph.edges(),
        w.model.params().iter().map(|p| p.numel()).sum::<usize>(),
        args.precision.name(),
        args.lr,
        setup.elapsed().as_secs_f64()
    );
    let pb = ProgressBar::new(args.steps as u64);
    pb.set_style(
        ProgressStyle::with_template("{bar:40} {pos}/{len} steps  {msg}  [{elapsed} < {eta}]")
            .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    let mut losses = Vec::with_capacity(args.steps);
    let mut times = Vec::with_capacity(args.steps);
    let replayed = graph.with_resident(b, || -> anyhow::Result<_> {
        train_loop(b, &mut w, args, &pb, &mut losses, &mut times)?;
        if args.replay == 0 {
            return Ok(None);
        }
        b.time_replayed(&mut w, args.lr, args.precision, args.replay)
    })??;
    pb.finish_and_clear();
    summary(b, args, &losses, &times);
    if let Some((mut ms, loss)) = replayed {
        ms.sort_by(f64::total_cmp);
        println!(
            "recorded: {} replays of the {} step, median {:.3} ms/step (best {:.3}); last loss {loss:.9}",
            ms.len(),
            args.precision.name(),
            ms[ms.len() / 2],
            ms[0]
        );
    } else if args.replay > 0 {
        println!("recorded: {} cannot record a step; no replays", b.name());
    }
    Ok(())
}

fn train_loop<B: Backend>(
    b: &B,
    w: &mut Workload<'_, B>,
    args: &Args,
    pb: &ProgressBar,
    losses: &mut Vec<f32>,
    times: &mut Vec<Duration>,
) -> anyhow::Result<()> {
    for step in 0..args.steps {
        let t = Instant::now();
        let loss = w.train_step_at(b, args.lr, args.precision)?;
        let dt = t.elapsed();
        anyhow::ensure!(loss.is_finite(), "step {step}: the loss is {loss}");
        let line = format!(
            "step {step:>4}  loss {loss:.9}  {:>9.2} ms",
            dt.as_secs_f64() * 1e3
        );
        if pb.is_hidden() {
            println!("{line}");
        } else {
            pb.println(line);
        }
        pb.set_message(format!("loss {loss:.6}"));
        pb.inc(1);
        losses.push(loss);
        times.push(dt);
    }
    Ok(())
}

fn summary<B: Backend>(b: &B, args: &Args, losses: &[f32], times: &[Duration]) {
    let total: Duration = times.iter().sum();
    let steady: Vec<Duration> = times.iter().skip(1).copied().collect();
    let steady_ms = if steady.is_empty() {
        total.as_secs_f64() * 1e3
    } else {
        steady.iter().sum::<Duration>().as_secs_f64() * 1e3 / steady.len() as f64
    };
    println!(
        "done: {} steps on {} at batch {} in {:.2} s; {:.2} ms/step (mean after the first: {:.2} ms); \
         loss {:.9} -> {:.9}",
        args.steps,
        b.name(),
        args.batch,
        total.as_secs_f64(),
        total.as_secs_f64() * 1e3 / args.steps as f64,
        steady_ms,
        losses[0],
        losses[losses.len() - 1],
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_step_at_batch_1_and_cuda_without_feature_is_an_error() {
        let b = CpuBackend::new();
        let g = HeteroGraph::harris(1).unwrap();
        let mut w = Workload::new(&b, &g, 0).unwrap();
        let loss = w.train_step(&b, 1e-3).unwrap();
        assert!(loss.is_finite() && loss > 0.0, "{loss}");
        if !cfg!(feature = "cuda") {
            let args = Args {
                backend: BackendKind::Cuda,
                ..Args::for_tests()
            };
            let e = run(&args).unwrap_err().to_string();
            assert!(e.contains("--features cuda"), "{e}");
        }
    }

    #[test]
    fn a_mixed_step_rounds_the_inputs_once_and_is_repeatable() {
        let b = CpuBackend::new();
        let g = HeteroGraph::harris(1).unwrap();
        let run = |p| {
            let mut w = Workload::new(&b, &g, 0).unwrap();
            let l = [0; 2].map(|_| w.train_step_at(&b, 1e-3, p).unwrap().to_bits());
            let len = |x: Option<usize>| x.unwrap_or(0);
            (
                l,
                len(w.mixed_bf16.as_ref().map(|m| m.x.len())),
                len(w.mixed_f16.as_ref().map(|m| m.x.len())),
            )
        };
        let f32 = run(Precision::F32);
        let bf = run(Precision::Bf16);
        let h = run(Precision::F16);
        assert_eq!((bf.1, bf.2, h.1, h.2, f32.1), (2, 0, 0, 2, 0));
        assert_eq!(bf, run(Precision::Bf16), "bf16 steps repeat their bits");
        // a bf16 forward rounds: its loss is near the f32 one, not equal
        let (a, c) = (f32::from_bits(f32.0[0]), f32::from_bits(bf.0[0]));
        assert!(a != c && ((a - c) / a).abs() < 0.05, "f32 {a}, bf16 {c}");
        let e = run_args(Args {
            precision: Precision::Bf16,
            cpu_ranks: Some(2),
            ..Args::for_tests()
        });
        assert!(
            e.contains("--precision bf16 applies to single-device runs"),
            "{e}"
        );
    }

    fn run_args(args: Args) -> String {
        run(&args).unwrap_err().to_string()
    }

    #[test]
    fn the_workload_reads_the_batch_off_the_graph() {
        let b = CpuBackend::new();
        let g = HeteroGraph::harris(3).unwrap();
        let w = Workload::new(&b, &g, 0).unwrap();
        assert_eq!(w.x[0].shape(), &[30_000, HARRIS_FEATURES]);
        assert_eq!(w.x[1].shape(), &[15_000, HARRIS_FEATURES]);
        let want = harris_features::<f32>(3);
        assert_eq!(b.download(&w.x[1]).unwrap(), want[1]);
        // a graph that is not Harris-shaped at any batch
        let odd = rtx_gnn::graph::harris_like(10_000, 4_000, [10, 10, 10], 1).unwrap();
        let e = Workload::new(&b, &odd, 0).err().unwrap().to_string();
        assert!(e.contains("not a Harris-shaped graph"), "{e}");
    }
}
