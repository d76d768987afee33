// The dense ops of a graph-attention model on the device, in the canonical
// order: per-head dots (also of two gathers), column sums (sum_rows, a
// product's chunks, head_scale_sum_rows) and the matrix product (tiles of 32
// or 64 per side, and matmul_dot for products of few columns). Exactness and
// the shared helpers: model.cuh.
//
// Every kernel is written once over an element kind K (model.cuh: KF32,
// KF64, KBf16, KF16): it reads stored elements K::S, widens each once
// (K::ld, or Operand below), computes in K::A exactly as the f32 kernel
// does, and rounds each output once as it stores it (K::st). Scratch between
// levels (a product's chunk sums, the column sums' levels) stays K::A. For
// f32 and f64 every kind member is the identity, so those kernels are the
// plain ones.
#include "common.cuh"
#include "model.cuh"

// A stored element as an operand of a product: K::ld's value but for a NaN,
// whose payload no product or sum keeps (the device's operations make their
// own NaN), so a half is widened by the one-instruction conversion
// (common.cuh's widen_sum) instead of the host's NaN-exact one. Only where
// every output is a product or a sum of products (the matmul, the dots,
// head_scale_rows' products); a column sum of one row passes its element on
// and reads it with K::ld (RowsLoad).
template <typename K>
struct Operand {
    static __device__ __forceinline__ typename K::A ld(typename K::S v) { return K::ld(v); }
    static __device__ __forceinline__ typename K::AV vld(typename K::SV v) { return K::vld(v); }
};
template <typename H>
struct Operand<KHalf<H>> {
    static __device__ __forceinline__ float ld(u16 v) { return H::widen_sum(v); }
    static __device__ __forceinline__ f32x8 vld(uint4 v) { return hwiden<H>(v); }
    // two stored elements, the first in the low half
    static __device__ __forceinline__ float2 ld2(u32 v) { return hwiden<H>(v); }
};

// ---------------------------------------------------------------- canonical sums

// The canonical dot product of c products a[q] * b[q] (rtx_backend::ops::dot):
// left to right from the first product up to 256 terms; beyond, the block tree
// of rtx_backend::order::canonical_sum, streamed (each level keeps its open
// group's sum; a group closes at 256 values or at the level's last value).
template <typename K>
__device__ __forceinline__ typename K::A canon_dot(const typename K::S* __restrict__ a,
                                                   const typename K::S* __restrict__ b, u64 c) {
    typedef typename K::A T;
    if (c == 0) return T(0);
    typedef typename K::SV SV;
    typedef typename K::AV AV;
    constexpr u32 N = VecT<AV>::N;
    if (c <= RTX_CANONICAL_BLOCK && c % N == 0 && aligned16(a) && aligned16(b)) {
        // the same products and additions, read as 16-byte vectors
        const SV* __restrict__ av = reinterpret_cast<const SV*>(a);
        const SV* __restrict__ bv = reinterpret_cast<const SV*>(b);
        AV x = Operand<K>::vld(__ldg(av)), y = Operand<K>::vld(__ldg(bv));
        T s = rmul(comps(x)[0], comps(y)[0]);
#pragma unroll
        for (u32 k = 1; k < N; ++k) s = radd(s, rmul(comps(x)[k], comps(y)[k]));
#pragma unroll 4
        for (u64 q = 1; q < c / N; ++q) {
            x = Operand<K>::vld(__ldg(av + q));
            y = Operand<K>::vld(__ldg(bv + q));
#pragma unroll
            for (u32 k = 0; k < N; ++k) s = radd(s, rmul(comps(x)[k], comps(y)[k]));
        }
        return s;
    }
    typedef Operand<K> O;
    T s = rmul(O::ld(a[0]), O::ld(b[0]));
    if (c <= RTX_CANONICAL_BLOCK) {
        for (u64 q = 1; q < c; ++q) s = radd(s, rmul(O::ld(a[q]), O::ld(b[q])));
        return s;
    }
    const int MAXL = 8;
    u64 nl[MAXL];
    int top = 0;
    nl[0] = c;
    while (nl[top] > 1 && top + 1 < MAXL) {
        nl[top + 1] = (nl[top] + (RTX_CANONICAL_BLOCK - 1)) / RTX_CANONICAL_BLOCK;
        ++top;
    }
    T acc[MAXL];
    u64 cnt[MAXL], seen[MAXL];
    for (int l = 0; l < MAXL; ++l) {
        cnt[l] = 0;
        seen[l] = 0;
        acc[l] = T(0);
    }
    T result = T(0);
    for (u64 q = 0; q < c; ++q) {
        T v = rmul(O::ld(a[q]), O::ld(b[q]));
        int l = 0;
        for (;;) {
            if (l == top) {
                result = v;
                break;
            }
            acc[l] = cnt[l] == 0 ? v : radd(acc[l], v);
            ++cnt[l];
            ++seen[l];
            if (cnt[l] == RTX_CANONICAL_BLOCK || seen[l] == nl[l]) {
                v = acc[l];
                cnt[l] = 0;
                ++l;
                continue;
            }
            break;
        }
    }
    return result;
}

