//! The level chains of the canonical order ([`rtx_backend::order`]) on the
//! device: one launch per level of a plan's chunk tables (crate `levels`),
//! each level reading the scratch its predecessor wrote. [`sum_chain`] is the
//! one runner of every segment sum (the scatter-add of `index_add` and
//! `segment_sum`, the segment softmax's denominators, and the fused sums of
//! the softmax backward and gather_scale_scatter); [`max_chain`] runs the
//! segment max the same way; [`half_sum_chain`] is the scatter-add into bf16
//! and f16 storage (f32 sums).

use rtx_backend::Element;

use super::args::{In, Out};
use super::buffer::DevMem;
use super::context::Device;
use super::launch::{
    Gss0, Scatter, ScatterHalf, Segmax, Segmax0, Smb0, Sum0, cfg1, chunks_grid, fused0_grid,
    grid_for, lanes_log2,
};
use super::plan::DevicePlan;
use crate::error::{Error, Result};
use crate::settings::ScatterForm;
use crate::table::{Float, Fused0, Half, HalfVec, Kernel, Level, SumVec, Typed};

/// What level 0 of a sum chain adds up (device addresses and sizes).
#[derive(Debug, Clone, Copy)]
pub(crate) enum Level0 {
    /// Stored rows of `[plan.len(), f]` at `src`, read through the plan's
    /// positions (index.cu's `scatter0`).
    Stored {
        /// The rows.
        src: u64,
    },
    /// The same, by segment.cu's fused `sum0` (a hub row's chunks loaded by
    /// the whole block).
    Read {
        /// The rows.
        vals: u64,
    },
    /// `alpha * g` of the segment softmax's backward (`smb0`), both
    /// `[plan.len(), f]`.
    SoftmaxBwd {
        /// The softmax's outputs.
        alpha: u64,
        /// Their gradients.
        g: u64,
    },
    /// `x[gather[e]] * w[e, head]` of gather_scale_scatter (`gss0`).
    GatherScale {
        /// The gathered rows.
        x: u64,
        /// The gather list, `plan.len()` indices below x's rows.
        gather: u64,
        /// The weights, `[plan.len(), heads]`.
        w: u64,
        /// Heads per row.
        heads: u64,
    },
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

/// Adds the segment sums of the plan `dp` over rows of `f` elements of `T`
/// into the `[rows, f]` at `dst` (which only this chain may use while it
/// runs): level 0 as `level0` says, the levels past it with index.cu's
/// `scatterN`, the chunk-sum form resolved from `form`. The vector type is
/// the widest dividing a row whose element count divides `align` (`f` but
/// for gather_scale_scatter, whose heads must not straddle a vector).
pub(crate) fn sum_chain<T: Element>(
    dev: &Device,
    dp: &DevicePlan,
    f: usize,
    align: usize,
    form: ScatterForm,
    level0: Level0,
    dst: u64,
) -> Result<()> {
    if f == 0 || dp.values[0] == 0 {
        return Ok(());
    }
    let row_bytes = f * T::DTYPE.size();
    let v = SumVec::pick(T::DTYPE, row_bytes, align, "scatter-family sum")?;
    let vb = v.bytes();
    let w = (row_bytes / vb) as u64;
    let lanes = lanes_log2(w);
    let scratch = level_scratch(dev, &dp.values, row_bytes)?;
    let form = form.resolve(dp.values[0], w);
    // vectors per head of gather_scale_scatter
    let vph = (align * T::DTYPE.size() / vb) as u64;
    let kernels = dev.kernels()?;
    let (pos, wfirst, dst) = (In::at(dp.positions), In::at(dp.windows), Out::at(dst));
    for (l, &(start, row, slot, n)) in dp.levels.iter().enumerate() {
        let next = Out::at(scratch.get(l).map_or(0, DevMem::ptr));
        let (cstart, crow, cslot) = (In::at(start), In::at(row), In::at(slot));
        // SAFETY (every launch of the loop): the tables come from a validated
        // IndexPlan: level-0 positions are below the rows of the level-0
        // values (plan.len() rows, checked by the callers, as is every gather
        // index of gss0 against x's rows, and w holds plan.len() * heads
        // weights), rows below dst's rows (checked), slots below the next
        // level's scratch (sized from plan.values, rows of row_bytes = W
        // vectors); wfirst is the plan's window table (windows + 1 chunk
        // indices, levels::window_table) or 0. Levels run in stream order,
        // so each reads the scratch its predecessor wrote; dst is used by
        // this chain alone.
        let chunks = cfg1(chunks_grid(n, lanes));
        if l > 0 {
            let args = Scatter::<T> {
                vals: In::at(scratch[l - 1].ptr()),
                pos: In::null(),
                cstart,
                crow,
                cslot,
                nchunks: n,
                W: w,
                lanes_log2: lanes,
                dst,
                next,
            };
            let kernel = Kernel::scatter(Level::Higher, form, v);
            // SAFETY: as above.
            unsafe { args.launch(dev, &kernels, kernel, chunks) }?;
            continue;
        }
        // a fused level 0 walks windows of positions (segment.cu), scatter0 chunks
        let windows = cfg1(fused0_grid(dp.values[0] as u64, n, w, vb as u64));
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
                    dst,
                    next,
                };
                let kernel = Kernel::scatter(Level::Zero, form, v);
                // SAFETY: as above.
                unsafe { args.launch(dev, &kernels, kernel, chunks) }?;
            }
            Level0::Read { vals } => {
                let args = Sum0::<T> {
                    vals: In::at(vals),
                    pos,
                    wfirst,
                    cstart,
                    crow,
                    cslot,
                    nchunks: n,
                    W: w,
                    lanes_log2: lanes,
                    dst,
                    next,
                };
                let kernel = Kernel::fused0(Fused0::Read, v);
                // SAFETY: as above.
                unsafe { args.launch(dev, &kernels, kernel, windows) }?;
            }
            Level0::SoftmaxBwd { alpha, g } => {
                let args = Smb0::<T> {
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
                    dst,
                    next,
                };
                let kernel = Kernel::fused0(Fused0::SoftmaxBwd, v);
                // SAFETY: as above.
                unsafe { args.launch(dev, &kernels, kernel, windows) }?;
            }
            Level0::GatherScale {
                x,
                gather,
                w: weights,
                heads,
            } => {
                let args = Gss0::<T> {
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
                    dst,
                    next,
                };
                let kernel = Kernel::fused0(Fused0::GatherScale, v);
                // SAFETY: as above.
                unsafe { args.launch(dev, &kernels, kernel, windows) }?;
            }
        }
    }
    Ok(())
}

