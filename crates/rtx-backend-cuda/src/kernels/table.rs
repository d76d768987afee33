//! The kernel table: every `extern "C" __global__` entry point of
//! kernels/*.cu with its parameters, listed once (`with_kernel_table!`
//! below), and the [`Family`] choice that picks each (`table/choice.rs`).
//! No kernel name is ever assembled from strings: a launch names a
//! [`Kernel`] (`Kernel::of(Family::...)` or a kernel of its own), so a
//! wrong name cannot compile, and a table entry the module lacks is an
//! error value when the module loads. No argument is pushed by hand: a
//! launch fills the fields of its signature's typed launcher.
//!
//! A kernel is written once: a kernel-defining macro in kernels/*.cu (or a
//! kernel written out there), and one table entry per instantiation, whose
//! `by` clause `source.rs` turns into the macro's invocation in the
//! translation unit, where the file's `// @kernels MACRO` line stands.
//!
//! Plain host code (no device): the tests compare the table with
//! kernels/*.cu (`table_tests.rs`: the macros and written-out kernels;
//! `table_sig_tests.rs`: the parameters) and with the kernels and choices
//! of before the instantiations were generated (`table/pinned_tests.rs`).

use rtx_backend::DType;

use crate::kernels::signature::kernel_enum;

/// The kernel table, the one place a kernel's name and parameters are
/// written: calls `$cb!` with it (`signature::kernel_enum!` here for the
/// [`Kernel`] and [`Signature`] enums, `kernels/launch.rs`'s `launchers!` for
/// one typed launcher per signature). A signature lists its parameters as
/// kernels/*.cu does, names and types in order (the vocabulary is in
/// `signature.rs`); a kernel names its signature and the type it binds to
/// the signature's letter, then `by MACRO("args")`: the kernel-defining
/// macro of kernels/*.cu that instantiates it and the arguments after the
/// name (no `by`: written out in its file), then `for` the [`Family`]
/// choice (a pattern) that picks it, if any. `table_sig_tests.rs` fails on
/// any difference of parameter name, type, order or count.
macro_rules! with_kernel_table {
    ($cb:ident) => {
        $cb! {
            signatures {
                // index.cu
                /// `gather_b*`: rows of `W` words through `idx`.
                Gather[E](src: *const E, out: *mut E, idx: *const u32, nrows: u64, W: u64, lanes_log2: u32);
                /// `scatter{0,N}{,p}_*`: one level of the canonical scatter chain.
                Scatter[V](
                    vals: *const V, pos: *const u32, cstart: *const u32, crow: *const u32,
                    cslot: *const u32, nchunks: u64, W: u64, lanes_log2: u32, dst: *mut V, next: *mut V,
                );
                /// `scatter{0,N}{,p}_{bf16,f16}x*`: one level of the canonical scatter
                /// chain into half storage, f32 sums (`vals` level 0's rows, `acc`
                /// the previous level's f32 scratch).
                ScatterHalf[V](
                    vals: *const V, acc: *const f32, pos: *const u32, cstart: *const u32,
                    crow: *const u32, cslot: *const u32, nchunks: u64, W: u64, lanes_log2: u32,
                    dst: *mut V, next: *mut f32,
                );
                /// `narrow_{bf16,f16}`: f32 rounded to half storage.
                Narrow[V](r#in: *const f32, out: *mut V, n: u64);
                /// `widen_{bf16,f16}`: half storage widened to f32.
                Widen[V](r#in: *const V, out: *mut f32, n: u64);
                /// `axpy_mixed_{bf16,f16}`: f32 master weights updated from a
                /// half gradient, and rounded to half.
                AxpyMixed[V](y: *mut f32, x: *const V, low: *mut V, n: u64, alpha: f32);
                /// `{narrow,widen}_all_{bf16,f16}`: `narrow_*` / `widen_*` over
                /// many tensors in one launch (`tab`: three words per tensor,
                /// the input's and output's addresses and n; `blocks`: a word
                /// per block, tensor and chunk of `len` elements).
                ConvertAll[](tab: *const u64, blocks: *const u64, len: u64);
                // permute.cu
                /// `transpose_{planes,rows,cols}_b*`.
                TransposeSpan[E](r#in: *const E, out: *mut E, q: SpanParams);
                /// `transpose{TR}x{TC}_b*`.
                TransposeTiled[E](r#in: *const E, out: *mut E, p: TileParams);
                /// `transpose_bulk_b4`: tensor maps of the input and output.
                TransposeBulk[](min: TensorMap, mout: TensorMap, p: TileParams);
                /// `transpose_runs_b*`.
                TransposeRuns[E](r#in: *const E, out: *mut E, nruns: u64, W: u64, lanes_log2: u32, rows: u64, cols: u64);
                /// `permute_b*`.
                Permute[E](r#in: *const E, out: *mut E, nruns: u64, W: u64, lanes_log2: u32, p: PermuteParams);
                /// `permute_lines_b16`: runs shorter than a line in a blocked walk.
                PermuteLines[E](r#in: *const E, out: *mut E, nruns: u64, W: u64, lanes_log2: u32, p: LinesParams);
                // model.cu, dense.cu, segment.cu
                /// `unary_*`.
                Unary[T](x: *const T, out: *mut T, n: u64, op: u32, s: A);
                /// `unary_bwd_*`.
                UnaryBwd[T](x: *const T, g: *const T, out: *mut T, n: u64, op: u32, s: A);
                /// `binary_*`.
                Binary[T](a: *const T, b: *const T, out: *mut T, n: u64, op: u32, f: u64);
                /// `axpy_*`.
                Axpy[T](y: *mut T, x: *const T, n: u64, alpha: A);
                /// `sum_bias_relu_*`.
                SumBiasRelu[T](p: BiasParts, out: *mut T, n: u64, f: u64);
                /// `gather_add_*`.
                GatherAdd[T](a: *const T, ai: *const u32, b: *const T, bi: *const u32, out: *mut T, e: u64, f: u64);
                /// `head_scale_*`.
                HeadScale[T](
                    x: *const T, a: *const T, s: *const T, out: *mut T, n: u64, heads: u64, c: u64, a_bcast: u32,
                );
                /// `head_dot_*`.
                HeadDot[T](a: *const T, b: *const T, out: *mut T, n: u64, heads: u64, c: u64, b_bcast: u32);
                /// `gather_head_dot_*`.
                GatherHeadDot[T](
                    a: *const T, ai: *const u32, b: *const T, bi: *const u32, out: *mut T, e: u64, heads: u64, c: u64,
                );
                /// `reduce_rows_*`: the column sums of stored rows (`in`) or,
                /// when `acc` is not null, of f32 scratch rows for a half type.
                ReduceRows[T](r#in: *const T, acc: *const A, n: u64, f: u64, cl: RrClimb);
                /// `head_scale_rows_*`.
                HeadScaleRows[T](a: *const T, s: *const T, n: u64, f: u64, c: u64, a_rs: u64, cl: RrClimb);
                /// `matmul{TM}x{TN}_*` and `matmul_dot_*`: the product into
                /// `out` (one chunk), or its chunk sums into `part` when it is
                /// not null.
                Matmul[T](
                    a: *const T, b: *const T, out: *mut T, part: *mut A, m: u64, n: u64, k: u64,
                    a_rs: u64, a_ps: u64, b_ps: u64, b_js: u64,
                );
                /// `segmax0_*`: level 0 of a segment max (the next level's
                /// scratch in the type computed in).
                Segmax0[T](
                    vals: *const T, pos: *const u32, wfirst: *const u32, cstart: *const u32, crow: *const u32,
                    cslot: *const u32, nchunks: u64, W: u64, lanes_log2: u32, dst: *mut T, next: *mut A,
                );
                /// `segmax_*`: the levels past 0 of a segment max (`vals` the
                /// previous level's scratch).
                Segmax[T](
                    vals: *const A, pos: *const u32, cstart: *const u32, crow: *const u32, cslot: *const u32,
                    nchunks: u64, f: u64, dst: *mut T, next: *mut A,
                );
                /// `softmax_exp_*`: the numerators, in the type computed in.
                SoftmaxExp[T](x: *const T, m: *const T, rowof: *const u32, out: *mut A, e: u64, f: u64);
                /// `softmax_div_*`: numerators and sums in the type computed in.
                SoftmaxDiv[T](ex: *const A, s: *const A, rowof: *const u32, out: *mut T, e: u64, f: u64);
                /// `softmax_bwd_*`: the sums in the type computed in.
                SoftmaxBwd[T](
                    alpha: *const T, g: *const T, s: *const A, rowof: *const u32, out: *mut T, e: u64, f: u64,
                );
                /// `sum0_*`, `sum0a_*`: level 0 of a segment sum of stored rows
                /// (`sum0a`: each row's sum added to what dst holds; the next
                /// level's scratch in the type computed in).
                Sum0[V](
                    vals: *const V, pos: *const u32, wfirst: *const u32, cstart: *const u32, crow: *const u32,
                    cslot: *const u32, nchunks: u64, W: u64, lanes_log2: u32, dst: *mut V, next: *mut A,
                );
                /// `softmax_bwd_sum0_*`: level 0 of the segment softmax's backward sums
                /// (sums and scratch in the type computed in).
                SoftmaxBwdSum0[V](
                    alpha: *const V, g: *const V, pos: *const u32, wfirst: *const u32, cstart: *const u32,
                    crow: *const u32, cslot: *const u32, nchunks: u64, W: u64, lanes_log2: u32, dst: *mut A,
                    next: *mut A,
                );
                /// `gather_scale_sum0_*`: level 0 of gather_scale_scatter (the next level's
                /// scratch in the type computed in).
                GatherScaleSum0[V](
                    x: *const V, gather: *const u32, w: *const T, heads: u64, vecs_per_head: u64,
                    pos: *const u32, wfirst: *const u32, cstart: *const u32, crow: *const u32,
                    cslot: *const u32, nchunks: u64, W: u64, lanes_log2: u32, dst: *mut V, next: *mut A,
                );
                // plan.cu
                /// `index_bounds`.
                IndexBounds[](idx: *const u32, n: u64, bound: u64, check: u32, info: *mut u64);
                /// `plan_hist`.
                PlanHist[](keys: *const u32, n: u64, shift: u32, dbits: u32, ntiles: u64, items: u32, counts: *mut u32);
                /// `plan_rank`.
                PlanRank[](
                    keys: *const u32, vals: *const u32, n: u64, shift: u32, dbits: u32, ntiles: u64,
                    items: u32, offs: *const u32, keys_out: *mut u32, vals_out: *mut u32,
                );
                /// `scan_sums_u32`.
                ScanSums[](r#in: *const u32, n: u64, sums: *mut u32);
                /// `scan_spine_u32`.
                ScanSpine[](sums: *mut u32, ntiles: u64);
                /// `scan_apply_u32`.
                ScanApply[](r#in: *const u32, n: u64, sums: *const u32, out: *mut u32);
                /// `scan_single_u32`: the three scan launches in one block.
                ScanSingle[](r#in: *const u32, n: u64, out: *mut u32);
                /// `plan_offsets` (`iota` null, or the positions of a list
                /// sorted already: written as the identity).
                PlanOffsets[](skeys: *const u32, n: u64, rows: u64, off: *mut u32, iota: *mut u32);
                /// `lvl0_sums`.
                Lvl0Sums[](off: *const u32, rows: u64, sums: *mut Level0Counts);
                /// `lvl0_spine`.
                Lvl0Spine[](sums: *mut Level0Counts, ntiles: u64, info: *mut u64);
                /// `lvl0_apply`.
                Lvl0Apply[](off: *const u32, rows: u64, sums: *const Level0Counts, out: *mut Level0Counts);
                /// `lvl0_single`: level 0's three scan launches in one block.
                Lvl0Single[](off: *const u32, rows: u64, out: *mut Level0Counts, info: *mut u64);
                /// `lvl0_fill`.
                Lvl0Fill[](
                    off: *const u32, rows: u64, scan: *const Level0Counts, info: *const u64, n: u64, cstart: *mut u32,
                    crow: *mut u32, cslot: *mut u32, list: *mut u32, wfirst: *mut u32,
                );
                /// `plan_levels`.
                PlanLevels[](list_a: *mut u32, list_b: *mut u32, hi: *mut u32, n: u64, info: *mut u64);
                /// The `*_many` kernels of a batch of plan builds (`indices::batch`).
                PlanMany[](items: *const PlanItem);
                /// The `*_many` kernels of one radix pass of a batch.
                PlanPassMany[](items: *const PlanItem, pass: u32);
                /// `index_random`.
                IndexRandom[](out: *mut u32, n: u64, seed: u64, start: u64, rows: u64, hub: u32);
                /// `index_repeat`.
                IndexRepeat[](out: *mut u32, n: u64, times: u64, offset: u64);
                /// `index_shift`.
                IndexShift[](src: *const u32, n: u64, offset: u32, out: *mut u32);
                // sample.cu
                /// `gather_u32`.
                GatherU32[](src: *const u32, idx: *const u32, n: u64, out: *mut u32);
                /// `sample_count`.
                SampleCount[](off: *const u32, front: *const u32, n: u64, fanout: u32, counts: *mut u32);
                /// `sample_pick`.
                SamplePick[](
                    off: *const u32, nbr: *const u32, front: *const u32, n: u64, lo: u64, fanout: u32,
                    key: u64, eoff: *const u32, cand: *mut u32, dstl: *mut u32,
                );
                /// `relabel_claim`.
                RelabelClaim[](cand: *const u32, m: u64, map: *mut u32);
                /// `relabel_flag`.
                RelabelFlag[](cand: *const u32, m: u64, map: *const u32, flags: *mut u32);
                /// `relabel_assign`.
                RelabelAssign[](
                    cand: *const u32, m: u64, flags: *const u32, pos: *const u32, base: u64, map: *mut u32,
                    fresh: *mut u32,
                );
                /// `relabel_apply`.
                RelabelApply[](cand: *const u32, m: u64, map: *const u32, local: *mut u32);
                // train.cu
                /// `dropout_*`: inverted dropout, element `i` kept iff
                /// `unit(seed, i) >= p`, kept ones times `s`.
                Dropout[T](x: *const T, out: *mut T, n: u64, p: f64, seed: u64, s: A);
                /// `cross_entropy_*`: softmax cross-entropy, a thread per row.
                CrossEntropy[T](
                    z: *const T, labels: *const u32, loss: *mut A, grad: *mut T, m: u64, c: u64, scale: A,
                );
                /// `regression_*`: MSE (`l1 == 0`) or L1, a thread per row.
                Regression[T](
                    y: *const T, t: *const A, loss: *mut A, grad: *mut T, m: u64, d: u64, l1: u32, scale: A,
                );
                /// `adam_*`: one multi-tensor Adam / AdamW step (`tab`: five
                /// words per tensor; `blocks`: a word per block, tensor and
                /// chunk of `len` elements).
                Adam[T](
                    tab: *const u64, blocks: *const u64, len: u64, gs: A, wd: A, omb1: A, beta2: A,
                    omb2: A, decay: A, step_size: A, bc2_sqrt: A, eps: A, flags: u32,
                );
                /// `sgd_*`: one multi-tensor SGD step (tables as `adam_*`).
                Sgd[T](
                    tab: *const u64, blocks: *const u64, len: u64, gs: A, wd: A, momentum: A, omd: A,
                    lr: A, flags: u32,
                );
                /// `ln_*`: the portable ln elementwise (for the GPU tests).
                LnProbe[T](x: *const T, out: *mut T, n: u64);
            }
            kernels {
                // index.cu: gather
                GatherB16 = "gather_b16": Gather[E = uint4] by RTX_GATHER("uint4") for Gather(Word::B16),
                GatherB8 = "gather_b8": Gather[E = uint2] by RTX_GATHER("uint2") for Gather(Word::B8),
                GatherB4 = "gather_b4": Gather[E = u32] by RTX_GATHER("u32") for Gather(Word::B4),
                GatherB2 = "gather_b2": Gather[E = u16] by RTX_GATHER("u16") for Gather(Word::B2),
                // index.cu: scatter levels {0: through positions, N: scratch} x {batched, pipelined}
                Scatter0F32x4 = "scatter0_f32x4": Scatter[V = float4] by RTX_SCATTER("float4, true, false") for Scatter(Level::Zero, ChunkSum::Batched, SumVec::F32x4),
                Scatter0F32x2 = "scatter0_f32x2": Scatter[V = float2] by RTX_SCATTER("float2, true, false") for Scatter(Level::Zero, ChunkSum::Batched, SumVec::F32x2),
                Scatter0F32x1 = "scatter0_f32x1": Scatter[V = float] by RTX_SCATTER("float, true, false") for Scatter(Level::Zero, ChunkSum::Batched, SumVec::F32x1),
                Scatter0F64x2 = "scatter0_f64x2": Scatter[V = double2] by RTX_SCATTER("double2, true, false") for Scatter(Level::Zero, ChunkSum::Batched, SumVec::F64x2),
                Scatter0F64x1 = "scatter0_f64x1": Scatter[V = double] by RTX_SCATTER("double, true, false") for Scatter(Level::Zero, ChunkSum::Batched, SumVec::F64x1),
                Scatter0pF32x4 = "scatter0p_f32x4": Scatter[V = float4] by RTX_SCATTER("float4, true, true") for Scatter(Level::Zero, ChunkSum::Pipelined, SumVec::F32x4),
                Scatter0pF32x2 = "scatter0p_f32x2": Scatter[V = float2] by RTX_SCATTER("float2, true, true") for Scatter(Level::Zero, ChunkSum::Pipelined, SumVec::F32x2),
                Scatter0pF32x1 = "scatter0p_f32x1": Scatter[V = float] by RTX_SCATTER("float, true, true") for Scatter(Level::Zero, ChunkSum::Pipelined, SumVec::F32x1),
                Scatter0pF64x2 = "scatter0p_f64x2": Scatter[V = double2] by RTX_SCATTER("double2, true, true") for Scatter(Level::Zero, ChunkSum::Pipelined, SumVec::F64x2),
                Scatter0pF64x1 = "scatter0p_f64x1": Scatter[V = double] by RTX_SCATTER("double, true, true") for Scatter(Level::Zero, ChunkSum::Pipelined, SumVec::F64x1),
                ScatterNF32x4 = "scatterN_f32x4": Scatter[V = float4] by RTX_SCATTER("float4, false, false") for Scatter(Level::Higher, ChunkSum::Batched, SumVec::F32x4),
                ScatterNF32x2 = "scatterN_f32x2": Scatter[V = float2] by RTX_SCATTER("float2, false, false") for Scatter(Level::Higher, ChunkSum::Batched, SumVec::F32x2),
                ScatterNF32x1 = "scatterN_f32x1": Scatter[V = float] by RTX_SCATTER("float, false, false") for Scatter(Level::Higher, ChunkSum::Batched, SumVec::F32x1),
                ScatterNF64x2 = "scatterN_f64x2": Scatter[V = double2] by RTX_SCATTER("double2, false, false") for Scatter(Level::Higher, ChunkSum::Batched, SumVec::F64x2),
                ScatterNF64x1 = "scatterN_f64x1": Scatter[V = double] by RTX_SCATTER("double, false, false") for Scatter(Level::Higher, ChunkSum::Batched, SumVec::F64x1),
                ScatterNpF32x4 = "scatterNp_f32x4": Scatter[V = float4] by RTX_SCATTER("float4, false, true") for Scatter(Level::Higher, ChunkSum::Pipelined, SumVec::F32x4),
                ScatterNpF32x2 = "scatterNp_f32x2": Scatter[V = float2] by RTX_SCATTER("float2, false, true") for Scatter(Level::Higher, ChunkSum::Pipelined, SumVec::F32x2),
                ScatterNpF32x1 = "scatterNp_f32x1": Scatter[V = float] by RTX_SCATTER("float, false, true") for Scatter(Level::Higher, ChunkSum::Pipelined, SumVec::F32x1),
                ScatterNpF64x2 = "scatterNp_f64x2": Scatter[V = double2] by RTX_SCATTER("double2, false, true") for Scatter(Level::Higher, ChunkSum::Pipelined, SumVec::F64x2),
                ScatterNpF64x1 = "scatterNp_f64x1": Scatter[V = double] by RTX_SCATTER("double, false, true") for Scatter(Level::Higher, ChunkSum::Pipelined, SumVec::F64x1),
                // index.cu: scatter levels into half storage
                Scatter0Bf16x8 = "scatter0_bf16x8": ScatterHalf[V = bf16x8] by RTX_SCATTER_HALF("Bf16, bf16x8, f32x8, true, false, 3") for ScatterHalf(Level::Zero, ChunkSum::Batched, Half::Bf16, HalfVec::X8),
                Scatter0F16x8 = "scatter0_f16x8": ScatterHalf[V = f16x8] by RTX_SCATTER_HALF("F16, f16x8, f32x8, true, false, 3") for ScatterHalf(Level::Zero, ChunkSum::Batched, Half::F16, HalfVec::X8),
                ScatterNBf16x8 = "scatterN_bf16x8": ScatterHalf[V = bf16x8] by RTX_SCATTER_HALF("Bf16, bf16x8, f32x8, false, false, 2") for ScatterHalf(Level::Higher, ChunkSum::Batched, Half::Bf16, HalfVec::X8),
                ScatterNF16x8 = "scatterN_f16x8": ScatterHalf[V = f16x8] by RTX_SCATTER_HALF("F16, f16x8, f32x8, false, false, 2") for ScatterHalf(Level::Higher, ChunkSum::Batched, Half::F16, HalfVec::X8),
                Scatter0pBf16x8 = "scatter0p_bf16x8": ScatterHalf[V = bf16x8] by RTX_SCATTER_HALF("Bf16, bf16x8, f32x8, true, true, 1") for ScatterHalf(Level::Zero, ChunkSum::Pipelined, Half::Bf16, HalfVec::X8),
                Scatter0pF16x8 = "scatter0p_f16x8": ScatterHalf[V = f16x8] by RTX_SCATTER_HALF("F16, f16x8, f32x8, true, true, 1") for ScatterHalf(Level::Zero, ChunkSum::Pipelined, Half::F16, HalfVec::X8),
                ScatterNpBf16x8 = "scatterNp_bf16x8": ScatterHalf[V = bf16x8] by RTX_SCATTER_HALF("Bf16, bf16x8, f32x8, false, true, 1") for ScatterHalf(Level::Higher, ChunkSum::Pipelined, Half::Bf16, HalfVec::X8),
                ScatterNpF16x8 = "scatterNp_f16x8": ScatterHalf[V = f16x8] by RTX_SCATTER_HALF("F16, f16x8, f32x8, false, true, 1") for ScatterHalf(Level::Higher, ChunkSum::Pipelined, Half::F16, HalfVec::X8),
                Scatter0Bf16x4 = "scatter0_bf16x4": ScatterHalf[V = bf16x4] by RTX_SCATTER_HALF("Bf16, bf16x4, float4, true, false, 4") for ScatterHalf(Level::Zero, ChunkSum::Batched, Half::Bf16, HalfVec::X4),
                Scatter0Bf16x2 = "scatter0_bf16x2": ScatterHalf[V = bf16x2] by RTX_SCATTER_HALF("Bf16, bf16x2, float2, true, false, 4") for ScatterHalf(Level::Zero, ChunkSum::Batched, Half::Bf16, HalfVec::X2),
                Scatter0Bf16x1 = "scatter0_bf16x1": ScatterHalf[V = bf16] by RTX_SCATTER_HALF("Bf16, bf16, float, true, false, 4") for ScatterHalf(Level::Zero, ChunkSum::Batched, Half::Bf16, HalfVec::X1),
                Scatter0F16x4 = "scatter0_f16x4": ScatterHalf[V = f16x4] by RTX_SCATTER_HALF("F16, f16x4, float4, true, false, 4") for ScatterHalf(Level::Zero, ChunkSum::Batched, Half::F16, HalfVec::X4),
                Scatter0F16x2 = "scatter0_f16x2": ScatterHalf[V = f16x2] by RTX_SCATTER_HALF("F16, f16x2, float2, true, false, 4") for ScatterHalf(Level::Zero, ChunkSum::Batched, Half::F16, HalfVec::X2),
                Scatter0F16x1 = "scatter0_f16x1": ScatterHalf[V = f16] by RTX_SCATTER_HALF("F16, f16, float, true, false, 4") for ScatterHalf(Level::Zero, ChunkSum::Batched, Half::F16, HalfVec::X1),
                ScatterNBf16x4 = "scatterN_bf16x4": ScatterHalf[V = bf16x4] by RTX_SCATTER_HALF("Bf16, bf16x4, float4, false, false, 4") for ScatterHalf(Level::Higher, ChunkSum::Batched, Half::Bf16, HalfVec::X4),
                ScatterNBf16x2 = "scatterN_bf16x2": ScatterHalf[V = bf16x2] by RTX_SCATTER_HALF("Bf16, bf16x2, float2, false, false, 4") for ScatterHalf(Level::Higher, ChunkSum::Batched, Half::Bf16, HalfVec::X2),
                ScatterNBf16x1 = "scatterN_bf16x1": ScatterHalf[V = bf16] by RTX_SCATTER_HALF("Bf16, bf16, float, false, false, 4") for ScatterHalf(Level::Higher, ChunkSum::Batched, Half::Bf16, HalfVec::X1),
                ScatterNF16x4 = "scatterN_f16x4": ScatterHalf[V = f16x4] by RTX_SCATTER_HALF("F16, f16x4, float4, false, false, 4") for ScatterHalf(Level::Higher, ChunkSum::Batched, Half::F16, HalfVec::X4),
                ScatterNF16x2 = "scatterN_f16x2": ScatterHalf[V = f16x2] by RTX_SCATTER_HALF("F16, f16x2, float2, false, false, 4") for ScatterHalf(Level::Higher, ChunkSum::Batched, Half::F16, HalfVec::X2),
                ScatterNF16x1 = "scatterN_f16x1": ScatterHalf[V = f16] by RTX_SCATTER_HALF("F16, f16, float, false, false, 4") for ScatterHalf(Level::Higher, ChunkSum::Batched, Half::F16, HalfVec::X1),
                Scatter0pBf16x4 = "scatter0p_bf16x4": ScatterHalf[V = bf16x4] by RTX_SCATTER_HALF("Bf16, bf16x4, float4, true, true, 1") for ScatterHalf(Level::Zero, ChunkSum::Pipelined, Half::Bf16, HalfVec::X4),
                Scatter0pBf16x2 = "scatter0p_bf16x2": ScatterHalf[V = bf16x2] by RTX_SCATTER_HALF("Bf16, bf16x2, float2, true, true, 1") for ScatterHalf(Level::Zero, ChunkSum::Pipelined, Half::Bf16, HalfVec::X2),
                Scatter0pBf16x1 = "scatter0p_bf16x1": ScatterHalf[V = bf16] by RTX_SCATTER_HALF("Bf16, bf16, float, true, true, 1") for ScatterHalf(Level::Zero, ChunkSum::Pipelined, Half::Bf16, HalfVec::X1),
                Scatter0pF16x4 = "scatter0p_f16x4": ScatterHalf[V = f16x4] by RTX_SCATTER_HALF("F16, f16x4, float4, true, true, 1") for ScatterHalf(Level::Zero, ChunkSum::Pipelined, Half::F16, HalfVec::X4),
                Scatter0pF16x2 = "scatter0p_f16x2": ScatterHalf[V = f16x2] by RTX_SCATTER_HALF("F16, f16x2, float2, true, true, 1") for ScatterHalf(Level::Zero, ChunkSum::Pipelined, Half::F16, HalfVec::X2),
                Scatter0pF16x1 = "scatter0p_f16x1": ScatterHalf[V = f16] by RTX_SCATTER_HALF("F16, f16, float, true, true, 1") for ScatterHalf(Level::Zero, ChunkSum::Pipelined, Half::F16, HalfVec::X1),
                ScatterNpBf16x4 = "scatterNp_bf16x4": ScatterHalf[V = bf16x4] by RTX_SCATTER_HALF("Bf16, bf16x4, float4, false, true, 1") for ScatterHalf(Level::Higher, ChunkSum::Pipelined, Half::Bf16, HalfVec::X4),
                ScatterNpBf16x2 = "scatterNp_bf16x2": ScatterHalf[V = bf16x2] by RTX_SCATTER_HALF("Bf16, bf16x2, float2, false, true, 1") for ScatterHalf(Level::Higher, ChunkSum::Pipelined, Half::Bf16, HalfVec::X2),
                ScatterNpBf16x1 = "scatterNp_bf16x1": ScatterHalf[V = bf16] by RTX_SCATTER_HALF("Bf16, bf16, float, false, true, 1") for ScatterHalf(Level::Higher, ChunkSum::Pipelined, Half::Bf16, HalfVec::X1),
                ScatterNpF16x4 = "scatterNp_f16x4": ScatterHalf[V = f16x4] by RTX_SCATTER_HALF("F16, f16x4, float4, false, true, 1") for ScatterHalf(Level::Higher, ChunkSum::Pipelined, Half::F16, HalfVec::X4),
                ScatterNpF16x2 = "scatterNp_f16x2": ScatterHalf[V = f16x2] by RTX_SCATTER_HALF("F16, f16x2, float2, false, true, 1") for ScatterHalf(Level::Higher, ChunkSum::Pipelined, Half::F16, HalfVec::X2),
                ScatterNpF16x1 = "scatterNp_f16x1": ScatterHalf[V = f16] by RTX_SCATTER_HALF("F16, f16, float, false, true, 1") for ScatterHalf(Level::Higher, ChunkSum::Pipelined, Half::F16, HalfVec::X1),
                // index.cu: conversions between f32 and half storage
                NarrowBf16 = "narrow_bf16": Narrow[V = bf16] by RTX_NARROW("Bf16, bf16") for Narrow(Half::Bf16),
                NarrowF16 = "narrow_f16": Narrow[V = f16] by RTX_NARROW("F16, f16") for Narrow(Half::F16),
                WidenBf16 = "widen_bf16": Widen[V = bf16] by RTX_WIDEN("Bf16, bf16") for Widen(Half::Bf16),
                WidenF16 = "widen_f16": Widen[V = f16] by RTX_WIDEN("F16, f16") for Widen(Half::F16),
                AxpyMixedBf16 = "axpy_mixed_bf16": AxpyMixed[V = bf16] by RTX_AXPY_MIXED("Bf16, bf16") for AxpyMixed(Half::Bf16),
                AxpyMixedF16 = "axpy_mixed_f16": AxpyMixed[V = f16] by RTX_AXPY_MIXED("F16, f16") for AxpyMixed(Half::F16),
                NarrowAllBf16 = "narrow_all_bf16": ConvertAll[] by RTX_NARROW_ALL("Bf16, bf16") for NarrowAll(Half::Bf16),
                NarrowAllF16 = "narrow_all_f16": ConvertAll[] by RTX_NARROW_ALL("F16, f16") for NarrowAll(Half::F16),
                WidenAllBf16 = "widen_all_bf16": ConvertAll[] by RTX_WIDEN_ALL("Bf16, bf16") for WidenAll(Half::Bf16),
                WidenAllF16 = "widen_all_f16": ConvertAll[] by RTX_WIDEN_ALL("F16, f16") for WidenAll(Half::F16),
                // permute.cu
                TransposePlanesB4 = "transpose_planes_b4": TransposeSpan[E = u32] by RTX_TRANSPOSE_SPAN("transpose_planes, u32") for TransposeSpan(SpanKind::Planes, Word::B4),
                TransposePlanesB8 = "transpose_planes_b8": TransposeSpan[E = u64] by RTX_TRANSPOSE_SPAN("transpose_planes, u64") for TransposeSpan(SpanKind::Planes, Word::B8 | Word::B16),
                TransposeRowsB4 = "transpose_rows_b4": TransposeSpan[E = u32] by RTX_TRANSPOSE_SPAN("transpose_rows, u32") for TransposeSpan(SpanKind::Rows, Word::B4),
                TransposeRowsB8 = "transpose_rows_b8": TransposeSpan[E = u64] by RTX_TRANSPOSE_SPAN("transpose_rows, u64") for TransposeSpan(SpanKind::Rows, Word::B8 | Word::B16),
                TransposeColsB4 = "transpose_cols_b4": TransposeSpan[E = u32] by RTX_TRANSPOSE_SPAN("transpose_cols, u32") for TransposeSpan(SpanKind::Cols, Word::B4),
                TransposeColsB8 = "transpose_cols_b8": TransposeSpan[E = u64] by RTX_TRANSPOSE_SPAN("transpose_cols, u64") for TransposeSpan(SpanKind::Cols, Word::B8 | Word::B16),
                TransposePlanesB2 = "transpose_planes_b2": TransposeSpan[E = u16] by RTX_TRANSPOSE_SPAN("transpose_planes, u16") for TransposeSpan(SpanKind::Planes, Word::B2),
                TransposeRowsB2 = "transpose_rows_b2": TransposeSpan[E = u16] by RTX_TRANSPOSE_SPAN("transpose_rows, u16") for TransposeSpan(SpanKind::Rows, Word::B2),
                TransposeColsB2 = "transpose_cols_b2": TransposeSpan[E = u16] by RTX_TRANSPOSE_SPAN("transpose_cols, u16") for TransposeSpan(SpanKind::Cols, Word::B2),
                TransposePlanesP2 = "transpose_planes_p2": TransposeSpan[E = u16] by RTX_TRANSPOSE_SPAN_PAIRS("transpose_planes_pairs") for TransposeSpanPairs(SpanKind::Planes),
                TransposeRowsP2 = "transpose_rows_p2": TransposeSpan[E = u16] by RTX_TRANSPOSE_SPAN_PAIRS("transpose_rows_pairs") for TransposeSpanPairs(SpanKind::Rows),
                TransposeColsP2 = "transpose_cols_p2": TransposeSpan[E = u16] by RTX_TRANSPOSE_SPAN_PAIRS("transpose_cols_pairs<>") for TransposeSpanPairs(SpanKind::Cols),
                Transpose32x32B4 = "transpose32x32_b4": TransposeTiled[E = u32] by RTX_TRANSPOSE("u32, 32, 32") for Transpose(Word::B4, Tile::T32x32),
                Transpose64x64B4 = "transpose64x64_b4": TransposeTiled[E = u32] by RTX_TRANSPOSE("u32, 64, 64") for Transpose(Word::B4, Tile::T64x64),
                Transpose128x32B4 = "transpose128x32_b4": TransposeTiled[E = u32] by RTX_TRANSPOSE("u32, 128, 32") for Transpose(Word::B4, Tile::T128x32),
                Transpose32x128B4 = "transpose32x128_b4": TransposeTiled[E = u32] by RTX_TRANSPOSE("u32, 32, 128") for Transpose(Word::B4, Tile::T32x128),
                Transpose32x32B8 = "transpose32x32_b8": TransposeTiled[E = u64] by RTX_TRANSPOSE("u64, 32, 32") for Transpose(Word::B8, Tile::T32x32),
                Transpose64x64B8 = "transpose64x64_b8": TransposeTiled[E = u64] by RTX_TRANSPOSE("u64, 64, 64") for Transpose(Word::B8, Tile::T64x64),
                Transpose128x32B8 = "transpose128x32_b8": TransposeTiled[E = u64] by RTX_TRANSPOSE("u64, 128, 32") for Transpose(Word::B8, Tile::T128x32),
                Transpose32x128B8 = "transpose32x128_b8": TransposeTiled[E = u64] by RTX_TRANSPOSE("u64, 32, 128") for Transpose(Word::B8, Tile::T32x128),
                Transpose32x32B16 = "transpose32x32_b16": TransposeTiled[E = uint4] by RTX_TRANSPOSE("uint4, 32, 32") for Transpose(Word::B16, _),
                Transpose32x32B2 = "transpose32x32_b2": TransposeTiled[E = u16] by RTX_TRANSPOSE("u16, 32, 32") for Transpose(Word::B2, Tile::T32x32),
                Transpose64x64B2 = "transpose64x64_b2": TransposeTiled[E = u16] by RTX_TRANSPOSE("u16, 64, 64") for Transpose(Word::B2, Tile::T64x64),
                Transpose128x32B2 = "transpose128x32_b2": TransposeTiled[E = u16] by RTX_TRANSPOSE("u16, 128, 32") for Transpose(Word::B2, Tile::T128x32),
                Transpose32x128B2 = "transpose32x128_b2": TransposeTiled[E = u16] by RTX_TRANSPOSE("u16, 32, 128") for Transpose(Word::B2, Tile::T32x128),
                Transpose32x32P2 = "transpose32x32_p2": TransposeTiled[E = u16] by RTX_TRANSPOSE_PAIRS("32, 32") for TransposePairs(Tile::T32x32),
                Transpose64x64P2 = "transpose64x64_p2": TransposeTiled[E = u16] by RTX_TRANSPOSE_PAIRS("64, 64") for TransposePairs(Tile::T64x64),
                Transpose128x32P2 = "transpose128x32_p2": TransposeTiled[E = u16] by RTX_TRANSPOSE_PAIRS("128, 32") for TransposePairs(Tile::T128x32),
                Transpose32x128P2 = "transpose32x128_p2": TransposeTiled[E = u16] by RTX_TRANSPOSE_PAIRS("32, 128") for TransposePairs(Tile::T32x128),
                TransposeBulkB4 = "transpose_bulk_b4": TransposeBulk[] by RTX_TRANSPOSE_BULK("u32, 64, 64, RTX_BULK_STAGES, MoveWords<64, 64>"),
                TransposeBulkB2 = "transpose_bulk_b2": TransposeBulk[] by RTX_TRANSPOSE_BULK("u16, 128, 128, RTX_BULK_STAGES, MovePairs<128, 128>"),
                TransposeRunsB16 = "transpose_runs_b16": TransposeRuns[E = uint4] by RTX_TRANSPOSE_RUNS("uint4") for TransposeRuns(Word::B16),
                TransposeRunsB8 = "transpose_runs_b8": TransposeRuns[E = uint2] by RTX_TRANSPOSE_RUNS("uint2") for TransposeRuns(Word::B8),
                TransposeRunsB4 = "transpose_runs_b4": TransposeRuns[E = u32] by RTX_TRANSPOSE_RUNS("u32") for TransposeRuns(Word::B4),
                TransposeRunsB2 = "transpose_runs_b2": TransposeRuns[E = u16] by RTX_TRANSPOSE_RUNS("u16") for TransposeRuns(Word::B2),
                PermuteB16 = "permute_b16": Permute[E = uint4] by RTX_PERMUTE("uint4") for Permute(Word::B16),
                PermuteB8 = "permute_b8": Permute[E = uint2] by RTX_PERMUTE("uint2") for Permute(Word::B8),
                PermuteB4 = "permute_b4": Permute[E = u32] by RTX_PERMUTE("u32") for Permute(Word::B4),
                PermuteB2 = "permute_b2": Permute[E = u16] by RTX_PERMUTE("u16") for Permute(Word::B2),
                PermuteLinesB16 = "permute_lines_b16": PermuteLines[E = uint4],
                // model.cu, dense.cu, segment.cu: element-typed
                UnaryF32 = "unary_f32": Unary[T = float] by RTX_UNARY("float, float, KF32") for Model(ModelOp::Unary, Float::F32),
                UnaryF64 = "unary_f64": Unary[T = double] by RTX_UNARY("double, double, KF64") for Model(ModelOp::Unary, Float::F64),
                UnaryBf16 = "unary_bf16": Unary[T = bf16] by RTX_UNARY("bf16, float, KBf16") for Model(ModelOp::Unary, Float::Bf16),
                UnaryF16 = "unary_f16": Unary[T = f16] by RTX_UNARY("f16, float, KF16") for Model(ModelOp::Unary, Float::F16),
                UnaryBwdF32 = "unary_bwd_f32": UnaryBwd[T = float] by RTX_UNARY_BWD("float, float, KF32") for Model(ModelOp::UnaryBwd, Float::F32),
                UnaryBwdF64 = "unary_bwd_f64": UnaryBwd[T = double] by RTX_UNARY_BWD("double, double, KF64") for Model(ModelOp::UnaryBwd, Float::F64),
                UnaryBwdBf16 = "unary_bwd_bf16": UnaryBwd[T = bf16] by RTX_UNARY_BWD("bf16, float, KBf16") for Model(ModelOp::UnaryBwd, Float::Bf16),
                UnaryBwdF16 = "unary_bwd_f16": UnaryBwd[T = f16] by RTX_UNARY_BWD("f16, float, KF16") for Model(ModelOp::UnaryBwd, Float::F16),
                BinaryF32 = "binary_f32": Binary[T = float] by RTX_BINARY("float, KF32") for Model(ModelOp::Binary, Float::F32),
                BinaryF64 = "binary_f64": Binary[T = double] by RTX_BINARY("double, KF64") for Model(ModelOp::Binary, Float::F64),
                BinaryBf16 = "binary_bf16": Binary[T = bf16] by RTX_BINARY("bf16, KBf16") for Model(ModelOp::Binary, Float::Bf16),
                BinaryF16 = "binary_f16": Binary[T = f16] by RTX_BINARY("f16, KF16") for Model(ModelOp::Binary, Float::F16),
                AxpyF32 = "axpy_f32": Axpy[T = float] by RTX_AXPY("float, float, KF32") for Model(ModelOp::Axpy, Float::F32),
                AxpyF64 = "axpy_f64": Axpy[T = double] by RTX_AXPY("double, double, KF64") for Model(ModelOp::Axpy, Float::F64),
                AxpyBf16 = "axpy_bf16": Axpy[T = bf16] by RTX_AXPY("bf16, float, KBf16") for Model(ModelOp::Axpy, Float::Bf16),
                AxpyF16 = "axpy_f16": Axpy[T = f16] by RTX_AXPY("f16, float, KF16") for Model(ModelOp::Axpy, Float::F16),
                GatherAddF32 = "gather_add_f32": GatherAdd[T = float] by RTX_GATHER_ADD("float, KF32") for Model(ModelOp::GatherAdd, Float::F32),
                GatherAddF64 = "gather_add_f64": GatherAdd[T = double] by RTX_GATHER_ADD("double, KF64") for Model(ModelOp::GatherAdd, Float::F64),
                GatherAddBf16 = "gather_add_bf16": GatherAdd[T = bf16] by RTX_GATHER_ADD("bf16, KBf16") for Model(ModelOp::GatherAdd, Float::Bf16),
                GatherAddF16 = "gather_add_f16": GatherAdd[T = f16] by RTX_GATHER_ADD("f16, KF16") for Model(ModelOp::GatherAdd, Float::F16),
                SumBiasReluF32 = "sum_bias_relu_f32": SumBiasRelu[T = float] by RTX_SUM_BIAS_RELU("float, KF32") for Model(ModelOp::SumBiasRelu, Float::F32),
                SumBiasReluF64 = "sum_bias_relu_f64": SumBiasRelu[T = double] by RTX_SUM_BIAS_RELU("double, KF64") for Model(ModelOp::SumBiasRelu, Float::F64),
                SumBiasReluBf16 = "sum_bias_relu_bf16": SumBiasRelu[T = bf16] by RTX_SUM_BIAS_RELU("bf16, KBf16") for Model(ModelOp::SumBiasRelu, Float::Bf16),
                SumBiasReluF16 = "sum_bias_relu_f16": SumBiasRelu[T = f16] by RTX_SUM_BIAS_RELU("f16, KF16") for Model(ModelOp::SumBiasRelu, Float::F16),
                HeadScaleF32 = "head_scale_f32": HeadScale[T = float] by RTX_HEAD_SCALE("float, KF32") for Model(ModelOp::HeadScale, Float::F32),
                HeadScaleF64 = "head_scale_f64": HeadScale[T = double] by RTX_HEAD_SCALE("double, KF64") for Model(ModelOp::HeadScale, Float::F64),
                HeadScaleBf16 = "head_scale_bf16": HeadScale[T = bf16] by RTX_HEAD_SCALE("bf16, KBf16") for Model(ModelOp::HeadScale, Float::Bf16),
                HeadScaleF16 = "head_scale_f16": HeadScale[T = f16] by RTX_HEAD_SCALE("f16, KF16") for Model(ModelOp::HeadScale, Float::F16),
                HeadDotF32 = "head_dot_f32": HeadDot[T = float] by RTX_HEAD_DOT("float, KF32") for Model(ModelOp::HeadDot, Float::F32),
                HeadDotF64 = "head_dot_f64": HeadDot[T = double] by RTX_HEAD_DOT("double, KF64") for Model(ModelOp::HeadDot, Float::F64),
                HeadDotBf16 = "head_dot_bf16": HeadDot[T = bf16] by RTX_HEAD_DOT("bf16, KBf16") for Model(ModelOp::HeadDot, Float::Bf16),
                HeadDotF16 = "head_dot_f16": HeadDot[T = f16] by RTX_HEAD_DOT("f16, KF16") for Model(ModelOp::HeadDot, Float::F16),
                GatherHeadDotF32 = "gather_head_dot_f32": GatherHeadDot[T = float] by RTX_GATHER_HEAD_DOT("float, KF32") for Model(ModelOp::GatherHeadDot, Float::F32),
                GatherHeadDotF64 = "gather_head_dot_f64": GatherHeadDot[T = double] by RTX_GATHER_HEAD_DOT("double, KF64") for Model(ModelOp::GatherHeadDot, Float::F64),
                GatherHeadDotBf16 = "gather_head_dot_bf16": GatherHeadDot[T = bf16] by RTX_GATHER_HEAD_DOT("bf16, KBf16") for Model(ModelOp::GatherHeadDot, Float::Bf16),
                GatherHeadDotF16 = "gather_head_dot_f16": GatherHeadDot[T = f16] by RTX_GATHER_HEAD_DOT("f16, KF16") for Model(ModelOp::GatherHeadDot, Float::F16),
                ReduceRowsF32 = "reduce_rows_f32": ReduceRows[T = float] by RTX_REDUCE_ROWS("float, float, KF32") for Model(ModelOp::ReduceRows, Float::F32),
                ReduceRowsF64 = "reduce_rows_f64": ReduceRows[T = double] by RTX_REDUCE_ROWS("double, double, KF64") for Model(ModelOp::ReduceRows, Float::F64),
                ReduceRowsBf16 = "reduce_rows_bf16": ReduceRows[T = bf16] by RTX_REDUCE_ROWS("bf16, float, KBf16") for Model(ModelOp::ReduceRows, Float::Bf16),
                ReduceRowsF16 = "reduce_rows_f16": ReduceRows[T = f16] by RTX_REDUCE_ROWS("f16, float, KF16") for Model(ModelOp::ReduceRows, Float::F16),
                HeadScaleRowsF32 = "head_scale_rows_f32": HeadScaleRows[T = float] by RTX_HEAD_SCALE_ROWS("float, KF32") for Model(ModelOp::HeadScaleRows, Float::F32),
                HeadScaleRowsF64 = "head_scale_rows_f64": HeadScaleRows[T = double] by RTX_HEAD_SCALE_ROWS("double, KF64") for Model(ModelOp::HeadScaleRows, Float::F64),
                HeadScaleRowsBf16 = "head_scale_rows_bf16": HeadScaleRows[T = bf16] by RTX_HEAD_SCALE_ROWS("bf16, KBf16") for Model(ModelOp::HeadScaleRows, Float::Bf16),
                HeadScaleRowsF16 = "head_scale_rows_f16": HeadScaleRows[T = f16] by RTX_HEAD_SCALE_ROWS("f16, KF16") for Model(ModelOp::HeadScaleRows, Float::F16),
                Matmul64x64F32 = "matmul64x64_f32": Matmul[T = float] by RTX_MATMUL("float, float, KF32, 64, 64") for Matmul(Float::F32, MatmulTile::T64x64),
                Matmul32x64F32 = "matmul32x64_f32": Matmul[T = float] by RTX_MATMUL("float, float, KF32, 32, 64") for Matmul(Float::F32, MatmulTile::T32x64),
                Matmul64x32F32 = "matmul64x32_f32": Matmul[T = float] by RTX_MATMUL("float, float, KF32, 64, 32") for Matmul(Float::F32, MatmulTile::T64x32),
                Matmul32x32F32 = "matmul32x32_f32": Matmul[T = float] by RTX_MATMUL("float, float, KF32, 32, 32") for Matmul(Float::F32, MatmulTile::T32x32),
                Matmul64x64F64 = "matmul64x64_f64": Matmul[T = double] by RTX_MATMUL("double, double, KF64, 64, 64") for Matmul(Float::F64, MatmulTile::T64x64),
                Matmul32x64F64 = "matmul32x64_f64": Matmul[T = double] by RTX_MATMUL("double, double, KF64, 32, 64") for Matmul(Float::F64, MatmulTile::T32x64),
                Matmul64x32F64 = "matmul64x32_f64": Matmul[T = double] by RTX_MATMUL("double, double, KF64, 64, 32") for Matmul(Float::F64, MatmulTile::T64x32),
                Matmul32x32F64 = "matmul32x32_f64": Matmul[T = double] by RTX_MATMUL("double, double, KF64, 32, 32") for Matmul(Float::F64, MatmulTile::T32x32),
                Matmul64x64Bf16 = "matmul64x64_bf16": Matmul[T = bf16] by RTX_MATMUL("bf16, float, KBf16, 64, 64") for Matmul(Float::Bf16, MatmulTile::T64x64),
                Matmul32x64Bf16 = "matmul32x64_bf16": Matmul[T = bf16] by RTX_MATMUL("bf16, float, KBf16, 32, 64") for Matmul(Float::Bf16, MatmulTile::T32x64),
                Matmul64x32Bf16 = "matmul64x32_bf16": Matmul[T = bf16] by RTX_MATMUL("bf16, float, KBf16, 64, 32") for Matmul(Float::Bf16, MatmulTile::T64x32),
                Matmul32x32Bf16 = "matmul32x32_bf16": Matmul[T = bf16] by RTX_MATMUL("bf16, float, KBf16, 32, 32") for Matmul(Float::Bf16, MatmulTile::T32x32),
                Matmul64x64F16 = "matmul64x64_f16": Matmul[T = f16] by RTX_MATMUL("f16, float, KF16, 64, 64") for Matmul(Float::F16, MatmulTile::T64x64),
                Matmul32x64F16 = "matmul32x64_f16": Matmul[T = f16] by RTX_MATMUL("f16, float, KF16, 32, 64") for Matmul(Float::F16, MatmulTile::T32x64),
                Matmul64x32F16 = "matmul64x32_f16": Matmul[T = f16] by RTX_MATMUL("f16, float, KF16, 64, 32") for Matmul(Float::F16, MatmulTile::T64x32),
                Matmul32x32F16 = "matmul32x32_f16": Matmul[T = f16] by RTX_MATMUL("f16, float, KF16, 32, 32") for Matmul(Float::F16, MatmulTile::T32x32),
                MatmulDotF32 = "matmul_dot_f32": Matmul[T = float] by RTX_MATMUL_DOT("float, float, KF32") for Model(ModelOp::MatmulDot, Float::F32),
                MatmulDotF64 = "matmul_dot_f64": Matmul[T = double] by RTX_MATMUL_DOT("double, double, KF64") for Model(ModelOp::MatmulDot, Float::F64),
                MatmulDotBf16 = "matmul_dot_bf16": Matmul[T = bf16] by RTX_MATMUL_DOT("bf16, float, KBf16") for Model(ModelOp::MatmulDot, Float::Bf16),
                MatmulDotF16 = "matmul_dot_f16": Matmul[T = f16] by RTX_MATMUL_DOT("f16, float, KF16") for Model(ModelOp::MatmulDot, Float::F16),
                Segmax0F32 = "segmax0_f32": Segmax0[T = float] by RTX_SEGMAX0("float, float, KF32") for Model(ModelOp::Segmax0, Float::F32),
                Segmax0F64 = "segmax0_f64": Segmax0[T = double] by RTX_SEGMAX0("double, double, KF64") for Model(ModelOp::Segmax0, Float::F64),
                Segmax0Bf16 = "segmax0_bf16": Segmax0[T = bf16] by RTX_SEGMAX0("bf16, float, KBf16") for Model(ModelOp::Segmax0, Float::Bf16),
                Segmax0F16 = "segmax0_f16": Segmax0[T = f16] by RTX_SEGMAX0("f16, float, KF16") for Model(ModelOp::Segmax0, Float::F16),
                SegmaxF32 = "segmax_f32": Segmax[T = float] by RTX_SEGMAX("float, float, KF32") for Model(ModelOp::Segmax, Float::F32),
                SegmaxF64 = "segmax_f64": Segmax[T = double] by RTX_SEGMAX("double, double, KF64") for Model(ModelOp::Segmax, Float::F64),
                SegmaxBf16 = "segmax_bf16": Segmax[T = bf16] by RTX_SEGMAX("bf16, float, KBf16") for Model(ModelOp::Segmax, Float::Bf16),
                SegmaxF16 = "segmax_f16": Segmax[T = f16] by RTX_SEGMAX("f16, float, KF16") for Model(ModelOp::Segmax, Float::F16),
                SoftmaxExpF32 = "softmax_exp_f32": SoftmaxExp[T = float] by RTX_SOFTMAX_EXP("float, float, KF32") for Model(ModelOp::SoftmaxExp, Float::F32),
                SoftmaxExpF64 = "softmax_exp_f64": SoftmaxExp[T = double] by RTX_SOFTMAX_EXP("double, double, KF64") for Model(ModelOp::SoftmaxExp, Float::F64),
                SoftmaxExpBf16 = "softmax_exp_bf16": SoftmaxExp[T = bf16] by RTX_SOFTMAX_EXP("bf16, float, KBf16") for Model(ModelOp::SoftmaxExp, Float::Bf16),
                SoftmaxExpF16 = "softmax_exp_f16": SoftmaxExp[T = f16] by RTX_SOFTMAX_EXP("f16, float, KF16") for Model(ModelOp::SoftmaxExp, Float::F16),
                SoftmaxDivF32 = "softmax_div_f32": SoftmaxDiv[T = float] by RTX_SOFTMAX_DIV("float, float, KF32") for Model(ModelOp::SoftmaxDiv, Float::F32),
                SoftmaxDivF64 = "softmax_div_f64": SoftmaxDiv[T = double] by RTX_SOFTMAX_DIV("double, double, KF64") for Model(ModelOp::SoftmaxDiv, Float::F64),
                SoftmaxDivBf16 = "softmax_div_bf16": SoftmaxDiv[T = bf16] by RTX_SOFTMAX_DIV("bf16, float, KBf16") for Model(ModelOp::SoftmaxDiv, Float::Bf16),
                SoftmaxDivF16 = "softmax_div_f16": SoftmaxDiv[T = f16] by RTX_SOFTMAX_DIV("f16, float, KF16") for Model(ModelOp::SoftmaxDiv, Float::F16),
                SoftmaxBwdF32 = "softmax_bwd_f32": SoftmaxBwd[T = float] by RTX_SOFTMAX_BWD("float, float, KF32") for Model(ModelOp::SoftmaxBwd, Float::F32),
                SoftmaxBwdF64 = "softmax_bwd_f64": SoftmaxBwd[T = double] by RTX_SOFTMAX_BWD("double, double, KF64") for Model(ModelOp::SoftmaxBwd, Float::F64),
                SoftmaxBwdBf16 = "softmax_bwd_bf16": SoftmaxBwd[T = bf16] by RTX_SOFTMAX_BWD("bf16, float, KBf16") for Model(ModelOp::SoftmaxBwd, Float::Bf16),
                SoftmaxBwdF16 = "softmax_bwd_f16": SoftmaxBwd[T = f16] by RTX_SOFTMAX_BWD("f16, float, KF16") for Model(ModelOp::SoftmaxBwd, Float::F16),
                // segment.cu: fused level-0 kernels of the segment sums, vector-typed
                Sum0F32x4 = "sum0_f32x4": Sum0[V = float4] by RTX_SUM0("false, float4, float, IoF32x4") for Fused0(Fused0::Read, SumVec::F32x4),
                Sum0F32x2 = "sum0_f32x2": Sum0[V = float2] by RTX_SUM0("false, float2, float, IoF32x2") for Fused0(Fused0::Read, SumVec::F32x2),
                Sum0F32x1 = "sum0_f32x1": Sum0[V = float] by RTX_SUM0("false, float, float, IoF32x1") for Fused0(Fused0::Read, SumVec::F32x1),
                Sum0F64x2 = "sum0_f64x2": Sum0[V = double2] by RTX_SUM0("false, double2, double, IoF64x2") for Fused0(Fused0::Read, SumVec::F64x2),
                Sum0F64x1 = "sum0_f64x1": Sum0[V = double] by RTX_SUM0("false, double, double, IoF64x1") for Fused0(Fused0::Read, SumVec::F64x1),
                Sum0Bf16x8 = "sum0_bf16x8": Sum0[V = bf16x8] by RTX_SUM0("false, bf16x8, float, IoBf16x8") for Fused0Half(Fused0::Read, Half::Bf16, HalfVec::X8),
                Sum0Bf16x4 = "sum0_bf16x4": Sum0[V = bf16x4] by RTX_SUM0("false, bf16x4, float, IoBf16x4") for Fused0Half(Fused0::Read, Half::Bf16, HalfVec::X4),
                Sum0Bf16x2 = "sum0_bf16x2": Sum0[V = bf16x2] by RTX_SUM0("false, bf16x2, float, IoBf16x2") for Fused0Half(Fused0::Read, Half::Bf16, HalfVec::X2),
                Sum0Bf16x1 = "sum0_bf16x1": Sum0[V = bf16] by RTX_SUM0("false, bf16, float, IoBf16x1") for Fused0Half(Fused0::Read, Half::Bf16, HalfVec::X1),
                Sum0F16x8 = "sum0_f16x8": Sum0[V = f16x8] by RTX_SUM0("false, f16x8, float, IoF16x8") for Fused0Half(Fused0::Read, Half::F16, HalfVec::X8),
                Sum0F16x4 = "sum0_f16x4": Sum0[V = f16x4] by RTX_SUM0("false, f16x4, float, IoF16x4") for Fused0Half(Fused0::Read, Half::F16, HalfVec::X4),
                Sum0F16x2 = "sum0_f16x2": Sum0[V = f16x2] by RTX_SUM0("false, f16x2, float, IoF16x2") for Fused0Half(Fused0::Read, Half::F16, HalfVec::X2),
                Sum0F16x1 = "sum0_f16x1": Sum0[V = f16] by RTX_SUM0("false, f16, float, IoF16x1") for Fused0Half(Fused0::Read, Half::F16, HalfVec::X1),
                Sum0aF32x4 = "sum0a_f32x4": Sum0[V = float4] by RTX_SUM0("true, float4, float, IoF32x4") for Fused0(Fused0::Add, SumVec::F32x4),
                Sum0aF32x2 = "sum0a_f32x2": Sum0[V = float2] by RTX_SUM0("true, float2, float, IoF32x2") for Fused0(Fused0::Add, SumVec::F32x2),
                Sum0aF32x1 = "sum0a_f32x1": Sum0[V = float] by RTX_SUM0("true, float, float, IoF32x1") for Fused0(Fused0::Add, SumVec::F32x1),
                Sum0aF64x2 = "sum0a_f64x2": Sum0[V = double2] by RTX_SUM0("true, double2, double, IoF64x2") for Fused0(Fused0::Add, SumVec::F64x2),
                Sum0aF64x1 = "sum0a_f64x1": Sum0[V = double] by RTX_SUM0("true, double, double, IoF64x1") for Fused0(Fused0::Add, SumVec::F64x1),
                Sum0aBf16x8 = "sum0a_bf16x8": Sum0[V = bf16x8] by RTX_SUM0("true, bf16x8, float, IoBf16x8") for Fused0Half(Fused0::Add, Half::Bf16, HalfVec::X8),
                Sum0aBf16x4 = "sum0a_bf16x4": Sum0[V = bf16x4] by RTX_SUM0("true, bf16x4, float, IoBf16x4") for Fused0Half(Fused0::Add, Half::Bf16, HalfVec::X4),
                Sum0aBf16x2 = "sum0a_bf16x2": Sum0[V = bf16x2] by RTX_SUM0("true, bf16x2, float, IoBf16x2") for Fused0Half(Fused0::Add, Half::Bf16, HalfVec::X2),
                Sum0aBf16x1 = "sum0a_bf16x1": Sum0[V = bf16] by RTX_SUM0("true, bf16, float, IoBf16x1") for Fused0Half(Fused0::Add, Half::Bf16, HalfVec::X1),
                Sum0aF16x8 = "sum0a_f16x8": Sum0[V = f16x8] by RTX_SUM0("true, f16x8, float, IoF16x8") for Fused0Half(Fused0::Add, Half::F16, HalfVec::X8),
                Sum0aF16x4 = "sum0a_f16x4": Sum0[V = f16x4] by RTX_SUM0("true, f16x4, float, IoF16x4") for Fused0Half(Fused0::Add, Half::F16, HalfVec::X4),
                Sum0aF16x2 = "sum0a_f16x2": Sum0[V = f16x2] by RTX_SUM0("true, f16x2, float, IoF16x2") for Fused0Half(Fused0::Add, Half::F16, HalfVec::X2),
                Sum0aF16x1 = "sum0a_f16x1": Sum0[V = f16] by RTX_SUM0("true, f16, float, IoF16x1") for Fused0Half(Fused0::Add, Half::F16, HalfVec::X1),
                SoftmaxBwdSum0F32x4 = "softmax_bwd_sum0_f32x4": SoftmaxBwdSum0[V = float4] by RTX_SOFTMAX_BWD_SUM0("float4, float, IoF32x4") for Fused0(Fused0::SoftmaxBwd, SumVec::F32x4),
                SoftmaxBwdSum0F32x2 = "softmax_bwd_sum0_f32x2": SoftmaxBwdSum0[V = float2] by RTX_SOFTMAX_BWD_SUM0("float2, float, IoF32x2") for Fused0(Fused0::SoftmaxBwd, SumVec::F32x2),
                SoftmaxBwdSum0F32x1 = "softmax_bwd_sum0_f32x1": SoftmaxBwdSum0[V = float] by RTX_SOFTMAX_BWD_SUM0("float, float, IoF32x1") for Fused0(Fused0::SoftmaxBwd, SumVec::F32x1),
                SoftmaxBwdSum0F64x2 = "softmax_bwd_sum0_f64x2": SoftmaxBwdSum0[V = double2] by RTX_SOFTMAX_BWD_SUM0("double2, double, IoF64x2") for Fused0(Fused0::SoftmaxBwd, SumVec::F64x2),
                SoftmaxBwdSum0F64x1 = "softmax_bwd_sum0_f64x1": SoftmaxBwdSum0[V = double] by RTX_SOFTMAX_BWD_SUM0("double, double, IoF64x1") for Fused0(Fused0::SoftmaxBwd, SumVec::F64x1),
                SoftmaxBwdSum0Bf16x8 = "softmax_bwd_sum0_bf16x8": SoftmaxBwdSum0[V = bf16x8] by RTX_SOFTMAX_BWD_SUM0("bf16x8, float, IoBf16x8") for Fused0Half(Fused0::SoftmaxBwd, Half::Bf16, HalfVec::X8),
                SoftmaxBwdSum0Bf16x4 = "softmax_bwd_sum0_bf16x4": SoftmaxBwdSum0[V = bf16x4] by RTX_SOFTMAX_BWD_SUM0("bf16x4, float, IoBf16x4") for Fused0Half(Fused0::SoftmaxBwd, Half::Bf16, HalfVec::X4),
                SoftmaxBwdSum0Bf16x2 = "softmax_bwd_sum0_bf16x2": SoftmaxBwdSum0[V = bf16x2] by RTX_SOFTMAX_BWD_SUM0("bf16x2, float, IoBf16x2") for Fused0Half(Fused0::SoftmaxBwd, Half::Bf16, HalfVec::X2),
                SoftmaxBwdSum0Bf16x1 = "softmax_bwd_sum0_bf16x1": SoftmaxBwdSum0[V = bf16] by RTX_SOFTMAX_BWD_SUM0("bf16, float, IoBf16x1") for Fused0Half(Fused0::SoftmaxBwd, Half::Bf16, HalfVec::X1),
                SoftmaxBwdSum0F16x8 = "softmax_bwd_sum0_f16x8": SoftmaxBwdSum0[V = f16x8] by RTX_SOFTMAX_BWD_SUM0("f16x8, float, IoF16x8") for Fused0Half(Fused0::SoftmaxBwd, Half::F16, HalfVec::X8),
                SoftmaxBwdSum0F16x4 = "softmax_bwd_sum0_f16x4": SoftmaxBwdSum0[V = f16x4] by RTX_SOFTMAX_BWD_SUM0("f16x4, float, IoF16x4") for Fused0Half(Fused0::SoftmaxBwd, Half::F16, HalfVec::X4),
                SoftmaxBwdSum0F16x2 = "softmax_bwd_sum0_f16x2": SoftmaxBwdSum0[V = f16x2] by RTX_SOFTMAX_BWD_SUM0("f16x2, float, IoF16x2") for Fused0Half(Fused0::SoftmaxBwd, Half::F16, HalfVec::X2),
                SoftmaxBwdSum0F16x1 = "softmax_bwd_sum0_f16x1": SoftmaxBwdSum0[V = f16] by RTX_SOFTMAX_BWD_SUM0("f16, float, IoF16x1") for Fused0Half(Fused0::SoftmaxBwd, Half::F16, HalfVec::X1),
                GatherScaleSum0F32x4 = "gather_scale_sum0_f32x4": GatherScaleSum0[V = float4] by RTX_GATHER_SCALE_SUM0("float4, float, float, IoF32x4") for Fused0(Fused0::GatherScale, SumVec::F32x4),
                GatherScaleSum0F32x2 = "gather_scale_sum0_f32x2": GatherScaleSum0[V = float2] by RTX_GATHER_SCALE_SUM0("float2, float, float, IoF32x2") for Fused0(Fused0::GatherScale, SumVec::F32x2),
                GatherScaleSum0F32x1 = "gather_scale_sum0_f32x1": GatherScaleSum0[V = float] by RTX_GATHER_SCALE_SUM0("float, float, float, IoF32x1") for Fused0(Fused0::GatherScale, SumVec::F32x1),
                GatherScaleSum0F64x2 = "gather_scale_sum0_f64x2": GatherScaleSum0[V = double2] by RTX_GATHER_SCALE_SUM0("double2, double, double, IoF64x2") for Fused0(Fused0::GatherScale, SumVec::F64x2),
                GatherScaleSum0F64x1 = "gather_scale_sum0_f64x1": GatherScaleSum0[V = double] by RTX_GATHER_SCALE_SUM0("double, double, double, IoF64x1") for Fused0(Fused0::GatherScale, SumVec::F64x1),
                GatherScaleSum0Bf16x8 = "gather_scale_sum0_bf16x8": GatherScaleSum0[V = bf16x8] by RTX_GATHER_SCALE_SUM0("bf16x8, bf16, float, IoBf16x8") for Fused0Half(Fused0::GatherScale, Half::Bf16, HalfVec::X8),
                GatherScaleSum0Bf16x4 = "gather_scale_sum0_bf16x4": GatherScaleSum0[V = bf16x4] by RTX_GATHER_SCALE_SUM0("bf16x4, bf16, float, IoBf16x4") for Fused0Half(Fused0::GatherScale, Half::Bf16, HalfVec::X4),
                GatherScaleSum0Bf16x2 = "gather_scale_sum0_bf16x2": GatherScaleSum0[V = bf16x2] by RTX_GATHER_SCALE_SUM0("bf16x2, bf16, float, IoBf16x2") for Fused0Half(Fused0::GatherScale, Half::Bf16, HalfVec::X2),
                GatherScaleSum0Bf16x1 = "gather_scale_sum0_bf16x1": GatherScaleSum0[V = bf16] by RTX_GATHER_SCALE_SUM0("bf16, bf16, float, IoBf16x1") for Fused0Half(Fused0::GatherScale, Half::Bf16, HalfVec::X1),
                GatherScaleSum0F16x8 = "gather_scale_sum0_f16x8": GatherScaleSum0[V = f16x8] by RTX_GATHER_SCALE_SUM0("f16x8, f16, float, IoF16x8") for Fused0Half(Fused0::GatherScale, Half::F16, HalfVec::X8),
                GatherScaleSum0F16x4 = "gather_scale_sum0_f16x4": GatherScaleSum0[V = f16x4] by RTX_GATHER_SCALE_SUM0("f16x4, f16, float, IoF16x4") for Fused0Half(Fused0::GatherScale, Half::F16, HalfVec::X4),
                GatherScaleSum0F16x2 = "gather_scale_sum0_f16x2": GatherScaleSum0[V = f16x2] by RTX_GATHER_SCALE_SUM0("f16x2, f16, float, IoF16x2") for Fused0Half(Fused0::GatherScale, Half::F16, HalfVec::X2),
                GatherScaleSum0F16x1 = "gather_scale_sum0_f16x1": GatherScaleSum0[V = f16] by RTX_GATHER_SCALE_SUM0("f16, f16, float, IoF16x1") for Fused0Half(Fused0::GatherScale, Half::F16, HalfVec::X1),
                // plan.cu: device scatter plans and device index lists
                IndexBounds = "index_bounds": IndexBounds[],
                PlanHist = "plan_hist": PlanHist[],
                PlanRank = "plan_rank": PlanRank[],
                ScanSumsU32 = "scan_sums_u32": ScanSums[],
                ScanSpineU32 = "scan_spine_u32": ScanSpine[],
                ScanApplyU32 = "scan_apply_u32": ScanApply[],
                ScanSingleU32 = "scan_single_u32": ScanSingle[],
                PlanOffsets = "plan_offsets": PlanOffsets[],
                Lvl0Sums = "lvl0_sums": Lvl0Sums[],
                Lvl0Spine = "lvl0_spine": Lvl0Spine[],
                Lvl0Apply = "lvl0_apply": Lvl0Apply[],
                Lvl0Single = "lvl0_single": Lvl0Single[],
                Lvl0Fill = "lvl0_fill": Lvl0Fill[],
                PlanLevels = "plan_levels": PlanLevels[],
                IndexBoundsMany = "index_bounds_many": PlanMany[],
                PlanHistMany = "plan_hist_many": PlanPassMany[],
                PlanScanSumsMany = "plan_scan_sums_many": PlanPassMany[],
                PlanScanSpineMany = "plan_scan_spine_many": PlanPassMany[],
                PlanScanApplyMany = "plan_scan_apply_many": PlanPassMany[],
                PlanRankMany = "plan_rank_many": PlanPassMany[],
                PlanOffsetsMany = "plan_offsets_many": PlanMany[],
                Lvl0SumsMany = "lvl0_sums_many": PlanMany[],
                Lvl0SpineMany = "lvl0_spine_many": PlanMany[],
                Lvl0ApplyMany = "lvl0_apply_many": PlanMany[],
                Lvl0FillMany = "lvl0_fill_many": PlanMany[],
                PlanLevelsMany = "plan_levels_many": PlanMany[],
                IndexRandom = "index_random": IndexRandom[],
                IndexRepeat = "index_repeat": IndexRepeat[],
                IndexShift = "index_shift": IndexShift[],
                // sample.cu: CSRs and neighbour sampling
                GatherU32 = "gather_u32": GatherU32[],
                SampleCount = "sample_count": SampleCount[],
                SamplePick = "sample_pick": SamplePick[],
                RelabelClaim = "relabel_claim": RelabelClaim[],
                RelabelFlag = "relabel_flag": RelabelFlag[],
                RelabelAssign = "relabel_assign": RelabelAssign[],
                RelabelApply = "relabel_apply": RelabelApply[],
                // train.cu: training ops, element-typed
                DropoutF32 = "dropout_f32": Dropout[T = float] by RTX_DROPOUT("float, float, KF32") for Train(Train::Dropout, Float::F32),
                DropoutF64 = "dropout_f64": Dropout[T = double] by RTX_DROPOUT("double, double, KF64") for Train(Train::Dropout, Float::F64),
                DropoutBf16 = "dropout_bf16": Dropout[T = bf16] by RTX_DROPOUT("bf16, float, KBf16") for Train(Train::Dropout, Float::Bf16),
                DropoutF16 = "dropout_f16": Dropout[T = f16] by RTX_DROPOUT("f16, float, KF16") for Train(Train::Dropout, Float::F16),
                CrossEntropyF32 = "cross_entropy_f32": CrossEntropy[T = float] by RTX_CROSS_ENTROPY("float, float, KF32") for Train(Train::CrossEntropy, Float::F32),
                CrossEntropyF64 = "cross_entropy_f64": CrossEntropy[T = double] by RTX_CROSS_ENTROPY("double, double, KF64") for Train(Train::CrossEntropy, Float::F64),
                CrossEntropyBf16 = "cross_entropy_bf16": CrossEntropy[T = bf16] by RTX_CROSS_ENTROPY("bf16, float, KBf16") for Train(Train::CrossEntropy, Float::Bf16),
                CrossEntropyF16 = "cross_entropy_f16": CrossEntropy[T = f16] by RTX_CROSS_ENTROPY("f16, float, KF16") for Train(Train::CrossEntropy, Float::F16),
                RegressionF32 = "regression_f32": Regression[T = float] by RTX_REGRESSION("float, float, KF32") for Train(Train::Regression, Float::F32),
                RegressionF64 = "regression_f64": Regression[T = double] by RTX_REGRESSION("double, double, KF64") for Train(Train::Regression, Float::F64),
                RegressionBf16 = "regression_bf16": Regression[T = bf16] by RTX_REGRESSION("bf16, float, KBf16") for Train(Train::Regression, Float::Bf16),
                RegressionF16 = "regression_f16": Regression[T = f16] by RTX_REGRESSION("f16, float, KF16") for Train(Train::Regression, Float::F16),
                AdamF32 = "adam_f32": Adam[T = float] by RTX_ADAM("float, float, KF32") for Train(Train::Adam, Float::F32),
                AdamF64 = "adam_f64": Adam[T = double] by RTX_ADAM("double, double, KF64") for Train(Train::Adam, Float::F64),
                AdamBf16 = "adam_bf16": Adam[T = bf16] by RTX_ADAM("bf16, float, KBf16") for Train(Train::Adam, Float::Bf16),
                AdamF16 = "adam_f16": Adam[T = f16] by RTX_ADAM("f16, float, KF16") for Train(Train::Adam, Float::F16),
                SgdF32 = "sgd_f32": Sgd[T = float] by RTX_SGD("float, float, KF32") for Train(Train::Sgd, Float::F32),
                SgdF64 = "sgd_f64": Sgd[T = double] by RTX_SGD("double, double, KF64") for Train(Train::Sgd, Float::F64),
                SgdBf16 = "sgd_bf16": Sgd[T = bf16] by RTX_SGD("bf16, float, KBf16") for Train(Train::Sgd, Float::Bf16),
                SgdF16 = "sgd_f16": Sgd[T = f16] by RTX_SGD("f16, float, KF16") for Train(Train::Sgd, Float::F16),
                LnF32 = "ln_f32": LnProbe[T = float] by RTX_LN("float, KF32") for Train(Train::Ln, Float::F32),
                LnF64 = "ln_f64": LnProbe[T = double] by RTX_LN("double, KF64") for Train(Train::Ln, Float::F64),
                LnBf16 = "ln_bf16": LnProbe[T = bf16] by RTX_LN("bf16, KBf16") for Train(Train::Ln, Float::Bf16),
                LnF16 = "ln_f16": LnProbe[T = f16] by RTX_LN("f16, KF16") for Train(Train::Ln, Float::F16),
            }
        }
    };
}
#[cfg_attr(not(feature = "cuda"), allow(unused_imports))]
pub(crate) use with_kernel_table;

with_kernel_table!(kernel_enum);

impl Kernel {
    /// The number of parameters the kernel takes.
    #[allow(dead_code)]
    pub(crate) const fn arity(self) -> usize {
        self.signature().params().len()
    }

    /// The float element of a kernel that binds `T` or `V` (`None` for the
    /// others): what the buffers of its typed launcher hold.
    pub(crate) fn dtype(self) -> Option<DType> {
        match self.binding() {
            Some(("T" | "V", t)) => cuda_float(t),
            _ => None,
        }
    }
}

/// The float element of a CUDA float or float vector type (the half
/// storage types `bf16`, `bf16x2`, ... of kernels/common.cuh included).
pub(crate) fn cuda_float(t: &str) -> Option<DType> {
    match t {
        "float" | "float2" | "float4" => Some(DType::F32),
        "double" | "double2" => Some(DType::F64),
        "bf16" | "bf16x2" | "bf16x4" | "bf16x8" => Some(DType::BF16),
        "f16" | "f16x2" | "f16x4" | "f16x8" => Some(DType::F16),
        _ => None,
    }
}

impl Signature {
    /// Whether its kernels' pointers of the bound letter hold float elements
    /// (the letter is `T` or `V`): its launcher is generic over the element.
    #[allow(dead_code)]
    pub(crate) fn is_float(self) -> bool {
        matches!(self.letter(), Some("T" | "V"))
    }
}

/// A kernel family and the choices that pick one of its kernels:
/// [`Kernel::of`] gives the kernel, from the table's `for` clauses
/// (`table.rs`), which cover every choice exactly once (checked by the
/// compiler). A new op is a variant here (or of [`ModelOp`] / [`Train`]),
/// its signature and entries in the table above, its kernel-defining macro
/// in kernels/*.cu and its launch in `ops/`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Family {
    /// `gather_b*`.
    Gather(Word),
    /// `transpose_runs_b*`.
    TransposeRuns(Word),
    /// `permute_b*`.
    Permute(Word),
    /// `transpose_{planes,rows,cols}_b*` (2-, 4- and 8-byte elements; the
    /// permute plan never gives 16-byte ones a span kernel, which take the
    /// 8-byte one).
    TransposeSpan(SpanKind, Word),
    /// `transpose_{planes,rows,cols}_p2`: the span kernels of 2-byte
    /// elements moved as 4-byte pairs.
    TransposeSpanPairs(SpanKind),
    /// `transpose{TR}x{TC}_b*`: the tiled transpose (16-byte elements have
    /// the 32x32 tile only: [`Tile::pick`] never gives them another).
    Transpose(Word, Tile),
    /// `transpose{TR}x{TC}_p2`: the tiled transpose of 2-byte elements
    /// moved as 4-byte pairs.
    TransposePairs(Tile),
    /// `scatter{0,N}{,p}_*`: a level of the scatter chain.
    Scatter(Level, ChunkSum, SumVec),
    /// `scatter{0,N}{,p}_{bf16,f16}x*`: a level of the scatter chain into
    /// half storage.
    ScatterHalf(Level, ChunkSum, Half, HalfVec),
    /// `narrow_*`: f32 rounded to half storage.
    Narrow(Half),
    /// `widen_*`: half storage widened to f32.
    Widen(Half),
    /// `axpy_mixed_*`.
    AxpyMixed(Half),
    /// `narrow_all_*`: `narrow_*` over many tensors.
    NarrowAll(Half),
    /// `widen_all_*`: `widen_*` over many tensors.
    WidenAll(Half),
    /// `{sum0,sum0a,softmax_bwd_sum0,gather_scale_sum0}_*`: a fused level 0.
    Fused0(Fused0, SumVec),
    /// `{sum0,sum0a,softmax_bwd_sum0,gather_scale_sum0}_{bf16,f16}x*`: a
    /// fused level 0 over half storage in vectors of halves (f32 sums).
    Fused0Half(Fused0, Half, HalfVec),
    /// `matmul{TM}x{TN}_*`.
    Matmul(Float, MatmulTile),
    /// The model's element-typed kernels.
    Model(ModelOp, Float),
    /// The training kernels.
    Train(Train, Float),
}

/// An op of the model's element-typed kernels (model.cu, dense.cu,
/// segment.cu): with a [`Float`], a [`Family::Model`] choice.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ModelOp {
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

/// An op of the training kernels (train.cu): with a [`Float`], a
/// [`Family::Train`] choice.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Train {
    /// `dropout_*`.
    Dropout,
    /// `cross_entropy_*`.
    CrossEntropy,
    /// `regression_*`.
    Regression,
    /// `adam_*`.
    Adam,
    /// `sgd_*`.
    Sgd,
    /// `ln_*`.
    Ln,
}

impl Kernel {
    /// `gather_b*` (`Kernel::of(Family::Gather(w))`).
    pub(crate) fn gather(w: Word) -> Kernel {
        Kernel::of(Family::Gather(w))
    }
}

mod choice;
#[cfg_attr(not(feature = "cuda"), allow(unused_imports))]
pub(crate) use choice::{
    ChunkSum, Float, Fused0, Half, HalfVec, Level, MatmulTile, SpanKind, SumVec, Tile, Word,
};

#[cfg(test)]
mod choice_tests;
#[cfg(test)]
mod pinned_tests;