// out[i, h] = canonical dot of a[i, h*c..] and b[i or 0, h*c..].
#define RTX_HEAD_DOT(NAME, T, K)                                                            \
    extern "C" __global__ void __launch_bounds__(RTX_BLOCK)                                 \
        NAME(const T* __restrict__ a, const T* __restrict__ b, T* __restrict__ out, u64 n,  \
             u64 heads, u64 c, u32 b_bcast) {                                               \
        const u64 f = heads * c;                                                            \
        const u64 total = n * heads;                                                        \
        for (u64 t = thread_id(); t < total; t += grid_stride()) {                          \
            const u64 i = t / heads, h = t - i * heads;                                     \
            out[t] = K::st(                                                                 \
                canon_dot<K>(a + i * f + h * c, b + (b_bcast ? 0 : i) * f + h * c, c));     \
        }                                                                                   \
    }
// @kernels RTX_HEAD_DOT

// out[p, h] = canonical dot of a[ai[p], h*c..] and b[bi[p], h*c..]: exactly
// head_dot of the two gathers.
#define RTX_GATHER_HEAD_DOT(NAME, T, K)                                                     \
    extern "C" __global__ void __launch_bounds__(RTX_BLOCK)                                 \
        NAME(const T* __restrict__ a, const u32* __restrict__ ai, const T* __restrict__ b,  \
             const u32* __restrict__ bi, T* __restrict__ out, u64 e, u64 heads, u64 c) {    \
        const u64 f = heads * c;                                                            \
        const u64 total = e * heads;                                                        \
        for (u64 t = thread_id(); t < total; t += grid_stride()) {                          \
            const u64 p = t / heads, h = t - p * heads;                                     \
            const u64 ra = __ldg(ai + p), rb = __ldg(bi + p);                               \
            out[t] = K::st(canon_dot<K>(a + ra * f + h * c, b + rb * f + h * c, c));        \
        }                                                                                   \
    }
// @kernels RTX_GATHER_HEAD_DOT

// The canonical column sums of a row-major [n, f]: level 0's row g, column
// j, is the sum of rows 256g .. min(n, 256g + 256) of column j, left to right
// from the first; each next level sums the rows of the one before the same
// way, until one row is left (sum_rows; the inner dimension of matmul past
// 256; head_scale_sum_rows).
//
// One launch computes level 0 from its load and climbs through the levels
// after it (RrClimb): the block that writes the last row of a next-level
// group (a counter per group and column tile; "threadfence reduction") sums
// that group, and so on up. Which block sums a group never changes the order
// of its additions, so the bits are those of one launch per level.
//
// A tile is a group of rows and RR_COLS columns: the block loads it into
// shared memory with all its threads (a thread keeps one column and strides
// over the rows, BATCH loads at a time: no division per element, which made
// the sum of a [80000, 64] take 35.6 us on the H200 instead of 22.5 us), then
// one thread per column adds the column up from shared memory. reduce_rows
// loads 16 rows at a time (64 registers for f32: 17.2 us for that sum);
// head_scale_rows, two loads per element, 8 (48 registers: five blocks per
// SM, so a [80000, 64] is one wave).
// The tile is kept in the computing type A (f32 for the half types), so its
// RR_COLS(A) columns are 128 bytes of shared memory per row for every kind
// (the host's col_sum_tiles counts them with A's size).
#define RR_COLS(T) (128 / (int)sizeof(T))
// The levels a column-sum launch climbs (#[repr(C)] RrClimb in
// src/device/args.rs): out[i] holds rows[i] rows of f columns (K::A scratch
// for a level of several rows; the last level's one row is the sums, K::S
// storage, each rounded once), and level i's group G (i >= 1)
// counts its finished rows in counters[cnt[i] + G * column tiles + tile].
// The counters are zero between launches: the block that sums a group puts
// its counter back to zero.
struct RrClimb {
    u64 out[RTX_COL_SUM_LEVELS];
    u64 rows[RTX_COL_SUM_LEVELS];
    u64 cnt[RTX_COL_SUM_LEVELS];
    u64 counters;
    u64 levels;
};

// Whether a kind's stored elements are its computing type (f32, f64).
template <typename K>
struct KStoresA {
    enum { value = sizeof(typename K::S) == sizeof(typename K::A) };
};

// The column sum v of column `at` of a level's output at `dst`: the one row
// of sums (`fin`: stored, rounded once) or a level's A scratch.
template <typename K>
__device__ __forceinline__ void rr_store(u64 dst, bool fin, u64 at, typename K::A v) {
    if (fin)
        reinterpret_cast<typename K::S*>(dst)[at] = K::st(v);
    else
        reinterpret_cast<typename K::A*>(dst)[at] = v;
}

