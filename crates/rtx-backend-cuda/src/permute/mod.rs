//! The kernel choice of `permute` (plain host code, tested without a
//! device): which kernel of kernels/permute.cu moves a transpose or an N-D
//! permute planned by rtx-tensor, with the parameter structs it takes,
//! `#[repr(C)]` exactly as `SpanParams` / `TileParams` / `FastDiv` in
//! kernels/permute.cu.
//!
//! * [`Choice::Span`] `Planes`: batches of small matrices (a plane fits the
//!   shared span): a block moves whole planes, one contiguous span in and out;
//! * `Rows`: at most 64 columns: a tile is whole rows (a contiguous input span);
//! * `Cols`: at most 64 rows: a tile is whole columns (a contiguous output span);
//! * [`Choice::Tiled`]: anything larger, and N-D permutes whose last dim moves
//!   (the inner pair tiled, the other dims a strided batch); on sm_90+ a
//!   64x64 choice of 4- or 2-byte elements moves through Hopper's bulk
//!   tensor copies (2-byte ones in 128x128 tiles) when the tensor maps can
//!   describe the matrices ([`bulk`]);
//! * 2-byte elements (bf16, f16) take the `_p2` kernels of
//!   kernels/permute_2byte.cu ([`Choice::SpanPairs`], [`Choice::TiledPairs`]),
//!   which move 4-byte element pairs, when every row is whole words in the
//!   input and the output (even sides and row strides), with the parameters
//!   of the `_b2` kernel, which the host takes instead for tensors not
//!   4-byte aligned ([`Choice::unpaired`]); the 64x64, 128x32 and 32x128
//!   pair tiles move 8-byte units of 4 halves instead when sides and strides
//!   are multiples of 4 and both tensors 8-byte aligned (the kernel decides:
//!   `quads_fit` of kernels/permute_2byte.cu);
//! * [`lines`]: permutes of 2-byte elements that keep the last dim (and
//!   batched transposes of runs), runs of 16-byte vectors shorter than a
//!   128-byte line: `permute_lines_b16` of kernels/permute_2byte.cu, copy_rows'
//!   lanes over a blocked walk that reads and writes whole lines;
//! * [`Choice::Fallback`]: the copy_rows kernels with 64-bit decodes, when a
//!   count does not fit the 32-bit index math (dims or tiles past 2^31) or
//!   the elements are runs of another size.

use crate::kernels::abi::{MAX_RANK, PERMUTE_SPAN_BYTES};
use crate::kernels::table::{Family, Kernel, SpanKind, Tile, Word};

/// Counts the kernels' 32-bit index math takes: below 2^31.
const LIMIT: u64 = 1 << 31;

/// Widest side of a `Rows` / `Cols` tile's narrow dim.
pub(crate) const NARROW: u64 = 64;

/// Division by `d` of `n < 2^31` as the kernels do it: `(n * m) >> s`.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct FastDiv {
    pub d: u32,
    pub m: u32,
    pub s: u32,
    pad: u32,
}

impl FastDiv {
    /// The divisor `d` (`1 <= d < 2^31`): `s = 31 + ceil(log2 d)`,
    /// `m = ceil(2^s / d)`, which is below 2^32.
    pub(crate) fn new(d: u64) -> FastDiv {
        assert!((1..LIMIT).contains(&d), "FastDiv of {d}");
        let l = 64 - (d - 1).leading_zeros();
        let s = 31 + l;
        let m = (1u64 << s).div_ceil(d);
        FastDiv {
            d: d as u32,
            m: u32::try_from(m).expect("m < 2^32"),
            s,
            pad: 0,
        }
    }

    /// `n / d` for `n < 2^31`, as the kernels compute it (the host model of
    /// the tests).
    #[cfg(test)]
    pub(crate) fn div(self, n: u32) -> u32 {
        ((u64::from(n) * u64::from(self.m)) >> self.s) as u32
    }
}

