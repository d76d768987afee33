// swap_dims / transpose / permute, following rtx-tensor's plan
// (crates/rtx-tensor: PermuteKind). Every kernel writes the output in the
// contiguous row-major order of the OUTPUT shape, and decodes output indices
// with that shape: never with the input's strides.
#include "common.cuh"

//
// The kernel choice (crates/rtx-backend-cuda/src/permute_plan.rs):
// * transpose_planes_b*: batches of small matrices; a block moves k whole
//   planes (one contiguous span in the input and in the output);
// * transpose_rows_b*: few columns; a tile is whole rows (a contiguous input
//   span, `cols` contiguous output runs);
// * transpose_cols_b*: few rows; a tile is whole columns (`rows` contiguous
//   input runs, a contiguous output span);
// * transpose{TR}x{TC}_b*: larger matrices and the tiled inner pair of N-D
//   permutes whose last dim moves, software-pipelined over one wave of blocks;
// * transpose_bulk_b4: the same 64x64 f32 tiles through Hopper's bulk tensor
//   copies (sm_90+), when the tensor maps can describe the matrices (and
//   transpose_bulk_b2 of permute_2byte.cu, 128x128 tiles of 2-byte elements);
// * transpose_runs_b* / permute_b*: copy_rows with 64-bit decodes, for what
//   the others do not take (runs of other sizes, counts past 2^31, N-D
//   permutes that keep the last dim).
// 2-byte elements of even sides and row strides take the span and tiled
// kernels of permute_2byte.cu (`_p2`), which move 4-byte element pairs; 2-byte
// runs of 16-byte vectors shorter than a line take its permute_lines_b16.

// Division by d of n < 2^31 (1 <= d < 2^31): q = (n * m) >> s with
// s = 31 + ceil(log2 d) and m = ceil(2^s / d) < 2^32, set by the host.
struct FastDiv {
    u32 d, m, s, pad;
};
__device__ __forceinline__ u32 fdiv(const FastDiv& f, u32 n) {
    return (u32)(((u64)n * f.m) >> f.s);
}

// Shared-memory index of span element i: one pad element per 32, so a warp
// reading or writing with a stride that is a multiple of 32 has no conflicts.
__device__ __forceinline__ u32 sk(u32 i) { return i + (i >> 5); }

