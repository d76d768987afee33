//! GPU tests of recorded work (`CudaBackend::record`, CUDA graphs): a
//! recorded HetGAT training step replays the eager steps bit for bit, in
//! place; a recorded forward reads the parameters where they are; what cannot
//! be recorded (downloads, uploads from host memory, in-place writes to a
//! shared buffer) is refused with a message saying what, and the backend
//! stays usable, also after a closure that panics; the block cache hands
//! no freed block to a recording, and keeps count of the blocks kept
//! beside.
//!
//! Without a device every test here FAILS with a message saying so.
#![cfg(feature = "cuda")]

use rtx_backend::prelude::*;
use rtx_backend::{BTensor, Binary, Element, IndexPlan};
use rtx_backend_cuda::CudaBackend;
use rtx_gnn::determinism::{TRAINING_LR, TRAINING_SEED, training_bits, training_config};
use rtx_gnn::graph::{harris_like, harris_like_inputs};
use rtx_gnn::{HetGat, HeteroGraph};

fn backend() -> CudaBackend {
    CudaBackend::new(0).unwrap_or_else(|e| panic!("GPU test needs a CUDA device: {e}"))
}

/// Runs `f` with `g`'s lists and plans pinned on the device (recording
/// cannot upload them).
fn pinned<R>(dev: &CudaBackend, g: &HeteroGraph, f: impl FnOnce() -> R) -> R {
    let lists: Vec<&[u32]> = g
        .relations()
        .iter()
        .flat_map(|r| [r.src(), r.dst()])
        .collect();
    let plans: Vec<&IndexPlan> = g
        .relations()
        .iter()
        .flat_map(|r| [r.dst_plan(), r.src_plan()])
        .collect();
    dev.with_static_indices(&lists, &plans, f).unwrap()
}

fn bits<T: Element>(dev: &CudaBackend, t: &BTensor<CudaBackend, T>) -> Vec<u64> {
    dev.download(t)
        .unwrap()
        .iter()
        .map(|v| v.to_bits_u64())
        .collect()
}

#[test]
fn a_recorded_training_step_replays_the_eager_steps_bit_for_bit() {
    // hub-skewed destinations: segments of two chunk levels
    let g = harris_like(300, 150, [2000, 1200, 1100], 5).unwrap();
    let dev = backend();
    let steps = 4;
    let eager = training_bits::<_, f32>(&dev, &g, steps).unwrap();
    let (losses, params) = pinned(&dev, &g, || {
        let mut model =
            HetGat::<CudaBackend, f32>::new(&dev, &g, training_config(&g), TRAINING_SEED).unwrap();
        let x = harris_like_inputs::<_, f32>(&dev, &g, &model.config().in_features).unwrap();
        // the recording runs step 1; each replay one more
        let mut step = dev
            .record(|b| model.train_step_enqueued(b, &g, &x, TRAINING_LR))
            .unwrap();
        let mut losses = vec![step.outputs().read(&dev).unwrap().to_bits_u64()];
        for _ in 1..steps {
            losses.push(step.replay().unwrap().read(&dev).unwrap().to_bits_u64());
        }
        drop(step);
        let params: Vec<Vec<u64>> = model.params().iter().map(|p| bits(&dev, p)).collect();
        (losses, params)
    });
    assert_eq!(losses, eager.0, "loss bits per step: replayed vs eager");
    assert!(params == eager.1, "final parameters: replayed vs eager");
    assert!(losses.windows(2).all(|w| w[0] != w[1]), "the replays train");
}

#[test]
fn a_recorded_forward_reads_the_parameters_where_they_are() {
    let g = harris_like(200, 90, [900, 500, 450], 3).unwrap();
    let dev = backend();
    pinned(&dev, &g, || {
        let mut model =
            HetGat::<CudaBackend, f32>::new(&dev, &g, training_config(&g), TRAINING_SEED).unwrap();
        let x = harris_like_inputs::<_, f32>(&dev, &g, &model.config().in_features).unwrap();
        let eager = bits(&dev, &model.forward(&dev, &g, &x).unwrap());
        let mut fwd = dev.record(|b| model.forward(b, &g, &x)).unwrap();
        assert_eq!(bits(&dev, fwd.outputs()), eager, "the recording's own run");
        assert_eq!(bits(&dev, fwd.replay().unwrap()), eager, "a replay");
        drop(fwd);
        // an eager SGD step updates the parameters in place; a forward
        // recorded before it sees the new values
        let mut fwd = dev.record(|b| model.forward(b, &g, &x)).unwrap();
        model.train_step(&dev, &g, &x, 0.5).unwrap();
        let after = bits(&dev, &model.forward(&dev, &g, &x).unwrap());
        assert_ne!(after, eager, "the step changed the output");
        assert_eq!(bits(&dev, fwd.replay().unwrap()), after);
    });
}

