// The elementwise ops of a graph-attention model on the device: unary ops and
// their backward, binary ops with a broadcast row, axpy, and the fused
// elementwise ops (head_scale with an addend, sum_bias_relu, gather_add).
// Exactness and the helpers shared with dense.cu and segment.cu: model.cuh.
#include "common.cuh"
#include "model.cuh"

// ---------------------------------------------------------------- elementwise

// Unary op codes (rtx_backend::Unary; values from the host: RTX_UNARY_*).
template <typename T>
__device__ __forceinline__ T unary_op(u32 op, T v, T s) {
    switch (op) {
        case RTX_UNARY_RELU: return (v > T(0) || v != v) ? v : T(0);
        case RTX_UNARY_LEAKY_RELU: return v > T(0) ? v : rmul(v, s);
        case RTX_UNARY_EXP: return rexp(v);
        case RTX_UNARY_SCALE:
        default: return rmul(v, s);
    }
}

template <typename T>
__device__ __forceinline__ T unary_bwd_op(u32 op, T x, T g, T s) {
    switch (op) {
        case RTX_UNARY_RELU: return x > T(0) ? g : T(0);
        case RTX_UNARY_LEAKY_RELU: return x > T(0) ? g : rmul(g, s);
        case RTX_UNARY_EXP: return rmul(g, rexp(x));
        case RTX_UNARY_SCALE:
        default: return rmul(g, s);
    }
}

// Binary op codes (rtx_backend::Binary; values from the host: RTX_BINARY_*).
template <typename T>
__device__ __forceinline__ T binary_op(u32 op, T a, T b) {
    switch (op) {
        case RTX_BINARY_ADD: return radd(a, b);
        case RTX_BINARY_SUB: return rsub(a, b);
        case RTX_BINARY_MUL: return rmul(a, b);
        case RTX_BINARY_DIV:
        default: return rdiv(a, b);
    }
}

// The elementwise kernels (unary, unary_bwd, binary, axpy) over an element
// kind K (model.cuh): each loads stored elements, computes in K::A exactly
// as the f32 (f64) kernel does, and rounds each output once as it stores
// it. A thread takes a 16-byte vector (VecT<AV>::N elements: 4 floats, 2
// doubles, 8 halves) when the pointers are aligned (device allocations
// are), then the last n % N elements one each.
#define RTX_KIND_TYPES(K)                                                                   \
    typedef typename K::A A;                                                                \
    typedef typename K::SV SV;                                                              \
    typedef typename K::AV AV;                                                              \
    constexpr u32 N = VecT<AV>::N

template <typename K>
__device__ __forceinline__ void unary_body(const typename K::S* __restrict__ x,
                                           typename K::S* __restrict__ out, u64 n, u32 op,
                                           typename K::A s) {
    RTX_KIND_TYPES(K);
    u64 done = 0;
    if (aligned16(x) && aligned16(out)) {
        const u64 nv = n / N;
        const SV* __restrict__ xv = reinterpret_cast<const SV*>(x);
        SV* __restrict__ ov = reinterpret_cast<SV*>(out);
        for (u64 t = thread_id(); t < nv; t += grid_stride()) {
            AV v = K::vld(__ldg(xv + t));
#pragma unroll
            for (u32 q = 0; q < N; ++q) comps(v)[q] = unary_op<A>(op, comps(v)[q], s);
            ov[t] = K::vst(v);
        }
        done = nv * N;
    }
    for (u64 i = done + thread_id(); i < n; i += grid_stride())
        out[i] = K::st(unary_op<A>(op, K::ld(x[i]), s));
}

#define RTX_UNARY(NAME, T, A, K)                                                            \
    extern "C" __global__ void __launch_bounds__(RTX_BLOCK)                                 \
        NAME(const T* __restrict__ x, T* __restrict__ out, u64 n, u32 op, A s) {            \
        unary_body<K>(x, out, n, op, s);                                                    \
    }
// @kernels RTX_UNARY

template <typename K>
__device__ __forceinline__ void unary_bwd_body(const typename K::S* __restrict__ x,
                                               const typename K::S* __restrict__ g,
                                               typename K::S* __restrict__ out, u64 n, u32 op,
                                               typename K::A s) {
    RTX_KIND_TYPES(K);
    u64 done = 0;
    if (aligned16(x) && aligned16(g) && aligned16(out)) {
        const u64 nv = n / N;
        const SV* __restrict__ xv = reinterpret_cast<const SV*>(x);
        const SV* __restrict__ gv = reinterpret_cast<const SV*>(g);
        SV* __restrict__ ov = reinterpret_cast<SV*>(out);
        for (u64 t = thread_id(); t < nv; t += grid_stride()) {
            const AV a = K::vld(__ldg(xv + t));
            AV v = K::vld(__ldg(gv + t));
#pragma unroll
            for (u32 q = 0; q < N; ++q)
                comps(v)[q] = unary_bwd_op<A>(op, comps(a)[q], comps(v)[q], s);
            ov[t] = K::vst(v);
        }
        done = nv * N;
    }
    for (u64 i = done + thread_id(); i < n; i += grid_stride())
        out[i] = K::st(unary_bwd_op<A>(op, K::ld(x[i]), K::ld(g[i]), s));
}

