// The ops of a graph-attention model (rtx-backend's `ops` module) on the device:
// elementwise ops, the canonical-order matrix product and row sums, per-head
// dot / scale, and the segment ops driven by the scatter-add's chunk tables.
//
// Exactness. Every floating operation is an explicit round-to-nearest
// intrinsic (__fadd_rn, __fmul_rn, ...) and the unit is compiled with
// --fmad=false, so each result is the IEEE result of the reference's
// operations in the reference's order (crates/rtx-backend/src/ops/rows.rs and ops/reference.rs): the
// matrix product, the row sums and the per-head dots follow the canonical
// order (blocks of 256 terms left to right from the first, then the block sums
// the same way), so they are bit-identical to the CPU backend. `exp` is
// rtx-backend's portable exp (rexp below, the same operations as the host's),
// so it too is bit-identical to the CPU backend, and the segment softmax
// reproduces its composition (segment_max, gather, sub, exp, segment_sum,
// gather, div) bit for bit.
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
#include "common.cuh"

__device__ __forceinline__ float radd(float a, float b) { return __fadd_rn(a, b); }
__device__ __forceinline__ double radd(double a, double b) { return __dadd_rn(a, b); }
__device__ __forceinline__ float rsub(float a, float b) { return __fsub_rn(a, b); }
__device__ __forceinline__ double rsub(double a, double b) { return __dsub_rn(a, b); }
__device__ __forceinline__ float rmul(float a, float b) { return __fmul_rn(a, b); }
__device__ __forceinline__ double rmul(double a, double b) { return __dmul_rn(a, b); }
__device__ __forceinline__ float rdiv(float a, float b) { return __fdiv_rn(a, b); }
__device__ __forceinline__ double rdiv(double a, double b) { return __ddiv_rn(a, b); }
// The one exp of the backend: Unary::Exp, its backward and the fused softmax all call this.
// It is rtx-backend's portable exp (crates/rtx-backend/src/exp.rs), line for line in
// explicit round-to-nearest operations, so the host and the device get the same bits:
// Cody-Waite reduction x = k ln2 + r, the Taylor polynomial of degree 13 of e^r by
// Horner (degree 13 in f64; degree 7 in f32 arithmetic for f32, a short chain for the
// latency-bound fused softmax), scaling by 2^k.
__device__ __forceinline__ double rexp_pow2(long long k) {
    return __longlong_as_double((long long)((unsigned long long)(k + 1023) << 52));
}
__device__ __forceinline__ double rexp64(double x) {
    if (x != x) return x;
    if (x > 709.782712893384) return __longlong_as_double(0x7ff0000000000000ll);
    if (x < -745.1332191019412) return 0.0;
    const double k = floor(__dadd_rn(__dmul_rn(x, 1.4426950408889634), 0.5));
    const double r = __dsub_rn(__dsub_rn(x, __dmul_rn(k, 0.6931471803691238)),
                               __dmul_rn(k, 1.9082149292705877e-10));
    const double c[12] = {1.6059043836821613e-10, 2.08767569878681e-09, 2.505210838544172e-08,
                          2.755731922398589e-07,  2.7557319223985893e-06, 2.48015873015873e-05,
                          0.0001984126984126984,  0.001388888888888889,  0.008333333333333333,
                          0.041666666666666664,   0.16666666666666666,   0.5};
    double p = c[0];
#pragma unroll
    for (int i = 1; i < 12; ++i) p = __dadd_rn(__dmul_rn(p, r), c[i]);
    p = __dadd_rn(__dmul_rn(p, r), 1.0);
    p = __dadd_rn(__dmul_rn(p, r), 1.0);
    const long long ki = (long long)k;
    if (ki > 1000) return __dmul_rn(__dmul_rn(p, rexp_pow2(1000)), rexp_pow2(ki - 1000));
    if (ki < -1000) return __dmul_rn(__dmul_rn(p, rexp_pow2(ki + 600)), rexp_pow2(-600));
    return __dmul_rn(p, rexp_pow2(ki));
}
__device__ __forceinline__ float rexp_pow2f(int k) { return __int_as_float((k + 127) << 23); }
__device__ __forceinline__ float rexp32(float x) {
    if (x != x) return x;
    if (x > 88.72284f) return __int_as_float(0x7f800000);
    if (x < -104.0f) return 0.0f;
    const float k = floorf(__fadd_rn(__fmul_rn(x, 1.4426950216293335f), 0.5f));
    const float r = __fsub_rn(__fsub_rn(x, __fmul_rn(k, 0.693145751953125f)),
                              __fmul_rn(k, 1.428606765330187e-06f));
    const float c[6] = {0.00019841270113829523f, 0.0013888889225199819f, 0.008333333767950535f,
                        0.0416666679084301f, 0.1666666716337204f, 0.5f};
    float p = c[0];
#pragma unroll
    for (int i = 1; i < 6; ++i) p = __fadd_rn(__fmul_rn(p, r), c[i]);
    p = __fadd_rn(__fmul_rn(p, r), 1.0f);
    p = __fadd_rn(__fmul_rn(p, r), 1.0f);
    const int ki = (int)k;
    if (ki > 126) return __fmul_rn(__fmul_rn(p, rexp_pow2f(64)), rexp_pow2f(ki - 64));
    if (ki < -126) return __fmul_rn(__fmul_rn(p, rexp_pow2f(ki + 64)), rexp_pow2f(-64));
    return __fmul_rn(p, rexp_pow2f(ki));
}
__device__ __forceinline__ float rexp(float a) { return rexp32(a); }
__device__ __forceinline__ double rexp(double a) { return rexp64(a); }

// Components of the vector types the scatter machinery moves.
template <typename V> struct VecT;
template <> struct VecT<float> { typedef float T; enum { N = 1 }; };
template <> struct VecT<float2> { typedef float T; enum { N = 2 }; };
template <> struct VecT<float4> { typedef float T; enum { N = 4 }; };
template <> struct VecT<double> { typedef double T; enum { N = 1 }; };
template <> struct VecT<double2> { typedef double T; enum { N = 2 }; };

template <typename V>
__device__ __forceinline__ typename VecT<V>::T* comps(V& v) {
    return reinterpret_cast<typename VecT<V>::T*>(&v);
}
template <typename V>
__device__ __forceinline__ const typename VecT<V>::T* comps(const V& v) {
    return reinterpret_cast<const typename VecT<V>::T*>(&v);
}

__device__ __forceinline__ u64 grid_stride() { return (u64)gridDim.x * blockDim.x; }
__device__ __forceinline__ u64 thread_id() { return (u64)blockIdx.x * blockDim.x + threadIdx.x; }

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

