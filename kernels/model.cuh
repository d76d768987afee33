// Shared definitions of the kernels of a graph-attention model's ops
// (rtx-backend's `ops` module) on the device, in three files by op family:
// model.cu (elementwise ops, per-head scale and the fused elementwise ops),
// dense.cu (the canonical-order matrix product, row sums and per-head dots)
// and segment.cu (the segment ops driven by the scatter-add's chunk tables).
// rtx-backend-cuda puts this file once before them in the translation unit
// (src/source.rs drops their `#include "model.cuh"` lines, as it does
// common.cuh's); each file still includes it, so it compiles alone with nvcc.
//
// Exactness. Every floating operation is an explicit round-to-nearest
// intrinsic (__fadd_rn, __fmul_rn, ...) and the unit is compiled with
// --fmad=false, so each result is the IEEE result of the reference's
// operations in the reference's order (crates/rtx-backend/src/ops/rows.rs and
// src/reference.rs): the matrix product, the row sums and the per-head dots
// follow the canonical order (blocks of 256 terms left to right from the
// first, then the block sums the same way), so they are bit-identical to the
// CPU backend. `exp` is rtx-backend's portable exp (rexp below, the same
// operations as the host's), so it too is bit-identical to the CPU backend,
// and the segment softmax reproduces its composition (segment_max, gather,
// sub, exp, segment_sum, gather, div) bit for bit.
#pragma once
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
// The one ln of the backend (the cross-entropy's log-sum-exp): rtx-backend's portable
// ln (crates/rtx-backend/src/exp.rs, ln64 / ln32), line for line in explicit
// round-to-nearest operations: x = 2^k m with m in [sqrt(1/2), sqrt(2)] (bit moves),
// f = (m - 1) / (m + 1), ln m = 2 (f + f^3 p(f^2)) with the atanh series p by Horner,
// then k LN2_HI + (k LN2_LO + ln m).
__device__ __forceinline__ double rln64(double x) {
    if (x != x || x < 0.0) return __longlong_as_double(0x7ff8000000000000ll);
    if (x == 0.0) return __longlong_as_double((long long)0xfff0000000000000ull);
    if (x == __longlong_as_double(0x7ff0000000000000ll)) return x;
    unsigned long long bits = (unsigned long long)__double_as_longlong(x);
    long long k = 0;
    if ((bits >> 52) == 0) {
        bits = (unsigned long long)__double_as_longlong(__dmul_rn(x, 18014398509481984.0));
        k = -54;
    }
    k += (long long)(bits >> 52) - 1023;
    double m = __longlong_as_double(
        (long long)((bits & 0x000fffffffffffffull) | 0x3ff0000000000000ull));
    if (m > 1.4142135623730951) {
        m = __dmul_rn(m, 0.5);
        k += 1;
    }
    const double f = __ddiv_rn(__dsub_rn(m, 1.0), __dadd_rn(m, 1.0));
    const double w = __dmul_rn(f, f);
    const double c[11] = {0.043478260869565216, 0.047619047619047616, 0.05263157894736842,
                          0.058823529411764705, 0.06666666666666667,  0.07692307692307693,
                          0.09090909090909091,  0.1111111111111111,   0.14285714285714285,
                          0.2,                  0.3333333333333333};
    double p = c[0];
#pragma unroll
    for (int i = 1; i < 11; ++i) p = __dadd_rn(__dmul_rn(p, w), c[i]);
    const double lnm = __dmul_rn(2.0, __dadd_rn(f, __dmul_rn(__dmul_rn(f, w), p)));
    const double kf = (double)k;
    return __dadd_rn(__dmul_rn(kf, 0.6931471803691238),
                     __dadd_rn(__dmul_rn(kf, 1.9082149292705877e-10), lnm));
}
__device__ __forceinline__ float rln32(float x) {
    if (x != x || x < 0.0f) return __int_as_float(0x7fc00000);
    if (x == 0.0f) return __int_as_float((int)0xff800000u);
    if (x == __int_as_float(0x7f800000)) return x;
    unsigned int bits = (unsigned int)__float_as_int(x);
    int k = 0;
    if ((bits >> 23) == 0) {
        bits = (unsigned int)__float_as_int(__fmul_rn(x, 33554432.0f));
        k = -25;
    }
    k += (int)(bits >> 23) - 127;
    float m = __int_as_float((int)((bits & 0x007fffffu) | 0x3f800000u));
    if (m > 1.4142135381698608f) {
        m = __fmul_rn(m, 0.5f);
        k += 1;
    }
    const float f = __fdiv_rn(__fsub_rn(m, 1.0f), __fadd_rn(m, 1.0f));
    const float w = __fmul_rn(f, f);
    const float c[5] = {0.09090909361839294f, 0.1111111119389534f, 0.1428571492433548f,
                        0.20000000298023224f, 0.3333333432674408f};
    float p = c[0];
#pragma unroll
    for (int i = 1; i < 5; ++i) p = __fadd_rn(__fmul_rn(p, w), c[i]);
    const float lnm = __fmul_rn(2.0f, __fadd_rn(f, __fmul_rn(__fmul_rn(f, w), p)));
    const float kf = (float)k;
    return __fadd_rn(__fmul_rn(kf, 0.693145751953125f),
                     __fadd_rn(__fmul_rn(kf, 1.428606765330187e-06f), lnm));
}
__device__ __forceinline__ float rln(float a) { return rln32(a); }
__device__ __forceinline__ double rln(double a) { return rln64(a); }
// The correctly rounded square root (Rust's f32::sqrt / f64::sqrt are IEEE's too).
__device__ __forceinline__ float rroot(float a) { return __fsqrt_rn(a); }
__device__ __forceinline__ double rroot(double a) { return __dsqrt_rn(a); }

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

