//! Neighbour sampling on a heterogeneous graph (GraphSAGE-style, as PyG's
//! `NeighborLoader`): the definition every backend draws exactly, the host
//! reference ([`sample_host`]) and the capability trait [`SampleOps`].
//!
//! **The graph.** Each relation `s -> d` is a [`Csr`] by destination: for
//! every destination node its incoming neighbours (source nodes), in the
//! order of the relation's edge list (a stable sort by destination, the same
//! order as [`IndexPlan`]).
//!
//! **The sample.** Seeds of one node type; hop `h` samples, for every node of
//! its frontier and every relation `r` into the node's type with a nonzero
//! fanout `k = fanouts[h][r]`, `min(k, degree)` distinct incoming neighbours,
//! uniformly without replacement (all of them when the degree is at most
//! `k`). The frontier of hop 0 is the seeds; that of hop `h > 0` the nodes
//! first reached in hop `h - 1`.
//!
//! **The draws** are counter-based: pick `s` of node `v` in relation `r` uses
//! [`draw`]`(`[`sample_key`]`(seed, step, r), v, s)`, so a sample depends on
//! `(seed, step)` and the graph alone, never on threads, devices or runs.
//! The `k` picks out of `deg` are Floyd's algorithm: for `s` in `0..k`, with
//! `j = deg - k + s`, `t = (draw * (j + 1)) >> 64` (uniform in `0..=j`); the
//! pick is `t` unless `t` was picked already, then `j`. Picks are positions in
//! the node's neighbour list, kept in the order drawn.
//!
//! **Local ids.** Per node type, nodes are numbered in order of first
//! appearance: the seeds first (a repeated seed keeps its first id), then hop
//! by hop, relation by relation, frontier node by frontier node, pick by pick.
//! Each relation's sampled edges (local source, local destination) are listed
//! in that same order.

use std::borrow::Cow;

use crate::index_list::check_len;
use crate::workload::splitmix64;
use crate::{Error, IndexOps, IndexPlan, Result};

/// The incoming neighbours of every destination node of one relation: the
/// CSR of the relation's adjacency by destination. `offsets` has
/// `dst_nodes + 1` entries; the neighbours of `v` are
/// `neighbors[offsets[v]..offsets[v + 1]]`, source node ids in edge-list
/// order. Built by [`SampleOps::csr_by_dst`].
#[derive(Debug, Clone)]
pub struct Csr<I> {
    src_type: usize,
    dst_type: usize,
    src_nodes: usize,
    dst_nodes: usize,
    offsets: I,
    neighbors: I,
}

impl<I> Csr<I> {
    /// A CSR from its parts, for backends implementing
    /// [`SampleOps::csr_by_dst`]: `offsets` must be the `dst_nodes + 1`
    /// nondecreasing offsets from 0 to `neighbors`' length, every neighbour
    /// below `src_nodes` (what `csr_by_dst` builds; the samplers rely on it).
    pub fn from_parts(
        (src_type, src_nodes): (usize, usize),
        (dst_type, dst_nodes): (usize, usize),
        offsets: I,
        neighbors: I,
    ) -> Csr<I> {
        Csr {
            src_type,
            dst_type,
            src_nodes,
            dst_nodes,
            offsets,
            neighbors,
        }
    }

    /// Source node type.
    pub fn src_type(&self) -> usize {
        self.src_type
    }

    /// Destination node type.
    pub fn dst_type(&self) -> usize {
        self.dst_type
    }

    /// Source nodes (the bound of every neighbour).
    pub fn src_nodes(&self) -> usize {
        self.src_nodes
    }

    /// Destination nodes (`offsets` has one more entry).
    pub fn dst_nodes(&self) -> usize {
        self.dst_nodes
    }

    /// The `dst_nodes + 1` offsets.
    pub fn offsets(&self) -> &I {
        &self.offsets
    }