#define RTX_UNARY(NAME, T)                                                                  \
    extern "C" __global__ void __launch_bounds__(RTX_BLOCK)                                 \
        NAME(const T* __restrict__ x, T* __restrict__ out, u64 n, u32 op, T s) {            \
        for (u64 i = thread_id(); i < n; i += grid_stride()) out[i] = unary_op(op, x[i], s); \
    }
RTX_UNARY(unary_f32, float)
RTX_UNARY(unary_f64, double)

#define RTX_UNARY_BWD(NAME, T)                                                              \
    extern "C" __global__ void __launch_bounds__(RTX_BLOCK)                                 \
        NAME(const T* __restrict__ x, const T* __restrict__ g, T* __restrict__ out, u64 n,  \
             u32 op, T s) {                                                                 \
        for (u64 i = thread_id(); i < n; i += grid_stride())                                \
            out[i] = unary_bwd_op(op, x[i], g[i], s);                                       \
    }
RTX_UNARY_BWD(unary_bwd_f32, float)
RTX_UNARY_BWD(unary_bwd_f64, double)

// out = a op b; b is one row of f values repeated over a's rows when f > 0.
#define RTX_BINARY(NAME, T)                                                                 \
    extern "C" __global__ void __launch_bounds__(RTX_BLOCK)                                 \
        NAME(const T* __restrict__ a, const T* __restrict__ b, T* __restrict__ out, u64 n,  \
             u32 op, u64 f) {                                                               \
        for (u64 i = thread_id(); i < n; i += grid_stride())                                \
            out[i] = binary_op(op, a[i], b[f ? i % f : i]);                                 \
    }
RTX_BINARY(binary_f32, float)
RTX_BINARY(binary_f64, double)

// y = y + alpha * x (the product rounded, then the sum).
#define RTX_AXPY(NAME, T)                                                                   \
    extern "C" __global__ void __launch_bounds__(RTX_BLOCK)                                 \
        NAME(T* __restrict__ y, const T* __restrict__ x, u64 n, T alpha) {                  \
        for (u64 i = thread_id(); i < n; i += grid_stride())                                \
            y[i] = radd(y[i], rmul(alpha, x[i]));                                           \
    }
RTX_AXPY(axpy_f32, float)
RTX_AXPY(axpy_f64, double)

// 16 bytes of T.
template <typename T> struct Vec16;
template <> struct Vec16<float> { typedef float4 V; };
template <> struct Vec16<double> { typedef double2 V; };
__device__ __forceinline__ bool aligned16(const void* p) { return ((u64)p & 15) == 0; }

