//! The typed choices that pick a kernel of the table from the data: the
//! word of a copy kernel, the element and vector of a typed kernel, the
//! tiles, the levels and forms of the scatter chain. With an op (the
//! [`Family`](super::Family) enums beside the table, `table.rs`) they make
//! the choice [`Kernel::of`](super::Kernel::of) turns into the kernel. No
//! kernel name is assembled from strings.

use rtx_backend::DType;

use crate::error::{Error, Result};

/// The unsigned word a copy kernel moves (`u16`, `u32`, `uint2`/`u64`, `uint4`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Word {
    /// 2 bytes: rows of half elements whose bytes no wider word divides.
    B2,
    /// 4 bytes.
    B4,
    /// 8 bytes.
    B8,
    /// 16 bytes.
    B16,
}

impl Word {
    /// The widest word dividing `bytes` (2 when none of 16, 8 and 4 does:
    /// `bytes` is a whole number of elements, at least 2 bytes each).
    pub(crate) fn dividing(bytes: u64) -> Word {
        if bytes.is_multiple_of(16) {
            Word::B16
        } else if bytes.is_multiple_of(8) {
            Word::B8
        } else if bytes.is_multiple_of(4) {
            Word::B4
        } else {
            Word::B2
        }
    }

    /// The word of exactly `bytes` bytes, if there is one.
    pub(crate) fn exact(bytes: u64) -> Option<Word> {
        match bytes {
            2 => Some(Word::B2),
            4 => Some(Word::B4),
            8 => Some(Word::B8),
            16 => Some(Word::B16),
            _ => None,
        }
    }

    /// Its size in bytes.
    pub(crate) fn bytes(self) -> u64 {
        match self {
            Word::B2 => 2,
            Word::B4 => 4,
            Word::B8 => 8,
            Word::B16 => 16,
        }
    }
}

/// The element type of an element-typed kernel (`_f32`, `_f64`, `_bf16`,
/// `_f16`): what its tensors store. The half types compute in f32 (their
/// kernels load, widen, compute and round each output once).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Float {
    /// `float`.
    F32,
    /// `double`.
    F64,
    /// `bf16` storage, f32 arithmetic.
    Bf16,
    /// `f16` storage, f32 arithmetic.
    F16,
}

impl Float {
    /// The kernel type of `dtype`.
    pub(crate) fn of(dtype: DType) -> Float {
        match dtype {
            DType::F32 => Float::F32,
            DType::F64 => Float::F64,
            DType::BF16 => Float::Bf16,
            DType::F16 => Float::F16,
        }
    }

    /// Its element type.
    #[cfg(test)]
    pub(crate) fn dtype(self) -> DType {
        match self {
            Float::F32 => DType::F32,
            Float::F64 => DType::F64,
            Float::Bf16 => DType::BF16,
            Float::F16 => DType::F16,
        }
    }
}

/// The vector type a scatter-family kernel sums (`_f32x4` ... `_f64x1`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum SumVec {
    /// `float4`.
    F32x4,
    /// `float2`.
    F32x2,
    /// `float`.
    F32x1,
    /// `double2`.
    F64x2,
    /// `double`.
    F64x1,
}

impl SumVec {
    /// The widest vector of `dtype` dividing a row of `row_bytes` bytes whose
    /// element count also divides `align` elements (a head's channel count
    /// for gather_scale_scatter; the row's element count otherwise).
    /// An error naming `op` and `dtype` for an element type without kernels.
    pub(crate) fn pick(
        dtype: DType,
        row_bytes: usize,
        align: usize,
        op: &'static str,
    ) -> Result<SumVec> {
        Ok(match dtype {
            DType::F32 if row_bytes.is_multiple_of(16) && align.is_multiple_of(4) => SumVec::F32x4,
            DType::F32 if row_bytes.is_multiple_of(8) && align.is_multiple_of(2) => SumVec::F32x2,
            DType::F32 => SumVec::F32x1,
            DType::F64 if row_bytes.is_multiple_of(16) && align.is_multiple_of(2) => SumVec::F64x2,
            DType::F64 => SumVec::F64x1,
            DType::BF16 | DType::F16 => return Err(Error::UnsupportedDType { op, dtype }),
        })
    }

