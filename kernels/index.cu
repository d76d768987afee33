// Gather (index_select) and deterministic scatter-add (index_add).
//
// Scatter-add follows rtx-backend's canonical order (crates/rtx-backend/src/order.rs)
// exactly and uses no atomics. The host turns the IndexPlan (CSR of S^T) into
// levels of "chunks": a chunk is at most CANONICAL_BLOCK (256) consecutive
// values of one destination row at one level. One launch per level: a group of
// threads sums each chunk left to right, starting from its first value, and
// either adds the sum into the destination row (the row's last level: slot ==
// RTX_FINAL) or stores it in the next level's scratch, at the row's next
// consecutive slot. Level 0 reads source rows through the plan's positions;
// higher levels read the previous level's scratch directly.
#include "common.cuh"

struct GatherMap {
    const u32* __restrict__ idx;
    __device__ __forceinline__ u64 operator()(u64 o) const { return (u64)__ldg(idx + o); }
};

#define RTX_GATHER(NAME, V)                                                                 \
    extern "C" __global__ void __launch_bounds__(RTX_BLOCK)                                 \
        NAME(const V* __restrict__ src, V* __restrict__ out, const u32* __restrict__ idx,  \
             u64 nrows, u64 W, u32 lanes_log2) {                                            \
        GatherMap m{idx};                                                                   \
        copy_rows<V, GatherMap>(src, out, nrows, W, lanes_log2, m);                         \
    }
RTX_GATHER(gather_b16, uint4)
RTX_GATHER(gather_b8, uint2)
RTX_GATHER(gather_b4, u32)

// Row (of `vals`) of value p of a level: through the plan's positions at level 0.
template <bool INDIRECT>
__device__ __forceinline__ u64 value_row(const u32* __restrict__ pos, u32 p) {
    return INDIRECT ? (u64)__ldg(pos + p) : (u64)p;
}

// Sum of values [a, b) (b > a) of column-vector j, left to right from the
// first value. Loads go out in batches of 8 before their adds, so 8 are in
// flight per thread: the throughput form, for large problems where many
// chunks run at once.
template <typename V, bool INDIRECT>
__device__ __forceinline__ V chunk_sum_batched(const V* __restrict__ vals,
                                               const u32* __restrict__ pos, u32 a, u32 b,
                                               u64 W, u64 j) {
    constexpr u32 UNROLL = 8;
    V acc = __ldg(vals + value_row<INDIRECT>(pos, a) * W + j);
    u32 p = a + 1;
    for (; p + UNROLL <= b; p += UNROLL) {
        V v[UNROLL];
#pragma unroll
        for (u32 q = 0; q < UNROLL; ++q) v[q] = __ldg(vals + value_row<INDIRECT>(pos, p + q) * W + j);
#pragma unroll
        for (u32 q = 0; q < UNROLL; ++q) acc = vadd(acc, v[q]);
    }
    if (p < b) {  // the tail: loads issued together, added in order
        V v[UNROLL];
#pragma unroll
        for (u32 q = 0; q < UNROLL; ++q)
            if (p + q < b) v[q] = __ldg(vals + value_row<INDIRECT>(pos, p + q) * W + j);
#pragma unroll
        for (u32 q = 0; q < UNROLL; ++q)
            if (p + q < b) acc = vadd(acc, v[q]);
    }
    return acc;
}

