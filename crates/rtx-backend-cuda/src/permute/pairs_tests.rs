//! The 2-byte pair kernels of kernels/permute_2byte.cu: which shapes take them
//! (even sides and strides) and which the `_b2` kernels, the `_b2` twin for
//! unaligned tensors, host models of each pair kernel (thread by thread as
//! the CUDA code indexes, words only at even element offsets) against
//! rtx-tensor's host permute, and the GPU test shapes of tests/half.rs
//! reaching every 2-byte kernel (the lines walk: `permute_lines_tests.rs`).

use super::lines_tests::half_lines;
use super::tests::{all_written, choice_of, put, tile_at};
use super::*;

#[test]
fn half_shapes_take_the_pair_kernels_when_rows_are_whole_words() {
    let span = |c: Choice| match c {
        Choice::Span(k, w, _) => Some((k, Some(w))),
        Choice::SpanPairs(k, _) => Some((k, None)),
        _ => None,
    };
    // the bf16 permute suite: even sides and strides move pairs
    assert!(matches!(
        transpose(1, 8192, 8192, 2, false),
        Choice::TiledPairs(Tile::T64x64, _)
    ));
    assert!(matches!(
        transpose(64, 1024, 1024, 2, false),
        Choice::TiledPairs(Tile::T64x64, _)
    ));
    assert!(matches!(
        transpose(1, 8192, 8192, 2, true),
        Choice::TiledPairs(Tile::T32x32, _)
    ));
    // odd sides keep the `_b2` 64x64 tile however large
    assert!(matches!(
        transpose(1, 8191, 8192, 2, false),
        Choice::Tiled(Word::B2, Tile::T64x64, _)
    ));
    assert!(matches!(
        transpose(64, 1024, 1024, 2, true),
        Choice::TiledPairs(Tile::T32x32, _)
    ));
    assert!(matches!(
        permute(&[64, 128, 256, 32], &[0, 3, 2, 1], 2, false),
        Choice::TiledPairs(Tile::T128x32, _)
    ));
    assert!(matches!(
        permute(&[64, 32, 256, 128], &[0, 3, 2, 1], 2, false),
        Choice::TiledPairs(Tile::T32x128, _)
    ));
    let planes = Some((SpanKind::Planes, None));
    assert_eq!(span(transpose(1_000_000, 8, 8, 2, false)), planes);
    assert_eq!(span(transpose(2_000_000, 4, 16, 2, false)), planes);
    assert_eq!(
        span(transpose(1, 32, 4_211_136, 2, false)),
        Some((SpanKind::Cols, None))
    );
    assert_eq!(
        span(transpose(1, 4_211_136, 32, 2, false)),
        Some((SpanKind::Rows, None))
    );
    // odd sides or strides: the `_b2` kernels
    let b2 = |k| Some((k, Some(Word::B2)));
    assert_eq!(
        span(transpose(70_000, 3, 5, 2, false)),
        b2(SpanKind::Planes)
    );
    assert_eq!(span(transpose(500, 3, 4, 2, false)), b2(SpanKind::Planes));
    assert_eq!(span(transpose(500, 4, 3, 2, false)), b2(SpanKind::Planes));
    assert_eq!(span(transpose(2, 40, 1001, 2, false)), b2(SpanKind::Cols));
    assert_eq!(span(transpose(2, 41, 1000, 2, false)), b2(SpanKind::Cols));
    assert_eq!(span(transpose(3, 1001, 40, 2, false)), b2(SpanKind::Rows));
    assert_eq!(span(transpose(3, 1000, 41, 2, false)), b2(SpanKind::Rows));
    assert!(matches!(
        transpose(1, 513, 700, 2, false),
        Choice::Tiled(Word::B2, Tile::T64x64, _)
    ));
    assert!(matches!(
        transpose(1, 512, 701, 2, false),
        Choice::Tiled(Word::B2, _, _)
    ));
    // a batch stride of 3 * 5 * 7 elements: odd
    assert!(matches!(
        permute(&[2, 3, 5, 7], &[0, 3, 2, 1], 2, false),
        Choice::Tiled(Word::B2, _, _)
    ));
    // odd columns (the input's last dim) or rows (the output's) never pair:
    // the dim before them has an odd stride
    assert!(matches!(
        permute(&[3, 6, 4, 7], &[0, 3, 2, 1], 2, false),
        Choice::Tiled(Word::B2, _, _)
    ));
    assert!(matches!(
        permute(&[3, 5, 4, 8], &[0, 3, 2, 1], 2, false),
        Choice::Tiled(Word::B2, _, _)
    ));
    assert!(matches!(
        permute(&[3, 6, 4, 8], &[0, 3, 2, 1], 2, false),
        Choice::TiledPairs(..)
    ));
    // other element sizes never pair
    for bytes in [4, 8] {
        assert!(matches!(
            transpose(1, 8192, 8192, bytes, false),
            Choice::Tiled(_, Tile::T64x64, _)
        ));
        assert!(matches!(
            transpose(64, 1024, 1024, bytes, false),
            Choice::Tiled(_, Tile::T64x64, _)
        ));
        assert!(matches!(
            transpose(1_000_000, 8, 8, bytes, false),
            Choice::Span(..)
        ));
    }
    // unaligned tensors: the `_b2` kernel with the same parameters
    let c = transpose(1_000_000, 8, 8, 2, false);
    let Choice::SpanPairs(_, p) = c.clone() else {
        unreachable!()
    };
    assert_eq!(c.unpaired(), Choice::Span(SpanKind::Planes, Word::B2, p));
    let c = transpose(1, 8192, 8192, 2, false);
    let Choice::TiledPairs(tile, p) = c.clone() else {
        unreachable!()
    };
    assert_eq!(c.unpaired(), Choice::Tiled(Word::B2, tile, p));
    assert_eq!(Choice::Fallback.unpaired(), Choice::Fallback);
}

