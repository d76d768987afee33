//! Heterogeneous graphs with static topology, the Harris-shaped workload of
//! `docs/workloads.md` ([`HeteroGraph::harris`], [`harris_features`]) and
//! Harris-like graphs of any size ([`harris_like`], with inputs from
//! [`harris_like_inputs`]), the graphs the tests and benches build.

use rtx_backend::prelude::*;
use rtx_backend::workload::{index, values};
use rtx_backend::{BTensor, Element, IndexPlan};

use crate::{Error, Result};

/// A node type: a name and a node count.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeType {
    /// The type's name (`"a"`).
    pub name: String,
    /// Number of nodes.
    pub nodes: usize,
}

/// A relation (edge type) `src -name-> dst` with its edges and the index
/// plans built once for it: by destination (softmax, message scatter) and by
/// source (the adjoint of the source gathers).
///
/// The fields are private: the edge lists and their plans are built together
/// by [`HeteroGraph::new`] and cannot drift apart.
#[derive(Debug, Clone)]
pub struct Relation {
    name: String,
    src_type: usize,
    dst_type: usize,
    src: Vec<u32>,
    dst: Vec<u32>,
    dst_plan: IndexPlan,
    src_plan: IndexPlan,
}

impl Relation {
    /// The relation's name (`"ab"`).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Source node type (an index into [`HeteroGraph::node_types`]).
    pub fn src_type(&self) -> usize {
        self.src_type
    }

    /// Destination node type.
    pub fn dst_type(&self) -> usize {
        self.dst_type
    }

    /// Source node of every edge.
    pub fn src(&self) -> &[u32] {
        &self.src
    }

    /// Destination node of every edge.
    pub fn dst(&self) -> &[u32] {
        &self.dst
    }

    /// The edges grouped by destination (CSR of S_dst^T).
    pub fn dst_plan(&self) -> &IndexPlan {
        &self.dst_plan
    }

    /// The edges grouped by source (CSR of S_src^T).
    pub fn src_plan(&self) -> &IndexPlan {
        &self.src_plan
    }

    /// Number of edges.
    pub fn edges(&self) -> usize {
        self.src.len()
    }
}

/// A heterogeneous graph: node types and relations between them. The
/// topology is static: plans are built once in [`HeteroGraph::new`] and
/// reused by every step; the fields are private so nothing can change the
/// topology behind its plans.
#[derive(Debug, Clone)]
pub struct HeteroGraph {
    node_types: Vec<NodeType>,
    relations: Vec<Relation>,
}

/// One relation given to [`HeteroGraph::new`]: `(name, src type, dst type, src, dst)`.
pub type RelationSpec = (String, usize, usize, Vec<u32>, Vec<u32>);

impl HeteroGraph {
    /// Builds a graph, validating every edge and building the index plans.
    ///
    /// # Errors
    /// [`Error::Graph`] for an unknown node type, unequal edge lists or two
    /// relations with the same `(src type, name, dst type)` (PyG's edge-type
    /// key); [`Error::Backend`] (index out of range, naming position, value, bound)
    /// for an edge endpoint beyond its type's node count.
    pub fn new(node_types: Vec<NodeType>, relations: Vec<RelationSpec>) -> Result<HeteroGraph> {
        let mut rels = Vec::with_capacity(relations.len());
        for (name, s, d, src, dst) in relations {
            let (Some(ns), Some(nd)) = (node_types.get(s), node_types.get(d)) else {
                return Err(Error::Graph(format!(
                    "relation {name}: node types {s} -> {d}, but there are {} node types",
                    node_types.len()
                )));
            };
            if rels
                .iter()
                .any(|r: &Relation| r.name == name && r.src_type == s && r.dst_type == d)
            {
                return Err(Error::Graph(format!(
                    "relation {name} ({} -> {}) is given twice",
                    ns.name, nd.name
                )));
            }
            if src.len() != dst.len() {
                return Err(Error::Graph(format!(
                    "relation {name}: {} sources but {} destinations",
                    src.len(),
                    dst.len()
                )));
            }
            let src_plan = IndexPlan::new(&src, ns.nodes)?;
            let dst_plan = IndexPlan::new(&dst, nd.nodes)?;
            rels.push(Relation {
                name,
                src_type: s,
                dst_type: d,
                src,
                dst,
                dst_plan,
                src_plan,
            });
        }
        Ok(HeteroGraph {
            node_types,
            relations: rels,
        })
    }

