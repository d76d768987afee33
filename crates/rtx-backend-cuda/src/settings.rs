//! The backend's settings: public enums and defaults, the same with and
//! without the `cuda` feature, and the rules that resolve them.

use std::sync::atomic::{AtomicU8, AtomicUsize, Ordering};

use crate::kernels::table::ChunkSum;

/// Default byte budget of a backend's index cache: 512 MiB
/// (host copy of the key plus device index list and plan).
pub const DEFAULT_INDEX_CACHE_BYTES: usize = 512 << 20;

/// Plans of at most this many entries use the pipelined (latency) form of
/// the scatter chunk sums by default.
pub const PIPELINED_SCATTER_MAX_ENTRIES: usize = 1 << 20;

/// What a backend has put on its stream since it was made (a counter of
/// each; [`StreamActivity::since`] gives a stretch of work's share): the
/// launches, copies and host waits that a step's wall time pays for
/// besides its kernels' device time.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct StreamActivity {
    /// Launches: each kernel, each replay of a recorded graph (one launch
    /// for all its kernels); kernels launched while a graph is being
    /// recorded count once, at the recording.
    pub launches: u64,
    /// Copies and memsets (host to device, device to host, device to device).
    pub copies: u64,
    /// Device allocations from the stream's pool.
    pub allocations: u64,
    /// Times the host waited for the stream (each read back to the host,
    /// each `synchronize`).
    pub waits: u64,
    /// Microseconds the host spent blocked in those waits (a read back from
    /// its first copy, which waits for the stream, to its end): a step's
    /// wall time less this is the host's time queueing its work.
    pub wait_us: u64,
}

impl StreamActivity {
    /// The activity between `earlier` and `self` (each counter's difference).
    #[must_use]
    pub fn since(&self, earlier: &StreamActivity) -> StreamActivity {
        StreamActivity {
            launches: self.launches.saturating_sub(earlier.launches),
            copies: self.copies.saturating_sub(earlier.copies),
            allocations: self.allocations.saturating_sub(earlier.allocations),
            waits: self.waits.saturating_sub(earlier.waits),
            wait_us: self.wait_us.saturating_sub(earlier.wait_us),
        }
    }
}

/// Tile of the 2-D transpose kernel (a tuning knob for benchmarks).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum TransposeTile {
    /// Picked by shape (the default): the span kernels for batches of small
    /// matrices and sides of at most 64, else the tiles 64x64, 128x32 for few
    /// columns, 32x128 for few rows, 32x32 for 16-byte elements. On sm_90+
    /// the 64x64 f32 tiles move through Hopper's bulk tensor copies where
    /// their tensor maps can describe the matrices.
    #[default]
    ByShape,
    /// The classic 32x32 tile for every shape (no span kernels).
    Force32,
    /// As `ByShape`, with every tile moved through registers (no bulk
    /// tensor copies): the form of devices before sm_90.
    NoBulk,
}

/// Output tiles of the matrix product (a tuning knob for benchmarks). Every
/// tile makes the same additions in the same order, so the results are the
/// same bits.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum MatmulTiles {
    /// Picked by shape (the default): a thread per output for products of
    /// at most 8 columns, else tiles with a 32-wide side for at most 32 rows
    /// or columns and 64 otherwise.
    #[default]
    ByShape,
    /// The 64x64 tile for every product.
    Force64,
}

/// Launches of the canonical column sums (`sum_rows`, the inner dimension
/// of a matrix product past 256, `head_scale_sum_rows`; a tuning knob for
/// benchmarks). Both make the same additions in the same order, so the
/// results are the same bits.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ColSums {
    /// One launch for every level (the default): the block that finishes the
    /// last row of a next-level group sums that group.
    #[default]
    Climb,
    /// One launch per level.
    PerLevel,
}

/// Form of the scatter chunk sums (a tuning knob for benchmarks). Every form
/// makes the same additions in the same order, so the results are the same bits.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ScatterForm {
    /// Picked by size (the default): pipelined up to
    /// [`PIPELINED_SCATTER_MAX_ENTRIES`] entries (the longest chunk's latency
    /// dominates) or when a lane sums more than one column vector (rows wider
    /// than 32 vectors), batched otherwise (throughput dominates); and
    /// `index_add`'s level 0 windowed for pipelined plans with a hub row and
    /// at most [`WINDOWED_MAX_BYTES`] of values in rows of at most 32 vectors.
    #[default]
    Auto,
    /// Always the batched (throughput) form.
    Batched,
    /// Always the pipelined (latency) form.
    Pipelined,
    /// `index_add`'s level 0 windowed wherever rows are at most 32 vectors
    /// (a block per 256 positions loads all their values into shared memory
    /// at once, then each chunk is summed from there: a hub row's 256-value
    /// chunk costs a few load latencies, not one per batch along its chain);
    /// pipelined elsewhere.
    Windowed,
}