// out[i, h*c + j] = a[i or 0, h*c + j] * s[i, h], plus x[i, h*c + j] first
// when x is not null (add_head_scale: x + the product). When a head's c
// columns are whole 16-byte vectors (and the sizes fit 32 bits), a thread
// takes one vector: one row and one head, two 32-bit divisions per vector
// (the scalar loop's two 64-bit divisions per element made it twice its
// bandwidth floor).
template <typename T>
__device__ __forceinline__ void head_scale_body(const T* __restrict__ x, const T* __restrict__ a,
                                                const T* __restrict__ s, T* __restrict__ out,
                                                u64 n, u64 heads, u64 c, u32 a_bcast) {
    typedef typename Vec16<T>::V V;
    constexpr u32 N = VecT<V>::N;
    const u64 f = heads * c;
    const u64 total = n * f;
    if (c % N == 0 && total / N < (1ull << 32) && aligned16(a) && aligned16(out) &&
        aligned16(x)) {
        const u32 fv = (u32)(f / N), cv = (u32)(c / N), tv = (u32)(total / N);
        const V* __restrict__ av = reinterpret_cast<const V*>(a);
        const V* __restrict__ xv = reinterpret_cast<const V*>(x);
        V* __restrict__ ov = reinterpret_cast<V*>(out);
        for (u64 t = thread_id(); t < tv; t += grid_stride()) {
            const u32 i = (u32)t / fv, col = (u32)t - i * fv;
            const T sc = __ldg(s + (u64)i * heads + col / cv);
            V v = __ldg(av + (a_bcast ? (u64)col : t));
#pragma unroll
            for (u32 k = 0; k < N; ++k) comps(v)[k] = rmul(comps(v)[k], sc);
            if (x) {
                const V w = __ldg(xv + t);
#pragma unroll
                for (u32 k = 0; k < N; ++k) comps(v)[k] = radd(comps(w)[k], comps(v)[k]);
            }
            ov[t] = v;
        }
        return;
    }
    for (u64 t = thread_id(); t < total; t += grid_stride()) {
        const u64 i = t / f, col = t - i * f;
        const T v = rmul(a[a_bcast ? col : t], s[i * heads + col / c]);
        out[t] = x ? radd(x[t], v) : v;
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

template <typename T>
__device__ __forceinline__ T bias_relu_step(const BiasParts& p, u32 i, T acc, u64 at, u64 col) {
    const T v = radd(__ldg(reinterpret_cast<const T*>(p.x[i]) + at),
                     __ldg(reinterpret_cast<const T*>(p.b[i]) + col));
    return i == 0 ? v : radd(acc, v);
}

template <typename T>
__device__ __forceinline__ T relu(T v) {
    return unary_op<T>(RTX_UNARY_RELU, v, T(0));
}

template <typename T>
__device__ __forceinline__ void sum_bias_relu_body(const BiasParts& p, T* __restrict__ out,
                                                   u64 n, u64 f) {
    typedef typename Vec16<T>::V V;
    constexpr u32 N = VecT<V>::N;
    const u64 total = n * f;
    bool vec = f % N == 0 && total / N < (1ull << 32) && aligned16(out);
    for (u32 i = 0; i < p.k; ++i)
        vec = vec && aligned16((const void*)p.x[i]) && aligned16((const void*)p.b[i]);
    if (vec) {
        const u32 fv = (u32)(f / N), tv = (u32)(total / N);
        for (u64 t = thread_id(); t < tv; t += grid_stride()) {
            const u32 col = (u32)t % fv;
            V acc;
            // unrolled over the room, so the parts' pointers stay in registers
#pragma unroll
            for (u32 i = 0; i < RTX_SUM_BIAS_PARTS; ++i) {
                if (i >= p.k) break;
                V x = __ldg(reinterpret_cast<const V*>(p.x[i]) + t);
                const V b = __ldg(reinterpret_cast<const V*>(p.b[i]) + col);
#pragma unroll
                for (u32 q = 0; q < N; ++q) {
                    const T v = radd(comps(x)[q], comps(b)[q]);
                    comps(acc)[q] = i == 0 ? v : radd(comps(acc)[q], v);
                }
            }
#pragma unroll
            for (u32 q = 0; q < N; ++q) comps(acc)[q] = relu(comps(acc)[q]);
            reinterpret_cast<V*>(out)[t] = acc;
        }
        return;
    }
    for (u64 t = thread_id(); t < total; t += grid_stride()) {
        const u64 col = t % f;
        T acc = T(0);
#pragma unroll
        for (u32 i = 0; i < RTX_SUM_BIAS_PARTS; ++i) {
            if (i >= p.k) break;
            acc = bias_relu_step<T>(p, i, acc, t, col);
        }
        out[t] = relu(acc);
    }
}

#define RTX_SUM_BIAS_RELU(NAME, T)                                                          \
    extern "C" __global__ void __launch_bounds__(RTX_BLOCK)                                 \
        NAME(BiasParts p, T* __restrict__ out, u64 n, u64 f) {                              \
        sum_bias_relu_body<T>(p, out, n, f);                                                \
    }
RTX_SUM_BIAS_RELU(sum_bias_relu_f32, float)
RTX_SUM_BIAS_RELU(sum_bias_relu_f64, double)

// gather_add: out[p, :] = a[ai[p], :] + b[bi[p], :] over rows of f
// elements (every ai below a's rows and bi below b's, checked by the host).
// A thread takes a 16-byte vector when rows are whole vectors (one 32-bit
// division for its entry), else an element.
template <typename T>
__device__ __forceinline__ void gather_add_body(const T* __restrict__ a, const u32* __restrict__ ai,
                                                const T* __restrict__ b, const u32* __restrict__ bi,
                                                T* __restrict__ out, u64 e, u64 f) {
    typedef typename Vec16<T>::V V;
    constexpr u32 N = VecT<V>::N;
    const u64 total = e * f;
    if (f % N == 0 && total / N < (1ull << 32) && aligned16(a) && aligned16(b) && aligned16(out)) {
        const u32 fv = (u32)(f / N), tv = (u32)(total / N);
        const V* __restrict__ av = reinterpret_cast<const V*>(a);
        const V* __restrict__ bv = reinterpret_cast<const V*>(b);
        for (u64 t = thread_id(); t < tv; t += grid_stride()) {
            const u32 p = (u32)t / fv, j = (u32)t - p * fv;
            V x = __ldg(av + (u64)__ldg(ai + p) * fv + j);
            const V y = __ldg(bv + (u64)__ldg(bi + p) * fv + j);
#pragma unroll
            for (u32 q = 0; q < N; ++q) comps(x)[q] = radd(comps(x)[q], comps(y)[q]);
            reinterpret_cast<V*>(out)[t] = x;
        }
        return;
    }
    for (u64 t = thread_id(); t < total; t += grid_stride()) {
        const u64 p = t / f, j = t - p * f;
        out[t] = radd(__ldg(a + (u64)__ldg(ai + p) * f + j), __ldg(b + (u64)__ldg(bi + p) * f + j));
    }
}

#define RTX_GATHER_ADD(NAME, T)                                                             \
    extern "C" __global__ void __launch_bounds__(RTX_BLOCK)                                 \
        NAME(const T* __restrict__ a, const u32* __restrict__ ai, const T* __restrict__ b,  \
             const u32* __restrict__ bi, T* __restrict__ out, u64 e, u64 f) {               \
        gather_add_body<T>(a, ai, b, bi, out, e, f);                                        \
    }
RTX_GATHER_ADD(gather_add_f32, float)
RTX_GATHER_ADD(gather_add_f64, double)

#define RTX_HEAD_SCALE(NAME, T)                                                             \
    extern "C" __global__ void __launch_bounds__(RTX_BLOCK)                                 \
        NAME(const T* __restrict__ x, const T* __restrict__ a, const T* __restrict__ s,     \
             T* __restrict__ out, u64 n, u64 heads, u64 c, u32 a_bcast) {                   \
        head_scale_body<T>(x, a, s, out, n, heads, c, a_bcast);                             \
    }
RTX_HEAD_SCALE(head_scale_f32, float)
RTX_HEAD_SCALE(head_scale_f64, double)

// ---------------------------------------------------------------- canonical sums

// The canonical dot product of c products a[q] * b[q] (rtx_backend::ops::dot):
// left to right from the first product up to 256 terms; beyond, the block tree
// of rtx_backend::order::canonical_sum, streamed (each level keeps its open
// group's sum; a group closes at 256 values or at the level's last value).
template <typename T>
__device__ __forceinline__ T canon_dot(const T* __restrict__ a, const T* __restrict__ b, u64 c) {
    if (c == 0) return T(0);
    typedef typename Vec16<T>::V V;
    constexpr u32 N = VecT<V>::N;
    if (c <= RTX_CANONICAL_BLOCK && c % N == 0 && aligned16(a) && aligned16(b)) {
        // the same products and additions, read as 16-byte vectors
        const V* __restrict__ av = reinterpret_cast<const V*>(a);
        const V* __restrict__ bv = reinterpret_cast<const V*>(b);
        V x = __ldg(av), y = __ldg(bv);
        T s = rmul(comps(x)[0], comps(y)[0]);
#pragma unroll
        for (u32 k = 1; k < N; ++k) s = radd(s, rmul(comps(x)[k], comps(y)[k]));
#pragma unroll 4
        for (u64 q = 1; q < c / N; ++q) {
            x = __ldg(av + q);
            y = __ldg(bv + q);
#pragma unroll
            for (u32 k = 0; k < N; ++k) s = radd(s, rmul(comps(x)[k], comps(y)[k]));
        }
        return s;
    }
    T s = rmul(a[0], b[0]);
    if (c <= RTX_CANONICAL_BLOCK) {
        for (u64 q = 1; q < c; ++q) s = radd(s, rmul(a[q], b[q]));
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
        T v = rmul(a[q], b[q]);
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
#define RTX_HEAD_DOT(NAME, T)                                                               \
    extern "C" __global__ void __launch_bounds__(RTX_BLOCK)                                 \
        NAME(const T* __restrict__ a, const T* __restrict__ b, T* __restrict__ out, u64 n,  \
             u64 heads, u64 c, u32 b_bcast) {                                               \
        const u64 f = heads * c;                                                            \
        const u64 total = n * heads;                                                        \
        for (u64 t = thread_id(); t < total; t += grid_stride()) {                          \
            const u64 i = t / heads, h = t - i * heads;                                     \
            out[t] = canon_dot(a + i * f + h * c, b + (b_bcast ? 0 : i) * f + h * c, c);    \
        }                                                                                   \
    }
RTX_HEAD_DOT(head_dot_f32, float)
RTX_HEAD_DOT(head_dot_f64, double)

// out[p, h] = canonical dot of a[ai[p], h*c..] and b[bi[p], h*c..]: exactly
// head_dot of the two gathers.
#define RTX_GATHER_HEAD_DOT(NAME, T)                                                        \
    extern "C" __global__ void __launch_bounds__(RTX_BLOCK)                                 \
        NAME(const T* __restrict__ a, const u32* __restrict__ ai, const T* __restrict__ b,  \
             const u32* __restrict__ bi, T* __restrict__ out, u64 e, u64 heads, u64 c) {    \
        const u64 f = heads * c;                                                            \
        const u64 total = e * heads;                                                        \
        for (u64 t = thread_id(); t < total; t += grid_stride()) {                          \
            const u64 p = t / heads, h = t - p * heads;                                     \
            const u64 ra = __ldg(ai + p), rb = __ldg(bi + p);                               \
            out[t] = canon_dot(a + ra * f + h * c, b + rb * f + h * c, c);                  \
        }                                                                                   \
    }
RTX_GATHER_HEAD_DOT(gather_head_dot_f32, float)
RTX_GATHER_HEAD_DOT(gather_head_dot_f64, double)

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
#define RR_COLS(T) (128 / (int)sizeof(T))
// The levels a column-sum launch climbs (#[repr(C)] ClimbParams in
// src/device/dense_ops.rs): out[i] holds rows[i] rows of f columns (a T*;
// out[levels - 1] is the one row of sums), and level i's group G (i >= 1)
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

// The tile of rows r0 .. r0 + rows, columns c0 .. c0 + cols, summed down its
// columns into dst[0 .. cols].
template <u32 BATCH, typename T, typename Load>
__device__ __forceinline__ void rr_tile(T (*tile)[RR_COLS(T) + 1], const Load& load, u64 r0,
                                        u32 rows, u64 c0, u32 cols, T* __restrict__ dst) {
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
        dst[threadIdx.x] = acc;
    }
    __syncthreads();
}

// in[r, j] of a row-major [n, f] another block of this launch wrote: read
// from L2 (__ldcg), where the other blocks' writes are visible; this SM's L1
// could hold a stale copy.
template <typename T>
struct FreshRowsLoad {
    const T* in;
    u64 f;
    __device__ __forceinline__ T operator()(u64 r, u64 j) const { return __ldcg(in + r * f + j); }
};

template <u32 BATCH, typename T, typename Load>
__device__ __forceinline__ void reduce_rows_level(const Load& load, u64 n, u64 f,
                                                  const RrClimb& cl) {
    constexpr u32 C = RR_COLS(T);
    __shared__ T tile[RTX_CANONICAL_BLOCK][C + 1];
    __shared__ u32 last;
    const u64 ng = (n + (RTX_CANONICAL_BLOCK - 1)) / RTX_CANONICAL_BLOCK;
    const u64 ct = (f + C - 1) / C;
    u32* counters = reinterpret_cast<u32*>(cl.counters);
    for (u64 t = blockIdx.x; t < ng * ct; t += gridDim.x) {
        const u64 g = t / ct, tile_j = t - g * ct, c0 = tile_j * C;
        const u64 r0 = g * RTX_CANONICAL_BLOCK;
        const u32 cols = (u32)min((u64)C, f - c0);
        rr_tile<BATCH, T>(tile, load, r0, (u32)min((u64)RTX_CANONICAL_BLOCK, n - r0), c0, cols,
                   reinterpret_cast<T*>(cl.out[0]) + g * f + c0);
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
            rr_tile<BATCH, T>(tile, FreshRowsLoad<T>{reinterpret_cast<const T*>(cl.out[i]), f}, first,
                       rows, c0, cols, reinterpret_cast<T*>(cl.out[i + 1]) + grp * f + c0);
            child = grp;
        }
    }
}

// in[r, j] of a row-major [n, f].
template <typename T>
struct RowsLoad {
    const T* __restrict__ in;
    u64 f;
    __device__ __forceinline__ T operator()(u64 r, u64 j) const { return __ldg(in + r * f + j); }
};

// a[r or 0, j] * s[r, j / c]: head_scale's product, computed as it is summed.
template <typename T>
struct HeadScaleLoad {
    const T* __restrict__ a;
    const T* __restrict__ s;
    u64 f, heads;
    u32 c;
    u64 a_rs;
    // j < f, a row of a tensor: the head in 32-bit arithmetic
    __device__ __forceinline__ T operator()(u64 r, u64 j) const {
        return rmul(__ldg(a + r * a_rs + j), __ldg(s + r * heads + (u32)j / c));
    }
};

#define RTX_REDUCE_ROWS(NAME, T)                                                            \
    extern "C" __global__ void __launch_bounds__(RTX_BLOCK)                                 \
        NAME(const T* __restrict__ in, u64 n, u64 f, RrClimb cl) {                          \
        reduce_rows_level<16, T>(RowsLoad<T>{in, f}, n, f, cl);                             \
    }
RTX_REDUCE_ROWS(reduce_rows_f32, float)
RTX_REDUCE_ROWS(reduce_rows_f64, double)

// head_scale_sum_rows: reduce_rows of head_scale(a, s) without storing the
// products (a_rs = 0 broadcasts a's one row).
#define RTX_HEAD_SCALE_ROWS(NAME, T)                                                        \
    extern "C" __global__ void __launch_bounds__(RTX_BLOCK)                                 \
        NAME(const T* __restrict__ a, const T* __restrict__ s, u64 n, u64 f, u64 c, u64 a_rs, \
             RrClimb cl) {                                                                  \
        reduce_rows_level<8, T>(HeadScaleLoad<T>{a, s, f, f / c, (u32)c, a_rs}, n, f, cl);  \
    }
RTX_HEAD_SCALE_ROWS(head_scale_rows_f32, float)
RTX_HEAD_SCALE_ROWS(head_scale_rows_f64, double)

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
// the order of its additions. With one chunk (k <= 256) this is the product;
// otherwise reduce_rows sums the chunks in the canonical order.
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

template <typename T, int TM, int TN>
__device__ __forceinline__ void matmul_level0(const T* __restrict__ a, const T* __restrict__ b,
                                              T* __restrict__ out, u64 m, u64 n, u64 k,
                                              u64 a_rs, u64 a_ps, u64 b_ps, u64 b_js,
                                              T (*As)[MM_T + MM_PAD], T (*Bs)[MM_T + MM_PAD]) {
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
            __syncthreads();
        }
        T* o = out + ch * m * n;
#pragma unroll
        for (int r = 0; r < 4; ++r) {
            const u64 gi = tm * TM + ty * 4 + r;
            if (gi >= m) continue;
#pragma unroll
            for (int c = 0; c < 4; ++c) {
                const u64 gj = tn * TN + tx * 4 + c;
                if (gj < n) o[gi * n + gj] = acc[r][c];
            }
        }
    }
}

