// The segment ops of a graph-attention model on the device: segment max,
// segment sums of stored or computed values (the softmax, its backward,
// gather_scale_scatter) and the softmax's elementwise passes. Exactness and
// the shared helpers: model.cuh.
//
// Segment ops reuse the scatter machinery of index.cu: a plan's level-0
// chunks (at most 256 consecutive positions of one destination row) are
// summed by a group of lanes each (a lane per column vector), each chunk's sum
// goes into its row (last level: slot == RTX_FINAL) or into the next level's
// scratch, which index.cu's scatterN kernels reduce. The fused level-0 kernels
// here compute each value on the fly (the softmax backward: alpha * grad;
// gather_scale_scatter: x[gather[e]] * w[e, head]) instead of reading it, in
// exactly the order index.cu sums stored values. The softmax's exps are not
// fused: computed in one parallel pass (softmax_exp) they stay off the chains.
//
// Every kernel comes in f32, f64, bf16 and f16. The half kernels read half
// storage, widen it exactly, compute in f32 exactly as the f32 kernel does
// (same operations in the same order) and round each output once when they
// store it; what passes between levels or kernels (chunk maxima and sums,
// the softmax's numerators and sums) stays f32, so their bits are those of
// the f32 op on the widened inputs, rounded once: the definition of a half
// op (rtx_backend::ops). A half segment sum's levels past 0 are index.cu's
// half scatter levels (f32 scratch, one rounding into the half row); the
// softmax backward's sums stay f32 (f32 scatter levels).
#include "common.cuh"
#include "model.cuh"

// ---------------------------------------------------------------- segment ops

// One level of a segment max over a plan's chunk tables, a thread per (chunk,
// column): the first maximum in position order is kept (-0.0 and +0.0 tie),
// the first NaN sticks; chunk maxima combine by the same rule at the next
// level, which gives the same value as one pass over the row. Level 0 reads
// vals[pos[p]] (pos != 0), higher levels the scratch directly.
template <typename T>
__device__ __forceinline__ T max_step(T m, T v) {
    return (m == m && (v > m || v != v)) ? v : m;
}

// Over an element kind K (model.cuh): `vals` (the previous level's
// scratch, or values through `pos`) and `next` hold K::A, the type the
// kernel computes in; a row's maximum is stored to dst as K::S (for bf16 and
// f16 the widened maximum rounds back to the stored element it came from).
template <typename K>
__device__ __forceinline__ void segmax_level(const typename K::A* __restrict__ vals,
                                             const u32* __restrict__ pos,
                                             const u32* __restrict__ cstart,
                                             const u32* __restrict__ crow,
                                             const u32* __restrict__ cslot, u64 nchunks, u64 f,
                                             typename K::S* __restrict__ dst,
                                             typename K::A* __restrict__ next) {
    typedef typename K::A T;
    const u64 total = nchunks * f;
    for (u64 t = thread_id(); t < total; t += grid_stride()) {
        const u64 c = t / f, j = t - c * f;
        const Chunk ch = load_chunk(cstart, crow, cslot, c);
        const u32 a = ch.a, b = ch.b;
        T mx = __ldg(vals + (pos ? (u64)__ldg(pos + a) : (u64)a) * f + j);
        for (u32 p = a + 1; p < b; p += 8) {
            T v[8];
#pragma unroll
            for (u32 q = 0; q < 8; ++q)
                if (p + q < b)
                    v[q] = __ldg(vals + (pos ? (u64)__ldg(pos + p + q) : (u64)(p + q)) * f + j);
#pragma unroll
            for (u32 q = 0; q < 8; ++q)
                if (p + q < b) mx = max_step(mx, v[q]);
        }
        if (ch.slot == RTX_FINAL)
            dst[ch.row * f + j] = K::st(mx);
        else
            next[(u64)ch.slot * f + j] = mx;
    }
}

#define RTX_SEGMAX(NAME, T, A, K)                                                           \
    extern "C" __global__ void __launch_bounds__(RTX_BLOCK)                                 \
        NAME(const A* __restrict__ vals, const u32* __restrict__ pos,                       \
             const u32* __restrict__ cstart, const u32* __restrict__ crow,                  \
             const u32* __restrict__ cslot, u64 nchunks, u64 f, T* __restrict__ dst,        \
             A* __restrict__ next) {                                                        \
        segmax_level<K>(vals, pos, cstart, crow, cslot, nchunks, f, dst, next);             \
    }