/// Most column vectors per row that the windowed level 0 takes (segment.cu's
/// `fused_level0`: wider rows take its grouped form, a group per chunk).
pub(crate) const WINDOWED_MAX_VECTORS: u64 = 32;

/// Most bytes of stored values (entries times row bytes) for which `Auto`
/// windows `index_add`'s level 0. On the H200 (docs/PERFORMANCE.md, "The
/// forms of the scatter-add") the windowed form is 1.3-1.8x faster than
/// the pipelined one on hub-skewed plans of up to 16 MiB of values, even or
/// slower on 32-64 MiB, and slower on plans without hub rows from 64k
/// entries of 64 features: its blocks run their phases one after another,
/// which pays where one chain is the time, not where throughput is.
pub const WINDOWED_MAX_BYTES: usize = 16 << 20;

/// What the choice of `index_add`'s level 0 reads of a plan and its rows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct PlanShape {
    /// Entries (values of level 0).
    pub entries: usize,
    /// Column vectors per row.
    pub w: u64,
    /// Bytes of one stored row.
    pub row_bytes: usize,
    /// Whether a row has more than one chunk (the plan has a level past 0):
    /// a hub row, whose 256-value chunks are the chains that bound a small
    /// scatter's time.
    pub hub: bool,
}

impl ScatterForm {
    /// Whether `index_add`'s level 0 over a plan of `shape` is windowed
    /// (segment.cu's `sum0a`) rather than chunk sums ([`ScatterForm::resolve`]):
    /// always for [`ScatterForm::Windowed`], and under `Auto` for a plan the
    /// chunk sums would pipeline that has a hub row and at most
    /// [`WINDOWED_MAX_BYTES`] of values; either only for rows of at most
    /// [`WINDOWED_MAX_VECTORS`] vectors.
    pub(crate) fn windowed(self, shape: PlanShape) -> bool {
        let PlanShape {
            entries,
            w,
            row_bytes,
            hub,
        } = shape;
        let wanted = match self {
            ScatterForm::Windowed => true,
            ScatterForm::Auto => {
                self.resolve(entries, w) == ChunkSum::Pipelined
                    && hub
                    && entries.saturating_mul(row_bytes) <= WINDOWED_MAX_BYTES
            }
            ScatterForm::Batched | ScatterForm::Pipelined => false,
        };
        wanted && w <= WINDOWED_MAX_VECTORS
    }

    /// The chunk sums for a plan of `entries` entries whose rows are `w`
    /// vectors wide.
    pub(crate) fn resolve(self, entries: usize, w: u64) -> ChunkSum {
        match self {
            ScatterForm::Batched => ChunkSum::Batched,
            ScatterForm::Pipelined | ScatterForm::Windowed => ChunkSum::Pipelined,
            // latency-bound: few chunks in flight, or each lane sums several
            // column vectors of a chunk one after the other
            ScatterForm::Auto if entries <= PIPELINED_SCATTER_MAX_ENTRIES || w > 32 => {
                ChunkSum::Pipelined
            }
            ScatterForm::Auto => ChunkSum::Batched,
        }
    }
}

impl TransposeTile {
    /// Whether every transpose takes the classic 32x32 tile.
    pub(crate) fn force32(self) -> bool {
        self == TransposeTile::Force32
    }

    /// Whether the 64x64 f32 tiles may take the bulk tensor copies (sm_90+).
    pub(crate) fn bulk(self) -> bool {
        self == TransposeTile::ByShape
    }
}

/// The settings of one backend, changeable through a shared reference.
#[derive(Debug)]
pub(crate) struct Settings {
    cache_limit: AtomicUsize,
    transpose_tile: AtomicU8,
    scatter_form: AtomicU8,
    matmul_tiles: AtomicU8,
    col_sums: AtomicU8,
}

