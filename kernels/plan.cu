// Scatter plans built on the device, bit for bit what the host builds:
// rtx-backend's IndexPlan (the positions of an index list stably sorted by
// destination row, with the row offsets) and the canonical chunk levels of
// crates/rtx-backend-cuda/src/levels.rs that drive index.cu's scatter kernels.
// Also the device producers of index lists (the anchors' generator, repeats,
// shifted copies) and the range check of a device list.
//
// The sort is a least-significant-digit radix sort of (key = index, value =
// position) pairs, at most RTX_PLAN_DIGIT_BITS bits per pass, each pass
// stable, so positions of one row stay increasing: the host's stable counting
// sort exactly. A pass is three steps: per-tile digit counts (plan_hist), an
// exclusive scan of the counts in digit-major order (scan_*), and the stable
// placement (plan_rank), which ranks each tile's items in order with warp
// match masks. The row offsets are lower bounds in the sorted keys
// (plan_offsets); a list known to be sorted already (a sampled hop's
// destinations, repeats) skips the passes: its positions are the identity,
// which plan_offsets writes. Level 0's chunk tables come from a scan over
// the rows of (chunks, slots, multi-chunk rows) (lvl0_*), the levels past
// it from one block that walks the short list of rows still having several
// chunks (plan_levels).
//
// No float arithmetic. Atomics only update integer counts, maxima and minima,
// whose values do not depend on the order in which the atomics land, so every
// plan is a function of the index list alone.
#include "common.cuh"

#define PLAN_WARPS (RTX_BLOCK / 32)
#define PLAN_RADIX (1u << RTX_PLAN_DIGIT_BITS)
#define PLAN_TILE ((u64)RTX_BLOCK * RTX_PLAN_ITEMS)

// Words of the info block the host reads back once per build (u64 each).
// See src/device/plan_build.rs (`Info`), which names the same offsets.
#define INFO_BAD 0      // ~p for the first position p whose index >= bound; 0: none
#define INFO_MAX 1      // largest index
#define INFO_LEVELS 2   // number of levels
#define INFO_M 3        // rows of level 1 with several chunks (scratch)
#define INFO_OVERFLOW 4 // nonzero when a plan would need more levels than there is room for
#define INFO_CHUNKS 8   // + l: chunks of level l
#define INFO_VALUES 16  // + l: values level l reads (l >= 1)

// ---- warp and block reductions and scans ----

// A row of level 0: its chunks, the slots it takes in level 1, and 1 if it
// has several chunks (summed over rows by the level-0 scans).
struct Level0Counts {
    u32 a, b, c;
};
__device__ __forceinline__ Level0Counts operator+(Level0Counts x, Level0Counts y) {
    return Level0Counts{x.a + y.a, x.b + y.b, x.c + y.c};
}
__device__ __forceinline__ u32 shfl_up(u32 v, u32 d) { return __shfl_up_sync(0xffffffffu, v, d); }
__device__ __forceinline__ Level0Counts shfl_up(Level0Counts v, u32 d) {
    return Level0Counts{shfl_up(v.a, d), shfl_up(v.b, d), shfl_up(v.c, d)};
}
__device__ __forceinline__ u32 zero_of(u32) { return 0; }
__device__ __forceinline__ Level0Counts zero_of(Level0Counts) { return Level0Counts{0, 0, 0}; }

// Exclusive scan of one value per thread across the block (all threads must
// call it); `*total` receives the block's sum. Integer sums: exact in any order.
template <typename T>
__device__ __forceinline__ T block_exclusive_scan(T v, T* total) {
    __shared__ T warp_tot[PLAN_WARPS];
    const u32 lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    T inc = v;
#pragma unroll
    for (u32 d = 1; d < 32; d <<= 1) {
        T o = shfl_up(inc, d);
        if (lane >= d) inc = inc + o;
    }
    if (lane == 31) warp_tot[warp] = inc;
    __syncthreads();
    T before = zero_of(v), all = zero_of(v);
#pragma unroll
    for (u32 w = 0; w < PLAN_WARPS; ++w) {
        const T t = warp_tot[w];
        if (w < warp) before = before + t;
        all = all + t;
    }
    __syncthreads();  // warp_tot is reused by the next call
    *total = all;
    // inc - v, written as a sum to need no subtraction operator
    T excl = shfl_up(inc, 1);
    if (lane == 0) excl = zero_of(v);
    return before + excl;
}

__device__ __forceinline__ u64 warp_max_u64(u64 v) {
#pragma unroll
    for (u32 d = 16; d > 0; d >>= 1) {
        const u64 o = __shfl_xor_sync(0xffffffffu, v, d);
        v = o > v ? o : v;
    }
    return v;
}