    /// Its size in bytes.
    pub(crate) fn bytes(self) -> usize {
        match self {
            SumVec::F32x4 | SumVec::F64x2 => 16,
            SumVec::F32x2 | SumVec::F64x1 => 8,
            SumVec::F32x1 => 4,
        }
    }
}

/// A half-precision storage type (`_bf16*` / `_f16*` kernels).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Half {
    /// `bf16`.
    Bf16,
    /// `f16`.
    F16,
}

impl Half {
    /// The half kind of `dtype` (`None` for f32 and f64).
    pub(crate) fn of(dtype: DType) -> Option<Half> {
        match dtype {
            DType::BF16 => Some(Half::Bf16),
            DType::F16 => Some(Half::F16),
            DType::F32 | DType::F64 => None,
        }
    }
}

/// Stored halves per vector of a half scatter kernel (`x8`: 16-byte loads
/// summed as two `float4`, `x4`: 8 bytes as `float4`, `x2`: 4 bytes as
/// `float2`, `x1`: 2 bytes as `float`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum HalfVec {
    /// 8 halves.
    X8,
    /// 4 halves.
    X4,
    /// 2 halves.
    X2,
    /// 1 half.
    X1,
}

impl HalfVec {
    /// The widest vector dividing a row of `f` elements.
    pub(crate) fn pick(f: usize) -> HalfVec {
        if f.is_multiple_of(8) {
            HalfVec::X8
        } else if f.is_multiple_of(4) {
            HalfVec::X4
        } else if f.is_multiple_of(2) {
            HalfVec::X2
        } else {
            HalfVec::X1
        }
    }

    /// The widest vector of at most 4 halves dividing a row of `f`
    /// elements: the vector of a half chain's levels past 0, which sum f32
    /// scratch, so that a lane loads a `float4` of it as the f32 kernels do
    /// (x8 would take two per lane, with half the lanes per chunk and twice
    /// the registers); the adds of each element are the same at any width.
    pub(crate) fn pick_scratch(f: usize) -> HalfVec {
        match HalfVec::pick(f) {
            HalfVec::X8 => HalfVec::X4,
            v => v,
        }
    }

    /// The vector of level 0 of a half scatter chain summing in `form`:
    /// [`HalfVec::pick`], but the pipelined (latency) form takes x4 when a
    /// row is at most 32 of them, so that a chunk has as many lanes as an
    /// f32 chunk (one `float4` of sums each, half the bytes per load) and a
    /// small level spreads over as many blocks as the f32 kernels'; wider
    /// rows keep x8, whose lanes sum fewer column vectors one after the other.
    pub(crate) fn pick_level0(f: usize, form: ChunkSum) -> HalfVec {
        match HalfVec::pick(f) {
            HalfVec::X8 if form == ChunkSum::Pipelined && f / 4 <= 32 => HalfVec::X4,
            v => v,
        }
    }

    /// The widest vector dividing both a row of `f` elements and `align`
    /// elements (a head's channel count for gather_scale_scatter, whose
    /// heads must not straddle a vector; `f` otherwise).
    pub(crate) fn pick_aligned(f: usize, align: usize) -> HalfVec {
        [HalfVec::X8, HalfVec::X4, HalfVec::X2]
            .into_iter()
            .find(|v| f.is_multiple_of(v.elems()) && align.is_multiple_of(v.elems()))
            .unwrap_or(HalfVec::X1)
    }

    /// Halves per vector.
    pub(crate) fn elems(self) -> usize {
        match self {
            HalfVec::X8 => 8,
            HalfVec::X4 => 4,
            HalfVec::X2 => 2,
            HalfVec::X1 => 1,
        }
    }
}

