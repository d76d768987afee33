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

// One level of the canonical reduction. Chunk c covers values
// [cstart[c], cstart[c+1]) of this level, belongs to destination row crow[c]
// and writes slot cslot[c] of the next level (or the row itself when RTX_FINAL).
// Value p of level 0 is source row pos[p]; of a higher level, scratch row p.
template <typename V, bool INDIRECT>
__device__ __forceinline__ void scatter_level(const V* __restrict__ vals,
                                              const u32* __restrict__ pos,
                                              const u32* __restrict__ cstart,
                                              const u32* __restrict__ crow,
                                              const u32* __restrict__ cslot, u64 nchunks, u64 W,
                                              u32 lanes_log2, V* __restrict__ dst,
                                              V* __restrict__ next) {
    constexpr u32 UNROLL = 8;
    const u32 L = 1u << lanes_log2;
    const u32 lane = threadIdx.x & (L - 1);
    const u64 groups = blockDim.x >> lanes_log2;
    for (u64 c = (u64)blockIdx.x * groups + (threadIdx.x >> lanes_log2); c < nchunks;
         c += (u64)gridDim.x * groups) {
        const u32 a = __ldg(cstart + c);
        const u32 b = __ldg(cstart + c + 1);
        const u32 slot = __ldg(cslot + c);
        const u64 row = __ldg(crow + c);
        for (u64 j = lane; j < W; j += L) {
#define RTX_ROW(p) ((INDIRECT ? (u64)__ldg(pos + (p)) : (u64)(p)) * W + j)
            V acc = __ldg(vals + RTX_ROW(a));
            u32 p = a + 1;
            for (; p + UNROLL <= b; p += UNROLL) {
                V v[UNROLL];
#pragma unroll
                for (u32 q = 0; q < UNROLL; ++q) v[q] = __ldg(vals + RTX_ROW(p + q));
#pragma unroll
                for (u32 q = 0; q < UNROLL; ++q) acc = vadd(acc, v[q]);
            }
            if (p < b) {  // the tail: loads issued together, added in order
                V v[UNROLL];
#pragma unroll
                for (u32 q = 0; q < UNROLL; ++q)
                    if (p + q < b) v[q] = __ldg(vals + RTX_ROW(p + q));
#pragma unroll
                for (u32 q = 0; q < UNROLL; ++q)
                    if (p + q < b) acc = vadd(acc, v[q]);
            }
#undef RTX_ROW
            if (slot == RTX_FINAL) {
                V* d = dst + row * W + j;
                *d = vadd(*d, acc);
            } else {
                next[(u64)slot * W + j] = acc;
            }
        }
    }
}

#define RTX_SCATTER(NAME, V, INDIRECT)                                                      \
    extern "C" __global__ void __launch_bounds__(RTX_BLOCK)                                 \
        NAME(const V* __restrict__ vals, const u32* __restrict__ pos,                      \
             const u32* __restrict__ cstart, const u32* __restrict__ crow,                 \
             const u32* __restrict__ cslot, u64 nchunks, u64 W, u32 lanes_log2,            \
             V* __restrict__ dst, V* __restrict__ next) {                                   \
        scatter_level<V, INDIRECT>(vals, pos, cstart, crow, cslot, nchunks, W, lanes_log2, \
                                   dst, next);                                              \
    }
RTX_SCATTER(scatter0_f32x4, float4, true)
RTX_SCATTER(scatter0_f32x2, float2, true)
RTX_SCATTER(scatter0_f32x1, float, true)
RTX_SCATTER(scatter0_f64x2, double2, true)
RTX_SCATTER(scatter0_f64x1, double, true)
RTX_SCATTER(scatterN_f32x4, float4, false)
RTX_SCATTER(scatterN_f32x2, float2, false)
RTX_SCATTER(scatterN_f32x1, float, false)
RTX_SCATTER(scatterN_f64x2, double2, false)
RTX_SCATTER(scatterN_f64x1, double, false)
