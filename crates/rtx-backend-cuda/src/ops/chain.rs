//! The level chains of the canonical order ([`rtx_backend::order`]) on the
//! device: one launch per level of a plan's chunk tables (crate `levels`),
//! each level reading the scratch its predecessor wrote. [`sum_chain`] is the
//! one runner of every segment sum (the scatter-add of `index_add` and
//! `segment_sum`, the segment softmax's denominators, and the fused sums of
//! the softmax backward and gather_scale_scatter); [`max_chain`] runs the
//! segment max the same way; [`half_sum_chain`] is the scatter-add into bf16
//! and f16 storage (f32 sums). Over bf16 and f16 every chain keeps what passes
//! between levels in f32 (`Element::Acc`) and rounds each output once: a
//! fused level 0 over half storage (`half_fused_chain`), then index.cu's half
//! levels into a half destination, or f32 levels into the f32 sums of the
//! softmax backward.

use rtx_backend::{DType, Element};

use crate::error::{Error, Result};
use crate::indices::plan::DevicePlan;
use crate::kernels::table::{Family, Float, Fused0, Half, HalfVec, Kernel, Level, ModelOp, SumVec};
use crate::runtime::args::{DevPtr, In, Out};
use crate::runtime::buffer::DevMem;
use crate::runtime::context::Device;
use crate::runtime::launch::{
    GatherScaleSum0, Scatter, ScatterHalf, Segmax, Segmax0, SoftmaxBwdSum0, Sum0, cfg1,
    chunks_grid, fused0_grid, grid_for, lanes_log2,
};
use crate::settings::{PlanShape, ScatterForm};

/// What level 0 of a sum chain adds up (device addresses and sizes).
#[derive(Debug)]
pub(crate) enum Level0<T> {
    /// Stored rows of `[plan.len(), f]` at `src`, read through the plan's
    /// positions and added to what `dst` holds (`index_add`: index.cu's
    /// `scatter0`, or segment.cu's windowed `sum0a` where
    /// [`ScatterForm::windowed`] says).
    Stored {
        /// The rows.
        src: DevPtr<T>,
    },
    /// The same, by segment.cu's fused `sum0` (a hub row's chunks loaded by
    /// the whole block).
    Read {
        /// The rows.
        vals: DevPtr<T>,
    },
    /// `alpha * g` of the segment softmax's backward (`softmax_bwd_sum0`), both
    /// `[plan.len(), f]`.
    SoftmaxBwd {
        /// The softmax's outputs.
        alpha: DevPtr<T>,
        /// Their gradients.
        g: DevPtr<T>,
    },
    /// `x[gather[e]] * w[e, head]` of gather_scale_scatter (`gather_scale_sum0`).
    GatherScale {
        /// The gathered rows.
        x: DevPtr<T>,
        /// The gather list, `plan.len()` indices below x's rows.
        gather: DevPtr<u32>,
        /// The weights, `[plan.len(), heads]`.
        w: DevPtr<T>,
        /// Heads per row.
        heads: u64,
    },
}

impl<T> Clone for Level0<T> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<T> Copy for Level0<T> {}

/// Level 1's scratch (where level 0 writes the chunks of rows that go on),
/// null when the plan has one level.
fn first_scratch<E>(scratch: &[DevMem]) -> DevPtr<E> {
    scratch.first().map_or(DevPtr::NULL, DevMem::ptr)
}

/// The scratch of every level past 0: `values[l]` rows of `row_bytes` bytes
/// for level `l`, sizes checked.
fn level_scratch(dev: &Device, values: &[usize], row_bytes: usize) -> Result<Vec<DevMem>> {
    values[1..]
        .iter()
        .map(|&n| {
            n.checked_mul(row_bytes)
                .ok_or(Error::SizeOverflow {
                    what: "level scratch",
                    count: n,
                    size: row_bytes,
                })
                .and_then(|b| dev.alloc(b))
        })
        .collect()
}

/// What the choice of `index_add`'s level 0 reads of `dp` and its rows of
/// `w` vectors, `row_bytes` bytes stored.
fn plan_shape(dp: &DevicePlan, w: u64, row_bytes: usize) -> PlanShape {
    PlanShape {
        entries: dp.values[0],
        w,
        row_bytes,
        hub: dp.levels.len() > 1,
    }
}

