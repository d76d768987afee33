//! Scatter plans built on the device from a device-resident index list
//! (kernels/plan.cu): the stable counting sort of `IndexPlan` as a radix
//! sort, the row offsets, the canonical chunk levels and level 0's window
//! table, bit for bit what `IndexPlan::new` + `levels::build_levels` +
//! `levels::window_table` give on the host. A list known to be sorted
//! already (`Request::sorted`: repeats, a sampled hop's destinations, a
//! sorted host list) skips the sort: its stable sort is the identity. One
//! readback of a small info block per build (the level sizes the launches
//! need, the range check's verdict); two when the destination has far more
//! rows than the list has entries (the plan is then built for `max + 1`
//! rows).

use rtx_backend::{Error as BError, Result as BResult};

use crate::error::{Error, Result};
use crate::indices::layout::{
    INFO_BAD, INFO_CHUNKS, INFO_LEVELS, INFO_MAX, INFO_OVERFLOW, INFO_VALUES, INFO_WORDS, carve,
    hi_len, hi_offset, hi_vb, level0_bound, list_len, radix, rows_direct_limit, sort_items,
    sort_tiles, tiles,
};
use crate::indices::plan::{ChunkTable, DevicePlan};
use crate::kernels::table::Kernel;
use crate::runtime::args::{DevPtr, In, Level0Counts, Out};
use crate::runtime::buffer::DevMem;
use crate::runtime::context::Device;
use crate::runtime::launch::{
    IndexBounds, Lvl0Apply, Lvl0Fill, Lvl0Single, Lvl0Spine, Lvl0Sums, MAX_GRID_X, PlanHist,
    PlanLevels, PlanOffsets, PlanRank, ScanApply, ScanSingle, ScanSpine, ScanSums, cfg1, grid_for,
};

/// Scans of at most this many tiles run in one block, one launch
/// (`scan_single_u32`, `lvl0_single`) instead of three: a few tiles take a
/// block a few microseconds, less than two launches more cost the host.
pub(crate) const SINGLE_SCAN_TILES: u64 = 4;

/// A plan built on the device, with the largest index of its list.
#[derive(Debug)]
pub(crate) struct Built {
    pub plan: DevicePlan,
    pub max: Option<u32>,
}

/// Blocks for a kernel looping over `n` tiles (at least one).
pub(super) fn tile_grid(n: u64) -> u32 {
    n.clamp(1, MAX_GRID_X) as u32
}

/// An allocation of `n` `u32`s.
pub(super) fn alloc_u32(dev: &Device, n: u64) -> Result<DevMem> {
    let bytes = n.checked_mul(4).ok_or(Error::SizeOverflow {
        what: "device plan table",
        count: n as usize,
        size: 4,
    })?;
    dev.alloc(bytes as usize)
}

/// Reads the info block back (synchronizes the stream).
fn read_info(dev: &Device, info: DevPtr<u64>) -> Result<[u64; INFO_WORDS]> {
    let mut out = [0u64; INFO_WORDS];
    dev.read(info, &mut out, "reading a device plan's sizes back")?;
    Ok(out)
}

/// The index at position `p` of the device list `idx` (for error messages).
fn index_at(dev: &Device, idx: DevPtr<u32>, p: u64) -> Result<u32> {
    let mut v = [0u32];
    dev.read(idx.byte_add(4 * p), &mut v, "reading a bad index back")?;
    Ok(v[0])
}

