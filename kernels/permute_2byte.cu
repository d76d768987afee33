// Transposes of 2-byte elements (bf16, f16) that move element pairs: every
// global access is a 4-byte word (two adjacent elements along the input's or
// the output's contiguous dim) or wider, the bytes per instruction of the
// 4-byte kernels. They take the parameters of permute.cu's `_b2` kernels
// unchanged (TileParams, SpanParams: sizes and offsets in elements); the
// choice (crates/rtx-backend-cuda/src/permute_plan.rs) gives them only
// shapes whose rows are whole words in the input and in the output, and
// the host launches permute.cu's `_b2` kernel instead when a tensor's address
// is not 4-byte aligned.
//
// The pair transpose: input words (r, c..c+1) of rows r and r + 1 (c even)
// give output words (c, r..r+1) = lo(a) | lo(b) << 16 and (c + 1, r..r+1) =
// hi(a) | hi(b) << 16, for a the word of row r and b that of row r + 1.
// The larger tiles have a quad path (8-byte units of 4 halves, 4 x 4
// blocks through shared memory) that the kernel takes by itself when the
// sides, strides and addresses allow it (`quads_fit`); on sm_90+ a 64 x 64
// tiled choice goes through bulk tensor copies of 128 x 128 tiles instead
// when the maps can describe the matrices (transpose_bulk_b2). Permutes that keep
// the last dim with runs shorter than a line take permute_lines_b16 (at the
// end of this file).
#include "common.cuh"
#include "permute.cu"

// The output word (c, r..r+1) from the input words a = (r, c & ~1 ..) and
// b = (r + 1, c & ~1 ..): the low halves for even c, the high halves for odd.
__device__ __forceinline__ u32 pair_lo(u32 a, u32 b) { return __byte_perm(a, b, 0x5410); }
__device__ __forceinline__ u32 pair_hi(u32 a, u32 b) { return __byte_perm(a, b, 0x7632); }
__device__ __forceinline__ u32 pair_of(u32 a, u32 b, u32 c) { return (c & 1) ? pair_hi(a, b) : pair_lo(a, b); }

// The 16-byte vector of output words o .. o + 3 (a functor may overload it
// with a cheaper walk over the four words).
template <typename Val>
__device__ __forceinline__ uint4 words4(const Val& val, u32 o) {
    return make_uint4(val(o), val(o + 1), val(o + 2), val(o + 3));
}

// dst[o] = val(o) for words o < n (dst 4-byte aligned): aligned 16-byte
// vector stores, single words for the unaligned head and the tail.
template <typename Val>
__device__ __forceinline__ void store_words(u32* __restrict__ dst, u32 n, const Val& val) {
    const u64 a = (u64)dst;
    u32 head = (u32)((16 - (a & 15)) & 15) / 4u;
    if (head > n) head = n;
    const u32 nv = (n - head) / 4;
    const u32 tail0 = head + nv * 4;
    uint4* __restrict__ v = (uint4*)(dst + head);
#pragma unroll 4
    for (u32 i = threadIdx.x; i < nv; i += blockDim.x) {
        const u32 o = head + i * 4;
        __stcs(v + i, words4(val, o));
    }
    const u32 t = threadIdx.x;
    if (t < head) __stcs(dst + t, val(t));
    if (t < n - tail0) __stcs(dst + tail0 + t, val(tail0 + t));
}

// buf[k + (k >> ps)] = src[k] for words k < n (src 4-byte aligned):
// load_span's aligned 16-byte vector reads, with one pad word per 2^ps.
template <int U>
__device__ __forceinline__ void load_words(const u32* __restrict__ src, u32 n, u32* buf, u32 ps) {
    const u64 a = (u64)src;
    const u32 head = (u32)(a & 15) / 4u;
    const uint4* __restrict__ v = (const uint4*)(a - (a & 15));
    const u32 nv = (head + n + 3) / 4;
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
                const u32 e[4] = {x[u].x, x[u].y, x[u].z, x[u].w};
#pragma unroll
                for (u32 j = 0; j < 4; ++j) {
                    const u32 k = i * 4 + j - head;  // wraps past n when before the span
                    if (k < n) buf[k + (k >> ps)] = e[j];
                }
            }
        }
    }
}