// @kernels RTX_SEGMAX

// Bytes of values a block of the fused level-0 kernels stages per window.
#define RTX_WINDOW_BYTES 32768

template <typename V, bool MAX>
__device__ __forceinline__ V combine(V acc, V v) {
    if constexpr (MAX) {
        return max_step(acc, v);
    } else {
        return vadd(acc, v);
    }
}

// What a chunk's result meets in its row: with ADD (index_add's level 0,
// `sum0a`) the element dst holds, loaded before the chunk's chain runs (no
// other chunk touches it: a row finished at level 0 has one chunk), so its
// load is off the chain; else nothing (the model's sums into a zeroed dst).
template <bool ADD, typename D>
__device__ __forceinline__ typename D::S row_before(u32 slot, u64 row, u64 W, u64 j,
                                                    const typename D::S* __restrict__ dst) {
    typename D::S old{};
    if constexpr (ADD) {
        if (slot == RTX_FINAL) old = dst[row * W + j];
    }
    return old;
}

// A chunk's value or its slot in the next level, written once its chain is done:
// a sum goes into its row as `old + t` with ADD (index.cu's `dst + sum`, for
// half storage on the widened element), else as `0 + t` (dst zeroed by the
// host); a max as is; each rounded once to dst's storage (D::st: the
// identity but for a half destination). The next level's scratch keeps the
// value as computed.
template <typename V, bool MAX, bool ADD, typename D>
__device__ __forceinline__ void put_chunk(V t, u32 slot, u64 row, u64 W, u64 j,
                                          typename D::S old, typename D::S* __restrict__ dst,
                                          V* __restrict__ next) {
    if (slot == RTX_FINAL) {
        if constexpr (MAX) {
            dst[row * W + j] = D::st(t);
        } else if constexpr (ADD) {
            dst[row * W + j] = D::st(vadd(D::ld(old), t));
        } else {
            dst[row * W + j] = D::st(vadd(V{}, t));
        }
    } else {
        next[(u64)slot * W + j] = t;
    }
}

// Sum (or, MAX, segment max) of the values of the n staged keys ks[0..n),
// column vector j, continuing acc unless `first` (then from ks[0]'s value),
// left to right (index.cu's order). Keys come from shared memory, so each
// batch of B loads is issued at once (as stored: Src::load), and then each
// value is made (Src::make: widened, multiplied) and added in order. B is 8,
// 4 for the 32-byte values of 8 halves (at 8 their kernels spilled three
// times the f32 kernels' bytes at the register cap).
template <typename V, bool MAX, typename Src>
__device__ __forceinline__ V staged_reduce(const Src& src, const typename Src::Key* ks, u32 n,
                                           u64 row, u64 j, V acc, bool first) {
    constexpr u32 B = sizeof(V) > 16 ? 4 : 8;
    for (u32 p = 0; p < n; p += B) {
        typename Src::Raw r[B];
#pragma unroll
        for (u32 q = 0; q < B; ++q)
            if (p + q < n) r[q] = src.load(ks[p + q], row, j);
#pragma unroll
        for (u32 q = 0; q < B; ++q)
            if (p + q < n) {
                const V v = src.make(r[q]);
                acc = (first && p + q == 0) ? v : combine<V, MAX>(acc, v);
            }
    }
    return acc;
}

