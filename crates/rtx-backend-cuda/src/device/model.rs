//! The model ops of [`rtx_backend::ops`] on the device (kernels/model.cu):
//! dense ops in the canonical order (bit-identical to the CPU backend, `exp`
//! excepted) and the segment ops on the scatter machinery's chunk tables,
//! fused where the composition allows it, with exactly the composition's bits.

use std::sync::Arc;

use cudarc::driver::{LaunchArgs, PushKernelArg, result};
use rtx_backend::prelude::*;
use rtx_backend::{
    BTensor, Binary, DType, Element, IndexPlan, Result as BResult, Unary, dims2, ops,
};
use rtx_tensor::Layout;

use super::cache::{self, DevicePlan, IndexEntry, PinKey};
use super::mem::DevMem;
use super::{BLOCK, CudaBackend, MAX_GRID_X, PIPELINED_SCATTER_MAX_ENTRIES, cfg1, lanes_log2};
use crate::error::{Error, Result};

/// The kernel `{base}_f32` or `{base}_f64` for element type `$t`.
macro_rules! kname {
    ($base:literal, $t:ty) => {
        match <$t as Element>::DTYPE {
            DType::F32 => concat!($base, "_f32"),
            DType::F64 => concat!($base, "_f64"),
        }
    };
}

/// A scalar kernel argument of the element type, passed as its bits (the
/// kernel parameter is a `float` / `double` of the same size).
enum Scalar {
    F32(u32),
    F64(u64),
}

fn scalar<T: Element>(v: T) -> Scalar {
    match T::DTYPE {
        DType::F32 => Scalar::F32(v.to_bits_u64() as u32),
        DType::F64 => Scalar::F64(v.to_bits_u64()),
    }
}

fn push_scalar<'a>(b: &mut LaunchArgs<'a>, s: &'a Scalar) {
    match s {
        Scalar::F32(x) => b.arg(x),
        Scalar::F64(x) => b.arg(x),
    };
}

/// Blocks for a grid-stride loop over `n` items, a thread each.
fn grid_for(n: u64) -> u32 {
    n.div_ceil(u64::from(BLOCK)).clamp(1, MAX_GRID_X) as u32
}

fn unary_code(op: Unary) -> (u32, f64) {
    match op {
        Unary::Relu => (0, 0.0),
        Unary::LeakyRelu(s) => (1, s),
        Unary::Exp => (2, 0.0),
        Unary::Scale(s) => (3, s),
    }
}

fn binary_code(op: Binary) -> u32 {
    match op {
        Binary::Add => 0,
        Binary::Sub => 1,
        Binary::Mul => 2,
        Binary::Div => 3,
    }
}

/// The vector type of a row of `row_bytes` bytes whose width must divide
/// `align` elements: `(vector bytes, kernel suffix)` as index.cu's scatters.
fn vec_suffix<T: Element>(row_bytes: usize, align: usize) -> (usize, &'static str) {
    match T::DTYPE {
        DType::F32 if row_bytes.is_multiple_of(16) && align.is_multiple_of(4) => (16, "f32x4"),
        DType::F32 if row_bytes.is_multiple_of(8) && align.is_multiple_of(2) => (8, "f32x2"),
        DType::F32 => (4, "f32x1"),
        DType::F64 if row_bytes.is_multiple_of(16) && align.is_multiple_of(2) => (16, "f64x2"),
        DType::F64 => (8, "f64x1"),
    }
}

fn ptr<T: Element>(t: &BTensor<CudaBackend, T>) -> u64 {
    t.storage().mem.ptr()
}

impl CudaBackend {
    fn out<T: Element>(&self, shape: &[usize]) -> BResult<BTensor<Self, T>> {
        self.alloc_tensor::<T>(Layout::contiguous(shape)?)
    }

    fn scratch<T: Element>(&self, n: usize) -> Result<DevMem> {
        let bytes = n.checked_mul(T::DTYPE.size()).ok_or(Error::SizeOverflow {
            what: "model scratch",
            count: n,
            size: T::DTYPE.size(),
        })?;
        self.dev.alloc(bytes)
    }

    fn memset0(&self, ptr: u64, bytes: usize) -> Result<()> {
        if bytes > 0 {
            self.dev.ctx.bind_to_thread()?;
            // SAFETY: the caller passes an allocation of at least `bytes` bytes.
            unsafe { result::memset_d8_async(ptr, 0, bytes, self.dev.stream.cu_stream()) }?;
        }
        Ok(())
    }

