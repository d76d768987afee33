//! The typed choices that pick a kernel of the table: the word of a copy
//! kernel, the element and vector of a typed kernel, the tiles, the levels
//! and forms of the scatter chain, and the pickers from them to a
//! [`Kernel`]. No kernel name is assembled from strings.

use rtx_backend::DType;

use crate::error::{Error, Result};

use super::Kernel;

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
    /// `smb0`: `alpha * grad` of the segment softmax's backward.
    SoftmaxBwd,
    /// `gss0`: `x[gather[e]] * w[e, head]` of gather_scale_scatter.
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

/// An element-typed kernel family of the model's kernels (model.cu, dense.cu, segment.cu).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Typed {
    /// `unary_*`.
    Unary,
    /// `unary_bwd_*`.
    UnaryBwd,
    /// `binary_*`.
    Binary,
    /// `axpy_*`.
    Axpy,
    /// `sum_bias_relu_*`.
    SumBiasRelu,
    /// `gather_add_*`.
    GatherAdd,
    /// `head_scale_*`.
    HeadScale,
    /// `head_dot_*`.
    HeadDot,
    /// `gather_head_dot_*`.
    GatherHeadDot,
    /// `reduce_rows_*`.
    ReduceRows,
    /// `head_scale_rows_*`.
    HeadScaleRows,
    /// `matmul_dot_*`: products of few columns, a thread per output.
    MatmulDot,
    /// `segmax0_*`: level 0 of a segment max.
    Segmax0,
    /// `segmax_*`: the levels past 0 of a segment max.
    Segmax,
    /// `softmax_exp_*`.
    SoftmaxExp,
    /// `softmax_div_*`.
    SoftmaxDiv,
    /// `softmax_bwd_*`.
    SoftmaxBwd,
}

impl Typed {
    /// The family's name, as its kernels' names begin.
    #[cfg(test)]
    pub(crate) fn name(self) -> &'static str {
        match self {
            Typed::Unary => "unary",
            Typed::UnaryBwd => "unary_bwd",
            Typed::Binary => "binary",
            Typed::Axpy => "axpy",
            Typed::SumBiasRelu => "sum_bias_relu",
            Typed::GatherAdd => "gather_add",
            Typed::HeadScale => "head_scale",
            Typed::HeadDot => "head_dot",
            Typed::GatherHeadDot => "gather_head_dot",
            Typed::ReduceRows => "reduce_rows",
            Typed::HeadScaleRows => "head_scale_rows",
            Typed::MatmulDot => "matmul_dot",
            Typed::Segmax0 => "segmax0",
            Typed::Segmax => "segmax",
            Typed::SoftmaxExp => "softmax_exp",
            Typed::SoftmaxDiv => "softmax_div",
            Typed::SoftmaxBwd => "softmax_bwd",
        }
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

impl Kernel {
    /// `gather_b*`.
    pub(crate) fn gather(w: Word) -> Kernel {
        match w {
            Word::B16 => Kernel::GatherB16,
            Word::B8 => Kernel::GatherB8,
            Word::B4 => Kernel::GatherB4,
            Word::B2 => Kernel::GatherB2,
        }
    }

    /// `transpose_runs_b*`.
    pub(crate) fn transpose_runs(w: Word) -> Kernel {
        match w {
            Word::B16 => Kernel::TransposeRunsB16,
            Word::B8 => Kernel::TransposeRunsB8,
            Word::B4 => Kernel::TransposeRunsB4,
            Word::B2 => Kernel::TransposeRunsB2,
        }
    }

    /// `transpose_{planes,rows,cols}_b*` (2-, 4- and 8-byte elements; the
    /// choice never gives 16-byte ones a span kernel).
    pub(crate) fn transpose_span(kind: SpanKind, w: Word) -> Kernel {
        match (kind, w) {
            (SpanKind::Planes, Word::B2) => Kernel::TransposePlanesB2,
            (SpanKind::Planes, Word::B4) => Kernel::TransposePlanesB4,
            (SpanKind::Planes, _) => Kernel::TransposePlanesB8,
            (SpanKind::Rows, Word::B2) => Kernel::TransposeRowsB2,
            (SpanKind::Rows, Word::B4) => Kernel::TransposeRowsB4,
            (SpanKind::Rows, _) => Kernel::TransposeRowsB8,
            (SpanKind::Cols, Word::B2) => Kernel::TransposeColsB2,
            (SpanKind::Cols, Word::B4) => Kernel::TransposeColsB4,
            (SpanKind::Cols, _) => Kernel::TransposeColsB8,
        }
    }