/// Shared-memory words of the pair kernels' span (`RTX_SPAN(u32)` plus its
/// padding).
const SPAN_WORDS: u64 = PERMUTE_SPAN_BYTES / 4 * 33 / 32;

/// The input word at element `at` (even: the kernels' words are aligned).
fn word(input: &[u16], at: u64) -> u32 {
    assert!(at.is_multiple_of(2), "unaligned word at element {at}");
    let at = at as usize;
    u32::from(input[at]) | u32::from(input[at + 1]) << 16
}

/// pair_of of kernels/permute_2byte.cu: the low halves of `a` and `b` for even
/// `c`, the high halves for odd.
fn pair_of(a: u32, b: u32, c: u64) -> u32 {
    if c.is_multiple_of(2) {
        (a & 0xffff) | (b << 16)
    } else {
        (a >> 16) | (b & 0xffff_0000)
    }
}

/// Tile `t` as the tiled pair kernels place it: its first row and column,
/// the input and output offsets of its corner, and whether it lies wholly
/// inside the matrix.
struct Frame {
    r0: u64,
    c0: u64,
    ioff: u64,
    ooff: u64,
    full: bool,
}

fn frame(p: &TileParams, tile: Tile, t: u32) -> Frame {
    let (tr, tc) = tile.dims();
    let (trow, tcol, x) = tile_at(p, t);
    let (r0, c0) = (trow * tr, tcol * tc);
    let bi: u64 = x.iter().zip(&p.bin).map(|(x, s)| x * s).sum();
    let bo: u64 = x.iter().zip(&p.bout).map(|(x, s)| x * s).sum();
    Frame {
        r0,
        c0,
        ioff: bi + r0 * p.in_rs + c0,
        ooff: bo + c0 * p.out_rs + r0,
        full: r0 + tr <= u64::from(p.rows) && c0 + tc <= u64::from(p.cols),
    }
}