    // ---------------------------------------------------------------- index entries

    /// The device plan of `plan`: pinned (no lookup cost), else from this
    /// thread's cache (keyed by a hash of the plan, confirmed by comparison).
    pub(super) fn plan_of(&self, plan: &IndexPlan) -> BResult<Arc<DevicePlan>> {
        let key = PinKey {
            backend: self.dev.id,
            plan: true,
            addr: plan as *const IndexPlan as usize,
            len: plan.len(),
        };
        if let Some(e) = cache::pinned(&key) {
            return e.plan(&self.dev);
        }
        self.plan_entry(plan)?.plan(&self.dev)
    }

    /// The cache entry of `plan` with its device plan uploaded.
    pub(super) fn plan_entry(&self, plan: &IndexPlan) -> BResult<Arc<IndexEntry>> {
        cache::with_entry(
            self.dev.id,
            self.index_cache_limit(),
            cache::plan_key(plan),
            |e| matches!(&e.source, cache::Source::Plan(p) if **p == *plan),
            || IndexEntry::from_plan(Arc::new(plan.clone())),
            |e| {
                e.plan(&self.dev)?;
                Ok(Arc::clone(e))
            },
        )
    }

    // ---------------------------------------------------------------- dense ops

    pub(super) fn model_matmul<T: Element>(
        &self,
        a: &BTensor<Self, T>,
        trans_a: bool,
        b: &BTensor<Self, T>,
        trans_b: bool,
    ) -> BResult<BTensor<Self, T>> {
        let (m, k, n) = ops::check_matmul(a.shape(), trans_a, b.shape(), trans_b)?;
        if m == 0 || n == 0 || k == 0 {
            return self.zeros(&[m, n]);
        }
        let out = self.out::<T>(&[m, n])?;
        let (a_rs, a_ps) = if trans_a {
            (1u64, m as u64)
        } else {
            (k as u64, 1)
        };
        let (b_ps, b_js) = if trans_b {
            (1u64, k as u64)
        } else {
            (n as u64, 1)
        };
        let chunks = k.div_ceil(rtx_backend::CANONICAL_BLOCK);
        let part = if chunks > 1 {
            Some(self.scratch::<T>(chunks * m * n)?)
        } else {
            None
        };
        let dst = part.as_ref().map_or(ptr(&out), DevMem::ptr);
        let tiles = (m.div_ceil(64) * n.div_ceil(64) * chunks) as u64;
        let (pa, pb) = (ptr(a), ptr(b));
        let (mm, nn, kk) = (m as u64, n as u64, k as u64);
        let kern = self.dev.kernels()?;
        let mut l = self
            .dev
            .stream
            .launch_builder(kern.get(kname!("matmul", T)));
        l.arg(&pa)
            .arg(&pb)
            .arg(&dst)
            .arg(&mm)
            .arg(&nn)
            .arg(&kk)
            .arg(&a_rs)
            .arg(&a_ps)
            .arg(&b_ps)
            .arg(&b_js);
        // SAFETY: matmul_T(const T* a, const T* b, T* out, u64 m, u64 n, u64 k, u64 a_rs,
        // u64 a_ps, u64 b_ps, u64 b_js): a holds m*k and b k*n elements (checked shapes),
        // the strides address them in range; out holds chunks*m*n elements.
        unsafe { l.launch(cfg1(tiles.clamp(1, MAX_GRID_X) as u32)) }.map_err(Error::from)?;
        if let Some(part) = part {
            self.reduce_rows::<T>(part.ptr(), chunks, m * n, ptr(&out))?;
        }
        Ok(out)
    }

    /// Canonical column sums of the row-major `[rows, f]` at `src` (rows > 0)
    /// into the `f` values at `dst`: reduce_rows levels until one row is left.
    fn reduce_rows<T: Element>(&self, src: u64, rows: usize, f: usize, dst: u64) -> BResult<()> {
        let kern = self.dev.kernels()?;
        let name = kname!("reduce_rows", T);
        let mut cur = src;
        let mut n = rows;
        let mut keep: Vec<DevMem> = Vec::new();
        loop {
            let ng = n.div_ceil(rtx_backend::CANONICAL_BLOCK);
            let next = if ng == 1 {
                dst
            } else {
                let m = self.scratch::<T>(ng * f)?;
                let p = m.ptr();
                keep.push(m);
                p
            };
            let (nn, ff) = (n as u64, f as u64);
            let mut l = self.dev.stream.launch_builder(kern.get(name));
            l.arg(&cur).arg(&next).arg(&nn).arg(&ff);
            // SAFETY: reduce_rows_T(const T* in, T* out, u64 n, u64 f): in holds n*f
            // elements, out ceil(n/256)*f.
            unsafe { l.launch(cfg1(grid_for((ng * f) as u64))) }.map_err(Error::from)?;
            if ng == 1 {
                return Ok(());
            }
            cur = next;
            n = ng;
        }
    }

