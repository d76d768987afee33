//! [`HostIndexOps`]: a backend with its index ops forced onto the host
//! round-trip defaults.

use crate::{
    AdamStep, BTensor, Backend, BackendCore, Binary, DenseOps, Element, FusedOps, IndexOps,
    LayoutOps, RegressionLoss, Result, SgdStep, TrainOps, Unary,
};

/// Wraps a backend and runs its **index ops** ([`IndexOps`]) and so its
/// **fused ops** ([`FusedOps`], compositions of index and dense ops) through
/// the traits' provided defaults, i.e. through host memory, while the core,
/// layout, dense and training ops ([`BackendCore`], [`LayoutOps`],
/// [`DenseOps`], [`TrainOps`]) are the wrapped backend's own (a label list
/// for [`TrainOps::cross_entropy`] is copied into the inner backend's list).
///
/// This is the "before" of moving gather and scatter onto a device: the same
/// model on the same device, paying a host round trip per index op. Because
/// the index ops follow one definition everywhere (the canonical order; exact
/// gathers and maxima) and every other op is the inner backend's own, a model
/// run on `HostIndexOps<B>` gives the same bits as on `B`, step after step.
///
/// The index and fused defaults are taken by construction (their `impl`s
/// override no op: the index one only names its host index list type with
/// [`host_index_list!`](crate::host_index_list)); the delegating `impl`s of the other four capabilities must list
/// every op of their trait, which the test below checks by name.
#[derive(Debug, Clone, Default)]
pub struct HostIndexOps<B> {
    inner: B,
}

impl<B: Backend> HostIndexOps<B> {
    /// Wraps `inner`.
    pub fn new(inner: B) -> Self {
        HostIndexOps { inner }
    }

    /// The wrapped backend.
    pub fn inner(&self) -> &B {
        &self.inner
    }

    /// Unwraps.
    pub fn into_inner(self) -> B {
        self.inner
    }
}

impl<B: Backend> BackendCore for HostIndexOps<B> {
    type Buffer<T: Element> = B::Buffer<T>;

    fn name(&self) -> String {
        format!("{}+host-index", self.inner.name())
    }

    fn upload<T: Element>(&self, data: &[T], shape: &[usize]) -> Result<BTensor<Self, T>> {
        self.inner.upload(data, shape)
    }

    fn download<T: Element>(&self, t: &BTensor<Self, T>) -> Result<Vec<T>> {
        self.inner.download(t)
    }

    fn zeros<T: Element>(&self, shape: &[usize]) -> Result<BTensor<Self, T>> {
        self.inner.zeros(shape)
    }

    fn synchronize(&self) -> Result<()> {
        self.inner.synchronize()
    }

    fn make_unique<T: Element>(&self, t: &mut BTensor<Self, T>) -> Result<()> {
        self.inner.make_unique(t)
    }
}

impl<B: Backend> IndexOps for HostIndexOps<B> {
    crate::host_index_list!();
}

impl<B: Backend> LayoutOps for HostIndexOps<B> {
    fn swap_dims<T: Element>(
        &self,
        t: &BTensor<Self, T>,
        a: usize,
        b: usize,
    ) -> Result<BTensor<Self, T>> {
        self.inner.swap_dims(t, a, b)
    }

    fn permute<T: Element>(
        &self,
        t: &BTensor<Self, T>,
        perm: &[usize],
    ) -> Result<BTensor<Self, T>> {
        self.inner.permute(t, perm)
    }

    fn resize_rows<T: Element>(
        &self,
        x: &BTensor<Self, T>,
        rows: usize,
    ) -> Result<BTensor<Self, T>> {
        self.inner.resize_rows(x, rows)
    }

    fn convert<T: Element, U: Element>(&self, x: &BTensor<Self, T>) -> Result<BTensor<Self, U>> {
        self.inner.convert(x)
    }

    fn convert_all<T: Element, U: Element>(
        &self,
        xs: &[&BTensor<Self, T>],
    ) -> Result<Vec<BTensor<Self, U>>> {
        self.inner.convert_all(xs)
    }
}

impl<B: Backend> DenseOps for HostIndexOps<B> {
    fn matmul<T: Element>(
        &self,
        a: &BTensor<Self, T>,
        trans_a: bool,
        b: &BTensor<Self, T>,
        trans_b: bool,
    ) -> Result<BTensor<Self, T>> {
        self.inner.matmul(a, trans_a, b, trans_b)
    }

    fn unary<T: Element>(&self, op: Unary, x: &BTensor<Self, T>) -> Result<BTensor<Self, T>> {
        self.inner.unary(op, x)
    }

    fn unary_backward<T: Element>(
        &self,
        op: Unary,
        x: &BTensor<Self, T>,
        grad: &BTensor<Self, T>,
    ) -> Result<BTensor<Self, T>> {
        self.inner.unary_backward(op, x, grad)
    }

    fn binary<T: Element>(
        &self,
        op: Binary,
        a: &BTensor<Self, T>,
        b: &BTensor<Self, T>,
    ) -> Result<BTensor<Self, T>> {
        self.inner.binary(op, a, b)
    }

    fn axpy<T: Element>(
        &self,
        y: &mut BTensor<Self, T>,
        alpha: f64,
        x: &BTensor<Self, T>,
    ) -> Result<()> {
        self.inner.axpy(y, alpha, x)
    }

