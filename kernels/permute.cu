// swap_dims / transpose / permute, following rtx-tensor's plan
// (crates/rtx-tensor: PermuteKind). Every kernel writes the output in the
// contiguous row-major order of the OUTPUT shape, and decodes output indices
// with that shape: never with the input's strides.
#include "common.cuh"

// Batched 2-D transpose through a TR x TC shared-memory tile:
// in [batch, rows, cols] -> out [batch, cols, rows], elements of type E
// (4, 8 or 16 bytes: a 16-byte element is a run of 4 f32 / 2 f64 values).
// Tiles are numbered along grid.x (column tiles fastest) and visited by a
// grid-stride loop, so any number of rows, columns and batches is valid
// (grid.y and grid.z stay 1). Block: 32 x 8 threads; each thread moves
// TR*TC/256 elements, all loads issued before the barrier. Tile rows are
// padded by one element against bank conflicts when reading columns. The host
// picks 64x64 for large matrices, 128x32 when there are few columns and
// 32x128 when there are few rows (so no lanes idle on a 32-wide side), and
// 32x32 for 16-byte elements.
template <typename E, int TR, int TC>
__device__ __forceinline__ void transpose_tiled(const E* __restrict__ in, E* __restrict__ out,
                                                u64 batch, u64 rows, u64 cols) {
    __shared__ E tile[TR][TC + 1];
    const u64 tr_n = (rows + TR - 1) / TR;
    const u64 tc_n = (cols + TC - 1) / TC;
    const u64 tiles = batch * tr_n * tc_n;
    const u64 plane = rows * cols;
    for (u64 t = blockIdx.x; t < tiles; t += gridDim.x) {
        const u64 tc = t % tc_n;
        const u64 rest = t / tc_n;
        const u64 tr = rest % tr_n;
        const u64 b = rest / tr_n;
        const E* __restrict__ ib = in + b * plane;
        E* __restrict__ ob = out + b * plane;
        const u64 r0 = tr * TR, c0 = tc * TC;
        const bool full = r0 + TR <= rows && c0 + TC <= cols;
        // load: tile[k][x] = in[r0 + k][c0 + x]
#pragma unroll
        for (int i = 0; i < TR / 8; ++i)
#pragma unroll
            for (int xi = 0; xi < TC / 32; ++xi) {
                const int k = threadIdx.y + 8 * i, x = threadIdx.x + 32 * xi;
                if (full || (r0 + k < rows && c0 + x < cols))
                    tile[k][x] = __ldg(ib + (r0 + k) * cols + c0 + x);
            }
        __syncthreads();
        // store: out[c0 + k][r0 + x] = in[r0 + x][c0 + k] = tile[x][k]
#pragma unroll
        for (int i = 0; i < TC / 8; ++i)
#pragma unroll
            for (int xi = 0; xi < TR / 32; ++xi) {
                const int k = threadIdx.y + 8 * i, x = threadIdx.x + 32 * xi;
                if (full || (c0 + k < cols && r0 + x < rows))
                    __stcs(ob + (c0 + k) * rows + r0 + x, tile[x][k]);
            }
        __syncthreads();
    }
}

#define RTX_TRANSPOSE(NAME, E, TR, TC)                                                        \
    extern "C" __global__ void __launch_bounds__(256)                                         \
        NAME(const E* __restrict__ in, E* __restrict__ out, u64 batch, u64 rows, u64 cols) { \
        transpose_tiled<E, TR, TC>(in, out, batch, rows, cols);                               \
    }
RTX_TRANSPOSE(transpose32x32_b4, u32, 32, 32)
RTX_TRANSPOSE(transpose64x64_b4, u32, 64, 64)
RTX_TRANSPOSE(transpose128x32_b4, u32, 128, 32)
RTX_TRANSPOSE(transpose32x128_b4, u32, 32, 128)
RTX_TRANSPOSE(transpose32x32_b8, u64, 32, 32)
RTX_TRANSPOSE(transpose64x64_b8, u64, 64, 64)
RTX_TRANSPOSE(transpose128x32_b8, u64, 128, 32)
RTX_TRANSPOSE(transpose32x128_b8, u64, 32, 128)
RTX_TRANSPOSE(transpose32x32_b16, uint4, 32, 32)