    pub(super) fn model_unary<T: Element>(
        &self,
        op: Unary,
        x: &BTensor<Self, T>,
    ) -> BResult<BTensor<Self, T>> {
        let out = self.out::<T>(x.shape())?;
        let n = x.numel() as u64;
        if n == 0 {
            return Ok(out);
        }
        let (code, s) = unary_code(op);
        let s = scalar(T::from_f64(s));
        let (px, po) = (ptr(x), ptr(&out));
        let kern = self.dev.kernels()?;
        let mut l = self.dev.stream.launch_builder(kern.get(kname!("unary", T)));
        l.arg(&px).arg(&po).arg(&n).arg(&code);
        push_scalar(&mut l, &s);
        // SAFETY: unary_T(const T* x, T* out, u64 n, u32 op, T s): both hold n elements.
        unsafe { l.launch(cfg1(grid_for(n))) }.map_err(Error::from)?;
        Ok(out)
    }

    pub(super) fn model_unary_backward<T: Element>(
        &self,
        op: Unary,
        x: &BTensor<Self, T>,
        grad: &BTensor<Self, T>,
    ) -> BResult<BTensor<Self, T>> {
        ops::check_same("unary_backward", x.shape(), grad.shape())?;
        let out = self.out::<T>(x.shape())?;
        let n = x.numel() as u64;
        if n == 0 {
            return Ok(out);
        }
        let (code, s) = unary_code(op);
        let s = scalar(T::from_f64(s));
        let (px, pg, po) = (ptr(x), ptr(grad), ptr(&out));
        let kern = self.dev.kernels()?;
        let mut l = self
            .dev
            .stream
            .launch_builder(kern.get(kname!("unary_bwd", T)));
        l.arg(&px).arg(&pg).arg(&po).arg(&n).arg(&code);
        push_scalar(&mut l, &s);
        // SAFETY: unary_bwd_T(const T* x, const T* g, T* out, u64 n, u32 op, T s): all
        // three hold n elements (equal shapes checked).
        unsafe { l.launch(cfg1(grid_for(n))) }.map_err(Error::from)?;
        Ok(out)
    }

    pub(super) fn model_binary<T: Element>(
        &self,
        op: Binary,
        a: &BTensor<Self, T>,
        b: &BTensor<Self, T>,
    ) -> BResult<BTensor<Self, T>> {
        let (f, broadcast) = ops::check_binary(op, a.shape(), b.shape())?;
        let out = self.out::<T>(a.shape())?;
        let n = a.numel() as u64;
        if n == 0 {
            return Ok(out);
        }
        let code = binary_code(op);
        let f = if broadcast { f as u64 } else { 0 };
        let (pa, pb, po) = (ptr(a), ptr(b), ptr(&out));
        let kern = self.dev.kernels()?;
        let mut l = self
            .dev
            .stream
            .launch_builder(kern.get(kname!("binary", T)));
        l.arg(&pa).arg(&pb).arg(&po).arg(&n).arg(&code).arg(&f);
        // SAFETY: binary_T(const T* a, const T* b, T* out, u64 n, u32 op, u64 f): a and
        // out hold n elements, b n (f == 0) or f (broadcast row; n is a multiple of f).
        unsafe { l.launch(cfg1(grid_for(n))) }.map_err(Error::from)?;
        Ok(out)
    }

    pub(super) fn model_axpy<T: Element>(
        &self,
        y: &mut BTensor<Self, T>,
        alpha: f64,
        x: &BTensor<Self, T>,
    ) -> BResult<()> {
        ops::check_same("axpy", y.shape(), x.shape())?;
        let n = x.numel() as u64;
        if n == 0 {
            return Ok(());
        }
        self.make_unique(y)?;
        let py = y.storage_mut().expect("unique after make_unique").mem.ptr();
        let px = ptr(x);
        let a = scalar(T::from_f64(alpha));
        let kern = self.dev.kernels()?;
        let mut l = self.dev.stream.launch_builder(kern.get(kname!("axpy", T)));
        l.arg(&py).arg(&px).arg(&n);
        push_scalar(&mut l, &a);
        // SAFETY: axpy_T(T* y, const T* x, u64 n, T alpha): both hold n elements; y is
        // unique (no other tensor sees the write).
        unsafe { l.launch(cfg1(grid_for(n))) }.map_err(Error::from)?;
        Ok(())
    }