// The tile of rows r0 .. r0 + rows, columns c0 .. c0 + cols, summed down its
// columns into columns c0 .. c0 + cols of row g of the level at dst.
template <u32 BATCH, typename K, typename Load>
__device__ __forceinline__ void rr_tile(typename K::A (*tile)[RR_COLS(typename K::A) + 1],
                                        const Load& load, u64 r0, u32 rows, u64 c0, u32 cols,
                                        u64 dst, bool fin, u64 g, u64 f) {
    typedef typename K::A T;
    // thread -> column tc, rows tr, tr + P, tr + 2P, ... (P rows per pass)
    const u32 P = RTX_BLOCK / cols;
    const u32 tr = threadIdx.x / cols, tc = threadIdx.x - tr * cols;
    if (tr < P) {
        for (u32 r = tr; r < rows; r += BATCH * P) {
            T v[BATCH];
#pragma unroll
            for (u32 q = 0; q < BATCH; ++q)
                if (r + q * P < rows) v[q] = load(r0 + r + q * P, c0 + tc);
#pragma unroll
            for (u32 q = 0; q < BATCH; ++q)
                if (r + q * P < rows) tile[r + q * P][tc] = v[q];
        }
    }
    __syncthreads();
    if (threadIdx.x < cols) {
        T acc = tile[0][threadIdx.x];
        for (u32 r = 1; r < rows; r += 8) {
            T w[8];
#pragma unroll
            for (u32 q = 0; q < 8; ++q)
                if (r + q < rows) w[q] = tile[r + q][threadIdx.x];
#pragma unroll
            for (u32 q = 0; q < 8; ++q)
                if (r + q < rows) acc = radd(acc, w[q]);
        }
        rr_store<K>(dst, fin, g * f + c0 + threadIdx.x, acc);
    }
    __syncthreads();
}

// in[r, j] of a row-major [n, f] of A another block of this launch wrote:
// read from L2 (__ldcg), where the other blocks' writes are visible; this
// SM's L1 could hold a stale copy.
template <typename T>
struct FreshRowsLoad {
    const T* in;
    u64 f;
    __device__ __forceinline__ T operator()(u64 r, u64 j) const { return __ldcg(in + r * f + j); }
};

template <u32 BATCH, typename K, typename Load>
__device__ __forceinline__ void reduce_rows_level(
    typename K::A (*tile)[RR_COLS(typename K::A) + 1], const Load& load, u64 n, u64 f,
    const RrClimb& cl) {
    typedef typename K::A T;
    constexpr u32 C = RR_COLS(T);
    __shared__ u32 last;
    const u64 ng = (n + (RTX_CANONICAL_BLOCK - 1)) / RTX_CANONICAL_BLOCK;
    const u64 ct = (f + C - 1) / C;
    u32* counters = reinterpret_cast<u32*>(cl.counters);
    for (u64 t = blockIdx.x; t < ng * ct; t += gridDim.x) {
        const u64 g = t / ct, tile_j = t - g * ct, c0 = tile_j * C;
        const u64 r0 = g * RTX_CANONICAL_BLOCK;
        const u32 cols = (u32)min((u64)C, f - c0);
        rr_tile<BATCH, K>(tile, load, r0, (u32)min((u64)RTX_CANONICAL_BLOCK, n - r0), c0, cols,
                          cl.out[0], cl.rows[0] == 1, g, f);
        // climb while this block finished a group's last row
        u64 child = g;
        for (u64 i = 0; i + 1 < cl.levels; ++i) {
            const u64 grp = child / RTX_CANONICAL_BLOCK;
            const u64 first = grp * RTX_CANONICAL_BLOCK;
            const u32 rows = (u32)min((u64)RTX_CANONICAL_BLOCK, cl.rows[i] - first);
            __threadfence();  // this block's row, before its count
            __syncthreads();
            if (threadIdx.x == 0) {
                u32* c = counters + cl.cnt[i + 1] + grp * ct + tile_j;
                last = atomicAdd(c, 1u) + 1 == rows;
                if (last) *c = 0;  // every row has counted: zero for the next launch
            }
            __syncthreads();
            if (!last) break;
            __threadfence();  // the counts, before the rows they count
            rr_tile<BATCH, K>(tile, FreshRowsLoad<T>{reinterpret_cast<const T*>(cl.out[i]), f},
                              first, rows, c0, cols, cl.out[i + 1], cl.rows[i + 1] == 1, grp, f);
            child = grp;
        }
    }
}

// A stored element of a column sum widened: by K::ld when `exact` (a sum of
// one row passes its element on), else as an Operand (every column sum of
// several rows is an addition, which makes its own NaN). For bf16 the
// Operand's widening is exact enough for both: a NaN's one rounding (narrow)
// quiets it as K::ld does, so the stored bits are K::ld's.
template <typename K>
__device__ __forceinline__ typename K::A rows_ld(typename K::S v, bool exact) {
    return exact ? K::ld(v) : Operand<K>::ld(v);
}
template <>
__device__ __forceinline__ float rows_ld<KBf16>(u16 v, bool) {
    return Bf16::widen_sum(v);
}