/// `SpanParams` of kernels/permute.cu.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct SpanParams {
    pub batch: u64,
    pub tiles: u64,
    pub rows: u32,
    pub cols: u32,
    /// Planes per tile (`Planes`), log2 of the rows / columns per tile.
    pub per: u32,
    pad: u32,
    pub plane_d: FastDiv,
    pub rows_d: FastDiv,
    pub tiles_d: FastDiv,
}

/// `TileParams` of kernels/permute.cu.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct TileParams {
    pub in_rs: u64,
    pub out_rs: u64,
    pub bin: [u64; MAX_RANK],
    pub bout: [u64; MAX_RANK],
    pub bdim: [FastDiv; MAX_RANK],
    pub tc_n: FastDiv,
    pub tr_n: FastDiv,
    pub rows: u32,
    pub cols: u32,
    pub tiles: u32,
    pub rank: u32,
}

/// The kernel for one transpose or permute.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Choice {
    /// `transpose_{planes,rows,cols}_b*`.
    Span(SpanKind, Word, SpanParams),
    /// `transpose_{planes,rows,cols}_p2`: 2-byte elements moved as pairs
    /// (the parameters of the `_b2` kernel).
    SpanPairs(SpanKind, SpanParams),
    /// `transpose{TR}x{TC}_b*`.
    Tiled(Word, Tile, Box<TileParams>),
    /// `transpose{TR}x{TC}_p2`: 2-byte elements moved as pairs (the
    /// parameters of the `_b2` kernel).
    TiledPairs(Tile, Box<TileParams>),
    /// `transpose_runs_b*` / `permute_b*`.
    Fallback,
}

impl Choice {
    /// The same move by the `_b2` kernel (same parameters) for a pair
    /// choice, whose kernels need 4-byte aligned tensors; any other choice
    /// unchanged.
    pub(crate) fn unpaired(self) -> Choice {
        match self {
            Choice::SpanPairs(kind, p) => Choice::Span(kind, Word::B2, p),
            Choice::TiledPairs(tile, p) => Choice::Tiled(Word::B2, tile, p),
            c => c,
        }
    }

    /// The element word, tile and parameters of a tiled choice (a pair
    /// kernel's elements are 2-byte: `B2`); `None` for any other.
    pub(crate) fn tiled(&self) -> Option<(Word, Tile, &TileParams)> {
        match self {
            Choice::Tiled(elem, tile, p) => Some((*elem, *tile, p)),
            Choice::TiledPairs(tile, p) => Some((Word::B2, *tile, p)),
            _ => None,
        }
    }

    /// The kernel of a span or tiled choice (a 64x64 tile of 4- or 2-byte
    /// elements may instead take a bulk-copy kernel at launch: [`bulk`]);
    /// `None` for the fallback, whose copy_rows kernel depends on the run.
    pub(crate) fn kernel(&self) -> Option<Kernel> {
        match self {
            Choice::Span(kind, w, _) => Some(Kernel::of(Family::TransposeSpan(*kind, *w))),
            Choice::SpanPairs(kind, _) => Some(Kernel::of(Family::TransposeSpanPairs(*kind))),
            Choice::Tiled(w, tile, _) => Some(Kernel::of(Family::Transpose(*w, *tile))),
            Choice::TiledPairs(tile, _) => Some(Kernel::of(Family::TransposePairs(*tile))),
            Choice::Fallback => None,
        }
    }
}

/// Elements of `elem` in the shared span.
fn span_elems(elem: Word) -> u64 {
    PERMUTE_SPAN_BYTES / elem.bytes()
}

/// The largest power of two at most `x` (`x >= 1`), as its log2.
fn log2_floor(x: u64) -> u32 {
    63 - x.leading_zeros()
}