/// The arguments of a fused level 0 over stored rows (`sum0`, `sum0a`):
/// the `[plan.len(), W vectors]` at `vals` through `dp`'s positions and
/// level-0 tables and window table into `dst`, chunks of
/// rows with more go to the level-1 scratch at `next`.
fn sum0_args<T: Element>(
    vals: DevPtr<T>,
    dp: &DevicePlan,
    w: u64,
    dst: DevPtr<T>,
    next: DevPtr<T::Acc>,
) -> Sum0<T> {
    let l0 = dp.levels[0];
    Sum0::<T> {
        vals: In::at(vals),
        pos: In::at(dp.positions),
        wfirst: In::at(dp.windows),
        cstart: In::at(l0.start),
        crow: In::at(l0.row),
        cslot: In::at(l0.slot),
        nchunks: l0.chunks,
        W: w,
        lanes_log2: lanes_log2(w),
        dst: Out::at(dst),
        next: Out::at(next),
    }
}

/// Adds the segment sums of the plan `dp` over rows of `f` elements of `T`
/// into the `[rows, f]` at `dst` (which only this chain may use while it
/// runs): level 0 as `level0` says, the levels past it with index.cu's
/// `scatterN`, the chunk-sum form resolved from `form`. The vector type is
/// the widest dividing a row whose element count divides `align` (`f` but
/// for gather_scale_scatter, whose heads must not straddle a vector). `dst`
/// holds `T`, but for [`Level0::SoftmaxBwd`], whose sums are scratch in
/// `T::Acc` (f32 for bf16 and f16). bf16 and f16 rows take
/// [`half_fused_chain`]: f32 sums, each row rounded once.
pub(crate) fn sum_chain<T: Element>(
    dev: &Device,
    dp: &DevicePlan,
    f: usize,
    align: usize,
    form: ScatterForm,
    level0: Level0<T>,
    dst: DevPtr<T>,
) -> Result<()> {
    if f == 0 || dp.values[0] == 0 {
        return Ok(());
    }
    if let Some(h) = Half::of(T::DTYPE) {
        return half_fused_chain::<T>(dev, dp, f, align, form, h, level0, dst);
    }
    let row_bytes = f * T::DTYPE.size();
    let v = SumVec::pick(T::DTYPE, row_bytes, align, "scatter-family sum")?;
    let vb = v.bytes();
    let w = (row_bytes / vb) as u64;
    let lanes = lanes_log2(w);
    let scratch = level_scratch(dev, &dp.values, row_bytes)?;
    // vectors per head of gather_scale_scatter
    let vph = (align * T::DTYPE.size() / vb) as u64;
    let kernels = dev.kernels()?;
    let (pos, wfirst) = (In::at(dp.positions), In::at(dp.windows));
    let l0 = dp.levels[0];
    let n = l0.chunks;
    let (cstart, crow, cslot) = (In::at(l0.start), In::at(l0.row), In::at(l0.slot));
    // SAFETY (every launch of level 0): the tables come from a validated
    // IndexPlan: level-0 positions are below the rows of the level-0 values
    // (plan.len() rows, checked by the callers, as is every gather index of
    // gather_scale_sum0 against x's rows, and w holds plan.len() * heads weights), rows
    // below dst's rows (checked), slots below level 1's scratch (sized from
    // plan.values, rows of row_bytes = W vectors); wfirst is the plan's
    // window table (windows + 1 chunk indices, levels::window_table);
    // dst is used by this chain alone. (For f32 and f64, T::Acc is T.)
    let chunks = cfg1(chunks_grid(n, lanes));
    // a fused level 0 walks windows of positions (segment.cu), scatter0 chunks
    let windows = cfg1(fused0_grid(dp.values[0] as u64, n, w, vb as u64));
    // a windowed index_add is the segment sum's `sum0` adding into dst
    let (level0, read) = match level0 {
        Level0::Stored { src } if form.windowed(plan_shape(dp, w, row_bytes)) => {
            (Level0::Read { vals: src }, Fused0::Add)
        }
        other => (other, Fused0::Read),
    };
    match level0 {
        Level0::Stored { src } => {
            let args = Scatter::<T> {
                vals: In::at(src),
                pos,
                cstart,
                crow,
                cslot,
                nchunks: n,
                W: w,
                lanes_log2: lanes,
                dst: Out::at(dst),
                next: Out::at(first_scratch(&scratch)),
            };
            let kernel = Kernel::of(Family::Scatter(
                Level::Zero,
                form.resolve(dp.values[0], w),
                v,
            ));
            // SAFETY: as above.
            unsafe { args.launch(dev, &kernels, kernel, chunks) }?;
        }
        Level0::Read { vals } => {
            let args = sum0_args::<T>(vals, dp, w, dst, first_scratch(&scratch));
            let kernel = Kernel::of(Family::Fused0(read, v));
            // SAFETY: as above.
            unsafe { args.launch(dev, &kernels, kernel, windows) }?;
        }
        Level0::SoftmaxBwd { alpha, g } => {
            let args = SoftmaxBwdSum0::<T> {
                alpha: In::at(alpha),
                g: In::at(g),
                pos,
                wfirst,
                cstart,
                crow,
                cslot,
                nchunks: n,
                W: w,
                lanes_log2: lanes,
                // the sums' storage: T::Acc, which is T for f32 and f64
                dst: Out::at(dst.cast()),
                next: Out::at(first_scratch(&scratch)),
            };
            let kernel = Kernel::of(Family::Fused0(Fused0::SoftmaxBwd, v));
            // SAFETY: as above.
            unsafe { args.launch(dev, &kernels, kernel, windows) }?;
        }
        Level0::GatherScale {
            x,
            gather,
            w: weights,
            heads,
        } => {
            let args = GatherScaleSum0::<T> {
                x: In::at(x),
                gather: In::at(gather),
                w: In::at(weights),
                heads,
                vecs_per_head: vph,
                pos,
                wfirst,
                cstart,
                crow,
                cslot,
                nchunks: n,
                W: w,
                lanes_log2: lanes,
                dst: Out::at(dst),
                next: Out::at(first_scratch(&scratch)),
            };
            let kernel = Kernel::of(Family::Fused0(Fused0::GatherScale, v));
            // SAFETY: as above.
            unsafe { args.launch(dev, &kernels, kernel, windows) }?;
        }
    }
    scatter_levels::<T>(dev, dp, &scratch, v, w, form, dst)
}

