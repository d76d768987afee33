//! [`DenseOps`] on the device (kernels/dense.cu, kernels/model.cu): the dense ops of
//! [`rtx_backend::ops`] in the canonical order, bit-identical to the CPU
//! backend (`exp` excepted: the device's `expf` / `exp`).

use rtx_backend::implement::dims2;
use rtx_backend::prelude::*;
use rtx_backend::{BTensor, Binary, Element, Result as BResult, Unary, ops};

use crate::backend::{CudaBackend, ptr, unique_ptr};
use crate::error::{Error, Result};
use crate::indices::levels::col_sum_levels;
use crate::kernels::abi::{
    CANONICAL_BLOCK, COL_SUM_COUNTERS, COL_SUM_LEVELS, binary_code, unary_code,
};
use crate::kernels::table::{Family, Float, Kernel, MatmulTile, ModelOp};
use crate::runtime::args::{DevPtr, Elem, In, Out, RrClimb};
use crate::runtime::buffer::DevMem;
use crate::runtime::context::Device;
use crate::runtime::launch::{
    Axpy, Binary as BinaryArgs, HeadDot, HeadScale, MATMUL_DOT_MAX_N, Matmul, ReduceRows,
    Unary as UnaryArgs, UnaryBwd, acc_size, cfg1, col_sum_tiles, col_sums_grid, grid_for,
    matmul_config, matmul_dot_grid, matmul_tile,
};
use crate::settings::{ColSums, MatmulTiles};

/// Scratch for `n` elements of `T`, its size checked.
fn scratch<T: Element>(dev: &Device, n: usize) -> Result<DevMem> {
    let bytes = n.checked_mul(T::DTYPE.size()).ok_or(Error::SizeOverflow {
        what: "model scratch",
        count: n,
        size: T::DTYPE.size(),
    })?;
    dev.alloc(bytes)
}

/// The rows a column sum reads: stored elements of `T`, or `T::Acc` scratch
/// (a product's chunk sums, a level launched alone).
#[derive(Debug)]
pub(crate) enum RowsAt<T: Element> {
    /// Stored elements.
    Stored(DevPtr<T>),
    /// `T::Acc` elements.
    Acc(DevPtr<T::Acc>),
}

impl DenseOps for CudaBackend {
    fn matmul<T: Element>(
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
        let chunks = k.div_ceil(CANONICAL_BLOCK);
        let tile = match self.settings.matmul_tiles() {
            MatmulTiles::ByShape if n <= MATMUL_DOT_MAX_N => None,
            MatmulTiles::ByShape => Some(matmul_tile(m, n)),
            MatmulTiles::Force64 => Some(MatmulTile::T64x64),
        };
        let (pa, pb) = (ptr(a), ptr(b));
        let (mm, nn, kk) = (m as u64, n as u64, k as u64);
        let kern = self.dev.kernels()?;
        let float = Float::of(T::DTYPE);
        let (kernel, cfg) = match tile {
            Some(tile) => (
                Kernel::of(Family::Matmul(float, tile)),
                matmul_config(tile, m, n, chunks),
            ),
            None => (
                Kernel::of(Family::Model(ModelOp::MatmulDot, float)),
                cfg1(matmul_dot_grid(m, n, chunks, a_ps == 1)),
            ),
        };
        // level 0 writes the product (one chunk) or each chunk's products
        // summed, [chunks, m, n] in T::Acc
        self.col_sums_after::<T>(chunks, m * n, ptr(&out), |dst, part| {
            let args = Matmul::<T> {
                a: In::at(pa),
                b: In::at(pb),
                out: Out::at(dst),
                part: Out::at(part),
                m: mm,
                n: nn,
                k: kk,
                a_rs,
                a_ps,
                b_ps,
                b_js,
            };
            // SAFETY: a holds m*k and b k*n elements (checked shapes), the
            // strides address them in range; out holds m*n elements of T and
            // part is null (one chunk) or holds chunks*m*n of T::Acc; a
            // tile's block has the tile's threads.
            Ok(unsafe { args.launch(&self.dev, &kern, kernel, cfg) }?)
        })?;
        Ok(out)
    }