/// `IndexOutOfRange` for the first bad position reported in `info`, if any.
fn bad_index(dev: &Device, idx: DevPtr<u32>, info: &[u64; INFO_WORDS], rows: usize) -> BResult<()> {
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
fn launch_bounds(
    dev: &Device,
    idx: DevPtr<u32>,
    n: u64,
    rows: Option<usize>,
    info: &DevMem,
) -> Result<()> {
    let k = dev.kernels()?;
    let (bound, check) = match rows {
        Some(r) => (r as u64, 1u32),
        None => (0u64, 0u32),
    };
    let args = IndexBounds {
        idx: In::at(idx),
        n,
        bound,
        check,
        info: Out::at(info.ptr()),
    };
    // SAFETY: idx holds n u32, info INFO_WORDS u64 (zeroed by the caller).
    unsafe { args.launch(dev, &k, Kernel::IndexBounds, cfg1(grid_for(n).min(4096))) }
}

/// The largest of the `n > 0` indices at `idx`, and with `rows` the first
/// position whose index is `>= rows` as an error. One readback.
pub(crate) fn index_max(
    dev: &Device,
    idx: DevPtr<u32>,
    n: usize,
    rows: Option<usize>,
) -> BResult<u32> {
    let info = alloc_u32(dev, 2 * INFO_WORDS as u64)?;
    dev.zero(&info)?;
    launch_bounds(dev, idx, n as u64, rows, &info)?;
    let words = read_info(dev, info.ptr())?;
    if let Some(r) = rows {
        bad_index(dev, idx, &words, r)?;
    }
    Ok(words[INFO_MAX] as u32)
}

/// A list to build the scatter plan of: the `n` indices at device address
/// `idx`, summed into `rows` destination rows. With `known_max` (the list's
/// largest index, already checked against the destination by the caller)
/// no range check runs; without it every index is checked against `rows`
/// on the device before the plan is used: the first bad one is
/// [`BError::IndexOutOfRange`] naming its position, value and `rows`.
/// `sorted`: the list is non-decreasing, known from what made it (the
/// maker's guarantee: a list that is not would get a wrong plan).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Request {
    pub idx: DevPtr<u32>,
    pub n: usize,
    pub rows: usize,
    pub known_max: Option<u32>,
    pub sorted: bool,
}

/// Builds the scatter plan of `r`.
///
/// The plan's `rowof` is the list itself: the caller keeps the list alive
/// as long as the plan (both live in one `ListEntry`).
pub(crate) fn build(dev: &Device, r: &Request) -> BResult<Built> {
    match start(dev, r)? {
        Started::Done(built) => Ok(built),
        Started::Queued(p) => {
            let words = read_info(dev, p.info.ptr())?;
            p.finish(dev, &words)
        }
    }
}

/// A build started by [`start`]: done already (an empty list), or queued
/// on the stream, waiting for the sizes its info block will hold.
pub(crate) enum Started {
    Done(Built),
    Queued(Pending),
}

/// A plan whose kernels are queued: [`Pending::finish`] with its info
/// block's words (read back after the kernels ran) makes it.
pub(crate) struct Pending {
    pub(super) info: Info,
    pub(super) plan: PlanMem,
    pub(super) idx: DevPtr<u32>,
    pub(super) n: usize,
    pub(super) rows: usize,
    pub(super) known_max: Option<u32>,
}

/// A build's info block (`INFO_WORDS` u64, zeroed before its kernels): its
/// own allocation, or its part (`at`) of a batch's (`indices::batch`),
/// which each of the batch's builds keeps alive.
pub(crate) enum Info {
    Own(DevMem),
    Shared {
        _block: std::sync::Arc<DevMem>,
        at: DevPtr<u64>,
    },
}

impl Info {
    fn ptr(&self) -> DevPtr<u64> {
        match self {
            Info::Own(m) => m.ptr(),
            Info::Shared { at, .. } => *at,
        }
    }
}