/// The segment max of `[plan.len(), f]` at `x` by the plan `dp` into the
/// `[rows, f]` at `dst`, whose empty rows must already be zero: level 0 with
/// `segmax0`, the levels past it with `segmax`.
pub(crate) fn max_chain<T: Element>(
    dev: &Device,
    dp: &DevicePlan,
    f: usize,
    x: u64,
    dst: u64,
) -> Result<()> {
    if f == 0 || dp.values[0] == 0 {
        return Ok(());
    }
    let scratch = level_scratch(dev, &dp.values, f * T::DTYPE.size())?;
    let t = Float::of(T::DTYPE);
    let ff = f as u64;
    let lanes = lanes_log2(ff);
    let kernels = dev.kernels()?;
    let dst = Out::at(dst);
    for (l, &(start, row, slot, n)) in dp.levels.iter().enumerate() {
        let next = Out::at(scratch.get(l).map_or(0, DevMem::ptr));
        let (cstart, crow, cslot) = (In::at(start), In::at(row), In::at(slot));
        // SAFETY (both launches): the tables come from a validated plan whose
        // entry count is x's row count (checked) and whose rows are dst's
        // (rows of W = f scalar columns); wfirst is the plan's window table
        // or 0; scratch is sized from plan.values; levels run in order.
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
            let grid = fused0_grid(dp.values[0] as u64, n, ff, T::DTYPE.size() as u64);
            let kernel = Kernel::typed(Typed::Segmax0, t)?;
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
        let kernel = Kernel::typed(Typed::Segmax, t)?;
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
pub(crate) fn half_sum_chain<T: Element>(
    dev: &Device,
    dp: &DevicePlan,
    f: usize,
    form: ScatterForm,
    h: Half,
    src: u64,
    dst: u64,
) -> Result<()> {
    if f == 0 || dp.values[0] == 0 {
        return Ok(());
    }
    let v = HalfVec::pick(f);
    let w = (f / v.elems()) as u64;
    let lanes = lanes_log2(w);
    // f32 scratch: rows of f sums (W vectors of v.elems() floats)
    let scratch = level_scratch(dev, &dp.values, f * std::mem::size_of::<f32>())?;
    let form = form.resolve(dp.values[0], w);
    let kernels = dev.kernels()?;
    for (l, &(start, row, slot, n)) in dp.levels.iter().enumerate() {
        let (level, vals, acc, pos) = if l == 0 {
            (Level::Zero, In::at(src), In::null(), In::at(dp.positions))
        } else {
            (
                Level::Higher,
                In::null(),
                In::at(scratch[l - 1].ptr()),
                In::null(),
            )
        };
        let args = ScatterHalf::<T> {
            vals,
            acc,
            pos,
            cstart: In::at(start),
            crow: In::at(row),
            cslot: In::at(slot),
            nchunks: n,
            W: w,
            lanes_log2: lanes,
            dst: Out::at(dst),
            next: Out::at(scratch.get(l).map_or(0, DevMem::ptr)),
        };
        let kernel = Kernel::scatter_half(level, form, h, v);
        // SAFETY: the tables come from a validated IndexPlan: level-0
        // positions are below src's rows (plan.len() rows of f halves,
        // checked by the callers), rows below dst's rows (checked), slots
        // below the next level's scratch (sized from plan.values, rows of f
        // f32 sums = W vectors); levels run in stream order, each reading the
        // scratch its predecessor wrote; dst is used by this chain alone.
        unsafe { args.launch(dev, &kernels, kernel, cfg1(chunks_grid(n, lanes))) }?;
    }
    Ok(())
}