impl Default for Settings {
    fn default() -> Settings {
        Settings {
            cache_limit: AtomicUsize::new(DEFAULT_INDEX_CACHE_BYTES),
            transpose_tile: AtomicU8::new(TransposeTile::ByShape as u8),
            scatter_form: AtomicU8::new(ScatterForm::Auto as u8),
            matmul_tiles: AtomicU8::new(MatmulTiles::ByShape as u8),
            col_sums: AtomicU8::new(ColSums::Climb as u8),
        }
    }
}

impl Settings {
    pub(crate) fn index_cache_limit(&self) -> usize {
        self.cache_limit.load(Ordering::Relaxed)
    }

    pub(crate) fn set_index_cache_limit(&self, bytes: usize) {
        self.cache_limit.store(bytes, Ordering::Relaxed);
    }

    pub(crate) fn transpose_tile(&self) -> TransposeTile {
        match self.transpose_tile.load(Ordering::Relaxed) {
            x if x == TransposeTile::Force32 as u8 => TransposeTile::Force32,
            x if x == TransposeTile::NoBulk as u8 => TransposeTile::NoBulk,
            _ => TransposeTile::ByShape,
        }
    }

    pub(crate) fn set_transpose_tile(&self, tile: TransposeTile) {
        self.transpose_tile.store(tile as u8, Ordering::Relaxed);
    }

    pub(crate) fn scatter_form(&self) -> ScatterForm {
        match self.scatter_form.load(Ordering::Relaxed) {
            x if x == ScatterForm::Batched as u8 => ScatterForm::Batched,
            x if x == ScatterForm::Pipelined as u8 => ScatterForm::Pipelined,
            x if x == ScatterForm::Windowed as u8 => ScatterForm::Windowed,
            _ => ScatterForm::Auto,
        }
    }

    pub(crate) fn set_scatter_form(&self, form: ScatterForm) {
        self.scatter_form.store(form as u8, Ordering::Relaxed);
    }

    pub(crate) fn matmul_tiles(&self) -> MatmulTiles {
        match self.matmul_tiles.load(Ordering::Relaxed) {
            x if x == MatmulTiles::Force64 as u8 => MatmulTiles::Force64,
            _ => MatmulTiles::ByShape,
        }
    }

    pub(crate) fn set_matmul_tiles(&self, tiles: MatmulTiles) {
        self.matmul_tiles.store(tiles as u8, Ordering::Relaxed);
    }

    pub(crate) fn col_sums(&self) -> ColSums {
        match self.col_sums.load(Ordering::Relaxed) {
            x if x == ColSums::PerLevel as u8 => ColSums::PerLevel,
            _ => ColSums::Climb,
        }
    }

    pub(crate) fn set_col_sums(&self, form: ColSums) {
        self.col_sums.store(form as u8, Ordering::Relaxed);
    }

