//! The choices' tests: each family choice and size pick gives a kernel of
//! the signature and element its launcher is called with, named for them.

use rtx_backend::DType;

use super::*;

#[test]
fn every_matmul_tile_names_its_kernel() {
    use MatmulTile::{T32x32, T32x64, T64x32, T64x64};
    for (f, suffix) in [
        (Float::F32, "f32"),
        (Float::F64, "f64"),
        (Float::Bf16, "bf16"),
        (Float::F16, "f16"),
    ] {
        for tile in [T64x64, T32x64, T64x32, T32x32] {
            let (tm, tn) = (tile.tm(), tile.tn());
            assert_eq!(
                Kernel::of(Family::Matmul(f, tile)).name(),
                format!("matmul{tm}x{tn}_{suffix}")
            );
            assert_eq!(tile.threads(), tm * tn / 16);
        }
        assert_eq!(
            Kernel::of(Family::Model(ModelOp::MatmulDot, f)).name(),
            format!("matmul_dot_{suffix}")
        );
    }
}

#[test]
fn half_pickers_give_kernels_of_their_element_and_vector() {
    // rows of 2-byte elements: the widest word dividing the row, 2 bytes alone
    // for odd rows; scatter and conversion kernels bind the half type they say
    for (bytes, w) in [(2, Word::B2), (6, Word::B2), (4, Word::B4), (12, Word::B4)] {
        assert_eq!(Word::dividing(bytes), w, "{bytes} bytes");
        assert_eq!(
            Kernel::gather(w).binding().map(|b| b.1),
            Some(match w {
                Word::B2 => "u16",
                _ => "u32",
            })
        );
    }
    for (f, v, cty) in [
        (1, HalfVec::X1, ""),
        (6, HalfVec::X2, "x2"),
        (12, HalfVec::X4, "x4"),
        (64, HalfVec::X8, "x8"),
    ] {
        assert_eq!(HalfVec::pick(f), v);
        // levels past 0 sum f32 scratch in float4 lanes at most
        let scratch = if v == HalfVec::X8 { HalfVec::X4 } else { v };
        assert_eq!(HalfVec::pick_scratch(f), scratch, "f = {f}");
        assert!(f.is_multiple_of(scratch.elems()));
        assert_eq!(HalfVec::pick_level0(f, ChunkSum::Batched), v, "f = {f}");
        assert_eq!(
            HalfVec::pick_level0(f, ChunkSum::Pipelined),
            scratch,
            "f = {f}"
        );
        // rows past 32 x4 vectors keep x8 in the latency form too
        for (wide, want) in [(128, HalfVec::X4), (136, HalfVec::X8), (256, HalfVec::X8)] {
            assert_eq!(
                HalfVec::pick_level0(wide, ChunkSum::Pipelined),
                want,
                "f = {wide}"
            );
        }
        for (dt, h) in [(DType::BF16, Half::Bf16), (DType::F16, Half::F16)] {
            assert_eq!(Half::of(dt), Some(h));
            for level in [Level::Zero, Level::Higher] {
                for form in [ChunkSum::Batched, ChunkSum::Pipelined] {
                    let k = Kernel::of(Family::ScatterHalf(level, form, h, v));
                    assert_eq!(k.dtype(), Some(dt), "{}", k.name());
                    assert_eq!(
                        k.binding().map(|b| b.1.to_string()),
                        Some(format!("{}{cty}", dt.name()))
                    );
                    let zero = k.name().starts_with("scatter0");
                    assert_eq!(zero, level == Level::Zero, "{}", k.name());
                    assert_eq!(k.name().contains("p_"), form == ChunkSum::Pipelined);
                }
            }
            for widen in [false, true] {
                let k = Kernel::of(if widen {
                    Family::Widen(h)
                } else {
                    Family::Narrow(h)
                });
                assert_eq!(k.dtype(), Some(dt));
                assert_eq!(k.name().starts_with("widen"), widen);
            }
        }
    }
    assert_eq!(Half::of(DType::F32), None);
    assert_eq!(Half::of(DType::F64), None);
}

