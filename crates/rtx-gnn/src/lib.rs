//! A heterogeneous graph-attention network (HetGAT) on any
//! [`Backend`](rtx_backend::Backend): forward, a hand-written backward, MSE
//! loss and SGD, generic over the element type (`f32` to train, `f64` for
//! gradient checks), and in mixed precision (`MixedHetGat`:
//! `bf16` or `f16` activations and messages, `f32` master weights and loss).
//!
//! * [`graph`]: [`HeteroGraph`] (node types, relations, index plans built
//!   once for the static topology), the Harris-shaped workload of
//!   `docs/workloads.md` ([`HeteroGraph::harris`], [`harris_features`]) and
//!   Harris-like graphs of any size ([`graph::harris_like`]).
//! * [`store`]: [`GraphStore`], a graph held by the backend (a CSR per
//!   relation, features per type), and the mini-batches sampled from it on
//!   the backend ([`MiniBatch`], whose topology is an [`IndexGraph`] of backend lists); [`mag`]: a graph with
//!   ogbn-mag's sizes. The model runs on any [`Topology`]: a static
//!   [`HeteroGraph`] or a [`IndexGraph`].
//! * [`determinism`]: fixed training runs reduced to their bits
//!   ([`determinism::training_bits`]), which the tests of every backend
//!   compare across backends, modes and runs; [`gradcheck`]: the f64
//!   gradient check against central differences.
//! * [`model`]: [`HetGat`], the PyG `HeteroConv` of `GATConv((-1, -1),
//!   16, heads=4, add_self_loops=False)` peer, with [`HetGatConfig`].
//!
//! One layer, per relation `s -> d` with edges `(src[e], dst[e])`:
//! `hs = x_s W_src`, `hd = x_d W_dst`, logits
//! `z[e] = LeakyReLU(att_src . hs[src[e]] + att_dst . hd[dst[e]])` per head,
//! `alpha = softmax` over each destination's incoming edges (max-subtracted,
//! [`segment_softmax`](rtx_backend::FusedOps::segment_softmax)), messages
//! `alpha[e] * hs[src[e]]` gathered with `index_select` and summed with the
//! canonical scatter-add, plus a bias; relation outputs summed per
//! destination type; ReLU. The backward uses that the adjoint of a gather
//! is a scatter-add and vice versa, so it is deterministic too: a training
//! run gives the same bits on every run and thread count.
//!
//! ```
//! use rtx_backend::prelude::*;
//! use rtx_backend_cpu::CpuBackend;
//! use rtx_gnn::{HetGat, HetGatConfig, HeteroGraph, NodeType};
//!
//! let b = CpuBackend::new();
//! let types = vec![NodeType { name: "a".into(), nodes: 3 }];
//! let g = HeteroGraph::new(types, vec![("aa".into(), 0, 0, vec![0, 1, 2], vec![1, 1, 0])])?;
//! let config = HetGatConfig { in_features: vec![2], heads: 2, channels: 3, layers: 2,
//!                             negative_slope: 0.2, target: 0, out_features: 1,
//!                             input_dropout: 0.0, attention_dropout: 0.0 };
//! let mut model = HetGat::<_, f32>::new(&b, &g, config, 7)?;
//! let x = vec![b.upload(&[0.5f32, -1.0, 0.25, 2.0, -0.5, 1.0], &[3, 2])?];
//! let first = model.train_step(&b, &g, &x, 1e-2)?;
//! let second = model.train_step(&b, &g, &x, 1e-2)?;
//! assert!(second < first);
//! # Ok::<(), rtx_gnn::Error>(())
//! ```

pub mod checkpoint;
pub mod dataset;
pub mod determinism;
pub mod gradcheck;
pub mod graph;
pub mod mag;
pub mod metrics;
pub mod model;
pub mod optim;
pub mod parallel;
pub mod planted;
pub mod store;
pub mod topology;
pub mod train;

pub use dataset::{Dataset, DatasetRelation, Features, Splits, Targets};
pub use graph::{HeteroGraph, NodeType, Relation, harris_features};
pub use model::{DeviceLoss, Grads, HetGat, HetGatConfig, LossAndGrads, MixedHetGat};
pub use store::{GraphStore, IndexGraph, MiniBatch, StoreRelation, Trimmed};
pub use topology::{RelEdges, Topology};

/// Errors of the model crate.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A backend op failed (shapes, indices, device).
    #[error(transparent)]
    Backend(#[from] rtx_backend::Error),
    /// A graph that cannot be built.
    #[error("graph: {0}")]
    Graph(String),
    /// A model configuration or input that does not fit.
    #[error("model: {0}")]
    Model(String),
    /// A dataset file or [`Dataset`] that does not fit the format: the
    /// file (or "in memory"), the key (`paper.y`,
    /// `__metadata__.num_nodes`, `header`) and what is wrong.
    #[error("{origin}: {key}: {msg}")]
    Dataset {
        /// The file, or none for a dataset in memory.
        origin: dataset::Origin,
        /// The tensor key or metadata entry.
        key: String,
        /// What is wrong.
        msg: String,
    },
    /// A checkpoint that cannot be read or does not fit the model: the file
    /// and the first difference.
    #[error("checkpoint {0}")]
    Checkpoint(String),
    /// A file could not be read or written.
    #[error("cannot {what} {}: {source}", .path.display())]
    Io {
        /// The file or directory.
        path: std::path::PathBuf,
        /// What was being done (`open`, `write`, ...).
        what: String,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
    /// A collective of data-parallel training failed (another rank's
    /// error, a time-out), or this rank's error as reported to the group.
    #[error(transparent)]
    Comm(#[from] rtx_backend::comm::CommError),
}

/// `Result` with [`Error`].
pub type Result<T> = std::result::Result<T, Error>;
