//! The permute kernel choice: fast division, the class of each shape of the
//! permute benchmark suite (`rtx-bench transpose --set permute`: small
//! planes in large batches, long matrices of few rows or columns), the
//! fallbacks past the 32-bit envelope, and the N-D pair's strides checked
//! against a host model of the tiled kernel.

use super::*;

#[test]
fn fast_division_is_exact() {
    let mut x = 0x9E37_79B9_7F4A_7C15u64;
    let mut next = || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let ds = [1u64, 2, 3, 5, 7, 15, 64, 4095, 4096, 65_537, (1 << 31) - 1];
    for &d in &ds {
        let f = FastDiv::new(d);
        for n in [
            0u32,
            1,
            (d - 1) as u32,
            d as u32,
            (1 << 31) - 1,
            (1 << 31) - 2,
        ] {
            assert_eq!(f.div(n), n / d as u32, "{n} / {d}");
        }
    }
    for _ in 0..200_000 {
        let d = next() % ((1 << 31) - 1) + 1;
        let d = if next() % 2 == 0 { d % 5000 + 1 } else { d };
        let n = (next() % (1 << 31)) as u32;
        assert_eq!(FastDiv::new(d).div(n), n / d as u32, "{n} / {d}");
    }
}

#[test]
fn the_permute_suite_shapes_get_their_class() {
    let kind = |c: Choice| match c {
        Choice::Span(k, _, _) => Some(k),
        _ => None,
    };
    assert_eq!(
        kind(transpose(2_000_000, 4, 16, 4, false)),
        Some(SpanKind::Planes)
    );
    assert_eq!(
        kind(transpose(500_000, 16, 4, 4, false)),
        Some(SpanKind::Planes)
    );
    assert_eq!(
        kind(transpose(70_000, 3, 5, 4, false)),
        Some(SpanKind::Planes)
    );
    assert_eq!(
        kind(transpose(8, 4_194_304, 2, 4, false)),
        Some(SpanKind::Rows)
    );
    assert_eq!(
        kind(transpose(7, 2_097_187, 2, 4, false)),
        Some(SpanKind::Rows)
    );
    assert_eq!(
        kind(transpose(8, 2, 4_194_304, 8, false)),
        Some(SpanKind::Cols)
    );
    assert!(matches!(
        transpose(1, 8192, 8192, 4, false),
        Choice::Tiled(Word::B4, Tile::T64x64, _)
    ));
    assert!(matches!(
        transpose(1, 8192, 8192, 4, true),
        Choice::Tiled(Word::B4, Tile::T32x32, _)
    ));
    assert!(matches!(
        transpose(3, 100, 100, 16, false),
        Choice::Tiled(Word::B16, Tile::T32x32, _)
    ));
    assert_eq!(transpose(3, 100, 100, 12, false), Choice::Fallback);
    // past the 32-bit envelope: the 64-bit copy_rows kernels
    assert_eq!(transpose(1, 1 << 31, 3, 4, false), Choice::Fallback);
    assert!(matches!(
        transpose(1 << 32, 2, 3, 4, false),
        Choice::Span(SpanKind::Planes, _, _)
    ));
    assert_eq!(transpose(1 << 42, 2, 3, 4, false), Choice::Fallback);
    // planes: k whole planes in the span
    let Choice::Span(_, _, p) = transpose(70_000, 3, 5, 4, false) else {
        unreachable!()
    };
    assert_eq!(p.per, 4096 / 15);
    assert_eq!(p.tiles, 70_000u64.div_ceil(4096 / 15));
    let Choice::Span(_, _, p) = transpose(7, 2_097_187, 2, 4, false) else {
        unreachable!()
    };
    assert_eq!(1u64 << p.per, 2048);
    assert_eq!(u64::from(p.tiles_d.d), 2_097_187u64.div_ceil(2048));
    assert_eq!(p.tiles, 7 * 2_097_187u64.div_ceil(2048));
}