// One entry point per element type and tile (each with its own registers:
// one kernel switching over the four tiles took 190 registers, a block per SM).
#define RTX_MATMUL(NAME, T, TM, TN)                                                         \
    extern "C" __global__ void __launch_bounds__((TM / 4) * (TN / 4))                       \
        NAME(const T* __restrict__ a, const T* __restrict__ b, T* __restrict__ out, u64 m,  \
             u64 n, u64 k, u64 a_rs, u64 a_ps, u64 b_ps, u64 b_js) {                        \
        __shared__ __align__(16) T As[MM_K][MM_T + MM_PAD];                                 \
        __shared__ __align__(16) T Bs[MM_K][MM_T + MM_PAD];                                 \
        matmul_level0<T, TM, TN>(a, b, out, m, n, k, a_rs, a_ps, b_ps, b_js, As, Bs);       \
    }
RTX_MATMUL(matmul64x64_f32, float, 64, 64)
RTX_MATMUL(matmul32x64_f32, float, 32, 64)
RTX_MATMUL(matmul64x32_f32, float, 64, 32)
RTX_MATMUL(matmul32x32_f32, float, 32, 32)
RTX_MATMUL(matmul64x64_f64, double, 64, 64)
RTX_MATMUL(matmul32x64_f64, double, 32, 64)
RTX_MATMUL(matmul64x32_f64, double, 64, 32)
RTX_MATMUL(matmul32x32_f64, double, 32, 32)

