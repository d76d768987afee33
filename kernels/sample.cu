// Neighbour sampling on the device, bit for bit rtx-backend's sample.rs (the
// definition and the host reference): the CSR of a relation, the counter-
// based picks of a hop, and the relabelling of sampled nodes to local ids in
// order of first appearance.
//
// A hop of one relation: sample_count (picks per frontier node), an exclusive
// scan (plan.cu's scan_*_u32) into each node's first output slot, then
// sample_pick (Floyd's picks, one thread per frontier node). The relabelling
// of a list of candidates (global ids) against a per-type map that starts
// zeroed: relabel_claim marks each distinct node with its first position
// (atomicMax on an encoding that lets an id assigned earlier win over every
// position, and a lower position over a higher one: integer maxima, so the
// result does not depend on the order the atomics land), relabel_flag flags
// the first positions, a scan numbers them, relabel_assign gives each new
// node its local id and lists it, relabel_apply maps every candidate.
//
// No float arithmetic. Uses plan.cu's splitmix64 (the one translation unit
// lists plan.cu before this file).

#include "common.cuh"

// Map words: 0 unset; RTX_SAMPLE_ASSIGNED + id for an assigned local id;
// RTX_SAMPLE_ASSIGNED - 1 - p while position p claims the node.
#define RTX_SAMPLE_ASSIGNED 0x80000000u

// rtx_backend::sample::draw
__device__ __forceinline__ u64 sdraw(u64 key, u32 node, u32 slot) {
    return splitmix64(key, ((u64)node << 32) | (u64)slot);
}

// out[i] = src[idx[i]] (u32 lists: a CSR's neighbours and sorted keys).
extern "C" __global__ void __launch_bounds__(RTX_BLOCK)
    gather_u32(const u32* __restrict__ src, const u32* __restrict__ idx, u64 n,
               u32* __restrict__ out) {
    for (u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (u64)gridDim.x * blockDim.x)
        out[i] = __ldg(src + __ldg(idx + i));
}

// counts[i] = min(degree of front[i], fanout) for i < n; counts[n] = 0 (so an
// exclusive scan of n + 1 counts ends with the total).
extern "C" __global__ void __launch_bounds__(RTX_BLOCK)
    sample_count(const u32* __restrict__ off, const u32* __restrict__ front, u64 n, u32 fanout,
                 u32* __restrict__ counts) {
    for (u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x; i <= n; i += (u64)gridDim.x * blockDim.x) {
        u32 c = 0;
        if (i < n) {
            const u32 v = __ldg(front + i);
            const u32 deg = __ldg(off + v + 1) - __ldg(off + v);
            c = deg < fanout ? deg : fanout;
        }
        counts[i] = c;
    }
}

// The picks of frontier node i (global id front[i], local id lo + i) written
// from slot eoff[i] on: the neighbours themselves in cand, lo + i in dstl.
// Floyd's algorithm: pick s is t = (draw * (j + 1)) >> 64 with j = deg - k + s,
// or j when t was picked already (the picks so far are in cand[base..]).
extern "C" __global__ void __launch_bounds__(RTX_BLOCK)
    sample_pick(const u32* __restrict__ off, const u32* __restrict__ nbr,
                const u32* __restrict__ front, u64 n, u64 lo, u32 fanout, u64 key,
                const u32* __restrict__ eoff, u32* __restrict__ cand, u32* __restrict__ dstl) {
    for (u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (u64)gridDim.x * blockDim.x) {
        const u32 v = __ldg(front + i);
        const u32 a = __ldg(off + v);
        const u32 deg = __ldg(off + v + 1) - a;
        const u64 base = __ldg(eoff + i);
        u32* c = cand + base;
        if (deg <= fanout) {
            for (u32 s = 0; s < deg; ++s) c[s] = s;
        } else {
            for (u32 s = 0; s < fanout; ++s) {
                const u32 j = deg - fanout + s;
                const u32 t = (u32)__umul64hi(sdraw(key, v, s), (u64)j + 1);
                bool seen = false;
                for (u32 q = 0; q < s; ++q) seen |= c[q] == t;
                c[s] = seen ? j : t;
            }
        }
        const u32 k = deg < fanout ? deg : fanout;
        for (u32 s = 0; s < k; ++s) {
            c[s] = __ldg(nbr + a + c[s]);
            dstl[base + s] = (u32)(lo + i);
        }
    }
}

// map[cand[p]] = max(map[cand[p]], ASSIGNED - 1 - p): the first position of
// each node not assigned before.
extern "C" __global__ void __launch_bounds__(RTX_BLOCK)
    relabel_claim(const u32* __restrict__ cand, u64 m, u32* __restrict__ map) {
    for (u64 p = (u64)blockIdx.x * blockDim.x + threadIdx.x; p < m; p += (u64)gridDim.x * blockDim.x)
        atomicMax(map + __ldg(cand + p), RTX_SAMPLE_ASSIGNED - 1u - (u32)p);
}

// flags[p] = 1 where p is its node's claiming (first) position; flags[m] = 0.
extern "C" __global__ void __launch_bounds__(RTX_BLOCK)
    relabel_flag(const u32* __restrict__ cand, u64 m, const u32* __restrict__ map,
                 u32* __restrict__ flags) {
    for (u64 p = (u64)blockIdx.x * blockDim.x + threadIdx.x; p <= m; p += (u64)gridDim.x * blockDim.x)
        flags[p] = p < m && map[__ldg(cand + p)] == RTX_SAMPLE_ASSIGNED - 1u - (u32)p;
}

// A flagged position's node gets local id base + pos[p] and is listed at
// fresh[pos[p]].
extern "C" __global__ void __launch_bounds__(RTX_BLOCK)
    relabel_assign(const u32* __restrict__ cand, u64 m, const u32* __restrict__ flags,
                   const u32* __restrict__ pos, u64 base, u32* __restrict__ map,
                   u32* __restrict__ fresh) {
    for (u64 p = (u64)blockIdx.x * blockDim.x + threadIdx.x; p < m; p += (u64)gridDim.x * blockDim.x)
        if (flags[p]) {
            const u32 g = __ldg(cand + p);
            map[g] = RTX_SAMPLE_ASSIGNED + (u32)(base + pos[p]);
            fresh[pos[p]] = g;
        }
}

// local[p] = the local id of cand[p] (every candidate is assigned by now).
extern "C" __global__ void __launch_bounds__(RTX_BLOCK)
    relabel_apply(const u32* __restrict__ cand, u64 m, const u32* __restrict__ map,
                  u32* __restrict__ local) {
    for (u64 p = (u64)blockIdx.x * blockDim.x + threadIdx.x; p < m; p += (u64)gridDim.x * blockDim.x)
        local[p] = map[__ldg(cand + p)] - RTX_SAMPLE_ASSIGNED;
}