    /// The neighbour lists, one after another.
    pub fn neighbors(&self) -> &I {
        &self.neighbors
    }
}

/// What to sample: the seeds' node type, per hop and relation the fanout
/// (`fanouts[h][r]`; 0 skips relation `r` in hop `h`), and the draw counter
/// `(seed, step)`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SampleSpec {
    /// Node type of the seeds.
    pub seed_type: usize,
    /// `fanouts[h][r]`: neighbours to draw per node in hop `h` through relation `r`.
    pub fanouts: Vec<Vec<u32>>,
    /// The run's seed.
    pub seed: u64,
    /// The step (mini-batch) number.
    pub step: u64,
}

impl SampleSpec {
    /// The same fanout for every relation in each hop (`[15, 10]`: 15 per
    /// relation in hop 0, 10 in hop 1).
    pub fn uniform(
        seed_type: usize,
        per_hop: &[u32],
        relations: usize,
        seed: u64,
        step: u64,
    ) -> Self {
        SampleSpec {
            seed_type,
            fanouts: per_hop.iter().map(|&k| vec![k; relations]).collect(),
            seed,
            step,
        }
    }
}

/// A sampled subgraph, with the backend's index lists `I`.
#[derive(Debug, Clone)]
pub struct Sampled<I> {
    /// Per node type, the global id of every local node, in local order.
    pub nodes: Vec<I>,
    /// Per relation, the local source of every sampled edge.
    pub src: Vec<I>,
    /// Per relation, the local destination of every sampled edge:
    /// non-decreasing (a hop's edges in frontier order, each hop's frontier
    /// numbered after the hops' before it), which a backend may rely on
    /// (the CUDA backend's plans of them skip the sort).
    pub dst: Vec<I>,
    /// The local id of every seed given, in the order given (`0..u` for `u`
    /// distinct seeds, a repeated seed repeating its id).
    pub seeds: I,
    /// Node count per type (the lengths of `nodes`).
    pub counts: Vec<usize>,
    /// What each hop reached, where the sampler records it (the host
    /// sampler does; a backend's may not, then a pass reads the whole
    /// sample at every layer).
    pub hops: Option<SampleHops<I>>,
}

/// What each hop of a sample reached. Local ids and edges are in hop order,
/// so each is a prefix: a layer that reads `k` hops around the seeds needs
/// no other (PyG's `trim_to_layer`).
#[derive(Debug, Clone)]
pub struct SampleHops<I> {
    /// `reached[h][t]`: the nodes of type `t` first reached in hops `0..=h`
    /// (hop 0: the distinct seeds), for `h` in `0..=hops`: local nodes
    /// `0..reached[h][t]`. The last entry is the sample's `counts`.
    pub reached: Vec<Vec<usize>>,
    /// Per relation, the edges of the first `k` hops for `k` in `1..hops`
    /// (`within[r][k - 1]`: sources, destinations), prefixes of the
    /// sample's `src[r]` and `dst[r]`, which hold every hop's.
    pub within: Vec<Vec<(I, I)>>,
}

/// The key of relation `r`'s draws in step `step` of the run seeded `seed`.
pub fn sample_key(seed: u64, step: u64, relation: usize) -> u64 {
    splitmix64(splitmix64(seed, step), relation as u64)
}

/// Draw `slot` of node `node` under `key` (kernels/sample.cu's `sdraw` is the same).
pub fn draw(key: u64, node: u32, slot: u32) -> u64 {
    splitmix64(key, (u64::from(node) << 32) | u64::from(slot))
}

/// Appends to `out` the positions (in `0..deg`) that node `node` picks out of
/// its `deg` neighbours with fanout `k`: all of them in order when
/// `deg <= k`, else Floyd's `k` distinct picks (see the module docs).
pub fn choose(key: u64, node: u32, deg: u32, k: u32, out: &mut Vec<u32>) {
    if deg <= k {
        out.extend(0..deg);
        return;
    }
    let first = out.len();
    for s in 0..k {
        let j = deg - k + s;
        let t = ((u128::from(draw(key, node, s)) * (u128::from(j) + 1)) >> 64) as u32;
        let pick = if out[first..].contains(&t) { j } else { t };
        out.push(pick);
    }
}

