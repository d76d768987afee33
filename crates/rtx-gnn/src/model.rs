//! The HetGAT model: parameters, SGD and the training step; the forward pass
//! and MSE loss in `forward.rs`, the hand-written backward in `backward.rs`,
//! mixed precision (bf16/f16 activations, f32 master weights and loss) in
//! `mixed.rs`.

use rtx_backend::prelude::*;
use rtx_backend::workload::{splitmix64, unit};
use rtx_backend::{BTensor, Element, Indices};

use crate::graph::NodeType;
use crate::topology::Topology;
use crate::{Error, Result};

mod backward;
mod forward;
mod mixed;
mod objective;

pub use mixed::MixedHetGat;
pub(crate) use mixed::convert_present;
pub use objective::{LossKind, Objective, ObjectiveGrads, ObjectiveLoss, Targets};

/// Hyper-parameters of a [`HetGat`].
#[derive(Debug, Clone, PartialEq)]
pub struct HetGatConfig {
    /// Input features per node type (indexed like the graph's node types).
    pub in_features: Vec<usize>,
    /// Attention heads per convolution.
    pub heads: usize,
    /// Channels per head (a layer's output has `heads * channels` features).
    pub channels: usize,
    /// Number of layers.
    pub layers: usize,
    /// Slope of the LeakyReLU of the attention logits.
    pub negative_slope: f64,
    /// The node type the linear head reads.
    pub target: usize,
    /// Outputs of the linear head `hidden -> out_features` (classes of a
    /// classification, targets per node of a regression; 1 in the
    /// benchmarks).
    pub out_features: usize,
    /// Dropout probability on every layer's input features in training
    /// passes (PyG: `F.dropout(x, p, training)` before each convolution).
    pub input_dropout: f64,
    /// Dropout probability on the attention coefficients in training
    /// passes (PyG: `GATConv(dropout=p)`).
    pub attention_dropout: f64,
}

impl HetGatConfig {
    /// The docs/workloads.md model: 32 input features, 4 heads x 16 channels, two
    /// layers, LeakyReLU(0.2), head on type `a`.
    pub fn harris() -> HetGatConfig {
        HetGatConfig {
            in_features: vec![crate::graph::HARRIS_FEATURES; 2],
            heads: 4,
            channels: 16,
            layers: 2,
            negative_slope: 0.2,
            target: 0,
            out_features: 1,
            input_dropout: 0.0,
            attention_dropout: 0.0,
        }
    }

    /// `heads * channels`.
    ///
    /// # Errors
    /// [`Error::Model`] when the product overflows `usize`.
    pub fn hidden(&self) -> Result<usize> {
        self.heads.checked_mul(self.channels).ok_or_else(|| {
            Error::Model(format!(
                "{} heads x {} channels overflows usize",
                self.heads, self.channels
            ))
        })
    }
}

/// Parameters per convolution (layer, relation), in this order; the names
/// of [`HetGat::param_names`] end in these.
const CONV_PARAMS: [&str; 5] = ["w_src", "w_dst", "att_src", "att_dst", "bias"];
const W_SRC: usize = 0;
const W_DST: usize = 1;
const ATT_SRC: usize = 2;
const ATT_DST: usize = 3;
const BIAS: usize = 4;