// in[r, j] of a row-major [n, f] of stored elements, widened (rows_ld).
template <typename K>
struct RowsLoad {
    const typename K::S* __restrict__ in;
    u64 f;
    bool exact;
    __device__ __forceinline__ typename K::A operator()(u64 r, u64 j) const {
        return rows_ld<K>(__ldg(in + r * f + j), exact);
    }
};

// in[r, j] of a row-major [n, f] of A (a product's chunk sums, a level).
template <typename T>
struct AccRowsLoad {
    const T* __restrict__ in;
    u64 f;
    __device__ __forceinline__ T operator()(u64 r, u64 j) const { return __ldg(in + r * f + j); }
};

// a[r or 0, j] * s[r, j / c]: head_scale's product, computed as it is summed.
template <typename K>
struct HeadScaleLoad {
    const typename K::S* __restrict__ a;
    const typename K::S* __restrict__ s;
    u64 f, heads;
    u32 c;
    u64 a_rs;
    // j < f, a row of a tensor: the head in 32-bit arithmetic
    __device__ __forceinline__ typename K::A operator()(u64 r, u64 j) const {
        typedef Operand<K> O;
        return rmul(O::ld(__ldg(a + r * a_rs + j)), O::ld(__ldg(s + r * heads + (u32)j / c)));
    }
};

// The column sums of the stored rows at `in`, or of the A rows at `acc` when
// it is not null (a product's chunk sums, a level the host launched alone).
template <typename K>
__device__ __forceinline__ void reduce_rows_body(const typename K::S* __restrict__ in,
                                                 const typename K::A* __restrict__ acc, u64 n,
                                                 u64 f, const RrClimb& cl) {
    typedef typename K::A T;
    __shared__ T tile[RTX_CANONICAL_BLOCK][RR_COLS(T) + 1];
    if constexpr (KStoresA<K>::value) {
        const T* src = acc ? acc : reinterpret_cast<const T*>(in);
        reduce_rows_level<16, K>(tile, AccRowsLoad<T>{src, f}, n, f, cl);
    } else if (acc) {
        reduce_rows_level<16, K>(tile, AccRowsLoad<T>{acc, f}, n, f, cl);
    } else {
        reduce_rows_level<16, K>(tile, RowsLoad<K>{in, f, n == 1}, n, f, cl);
    }
}

#define RTX_REDUCE_ROWS(NAME, T, A, K)                                                      \
    extern "C" __global__ void __launch_bounds__(RTX_BLOCK)                                 \
        NAME(const T* __restrict__ in, const A* __restrict__ acc, u64 n, u64 f, RrClimb cl) { \
        reduce_rows_body<K>(in, acc, n, f, cl);                                             \
    }
// @kernels RTX_REDUCE_ROWS

// head_scale_sum_rows: reduce_rows of head_scale(a, s) without storing the
// products (a_rs = 0 broadcasts a's one row).
template <typename K>
__device__ __forceinline__ void head_scale_rows_body(const typename K::S* __restrict__ a,
                                                     const typename K::S* __restrict__ s, u64 n,
                                                     u64 f, u64 c, u64 a_rs, const RrClimb& cl) {
    typedef typename K::A T;
    __shared__ T tile[RTX_CANONICAL_BLOCK][RR_COLS(T) + 1];
    reduce_rows_level<8, K>(tile, HeadScaleLoad<K>{a, s, f, f / c, (u32)c, a_rs}, n, f, cl);
}

#define RTX_HEAD_SCALE_ROWS(NAME, T, K)                                                     \
    extern "C" __global__ void __launch_bounds__(RTX_BLOCK)                                 \
        NAME(const T* __restrict__ a, const T* __restrict__ s, u64 n, u64 f, u64 c, u64 a_rs, \
             RrClimb cl) {                                                                  \
        head_scale_rows_body<K>(a, s, n, f, c, a_rs, cl);                                   \
    }
// @kernels RTX_HEAD_SCALE_ROWS

// ---------------------------------------------------------------- matrix product

// Level 0 of op(a) @ op(b): for every 256-wide chunk ch of the inner dimension,
// out[ch, i, j] = sum over p in the chunk of A(i, p) * B(p, j), left to right
// from the chunk's first product, with A(i, p) = a[i*a_rs + p*a_ps] and
// B(p, j) = b[p*b_ps + j*b_js] (strides express the transposes). One block
// per TM x TN output tile and chunk (TM, TN in {32, 64}: the host sizes the
// tile to the product, so a product of 32 rows or columns does not leave
// half of every tile idle);
// each of its TM*TN/16 threads owns a 4x4 register tile (rows 4ty + r,
// columns 4tx + c: one vector load of each operand per step, the next K-tile
// loaded meanwhile). The tile changes which thread computes an output, never
// the order of its additions. With one chunk (k <= 256) this is the product,
// each output rounded once into out (part is null); otherwise the chunk sums
// go to part (K::A scratch) and reduce_rows sums them in the canonical order.
// Stored operands are widened once, as they are stored into the shared tiles
// (half ones are fetched as element pairs): the shared tiles and the inner
// loop are the f32 ones.
#define MM_T RTX_MATMUL_TILE
#define MM_K 16
// row padding of the shared tiles: keeps rows 16-byte aligned for load4
#define MM_PAD 4
static_assert(MM_T == 64, "matmul: the largest tile edge sizes the shared tiles");
// Four consecutive shared-memory values at p (16-byte aligned for float):
// one vector load for float, two for double.
__device__ __forceinline__ void load4(const float* p, float (&v)[4]) {
    const float4 x = *reinterpret_cast<const float4*>(p);
    v[0] = x.x; v[1] = x.y; v[2] = x.z; v[3] = x.w;
}
__device__ __forceinline__ void load4(const double* p, double (&v)[4]) {
    const double2 x = reinterpret_cast<const double2*>(p)[0];
    const double2 y = reinterpret_cast<const double2*>(p)[1];
    v[0] = x.x; v[1] = x.y; v[2] = y.x; v[3] = y.y;
}