// Output word o of a span of whole planes (rows R and columns C even): the
// elements (p, c, r..r+1) for element 2o = (p, c, r), from the input words of
// elements (p, r, c) and (p, r + 1, c) in the shared span of words (word w
// at w + (w >> ps)).
struct PlanesPairs {
    const u32* buf;
    FastDiv plane_d, rows_d;
    u32 R, C, P, ps;
    __device__ __forceinline__ u32 operator()(u32 o) const {
        const u32 e = 2 * o;
        const u32 p = fdiv(plane_d, e);
        const u32 rem = e - p * P;
        const u32 c = fdiv(rows_d, rem);
        const u32 r = rem - c * R;  // even
        const u32 w = (p * P + r * C + c) >> 1;
        const u32 w1 = w + (C >> 1);
        return pair_of(buf[w + (w >> ps)], buf[w1 + (w1 >> ps)], c);
    }
};

// PlanesPairs' words o .. o + 3: the position (p, c, r) of element 2o
// divided out once, then stepped two elements at a time (r += 2 wrapping at
// the rows R, c at the columns C; R is even, so r meets R exactly).
__device__ __forceinline__ uint4 words4(const PlanesPairs& m, u32 o) {
    const u32 e = 2 * o;
    u32 p = fdiv(m.plane_d, e);
    const u32 rem = e - p * m.P;
    u32 c = fdiv(m.rows_d, rem);
    u32 r = rem - c * m.R;
    u32 x[4];
#pragma unroll
    for (int k = 0; k < 4; ++k) {
        const u32 w = (p * m.P + r * m.C + c) >> 1;
        const u32 w1 = w + (m.C >> 1);
        x[k] = pair_of(m.buf[w + (w >> m.ps)], m.buf[w1 + (w1 >> m.ps)], c);
        r += 2;
        if (r == m.R) {
            r = 0;
            if (++c == m.C) {
                c = 0;
                ++p;
            }
        }
    }
    return make_uint4(x[0], x[1], x[2], x[3]);
}

// transpose_planes for even rows and columns: the span loaded and stored as
// words. Shared padding: a word per 4 for planes of at most 64 words, whose
// reads of a warp are then spread over the banks, else one per 32 (sk's).
__device__ __forceinline__ void transpose_planes_pairs(const u16* __restrict__ in,
                                                       u16* __restrict__ out,
                                                       const SpanParams& q) {
    __shared__ u32 buf[RTX_SPAN(u32) + RTX_SPAN(u32) / 4];
    const u32 P = q.rows * q.cols;
    const u32 ps = P <= 128 ? 2 : 5;
    const PlanesPairs m{buf, q.plane_d, q.rows_d, q.rows, q.cols, P, ps};
    for (u64 s = blockIdx.x; s < q.tiles; s += gridDim.x) {
        const u64 p0 = s * q.per;
        const u64 left = q.batch - p0;
        const u32 n = (u32)(left < q.per ? left : q.per) * (P / 2);
        load_words<4>((const u32*)(in + p0 * P), n, buf, ps);
        __syncthreads();
        store_words((u32*)(out + p0 * P), n, m);
        __syncthreads();
    }
}

// The shared tile of transpose_cols_pairs: words of row pairs interleaved,
// word w of rows 2m and 2m + 1 at m * S + 2w' and m * S + 2w' + 1 (S = T + 2
// words per row pair: S / 2 odd, so a half-warp's 8-byte reads of
// consecutive m meet no bank twice), w' = w with its low two bits flipped by
// bits 4-5 of w and of m, so a warp's stores of one row's consecutive
// vectors (and the reads of m 16 apart) spread over the banks.
__device__ __forceinline__ u32 cols_swz(u32 m, u32 w) { return ((w >> 4) ^ (m >> 4)) & 3; }