// Batched transpose of runs: in [batch, rows, cols, run] -> out [batch, cols, rows, run],
// a run being W vectors. Output run o = (b, c, r) copies input run (b, r, c).
// I is the index type of the decode: u32 when every run index fits (fast
// division), else u64.
template <typename I>
struct TransposeRunsMap {
    u64 rows, cols;
    __device__ __forceinline__ u64 operator()(u64 o64) const {
        const I o = (I)o64, R = (I)rows, C = (I)cols;
        const I t = o / R;
        const I r = o - t * R;
        const I b = t / C;
        const I c = t - b * C;
        return ((u64)b * rows + r) * cols + c;
    }
};

#define RTX_TRANSPOSE_RUNS(NAME, V)                                                          \
    extern "C" __global__ void __launch_bounds__(RTX_BLOCK)                                  \
        NAME(const V* __restrict__ in, V* __restrict__ out, u64 nruns, u64 W, u32 lanes_log2, \
             u64 rows, u64 cols) {                                                           \
        if (nruns <= 0xFFFFFFFFull) {                                                        \
            TransposeRunsMap<u32> m{rows, cols};                                             \
            copy_rows<V, TransposeRunsMap<u32>>(in, out, nruns, W, lanes_log2, m);           \
        } else {                                                                             \
            TransposeRunsMap<u64> m{rows, cols};                                             \
            copy_rows<V, TransposeRunsMap<u64>>(in, out, nruns, W, lanes_log2, m);           \
        }                                                                                    \
    }
RTX_TRANSPOSE_RUNS(transpose_runs_b16, uint4)
RTX_TRANSPOSE_RUNS(transpose_runs_b8, uint2)
RTX_TRANSPOSE_RUNS(transpose_runs_b4, u32)

// General N-D permute. The output, viewed as `rank` dims `out_dims` of runs
// (a run is W vectors: the trailing dim when it stays last, else one element),
// is written in order; output run o is decoded with the contiguous strides of
// the OUTPUT shape (div/mod by out_dims, last dim fastest) and read from input
// run sum(coord[i] * in_strides[i]), in_strides[i] being the input stride (in
// runs) of the input dim that output dim i comes from.
struct PermuteParams {
    u64 rank;
    u64 out_dims[RTX_MAX_RANK];
    u64 in_strides[RTX_MAX_RANK];
};

template <typename I>
struct PermuteMap {
    const PermuteParams& p;
    __device__ __forceinline__ u64 operator()(u64 o64) const {
        I o = (I)o64;
        u64 s = 0;
        for (int i = (int)p.rank - 1; i >= 0; --i) {
            const I d = (I)p.out_dims[i];
            const I q = o / d;
            s += (u64)(o - q * d) * p.in_strides[i];
            o = q;
        }
        return s;
    }
};

#define RTX_PERMUTE(NAME, V)                                                                 \
    extern "C" __global__ void __launch_bounds__(RTX_BLOCK)                                  \
        NAME(const V* __restrict__ in, V* __restrict__ out, u64 nruns, u64 W, u32 lanes_log2, \
             const PermuteParams p) {                                                        \
        if (nruns <= 0xFFFFFFFFull) {                                                        \
            PermuteMap<u32> m{p};                                                            \
            copy_rows<V, PermuteMap<u32>>(in, out, nruns, W, lanes_log2, m);                 \
        } else {                                                                             \
            PermuteMap<u64> m{p};                                                            \
            copy_rows<V, PermuteMap<u64>>(in, out, nruns, W, lanes_log2, m);                 \
        }                                                                                    \
    }
RTX_PERMUTE(permute_b16, uint4)
RTX_PERMUTE(permute_b8, uint2)
RTX_PERMUTE(permute_b4, u32)