// ---- range check and largest index ----

// info[INFO_MAX] = max(idx); with `check`, info[INFO_BAD] = ~p for the first p
// with idx[p] >= bound (0 when there is none). info must start zeroed.
__device__ __forceinline__ void index_bounds_of(const u32* __restrict__ idx, u64 n, u64 bound,
                                                u32 check, u64* info) {
    u64 mx = 0, bad = 0;
    for (u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (u64)gridDim.x * blockDim.x) {
        const u32 k = __ldg(idx + i);
        mx = k > mx ? k : mx;
        if (check && (u64)k >= bound && bad == 0) bad = ~i;  // the thread's first bad
    }
    mx = warp_max_u64(mx);
    bad = warp_max_u64(bad);  // ~p is largest for the smallest p
    if ((threadIdx.x & 31) == 0) {
        if (mx) atomicMax(info + INFO_MAX, (unsigned long long)mx);
        if (bad) atomicMax(info + INFO_BAD, (unsigned long long)bad);
    }
}
extern "C" __global__ void __launch_bounds__(RTX_BLOCK)
    index_bounds(const u32* __restrict__ idx, u64 n, u64 bound, u32 check, u64* info) {
    index_bounds_of(idx, n, bound, check, info);
}

// ---- one radix pass ----

// counts[d * ntiles + t] = items of tile t whose digit is d. A tile of the
// sort is `items` rounds of RTX_BLOCK consecutive items (fewer rounds for
// short lists: more tiles, so more blocks).
__device__ __forceinline__ void plan_hist_of(const u32* __restrict__ keys, u64 n, u32 shift,
                                             u32 dbits, u64 ntiles, u32 items,
                                             u32* __restrict__ counts) {
    __shared__ u32 h[PLAN_RADIX];
    const u32 radix = 1u << dbits, mask = radix - 1;
    for (u64 t = blockIdx.x; t < ntiles; t += gridDim.x) {
        for (u32 d = threadIdx.x; d < radix; d += blockDim.x) h[d] = 0;
        __syncthreads();
        const u64 base = t * RTX_BLOCK * items;
#pragma unroll 4
        for (u32 k = 0; k < items; ++k) {
            const u64 i = base + (u64)k * RTX_BLOCK + threadIdx.x;
            if (i < n) atomicAdd(&h[(__ldg(keys + i) >> shift) & mask], 1u);
        }
        __syncthreads();
        for (u32 d = threadIdx.x; d < radix; d += blockDim.x) counts[(u64)d * ntiles + t] = h[d];
        __syncthreads();
    }
}
extern "C" __global__ void __launch_bounds__(RTX_BLOCK)
    plan_hist(const u32* __restrict__ keys, u64 n, u32 shift, u32 dbits, u64 ntiles, u32 items,
              u32* __restrict__ counts) {
    plan_hist_of(keys, n, shift, dbits, ntiles, items, counts);
}

// Stable placement: item i of tile t (digit d) goes to
//   offs[d * ntiles + t] + (items of tile t before i with digit d).
// A tile is taken in `items` rounds of RTX_BLOCK consecutive items;
// in a round, lanes with the same digit find each other with a match mask,
// warps add the counts of the warps before them, and `base` carries each
// digit's running position to the next round. vals == 0: the value of item i
// is i itself (the first pass).
__device__ __forceinline__ void plan_rank_of(const u32* __restrict__ keys,
                                             const u32* __restrict__ vals, u64 n, u32 shift,
                                             u32 dbits, u64 ntiles, u32 items,
                                             const u32* __restrict__ offs,
                                             u32* __restrict__ keys_out,
                                             u32* __restrict__ vals_out) {
    __shared__ u32 base[PLAN_RADIX];
    __shared__ unsigned char wh[PLAN_WARPS][PLAN_RADIX];
    const u32 radix = 1u << dbits, mask = radix - 1;
    const u32 lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const u32 lt = (1u << lane) - 1;
    for (u32 d = threadIdx.x; d < radix; d += blockDim.x)
        for (u32 w = 0; w < PLAN_WARPS; ++w) wh[w][d] = 0;
    for (u64 t = blockIdx.x; t < ntiles; t += gridDim.x) {
        for (u32 d = threadIdx.x; d < radix; d += blockDim.x) base[d] = __ldg(offs + (u64)d * ntiles + t);
        __syncthreads();
        const u64 tile0 = t * RTX_BLOCK * items;
        for (u32 k = 0; k < items; ++k) {
            const u64 i = tile0 + (u64)k * RTX_BLOCK + threadIdx.x;
            const bool valid = i < n;
            const u32 key = valid ? __ldg(keys + i) : 0;
            const u32 val = valid ? (vals ? __ldg(vals + i) : (u32)i) : 0;
            const u32 d = valid ? (key >> shift) & mask : 0xffffffffu;
            const u32 peers = __match_any_sync(0xffffffffu, d);
            const u32 rank = __popc(peers & lt);
            const bool leader = (peers & lt) == 0;
            if (valid && leader) wh[warp][d] = (unsigned char)__popc(peers);
            __syncthreads();
            u32 before = 0, total = 0;
            if (valid) {
#pragma unroll
                for (u32 w = 0; w < PLAN_WARPS; ++w) {
                    const u32 c = wh[w][d];
                    if (w < warp) before += c;
                    total += c;
                }
                const u32 p = base[d] + before + rank;
                keys_out[p] = key;
                vals_out[p] = val;
            }
            __syncthreads();
            if (valid && leader) {
                wh[warp][d] = 0;
                if (before == 0) base[d] += total;  // the first warp holding d
            }
            __syncthreads();
        }
    }
}
extern "C" __global__ void __launch_bounds__(RTX_BLOCK)
    plan_rank(const u32* __restrict__ keys, const u32* __restrict__ vals, u64 n, u32 shift,
              u32 dbits, u64 ntiles, u32 items, const u32* __restrict__ offs,
              u32* __restrict__ keys_out, u32* __restrict__ vals_out) {
    plan_rank_of(keys, vals, n, shift, dbits, ntiles, items, offs, keys_out, vals_out);
}