/// The levels past 0 of a sum chain of `E` (f32 or f64) rows of `w`
/// vectors `v`, reading the scratch level 0 wrote (`scratch[l]`: level
/// `l + 1`'s values) and adding each row's sum into the `E`s at `dst`:
/// index.cu's `scatterN`.
fn scatter_levels<E: Element>(
    dev: &Device,
    dp: &DevicePlan,
    scratch: &[DevMem],
    v: SumVec,
    w: u64,
    form: ScatterForm,
    dst: DevPtr<E>,
) -> Result<()> {
    let lanes = lanes_log2(w);
    let kernel = Kernel::of(Family::Scatter(
        Level::Higher,
        form.resolve(dp.values[0], w),
        v,
    ));
    let kernels = dev.kernels()?;
    for (l, t) in dp.levels.iter().enumerate().skip(1) {
        let n = t.chunks;
        let args = Scatter::<E> {
            vals: In::at(scratch[l - 1].ptr()),
            pos: In::null(),
            cstart: In::at(t.start),
            crow: In::at(t.row),
            cslot: In::at(t.slot),
            nchunks: n,
            W: w,
            lanes_log2: lanes,
            dst: Out::at(dst),
            next: Out::at(scratch.get(l).map_or(DevPtr::NULL, DevMem::ptr)),
        };
        // SAFETY: the tables come from a validated IndexPlan: values of
        // level l are the rows of scratch[l - 1] (sized from plan.values,
        // rows of W vectors of E), rows below dst's rows (checked by the
        // callers), slots below the next level's scratch; levels run in
        // stream order, each reading the scratch its predecessor wrote; dst
        // is used by this chain alone.
        unsafe { args.launch(dev, &kernels, kernel, cfg1(chunks_grid(n, lanes))) }?;
    }
    Ok(())
}

