//! Scatter plans of several lists built in one set of launches
//! (kernels/plan.cu's `*_many` kernels): every phase of
//! [`build::start`](super::build::start) is one launch for the whole batch,
//! its grid's `y` the build, its `x` the largest grid a build of the batch
//! needs. The kernels run the one-build kernels' bodies on each build's
//! fields, so a plan built here is the same bits as one built alone.
//!
//! A batch of `k` builds queues `7 + 5p` launches for `p` radix passes
//! (the range check; per pass the counts, three scan launches and the
//! placement; the offsets, level 0's three scan launches, its tables and
//! the levels past it), 17 for rows up to 2^22, where each build alone
//! queues 9-15. A sorted list's build has no passes (the pass launches
//! return at once for it; a batch of sorted lists queues none). Builds
//! that need a readback before their launches (the largest index of an
//! unchecked list into far more rows than it has entries) and empty lists
//! take [`build::start`].

use rtx_backend::Result as BResult;

use crate::error::Result;
use crate::indices::build::{
    self, Info, Pending, PlanMem, Request, SINGLE_SCAN_TILES, Scratch, Started, alloc_u32,
    tile_grid,
};
use crate::indices::layout::{
    INFO_WORDS, PLAN_ITEM_WORDS, radix, rows_direct_limit, sort_items, sort_tiles, tiles,
};
use crate::kernels::abi::BLOCK;
use crate::kernels::table::Kernel;
use crate::runtime::args::{DevPtr, In, PlanItem};
use crate::runtime::context::Device;
use crate::runtime::launch::{PlanMany, PlanPassMany, grid_for};
use cudarc::driver::LaunchConfig;

/// Builds of one batch at most: `gridDim.y`'s limit.
const MAX_BATCH: usize = 65_535;

/// The largest grid each phase needs over a batch's builds.
#[derive(Debug, Default)]
struct Grids {
    bounds: u32,
    passes: u32,
    sort: u32,
    counts: u32,
    offsets: u32,
    rows: u32,
    fill: u32,
}

/// Whether `r` can join a batch: its sort's rows are known without a
/// readback, and it has entries ([`build::start`] answers the others,
/// errors included).
fn batchable(r: &Request) -> bool {
    r.n > 0
        && r.n <= u32::MAX as usize
        && (r.known_max.is_some() || (r.rows > 0 && r.rows as u64 <= rows_direct_limit(r.n as u64)))
}

/// Queues the builds of `reqs`, one [`Started`] each in order: the
/// batchable ones ([`batchable`]) together when there are at least two,
/// the others through [`build::start`]. Every build's info block is read
/// back by the caller, as [`build::start`]'s.
pub(crate) fn start_many(dev: &Device, reqs: &[Request]) -> BResult<Vec<Started>> {
    let together: Vec<usize> = (0..reqs.len()).filter(|&i| batchable(&reqs[i])).collect();
    let mut out: Vec<Option<Started>> = (0..reqs.len()).map(|_| None).collect();
    if together.len() >= 2 {
        for part in together.chunks(MAX_BATCH) {
            let picked: Vec<Request> = part.iter().map(|&i| reqs[i]).collect();
            for (&i, p) in part.iter().zip(queue_batch(dev, &picked)?) {
                out[i] = Some(Started::Queued(p));
            }
        }
    }
    for (r, o) in reqs.iter().zip(out.iter_mut()) {
        if o.is_none() {
            *o = Some(build::start(dev, r)?);
        }
    }
    Ok(out
        .into_iter()
        .map(|o| o.expect("every build started"))
        .collect())
}