    fn unary<T: Element>(&self, op: Unary, x: &BTensor<Self, T>) -> BResult<BTensor<Self, T>> {
        let out = self.out::<T>(x.shape())?;
        let n = x.numel() as u64;
        if n == 0 {
            return Ok(out);
        }
        let (code, s) = unary_code(op);
        let args = UnaryArgs::<T> {
            x: In::at(ptr(x)),
            out: Out::at(ptr(&out)),
            n,
            op: code,
            s: Elem(T::Acc::from_f64(s)),
        };
        let kern = self.dev.kernels()?;
        let kernel = Kernel::of(Family::Model(ModelOp::Unary, Float::of(T::DTYPE)));
        // SAFETY: x and out hold n elements of T.
        unsafe { args.launch(&self.dev, &kern, kernel, cfg1(vector_grid::<T>(n))) }?;
        Ok(out)
    }

    fn unary_backward<T: Element>(
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
        let args = UnaryBwd::<T> {
            x: In::at(ptr(x)),
            g: In::at(ptr(grad)),
            out: Out::at(ptr(&out)),
            n,
            op: code,
            s: Elem(T::Acc::from_f64(s)),
        };
        let kern = self.dev.kernels()?;
        let kernel = Kernel::of(Family::Model(ModelOp::UnaryBwd, Float::of(T::DTYPE)));
        // SAFETY: x, grad and out hold n elements of T (equal shapes checked).
        unsafe { args.launch(&self.dev, &kern, kernel, cfg1(vector_grid::<T>(n))) }?;
        Ok(out)
    }

    fn binary<T: Element>(
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
        let args = BinaryArgs::<T> {
            a: In::at(ptr(a)),
            b: In::at(ptr(b)),
            out: Out::at(ptr(&out)),
            n,
            op: code,
            f,
        };
        let kern = self.dev.kernels()?;
        let kernel = Kernel::of(Family::Model(ModelOp::Binary, Float::of(T::DTYPE)));
        // a thread per 16-byte vector when b's row is whole vectors
        let grid = if f.is_multiple_of(per_vector::<T>()) {
            vector_grid::<T>(n)
        } else {
            grid_for(n)
        };
        // SAFETY: a and out hold n elements of T, b n (f == 0) or f (a
        // broadcast row; n is a multiple of f).
        unsafe { args.launch(&self.dev, &kern, kernel, cfg1(grid)) }?;
        Ok(out)
    }

    fn axpy<T: Element>(
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
        let py = unique_ptr(self, y)?;
        let args = Axpy::<T> {
            y: Out::at(py),
            x: In::at(ptr(x)),
            n,
            alpha: Elem(T::Acc::from_f64(alpha)),
        };
        let kern = self.dev.kernels()?;
        let kernel = Kernel::of(Family::Model(ModelOp::Axpy, Float::of(T::DTYPE)));
        // SAFETY: y and x hold n elements of T; y is unique (no other tensor
        // sees the write).
        unsafe { args.launch(&self.dev, &kern, kernel, cfg1(vector_grid::<T>(n))) }?;
        Ok(())
    }

    fn axpy_mixed<H: Element>(
        &self,
        master: &mut BTensor<Self, H::Acc>,
        alpha: f64,
        x: &BTensor<Self, H>,
        low: &mut BTensor<Self, H>,
    ) -> BResult<()> {
        self.axpy_mixed_dev(master, alpha, x, low)
    }

    fn sum_rows<T: Element>(&self, x: &BTensor<Self, T>) -> BResult<BTensor<Self, T>> {
        let (n, f) = dims2("sum_rows", "x", x.layout())?;
        if n == 0 || f == 0 {
            return self.zeros(&[1, f]);
        }
        let out = self.out::<T>(&[1, f])?;
        self.reduce_rows::<T>(RowsAt::Stored(ptr(x)), n, f, ptr(&out))?;
        Ok(out)
    }