template <> struct VecT<f32x8> { typedef float T; enum { N = 8 }; };

// Element kinds: what a kernel over stored elements `S` computes in (`A`),
// how it reads a stored element (`ld`) and rounds a result to storage
// (`st`), and the same for a 16-byte vector of stored elements (`SV`, whose
// values are an `AV` of `VecT<AV>::N` components: `vld`, `vst`). For float
// and double every member is the identity, so a kernel written over a kind
// is the plain kernel. For the half types `A` is float, `ld` the exact
// widening and `st` the one rounding (common.cuh's Bf16 / F16, the host's
// conversions bit for bit): a half kernel computes exactly what the f32
// kernel computes on the widened inputs and rounds each output once, which
// is the definition of a half op (rtx_backend::ops), so its bits are the
// host reference's. Scratch between a kernel's levels is kept in `A`.
struct KF32 {
    typedef float S;
    typedef float A;
    typedef float4 SV;
    typedef float4 AV;
    static __device__ __forceinline__ A ld(S v) { return v; }
    static __device__ __forceinline__ S st(A v) { return v; }
    static __device__ __forceinline__ AV vld(SV v) { return v; }
    static __device__ __forceinline__ SV vst(AV v) { return v; }
};
struct KF64 {
    typedef double S;
    typedef double A;
    typedef double2 SV;
    typedef double2 AV;
    static __device__ __forceinline__ A ld(S v) { return v; }
    static __device__ __forceinline__ S st(A v) { return v; }
    static __device__ __forceinline__ AV vld(SV v) { return v; }
    static __device__ __forceinline__ SV vst(AV v) { return v; }
};
template <typename H>
struct KHalf {
    typedef u16 S;
    typedef float A;
    typedef uint4 SV;
    typedef f32x8 AV;
    static __device__ __forceinline__ A ld(S v) { return H::widen(v); }
    static __device__ __forceinline__ S st(A v) { return (S)H::narrow(v); }
    static __device__ __forceinline__ float4 vld4(uint2 v) {
        return make_float4(H::widen(v.x), H::widen(v.x >> 16), H::widen(v.y), H::widen(v.y >> 16));
    }
    static __device__ __forceinline__ AV vld(SV v) {
        AV r;
        r.a = vld4(make_uint2(v.x, v.y));
        r.b = vld4(make_uint2(v.z, v.w));
        return r;
    }
    static __device__ __forceinline__ SV vst(AV v) { return hnarrow<H>(v); }
};
typedef KHalf<Bf16> KBf16;
typedef KHalf<F16> KF16;

__device__ __forceinline__ u64 grid_stride() { return (u64)gridDim.x * blockDim.x; }
__device__ __forceinline__ u64 thread_id() { return (u64)blockIdx.x * blockDim.x + threadIdx.x; }

// 16 bytes of T.
template <typename T> struct Vec16;
template <> struct Vec16<float> { typedef float4 V; };
template <> struct Vec16<double> { typedef double2 V; };
__device__ __forceinline__ bool aligned16(const void* p) { return ((u64)p & 15) == 0; }