// ---- exclusive scans (u32 values; level 0's triples) ----

struct PlainLoad {
    const u32* __restrict__ in;
    __device__ __forceinline__ u32 operator()(u64 i) const { return __ldg(in + i); }
};

// Row r of level 0: (chunks, slots it takes in level 1, 1 if it has several chunks).
struct Lvl0Load {
    const u32* __restrict__ off;
    __device__ __forceinline__ Level0Counts operator()(u64 r) const {
        const u32 k = __ldg(off + r + 1) - __ldg(off + r);
        const u32 c = (k + RTX_CANONICAL_BLOCK - 1) / RTX_CANONICAL_BLOCK;
        return c > 1 ? Level0Counts{c, c, 1} : Level0Counts{c, 0, 0};
    }
};

// sums[t] = sum of tile t of PLAN_TILE values (thread j sums values j*ITEMS.. of it).
template <typename T, typename Load>
__device__ __forceinline__ void scan_sums(Load load, u64 n, T* __restrict__ sums) {
    const u64 ntiles = (n + PLAN_TILE - 1) / PLAN_TILE;
    for (u64 t = blockIdx.x; t < ntiles; t += gridDim.x) {
        const u64 first = t * PLAN_TILE + (u64)threadIdx.x * RTX_PLAN_ITEMS;
        T s = zero_of(T{});
        for (u32 k = 0; k < RTX_PLAN_ITEMS; ++k)
            if (first + k < n) s = s + load(first + k);
        T tot;
        block_exclusive_scan(s, &tot);
        if (threadIdx.x == 0) sums[t] = tot;
    }
}

// out[i] = base + exclusive prefix of i within tile t, for the items of
// tile t; returns the tile's sum (every thread).
template <typename T, typename Load>
__device__ __forceinline__ T scan_tile(Load load, u64 n, u64 t, T base, T* __restrict__ out) {
    const u64 first = t * PLAN_TILE + (u64)threadIdx.x * RTX_PLAN_ITEMS;
    T v[RTX_PLAN_ITEMS];
    T s = zero_of(T{});
#pragma unroll
    for (u32 k = 0; k < RTX_PLAN_ITEMS; ++k) {
        v[k] = first + k < n ? load(first + k) : zero_of(T{});
        s = s + v[k];
    }
    T tot;
    T run = base + block_exclusive_scan(s, &tot);
#pragma unroll
    for (u32 k = 0; k < RTX_PLAN_ITEMS; ++k) {
        if (first + k < n) out[first + k] = run;
        run = run + v[k];
    }
    return tot;
}

// out[i] = sums[t] + exclusive prefix of i within its tile t.
template <typename T, typename Load>
__device__ __forceinline__ void scan_apply(Load load, u64 n, const T* __restrict__ sums,
                                           T* __restrict__ out) {
    const u64 ntiles = (n + PLAN_TILE - 1) / PLAN_TILE;
    for (u64 t = blockIdx.x; t < ntiles; t += gridDim.x) scan_tile(load, n, t, sums[t], out);
}