// Where element e of a K-tile goes: A's as As[kk][ii] (E = TM rows), B's as
// Bs[kk][jj] (E = TN columns). Consecutive e run along the operand's
// contiguous dimension: k when along_k, else the tile's E side.
struct TileSlot {
    u32 kk, x;
};
template <int E>
__device__ __forceinline__ TileSlot tile_slot(u32 e, bool along_k) {
    return along_k ? TileSlot{e % MM_K, e / MM_K} : TileSlot{e / E, e % E};
}

// Two consecutive elements of a half operand, the first in the low half: at
// and at + step, or with `pair` (at even, step 1) one 4-byte load of both; an
// element out of the tile (!ok0, !ok1) reads as 0.
__device__ __forceinline__ u32 mm_pair(const u16* __restrict__ p, u64 at, bool ok0, bool ok1,
                                       bool pair, u64 step) {
    if (pair) return ok1 ? *reinterpret_cast<const u32*>(p + at) : ok0 ? (u32)p[at] : 0u;
    const u32 lo = ok0 ? (u32)p[at] : 0u;
    const u32 hi = ok1 ? (u32)p[at + step] : 0u;
    return lo | (hi << 16);
}

// A thread's QP element pairs of a half operand's K-tile (q-th pair: the
// tile's elements 2e, 2e + 1, e = threadIdx.x + NT * q, which tile_slot<E>
// places): the element of tile row x (gi = x0 + x < ext) and k = pb + kk
// (kk < kc) is at gi * xs + k * ks.
template <int E, u32 NT, u32 QP>
__device__ __forceinline__ void mm_fetch_pairs(u32 (&r)[QP], const u16* __restrict__ p,
                                               bool along_k, u64 x0, u64 ext, u64 pb, u32 kc,
                                               u64 xs, u64 ks, bool pair) {
#pragma unroll
    for (u32 q = 0; q < QP; ++q) {
        const TileSlot s = tile_slot<E>(2 * (threadIdx.x + NT * q), along_k);
        const u64 gi = x0 + s.x;
        const bool ok0 = gi < ext && s.kk < kc;
        const bool ok1 = along_k ? (gi < ext && s.kk + 1 < kc) : (gi + 1 < ext && s.kk < kc);
        r[q] = mm_pair(p, gi * xs + (pb + s.kk) * ks, ok0, ok1, pair, along_k ? ks : xs);
    }
}

// The inner loop over a K-tile's kc (<= MM_K) products of the shared tiles.
template <typename T>
__device__ __forceinline__ void mm_inner(const T (*As)[MM_T + MM_PAD], const T (*Bs)[MM_T + MM_PAD],
                                         T (&acc)[4][4], u32 kc, u32 tx, u32 ty) {
#pragma unroll
    for (u32 kk = 0; kk < MM_K; ++kk) {
        if (kk < kc) {
            T av[4], bv[4];
            load4(&As[kk][ty * 4], av);
            load4(&Bs[kk][tx * 4], bv);
#pragma unroll
            for (int r = 0; r < 4; ++r)
#pragma unroll
                for (int c = 0; c < 4; ++c) acc[r][c] = radd(acc[r][c], rmul(av[r], bv[c]));
        }
    }
}