/// The kernel for `[batch, rows, cols]` -> `[batch, cols, rows]` of elements
/// of `elem_bytes` bytes (`force32`: the classic 32x32 tile for every shape).
pub(crate) fn transpose(
    batch: u64,
    rows: u64,
    cols: u64,
    elem_bytes: u64,
    force32: bool,
) -> Choice {
    let Some(elem) = Word::exact(elem_bytes) else {
        return Choice::Fallback;
    };
    if rows >= LIMIT || cols >= LIMIT || batch == 0 || rows == 0 || cols == 0 {
        return Choice::Fallback;
    }
    if !force32
        && elem != Word::B16
        && let Some(c) = span(batch, rows, cols, elem)
    {
        return c;
    }
    let bdim = [(batch, rows * cols, rows * cols)];
    tiled(elem, rows, cols, cols, rows, &bdim, force32)
}

/// The span kernel for a transpose, if one fits it.
fn span(batch: u64, rows: u64, cols: u64, elem: Word) -> Option<Choice> {
    let cap = span_elems(elem);
    let plane = rows * cols;
    let p = |tiles: u64, per: u64, tiles_d: u64| SpanParams {
        batch,
        tiles,
        rows: rows as u32,
        cols: cols as u32,
        per: per as u32,
        pad: 0,
        plane_d: FastDiv::new(plane.min(LIMIT - 1)),
        rows_d: FastDiv::new(rows),
        tiles_d: FastDiv::new(tiles_d),
    };
    let (kind, params) = if plane <= cap {
        let k = cap / plane;
        (SpanKind::Planes, p(batch.div_ceil(k), k, 1))
    } else if cols <= NARROW {
        let per = log2_floor(cap / cols);
        let tpp = rows.div_ceil(1 << per);
        (
            SpanKind::Rows,
            p(batch.checked_mul(tpp)?, u64::from(per), tpp),
        )
    } else if rows <= NARROW {
        let per = log2_floor(cap / rows);
        let tpp = cols.div_ceil(1 << per);
        (
            SpanKind::Cols,
            p(batch.checked_mul(tpp)?, u64::from(per), tpp),
        )
    } else {
        return None;
    };
    if params.tiles >= LIMIT || u64::from(params.tiles_d.d) >= LIMIT {
        return None;
    }
    // pairs: every input row and output row (a column) whole words
    let pairs = elem == Word::B2 && rows.is_multiple_of(2) && cols.is_multiple_of(2);
    Some(if pairs {
        Choice::SpanPairs(kind, params)
    } else {
        Choice::Span(kind, elem, params)
    })
}

/// The tiled kernel over `bdim` (size, input stride, output stride; last
/// fastest) matrices of `rows x cols`.
fn tiled(
    elem: Word,
    rows: u64,
    cols: u64,
    in_rs: u64,
    out_rs: u64,
    bdim: &[(u64, u64, u64)],
    force32: bool,
) -> Choice {
    let tile = Tile::pick(rows, cols, elem, force32);
    let (tr, tc) = tile.dims();
    let Some((tr_n, tc_n, tiles)) = tile_count(rows, cols, (tr, tc), bdim.iter().map(|b| b.0))
    else {
        return Choice::Fallback;
    };
    if bdim.len() > MAX_RANK || rows >= LIMIT || cols >= LIMIT {
        return Choice::Fallback;
    }
    let mut p = TileParams {
        in_rs,
        out_rs,
        bin: [0; MAX_RANK],
        bout: [0; MAX_RANK],
        bdim: [FastDiv::new(1); MAX_RANK],
        tc_n: FastDiv::new(tc_n),
        tr_n: FastDiv::new(tr_n),
        rows: rows as u32,
        cols: cols as u32,
        tiles: tiles as u32,
        rank: bdim.len() as u32,
    };
    for (k, &(d, i, o)) in bdim.iter().enumerate() {
        p.bdim[k] = FastDiv::new(d);
        p.bin[k] = i;
        p.bout[k] = o;
    }
    // pairs: every row of the input and of the output starts on a word and
    // is whole words (odd rows or columns make an odd stride anyway)
    let even = |s: u64| s.is_multiple_of(2);
    let pairs = elem == Word::B2
        && even(rows)
        && even(cols)
        && even(in_rs)
        && even(out_rs)
        && bdim.iter().all(|&(d, i, o)| d == 1 || (even(i) && even(o)));
    if pairs {
        Choice::TiledPairs(tile, Box::new(p))
    } else {
        Choice::Tiled(elem, tile, Box::new(p))
    }
}