/// `transpose{TR}x{TC}_p2` run on the host, thread by thread as
/// kernels/permute_2byte.cu's `load_pairs` and `transpose_pairs` do it: words
/// read and written at even element offsets only, every output element
/// written once.
fn run_tiled_pairs(p: &TileParams, tile: Tile, input: &[u16]) -> Vec<u16> {
    let (tr, tc) = tile.dims();
    let (tw, s) = (tc / 2, tc + 2);
    let (rows, cols) = (u64::from(p.rows), u64::from(p.cols));
    let mut out = vec![None; input.len()];
    for t in 0..p.tiles {
        let Frame {
            r0,
            c0,
            ioff,
            ooff,
            full,
        } = frame(p, tile, t);
        let mut sh = vec![0xDEAD_BEEFu32; (tr / 2 * s) as usize];
        for l in 0..tr * tw {
            let (k, w) = (2 * ((l >> 1) / tw) + (l & 1), (l >> 1) % tw);
            let at = ioff + k * p.in_rs + 2 * w;
            if !(full || (r0 + k < rows && c0 + 2 * w < cols)) {
                continue;
            }
            let v = word(input, at);
            sh[(((l >> 1) / tw) * s + 2 * ((l >> 1) % tw) + (l & 1)) as usize] = v;
        }
        for l in 0..tr / 2 * tw {
            let (m, j) = (l % (tr / 2), l / (tr / 2));
            let at = (m * s + 2 * j) as usize;
            assert!(at.is_multiple_of(2), "unaligned 8-byte shared read");
            let (a, b) = (sh[at], sh[at + 1]);
            for h in 0..2 {
                let c = 2 * j + h;
                let w = pair_of(a, b, c);
                let dst = ooff + c * p.out_rs + 2 * m;
                if full || (c0 + c < cols && r0 + 2 * m < rows) {
                    assert!(dst.is_multiple_of(2), "unaligned word store at {dst}");
                    put(&mut out, dst, w as u16);
                    put(&mut out, dst + 1, (w >> 16) as u16);
                }
            }
        }
    }
    all_written(out)
}

/// kernels/permute_2byte.cu's `quads_fit` for aligned tensors and a tile of
/// 64 x 64 elements or more: rows, columns, row strides and every batch
/// stride multiples of 4.
fn quads_fit(p: &TileParams, tile: Tile) -> bool {
    let (tr, tc) = tile.dims();
    let four = |s: u64| s.is_multiple_of(4);
    tr * tc >= 4096
        && four(p.rows.into())
        && four(p.cols.into())
        && four(p.in_rs)
        && four(p.out_rs)
        && (0..p.rank as usize).all(|k| p.bdim[k].d == 1 || (four(p.bin[k]) && four(p.bout[k])))
}

/// The 8-byte unit of 4 halves at element `at` (a multiple of 4).
fn unit(input: &[u16], at: u64) -> [u16; 4] {
    assert!(at.is_multiple_of(4), "unaligned unit at element {at}");
    let at = at as usize;
    [input[at], input[at + 1], input[at + 2], input[at + 3]]
}

/// The quad path of `transpose{TR}x{TC}_p2` run on the host, thread by
/// thread as kernels/permute_2byte.cu's `load_quads` and `transpose_quads` do
/// it: 8-byte units read and written at element offsets that are multiples
/// of 4, the shared 4 x 4 blocks at word q * QS + 8u (rows in order), 16-byte
/// shared reads aligned, every output element written once.
fn run_tiled_quads(p: &TileParams, tile: Tile, input: &[u16]) -> Vec<u16> {
    let (tr, tc) = tile.dims();
    let uw = tc / 4;
    let qs = 8 * uw + 4;
    assert_eq!(
        tr / 4 * qs,
        tr / 2 * (tc + 2),
        "the pair tile's shared words"
    );
    let (rows, cols) = (u64::from(p.rows), u64::from(p.cols));
    let mut out = vec![None; input.len()];
    for t in 0..p.tiles {
        let Frame {
            r0,
            c0,
            ioff,
            ooff,
            full,
        } = frame(p, tile, t);
        // shared words as halves: word w is halves 2w, 2w + 1
        let mut sh = vec![0xDEADu16; (2 * tr / 4 * qs) as usize];
        for l in 0..tr * uw {
            let (k, u) = (4 * ((l >> 2) / uw) + (l & 3), (l >> 2) % uw);
            if !(full || (r0 + k < rows && c0 + 4 * u < cols)) {
                continue;
            }
            let v = unit(input, ioff + k * p.in_rs + 4 * u);
            let w = ((l >> 2) / uw) * qs + 8 * u + 2 * (l & 3);
            assert!(w.is_multiple_of(2), "unaligned 8-byte shared store");
            sh[2 * w as usize..2 * w as usize + 4].copy_from_slice(&v);
        }
        for m in 0..tr / 4 * uw {
            let (q, u) = (m % (tr / 4), m / (tr / 4));
            let w = q * qs + 8 * u;
            assert!(w.is_multiple_of(4), "unaligned 16-byte shared read");
            // block row i, column x at half 4i + x of the block's 32 bytes
            let blk = &sh[2 * w as usize..2 * w as usize + 16];
            if full || (c0 + 4 * u < cols && r0 + 4 * q < rows) {
                for x in 0..4 {
                    let dst = ooff + (4 * u + x) * p.out_rs + 4 * q;
                    assert!(dst.is_multiple_of(4), "unaligned unit store at {dst}");
                    for i in 0..4 {
                        put(&mut out, dst + i, blk[(4 * i + x) as usize]);
                    }
                }
            }
        }
    }
    all_written(out)
}