    /// `transpose_{planes,rows,cols}_p2`: the span kernels of 2-byte
    /// elements moved as 4-byte pairs.
    pub(crate) fn transpose_span_pairs(kind: SpanKind) -> Kernel {
        match kind {
            SpanKind::Planes => Kernel::TransposePlanesP2,
            SpanKind::Rows => Kernel::TransposeRowsP2,
            SpanKind::Cols => Kernel::TransposeColsP2,
        }
    }

    /// `transpose{TR}x{TC}_p2`: the tiled transpose of 2-byte elements moved
    /// as 4-byte pairs.
    pub(crate) fn transpose_pairs(tile: Tile) -> Kernel {
        match tile {
            Tile::T32x32 => Kernel::Transpose32x32P2,
            Tile::T64x64 => Kernel::Transpose64x64P2,
            Tile::T128x32 => Kernel::Transpose128x32P2,
            Tile::T32x128 => Kernel::Transpose32x128P2,
        }
    }

    /// `permute_b*`.
    pub(crate) fn permute(w: Word) -> Kernel {
        match w {
            Word::B16 => Kernel::PermuteB16,
            Word::B8 => Kernel::PermuteB8,
            Word::B4 => Kernel::PermuteB4,
            Word::B2 => Kernel::PermuteB2,
        }
    }

    /// The tiled transpose of `elem` elements with `tile` (16-byte elements
    /// have the 32x32 tile only: [`Tile::pick`] never gives them another).
    pub(crate) fn transpose(elem: Word, tile: Tile) -> Kernel {
        match (elem, tile) {
            (Word::B16, _) => Kernel::Transpose32x32B16,
            (Word::B8, Tile::T32x32) => Kernel::Transpose32x32B8,
            (Word::B8, Tile::T64x64) => Kernel::Transpose64x64B8,
            (Word::B8, Tile::T128x32) => Kernel::Transpose128x32B8,
            (Word::B8, Tile::T32x128) => Kernel::Transpose32x128B8,
            (Word::B4, Tile::T32x32) => Kernel::Transpose32x32B4,
            (Word::B4, Tile::T64x64) => Kernel::Transpose64x64B4,
            (Word::B4, Tile::T128x32) => Kernel::Transpose128x32B4,
            (Word::B4, Tile::T32x128) => Kernel::Transpose32x128B4,
            (Word::B2, Tile::T32x32) => Kernel::Transpose32x32B2,
            (Word::B2, Tile::T64x64) => Kernel::Transpose64x64B2,
            (Word::B2, Tile::T128x32) => Kernel::Transpose128x32B2,
            (Word::B2, Tile::T32x128) => Kernel::Transpose32x128B2,
        }
    }

    /// `scatter{0,N}{,p}_*`.
    pub(crate) fn scatter(level: Level, form: ChunkSum, v: SumVec) -> Kernel {
        use ChunkSum::{Batched, Pipelined};
        use Level::{Higher, Zero};
        match (level, form, v) {
            (Zero, Batched, SumVec::F32x4) => Kernel::Scatter0F32x4,
            (Zero, Batched, SumVec::F32x2) => Kernel::Scatter0F32x2,
            (Zero, Batched, SumVec::F32x1) => Kernel::Scatter0F32x1,
            (Zero, Batched, SumVec::F64x2) => Kernel::Scatter0F64x2,
            (Zero, Batched, SumVec::F64x1) => Kernel::Scatter0F64x1,
            (Zero, Pipelined, SumVec::F32x4) => Kernel::Scatter0pF32x4,
            (Zero, Pipelined, SumVec::F32x2) => Kernel::Scatter0pF32x2,
            (Zero, Pipelined, SumVec::F32x1) => Kernel::Scatter0pF32x1,
            (Zero, Pipelined, SumVec::F64x2) => Kernel::Scatter0pF64x2,
            (Zero, Pipelined, SumVec::F64x1) => Kernel::Scatter0pF64x1,
            (Higher, Batched, SumVec::F32x4) => Kernel::ScatterNF32x4,
            (Higher, Batched, SumVec::F32x2) => Kernel::ScatterNF32x2,
            (Higher, Batched, SumVec::F32x1) => Kernel::ScatterNF32x1,
            (Higher, Batched, SumVec::F64x2) => Kernel::ScatterNF64x2,
            (Higher, Batched, SumVec::F64x1) => Kernel::ScatterNF64x1,
            (Higher, Pipelined, SumVec::F32x4) => Kernel::ScatterNpF32x4,
            (Higher, Pipelined, SumVec::F32x2) => Kernel::ScatterNpF32x2,
            (Higher, Pipelined, SumVec::F32x1) => Kernel::ScatterNpF32x1,
            (Higher, Pipelined, SumVec::F64x2) => Kernel::ScatterNpF64x2,
            (Higher, Pipelined, SumVec::F64x1) => Kernel::ScatterNpF64x1,
        }
    }

