//! The level chains of the canonical order ([`rtx_backend::order`]) on the
//! device: one launch per level of a plan's chunk tables (crate `levels`),
//! each level reading the scratch its predecessor wrote. [`sum_chain`] is the
//! one runner of every segment sum (the scatter-add of `index_add` and
//! `segment_sum`, the segment softmax's denominators, and the fused sums of
//! the softmax backward and gather_scale_scatter); [`max_chain`] runs the
//! segment max the same way.

use rtx_backend::Element;

use super::buffer::DevMem;
use super::context::Device;
use super::launch::{builder, cfg1, chunks_grid, fused0_grid, grid_for, lanes_log2};
use super::plan::DevicePlan;
use crate::error::{Error, Result};
use crate::settings::ScatterForm;
use crate::table::{Float, Fused0, Kernel, Level, SumVec, Typed};

/// What level 0 of a sum chain adds up.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Level0<'a> {
    /// Stored rows of `[plan.len(), f]` at `src`, read through the plan's
    /// positions (index.cu's `scatter0`).
    Stored {
        /// Device address of the rows.
        src: u64,
    },
    /// Values a fused kernel of model.cu computes on the fly from its leading
    /// arguments `lead` (for [`Fused0::GatherScale`], the vectors per head
    /// follow them).
    Fused {
        /// The kernel family.
        op: Fused0,
        /// Its leading arguments (pointers and sizes).
        lead: &'a [u64],
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
    level0: Level0<'_>,
    dst: u64,
) -> Result<()> {
    if f == 0 || dp.values[0] == 0 {
        return Ok(());
    }
    let row_bytes = f * T::DTYPE.size();
    let v = SumVec::pick(T::DTYPE, row_bytes, align);
    let vb = v.bytes();
    let w = (row_bytes / vb) as u64;
    let lanes = lanes_log2(w);
    let scratch = level_scratch(dev, &dp.values, row_bytes)?;
    let form = form.resolve(dp.values[0], w);
    // vectors per head: after the leading arguments of gather_scale_scatter
    let vph = (align * T::DTYPE.size() / vb) as u64;
    let zero = 0u64;
    let kernels = dev.kernels()?;
    for (l, &(start, row, slot, n)) in dp.levels.iter().enumerate() {
        let next = scratch.get(l).map_or(0, DevMem::ptr);
        let prev = if l == 0 { 0 } else { scratch[l - 1].ptr() };
        let kernel = match level0 {
            _ if l > 0 => Kernel::scatter(Level::Higher, form, v),
            Level0::Stored { .. } => Kernel::scatter(Level::Zero, form, v),
            Level0::Fused { op, .. } => Kernel::fused0(op, v),
        };
        let mut b = builder(dev, &kernels, kernel);
        match level0 {
            _ if l > 0 => {
                b.arg(&prev).arg(&zero);
            }
            Level0::Stored { ref src } => {
                b.arg(src).arg(&dp.positions);
            }
            Level0::Fused { op, lead } => {
                for a in lead {
                    b.arg(a);
                }
                if op == Fused0::GatherScale {
                    b.arg(&vph);
                }
                b.arg(&dp.positions).arg(&dp.windows);
            }
        }
        b.arg(&start)
            .arg(&row)
            .arg(&slot)
            .arg(&n)
            .arg(&w)
            .arg(&lanes)
            .arg(&dst)
            .arg(&next);
        // a fused level 0 walks windows of positions (model.cu), the others chunks
        let grid = match level0 {
            Level0::Fused { .. } if l == 0 => fused0_grid(dp.values[0] as u64, n, w, vb as u64),
            _ => chunks_grid(n, lanes),
        };
        // SAFETY: level 0: scatter0{,p}_V(const V* vals, const u32* pos, ...) or
        // {sum0,smb0,gss0}_V(lead..., [u64 vecs_per_head,] const u32* pos, const u32*
        // wfirst, ...) with wfirst the plan's window table (windows + 1 chunk
        // indices, levels::window_table) or 0;
        // higher levels: scatterN{,p}_V(const V* vals, const u32* pos = 0, ...); all
        // continue (const u32* cstart, const u32* crow, const u32* cslot, u64 nchunks,
        // u64 W, u32 lanes_log2, V* dst, V* next). The tables come from a validated
        // IndexPlan: level-0 positions are below the rows of the level-0 values
        // (plan.len() rows, checked by the callers, as is every gather index of a
        // fused kernel against the gathered rows), rows below dst's rows (checked),
        // slots below the next level's scratch (sized from plan.values, rows of
        // row_bytes = W vectors). Levels run in stream order, so each reads the
        // scratch its predecessor wrote; dst is used by this chain alone.
        unsafe { b.launch(cfg1(grid)) }?;
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
    let zero = 0u64;
    let kernels = dev.kernels()?;
    for (l, &(start, row, slot, n)) in dp.levels.iter().enumerate() {
        let next = scratch.get(l).map_or(0, DevMem::ptr);
        if l == 0 {
            let mut b = builder(dev, &kernels, Kernel::typed(Typed::Segmax0, t));
            b.arg(&x)
                .arg(&dp.positions)
                .arg(&dp.windows)
                .arg(&start)
                .arg(&row)
                .arg(&slot)
                .arg(&n)
                .arg(&ff)
                .arg(&lanes)
                .arg(&dst)
                .arg(&next);
            let grid = fused0_grid(dp.values[0] as u64, n, ff, T::DTYPE.size() as u64);
            // SAFETY: segmax0_T(const T* vals, const u32* pos, const u32* wfirst, const
            // u32* cstart, const u32* crow, const u32* cslot, u64 nchunks, u64 W, u32
            // lanes_log2, T* dst, T* next): as below, with W = f scalar columns and
            // wfirst the plan's window table or 0.
            unsafe { b.launch(cfg1(grid)) }?;
            continue;
        }
        let vals = scratch[l - 1].ptr();
        let mut b = builder(dev, &kernels, Kernel::typed(Typed::Segmax, t));
        b.arg(&vals)
            .arg(&zero)
            .arg(&start)
            .arg(&row)
            .arg(&slot)
            .arg(&n)
            .arg(&ff)
            .arg(&dst)
            .arg(&next);
        // SAFETY: segmax_T(const T* vals, const u32* pos, const u32* cstart, const u32*
        // crow, const u32* cslot, u64 nchunks, u64 f, T* dst, T* next): the tables come
        // from a validated plan whose entry count is x's row count (checked) and whose
        // rows are dst's; scratch is sized from plan.values; levels run in order.
        unsafe { b.launch(cfg1(grid_for(n * ff))) }?;
    }
    Ok(())
}