    fn head_dot<T: Element>(
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
        let args = HeadDot::<T> {
            a: In::at(ptr(a)),
            b: In::at(ptr(b)),
            out: Out::at(ptr(&out)),
            n: n as u64,
            heads: h as u64,
            c: c as u64,
            b_bcast: u32::from(b_rows == 1),
        };
        let kern = self.dev.kernels()?;
        let kernel = Kernel::of(Family::Model(ModelOp::HeadDot, Float::of(T::DTYPE)));
        // SAFETY: a holds n*h*c, b (b_rows)*h*c, out n*h elements (checked).
        unsafe { args.launch(&self.dev, &kern, kernel, cfg1(grid_for((n * h) as u64))) }?;
        Ok(out)
    }

    fn head_scale<T: Element>(
        &self,
        a: &BTensor<Self, T>,
        s: &BTensor<Self, T>,
    ) -> BResult<BTensor<Self, T>> {
        self.head_scale_plus(None, a, s)
    }
}

/// Elements of `T` in a 16-byte vector: what a thread of model.cu's
/// vectorized elementwise kernels takes.
fn per_vector<T: Element>() -> u64 {
    (16 / T::DTYPE.size()) as u64
}

/// Blocks for `n` elements of `T` at a thread per 16-byte vector (the
/// kernels stride over whatever a grid does not cover).
fn vector_grid<T: Element>(n: u64) -> u32 {
    grid_for(n.div_ceil(per_vector::<T>()))
}

impl CudaBackend {
    /// `head_scale(a, s)`, added to `x` first when given (`add_head_scale`):
    /// one kernel, the composition's bits.
    pub(crate) fn head_scale_plus<T: Element>(
        &self,
        x: Option<&BTensor<Self, T>>,
        a: &BTensor<Self, T>,
        s: &BTensor<Self, T>,
    ) -> BResult<BTensor<Self, T>> {
        let (n, h, c, a_rows) =
            ops::check_add_head_scale(x.map(|x| x.shape()), a.shape(), s.shape())?;
        let out = self.out::<T>(&[n, h * c])?;
        if n * h * c == 0 {
            return Ok(out);
        }
        let args = HeadScale::<T> {
            x: In::at(x.map_or(DevPtr::NULL, ptr)),
            a: In::at(ptr(a)),
            s: In::at(ptr(s)),
            out: Out::at(ptr(&out)),
            n: n as u64,
            heads: h as u64,
            c: c as u64,
            a_bcast: u32::from(a_rows == 1),
        };
        let kern = self.dev.kernels()?;
        let kernel = Kernel::of(Family::Model(ModelOp::HeadScale, Float::of(T::DTYPE)));
        let total = (n * h * c) as u64;
        // a thread per 16-byte vector when a head's channels are whole vectors
        let cfg = cfg1(if (c as u64).is_multiple_of(per_vector::<T>()) {
            vector_grid::<T>(total)
        } else {
            grid_for(total)
        });
        // SAFETY: x is null or holds n*h*c elements of T, a (a_rows)*h*c, s
        // n*h, out n*h*c (checked shapes).
        unsafe { args.launch(&self.dev, &kern, kernel, cfg) }?;
        Ok(out)
    }

    /// Canonical column sums whose first level is another kernel's: `first`
    /// enqueues it with `out` and `part`: with `groups` 1 it writes the `f`
    /// sums, each rounded once, at `out` (`part` is 0); else it writes
    /// `groups` rows of `f` partial sums in `T::Acc` at `part` (scratch), and
    /// the reduce_rows levels sum those rows into the `f` values at `out`.
    pub(crate) fn col_sums_after<T: Element>(
        &self,
        groups: usize,
        f: usize,
        out: DevPtr<T>,
        first: impl FnOnce(DevPtr<T>, DevPtr<T::Acc>) -> BResult<()>,
    ) -> BResult<()> {
        if groups <= 1 {
            return first(out, DevPtr::NULL);
        }
        let part = scratch::<T::Acc>(&self.dev, groups * f)?;
        first(out, part.ptr())?;
        self.reduce_rows::<T>(RowsAt::Acc(part.ptr()), groups, f, out)
    }