// Level 0 of op(a) @ op(b) for products of few columns (at most MMD_N =
// RTX_MATMUL_DOT_N, 8: the attention logits x @ head_dot(W, att), their
// weight gradients x^T @ da, the linear head). Every output is added left to
// right from -0.0 over its chunk's products: the same additions, in the same
// order, as matmul_level0, whose 32-wide tile would leave most of its
// columns idle. Out is [chunks, m, n] like matmul_level0's.
//
// matmul_dot_rows, for an A read along its rows (a_ps == 1): a thread per
// output row and chunk keeps the row's n sums; the block first stages the
// chunk of B ([<= 256, n]) in shared memory, where every thread reads the
// same address; the row is read in 16-byte vectors when aligned.
#define MMD_N RTX_MATMUL_DOT_N
template <typename T>
__device__ __forceinline__ void matmul_dot_rows(const T* __restrict__ a, const T* __restrict__ b,
                                                T* __restrict__ out, u64 m, u64 n, u64 k,
                                                u64 a_rs, u64 a_ps, u64 b_ps, u64 b_js) {
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
            bs[p][j] = b[(p0 + p) * b_ps + j * b_js];
        }
        __syncthreads();
        if (i < m) {
            T acc[MMD_N];
#pragma unroll
            for (u32 j = 0; j < MMD_N; ++j) acc[j] = T(-0.0);
            const T* __restrict__ ap = a + i * a_rs + p0 * a_ps;
            // 16-byte vectors: a quarter of the load instructions (each lane
            // reads its own row, so the lanes' loads never share a line)
            const bool vec = aligned16(ap);
            constexpr u32 B = 16;
            for (u32 p = 0; p < kc; p += B) {
                T x[B];
                if (vec && p + B <= kc) {
                    typedef typename Vec16<T>::V V;
                    constexpr u32 N = VecT<V>::N;
#pragma unroll
                    for (u32 q = 0; q < B / N; ++q) {
                        const V v = __ldg(reinterpret_cast<const V*>(ap + p) + q);
#pragma unroll
                        for (u32 c = 0; c < N; ++c) x[q * N + c] = comps(v)[c];
                    }
                } else {
#pragma unroll
                    for (u32 q = 0; q < B; ++q)
                        if (p + q < kc) x[q] = __ldg(ap + (u64)(p + q) * a_ps);
                }
#pragma unroll
                for (u32 q = 0; q < B; ++q)
                    if (p + q < kc)
#pragma unroll
                        for (u32 j = 0; j < MMD_N; ++j)
                            if (j < nn) acc[j] = radd(acc[j], rmul(x[q], bs[p + q][j]));
            }
            T* __restrict__ o = out + (ch * m + i) * n;
#pragma unroll
            for (u32 j = 0; j < MMD_N; ++j)
                if (j < nn) o[j] = acc[j];
        }
        __syncthreads();  // bs is rewritten for the next chunk
    }
}

// matmul_dot_outputs, for a transposed A (a_ps != 1: the weight gradients,
// few rows and long inner dimensions): a thread per output and chunk, so a
// product of 64 x 4 outputs still has 256 threads per chunk; the lanes'
// loads of A share lines.
template <typename T>
__device__ __forceinline__ void matmul_dot_outputs(const T* __restrict__ a,
                                                   const T* __restrict__ b, T* __restrict__ out,
                                                   u64 m, u64 n, u64 k, u64 a_rs, u64 a_ps,
                                                   u64 b_ps, u64 b_js) {
    const u64 chunks = (k + (RTX_CANONICAL_BLOCK - 1)) / RTX_CANONICAL_BLOCK;
    const u64 total = chunks * m * n;
    for (u64 t = thread_id(); t < total; t += grid_stride()) {
        const u64 r = t / n, j = t - r * n;
        const u64 ch = r / m, i = r - ch * m;
        const u64 p0 = ch * RTX_CANONICAL_BLOCK, p1 = min(k, p0 + RTX_CANONICAL_BLOCK);
        const T* __restrict__ ap = a + i * a_rs;
        const T* __restrict__ bp = b + j * b_js;
        T acc = T(-0.0);
        u64 p = p0;
        for (; p + 8 <= p1; p += 8) {
            T x[8], y[8];
#pragma unroll
            for (u32 q = 0; q < 8; ++q) {
                x[q] = __ldg(ap + (p + q) * a_ps);
                y[q] = __ldg(bp + (p + q) * b_ps);
            }
#pragma unroll
            for (u32 q = 0; q < 8; ++q) acc = radd(acc, rmul(x[q], y[q]));
        }
        for (; p < p1; ++p) acc = radd(acc, rmul(__ldg(ap + p * a_ps), __ldg(bp + p * b_ps)));
        out[t] = acc;
    }
}