/// Tile `t` as the kernels decode it (`tile_pos` and the batch decode of
/// kernels/permute.cu): tile row, tile column and the batch coordinate of
/// each batch dim `k` (`x[k]`, last fastest).
fn tile_at(p: &TileParams, t: u32) -> (u64, u64, Vec<u64>) {
    let a = p.tc_n.div(t);
    let tcol = t - a * p.tc_n.d;
    let mut q = p.tr_n.div(a);
    let trow = a - q * p.tr_n.d;
    let mut x = vec![0; p.rank as usize];
    for k in (0..p.rank as usize).rev() {
        let qq = p.bdim[k].div(q);
        x[k] = u64::from(q - qq * p.bdim[k].d);
        q = qq;
    }
    (u64::from(trow), u64::from(tcol), x)
}

/// The tiled kernel run on the host: every output element written once with
/// the input element the permutation puts there.
fn run_tiled(p: &TileParams, tile: Tile, input: &[u32]) -> Vec<u32> {
    let (tr, tc) = tile.dims();
    let mut out = vec![u32::MAX; input.len()];
    for t in 0..p.tiles {
        let (trow, tcol, x) = tile_at(p, t);
        let (r0, c0) = (trow * tr, tcol * tc);
        let i: u64 = x.iter().zip(&p.bin).map(|(x, s)| x * s).sum();
        let o: u64 = x.iter().zip(&p.bout).map(|(x, s)| x * s).sum();
        for r in r0..(r0 + tr).min(u64::from(p.rows)) {
            for c in c0..(c0 + tc).min(u64::from(p.cols)) {
                let dst = (o + c * p.out_rs + r) as usize;
                assert_eq!(out[dst], u32::MAX, "written twice");
                out[dst] = input[(i + r * p.in_rs + c) as usize];
            }
        }
    }
    out
}

#[test]
fn nd_pair_matches_the_host_permute() {
    let cases: [(&[usize], &[usize]); 6] = [
        (&[3, 5, 7], &[2, 1, 0]),
        (&[4, 6, 5, 3], &[0, 3, 2, 1]),
        (&[2, 3, 4, 5, 6], &[4, 0, 3, 1, 2]),
        (&[7, 70, 3], &[1, 2, 0]),
        (&[5, 3, 130], &[2, 0, 1]),
        (&[2, 2, 2, 2, 2, 2, 2, 3], &[7, 6, 5, 4, 3, 2, 1, 0]),
    ];
    for (shape, perm) in cases {
        let n: usize = shape.iter().product();
        let input: Vec<u32> = (0..n as u32).collect();
        let want = rtx_tensor::permute_host(&input, shape, perm).unwrap();
        for force in [false, true] {
            let Choice::Tiled(_, tile, p) = permute(shape, perm, 4, force) else {
                panic!("{shape:?} {perm:?}: not tiled")
            };
            assert_eq!(run_tiled(&p, tile, &input), want, "{shape:?} {perm:?}");
        }
    }
    assert_eq!(permute(&[3, 4, 5], &[1, 0, 2], 4, false), Choice::Fallback);
    assert_eq!(permute(&[3, 4, 5], &[2, 1, 0], 16, false), Choice::Fallback);
}

#[test]
fn batched_transpose_matches_the_host() {
    for (b, r, c) in [
        (1u64, 70u64, 130u64),
        (3, 129, 65),
        (2, 65, 200),
        (5, 65, 65),
    ] {
        let n = (b * r * c) as usize;
        let input: Vec<u32> = (0..n as u32).collect();
        let shape = [b as usize, r as usize, c as usize];
        let want = rtx_tensor::permute_host(&input, &shape, &[0, 2, 1]).unwrap();
        let Choice::Tiled(_, tile, p) = transpose(b, r, c, 4, false) else {
            panic!("{shape:?}: not tiled")
        };
        assert_eq!(run_tiled(&p, tile, &input), want, "{shape:?}");
    }
}