#[test]
fn what_cannot_be_recorded_is_refused_and_the_backend_stays_usable() {
    let dev = backend();
    let t = dev.upload(&[1.0f32, 2.0], &[2]).unwrap();
    let refused = |e: rtx_backend_cuda::Error, what: &str| {
        let msg = e.to_string();
        assert!(
            matches!(e, rtx_backend_cuda::Error::Recording(_)) && msg.contains(what),
            "want a recording error naming {what:?}, got: {msg}"
        );
    };
    refused(dev.record(|b| b.download(&t)).unwrap_err(), "a download");
    refused(
        dev.record(|b| b.upload(&[1.0f32], &[1])).unwrap_err(),
        "an upload from host memory",
    );
    let shared = t.clone();
    let mut u = t.clone();
    refused(
        dev.record(|b| b.axpy(&mut u, 1.0, &shared)).unwrap_err(),
        "buffer is shared",
    );
    // an op's own error inside the recording is reported with its cause
    let bad = dev.upload(&[1.0f32; 3], &[3]).unwrap();
    refused(
        dev.record(|b| b.binary(Binary::Add, &t, &bad)).unwrap_err(),
        "the recorded work failed",
    );
    // a closure that panics: the panic goes on, the recording is ended
    let caught = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        dev.record(|b| -> rtx_backend::Result<()> {
            let _half_done = b.binary(Binary::Add, &t, &t)?;
            panic!("a bug in the recorded closure")
        })
    }));
    assert!(caught.is_err(), "the panic reaches the caller");
    // nothing was left recorded: the stream runs eager work
    let y = dev.binary(Binary::Add, &t, &t).unwrap();
    assert_eq!(dev.download(&y).unwrap(), vec![2.0, 4.0]);
    // and records again
    let mut twice = dev.record(|b| b.binary(Binary::Add, &t, &t)).unwrap();
    assert_eq!(
        dev.download(twice.replay().unwrap()).unwrap(),
        vec![2.0, 4.0]
    );
}

#[test]
fn freed_blocks_are_reused_and_a_recording_gets_none() {
    let dev = backend();
    dev.synchronize().unwrap();
    let base = dev.memory_in_use().unwrap();
    let addr = |t: &BTensor<CudaBackend, f32>| t.storage().device_ptr();
    // 4,000 bytes: a block of the 4,096-byte class
    let a = dev.upload(&[1.0f32; 1000], &[1000]).unwrap();
    let block = addr(&a);
    assert!(dev.memory_in_use().unwrap() >= base + 4000);
    drop(a);
    // kept on the host's shelves: not in use
    assert_eq!(dev.memory_in_use().unwrap(), base);
    // a request of the same class takes it, and holds what it wrote
    let b = dev.upload(&[2.0f32; 1010], &[1010]).unwrap();
    assert_eq!(addr(&b), block, "a block of the class is reused");
    assert_eq!(dev.download(&b).unwrap(), vec![2.0f32; 1010]);
    let t = dev.upload(&[3.0f32; 1000], &[1000]).unwrap();
    drop(b);
    // while recording, the freed block is not handed out: the recorded
    // output lives in the graph's own memory
    let mut rec = dev.record(|g| g.binary(Binary::Add, &t, &t)).unwrap();
    assert_ne!(
        addr(rec.outputs()),
        block,
        "a recording takes no cached block"
    );
    assert_eq!(
        dev.download(rec.replay().unwrap()).unwrap(),
        vec![6.0f32; 1000]
    );
    // after the recording, eager work takes it again
    let c = dev.binary(Binary::Add, &t, &t).unwrap();
    assert_eq!(
        addr(&c),
        block,
        "the cache serves eager work after a recording"
    );
    assert_eq!(dev.download(&c).unwrap(), vec![6.0f32; 1000]);
    // the replayed graph and the eager result do not share memory
    assert_eq!(
        dev.download(rec.replay().unwrap()).unwrap(),
        vec![6.0f32; 1000]
    );
    assert_eq!(dev.download(&c).unwrap(), vec![6.0f32; 1000]);
    drop((c, t));
    // a limit of 0 frees every kept block, and nothing is kept after: the
    // count in use is the same either way
    dev.synchronize().unwrap();
    let before = dev.memory_in_use().unwrap();
    dev.set_block_cache_limit(0).unwrap();
    let d = dev.upload(&[4.0f32; 1000], &[1000]).unwrap();
    assert!(dev.memory_in_use().unwrap() >= before + 4000);
    drop(d);
    dev.synchronize().unwrap();
    assert_eq!(dev.memory_in_use().unwrap(), before);
    drop(rec);
}

#[test]
fn blocks_kept_beside_are_not_in_use_on_either_backend() {
    let dev = backend();
    let side = dev.beside().unwrap();
    dev.synchronize().unwrap();
    side.synchronize().unwrap();
    let base = dev.memory_in_use().unwrap();
    assert_eq!(side.memory_in_use().unwrap(), base, "one pool, one count");
    let t = side.upload(&[1.0f32; 1000], &[1000]).unwrap();
    assert!(dev.memory_in_use().unwrap() >= base + 4000);
    // kept by the side's cache: in use on neither
    drop(t);
    assert_eq!(dev.memory_in_use().unwrap(), base);
    assert_eq!(side.memory_in_use().unwrap(), base);
    // the side's cache took the main backend's limit
    dev.set_block_cache_limit(0).unwrap();
    let side2 = dev.beside().unwrap();
    side2.synchronize().unwrap();
    // (side2's own counters are in use from here on)
    let base2 = dev.memory_in_use().unwrap();
    let u = side2.upload(&[1.0f32; 1000], &[1000]).unwrap();
    drop(u);
    side2.synchronize().unwrap();
    assert_eq!(dev.memory_in_use().unwrap(), base2, "freed, not kept");
}