// The same sum, software-pipelined: the next batch's values and the batch
// after's positions are in flight while this batch is added, so a 256-value
// chunk costs about one memory round trip per batch instead of two. The
// latency form, for small problems whose time is the longest chunk's chain.
// Same additions in the same order as chunk_sum_batched.
template <typename V, bool INDIRECT>
__device__ __forceinline__ V chunk_sum_pipelined(const V* __restrict__ vals,
                                                 const u32* __restrict__ pos, u32 a, u32 b,
                                                 u64 W, u64 j) {
    constexpr u32 B = 8;
    V cur[B];
    u64 rn[B];
    {
        u64 r0[B];
#pragma unroll
        for (u32 q = 0; q < B; ++q) r0[q] = a + q < b ? value_row<INDIRECT>(pos, a + q) : 0;
#pragma unroll
        for (u32 q = 0; q < B; ++q)
            if (a + q < b) cur[q] = __ldg(vals + r0[q] * W + j);
    }
#pragma unroll
    for (u32 q = 0; q < B; ++q) rn[q] = a + B + q < b ? value_row<INDIRECT>(pos, a + B + q) : 0;
    V acc = cur[0];
    for (u32 p = a; p < b; p += B) {
        const u32 pn = p + B, pnn = p + 2 * B;
        V nxt[B];
#pragma unroll
        for (u32 q = 0; q < B; ++q)
            if (pn + q < b) nxt[q] = __ldg(vals + rn[q] * W + j);
#pragma unroll
        for (u32 q = 0; q < B; ++q) rn[q] = pnn + q < b ? value_row<INDIRECT>(pos, pnn + q) : 0;
#pragma unroll
        for (u32 q = 0; q < B; ++q)
            if (p + q < b && p + q != a) acc = vadd(acc, cur[q]);
#pragma unroll
        for (u32 q = 0; q < B; ++q) cur[q] = nxt[q];
    }
    return acc;
}

// One level of the canonical reduction. Chunk c covers values
// [cstart[c], cstart[c+1]) of this level, belongs to destination row crow[c]
// and writes slot cslot[c] of the next level (or the row itself when RTX_FINAL).
// Value p of level 0 is source row pos[p]; of a higher level, scratch row p.
template <typename V, bool INDIRECT, bool PIPE>
__device__ __forceinline__ void scatter_level(const V* __restrict__ vals,
                                              const u32* __restrict__ pos,
                                              const u32* __restrict__ cstart,
                                              const u32* __restrict__ crow,
                                              const u32* __restrict__ cslot, u64 nchunks, u64 W,
                                              u32 lanes_log2, V* __restrict__ dst,
                                              V* __restrict__ next) {
    const u32 L = 1u << lanes_log2;
    const u32 lane = threadIdx.x & (L - 1);
    const u64 groups = blockDim.x >> lanes_log2;
    for (u64 c = (u64)blockIdx.x * groups + (threadIdx.x >> lanes_log2); c < nchunks;
         c += (u64)gridDim.x * groups) {
        const Chunk ch = load_chunk(cstart, crow, cslot, c);
        for (u64 j = lane; j < W; j += L) {
            const V acc = PIPE ? chunk_sum_pipelined<V, INDIRECT>(vals, pos, ch.a, ch.b, W, j)
                               : chunk_sum_batched<V, INDIRECT>(vals, pos, ch.a, ch.b, W, j);
            if (ch.slot == RTX_FINAL) {
                V* d = dst + ch.row * W + j;
                *d = vadd(*d, acc);
            } else {
                next[(u64)ch.slot * W + j] = acc;
            }
        }
    }
}

#define RTX_SCATTER(NAME, V, INDIRECT, PIPE)                                                \
    extern "C" __global__ void __launch_bounds__(RTX_BLOCK)                                 \
        NAME(const V* __restrict__ vals, const u32* __restrict__ pos,                      \
             const u32* __restrict__ cstart, const u32* __restrict__ crow,                 \
             const u32* __restrict__ cslot, u64 nchunks, u64 W, u32 lanes_log2,            \
             V* __restrict__ dst, V* __restrict__ next) {                                   \
        scatter_level<V, INDIRECT, PIPE>(vals, pos, cstart, crow, cslot, nchunks, W,       \
                                         lanes_log2, dst, next);                            \
    }
// scatter{0,N}{,p}_{type}x{lanes}: level 0 (through positions) or higher;
// batched or pipelined (p) chunk sums; f32 or f64 in vectors of 4/2/1 or 2/1.
#define RTX_SCATTER_ALL(SUFFIX, V)                   \
    RTX_SCATTER(scatter0_##SUFFIX, V, true, false)   \
    RTX_SCATTER(scatterN_##SUFFIX, V, false, false)  \
    RTX_SCATTER(scatter0p_##SUFFIX, V, true, true)   \
    RTX_SCATTER(scatterNp_##SUFFIX, V, false, true)
RTX_SCATTER_ALL(f32x4, float4)
RTX_SCATTER_ALL(f32x2, float2)
RTX_SCATTER_ALL(f32x1, float)
RTX_SCATTER_ALL(f64x2, double2)
RTX_SCATTER_ALL(f64x1, double)