#[test]
fn tiled_quads_match_the_host_permute() {
    let cases: [(&[usize], &[usize]); 8] = [
        (&[132, 200], &[1, 0]),
        (&[516, 700], &[1, 0]),
        (&[3, 100, 132], &[0, 2, 1]),
        (&[2, 72, 300], &[0, 2, 1]),
        (&[4, 132, 6, 36], &[0, 3, 2, 1]),
        (&[4, 36, 6, 132], &[0, 3, 2, 1]),
        (&[36, 100, 300], &[2, 1, 0]),
        (&[2, 3, 4, 4, 8], &[4, 0, 3, 1, 2]),
    ];
    for (shape, perm) in cases {
        let n: usize = shape.iter().product();
        let input: Vec<u16> = (0..n).map(|i| (i * 7 + 1) as u16).collect();
        let want = rtx_tensor::permute_host(&input, shape, perm).unwrap();
        let choice = if shape.len() == 2 {
            transpose(1, shape[0] as u64, shape[1] as u64, 2, false)
        } else {
            permute(shape, perm, 2, false)
        };
        let Choice::TiledPairs(tile, p) = choice else {
            panic!("{shape:?} {perm:?}: not tiled pairs: {choice:?}")
        };
        assert!(quads_fit(&p, tile), "{shape:?} {perm:?} {tile:?}: no quads");
        assert_eq!(
            run_tiled_quads(&p, tile, &input),
            want,
            "{shape:?} {perm:?} {tile:?}"
        );
    }
    // rows of 2 mod 4 halves: pairs
    let Choice::TiledPairs(tile, p) = transpose(1, 514, 700, 2, false) else {
        unreachable!()
    };
    assert!(!quads_fit(&p, tile));
}

#[test]
fn tiled_pairs_match_the_host_permute() {
    let cases: [(&[usize], &[usize]); 10] = [
        (&[130, 200], &[1, 0]),
        (&[96, 130], &[1, 0]),
        (&[3, 100, 130], &[0, 2, 1]),
        (&[2, 70, 300], &[0, 2, 1]),
        (&[2, 300, 70], &[0, 2, 1]),
        (&[4, 6, 5, 4], &[0, 3, 2, 1]),
        (&[3, 6, 4, 8], &[0, 3, 2, 1]),
        (&[6, 34, 3, 42], &[0, 3, 2, 1]),
        (&[2, 3, 4, 5, 6], &[4, 0, 3, 1, 2]),
        (&[4, 130, 2, 34], &[3, 1, 2, 0]),
    ];
    for (shape, perm) in cases {
        let n: usize = shape.iter().product();
        let input: Vec<u16> = (0..n).map(|i| (i * 7 + 1) as u16).collect();
        let want = rtx_tensor::permute_host(&input, shape, perm).unwrap();
        for force in [false, true] {
            let choice = if shape.len() == 3 && perm == [0, 2, 1] {
                transpose(shape[0] as u64, shape[1] as u64, shape[2] as u64, 2, force)
            } else if shape.len() == 2 {
                transpose(1, shape[0] as u64, shape[1] as u64, 2, force)
            } else {
                permute(shape, perm, 2, force)
            };
            let Choice::TiledPairs(tile, p) = choice else {
                panic!("{shape:?} {perm:?}: not tiled pairs: {choice:?}")
            };
            assert_eq!(
                run_tiled_pairs(&p, tile, &input),
                want,
                "{shape:?} {perm:?} {tile:?}"
            );
        }
    }
}