// Output word o of a tile of whole columns (rows R even): elements
// (column t, rows r..r+1) for element 2o = (t, r), from the shared tile.
struct ColsPairs {
    const u32* buf;
    FastDiv rows_d;
    u32 R, S;
    __device__ __forceinline__ u32 operator()(u32 o) const {
        const u32 e = 2 * o;
        const u32 t = fdiv(rows_d, e);
        const u32 m = (e - t * R) >> 1;
        const u32 w = t >> 1;
        const uint2 ab = *(const uint2*)(buf + m * S + 2 * (w ^ cols_swz(m, w)));
        return pair_of(ab.x, ab.y, t);
    }
};

// transpose_cols for even rows and columns: columns c0 .. c0 + T of plane b
// (T = 2^per) read as `rows` runs of words (16-byte vectors when the
// columns are whole vectors and the input is aligned), the output span
// stored as words.
template <int U = 4>
__device__ __forceinline__ void transpose_cols_pairs(const u16* __restrict__ in,
                                                     u16* __restrict__ out,
                                                     const SpanParams& q) {
    __shared__ __align__(16) u32 buf[RTX_SPAN(u32) + RTX_SPAN(u32) / 32];
    const u32 R = q.rows, C = q.cols, T = 1u << q.per, S = T + 2;
    const u64 P = (u64)R * C;
    const u32 tpp = q.tiles_d.d;
    const bool vec = C % 8 == 0 && ((u64)in & 15) == 0;
    const ColsPairs m{buf, q.rows_d, R, S};
    for (u64 s64 = blockIdx.x; s64 < q.tiles; s64 += gridDim.x) {
        const u32 s = (u32)s64;
        const u32 b = fdiv(q.tiles_d, s);
        const u32 c0 = (s - b * tpp) << q.per;
        const u32 tn = C - c0 < T ? C - c0 : T;  // even
        const u16* __restrict__ ib = in + b * P + c0;
        // item i: row r = i >> lg, its part k = i & (2^lg - 1) (a vector of
        // 4 words, or one word)
        const u32 lg = vec ? q.per - 3 : q.per - 1;
        const u32 per_item = vec ? 8 : 2;  // elements
        const u32 items = R << lg;
        for (u32 base = threadIdx.x; base < items; base += U * blockDim.x) {
            uint4 x[U];
#pragma unroll
            for (int u = 0; u < U; ++u) {
                const u32 i = base + u * blockDim.x;
                const u32 t0 = (i & ((1u << lg) - 1)) * per_item;
                if (i < items && t0 < tn) {
                    const u16* src = ib + (u64)(i >> lg) * C + t0;
                    if (vec)
                        x[u] = __ldg((const uint4*)src);
                    else
                        x[u].x = __ldg((const u32*)src);
                }
            }
#pragma unroll
            for (int u = 0; u < U; ++u) {
                const u32 i = base + u * blockDim.x;
                const u32 t0 = (i & ((1u << lg) - 1)) * per_item;
                if (i < items && t0 < tn) {
                    const u32 r = i >> lg, w = t0 / 2;
                    const u32 f = cols_swz(r >> 1, w);
                    u32* d = buf + (r >> 1) * S + (r & 1);
                    if (vec) {  // words w .. w + 3 (w a multiple of 4: one f)
                        d[2 * (w + (0 ^ f))] = x[u].x;
                        d[2 * (w + (1 ^ f))] = x[u].y;
                        d[2 * (w + (2 ^ f))] = x[u].z;
                        d[2 * (w + (3 ^ f))] = x[u].w;
                    } else {
                        d[2 * (w ^ f)] = x[u].x;
                    }
                }
            }
        }
        __syncthreads();
        store_words((u32*)(out + b * P + (u64)c0 * R), tn * (R / 2), m);
        __syncthreads();
    }
}