    /// The Harris-shaped graph of docs/workloads.md with `batch` disjoint copies
    /// (copy `c` offsets node ids by `c * n_type`, as PyG batches graphs).
    ///
    /// # Errors
    /// [`Error::Graph`] when `batch` is 0 or the node counts overflow `u32`.
    pub fn harris(batch: usize) -> Result<HeteroGraph> {
        if batch == 0
            || HARRIS_NODES[0]
                .1
                .checked_mul(batch)
                .is_none_or(|n| n > u32::MAX as usize)
        {
            return Err(Error::Graph(format!(
                "batch {batch}: want 1..={}",
                u32::MAX as usize / HARRIS_NODES[0].1
            )));
        }
        let node_types = HARRIS_NODES
            .iter()
            .map(|&(name, n)| NodeType {
                name: name.into(),
                nodes: n * batch,
            })
            .collect();
        let rels = HARRIS_RELATIONS
            .iter()
            .map(|&(name, s, d, e, seed)| {
                let (ns, nd) = (HARRIS_NODES[s].1, HARRIS_NODES[d].1);
                let src1: Vec<u32> = (0..e as u64).map(|k| index(seed, k, ns, false)).collect();
                let dst1: Vec<u32> = (0..e as u64)
                    .map(|k| index(seed + 1, k, nd, true))
                    .collect();
                let mut src = Vec::with_capacity(e * batch);
                let mut dst = Vec::with_capacity(e * batch);
                for c in 0..batch {
                    src.extend(src1.iter().map(|&i| i + (c * ns) as u32));
                    dst.extend(dst1.iter().map(|&i| i + (c * nd) as u32));
                }
                (name.to_string(), s, d, src, dst)
            })
            .collect();
        HeteroGraph::new(node_types, rels)
    }

    /// Node types.
    pub fn node_types(&self) -> &[NodeType] {
        &self.node_types
    }

    /// Relations.
    pub fn relations(&self) -> &[Relation] {
        &self.relations
    }

    /// Total number of edges.
    pub fn edges(&self) -> usize {
        self.relations.iter().map(Relation::edges).sum()
    }

    /// Runs `f` with this graph's lists and plans kept where `b`'s index ops
    /// find them without a per-call lookup
    /// ([`IndexOps::with_static_indices`]: on a device, copied there once and
    /// found by address).
    ///
    /// # Errors
    /// Backend errors before `f` runs.
    pub fn with_resident<B: IndexOps, R>(&self, b: &B, f: impl FnOnce() -> R) -> Result<R> {
        let lists: Vec<&[u32]> = self
            .relations
            .iter()
            .flat_map(|r| [r.src(), r.dst()])
            .collect();
        let plans: Vec<&IndexPlan> = self
            .relations
            .iter()
            .flat_map(|r| [r.dst_plan(), r.src_plan()])
            .collect();
        Ok(b.with_static_indices(&lists, &plans, f)?)
    }
}

/// Node types of the Harris-shaped graph: `(name, nodes per copy)`.
pub const HARRIS_NODES: [(&str, usize); 2] = [("a", 10_000), ("b", 5_000)];

/// Relations of the Harris-shaped graph: `(name, src type, dst type, edges
/// per copy, seed s)`; edge `k` has source `index(s, k, n_src, uniform)` and
/// destination `index(s + 1, k, n_dst, hub)`.
pub const HARRIS_RELATIONS: [(&str, usize, usize, usize, u64); 3] = [
    ("aa", 0, 0, 20_000, 10),
    ("ab", 0, 1, 11_478, 20),
    ("ba", 1, 0, 11_477, 30),
];

/// Input features per node of the Harris-shaped graph.
pub const HARRIS_FEATURES: usize = 32;

/// Feature seeds of the Harris node types (`a`: 40, `b`: 41).
pub const HARRIS_FEATURE_SEEDS: [u64; 2] = [40, 41];

/// The Harris input features for `batch` copies: per node type, row-major
/// `[batch * n, 32]`, `value(seed, i)` over the whole batched array (as the
/// PyG peer generates them).
pub fn harris_features<T: Element>(batch: usize) -> Vec<Vec<T>> {
    HARRIS_NODES
        .iter()
        .zip(HARRIS_FEATURE_SEEDS)
        .map(|(&(_, n), seed)| values(seed, batch * n * HARRIS_FEATURES))
        .collect()
}

/// A Harris-like graph of any size: types `a` (`na` nodes) and `b` (`nb`);
/// relations aa, ab, ba with `edges` edges, uniform sources and hub-skewed
/// destinations (so some nodes get no edges); relation `i` draws its
/// sources from stream `seed + 10 i` and its destinations from the next.
/// `harris_like(10_000, 5_000, [20_000, 11_478, 11_477], 10)` is
/// [`HeteroGraph::harris`]`(1)`.
///
/// # Errors
/// [`crate::Error::Graph`] when a node count is 0 and the relation has edges.
pub fn harris_like(na: usize, nb: usize, edges: [usize; 3], seed: u64) -> Result<HeteroGraph> {
    let (types, rels) = harris_like_lists(na, nb, edges, seed, |s, e, rows, hub| {
        Ok::<_, crate::Error>((0..e as u64).map(|k| index(s, k, rows, hub)).collect())
    })?;
    HeteroGraph::new(types, rels)
}