// Level 0 of a segment sum (or max) whose values Src computes, for rows of
// more than 32 vectors (windowed_level0 below takes the others): a group of L
// lanes per chunk, lane j reduces column vectors j, j + L, ...; a sum is
// added into its row (dst, zeroed by the host: written as `0 + t`), a max
// stored there, or either goes to the next level's scratch (reduced by
// index.cu's scatterN kernels, or segmax). The group first stages the keys
// of up to 16 L consecutive positions in shared memory (16 independent index
// loads per lane), then every lane runs its chains over them: a chunk of at
// most 256 positions is one stage when L >= 16, and when L < 16 each lane has
// at most one column (W <= L), whose sum continues across stages. The order
// of every addition is the one of index.cu.
template <typename V, bool MAX, bool ADD, typename D, typename Src>
__device__ __forceinline__ void grouped_level0(const Src& src, const u32* __restrict__ pos,
                                               const u32* __restrict__ cstart,
                                               const u32* __restrict__ crow,
                                               const u32* __restrict__ cslot, u64 nchunks, u64 W,
                                               u32 lanes_log2, typename D::S* __restrict__ dst,
                                               V* __restrict__ next, unsigned char* smem) {
    typedef typename Src::Key K;
    constexpr u32 PER_LANE = 8;
    static_assert(PER_LANE * RTX_BLOCK * sizeof(K) <= RTX_WINDOW_BYTES, "stage fits the window");
    K* stage_all = reinterpret_cast<K*>(smem);
    const u32 L = 1u << lanes_log2;
    const u32 lane = threadIdx.x & (L - 1);
    const u32 cap = PER_LANE * L;
    K* ks = stage_all + (threadIdx.x >> lanes_log2) * cap;
    const u32 mask = L >= 32 ? 0xFFFFFFFFu
                              : ((1u << L) - 1u) << ((threadIdx.x & 31u) & ~(L - 1u));
    const u64 groups = blockDim.x >> lanes_log2;
    for (u64 c = (u64)blockIdx.x * groups + (threadIdx.x >> lanes_log2); c < nchunks;
         c += (u64)gridDim.x * groups) {
        const Chunk ch = load_chunk(cstart, crow, cslot, c);
        const u32 a = ch.a, b = ch.b, slot = ch.slot;
        const u64 row = ch.row;
        V acc{};
        for (u32 s0 = a; s0 < b; s0 += cap) {
            const u32 n = min(b - s0, cap);
            {
                u32 e[PER_LANE];
#pragma unroll
                for (u32 q = 0; q < PER_LANE; ++q) {
                    const u32 i = lane + q * L;
                    if (i < n) e[q] = __ldg(pos + s0 + i);
                }
#pragma unroll
                for (u32 q = 0; q < PER_LANE; ++q) {
                    const u32 i = lane + q * L;
                    if (i < n) ks[i] = src.key(e[q]);
                }
            }
            __syncwarp(mask);
            if (n == b - a) {  // the whole chunk in one stage
                for (u64 j = lane; j < W; j += L) {
                    const typename D::S old = row_before<ADD, D>(slot, row, W, j, dst);
                    const V t = staged_reduce<V, MAX, Src>(src, ks, n, row, j, acc, true);
                    put_chunk<V, MAX, ADD, D>(t, slot, row, W, j, old, dst, next);
                }
            } else if (lane < W) {  // L < 16: one column per lane, across stages
                acc = staged_reduce<V, MAX, Src>(src, ks, n, row, lane, acc, s0 == a);
            }
            __syncwarp(mask);
        }
        if (b - a > cap && lane < W)
            put_chunk<V, MAX, ADD, D>(acc, slot, row, W, lane,
                                      row_before<ADD, D>(slot, row, W, lane, dst), dst, next);
    }
}