// transpose_rows for even rows and columns: rows r0 .. r0 + T of plane b
// (T = 2^per) loaded as one span of words; item (j, m) reads the words of
// columns 2j, 2j + 1 in rows 2m and 2m + 1 of the tile and writes the output
// words (2j, r0 + 2m ..) and (2j + 1, r0 + 2m ..). A warp's items are
// consecutive m: its stores are two contiguous runs of 128 bytes, and its
// shared reads at word stride C meet a bank at most twice with a pad word
// per 32 (sk's) when 16 divides C, else a pad word per 4.
__device__ __forceinline__ void transpose_rows_pairs(const u16* __restrict__ in,
                                                     u16* __restrict__ out,
                                                     const SpanParams& q) {
    __shared__ u32 buf[RTX_SPAN(u32) + RTX_SPAN(u32) / 4];
    const u32 R = q.rows, C = q.cols, T = 1u << q.per, CW = C / 2;
    const u32 ps = C % 16 == 0 ? 5 : 2;
    const u64 P = (u64)R * C;
    const u32 tpp = q.tiles_d.d;
    const u32 lg = q.per - 1;  // log2 of the row pairs of a tile
    const u32 items = CW << lg;
    for (u64 s64 = blockIdx.x; s64 < q.tiles; s64 += gridDim.x) {
        const u32 s = (u32)s64;
        const u32 b = fdiv(q.tiles_d, s);
        const u32 r0 = (s - b * tpp) << q.per;
        const u32 tn = R - r0 < T ? R - r0 : T;  // even
        load_words<4>((const u32*)(in + b * P + (u64)r0 * C), tn * CW, buf, ps);
        __syncthreads();
        u16* __restrict__ ob = out + b * P + r0;
#pragma unroll 4
        for (u32 i = threadIdx.x; i < items; i += blockDim.x) {
            const u32 j = i >> lg;
            const u32 m = i & ((1u << lg) - 1);
            if (2 * m < tn) {
                const u32 w = m * C + j, w1 = w + CW;
                const u32 a = buf[w + (w >> ps)], bb = buf[w1 + (w1 >> ps)];
                __stcs((u32*)(ob + (u64)(2 * j) * R + 2 * m), pair_lo(a, bb));
                __stcs((u32*)(ob + (u64)(2 * j + 1) * R + 2 * m), pair_hi(a, bb));
            }
        }
        __syncthreads();
    }
}

#define RTX_TRANSPOSE_SPAN_PAIRS(NAME, FN)                                                \
    extern "C" __global__ void __launch_bounds__(RTX_BLOCK)                               \
        NAME(const u16* __restrict__ in, u16* __restrict__ out, const SpanParams q) {     \
        FN(in, out, q);                                                                   \
    }
// @kernels RTX_TRANSPOSE_SPAN_PAIRS

// The tiled transpose of permute.cu (TileParams, the same tiles and the same
// one-wave pipeline) moving words: tile rows of TC elements are TC / 2 words.
// Shared memory holds the tile's words with row pairs interleaved (word w of
// rows 2m and 2m + 1 at m * S + 2w and m * S + 2w + 1, S = TC + 2), so one
// 8-byte read gives a thread the two words of a 2 x 2 block, which it writes
// as the output words of columns 2w and 2w + 1. The host gives this kernel
// only even rows, columns and row strides (in_rs, out_rs and every batch
// stride) and aligned tensors, so every word is aligned and whole: a tile
// edge inside the matrix never splits a word.
template <int TR, int TC>
struct PairTile {
    static constexpr int TW = TC / 2;           // words per tile row
    static constexpr int S = TC + 2;            // words per row pair
    static constexpr int NL = TR * TW / 256;    // words each thread loads
    static constexpr int NS = TR * TW / 512;    // 2 x 2 blocks each thread stores
};

