/* Fatal-error reporting for the CUDA checks, and the small kernels: casts, fill, copy, add,
 * a deterministic sum and the two-stage global gradient norm.
 */
#include <stdio.h>
#include <stdlib.h>

#include "kernels/cuda_common.h"
#include "kernels/kernels.h"

static void (*fatal_hook)(void);

extern "C" void sl_cuda_set_fatal_hook(void (*hook)(void))
{
    fatal_hook = hook;
}

extern "C" void sl_cuda_fatal(const char *lib, const char *msg, const char *expr, const char *file,
                              int line)
{
    static int in_fatal;
    fprintf(stderr, "fatal: %s error '%s' in %s at %s:%d\n", lib, msg ? msg : "?", expr, file,
            line);
    fflush(stderr);
    if (fatal_hook && !in_fatal) {
        in_fatal = 1;
        fatal_hook();
    }
    exit(1);
}

extern "C" const char *sl_cublas_status_string(int s)
{
    switch (s) {
    case 0:
        return "CUBLAS_STATUS_SUCCESS";
    case 1:
        return "CUBLAS_STATUS_NOT_INITIALIZED";
    case 3:
        return "CUBLAS_STATUS_ALLOC_FAILED";
    case 7:
        return "CUBLAS_STATUS_INVALID_VALUE";
    case 8:
        return "CUBLAS_STATUS_ARCH_MISMATCH";
    case 11:
        return "CUBLAS_STATUS_MAPPING_ERROR";
    case 13:
        return "CUBLAS_STATUS_EXECUTION_FAILED";
    case 14:
        return "CUBLAS_STATUS_INTERNAL_ERROR";
    case 15:
        return "CUBLAS_STATUS_NOT_SUPPORTED";
    case 16:
        return "CUBLAS_STATUS_LICENSE_ERROR";
    default: {
        static char buf[48];
        snprintf(buf, sizeof(buf), "cublas status %d", s);
        return buf;
    }
    }
}

/* ---- casts, fill, copy, add: chunks of 8 elements, 16-byte accesses when aligned ------ */

__global__ void cast_f32_to_bf16_kernel(bf16 *dst, const float *src, size_t n, bool vec)
{
    size_t nchunks = (n + 7) / 8;
    for (size_t c = blockIdx.x * (size_t)blockDim.x + threadIdx.x; c < nchunks;
         c += (size_t)gridDim.x * blockDim.x) {
        size_t i = c * 8;
        if (vec && i + 8 <= n) {
            float4 a = reinterpret_cast<const float4 *>(src + i)[0];
            float4 b = reinterpret_cast<const float4 *>(src + i)[1];
            float f[8] = { a.x, a.y, a.z, a.w, b.x, b.y, b.z, b.w };
            store8_f32(dst + i, f);
        } else {
            for (size_t j = i; j < n && j < i + 8; j++)
                dst[j] = __float2bfloat16_rn(src[j]);
        }
    }
}

__global__ void cast_bf16_to_f32_kernel(float *dst, const bf16 *src, size_t n, bool vec)
{
    size_t nchunks = (n + 7) / 8;
    for (size_t c = blockIdx.x * (size_t)blockDim.x + threadIdx.x; c < nchunks;
         c += (size_t)gridDim.x * blockDim.x) {
        size_t i = c * 8;
        if (vec && i + 8 <= n) {
            float f[8];
            load8_f32(f, src + i);
            reinterpret_cast<float4 *>(dst + i)[0] = make_float4(f[0], f[1], f[2], f[3]);
            reinterpret_cast<float4 *>(dst + i)[1] = make_float4(f[4], f[5], f[6], f[7]);
        } else {
            for (size_t j = i; j < n && j < i + 8; j++)
                dst[j] = __bfloat162float(src[j]);
        }
    }
}

__global__ void fill_f32_kernel(float *dst, float v, size_t n)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x)
        dst[i] = v;
}

__global__ void fill_bf16_kernel(bf16 *dst, float v, size_t n)
{
    bf16 b = __float2bfloat16_rn(v);
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x)
        dst[i] = b;
}

