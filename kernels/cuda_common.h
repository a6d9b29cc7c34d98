/* Error checks that name file:line (CUDA_CHECK, CUBLAS_CHECK, CUDNN_CHECK) for C and CUDA
 * code, the fatal-error hook, and (for .cu files only) the device helpers every kernel uses:
 * 16-byte packs of bf16, warp and block reductions in a fixed order.
 *
 * The checks fail fast: they print "fatal: <lib> error ..." on stderr, call the hook set
 * with sl_cuda_set_fatal_hook() (the trainer passes one that calls MPI_Abort) and exit(1).
 */
#ifndef SL_KERNELS_CUDA_COMMON_H
#define SL_KERNELS_CUDA_COMMON_H

#include <stddef.h>
#include <stdint.h>
#include <cuda_runtime_api.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Print the failure, run the hook, exit(1). `lib` is "cuda", "cublas", "cudnn", ... */
void sl_cuda_fatal(const char *lib, const char *msg, const char *expr, const char *file, int line)
    __attribute__((noreturn));
/* Called (once) before exiting on a fatal error; NULL restores the default (none). */
void sl_cuda_set_fatal_hook(void (*hook)(void));
/* Text of a cuBLAS status (the numeric code when unknown). */
const char *sl_cublas_status_string(int status);
/* Text of a cuDNN status plus cuDNN's last error message (defined in attention_cudnn.cu). */
const char *sl_cudnn_status_string(int status);

#ifdef __cplusplus
}
#endif

#define CUDA_CHECK(call)                                                                           \
    do {                                                                                           \
        cudaError_t e_ = (call);                                                                   \
        if (e_ != cudaSuccess)                                                                     \
            sl_cuda_fatal("cuda", cudaGetErrorString(e_), #call, __FILE__, __LINE__);              \
    } while (0)

/* After a kernel launch: launch-configuration errors (no device sync). */
#define CUDA_CHECK_LAUNCH() CUDA_CHECK(cudaGetLastError())

#define CUBLAS_CHECK(call)                                                                         \
    do {                                                                                           \
        int s_ = (int)(call);                                                                      \
        if (s_ != 0)                                                                               \
            sl_cuda_fatal("cublas", sl_cublas_status_string(s_), #call, __FILE__, __LINE__);       \
    } while (0)

#define CUDNN_CHECK(call)                                                                          \
    do {                                                                                           \
        int s_ = (int)(call);                                                                      \
        if (s_ != 0)                                                                               \
            sl_cuda_fatal("cudnn", sl_cudnn_status_string(s_), #call, __FILE__, __LINE__);         \
    } while (0)

/* ---- device helpers (CUDA translation units only; SL_CUDA_EMU: kernels/emu/emu.h) ---- */
#if defined(__CUDACC__) || defined(SL_CUDA_EMU)
#include <math.h>
#include <cuda_bf16.h>

typedef __nv_bfloat16 bf16;

/* Eight bf16 in one 16-byte load or store. */
union bf16x8 {
    int4 raw;
    __nv_bfloat162 h2[4];
    bf16 h[8];
};

__device__ __forceinline__ void load8_f32(float out[8], const bf16 *p)
{
    bf16x8 u;
    u.raw = *reinterpret_cast<const int4 *>(p);
#pragma unroll
    for (int i = 0; i < 4; i++) {
        float2 f = __bfloat1622float2(u.h2[i]);
        out[2 * i] = f.x;
        out[2 * i + 1] = f.y;
    }
}

/* Load that does not keep the line in L1/L2 longer than needed (streamed data). */
__device__ __forceinline__ void load8_f32_cs(float out[8], const bf16 *p)
{
    bf16x8 u;
    u.raw = __ldcs(reinterpret_cast<const int4 *>(p));
#pragma unroll
    for (int i = 0; i < 4; i++) {
        float2 f = __bfloat1622float2(u.h2[i]);
        out[2 * i] = f.x;
        out[2 * i + 1] = f.y;
    }
}

__device__ __forceinline__ void store8_f32(bf16 *p, const float in[8])
{
    bf16x8 u;
#pragma unroll
    for (int i = 0; i < 4; i++)
        u.h2[i] = __floats2bfloat162_rn(in[2 * i], in[2 * i + 1]);
    *reinterpret_cast<int4 *>(p) = u.raw;
}

/* Load/store VEC consecutive bf16 as floats: VEC 8 uses 16-byte accesses (the pointer must
 * be 16-byte aligned), VEC 1 a single element. */
template <int VEC> __device__ __forceinline__ void loadv(float out[VEC], const bf16 *p)
{
    if constexpr (VEC == 8) {
        load8_f32(out, p);
    } else {
#pragma unroll
        for (int i = 0; i < VEC; i++)
            out[i] = __bfloat162float(p[i]);
    }
}

template <int VEC> __device__ __forceinline__ void storev(bf16 *p, const float in[VEC])
{
    if constexpr (VEC == 8) {
        store8_f32(p, in);
    } else {
#pragma unroll
        for (int i = 0; i < VEC; i++)
            p[i] = __float2bfloat16_rn(in[i]);
    }
}

__device__ __forceinline__ float warp_sum(float v)
{
#pragma unroll
    for (int o = 16; o > 0; o >>= 1)
        v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

__device__ __forceinline__ float warp_max(float v)
{
#pragma unroll
    for (int o = 16; o > 0; o >>= 1)
        v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
    return v;
}

/* Sum over the block in a fixed order (warp butterflies, then warp 0 over the warp sums):
 * the same inputs give the same bits. Every thread gets the result. `smem` holds 32 floats.
 * Must be called by all threads of the block; blockDim.x a multiple of 32. */
__device__ __forceinline__ float block_sum(float v, float *smem)
{
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const int nwarps = blockDim.x >> 5;
    v = warp_sum(v);
    __syncthreads(); /* smem may still be read from a previous call */
    if (lane == 0)
        smem[warp] = v;
    __syncthreads();
    v = lane < nwarps ? smem[lane] : 0.0f;
    return warp_sum(v);
}

__device__ __forceinline__ float block_max(float v, float *smem)
{
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const int nwarps = blockDim.x >> 5;
    v = warp_max(v);
    __syncthreads();
    if (lane == 0)
        smem[warp] = v;
    __syncthreads();
    v = lane < nwarps ? smem[lane] : -INFINITY;
    return warp_max(v);
}

/* 16-byte alignment test for choosing the vector path. */
__host__ __device__ __forceinline__ bool is_aligned16(const void *p)
{
    return (reinterpret_cast<uintptr_t>(p) & 15) == 0;
}

static inline unsigned int ceil_div_u(size_t a, size_t b)
{
    return (unsigned int)((a + b - 1) / b);
}

/* Grid for a grid-stride loop over `work` items with 256-thread blocks (at least one block,
 * at most 65536). */
static inline unsigned int grid_for(size_t work)
{
    size_t b = (work + 255) / 256;
    if (b > 65536)
        b = 65536;
    return (unsigned int)(b ? b : 1);
}

#endif /* __CUDACC__ || SL_CUDA_EMU */

#endif
