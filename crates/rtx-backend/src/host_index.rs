//! [`HostIndexOps`]: a backend with its index ops forced onto the host
//! round-trip defaults.

use crate::{BTensor, Backend, Binary, Element, Result, Unary};

/// Wraps a backend and runs its **index ops** (`index_select`, `index_add`,
/// `index_add_planned`, `segment_max`, and so the composed `segment_sum`,
/// `segment_softmax`, `segment_softmax_backward`, `gather_scale_scatter` and
/// `gather_head_dot`) through the trait's
/// provided defaults, i.e. through host memory, while every other op
/// (upload/download/zeros, `synchronize`, `make_unique`, `swap_dims`/`permute`, `matmul`,
/// `unary`, `unary_backward`, `binary`, `axpy`, `sum_rows`, `head_dot`,
/// `head_scale`) is delegated to the wrapped backend.
///
/// This is the "before" of moving gather and scatter onto a device: the same
/// model on the same device, paying a host round trip per index op. Because
/// the index ops follow one definition everywhere (the canonical order; exact
/// gathers and maxima) and every other op is the inner backend's own, a model
/// run on `HostIndexOps<B>` gives the same bits as on `B`, step after step.
///
/// When an op is added to [`Backend`], add it to the delegation list here
/// unless it is an index op; a forgotten delegation silently falls back to
/// the default (slower, and for non-index ops possibly different bits).
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

impl<B: Backend> Backend for HostIndexOps<B> {
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