#[test]
fn choices_pick_by_size() {
    assert_eq!(Word::dividing(256), Word::B16);
    assert_eq!(Word::dividing(12), Word::B4);
    assert_eq!(Word::dividing(8), Word::B8);
    assert_eq!(Tile::pick(4_211_136, 32, Word::B4, false), Tile::T128x32);
    assert_eq!(Tile::pick(32, 4_211_136, Word::B4, false), Tile::T32x128);
    assert_eq!(Tile::pick(8192, 8192, Word::B4, false), Tile::T64x64);
    assert_eq!(Tile::pick(8192, 8192, Word::B16, false), Tile::T32x32);
    assert_eq!(Tile::pick(8192, 8192, Word::B4, true), Tile::T32x32);
    // the scatter's vector: by row bytes alone when align is the row's length
    for f in 1..40usize {
        let want = if f % 4 == 0 {
            16
        } else if f % 2 == 0 {
            8
        } else {
            4
        };
        assert_eq!(
            SumVec::pick(DType::F32, 4 * f, f, "test").unwrap().bytes(),
            want
        );
        assert_eq!(
            SumVec::pick(DType::F64, 8 * f, f, "test").unwrap().bytes(),
            if f % 2 == 0 { 16 } else { 8 }
        );
    }
}

/// The segment families' half kernels: the typed pickers and the fused
/// level 0's give kernels of the launcher's signature, of the half element,
/// named for it; the level-0 vector never straddles a head.
#[test]
fn segment_pickers_give_half_kernels_of_the_launchers_signature() {
    use Signature as S;
    let typed = [
        (ModelOp::Segmax0, S::Segmax0),
        (ModelOp::Segmax, S::Segmax),
        (ModelOp::SoftmaxExp, S::SoftmaxExp),
        (ModelOp::SoftmaxDiv, S::SoftmaxDiv),
        (ModelOp::SoftmaxBwd, S::SoftmaxBwd),
    ];
    for (t, h, dt) in [
        (Float::Bf16, Half::Bf16, DType::BF16),
        (Float::F16, Half::F16, DType::F16),
    ] {
        for (family, sig) in typed {
            let k = Kernel::of(Family::Model(family, t));
            assert_eq!((k.signature(), k.dtype()), (sig, Some(dt)), "{}", k.name());
            assert!(
                k.name().ends_with(&format!("_{}", dt.name())),
                "{}",
                k.name()
            );
        }
        for (op, sig, base) in [
            (Fused0::Read, S::Sum0, "sum0"),
            (Fused0::Add, S::Sum0, "sum0a"),
            (Fused0::SoftmaxBwd, S::SoftmaxBwdSum0, "softmax_bwd_sum0"),
            (Fused0::GatherScale, S::GatherScaleSum0, "gather_scale_sum0"),
        ] {
            for v in [HalfVec::X8, HalfVec::X4, HalfVec::X2, HalfVec::X1] {
                let k = Kernel::of(Family::Fused0Half(op, h, v));
                assert_eq!((k.signature(), k.dtype()), (sig, Some(dt)), "{}", k.name());
                assert_eq!(k.name(), format!("{base}_{}x{}", dt.name(), v.elems()));
            }
        }
    }
    // (row elements, head channels) -> halves per vector
    for (f, align, n) in [
        (64, 64, 8),
        (64, 16, 8),
        (48, 12, 4),
        (24, 6, 2),
        (12, 3, 1),
        (6, 6, 2),
        (8, 2, 2),
        (7, 7, 1),
    ] {
        let v = HalfVec::pick_aligned(f, align);
        assert_eq!(v.elems(), n, "f {f}, align {align}");
        assert!(f % n == 0 && align % n == 0);
    }
}