/// Queues the build of [`build`] (at most one readback first, for a
/// destination of far more rows than entries), leaving its one readback of
/// the sizes to the caller: several builds can share one wait.
pub(crate) fn start(dev: &Device, r: &Request) -> BResult<Started> {
    let &Request {
        idx,
        n,
        rows,
        known_max,
        sorted,
    } = r;
    if n == 0 {
        return Ok(Started::Done(Built {
            plan: DevicePlan::from_parts(
                dev.alloc(0)?,
                DevPtr::NULL,
                idx,
                Vec::new(),
                vec![0],
                DevPtr::NULL,
            ),
            max: None,
        }));
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
    let sort_rows = sort_rows(dev, idx, n64, rows, known_max, &info)?;
    let plan = PlanMem::alloc(dev, n64, sort_rows)?;
    let scratch = Scratch::alloc(dev, n64, sort_rows, sorted)?;
    let keys = if sorted {
        Keys::Identity(idx)
    } else {
        Keys::Sorted(radix_sort(
            dev,
            idx,
            n64,
            sort_rows,
            plan.positions,
            &scratch,
        )?)
    };
    level_tables(dev, keys, n64, sort_rows, &plan, &scratch, info.ptr())?;
    Ok(Started::Queued(Pending {
        info: Info::Own(info),
        plan,
        idx,
        n,
        rows,
        known_max,
    }))
}

/// The rows the sort and the offsets run over: `known_max + 1`, else `rows`
/// when few enough for the list (the range check then runs with the build),
/// else the list's largest index + 1 after the range check (one readback).
fn sort_rows(
    dev: &Device,
    idx: DevPtr<u32>,
    n64: u64,
    rows: usize,
    known_max: Option<u32>,
    info: &DevMem,
) -> BResult<u64> {
    let sort_rows = match known_max {
        Some(m) => u64::from(m) + 1,
        None => {
            launch_bounds(dev, idx, n64, Some(rows), info)?;
            if (rows as u64) <= rows_direct_limit(n64) {
                rows as u64
            } else {
                let words = read_info(dev, info.ptr())?;
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
    Ok(sort_rows)
}

/// The plan's one allocation and the addresses of its parts: the positions
/// (`n` u32), level 0's tables (`c0 + 1`, `c0`, `c0` u32), the levels past 0
/// (`hi_len(n)` u32 at layout.rs's offsets) and level 0's window table
/// (`ceil(n / WINDOW) + 1` u32).
pub(super) struct PlanMem {
    mem: DevMem,
    /// Level 0's chunk bound, `level0_bound(n, sort_rows)`.
    pub(super) c0: u64,
    pub(super) positions: DevPtr<u32>,
    pub(super) start0: DevPtr<u32>,
    pub(super) row0: DevPtr<u32>,
    pub(super) slot0: DevPtr<u32>,
    pub(super) hi: DevPtr<u32>,
    pub(super) wfirst: DevPtr<u32>,
}

impl PlanMem {
    pub(super) fn alloc(dev: &Device, n64: u64, sort_rows: u64) -> Result<PlanMem> {
        let c0 = level0_bound(n64, sort_rows);
        let windows = n64.div_ceil(crate::kernels::abi::WINDOW) + 1;
        let hi = n64 + 3 * c0 + 1;
        let mem = alloc_u32(dev, hi + hi_len(n64) + windows)?;
        let base: DevPtr<u32> = mem.ptr();
        let at = |words: u64| base.byte_add(4 * words);
        Ok(PlanMem {
            c0,
            positions: base,
            start0: at(n64),
            row0: at(n64 + c0 + 1),
            slot0: at(n64 + 2 * c0 + 1),
            hi: at(hi),
            wfirst: at(hi + hi_len(n64)),
            mem,
        })
    }
}

/// The build's scratch: one allocation, carved into the parts `Scratch::*`
/// name.
pub(super) struct Scratch {
    mem: DevMem,
    at: Vec<u64>,
}

impl Scratch {
    /// The radix sort's counts and their exclusive scan, `(1 << dbits) *
    /// sort_tiles(n)` u32 each.
    pub(super) const COUNTS: usize = 0;
    pub(super) const OFFS: usize = 1;
    /// The scan's tile sums.
    pub(super) const SUMS: usize = 2;
    /// Keys and values, double-buffered.
    pub(super) const KEYS: [usize; 2] = [3, 4];
    pub(super) const VALS: [usize; 2] = [5, 6];
    /// The row offsets, `sort_rows + 1` u32.
    pub(super) const OFF: usize = 7;
    /// Level 0's scan: tile sums and the scan, triples.
    pub(super) const SUMS3: usize = 8;
    pub(super) const SCAN3: usize = 9;
    /// The level lists, double-buffered (`3 * list_len(n)` u32 each).
    pub(super) const LIST_A: usize = 10;
    pub(super) const LIST_B: usize = 11;

    /// The scratch of a build of `n64` entries into `sort_rows` rows; a
    /// sorted list's (no sort) has no room for the radix passes.
    pub(super) fn alloc(dev: &Device, n64: u64, sort_rows: u64, sorted: bool) -> Result<Scratch> {
        let (_, dbits) = radix(sort_rows);
        let (ncounts, nsort) = match sorted {
            true => (0, 0),
            false => ((1u64 << dbits) * sort_tiles(n64), n64),
        };
        let sizes = [
            4 * ncounts,           // counts
            4 * ncounts,           // offs
            4 * tiles(ncounts),    // sums
            4 * nsort,             // keys[0]
            4 * nsort,             // keys[1]
            4 * nsort,             // vals[0]
            4 * nsort,             // vals[1]
            4 * (sort_rows + 1),   // off
            12 * tiles(sort_rows), // sums3
            12 * sort_rows,        // scan3
            12 * list_len(n64),    // list a
            12 * list_len(n64),    // list b
        ];
        let (total, at) = carve(&sizes);
        let mem = dev.alloc(usize::try_from(total).map_err(|_| Error::SizeOverflow {
            what: "device plan scratch",
            count: n64 as usize,
            size: 4,
        })?)?;
        Ok(Scratch { mem, at })
    }

    /// Part `i`, holding `E`s (the part's comment says which).
    pub(super) fn p<E>(&self, i: usize) -> DevPtr<E> {
        self.mem.ptr::<E>().byte_add(self.at[i])
    }
}

/// The stable radix sort of the `n` keys at `idx` (below `sort_rows`): the
/// sorted positions land at `positions`; returns the address of the sorted
/// keys.
fn radix_sort(
    dev: &Device,
    idx: DevPtr<u32>,
    n64: u64,
    sort_rows: u64,
    positions: DevPtr<u32>,
    scratch: &Scratch,
) -> Result<DevPtr<u32>> {
    let k = dev.kernels()?;
    let (passes, dbits) = radix(sort_rows);
    let (ntiles, items) = (sort_tiles(n64), sort_items(n64));
    let ncounts = (1u64 << dbits) * ntiles;
    let (counts, offs, sums) = (
        scratch.p::<u32>(Scratch::COUNTS),
        scratch.p::<u32>(Scratch::OFFS),
        scratch.p::<u32>(Scratch::SUMS),
    );
    let keys = Scratch::KEYS.map(|i| scratch.p::<u32>(i));
    let vals = Scratch::VALS.map(|i| scratch.p::<u32>(i));
    for pass in 0..passes {
        let last = pass + 1 == passes;
        let kin = if pass == 0 {
            idx
        } else {
            keys[(pass as usize - 1) % 2]
        };
        let vin = if pass == 0 {
            DevPtr::NULL
        } else {
            vals[(pass as usize - 1) % 2]
        };
        let kout = keys[pass as usize % 2];
        let vout = if last {
            positions
        } else {
            vals[pass as usize % 2]
        };
        let args = PlanHist {
            keys: In::at(kin),
            n: n64,
            shift: pass * dbits,
            dbits,
            ntiles,
            items,
            counts: Out::at(counts),
        };
        // SAFETY: keys holds n u32, counts (1 << dbits) * ntiles.
        unsafe { args.launch(dev, &k, Kernel::PlanHist, cfg1(tile_grid(ntiles))) }?;
        scan_u32(dev, counts, ncounts, sums, offs)?;
        let args = PlanRank {
            keys: In::at(kin),
            vals: In::at(vin),
            n: n64,
            shift: pass * dbits,
            dbits,
            ntiles,
            items,
            offs: In::at(offs),
            keys_out: Out::at(kout),
            vals_out: Out::at(vout),
        };
        // SAFETY: keys, vals (or 0: the first pass) and both outputs hold n
        // u32; offs is the exclusive scan of this pass's counts, so every
        // item lands at a distinct place below n.
        unsafe { args.launch(dev, &k, Kernel::PlanRank, cfg1(tile_grid(ntiles))) }?;
    }
    Ok(keys[(passes as usize - 1) % 2])
}

/// The sorted keys a build's tables are made from.
#[derive(Clone, Copy)]
enum Keys {
    /// The radix sort's output (the positions written by its last pass).
    Sorted(DevPtr<u32>),
    /// The list itself, sorted already: the positions are the identity,
    /// written with the row offsets.
    Identity(DevPtr<u32>),
}

/// The row offsets of the `n` sorted `keys`, level 0's chunk tables and the
/// levels past it, their sizes written to the info block at `info`.
fn level_tables(
    dev: &Device,
    keys: Keys,
    n64: u64,
    sort_rows: u64,
    plan: &PlanMem,
    scratch: &Scratch,
    info: DevPtr<u64>,
) -> Result<()> {
    let k = dev.kernels()?;
    let t0 = tiles(sort_rows);
    let off = scratch.p::<u32>(Scratch::OFF);
    let (s3, sc3) = (
        scratch.p::<Level0Counts>(Scratch::SUMS3),
        scratch.p::<Level0Counts>(Scratch::SCAN3),
    );
    let (la, lb) = (
        scratch.p::<u32>(Scratch::LIST_A),
        scratch.p::<u32>(Scratch::LIST_B),
    );
    let (sorted, iota, threads) = match keys {
        Keys::Sorted(s) => (s, DevPtr::NULL, sort_rows + 1),
        Keys::Identity(s) => (s, plan.positions, (sort_rows + 1).max(n64)),
    };
    let args = PlanOffsets {
        skeys: In::at(sorted),
        n: n64,
        rows: sort_rows,
        off: Out::at(off),
        iota: Out::at(iota),
    };
    // SAFETY: skeys holds n u32 in order, off rows + 1, iota (unless null)
    // the plan's n positions.
    unsafe { args.launch(dev, &k, Kernel::PlanOffsets, cfg1(grid_for(threads))) }?;
    if t0 <= SINGLE_SCAN_TILES {
        let args = Lvl0Single {
            off: In::at(off),
            rows: sort_rows,
            out: Out::at(sc3),
            info: Out::at(info),
        };
        // SAFETY: one block; off holds rows + 1 u32, out rows triples, info
        // INFO_WORDS words.
        unsafe { args.launch(dev, &k, Kernel::Lvl0Single, cfg1(1)) }?;
    } else {
        let args = Lvl0Sums {
            off: In::at(off),
            rows: sort_rows,
            sums: Out::at(s3),
        };
        // SAFETY: off holds rows + 1 u32, sums tiles(rows) triples.
        unsafe { args.launch(dev, &k, Kernel::Lvl0Sums, cfg1(tile_grid(t0))) }?;
        let args = Lvl0Spine {
            sums: Out::at(s3),
            ntiles: t0,
            info: Out::at(info),
        };
        // SAFETY: one block; sums holds ntiles triples, info INFO_WORDS words.
        unsafe { args.launch(dev, &k, Kernel::Lvl0Spine, cfg1(1)) }?;
        let args = Lvl0Apply {
            off: In::at(off),
            rows: sort_rows,
            sums: In::at(s3),
            out: Out::at(sc3),
        };
        // SAFETY: off holds rows + 1 u32, sums tiles(rows) triples, out rows
        // triples.
        unsafe { args.launch(dev, &k, Kernel::Lvl0Apply, cfg1(tile_grid(t0))) }?;
    }
    let args = Lvl0Fill {
        off: In::at(off),
        rows: sort_rows,
        scan: In::at(sc3),
        info: In::at(info),
        n: n64,
        cstart: Out::at(plan.start0),
        crow: Out::at(plan.row0),
        cslot: Out::at(plan.slot0),
        list: Out::at(la),
        wfirst: Out::at(plan.wfirst),
    };
    // SAFETY: the chunk count in info is at most level0_bound(n, rows) = c0
    // (layout.rs's tests), the tables hold c0 + 1, c0 and c0 u32, the list
    // 3 * list_len(n), the window table ceil(n / WINDOW) + 1 u32 (entries
    // 0 ..= ceil(n / WINDOW), the only ones written).
    unsafe { args.launch(dev, &k, Kernel::Lvl0Fill, cfg1(grid_for(plan.c0))) }?;
    let args = PlanLevels {
        list_a: Out::at(la),
        list_b: Out::at(lb),
        hi: Out::at(plan.hi),
        n: n64,
        info: Out::at(info),
    };
    // SAFETY: one block; the lists hold 3 * list_len(n) u32, hi the
    // hi_len(n) u32 of the levels past 0 at layout.rs's offsets (the same
    // formula as plan.cu's hi_offset).
    unsafe { args.launch(dev, &k, Kernel::PlanLevels, cfg1(1)) }?;
    Ok(())
}

impl Pending {
    /// The info block the queued kernels write: its `INFO_WORDS` words are
    /// what [`Pending::finish`] takes, read back once they have run.
    pub(crate) fn info(&self) -> DevPtr<u64> {
        self.info.ptr()
    }

    /// The plan over the queued build's tables, from its info block's
    /// `words` (the level sizes, the range check's verdict).
    pub(crate) fn finish(self, dev: &Device, words: &[u64; INFO_WORDS]) -> BResult<Built> {
        let Pending {
            info: _,
            plan,
            idx,
            n,
            rows,
            known_max,
        } = self;
        let n64 = n as u64;
        if known_max.is_none() {
            bad_index(dev, idx, words, rows)?;
        }
        let levels = words[INFO_LEVELS] as usize;
        if words[INFO_OVERFLOW] != 0
            || levels == 0
            || levels > 1 + crate::kernels::abi::PLAN_HI_LEVELS as usize
        {
            return Err(BError::from(Error::DevicePlan {
                detail: format!(
                    "{levels} levels (overflow flag {}) for {n} entries",
                    words[INFO_OVERFLOW]
                ),
            }));
        }
        let mut tables = vec![ChunkTable {
            start: plan.start0,
            row: plan.row0,
            slot: plan.slot0,
            chunks: words[INFO_CHUNKS],
        }];
        let mut values = vec![n];
        for l in 1..levels as u32 {
            let vb = hi_vb(n64, l);
            let start = plan.hi.byte_add(4 * hi_offset(n64, l));
            tables.push(ChunkTable {
                start,
                row: start.byte_add(4 * (vb + 1)),
                slot: start.byte_add(4 * (2 * vb + 1)),
                chunks: words[INFO_CHUNKS + l as usize],
            });
            values.push(words[INFO_VALUES + l as usize] as usize);
        }
        let max = known_max.unwrap_or(words[INFO_MAX] as u32);
        Ok(Built {
            plan: DevicePlan::from_parts(
                plan.mem,
                plan.positions,
                idx,
                tables,
                values,
                plan.wfirst,
            ),
            max: Some(max),
        })
    }
}

/// Exclusive scan of the `n` u32 at `input` into `out`, with `sums` holding
/// `tiles(n)` u32 of scratch: tile sums, their scan by one block, then each
/// tile's scan; one block for all of it up to [`SINGLE_SCAN_TILES`] tiles.
pub(crate) fn scan_u32(
    dev: &Device,
    input: DevPtr<u32>,
    n: u64,
    sums: DevPtr<u32>,
    out: DevPtr<u32>,
) -> Result<()> {
    let k = dev.kernels()?;
    let nt = tiles(n);
    if nt <= SINGLE_SCAN_TILES {
        let args = ScanSingle {
            r#in: In::at(input),
            n,
            out: Out::at(out),
        };
        // SAFETY: one block; in and out hold n u32 (distinct allocations).
        return unsafe { args.launch(dev, &k, Kernel::ScanSingleU32, cfg1(1)) };
    }
    let args = ScanSums {
        r#in: In::at(input),
        n,
        sums: Out::at(sums),
    };
    // SAFETY: in holds n u32, sums tiles(n).
    unsafe { args.launch(dev, &k, Kernel::ScanSumsU32, cfg1(tile_grid(nt))) }?;
    let args = ScanSpine {
        sums: Out::at(sums),
        ntiles: nt,
    };
    // SAFETY: one block over tiles(n) u32.
    unsafe { args.launch(dev, &k, Kernel::ScanSpineU32, cfg1(1)) }?;
    let args = ScanApply {
        r#in: In::at(input),
        n,
        sums: In::at(sums),
        out: Out::at(out),
    };
    // SAFETY: in and out hold n u32 (distinct allocations), sums tiles(n).
    unsafe { args.launch(dev, &k, Kernel::ScanApplyU32, cfg1(tile_grid(nt))) }
}