// Exclusive scan of the tile sums in place, by one block; the grand total
// goes to *total (when total != 0).
template <typename T>
__device__ __forceinline__ void scan_spine(T* __restrict__ sums, u64 ntiles, T* total) {
    T carry = zero_of(T{});
    for (u64 b = 0; b < ntiles; b += RTX_BLOCK) {
        const u64 i = b + threadIdx.x;
        const T v = i < ntiles ? sums[i] : zero_of(T{});
        T tot;
        const T e = block_exclusive_scan(v, &tot);
        if (i < ntiles) sums[i] = carry + e;
        carry = carry + tot;
    }
    if (threadIdx.x == 0 && total) *total = carry;
}

// The same exclusive scan by one block, tile after tile, carrying the sum
// of the tiles before (scan_sums, scan_spine and scan_apply in one launch,
// for scans of a few tiles); the grand total goes to *total (when total !=
// 0). Integer sums: the same values as the three launches give.
template <typename T, typename Load>
__device__ __forceinline__ void scan_single(Load load, u64 n, T* __restrict__ out, T* total) {
    const u64 ntiles = (n + PLAN_TILE - 1) / PLAN_TILE;
    T carry = zero_of(T{});
    for (u64 t = 0; t < ntiles; ++t) carry = carry + scan_tile(load, n, t, carry, out);
    if (threadIdx.x == 0 && total) *total = carry;
}

extern "C" __global__ void __launch_bounds__(RTX_BLOCK)
    scan_sums_u32(const u32* __restrict__ in, u64 n, u32* __restrict__ sums) {
    scan_sums<u32>(PlainLoad{in}, n, sums);
}
extern "C" __global__ void __launch_bounds__(RTX_BLOCK)
    scan_spine_u32(u32* __restrict__ sums, u64 ntiles) {
    scan_spine<u32>(sums, ntiles, (u32*)0);
}
extern "C" __global__ void __launch_bounds__(RTX_BLOCK)
    scan_apply_u32(const u32* __restrict__ in, u64 n, const u32* __restrict__ sums,
                   u32* __restrict__ out) {
    scan_apply<u32>(PlainLoad{in}, n, sums, out);
}

extern "C" __global__ void __launch_bounds__(RTX_BLOCK)
    scan_single_u32(const u32* __restrict__ in, u64 n, u32* __restrict__ out) {
    scan_single<u32>(PlainLoad{in}, n, out, (u32*)0);
}

// ---- row offsets and level 0 ----

// off[r] = number of sorted keys below r, for r in [0, rows]: IndexPlan's offsets.
// With `iota` (not null: the list itself is sorted, so its stable sort is the
// identity and skeys is the list), also iota[i] = i for i < n: the positions.
__device__ __forceinline__ void plan_offsets_of(const u32* __restrict__ skeys, u64 n, u64 rows,
                                                u32* __restrict__ off, u32* __restrict__ iota) {
    const u64 end = iota && n > rows + 1 ? n : rows + 1;
    for (u64 r = (u64)blockIdx.x * blockDim.x + threadIdx.x; r < end; r += (u64)gridDim.x * blockDim.x) {
        if (iota && r < n) iota[r] = (u32)r;
        if (r > rows) continue;
        u64 lo = 0, hi = n;
        while (lo < hi) {
            const u64 mid = (lo + hi) >> 1;
            if ((u64)__ldg(skeys + mid) < r) lo = mid + 1; else hi = mid;
        }
        off[r] = (u32)lo;
    }
}
extern "C" __global__ void __launch_bounds__(RTX_BLOCK)
    plan_offsets(const u32* __restrict__ skeys, u64 n, u64 rows, u32* __restrict__ off,
                 u32* __restrict__ iota) {
    plan_offsets_of(skeys, n, rows, off, iota);
}

extern "C" __global__ void __launch_bounds__(RTX_BLOCK)
    lvl0_sums(const u32* __restrict__ off, u64 rows, Level0Counts* __restrict__ sums) {
    scan_sums<Level0Counts>(Lvl0Load{off}, rows, sums);
}
// The spine of level 0's scan; its total is (chunks of level 0, values of
// level 1, rows of level 1), written to the info block.
__device__ __forceinline__ void lvl0_total(const Level0Counts* total, u64* info) {
    __syncthreads();
    if (threadIdx.x == 0) {
        info[INFO_CHUNKS + 0] = total->a;
        info[INFO_VALUES + 1] = total->b;
        info[INFO_M] = total->c;
    }
}
__device__ __forceinline__ void lvl0_spine_of(Level0Counts* __restrict__ sums, u64 ntiles,
                                              u64* info) {
    __shared__ Level0Counts total;
    scan_spine<Level0Counts>(sums, ntiles, &total);
    lvl0_total(&total, info);
}
extern "C" __global__ void __launch_bounds__(RTX_BLOCK)
    lvl0_spine(Level0Counts* __restrict__ sums, u64 ntiles, u64* info) {
    lvl0_spine_of(sums, ntiles, info);
}
extern "C" __global__ void __launch_bounds__(RTX_BLOCK)
    lvl0_apply(const u32* __restrict__ off, u64 rows, const Level0Counts* __restrict__ sums,
               Level0Counts* __restrict__ out) {
    scan_apply<Level0Counts>(Lvl0Load{off}, rows, sums, out);
}