// v[i] = word of load item L = tid + 256 i: row 2 (L / 2 / TW) + L % 2,
// word (L / 2) % TW (a warp reads 16 words of two rows and writes 32
// consecutive shared words), for the words inside the matrix.
template <int TR, int TC>
__device__ __forceinline__ void load_pairs(const u16* __restrict__ in, const TileParams& p, u64 ioff,
                                           u32 r0, u32 c0, u32 (&v)[PairTile<TR, TC>::NL]) {
    using PT = PairTile<TR, TC>;
    const bool full = r0 + TR <= p.rows && c0 + TC <= p.cols;
    const u16* __restrict__ ib = in + ioff;
    const u32 tid = threadIdx.x + 32 * threadIdx.y;
#pragma unroll
    for (int i = 0; i < PT::NL; ++i) {
        const u32 L = tid + 256 * i;
        const u32 k = 2 * ((L >> 1) / PT::TW) + (L & 1);
        const u32 w = (L >> 1) % PT::TW;
        if (full || (r0 + k < p.rows && c0 + 2 * w < p.cols))
            v[i] = __ldg((const u32*)(ib + (u64)k * p.in_rs + 2 * w));
    }
}

template <int TR, int TC>
__device__ __forceinline__ void transpose_pairs(const u16* __restrict__ in, u16* __restrict__ out,
                                                const TileParams& p, u32* tile) {
    using PT = PairTile<TR, TC>;
    const u32 tid = threadIdx.x + 32 * threadIdx.y;
    u32 t = blockIdx.x;
    if (t >= p.tiles) return;  // the whole block: no barrier is skipped by part of it
    u32 v[PT::NL];
    u64 ioff, ooff;
    u32 r0, c0;
    tile_origin<TR, TC>(p, t, ioff, ooff, r0, c0);
    load_pairs<TR, TC>(in, p, ioff, r0, c0, v);
    for (;;) {
#pragma unroll
        for (int i = 0; i < PT::NL; ++i) {
            const u32 L = tid + 256 * i;
            tile[((L >> 1) / PT::TW) * PT::S + 2 * ((L >> 1) % PT::TW) + (L & 1)] = v[i];
        }
        __syncthreads();
        const u64 so = ooff;
        const u32 sr0 = r0, sc0 = c0;
        const u32 tn = t + gridDim.x;
        const bool more = tn < p.tiles;
        if (more) {
            tile_origin<TR, TC>(p, tn, ioff, ooff, r0, c0);
            load_pairs<TR, TC>(in, p, ioff, r0, c0, v);
        }
        const bool full = sr0 + TR <= p.rows && sc0 + TC <= p.cols;
        u16* __restrict__ ob = out + so;
        // block i: rows 2m, 2m + 1 and columns 2j, 2j + 1 of the tile
        // (m = L % (TR / 2), j = L / (TR / 2)): out words (2j + h, m)
#pragma unroll
        for (int i = 0; i < PT::NS; ++i) {
            const u32 L = tid + 256 * i;
            const u32 m = L % (TR / 2), j = L / (TR / 2);
            const uint2 ab = *(const uint2*)(tile + m * PT::S + 2 * j);
            const u32 w[2] = {pair_lo(ab.x, ab.y), pair_hi(ab.x, ab.y)};
#pragma unroll
            for (int h = 0; h < 2; ++h) {
                const u32 c = 2 * j + h;
                if (full || (sc0 + c < p.cols && sr0 + 2 * m < p.rows))
                    __stcs((u32*)(ob + (u64)c * p.out_rs + 2 * m), w[h]);
            }
        }
        __syncthreads();
        if (!more) break;
        t = tn;
    }
}