template <typename K, int TM, int TN>
__device__ __forceinline__ void matmul_level0(const typename K::S* __restrict__ a,
                                              const typename K::S* __restrict__ b,
                                              typename K::S* __restrict__ out,
                                              typename K::A* __restrict__ part, u64 m, u64 n,
                                              u64 k, u64 a_rs, u64 a_ps, u64 b_ps, u64 b_js,
                                              typename K::A (*As)[MM_T + MM_PAD],
                                              typename K::A (*Bs)[MM_T + MM_PAD]) {
    typedef typename K::A T;
    constexpr u32 NT = (TM / 4) * (TN / 4);  // threads
    constexpr u32 PA = TM * MM_K / NT, PB = TN * MM_K / NT;  // K-tile loads per thread
    static_assert(TM <= MM_T && TN <= MM_T && NT <= RTX_BLOCK, "tile fits the block");
    static_assert(PA * NT == TM * MM_K && PB * NT == TN * MM_K, "loads cover the K-tile");
    const u64 tiles_m = (m + TM - 1) / TM, tiles_n = (n + TN - 1) / TN;
    const u64 chunks = (k + (RTX_CANONICAL_BLOCK - 1)) / RTX_CANONICAL_BLOCK;
    const u64 total = tiles_m * tiles_n * chunks;
    const u32 tx = threadIdx.x % (TN / 4), ty = threadIdx.x / (TN / 4);
    const bool a_along_k = a_ps == 1, b_along_k = b_js != 1;
    for (u64 t = blockIdx.x; t < total; t += gridDim.x) {
        const u64 tm = t % tiles_m, rest = t / tiles_m;
        const u64 tn = rest % tiles_n, ch = rest / tiles_n;
        const u64 p0 = ch * RTX_CANONICAL_BLOCK, p1 = min(k, p0 + RTX_CANONICAL_BLOCK);
        // -0.0 + x == x for every x (signed zeros and NaNs included): starting the
        // chains at -0.0 gives the reference's "first product, then add" bits
        // without a select per product
        T acc[4][4];
#pragma unroll
        for (int r = 0; r < 4; ++r)
#pragma unroll
            for (int c = 0; c < 4; ++c) acc[r][c] = T(-0.0);
        // the next K-tile is loaded into registers while this one is used
        if constexpr (sizeof(typename K::S) == 2) {
            // half operands: the stored bits stay in registers until the
            // shared store (a widening there, not at the fetch, keeps the
            // loads' latency behind the inner loop), fetched as element pairs
            // along the operand's contiguous dimension (one 4-byte load for
            // two when aligned: half the load instructions, full lines)
            constexpr u32 QA = PA / 2, QB = PB / 2;
            const u16* __restrict__ ah = reinterpret_cast<const u16*>(a);
            const u16* __restrict__ bh = reinterpret_cast<const u16*>(b);
            // element pairs start at even offsets: (gi, even p) along k, (even
            // gi, p) across it; the pair's second element is the next one in memory
            const bool a_pair = ((u64)a & 3) == 0 &&
                                (a_along_k ? a_rs % 2 == 0 : (a_rs == 1 && a_ps % 2 == 0));
            const bool b_pair = ((u64)b & 3) == 0 &&
                                (b_along_k ? (b_ps == 1 && b_js % 2 == 0) : b_ps % 2 == 0);
            u32 ra[QA], rb[QB];
            const u64 a0 = tm * TM, b0 = tn * TN;
            auto fetch = [&](u64 pb) {
                const u32 kc = (u32)min((u64)MM_K, p1 - pb);
                mm_fetch_pairs<TM, NT, QA>(ra, ah, a_along_k, a0, m, pb, kc, a_rs, a_ps, a_pair);
                mm_fetch_pairs<TN, NT, QB>(rb, bh, b_along_k, b0, n, pb, kc, b_js, b_ps, b_pair);
            };
            fetch(p0);
            for (u64 pb = p0; pb < p1; pb += MM_K) {
                const u32 kc = (u32)min((u64)MM_K, p1 - pb);
#pragma unroll
                for (u32 q = 0; q < QA; ++q) {
                    const TileSlot s = tile_slot<TM>(2 * (threadIdx.x + NT * q), a_along_k);
                    const float2 v = Operand<K>::ld2(ra[q]);
                    As[s.kk][s.x] = v.x;
                    if (a_along_k)
                        As[s.kk + 1][s.x] = v.y;
                    else
                        As[s.kk][s.x + 1] = v.y;
                }
#pragma unroll
                for (u32 q = 0; q < QB; ++q) {
                    const TileSlot s = tile_slot<TN>(2 * (threadIdx.x + NT * q), b_along_k);
                    const float2 v = Operand<K>::ld2(rb[q]);
                    Bs[s.kk][s.x] = v.x;
                    if (b_along_k)
                        Bs[s.kk + 1][s.x] = v.y;
                    else
                        Bs[s.kk][s.x + 1] = v.y;
                }
                __syncthreads();
                if (pb + MM_K < p1) fetch(pb + MM_K);
                mm_inner(As, Bs, acc, kc, tx, ty);
                __syncthreads();
            }
        } else {
            T ra[PA], rb[PB];
            auto fetch = [&](u64 pb) {
                const u32 kc = (u32)min((u64)MM_K, p1 - pb);
#pragma unroll
                for (u32 q = 0; q < PA; ++q) {
                    const TileSlot s = tile_slot<TM>(threadIdx.x + NT * q, a_along_k);
                    const u64 gi = tm * TM + s.x;
                    ra[q] = (gi < m && s.kk < kc) ? a[gi * a_rs + (pb + s.kk) * a_ps] : T(0);
                }
#pragma unroll
                for (u32 q = 0; q < PB; ++q) {
                    const TileSlot s = tile_slot<TN>(threadIdx.x + NT * q, b_along_k);
                    const u64 gj = tn * TN + s.x;
                    rb[q] = (gj < n && s.kk < kc) ? b[(pb + s.kk) * b_ps + gj * b_js] : T(0);
                }
            };
            fetch(p0);
            for (u64 pb = p0; pb < p1; pb += MM_K) {
                const u32 kc = (u32)min((u64)MM_K, p1 - pb);
#pragma unroll
                for (u32 q = 0; q < PA; ++q) {
                    const TileSlot s = tile_slot<TM>(threadIdx.x + NT * q, a_along_k);
                    As[s.kk][s.x] = ra[q];
                }
#pragma unroll
                for (u32 q = 0; q < PB; ++q) {
                    const TileSlot s = tile_slot<TN>(threadIdx.x + NT * q, b_along_k);
                    Bs[s.kk][s.x] = rb[q];
                }
                __syncthreads();
                if (pb + MM_K < p1) fetch(pb + MM_K);
                mm_inner(As, Bs, acc, kc, tx, ty);
                __syncthreads();
            }
        }
        T* o = part ? part + ch * m * n : nullptr;
#pragma unroll
        for (int r = 0; r < 4; ++r) {
            const u64 gi = tm * TM + ty * 4 + r;
            if (gi >= m) continue;
#pragma unroll
            for (int c = 0; c < 4; ++c) {
                const u64 gj = tn * TN + tx * 4 + c;
                if (gj < n) {
                    if (o)
                        o[gi * n + gj] = acc[r][c];
                    else
                        out[gi * n + gj] = K::st(acc[r][c]);
                }
            }
        }
    }
}

