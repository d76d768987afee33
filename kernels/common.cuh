// Shared definitions of the rtx CUDA kernels.
//
// The kernels are compiled at run time by NVRTC, which has no C++ standard
// library headers: this file defines what they share. rtx-backend-cuda embeds
// it and the .cu files with include_str! and concatenates them into one
// translation unit (dropping the `#include "common.cuh"` lines), so one NVRTC
// compile builds every kernel. Each .cu file still includes it, so the files
// also compile on their own with nvcc.
//
// Conventions (ARCHITECTURE.md, "Invariants", has the rest):
// * All sizes and index arithmetic are 64-bit (`u64`); only stored indices
//   (index lists, plan positions, chunk tables) are 32-bit.
// * Every kernel uses a 1-D grid and a grid-stride loop, so any problem size
//   runs with any grid the host picks (grid.x <= 2^31 - 1; grid.y and grid.z
//   are always 1).
// * Copies move bits as unsigned integer vectors (NaN payloads and -0.0 are
//   preserved); only scatter-add does float arithmetic, with explicit
//   round-to-nearest adds (__fadd_rn / __dadd_rn) that the compiler may never
//   contract or reassociate.
#pragma once

typedef unsigned int u32;
typedef unsigned long long u64;

// Constants shared with the host. rtx-backend-cuda defines each one once
// (crates/rtx-backend-cuda/src/abi.rs) and puts the #define lines before these
// sources; a test there fails when the two sides disagree. Compiling a file
// alone (nvcc) needs the same values as -D options.
// Threads per block of the 1-D kernels.
#ifndef RTX_BLOCK
#error "RTX_BLOCK must be defined by rtx-backend-cuda (src/abi.rs)"
#endif
// Rows each lane group of copy_rows copies per pass.
#ifndef RTX_ROWS_PER_GROUP
#error "RTX_ROWS_PER_GROUP must be defined by rtx-backend-cuda (src/abi.rs)"
#endif
// Largest rank of the N-D permute kernel (after rtx-tensor's simplification).
#ifndef RTX_MAX_RANK
#error "RTX_MAX_RANK must be defined by rtx-backend-cuda (src/abi.rs)"
#endif
// Bytes of the shared span of the span transpose kernels (permute.cu).
#ifndef RTX_PERMUTE_SPAN_BYTES
#error "RTX_PERMUTE_SPAN_BYTES must be defined by rtx-backend-cuda (src/abi.rs)"
#endif
// Input tiles in flight per block of the bulk-copy transpose (permute.cu).
#ifndef RTX_BULK_STAGES
#error "RTX_BULK_STAGES must be defined by rtx-backend-cuda (src/abi.rs)"
#endif
// Largest edge of the output tile of one matmul block.
#ifndef RTX_MATMUL_TILE
#error "RTX_MATMUL_TILE must be defined by rtx-backend-cuda (src/abi.rs)"
#endif
// Most columns of a product that matmul_dot takes (a thread per output row).
#ifndef RTX_MATMUL_DOT_N
#error "RTX_MATMUL_DOT_N must be defined by rtx-backend-cuda (src/abi.rs)"
#endif
// Resident blocks per SM the fused level-0 kernels are built for.
#ifndef RTX_FUSED_MIN_BLOCKS
#error "RTX_FUSED_MIN_BLOCKS must be defined by rtx-backend-cuda (src/abi.rs)"
#endif
// Positions per window, and bytes of the column slice, of segment.cu's
// windowed fused level 0 (levels::window_table has the same windows).
#ifndef RTX_WIN
#error "RTX_WIN must be defined by rtx-backend-cuda (src/abi.rs)"
#endif
#ifndef RTX_SLICE_BYTES
#error "RTX_SLICE_BYTES must be defined by rtx-backend-cuda (src/abi.rs)"
#endif
// Terms of one block of rtx_backend::order's canonical sums.
#ifndef RTX_CANONICAL_BLOCK
#error "RTX_CANONICAL_BLOCK must be defined by rtx-backend-cuda (src/abi.rs)"
#endif
// Most parts of one sum_bias_relu launch (model.cu's BiasParts).
#ifndef RTX_SUM_BIAS_PARTS
#error "RTX_SUM_BIAS_PARTS must be defined by rtx-backend-cuda (src/abi.rs)"
#endif
// Most levels one column-sum launch computes (dense.cu's RrClimb).
#ifndef RTX_COL_SUM_LEVELS
#error "RTX_COL_SUM_LEVELS must be defined by rtx-backend-cuda (src/abi.rs)"
#endif
// Slot value of a scatter chunk whose sum goes into the destination row.
#ifndef RTX_FINAL
#error "RTX_FINAL must be defined by rtx-backend-cuda (src/abi.rs)"
#endif
// Largest digit (bits) of one pass of the device plan's radix sort (plan.cu).
#ifndef RTX_PLAN_DIGIT_BITS
#error "RTX_PLAN_DIGIT_BITS must be defined by rtx-backend-cuda (src/abi.rs)"
#endif
// Items per thread of a tile of the device plan's sort and scans.
#ifndef RTX_PLAN_ITEMS
#error "RTX_PLAN_ITEMS must be defined by rtx-backend-cuda (src/abi.rs)"
#endif
// Levels past level 0 a device plan has room for.
#ifndef RTX_PLAN_HI_LEVELS
#error "RTX_PLAN_HI_LEVELS must be defined by rtx-backend-cuda (src/abi.rs)"
#endif
// Op codes of rtx_backend::Unary.
#ifndef RTX_UNARY_RELU
#error "RTX_UNARY_RELU must be defined by rtx-backend-cuda (src/abi.rs)"
#endif
#ifndef RTX_UNARY_LEAKY_RELU
#error "RTX_UNARY_LEAKY_RELU must be defined by rtx-backend-cuda (src/abi.rs)"
#endif
#ifndef RTX_UNARY_EXP
#error "RTX_UNARY_EXP must be defined by rtx-backend-cuda (src/abi.rs)"
#endif
#ifndef RTX_UNARY_SCALE
#error "RTX_UNARY_SCALE must be defined by rtx-backend-cuda (src/abi.rs)"
#endif
// Op codes of rtx_backend::Binary.
#ifndef RTX_BINARY_ADD
#error "RTX_BINARY_ADD must be defined by rtx-backend-cuda (src/abi.rs)"
#endif
#ifndef RTX_BINARY_SUB
#error "RTX_BINARY_SUB must be defined by rtx-backend-cuda (src/abi.rs)"
#endif
#ifndef RTX_BINARY_MUL
#error "RTX_BINARY_MUL must be defined by rtx-backend-cuda (src/abi.rs)"
#endif
#ifndef RTX_BINARY_DIV
#error "RTX_BINARY_DIV must be defined by rtx-backend-cuda (src/abi.rs)"
#endif