/// A heterogeneous graph-attention network on backend `B` with elements `T`:
/// per layer and relation a GAT convolution as PyG's
/// `GATConv((-1, -1), channels, heads, add_self_loops=False)` (separate
/// source and destination linear maps without bias, attention vectors, a
/// bias after aggregation), relation outputs summed per destination type
/// (PyG `HeteroConv(aggr="sum")`), ReLU after each layer, and a linear head
/// `hidden -> out_features` on the target type. Training passes may drop
/// out every layer's input features and the attention coefficients
/// ([`HetGatConfig::input_dropout`], [`HetGatConfig::attention_dropout`]).
///
/// Parameters are one flat list (see [`HetGat::param_names`]): for layer `l`
/// and relation `r`, `w_src [in_src, hidden]`, `w_dst [in_dst, hidden]`,
/// `att_src [1, hidden]`, `att_dst [1, hidden]`, `bias [1, hidden]`; then
/// `head_w [hidden, out_features]` and `head_b [1, out_features]`.
///
/// Relations whose output cannot reach the head (in the last layer: those
/// into other node types) are not computed; their parameters exist (as in
/// PyG) and get no gradient.
///
/// A model runs on any graph with the schema of the one it was built on:
/// the same node type names, and the same relations `(name, src type, dst
/// type)` in the same order (node and edge counts may differ, e.g. another
/// batch). Any other graph is an error naming the first difference.
#[derive(Debug)]
pub struct HetGat<B: Backend, T: Element> {
    config: HetGatConfig,
    /// `heads * channels`.
    hidden: usize,
    /// Node type names of the graph the model was built on.
    node_types: Vec<String>,
    /// Relations of the graph the model was built on, in order.
    relations: Vec<RelationKey>,
    params: Vec<BTensor<B, T>>,
    names: Vec<String>,
    /// `live[l][r]`: whether relation `r` of layer `l` reaches the head.
    live: Vec<Vec<bool>>,
}

/// What identifies a relation in a schema (unique per graph, as PyG's edge
/// type key); `live` and the parameter shapes depend on nothing else.
#[derive(Debug, Clone, PartialEq, Eq)]
struct RelationKey {
    name: String,
    src_type: usize,
    dst_type: usize,
}

/// The MSE loss still on the device: the sum of squares of the output, and
/// the row count it is divided by when read. Steps that return it leave
/// reading it (a synchronization) to the caller, so they can be recorded into
/// a device graph (see `rtx_backend_cuda::CudaBackend::record`).
#[derive(Debug)]
pub struct DeviceLoss<B: Backend, T: Element> {
    /// `sum(y^2)`, `[1, 1]`.
    pub sum_sq: BTensor<B, T>,
    /// Rows of `y`.
    pub rows: usize,
}

impl<B: Backend, T: Element> DeviceLoss<B, T> {
    /// Reads the loss: `sum_sq / rows` (downloads, so it waits for the work).
    ///
    /// # Errors
    /// Backend errors.
    pub fn read(&self, b: &B) -> Result<T> {
        let s = b.download(&self.sum_sq)?;
        Ok(s[0] / T::from_f64(self.rows.max(1) as f64))
    }
}

/// Gradients of every parameter, in [`HetGat::params`] order; `None` is zero.
pub type Grads<B, T> = Vec<Option<BTensor<B, T>>>;

/// What [`HetGat::loss_and_grads`] returns (`L = T`) and
/// [`HetGat::loss_and_grads_enqueued`] (`L = DeviceLoss`).
#[derive(Debug)]
pub struct LossAndGrads<B: Backend, T: Element, L = T> {
    /// The MSE loss against zeros.
    pub loss: L,
    /// Gradients of the parameters.
    pub grads: Grads<B, T>,
    /// Gradients of the inputs per node type (when asked for).
    pub input_grads: Vec<Option<BTensor<B, T>>>,
}

impl<B: Backend, T: Element> HetGat<B, T> {
    /// A model for `graph`'s schema, initialized from `seed` as PyG
    /// initializes it, with splitmix64 in place of torch's generator:
    /// linear maps and attention vectors glorot-uniform
    /// (`±sqrt(6 / (fan_in + fan_out))`; attention vectors as `[1, heads,
    /// channels]`), biases zero, the head's weight and bias uniform in
    /// `±1/sqrt(hidden)` (torch's `Linear` default). Parameter `i` draws from
    /// stream `splitmix64(seed, i)`.
    ///
    /// # Errors
    /// [`Error::Model`] for a config that does not fit the graph (feature
    /// counts, target type, zero sizes, a node type the next layer reads that
    /// no relation writes); backend errors.
    pub fn new<G: Topology<B> + ?Sized>(
        b: &B,
        graph: &G,
        config: HetGatConfig,
        seed: u64,
    ) -> Result<Self> {
        let (node_types, relations) = schema(graph);
        Self::for_schema(b, node_types, relations, config, seed)
    }