#define RTX_UNARY_BWD(NAME, T, A, K)                                                        \
    extern "C" __global__ void __launch_bounds__(RTX_BLOCK)                                 \
        NAME(const T* __restrict__ x, const T* __restrict__ g, T* __restrict__ out, u64 n,  \
             u32 op, A s) {                                                                 \
        unary_bwd_body<K>(x, g, out, n, op, s);                                             \
    }
// @kernels RTX_UNARY_BWD

// out = a op b; b is one row of f values repeated over a's rows when f > 0.
// The vector path needs whole vectors in b's row (f % N == 0) and, to find
// a vector's place in the row with a 32-bit division, n / N below 2^32.
template <typename K>
__device__ __forceinline__ void binary_body(const typename K::S* __restrict__ a,
                                            const typename K::S* __restrict__ b,
                                            typename K::S* __restrict__ out, u64 n, u32 op,
                                            u64 f) {
    RTX_KIND_TYPES(K);
    u64 done = 0;
    const u64 nv = n / N;
    if (f % N == 0 && (f == 0 || nv < (1ull << 32)) && aligned16(a) && aligned16(b) &&
        aligned16(out)) {
        const u32 fv = (u32)(f / N);
        const SV* __restrict__ av = reinterpret_cast<const SV*>(a);
        const SV* __restrict__ bv = reinterpret_cast<const SV*>(b);
        SV* __restrict__ ov = reinterpret_cast<SV*>(out);
        for (u64 t = thread_id(); t < nv; t += grid_stride()) {
            AV v = K::vld(__ldg(av + t));
            const AV w = K::vld(__ldg(bv + (fv ? (u64)((u32)t % fv) : t)));
#pragma unroll
            for (u32 q = 0; q < N; ++q) comps(v)[q] = binary_op<A>(op, comps(v)[q], comps(w)[q]);
            ov[t] = K::vst(v);
        }
        done = nv * N;
    }
    for (u64 i = done + thread_id(); i < n; i += grid_stride())
        out[i] = K::st(binary_op<A>(op, K::ld(a[i]), K::ld(b[f ? i % f : i])));
}

#define RTX_BINARY(NAME, T, K)                                                              \
    extern "C" __global__ void __launch_bounds__(RTX_BLOCK)                                 \
        NAME(const T* __restrict__ a, const T* __restrict__ b, T* __restrict__ out, u64 n,  \
             u32 op, u64 f) {                                                               \
        binary_body<K>(a, b, out, n, op, f);                                                \
    }
// @kernels RTX_BINARY

// y = y + alpha * x (the product rounded, then the sum; y rounded once).
template <typename K>
__device__ __forceinline__ void axpy_body(typename K::S* __restrict__ y,
                                          const typename K::S* __restrict__ x, u64 n,
                                          typename K::A alpha) {
    RTX_KIND_TYPES(K);
    u64 done = 0;
    if (aligned16(y) && aligned16(x)) {
        const u64 nv = n / N;
        SV* __restrict__ yv = reinterpret_cast<SV*>(y);
        const SV* __restrict__ xv = reinterpret_cast<const SV*>(x);
        for (u64 t = thread_id(); t < nv; t += grid_stride()) {
            AV v = K::vld(yv[t]);
            const AV w = K::vld(__ldg(xv + t));
#pragma unroll
            for (u32 q = 0; q < N; ++q) comps(v)[q] = radd(comps(v)[q], rmul(alpha, comps(w)[q]));
            yv[t] = K::vst(v);
        }
        done = nv * N;
    }
    for (u64 i = done + thread_id(); i < n; i += grid_stride())
        y[i] = K::st(radd(K::ld(y[i]), rmul(alpha, K::ld(x[i]))));
}

#define RTX_AXPY(NAME, T, A, K)                                                             \
    extern "C" __global__ void __launch_bounds__(RTX_BLOCK)                                 \
        NAME(T* __restrict__ y, const T* __restrict__ x, u64 n, A alpha) {                  \
        axpy_body<K>(y, x, n, alpha);                                                       \
    }
// @kernels RTX_AXPY