/// Most batch dims of the bulk-copy kernel: its tensor maps have at most 5
/// dims, the matrix's two and these.
pub(crate) const BULK_MAX_BATCH: usize = 3;

/// One tensor map of the bulk-copy kernel: `dims` innermost first, the byte
/// `strides` of dims 1.. (dim 0 is contiguous), the box of one tile.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct MapShape {
    pub dims: Vec<u64>,
    pub strides: Vec<u64>,
    pub boxd: [u32; 2],
}

/// The bulk-copy kernel's tensor maps of a tiled choice (whose
/// `TileParams` it takes unchanged). The input map is (cols, rows, batch
/// dims innermost first) with box (TC, TR); the output map (rows, cols,
/// batch dims) with box (TR, TC).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Bulk {
    /// The elements' size (`B4` or `B2`): the maps' data type and kernel.
    pub elem: Word,
    /// The kernel's tile (rows, columns).
    pub tile: [u32; 2],
    /// The tiled choice's parameters over that tile.
    pub params: TileParams,
    pub input: MapShape,
    pub output: MapShape,
}

/// The tile (rows, columns) of `transpose_bulk_b2`: rows of 256 bytes in
/// and out, as the f32 kernel's 64x64 (the 64x64 choices re-tiled).
pub(crate) const BULK_B2_TILE: (u64, u64) = (128, 128);

/// Largest byte stride a tensor map takes.
const MAP_STRIDE_LIMIT: u64 = 1 << 40;

/// The bulk-copy form of the tiled choice `p` (tile `tile`) of `elem`
/// elements, when the kernels take that choice (64x64 tiles of 4- or
/// 2-byte elements: `transpose_bulk_b4` over the same tiles,
/// `transpose_bulk_b2` over [`BULK_B2_TILE`]) and its maps can
/// describe the matrices: at most [`BULK_MAX_BATCH`] batch dims and every
/// byte stride a multiple of 16 below 2^40 (the maps' rules; a stride past
/// u64 saturates and fails them). The sides may be anything (the copies
/// clip at the edges). The tensors' own addresses are checked at launch.
pub(crate) fn bulk(p: &TileParams, elem: Word, tile: Tile) -> Option<Bulk> {
    let rank = p.rank as usize;
    if !matches!(elem, Word::B4 | Word::B2) || tile != Tile::T64x64 || rank > BULK_MAX_BATCH {
        return None;
    }
    let e = elem.bytes();
    let (tr, tc) = if elem == Word::B2 {
        BULK_B2_TILE
    } else {
        tile.dims()
    };
    let p = &retile(p, tr, tc)?;
    // dims (inner, outer, batch dims innermost first), their byte strides
    let map = |inner: u32, outer: u32, rs: u64, bs: &[u64; MAX_RANK], boxd: [u32; 2]| {
        let batch = (0..rank).rev();
        MapShape {
            dims: [inner, outer]
                .map(u64::from)
                .into_iter()
                .chain(batch.clone().map(|k| u64::from(p.bdim[k].d)))
                .collect(),
            strides: std::iter::once(rs.saturating_mul(e))
                .chain(batch.map(|k| bs[k].saturating_mul(e)))
                .collect(),
            boxd,
        }
    };
    let input = map(p.cols, p.rows, p.in_rs, &p.bin, [tc as u32, tr as u32]);
    let output = map(p.rows, p.cols, p.out_rs, &p.bout, [tr as u32, tc as u32]);
    let ok = |m: &MapShape| {
        m.strides
            .iter()
            .all(|&s| s.is_multiple_of(16) && s < MAP_STRIDE_LIMIT)
    };
    (ok(&input) && ok(&output)).then_some(Bulk {
        elem,
        tile: [tr as u32, tc as u32],
        params: *p,
        input,
        output,
    })
}

