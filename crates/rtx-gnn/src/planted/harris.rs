//! The Harris-shaped planted regression: the benchmark graph of
//! [`HeteroGraph::harris`] and its features ([`harris_features`]), with
//! [`two_hop_targets`] on node type `a`, for comparing what rtx and PyG
//! learn in full-graph training and how fast (docs/training.md "Planted
//! Harris-shaped regression").

use crate::Result;
use crate::dataset::{Dataset, DatasetRelation, Features, Splits, Targets};
use crate::graph::{HARRIS_FEATURES, HARRIS_NODES, HeteroGraph, harris_features};
use crate::planted::{contiguous_splits, two_hop_targets};

/// The node type with the targets and the split: `a` (index 0 of
/// [`HARRIS_NODES`]).
pub const HARRIS_TARGET: usize = 0;

/// `(train, val)` fractions of the target type's nodes, contiguous over
/// the whole batched id range: train is the first 60 %, validation the
/// next 20 %, test the last 20 % (so with `batch` copies, whole copies fall
/// in one split; with hub-skewed destinations, low ids have the most
/// in-edges).
pub const HARRIS_SPLIT: (f64, f64) = (0.6, 0.2);

/// The Harris-shaped graph with `batch` disjoint copies
/// ([`HeteroGraph::harris`]: `a` 10,000 and `b` 5,000 nodes per copy,
/// relations `aa`, `ab`, `ba` with 20,000, 11,478 and 11,477 edges per
/// copy, hub-skewed destinations), 32 features per node
/// ([`harris_features`]), two regression targets per node of type `a`
/// ([`two_hop_targets`] with `seed`), split by [`HARRIS_SPLIT`]. The graph
/// and the features are the benchmark's, fixed; the seed draws the
/// targets' projection, so two seeds give the same graph and features and
/// other targets.
///
/// # Errors
/// [`crate::Error::Graph`] for a `batch` of 0 or one whose node counts
/// overflow `u32`; what [`Dataset::validate`] finds (never).
pub fn harris_regression(batch: usize, seed: u64) -> Result<Dataset> {
    let graph = HeteroGraph::harris(batch)?;
    let relations = graph
        .relations()
        .iter()
        .map(|r| DatasetRelation {
            src_type: r.src_type(),
            name: r.name().to_string(),
            dst_type: r.dst_type(),
            src: r.src().to_vec(),
            dst: r.dst().to_vec(),
        })
        .collect();
    let features = harris_features::<f32>(batch)
        .into_iter()
        .map(|data| {
            Some(Features::F32 {
                data,
                dim: HARRIS_FEATURES,
            })
        })
        .collect();
    let node_types = graph.node_types().to_vec();
    let mut splits = vec![Splits::default(); HARRIS_NODES.len()];
    splits[HARRIS_TARGET] = contiguous_splits(node_types[HARRIS_TARGET].nodes, HARRIS_SPLIT);
    let mut dataset = Dataset {
        node_types,
        relations,
        features,
        targets: vec![None; HARRIS_NODES.len()],
        splits,
    };
    let data = two_hop_targets(&dataset, HARRIS_TARGET, seed);
    dataset.targets[HARRIS_TARGET] = Some(Targets::Values { data, dim: 2 });
    dataset.validate()?;
    Ok(dataset)
}
