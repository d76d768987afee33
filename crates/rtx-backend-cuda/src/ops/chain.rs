//! The level chains of the canonical order ([`rtx_backend::order`]) on the
//! device: one launch per level of a plan's chunk tables
//! (`indices/levels.rs`), each level reading the scratch its predecessor
//! wrote. [`sum_chain`] is the one runner of every segment sum, in every
//! element type (the scatter-add of `index_add` and `segment_sum`, the
//! segment softmax's denominators, and the fused sums of the softmax
//! backward and gather_scale_scatter): level 0 by element type
//! (`wide_level0`, `half_level0`), the levels past it by one loop
//! (`higher_levels`) that resolves each level's chunk-sum form from its own
//! value count. Over bf16 and f16 a chain keeps what passes between levels
//! in f32 (`Element::Acc`) and rounds each output once. [`max_chain`] runs
//! the segment max the same way.

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

/// The scratch level `l` writes the chunks of rows that go on into
/// (`scratch[l]`: level `l + 1`'s values), null past the plan's last level.
fn scratch_at<E>(scratch: &[DevMem], l: usize) -> DevPtr<E> {
    scratch.get(l).map_or(DevPtr::NULL, DevMem::ptr)
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

/// The arguments of the softmax backward's fused level 0
/// (`softmax_bwd_sum0`): `alpha * g` through `dp`'s positions and level-0
/// tables into the `T::Acc` sums at `sums`.
fn softmax_bwd0_args<T: Element>(
    alpha: DevPtr<T>,
    g: DevPtr<T>,
    dp: &DevicePlan,
    w: u64,
    sums: DevPtr<T::Acc>,
    next: DevPtr<T::Acc>,
) -> SoftmaxBwdSum0<T> {
    let l0 = dp.levels[0];
    SoftmaxBwdSum0::<T> {
        alpha: In::at(alpha),
        g: In::at(g),
        pos: In::at(dp.positions),
        wfirst: In::at(dp.windows),
        cstart: In::at(l0.start),
        crow: In::at(l0.row),
        cslot: In::at(l0.slot),
        nchunks: l0.chunks,
        W: w,
        lanes_log2: lanes_log2(w),
        dst: Out::at(sums),
        next: Out::at(next),
    }
}

/// The arguments of gather_scale_scatter's fused level 0
/// (`gather_scale_sum0`): `x[gather[e]] * w[e, head]` through `dp`'s
/// positions and level-0 tables into `dst`, `vph` vectors per head.
#[allow(clippy::too_many_arguments)]
fn gather_scale0_args<T: Element>(
    (x, gather, weights, heads): (DevPtr<T>, DevPtr<u32>, DevPtr<T>, u64),
    vph: u64,
    dp: &DevicePlan,
    w: u64,
    dst: DevPtr<T>,
    next: DevPtr<T::Acc>,
) -> GatherScaleSum0<T> {
    let l0 = dp.levels[0];
    GatherScaleSum0::<T> {
        x: In::at(x),
        gather: In::at(gather),
        w: In::at(weights),
        heads,
        vecs_per_head: vph,
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

/// What the levels past 0 of a sum chain add into `dst`, and how.
#[derive(Debug)]
enum Higher<T: Element> {
    /// Rows of `w` vectors `v` of f32 or f64 sums, added into the `T::Acc`s
    /// at `dst` (a chain over f32 / f64 rows, or the f32 sums of the
    /// softmax backward over bf16 / f16): index.cu's `scatterN`.
    Wide {
        v: SumVec,
        w: u64,
        dst: DevPtr<T::Acc>,
    },
    /// Rows of `w` vectors `v` of f32 sums added to the half rows at
    /// `dst`, each rounded once: index.cu's half `scatterN`.
    Half {
        h: Half,
        v: HalfVec,
        w: u64,
        dst: DevPtr<T>,
    },
}

/// Adds the segment sums of the plan `dp` over rows of `f` elements of `T`
/// into the `[rows, f]` at `dst` (which only this chain may use while it
/// runs): one launch per level, level 0 as `level0` says, the levels past
/// it summing the scratch their predecessor wrote, each level's chunk-sum
/// form resolved from `form` and that level's own value count. `align`:
/// the element count a vector must divide (`f` but for
/// gather_scale_scatter, whose heads must not straddle a vector). `dst`
/// holds `T`, but for [`Level0::SoftmaxBwd`], whose sums are scratch in
/// `T::Acc` (f32 for bf16 and f16). Over bf16 and f16 every sum is f32,
/// each row rounded once.
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
    let (scratch, higher) = match Half::of(T::DTYPE) {
        None => wide_level0::<T>(dev, dp, f, align, form, level0, dst)?,
        Some(h) => half_level0::<T>(dev, dp, f, align, form, h, level0, dst)?,
    };
    higher_levels::<T>(dev, dp, &scratch, form, higher)
}

/// Level 0 of a chain over f32 / f64 rows: index.cu's `scatter0` for
/// stored rows (segment.cu's windowed `sum0a` where
/// [`ScatterForm::windowed`] says), segment.cu's fused `sum0`,
/// `softmax_bwd_sum0` or `gather_scale_sum0` otherwise, in the widest
/// vector dividing a row and `align`. Returns the scratch of the levels
/// past 0 and what they add.
fn wide_level0<T: Element>(
    dev: &Device,
    dp: &DevicePlan,
    f: usize,
    align: usize,
    form: ScatterForm,
    level0: Level0<T>,
    dst: DevPtr<T>,
) -> Result<(Vec<DevMem>, Higher<T>)> {
    let row_bytes = f * T::DTYPE.size();
    let v = SumVec::pick(T::DTYPE, row_bytes, align, "scatter-family sum")?;
    let vb = v.bytes();
    let w = (row_bytes / vb) as u64;
    let lanes = lanes_log2(w);
    let scratch = level_scratch(dev, &dp.values, row_bytes)?;
    // vectors per head of gather_scale_scatter
    let vph = (align * T::DTYPE.size() / vb) as u64;
    let kernels = dev.kernels()?;
    let pos = In::at(dp.positions);
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
                next: Out::at(scratch_at(&scratch, 0)),
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
            let args = sum0_args::<T>(vals, dp, w, dst, scratch_at(&scratch, 0));
            let kernel = Kernel::of(Family::Fused0(read, v));
            // SAFETY: as above.
            unsafe { args.launch(dev, &kernels, kernel, windows) }?;
        }
        Level0::SoftmaxBwd { alpha, g } => {
            // the sums' storage: T::Acc, which is T for f32 and f64
            let args = softmax_bwd0_args::<T>(alpha, g, dp, w, dst.cast(), scratch_at(&scratch, 0));
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
            let args = gather_scale0_args::<T>(
                (x, gather, weights, heads),
                vph,
                dp,
                w,
                dst,
                scratch_at(&scratch, 0),
            );
            let kernel = Kernel::of(Family::Fused0(Fused0::GatherScale, v));
            // SAFETY: as above.
            unsafe { args.launch(dev, &kernels, kernel, windows) }?;
        }
    }
    // T::Acc is T for f32 and f64
    let dst = dst.cast();
    Ok((scratch, Higher::Wide { v, w, dst }))
}