// Level 0 of a segment sum (or max) whose values Src computes, for rows of at
// most 32 vectors. Block t takes window b of RTX_WIN positions and a slice of
// at most RTX_SLICE_BYTES of the columns: the chunks that start inside the
// window (from the plan's window table, levels::window_table, which host
// uploads and device builds both write), whose positions span at most
// RTX_WIN + 255 entries since no chunk is longer than 256. The whole
// block loads those entries' keys, then their values in the slice (4
// independent loads per thread at a time: with 8, the batch-8 HetGAT step
// ran 8% slower on the H200), into shared memory; then a group of lanes
// per chunk (a lane per column vector of the slice) adds the chunk up from
// shared memory, in position order. Every block has the same bounded work,
// however the chunks are spread: a hub row's 256-entry chunk costs a few load
// latencies, not one per 8 entries along its chain. The additions and their
// order are index.cu's: the first value of a chunk starts its chain, every
// later one is added to it.
template <typename V, bool MAX, bool ADD, typename D, typename Src>
__device__ __forceinline__ void windowed_level0(const Src& src, const u32* __restrict__ pos,
                                                const u32* __restrict__ wfirst,
                                                const u32* __restrict__ cstart,
                                                const u32* __restrict__ crow,
                                                const u32* __restrict__ cslot, u64 nchunks,
                                                u32 W, typename D::S* __restrict__ dst,
                                                V* __restrict__ next, unsigned char* smem) {
    typedef typename Src::Key K;
    constexpr u32 BATCH = 4;
    constexpr u32 SPAN = 2 * RTX_WIN;  // entries staged, at most RTX_WIN + 255
    constexpr u32 CW = RTX_SLICE_BYTES / sizeof(V);
    static_assert(SPAN * RTX_SLICE_BYTES <= RTX_WINDOW_BYTES, "a window's slice fits");
    V* vals = reinterpret_cast<V*>(smem);
    K* keys = reinterpret_cast<K*>(smem + RTX_WINDOW_BYTES);
    __shared__ u64 range[2];
    const u64 entries = __ldg(cstart + nchunks);
    const u64 windows = (entries + RTX_WIN - 1) / RTX_WIN;
    const u32 slices = (W + CW - 1) / CW;
    for (u64 t = blockIdx.x; t < windows * slices; t += gridDim.x) {
        const u64 b = t / slices;
        const u32 j0 = (u32)(t - b * slices) * CW, cw = min(CW, W - j0);
        // the plan's window table (levels::window_table)
        if (threadIdx.x < 2) range[threadIdx.x] = __ldg(wfirst + b + threadIdx.x);
        __syncthreads();
        const u64 cb = range[0], nc = range[1] - cb;
        const u32 p0 = __ldg(cstart + cb), n = __ldg(cstart + range[1]) - p0;
#pragma unroll
        for (u32 q = 0; q < SPAN / RTX_BLOCK; ++q) {
            const u32 i = q * RTX_BLOCK + threadIdx.x;
            if (i < n) keys[i] = src.key(__ldg(pos + p0 + i));
        }
        __syncthreads();
        // thread -> column vector tc of the slice, entries te, te + P, ...: no
        // division per value (Src's own per-column arithmetic, such as a
        // vector's head, is the same for all of a thread's values)
        {
            const u32 P = RTX_BLOCK / cw;
            const u32 te = threadIdx.x / cw, tc = threadIdx.x - te * cw;
            if (te < P) {
                for (u32 e0 = te; e0 < n; e0 += BATCH * P) {
                    typename Src::Raw r[BATCH];
#pragma unroll
                    for (u32 q = 0; q < BATCH; ++q)
                        if (e0 + q * P < n) r[q] = src.load(keys[e0 + q * P], 0, j0 + tc);
#pragma unroll
                    for (u32 q = 0; q < BATCH; ++q)
                        if (e0 + q * P < n) vals[(e0 + q * P) * cw + tc] = src.make(r[q]);
                }
            }
        }
        __syncthreads();
        // a group of L lanes per chunk, lane j on column vector j0 + j
        const u32 lanes_log2 = 32 - __clz(cw - 1);  // log2 of cw's next power of two
        const u32 lane = threadIdx.x & ((1u << lanes_log2) - 1);
        const u32 groups = RTX_BLOCK >> lanes_log2;
        if (lane < cw) {
            for (u64 c = threadIdx.x >> lanes_log2; c < nc; c += groups) {
                const u32 a = __ldg(cstart + cb + c) - p0, e = __ldg(cstart + cb + c + 1) - p0;
                const u32 slot = __ldg(cslot + cb + c);
                const u64 row = __ldg(crow + cb + c);
                const typename D::S old = row_before<ADD, D>(slot, row, W, j0 + lane, dst);
                // shared-memory reads in batches of at most 64 bytes (the
                // 32-byte values of 8 halves spilled at BATCH)
                constexpr u32 SB = sizeof(V) > 16 ? BATCH / 2 : BATCH;
                V acc = vals[a * cw + lane];
                for (u32 p = a + 1; p < e; p += SB) {
                    V v[SB];
#pragma unroll
                    for (u32 q = 0; q < SB; ++q)
                        if (p + q < e) v[q] = vals[(p + q) * cw + lane];
#pragma unroll
                    for (u32 q = 0; q < SB; ++q)
                        if (p + q < e) acc = combine<V, MAX>(acc, v[q]);
                }
                put_chunk<V, MAX, ADD, D>(acc, slot, row, W, j0 + lane, old, dst, next);
            }
        }
        __syncthreads();  // range, keys and vals are rewritten by the next window
    }
}