/// [`sum_chain`] over bf16 / f16 rows: level 0 is segment.cu's fused
/// kernel over half storage (`{sum0,softmax_bwd_sum0,gather_scale_sum0}_{bf16,f16}x*`: widened values,
/// f32 products and sums exactly as the f32 kernel's), every level past it
/// sums f32 scratch. A row's sum is rounded once into the half `dst`
/// (index.cu's half `scatterN` past level 0: `dst + sum`, dst zeroed), or,
/// for the softmax backward's sums, kept in the f32 `dst` (f32 `scatterN`).
/// Stored values take [`half_sum_chain`].
#[allow(clippy::too_many_arguments)]
fn half_fused_chain<T: Element>(
    dev: &Device,
    dp: &DevicePlan,
    f: usize,
    align: usize,
    form: ScatterForm,
    h: Half,
    level0: Level0<T>,
    dst: DevPtr<T>,
) -> Result<()> {
    if let Level0::Stored { src } = level0 {
        return half_sum_chain::<T>(dev, dp, f, form, h, src, dst);
    }
    let v = HalfVec::pick_aligned(f, align);
    let w = (f / v.elems()) as u64;
    let lanes = lanes_log2(w);
    // f32 scratch: rows of f sums (W vectors of v.elems() floats)
    let f32_row = f * std::mem::size_of::<f32>();
    let scratch = level_scratch(dev, &dp.values, f32_row)?;
    let kernels = dev.kernels()?;
    let (pos, wfirst) = (In::at(dp.positions), In::at(dp.windows));
    let l0 = dp.levels[0];
    let n = l0.chunks;
    let (cstart, crow, cslot) = (In::at(l0.start), In::at(l0.row), In::at(l0.slot));
    // windows of positions; a vector's f32 values in shared memory
    let f32_vec = (v.elems() * std::mem::size_of::<f32>()) as u64;
    let windows = cfg1(fused0_grid(dp.values[0] as u64, n, w, f32_vec));
    // SAFETY (each launch of level 0): as in sum_chain, the level-0 values
    // plan.len() rows of f halves (W vectors of v.elems()), x's rows of f
    // halves, w plan.len() * heads halves, level 1's scratch rows of f f32
    // sums (W vectors of v.elems() floats), dst rows of f halves (f floats
    // for the softmax backward).
    match level0 {
        Level0::Stored { .. } => unreachable!("taken by half_sum_chain above"),
        Level0::Read { vals } => {
            let args = sum0_args::<T>(vals, dp, w, dst, first_scratch(&scratch));
            let kernel = Kernel::of(Family::Fused0Half(Fused0::Read, h, v));
            // SAFETY: as above.
            unsafe { args.launch(dev, &kernels, kernel, windows) }?;
        }
        Level0::SoftmaxBwd { alpha, g } => {
            let args = SoftmaxBwdSum0::<T> {
                alpha: In::at(alpha),
                g: In::at(g),
                pos,
                wfirst,
                cstart,
                crow,
                cslot,
                nchunks: n,
                W: w,
                lanes_log2: lanes,
                // the softmax backward's sums stay f32 (T::Acc)
                dst: Out::at(dst.cast()),
                next: Out::at(first_scratch(&scratch)),
            };
            let kernel = Kernel::of(Family::Fused0Half(Fused0::SoftmaxBwd, h, v));
            // SAFETY: as above.
            unsafe { args.launch(dev, &kernels, kernel, windows) }?;
            // the sums stay f32: f32 levels into the f32 dst
            let sv = SumVec::pick(DType::F32, f32_row, f, "softmax backward sums")?;
            let sw = (f32_row / sv.bytes()) as u64;
            return scatter_levels::<T::Acc>(dev, dp, &scratch, sv, sw, form, dst.cast());
        }
        Level0::GatherScale {
            x,
            gather,
            w: weights,
            heads,
        } => {
            let args = GatherScaleSum0::<T> {
                x: In::at(x),
                gather: In::at(gather),
                w: In::at(weights),
                heads,
                vecs_per_head: (align / v.elems()) as u64,
                pos,
                wfirst,
                cstart,
                crow,
                cslot,
                nchunks: n,
                W: w,
                lanes_log2: lanes,
                dst: Out::at(dst),
                next: Out::at(first_scratch(&scratch)),
            };
            let kernel = Kernel::of(Family::Fused0Half(Fused0::GatherScale, h, v));
            // SAFETY: as above.
            unsafe { args.launch(dev, &kernels, kernel, windows) }?;
        }
    }
    half_levels::<T>(dev, dp, &scratch, f, form, h, dst)
}