/// The element of map `m` at tensor coordinates `x` (innermost first), as
/// Hopper's bulk tensor copies address it; `None` outside the map's dims
/// (loads fill those elements, stores skip them).
fn map_index(m: &MapShape, x: &[u64]) -> Option<usize> {
    if x.iter().zip(&m.dims).any(|(&c, &d)| c >= d) {
        return None;
    }
    let bytes = x[0] * 4
        + x[1..]
            .iter()
            .zip(&m.strides)
            .map(|(c, s)| c * s)
            .sum::<u64>();
    Some((bytes / 4) as usize)
}

/// `transpose_bulk_b4` run on the host through its maps: each tile's box
/// loaded (zeros outside the input map), transposed, and stored (clipped
/// to the output map). Every output element must be written once.
fn run_bulk(p: &TileParams, b: &Bulk, input: &[u32]) -> Vec<u32> {
    let (tr, tc) = Tile::T64x64.dims();
    let mut out = vec![u32::MAX; input.len()];
    for t in 0..p.tiles {
        let (trow, tcol, mut batch) = tile_at(p, t);
        batch.reverse(); // the maps' batch dims: innermost first
        let (r0, c0) = (trow * tr, tcol * tc);
        for r in 0..tr {
            for c in 0..tc {
                let at = |x0: u64, x1: u64| [vec![x0, x1], batch.clone()].concat();
                let v = map_index(&b.input, &at(c0 + c, r0 + r)).map_or(0, |i| input[i]);
                if let Some(o) = map_index(&b.output, &at(r0 + r, c0 + c)) {
                    assert_eq!(out[o], u32::MAX, "written twice");
                    out[o] = v;
                }
            }
        }
    }
    out
}

#[test]
fn bulk_maps_move_every_element_once() {
    // (shape, perm, whether the maps can describe it)
    let cases: [(&[usize], &[usize], bool); 11] = [
        (&[6, 68, 5, 132], &[0, 3, 2, 1], true),
        (&[2, 3, 4, 52, 56], &[1, 0, 2, 4, 3], true),
        (&[128, 192], &[1, 0], true),
        (&[100, 68], &[1, 0], true),
        (&[3, 100, 132], &[0, 2, 1], true),
        (&[4, 8, 12, 16], &[0, 3, 2, 1], true),
        (&[2, 3, 4, 8, 12], &[4, 0, 3, 1, 2], true),
        (&[2, 2, 2, 2, 8, 12], &[1, 0, 3, 2, 5, 4], false), // 4 batch dims
        (&[65, 132], &[1, 0], false),                       // output rows of 260 bytes
        (&[132, 70], &[1, 0], false),                       // input rows of 280 bytes
        (&[2, 3, 8, 12], &[3, 1, 2, 0], false),             // output rows of 8 bytes
    ];
    for (shape, perm, ok) in cases {
        let n: usize = shape.iter().product();
        let input: Vec<u32> = (1..=n as u32).collect();
        let want = rtx_tensor::permute_host(&input, shape, perm).unwrap();
        let choice = if shape.len() == 2 {
            transpose(1, shape[0] as u64, shape[1] as u64, 4, false)
        } else if perm[..shape.len() - 2] == (0..shape.len() - 2).collect::<Vec<_>>()[..]
            && perm[shape.len() - 2..] == [shape.len() - 1, shape.len() - 2]
        {
            let b: usize = shape[..shape.len() - 2].iter().product();
            let (r, c) = (shape[shape.len() - 2], shape[shape.len() - 1]);
            transpose(b as u64, r as u64, c as u64, 4, false)
        } else {
            permute(shape, perm, 4, false)
        };
        let Choice::Tiled(elem, tile, p) = choice else {
            panic!("{shape:?} {perm:?}: not tiled")
        };
        let Some(b) = bulk(&p, elem, tile) else {
            assert!(!ok, "{shape:?} {perm:?}: no bulk form");
            continue;
        };
        assert!(ok, "{shape:?} {perm:?}: a bulk form");
        assert_eq!(run_bulk(&p, &b, &input), want, "{shape:?} {perm:?}");
        assert!(b.input.dims.len() <= 2 + BULK_MAX_BATCH);
    }
    // 8-byte elements keep the register tile.
    let Choice::Tiled(elem, tile, p) = transpose(1, 128, 128, 8, false) else {
        panic!("not tiled")
    };
    assert_eq!(bulk(&p, elem, tile), None);
}

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
            Choice::Tiled(..)
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