// Level 0 of a segment sum (or max) whose values Src computes (see
// windowed_level0 and grouped_level0): values, sums and the next level's
// scratch are Src::V (the f32 vectors of a half kernel), a row's result is
// stored to dst as D::S (D::st rounds it once for a half destination).
template <bool MAX, bool ADD, typename D, typename Src>
__device__ __forceinline__ void fused_level0(const Src& src, const u32* __restrict__ pos,
                                             const u32* __restrict__ wfirst,
                                             const u32* __restrict__ cstart,
                                             const u32* __restrict__ crow,
                                             const u32* __restrict__ cslot, u64 nchunks, u64 W,
                                             u32 lanes_log2, typename D::S* __restrict__ dst,
                                             typename Src::V* __restrict__ next) {
    typedef typename Src::V V;
    __shared__ __align__(16) unsigned char
        smem[RTX_WINDOW_BYTES + 2 * RTX_WIN * sizeof(typename Src::Key)];
    if (W <= 32)
        windowed_level0<V, MAX, ADD, D>(src, pos, wfirst, cstart, crow, cslot, nchunks, (u32)W,
                                        dst, next, smem);
    else
        grouped_level0<V, MAX, ADD, D>(src, pos, cstart, crow, cslot, nchunks, W, lanes_log2,
                                       dst, next, smem);
}

// How a fused level-0 kernel reads its stored vectors and stores a row's
// result: `S` the stored vector, `V` the vector of values it computes in
// (the f32 vectors of half storage), `WS` a stored scalar and `T` its value;
// `ld` a stored vector's values, `ld1` a stored scalar's, `st` a result
// rounded to storage. IoSame (f32, f64): every member the identity, the
// plain kernels. IoHalf (bf16, f16 storage of 8, 4, 2 or 1 elements as
// common.cuh's hwiden / hnarrow vectors): the summands widened as index.cu's
// half scatter levels widen them (exactly; a NaN's payload aside, which no
// sum or product keeps: the device's adds and multiplies make their own
// NaN), each row's result rounded once. IoKind (the segment max): an
// element kind's own exact widening (K::ld, NaN quieted as the f32 route's
// widening does) and rounding (K::st, which gives a widened maximum back its
// stored bits).
template <typename V_>
struct IoSame {
    typedef V_ S;
    typedef V_ V;
    typedef typename VecT<V_>::T WS;
    typedef WS T;
    enum { PLAIN = 1 };
    static __device__ __forceinline__ V ld(S s) { return s; }
    static __device__ __forceinline__ T ld1(WS s) { return s; }
    static __device__ __forceinline__ S st(V v) { return v; }
};
template <typename H, typename S_, typename V_>
struct IoHalf {
    typedef S_ S;
    typedef V_ V;
    typedef u16 WS;
    typedef float T;
    enum { PLAIN = 0 };
    static __device__ __forceinline__ V ld(S s) { return hwiden<H>(s); }
    static __device__ __forceinline__ T ld1(WS s) { return H::widen_sum(s); }
    static __device__ __forceinline__ S st(V v) { return hnarrow<H>(v); }
};
template <typename K>
struct IoKind {
    typedef typename K::S S;
    typedef typename K::A V;
    enum { PLAIN = 1 };  // a scalar: as many registers stored as widened
    static __device__ __forceinline__ V ld(S s) { return K::ld(s); }
    static __device__ __forceinline__ S st(V v) { return K::st(v); }
};

// The value sources of the fused level 0: `key` (staged per entry),
// `load` (what a batch holds of an entry's column vector j, a `Raw`) and
// `make` (its value V from that). A source made with `Lazy` holds its
// stored operands in a batch and makes the values as they are added (for
// half storage where they take fewer registers than the f32 values: the
// stored vector, the row and its weight); otherwise `load` makes the value
// at once and `make` passes it on (f32, f64: the plain kernels).
template <bool LAZY, typename Stored, typename V>
struct Lazy;
template <typename Stored, typename V>
struct Lazy<true, Stored, V> {
    typedef Stored Raw;
    template <typename Src>
    static __device__ __forceinline__ Raw hold(const Src&, Stored s) { return s; }
    template <typename Src>
    static __device__ __forceinline__ V make(const Src& src, Raw r) { return src.value_of(r); }
};
template <typename Stored, typename V>
struct Lazy<false, Stored, V> {
    typedef V Raw;
    template <typename Src>
    static __device__ __forceinline__ Raw hold(const Src& src, Stored s) { return src.value_of(s); }
    template <typename Src>
    static __device__ __forceinline__ V make(const Src&, Raw r) { return r; }
};