/// The segment max of `[plan.len(), f]` at `x` by the plan `dp` into the
/// `[rows, f]` at `dst`, whose empty rows must already be zero: level 0 with
/// `segmax0`, the levels past it with `segmax`; both `T`, the scratch
/// between levels `T::Acc` (the widened values of bf16 and f16: a row's
/// maximum, stored as `T`, is the element it came from).
pub(crate) fn max_chain<T: Element>(
    dev: &Device,
    dp: &DevicePlan,
    f: usize,
    x: DevPtr<T>,
    dst: DevPtr<T>,
) -> Result<()> {
    if f == 0 || dp.values[0] == 0 {
        return Ok(());
    }
    let acc_bytes = std::mem::size_of::<T::Acc>();
    let scratch = level_scratch(dev, &dp.values, f * acc_bytes)?;
    let float = Float::of(T::DTYPE);
    let ff = f as u64;
    let lanes = lanes_log2(ff);
    let kernels = dev.kernels()?;
    let dst = Out::at(dst);
    for (l, t) in dp.levels.iter().enumerate() {
        let n = t.chunks;
        let next = Out::at(scratch.get(l).map_or(DevPtr::NULL, DevMem::ptr));
        let (cstart, crow, cslot) = (In::at(t.start), In::at(t.row), In::at(t.slot));
        // SAFETY (both launches): the tables come from a validated plan whose
        // entry count is x's row count (checked) and whose rows are dst's
        // (rows of W = f scalar columns of T); wfirst is the plan's window
        // table or 0; scratch is sized from plan.values (rows of f T::Acc);
        // levels run in order.
        if l == 0 {
            let args = Segmax0::<T> {
                vals: In::at(x),
                pos: In::at(dp.positions),
                wfirst: In::at(dp.windows),
                cstart,
                crow,
                cslot,
                nchunks: n,
                W: ff,
                lanes_log2: lanes,
                dst,
                next,
            };
            // the windows stage T::Acc values in shared memory
            let grid = fused0_grid(dp.values[0] as u64, n, ff, acc_bytes as u64);
            let kernel = Kernel::of(Family::Model(ModelOp::Segmax0, float));
            // SAFETY: as above.
            unsafe { args.launch(dev, &kernels, kernel, cfg1(grid)) }?;
            continue;
        }
        let args = Segmax::<T> {
            vals: In::at(scratch[l - 1].ptr()),
            pos: In::null(),
            cstart,
            crow,
            cslot,
            nchunks: n,
            f: ff,
            dst,
            next,
        };
        let kernel = Kernel::of(Family::Model(ModelOp::Segmax, float));
        // SAFETY: as above.
        unsafe { args.launch(dev, &kernels, kernel, cfg1(grid_for(n * ff))) }?;
    }
    Ok(())
}

/// Adds the segment sums of the plan `dp` over the half rows (`h`, `f`
/// elements) at `src` into the `[rows, f]` half tensor at `dst` (which only
/// this chain may use while it runs): index.cu's half scatter levels, which
/// sum in f32 exactly as the f32 chain does, keep every level past 0 in f32
/// scratch and round once, when a row's sum is added to its destination.
/// Level 0 is segment.cu's windowed `sum0a` where [`ScatterForm::windowed`]
/// says (the same adds in the same order, the same rounding).
pub(crate) fn half_sum_chain<T: Element>(
    dev: &Device,
    dp: &DevicePlan,
    f: usize,
    form: ScatterForm,
    h: Half,
    src: DevPtr<T>,
    dst: DevPtr<T>,
) -> Result<()> {
    if f == 0 || dp.values[0] == 0 {
        return Ok(());
    }
    let sum = form.resolve(dp.values[0], (f / HalfVec::pick(f).elems()) as u64);
    let v = HalfVec::pick_level0(f, sum);
    let w = (f / v.elems()) as u64;
    let lanes = lanes_log2(w);
    // f32 scratch: rows of f sums (W vectors of v.elems() floats)
    let scratch = level_scratch(dev, &dp.values, f * std::mem::size_of::<f32>())?;
    let kernels = dev.kernels()?;
    let l0 = dp.levels[0];
    // windowed: the segment sum's sum0 adding into dst, in level 0's
    // vector (`pick_level0`: as many lanes per chunk as f32's), not the
    // fused chain's widest one
    if form.windowed(plan_shape(dp, w, f * T::DTYPE.size())) {
        let args = sum0_args::<T>(src, dp, w, dst, first_scratch(&scratch));
        // windows of positions; a vector's f32 sums in shared memory
        let f32_vec = (v.elems() * std::mem::size_of::<f32>()) as u64;
        let grid = cfg1(fused0_grid(dp.values[0] as u64, l0.chunks, w, f32_vec));
        let kernel = Kernel::of(Family::Fused0Half(Fused0::Add, h, v));
        // SAFETY: the tables come from a validated IndexPlan: positions are
        // below src's rows (plan.len() rows of f halves = W vectors, checked
        // by the callers), rows below dst's rows (checked), slots below
        // level 1's scratch (sized from plan.values, rows of f f32 sums);
        // wfirst is the plan's window table; dst is used by this chain
        // alone, and a row finished at level 0 has one chunk (one block
        // adds into it).
        unsafe { args.launch(dev, &kernels, kernel, grid) }?;
        return half_levels::<T>(dev, dp, &scratch, f, form, h, dst);
    }
    let args = ScatterHalf::<T> {
        vals: In::at(src),
        acc: In::null(),
        pos: In::at(dp.positions),
        cstart: In::at(l0.start),
        crow: In::at(l0.row),
        cslot: In::at(l0.slot),
        nchunks: l0.chunks,
        W: w,
        lanes_log2: lanes,
        dst: Out::at(dst),
        next: Out::at(first_scratch(&scratch)),
    };
    let kernel = Kernel::of(Family::ScatterHalf(Level::Zero, sum, h, v));
    // SAFETY: the tables come from a validated IndexPlan: level-0 positions
    // are below src's rows (plan.len() rows of f halves, checked by the
    // callers), rows below dst's rows (checked), slots below level 1's
    // scratch (sized from plan.values, rows of f f32 sums = W vectors); dst
    // is used by this chain alone.
    unsafe { args.launch(dev, &kernels, kernel, cfg1(chunks_grid(l0.chunks, lanes))) }?;
    half_levels::<T>(dev, dp, &scratch, f, form, h, dst)
}