// Element-wise adds of the scatter accumulators (round to nearest, never fused).
__device__ __forceinline__ float vadd(float a, float b) { return __fadd_rn(a, b); }
__device__ __forceinline__ float2 vadd(float2 a, float2 b) {
    return make_float2(__fadd_rn(a.x, b.x), __fadd_rn(a.y, b.y));
}
__device__ __forceinline__ float4 vadd(float4 a, float4 b) {
    return make_float4(__fadd_rn(a.x, b.x), __fadd_rn(a.y, b.y), __fadd_rn(a.z, b.z),
                       __fadd_rn(a.w, b.w));
}
__device__ __forceinline__ double vadd(double a, double b) { return __dadd_rn(a, b); }
__device__ __forceinline__ double2 vadd(double2 a, double2 b) {
    return make_double2(__dadd_rn(a.x, b.x), __dadd_rn(a.y, b.y));
}

// Chunk c of one level of a scatter plan's chunk tables (crates/rtx-backend-cuda/
// src/levels.rs): values [a, b) of the level, destination row `row`, and the
// slot of the next level its sum goes to (RTX_FINAL: into the row itself).
struct Chunk {
    u32 a, b, slot;
    u64 row;
};
__device__ __forceinline__ Chunk load_chunk(const u32* __restrict__ cstart,
                                            const u32* __restrict__ crow,
                                            const u32* __restrict__ cslot, u64 c) {
    Chunk k;
    k.a = __ldg(cstart + c);
    k.b = __ldg(cstart + c + 1);
    k.slot = __ldg(cslot + c);
    k.row = __ldg(crow + c);
    return k;
}