/// `transpose_planes_p2` run on the host: the span of whole planes read as
/// words into the padded shared span (a pad word per 4 for planes of at
/// most 64 words, else per 32), each output word made from the two input
/// words `PlanesPairs` of kernels/permute_2byte.cu picks; stored as
/// `store_words` does with `head` single words first (the output's
/// alignment), then vectors of 4 words whose positions `words4` steps from
/// the first one's, then the tail.
fn run_planes_pairs(q: &SpanParams, input: &[u16], head: u64) -> Vec<u16> {
    let (r, c) = (u64::from(q.rows), u64::from(q.cols));
    let plane = r * c;
    let per = u64::from(q.per);
    let mut out = vec![None; input.len()];
    for s in 0..q.tiles {
        let p0 = s * per;
        let n = (q.batch - p0).min(per) * plane / 2;
        let ps = if plane <= 128 { 2 } else { 5 };
        let at = |w: u64| (w + (w >> ps)) as usize;
        assert!(n <= PERMUTE_SPAN_BYTES / 4, "span of {n} words");
        let mut buf = vec![None; (PERMUTE_SPAN_BYTES / 4 * 5 / 4) as usize];
        for k in 0..n {
            assert_eq!(buf[at(k)], None, "shared word {} twice", at(k));
            buf[at(k)] = Some(word(input, p0 * plane + 2 * k));
        }
        // store_words: `head` single words, 16-byte vectors of 4 words
        // (`words4`: the position divided out once, then stepped), the tail
        let word_at = |p: u32, row: u32, col: u32| {
            assert!(row.is_multiple_of(2) && row < q.rows && col < q.cols);
            let w = (u64::from(p) * plane + u64::from(row) * c + u64::from(col)) / 2;
            pair_of(buf[at(w)].unwrap(), buf[at(w + c / 2)].unwrap(), col.into())
        };
        let pos = |o: u64| {
            let e = (2 * o) as u32;
            let p = q.plane_d.div(e);
            let rem = e - p * q.plane_d.d;
            let col = q.rows_d.div(rem);
            (p, col, rem - col * q.rows)
        };
        let h = head.min(n);
        let nv = (n - h) / 4;
        let mut o = 0;
        while o < n {
            let len = if o >= h && o < h + 4 * nv { 4 } else { 1 };
            let (mut p, mut col, mut row) = pos(o);
            for k in 0..len {
                let v = word_at(p, row, col);
                put(&mut out, p0 * plane + 2 * (o + k), v as u16);
                put(&mut out, p0 * plane + 2 * (o + k) + 1, (v >> 16) as u16);
                row += 2;
                if row == q.rows {
                    row = 0;
                    col += 1;
                    if col == q.cols {
                        col = 0;
                        p += 1;
                    }
                }
            }
            o += len;
        }
    }
    all_written(out)
}

/// `transpose_cols_p2` run on the host: each tile's `rows` runs read as
/// words (16-byte vectors when the columns are whole vectors) into the
/// shared words of interleaved row pairs (`cols_swz` flipping the low bits
/// of the word index), the output span made by `ColsPairs` of
/// kernels/permute_2byte.cu.
fn run_cols_pairs(q: &SpanParams, input: &[u16]) -> Vec<u16> {
    let (r, c) = (u64::from(q.rows), u64::from(q.cols));
    let plane = r * c;
    let t = 1u64 << q.per;
    let s = t + 2;
    let tpp = u64::from(q.tiles_d.d);
    let mut out = vec![None; input.len()];
    for tile in 0..q.tiles {
        let b = u64::from(q.tiles_d.div(tile as u32));
        let c0 = (tile - b * tpp) << q.per;
        let tn = (c - c0).min(t);
        assert!(tn.is_multiple_of(2));
        assert!(r / 2 * s <= SPAN_WORDS, "tile of {} words", r / 2 * s);
        let pos = |m: u64, w: u64| (m * s + 2 * (w ^ (((w >> 4) ^ (m >> 4)) & 3))) as usize;
        let mut buf = vec![None; (r / 2 * s) as usize];
        for row in 0..r {
            for w in 0..tn / 2 {
                let at = b * plane + row * c + c0 + 2 * w;
                if c.is_multiple_of(8) && w.is_multiple_of(4) {
                    assert!(at.is_multiple_of(8), "unaligned vector at {at}");
                }
                let to = pos(row >> 1, w) + (row & 1) as usize;
                assert_eq!(buf[to], None, "shared word {to} twice");
                buf[to] = Some(word(input, at));
            }
        }
        for o in 0..tn * r / 2 {
            let e = (2 * o) as u32;
            let col = q.rows_d.div(e);
            let m = u64::from(e - col * q.rows) / 2;
            let at = pos(m, u64::from(col >> 1));
            assert!(at.is_multiple_of(2), "unaligned 8-byte shared read");
            let v = pair_of(buf[at].unwrap(), buf[at + 1].unwrap(), col.into());
            let dst = b * plane + c0 * r + 2 * o;
            put(&mut out, dst, v as u16);
            put(&mut out, dst + 1, (v >> 16) as u16);
        }
    }
    all_written(out)
}