// segment max and sum0, level 0: the stored value of the entry.
template <typename IO>
struct ReadSrc {
    typedef u32 Key;
    typedef typename IO::V V;
    typedef Lazy<!IO::PLAIN, typename IO::S, V> L;
    typedef typename L::Raw Raw;
    const typename IO::S* __restrict__ vals;
    u64 W;
    __device__ __forceinline__ Key key(u32 e) const { return e; }
    __device__ __forceinline__ V value_of(typename IO::S s) const { return IO::ld(s); }
    __device__ __forceinline__ Raw load(Key e, u64, u64 j) const {
        return L::hold(*this, __ldg(vals + (u64)e * W + j));
    }
    __device__ __forceinline__ V make(Raw r) const { return L::make(*this, r); }
};

template <typename S>
struct Pair {
    S a, b;
};

// softmax backward: alpha[e] * grad[e], componentwise (made at once: two
// stored vectors take as many registers as their product's f32 values).
template <typename IO>
struct SoftmaxBwd {
    typedef u32 Key;
    typedef typename IO::V V;
    typedef Lazy<false, Pair<typename IO::S>, V> L;
    typedef typename L::Raw Raw;
    const typename IO::S* __restrict__ alpha;
    const typename IO::S* __restrict__ g;
    u64 W;
    __device__ __forceinline__ Key key(u32 e) const { return e; }
    __device__ __forceinline__ Raw load(Key e, u64, u64 j) const {
        Pair<typename IO::S> ag;
        ag.a = __ldg(alpha + (u64)e * W + j);
        ag.b = __ldg(g + (u64)e * W + j);
        return L::hold(*this, ag);
    }
    __device__ __forceinline__ V make(Raw r) const { return L::make(*this, r); }
    __device__ __forceinline__ V value_of(Pair<typename IO::S> ag) const {
        const V av = IO::ld(ag.a);
        const V gv = IO::ld(ag.b);
        V r;
#pragma unroll
        for (int i = 0; i < VecT<V>::N; ++i) comps(r)[i] = rmul(comps(av)[i], comps(gv)[i]);
        return r;
    }
};

struct EntryRow {
    u32 e;
    u32 g;
};

template <typename S, typename WS>
struct RowWeight {
    S x;
    WS w;
};

// gather_scale_scatter: x[gather[e]] * w[e, head of the vector].
template <typename IO>
struct GatherScale {
    typedef EntryRow Key;
    typedef typename IO::V V;
    typedef typename IO::T T;
    typedef RowWeight<typename IO::S, typename IO::WS> Stored;
    typedef Lazy<!IO::PLAIN, Stored, V> L;
    typedef typename L::Raw Raw;
    const typename IO::S* __restrict__ x;
    const u32* __restrict__ gather;
    const typename IO::WS* __restrict__ w;
    u64 W;
    u64 heads;
    u64 vecs_per_head;
    __device__ __forceinline__ Key key(u32 e) const {
        EntryRow k;
        k.e = e;
        k.g = __ldg(gather + e);
        return k;
    }
    __device__ __forceinline__ Raw load(Key k, u64, u64 j) const {
        Stored xw;
        xw.x = __ldg(x + (u64)k.g * W + j);
        xw.w = __ldg(w + (u64)k.e * heads + j / vecs_per_head);
        return L::hold(*this, xw);
    }
    __device__ __forceinline__ V make(Raw r) const { return L::make(*this, r); }
    __device__ __forceinline__ V value_of(Stored xw) const {
        const V xv = IO::ld(xw.x);
        const T s = IO::ld1(xw.w);
        V r;
#pragma unroll
        for (int i = 0; i < VecT<V>::N; ++i) comps(r)[i] = rmul(comps(xv)[i], s);
        return r;
    }
};

// The fused level-0 kernels are built for RTX_FUSED_MIN_BLOCKS resident blocks
// per SM (registers capped accordingly): their chunks are short dependent load
// chains, so their speed is the number of chains in flight. At 4 blocks (64
// registers) the 16-byte-vector forms spill 80-170 bytes, and still ran the
// batch-8 HetGAT step faster on the H200 than at 3 or 2 (src/abi.rs).
#define RTX_FUSED_ARGS                                                                      \
    const u32 *__restrict__ pos, const u32 *__restrict__ wfirst, const u32 *__restrict__ cstart, \
        const u32 *__restrict__ crow, const u32 *__restrict__ cslot, u64 nchunks, u64 W,    \
        u32 lanes_log2