    /// `scatter{0,N}{,p}_{bf16,f16}x*`.
    pub(crate) fn scatter_half(level: Level, form: ChunkSum, h: Half, v: HalfVec) -> Kernel {
        use ChunkSum::{Batched as B, Pipelined as P};
        use Half::{Bf16, F16};
        use HalfVec::{X1, X2, X4, X8};
        use Level::{Higher as N, Zero as Z};
        match (level, form, h, v) {
            (Z, B, Bf16, X8) => Kernel::Scatter0Bf16x8,
            (Z, B, F16, X8) => Kernel::Scatter0F16x8,
            (N, B, Bf16, X8) => Kernel::ScatterNBf16x8,
            (N, B, F16, X8) => Kernel::ScatterNF16x8,
            (Z, P, Bf16, X8) => Kernel::Scatter0pBf16x8,
            (Z, P, F16, X8) => Kernel::Scatter0pF16x8,
            (N, P, Bf16, X8) => Kernel::ScatterNpBf16x8,
            (N, P, F16, X8) => Kernel::ScatterNpF16x8,
            (Z, B, Bf16, X4) => Kernel::Scatter0Bf16x4,
            (Z, B, Bf16, X2) => Kernel::Scatter0Bf16x2,
            (Z, B, Bf16, X1) => Kernel::Scatter0Bf16x1,
            (Z, B, F16, X4) => Kernel::Scatter0F16x4,
            (Z, B, F16, X2) => Kernel::Scatter0F16x2,
            (Z, B, F16, X1) => Kernel::Scatter0F16x1,
            (N, B, Bf16, X4) => Kernel::ScatterNBf16x4,
            (N, B, Bf16, X2) => Kernel::ScatterNBf16x2,
            (N, B, Bf16, X1) => Kernel::ScatterNBf16x1,
            (N, B, F16, X4) => Kernel::ScatterNF16x4,
            (N, B, F16, X2) => Kernel::ScatterNF16x2,
            (N, B, F16, X1) => Kernel::ScatterNF16x1,
            (Z, P, Bf16, X4) => Kernel::Scatter0pBf16x4,
            (Z, P, Bf16, X2) => Kernel::Scatter0pBf16x2,
            (Z, P, Bf16, X1) => Kernel::Scatter0pBf16x1,
            (Z, P, F16, X4) => Kernel::Scatter0pF16x4,
            (Z, P, F16, X2) => Kernel::Scatter0pF16x2,
            (Z, P, F16, X1) => Kernel::Scatter0pF16x1,
            (N, P, Bf16, X4) => Kernel::ScatterNpBf16x4,
            (N, P, Bf16, X2) => Kernel::ScatterNpBf16x2,
            (N, P, Bf16, X1) => Kernel::ScatterNpBf16x1,
            (N, P, F16, X4) => Kernel::ScatterNpF16x4,
            (N, P, F16, X2) => Kernel::ScatterNpF16x2,
            (N, P, F16, X1) => Kernel::ScatterNpF16x1,
        }
    }