    pub(super) fn model_sum_rows<T: Element>(
        &self,
        x: &BTensor<Self, T>,
    ) -> BResult<BTensor<Self, T>> {
        let (n, f) = dims2("sum_rows", "x", x.layout())?;
        if n == 0 || f == 0 {
            return self.zeros(&[1, f]);
        }
        let out = self.out::<T>(&[1, f])?;
        self.reduce_rows::<T>(ptr(x), n, f, ptr(&out))?;
        Ok(out)
    }

    pub(super) fn model_head_dot<T: Element>(
        &self,
        a: &BTensor<Self, T>,
        b: &BTensor<Self, T>,
        heads: usize,
    ) -> BResult<BTensor<Self, T>> {
        let (n, h, c, b_rows) = ops::check_head_dot(a.shape(), b.shape(), heads)?;
        let out = self.out::<T>(&[n, h])?;
        if n * h == 0 {
            return Ok(out);
        }
        let (pa, pb, po) = (ptr(a), ptr(b), ptr(&out));
        let (nn, hh, cc, bc) = (n as u64, h as u64, c as u64, u32::from(b_rows == 1));
        let kern = self.dev.kernels()?;
        let mut l = self
            .dev
            .stream
            .launch_builder(kern.get(kname!("head_dot", T)));
        l.arg(&pa)
            .arg(&pb)
            .arg(&po)
            .arg(&nn)
            .arg(&hh)
            .arg(&cc)
            .arg(&bc);
        // SAFETY: head_dot_T(const T* a, const T* b, T* out, u64 n, u64 heads, u64 c,
        // u32 b_bcast): a holds n*h*c, b (b_rows)*h*c, out n*h elements (checked).
        unsafe { l.launch(cfg1(grid_for((n * h) as u64))) }.map_err(Error::from)?;
        Ok(out)
    }

    pub(super) fn model_head_scale<T: Element>(
        &self,
        a: &BTensor<Self, T>,
        s: &BTensor<Self, T>,
    ) -> BResult<BTensor<Self, T>> {
        let (n, h, c, a_rows) = ops::check_head_scale(a.shape(), s.shape())?;
        let out = self.out::<T>(&[n, h * c])?;
        if n * h * c == 0 {
            return Ok(out);
        }
        let (pa, ps, po) = (ptr(a), ptr(s), ptr(&out));
        let (nn, hh, cc, ab) = (n as u64, h as u64, c as u64, u32::from(a_rows == 1));
        let kern = self.dev.kernels()?;
        let mut l = self
            .dev
            .stream
            .launch_builder(kern.get(kname!("head_scale", T)));
        l.arg(&pa)
            .arg(&ps)
            .arg(&po)
            .arg(&nn)
            .arg(&hh)
            .arg(&cc)
            .arg(&ab);
        // SAFETY: head_scale_T(const T* a, const T* s, T* out, u64 n, u64 heads, u64 c,
        // u32 a_bcast): a holds (a_rows)*h*c, s n*h, out n*h*c elements (checked).
        unsafe { l.launch(cfg1(grid_for((n * h * c) as u64))) }.map_err(Error::from)?;
        Ok(out)
    }

    // ---------------------------------------------------------------- segment ops