/// Checks a request against the graph's schema before any work.
///
/// # Errors
/// [`Error::Sample`] naming what is wrong: no seeds, a node type out of
/// range, no hops, a hop whose fanout list does not have one entry per
/// relation, a hop whose fanouts are all 0, more than `2^31` nodes in a type.
pub fn check_spec<I>(
    node_counts: &[usize],
    relations: &[Csr<I>],
    seeds: usize,
    spec: &SampleSpec,
) -> Result<()> {
    let bad = |m: String| Err(Error::Sample(m));
    if seeds == 0 {
        return bad("the seed set is empty".into());
    }
    check_len(seeds)?;
    if spec.seed_type >= node_counts.len() {
        return bad(format!(
            "seed type {} but the graph has {} node types",
            spec.seed_type,
            node_counts.len()
        ));
    }
    if let Some((t, n)) = node_counts.iter().enumerate().find(|(_, n)| **n > 1 << 31) {
        return bad(format!(
            "node type {t} has {n} nodes; the sampler takes at most 2^31"
        ));
    }
    for (r, c) in relations.iter().enumerate() {
        if c.src_type >= node_counts.len()
            || c.dst_type >= node_counts.len()
            || c.src_nodes != node_counts[c.src_type]
            || c.dst_nodes != node_counts[c.dst_type]
        {
            return bad(format!(
                "relation {r} ({} -> {}, {} -> {} nodes) does not fit the node counts {node_counts:?}",
                c.src_type, c.dst_type, c.src_nodes, c.dst_nodes
            ));
        }
    }
    if spec.fanouts.is_empty() {
        return bad("no hops: give at least one fanout list".into());
    }
    for (h, f) in spec.fanouts.iter().enumerate() {
        if f.len() != relations.len() {
            return bad(format!(
                "hop {h} has {} fanouts for {} relations",
                f.len(),
                relations.len()
            ));
        }
        if f.iter().all(|&k| k == 0) {
            return bad(format!(
                "every fanout of hop {h} is 0: the hop would sample nothing"
            ));
        }
    }
    Ok(())
}

