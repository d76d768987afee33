//! The features-only view of a dataset ([`Dataset::features_only`]): the
//! baseline that sees a node's own features and no neighbour.

use super::{Dataset, DatasetRelation, err};
use crate::Result;

/// The relation name of [`Dataset::features_only`]'s self-loops.
pub const SELF_RELATION: &str = "self";

impl Dataset {
    /// The features-only view of node type `target`, for a baseline that
    /// sees no neighbour: the type alone (its features, targets and
    /// splits) with one relation `<target>__self__<target>` ([`SELF_RELATION`])
    /// of the edges `i -> i`, one per node. A GAT layer over a single
    /// incoming edge gives it attention 1 (a softmax over one logit), so the
    /// HetGAT on this dataset is a per-node MLP: every layer a linear map of
    /// the node's own features plus a bias, ReLU, then the head. Sampled
    /// training reaches the node itself and nothing else.
    ///
    /// # Errors
    /// [`crate::Error::Dataset`] for an unknown type or one without features
    /// (`<type>.x`).
    pub fn features_only(&self, target: &str) -> Result<Dataset> {
        let t = self.type_index(target)?;
        let Some(x) = &self.features[t] else {
            return Err(err(
                None,
                format!("{target}.x"),
                "a features-only baseline needs the type's features",
            ));
        };
        let nt = self.node_types[t].clone();
        let ids: Vec<u32> = (0..nt.nodes as u32).collect();
        Ok(Dataset {
            node_types: vec![nt],
            relations: vec![DatasetRelation {
                src_type: 0,
                name: SELF_RELATION.into(),
                dst_type: 0,
                src: ids.clone(),
                dst: ids,
            }],
            features: vec![Some(x.clone())],
            targets: vec![self.targets[t].clone()],
            splits: vec![self.splits[t].clone()],
        })
    }
}