/// Tiles of `tr x tc` down and across `rows x cols` matrices and in all of
/// them over the batch dims' sizes; `None` when the total is past the
/// kernels' 32-bit tile count.
fn tile_count(
    rows: u64,
    cols: u64,
    (tr, tc): (u64, u64),
    batch: impl IntoIterator<Item = u64>,
) -> Option<(u64, u64, u64)> {
    let (tr_n, tc_n) = (rows.div_ceil(tr), cols.div_ceil(tc));
    let tiles = batch
        .into_iter()
        .try_fold(tr_n * tc_n, |acc, d| acc.checked_mul(d))
        .filter(|&t| t < LIMIT)?;
    Some((tr_n, tc_n, tiles))
}

/// `p` over tiles of `tr x tc` (the same matrices); `None` past the
/// kernels' 32-bit tile count.
fn retile(p: &TileParams, tr: u64, tc: u64) -> Option<TileParams> {
    let batch = p.bdim[..p.rank as usize].iter().map(|d| u64::from(d.d));
    let (tr_n, tc_n, tiles) = tile_count(p.rows.into(), p.cols.into(), (tr, tc), batch)?;
    Some(TileParams {
        tc_n: FastDiv::new(tc_n),
        tr_n: FastDiv::new(tr_n),
        tiles: tiles as u32,
        ..*p
    })
}

/// The element strides of contiguous `shape` (input dims) and of its
/// permutation by `perm` (output dims), last fastest. Every product is a
/// count of elements of the tensor being permuted.
fn strides(shape: &[u64], perm: &[usize]) -> (Vec<u64>, Vec<u64>) {
    let n = shape.len();
    let mut s_in = vec![1u64; n];
    let mut s_out = vec![1u64; n];
    for d in (0..n.saturating_sub(1)).rev() {
        s_in[d] = s_in[d + 1] * shape[d + 1];
        s_out[d] = s_out[d + 1] * shape[perm[d + 1]];
    }
    (s_in, s_out)
}

/// The kernel for permuting contiguous `shape` by `perm` (rtx-tensor's
/// simplified `Permute`): the tiled inner pair when the last dim moves and
/// the elements are 2, 4 or 8 bytes, else [`Choice::Fallback`].
pub(crate) fn permute(shape: &[usize], perm: &[usize], elem_bytes: u64, force32: bool) -> Choice {
    let n = shape.len();
    let elem = match Word::exact(elem_bytes) {
        Some(w @ (Word::B2 | Word::B4 | Word::B8)) => w,
        _ => return Choice::Fallback,
    };
    if !(2..=MAX_RANK + 2).contains(&n) || perm[n - 1] == n - 1 {
        return Choice::Fallback;
    }
    let shape: Vec<u64> = shape.iter().map(|&s| s as u64).collect();
    if shape.iter().any(|&s| s == 0 || s >= LIMIT) {
        return Choice::Fallback;
    }
    let (s_in, s_out) = strides(&shape, perm);
    let (a, b) = (n - 1, perm[n - 1]);
    let out_of_a = perm.iter().position(|&p| p == a).expect("a permutation");
    let bdim: Vec<(u64, u64, u64)> = (0..n)
        .filter(|&i| perm[i] != a && perm[i] != b)
        .map(|i| (shape[perm[i]], s_in[perm[i]], s_out[i]))
        .collect();
    tiled(
        elem,
        shape[b],
        shape[a],
        s_in[b],
        s_out[out_of_a],
        &bdim,
        force32,
    )
}

/// Dims of [`LinesParams`]: a run permute's up to `MAX_RANK - 1` and the
/// two lo parts of [`lines`]' walk.
pub(crate) const LINES_RANK: usize = MAX_RANK + 2;

/// `LinesParams` of kernels/permute_2byte.cu: the walk of `permute_lines_b16`,
/// `rank` dims (last fastest) with the input and the output stride (in
/// runs) of each.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct LinesParams {
    pub in_strides: [u64; LINES_RANK],
    pub out_strides: [u64; LINES_RANK],
    pub dims: [FastDiv; LINES_RANK],
    pub rank: u32,
    pad: [u32; 3],
}