    /// Segment max of `x: [plan.len(), f]` by the device plan into `out`
    /// (zeroed here first, so empty rows are `+0.0`).
    fn segmax_into<T: Element>(
        &self,
        x: u64,
        dp: &DevicePlan,
        f: usize,
        out: &BTensor<Self, T>,
    ) -> BResult<()> {
        self.memset0(ptr(out), out.storage().mem.bytes())?;
        if f == 0 || dp.values[0] == 0 {
            return Ok(());
        }
        let scratch = dp.values[1..]
            .iter()
            .map(|&n| self.scratch::<T>(n * f))
            .collect::<Result<Vec<DevMem>>>()?;
        let kern = self.dev.kernels()?;
        let d = ptr(out);
        let ff = f as u64;
        let lanes = lanes_log2(ff);
        for (lv, &(start, row, slot, n)) in dp.levels.iter().enumerate() {
            let next = scratch.get(lv).map_or(0, DevMem::ptr);
            if lv == 0 {
                let mut l = self
                    .dev
                    .stream
                    .launch_builder(kern.get(kname!("segmax0", T)));
                l.arg(&x)
                    .arg(&dp.positions)
                    .arg(&start)
                    .arg(&row)
                    .arg(&slot)
                    .arg(&n)
                    .arg(&ff)
                    .arg(&lanes)
                    .arg(&d)
                    .arg(&next);
                let groups = u64::from(BLOCK >> lanes);
                // SAFETY: segmax0_T(const T* vals, const u32* pos, const u32* cstart, const
                // u32* crow, const u32* cslot, u64 nchunks, u64 W, u32 lanes_log2, T* dst, T*
                // next): as below, with W = f scalar columns.
                unsafe { l.launch(cfg1(n.div_ceil(groups).clamp(1, MAX_GRID_X) as u32)) }
                    .map_err(Error::from)?;
                continue;
            }
            let vals = scratch[lv - 1].ptr();
            let pos = 0u64;
            let mut l = self
                .dev
                .stream
                .launch_builder(kern.get(kname!("segmax", T)));
            l.arg(&vals)
                .arg(&pos)
                .arg(&start)
                .arg(&row)
                .arg(&slot)
                .arg(&n)
                .arg(&ff)
                .arg(&d)
                .arg(&next);
            // SAFETY: segmax_T(const T* vals, const u32* pos, const u32* cstart, const u32*
            // crow, const u32* cslot, u64 nchunks, u64 f, T* dst, T* next): the tables come
            // from a validated plan whose entry count is x's row count (checked) and whose
            // rows are dst's; scratch is sized from plan.values; levels run in order.
            unsafe { l.launch(cfg1(grid_for(n * ff))) }.map_err(Error::from)?;
        }
        Ok(())
    }

    /// A segment sum whose level 0 is the fused kernel `{base}_{suffix}`
    /// (leading u64 arguments `lead`), into `dst` (zeroed here first: `0 + t`);
    /// higher levels are index.cu's scatterN. `align`: the vector width must
    /// divide it (a head's channel count for gather_scale_scatter).
    #[allow(clippy::too_many_arguments)]
    fn fused_sum<T: Element>(
        &self,
        dp: &DevicePlan,
        base: &str,
        f: usize,
        align: usize,
        lead: &[u64],
        lead_vecs_per_head: bool,
        dst: &BTensor<Self, T>,
    ) -> BResult<()> {
        self.memset0(ptr(dst), dst.storage().mem.bytes())?;
        if f == 0 || dp.values[0] == 0 {
            return Ok(());
        }
        let row_bytes = f * T::DTYPE.size();
        let (vb, suffix) = vec_suffix::<T>(row_bytes, align);
        let w = (row_bytes / vb) as u64;
        let lanes = lanes_log2(w);
        let scratch = dp.values[1..]
            .iter()
            .map(|&n| self.dev.alloc(n * row_bytes))
            .collect::<Result<Vec<DevMem>>>()?;
        // vecs per head: appended to `lead` for gather_scale_scatter
        let vph = (align * T::DTYPE.size() / vb) as u64;
        let pipe = if dp.values[0] <= PIPELINED_SCATTER_MAX_ENTRIES || w > 32 {
            "p"
        } else {
            ""
        };
        let kern = self.dev.kernels()?;
        let d = ptr(dst);
        let groups = u64::from(BLOCK >> lanes);
        for (lv, &(start, row, slot, n)) in dp.levels.iter().enumerate() {
            let next = scratch.get(lv).map_or(0, DevMem::ptr);
            let name = if lv == 0 {
                format!("{base}_{suffix}")
            } else {
                format!("scatterN{pipe}_{suffix}")
            };
            let vals = if lv == 0 { 0 } else { scratch[lv - 1].ptr() };
            let zero = 0u64;
            let mut l = self.dev.stream.launch_builder(kern.get(&name));
            if lv == 0 {
                for a in lead {
                    l.arg(a);
                }
                if lead_vecs_per_head {
                    l.arg(&vph);
                }
                l.arg(&dp.positions);
            } else {
                l.arg(&vals).arg(&zero);
            }
            l.arg(&start)
                .arg(&row)
                .arg(&slot)
                .arg(&n)
                .arg(&w)
                .arg(&lanes)
                .arg(&d)
                .arg(&next);
            // SAFETY: level 0: {smx0,smb0,gss0}_{suffix}(lead..., const u32* pos, const
            // u32* cstart, const u32* crow, const u32* cslot, u64 nchunks, u64 W, u32
            // lanes_log2, V* dst, V* next), the lead pointers holding plan.len() (or the
            // gathered tensor's) rows of W vectors, every gather index checked below the
            // gathered rows; higher levels: index.cu's scatterN with the same tables. The
            // tables come from a validated plan with dst's rows; scratch is sized from
            // plan.values; levels run in stream order.
            unsafe { l.launch(cfg1(n.div_ceil(groups).clamp(1, MAX_GRID_X) as u32)) }
                .map_err(Error::from)?;
        }
        Ok(())
    }