// The host's grid: matmul_dot_grid (rows) or a thread per output (outputs).
#define RTX_MATMUL_DOT(NAME, T)                                                             \
    extern "C" __global__ void __launch_bounds__(RTX_BLOCK)                                 \
        NAME(const T* __restrict__ a, const T* __restrict__ b, T* __restrict__ out, u64 m,  \
             u64 n, u64 k, u64 a_rs, u64 a_ps, u64 b_ps, u64 b_js) {                        \
        if (a_ps == 1)                                                                      \
            matmul_dot_rows<T>(a, b, out, m, n, k, a_rs, a_ps, b_ps, b_js);                 \
        else                                                                                \
            matmul_dot_outputs<T>(a, b, out, m, n, k, a_rs, a_ps, b_ps, b_js);              \
    }
RTX_MATMUL_DOT(matmul_dot_f32, float)
RTX_MATMUL_DOT(matmul_dot_f64, double)

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

#define RTX_SEGMAX(NAME, T)                                                                 \
    extern "C" __global__ void __launch_bounds__(RTX_BLOCK)                                 \
        NAME(const T* __restrict__ vals, const u32* __restrict__ pos,                       \
             const u32* __restrict__ cstart, const u32* __restrict__ crow,                  \
             const u32* __restrict__ cslot, u64 nchunks, u64 f, T* __restrict__ dst,        \
             T* __restrict__ next) {                                                        \
        const u64 total = nchunks * f;                                                      \
        for (u64 t = thread_id(); t < total; t += grid_stride()) {                          \
            const u64 c = t / f, j = t - c * f;                                             \
            const u32 a = __ldg(cstart + c), b = __ldg(cstart + c + 1);                     \
            T mx = __ldg(vals + (pos ? (u64)__ldg(pos + a) : (u64)a) * f + j);              \
            for (u32 p = a + 1; p < b; p += 8) {                                            \
                T v[8];                                                                     \
                _Pragma("unroll") for (u32 q = 0; q < 8; ++q) if (p + q < b) v[q] =         \
                    __ldg(vals + (pos ? (u64)__ldg(pos + p + q) : (u64)(p + q)) * f + j);   \
                _Pragma("unroll") for (u32 q = 0; q < 8; ++q) if (p + q < b) mx =           \
                    max_step(mx, v[q]);                                                     \
            }                                                                               \
            const u32 slot = __ldg(cslot + c);                                              \
            if (slot == RTX_FINAL)                                                          \
                dst[(u64)__ldg(crow + c) * f + j] = mx;                                     \
            else                                                                            \
                next[(u64)slot * f + j] = mx;                                               \
        }                                                                                   \
    }
RTX_SEGMAX(segmax_f32, float)
RTX_SEGMAX(segmax_f64, double)

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

// A chunk's value or its slot in the next level, written once its chain is done:
// a sum goes into its row as `0 + t` (dst zeroed by the host), a max as is.
template <typename V, bool MAX>
__device__ __forceinline__ void put_chunk(V t, u32 slot, u64 row, u64 W, u64 j,
                                          V* __restrict__ dst, V* __restrict__ next) {
    if (slot == RTX_FINAL) {
        if constexpr (MAX) {
            dst[row * W + j] = t;
        } else {
            dst[row * W + j] = vadd(V{}, t);
        }
    } else {
        next[(u64)slot * W + j] = t;
    }
}

// Sum (or, MAX, segment max) of the values of the n staged keys ks[0..n),
// column vector j, continuing acc unless `first` (then from ks[0]'s value),
// left to right (index.cu's order). Keys come from shared memory, so each
// batch of B value loads is issued at once and then added in order.
template <typename V, bool MAX, typename Src>
__device__ __forceinline__ V staged_reduce(const Src& src, const typename Src::Key* ks, u32 n,
                                           u64 row, u64 j, V acc, bool first) {
    constexpr u32 B = 8;
    for (u32 p = 0; p < n; p += B) {
        V v[B];
#pragma unroll
        for (u32 q = 0; q < B; ++q)
            if (p + q < n) v[q] = src.value(ks[p + q], row, j);
#pragma unroll
        for (u32 q = 0; q < B; ++q)
            if (p + q < n) acc = (first && p + q == 0) ? v[q] : combine<V, MAX>(acc, v[q]);
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
template <typename V, bool MAX, typename Src>
__device__ __forceinline__ void grouped_level0(const Src& src, const u32* __restrict__ pos,
                                               const u32* __restrict__ cstart,
                                               const u32* __restrict__ crow,
                                               const u32* __restrict__ cslot, u64 nchunks, u64 W,
                                               u32 lanes_log2, V* __restrict__ dst,
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
        const u32 a = __ldg(cstart + c);
        const u32 b = __ldg(cstart + c + 1);
        const u32 slot = __ldg(cslot + c);
        const u64 row = __ldg(crow + c);
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
                    const V t = staged_reduce<V, MAX, Src>(src, ks, n, row, j, acc, true);
                    put_chunk<V, MAX>(t, slot, row, W, j, dst, next);
                }
            } else if (lane < W) {  // L < 16: one column per lane, across stages
                acc = staged_reduce<V, MAX, Src>(src, ks, n, row, lane, acc, s0 == a);
            }
            __syncwarp(mask);
        }
        if (b - a > cap && lane < W) put_chunk<V, MAX>(acc, slot, row, W, lane, dst, next);
    }
}

// The first chunk c in [0, nchunks] whose start cstart[c] is >= target
// (cstart ascending; c = nchunks when none is), found by the calling warp
// with a 32-ary search: about four load latencies for 100,000 chunks.
__device__ __forceinline__ u64 first_chunk_from(const u32* __restrict__ cstart, u64 nchunks,
                                                u64 target) {
    const u32 lane = threadIdx.x & 31;
    u64 lo = 0, hi = nchunks;  // the answer is in [lo, hi]
    while (lo < hi) {
        const u64 step = (hi - lo + 30) / 31;
        const u64 q = min(hi, lo + lane * step);
        const bool ge = q == nchunks || (u64)__ldg(cstart + q) >= target;
        const u32 f = __ffs(__ballot_sync(0xFFFFFFFFu, ge)) - 1;  // lane 31 probes hi: ge
        const u64 qf = min(hi, lo + f * step);
        if (f == 0) {
            hi = lo;
        } else {
            lo = min(hi, lo + (f - 1) * step) + 1;
            hi = qf;
        }
    }
    return lo;
}