// out[i, h*c + j] = a[i or 0, h*c + j] * s[i, h], plus x[i, h*c + j] first
// when x is not null (add_head_scale: x + the product). When a head's c
// columns are whole 16-byte vectors (and the sizes fit 32 bits), a thread
// takes one vector: one row and one head, two 32-bit divisions per vector
// (the scalar loop's two 64-bit divisions per element made it twice its
// bandwidth floor).
template <typename K>
__device__ __forceinline__ void head_scale_body(const typename K::S* __restrict__ x,
                                                const typename K::S* __restrict__ a,
                                                const typename K::S* __restrict__ s,
                                                typename K::S* __restrict__ out, u64 n, u64 heads,
                                                u64 c, u32 a_bcast) {
    RTX_KIND_TYPES(K);
    const u64 f = heads * c;
    const u64 total = n * f;
    if (c % N == 0 && total / N < (1ull << 32) && aligned16(a) && aligned16(out) &&
        aligned16(x)) {
        const u32 fv = (u32)(f / N), cv = (u32)(c / N), tv = (u32)(total / N);
        const SV* __restrict__ av = reinterpret_cast<const SV*>(a);
        const SV* __restrict__ xv = reinterpret_cast<const SV*>(x);
        SV* __restrict__ ov = reinterpret_cast<SV*>(out);
        for (u64 t = thread_id(); t < tv; t += grid_stride()) {
            const u32 i = (u32)t / fv, col = (u32)t - i * fv;
            const A sc = K::ld(__ldg(s + (u64)i * heads + col / cv));
            AV v = K::vld(__ldg(av + (a_bcast ? (u64)col : t)));
#pragma unroll
            for (u32 k = 0; k < N; ++k) comps(v)[k] = rmul(comps(v)[k], sc);
            if (x) {
                const AV w = K::vld(__ldg(xv + t));
#pragma unroll
                for (u32 k = 0; k < N; ++k) comps(v)[k] = radd(comps(w)[k], comps(v)[k]);
            }
            ov[t] = K::vst(v);
        }
        return;
    }
    for (u64 t = thread_id(); t < total; t += grid_stride()) {
        const u64 i = t / f, col = t - i * f;
        const A v = rmul(K::ld(a[a_bcast ? col : t]), K::ld(s[i * heads + col / c]));
        out[t] = K::st(x ? radd(K::ld(x[t]), v) : v);
    }
}

// sum_bias_relu: out = relu(((x0 + b0) + (x1 + b1)) + ...) over p.k parts
// (1 <= k <= RTX_SUM_BIAS_PARTS) of a row-major [n, f], each bias one row of
// f values. (#[repr(C)] BiasParts in src/device/fused_ops.rs.) A thread
// takes a 16-byte vector when rows are whole vectors and every pointer is
// aligned, with one 32-bit division for its column; else an element.
struct BiasParts {
    u64 x[RTX_SUM_BIAS_PARTS];
    u64 b[RTX_SUM_BIAS_PARTS];
    u64 k;
};

template <typename K>
__device__ __forceinline__ typename K::A bias_relu_step(const BiasParts& p, u32 i,
                                                        typename K::A acc, u64 at, u64 col) {
    typedef typename K::S S;
    const typename K::A v = radd(K::ld(__ldg(reinterpret_cast<const S*>(p.x[i]) + at)),
                                 K::ld(__ldg(reinterpret_cast<const S*>(p.b[i]) + col)));
    return i == 0 ? v : radd(acc, v);
}

template <typename T>
__device__ __forceinline__ T relu(T v) {
    return unary_op<T>(RTX_UNARY_RELU, v, T(0));
}

template <typename K>
__device__ __forceinline__ void sum_bias_relu_body(const BiasParts& p,
                                                   typename K::S* __restrict__ out, u64 n, u64 f) {
    RTX_KIND_TYPES(K);
    const u64 total = n * f;
    bool vec = f % N == 0 && total / N < (1ull << 32) && aligned16(out);
    for (u32 i = 0; i < p.k; ++i)
        vec = vec && aligned16((const void*)p.x[i]) && aligned16((const void*)p.b[i]);
    if (vec) {
        const u32 fv = (u32)(f / N), tv = (u32)(total / N);
        for (u64 t = thread_id(); t < tv; t += grid_stride()) {
            const u32 col = (u32)t % fv;
            AV acc;
            // unrolled over the room, so the parts' pointers stay in registers
#pragma unroll
            for (u32 i = 0; i < RTX_SUM_BIAS_PARTS; ++i) {
                if (i >= p.k) break;
                const AV x = K::vld(__ldg(reinterpret_cast<const SV*>(p.x[i]) + t));
                const AV b = K::vld(__ldg(reinterpret_cast<const SV*>(p.b[i]) + col));
#pragma unroll
                for (u32 q = 0; q < N; ++q) {
                    const A v = radd(comps(x)[q], comps(b)[q]);
                    comps(acc)[q] = i == 0 ? v : radd(comps(acc)[q], v);
                }
            }
#pragma unroll
            for (u32 q = 0; q < N; ++q) comps(acc)[q] = relu(comps(acc)[q]);
            reinterpret_cast<SV*>(out)[t] = K::vst(acc);
        }
        return;
    }
    for (u64 t = thread_id(); t < total; t += grid_stride()) {
        const u64 col = t % f;
        A acc = A(0);
#pragma unroll
        for (u32 i = 0; i < RTX_SUM_BIAS_PARTS; ++i) {
            if (i >= p.k) break;
            acc = bias_relu_step<K>(p, i, acc, t, col);
        }
        out[t] = K::st(relu(acc));
    }
}

