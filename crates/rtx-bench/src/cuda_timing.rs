//! Shared helpers of the `index` and `transpose` suites: workload data,
//! timing (CUDA events on the device, wall clock on the host) and JSON rows
//! in the anchors format.

use std::time::Instant;

use rtx_backend::prelude::*;
use rtx_backend::workload::value;
use rtx_backend::{BTensor, Element, Result};
use rtx_backend_cuda::{CudaBackend, CudaBuffer, ScatterForm};

/// Prints one JSON line `{"suite", "case", "impl", "ms", "gbps"?, extra...}`.
pub fn emit(
    suite: &str,
    case: &str,
    imp: &str,
    ms: f64,
    bytes: Option<f64>,
    extra: &[(&str, serde_json::Value)],
) {
    let mut row = serde_json::Map::new();
    row.insert("suite".into(), suite.into());
    row.insert("case".into(), case.into());
    row.insert("impl".into(), imp.into());
    row.insert("ms".into(), ((ms * 1e4).round() / 1e4).into());
    if let Some(b) = bytes
        && ms > 0.0
    {
        row.insert("gbps".into(), ((b / ms / 1e6 * 10.0).round() / 10.0).into());
    }
    for (k, v) in extra {
        row.insert((*k).into(), v.clone());
    }
    println!("{}", serde_json::Value::Object(row));
}

/// `n` values of stream `seed` (docs/workloads.md `value`), generated on all cores.
pub fn values_par(seed: u64, n: usize) -> Vec<f32> {
    let mut out = vec![0.0f32; n];
    let threads = std::thread::available_parallelism().map_or(4, |p| p.get());
    let chunk = n.div_ceil(threads).max(1);
    std::thread::scope(|s| {
        for (c, part) in out.chunks_mut(chunk).enumerate() {
            s.spawn(move || {
                let base = (c * chunk) as u64;
                for (i, v) in part.iter_mut().enumerate() {
                    *v = value(seed, base + i as u64);
                }
            });
        }
    });
    out
}

/// Median of a sample (ms).
pub fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// Times `scatter` (`index_add` calls of `bytes` bytes) in each form of the
/// chunk sums forced, beside the backend's own pick (every form gives the
/// same bits): rows `{row}-{batched,pipelined,windowed}` of `suite` and
/// `case`; the backend is left on [`ScatterForm::Auto`].
///
/// # Errors
/// Errors of `scatter` and of the events.
pub fn forced_form_rows(
    g: &CudaBackend,
    reps: usize,
    (suite, case, row): (&str, &str, &str),
    bytes: f64,
    mut scatter: impl FnMut() -> Result<()>,
) -> anyhow::Result<()> {
    for (form, tag) in [
        (ScatterForm::Batched, "batched"),
        (ScatterForm::Pipelined, "pipelined"),
        (ScatterForm::Windowed, "windowed"),
    ] {
        g.set_scatter_form(form);
        let ms = time_cuda(g, 3, reps, &mut scatter);
        g.set_scatter_form(ScatterForm::Auto);
        emit(suite, case, &format!("{row}-{tag}"), ms?, Some(bytes), &[]);
    }
    Ok(())
}

/// Median device time of `f` over `reps` runs after `warm` runs (CUDA events).
///
/// # Errors
/// Errors of `f` and of the events.
pub fn time_cuda(
    g: &CudaBackend,
    warm: usize,
    reps: usize,
    mut f: impl FnMut() -> Result<()>,
) -> anyhow::Result<f64> {
    for _ in 0..warm {
        f()?;
    }
    g.synchronize()?;
    let mut t = Vec::with_capacity(reps);
    for _ in 0..reps {
        let (r, ms) = g.time_ms(&mut f)?;
        r?;
        t.push(f64::from(ms));
    }
    Ok(median(t))
}

/// Median device time of one of `k` back-to-back runs of `f` (CUDA events
/// around all `k`, over `reps` samples after `warm` runs): the queue stays
/// full, so the host's time between runs (planning, allocation, the launch
/// call) hides behind the device's and the figure is the device's own.
///
/// # Errors
/// Errors of `f` and of the events.
#[cfg(feature = "cuda")]
pub fn time_cuda_queued(
    g: &CudaBackend,
    warm: usize,
    reps: usize,
    k: usize,
    mut f: impl FnMut() -> Result<()>,
) -> anyhow::Result<f64> {
    let k = k.max(1);
    let ms = time_cuda(g, warm, reps, || (0..k).try_for_each(|_| f()))?;
    Ok(ms / k as f64)
}

/// Median wall time of `f` over `reps` runs after `warm` runs.
///
/// # Errors
/// Errors of `f`.
pub fn time_host(warm: usize, reps: usize, mut f: impl FnMut() -> Result<()>) -> Result<f64> {
    for _ in 0..warm {
        f()?;
    }
    let mut t = Vec::with_capacity(reps);
    for _ in 0..reps {
        let s = Instant::now();
        f()?;
        t.push(s.elapsed().as_secs_f64() * 1e3);
    }
    Ok(median(t))
}

/// The CUDA backend with only its required core: every provided op runs the
/// trait's default, the host round trip (the "before" of the device kernels).
#[derive(Debug)]
pub struct HostRoundTrip<'a>(pub &'a CudaBackend);

impl BackendCore for HostRoundTrip<'_> {
    type Buffer<T: Element> = CudaBuffer<T>;

    fn name(&self) -> String {
        format!("{}-hostroundtrip", self.0.name())
    }

    fn upload<T: Element>(&self, data: &[T], shape: &[usize]) -> Result<BTensor<Self, T>> {
        self.0.upload(data, shape)
    }

    fn download<T: Element>(&self, t: &BTensor<Self, T>) -> Result<Vec<T>> {
        self.0.download(t)
    }

    fn zeros<T: Element>(&self, shape: &[usize]) -> Result<BTensor<Self, T>> {
        self.0.zeros(shape)
    }
}

impl IndexOps for HostRoundTrip<'_> {
    rtx_backend::host_index_list!();
}

impl LayoutOps for HostRoundTrip<'_> {}

impl DenseOps for HostRoundTrip<'_> {}

impl FusedOps for HostRoundTrip<'_> {}

impl TrainOps for HostRoundTrip<'_> {}

/// The CUDA backend, or `None` with a note on stderr (feature off, no device).
pub fn cuda_or_note(ordinal: usize) -> Option<CudaBackend> {
    match CudaBackend::new(ordinal) {
        Ok(g) => Some(g),
        Err(e) => {
            eprintln!("rtx-bench: CUDA rows skipped: {e}");
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use rtx_backend::workload::splitmix64;

    #[test]
    fn splitmix_check_value_of_workloads_md() {
        assert_eq!(splitmix64(0, 0), 0xe220_a839_7b1d_cdaf);
        assert_eq!(
            super::values_par(2, 1000),
            rtx_backend::workload::values::<f32>(2, 1000)
        );
    }
}
