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
// @kernels RTX_GATHER

// Row (of `vals`) of value p of a level: through the plan's positions at level 0.
template <bool INDIRECT>
__device__ __forceinline__ u64 value_row(const u32* __restrict__ pos, u32 p) {
    return INDIRECT ? (u64)__ldg(pos + p) : (u64)p;
}

// How a chunk sum reads a value: `load` fetches it as stored, `cvt` makes
// the summand of it when it is added (so the loads in flight hold stored
// values, and a widening never waits on a load before the adds before it):
// as stored for f32, f64 and the f32 scratch of every level past 0, widened
// from half storage to its f32 vector for bf16 / f16.
template <typename V>
struct LoadSame {
    typedef V S;
    __device__ __forceinline__ S load(const S* __restrict__ p) const { return __ldg(p); }
    __device__ __forceinline__ V cvt(S s) const { return s; }
};
// f32x8 (two float4) has no __ldg of its own.
template <>
struct LoadSame<f32x8> {
    typedef f32x8 S;
    __device__ __forceinline__ S load(const S* __restrict__ p) const {
        const float4* q = reinterpret_cast<const float4*>(p);
        f32x8 r;
        r.a = __ldg(q);
        r.b = __ldg(q + 1);
        return r;
    }
    __device__ __forceinline__ f32x8 cvt(S s) const { return s; }
};
template <typename K, typename HS, typename V>
struct LoadHalf {
    typedef HS S;
    __device__ __forceinline__ S load(const S* __restrict__ p) const { return __ldg(p); }
    __device__ __forceinline__ V cvt(S s) const { return hwiden<K>(s); }
};

// Sum of values [a, b) (b > a) of column-vector j, left to right from the
// first value. Loads go out in batches of UNROLL (8) before their adds, so
// UNROLL are in flight per thread: the throughput form, for large problems
// where many chunks run at once.
template <typename V, bool INDIRECT, typename Ld = LoadSame<V>, u32 UNROLL = 8>
__device__ __forceinline__ V chunk_sum_batched(const typename Ld::S* __restrict__ vals,
                                               const u32* __restrict__ pos, u32 a, u32 b,
                                               u64 W, u64 j) {
    const Ld ld;
    V acc = ld.cvt(ld.load(vals + value_row<INDIRECT>(pos, a) * W + j));
    u32 p = a + 1;
    for (; p + UNROLL <= b; p += UNROLL) {
        typename Ld::S v[UNROLL];
#pragma unroll
        for (u32 q = 0; q < UNROLL; ++q)
            v[q] = ld.load(vals + value_row<INDIRECT>(pos, p + q) * W + j);
#pragma unroll
        for (u32 q = 0; q < UNROLL; ++q) acc = vadd(acc, ld.cvt(v[q]));
    }
    if (p < b) {  // the tail: loads issued together, added in order
        typename Ld::S v[UNROLL];
#pragma unroll
        for (u32 q = 0; q < UNROLL; ++q)
            if (p + q < b) v[q] = ld.load(vals + value_row<INDIRECT>(pos, p + q) * W + j);
#pragma unroll
        for (u32 q = 0; q < UNROLL; ++q)
            if (p + q < b) acc = vadd(acc, ld.cvt(v[q]));
    }
    return acc;
}

// The batched sum of a half level 0 (`Ld` widens stored halves): the same
// additions in the same order as chunk_sum_batched, but the first value goes
// out with the first batch. A sum starts from its first value as it is (never
// 0 + it), and widening it must wait for its load; in chunk_sum_batched's
// shape, whose first value is loaded alone before its batches, that wait
// would sit before the first batch's loads (for f32 the first value is the
// accumulator as loaded and waits for nothing), one more memory round trip
// per chunk than the f32 kernels: table, positions, first value, batch,
// tail. Here the first UNROLL values are loaded together, so a chunk of at
// most UNROLL values (a low-degree row's) costs table, positions, values.
template <typename V, typename Ld, u32 UNROLL = 8>
__device__ __forceinline__ V chunk_sum_batched_first(const typename Ld::S* __restrict__ vals,
                                                     const u32* __restrict__ pos, u32 a, u32 b,
                                                     u64 W, u64 j) {
    const Ld ld;
    const u32 n = b - a;  // offsets below n never wrap: a + n is b
    V acc{};              // replaced by value a, unread
    // one batch at a time (the last may be short): the registers of
    // chunk_sum_batched's loop
#pragma unroll 1
    for (u32 o = 0; o < n; o += UNROLL) {
        typename Ld::S v[UNROLL];
#pragma unroll
        for (u32 q = 0; q < UNROLL; ++q)
            if (o + q < n) v[q] = ld.load(vals + value_row<true>(pos, a + o + q) * W + j);
        acc = o == 0 ? ld.cvt(v[0]) : vadd(acc, ld.cvt(v[0]));  // o < n
#pragma unroll
        for (u32 q = 1; q < UNROLL; ++q)
            if (o + q < n) acc = vadd(acc, ld.cvt(v[q]));
    }
    return acc;
}