/// `transpose_rows_p2` run on the host: each tile of whole rows loaded as
/// words into the padded shared span (a pad word per 32 when 16 divides the
/// columns, else per 4), item (j, m) writing the output words of columns 2j
/// and 2j + 1 at rows 2m, 2m + 1 of the tile from two words of the span.
fn run_rows_pairs(q: &SpanParams, input: &[u16]) -> Vec<u16> {
    let (r, c) = (u64::from(q.rows), u64::from(q.cols));
    let (plane, cw) = (r * c, c / 2);
    let t = 1u64 << q.per;
    let tpp = u64::from(q.tiles_d.d);
    let mut out = vec![None; input.len()];
    for tile in 0..q.tiles {
        let b = u64::from(q.tiles_d.div(tile as u32));
        let r0 = (tile - b * tpp) << q.per;
        let tn = (r - r0).min(t);
        assert!(tn.is_multiple_of(2));
        let start = b * plane + r0 * c;
        assert!(
            tn * cw <= PERMUTE_SPAN_BYTES / 4,
            "span of {} words",
            tn * cw
        );
        let ps = if c.is_multiple_of(16) { 5 } else { 2 };
        let at = |w: u64| (w + (w >> ps)) as usize;
        let mut buf = vec![None; (PERMUTE_SPAN_BYTES / 4 * 5 / 4) as usize];
        for k in 0..tn * cw {
            assert_eq!(buf[at(k)], None, "shared word {} twice", at(k));
            buf[at(k)] = Some(word(input, start + 2 * k));
        }
        for i in 0..cw * t / 2 {
            let (j, m) = (i / (t / 2), i % (t / 2));
            if 2 * m >= tn {
                continue;
            }
            let w = m * c + j;
            let (a, bb) = (buf[at(w)].unwrap(), buf[at(w + cw)].unwrap());
            for h in 0..2 {
                let v = pair_of(a, bb, h);
                let dst = b * plane + (2 * j + h) * r + r0 + 2 * m;
                assert!(dst.is_multiple_of(2), "unaligned word store at {dst}");
                put(&mut out, dst, v as u16);
                put(&mut out, dst + 1, (v >> 16) as u16);
            }
        }
    }
    all_written(out)
}

#[test]
fn span_pairs_match_the_host_transpose() {
    let cases = [
        (1000u64, 8u64, 8u64, SpanKind::Planes),
        (777, 4, 16, SpanKind::Planes),
        (50, 2, 2, SpanKind::Planes),
        (3, 30, 62, SpanKind::Planes),
        (5, 2, 4096, SpanKind::Planes),
        (1, 32, 4096 + 512 + 6, SpanKind::Cols),
        (3, 64, 1002, SpanKind::Cols),
        (2, 40, 1000, SpanKind::Cols),
        (2, 2, 10_000, SpanKind::Cols),
        (1, 64, 8194, SpanKind::Cols),
        (3, 1000, 40, SpanKind::Rows),
        (2, 4098, 2, SpanKind::Rows),
        (1, 9000, 64, SpanKind::Rows),
        (5, 430, 22, SpanKind::Rows),
    ];
    for (batch, rows, cols, kind) in cases {
        let n = (batch * rows * cols) as usize;
        let input: Vec<u16> = (0..n).map(|i| (i * 11 + 3) as u16).collect();
        let shape = [batch as usize, rows as usize, cols as usize];
        let want = rtx_tensor::permute_host(&input, &shape, &[0, 2, 1]).unwrap();
        let choice = transpose(batch, rows, cols, 2, false);
        let Choice::SpanPairs(k, q) = choice else {
            panic!("{shape:?}: not span pairs: {choice:?}")
        };
        assert_eq!(k, kind, "{shape:?}");
        if k == SpanKind::Planes {
            // every phase of the output's 16-byte vectors
            for head in 0..4 {
                let got = run_planes_pairs(&q, &input, head);
                assert_eq!(got, want, "{shape:?} head {head}");
            }
            continue;
        }
        let got = match k {
            SpanKind::Planes => unreachable!(),
            SpanKind::Rows => run_rows_pairs(&q, &input),
            SpanKind::Cols => run_cols_pairs(&q, &input),
        };
        assert_eq!(got, want, "{shape:?}");
    }
}

