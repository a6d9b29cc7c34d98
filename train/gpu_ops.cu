/* The exact (erf) GELU forward and backward for the GPU trainer (train/gpu_ops.h). */
#include "train/gpu_ops.h"

#include "kernels/cuda_common.h"

__global__ void gelu_erf_fwd_kernel(bf16 *out, const bf16 *x, size_t n)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x) {
        float v = __bfloat162float(x[i]);
        out[i] = __float2bfloat16_rn(0.5f * v * (1.0f + erff(v * 0.70710678118654752f)));
    }
}

__global__ void gelu_erf_bwd_kernel(bf16 *dx, const bf16 *dout, const bf16 *x, size_t n)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x) {
        float v = __bfloat162float(x[i]);
        float cdf = 0.5f * (1.0f + erff(v * 0.70710678118654752f));
        float pdf = 0.39894228040143268f * expf(-0.5f * v * v);
        dx[i] = __float2bfloat16_rn(__bfloat162float(dout[i]) * (cdf + v * pdf));
    }
}

static unsigned int grid_for(size_t n)
{
    size_t g = (n + 255) / 256;
    return (unsigned int)(g < 65536 ? (g ? g : 1) : 65536);
}

extern "C" void gelu_erf_fwd(sl_bf16 *out, const sl_bf16 *x, size_t n, cudaStream_t st)
{
    gelu_erf_fwd_kernel<<<grid_for(n), 256, 0, st>>>(out, x, n);
    CUDA_CHECK_LAUNCH();
}

extern "C" void gelu_erf_bwd(sl_bf16 *dx, const sl_bf16 *dout, const sl_bf16 *x, size_t n,
                             cudaStream_t st)
{
    gelu_erf_bwd_kernel<<<grid_for(n), 256, 0, st>>>(dx, dout, x, n);
    CUDA_CHECK_LAUNCH();
}