// Level 0 of a segment sum (or max) whose values Src computes, for rows of at
// most 32 vectors. Block t takes window b of RTX_WIN positions and a slice of
// at most RTX_SLICE_BYTES of the columns: the chunks that start inside the
// window (from the plan's window table, or two warps find them with
// first_chunk_from when it has none), whose positions span at
// most RTX_WIN + 255 entries since no chunk is longer than 256. The whole
// block loads those entries' keys, then their values in the slice (4
// independent loads per thread at a time: with 8, the batch-8 HetGAT step
// ran 8% slower on the H200), into shared memory; then a group of lanes
// per chunk (a lane per column vector of the slice) adds the chunk up from
// shared memory, in position order. Every block has the same bounded work,
// however the chunks are spread: a hub row's 256-entry chunk costs a few load
// latencies, not one per 8 entries along its chain. The additions and their
// order are index.cu's: the first value of a chunk starts its chain, every
// later one is added to it.
template <typename V, bool MAX, typename Src>
__device__ __forceinline__ void windowed_level0(const Src& src, const u32* __restrict__ pos,
                                                const u32* __restrict__ wfirst,
                                                const u32* __restrict__ cstart,
                                                const u32* __restrict__ crow,
                                                const u32* __restrict__ cslot, u64 nchunks,
                                                u32 W, V* __restrict__ dst, V* __restrict__ next,
                                                unsigned char* smem) {
    typedef typename Src::Key K;
    constexpr u32 BATCH = 4;
    constexpr u32 SPAN = 2 * RTX_WIN;  // entries staged, at most RTX_WIN + 255
    constexpr u32 CW = RTX_SLICE_BYTES / sizeof(V);
    static_assert(SPAN * RTX_SLICE_BYTES <= RTX_WINDOW_BYTES, "a window's slice fits");
    static_assert(RTX_BLOCK >= 64, "two warps search");
    V* vals = reinterpret_cast<V*>(smem);
    K* keys = reinterpret_cast<K*>(smem + RTX_WINDOW_BYTES);
    __shared__ u64 range[2];
    const u64 entries = __ldg(cstart + nchunks);
    const u64 windows = (entries + RTX_WIN - 1) / RTX_WIN;
    const u32 slices = (W + CW - 1) / CW;
    for (u64 t = blockIdx.x; t < windows * slices; t += gridDim.x) {
        const u64 b = t / slices;
        const u32 j0 = (u32)(t - b * slices) * CW, cw = min(CW, W - j0);
        if (wfirst) {  // the plan's window table (levels::window_table)
            if (threadIdx.x < 2) range[threadIdx.x] = __ldg(wfirst + b + threadIdx.x);
        } else if (threadIdx.x < 64) {
            range[threadIdx.x >> 5] =
                first_chunk_from(cstart, nchunks, (b + (threadIdx.x >> 5)) * RTX_WIN);
        }
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
                    V v[BATCH];
#pragma unroll
                    for (u32 q = 0; q < BATCH; ++q)
                        if (e0 + q * P < n) v[q] = src.value(keys[e0 + q * P], 0, j0 + tc);
#pragma unroll
                    for (u32 q = 0; q < BATCH; ++q)
                        if (e0 + q * P < n) vals[(e0 + q * P) * cw + tc] = v[q];
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
                V acc = vals[a * cw + lane];
                for (u32 p = a + 1; p < e; p += BATCH) {
                    V v[BATCH];
#pragma unroll
                    for (u32 q = 0; q < BATCH; ++q)
                        if (p + q < e) v[q] = vals[(p + q) * cw + lane];
#pragma unroll
                    for (u32 q = 0; q < BATCH; ++q)
                        if (p + q < e) acc = combine<V, MAX>(acc, v[q]);
                }
                put_chunk<V, MAX>(acc, __ldg(cslot + cb + c), __ldg(crow + cb + c), W, j0 + lane,
                                  dst, next);
            }
        }
        __syncthreads();  // range, keys and vals are rewritten by the next window
    }
}

// Level 0 of a segment sum (or max) whose values Src computes (see
// windowed_level0 and grouped_level0).
template <typename V, bool MAX, typename Src>
__device__ __forceinline__ void fused_level0(const Src& src, const u32* __restrict__ pos,
                                             const u32* __restrict__ wfirst,
                                             const u32* __restrict__ cstart,
                                             const u32* __restrict__ crow,
                                             const u32* __restrict__ cslot, u64 nchunks, u64 W,
                                             u32 lanes_log2, V* __restrict__ dst,
                                             V* __restrict__ next) {
    __shared__ __align__(16) unsigned char
        smem[RTX_WINDOW_BYTES + 2 * RTX_WIN * sizeof(typename Src::Key)];
    if (W <= 32)
        windowed_level0<V, MAX>(src, pos, wfirst, cstart, crow, cslot, nchunks, (u32)W, dst, next,
                                smem);
    else
        grouped_level0<V, MAX>(src, pos, cstart, crow, cslot, nchunks, W, lanes_log2, dst, next,
                               smem);
}

// segment max and sum0, level 0: the stored value of the entry.
template <typename T>
struct ReadSrc {
    typedef u32 Key;
    const T* __restrict__ vals;
    u64 W;
    __device__ __forceinline__ Key key(u32 e) const { return e; }
    __device__ __forceinline__ T value(Key e, u64, u64 j) const { return __ldg(vals + (u64)e * W + j); }
};