/// The kernel `permute` of crates/rtx-backend-cuda's device layout ops
/// gives contiguous 2-byte `shape` by `perm` (after rtx-tensor's plan),
/// for tensors at aligned addresses; `None` for a copy_rows kernel.
fn half_kernel(shape: &[usize], perm: &[usize], force32: bool) -> Option<Kernel> {
    half_choice(shape, perm, force32).and_then(|c| c.kernel())
}

/// The choice of [`half_kernel`]; `None` for an N-D permute past the
/// kernels' rank.
fn half_choice(shape: &[usize], perm: &[usize], force32: bool) -> Option<Choice> {
    choice_of(shape, perm, 2, force32)
}

#[test]
fn the_half_gpu_test_shapes_reach_every_two_byte_kernel() {
    use Kernel as K;
    // the shapes of tests/half.rs `half_permutes_move_the_bits_for_every_kernel`
    // with the kernel each takes by shape
    let cases: &[(&[usize], &[usize], Option<Kernel>)] = &[
        (&[64, 8, 16], &[0, 2, 1], Some(K::TransposePlanesP2)),
        (&[1000, 4, 16], &[0, 2, 1], Some(K::TransposePlanesP2)),
        (&[3, 30, 62], &[0, 2, 1], Some(K::TransposePlanesP2)),
        (&[300, 3, 5], &[0, 2, 1], Some(K::TransposePlanesB2)),
        (&[300, 4, 5], &[0, 2, 1], Some(K::TransposePlanesB2)),
        (&[3, 1000, 40], &[0, 2, 1], Some(K::TransposeRowsP2)),
        (&[1, 4098, 2], &[0, 2, 1], Some(K::TransposeRowsP2)),
        (&[3, 1001, 40], &[0, 2, 1], Some(K::TransposeRowsB2)),
        (&[3, 1000, 41], &[0, 2, 1], Some(K::TransposeRowsB2)),
        (&[2, 40, 1000], &[0, 2, 1], Some(K::TransposeColsP2)),
        (&[2, 40, 1002], &[0, 2, 1], Some(K::TransposeColsP2)),
        (&[1, 64, 10_000], &[0, 2, 1], Some(K::TransposeColsP2)),
        (&[2, 40, 1001], &[0, 2, 1], Some(K::TransposeColsB2)),
        (&[2, 41, 1000], &[0, 2, 1], Some(K::TransposeColsB2)),
        (&[513, 700], &[1, 0], Some(K::Transpose64x64B2)),
        (&[514, 700], &[1, 0], Some(K::Transpose64x64P2)),
        (&[4096, 4096], &[1, 0], Some(K::Transpose64x64P2)),
        (&[3, 130, 198], &[0, 2, 1], Some(K::Transpose64x64P2)),
        (&[4, 130, 6, 34], &[0, 3, 2, 1], Some(K::Transpose128x32P2)),
        (&[4, 34, 6, 130], &[0, 3, 2, 1], Some(K::Transpose32x128P2)),
        (&[34, 100, 300], &[2, 1, 0], Some(K::Transpose32x128P2)),
        (&[33, 100, 300], &[2, 1, 0], Some(K::Transpose32x128B2)),
        (
            &[2, 3, 4, 5, 6],
            &[4, 0, 3, 1, 2],
            Some(K::Transpose64x64P2),
        ),
        (&[516, 700], &[1, 0], Some(K::Transpose64x64P2)),
        (&[3, 132, 196], &[0, 2, 1], Some(K::Transpose64x64P2)),
        (&[4, 132, 6, 36], &[0, 3, 2, 1], Some(K::Transpose128x32P2)),
        (&[4, 36, 6, 132], &[0, 3, 2, 1], Some(K::Transpose32x128P2)),
        (&[36, 100, 300], &[2, 1, 0], Some(K::Transpose32x128P2)),
        (
            &[2, 3, 4, 4, 8],
            &[4, 0, 3, 1, 2],
            Some(K::Transpose64x64P2),
        ),
        (&[520, 712], &[1, 0], Some(K::Transpose64x64P2)),
        (&[3, 136, 200], &[0, 2, 1], Some(K::Transpose64x64P2)),
        (&[6, 72, 5, 136], &[0, 3, 2, 1], Some(K::Transpose64x64P2)),
        (&[3, 5, 7, 9], &[3, 1, 0, 2], Some(K::Transpose64x64B2)),
        (&[6, 10, 4, 3], &[2, 1, 0, 3], None),
        (&[6, 10, 4, 5], &[1, 0, 2, 3], None),
        (&[100, 3, 7], &[1, 0, 2], None),
        (&[6, 10, 4, 32], &[2, 1, 0, 3], None),
        (&[16, 12, 64, 32], &[2, 1, 0, 3], None),
        (&[8, 5, 16, 8], &[2, 1, 0, 3], None),
        (&[4, 3, 8, 16], &[2, 1, 0, 3], None),
        (&[4, 3, 8, 24], &[2, 1, 0, 3], None),
        (&[4, 4, 2, 6, 32], &[3, 0, 2, 1, 4], None),
        (&[6, 10, 5, 32], &[2, 1, 0, 3], None),
        (&[2, 4, 6, 32], &[1, 2, 0, 3], None),
        (&[3, 5, 6, 32], &[0, 2, 1, 3], None),
    ];
    // the copy_rows shapes (no span or tiled kernel) that take the lines walk
    let walks: &[&[usize]] = &[
        &[6, 10, 4, 32],
        &[16, 12, 64, 32],
        &[8, 5, 16, 8],
        &[4, 3, 8, 16],
        &[4, 3, 8, 24],
        &[4, 4, 2, 6, 32],
        &[2, 4, 6, 32],
    ];
    // the tiled shapes whose maps the bulk-copy kernel takes on sm_90+
    let bulks: &[&[usize]] = &[&[4096, 4096], &[520, 712], &[3, 136, 200], &[6, 72, 5, 136]];
    let mut reached = Vec::new();
    // (tile, quad path) of the tiled pair kernels, by shape
    let mut paths = Vec::new();
    for &(shape, perm, want) in cases {
        assert_eq!(half_kernel(shape, perm, false), want, "{shape:?} {perm:?}");
        if want.is_none() {
            assert_eq!(
                half_lines(shape, perm).is_some(),
                walks.contains(&shape),
                "{shape:?} {perm:?}: lines walk"
            );
        }
        if let Some(Choice::TiledPairs(tile, p)) = half_choice(shape, perm, false) {
            paths.push((tile, quads_fit(&p, tile)));
            let b = bulk(&p, Word::B2, tile);
            assert_eq!(
                b.is_some(),
                bulks.contains(&shape),
                "{shape:?} {perm:?}: bulk"
            );
        }
        for force in [false, true] {
            reached.extend(half_kernel(shape, perm, force));
        }
    }
    for k in [
        K::TransposePlanesP2,
        K::TransposeRowsP2,
        K::TransposeColsP2,
        K::Transpose32x32P2,
        K::Transpose64x64P2,
        K::Transpose128x32P2,
        K::Transpose32x128P2,
        K::TransposePlanesB2,
        K::TransposeRowsB2,
        K::TransposeColsB2,
        K::Transpose32x32B2,
        K::Transpose64x64B2,
        K::Transpose32x128B2,
    ] {
        assert!(reached.contains(&k), "{} not reached", k.name());
    }
    for tile in [Tile::T64x64, Tile::T128x32, Tile::T32x128] {
        for quads in [false, true] {
            assert!(
                paths.contains(&(tile, quads)),
                "{tile:?} pairs (quad path {quads}) not reached"
            );
        }
    }
}

#[test]
fn pair_kernels_are_named_by_tile_and_take_the_b2_signatures() {
    for tile in [Tile::T32x32, Tile::T64x64, Tile::T128x32, Tile::T32x128] {
        let (tr, tc) = tile.dims();
        let k = Kernel::of(Family::TransposePairs(tile));
        assert_eq!(k.name(), format!("transpose{tr}x{tc}_p2"));
        assert_eq!(
            k.signature(),
            Kernel::of(Family::Transpose(Word::B2, tile)).signature()
        );
    }
    for (kind, name) in [
        (SpanKind::Planes, "transpose_planes_p2"),
        (SpanKind::Rows, "transpose_rows_p2"),
        (SpanKind::Cols, "transpose_cols_p2"),
    ] {
        let k = Kernel::of(Family::TransposeSpanPairs(kind));
        assert_eq!(k.name(), name);
        let b2 = Kernel::of(Family::TransposeSpan(kind, Word::B2));
        assert_eq!(k.signature(), b2.signature());
    }
}