    /// `narrow_*` (f32 to `h`) or, `widen`, `widen_*` (`h` to f32).
    pub(crate) fn convert_half(h: Half, widen: bool) -> Kernel {
        match (h, widen) {
            (Half::Bf16, false) => Kernel::NarrowBf16,
            (Half::F16, false) => Kernel::NarrowF16,
            (Half::Bf16, true) => Kernel::WidenBf16,
            (Half::F16, true) => Kernel::WidenF16,
        }
    }

    /// `axpy_mixed_*` of `h`.
    pub(crate) fn axpy_mixed(h: Half) -> Kernel {
        match h {
            Half::Bf16 => Kernel::AxpyMixedBf16,
            Half::F16 => Kernel::AxpyMixedF16,
        }
    }

    /// `{sum0,sum0a,smb0,gss0}_*`.
    pub(crate) fn fused0(op: Fused0, v: SumVec) -> Kernel {
        use Fused0::{Add, GatherScale, Read, SoftmaxBwd};
        match (op, v) {
            (Add, SumVec::F32x4) => Kernel::Sum0aF32x4,
            (Add, SumVec::F32x2) => Kernel::Sum0aF32x2,
            (Add, SumVec::F32x1) => Kernel::Sum0aF32x1,
            (Add, SumVec::F64x2) => Kernel::Sum0aF64x2,
            (Add, SumVec::F64x1) => Kernel::Sum0aF64x1,
            (Read, SumVec::F32x4) => Kernel::Sum0F32x4,
            (Read, SumVec::F32x2) => Kernel::Sum0F32x2,
            (Read, SumVec::F32x1) => Kernel::Sum0F32x1,
            (Read, SumVec::F64x2) => Kernel::Sum0F64x2,
            (Read, SumVec::F64x1) => Kernel::Sum0F64x1,
            (SoftmaxBwd, SumVec::F32x4) => Kernel::Smb0F32x4,
            (SoftmaxBwd, SumVec::F32x2) => Kernel::Smb0F32x2,
            (SoftmaxBwd, SumVec::F32x1) => Kernel::Smb0F32x1,
            (SoftmaxBwd, SumVec::F64x2) => Kernel::Smb0F64x2,
            (SoftmaxBwd, SumVec::F64x1) => Kernel::Smb0F64x1,
            (GatherScale, SumVec::F32x4) => Kernel::Gss0F32x4,
            (GatherScale, SumVec::F32x2) => Kernel::Gss0F32x2,
            (GatherScale, SumVec::F32x1) => Kernel::Gss0F32x1,
            (GatherScale, SumVec::F64x2) => Kernel::Gss0F64x2,
            (GatherScale, SumVec::F64x1) => Kernel::Gss0F64x1,
        }
    }

    /// `{sum0,sum0a,smb0,gss0}_{bf16,f16}x*`: the fused level 0 over half storage
    /// in vectors of `v` (f32 sums).
    pub(crate) fn fused0_half(op: Fused0, h: Half, v: HalfVec) -> Kernel {
        use Fused0::{Add as A, GatherScale as G, Read as R, SoftmaxBwd as B};
        use Half::{Bf16, F16};
        use HalfVec::{X1, X2, X4, X8};
        match (op, h, v) {
            (A, Bf16, X8) => Kernel::Sum0aBf16x8,
            (A, Bf16, X4) => Kernel::Sum0aBf16x4,
            (A, Bf16, X2) => Kernel::Sum0aBf16x2,
            (A, Bf16, X1) => Kernel::Sum0aBf16x1,
            (A, F16, X8) => Kernel::Sum0aF16x8,
            (A, F16, X4) => Kernel::Sum0aF16x4,
            (A, F16, X2) => Kernel::Sum0aF16x2,
            (A, F16, X1) => Kernel::Sum0aF16x1,
            (R, Bf16, X8) => Kernel::Sum0Bf16x8,
            (R, Bf16, X4) => Kernel::Sum0Bf16x4,
            (R, Bf16, X2) => Kernel::Sum0Bf16x2,
            (R, Bf16, X1) => Kernel::Sum0Bf16x1,
            (R, F16, X8) => Kernel::Sum0F16x8,
            (R, F16, X4) => Kernel::Sum0F16x4,
            (R, F16, X2) => Kernel::Sum0F16x2,
            (R, F16, X1) => Kernel::Sum0F16x1,
            (B, Bf16, X8) => Kernel::Smb0Bf16x8,
            (B, Bf16, X4) => Kernel::Smb0Bf16x4,
            (B, Bf16, X2) => Kernel::Smb0Bf16x2,
            (B, Bf16, X1) => Kernel::Smb0Bf16x1,
            (B, F16, X8) => Kernel::Smb0F16x8,
            (B, F16, X4) => Kernel::Smb0F16x4,
            (B, F16, X2) => Kernel::Smb0F16x2,
            (B, F16, X1) => Kernel::Smb0F16x1,
            (G, Bf16, X8) => Kernel::Gss0Bf16x8,
            (G, Bf16, X4) => Kernel::Gss0Bf16x4,
            (G, Bf16, X2) => Kernel::Gss0Bf16x2,
            (G, Bf16, X1) => Kernel::Gss0Bf16x1,
            (G, F16, X8) => Kernel::Gss0F16x8,
            (G, F16, X4) => Kernel::Gss0F16x4,
            (G, F16, X2) => Kernel::Gss0F16x2,
            (G, F16, X1) => Kernel::Gss0F16x1,
        }
    }