#define RTX_SUM_BIAS_RELU(NAME, T, K)                                                       \
    extern "C" __global__ void __launch_bounds__(RTX_BLOCK)                                 \
        NAME(BiasParts p, T* __restrict__ out, u64 n, u64 f) {                              \
        sum_bias_relu_body<K>(p, out, n, f);                                                \
    }
// @kernels RTX_SUM_BIAS_RELU

// gather_add: out[p, :] = a[ai[p], :] + b[bi[p], :] over rows of f
// elements (every ai below a's rows and bi below b's, checked by the host).
// A thread takes a 16-byte vector of stored elements when rows are whole
// vectors (one 32-bit division for its entry), else an element; over a kind
// K (model.cuh), each sum is of the widened elements (Summand), rounded once.
// A stored summand widened: K::ld's value but for a NaN's payload, which
// the sum does not keep (the device's add makes its own NaN), so a half takes
// the one-instruction widening (common.cuh's widen_sum) instead of the
// host's NaN-exact one.
template <typename K>
struct Summand {
    static __device__ __forceinline__ typename K::A ld(typename K::S v) { return K::ld(v); }
    static __device__ __forceinline__ typename K::AV vld(typename K::SV v) { return K::vld(v); }
};
template <typename H>
struct Summand<KHalf<H>> {
    static __device__ __forceinline__ float ld(u16 v) { return H::widen_sum(v); }
    static __device__ __forceinline__ f32x8 vld(uint4 v) { return hwiden<H>(v); }
};

template <typename K>
__device__ __forceinline__ void gather_add_body(const typename K::S* __restrict__ a,
                                                const u32* __restrict__ ai,
                                                const typename K::S* __restrict__ b,
                                                const u32* __restrict__ bi,
                                                typename K::S* __restrict__ out, u64 e, u64 f) {
    typedef typename K::SV V;
    typedef typename K::AV AV;
    constexpr u32 N = VecT<AV>::N;
    const u64 total = e * f;
    if (f % N == 0 && total / N < (1ull << 32) && aligned16(a) && aligned16(b) && aligned16(out)) {
        const u32 fv = (u32)(f / N), tv = (u32)(total / N);
        const V* __restrict__ av = reinterpret_cast<const V*>(a);
        const V* __restrict__ bv = reinterpret_cast<const V*>(b);
        for (u64 t = thread_id(); t < tv; t += grid_stride()) {
            const u32 p = (u32)t / fv, j = (u32)t - p * fv;
            AV x = Summand<K>::vld(__ldg(av + (u64)__ldg(ai + p) * fv + j));
            const AV y = Summand<K>::vld(__ldg(bv + (u64)__ldg(bi + p) * fv + j));
#pragma unroll
            for (u32 q = 0; q < N; ++q) comps(x)[q] = radd(comps(x)[q], comps(y)[q]);
            reinterpret_cast<V*>(out)[t] = K::vst(x);
        }
        return;
    }
    for (u64 t = thread_id(); t < total; t += grid_stride()) {
        const u64 p = t / f, j = t - p * f;
        out[t] = K::st(radd(Summand<K>::ld(__ldg(a + (u64)__ldg(ai + p) * f + j)),
                            Summand<K>::ld(__ldg(b + (u64)__ldg(bi + p) * f + j))));
    }
}

#define RTX_GATHER_ADD(NAME, T, K)                                                          \
    extern "C" __global__ void __launch_bounds__(RTX_BLOCK)                                 \
        NAME(const T* __restrict__ a, const u32* __restrict__ ai, const T* __restrict__ b,  \
             const u32* __restrict__ bi, T* __restrict__ out, u64 e, u64 f) {               \
        gather_add_body<K>(a, ai, b, bi, out, e, f);                                        \
    }
// @kernels RTX_GATHER_ADD

#define RTX_HEAD_SCALE(NAME, T, K)                                                          \
    extern "C" __global__ void __launch_bounds__(RTX_BLOCK)                                 \
        NAME(const T* __restrict__ x, const T* __restrict__ a, const T* __restrict__ s,     \
             T* __restrict__ out, u64 n, u64 heads, u64 c, u32 a_bcast) {                   \
        head_scale_body<K>(x, a, s, out, n, heads, c, a_bcast);                             \
    }
// @kernels RTX_HEAD_SCALE
