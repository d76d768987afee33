//! Scatter plans built on the device from a device-resident index list
//! (kernels/plan.cu): the stable counting sort of `IndexPlan` as a radix
//! sort, the row offsets, and the canonical chunk levels, bit for bit what
//! `IndexPlan::new` + `levels::build_levels` give on the host. One readback
//! of a small info block per build (the level sizes the launches need, the
//! range check's verdict); two when the destination has far more rows than
//! the list has entries (the plan is then built for `max + 1` rows).

use rtx_backend::{Error as BError, Result as BResult};

use super::buffer::DevMem;
use super::context::Device;
use super::launch::{MAX_GRID_X, builder, cfg1, grid_for};
use super::plan::DevicePlan;
use crate::error::{Error, Result};
use crate::plan_layout::{
    INFO_BAD, INFO_CHUNKS, INFO_LEVELS, INFO_MAX, INFO_OVERFLOW, INFO_VALUES, INFO_WORDS, carve,
    hi_len, hi_offset, hi_vb, level0_bound, list_len, radix, rows_direct_limit, tiles,
};
use crate::table::Kernel;

/// A plan built on the device, with the largest index of its list.
#[derive(Debug)]
pub(crate) struct Built {
    pub plan: DevicePlan,
    pub max: Option<u32>,
}

/// Blocks for a kernel looping over `n` tiles (at least one).
fn tile_grid(n: u64) -> u32 {
    n.clamp(1, MAX_GRID_X) as u32
}

/// An allocation of `n` `u32`s.
fn alloc_u32(dev: &Device, n: u64) -> Result<DevMem> {
    let bytes = n.checked_mul(4).ok_or(Error::SizeOverflow {
        what: "device plan table",
        count: n as usize,
        size: 4,
    })?;
    dev.alloc(bytes as usize)
}

/// Reads the info block back (synchronizes the stream).
fn read_info(dev: &Device, info: &DevMem) -> Result<[u64; INFO_WORDS]> {
    let mut out = [0u64; INFO_WORDS];
    dev.read(info.ptr(), &mut out, "reading a device plan's sizes back")?;
    Ok(out)
}

/// The index at position `p` of the device list `idx` (for error messages).
fn index_at(dev: &Device, idx: u64, p: u64) -> Result<u32> {
    let mut v = [0u32];
    dev.read(idx + 4 * p, &mut v, "reading a bad index back")?;
    Ok(v[0])
}

/// `IndexOutOfRange` for the first bad position reported in `info`, if any.
fn bad_index(dev: &Device, idx: u64, info: &[u64; INFO_WORDS], rows: usize) -> BResult<()> {
    if info[INFO_BAD] == 0 {
        return Ok(());
    }
    let position = !info[INFO_BAD];
    let value = index_at(dev, idx, position)?;
    Err(BError::IndexOutOfRange {
        position: position as usize,
        value: u64::from(value),
        bound: rows,
    })
}

/// Launches `index_bounds` over the `n` indices at `idx` into the zeroed
/// `info`: the largest index, and with `rows` the first one `>= rows`.
fn launch_bounds(dev: &Device, idx: u64, n: u64, rows: Option<usize>, info: &DevMem) -> Result<()> {
    let k = dev.kernels()?;
    let (bound, check) = match rows {
        Some(r) => (r as u64, 1u32),
        None => (0u64, 0u32),
    };
    let p = info.ptr();
    let mut b = builder(dev, &k, Kernel::IndexBounds);
    b.arg(&idx).arg(&n).arg(&bound).arg(&check).arg(&p);
    // SAFETY: index_bounds(const u32* idx, u64 n, u64 bound, u32 check, u64* info):
    // idx holds n u32, info INFO_WORDS u64 (zeroed by the caller).
    unsafe { b.launch(cfg1(grid_for(n).min(4096))) }
}

