// The training ops on the device (rtx_backend::TrainOps): inverted dropout with
// a counter-based mask, the softmax cross-entropy and the regression losses with
// their gradients, and the multi-tensor Adam / AdamW and SGD steps. Each is the
// host reference (crates/rtx-backend/src/ops/train.rs) operation for operation,
// in the same order, with explicit round-to-nearest intrinsics and the portable
// exp / ln of model.cuh (the unit is compiled with --fmad=false), computing in
// the kind's A and rounding once per stored element: the CPU backend's bits.
// Uses plan.cu's splitmix64 (the one translation unit puts plan.cu before this
// file), the anchors' generator of rtx_backend::workload.
#include "common.cuh"
#include "model.cuh"

// ---------------------------------------------------------------- dropout

// Element i is kept iff unit(seed, i) = (splitmix64(seed, i) >> 11) * 2^-53 >= p
// (both exact in double); kept: x * s rounded once; dropped: +0.
template <typename K>
__device__ __forceinline__ void dropout_body(const typename K::S* __restrict__ x,
                                             typename K::S* __restrict__ out, u64 n, double p,
                                             u64 seed, typename K::A s) {
    typedef typename K::A A;
    for (u64 i = thread_id(); i < n; i += grid_stride()) {
        const double u = __dmul_rn((double)(splitmix64(seed, i) >> 11), 1.0 / 9007199254740992.0);
        out[i] = u >= p ? K::st(rmul(K::ld(x[i]), s)) : K::st(A(0));
    }
}

#define RTX_DROPOUT(NAME, T, A, K)                                                          \
    extern "C" __global__ void __launch_bounds__(RTX_BLOCK)                                 \
        NAME(const T* __restrict__ x, T* __restrict__ out, u64 n, double p, u64 seed, A s) { \
        dropout_body<K>(x, out, n, p, seed, s);                                             \
    }
// @kernels RTX_DROPOUT

// ---------------------------------------------------------------- losses

// Softmax cross-entropy, a thread per row (the reference's column order):
// mx = the first maximum (the first NaN sticks), s = sum of exp(z - mx) from +0,
// grad = (exp(z - mx) / s - [j == y]) * scale, loss = (mx + ln s) - z_y.
template <typename K>
__device__ __forceinline__ void cross_entropy_body(const typename K::S* __restrict__ z,
                                                   const u32* __restrict__ labels,
                                                   typename K::A* __restrict__ loss,
                                                   typename K::S* __restrict__ grad, u64 m, u64 c,
                                                   typename K::A scale) {
    typedef typename K::A A;
    for (u64 i = thread_id(); i < m; i += grid_stride()) {
        const typename K::S* __restrict__ row = z + i * c;
        typename K::S* __restrict__ g = grad + i * c;
        A mx = K::ld(row[0]);
        for (u64 j = 1; j < c; ++j) {
            const A v = K::ld(row[j]);
            if (!(mx != mx) && (v > mx || v != v)) mx = v;
        }
        A s = A(0);
        for (u64 j = 0; j < c; ++j) s = radd(s, rexp(rsub(K::ld(row[j]), mx)));
        const u64 y = labels[i];
        for (u64 j = 0; j < c; ++j) {
            const A ind = j == y ? A(1) : A(0);
            g[j] = K::st(rmul(rsub(rdiv(rexp(rsub(K::ld(row[j]), mx)), s), ind), scale));
        }
        loss[i] = rsub(radd(mx, rln(s)), K::ld(row[y]));
    }
}

#define RTX_CROSS_ENTROPY(NAME, T, A, K)                                                    \
    extern "C" __global__ void __launch_bounds__(RTX_BLOCK)                                 \
        NAME(const T* __restrict__ z, const u32* __restrict__ labels, A* __restrict__ loss, \
             T* __restrict__ grad, u64 m, u64 c, A scale) {                                 \
        cross_entropy_body<K>(z, labels, loss, grad, m, c, scale);                          \
    }
// @kernels RTX_CROSS_ENTROPY

// MSE (l1 == 0) or L1 (l1 == 1), a thread per row: the loss summed over the
// columns in order from +0; grad (2 d) * scale or sign(d) * scale, d = y - t.
template <typename K>
__device__ __forceinline__ void regression_body(const typename K::S* __restrict__ y,
                                                const typename K::A* __restrict__ t,
                                                typename K::A* __restrict__ loss,
                                                typename K::S* __restrict__ grad, u64 m, u64 d,
                                                u32 l1, typename K::A scale) {
    typedef typename K::A A;
    for (u64 i = thread_id(); i < m; i += grid_stride()) {
        A l = A(0);
        for (u64 j = i * d; j < (i + 1) * d; ++j) {
            const A e = rsub(K::ld(y[j]), t[j]);
            if (l1) {
                l = radd(l, e < A(0) ? -e : e);
                const A sg = e > A(0) ? A(1) : (e < A(0) ? A(-1) : e);
                grad[j] = K::st(rmul(sg, scale));
            } else {
                l = radd(l, rmul(e, e));
                grad[j] = K::st(rmul(rmul(A(2), e), scale));
            }
        }
        loss[i] = l;
    }
}

#define RTX_REGRESSION(NAME, T, A, K)                                                       \
    extern "C" __global__ void __launch_bounds__(RTX_BLOCK)                                 \
        NAME(const T* __restrict__ y, const A* __restrict__ t, A* __restrict__ loss,        \
             T* __restrict__ grad, u64 m, u64 d, u32 l1, A scale) {                         \
        regression_body<K>(y, t, loss, grad, m, d, l1, scale);                              \
    }
// @kernels RTX_REGRESSION