    /// [`HetGat::new`] for a schema given as node types and relations
    /// `(name, src type, dst type)` (the schema is all a model reads of a
    /// graph when it is built; e.g. a [`GraphStore`](crate::GraphStore)'s).
    ///
    /// # Errors
    /// As [`HetGat::new`].
    pub fn with_schema(
        b: &B,
        node_types: &[NodeType],
        relations: &[(String, usize, usize)],
        config: HetGatConfig,
        seed: u64,
    ) -> Result<Self> {
        let relations = relations
            .iter()
            .map(|(name, s, d)| RelationKey {
                name: name.clone(),
                src_type: *s,
                dst_type: *d,
            })
            .collect();
        Self::for_schema(b, node_types.to_vec(), relations, config, seed)
    }

    fn for_schema(
        b: &B,
        node_types: Vec<NodeType>,
        relations: Vec<RelationKey>,
        config: HetGatConfig,
        seed: u64,
    ) -> Result<Self> {
        let types = node_types.len();
        if config.in_features.len() != types
            || config.target >= types
            || config.heads == 0
            || config.channels == 0
            || config.layers == 0
            || config.out_features == 0
        {
            return Err(Error::Model(format!(
                "config {config:?} does not fit a graph of {types} node types \
                 (want one feature count per type, target < {types}, nonzero sizes)"
            )));
        }
        for (what, p) in [
            ("input_dropout", config.input_dropout),
            ("attention_dropout", config.attention_dropout),
        ] {
            if !(0.0..1.0).contains(&p) {
                return Err(Error::Model(format!(
                    "{what} is {p}; a dropout probability is in [0, 1)"
                )));
            }
        }
        let hidden = config.hidden()?;
        check_param_count::<T>(&relations, &config, hidden)?;
        let live = liveness(&node_types, &relations, &config)?;
        let mut params = Vec::new();
        let mut names = Vec::new();
        let mut draw = |name: String, shape: [usize; 2], bound: f64| -> Result<()> {
            let s = splitmix64(seed, params.len() as u64);
            let n = shape[0].checked_mul(shape[1]).ok_or_else(|| {
                Error::Model(format!("parameter {name}: shape {shape:?} overflows usize"))
            })?;
            let v: Vec<T> = (0..n as u64)
                .map(|i| T::from_f64(bound * (2.0 * unit(s, i) - 1.0)))
                .collect();
            params.push(b.upload(&v, &shape)?);
            names.push(name);
            Ok(())
        };
        // in f64: no overflow for any fan
        let glorot =
            |fan_in: usize, fan_out: usize| (6.0 / (fan_in as f64 + fan_out as f64)).sqrt();
        let att = glorot(config.heads, config.channels);
        for l in 0..config.layers {
            for rel in &relations {
                let fin = |t: usize| {
                    if l == 0 {
                        config.in_features[t]
                    } else {
                        hidden
                    }
                };
                let (fs, fd) = (fin(rel.src_type), fin(rel.dst_type));
                // in CONV_PARAMS order: (shape, init bound)
                let init = [
                    ([fs, hidden], glorot(fs, hidden)),
                    ([fd, hidden], glorot(fd, hidden)),
                    ([1, hidden], att),
                    ([1, hidden], att),
                    ([1, hidden], 0.0),
                ];
                for (which, (shape, bound)) in CONV_PARAMS.iter().zip(init) {
                    draw(format!("conv{l}.{}.{which}", rel.name), shape, bound)?;
                }
            }
        }
        let head = 1.0 / (hidden as f64).sqrt();
        let out = config.out_features;
        draw("head_w".into(), [hidden, out], head)?;
        draw("head_b".into(), [1, out], head)?;
        Ok(HetGat {
            config,
            hidden,
            node_types: node_types.into_iter().map(|t| t.name).collect(),
            relations,
            params,
            names,
            live,
        })
    }

    /// The configuration.
    pub fn config(&self) -> &HetGatConfig {
        &self.config
    }