/// The largest of the `n > 0` indices at `idx`, and with `rows` the first
/// position whose index is `>= rows` as an error. One readback.
pub(crate) fn index_max(dev: &Device, idx: u64, n: usize, rows: Option<usize>) -> BResult<u32> {
    let info = alloc_u32(dev, 2 * INFO_WORDS as u64)?;
    dev.zero(&info)?;
    launch_bounds(dev, idx, n as u64, rows, &info)?;
    let words = read_info(dev, &info)?;
    if let Some(r) = rows {
        bad_index(dev, idx, &words, r)?;
    }
    Ok(words[INFO_MAX] as u32)
}

/// Builds the scatter plan of the `n` indices at device address `idx` into
/// `rows` destination rows. With `known_max` (the list's largest index,
/// already checked against the destination by the caller) no range check
/// runs; without it every index is checked against `rows` on the device
/// before the plan is used: the first bad one is
/// [`BError::IndexOutOfRange`] naming its position, value and `rows`.
///
/// The plan's `rowof` is `idx` itself: the caller keeps the list alive as
/// long as the plan (both live in one `IndexEntry`).
pub(crate) fn build(
    dev: &Device,
    idx: u64,
    n: usize,
    rows: usize,
    known_max: Option<u32>,
) -> BResult<Built> {
    if n == 0 {
        return Ok(Built {
            plan: DevicePlan::from_parts(dev.alloc(0)?, 0, idx, Vec::new(), vec![0]),
            max: None,
        });
    }
    if n > u32::MAX as usize {
        return Err(BError::TooManyIndices {
            len: n,
            max: u32::MAX as usize,
        });
    }
    let n64 = n as u64;
    let info = alloc_u32(dev, 2 * INFO_WORDS as u64)?;
    dev.zero(&info)?;
    // The rows the sort and the offsets run over.
    let sort_rows = match known_max {
        Some(m) => u64::from(m) + 1,
        None => {
            launch_bounds(dev, idx, n64, Some(rows), &info)?;
            if (rows as u64) <= rows_direct_limit(n64) {
                rows as u64
            } else {
                let words = read_info(dev, &info)?;
                bad_index(dev, idx, &words, rows)?;
                words[INFO_MAX] + 1
            }
        }
    };
    if sort_rows == 0 {
        // rows == 0 with a non-empty list: position 0 is already out of range
        return Err(BError::IndexOutOfRange {
            position: 0,
            value: u64::from(index_at(dev, idx, 0)?),
            bound: rows,
        });
    }
    let k = dev.kernels()?;
    let c0 = level0_bound(n64, sort_rows);
    let plan_len = n64 + 3 * c0 + 1 + hi_len(n64);
    let mem = alloc_u32(dev, plan_len)?;
    let base = mem.ptr();
    let positions = base;
    let (start0, row0, slot0) = (
        base + 4 * n64,
        base + 4 * (n64 + c0 + 1),
        base + 4 * (n64 + 2 * c0 + 1),
    );
    let hi = base + 4 * (n64 + 3 * c0 + 1);

    // ---- scratch: one allocation, carved ----
    let (passes, dbits) = radix(sort_rows);
    let ntiles = tiles(n64);
    let ncounts = (1u64 << dbits) * ntiles;
    let t0 = tiles(sort_rows);
    let sizes = [
        4 * ncounts,         // counts
        4 * ncounts,         // offs
        4 * tiles(ncounts),  // sums
        4 * n64,             // keys[0]
        4 * n64,             // keys[1]
        4 * n64,             // vals[0]
        4 * n64,             // vals[1]
        4 * (sort_rows + 1), // off
        12 * t0,             // sums3
        12 * sort_rows,      // scan3
        12 * list_len(n64),  // list a
        12 * list_len(n64),  // list b
    ];
    let (total, at) = carve(&sizes);
    let scratch = dev.alloc(usize::try_from(total).map_err(|_| Error::SizeOverflow {
        what: "device plan scratch",
        count: n,
        size: 4,
    })?)?;
    let p = |i: usize| scratch.ptr() + at[i];
    let (counts, offs, sums) = (p(0), p(1), p(2));
    let keys = [p(3), p(4)];
    let vals = [p(5), p(6)];

    // ---- the radix sort: sorted keys in `keys`, positions in the plan ----
    let zero = 0u64;
    for pass in 0..passes {
        let shift = pass * dbits;
        let last = pass + 1 == passes;
        let kin = if pass == 0 {
            idx
        } else {
            keys[(pass as usize - 1) % 2]
        };
        let vin = if pass == 0 {
            zero
        } else {
            vals[(pass as usize - 1) % 2]
        };
        let kout = keys[pass as usize % 2];
        let vout = if last {
            positions
        } else {
            vals[pass as usize % 2]
        };
        let mut b = builder(dev, &k, Kernel::PlanHist);
        b.arg(&kin)
            .arg(&n64)
            .arg(&shift)
            .arg(&dbits)
            .arg(&ntiles)
            .arg(&counts);
        // SAFETY: plan_hist(const u32* keys, u64 n, u32 shift, u32 dbits, u64 ntiles,
        // u32* counts): keys holds n u32, counts (1 << dbits) * ntiles.
        unsafe { b.launch(cfg1(tile_grid(ntiles))) }?;
        scan_u32(dev, counts, ncounts, sums, offs)?;
        let mut b = builder(dev, &k, Kernel::PlanRank);
        b.arg(&kin)
            .arg(&vin)
            .arg(&n64)
            .arg(&shift)
            .arg(&dbits)
            .arg(&ntiles)
            .arg(&offs)
            .arg(&kout)
            .arg(&vout);
        // SAFETY: plan_rank(const u32* keys, const u32* vals, u64 n, u32 shift, u32
        // dbits, u64 ntiles, const u32* offs, u32* keys_out, u32* vals_out): keys, vals
        // (or 0: the first pass) and both outputs hold n u32; offs is the exclusive
        // scan of this pass's counts, so every item lands at a distinct place below n.
        unsafe { b.launch(cfg1(tile_grid(ntiles))) }?;
    }
    let sorted = keys[(passes as usize - 1) % 2];

    // ---- offsets and level 0 ----
    let offp = p(7);
    let mut b = builder(dev, &k, Kernel::PlanOffsets);
    b.arg(&sorted).arg(&n64).arg(&sort_rows).arg(&offp);
    // SAFETY: plan_offsets(const u32* skeys, u64 n, u64 rows, u32* off): skeys holds n
    // u32, off rows + 1.
    unsafe { b.launch(cfg1(grid_for(sort_rows + 1))) }?;
    let (s3, sc3, infop) = (p(8), p(9), info.ptr());
    let mut b = builder(dev, &k, Kernel::Lvl0Sums);
    b.arg(&offp).arg(&sort_rows).arg(&s3);
    // SAFETY: lvl0_sums(const u32* off, u64 rows, U3* sums): off holds rows + 1 u32,
    // sums tiles(rows) triples.
    unsafe { b.launch(cfg1(tile_grid(t0))) }?;
    let mut b = builder(dev, &k, Kernel::Lvl0Spine);
    b.arg(&s3).arg(&t0).arg(&infop);
    // SAFETY: lvl0_spine(U3* sums, u64 ntiles, u64* info): one block; sums holds
    // ntiles triples, info INFO_WORDS words.
    unsafe { b.launch(cfg1(1)) }?;
    let mut b = builder(dev, &k, Kernel::Lvl0Apply);
    b.arg(&offp).arg(&sort_rows).arg(&s3).arg(&sc3);
    // SAFETY: lvl0_apply(const u32* off, u64 rows, const U3* sums, U3* out): out holds
    // rows triples.
    unsafe { b.launch(cfg1(tile_grid(t0))) }?;
    let la = p(10);
    let mut b = builder(dev, &k, Kernel::Lvl0Fill);
    b.arg(&offp)
        .arg(&sort_rows)
        .arg(&sc3)
        .arg(&infop)
        .arg(&n64)
        .arg(&start0)
        .arg(&row0)
        .arg(&slot0)
        .arg(&la);
    // SAFETY: lvl0_fill(const u32* off, u64 rows, const U3* scan, const u64* info, u64
    // n, u32* cstart, u32* crow, u32* cslot, u32* list): the chunk count in info is at
    // most level0_bound(n, rows) = c0 (plan_layout's tests), the tables hold c0 + 1,
    // c0 and c0 u32, the list 3 * list_len(n).
    unsafe { b.launch(cfg1(grid_for(c0))) }?;
    let lb = p(11);
    let mut b = builder(dev, &k, Kernel::PlanLevels);
    b.arg(&la).arg(&lb).arg(&hi).arg(&n64).arg(&infop);
    // SAFETY: plan_levels(u32* list_a, u32* list_b, u32* hi, u64 n, u64* info): one
    // block; the lists hold 3 * list_len(n) u32, hi the hi_len(n) u32 of the levels
    // past 0 at plan_layout's offsets (the same formula as plan.cu's hi_offset).
    unsafe { b.launch(cfg1(1)) }?;

    // ---- one readback: the level sizes and the range check ----
    let words = read_info(dev, &info)?;
    if known_max.is_none() {
        bad_index(dev, idx, &words, rows)?;
    }
    let levels = words[INFO_LEVELS] as usize;
    if words[INFO_OVERFLOW] != 0 || levels == 0 || levels > 1 + crate::abi::PLAN_HI_LEVELS as usize
    {
        return Err(BError::from(Error::DevicePlan {
            detail: format!(
                "{levels} levels (overflow flag {}) for {n} entries",
                words[INFO_OVERFLOW]
            ),
        }));
    }
    let mut tables = vec![(start0, row0, slot0, words[INFO_CHUNKS])];
    let mut values = vec![n];
    for l in 1..levels as u32 {
        let vb = hi_vb(n64, l);
        let s = hi + 4 * hi_offset(n64, l);
        tables.push((
            s,
            s + 4 * (vb + 1),
            s + 4 * (2 * vb + 1),
            words[INFO_CHUNKS + l as usize],
        ));
        values.push(words[INFO_VALUES + l as usize] as usize);
    }
    let max = known_max.unwrap_or(words[INFO_MAX] as u32);
    Ok(Built {
        plan: DevicePlan::from_parts(mem, positions, idx, tables, values),
        max: Some(max),
    })
}