/// The levels past 0 of a sum chain into the half rows (`h`, `f` elements)
/// at `dst`, reading the f32 scratch level 0 wrote (`scratch[l]`: level
/// `l + 1`'s values): index.cu's half `scatterN`, which adds a row's f32 sum
/// to its widened destination and rounds once. Vectors of at most 4 halves
/// ([`HalfVec::pick_scratch`]), whatever level 0 took: the scratch is rows
/// of f f32 sums at any width.
///
/// Each level's chunk-sum form is `form` resolved from that level's own value
/// count, not level 0's: a level past 0 holds about a 256th of its
/// predecessor's values (a plan of 16M entries over 1M hub-skewed rows has a
/// level 1 of some 13k scratch rows), so it is few chunks and its time is the
/// chain of its longest chunk (a hub row's 256 scratch rows), which the
/// pipelined form walks with two batches in flight instead of one. Both
/// forms make the same additions in the same order (the same bits); the f32
/// chains keep level 0's form on every level.
fn half_levels<T: Element>(
    dev: &Device,
    dp: &DevicePlan,
    scratch: &[DevMem],
    f: usize,
    form: ScatterForm,
    h: Half,
    dst: DevPtr<T>,
) -> Result<()> {
    let v = HalfVec::pick_scratch(f);
    let w = (f / v.elems()) as u64;
    let lanes = lanes_log2(w);
    let kernels = dev.kernels()?;
    for (l, t) in dp.levels.iter().enumerate().skip(1) {
        let n = t.chunks;
        let sum = form.resolve(dp.values[l], w);
        let kernel = Kernel::of(Family::ScatterHalf(Level::Higher, sum, h, v));
        let args = ScatterHalf::<T> {
            vals: In::null(),
            acc: In::at(scratch[l - 1].ptr()),
            pos: In::null(),
            cstart: In::at(t.start),
            crow: In::at(t.row),
            cslot: In::at(t.slot),
            nchunks: n,
            W: w,
            lanes_log2: lanes,
            dst: Out::at(dst),
            next: Out::at(scratch.get(l).map_or(DevPtr::NULL, DevMem::ptr)),
        };
        // SAFETY: the tables come from a validated IndexPlan: values of
        // level l are the rows of scratch[l - 1] (sized from plan.values,
        // rows of f f32 sums = W vectors), rows below dst's rows (rows of f
        // halves, checked by the callers), slots below the next level's
        // scratch; levels run in stream order, each reading the scratch its
        // predecessor wrote; dst is used by this chain alone.
        unsafe { args.launch(dev, &kernels, kernel, cfg1(chunks_grid(n, lanes))) }?;
    }
    Ok(())
}
