//! The permute kernel choice: fast division, the class of each shape of the
//! permute benchmark suite (`rtx-bench transpose --set permute`: small
//! planes in large batches, long matrices of few rows or columns), the
//! fallbacks past the 32-bit envelope, the N-D pair's strides checked
//! against a host model of the tiled kernel, and the bulk-copy kernels'
//! tensor maps and shared-memory pair move run on the host. The 2-byte pair
//! kernels' tests are in `permute_pairs_tests.rs`.

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
pub(super) fn tile_at(p: &TileParams, t: u32) -> (u64, u64, Vec<u64>) {
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

/// The element of map `m` (elements of `e` bytes) at tensor coordinates
/// `x` (innermost first), as Hopper's bulk tensor copies address it; `None`
/// outside the map's dims (loads fill those elements, stores skip them).
fn map_index(m: &MapShape, e: u64, x: &[u64]) -> Option<usize> {
    if x.iter().zip(&m.dims).any(|(&c, &d)| c >= d) {
        return None;
    }
    let bytes = x[0] * e
        + x[1..]
            .iter()
            .zip(&m.strides)
            .map(|(c, s)| c * s)
            .sum::<u64>();
    assert!(bytes.is_multiple_of(e), "an element split");
    Some((bytes / e) as usize)
}

/// `transpose_bulk_b4` / `_b2` run on the host through their maps: each
/// tile's box loaded (zeros outside the input map), transposed, and stored
/// (clipped to the output map). Every output element must be written once.
fn run_bulk(b: &Bulk, input: &[u32]) -> Vec<u32> {
    let p = &b.params;
    let [tr, tc] = b.tile.map(u64::from);
    let e = b.elem.bytes();
    let mut out = vec![u32::MAX; input.len()];
    for t in 0..p.tiles {
        let (trow, tcol, mut batch) = tile_at(p, t);
        batch.reverse(); // the maps' batch dims: innermost first
        let (r0, c0) = (trow * tr, tcol * tc);
        for r in 0..tr {
            for c in 0..tc {
                let at = |x0: u64, x1: u64| [vec![x0, x1], batch.clone()].concat();
                let v = map_index(&b.input, e, &at(c0 + c, r0 + r)).map_or(0, |i| input[i]);
                if let Some(o) = map_index(&b.output, e, &at(r0 + r, c0 + c)) {
                    assert_eq!(out[o], u32::MAX, "written twice");
                    out[o] = v;
                }
            }
        }
    }
    out
}

/// The backend's choice for permuting contiguous `shape` by `perm`
/// (elements of `elem_bytes`) after rtx-tensor's plan: its transpose or
/// N-D permute; `None` for a relabel or an N-D permute past the kernels'
/// rank.
pub(super) fn choice_of(
    shape: &[usize],
    perm: &[usize],
    elem_bytes: u64,
    force32: bool,
) -> Option<Choice> {
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
        } => Some(transpose(
            batch as u64,
            rows as u64,
            cols as u64,
            elem_bytes * inner as u64,
            force32,
        )),
        rtx_tensor::PermuteKind::Permute { shape, perm } if shape.len() <= MAX_RANK => {
            Some(permute(&shape, &perm, elem_bytes, force32))
        }
        _ => None,
    }
}

/// The tiled choice of [`choice_of`] (`force32` off).
fn tiled_choice(shape: &[usize], perm: &[usize], e: u64) -> (Word, Tile, TileParams) {
    let choice = choice_of(shape, perm, e, false);
    let tiled = choice.as_ref().and_then(Choice::tiled);
    let Some((elem, tile, p)) = tiled else {
        panic!("{shape:?} {perm:?}: not tiled: {choice:?}")
    };
    (elem, tile, *p)
}