    /// Settings with the same values now (changed apart afterwards).
    pub(crate) fn snapshot(&self) -> Settings {
        let s = Settings::default();
        s.set_index_cache_limit(self.index_cache_limit());
        s.set_transpose_tile(self.transpose_tile());
        s.set_scatter_form(self.scatter_form());
        s.set_matmul_tiles(self.matmul_tiles());
        s.set_col_sums(self.col_sums());
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settings_round_trip() {
        let s = Settings::default();
        assert_eq!(s.index_cache_limit(), DEFAULT_INDEX_CACHE_BYTES);
        assert_eq!(s.transpose_tile(), TransposeTile::ByShape);
        assert_eq!(s.scatter_form(), ScatterForm::Auto);
        for t in [
            TransposeTile::Force32,
            TransposeTile::NoBulk,
            TransposeTile::ByShape,
        ] {
            s.set_transpose_tile(t);
            assert_eq!(s.transpose_tile(), t);
        }
        for f in [
            ScatterForm::Batched,
            ScatterForm::Pipelined,
            ScatterForm::Windowed,
            ScatterForm::Auto,
        ] {
            s.set_scatter_form(f);
            assert_eq!(s.scatter_form(), f);
        }
        assert_eq!(s.matmul_tiles(), MatmulTiles::ByShape);
        assert_eq!(s.col_sums(), ColSums::Climb);
        for c in [ColSums::PerLevel, ColSums::Climb] {
            s.set_col_sums(c);
            assert_eq!(s.col_sums(), c);
        }
        for t in [MatmulTiles::Force64, MatmulTiles::ByShape] {
            s.set_matmul_tiles(t);
            assert_eq!(s.matmul_tiles(), t);
        }
        s.set_index_cache_limit(7);
        assert_eq!(s.index_cache_limit(), 7);
        // a snapshot has every value, and changes apart
        s.set_scatter_form(ScatterForm::Windowed);
        s.set_transpose_tile(TransposeTile::NoBulk);
        s.set_col_sums(ColSums::PerLevel);
        s.set_matmul_tiles(MatmulTiles::Force64);
        let c = s.snapshot();
        assert_eq!(c.index_cache_limit(), 7);
        assert_eq!(c.scatter_form(), ScatterForm::Windowed);
        assert_eq!(c.transpose_tile(), TransposeTile::NoBulk);
        assert_eq!(c.col_sums(), ColSums::PerLevel);
        assert_eq!(c.matmul_tiles(), MatmulTiles::Force64);
        c.set_scatter_form(ScatterForm::Batched);
        assert_eq!(s.scatter_form(), ScatterForm::Windowed);
    }

    #[test]
    fn auto_forms_follow_the_size_rule() {
        let n = PIPELINED_SCATTER_MAX_ENTRIES;
        assert_eq!(ScatterForm::Auto.resolve(n, 32), ChunkSum::Pipelined);
        assert_eq!(ScatterForm::Auto.resolve(n + 1, 32), ChunkSum::Batched);
        assert_eq!(ScatterForm::Auto.resolve(n + 1, 33), ChunkSum::Pipelined);
        assert_eq!(ScatterForm::Batched.resolve(1, 1), ChunkSum::Batched);
        assert_eq!(
            ScatterForm::Pipelined.resolve(n + 1, 1),
            ChunkSum::Pipelined
        );
        assert_eq!(ScatterForm::Windowed.resolve(n + 1, 1), ChunkSum::Pipelined);
        // index_add's level 0: windowed for small hub-skewed plans of
        // narrow rows (the anchors' Harris case: 42,955 rows of 256 bytes);
        // the other plans keep the chunk sums `resolve` gives
        let shape = |entries, w, row_bytes, hub| PlanShape {
            entries,
            w,
            row_bytes,
            hub,
        };
        let auto = |s| ScatterForm::Auto.windowed(s);
        assert!(auto(shape(42_955, 16, 256, true)));
        assert!(auto(shape(42_955, 16, 128, true)));
        assert!(auto(shape(1 << 16, 16, 256, true)));
        assert!(!auto(shape((1 << 16) + 1, 16, 256, true)));
        assert!(!auto(shape(42_955, 16, 256, false)));
        assert!(!auto(shape(100, 33, 528, true)));
        assert!(!auto(shape(n + 1, 1, 4, true)));
        assert!(!auto(shape(usize::MAX, 1, 4, true)));
        assert_eq!(ScatterForm::Auto.resolve(usize::MAX, 1), ChunkSum::Batched);
        let windowed = |s| ScatterForm::Windowed.windowed(s);
        assert!(windowed(shape(n + 1, 32, 512, false)));
        assert!(!windowed(shape(1, 33, 528, true)));
        assert_eq!(ScatterForm::Windowed.resolve(1, 33), ChunkSum::Pipelined);
        let small_hub = shape(1000, 1, 4, true);
        assert!(!ScatterForm::Pipelined.windowed(small_hub));
        assert!(!ScatterForm::Batched.windowed(small_hub));
        assert_eq!(ScatterForm::Batched.resolve(1000, 1), ChunkSum::Batched);
        assert!(TransposeTile::Force32.force32());
        assert!(!TransposeTile::ByShape.force32());
        assert!(!TransposeTile::NoBulk.force32());
        assert!(TransposeTile::ByShape.bulk());
        assert!(!TransposeTile::NoBulk.bulk() && !TransposeTile::Force32.bulk());
    }

    #[test]
    fn activity_since_is_each_counters_difference() {
        let a = StreamActivity {
            launches: 10,
            copies: 3,
            allocations: 7,
            waits: 2,
            wait_us: 100,
        };
        let b = StreamActivity {
            launches: 574,
            copies: 130,
            allocations: 479,
            waits: 29,
            wait_us: 3100,
        };
        let d = b.since(&a);
        assert_eq!(
            (d.launches, d.copies, d.allocations, d.waits, d.wait_us),
            (564, 127, 472, 27, 3000)
        );
        // an earlier reading that is larger (another backend's): no wrap
        assert_eq!(a.since(&b), StreamActivity::default());
    }
}