/// The host reference sampler over host CSRs: the definition of
/// [`SampleOps::sample_neighbors`]'s result (see the module docs).
///
/// # Errors
/// As [`check_spec`]; [`Error::IndexOutOfRange`] for the first seed out of
/// its type's range (position, value, bound).
pub fn sample_host(
    node_counts: &[usize],
    relations: &[Csr<&[u32]>],
    seeds: &[u32],
    spec: &SampleSpec,
) -> Result<Sampled<Vec<u32>>> {
    check_spec(node_counts, relations, seeds.len(), spec)?;
    crate::plan::check_indices(seeds, node_counts[spec.seed_type])?;
    let types = node_counts.len();
    // local id of every global node per type, filled lazily (u32::MAX: none)
    let mut local: Vec<Vec<u32>> = vec![Vec::new(); types];
    let mut nodes: Vec<Vec<u32>> = vec![Vec::new(); types];
    let mut relabel = |t: usize, g: u32, nodes: &mut Vec<Vec<u32>>| -> u32 {
        let map = &mut local[t];
        if map.is_empty() {
            map.resize(node_counts[t], u32::MAX);
        }
        let slot = &mut map[g as usize];
        if *slot == u32::MAX {
            *slot = nodes[t].len() as u32;
            nodes[t].push(g);
        }
        *slot
    };
    let seed_local: Vec<u32> = seeds
        .iter()
        .map(|&s| relabel(spec.seed_type, s, &mut nodes))
        .collect();
    let mut frontier: Vec<(usize, usize)> = vec![(0, 0); types];
    frontier[spec.seed_type] = (0, nodes[spec.seed_type].len());
    let (mut src, mut dst) = (
        vec![Vec::new(); relations.len()],
        vec![Vec::new(); relations.len()],
    );
    let mut picks = Vec::new();
    let mut reached = vec![nodes.iter().map(Vec::len).collect::<Vec<_>>()];
    // per relation, its edge count after each hop
    let mut hop_ends: Vec<Vec<usize>> = vec![Vec::new(); relations.len()];
    for fan in &spec.fanouts {
        let before: Vec<usize> = nodes.iter().map(Vec::len).collect();
        for (r, c) in relations.iter().enumerate() {
            let k = fan[r];
            if k == 0 {
                continue;
            }
            let key = sample_key(spec.seed, spec.step, r);
            let (lo, hi) = frontier[c.dst_type];
            for v_local in lo..hi {
                let v = nodes[c.dst_type][v_local];
                let (a, b) = (c.offsets[v as usize], c.offsets[v as usize + 1]);
                picks.clear();
                choose(key, v, b - a, k, &mut picks);
                for &p in &picks {
                    let u = c.neighbors[(a + p) as usize];
                    src[r].push(relabel(c.src_type, u, &mut nodes));
                    dst[r].push(v_local as u32);
                }
            }
        }
        for t in 0..types {
            frontier[t] = (before[t], nodes[t].len());
        }
        reached.push(nodes.iter().map(Vec::len).collect());
        for (ends, s) in hop_ends.iter_mut().zip(&src) {
            ends.push(s.len());
        }
    }
    let hops = spec.fanouts.len();
    let within = hop_ends
        .iter()
        .zip(src.iter().zip(&dst))
        .map(|(ends, (s, d))| {
            ends[..hops - 1]
                .iter()
                .map(|&e| (s[..e].to_vec(), d[..e].to_vec()))
                .collect()
        })
        .collect();
    Ok(Sampled {
        counts: nodes.iter().map(Vec::len).collect(),
        nodes,
        src,
        dst,
        seeds: seed_local,
        hops: Some(SampleHops { reached, within }),
    })
}

/// The CSR by destination of the edges `src[e] -> dst[e]` on the host: the
/// offsets and positions of [`IndexPlan::new`]`(dst, dst_nodes)`, sources in
/// place of positions.
///
/// # Errors
/// [`Error::ShapeMismatch`] for lists of unequal length; index errors of
/// either list against its node count.
pub fn csr_host(
    src: &[u32],
    dst: &[u32],
    src_nodes: usize,
    dst_nodes: usize,
) -> Result<(Vec<u32>, Vec<u32>)> {
    if src.len() != dst.len() {
        return Err(Error::ShapeMismatch {
            op: "csr_by_dst",
            detail: format!("{} sources but {} destinations", src.len(), dst.len()),
        });
    }
    crate::plan::check_indices(src, src_nodes)?;
    let plan = IndexPlan::new(dst, dst_nodes)?;
    let offsets = plan.offsets().iter().map(|&o| o as u32).collect();
    let neighbors = plan.positions().iter().map(|&p| src[p as usize]).collect();
    Ok((offsets, neighbors))
}