// The quad path of the tiled pair kernels (tiles of 64 x 64 elements or
// more): when rows, columns, row strides and every batch stride are
// multiples of 4 and both tensors 8-byte aligned, every global access is
// an 8-byte unit of 4 halves. Load item L reads unit u = (L / 4) % UW of
// tile row 4q + L % 4 (q = L / 4 / UW; a warp: 8 units of 4 rows); shared
// memory holds each 4 x 4 block (q, u) as 32 contiguous bytes, rows in
// order, at word q * QS + 8u (QS = 8 UW + 4: the pad makes a quarter-warp's
// 16-byte reads of consecutive q meet no bank twice, and a half-warp's
// 8-byte stores are 128 contiguous bytes). Store item M reads block
// (q = M % (TR / 4), u = M / (TR / 4)) and writes output rows 4u .. 4u + 3,
// columns 4q .. 4q + 3 as four 8-byte units. The tile takes the pair
// path's shared words: (TR / 4) * QS = (TR / 2) * (TC + 2).
template <int TR, int TC>
struct QuadTile {
    static constexpr int UW = TC / 4;         // 8-byte units per tile row
    static constexpr int QS = 8 * UW + 4;     // words per row quad
    static constexpr int NL = TR * UW / 256;  // units each thread loads
    static constexpr int NS = TR * UW / 1024; // 4 x 4 blocks each thread stores
};

// Whether the quad path moves p (the same answer in every thread).
__device__ __forceinline__ bool quads_fit(const void* in, const void* out, const TileParams& p) {
    bool ok = (((u64)in | (u64)out) & 7) == 0 && (p.rows & 3) == 0 && (p.cols & 3) == 0 &&
              (p.in_rs & 3) == 0 && (p.out_rs & 3) == 0;
    for (u32 k = 0; k < p.rank; ++k)
        ok = ok && (p.bdim[k].d == 1 || ((p.bin[k] | p.bout[k]) & 3) == 0);
    return ok;
}

template <int TR, int TC>
__device__ __forceinline__ void load_quads(const u16* __restrict__ in, const TileParams& p, u64 ioff,
                                           u32 r0, u32 c0, uint2 (&v)[QuadTile<TR, TC>::NL]) {
    using QT = QuadTile<TR, TC>;
    const bool full = r0 + TR <= p.rows && c0 + TC <= p.cols;
    const u16* __restrict__ ib = in + ioff;
    const u32 tid = threadIdx.x + 32 * threadIdx.y;
#pragma unroll
    for (int i = 0; i < QT::NL; ++i) {
        const u32 L = tid + 256 * i;
        const u32 k = 4 * ((L >> 2) / QT::UW) + (L & 3);
        const u32 u = (L >> 2) % QT::UW;
        if (full || (r0 + k < p.rows && c0 + 4 * u < p.cols))
            v[i] = __ldg((const uint2*)(ib + (u64)k * p.in_rs + 4 * u));
    }
}

template <int TR, int TC>
__device__ __forceinline__ void transpose_quads(const u16* __restrict__ in, u16* __restrict__ out,
                                                const TileParams& p, u32* tile) {
    using QT = QuadTile<TR, TC>;
    static_assert(QT::NS >= 1 && (TR / 4) * QT::QS == (TR / 2) * (TC + 2), "quad tile");
    const u32 tid = threadIdx.x + 32 * threadIdx.y;
    u32 t = blockIdx.x;
    if (t >= p.tiles) return;  // the whole block: no barrier is skipped by part of it
    uint2 v[QT::NL];
    u64 ioff, ooff;
    u32 r0, c0;
    tile_origin<TR, TC>(p, t, ioff, ooff, r0, c0);
    load_quads<TR, TC>(in, p, ioff, r0, c0, v);
    for (;;) {
#pragma unroll
        for (int i = 0; i < QT::NL; ++i) {
            const u32 L = tid + 256 * i;
            const u32 w = ((L >> 2) / QT::UW) * QT::QS + 8 * ((L >> 2) % QT::UW) + 2 * (L & 3);
            *(uint2*)(tile + w) = v[i];
        }
        __syncthreads();
        const u64 so = ooff;
        const u32 sr0 = r0, sc0 = c0;
        const u32 tn = t + gridDim.x;
        const bool more = tn < p.tiles;
        if (more) {
            tile_origin<TR, TC>(p, tn, ioff, ooff, r0, c0);
            load_quads<TR, TC>(in, p, ioff, r0, c0, v);
        }
        const bool full = sr0 + TR <= p.rows && sc0 + TC <= p.cols;
        u16* __restrict__ ob = out + so;
#pragma unroll
        for (int i = 0; i < QT::NS; ++i) {
            const u32 M = tid + 256 * i;
            const u32 q = M % (TR / 4), u = M / (TR / 4);
            const uint4 a = *(const uint4*)(tile + q * QT::QS + 8 * u);      // rows 0, 1
            const uint4 b = *(const uint4*)(tile + q * QT::QS + 8 * u + 4);  // rows 2, 3
            const uint2 w[4] = {make_uint2(pair_lo(a.x, a.z), pair_lo(b.x, b.z)),
                                make_uint2(pair_hi(a.x, a.z), pair_hi(b.x, b.z)),
                                make_uint2(pair_lo(a.y, a.w), pair_lo(b.y, b.w)),
                                make_uint2(pair_hi(a.y, a.w), pair_hi(b.y, b.w))};
            if (full || (sc0 + 4 * u < p.cols && sr0 + 4 * q < p.rows)) {
#pragma unroll
                for (int x = 0; x < 4; ++x)
                    __stcs((uint2*)(ob + (u64)(4 * u + x) * p.out_rs + 4 * q), w[x]);
            }
        }
        __syncthreads();
        if (!more) break;
        t = tn;
    }
}