    /// Every parameter, in the documented order.
    pub fn params(&self) -> &[BTensor<B, T>] {
        &self.params
    }

    /// Every parameter, mutable (same order; keep the shapes).
    pub fn params_mut(&mut self) -> &mut [BTensor<B, T>] {
        &mut self.params
    }

    /// The bits of every parameter (downloaded, in [`HetGat::params`]'
    /// order): what tests compare across runs, ranks and backends.
    ///
    /// # Errors
    /// Backend errors.
    pub fn param_bits(&self, b: &B) -> Result<Vec<Vec<u64>>> {
        self.params
            .iter()
            .map(|p| Ok(b.download(p)?.iter().map(|v| v.to_bits_u64()).collect()))
            .collect()
    }

    /// Parameter names (`conv0.aa.w_src`, ..., `head_w`, `head_b`).
    pub fn param_names(&self) -> &[String] {
        &self.names
    }

    /// The node type names of the schema the model was built for.
    pub fn node_type_names(&self) -> &[String] {
        &self.node_types
    }

    /// `(name, src type, dst type)` of every relation of the schema, in order.
    pub fn relation_keys(&self) -> Vec<(&str, usize, usize)> {
        self.relations
            .iter()
            .map(|r| (r.name.as_str(), r.src_type, r.dst_type))
            .collect()
    }

    /// Makes ready together the scatter plans a pass over `graph` sums by
    /// ([`IndexOps::prepare_plans`](rtx_backend::IndexOps::prepare_plans)):
    /// [`HetGat::plan_lists`]. On the GPU a mini-batch's plans then cost one
    /// wait instead of one each; the pass's bits are the same.
    ///
    /// # Errors
    /// Backend errors (an entry out of range for its node type).
    pub fn prepare_plans<G: Topology<B> + ?Sized>(
        &self,
        b: &B,
        graph: &G,
        backward: bool,
    ) -> Result<()> {
        Ok(b.prepare_plans(&self.plan_lists(graph, backward))?)
    }