// The same sum, software-pipelined: the next batch's values and the batch
// after's positions are in flight while this batch is added, so a 256-value
// chunk costs about one memory round trip per batch instead of two. The
// latency form, for small problems whose time is the longest chunk's chain.
// Same additions in the same order as chunk_sum_batched.
template <typename V, bool INDIRECT, typename Ld = LoadSame<V>>
__device__ __forceinline__ V chunk_sum_pipelined(const typename Ld::S* __restrict__ vals,
                                                 const u32* __restrict__ pos, u32 a, u32 b,
                                                 u64 W, u64 j) {
    constexpr u32 B = 8;
    const Ld ld;
    typename Ld::S cur[B];
    u64 rn[B];
    {
        u64 r0[B];
#pragma unroll
        for (u32 q = 0; q < B; ++q) r0[q] = a + q < b ? value_row<INDIRECT>(pos, a + q) : 0;
#pragma unroll
        for (u32 q = 0; q < B; ++q)
            if (a + q < b) cur[q] = ld.load(vals + r0[q] * W + j);
    }
#pragma unroll
    for (u32 q = 0; q < B; ++q) rn[q] = a + B + q < b ? value_row<INDIRECT>(pos, a + B + q) : 0;
    V acc = ld.cvt(cur[0]);
    for (u32 p = a; p < b; p += B) {
        const u32 pn = p + B, pnn = p + 2 * B;
        typename Ld::S nxt[B];
#pragma unroll
        for (u32 q = 0; q < B; ++q)
            if (pn + q < b) nxt[q] = ld.load(vals + rn[q] * W + j);
#pragma unroll
        for (u32 q = 0; q < B; ++q) rn[q] = pnn + q < b ? value_row<INDIRECT>(pos, pnn + q) : 0;
#pragma unroll
        for (u32 q = 0; q < B; ++q)
            if (p + q < b && p + q != a) acc = vadd(acc, ld.cvt(cur[q]));
#pragma unroll
        for (u32 q = 0; q < B; ++q) cur[q] = nxt[q];
    }
    return acc;
}