// The tiled pair kernel: the quad path when it fits (tiles of 64 x 64
// elements or more), else pairs.
template <int TR, int TC>
__device__ __forceinline__ void transpose_tiled_pairs(const u16* __restrict__ in,
                                                      u16* __restrict__ out, const TileParams& p) {
    __shared__ __align__(16) u32 tile[(TR / 2) * (TC + 2)];
    if constexpr (TR * TC >= 4096) {
        if (quads_fit(in, out, p)) {
            transpose_quads<TR, TC>(in, out, p, tile);
            return;
        }
    }
    transpose_pairs<TR, TC>(in, out, p, tile);
}

#define RTX_TRANSPOSE_PAIRS(NAME, TR, TC)                                                 \
    extern "C" __global__ void __launch_bounds__(256)                                     \
        NAME(const u16* __restrict__ in, u16* __restrict__ out, const TileParams p) {     \
        transpose_tiled_pairs<TR, TC>(in, out, p);                                        \
    }
// @kernels RTX_TRANSPOSE_PAIRS

// The shared-memory transpose of a TR x TC tile of 2-byte elements (the bulk
// kernel's, whose tiles clip at the matrix edges, so any sides) in 2 x 2
// blocks: the input words (r, c..c+1) and (r + 1, c..c+1), r and c even,
// give the output words (c, r..r+1) = pair_lo and (c + 1, r..r+1) = pair_hi.
// Block (r / 2, c / 2) = (lane + 32 g, (d + lane) % (TC / 2)) for a warp's
// (g, d): rows of TC / 2 and TR / 2 words (multiples of 32), so the banks
// read are (d + lane) % 32 and the banks written lane, conflict-free.
template <int TR, int TC>
struct MovePairs {
    static_assert(TR % 64 == 0 && TC % 64 == 0, "tile rows of whole 32-word sweeps");
    __device__ __forceinline__ void operator()(const u16* it16, u16* ot16) const {
        constexpr u32 IW = TC / 2, OW = TR / 2, G = TR / 64;
        const u32* it = (const u32*)it16;
        u32* ot = (u32*)ot16;
#pragma unroll
        for (int k = 0; k < TR * TC / 1024; ++k) {
            const u32 q = k * 8 + threadIdx.y;
            const u32 pr = threadIdx.x + 32 * (q % G);
            const u32 w = (q / G + threadIdx.x) % IW;
            const u32 a = it[2 * pr * IW + w], b = it[(2 * pr + 1) * IW + w];
            ot[2 * w * OW + pr] = pair_lo(a, b);
            ot[(2 * w + 1) * OW + pr] = pair_hi(a, b);
        }
    }
};
// transpose_bulk (permute.cu) over 128 x 128 tiles of 2-byte elements (rows
// of 256 bytes in and out, as the f32 kernel's; measured on the H200 against
// 64 x 64, 64 x 128 and 128 x 64 tiles: docs/PERFORMANCE.md, "bf16 and
// f16"), the f32 kernel's stages: 192 KiB of shared memory, a block per SM.
// Both transpose_bulk kernels are instantiated here, after MovePairs:
// transpose_bulk_b4 (MoveWords<64, 64>) and transpose_bulk_b2 (MovePairs<128, 128>).
// @kernels RTX_TRANSPOSE_BULK