    pub(super) fn model_segment_max<T: Element>(
        &self,
        x: &BTensor<Self, T>,
        plan: &IndexPlan,
    ) -> BResult<BTensor<Self, T>> {
        let (_, f) = ops::check_segment("segment_max", x.shape(), plan)?;
        let out = self.out::<T>(&[plan.rows(), f])?;
        if plan.is_empty() || f == 0 {
            self.memset0(ptr(&out), out.storage().mem.bytes())?;
            return Ok(out);
        }
        let dp = self.plan_of(plan)?;
        self.segmax_into(ptr(x), &dp, f, &out)?;
        Ok(out)
    }

    pub(super) fn model_segment_sum<T: Element>(
        &self,
        x: &BTensor<Self, T>,
        plan: &IndexPlan,
    ) -> BResult<BTensor<Self, T>> {
        let (_, f) = ops::check_segment("segment_sum", x.shape(), plan)?;
        let mut out = self.zeros::<T>(&[plan.rows(), f])?;
        if plan.is_empty() || f == 0 {
            return Ok(out);
        }
        let dp = self.plan_of(plan)?;
        self.scatter(&mut out, &dp, x, f)?;
        Ok(out)
    }

    pub(super) fn model_segment_softmax<T: Element>(
        &self,
        x: &BTensor<Self, T>,
        plan: &IndexPlan,
    ) -> BResult<BTensor<Self, T>> {
        let (e, f) = ops::check_segment("segment_softmax", x.shape(), plan)?;
        let out = self.out::<T>(&[e, f])?;
        if e == 0 || f == 0 {
            return Ok(out);
        }
        let dp = self.plan_of(plan)?;
        let m = self.out::<T>(&[plan.rows(), f])?;
        self.segmax_into(ptr(x), &dp, f, &m)?;
        let s = self.out::<T>(&[plan.rows(), f])?;
        self.fused_sum(&dp, "smx0", f, f, &[ptr(x), ptr(&m)], false, &s)?;
        let (px, pm, ps, po) = (ptr(x), ptr(&m), ptr(&s), ptr(&out));
        let (ee, ff) = (e as u64, f as u64);
        let kern = self.dev.kernels()?;
        let mut l = self
            .dev
            .stream
            .launch_builder(kern.get(kname!("softmax_div", T)));
        l.arg(&px)
            .arg(&pm)
            .arg(&ps)
            .arg(&dp.rowof)
            .arg(&po)
            .arg(&ee)
            .arg(&ff);
        // SAFETY: softmax_div_T(const T* x, const T* m, const T* s, const u32* rowof, T*
        // out, u64 e, u64 f): x and out hold e*f, m and s rows*f elements; rowof holds e
        // rows below plan.rows().
        unsafe { l.launch(cfg1(grid_for(ee * ff))) }.map_err(Error::from)?;
        Ok(out)
    }