// Each over stored vectors S (IO: how they are read and rounded), scratch
// `next` of A (the scalar computed in: float for half storage) holding
// IO::V vectors. sum0 and gather_scale_sum0 store a row's sum to dst as S (rounded once
// for half storage), softmax_bwd_sum0 keeps it in A: the softmax backward's sums are
// scratch. ADD: a row's sum is added to what dst holds (sum0a, index_add's
// windowed level 0), else stored as `0 + sum`.
#define RTX_SUM0(NAME, ADD, S, A, IO)                                                       \
    extern "C" __global__ void __launch_bounds__(RTX_BLOCK, RTX_FUSED_MIN_BLOCKS)           \
        NAME(const S* __restrict__ vals, RTX_FUSED_ARGS, S* __restrict__ dst,               \
             A* __restrict__ next) {                                                        \
        ReadSrc<IO> s{vals, W};                                                             \
        fused_level0<false, ADD, IO>(s, pos, wfirst, cstart, crow, cslot, nchunks, W,       \
                                     lanes_log2, dst, reinterpret_cast<IO::V*>(next));      \
    }
#define RTX_SOFTMAX_BWD_SUM0(NAME, S, A, IO)                                                            \
    extern "C" __global__ void __launch_bounds__(RTX_BLOCK, RTX_FUSED_MIN_BLOCKS)           \
        NAME(const S* __restrict__ alpha, const S* __restrict__ g, RTX_FUSED_ARGS,          \
             A* __restrict__ dst, A* __restrict__ next) {                                   \
        SoftmaxBwd<IO> s{alpha, g, W};                                                      \
        fused_level0<false, false, IoSame<IO::V>>(s, pos, wfirst, cstart, crow, cslot, nchunks, \
                                                  W, lanes_log2, reinterpret_cast<IO::V*>(dst), \
                                                  reinterpret_cast<IO::V*>(next));          \
    }
#define RTX_GATHER_SCALE_SUM0(NAME, S, WT, A, IO)                                                        \
    extern "C" __global__ void __launch_bounds__(RTX_BLOCK, RTX_FUSED_MIN_BLOCKS)           \
        NAME(const S* __restrict__ x, const u32* __restrict__ gather,                       \
             const WT* __restrict__ w, u64 heads, u64 vecs_per_head,                        \
             RTX_FUSED_ARGS, S* __restrict__ dst, A* __restrict__ next) {                   \
        GatherScale<IO> s{x, gather, w, W, heads, vecs_per_head};                           \
        fused_level0<false, false, IO>(s, pos, wfirst, cstart, crow, cslot, nchunks, W,     \
                                       lanes_log2, dst, reinterpret_cast<IO::V*>(next));    \
    }
// segmax0_*: level 0 of a segment max over the element kind K, keys staged
// (levels past it: segmax).
#define RTX_SEGMAX0(NAME, T, A, K)                                                          \
    extern "C" __global__ void __launch_bounds__(RTX_BLOCK, RTX_FUSED_MIN_BLOCKS)           \
        NAME(const T* __restrict__ vals, RTX_FUSED_ARGS, T* __restrict__ dst,               \
             A* __restrict__ next) {                                                        \
        ReadSrc<IoKind<K>> s{vals, W};                                                      \
        fused_level0<true, false, IoKind<K>>(s, pos, wfirst, cstart, crow, cslot, nchunks,  \
                                             W, lanes_log2, dst, next);                     \
    }
// @kernels RTX_SEGMAX0

typedef IoSame<float4> IoF32x4;
typedef IoSame<float2> IoF32x2;
typedef IoSame<float> IoF32x1;
typedef IoSame<double2> IoF64x2;
typedef IoSame<double> IoF64x1;
typedef IoHalf<Bf16, bf16x8, f32x8> IoBf16x8;
typedef IoHalf<Bf16, bf16x4, float4> IoBf16x4;
typedef IoHalf<Bf16, bf16x2, float2> IoBf16x2;
typedef IoHalf<Bf16, bf16, float> IoBf16x1;
typedef IoHalf<F16, f16x8, f32x8> IoF16x8;
typedef IoHalf<F16, f16x4, float4> IoF16x4;
typedef IoHalf<F16, f16x2, float2> IoF16x2;
typedef IoHalf<F16, f16, float> IoF16x1;

// {sum0,sum0a,softmax_bwd_sum0,gather_scale_sum0}_{type}x{lanes}: level 0 of the model's segment
// sums of stored values (segment_sum, the softmax's denominators), of
// index_add in the windowed form (sum0a: small plans of narrow rows, whose
// time is the longest chunk's chain; index.cu's scatter0 takes the others),
// of the softmax backward's sums and of gather_scale_scatter; the vector
// types as index.cu's (S stored, WT its scalar, A the scalar computed in).
// @kernels RTX_SUM0
// @kernels RTX_SOFTMAX_BWD_SUM0
// @kernels RTX_GATHER_SCALE_SUM0