/// Queues one batch of batchable builds.
fn queue_batch(dev: &Device, reqs: &[Request]) -> Result<Vec<Pending>> {
    let info_bytes = 8 * INFO_WORDS as u64;
    let infos = alloc_u32(dev, 2 * INFO_WORDS as u64 * reqs.len() as u64)?;
    dev.zero(&infos)?;
    let infos = std::sync::Arc::new(infos);
    let mut words: Vec<u64> = Vec::with_capacity(PLAN_ITEM_WORDS * reqs.len());
    let mut plans = Vec::with_capacity(reqs.len());
    // the scratch goes back to the stream's cache once the launches are
    // queued: later work on the stream runs after them
    let mut scratches = Vec::with_capacity(reqs.len());
    let mut g = Grids::default();
    for (i, r) in reqs.iter().enumerate() {
        let n64 = r.n as u64;
        let sort_rows = match r.known_max {
            Some(m) => u64::from(m) + 1,
            None => r.rows as u64,
        };
        let (passes, dbits) = match r.sorted {
            true => (0, 0),
            false => radix(sort_rows),
        };
        let plan = PlanMem::alloc(dev, n64, sort_rows)?;
        let s = Scratch::alloc(dev, n64, sort_rows, r.sorted)?;
        let ntiles = sort_tiles(n64);
        let ncounts = (1u64 << dbits) * ntiles;
        let info = infos.ptr::<u64>().byte_add(info_bytes * i as u64);
        let a = |p: DevPtr<u32>| p.addr();
        let [k0, k1] = Scratch::KEYS.map(|k| a(s.p(k)));
        let [v0, v1] = Scratch::VALS.map(|k| a(s.p(k)));
        // plan.cu's `PlanItem`, field by field
        let item: [u64; PLAN_ITEM_WORDS] = [
            r.idx.addr(),
            n64,
            u64::from(r.known_max.is_none()), // check
            r.rows as u64,                    // bound
            info.addr(),
            sort_rows,
            u64::from(passes),
            u64::from(dbits),
            ntiles,
            u64::from(sort_items(n64)),                       // items
            u64::from(tiles(ncounts) <= SINGLE_SCAN_TILES),   // single_counts
            u64::from(tiles(sort_rows) <= SINGLE_SCAN_TILES), // single_rows
            a(s.p(Scratch::COUNTS)),
            a(s.p(Scratch::OFFS)),
            a(s.p(Scratch::SUMS)),
            k0,
            k1,
            v0,
            v1,
            a(plan.positions),
            a(s.p(Scratch::OFF)),
            a(s.p(Scratch::SUMS3)),
            a(s.p(Scratch::SCAN3)),
            a(s.p(Scratch::LIST_A)),
            a(s.p(Scratch::LIST_B)),
            a(plan.start0),
            a(plan.row0),
            a(plan.slot0),
            a(plan.hi),
            a(plan.wfirst),
        ];
        words.extend(item);
        if r.known_max.is_none() {
            g.bounds = g.bounds.max(grid_for(n64).min(4096));
        }
        let offsets_threads = match r.sorted {
            // the offsets launch writes the identity positions too
            true => (sort_rows + 1).max(n64),
            false => {
                g.passes = g.passes.max(passes);
                g.sort = g.sort.max(tile_grid(ntiles));
                g.counts = g.counts.max(tile_grid(tiles(ncounts)));
                sort_rows + 1
            }
        };
        g.offsets = g.offsets.max(grid_for(offsets_threads));
        g.rows = g.rows.max(tile_grid(tiles(sort_rows)));
        g.fill = g.fill.max(grid_for(plan.c0));
        plans.push(Pending {
            info: Info::Shared {
                _block: std::sync::Arc::clone(&infos),
                at: info,
            },
            plan,
            idx: r.idx,
            n: r.n,
            rows: r.rows,
            known_max: r.known_max,
        });
        scratches.push(s);
    }
    let bytes: Vec<u8> = words.iter().flat_map(|w| w.to_ne_bytes()).collect();
    let descs = dev.upload_bytes(&bytes)?;
    launch_phases(dev, In::at(descs.ptr::<PlanItem>()), reqs.len() as u32, &g)?;
    drop(scratches);
    drop(descs);
    Ok(plans)
}

/// `grid` blocks per build of a batch of `k`.
fn cfg2(grid: u32, k: u32) -> LaunchConfig {
    LaunchConfig {
        grid_dim: (grid.max(1), k, 1),
        block_dim: (BLOCK, 1, 1),
        shared_mem_bytes: 0,
    }
}

/// Queues the batch's phases in [`build::start`]'s order.
fn launch_phases(dev: &Device, items: In<PlanItem>, k: u32, g: &Grids) -> Result<()> {
    let kernels = dev.kernels()?;
    let all = |kernel: Kernel, grid: u32| {
        // SAFETY: `items` holds `k` PlanItems whose addresses are this
        // batch's allocations with the sizes `build::start` gives them
        // (PlanMem::alloc, Scratch::alloc), their info blocks zeroed; each
        // kernel touches only what its one-build namesake touches with
        // those fields, and the phases run in that build's order.
        unsafe { PlanMany { items }.launch(dev, &kernels, kernel, cfg2(grid, k)) }
    };
    let pass = |kernel: Kernel, pass: u32, grid: u32| {
        // SAFETY: as `all`'s, for radix pass `pass` (a build of fewer
        // passes returns at once).
        unsafe { PlanPassMany { items, pass }.launch(dev, &kernels, kernel, cfg2(grid, k)) }
    };
    if g.bounds > 0 {
        all(Kernel::IndexBoundsMany, g.bounds)?;
    }
    for p in 0..g.passes {
        pass(Kernel::PlanHistMany, p, g.sort)?;
        pass(Kernel::PlanScanSumsMany, p, g.counts)?;
        pass(Kernel::PlanScanSpineMany, p, 1)?;
        pass(Kernel::PlanScanApplyMany, p, g.counts)?;
        pass(Kernel::PlanRankMany, p, g.sort)?;
    }
    all(Kernel::PlanOffsetsMany, g.offsets)?;
    all(Kernel::Lvl0SumsMany, g.rows)?;
    all(Kernel::Lvl0SpineMany, 1)?;
    all(Kernel::Lvl0ApplyMany, g.rows)?;
    all(Kernel::Lvl0FillMany, g.fill)?;
    all(Kernel::PlanLevelsMany, 1)
}