/// A level of the scatter chain: level 0 reads values through the plan's
/// positions, higher levels read the previous level's scratch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Level {
    /// `scatter0*`.
    Zero,
    /// `scatterN*`.
    Higher,
}

/// How a scatter kernel sums a chunk (the same additions in the same order).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ChunkSum {
    /// Loads in batches of 8 before their adds: the throughput form.
    Batched,
    /// Software-pipelined (`p` kernels): the latency form.
    Pipelined,
}

/// A fused level-0 kernel of a segment sum, computing its values on the fly.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Fused0 {
    /// `sum0`: the stored value of the entry (the model's segment sums; a
    /// hub row's chunks are loaded by the whole block, see segment.cu).
    Read,
    /// `sum0a`: the same, each row's sum added to what the destination
    /// holds (`index_add`'s windowed level 0).
    Add,
    /// `softmax_bwd_sum0`: `alpha * grad` of the segment softmax's backward.
    SoftmaxBwd,
    /// `gather_scale_sum0`: `x[gather[e]] * w[e, head]` of gather_scale_scatter.
    GatherScale,
}

/// The output tile of one block of dense.cu's matmul (`matmul{TM}x{TN}_*`):
/// `tm x tn` outputs, a 4x4 register tile for each of `tm * tn / 16` threads.
/// Which tile computes an output never changes the order of its additions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum MatmulTile {
    /// 64 x 64, 256 threads.
    T64x64,
    /// 32 x 64, 128 threads: products of at most 32 rows.
    T32x64,
    /// 64 x 32, 128 threads: products of at most 32 columns.
    T64x32,
    /// 32 x 32, 64 threads: products of at most 32 rows and columns.
    T32x32,
}

impl MatmulTile {
    /// Output rows of the tile.
    pub(crate) fn tm(self) -> u32 {
        match self {
            MatmulTile::T64x64 | MatmulTile::T64x32 => 64,
            MatmulTile::T32x64 | MatmulTile::T32x32 => 32,
        }
    }

    /// Output columns of the tile.
    pub(crate) fn tn(self) -> u32 {
        match self {
            MatmulTile::T64x64 | MatmulTile::T32x64 => 64,
            MatmulTile::T64x32 | MatmulTile::T32x32 => 32,
        }
    }

    /// Threads per block.
    pub(crate) fn threads(self) -> u32 {
        self.tm() * self.tn() / 16
    }
}

/// The span transpose kernels (`transpose_{planes,rows,cols}_b*`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum SpanKind {
    /// Whole planes of a batch of small matrices.
    Planes,
    /// Whole rows of a matrix with few columns.
    Rows,
    /// Whole columns of a matrix with few rows.
    Cols,
}

/// The shared-memory tile of the 2-D transpose kernel, `(rows, cols)`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Tile {
    /// 32 x 32 (every element size; the only one for 16-byte elements).
    T32x32,
    /// 64 x 64: large matrices.
    T64x64,
    /// 128 x 32: few columns.
    T128x32,
    /// 32 x 128: few rows.
    T32x128,
}

impl Tile {
    /// `(rows, cols)` of the tile.
    pub(crate) fn dims(self) -> (u64, u64) {
        match self {
            Tile::T32x32 => (32, 32),
            Tile::T64x64 => (64, 64),
            Tile::T128x32 => (128, 32),
            Tile::T32x128 => (32, 128),
        }
    }

    /// The tile for a matrix of `rows x cols` elements of `elem` (always
    /// 32x32 when `force_32` or for 16-byte elements).
    pub(crate) fn pick(rows: u64, cols: u64, elem: Word, force_32: bool) -> Tile {
        if force_32 || elem == Word::B16 {
            Tile::T32x32
        } else if cols <= 48 && rows > 48 {
            Tile::T128x32
        } else if rows <= 48 && cols > 48 {
            Tile::T32x128
        } else {
            Tile::T64x64
        }
    }
}