// ---------------------------------------------------------------- optimizers

// The multi-tensor steps: one launch over every tensor of a step. `tab` holds
// five words per tensor (the addresses of p, g, m / buf, v and the length n);
// `blocks` one word per block, (tensor << 32) | chunk: the block updates
// elements [chunk * len, min((chunk + 1) * len, n)) of that tensor.
#define RTX_TRAIN_ENTRY(K)                                                                  \
    const u64 word = blocks[blockIdx.x];                                                    \
    const u64* e = tab + 5 * (word >> 32);                                                  \
    const u64 n = e[4];                                                                     \
    const u64 lo = (word & 0xffffffffull) * len;                                            \
    const u64 hi = lo + len < n ? lo + len : n;                                             \
    typename K::S* __restrict__ p = reinterpret_cast<typename K::S*>(e[0]);                 \
    const typename K::S* __restrict__ g = reinterpret_cast<const typename K::S*>(e[1])

// Adam / AdamW (flags: 1 Adam's L2 term, 2 AdamW's decay of p), torch's order.
template <typename K>
__device__ __forceinline__ void adam_body(const u64* __restrict__ tab,
                                          const u64* __restrict__ blocks, u64 len,
                                          typename K::A gs, typename K::A wd, typename K::A omb1,
                                          typename K::A beta2, typename K::A omb2,
                                          typename K::A decay, typename K::A step_size,
                                          typename K::A bc2_sqrt, typename K::A eps, u32 flags) {
    typedef typename K::A A;
    RTX_TRAIN_ENTRY(K);
    typename K::S* __restrict__ m = reinterpret_cast<typename K::S*>(e[2]);
    typename K::S* __restrict__ v = reinterpret_cast<typename K::S*>(e[3]);
    for (u64 i = lo + threadIdx.x; i < hi; i += blockDim.x) {
        A pp = K::ld(p[i]);
        A gg = rmul(K::ld(g[i]), gs);
        if (flags & 1u) gg = radd(gg, rmul(wd, pp));
        if (flags & 2u) pp = rmul(pp, decay);
        A mm = K::ld(m[i]);
        mm = radd(mm, rmul(omb1, rsub(gg, mm)));
        A vv = K::ld(v[i]);
        vv = radd(rmul(vv, beta2), rmul(rmul(gg, gg), omb2));
        const A denom = radd(rdiv(rroot(vv), bc2_sqrt), eps);
        pp = rsub(pp, rmul(step_size, rdiv(mm, denom)));
        p[i] = K::st(pp);
        m[i] = K::st(mm);
        v[i] = K::st(vv);
    }
}

#define RTX_ADAM(NAME, T, A, K)                                                             \
    extern "C" __global__ void __launch_bounds__(RTX_BLOCK)                                 \
        NAME(const u64* __restrict__ tab, const u64* __restrict__ blocks, u64 len, A gs,    \
             A wd, A omb1, A beta2, A omb2, A decay, A step_size, A bc2_sqrt, A eps,        \
             u32 flags) {                                                                   \
        adam_body<K>(tab, blocks, len, gs, wd, omb1, beta2, omb2, decay, step_size,         \
                     bc2_sqrt, eps, flags);                                                 \
    }
// @kernels RTX_ADAM

// SGD (flags: 1 weight decay, 2 momentum, 4 Nesterov, 8 the first step), torch's order.
template <typename K>
__device__ __forceinline__ void sgd_body(const u64* __restrict__ tab,
                                         const u64* __restrict__ blocks, u64 len,
                                         typename K::A gs, typename K::A wd,
                                         typename K::A momentum, typename K::A omd,
                                         typename K::A lr, u32 flags) {
    typedef typename K::A A;
    RTX_TRAIN_ENTRY(K);
    typename K::S* __restrict__ buf = reinterpret_cast<typename K::S*>(e[2]);
    for (u64 i = lo + threadIdx.x; i < hi; i += blockDim.x) {
        const A pp = K::ld(p[i]);
        A gg = rmul(K::ld(g[i]), gs);
        if (flags & 1u) gg = radd(gg, rmul(wd, pp));
        if (flags & 2u) {
            const A bb =
                (flags & 8u) ? gg : radd(rmul(K::ld(buf[i]), momentum), rmul(gg, omd));
            gg = (flags & 4u) ? radd(gg, rmul(bb, momentum)) : bb;
            buf[i] = K::st(bb);
        }
        p[i] = K::st(rsub(pp, rmul(lr, gg)));
    }
}

#define RTX_SGD(NAME, T, A, K)                                                              \
    extern "C" __global__ void __launch_bounds__(RTX_BLOCK)                                 \
        NAME(const u64* __restrict__ tab, const u64* __restrict__ blocks, u64 len, A gs,    \
             A wd, A momentum, A omd, A lr, u32 flags) {                                    \
        sgd_body<K>(tab, blocks, len, gs, wd, momentum, omd, lr, flags);                    \
    }
// @kernels RTX_SGD

// ---------------------------------------------------------------- ln

// The portable ln elementwise (its bits against the host's in the GPU tests).
template <typename K>
__device__ __forceinline__ void ln_body(const typename K::S* __restrict__ x,
                                        typename K::S* __restrict__ out, u64 n) {
    for (u64 i = thread_id(); i < n; i += grid_stride()) out[i] = K::st(rln(K::ld(x[i])));
}

#define RTX_LN(NAME, T, K)                                                                  \
    extern "C" __global__ void __launch_bounds__(RTX_BLOCK)                                 \
        NAME(const T* __restrict__ x, T* __restrict__ out, u64 n) {                         \
        ln_body<K>(x, out, n);                                                              \
    }
// @kernels RTX_LN