// softmax backward: alpha[e] * grad[e], componentwise.
template <typename V>
struct SoftmaxBwd {
    typedef u32 Key;
    const V* __restrict__ alpha;
    const V* __restrict__ g;
    u64 W;
    __device__ __forceinline__ Key key(u32 e) const { return e; }
    __device__ __forceinline__ V value(Key e, u64, u64 j) const {
        const V av = __ldg(alpha + (u64)e * W + j);
        const V gv = __ldg(g + (u64)e * W + j);
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

// gather_scale_scatter: x[gather[e]] * w[e, head of the vector].
template <typename V>
struct GatherScale {
    typedef EntryRow Key;
    typedef typename VecT<V>::T T;
    const V* __restrict__ x;
    const u32* __restrict__ gather;
    const T* __restrict__ w;
    u64 W;
    u64 heads;
    u64 vecs_per_head;
    __device__ __forceinline__ Key key(u32 e) const {
        EntryRow k;
        k.e = e;
        k.g = __ldg(gather + e);
        return k;
    }
    __device__ __forceinline__ V value(Key k, u64, u64 j) const {
        const V xv = __ldg(x + (u64)k.g * W + j);
        const T s = __ldg(w + (u64)k.e * heads + j / vecs_per_head);
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

#define RTX_SUM0(NAME, V)                                                                   \
    extern "C" __global__ void __launch_bounds__(RTX_BLOCK, RTX_FUSED_MIN_BLOCKS)           \
        NAME(const V* __restrict__ vals, RTX_FUSED_ARGS, V* __restrict__ dst,               \
             V* __restrict__ next) {                                                        \
        ReadSrc<V> s{vals, W};                                                              \
        fused_level0<V, false>(s, pos, wfirst, cstart, crow, cslot, nchunks, W, lanes_log2, dst, next); \
    }
#define RTX_SMB0(NAME, V)                                                                   \
    extern "C" __global__ void __launch_bounds__(RTX_BLOCK, RTX_FUSED_MIN_BLOCKS)           \
        NAME(const V* __restrict__ alpha, const V* __restrict__ g, RTX_FUSED_ARGS,          \
             V* __restrict__ dst, V* __restrict__ next) {                                   \
        SoftmaxBwd<V> s{alpha, g, W};                                                       \
        fused_level0<V, false>(s, pos, wfirst, cstart, crow, cslot, nchunks, W, lanes_log2, dst, next);   \
    }
#define RTX_GSS0(NAME, V)                                                                   \
    extern "C" __global__ void __launch_bounds__(RTX_BLOCK, RTX_FUSED_MIN_BLOCKS)           \
        NAME(const V* __restrict__ x, const u32* __restrict__ gather,                       \
             const VecT<V>::T* __restrict__ w, u64 heads, u64 vecs_per_head,                \
             RTX_FUSED_ARGS, V* __restrict__ dst, V* __restrict__ next) {                   \
        GatherScale<V> s{x, gather, w, W, heads, vecs_per_head};                            \
        fused_level0<V, false>(s, pos, wfirst, cstart, crow, cslot, nchunks, W, lanes_log2, dst, next);   \
    }
// segmax0_{f32,f64}: level 0 of a segment max, keys staged (levels past it: segmax).
#define RTX_SEGMAX0(NAME, T)                                                                \
    extern "C" __global__ void __launch_bounds__(RTX_BLOCK, RTX_FUSED_MIN_BLOCKS)           \
        NAME(const T* __restrict__ vals, RTX_FUSED_ARGS, T* __restrict__ dst,               \
             T* __restrict__ next) {                                                        \
        ReadSrc<T> s{vals, W};                                                              \
        fused_level0<T, true>(s, pos, wfirst, cstart, crow, cslot, nchunks, W, lanes_log2, dst, next); \
    }
RTX_SEGMAX0(segmax0_f32, float)
RTX_SEGMAX0(segmax0_f64, double)

// {sum0,smb0,gss0}_{type}x{lanes}: level 0 of the model's segment sums of
// stored values (segment_sum, the softmax's denominators: index.cu's scatter0
// stays index_add's), of the softmax backward's sums and of
// gather_scale_scatter; the vector types as index.cu's.
#define RTX_FUSED_ALL(SUFFIX, V)                                                            \
    RTX_SUM0(sum0_##SUFFIX, V)                                                              \
    RTX_SMB0(smb0_##SUFFIX, V)                                                              \
    RTX_GSS0(gss0_##SUFFIX, V)
RTX_FUSED_ALL(f32x4, float4)
RTX_FUSED_ALL(f32x2, float2)
RTX_FUSED_ALL(f32x1, float)
RTX_FUSED_ALL(f64x2, double2)
RTX_FUSED_ALL(f64x1, double)

// ex[e, j] = exp(x[e, j] - m[row, j]), row = rowof[e]: the softmax's numerators,
// one parallel pass (the sums then add stored values, like a scatter).
#define RTX_SOFTMAX_EXP(NAME, T)                                                            \
    extern "C" __global__ void __launch_bounds__(RTX_BLOCK)                                 \
        NAME(const T* __restrict__ x, const T* __restrict__ m, const u32* __restrict__ rowof, \
             T* __restrict__ out, u64 e, u64 f) {                                           \
        const u64 total = e * f;                                                            \
        for (u64 t = thread_id(); t < total; t += grid_stride()) {                          \
            const u64 p = t / f, j = t - p * f;                                             \
            const u64 r = (u64)__ldg(rowof + p) * f + j;                                    \
            out[t] = rexp(rsub(x[t], m[r]));                                                \
        }                                                                                   \
    }
RTX_SOFTMAX_EXP(softmax_exp_f32, float)
RTX_SOFTMAX_EXP(softmax_exp_f64, double)

// alpha[e, j] = ex[e, j] / s[row, j], row = rowof[e]: the last step of the
// softmax composition.
#define RTX_SOFTMAX_DIV(NAME, T)                                                            \
    extern "C" __global__ void __launch_bounds__(RTX_BLOCK)                                 \
        NAME(const T* __restrict__ ex, const T* __restrict__ s, const u32* __restrict__ rowof, \
             T* __restrict__ out, u64 e, u64 f) {                                           \
        const u64 total = e * f;                                                            \
        for (u64 t = thread_id(); t < total; t += grid_stride()) {                          \
            const u64 p = t / f, j = t - p * f;                                             \
            const u64 r = (u64)__ldg(rowof + p) * f + j;                                    \
            out[t] = rdiv(ex[t], s[r]);                                                     \
        }                                                                                   \
    }
RTX_SOFTMAX_DIV(softmax_div_f32, float)
RTX_SOFTMAX_DIV(softmax_div_f64, double)

// out[e, j] = alpha[e, j] * (g[e, j] - s[row, j]), row = rowof[e].
#define RTX_SOFTMAX_BWD(NAME, T)                                                            \
    extern "C" __global__ void __launch_bounds__(RTX_BLOCK)                                 \
        NAME(const T* __restrict__ alpha, const T* __restrict__ g, const T* __restrict__ s, \
             const u32* __restrict__ rowof, T* __restrict__ out, u64 e, u64 f) {            \
        const u64 total = e * f;                                                            \
        for (u64 t = thread_id(); t < total; t += grid_stride()) {                          \
            const u64 p = t / f, j = t - p * f;                                             \
            const u64 r = (u64)__ldg(rowof + p) * f + j;                                    \
            out[t] = rmul(alpha[t], rsub(g[t], s[r]));                                      \
        }                                                                                   \
    }
RTX_SOFTMAX_BWD(softmax_bwd_f32, float)
RTX_SOFTMAX_BWD(softmax_bwd_f64, double)