__device__ __forceinline__ void parts(const uint4& v, u32 (&e)[4]) {
    e[0] = v.x;
    e[1] = v.y;
    e[2] = v.z;
    e[3] = v.w;
}
__device__ __forceinline__ void parts(const uint4& v, u64 (&e)[2]) {
    e[0] = ((u64)v.y << 32) | v.x;
    e[1] = ((u64)v.w << 32) | v.z;
}
__device__ __forceinline__ void parts(const uint4& v, u16 (&e)[8]) {
    const u32 w[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
    for (int i = 0; i < 4; ++i) {
        e[2 * i] = (u16)(w[i] & 0xffffu);
        e[2 * i + 1] = (u16)(w[i] >> 16);
    }
}
__device__ __forceinline__ uint4 pack(const u16 (&e)[8]) {
    return make_uint4((u32)e[0] | ((u32)e[1] << 16), (u32)e[2] | ((u32)e[3] << 16),
                      (u32)e[4] | ((u32)e[5] << 16), (u32)e[6] | ((u32)e[7] << 16));
}
__device__ __forceinline__ uint4 pack(const u32 (&e)[4]) { return make_uint4(e[0], e[1], e[2], e[3]); }
__device__ __forceinline__ uint4 pack(const u64 (&e)[2]) {
    return make_uint4((u32)e[0], (u32)(e[0] >> 32), (u32)e[1], (u32)(e[1] >> 32));
}

// buf[sk(i)] = src[i] for i < n, the span read as aligned 16-byte vectors
// (all loads of a thread issued before its shared-memory writes). The first
// and last vectors may cover a few elements outside the span: they lie in
// the same 16-byte block as span elements, so within the allocation (device
// allocations are 256-byte aligned), and are never written.
template <typename E, int U>
__device__ __forceinline__ void load_span(const E* __restrict__ src, u32 n, E* buf) {
    constexpr u32 VE = 16 / sizeof(E);
    const u64 a = (u64)src;
    const u32 head = (u32)(a & 15) / (u32)sizeof(E);
    const uint4* __restrict__ v = (const uint4*)(a - (a & 15));
    const u32 nv = (head + n + VE - 1) / VE;
    for (u32 base = threadIdx.x; base < nv; base += U * blockDim.x) {
        uint4 x[U];
#pragma unroll
        for (int u = 0; u < U; ++u) {
            const u32 i = base + u * blockDim.x;
            if (i < nv) x[u] = __ldg(v + i);
        }
#pragma unroll
        for (int u = 0; u < U; ++u) {
            const u32 i = base + u * blockDim.x;
            if (i < nv) {
                E e[VE];
                parts(x[u], e);
#pragma unroll
                for (u32 j = 0; j < VE; ++j) {
                    const u32 k = i * VE + j - head;  // wraps past n when before the span
                    if (k < n) buf[sk(k)] = e[j];
                }
            }
        }
    }
}

// dst[o] = buf[map(o)] for o < n: aligned 16-byte vector stores, single
// elements for the unaligned head and the tail.
template <typename E, typename Map>
__device__ __forceinline__ void store_span(E* __restrict__ dst, u32 n, const E* buf,
                                           const Map& map) {
    constexpr u32 VE = 16 / sizeof(E);
    const u64 a = (u64)dst;
    u32 head = (u32)((16 - (a & 15)) & 15) / (u32)sizeof(E);
    if (head > n) head = n;
    const u32 nv = (n - head) / VE;
    const u32 tail0 = head + nv * VE;
    uint4* __restrict__ v = (uint4*)(dst + head);
#pragma unroll 4
    for (u32 i = threadIdx.x; i < nv; i += blockDim.x) {
        E e[VE];
#pragma unroll
        for (u32 j = 0; j < VE; ++j) e[j] = buf[map(head + i * VE + j)];
        __stcs(v + i, pack(e));
    }
    const u32 t = threadIdx.x;
    if (t < head) __stcs(dst + t, buf[map(t)]);
    if (t < n - tail0) __stcs(dst + tail0 + t, buf[map(tail0 + t)]);
}

// Elements of the shared span of the span kernels.
#define RTX_SPAN(E) (RTX_PERMUTE_SPAN_BYTES / (int)sizeof(E))

// Parameters of the span kernels: `batch` matrices of rows x cols (every
// count below 2^31 but batch; the host checks). Planes: `per` matrices per
// tile. Rows / cols: 2^per rows / columns per tile, `tiles_d` tiles per plane.
struct SpanParams {
    u64 batch, tiles;
    u32 rows, cols, per, pad;
    FastDiv plane_d, rows_d, tiles_d;
};

// Output element o of a span of whole planes: (plane p, column c, row r),
// read from input element (p, r, c) of the span.
struct PlanesMap {
    FastDiv plane_d, rows_d;
    u32 R, C, P;
    __device__ __forceinline__ u32 operator()(u32 o) const {
        const u32 p = fdiv(plane_d, o);
        const u32 rem = o - p * P;
        const u32 c = fdiv(rows_d, rem);
        const u32 r = rem - c * R;
        return sk(p * P + r * C + c);
    }
};

template <typename E>
__device__ __forceinline__ void transpose_planes(const E* __restrict__ in, E* __restrict__ out,
                                                 const SpanParams& q) {
    __shared__ E buf[RTX_SPAN(E) + RTX_SPAN(E) / 32];
    const u32 P = q.rows * q.cols;
    const PlanesMap m{q.plane_d, q.rows_d, q.rows, q.cols, P};
    for (u64 s = blockIdx.x; s < q.tiles; s += gridDim.x) {
        const u64 p0 = s * q.per;
        const u64 left = q.batch - p0;
        const u32 n = (u32)(left < q.per ? left : q.per) * P;
        load_span<E, 4>(in + p0 * P, n, buf);
        __syncthreads();
        store_span<E>(out + p0 * P, n, buf, m);
        __syncthreads();
    }
}

// A tile of whole rows: rows r0 .. r0 + T of plane b (T = 2^per), loaded as
// one span; column c of the tile is the output run at (b, c, r0).
template <typename E>
__device__ __forceinline__ void transpose_rows(const E* __restrict__ in, E* __restrict__ out,
                                               const SpanParams& q) {
    constexpr u32 VE = 16 / sizeof(E);
    constexpr u32 LV = sizeof(E) == 4 ? 2 : 1;
    __shared__ E buf[RTX_SPAN(E) + RTX_SPAN(E) / 32];
    const u32 R = q.rows, C = q.cols, T = 1u << q.per;
    const u64 P = (u64)R * C;
    const u32 tpp = q.tiles_d.d;
    const bool vec = R % VE == 0 && ((u64)out & 15) == 0;
    for (u64 s64 = blockIdx.x; s64 < q.tiles; s64 += gridDim.x) {
        const u32 s = (u32)s64;
        const u32 b = fdiv(q.tiles_d, s);
        const u32 r0 = (s - b * tpp) << q.per;
        const u32 tn = R - r0 < T ? R - r0 : T;
        load_span<E, 4>(in + b * P + (u64)r0 * C, tn * C, buf);
        __syncthreads();
        E* __restrict__ ob = out + b * P + r0;
        if (vec) {
            // tn is a multiple of VE (R and r0 are)
            const u32 pv = q.per - LV;
#pragma unroll 4
            for (u32 i = threadIdx.x; i < (C << pv); i += blockDim.x) {
                const u32 c = i >> pv;
                const u32 t0 = (i & ((1u << pv) - 1)) * VE;
                if (t0 < tn) {
                    E e[VE];
#pragma unroll
                    for (u32 j = 0; j < VE; ++j) e[j] = buf[sk((t0 + j) * C + c)];
                    __stcs((uint4*)(ob + (u64)c * R + t0), pack(e));
                }
            }
        } else {
#pragma unroll 4
            for (u32 i = threadIdx.x; i < (C << q.per); i += blockDim.x) {
                const u32 c = i >> q.per;
                const u32 t = i & (T - 1);
                if (t < tn) __stcs(ob + (u64)c * R + t, buf[sk(t * C + c)]);
            }
        }
        __syncthreads();
    }
}

// Output element o of a tile of whole columns: (column t, row r) of the tile,
// shared layout [rows][T + 1].
struct ColsMap {
    FastDiv rows_d;
    u32 R, T1;
    __device__ __forceinline__ u32 operator()(u32 o) const {
        const u32 t = fdiv(rows_d, o);
        return (o - t * R) * T1 + t;
    }
};

// A tile of whole columns: columns c0 .. c0 + T of plane b (T = 2^per), read
// as `rows` runs; the output is one span.
template <typename E, int U = 4>
__device__ __forceinline__ void transpose_cols(const E* __restrict__ in, E* __restrict__ out,
                                               const SpanParams& q) {
    constexpr u32 VE = 16 / sizeof(E);
    constexpr u32 LV = sizeof(E) == 4 ? 2 : 1;
    __shared__ E buf[RTX_SPAN(E) + RTX_SPAN(E) / 32];
    const u32 R = q.rows, C = q.cols, T = 1u << q.per, T1 = T + 1;
    const u64 P = (u64)R * C;
    const u32 tpp = q.tiles_d.d;
    const bool vec = C % VE == 0 && ((u64)in & 15) == 0;
    const ColsMap m{q.rows_d, R, T1};
    for (u64 s64 = blockIdx.x; s64 < q.tiles; s64 += gridDim.x) {
        const u32 s = (u32)s64;
        const u32 b = fdiv(q.tiles_d, s);
        const u32 c0 = (s - b * tpp) << q.per;
        const u32 tn = C - c0 < T ? C - c0 : T;
        const E* __restrict__ ib = in + b * P + c0;
        if (vec) {
            const u32 pv = q.per - LV;
            const u32 items = R << pv;
            for (u32 base = threadIdx.x; base < items; base += U * blockDim.x) {
                uint4 x[U];
#pragma unroll
                for (int u = 0; u < U; ++u) {
                    const u32 i = base + u * blockDim.x;
                    const u32 t0 = (i & ((1u << pv) - 1)) * VE;
                    if (i < items && t0 < tn)
                        x[u] = __ldg((const uint4*)(ib + (u64)(i >> pv) * C + t0));
                }
#pragma unroll
                for (int u = 0; u < U; ++u) {
                    const u32 i = base + u * blockDim.x;
                    const u32 t0 = (i & ((1u << pv) - 1)) * VE;
                    if (i < items && t0 < tn) {
                        E e[VE];
                        parts(x[u], e);
#pragma unroll
                        for (u32 j = 0; j < VE; ++j) buf[(i >> pv) * T1 + t0 + j] = e[j];
                    }
                }
            }
        } else {
            const u32 items = R << q.per;
            for (u32 base = threadIdx.x; base < items; base += U * blockDim.x) {
                E x[U];
#pragma unroll
                for (int u = 0; u < U; ++u) {
                    const u32 i = base + u * blockDim.x;
                    if (i < items && (i & (T - 1)) < tn)
                        x[u] = __ldg(ib + (u64)(i >> q.per) * C + (i & (T - 1)));
                }
#pragma unroll
                for (int u = 0; u < U; ++u) {
                    const u32 i = base + u * blockDim.x;
                    if (i < items && (i & (T - 1)) < tn) buf[(i >> q.per) * T1 + (i & (T - 1))] = x[u];
                }
            }
        }
        __syncthreads();
        store_span<E>(out + b * P + (u64)c0 * R, tn * R, buf, m);
        __syncthreads();
    }
}

#define RTX_TRANSPOSE_SPAN(NAME, FN, E)                                                  \
    extern "C" __global__ void __launch_bounds__(RTX_BLOCK)                              \
        NAME(const E* __restrict__ in, E* __restrict__ out, const SpanParams q) {        \
        FN<E>(in, out, q);                                                               \
    }
// @kernels RTX_TRANSPOSE_SPAN

// Tiled transpose of a batch of row-strided matrices: matrix q (decoded over
// up to RTX_MAX_RANK batch dims, last fastest, each with an input and an
// output stride) has `rows` input rows of stride in_rs, each of `cols`
// contiguous elements; output row c (stride out_rs) holds column c
// contiguously. A batched 2-D transpose is one batch dim; an N-D permute whose
// last dim moves is the pair (input last dim = cols, dim that becomes the
// output's last = rows) with the other dims as the batch. Tile count, rows,
// cols and every batch dim are below 2^31 (the host checks).
struct TileParams {
    u64 in_rs, out_rs;
    u64 bin[RTX_MAX_RANK], bout[RTX_MAX_RANK];
    FastDiv bdim[RTX_MAX_RANK];
    FastDiv tc_n, tr_n;
    u32 rows, cols, tiles, rank;
};

// Tile t's tile row tr, tile column tc and matrix q of the batch (tiles row
// by row, matrix by matrix).
__device__ __forceinline__ void tile_pos(const TileParams& p, u32 t, u32& tr, u32& tc, u32& q) {
    const u32 a = fdiv(p.tc_n, t);
    tc = t - a * p.tc_n.d;
    q = fdiv(p.tr_n, a);
    tr = a - q * p.tr_n.d;
}

// Tile t: first row r0, first column c0, input and output offsets of (r0, c0).
template <int TR, int TC>
__device__ __forceinline__ void tile_origin(const TileParams& p, u32 t, u64& ioff, u64& ooff,
                                            u32& r0, u32& c0) {
    u32 tr, tc, q;
    tile_pos(p, t, tr, tc, q);
    r0 = tr * TR;
    c0 = tc * TC;
    u64 i = 0, o = 0;
    for (int k = (int)p.rank - 1; k >= 0; --k) {
        const u32 qq = fdiv(p.bdim[k], q);
        const u32 x = q - qq * p.bdim[k].d;
        i += (u64)x * p.bin[k];
        o += (u64)x * p.bout[k];
        q = qq;
    }
    ioff = i + (u64)r0 * p.in_rs + c0;
    ooff = o + (u64)c0 * p.out_rs + r0;
}

// v[i * (TC / 32) + xi] = in[ioff + k * in_rs + x] (k = ty + 8 i, x = tx + 32 xi)
// for the elements inside the matrix.
template <typename E, int TR, int TC>
__device__ __forceinline__ void load_tile(const E* __restrict__ in, const TileParams& p, u64 ioff,
                                          u32 r0, u32 c0, E (&v)[(TR / 8) * (TC / 32)]) {
    const bool full = r0 + TR <= p.rows && c0 + TC <= p.cols;
    const E* __restrict__ ib = in + ioff;
#pragma unroll
    for (int i = 0; i < TR / 8; ++i)
#pragma unroll
        for (int xi = 0; xi < TC / 32; ++xi) {
            const u32 k = threadIdx.y + 8 * i, x = threadIdx.x + 32 * xi;
            if (full || (r0 + k < p.rows && c0 + x < p.cols))
                v[i * (TC / 32) + xi] = __ldg(ib + (u64)k * p.in_rs + x);
        }
}

// Block 32 x 8; each thread moves TR*TC/256 elements per tile. The host
// launches about one wave of resident blocks, each walking tiles t,
// t + grid, ...: the loads of a block's next tile are issued (into
// registers) before the stores of the current one, so loads and stores
// overlap. Tile rows are padded by one element against bank conflicts.
template <typename E, int TR, int TC>
__device__ __forceinline__ void transpose_tiled(const E* __restrict__ in, E* __restrict__ out,
                                                const TileParams& p) {
    __shared__ E tile[TR][TC + 1];
    constexpr int NV = (TR / 8) * (TC / 32);
    u32 t = blockIdx.x;
    if (t >= p.tiles) return;  // the whole block: no barrier is skipped by part of it
    E v[NV];
    u64 ioff, ooff;
    u32 r0, c0;
    tile_origin<TR, TC>(p, t, ioff, ooff, r0, c0);
    load_tile<E, TR, TC>(in, p, ioff, r0, c0, v);
    for (;;) {
#pragma unroll
        for (int i = 0; i < TR / 8; ++i)
#pragma unroll
            for (int xi = 0; xi < TC / 32; ++xi)
                tile[threadIdx.y + 8 * i][threadIdx.x + 32 * xi] = v[i * (TC / 32) + xi];
        __syncthreads();
        const u64 so = ooff;
        const u32 sr0 = r0, sc0 = c0;
        const u32 tn = t + gridDim.x;
        const bool more = tn < p.tiles;
        if (more) {
            tile_origin<TR, TC>(p, tn, ioff, ooff, r0, c0);
            load_tile<E, TR, TC>(in, p, ioff, r0, c0, v);
        }
        const bool full = sr0 + TR <= p.rows && sc0 + TC <= p.cols;
        E* __restrict__ ob = out + so;
        // out[so + k * out_rs + x] = tile[x][k]
#pragma unroll
        for (int i = 0; i < TC / 8; ++i)
#pragma unroll
            for (int xi = 0; xi < TR / 32; ++xi) {
                const u32 k = threadIdx.y + 8 * i, x = threadIdx.x + 32 * xi;
                if (full || (sc0 + k < p.cols && sr0 + x < p.rows))
                    __stcs(ob + (u64)k * p.out_rs + x, tile[x][k]);
            }
        __syncthreads();
        if (!more) break;
        t = tn;
    }
}

#define RTX_TRANSPOSE(NAME, E, TR, TC)                                                    \
    extern "C" __global__ void __launch_bounds__(256)                                     \
        NAME(const E* __restrict__ in, E* __restrict__ out, const TileParams p) {         \
        transpose_tiled<E, TR, TC>(in, out, p);                                           \
    }
// @kernels RTX_TRANSPOSE

// A CUtensorMap (cuda.h; NVRTC has no driver headers): 128 opaque bytes the
// host encodes with cuTensorMapEncodeTiled.
struct __align__(64) TensorMap {
    u64 w[16];
};

// Hopper's bulk tensor copies (sm_90+). Shared-memory operands are 32-bit
// shared-window addresses; a map is the address of a __grid_constant__
// parameter. Coordinates: x[0] innermost, `rank` of them (2..5).
__device__ __forceinline__ u32 smem_addr(const void* p) { return (u32)__cvta_generic_to_shared(p); }

__device__ __forceinline__ void tma_load(u32 dst, const TensorMap* m, u32 bar, const int (&x)[5],
                                         u32 rank) {
#if __CUDA_ARCH__ >= 900
    const u64 mp = (u64)m;
    switch (rank) {
        case 2:
            asm volatile(
                "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
                " [%0], [%1, {%2, %3}], [%4];" ::"r"(dst),
                "l"(mp), "r"(x[0]), "r"(x[1]), "r"(bar)
                : "memory");
            break;
        case 3:
            asm volatile(
                "cp.async.bulk.tensor.3d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
                " [%0], [%1, {%2, %3, %4}], [%5];" ::"r"(dst),
                "l"(mp), "r"(x[0]), "r"(x[1]), "r"(x[2]), "r"(bar)
                : "memory");
            break;
        case 4:
            asm volatile(
                "cp.async.bulk.tensor.4d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
                " [%0], [%1, {%2, %3, %4, %5}], [%6];" ::"r"(dst),
                "l"(mp), "r"(x[0]), "r"(x[1]), "r"(x[2]), "r"(x[3]), "r"(bar)
                : "memory");
            break;
        default:
            asm volatile(
                "cp.async.bulk.tensor.5d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
                " [%0], [%1, {%2, %3, %4, %5, %6}], [%7];" ::"r"(dst),
                "l"(mp), "r"(x[0]), "r"(x[1]), "r"(x[2]), "r"(x[3]), "r"(x[4]), "r"(bar)
                : "memory");
            break;
    }
#endif
}

__device__ __forceinline__ void tma_store(const TensorMap* m, u32 src, const int (&x)[5], u32 rank) {
#if __CUDA_ARCH__ >= 900
    const u64 mp = (u64)m;
    switch (rank) {
        case 2:
            asm volatile("cp.async.bulk.tensor.2d.global.shared::cta.tile.bulk_group [%0, {%1, %2}], [%3];"
                         ::"l"(mp), "r"(x[0]), "r"(x[1]), "r"(src)
                         : "memory");
            break;
        case 3:
            asm volatile(
                "cp.async.bulk.tensor.3d.global.shared::cta.tile.bulk_group [%0, {%1, %2, %3}], [%4];"
                ::"l"(mp), "r"(x[0]), "r"(x[1]), "r"(x[2]), "r"(src)
                : "memory");
            break;
        case 4:
            asm volatile(
                "cp.async.bulk.tensor.4d.global.shared::cta.tile.bulk_group [%0, {%1, %2, %3, %4}], "
                "[%5];" ::"l"(mp),
                "r"(x[0]), "r"(x[1]), "r"(x[2]), "r"(x[3]), "r"(src)
                : "memory");
            break;
        default:
            asm volatile(
                "cp.async.bulk.tensor.5d.global.shared::cta.tile.bulk_group [%0, {%1, %2, %3, %4, "
                "%5}], [%6];" ::"l"(mp),
                "r"(x[0]), "r"(x[1]), "r"(x[2]), "r"(x[3]), "r"(x[4]), "r"(src)
                : "memory");
            break;
    }
#endif
}

__device__ __forceinline__ void mbar_wait(u32 bar, u32 parity) {
#if __CUDA_ARCH__ >= 900
    u32 done;
    do {
        asm volatile(
            "{\n .reg .pred p;\n mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n"
            " selp.u32 %0, 1, 0, p;\n}" : "=r"(done) : "r"(bar), "r"(parity) : "memory");
    } while (!done);
#endif
}

// The tensor coordinates of tile t: x[0] its first column, x[1] its first
// row, x[2..] its batch coordinates (innermost batch dim first).
template <int TR, int TC>
__device__ __forceinline__ void tile_coords(const TileParams& p, u32 t, int (&x)[5]) {
    u32 tr, tc, q;
    tile_pos(p, t, tr, tc, q);
    x[0] = (int)(tc * TC);
    x[1] = (int)(tr * TR);
    x[2] = x[3] = x[4] = 0;
    for (u32 j = 0; j < p.rank && j < 3; ++j) {
        const int k = (int)p.rank - 1 - (int)j;
        const u32 qq = fdiv(p.bdim[k], q);
        x[2 + j] = (int)(q - qq * p.bdim[k].d);
        q = qq;
    }
}

// Tiled transpose through Hopper's bulk tensor copies (measured on the H200
// at 2-3 points of copy bandwidth above the register tile, 89-92% of the
// same-size copy: docs/PERFORMANCE.md, "Permute and transpose"). The input map has
// dims (cols, rows, batch...) and box (TC, TR), the output map (rows, cols,
// batch...) and box (TR, TC); both clip the matrix edges (loads fill zeros,
// stores skip what lies outside). A block walks tiles t, t + grid, ... with S
// input tiles in flight (one mbarrier each) and two output tiles, which the
// block's threads transpose from input to output in shared memory with
// `move(in_tile, out_tile)` (TR x TC elements of E row-major in, TC x TR
// out). One thread issues every copy. Dynamic shared memory: (S + 2) tiles
// and S mbarriers.
template <typename E, int TR, int TC, int S, typename Move>
__device__ __forceinline__ void transpose_bulk(const TensorMap* min, const TensorMap* mout,
                                               const TileParams& p, const Move& move) {
#if __CUDA_ARCH__ >= 900
    extern __shared__ __align__(128) unsigned char smem[];
    constexpr u32 TB = TR * TC * sizeof(E);
    E* ins = (E*)smem;
    E* outs = (E*)(smem + S * TB);
    u64* bars = (u64*)(smem + (S + 2) * TB);
    const u32 tid = threadIdx.x + 32 * threadIdx.y;
    if (blockIdx.x >= p.tiles) return;
    const u32 n = (p.tiles - 1 - blockIdx.x) / gridDim.x + 1;
    const u32 rank = p.rank + 2;
    if (tid == 0) {
        for (int s = 0; s < S; ++s)
            asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" ::"r"(smem_addr(bars + s)) : "memory");
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
        asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
    }
    __syncthreads();
    auto issue = [&](u32 i) {  // tile i of this block into stage i % S (thread 0)
        const u32 s = i % S;
        const u32 bar = smem_addr(bars + s);
        int x[5];
        tile_coords<TR, TC>(p, blockIdx.x + i * gridDim.x, x);
        asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(bar), "r"(TB)
                     : "memory");
        tma_load(smem_addr(ins + s * TR * TC), min, bar, x, rank);
    };
    if (tid == 0)
        for (u32 i = 0; i < S && i < n; ++i) issue(i);
    for (u32 i = 0; i < n; ++i) {
        const u32 s = i % S;
        E* ot = outs + (i & 1) * TR * TC;
        if (tid == 0 && i >= 2) asm volatile("cp.async.bulk.wait_group.read 1;" ::: "memory");
        __syncthreads();  // output tile i % 2 is free again
        mbar_wait(smem_addr(bars + s), (i / S) & 1);
        move(ins + s * TR * TC, ot);
        asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
        __syncthreads();  // the tile is written, and stage s read
        if (tid == 0) {
            int x[5];
            tile_coords<TR, TC>(p, blockIdx.x + i * gridDim.x, x);
            const int y[5] = {x[1], x[0], x[2], x[3], x[4]};
            tma_store(mout, smem_addr(ot), y, rank);
            asm volatile("cp.async.bulk.commit_group;" ::: "memory");
            if (i + S < n) issue(i + S);
        }
    }
    if (tid == 0) asm volatile("cp.async.bulk.wait_group 0;" ::: "memory");
#else
    __trap();
#endif
}

// The shared-memory transpose of a TR x TC tile of 4-byte elements by 32 x 8
// threads along diagonals (conflict-free: banks (d + lane) % 32 read, lane
// written).
template <int TR, int TC>
struct MoveWords {
    __device__ __forceinline__ void operator()(const u32* it, u32* ot) const {
#pragma unroll
        for (int k = 0; k < TR * TC / 256; ++k) {
            const u32 q = k * 8 + threadIdx.y;
            const u32 r = threadIdx.x + 32 * (q % (TR / 32));
            const u32 c = (q / (TR / 32) + threadIdx.x) % TC;
            ot[c * TR + r] = it[r * TC + c];
        }
    }
};

#define RTX_TRANSPOSE_BULK(NAME, E, TR, TC, S, ...)                                          \
    extern "C" __global__ void __launch_bounds__(256)                                        \
        NAME(const __grid_constant__ TensorMap min, const __grid_constant__ TensorMap mout, \
             const TileParams p) {                                                           \
        transpose_bulk<E, TR, TC, S>(&min, &mout, p, __VA_ARGS__{});                         \
    }

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
// @kernels RTX_TRANSPOSE_RUNS

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
// @kernels RTX_PERMUTE