/// Neighbour sampling where the graph lives: the CSR of a relation built
/// from its edge lists, and the sampler of the module docs. The defaults run
/// on the host ([`csr_host`], [`sample_host`]) through
/// [`IndexOps::index_to_host`]; device backends override both so that
/// neither the topology nor a sample crosses to the host.
pub trait SampleOps: IndexOps {
    /// The CSR by destination of relation `src_type -> dst_type` with edges
    /// `src[e] -> dst[e]`.
    ///
    /// Default: [`csr_host`] on the lists' host copies.
    ///
    /// # Errors
    /// As [`csr_host`]; backend errors.
    fn csr_by_dst(
        &self,
        src: &Self::Index,
        dst: &Self::Index,
        (src_type, src_nodes): (usize, usize),
        (dst_type, dst_nodes): (usize, usize),
    ) -> Result<Csr<Self::Index>> {
        let (s, d) = (self.index_to_host(src)?, self.index_to_host(dst)?);
        let (off, nbr) = csr_host(&s, &d, src_nodes, dst_nodes)?;
        Ok(Csr::from_parts(
            (src_type, src_nodes),
            (dst_type, dst_nodes),
            self.index_from_host(&off)?,
            self.index_from_host(&nbr)?,
        ))
    }

    /// Samples the subgraph around `seeds` (global ids of type
    /// `spec.seed_type`): exactly [`sample_host`]'s result, as backend lists.
    ///
    /// Default: [`sample_host`] on the host copies of the lists.
    ///
    /// # Errors
    /// As [`sample_host`]; backend errors.
    fn sample_neighbors(
        &self,
        node_counts: &[usize],
        relations: &[Csr<Self::Index>],
        seeds: &Self::Index,
        spec: &SampleSpec,
    ) -> Result<Sampled<Self::Index>> {
        let host: Vec<[Cow<'_, [u32]>; 2]> = relations
            .iter()
            .map(|c| {
                Ok([
                    self.index_to_host(&c.offsets)?,
                    self.index_to_host(&c.neighbors)?,
                ])
            })
            .collect::<Result<_>>()?;
        let csrs: Vec<Csr<&[u32]>> = relations
            .iter()
            .zip(&host)
            .map(|(c, [o, n])| {
                Csr::from_parts(
                    (c.src_type, c.src_nodes),
                    (c.dst_type, c.dst_nodes),
                    &**o,
                    &**n,
                )
            })
            .collect();
        let s = sample_host(node_counts, &csrs, &self.index_to_host(seeds)?, spec)?;
        let up = |v: Vec<Vec<u32>>| {
            v.iter()
                .map(|l| self.index_from_host(l))
                .collect::<Result<Vec<_>>>()
        };
        let hops = s
            .hops
            .map(|h| {
                let within = h
                    .within
                    .iter()
                    .map(|hops| {
                        hops.iter()
                            .map(|(s, d)| Ok((self.index_from_host(s)?, self.index_from_host(d)?)))
                            .collect::<Result<Vec<_>>>()
                    })
                    .collect::<Result<Vec<_>>>()?;
                Ok::<_, Error>(SampleHops {
                    reached: h.reached,
                    within,
                })
            })
            .transpose()?;
        Ok(Sampled {
            nodes: up(s.nodes)?,
            src: up(s.src)?,
            dst: up(s.dst)?,
            seeds: self.index_from_host(&s.seeds)?,
            counts: s.counts,
            hops,
        })
    }

    /// A handle on the same device and memory whose work is queued beside
    /// this one's (a second CUDA stream), so that the next mini-batch can be
    /// sampled while this one trains, with no wait of its own for the
    /// training. Lists and tensors made on either handle may be used on the
    /// other once its [`SampleOps::wait_for`] has ordered them.
    ///
    /// Default: `None`, for a backend with one queue (the work then runs in
    /// line, in the order it is asked for).
    ///
    /// # Errors
    /// Backend errors.
    fn beside(&self) -> Result<Option<Self>>
    where
        Self: Sized,
    {
        Ok(None)
    }

    /// Orders the work queued on this handle from now on after all the work
    /// queued on `other` (a handle of [`SampleOps::beside`], or the one it
    /// came from) so far, without waiting on the host.
    ///
    /// Default: nothing to order (one queue).
    ///
    /// # Errors
    /// Backend errors.
    fn wait_for(&self, other: &Self) -> Result<()>
    where
        Self: Sized,
    {
        let _ = other;
        Ok(())
    }
}
