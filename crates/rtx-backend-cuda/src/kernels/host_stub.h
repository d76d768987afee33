// Host stand-ins for what NVRTC provides (qualifiers, built-in variables,
// vector types, intrinsics), declared with their CUDA signatures so that a
// host C++ compiler can check the kernels' C++ without a device: syntax,
// names, types and every template the kernels instantiate. Declarations
// only; nothing here runs. Used by kernels/host_check_tests.rs.
#include <cstdint>
#include <cmath>
#include <algorithm>
using std::min; using std::max;
#define __global__
#define __device__
#define __host__
#define __shared__
#define __forceinline__ inline
#define __noinline__
#define __restrict__ __restrict
#define __launch_bounds__(...)
#define __align__(n) alignas(n)
#define __grid_constant__
struct uint3 { unsigned x, y, z; };
struct dim3 { unsigned x, y, z; };
extern uint3 threadIdx, blockIdx;
extern dim3 blockDim, gridDim;
constexpr int warpSize = 32;
struct alignas(8) float2 { float x, y; };
struct alignas(16) float4 { float x, y, z, w; };
struct alignas(16) double2 { double x, y; };
struct alignas(8) uint2 { unsigned x, y; };
struct alignas(16) uint4 { unsigned x, y, z, w; };
struct alignas(8) int2 { int x, y; };
struct alignas(16) int4 { int x, y, z, w; };
struct ushort2 { unsigned short x, y; };
inline float2 make_float2(float a, float b) { return {a, b}; }
inline float4 make_float4(float a, float b, float c, float d) { return {a, b, c, d}; }
inline double2 make_double2(double a, double b) { return {a, b}; }
inline uint2 make_uint2(unsigned a, unsigned b) { return {a, b}; }
inline uint4 make_uint4(unsigned a, unsigned b, unsigned c, unsigned d) { return {a, b, c, d}; }
void __syncthreads();
void __syncwarp(unsigned mask = 0xffffffffu);
void __threadfence();
[[noreturn]] void __trap();
template <class T> T __ldg(const T* p);
template <class T> T __ldcg(const T* p);
template <class T> void __stcs(T* p, T v);
float __fadd_rn(float, float); float __fsub_rn(float, float); float __fmul_rn(float, float);
float __fdiv_rn(float, float); float __fsqrt_rn(float);
double __dadd_rn(double, double); double __dsub_rn(double, double); double __dmul_rn(double, double);
double __ddiv_rn(double, double); double __dsqrt_rn(double);
float __int_as_float(int); int __float_as_int(float); float __uint_as_float(unsigned);
unsigned __float_as_uint(float); double __longlong_as_double(long long); long long __double_as_longlong(double);
int __popc(unsigned); int __clz(int); unsigned __byte_perm(unsigned, unsigned, unsigned);
unsigned long long __umul64hi(unsigned long long, unsigned long long);
template <class T> T __shfl_xor_sync(unsigned, T, int, int = 32);
template <class T> T __shfl_up_sync(unsigned, T, unsigned, int = 32);
template <class T> unsigned __match_any_sync(unsigned, T);
size_t __cvta_generic_to_shared(const void*);
template <class T> T atomicAdd(T*, T);
template <class T> T atomicMax(T*, T);
template <class T> T atomicCAS(T*, T, T);