// lvl0_sums, lvl0_spine and lvl0_apply in one launch (one block; for
// few rows): the scan of the rows' counts and its total in the info block.
__device__ __forceinline__ void lvl0_single_of(const u32* __restrict__ off, u64 rows,
                                               Level0Counts* __restrict__ out, u64* info) {
    __shared__ Level0Counts total;
    scan_single<Level0Counts>(Lvl0Load{off}, rows, out, &total);
    lvl0_total(&total, info);
}
extern "C" __global__ void __launch_bounds__(RTX_BLOCK)
    lvl0_single(const u32* __restrict__ off, u64 rows, Level0Counts* __restrict__ out,
                u64* info) {
    lvl0_single_of(off, rows, out, info);
}

// Level 0's chunk tables, one thread per chunk: chunk c belongs to the last
// row r whose first chunk is <= c. Rows with several chunks are also listed
// for level 1 as (row, first slot, chunks), in row order. The window table
// (levels::window_table: entry b of ceil(n / RTX_WIN) + 1 is the first chunk
// starting at or after b * RTX_WIN, nchunks when none does): chunk c + 1 is
// the first for the windows whose first position lies in (start, end] of
// chunk c, the chunk that ends at n for every window past it, chunk 0 for
// window 0. Chunks are at most RTX_WIN long, so each writes at most one
// entry but the last.
__device__ __forceinline__ void lvl0_fill_of(const u32* __restrict__ off, u64 rows,
                                             const Level0Counts* __restrict__ scan,
                                             const u64* __restrict__ info, u64 n,
                                             u32* __restrict__ cstart, u32* __restrict__ crow,
                                             u32* __restrict__ cslot, u32* __restrict__ list,
                                             u32* __restrict__ wfirst) {
    const u64 windows = (n + RTX_WIN - 1) / RTX_WIN;
    const u64 nchunks = info[INFO_CHUNKS];
    for (u64 c = (u64)blockIdx.x * blockDim.x + threadIdx.x; c < nchunks; c += (u64)gridDim.x * blockDim.x) {
        u64 lo = 0, hi = rows;  // first r with scan[r].a > c
        while (lo < hi) {
            const u64 mid = (lo + hi) >> 1;
            if ((u64)scan[mid].a <= c) lo = mid + 1; else hi = mid;
        }
        const u64 r = lo - 1;
        const Level0Counts s = scan[r];
        const u32 j = (u32)(c - s.a);
        const u32 first = __ldg(off + r);
        const u32 k = __ldg(off + r + 1) - first;
        const u32 chunks = (k + RTX_CANONICAL_BLOCK - 1) / RTX_CANONICAL_BLOCK;
        cstart[c] = first + j * RTX_CANONICAL_BLOCK;
        crow[c] = (u32)r;
        cslot[c] = chunks > 1 ? s.b + j : RTX_FINAL;
        if (chunks > 1 && j == 0) {
            list[3 * (u64)s.c] = (u32)r;
            list[3 * (u64)s.c + 1] = s.b;
            list[3 * (u64)s.c + 2] = chunks;
        }
        if (c == 0) {
            cstart[nchunks] = (u32)n;
            wfirst[0] = 0;
        }
        const u64 s0 = first + (u64)j * RTX_CANONICAL_BLOCK;
        const u64 e0 = min(s0 + RTX_CANONICAL_BLOCK, (u64)first + k);
        for (u64 b = s0 / RTX_WIN + 1; b <= windows && (b * RTX_WIN <= e0 || e0 == n); ++b)
            wfirst[b] = (u32)(c + 1);
    }
}
extern "C" __global__ void __launch_bounds__(RTX_BLOCK)
    lvl0_fill(const u32* __restrict__ off, u64 rows, const Level0Counts* __restrict__ scan,
              const u64* __restrict__ info, u64 n, u32* __restrict__ cstart,
              u32* __restrict__ crow, u32* __restrict__ cslot, u32* __restrict__ list,
              u32* __restrict__ wfirst) {
    lvl0_fill_of(off, rows, scan, info, n, cstart, crow, cslot, list, wfirst);
}