    fn axpy_mixed<H: Element>(
        &self,
        master: &mut BTensor<Self, H::Acc>,
        alpha: f64,
        x: &BTensor<Self, H>,
        low: &mut BTensor<Self, H>,
    ) -> Result<()> {
        self.inner.axpy_mixed(master, alpha, x, low)
    }

    fn sum_rows<T: Element>(&self, x: &BTensor<Self, T>) -> Result<BTensor<Self, T>> {
        self.inner.sum_rows(x)
    }

    fn head_dot<T: Element>(
        &self,
        a: &BTensor<Self, T>,
        b: &BTensor<Self, T>,
        heads: usize,
    ) -> Result<BTensor<Self, T>> {
        self.inner.head_dot(a, b, heads)
    }

    fn head_scale<T: Element>(
        &self,
        a: &BTensor<Self, T>,
        s: &BTensor<Self, T>,
    ) -> Result<BTensor<Self, T>> {
        self.inner.head_scale(a, s)
    }
}

impl<B: Backend> FusedOps for HostIndexOps<B> {}

impl<B: Backend> TrainOps for HostIndexOps<B> {
    fn dropout<T: Element>(
        &self,
        x: &BTensor<Self, T>,
        p: f64,
        seed: u64,
    ) -> Result<BTensor<Self, T>> {
        self.inner.dropout(x, p, seed)
    }

    fn cross_entropy<T: Element>(
        &self,
        logits: &BTensor<Self, T>,
        labels: &Self::Index,
        scale: f64,
    ) -> Result<crate::LossGrad<Self, T>> {
        let labels = self.inner.index_from_host(&self.index_to_host(labels)?)?;
        self.inner.cross_entropy(logits, &labels, scale)
    }

    fn regression_loss<T: Element>(
        &self,
        kind: RegressionLoss,
        y: &BTensor<Self, T>,
        target: &BTensor<Self, T::Acc>,
        scale: f64,
    ) -> Result<crate::LossGrad<Self, T>> {
        self.inner.regression_loss(kind, y, target, scale)
    }

    fn adam_step<T: Element>(
        &self,
        h: &AdamStep,
        params: &mut [&mut BTensor<Self, T>],
        grads: &[&BTensor<Self, T>],
        m: &mut [&mut BTensor<Self, T>],
        v: &mut [&mut BTensor<Self, T>],
    ) -> Result<()> {
        self.inner.adam_step(h, params, grads, m, v)
    }

    fn sgd_step<T: Element>(
        &self,
        h: &SgdStep,
        params: &mut [&mut BTensor<Self, T>],
        grads: &[&BTensor<Self, T>],
        bufs: &mut [&mut BTensor<Self, T>],
    ) -> Result<()> {
        self.inner.sgd_step(h, params, grads, bufs)
    }
}

#[cfg(test)]
mod tests {
    /// The `fn` names declared in `src` (a trait's file or an impl block).
    fn fn_names(src: &str) -> Vec<&str> {
        src.lines()
            .filter_map(|l| l.trim_start().strip_prefix("fn "))
            .map(|rest| rest.split(['<', '(']).next().unwrap_or(rest))
            .collect()
    }

    /// The text of `impl<B: Backend> {trait} for HostIndexOps<B> { ... }`.
    fn impl_block(trait_name: &str) -> &'static str {
        let src = include_str!("host_index.rs");
        let head = format!("impl<B: Backend> {trait_name} for HostIndexOps<B> {{");
        let start = src.find(&head).unwrap_or_else(|| panic!("no `{head}`"));
        let body = &src[start..];
        if body.starts_with(&format!("{head}}}")) {
            return &body[..head.len() + 1];
        }
        &body[..body.find("\n}\n").map_or(body.len(), |e| e + 2)]
    }

    /// Every op of the delegated capabilities is delegated: a forgotten one
    /// would silently fall back to a host round trip (slower, and for dense
    /// ops possibly other bits than the inner backend's).
    #[test]
    fn delegating_impls_list_every_op() {
        for (name, trait_src) in [
            ("BackendCore", include_str!("capability/core.rs")),
            ("LayoutOps", include_str!("capability/layout.rs")),
            ("DenseOps", include_str!("capability/dense.rs")),
            ("TrainOps", include_str!("capability/train.rs")),
        ] {
            let delegated = fn_names(impl_block(name));
            for op in fn_names(trait_src) {
                assert!(
                    delegated.contains(&op),
                    "HostIndexOps does not delegate {name}::{op} to the inner backend: \
                     add it to `impl {name} for HostIndexOps` in src/host_index.rs"
                );
            }
        }
    }

    /// The index and fused impls override nothing: the fused one is empty,
    /// the index one holds only the host index list items (no op), so every
    /// op runs on the defaults.
    #[test]
    fn index_and_fused_ops_take_the_defaults() {
        let block = impl_block("FusedOps");
        assert!(block.trim_end().ends_with("{}"), "{block}");
        let block = impl_block("IndexOps");
        let body = block[block.find('{').unwrap() + 1..block.rfind('}').unwrap()].trim();
        assert_eq!(body, "crate::host_index_list!();", "{block}");
    }
}