/// A permute that `permute_lines_b16` moves: its walk, the runs, and the
/// 16-byte vectors per run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Lines {
    pub params: LinesParams,
    pub nruns: u64,
    pub w: u64,
}

/// The blocked walk of `permute_lines_b16` (kernels/permute_2byte.cu) for
/// contiguous `shape` by `perm` (rtx-tensor's simplified `Permute`) that
/// keeps the last dim, for 2-byte elements whose runs (the last dim) are
/// 16-byte vectors shorter than a 128-byte line; `None` otherwise (the
/// copy_rows `permute_b*` kernel moves it). f32 and f64 never take it.
///
/// The runs are walked over the output's run dims with two of them split
/// as (hi, lo), lo of `g` runs (`g * run >= 128` bytes, a power of two):
/// K, the input dim of stride one run, and the output's last dim; the lo
/// parts go last (fastest), the output's last dim's innermost. So `g * g`
/// consecutive runs of the walk are `g` whole runs of K (contiguous input)
/// for each of `g` runs of the output's last dim (contiguous output), and
/// a warp of copy_rows' lanes reads and writes whole 128-byte lines, where
/// consecutive output runs alone read a line in parts far apart in time.
/// Both split dims must be multiples of `g`, every count below 2^31.
pub(crate) fn lines(shape: &[usize], perm: &[usize], elem_bytes: u64) -> Option<Lines> {
    let n = shape.len();
    if elem_bytes != 2 || !(3..=MAX_RANK).contains(&n) || perm[n - 1] != n - 1 {
        return None;
    }
    let shape: Vec<u64> = shape.iter().map(|&s| s as u64).collect();
    let run_bytes = shape[n - 1] * elem_bytes;
    if run_bytes == 0 || !run_bytes.is_multiple_of(16) || run_bytes >= 128 {
        return None;
    }
    let g = 128u64.div_ceil(run_bytes).next_power_of_two();
    let m = n - 1;
    let nruns = shape[..m]
        .iter()
        .try_fold(1u64, |a, &d| a.checked_mul(d))
        .filter(|&r| (1..LIMIT).contains(&r))?;
    // the runs' dims (the last dim kept, perm[..m] a permutation of 0..m)
    let (s_in, s_out) = strides(&shape[..m], &perm[..m]);
    let od: Vec<u64> = (0..m).map(|i| shape[perm[i]]).collect();
    let (k, last) = (perm.iter().position(|&p| p == m - 1)?, m - 1);
    if k == last || !od[k].is_multiple_of(g) || !od[last].is_multiple_of(g) {
        return None;
    }
    // (size, input stride, output stride) of the walk's dims, last fastest
    let mut walk: Vec<(u64, u64, u64)> = (0..m)
        .map(|i| {
            let (d, si, so) = (od[i], s_in[perm[i]], s_out[i]);
            if i == k || i == last {
                (d / g, si * g, so * g)
            } else {
                (d, si, so)
            }
        })
        .collect();
    walk.push((g, s_in[perm[k]], s_out[k]));
    walk.push((g, s_in[perm[last]], s_out[last]));
    let mut params = LinesParams {
        in_strides: [0; LINES_RANK],
        out_strides: [0; LINES_RANK],
        dims: [FastDiv::new(1); LINES_RANK],
        rank: walk.len() as u32,
        pad: [0; 3],
    };
    for (j, &(d, si, so)) in walk.iter().enumerate() {
        params.dims[j] = FastDiv::new(d);
        params.in_strides[j] = si;
        params.out_strides[j] = so;
    }
    Some(Lines {
        params,
        nruns,
        w: run_bytes / 16,
    })
}

#[cfg(test)]
mod tests;

#[cfg(test)]
mod pairs_tests;

#[cfg(test)]
mod lines_tests;