// ---- the levels past 0 ----

// Level l >= 1 of an n-entry plan has at most vb(l) = (n >> 7l) + 1 values
// (a row of k > 256 values has ceil(k / 256) < k / 128 chunks) and as many
// chunks; its tables sit in `hi` at hi_offset(l), as start[vb + 1], row[vb],
// slot[vb]. src/device/plan_build.rs computes the same layout.
__device__ __forceinline__ u64 hi_vb(u64 n, u32 l) { return (n >> (7 * l)) + 1; }
__device__ __forceinline__ u64 hi_offset(u64 n, u32 l) {
    u64 o = 0;
    for (u32 m = 1; m < l; ++m) o += 3 * hi_vb(n, m) + 1;
    return o;
}

// One block: for l = 1, 2, ... while rows remain, cuts each listed row
// (row, first value, values) into chunks exactly as level 0 does, lists the
// rows that still have several chunks, and records each level's counts.
__device__ __forceinline__ void plan_levels_of(u32* __restrict__ list_a, u32* __restrict__ list_b,
                                               u32* __restrict__ hi, u64 n, u64* info) {
    u64 m = info[INFO_M];
    u32 level = 1;
    u32* in = list_a;
    u32* out = list_b;
    while (m > 0) {
        if (level > RTX_PLAN_HI_LEVELS) {
            if (threadIdx.x == 0) info[INFO_OVERFLOW] = 1;
            return;
        }
        const u64 vb = hi_vb(n, level);
        u32* cstart = hi + hi_offset(n, level);
        u32* crow = cstart + vb + 1;
        u32* cslot = crow + vb;
        Level0Counts carry = Level0Counts{0, 0, 0};
        for (u64 b = 0; b < m; b += RTX_BLOCK) {
            const u64 j = b + threadIdx.x;
            u32 row = 0, first = 0, k = 0;
            if (j < m) {
                row = in[3 * j];
                first = in[3 * j + 1];
                k = in[3 * j + 2];
            }
            const u32 chunks = (k + RTX_CANONICAL_BLOCK - 1) / RTX_CANONICAL_BLOCK;
            const Level0Counts v =
                chunks > 1 ? Level0Counts{chunks, chunks, 1} : Level0Counts{chunks, 0, 0};
            Level0Counts tot;
            const Level0Counts e = carry + block_exclusive_scan(v, &tot);
            for (u32 c = 0; c < chunks; ++c) {
                cstart[e.a + c] = first + c * RTX_CANONICAL_BLOCK;
                crow[e.a + c] = row;
                cslot[e.a + c] = chunks > 1 ? e.b + c : RTX_FINAL;
            }
            if (chunks > 1) {
                out[3 * (u64)e.c] = row;
                out[3 * (u64)e.c + 1] = e.b;
                out[3 * (u64)e.c + 2] = chunks;
            }
            carry = carry + tot;
        }
        const u64 values = info[INFO_VALUES + level];
        if (threadIdx.x == 0) {
            cstart[carry.a] = (u32)values;
            info[INFO_CHUNKS + level] = carry.a;
            if (carry.b > 0) info[INFO_VALUES + level + 1] = carry.b;
        }
        m = carry.c;
        u32* t = in;
        in = out;
        out = t;
        ++level;
        __syncthreads();  // the next level reads what this one listed
    }
    if (threadIdx.x == 0) info[INFO_LEVELS] = level;
}
extern "C" __global__ void __launch_bounds__(RTX_BLOCK)
    plan_levels(u32* __restrict__ list_a, u32* __restrict__ list_b, u32* __restrict__ hi, u64 n,
                u64* info) {
    plan_levels_of(list_a, list_b, hi, n, info);
}

// ---- a batch of builds in one set of launches ----

// One build of a batch (the `*_many` kernels: blockIdx.y picks the build,
// whose blocks stride over its own tiles; a build a phase has no work for
// returns at once). Every field is a u64, addresses as integers, so the
// host writes it as words (indices/batch.rs; layout.rs's PLAN_ITEM_WORDS
// counts them, checked against this struct by its tests). The
// kernels run the bodies of the one-build kernels above on these fields,
// so a plan built in a batch is the same bits as one built alone.
struct PlanItem {
    u64 idx, n;                         // the list
    u64 check, bound;                   // check != 0: range-check against bound
    u64 info;                           // u64[INFO_WORDS], zeroed
    u64 sort_rows, passes, dbits, ntiles, items;
    u64 single_counts, single_rows;     // the scans fit one block
    u64 counts, offs, sums;             // the radix pass's counts and their scan
    u64 keys[2], vals[2], positions;
    u64 off, sums3, scan3, list_a, list_b;
    u64 start0, row0, slot0, hi, wfirst;
};
#define PTR(T, v) ((T*)(v))