__global__ void add_bf16_kernel(bf16 *out, const bf16 *a, const bf16 *b, size_t n, bool vec)
{
    size_t nchunks = (n + 7) / 8;
    for (size_t c = blockIdx.x * (size_t)blockDim.x + threadIdx.x; c < nchunks;
         c += (size_t)gridDim.x * blockDim.x) {
        size_t i = c * 8;
        if (vec && i + 8 <= n) {
            float x[8], y[8];
            load8_f32(x, a + i);
            load8_f32(y, b + i);
#pragma unroll
            for (int k = 0; k < 8; k++)
                x[k] += y[k];
            store8_f32(out + i, x);
        } else {
            for (size_t j = i; j < n && j < i + 8; j++)
                out[j] = __float2bfloat16_rn(__bfloat162float(a[j]) + __bfloat162float(b[j]));
        }
    }
}

__global__ void add_f32_kernel(float *out, const float *a, const float *b, size_t n)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x)
        out[i] = a[i] + b[i];
}

extern "C" void cast_f32_to_bf16(sl_bf16 *dst, const float *src, size_t n, cudaStream_t st)
{
    if (!n)
        return;
    bool vec = is_aligned16(dst) && is_aligned16(src);
    cast_f32_to_bf16_kernel<<<grid_for((n + 7) / 8), 256, 0, st>>>(dst, src, n, vec);
    CUDA_CHECK_LAUNCH();
}

extern "C" void cast_bf16_to_f32(float *dst, const sl_bf16 *src, size_t n, cudaStream_t st)
{
    if (!n)
        return;
    bool vec = is_aligned16(dst) && is_aligned16(src);
    cast_bf16_to_f32_kernel<<<grid_for((n + 7) / 8), 256, 0, st>>>(dst, src, n, vec);
    CUDA_CHECK_LAUNCH();
}

extern "C" void fill_f32(float *dst, float value, size_t n, cudaStream_t st)
{
    if (!n)
        return;
    fill_f32_kernel<<<grid_for(n), 256, 0, st>>>(dst, value, n);
    CUDA_CHECK_LAUNCH();
}

extern "C" void fill_bf16(sl_bf16 *dst, float value, size_t n, cudaStream_t st)
{
    if (!n)
        return;
    fill_bf16_kernel<<<grid_for(n), 256, 0, st>>>(dst, value, n);
    CUDA_CHECK_LAUNCH();
}

extern "C" void copy_bf16(sl_bf16 *dst, const sl_bf16 *src, size_t n, cudaStream_t st)
{
    if (!n || dst == src)
        return;
    CUDA_CHECK(cudaMemcpyAsync(dst, src, n * sizeof(bf16), cudaMemcpyDeviceToDevice, st));
}

extern "C" void add_bf16(sl_bf16 *out, const sl_bf16 *a, const sl_bf16 *b, size_t n,
                         cudaStream_t st)
{
    if (!n)
        return;
    bool vec = is_aligned16(out) && is_aligned16(a) && is_aligned16(b);
    add_bf16_kernel<<<grid_for((n + 7) / 8), 256, 0, st>>>(out, a, b, n, vec);
    CUDA_CHECK_LAUNCH();
}

extern "C" void add_f32(float *out, const float *a, const float *b, size_t n, cudaStream_t st)
{
    if (!n)
        return;
    add_f32_kernel<<<grid_for(n), 256, 0, st>>>(out, a, b, n);
    CUDA_CHECK_LAUNCH();
}

/* ---- deterministic sums -------------------------------------------------------------- */

__global__ void __launch_bounds__(1024)
    sum_f32_kernel(float *out, const float *in, size_t n, float scale)
{
    __shared__ float red[32];
    float acc = 0.0f;
    for (size_t i = threadIdx.x; i < n; i += blockDim.x)
        acc += in[i];
    acc = block_sum(acc, red);
    if (threadIdx.x == 0)
        out[0] = acc * scale;
}

extern "C" void sum_f32(float *out, const float *in, size_t n, float scale, cudaStream_t st)
{
    sum_f32_kernel<<<1, 1024, 0, st>>>(out, in, n, scale);
    CUDA_CHECK_LAUNCH();
}