// Copies rows of W vectors: out row o <- src row map(o), for o in [0, nrows).
//
// A group of L = 2^lanes_log2 consecutive threads copies one row (lane j
// moves vectors j, j + L, ...), so a warp reads and writes whole contiguous
// row segments. Each group handles U rows per pass with all their loads issued
// before the first store, to keep enough bytes in flight.
template <typename V, typename Map, int U = RTX_ROWS_PER_GROUP>
__device__ __forceinline__ void copy_rows(const V* __restrict__ src, V* __restrict__ out,
                                          u64 nrows, u64 W, u32 lanes_log2, const Map& map) {
    const u32 L = 1u << lanes_log2;
    const u32 lane = threadIdx.x & (L - 1);
    const u64 groups = blockDim.x >> lanes_log2;
    const u64 stride = (u64)gridDim.x * groups;
    for (u64 base = (u64)blockIdx.x * groups + (threadIdx.x >> lanes_log2); base < nrows;
         base += stride * U) {
        u64 o[U];
        u64 s[U];
#pragma unroll
        for (int u = 0; u < U; ++u) {
            o[u] = base + (u64)u * stride;
            s[u] = o[u] < nrows ? map(o[u]) : 0;
        }
        for (u64 j = lane; j < W; j += L) {
            V v[U];
#pragma unroll
            for (int u = 0; u < U; ++u)
                if (o[u] < nrows) v[u] = __ldg(src + s[u] * W + j);
#pragma unroll
            for (int u = 0; u < U; ++u)
                if (o[u] < nrows) __stcs(out + o[u] * W + j, v[u]);
        }
    }
}

// Half-precision storage (bf16, f16): 16-bit elements held as unsigned
// shorts, computed in f32. The conversions are integer bit operations, the
// exact algorithms of the `half` crate (bf16::from_f32 / to_f32,
// f16::from_f32 / to_f32), not cuda_bf16.h / cuda_fp16.h, whose NaN handling
// may differ: narrowing rounds to nearest even, overflows to inf, keeps f16
// subnormals and a NaN's sign and top payload bits with the quiet bit set;
// widening is exact but for NaN, which it quiets the same way. A device test
// compares them with the host on all 2^32 f32 patterns.
typedef unsigned short u16;
// The stored element and its vectors of 2 and 4, by kind (kernel parameter
// types: the table binds them).
typedef u16 bf16;
typedef u32 bf16x2;
typedef uint2 bf16x4;
typedef uint4 bf16x8;
typedef u16 f16;
typedef u32 f16x2;
typedef uint2 f16x4;
typedef uint4 f16x8;

// The bf16 element kind. `widen` / `narrow` are the host's conversions bit
// for bit; `widen_sum` is the summand of a stored value in a sum, equal to
// `widen` but for a NaN's payload, which no sum keeps (the device's adds
// make their own NaN).
struct Bf16 {
    static __device__ __forceinline__ float widen_sum(u32 h) { return __uint_as_float(h << 16); }
    static __device__ __forceinline__ float widen(u32 h) {
        h &= 0xffffu;
        if ((h & 0x7fffu) > 0x7f80u) h |= 0x40u;
        return __uint_as_float(h << 16);
    }
    static __device__ __forceinline__ u32 narrow(float f) {
        const u32 x = __float_as_uint(f);
        if ((x & 0x7fffffffu) > 0x7f800000u) return ((x >> 16) | 0x40u) & 0xffffu;
        const u32 r = 0x8000u;
        const u32 up = ((x & r) != 0u && (x & (3u * r - 1u)) != 0u) ? 1u : 0u;
        return ((x >> 16) + up) & 0xffffu;
    }
};