/// Level 0 of a chain over bf16 / f16 rows, summing in f32 exactly as the
/// f32 kernels do: stored rows by index.cu's half `scatter0` (segment.cu's
/// windowed `sum0a` where [`ScatterForm::windowed`] says), otherwise
/// segment.cu's fused kernel over half storage
/// (`{sum0,softmax_bwd_sum0,gather_scale_sum0}_{bf16,f16}x*`: widened
/// values, f32 products and sums). The levels past 0 sum f32 scratch and
/// round each row once into the half `dst`, or, for the softmax backward,
/// keep its sums in the f32 `dst`.
#[allow(clippy::too_many_arguments)]
fn half_level0<T: Element>(
    dev: &Device,
    dp: &DevicePlan,
    f: usize,
    align: usize,
    form: ScatterForm,
    h: Half,
    level0: Level0<T>,
    dst: DevPtr<T>,
) -> Result<(Vec<DevMem>, Higher<T>)> {
    // f32 scratch: rows of f sums
    let f32_row = f * std::mem::size_of::<f32>();
    let scratch = level_scratch(dev, &dp.values, f32_row)?;
    let kernels = dev.kernels()?;
    let l0 = dp.levels[0];
    let n = l0.chunks;
    let pos = In::at(dp.positions);
    let (cstart, crow, cslot) = (In::at(l0.start), In::at(l0.row), In::at(l0.slot));
    // the levels past 0: vectors of at most 4 halves, the scratch being rows
    // of f f32 sums at any width
    let sv = HalfVec::pick_scratch(f);
    let half_rows = Higher::Half {
        h,
        v: sv,
        w: (f / sv.elems()) as u64,
        dst,
    };
    if let Level0::Stored { src } = level0 {
        let sum = form.resolve(dp.values[0], (f / HalfVec::pick(f).elems()) as u64);
        let v = HalfVec::pick_level0(f, sum);
        let w = (f / v.elems()) as u64;
        let lanes = lanes_log2(w);
        // windowed: the segment sum's sum0 adding into dst, in level 0's
        // vector (`pick_level0`: as many lanes per chunk as f32's), not the
        // fused kernels' widest one
        if form.windowed(plan_shape(dp, w, f * T::DTYPE.size())) {
            let args = sum0_args::<T>(src, dp, w, dst, scratch_at(&scratch, 0));
            // windows of positions; a vector's f32 sums in shared memory
            let f32_vec = (v.elems() * std::mem::size_of::<f32>()) as u64;
            let grid = cfg1(fused0_grid(dp.values[0] as u64, n, w, f32_vec));
            let kernel = Kernel::of(Family::Fused0Half(Fused0::Add, h, v));
            // SAFETY: the tables come from a validated IndexPlan: positions are
            // below src's rows (plan.len() rows of f halves = W vectors, checked
            // by the callers), rows below dst's rows (checked), slots below
            // level 1's scratch (sized from plan.values, rows of f f32 sums);
            // wfirst is the plan's window table; dst is used by this chain
            // alone, and a row finished at level 0 has one chunk (one block
            // adds into it).
            unsafe { args.launch(dev, &kernels, kernel, grid) }?;
            return Ok((scratch, half_rows));
        }
        let args = ScatterHalf::<T> {
            vals: In::at(src),
            acc: In::null(),
            pos,
            cstart,
            crow,
            cslot,
            nchunks: n,
            W: w,
            lanes_log2: lanes,
            dst: Out::at(dst),
            next: Out::at(scratch_at(&scratch, 0)),
        };
        let kernel = Kernel::of(Family::ScatterHalf(Level::Zero, sum, h, v));
        // SAFETY: the tables come from a validated IndexPlan: level-0 positions
        // are below src's rows (plan.len() rows of f halves, checked by the
        // callers), rows below dst's rows (checked), slots below level 1's
        // scratch (sized from plan.values, rows of f f32 sums = W vectors); dst
        // is used by this chain alone.
        unsafe { args.launch(dev, &kernels, kernel, cfg1(chunks_grid(n, lanes))) }?;
        return Ok((scratch, half_rows));
    }
    let v = HalfVec::pick_aligned(f, align);
    let w = (f / v.elems()) as u64;
    // windows of positions; a vector's f32 values in shared memory
    let f32_vec = (v.elems() * std::mem::size_of::<f32>()) as u64;
    let windows = cfg1(fused0_grid(dp.values[0] as u64, n, w, f32_vec));
    // SAFETY (each launch below): as in wide_level0, the level-0 values
    // plan.len() rows of f halves (W vectors of v.elems()), x's rows of f
    // halves, w plan.len() * heads halves, level 1's scratch rows of f f32
    // sums (W vectors of v.elems() floats), dst rows of f halves (f floats
    // for the softmax backward).
    match level0 {
        Level0::Stored { .. } => unreachable!("taken above"),
        Level0::Read { vals } => {
            let args = sum0_args::<T>(vals, dp, w, dst, scratch_at(&scratch, 0));
            let kernel = Kernel::of(Family::Fused0Half(Fused0::Read, h, v));
            // SAFETY: as above.
            unsafe { args.launch(dev, &kernels, kernel, windows) }?;
            Ok((scratch, half_rows))
        }
        Level0::SoftmaxBwd { alpha, g } => {
            // the softmax backward's sums stay f32 (T::Acc)
            let args = softmax_bwd0_args::<T>(alpha, g, dp, w, dst.cast(), scratch_at(&scratch, 0));
            let kernel = Kernel::of(Family::Fused0Half(Fused0::SoftmaxBwd, h, v));
            // SAFETY: as above.
            unsafe { args.launch(dev, &kernels, kernel, windows) }?;
            // the sums stay f32: f32 levels into the f32 dst
            let sv = SumVec::pick(DType::F32, f32_row, f, "softmax backward sums")?;
            let sw = (f32_row / sv.bytes()) as u64;
            let dst = dst.cast();
            Ok((scratch, Higher::Wide { v: sv, w: sw, dst }))
        }
        Level0::GatherScale {
            x,
            gather,
            w: weights,
            heads,
        } => {
            let args = gather_scale0_args::<T>(
                (x, gather, weights, heads),
                (align / v.elems()) as u64,
                dp,
                w,
                dst,
                scratch_at(&scratch, 0),
            );
            let kernel = Kernel::of(Family::Fused0Half(Fused0::GatherScale, h, v));
            // SAFETY: as above.
            unsafe { args.launch(dev, &kernels, kernel, windows) }?;
            Ok((scratch, half_rows))
        }
    }
}