// One entry point per element type and tile (each with its own registers:
// one kernel switching over the four tiles took 190 registers, a block per SM).
#define RTX_MATMUL(NAME, T, A, K, TM, TN)                                                   \
    extern "C" __global__ void __launch_bounds__((TM / 4) * (TN / 4))                       \
        NAME(const T* __restrict__ a, const T* __restrict__ b, T* __restrict__ out,         \
             A* __restrict__ part, u64 m, u64 n, u64 k, u64 a_rs, u64 a_ps, u64 b_ps,       \
             u64 b_js) {                                                                    \
        __shared__ __align__(16) A As[MM_K][MM_T + MM_PAD];                                 \
        __shared__ __align__(16) A Bs[MM_K][MM_T + MM_PAD];                                 \
        matmul_level0<K, TM, TN>(a, b, out, part, m, n, k, a_rs, a_ps, b_ps, b_js, As, Bs); \
    }
// @kernels RTX_MATMUL

// Level 0 of op(a) @ op(b) for products of few columns (at most MMD_N =
// RTX_MATMUL_DOT_N, 8: the attention logits x @ head_dot(W, att), their
// weight gradients x^T @ da, the linear head). Every output is added left to
// right from -0.0 over its chunk's products: the same additions, in the same
// order, as matmul_level0, whose 32-wide tile would leave most of its
// columns idle. Its outputs go where matmul_level0's go (out, rounded once,
// or part's [chunks, m, n] A scratch).
//
// matmul_dot_rows, for an A read along its rows (a_ps == 1): a thread per
// output row and chunk keeps the row's n sums; the block first stages the
// chunk of B ([<= 256, n]) in shared memory, where every thread reads the
// same address; the row is read in 16-byte vectors when aligned.
#define MMD_N RTX_MATMUL_DOT_N
template <typename K>
__device__ __forceinline__ void matmul_dot_rows(const typename K::S* __restrict__ a,
                                                const typename K::S* __restrict__ b,
                                                typename K::S* __restrict__ out,
                                                typename K::A* __restrict__ part, u64 m, u64 n,
                                                u64 k, u64 a_rs, u64 a_ps, u64 b_ps, u64 b_js) {
    typedef typename K::S S;
    typedef typename K::A T;
    __shared__ T bs[RTX_CANONICAL_BLOCK][MMD_N];
    const u64 chunks = (k + (RTX_CANONICAL_BLOCK - 1)) / RTX_CANONICAL_BLOCK;
    const u64 mb = (m + RTX_BLOCK - 1) / RTX_BLOCK;  // blocks of rows per chunk
    const u32 nn = (u32)n;                           // <= MMD_N (the host checks)
    for (u64 t = blockIdx.x; t < chunks * mb; t += gridDim.x) {
        const u64 ch = t / mb, i = (t - ch * mb) * RTX_BLOCK + threadIdx.x;
        const u64 p0 = ch * RTX_CANONICAL_BLOCK;
        const u32 kc = (u32)min((u64)RTX_CANONICAL_BLOCK, k - p0);
        for (u32 e = threadIdx.x; e < kc * nn; e += RTX_BLOCK) {
            const u32 p = e / nn, j = e - p * nn;
            bs[p][j] = Operand<K>::ld(b[(p0 + p) * b_ps + j * b_js]);
        }
        __syncthreads();
        if (i < m) {
            T acc[MMD_N];
#pragma unroll
            for (u32 j = 0; j < MMD_N; ++j) acc[j] = T(-0.0);
            const S* __restrict__ ap = a + i * a_rs + p0 * a_ps;
            // 16-byte vectors: a quarter of the load instructions (each lane
            // reads its own row, so the lanes' loads never share a line)
            const bool vec = aligned16(ap);
            constexpr u32 B = 16;
            for (u32 p = 0; p < kc; p += B) {
                T x[B];
                if (vec && p + B <= kc) {
                    typedef typename K::SV SV;
                    typedef typename K::AV AV;
                    constexpr u32 N = VecT<AV>::N;
                    static_assert(B % N == 0, "whole vectors per batch");
#pragma unroll
                    for (u32 q = 0; q < B / N; ++q) {
                        const AV v =
                            Operand<K>::vld(__ldg(reinterpret_cast<const SV*>(ap + p) + q));
#pragma unroll
                        for (u32 c = 0; c < N; ++c) x[q * N + c] = comps(v)[c];
                    }
                } else {
#pragma unroll
                    for (u32 q = 0; q < B; ++q)
                        if (p + q < kc) x[q] = Operand<K>::ld(__ldg(ap + (u64)(p + q) * a_ps));
                }
#pragma unroll
                for (u32 q = 0; q < B; ++q)
                    if (p + q < kc)
#pragma unroll
                        for (u32 j = 0; j < MMD_N; ++j)
                            if (j < nn) acc[j] = radd(acc[j], rmul(x[q], bs[p + q][j]));
            }
            if (part) {
                T* __restrict__ o = part + (ch * m + i) * n;
#pragma unroll
                for (u32 j = 0; j < MMD_N; ++j)
                    if (j < nn) o[j] = acc[j];
            } else {
                S* __restrict__ o = out + i * n;
#pragma unroll
                for (u32 j = 0; j < MMD_N; ++j)
                    if (j < nn) o[j] = K::st(acc[j]);
            }
        }
        __syncthreads();  // bs is rewritten for the next chunk
    }
}