    pub(super) fn model_segment_softmax_backward<T: Element>(
        &self,
        alpha: &BTensor<Self, T>,
        grad: &BTensor<Self, T>,
        plan: &IndexPlan,
    ) -> BResult<BTensor<Self, T>> {
        let (e, f) = ops::check_segment("segment_softmax_backward", alpha.shape(), plan)?;
        ops::check_same("segment_softmax_backward", alpha.shape(), grad.shape())?;
        let out = self.out::<T>(&[e, f])?;
        if e == 0 || f == 0 {
            return Ok(out);
        }
        let dp = self.plan_of(plan)?;
        let s = self.out::<T>(&[plan.rows(), f])?;
        self.fused_sum(&dp, "smb0", f, f, &[ptr(alpha), ptr(grad)], false, &s)?;
        let (pa, pg, ps, po) = (ptr(alpha), ptr(grad), ptr(&s), ptr(&out));
        let (ee, ff) = (e as u64, f as u64);
        let kern = self.dev.kernels()?;
        let mut l = self
            .dev
            .stream
            .launch_builder(kern.get(kname!("softmax_bwd", T)));
        l.arg(&pa)
            .arg(&pg)
            .arg(&ps)
            .arg(&dp.rowof)
            .arg(&po)
            .arg(&ee)
            .arg(&ff);
        // SAFETY: softmax_bwd_T(const T* alpha, const T* g, const T* s, const u32* rowof,
        // T* out, u64 e, u64 f): alpha, g and out hold e*f, s rows*f elements; rowof holds
        // e rows below plan.rows().
        unsafe { l.launch(cfg1(grid_for(ee * ff))) }.map_err(Error::from)?;
        Ok(out)
    }

    pub(super) fn model_gather_scale_scatter<T: Element>(
        &self,
        x: &BTensor<Self, T>,
        gather: &[u32],
        weights: &BTensor<Self, T>,
        plan: &IndexPlan,
    ) -> BResult<BTensor<Self, T>> {
        let op = "gather_scale_scatter";
        let (n, fx) = dims2(op, "x", x.layout())?;
        let (e, heads) = dims2(op, "weights", weights.layout())?;
        if heads == 0 || fx % heads != 0 || e != gather.len() || e != plan.len() {
            // the shape error, named as the host check names it
            ops::check_gather_scale_scatter(x.shape(), gather, weights.shape(), plan)?;
        }
        let c = fx / heads;
        self.with_idx_entry(gather, n, |ge| {
            let out = self.out::<T>(&[plan.rows(), fx])?;
            if e == 0 || fx == 0 {
                self.memset0(ptr(&out), out.storage().mem.bytes())?;
                return Ok(out);
            }
            let gi = ge.dev_idx(&self.dev)?;
            let dp = self.plan_of(plan)?;
            let lead = [ptr(x), gi, ptr(weights), heads as u64];
            self.fused_sum(&dp, "gss0", fx, c, &lead, true, &out)?;
            Ok(out)
        })
    }

    pub(super) fn model_gather_head_dot<T: Element>(
        &self,
        a: &BTensor<Self, T>,
        a_idx: &[u32],
        b: &BTensor<Self, T>,
        b_idx: &[u32],
        heads: usize,
    ) -> BResult<BTensor<Self, T>> {
        let op = "gather_head_dot";
        let (na, f) = dims2(op, "a", a.layout())?;
        let (nb, fb) = dims2(op, "b", b.layout())?;
        if heads == 0 || f % heads != 0 || f != fb || a_idx.len() != b_idx.len() {
            ops::check_gather_head_dot(a.shape(), a_idx, b.shape(), b_idx, heads)?;
        }
        let e = a_idx.len();
        let c = f / heads;
        self.with_idx_entry(a_idx, na, |ae| {
            self.with_idx_entry(b_idx, nb, |be| {
                let out = self.out::<T>(&[e, heads])?;
                if e == 0 {
                    return Ok(out);
                }
                let (ia, ib) = (ae.dev_idx(&self.dev)?, be.dev_idx(&self.dev)?);
                let (pa, pb, po) = (ptr(a), ptr(b), ptr(&out));
                let (ee, hh, cc) = (e as u64, heads as u64, c as u64);
                let kern = self.dev.kernels()?;
                let mut l = self
                    .dev
                    .stream
                    .launch_builder(kern.get(kname!("gather_head_dot", T)));
                l.arg(&pa)
                    .arg(&ia)
                    .arg(&pb)
                    .arg(&ib)
                    .arg(&po)
                    .arg(&ee)
                    .arg(&hh)
                    .arg(&cc);
                // SAFETY: gather_head_dot_T(const T* a, const u32* ai, const T* b, const
                // u32* bi, T* out, u64 e, u64 heads, u64 c): every ai below a's rows and
                // every bi below b's rows (checked through the entries' maxima), rows of
                // heads*c elements; out holds e*heads.
                unsafe { l.launch(cfg1(grid_for(ee * hh))) }.map_err(Error::from)?;
                Ok(out)
            })
        })
    }
}