/// The pickers give kernels of the signature and element their launchers
/// are called with (a typed launcher refuses any other at run time, so a
/// mismatch here would be an error on the device).
#[test]
fn pickers_give_kernels_of_the_launchers_signature_and_element() {
    use Signature as S;
    let typed = [
        (ModelOp::Unary, S::Unary),
        (ModelOp::UnaryBwd, S::UnaryBwd),
        (ModelOp::Binary, S::Binary),
        (ModelOp::Axpy, S::Axpy),
        (ModelOp::SumBiasRelu, S::SumBiasRelu),
        (ModelOp::GatherAdd, S::GatherAdd),
        (ModelOp::HeadScale, S::HeadScale),
        (ModelOp::HeadDot, S::HeadDot),
        (ModelOp::GatherHeadDot, S::GatherHeadDot),
        (ModelOp::ReduceRows, S::ReduceRows),
        (ModelOp::HeadScaleRows, S::HeadScaleRows),
        (ModelOp::MatmulDot, S::Matmul),
        (ModelOp::Segmax0, S::Segmax0),
        (ModelOp::Segmax, S::Segmax),
        (ModelOp::SoftmaxExp, S::SoftmaxExp),
        (ModelOp::SoftmaxDiv, S::SoftmaxDiv),
        (ModelOp::SoftmaxBwd, S::SoftmaxBwd),
    ];
    let train = [
        (Train::Dropout, S::Dropout),
        (Train::CrossEntropy, S::CrossEntropy),
        (Train::Regression, S::Regression),
        (Train::Adam, S::Adam),
        (Train::Sgd, S::Sgd),
        (Train::Ln, S::LnProbe),
    ];
    for t in [Float::F32, Float::F64, Float::Bf16, Float::F16] {
        for (family, sig) in train {
            let k = Kernel::of(Family::Train(family, t));
            assert_eq!(
                (k.signature(), k.dtype()),
                (sig, Some(t.dtype())),
                "{}",
                k.name()
            );
            assert!(
                k.name().ends_with(&format!("_{}", t.dtype().name())),
                "{}",
                k.name()
            );
        }
        for (family, sig) in typed {
            let k = Kernel::of(Family::Model(family, t));
            assert_eq!(
                (k.signature(), k.dtype()),
                (sig, Some(t.dtype())),
                "{}",
                k.name()
            );
        }
        for tile in [
            MatmulTile::T64x64,
            MatmulTile::T32x64,
            MatmulTile::T64x32,
            MatmulTile::T32x32,
        ] {
            let k = Kernel::of(Family::Matmul(t, tile));
            assert_eq!(
                (k.signature(), k.dtype()),
                (S::Matmul, Some(t.dtype())),
                "{}",
                k.name()
            );
        }
    }
    let vecs = [
        (SumVec::F32x4, DType::F32),
        (SumVec::F32x2, DType::F32),
        (SumVec::F32x1, DType::F32),
        (SumVec::F64x2, DType::F64),
        (SumVec::F64x1, DType::F64),
    ];
    for (v, d) in vecs {
        for level in [Level::Zero, Level::Higher] {
            for form in [ChunkSum::Batched, ChunkSum::Pipelined] {
                let k = Kernel::of(Family::Scatter(level, form, v));
                assert_eq!(
                    (k.signature(), k.dtype()),
                    (S::Scatter, Some(d)),
                    "{}",
                    k.name()
                );
            }
        }
        for (op, sig) in [
            (Fused0::Read, S::Sum0),
            (Fused0::Add, S::Sum0),
            (Fused0::SoftmaxBwd, S::SoftmaxBwdSum0),
            (Fused0::GatherScale, S::GatherScaleSum0),
        ] {
            let k = Kernel::of(Family::Fused0(op, v));
            assert_eq!((k.signature(), k.dtype()), (sig, Some(d)), "{}", k.name());
        }
    }
    for w in [Word::B4, Word::B8, Word::B16] {
        for (k, sig) in [
            (Kernel::gather(w), S::Gather),
            (Kernel::of(Family::TransposeRuns(w)), S::TransposeRuns),
            (Kernel::of(Family::Permute(w)), S::Permute),
            (
                Kernel::of(Family::Transpose(w, Tile::T32x32)),
                S::TransposeTiled,
            ),
        ] {
            assert_eq!((k.signature(), k.dtype()), (sig, None), "{}", k.name());
        }
    }
    for kind in [SpanKind::Planes, SpanKind::Rows, SpanKind::Cols] {
        for w in [Word::B4, Word::B8] {
            let k = Kernel::of(Family::TransposeSpan(kind, w));
            assert_eq!(k.signature(), S::TransposeSpan, "{}", k.name());
        }
    }
    assert_eq!(Kernel::TransposeBulkB4.signature(), S::TransposeBulk);
}