    /// The matmul kernel of `tile` for `t`.
    pub(crate) fn matmul(t: Float, tile: MatmulTile) -> Kernel {
        use Float::{Bf16, F16, F32, F64};
        use MatmulTile::{T32x32, T32x64, T64x32, T64x64};
        match (t, tile) {
            (F32, T64x64) => Kernel::Matmul64x64F32,
            (F32, T32x64) => Kernel::Matmul32x64F32,
            (F32, T64x32) => Kernel::Matmul64x32F32,
            (F32, T32x32) => Kernel::Matmul32x32F32,
            (F64, T64x64) => Kernel::Matmul64x64F64,
            (F64, T32x64) => Kernel::Matmul32x64F64,
            (F64, T64x32) => Kernel::Matmul64x32F64,
            (F64, T32x32) => Kernel::Matmul32x32F64,
            (Bf16, T64x64) => Kernel::Matmul64x64Bf16,
            (Bf16, T32x64) => Kernel::Matmul32x64Bf16,
            (Bf16, T64x32) => Kernel::Matmul64x32Bf16,
            (Bf16, T32x32) => Kernel::Matmul32x32Bf16,
            (F16, T64x64) => Kernel::Matmul64x64F16,
            (F16, T32x64) => Kernel::Matmul32x64F16,
            (F16, T64x32) => Kernel::Matmul64x32F16,
            (F16, T32x32) => Kernel::Matmul32x32F16,
        }
    }