    /// Canonical column sums of the row-major `[rows, f]` at `src` (rows > 0)
    /// into the `f` values of `T` at `dst`, each rounded once.
    pub(crate) fn reduce_rows<T: Element>(
        &self,
        src: RowsAt<T>,
        rows: usize,
        f: usize,
        dst: DevPtr<T>,
    ) -> BResult<()> {
        let kern = self.dev.kernels()?;
        let name = Kernel::of(Family::Model(ModelOp::ReduceRows, Float::of(T::DTYPE)));
        let (nn, ff) = (rows as u64, f as u64);
        let (stored, acc) = match src {
            RowsAt::Stored(p) => (p, DevPtr::NULL),
            RowsAt::Acc(p) => (DevPtr::NULL, p),
        };
        self.column_sums::<T>(rows, f, dst, |climb| {
            let args = ReduceRows::<T> {
                r#in: In::at(stored),
                acc: In::at(acc),
                n: nn,
                f: ff,
                cl: *climb,
            };
            let cfg = cfg1(col_sums_grid(rows, f, acc_size::<T>()));
            // SAFETY: src holds rows*f elements (of T when stored, of T::Acc
            // else; the other pointer is null); the climb's buffers and
            // counters are column_sums's.
            Ok(unsafe { args.launch(&self.dev, &kern, name, cfg) }?)
        })
    }

    /// Canonical column sums of `rows` rows (> 0) of `f` columns into the `f`
    /// values at `dst`, by one launch of a kernel of dense.cu's
    /// `reduce_rows_level` family that `launch` enqueues with the climb it is
    /// given: one launch for every level (the default, [`ColSums::Climb`]),
    /// or, with [`ColSums::PerLevel`] or more counters than the device has, a
    /// launch of the first level and then reduce_rows on its rows. Every
    /// level of several rows is `T::Acc` scratch; only the last, the sums at
    /// `dst`, is stored as `T`.
    pub(crate) fn column_sums<T: Element>(
        &self,
        rows: usize,
        f: usize,
        dst: DevPtr<T>,
        launch: impl FnOnce(&RrClimb) -> BResult<()>,
    ) -> BResult<()> {
        let lv = col_sum_levels(rows, col_sum_tiles(f, acc_size::<T>()));
        let climb = lv.rows.len() == 1
            || (self.settings.col_sums() == ColSums::Climb
                && lv.counters <= COL_SUM_COUNTERS as u64);
        let levels = if climb { lv.rows.len() } else { 1 };
        // every level's rows before the last (the sums at dst)
        let inner: u64 = lv.rows[..lv.rows.len() - 1].iter().take(levels).sum();
        let inner = usize::try_from(inner).unwrap_or(usize::MAX);
        let part = scratch::<T::Acc>(
            &self.dev,
            inner.checked_mul(f).ok_or(Error::SizeOverflow {
                what: "column-sum levels",
                count: inner,
                size: f,
            })?,
        )?;
        let mut p = RrClimb {
            out: [0; COL_SUM_LEVELS],
            rows: [0; COL_SUM_LEVELS],
            cnt: [0; COL_SUM_LEVELS],
            counters: self.dev.counters.ptr::<u32>().addr(),
            levels: levels as u64,
        };
        let mut at: DevPtr<T::Acc> = part.ptr();
        for i in 0..levels {
            p.rows[i] = lv.rows[i];
            p.cnt[i] = lv.cnt[i];
            p.out[i] = if lv.rows[i] == 1 {
                dst.addr()
            } else {
                let here = at;
                at = at.byte_add(lv.rows[i] * f as u64 * acc_size::<T>() as u64);
                here.addr()
            };
        }
        launch(&p)?;
        if climb {
            return Ok(());
        }
        // not climbing, level 0 has several rows: T::Acc scratch
        let first = DevPtr::<T::Acc>::new(p.out[0]);
        self.reduce_rows::<T>(RowsAt::Acc(first), lv.rows[0] as usize, f, dst)
    }
}