// The f16 (IEEE binary16) element kind (the members as Bf16's; `widen_sum`
// is the hardware's exact conversion).
struct F16 {
    static __device__ __forceinline__ float widen_sum(u32 i) {
        float r;
        asm("cvt.f32.f16 %0, %1;" : "=f"(r) : "h"((unsigned short)(i & 0xffffu)));
        return r;
    }
    // the hardware's exact conversion but for a NaN, whose sign and payload
    // are kept with the quiet bit set, as the host does
    static __device__ __forceinline__ float widen(u32 i) {
        i &= 0xffffu;
        if ((i & 0x7c00u) == 0x7c00u && (i & 0x03ffu) != 0u)
            return __uint_as_float(((i & 0x8000u) << 16) | 0x7fc00000u | ((i & 0x03ffu) << 13));
        return widen_sum(i);
    }
    // the hardware's rounding to nearest even (exact IEEE, overflow to
    // infinity, subnormals kept) but for a NaN, whose sign and top payload
    // bits are kept with the quiet bit set, as the host does
    static __device__ __forceinline__ u32 narrow(float f) {
        const u32 x = __float_as_uint(f);
        if ((x & 0x7fffffffu) > 0x7f800000u)
            return ((x >> 16) & 0x8000u) | 0x7e00u | ((x & 0x007fffffu) >> 13);
        unsigned short h;
        asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(f));
        return h;
    }
};

// Eight f32 sums (the accumulator of 8 halves).
struct f32x8 {
    float4 a, b;
};
__device__ __forceinline__ f32x8 vadd(f32x8 x, f32x8 y) {
    f32x8 r;
    r.a = vadd(x.a, y.a);
    r.b = vadd(x.b, y.b);
    return r;
}

// Vectors of 1, 2, 4 or 8 half elements as stored (u16, u32, uint2, uint4,
// the element of the lower address in the low bits) and their f32
// accumulators (float, float2, float4, f32x8): `hwiden` the summands of a
// sum (`widen_sum`), `hnarrow` the rounding of the sums.
template <typename K>
__device__ __forceinline__ float hwiden(u16 s) { return K::widen_sum(s); }
template <typename K>
__device__ __forceinline__ float2 hwiden(u32 s) {
    return make_float2(K::widen_sum(s), K::widen_sum(s >> 16));
}
template <typename K>
__device__ __forceinline__ float4 hwiden(uint2 s) {
    return make_float4(K::widen_sum(s.x), K::widen_sum(s.x >> 16), K::widen_sum(s.y),
                       K::widen_sum(s.y >> 16));
}
template <typename K>
__device__ __forceinline__ f32x8 hwiden(uint4 s) {
    f32x8 r;
    r.a = hwiden<K>(make_uint2(s.x, s.y));
    r.b = hwiden<K>(make_uint2(s.z, s.w));
    return r;
}
template <typename K>
__device__ __forceinline__ u16 hnarrow(float a) { return (u16)K::narrow(a); }
template <typename K>
__device__ __forceinline__ u32 hnarrow(float2 a) { return K::narrow(a.x) | (K::narrow(a.y) << 16); }
template <typename K>
__device__ __forceinline__ uint2 hnarrow(float4 a) {
    return make_uint2(K::narrow(a.x) | (K::narrow(a.y) << 16),
                      K::narrow(a.z) | (K::narrow(a.w) << 16));
}
template <typename K>
__device__ __forceinline__ uint4 hnarrow(f32x8 a) {
    const uint2 lo = hnarrow<K>(a.a), hi = hnarrow<K>(a.b);
    return make_uint4(lo.x, lo.y, hi.x, hi.y);
}