/// The levels past 0 of a sum chain, reading the scratch level 0 wrote
/// (`scratch[l]`: level `l + 1`'s values) and adding each row's sum into
/// its destination as `higher` says.
///
/// Each level's chunk-sum form is `form` resolved from that level's own
/// value count: a level past 0 holds about a 256th of its predecessor's
/// values (a plan of 16M entries over 1M hub-skewed rows has a level 1 of
/// some 13k scratch rows), so it is few chunks and its time is the chain of
/// its longest chunk (a hub row's 256 scratch rows), which the pipelined
/// form walks with two batches in flight instead of one. Every form makes
/// the same additions in the same order (the same bits).
fn higher_levels<T: Element>(
    dev: &Device,
    dp: &DevicePlan,
    scratch: &[DevMem],
    form: ScatterForm,
    higher: Higher<T>,
) -> Result<()> {
    let kernels = dev.kernels()?;
    let w = match higher {
        Higher::Wide { w, .. } | Higher::Half { w, .. } => w,
    };
    let lanes = lanes_log2(w);
    for (l, t) in dp.levels.iter().enumerate().skip(1) {
        let n = t.chunks;
        let (cstart, crow, cslot) = (In::at(t.start), In::at(t.row), In::at(t.slot));
        let sum = form.resolve(dp.values[l], w);
        let grid = cfg1(chunks_grid(n, lanes));
        // SAFETY (both launches): the tables come from a validated
        // IndexPlan: values of level l are the rows of scratch[l - 1] (sized
        // from plan.values, rows of W vectors of sums), rows below dst's
        // rows (checked by the callers), slots below the next level's
        // scratch; levels run in stream order, each reading the scratch its
        // predecessor wrote; dst is used by this chain alone.
        match higher {
            Higher::Wide { v, dst, .. } => {
                let kernel = Kernel::of(Family::Scatter(Level::Higher, sum, v));
                let args = Scatter::<T::Acc> {
                    vals: In::at(scratch[l - 1].ptr()),
                    pos: In::null(),
                    cstart,
                    crow,
                    cslot,
                    nchunks: n,
                    W: w,
                    lanes_log2: lanes,
                    dst: Out::at(dst),
                    next: Out::at(scratch_at(scratch, l)),
                };
                // SAFETY: as above.
                unsafe { args.launch(dev, &kernels, kernel, grid) }?;
            }
            Higher::Half { h, v, dst, .. } => {
                let kernel = Kernel::of(Family::ScatterHalf(Level::Higher, sum, h, v));
                let args = ScatterHalf::<T> {
                    vals: In::null(),
                    acc: In::at(scratch[l - 1].ptr()),
                    pos: In::null(),
                    cstart,
                    crow,
                    cslot,
                    nchunks: n,
                    W: w,
                    lanes_log2: lanes,
                    dst: Out::at(dst),
                    next: Out::at(scratch_at(scratch, l)),
                };
                // SAFETY: as above.
                unsafe { args.launch(dev, &kernels, kernel, grid) }?;
            }
        }
    }
    Ok(())
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
        let next = Out::at(scratch_at(&scratch, l));
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