// matmul_dot_outputs, for a transposed A (a_ps != 1: the weight gradients,
// few rows and long inner dimensions): a thread per output and chunk, so a
// product of 64 x 4 outputs still has 256 threads per chunk; the lanes'
// loads of A share lines.
template <typename K>
__device__ __forceinline__ void matmul_dot_outputs(const typename K::S* __restrict__ a,
                                                   const typename K::S* __restrict__ b,
                                                   typename K::S* __restrict__ out,
                                                   typename K::A* __restrict__ part, u64 m,
                                                   u64 n, u64 k, u64 a_rs, u64 a_ps, u64 b_ps,
                                                   u64 b_js) {
    typedef typename K::S S;
    typedef typename K::A T;
    const u64 chunks = (k + (RTX_CANONICAL_BLOCK - 1)) / RTX_CANONICAL_BLOCK;
    const u64 total = chunks * m * n;
    for (u64 t = thread_id(); t < total; t += grid_stride()) {
        const u64 r = t / n, j = t - r * n;
        const u64 ch = r / m, i = r - ch * m;
        const u64 p0 = ch * RTX_CANONICAL_BLOCK, p1 = min(k, p0 + RTX_CANONICAL_BLOCK);
        const S* __restrict__ ap = a + i * a_rs;
        const S* __restrict__ bp = b + j * b_js;
        T acc = T(-0.0);
        u64 p = p0;
        for (; p + 8 <= p1; p += 8) {
            T x[8], y[8];
#pragma unroll
            for (u32 q = 0; q < 8; ++q) {
                x[q] = Operand<K>::ld(__ldg(ap + (p + q) * a_ps));
                y[q] = Operand<K>::ld(__ldg(bp + (p + q) * b_ps));
            }
#pragma unroll
            for (u32 q = 0; q < 8; ++q) acc = radd(acc, rmul(x[q], y[q]));
        }
        for (; p < p1; ++p)
            acc = radd(acc, rmul(Operand<K>::ld(__ldg(ap + p * a_ps)),
                                 Operand<K>::ld(__ldg(bp + p * b_ps))));
        if (part)
            part[t] = acc;
        else
            out[t] = K::st(acc);
    }
}

// The host's grid: matmul_dot_grid (rows) or a thread per output (outputs).
#define RTX_MATMUL_DOT(NAME, T, A, K)                                                       \
    extern "C" __global__ void __launch_bounds__(RTX_BLOCK)                                 \
        NAME(const T* __restrict__ a, const T* __restrict__ b, T* __restrict__ out,         \
             A* __restrict__ part, u64 m, u64 n, u64 k, u64 a_rs, u64 a_ps, u64 b_ps,       \
             u64 b_js) {                                                                    \
        if (a_ps == 1)                                                                      \
            matmul_dot_rows<K>(a, b, out, part, m, n, k, a_rs, a_ps, b_ps, b_js);           \
        else                                                                                \
            matmul_dot_outputs<K>(a, b, out, part, m, n, k, a_rs, a_ps, b_ps, b_js);        \
    }
// @kernels RTX_MATMUL_DOT