extern "C" __global__ void __launch_bounds__(RTX_BLOCK)
    index_bounds_many(const PlanItem* __restrict__ items) {
    const PlanItem& it = items[blockIdx.y];
    if (it.check) index_bounds_of(PTR(const u32, it.idx), it.n, it.bound, 1, PTR(u64, it.info));
}

// The keys and values pass `pass` reads and writes (radix_sort in build.rs).
struct PassIo {
    const u32* kin;
    const u32* vin;
    u32* kout;
    u32* vout;
};
__device__ __forceinline__ PassIo pass_io(const PlanItem& it, u32 pass) {
    PassIo io;
    io.kin = pass == 0 ? PTR(const u32, it.idx) : PTR(const u32, it.keys[(pass - 1) % 2]);
    io.vin = pass == 0 ? (const u32*)0 : PTR(const u32, it.vals[(pass - 1) % 2]);
    io.kout = PTR(u32, it.keys[pass % 2]);
    io.vout = pass + 1 == it.passes ? PTR(u32, it.positions) : PTR(u32, it.vals[pass % 2]);
    return io;
}
__device__ __forceinline__ u64 pass_counts(const PlanItem& it) { return (1ull << it.dbits) * it.ntiles; }

extern "C" __global__ void __launch_bounds__(RTX_BLOCK)
    plan_hist_many(const PlanItem* __restrict__ items, u32 pass) {
    const PlanItem& it = items[blockIdx.y];
    if (pass >= it.passes) return;
    plan_hist_of(pass_io(it, pass).kin, it.n, pass * (u32)it.dbits, (u32)it.dbits, it.ntiles,
                 (u32)it.items, PTR(u32, it.counts));
}

// The exclusive scan of a pass's counts into offs: one block where the
// counts fit a few tiles (in this launch; the spine and apply launches then
// skip the build), else tile sums, spine, apply.
extern "C" __global__ void __launch_bounds__(RTX_BLOCK)
    plan_scan_sums_many(const PlanItem* __restrict__ items, u32 pass) {
    const PlanItem& it = items[blockIdx.y];
    if (pass >= it.passes) return;
    const u64 nc = pass_counts(it);
    if (it.single_counts) {
        if (blockIdx.x == 0)
            scan_single<u32>(PlainLoad{PTR(const u32, it.counts)}, nc, PTR(u32, it.offs), (u32*)0);
    } else {
        scan_sums<u32>(PlainLoad{PTR(const u32, it.counts)}, nc, PTR(u32, it.sums));
    }
}
extern "C" __global__ void __launch_bounds__(RTX_BLOCK)
    plan_scan_spine_many(const PlanItem* __restrict__ items, u32 pass) {
    const PlanItem& it = items[blockIdx.y];
    if (pass >= it.passes || it.single_counts || blockIdx.x != 0) return;
    scan_spine<u32>(PTR(u32, it.sums), (pass_counts(it) + PLAN_TILE - 1) / PLAN_TILE, (u32*)0);
}
extern "C" __global__ void __launch_bounds__(RTX_BLOCK)
    plan_scan_apply_many(const PlanItem* __restrict__ items, u32 pass) {
    const PlanItem& it = items[blockIdx.y];
    if (pass >= it.passes || it.single_counts) return;
    scan_apply<u32>(PlainLoad{PTR(const u32, it.counts)}, pass_counts(it), PTR(const u32, it.sums),
                    PTR(u32, it.offs));
}

extern "C" __global__ void __launch_bounds__(RTX_BLOCK)
    plan_rank_many(const PlanItem* __restrict__ items, u32 pass) {
    const PlanItem& it = items[blockIdx.y];
    if (pass >= it.passes) return;
    const PassIo io = pass_io(it, pass);
    plan_rank_of(io.kin, io.vin, it.n, pass * (u32)it.dbits, (u32)it.dbits, it.ntiles,
                 (u32)it.items, PTR(const u32, it.offs), io.kout, io.vout);
}

extern "C" __global__ void __launch_bounds__(RTX_BLOCK)
    plan_offsets_many(const PlanItem* __restrict__ items) {
    const PlanItem& it = items[blockIdx.y];
    // the last pass's keys: the sorted list; a list sorted already (no
    // passes) is its own sorted keys, its positions the identity
    if (it.passes == 0)
        plan_offsets_of(PTR(const u32, it.idx), it.n, it.sort_rows, PTR(u32, it.off),
                        PTR(u32, it.positions));
    else
        plan_offsets_of(PTR(const u32, it.keys[(it.passes - 1) % 2]), it.n, it.sort_rows,
                        PTR(u32, it.off), (u32*)0);
}