/// The node types and relations of [`harris_like`], each edge list made by
/// `make(stream, len, rows, hub)`: entry `k` must be
/// `index(stream, k, rows, hub)` (a device backend makes them where they live).
///
/// # Errors
/// What `make` returns.
pub fn harris_like_lists<I, E>(
    na: usize,
    nb: usize,
    edges: [usize; 3],
    seed: u64,
    mut make: impl FnMut(u64, usize, usize, bool) -> std::result::Result<I, E>,
) -> std::result::Result<(Vec<NodeType>, Vec<crate::StoreRelation<I>>), E> {
    let types = vec![
        NodeType {
            name: "a".into(),
            nodes: na,
        },
        NodeType {
            name: "b".into(),
            nodes: nb,
        },
    ];
    let n = [na, nb];
    let mut rels = Vec::with_capacity(3);
    for (i, (&(name, s, d), e)) in [("aa", 0usize, 0usize), ("ab", 0, 1), ("ba", 1, 0)]
        .iter()
        .zip(edges)
        .enumerate()
    {
        let s_seed = seed + 10 * i as u64;
        let src = make(s_seed, e, n[s], false)?;
        let dst = make(s_seed + 1, e, n[d], true)?;
        rels.push((name.to_string(), s, d, src, dst));
    }
    Ok((types, rels))
}

/// Inputs per node type `t` of any graph: `[nodes, features[t]]` from
/// stream `40 + t` (on the Harris-shaped graph with 32 features, the
/// [`harris_features`]). The inputs of the training runs of
/// [`determinism`](crate::determinism) and of
/// [`check_gradients`](crate::gradcheck::check_gradients).
///
/// # Errors
/// Sizes that overflow; backend errors.
pub fn harris_like_inputs<B: Backend, T: Element>(
    b: &B,
    graph: &HeteroGraph,
    features: &[usize],
) -> Result<Vec<BTensor<B, T>>> {
    graph
        .node_types()
        .iter()
        .zip(features)
        .enumerate()
        .map(|(t, (nt, &f))| {
            let n = nt.nodes.checked_mul(f).ok_or_else(|| {
                crate::Error::Model(format!("{} nodes x {f} features overflows", nt.nodes))
            })?;
            Ok(b.upload(&values::<T>(40 + t as u64, n), &[nt.nodes, f])?)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn harris_has_42955_links_per_copy_and_disjoint_copies() {
        let g1 = HeteroGraph::harris(1).unwrap();
        assert_eq!(g1.edges(), 42_955);
        let g3 = HeteroGraph::harris(3).unwrap();
        assert_eq!(g3.edges(), 3 * 42_955);
        for (r1, r3) in g1.relations.iter().zip(&g3.relations) {
            let (ns, nd) = (
                g1.node_types[r1.src_type].nodes as u32,
                g1.node_types[r1.dst_type].nodes as u32,
            );
            let e = r1.edges();
            for c in 0..3u32 {
                for k in [0, e / 2, e - 1] {
                    let p = c as usize * e + k;
                    assert_eq!(r3.src[p], r1.src[k] + c * ns);
                    assert_eq!(r3.dst[p], r1.dst[k] + c * nd);
                }
            }
        }
        assert!(HeteroGraph::harris(0).is_err());
    }

    #[test]
    fn harris_like_at_the_harris_sizes_is_harris() {
        let h = HeteroGraph::harris(1).unwrap();
        let l = harris_like(10_000, 5_000, [20_000, 11_478, 11_477], 10).unwrap();
        assert_eq!(h.node_types(), l.node_types());
        for (a, b) in h.relations().iter().zip(l.relations()) {
            assert_eq!((a.name(), a.src(), a.dst()), (b.name(), b.src(), b.dst()));
        }
    }

    #[test]
    fn bad_edges_are_errors() {
        let types = vec![NodeType {
            name: "a".into(),
            nodes: 3,
        }];
        let e = HeteroGraph::new(
            types.clone(),
            vec![("r".into(), 0, 0, vec![0, 5], vec![1, 1])],
        )
        .unwrap_err();
        assert!(e.to_string().contains("idx[1] = 5"), "{e}");
        assert!(HeteroGraph::new(types.clone(), vec![("r".into(), 0, 1, vec![], vec![])]).is_err());
        assert!(
            HeteroGraph::new(types.clone(), vec![("r".into(), 0, 0, vec![0], vec![])]).is_err()
        );
        let twice = vec![
            ("r".into(), 0, 0, vec![0], vec![1]),
            ("r".into(), 0, 0, vec![2], vec![1]),
        ];
        let e = HeteroGraph::new(types, twice).unwrap_err();
        assert!(
            e.to_string().contains("relation r (a -> a) is given twice"),
            "{e}"
        );
    }
}