// The softmax's elementwise passes, a thread per element, over an element
// kind K (model.cuh): stored tensors are K::S, read through K::ld (the
// exact widening); the numerators and the sums are K::A (f32 for half
// storage, as the f32 route keeps them); each output is rounded once (K::st).
// For float and double every K member is the identity.

// ex[e, j] = exp(x[e, j] - m[row, j]), row = rowof[e]: the softmax's numerators,
// one parallel pass (the sums then add stored values, like a scatter). m is
// the segment max as stored (exact in any precision).
template <typename K>
__device__ __forceinline__ void softmax_exp_k(const typename K::S* __restrict__ x,
                                              const typename K::S* __restrict__ m,
                                              const u32* __restrict__ rowof,
                                              typename K::A* __restrict__ out, u64 e, u64 f) {
    const u64 total = e * f;
    for (u64 t = thread_id(); t < total; t += grid_stride()) {
        const u64 p = t / f, j = t - p * f;
        const u64 r = (u64)__ldg(rowof + p) * f + j;
        out[t] = rexp(rsub(K::ld(x[t]), K::ld(m[r])));
    }
}
#define RTX_SOFTMAX_EXP(NAME, T, A, K)                                                      \
    extern "C" __global__ void __launch_bounds__(RTX_BLOCK)                                 \
        NAME(const T* __restrict__ x, const T* __restrict__ m, const u32* __restrict__ rowof, \
             A* __restrict__ out, u64 e, u64 f) {                                           \
        softmax_exp_k<K>(x, m, rowof, out, e, f);                                           \
    }
// @kernels RTX_SOFTMAX_EXP

// alpha[e, j] = ex[e, j] / s[row, j], row = rowof[e]: the last step of the
// softmax composition.
template <typename K>
__device__ __forceinline__ void softmax_div_k(const typename K::A* __restrict__ ex,
                                              const typename K::A* __restrict__ s,
                                              const u32* __restrict__ rowof,
                                              typename K::S* __restrict__ out, u64 e, u64 f) {
    const u64 total = e * f;
    for (u64 t = thread_id(); t < total; t += grid_stride()) {
        const u64 p = t / f, j = t - p * f;
        const u64 r = (u64)__ldg(rowof + p) * f + j;
        out[t] = K::st(rdiv(ex[t], s[r]));
    }
}
#define RTX_SOFTMAX_DIV(NAME, T, A, K)                                                      \
    extern "C" __global__ void __launch_bounds__(RTX_BLOCK)                                 \
        NAME(const A* __restrict__ ex, const A* __restrict__ s, const u32* __restrict__ rowof, \
             T* __restrict__ out, u64 e, u64 f) {                                           \
        softmax_div_k<K>(ex, s, rowof, out, e, f);                                          \
    }
// @kernels RTX_SOFTMAX_DIV

// out[e, j] = alpha[e, j] * (g[e, j] - s[row, j]), row = rowof[e] (s: the
// sums of alpha * g, kept in K::A).
template <typename K>
__device__ __forceinline__ void softmax_bwd_k(const typename K::S* __restrict__ alpha,
                                              const typename K::S* __restrict__ g,
                                              const typename K::A* __restrict__ s,
                                              const u32* __restrict__ rowof,
                                              typename K::S* __restrict__ out, u64 e, u64 f) {
    const u64 total = e * f;
    for (u64 t = thread_id(); t < total; t += grid_stride()) {
        const u64 p = t / f, j = t - p * f;
        const u64 r = (u64)__ldg(rowof + p) * f + j;
        out[t] = K::st(rmul(K::ld(alpha[t]), rsub(K::ld(g[t]), s[r])));
    }
}
#define RTX_SOFTMAX_BWD(NAME, T, A, K)                                                      \
    extern "C" __global__ void __launch_bounds__(RTX_BLOCK)                                 \
        NAME(const T* __restrict__ alpha, const T* __restrict__ g, const A* __restrict__ s, \
             const u32* __restrict__ rowof, T* __restrict__ out, u64 e, u64 f) {            \
        softmax_bwd_k<K>(alpha, g, s, rowof, out, e, f);                                    \
    }
// @kernels RTX_SOFTMAX_BWD