#[test]
fn bulk_maps_move_every_element_once() {
    // (element bytes, shape, perm, whether the maps can describe it)
    let cases: [(u64, &[usize], &[usize], bool); 19] = [
        (4, &[6, 68, 5, 132], &[0, 3, 2, 1], true),
        (4, &[2, 3, 4, 52, 56], &[1, 0, 2, 4, 3], true),
        (4, &[128, 192], &[1, 0], true),
        (4, &[100, 68], &[1, 0], true),
        (4, &[3, 100, 132], &[0, 2, 1], true),
        (4, &[4, 8, 12, 16], &[0, 3, 2, 1], true),
        (4, &[2, 3, 4, 8, 12], &[4, 0, 3, 1, 2], true),
        (4, &[2, 2, 2, 2, 8, 12], &[1, 0, 3, 2, 5, 4], false), // 4 batch dims
        (4, &[65, 132], &[1, 0], false),                       // output rows of 260 bytes
        (4, &[132, 70], &[1, 0], false),                       // input rows of 280 bytes
        (4, &[2, 3, 8, 12], &[3, 1, 2, 0], false),             // output rows of 8 bytes
        (2, &[520, 712], &[1, 0], true),                       // ragged 64x64 tiles
        (2, &[4096, 4096], &[1, 0], true),
        (2, &[3, 136, 200], &[0, 2, 1], true),
        (2, &[6, 72, 5, 136], &[0, 3, 2, 1], true),
        (2, &[2, 3, 4, 56, 64], &[1, 0, 2, 4, 3], true),
        (2, &[516, 700], &[1, 0], false), // input rows of 1400 bytes
        (2, &[3, 130, 198], &[0, 2, 1], false), // rows of 396 and 260 bytes
        (2, &[2, 2, 2, 2, 72, 136], &[1, 0, 3, 2, 5, 4], false), // 4 batch dims
    ];
    for (e, shape, perm, ok) in cases {
        let n: usize = shape.iter().product();
        let input: Vec<u32> = (1..=n as u32).collect();
        let want = rtx_tensor::permute_host(&input, shape, perm).unwrap();
        let (elem, tile, p) = tiled_choice(shape, perm, e);
        let Some(b) = bulk(&p, elem, tile) else {
            assert!(!ok, "{e} bytes {shape:?} {perm:?}: no bulk form");
            continue;
        };
        assert!(ok, "{e} bytes {shape:?} {perm:?}: a bulk form");
        assert_eq!(b.elem.bytes(), e);
        assert_eq!(run_bulk(&b, &input), want, "{shape:?} {perm:?}");
        assert!(b.input.dims.len() <= 2 + BULK_MAX_BATCH);
    }
    // 8-byte elements keep the register tile, and so do the other tiles.
    let (elem, tile, p) = tiled_choice(&[128, 128], &[1, 0], 8);
    assert_eq!(bulk(&p, elem, tile), None);
    let (elem, tile, p) = tiled_choice(&[4, 136, 6, 32], &[0, 3, 2, 1], 2);
    assert_eq!((tile, bulk(&p, elem, tile)), (Tile::T128x32, None));
}

/// `MovePairs<TR, TC>` of kernels/permute_2byte.cu on the host, warp by warp:
/// the 2x2 blocks each warp instruction moves, in words of the input tile
/// (TR rows of TC halves) and the output tile (TC rows of TR halves).
/// Returns, per warp instruction, the 32 lanes' (read row r, read row r + 1,
/// write row c, write row c + 1) word indices.
fn move_pairs_words(tr: u32, tc: u32) -> Vec<[[u32; 4]; 32]> {
    let (iw, ow, g) = (tc / 2, tr / 2, tr / 64);
    let mut out = Vec::new();
    for k in 0..tr * tc / 1024 {
        for ty in 0..8 {
            let q = k * 8 + ty;
            out.push(std::array::from_fn(|lane| {
                let lane = lane as u32;
                let pr = lane + 32 * (q % g);
                let w = (q / g + lane) % iw;
                [
                    2 * pr * iw + w,
                    (2 * pr + 1) * iw + w,
                    2 * w * ow + pr,
                    (2 * w + 1) * ow + pr,
                ]
            }));
        }
    }
    out
}

#[test]
fn the_bulk_pair_move_transposes_every_element_once_without_bank_conflicts() {
    for (tr, tc) in [(128u32, 128u32), (64, 64), (64, 128), (128, 64)] {
        // the input tile's halves, as words of two (low half first)
        let half = |r: u32, c: u32| (r * tc + c + 1) as u16;
        let word = |w: u32| {
            let (r, c) = (w / (tc / 2), 2 * (w % (tc / 2)));
            u32::from(half(r, c)) | (u32::from(half(r, c + 1)) << 16)
        };
        let mut ot = vec![None::<u32>; (tr * tc / 2) as usize];
        for ins in move_pairs_words(tr, tc) {
            for slot in 0..4 {
                let mut banks: Vec<u32> = ins.iter().map(|l| l[slot] % 32).collect();
                banks.sort_unstable();
                banks.dedup();
                assert_eq!(banks.len(), 32, "{tr}x{tc}: a bank conflict");
            }
            for [a, b, lo, hi] in ins {
                let (a, b) = (word(a), word(b));
                // pair_lo / pair_hi: __byte_perm(a, b, 0x5410 / 0x7632)
                for (at, v) in [
                    (lo, (a & 0xffff) | (b << 16)),
                    (hi, (a >> 16) | (b & 0xffff_0000)),
                ] {
                    assert_eq!(
                        ot[at as usize].replace(v),
                        None,
                        "{tr}x{tc}: word {at} twice"
                    );
                }
            }
        }
        for c in 0..tc {
            for r in 0..tr {
                let w = ot[((c * tr + r) / 2) as usize].expect("every output word written");
                let got = if r % 2 == 0 {
                    w as u16
                } else {
                    (w >> 16) as u16
                };
                assert_eq!(got, half(r, c), "{tr}x{tc}: out ({c}, {r})");
            }
        }
    }
}

/// Writes element `at` of `out` once.
pub(super) fn put(out: &mut [Option<u16>], at: u64, v: u16) {
    let slot = &mut out[at as usize];
    assert_eq!(*slot, None, "element {at} written twice");
    *slot = Some(v);
}

pub(super) fn all_written(out: Vec<Option<u16>>) -> Vec<u16> {
    out.into_iter()
        .enumerate()
        .map(|(i, v)| v.unwrap_or_else(|| panic!("element {i} not written")))
        .collect()
}