    /// The lists a pass over `graph` sums by, with their row counts, each
    /// once: each relation live in a layer by its destinations as that layer
    /// reads them ([`Topology::edges_within`]), and for a `backward` pass by
    /// its sources too (a caller adds its own, e.g. the objective's rows,
    /// and prepares them all at once).
    pub fn plan_lists<'g, G: Topology<B> + ?Sized>(
        &self,
        graph: &'g G,
        backward: bool,
    ) -> Vec<Indices<'g, B>> {
        let mut lists = Vec::new();
        for (l, live) in self.live.iter().enumerate() {
            let depth = self.config.layers - l;
            for r in (0..self.relations.len()).filter(|&r| live[r]) {
                let edges = graph.edges_within(r, depth);
                for list in [Some(edges.by_dst), backward.then_some(edges.by_src)]
                    .into_iter()
                    .flatten()
                {
                    if !lists.iter().any(|k: &Indices<'g, B>| k.is_same(&list)) {
                        lists.push(list);
                    }
                }
            }
        }
        lists
    }

    /// Replaces every parameter (e.g. from a checkpoint), all or nothing.
    ///
    /// # Errors
    /// [`Error::Model`] when the count or a shape differs, naming the first
    /// parameter that does not fit; nothing changes then.
    pub fn set_params(&mut self, params: Vec<BTensor<B, T>>) -> Result<()> {
        if params.len() != self.params.len() {
            return Err(Error::Model(format!(
                "{} parameters given; the model has {}",
                params.len(),
                self.params.len()
            )));
        }
        for ((new, old), name) in params.iter().zip(&self.params).zip(&self.names) {
            if new.shape() != old.shape() {
                return Err(Error::Model(format!(
                    "parameter {name} has shape {:?}; the model's is {:?}",
                    new.shape(),
                    old.shape()
                )));
            }
        }
        self.params = params;
        Ok(())
    }

    /// Index of parameter `which` (a `CONV_PARAMS` index) of layer `l`, relation `r`.
    fn pi(&self, l: usize, r: usize, which: usize) -> usize {
        (l * self.relations.len() + r) * CONV_PARAMS.len() + which
    }

    fn p(&self, l: usize, r: usize, which: usize) -> &BTensor<B, T> {
        &self.params[self.pi(l, r, which)]
    }

    /// Index of `head_w` (`head_b` follows it).
    fn head(&self) -> usize {
        self.config.layers * self.relations.len() * CONV_PARAMS.len()
    }

    /// Checks that `graph` has the model's schema and `x` fits it.
    fn check_inputs<G: Topology<B> + ?Sized>(&self, graph: &G, x: &[BTensor<B, T>]) -> Result<()> {
        let (types, rels) = schema(graph);
        if rels.len() != self.relations.len()
            || x.len() != types.len()
            || types.len() != self.node_types.len()
        {
            return Err(Error::Model(format!(
                "{} inputs, {} node types and {} relations given; the model has {} node types \
                 and {} relations",
                x.len(),
                types.len(),
                rels.len(),
                self.node_types.len(),
                self.relations.len()
            )));
        }
        if let Some((t, (nt, want))) = types
            .iter()
            .zip(&self.node_types)
            .enumerate()
            .find(|(_, (nt, want))| nt.name != **want)
        {
            return Err(Error::Model(format!(
                "node type {t} of the graph is {}, but the model was built for {want}",
                nt.name
            )));
        }
        let type_name = |t: usize| self.node_types[t].as_str();
        for (r, (rel, key)) in rels.iter().zip(&self.relations).enumerate() {
            if rel != key {
                return Err(Error::Model(format!(
                    "relation {r} of the graph is {} ({} -> {}), but the model was built for {} \
                     ({} -> {}) there: build the model on this graph, or give the relations \
                     in the model's order",
                    rel.name,
                    type_name(rel.src_type),
                    type_name(rel.dst_type),
                    key.name,
                    type_name(key.src_type),
                    type_name(key.dst_type)
                )));
            }
        }
        for (t, (xt, nt)) in x.iter().zip(&types).enumerate() {
            let want = [nt.nodes, self.config.in_features[t]];
            if xt.shape() != want {
                return Err(Error::Model(format!(
                    "input of node type {} has shape {:?}, want {want:?}",
                    nt.name,
                    xt.shape()
                )));
            }
        }
        Ok(())
    }

    /// Plain SGD: `p = p - lr * grad` for every parameter with a gradient.
    /// All or nothing for gradients that do not fit: every shape is checked
    /// before any parameter changes.
    ///
    /// # Errors
    /// [`Error::Model`] when `grads` does not fit the parameters (count or a
    /// shape, naming the parameter), and then no parameter has changed;
    /// backend errors.
    pub fn sgd(&mut self, b: &B, grads: &Grads<B, T>, lr: f64) -> Result<()> {
        if grads.len() != self.params.len() {
            return Err(Error::Model(format!(
                "{} gradients for {} parameters",
                grads.len(),
                self.params.len()
            )));
        }
        for ((p, g), name) in self.params.iter().zip(grads).zip(&self.names) {
            if let Some(g) = g
                && g.shape() != p.shape()
            {
                return Err(Error::Model(format!(
                    "gradient of {name} has shape {:?}, the parameter {:?}",
                    g.shape(),
                    p.shape()
                )));
            }
        }
        for (p, g) in self.params.iter_mut().zip(grads) {
            if let Some(g) = g {
                b.axpy(p, -lr, g)?;
            }
        }
        Ok(())
    }

    /// One training step: forward, MSE loss against zeros, backward, SGD.
    /// Returns the loss before the update.
    ///
    /// # Errors
    /// As [`HetGat::forward`].
    pub fn train_step<G: Topology<B> + ?Sized>(
        &mut self,
        b: &B,
        graph: &G,
        x: &[BTensor<B, T>],
        lr: f64,
    ) -> Result<T> {
        self.train_step_enqueued(b, graph, x, lr)?.read(b)
    }

    /// [`HetGat::train_step`] with the loss (before the update) left on the
    /// device: nothing here waits for the device, so a device backend can
    /// record the whole step once and replay it (the parameters are updated
    /// in place, where they are).
    ///
    /// # Errors
    /// As [`HetGat::forward`].
    pub fn train_step_enqueued<G: Topology<B> + ?Sized>(
        &mut self,
        b: &B,
        graph: &G,
        x: &[BTensor<B, T>],
        lr: f64,
    ) -> Result<DeviceLoss<B, T>> {
        let LossAndGrads { loss, grads, .. } = self.loss_and_grads_enqueued(b, graph, x, false)?;
        self.sgd(b, &grads, lr)?;
        Ok(loss)
    }
}