/// pair_of of kernels/permute2.cu: the low halves of `a` and `b` for even
/// `c`, the high halves for odd.
fn pair_of(a: u32, b: u32, c: u64) -> u32 {
    if c.is_multiple_of(2) {
        (a & 0xffff) | (b << 16)
    } else {
        (a >> 16) | (b & 0xffff_0000)
    }
}

/// Writes element `at` of `out` once.
fn put(out: &mut [Option<u16>], at: u64, v: u16) {
    let slot = &mut out[at as usize];
    assert_eq!(*slot, None, "element {at} written twice");
    *slot = Some(v);
}

fn all_written(out: Vec<Option<u16>>) -> Vec<u16> {
    out.into_iter()
        .enumerate()
        .map(|(i, v)| v.unwrap_or_else(|| panic!("element {i} not written")))
        .collect()
}

/// `transpose{TR}x{TC}_p2` run on the host, thread by thread as
/// kernels/permute2.cu's `load_pairs` and `transpose_pairs` do it: words
/// read and written at even element offsets only, every output element
/// written once.
fn run_tiled_pairs(p: &TileParams, tile: Tile, input: &[u16]) -> Vec<u16> {
    let (tr, tc) = tile.dims();
    let (tw, s) = (tc / 2, tc + 2);
    let (rows, cols) = (u64::from(p.rows), u64::from(p.cols));
    let mut out = vec![None; input.len()];
    for t in 0..p.tiles {
        let (trow, tcol, x) = tile_at(p, t);
        let (r0, c0) = (trow * tr, tcol * tc);
        let bi: u64 = x.iter().zip(&p.bin).map(|(x, s)| x * s).sum();
        let bo: u64 = x.iter().zip(&p.bout).map(|(x, s)| x * s).sum();
        let (ioff, ooff) = (bi + r0 * p.in_rs + c0, bo + c0 * p.out_rs + r0);
        let full = r0 + tr <= rows && c0 + tc <= cols;
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
/// words, each output word made from the two input words `PlanesPairs`
/// of kernels/permute2.cu picks.
fn run_planes_pairs(q: &SpanParams, input: &[u16]) -> Vec<u16> {
    let (r, c) = (u64::from(q.rows), u64::from(q.cols));
    let plane = r * c;
    let per = u64::from(q.per);
    let mut out = vec![None; input.len()];
    for s in 0..q.tiles {
        let p0 = s * per;
        let n = (q.batch - p0).min(per) * plane / 2;
        assert!(n <= SPAN_WORDS, "span of {n} words");
        let buf: Vec<u32> = (0..n).map(|k| word(input, p0 * plane + 2 * k)).collect();
        for o in 0..n {
            let e = (2 * o) as u32;
            let p = q.plane_d.div(e);
            let rem = e - p * q.plane_d.d;
            let col = q.rows_d.div(rem);
            let row = rem - col * q.rows;
            assert!(row.is_multiple_of(2));
            let w = (u64::from(p) * plane + u64::from(row) * c + u64::from(col)) / 2;
            let v = pair_of(buf[w as usize], buf[(w + c / 2) as usize], col.into());
            put(&mut out, p0 * plane + 2 * o, v as u16);
            put(&mut out, p0 * plane + 2 * o + 1, (v >> 16) as u16);
        }
    }
    all_written(out)
}

/// `transpose_cols_p2` run on the host: each tile's `rows` runs read as
/// words (16-byte vectors when the columns are whole vectors) into the
/// shared words of interleaved row pairs, the output span made by
/// `ColsPairs` of kernels/permute2.cu.
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
        let mut buf = vec![0u32; (r / 2 * s) as usize];
        for row in 0..r {
            for w in 0..tn / 2 {
                let at = b * plane + row * c + c0 + 2 * w;
                if c.is_multiple_of(8) && w.is_multiple_of(4) {
                    assert!(at.is_multiple_of(8), "unaligned vector at {at}");
                }
                buf[((row >> 1) * s + (row & 1) + 2 * w) as usize] = word(input, at);
            }
        }
        for o in 0..tn * r / 2 {
            let e = (2 * o) as u32;
            let col = q.rows_d.div(e);
            let m = u64::from(e - col * q.rows) / 2;
            let at = (m * s + u64::from(col & !1)) as usize;
            assert!(at.is_multiple_of(2), "unaligned 8-byte shared read");
            let v = pair_of(buf[at], buf[at + 1], col.into());
            let dst = b * plane + c0 * r + 2 * o;
            put(&mut out, dst, v as u16);
            put(&mut out, dst + 1, (v >> 16) as u16);
        }
    }
    all_written(out)
}