/* Stage 1 of the global norm: a fixed grid of NORM_BLOCKS blocks, thread t of the grid takes
 * chunks t, t + grid, ... in order; one partial per block. Stage 2 sums the partials in
 * block order. The grid does not depend on the device, so the bits do not either. */
#define NORM_BLOCKS  1024
#define NORM_THREADS 256

__global__ void __launch_bounds__(NORM_THREADS)
    global_norm_partial_kernel(float *partials, const bf16 *g, size_t n, bool vec)
{
    __shared__ float red[32];
    size_t nchunks = (n + 7) / 8;
    float acc = 0.0f;
    for (size_t c = blockIdx.x * (size_t)blockDim.x + threadIdx.x; c < nchunks;
         c += (size_t)gridDim.x * blockDim.x) {
        size_t i = c * 8;
        if (vec && i + 8 <= n) {
            float x[8];
            load8_f32_cs(x, g + i);
#pragma unroll
            for (int k = 0; k < 8; k++)
                acc += x[k] * x[k];
        } else {
            for (size_t j = i; j < n && j < i + 8; j++) {
                float x = __bfloat162float(g[j]);
                acc += x * x;
            }
        }
    }
    acc = block_sum(acc, red);
    if (threadIdx.x == 0)
        partials[blockIdx.x] = acc;
}

__global__ void __launch_bounds__(NORM_BLOCKS)
    global_norm_final_kernel(float *out, const float *partials, int accumulate)
{
    __shared__ float red[32];
    float acc = block_sum(partials[threadIdx.x], red);
    if (threadIdx.x == 0)
        out[0] = accumulate ? out[0] + acc : acc;
}

extern "C" size_t global_norm_scratch_size(void)
{
    return NORM_BLOCKS * sizeof(float);
}

extern "C" void global_norm_sq(float *out, void *scratch, const sl_bf16 *g, size_t n,
                               int accumulate, cudaStream_t st)
{
    float *partials = (float *)scratch;
    global_norm_partial_kernel<<<NORM_BLOCKS, NORM_THREADS, 0, st>>>(partials, g, n,
                                                                     is_aligned16(g));
    CUDA_CHECK_LAUNCH();
    global_norm_final_kernel<<<1, NORM_BLOCKS, 0, st>>>(out, partials, accumulate);
    CUDA_CHECK_LAUNCH();
}

/* ---- fp32 gradient accumulation and its norm --------------------------------------------- */

__global__ void grad_accumulate_kernel(float *acc, const bf16 *g, size_t n, int overwrite)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x) {
        float x = __bfloat162float(g[i]);
        acc[i] = overwrite ? x : acc[i] + x;
    }
}

extern "C" void grad_accumulate_f32(float *acc, const sl_bf16 *g, size_t n, int overwrite,
                                    cudaStream_t st)
{
    if (!n)
        return;
    grad_accumulate_kernel<<<grid_for(n), 256, 0, st>>>(acc, g, n, overwrite);
    CUDA_CHECK_LAUNCH();
}

/* Stage 1 over fp32 values: the same fixed grid as the bf16 version, element-strided. */
__global__ void __launch_bounds__(NORM_THREADS)
    global_norm_partial_f32_kernel(float *partials, const float *g, size_t n)
{
    __shared__ float red[32];
    float acc = 0.0f;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x) {
        float x = g[i];
        acc += x * x;
    }
    acc = block_sum(acc, red);
    if (threadIdx.x == 0)
        partials[blockIdx.x] = acc;
}

extern "C" void global_norm_sq_f32(float *out, void *scratch, const float *g, size_t n,
                                   int accumulate, cudaStream_t st)
{
    float *partials = (float *)scratch;
    global_norm_partial_f32_kernel<<<NORM_BLOCKS, NORM_THREADS, 0, st>>>(partials, g, n);
    CUDA_CHECK_LAUNCH();
    global_norm_final_kernel<<<1, NORM_BLOCKS, 0, st>>>(out, partials, accumulate);
    CUDA_CHECK_LAUNCH();
}