/// Which relations of which layer reach the head (see [`HetGat`]), and a
/// check that every node type a live relation reads exists at that layer.
fn liveness(
    types: &[NodeType],
    rels: &[RelationKey],
    config: &HetGatConfig,
) -> Result<Vec<Vec<bool>>> {
    let mut needed = vec![false; types.len()];
    needed[config.target] = true;
    // built from the last layer back, row by row: an error comes before any
    // allocation proportional to the layer count
    let mut live = Vec::new();
    for l in (0..config.layers).rev() {
        let mut reads = vec![false; types.len()];
        let mut row = vec![false; rels.len()];
        for (r, rel) in rels.iter().enumerate() {
            if needed[rel.dst_type] {
                row[r] = true;
                reads[rel.src_type] = true;
                reads[rel.dst_type] = true;
            }
        }
        // every type written by this layer that is needed must have an incoming relation
        for (t, &need) in needed.iter().enumerate() {
            if need && !rels.iter().any(|rel| rel.dst_type == t) {
                return Err(Error::Model(format!(
                    "node type {} is needed after layer {l} but no relation points to it \
                     (PyG's HeteroConv would drop it)",
                    types[t].name
                )));
            }
        }
        needed = reads;
        live.push(row);
    }
    live.reverse();
    Ok(live)
}

/// Checks with checked arithmetic that the model's parameters (every
/// convolution's `(in_src + in_dst + 3) * hidden` elements, then the head's
/// `(hidden + 1) * out_features`) fit in memory an allocation can address, so building them
/// cannot overflow or panic on capacity.
fn check_param_count<T: Element>(
    rels: &[RelationKey],
    config: &HetGatConfig,
    hidden: usize,
) -> Result<()> {
    let too_big = || {
        Error::Model(format!(
            "config {config:?} on a graph of {} relations: the parameters do not fit in memory",
            rels.len()
        ))
    };
    let conv = |fs: usize, fd: usize| {
        fs.checked_add(fd)
            .and_then(|f| f.checked_add(3))
            .and_then(|f| f.checked_mul(hidden))
    };
    let mut first = 0usize;
    let mut later = 0usize;
    for rel in rels {
        let (fs, fd) = (
            config.in_features[rel.src_type],
            config.in_features[rel.dst_type],
        );
        first = conv(fs, fd)
            .and_then(|n| first.checked_add(n))
            .ok_or_else(too_big)?;
        later = conv(hidden, hidden)
            .and_then(|n| later.checked_add(n))
            .ok_or_else(too_big)?;
    }
    let total = later
        .checked_mul(config.layers - 1)
        .and_then(|n| n.checked_add(first))
        .and_then(|n| {
            hidden
                .checked_add(1)?
                .checked_mul(config.out_features)?
                .checked_add(n)
        })
        .ok_or_else(too_big)?;
    if total > isize::MAX as usize / size_of::<T>().max(1) {
        return Err(too_big());
    }
    Ok(())
}

/// The node types and relation keys of a graph.
fn schema<B: Backend, G: Topology<B> + ?Sized>(graph: &G) -> (Vec<NodeType>, Vec<RelationKey>) {
    let rels = (0..graph.relation_count())
        .map(|r| {
            let (name, src_type, dst_type) = graph.relation_key(r);
            RelationKey {
                name: name.to_owned(),
                src_type,
                dst_type,
            }
        })
        .collect();
    (graph.node_types().to_vec(), rels)
}