/// `transpose_rows_p2` run on the host: each tile of whole rows loaded as
/// words, item (j, m) writing the output words of columns 2j and 2j + 1 at
/// rows 2m, 2m + 1 of the tile from two words of the span.
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
        assert!(tn * cw <= SPAN_WORDS, "span of {} words", tn * cw);
        let buf: Vec<u32> = (0..tn * cw).map(|k| word(input, start + 2 * k)).collect();
        for i in 0..cw * t / 2 {
            let (j, m) = (i / (t / 2), i % (t / 2));
            if 2 * m >= tn {
                continue;
            }
            let w = (m * c + j) as usize;
            let (a, bb) = (buf[w], buf[w + cw as usize]);
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
        let got = match k {
            SpanKind::Planes => run_planes_pairs(&q, &input),
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
    let plan = rtx_tensor::Layout::contiguous(shape)
        .unwrap()
        .plan_permute(perm)
        .unwrap();
    match plan.kind {
        rtx_tensor::PermuteKind::Transpose {
            batch,
            rows,
            cols,
            inner,
        } => transpose(
            batch as u64,
            rows as u64,
            cols as u64,
            2 * inner as u64,
            force32,
        )
        .kernel(),
        rtx_tensor::PermuteKind::Permute { shape, perm } if shape.len() <= MAX_RANK => {
            permute(&shape, &perm, 2, force32).kernel()
        }
        _ => None,
    }
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
        (&[3, 5, 7, 9], &[3, 1, 0, 2], Some(K::Transpose64x64B2)),
        (&[6, 10, 4, 3], &[2, 1, 0, 3], None),
        (&[6, 10, 4, 5], &[1, 0, 2, 3], None),
        (&[100, 3, 7], &[1, 0, 2], None),
    ];
    let mut reached = Vec::new();
    for &(shape, perm, want) in cases {
        assert_eq!(half_kernel(shape, perm, false), want, "{shape:?} {perm:?}");
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
}

#[test]
fn pair_kernels_are_named_by_tile_and_take_the_b2_signatures() {
    for tile in [Tile::T32x32, Tile::T64x64, Tile::T128x32, Tile::T32x128] {
        let (tr, tc) = tile.dims();
        let k = Kernel::transpose_pairs(tile);
        assert_eq!(k.name(), format!("transpose{tr}x{tc}_p2"));
        assert_eq!(k.signature(), Kernel::transpose(Word::B2, tile).signature());
    }
    for (kind, name) in [
        (SpanKind::Planes, "transpose_planes_p2"),
        (SpanKind::Rows, "transpose_rows_p2"),
        (SpanKind::Cols, "transpose_cols_p2"),
    ] {
        let k = Kernel::transpose_span_pairs(kind);
        assert_eq!(k.name(), name);
        let b2 = Kernel::transpose_span(kind, Word::B2);
        assert_eq!(k.signature(), b2.signature());
    }
}