// N-D permutes of 2-byte elements that keep the last dim, with runs (the
// kept dim) of 16-byte vectors shorter than a 128-byte line: the runs of a
// line of the input go to different output lines, and the copy_rows of
// permute_b16, whose warp takes consecutive output runs, reads every input
// line in parts at far-apart times (64-byte runs: a warp's 8 runs read 8
// half lines). permute_lines_b16 walks the runs in a blocked order instead
// (the host's LinesParams, permute_plan.rs `lines`): the input dim of
// stride one run (K) and the output's last dim each split as (hi, lo) with
// lo of g runs (g * run >= 128 bytes), the lo parts fastest, so g * g
// consecutive runs of the walk read g input lines of g whole runs and write
// g output lines of g whole runs (64-byte runs: a warp's 8 runs read 4 whole
// 128-byte lines and write 2 runs of 256 bytes). Walk index v decodes over
// `rank` dims (last fastest) to the input run sum(x * in_strides) and the
// output run sum(x * out_strides). Every count is below 2^31 (the host
// checks), so the decode is FastDiv's.
struct LinesParams {
    u64 in_strides[RTX_MAX_RANK + 2], out_strides[RTX_MAX_RANK + 2];
    FastDiv dims[RTX_MAX_RANK + 2];
    u32 rank, pad0, pad1, pad2;
};

__device__ __forceinline__ void lines_at(const LinesParams& p, u32 v, u64& s, u64& d) {
    s = 0;
    d = 0;
    for (int k = (int)p.rank - 1; k >= 0; --k) {
        const u32 q = fdiv(p.dims[k], v);
        const u64 x = v - q * p.dims[k].d;
        s += x * p.in_strides[k];
        d += x * p.out_strides[k];
        v = q;
    }
}

// copy_rows' lanes and passes (a group of 2^lanes_log2 lanes moves one run
// of W vectors, U runs per pass with their loads first), run v of the walk
// from input run s(v) to output run d(v). Built for the registers of
// permute_b16 (at most 64 for 4 blocks of 256 threads per SM, the loads in
// flight of copy_rows).
extern "C" __global__ void __launch_bounds__(RTX_BLOCK, 4)
    permute_lines_b16(const uint4* __restrict__ in, uint4* __restrict__ out, u64 nruns, u64 W,
                      u32 lanes_log2, const LinesParams p) {
    constexpr int U = RTX_ROWS_PER_GROUP;
    const u32 L = 1u << lanes_log2;
    const u32 lane = threadIdx.x & (L - 1);
    const u64 groups = blockDim.x >> lanes_log2;
    const u64 stride = (u64)gridDim.x * groups;
    for (u64 base = (u64)blockIdx.x * groups + (threadIdx.x >> lanes_log2); base < nruns;
         base += stride * U) {
        u64 o[U], s[U], d[U];
#pragma unroll
        for (int u = 0; u < U; ++u) {
            o[u] = base + (u64)u * stride;
            s[u] = d[u] = 0;
            if (o[u] < nruns) lines_at(p, (u32)o[u], s[u], d[u]);
        }
        for (u64 j = lane; j < W; j += L) {
            uint4 x[U];
#pragma unroll
            for (int u = 0; u < U; ++u)
                if (o[u] < nruns) x[u] = __ldg(in + s[u] * W + j);
#pragma unroll
            for (int u = 0; u < U; ++u)
                if (o[u] < nruns) __stcs(out + d[u] * W + j, x[u]);
        }
    }
}