/// Exclusive scan of the `n` u32 at `input` into `out`, with `sums` holding
/// `tiles(n)` u32 of scratch: tile sums, their scan by one block, then each
/// tile's scan.
pub(crate) fn scan_u32(dev: &Device, input: u64, n: u64, sums: u64, out: u64) -> Result<()> {
    let k = dev.kernels()?;
    let nt = tiles(n);
    let mut b = builder(dev, &k, Kernel::ScanSumsU32);
    b.arg(&input).arg(&n).arg(&sums);
    // SAFETY: scan_sums_u32(const u32* in, u64 n, u32* sums): in holds n u32, sums
    // tiles(n).
    unsafe { b.launch(cfg1(tile_grid(nt))) }?;
    let mut b = builder(dev, &k, Kernel::ScanSpineU32);
    b.arg(&sums).arg(&nt);
    // SAFETY: scan_spine_u32(u32* sums, u64 ntiles): one block over tiles(n) u32.
    unsafe { b.launch(cfg1(1)) }?;
    let mut b = builder(dev, &k, Kernel::ScanApplyU32);
    b.arg(&input).arg(&n).arg(&sums).arg(&out);
    // SAFETY: scan_apply_u32(const u32* in, u64 n, const u32* sums, u32* out): in and
    // out hold n u32 (distinct allocations), sums tiles(n).
    unsafe { b.launch(cfg1(tile_grid(nt))) }
}