    /// The element-typed kernel `family` for `t`.
    pub(crate) fn typed(family: Typed, t: Float) -> Kernel {
        use Float::{Bf16, F16, F32, F64};
        match (family, t) {
            (Typed::Unary, F32) => Kernel::UnaryF32,
            (Typed::Unary, F64) => Kernel::UnaryF64,
            (Typed::Unary, Bf16) => Kernel::UnaryBf16,
            (Typed::Unary, F16) => Kernel::UnaryF16,
            (Typed::UnaryBwd, F32) => Kernel::UnaryBwdF32,
            (Typed::UnaryBwd, F64) => Kernel::UnaryBwdF64,
            (Typed::UnaryBwd, Bf16) => Kernel::UnaryBwdBf16,
            (Typed::UnaryBwd, F16) => Kernel::UnaryBwdF16,
            (Typed::Binary, F32) => Kernel::BinaryF32,
            (Typed::Binary, F64) => Kernel::BinaryF64,
            (Typed::Binary, Bf16) => Kernel::BinaryBf16,
            (Typed::Binary, F16) => Kernel::BinaryF16,
            (Typed::Axpy, F32) => Kernel::AxpyF32,
            (Typed::Axpy, F64) => Kernel::AxpyF64,
            (Typed::Axpy, Bf16) => Kernel::AxpyBf16,
            (Typed::Axpy, F16) => Kernel::AxpyF16,
            (Typed::GatherAdd, F32) => Kernel::GatherAddF32,
            (Typed::GatherAdd, F64) => Kernel::GatherAddF64,
            (Typed::SumBiasRelu, F32) => Kernel::SumBiasReluF32,
            (Typed::SumBiasRelu, F64) => Kernel::SumBiasReluF64,
            (Typed::SumBiasRelu, Bf16) => Kernel::SumBiasReluBf16,
            (Typed::SumBiasRelu, F16) => Kernel::SumBiasReluF16,
            (Typed::HeadScale, F32) => Kernel::HeadScaleF32,
            (Typed::HeadScale, F64) => Kernel::HeadScaleF64,
            (Typed::HeadScale, Bf16) => Kernel::HeadScaleBf16,
            (Typed::HeadScale, F16) => Kernel::HeadScaleF16,
            (Typed::HeadDot, F32) => Kernel::HeadDotF32,
            (Typed::HeadDot, F64) => Kernel::HeadDotF64,
            (Typed::GatherHeadDot, F32) => Kernel::GatherHeadDotF32,
            (Typed::GatherHeadDot, F64) => Kernel::GatherHeadDotF64,
            (Typed::ReduceRows, F32) => Kernel::ReduceRowsF32,
            (Typed::ReduceRows, F64) => Kernel::ReduceRowsF64,
            (Typed::HeadScaleRows, F32) => Kernel::HeadScaleRowsF32,
            (Typed::HeadScaleRows, F64) => Kernel::HeadScaleRowsF64,
            (Typed::MatmulDot, F32) => Kernel::MatmulDotF32,
            (Typed::MatmulDot, F64) => Kernel::MatmulDotF64,
            (Typed::Segmax0, F32) => Kernel::Segmax0F32,
            (Typed::Segmax0, F64) => Kernel::Segmax0F64,
            (Typed::Segmax, F32) => Kernel::SegmaxF32,
            (Typed::Segmax, F64) => Kernel::SegmaxF64,
            (Typed::SoftmaxExp, F32) => Kernel::SoftmaxExpF32,
            (Typed::SoftmaxExp, F64) => Kernel::SoftmaxExpF64,
            (Typed::SoftmaxDiv, F32) => Kernel::SoftmaxDivF32,
            (Typed::SoftmaxDiv, F64) => Kernel::SoftmaxDivF64,
            (Typed::SoftmaxBwd, F32) => Kernel::SoftmaxBwdF32,
            (Typed::SoftmaxBwd, F64) => Kernel::SoftmaxBwdF64,
            (Typed::GatherAdd, Bf16) => Kernel::GatherAddBf16,
            (Typed::GatherAdd, F16) => Kernel::GatherAddF16,
            (Typed::HeadDot, Bf16) => Kernel::HeadDotBf16,
            (Typed::HeadDot, F16) => Kernel::HeadDotF16,
            (Typed::GatherHeadDot, Bf16) => Kernel::GatherHeadDotBf16,
            (Typed::GatherHeadDot, F16) => Kernel::GatherHeadDotF16,
            (Typed::ReduceRows, Bf16) => Kernel::ReduceRowsBf16,
            (Typed::ReduceRows, F16) => Kernel::ReduceRowsF16,
            (Typed::HeadScaleRows, Bf16) => Kernel::HeadScaleRowsBf16,
            (Typed::HeadScaleRows, F16) => Kernel::HeadScaleRowsF16,
            (Typed::MatmulDot, Bf16) => Kernel::MatmulDotBf16,
            (Typed::MatmulDot, F16) => Kernel::MatmulDotF16,
            (Typed::Segmax0, Bf16) => Kernel::Segmax0Bf16,
            (Typed::Segmax0, F16) => Kernel::Segmax0F16,
            (Typed::Segmax, Bf16) => Kernel::SegmaxBf16,
            (Typed::Segmax, F16) => Kernel::SegmaxF16,
            (Typed::SoftmaxExp, Bf16) => Kernel::SoftmaxExpBf16,
            (Typed::SoftmaxExp, F16) => Kernel::SoftmaxExpF16,
            (Typed::SoftmaxDiv, Bf16) => Kernel::SoftmaxDivBf16,
            (Typed::SoftmaxDiv, F16) => Kernel::SoftmaxDivF16,
            (Typed::SoftmaxBwd, Bf16) => Kernel::SoftmaxBwdBf16,
            (Typed::SoftmaxBwd, F16) => Kernel::SoftmaxBwdF16,
        }
    }
}