// Level 0 in the latency form: a chunk of at most one batch (most rows'
// at level 0) summed as chunk_sum_batched_first does, without the
// pipelined form's prologue and predicated batches (at Harris size 36% fewer
// instructions issued and 6% off the call: docs/PERFORMANCE.md), longer
// chunks pipelined. The same additions in the same order either way.
template <typename V, typename Ld>
__device__ __forceinline__ V chunk_sum_latency0(const typename Ld::S* __restrict__ vals,
                                                const u32* __restrict__ pos, u32 a, u32 b, u64 W,
                                                u64 j) {
    return b - a <= 8 ? chunk_sum_batched_first<V, Ld, 8>(vals, pos, a, b, W, j)
                      : chunk_sum_pipelined<V, true, Ld>(vals, pos, a, b, W, j);
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
            V acc;
            if constexpr (PIPE && INDIRECT)
                acc = chunk_sum_latency0<V, LoadSame<V>>(vals, pos, ch.a, ch.b, W, j);
            else
                acc = PIPE ? chunk_sum_pipelined<V, INDIRECT>(vals, pos, ch.a, ch.b, W, j)
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
// @kernels RTX_SCATTER

// Scatter-add into half storage (bf16, f16): level 0 widens the stored
// values to f32 and sums each chunk exactly as the f32 kernels do (same
// order, same adds); the levels past 0 sum the f32 scratch; a row's last
// level adds its f32 sum to the widened destination element, dst + sum as
// the f32 path adds, and rounds once to the storage type. So the bits are
// the host reference's, which accumulates in f32 the same way. `vals` are
// level 0's half rows, `acc` the previous level's f32 scratch (levels past 0).
//
// Speed: a row's last chunk loads its destination element before it sums
// (no other chunk touches that element, so the value is the same), which
// takes the read of the read-modify-write off the chunk's chain of memory
// round trips. The batched form keeps 8 loads in flight per thread and is
// compiled for 4 blocks of RTX_BLOCK per SM (at most 64 registers): a half
// row of f elements is half as many lanes as an f32 row, so at the f32
// kernels' occupancy as many chunks would be in flight as for f32, each of
// half the bytes; at 4 blocks per SM twice as many are. Level 0 loads a
// chunk's first value with its first batch (chunk_sum_batched_first):
// widening a stored value waits for its load, which the f32 kernels' first
// value never does. The order of the additions is the f32 kernels' in every
// form.
template <typename K, typename HS, typename V, bool INDIRECT, bool PIPE>
__device__ __forceinline__ void scatter_level_half(
    const HS* __restrict__ vals, const V* __restrict__ acc, const u32* __restrict__ pos,
    const u32* __restrict__ cstart, const u32* __restrict__ crow, const u32* __restrict__ cslot,
    u64 nchunks, u64 W, u32 lanes_log2, HS* __restrict__ dst, V* __restrict__ next) {
    const u32 L = 1u << lanes_log2;
    const u32 lane = threadIdx.x & (L - 1);
    const u64 groups = blockDim.x >> lanes_log2;
    for (u64 c = (u64)blockIdx.x * groups + (threadIdx.x >> lanes_log2); c < nchunks;
         c += (u64)gridDim.x * groups) {
        const Chunk ch = load_chunk(cstart, crow, cslot, c);
        const bool last = ch.slot == RTX_FINAL;
        for (u64 j = lane; j < W; j += L) {
            HS* d = dst + ch.row * W + j;
            HS old;
            if (last) old = *d;  // in flight while the chunk is summed
            V sum;
            if (INDIRECT) {
                typedef LoadHalf<K, HS, V> Ld;
                sum = PIPE ? chunk_sum_latency0<V, Ld>(vals, pos, ch.a, ch.b, W, j)
                           : chunk_sum_batched_first<V, Ld, 8>(vals, pos, ch.a, ch.b, W, j);
            } else {
                sum = PIPE ? chunk_sum_pipelined<V, false>(acc, pos, ch.a, ch.b, W, j)
                           : chunk_sum_batched<V, false>(acc, pos, ch.a, ch.b, W, j);
            }
            if (last) {
                *d = hnarrow<K>(vadd(hwiden<K>(old), sum));
            } else {
                next[(u64)ch.slot * W + j] = sum;
            }
        }
    }
}

// MINB: blocks per SM the kernel is compiled for (1: no register cap).
#define RTX_SCATTER_HALF(NAME, K, HS, V, INDIRECT, PIPE, MINB)                             \
    extern "C" __global__ void __launch_bounds__(RTX_BLOCK, MINB)                           \
        NAME(const HS* __restrict__ vals, const float* __restrict__ acc,                   \
             const u32* __restrict__ pos, const u32* __restrict__ cstart,                  \
             const u32* __restrict__ crow, const u32* __restrict__ cslot, u64 nchunks,     \
             u64 W, u32 lanes_log2, HS* __restrict__ dst, float* __restrict__ next) {       \
        scatter_level_half<K, HS, V, INDIRECT, PIPE>(                                      \
            vals, reinterpret_cast<const V*>(acc), pos, cstart, crow, cslot, nchunks, W,   \
            lanes_log2, dst, reinterpret_cast<V*>(next));                                  \
    }
// scatter{0,N}{,p}_{bf16,f16}x{8,4,2,1}: vectors of 8, 4, 2 or 1 stored
// halves (16, 8, 4, 2 bytes) summed as f32x8, float4, float2, float. B0, BN:
// blocks per SM of the batched level 0 and levels past 0 (the most that
// compile without spills: x8's f32x8 sums take more registers).
// @kernels RTX_SCATTER_HALF

// Element-wise conversions between f32 and half storage, one element per
// thread, grid-stride: narrow_* rounds f32 to the kind (Bf16::narrow,
// F16::narrow), widen_* widens it to f32 (exact but for NaN, quieted as the
// host's `half` does).
#define RTX_NARROW(NAME, K, H)                                                              \
    extern "C" __global__ void __launch_bounds__(RTX_BLOCK)                                 \
        NAME(const float* __restrict__ in, H* __restrict__ out, u64 n) {                    \
        for (u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x; i < n;                    \
             i += (u64)gridDim.x * blockDim.x)                                              \
            out[i] = (H)K::narrow(__ldg(in + i));                                           \
    }
#define RTX_WIDEN(NAME, K, H)                                                               \
    extern "C" __global__ void __launch_bounds__(RTX_BLOCK)                                 \
        NAME(const H* __restrict__ in, float* __restrict__ out, u64 n) {                    \
        for (u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x; i < n;                    \
             i += (u64)gridDim.x * blockDim.x)                                              \
            out[i] = K::widen(__ldg(in + i));                                               \
    }
// @kernels RTX_NARROW
// @kernels RTX_WIDEN

// The same conversions over many tensors in one launch (a model's weights
// rounded, its gradients widened): `tab` holds three words per tensor (the
// input's and output's addresses, the length n), `blocks` one word per
// block, (tensor << 32) | chunk: the block converts elements
// [chunk * len, min((chunk + 1) * len, n)) of that tensor.
#define RTX_CONVERT_ALL_ENTRY(IN, OUT)                                                      \
    const u64 word = blocks[blockIdx.x];                                                    \
    const u64* e = tab + 3 * (word >> 32);                                                  \
    const u64 n = e[2];                                                                     \
    const u64 lo = (word & 0xffffffffull) * len;                                            \
    const u64 hi = lo + len < n ? lo + len : n;                                             \
    const IN* __restrict__ in = reinterpret_cast<const IN*>(e[0]);                          \
    OUT* __restrict__ out = reinterpret_cast<OUT*>(e[1])
#define RTX_NARROW_ALL(NAME, K, H)                                                          \
    extern "C" __global__ void __launch_bounds__(RTX_BLOCK)                                 \
        NAME(const u64* __restrict__ tab, const u64* __restrict__ blocks, u64 len) {        \
        RTX_CONVERT_ALL_ENTRY(float, H);                                                    \
        for (u64 i = lo + threadIdx.x; i < hi; i += blockDim.x)                             \
            out[i] = (H)K::narrow(__ldg(in + i));                                           \
    }
#define RTX_WIDEN_ALL(NAME, K, H)                                                           \
    extern "C" __global__ void __launch_bounds__(RTX_BLOCK)                                 \
        NAME(const u64* __restrict__ tab, const u64* __restrict__ blocks, u64 len) {        \
        RTX_CONVERT_ALL_ENTRY(H, float);                                                    \
        for (u64 i = lo + threadIdx.x; i < hi; i += blockDim.x)                             \
            out[i] = K::widen(__ldg(in + i));                                               \
    }
// @kernels RTX_NARROW_ALL
// @kernels RTX_WIDEN_ALL

// The weight update of mixed-precision training (DenseOps::axpy_mixed): the
// f32 master y += alpha * widen(x) (the product rounded, then the sum, as
// axpy_f32 on the widened x), and low = the new y rounded to the kind.
#define RTX_AXPY_MIXED(NAME, K, H)                                                          \
    extern "C" __global__ void __launch_bounds__(RTX_BLOCK)                                 \
        NAME(float* __restrict__ y, const H* __restrict__ x, H* __restrict__ low, u64 n,    \
             float alpha) {                                                                 \
        for (u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x; i < n;                    \
             i += (u64)gridDim.x * blockDim.x) {                                            \
            const float v = __fadd_rn(y[i], __fmul_rn(alpha, K::widen(__ldg(x + i))));      \
            y[i] = v;                                                                       \
            low[i] = (H)K::narrow(v);                                                       \
        }                                                                                   \
    }
// @kernels RTX_AXPY_MIXED
