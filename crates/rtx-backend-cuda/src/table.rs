//! The kernel table: every `extern "C" __global__` entry point of
//! kernels/*.cu with its parameters, listed once (`with_kernel_table!`
//! below), and the typed choices that pick one (`table/choice.rs`; the
//! training kernels' in `table/train.rs`). No
//! kernel name is ever assembled from strings: a launch names a [`Kernel`],
//! so a wrong name cannot compile, and a table entry the module lacks is an
//! error value when the module loads. No argument is pushed by hand: a
//! launch fills the fields of its signature's typed launcher.
//!
//! Plain host code (no device): the tests parse kernels/*.cu and fail when the
//! table and the sources disagree (`table_tests.rs`, `table_sig_tests.rs`).

use rtx_backend::DType;

use crate::signature::kernel_enum;

/// The kernel table, the one place a kernel's name and parameters are
/// written: calls `$cb!` with it (`signature::kernel_enum!` here for the
/// [`Kernel`] and [`Signature`] enums, `device/launch.rs`'s `launchers!` for
/// one typed launcher per signature). A signature lists its parameters as
/// kernels/*.cu does, names and types in order (the vocabulary is in
/// `signature.rs`); a kernel names its signature and the type it binds to
/// the signature's letter. `table_tests.rs` parses kernels/*.cu and fails on
/// any difference of name, type, order or count.
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
                /// `smb0_*`: level 0 of the segment softmax's backward sums
                /// (sums and scratch in the type computed in).
                Smb0[V](
                    alpha: *const V, g: *const V, pos: *const u32, wfirst: *const u32, cstart: *const u32,
                    crow: *const u32, cslot: *const u32, nchunks: u64, W: u64, lanes_log2: u32, dst: *mut A,
                    next: *mut A,
                );
                /// `gss0_*`: level 0 of gather_scale_scatter (the next level's
                /// scratch in the type computed in).
                Gss0[V](
                    x: *const V, gather: *const u32, w: *const T, heads: u64, vecs_per_head: u64,
                    pos: *const u32, wfirst: *const u32, cstart: *const u32, crow: *const u32,
                    cslot: *const u32, nchunks: u64, W: u64, lanes_log2: u32, dst: *mut V, next: *mut A,
                );
                // plan.cu
                /// `index_bounds`.
                IndexBounds[](idx: *const u32, n: u64, bound: u64, check: u32, info: *mut u64);
                /// `plan_hist`.
                PlanHist[](keys: *const u32, n: u64, shift: u32, dbits: u32, ntiles: u64, counts: *mut u32);
                /// `plan_rank`.
                PlanRank[](
                    keys: *const u32, vals: *const u32, n: u64, shift: u32, dbits: u32, ntiles: u64,
                    offs: *const u32, keys_out: *mut u32, vals_out: *mut u32,
                );
                /// `scan_sums_u32`.
                ScanSums[](r#in: *const u32, n: u64, sums: *mut u32);
                /// `scan_spine_u32`.
                ScanSpine[](sums: *mut u32, ntiles: u64);
                /// `scan_apply_u32`.
                ScanApply[](r#in: *const u32, n: u64, sums: *const u32, out: *mut u32);
                /// `plan_offsets`.
                PlanOffsets[](skeys: *const u32, n: u64, rows: u64, off: *mut u32);
                /// `lvl0_sums`.
                Lvl0Sums[](off: *const u32, rows: u64, sums: *mut U3);
                /// `lvl0_spine`.
                Lvl0Spine[](sums: *mut U3, ntiles: u64, info: *mut u64);
                /// `lvl0_apply`.
                Lvl0Apply[](off: *const u32, rows: u64, sums: *const U3, out: *mut U3);
                /// `lvl0_fill`.
                Lvl0Fill[](
                    off: *const u32, rows: u64, scan: *const U3, info: *const u64, n: u64, cstart: *mut u32,
                    crow: *mut u32, cslot: *mut u32, list: *mut u32, wfirst: *mut u32,
                );
                /// `plan_levels`.
                PlanLevels[](list_a: *mut u32, list_b: *mut u32, hi: *mut u32, n: u64, info: *mut u64);
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
                GatherB16 = "gather_b16": Gather[E = uint4],
                GatherB8 = "gather_b8": Gather[E = uint2],
                GatherB4 = "gather_b4": Gather[E = u32],
                GatherB2 = "gather_b2": Gather[E = u16],
                // index.cu: scatter levels {0: through positions, N: scratch} x {batched, pipelined}
                Scatter0F32x4 = "scatter0_f32x4": Scatter[V = float4],
                Scatter0F32x2 = "scatter0_f32x2": Scatter[V = float2],
                Scatter0F32x1 = "scatter0_f32x1": Scatter[V = float],
                Scatter0F64x2 = "scatter0_f64x2": Scatter[V = double2],
                Scatter0F64x1 = "scatter0_f64x1": Scatter[V = double],
                Scatter0pF32x4 = "scatter0p_f32x4": Scatter[V = float4],
                Scatter0pF32x2 = "scatter0p_f32x2": Scatter[V = float2],
                Scatter0pF32x1 = "scatter0p_f32x1": Scatter[V = float],
                Scatter0pF64x2 = "scatter0p_f64x2": Scatter[V = double2],
                Scatter0pF64x1 = "scatter0p_f64x1": Scatter[V = double],
                ScatterNF32x4 = "scatterN_f32x4": Scatter[V = float4],
                ScatterNF32x2 = "scatterN_f32x2": Scatter[V = float2],
                ScatterNF32x1 = "scatterN_f32x1": Scatter[V = float],
                ScatterNF64x2 = "scatterN_f64x2": Scatter[V = double2],
                ScatterNF64x1 = "scatterN_f64x1": Scatter[V = double],
                ScatterNpF32x4 = "scatterNp_f32x4": Scatter[V = float4],
                ScatterNpF32x2 = "scatterNp_f32x2": Scatter[V = float2],
                ScatterNpF32x1 = "scatterNp_f32x1": Scatter[V = float],
                ScatterNpF64x2 = "scatterNp_f64x2": Scatter[V = double2],
                ScatterNpF64x1 = "scatterNp_f64x1": Scatter[V = double],
                // index.cu: scatter levels into half storage
                Scatter0Bf16x8 = "scatter0_bf16x8": ScatterHalf[V = bf16x8],
                Scatter0F16x8 = "scatter0_f16x8": ScatterHalf[V = f16x8],
                ScatterNBf16x8 = "scatterN_bf16x8": ScatterHalf[V = bf16x8],
                ScatterNF16x8 = "scatterN_f16x8": ScatterHalf[V = f16x8],
                Scatter0pBf16x8 = "scatter0p_bf16x8": ScatterHalf[V = bf16x8],
                Scatter0pF16x8 = "scatter0p_f16x8": ScatterHalf[V = f16x8],
                ScatterNpBf16x8 = "scatterNp_bf16x8": ScatterHalf[V = bf16x8],
                ScatterNpF16x8 = "scatterNp_f16x8": ScatterHalf[V = f16x8],
                Scatter0Bf16x4 = "scatter0_bf16x4": ScatterHalf[V = bf16x4],
                Scatter0Bf16x2 = "scatter0_bf16x2": ScatterHalf[V = bf16x2],
                Scatter0Bf16x1 = "scatter0_bf16x1": ScatterHalf[V = bf16],
                Scatter0F16x4 = "scatter0_f16x4": ScatterHalf[V = f16x4],
                Scatter0F16x2 = "scatter0_f16x2": ScatterHalf[V = f16x2],
                Scatter0F16x1 = "scatter0_f16x1": ScatterHalf[V = f16],
                ScatterNBf16x4 = "scatterN_bf16x4": ScatterHalf[V = bf16x4],
                ScatterNBf16x2 = "scatterN_bf16x2": ScatterHalf[V = bf16x2],
                ScatterNBf16x1 = "scatterN_bf16x1": ScatterHalf[V = bf16],
                ScatterNF16x4 = "scatterN_f16x4": ScatterHalf[V = f16x4],
                ScatterNF16x2 = "scatterN_f16x2": ScatterHalf[V = f16x2],
                ScatterNF16x1 = "scatterN_f16x1": ScatterHalf[V = f16],
                Scatter0pBf16x4 = "scatter0p_bf16x4": ScatterHalf[V = bf16x4],
                Scatter0pBf16x2 = "scatter0p_bf16x2": ScatterHalf[V = bf16x2],
                Scatter0pBf16x1 = "scatter0p_bf16x1": ScatterHalf[V = bf16],
                Scatter0pF16x4 = "scatter0p_f16x4": ScatterHalf[V = f16x4],
                Scatter0pF16x2 = "scatter0p_f16x2": ScatterHalf[V = f16x2],
                Scatter0pF16x1 = "scatter0p_f16x1": ScatterHalf[V = f16],
                ScatterNpBf16x4 = "scatterNp_bf16x4": ScatterHalf[V = bf16x4],
                ScatterNpBf16x2 = "scatterNp_bf16x2": ScatterHalf[V = bf16x2],
                ScatterNpBf16x1 = "scatterNp_bf16x1": ScatterHalf[V = bf16],
                ScatterNpF16x4 = "scatterNp_f16x4": ScatterHalf[V = f16x4],
                ScatterNpF16x2 = "scatterNp_f16x2": ScatterHalf[V = f16x2],
                ScatterNpF16x1 = "scatterNp_f16x1": ScatterHalf[V = f16],
                // index.cu: conversions between f32 and half storage
                NarrowBf16 = "narrow_bf16": Narrow[V = bf16],
                NarrowF16 = "narrow_f16": Narrow[V = f16],
                WidenBf16 = "widen_bf16": Widen[V = bf16],
                WidenF16 = "widen_f16": Widen[V = f16],
                AxpyMixedBf16 = "axpy_mixed_bf16": AxpyMixed[V = bf16],
                AxpyMixedF16 = "axpy_mixed_f16": AxpyMixed[V = f16],
                // permute.cu
                TransposePlanesB4 = "transpose_planes_b4": TransposeSpan[E = u32],
                TransposePlanesB8 = "transpose_planes_b8": TransposeSpan[E = u64],
                TransposeRowsB4 = "transpose_rows_b4": TransposeSpan[E = u32],
                TransposeRowsB8 = "transpose_rows_b8": TransposeSpan[E = u64],
                TransposeColsB4 = "transpose_cols_b4": TransposeSpan[E = u32],
                TransposeColsB8 = "transpose_cols_b8": TransposeSpan[E = u64],
                TransposePlanesB2 = "transpose_planes_b2": TransposeSpan[E = u16],
                TransposeRowsB2 = "transpose_rows_b2": TransposeSpan[E = u16],
                TransposeColsB2 = "transpose_cols_b2": TransposeSpan[E = u16],
                TransposePlanesP2 = "transpose_planes_p2": TransposeSpan[E = u16],
                TransposeRowsP2 = "transpose_rows_p2": TransposeSpan[E = u16],
                TransposeColsP2 = "transpose_cols_p2": TransposeSpan[E = u16],
                Transpose32x32B4 = "transpose32x32_b4": TransposeTiled[E = u32],
                Transpose64x64B4 = "transpose64x64_b4": TransposeTiled[E = u32],
                Transpose128x32B4 = "transpose128x32_b4": TransposeTiled[E = u32],
                Transpose32x128B4 = "transpose32x128_b4": TransposeTiled[E = u32],
                Transpose32x32B8 = "transpose32x32_b8": TransposeTiled[E = u64],
                Transpose64x64B8 = "transpose64x64_b8": TransposeTiled[E = u64],
                Transpose128x32B8 = "transpose128x32_b8": TransposeTiled[E = u64],
                Transpose32x128B8 = "transpose32x128_b8": TransposeTiled[E = u64],
                Transpose32x32B16 = "transpose32x32_b16": TransposeTiled[E = uint4],
                Transpose32x32B2 = "transpose32x32_b2": TransposeTiled[E = u16],
                Transpose64x64B2 = "transpose64x64_b2": TransposeTiled[E = u16],
                Transpose128x32B2 = "transpose128x32_b2": TransposeTiled[E = u16],
                Transpose32x128B2 = "transpose32x128_b2": TransposeTiled[E = u16],
                Transpose32x32P2 = "transpose32x32_p2": TransposeTiled[E = u16],
                Transpose64x64P2 = "transpose64x64_p2": TransposeTiled[E = u16],
                Transpose128x32P2 = "transpose128x32_p2": TransposeTiled[E = u16],
                Transpose32x128P2 = "transpose32x128_p2": TransposeTiled[E = u16],
                TransposeBulkB4 = "transpose_bulk_b4": TransposeBulk[],
                TransposeBulkB2 = "transpose_bulk_b2": TransposeBulk[],
                TransposeRunsB16 = "transpose_runs_b16": TransposeRuns[E = uint4],
                TransposeRunsB8 = "transpose_runs_b8": TransposeRuns[E = uint2],
                TransposeRunsB4 = "transpose_runs_b4": TransposeRuns[E = u32],
                TransposeRunsB2 = "transpose_runs_b2": TransposeRuns[E = u16],
                PermuteB16 = "permute_b16": Permute[E = uint4],
                PermuteB8 = "permute_b8": Permute[E = uint2],
                PermuteB4 = "permute_b4": Permute[E = u32],
                PermuteB2 = "permute_b2": Permute[E = u16],
                PermuteLinesB16 = "permute_lines_b16": PermuteLines[E = uint4],
                // model.cu, dense.cu, segment.cu: element-typed
                UnaryF32 = "unary_f32": Unary[T = float],
                UnaryF64 = "unary_f64": Unary[T = double],
                UnaryBf16 = "unary_bf16": Unary[T = bf16],
                UnaryF16 = "unary_f16": Unary[T = f16],
                UnaryBwdF32 = "unary_bwd_f32": UnaryBwd[T = float],
                UnaryBwdF64 = "unary_bwd_f64": UnaryBwd[T = double],
                UnaryBwdBf16 = "unary_bwd_bf16": UnaryBwd[T = bf16],
                UnaryBwdF16 = "unary_bwd_f16": UnaryBwd[T = f16],
                BinaryF32 = "binary_f32": Binary[T = float],
                BinaryF64 = "binary_f64": Binary[T = double],
                BinaryBf16 = "binary_bf16": Binary[T = bf16],
                BinaryF16 = "binary_f16": Binary[T = f16],
                AxpyF32 = "axpy_f32": Axpy[T = float],
                AxpyF64 = "axpy_f64": Axpy[T = double],
                AxpyBf16 = "axpy_bf16": Axpy[T = bf16],
                AxpyF16 = "axpy_f16": Axpy[T = f16],
                GatherAddF32 = "gather_add_f32": GatherAdd[T = float],
                GatherAddF64 = "gather_add_f64": GatherAdd[T = double],
                GatherAddBf16 = "gather_add_bf16": GatherAdd[T = bf16],
                GatherAddF16 = "gather_add_f16": GatherAdd[T = f16],
                SumBiasReluF32 = "sum_bias_relu_f32": SumBiasRelu[T = float],
                SumBiasReluF64 = "sum_bias_relu_f64": SumBiasRelu[T = double],
                SumBiasReluBf16 = "sum_bias_relu_bf16": SumBiasRelu[T = bf16],
                SumBiasReluF16 = "sum_bias_relu_f16": SumBiasRelu[T = f16],
                HeadScaleF32 = "head_scale_f32": HeadScale[T = float],
                HeadScaleF64 = "head_scale_f64": HeadScale[T = double],
                HeadScaleBf16 = "head_scale_bf16": HeadScale[T = bf16],
                HeadScaleF16 = "head_scale_f16": HeadScale[T = f16],
                HeadDotF32 = "head_dot_f32": HeadDot[T = float],
                HeadDotF64 = "head_dot_f64": HeadDot[T = double],
                HeadDotBf16 = "head_dot_bf16": HeadDot[T = bf16],
                HeadDotF16 = "head_dot_f16": HeadDot[T = f16],
                GatherHeadDotF32 = "gather_head_dot_f32": GatherHeadDot[T = float],
                GatherHeadDotF64 = "gather_head_dot_f64": GatherHeadDot[T = double],
                GatherHeadDotBf16 = "gather_head_dot_bf16": GatherHeadDot[T = bf16],
                GatherHeadDotF16 = "gather_head_dot_f16": GatherHeadDot[T = f16],
                ReduceRowsF32 = "reduce_rows_f32": ReduceRows[T = float],
                ReduceRowsF64 = "reduce_rows_f64": ReduceRows[T = double],
                ReduceRowsBf16 = "reduce_rows_bf16": ReduceRows[T = bf16],
                ReduceRowsF16 = "reduce_rows_f16": ReduceRows[T = f16],
                HeadScaleRowsF32 = "head_scale_rows_f32": HeadScaleRows[T = float],
                HeadScaleRowsF64 = "head_scale_rows_f64": HeadScaleRows[T = double],
                HeadScaleRowsBf16 = "head_scale_rows_bf16": HeadScaleRows[T = bf16],
                HeadScaleRowsF16 = "head_scale_rows_f16": HeadScaleRows[T = f16],
                Matmul64x64F32 = "matmul64x64_f32": Matmul[T = float],
                Matmul32x64F32 = "matmul32x64_f32": Matmul[T = float],
                Matmul64x32F32 = "matmul64x32_f32": Matmul[T = float],
                Matmul32x32F32 = "matmul32x32_f32": Matmul[T = float],
                Matmul64x64F64 = "matmul64x64_f64": Matmul[T = double],
                Matmul32x64F64 = "matmul32x64_f64": Matmul[T = double],
                Matmul64x32F64 = "matmul64x32_f64": Matmul[T = double],
                Matmul32x32F64 = "matmul32x32_f64": Matmul[T = double],
                Matmul64x64Bf16 = "matmul64x64_bf16": Matmul[T = bf16],
                Matmul32x64Bf16 = "matmul32x64_bf16": Matmul[T = bf16],
                Matmul64x32Bf16 = "matmul64x32_bf16": Matmul[T = bf16],
                Matmul32x32Bf16 = "matmul32x32_bf16": Matmul[T = bf16],
                Matmul64x64F16 = "matmul64x64_f16": Matmul[T = f16],
                Matmul32x64F16 = "matmul32x64_f16": Matmul[T = f16],
                Matmul64x32F16 = "matmul64x32_f16": Matmul[T = f16],
                Matmul32x32F16 = "matmul32x32_f16": Matmul[T = f16],
                MatmulDotF32 = "matmul_dot_f32": Matmul[T = float],
                MatmulDotF64 = "matmul_dot_f64": Matmul[T = double],
                MatmulDotBf16 = "matmul_dot_bf16": Matmul[T = bf16],
                MatmulDotF16 = "matmul_dot_f16": Matmul[T = f16],
                Segmax0F32 = "segmax0_f32": Segmax0[T = float],
                Segmax0F64 = "segmax0_f64": Segmax0[T = double],
                Segmax0Bf16 = "segmax0_bf16": Segmax0[T = bf16],
                Segmax0F16 = "segmax0_f16": Segmax0[T = f16],
                SegmaxF32 = "segmax_f32": Segmax[T = float],
                SegmaxF64 = "segmax_f64": Segmax[T = double],
                SegmaxBf16 = "segmax_bf16": Segmax[T = bf16],
                SegmaxF16 = "segmax_f16": Segmax[T = f16],
                SoftmaxExpF32 = "softmax_exp_f32": SoftmaxExp[T = float],
                SoftmaxExpF64 = "softmax_exp_f64": SoftmaxExp[T = double],
                SoftmaxExpBf16 = "softmax_exp_bf16": SoftmaxExp[T = bf16],
                SoftmaxExpF16 = "softmax_exp_f16": SoftmaxExp[T = f16],
                SoftmaxDivF32 = "softmax_div_f32": SoftmaxDiv[T = float],
                SoftmaxDivF64 = "softmax_div_f64": SoftmaxDiv[T = double],
                SoftmaxDivBf16 = "softmax_div_bf16": SoftmaxDiv[T = bf16],
                SoftmaxDivF16 = "softmax_div_f16": SoftmaxDiv[T = f16],
                SoftmaxBwdF32 = "softmax_bwd_f32": SoftmaxBwd[T = float],
                SoftmaxBwdF64 = "softmax_bwd_f64": SoftmaxBwd[T = double],
                SoftmaxBwdBf16 = "softmax_bwd_bf16": SoftmaxBwd[T = bf16],
                SoftmaxBwdF16 = "softmax_bwd_f16": SoftmaxBwd[T = f16],
                // segment.cu: fused level-0 kernels of the segment sums, vector-typed
                Sum0F32x4 = "sum0_f32x4": Sum0[V = float4],
                Sum0F32x2 = "sum0_f32x2": Sum0[V = float2],
                Sum0F32x1 = "sum0_f32x1": Sum0[V = float],
                Sum0F64x2 = "sum0_f64x2": Sum0[V = double2],
                Sum0F64x1 = "sum0_f64x1": Sum0[V = double],
                Sum0Bf16x8 = "sum0_bf16x8": Sum0[V = bf16x8],
                Sum0Bf16x4 = "sum0_bf16x4": Sum0[V = bf16x4],
                Sum0Bf16x2 = "sum0_bf16x2": Sum0[V = bf16x2],
                Sum0Bf16x1 = "sum0_bf16x1": Sum0[V = bf16],
                Sum0F16x8 = "sum0_f16x8": Sum0[V = f16x8],
                Sum0F16x4 = "sum0_f16x4": Sum0[V = f16x4],
                Sum0F16x2 = "sum0_f16x2": Sum0[V = f16x2],
                Sum0F16x1 = "sum0_f16x1": Sum0[V = f16],
                Sum0aF32x4 = "sum0a_f32x4": Sum0[V = float4],
                Sum0aF32x2 = "sum0a_f32x2": Sum0[V = float2],
                Sum0aF32x1 = "sum0a_f32x1": Sum0[V = float],
                Sum0aF64x2 = "sum0a_f64x2": Sum0[V = double2],
                Sum0aF64x1 = "sum0a_f64x1": Sum0[V = double],
                Sum0aBf16x8 = "sum0a_bf16x8": Sum0[V = bf16x8],
                Sum0aBf16x4 = "sum0a_bf16x4": Sum0[V = bf16x4],
                Sum0aBf16x2 = "sum0a_bf16x2": Sum0[V = bf16x2],
                Sum0aBf16x1 = "sum0a_bf16x1": Sum0[V = bf16],
                Sum0aF16x8 = "sum0a_f16x8": Sum0[V = f16x8],
                Sum0aF16x4 = "sum0a_f16x4": Sum0[V = f16x4],
                Sum0aF16x2 = "sum0a_f16x2": Sum0[V = f16x2],
                Sum0aF16x1 = "sum0a_f16x1": Sum0[V = f16],
                Smb0F32x4 = "smb0_f32x4": Smb0[V = float4],
                Smb0F32x2 = "smb0_f32x2": Smb0[V = float2],
                Smb0F32x1 = "smb0_f32x1": Smb0[V = float],
                Smb0F64x2 = "smb0_f64x2": Smb0[V = double2],
                Smb0F64x1 = "smb0_f64x1": Smb0[V = double],
                Smb0Bf16x8 = "smb0_bf16x8": Smb0[V = bf16x8],
                Smb0Bf16x4 = "smb0_bf16x4": Smb0[V = bf16x4],
                Smb0Bf16x2 = "smb0_bf16x2": Smb0[V = bf16x2],
                Smb0Bf16x1 = "smb0_bf16x1": Smb0[V = bf16],
                Smb0F16x8 = "smb0_f16x8": Smb0[V = f16x8],
                Smb0F16x4 = "smb0_f16x4": Smb0[V = f16x4],
                Smb0F16x2 = "smb0_f16x2": Smb0[V = f16x2],
                Smb0F16x1 = "smb0_f16x1": Smb0[V = f16],
                Gss0F32x4 = "gss0_f32x4": Gss0[V = float4],
                Gss0F32x2 = "gss0_f32x2": Gss0[V = float2],
                Gss0F32x1 = "gss0_f32x1": Gss0[V = float],
                Gss0F64x2 = "gss0_f64x2": Gss0[V = double2],
                Gss0F64x1 = "gss0_f64x1": Gss0[V = double],
                Gss0Bf16x8 = "gss0_bf16x8": Gss0[V = bf16x8],
                Gss0Bf16x4 = "gss0_bf16x4": Gss0[V = bf16x4],
                Gss0Bf16x2 = "gss0_bf16x2": Gss0[V = bf16x2],
                Gss0Bf16x1 = "gss0_bf16x1": Gss0[V = bf16],
                Gss0F16x8 = "gss0_f16x8": Gss0[V = f16x8],
                Gss0F16x4 = "gss0_f16x4": Gss0[V = f16x4],
                Gss0F16x2 = "gss0_f16x2": Gss0[V = f16x2],
                Gss0F16x1 = "gss0_f16x1": Gss0[V = f16],
                // plan.cu: device scatter plans and device index lists
                IndexBounds = "index_bounds": IndexBounds[],
                PlanHist = "plan_hist": PlanHist[],
                PlanRank = "plan_rank": PlanRank[],
                ScanSumsU32 = "scan_sums_u32": ScanSums[],
                ScanSpineU32 = "scan_spine_u32": ScanSpine[],
                ScanApplyU32 = "scan_apply_u32": ScanApply[],
                PlanOffsets = "plan_offsets": PlanOffsets[],
                Lvl0Sums = "lvl0_sums": Lvl0Sums[],
                Lvl0Spine = "lvl0_spine": Lvl0Spine[],
                Lvl0Apply = "lvl0_apply": Lvl0Apply[],
                Lvl0Fill = "lvl0_fill": Lvl0Fill[],
                PlanLevels = "plan_levels": PlanLevels[],
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
                DropoutF32 = "dropout_f32": Dropout[T = float],
                DropoutF64 = "dropout_f64": Dropout[T = double],
                DropoutBf16 = "dropout_bf16": Dropout[T = bf16],
                DropoutF16 = "dropout_f16": Dropout[T = f16],
                CrossEntropyF32 = "cross_entropy_f32": CrossEntropy[T = float],
                CrossEntropyF64 = "cross_entropy_f64": CrossEntropy[T = double],
                CrossEntropyBf16 = "cross_entropy_bf16": CrossEntropy[T = bf16],
                CrossEntropyF16 = "cross_entropy_f16": CrossEntropy[T = f16],
                RegressionF32 = "regression_f32": Regression[T = float],
                RegressionF64 = "regression_f64": Regression[T = double],
                RegressionBf16 = "regression_bf16": Regression[T = bf16],
                RegressionF16 = "regression_f16": Regression[T = f16],
                AdamF32 = "adam_f32": Adam[T = float],
                AdamF64 = "adam_f64": Adam[T = double],
                AdamBf16 = "adam_bf16": Adam[T = bf16],
                AdamF16 = "adam_f16": Adam[T = f16],
                SgdF32 = "sgd_f32": Sgd[T = float],
                SgdF64 = "sgd_f64": Sgd[T = double],
                SgdBf16 = "sgd_bf16": Sgd[T = bf16],
                SgdF16 = "sgd_f16": Sgd[T = f16],
                LnF32 = "ln_f32": LnProbe[T = float],
                LnF64 = "ln_f64": LnProbe[T = double],
                LnBf16 = "ln_bf16": LnProbe[T = bf16],
                LnF16 = "ln_f16": LnProbe[T = f16],
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

mod choice;
mod train;
#[cfg_attr(not(feature = "cuda"), allow(unused_imports))]
pub(crate) use choice::{
    ChunkSum, Float, Fused0, Half, HalfVec, Level, MatmulTile, SpanKind, SumVec, Tile, Typed, Word,
};
#[cfg_attr(not(feature = "cuda"), allow(unused_imports))]
pub(crate) use train::Train;

#[cfg(test)]
#[path = "table_tests.rs"]
mod tests;
