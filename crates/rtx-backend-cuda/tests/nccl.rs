//! Data-parallel training through NCCL on the GPU (feature `cuda`), with
//! one rank (the lent hosts have one GPU; NCCL supports a one-rank group):
//! the gather copies bits, the one-rank run equals the single-device run
//! bit for bit (Harris batch 8) and the run of four CPU ranks on shares of
//! 256 rows (the split where those are bit-identical), an abort is an error
//! naming the rank and cause, and the id travels through the rendezvous.
//!
//! Without a device or NCCL every test here FAILS with a message saying so.
#![cfg(feature = "cuda")]

use std::time::Duration;

use rtx_backend::comm::rendezvous::{Server, fetch};
use rtx_backend::comm::{CommError, Communicator, host_group};
use rtx_backend::prelude::*;
use rtx_backend::workload::values;
use rtx_backend_cpu::CpuBackend;
use rtx_backend_cuda::CudaBackend;
use rtx_backend_cuda::comm::{NcclComm, NcclId, nccl_version};
use rtx_gnn::HetGatConfig;
use rtx_gnn::determinism::{TRAINING_LR, TRAINING_SEED, training_config};
use rtx_gnn::graph::harris_like;
use rtx_gnn::parallel::{
    RankRun, Shard, TrainSpec, harris_shards, run_ranks, train_shard, train_single, union,
};

fn spec(config: HetGatConfig) -> TrainSpec {
    TrainSpec {
        config,
        seed: TRAINING_SEED,
        steps: 3,
        lr: TRAINING_LR,
        check: true,
    }
}

const LIMIT: Duration = Duration::from_secs(60);

fn backend() -> CudaBackend {
    CudaBackend::new(0).unwrap_or_else(|e| panic!("GPU test needs a CUDA device: {e}"))
}

fn one_rank(b: &CudaBackend) -> NcclComm {
    let v = nccl_version().unwrap_or_else(|e| panic!("NCCL test needs libnccl: {e}"));
    eprintln!("NCCL {v}");
    let id = NcclId::new().unwrap();
    NcclComm::new(b, &id, 0, 1, LIMIT).unwrap()
}

fn single(b: &CudaBackend, s: &Shard<f32>, cfg: HetGatConfig, steps: usize) -> RankRun {
    let spec = TrainSpec { steps, ..spec(cfg) };
    train_single(b, s, &spec).unwrap()
}

#[test]
fn nccl_one_rank_gather_copies_the_bits() {
    let b = backend();
    let mut c = one_rank(&b);
    assert_eq!((c.rank(), c.size()), (0, 1));
    let v: Vec<f32> = vec![1.5, -0.0, f32::MIN_POSITIVE, 3.25e7];
    let t = b.upload(&v, &[2, 2]).unwrap();
    let w: Vec<f64> = vec![0.1, -2.0];
    let u = b.upload(&w, &[2]).unwrap();
    let g = c.all_gather(&b, &[&t]).unwrap();
    assert_eq!(g[0].shape(), [1, 4]);
    let got = b.download(&g[0]).unwrap();
    assert_eq!(
        got.iter().map(|x| x.to_bits()).collect::<Vec<_>>(),
        v.iter().map(|x| x.to_bits()).collect::<Vec<_>>()
    );
    assert_eq!(b.download(&c.all_gather(&b, &[&u]).unwrap()[0]).unwrap(), w);
    assert_eq!(
        c.all_gather_u64(&b, 0xdead_beef_1234).unwrap(),
        [0xdead_beef_1234]
    );
}

#[test]
fn nccl_one_rank_trains_the_harris_batch_like_the_single_device() {
    for batch in [8usize, 16] {
        let b = backend();
        let shards = harris_shards::<f32>(batch, 1).unwrap();
        let cfg = training_config(&shards[0].graph);
        let dp = train_shard(&b, one_rank(&b), &shards[0], &spec(cfg.clone())).unwrap();
        let b2 = backend();
        assert_eq!(dp, single(&b2, &shards[0], cfg, 3), "batch {batch}");
    }
}

#[test]
fn nccl_one_rank_equals_four_cpu_ranks_on_shares_of_256_rows() {
    let shards: Vec<Shard<f32>> = (0..4)
        .map(|r| {
            let graph = harris_like(256, 256, [768, 512, 512], 7 + r).unwrap();
            let features = (0..2).map(|t| values::<f32>(r * 7 + t, 256 * 32)).collect();
            Shard { graph, features }
        })
        .collect();
    let cfg = training_config(&shards[0].graph);
    let comms = std::sync::Mutex::new(
        host_group(4, LIMIT)
            .into_iter()
            .map(Some)
            .collect::<Vec<_>>(),
    );
    let cpu: Vec<RankRun> = run_ranks(4, |ctx| {
        let comm = comms.lock().unwrap()[ctx.rank()].take().unwrap();
        let b = CpuBackend::reference();
        train_shard(&b, comm, &shards[ctx.rank()], &spec(cfg.clone()))
    })
    .into_iter()
    .map(Result::unwrap)
    .collect();
    let b = backend();
    let u = union(&shards).unwrap();
    let gpu = train_shard(&b, one_rank(&b), &u, &spec(cfg)).unwrap();
    for (r, run) in cpu.iter().enumerate() {
        assert_eq!(run, &gpu, "CPU rank {r} vs one NCCL rank");
    }
}

#[test]
fn nccl_abort_is_an_error_naming_the_rank_and_cause() {
    let b = backend();
    let mut c = one_rank(&b);
    let h = c.abort_handle();
    h.abort("out of memory (simulated)");
    let t = b.upload(&[1.0f32], &[1]).unwrap();
    let e = c.all_gather(&b, &[&t]).unwrap_err();
    assert!(matches!(e, CommError::RankFailed { rank: 0, .. }), "{e}");
    assert!(e.to_string().contains("out of memory (simulated)"), "{e}");
    // the communicator stays failed
    assert!(c.all_gather_u64(&b, 1).is_err());
}

#[test]
fn nccl_id_through_the_rendezvous_makes_a_working_group() {
    let b = backend();
    let _ = one_rank(&b); // says clearly when NCCL is missing
    let id = NcclId::new().unwrap();
    let server = Server::bind("127.0.0.1:0").unwrap();
    let addr = server.local_addr().unwrap().to_string();
    // a second "rank" fetches the bytes; the group itself has one rank (one GPU)
    let fetched = std::thread::scope(|s| {
        let h = s.spawn(|| fetch(&addr, 1, 2, LIMIT));
        server.serve(id.as_bytes(), 2, LIMIT).unwrap();
        h.join().unwrap().unwrap()
    });
    let again = NcclId::from_bytes(&fetched).unwrap();
    assert_eq!(again, id);
    let mut c = NcclComm::new(&b, &again, 0, 1, LIMIT).unwrap();
    assert_eq!(c.all_gather_u64(&b, 7).unwrap(), [7]);
}