// Level 0's scan over the rows: one block where the rows fit a few tiles,
// else tile sums, spine (its total to the info block), apply.
extern "C" __global__ void __launch_bounds__(RTX_BLOCK)
    lvl0_sums_many(const PlanItem* __restrict__ items) {
    const PlanItem& it = items[blockIdx.y];
    if (it.single_rows) {
        if (blockIdx.x == 0)
            lvl0_single_of(PTR(const u32, it.off), it.sort_rows, PTR(Level0Counts, it.scan3),
                           PTR(u64, it.info));
    } else {
        scan_sums<Level0Counts>(Lvl0Load{PTR(const u32, it.off)}, it.sort_rows,
                                PTR(Level0Counts, it.sums3));
    }
}
extern "C" __global__ void __launch_bounds__(RTX_BLOCK)
    lvl0_spine_many(const PlanItem* __restrict__ items) {
    const PlanItem& it = items[blockIdx.y];
    if (it.single_rows || blockIdx.x != 0) return;
    lvl0_spine_of(PTR(Level0Counts, it.sums3), (it.sort_rows + PLAN_TILE - 1) / PLAN_TILE,
                  PTR(u64, it.info));
}
extern "C" __global__ void __launch_bounds__(RTX_BLOCK)
    lvl0_apply_many(const PlanItem* __restrict__ items) {
    const PlanItem& it = items[blockIdx.y];
    if (it.single_rows) return;
    scan_apply<Level0Counts>(Lvl0Load{PTR(const u32, it.off)}, it.sort_rows,
                             PTR(const Level0Counts, it.sums3), PTR(Level0Counts, it.scan3));
}

extern "C" __global__ void __launch_bounds__(RTX_BLOCK)
    lvl0_fill_many(const PlanItem* __restrict__ items) {
    const PlanItem& it = items[blockIdx.y];
    lvl0_fill_of(PTR(const u32, it.off), it.sort_rows, PTR(const Level0Counts, it.scan3),
                 PTR(const u64, it.info), it.n, PTR(u32, it.start0), PTR(u32, it.row0),
                 PTR(u32, it.slot0), PTR(u32, it.list_a), PTR(u32, it.wfirst));
}

extern "C" __global__ void __launch_bounds__(RTX_BLOCK)
    plan_levels_many(const PlanItem* __restrict__ items) {
    const PlanItem& it = items[blockIdx.y];
    if (blockIdx.x != 0) return;
    plan_levels_of(PTR(u32, it.list_a), PTR(u32, it.list_b), PTR(u32, it.hi), it.n,
                   PTR(u64, it.info));
}
#undef PTR

// ---- producers of device index lists ----

__device__ __forceinline__ u64 splitmix64(u64 seed, u64 i) {
    u64 z = seed + (i + 1) * 0x9E3779B97F4A7C15ull;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

// out[i] = rtx_backend::workload::index(seed, start + i, rows, hub): the
// anchors' generator, bit for bit (plain IEEE products: NVRTC runs with
// --fmad=false, and the truncation is Rust's `as usize`).
extern "C" __global__ void __launch_bounds__(RTX_BLOCK)
    index_random(u32* __restrict__ out, u64 n, u64 seed, u64 start, u64 rows, u32 hub) {
    for (u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (u64)gridDim.x * blockDim.x) {
        double u = (double)(splitmix64(seed, start + i) >> 11) * (1.0 / 9007199254740992.0);
        if (hub) u = __dmul_rn(__dmul_rn(u, u), u);
        u64 r = (u64)__dmul_rn(u, (double)rows);
        const u64 last = rows > 0 ? rows - 1 : 0;
        out[i] = (u32)(r < last ? r : last);
    }
}

// out[i] = offset + i / times: `times` entries per parent, parents from `offset` on.
extern "C" __global__ void __launch_bounds__(RTX_BLOCK)
    index_repeat(u32* __restrict__ out, u64 n, u64 times, u64 offset) {
    for (u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (u64)gridDim.x * blockDim.x)
        out[i] = (u32)(offset + i / times);
}

// out[i] = src[i] + offset (the host checked that no sum passes u32::MAX).
extern "C" __global__ void __launch_bounds__(RTX_BLOCK)
    index_shift(const u32* __restrict__ src, u64 n, u32 offset, u32* __restrict__ out) {
    for (u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (u64)gridDim.x * blockDim.x)
        out[i] = __ldg(src + i) + offset;
}
