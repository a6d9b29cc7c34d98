/* GELU (tanh approximation and the exact erf form) and SwiGLU, forward and backward:
 * element-wise, fp32 math, 16-byte accesses when aligned.
 */
#include "kernels/cuda_common.h"
#include "kernels/kernels.h"

#define GELU_S 0.7978845608028654f /* sqrt(2/pi) */
#define GELU_K 0.044715f

__device__ __forceinline__ float gelu_f(float x)
{
    float u = GELU_S * (x + GELU_K * x * x * x);
    return 0.5f * x * (1.0f + tanhf(u));
}

__device__ __forceinline__ float gelu_grad_f(float x)
{
    float u = GELU_S * (x + GELU_K * x * x * x);
    float t = tanhf(u);
    return 0.5f * (1.0f + t) + 0.5f * x * (1.0f - t * t) * GELU_S * (1.0f + 3.0f * GELU_K * x * x);
}

/* the exact GELU of NeMo/Megatron GPT-3 configs: x Phi(x), Phi the normal CDF */
__device__ __forceinline__ float gelu_erf_f(float x)
{
    return 0.5f * x * (1.0f + erff(x * 0.70710678118654752f));
}

/* Phi(x) + x phi(x) */
__device__ __forceinline__ float gelu_erf_grad_f(float x)
{
    float cdf = 0.5f * (1.0f + erff(x * 0.70710678118654752f));
    float pdf = 0.39894228040143268f * expf(-0.5f * x * x);
    return cdf + x * pdf;
}

/* The two forms as policies of one pair of kernels. */
struct gelu_tanh {
    static __device__ __forceinline__ float fwd(float x)
    {
        return gelu_f(x);
    }
    static __device__ __forceinline__ float grad(float x)
    {
        return gelu_grad_f(x);
    }
};
struct gelu_erf {
    static __device__ __forceinline__ float fwd(float x)
    {
        return gelu_erf_f(x);
    }
    static __device__ __forceinline__ float grad(float x)
    {
        return gelu_erf_grad_f(x);
    }
};

template <class G> __global__ void gelu_fwd_kernel(bf16 *out, const bf16 *x, size_t n, bool vec)
{
    size_t nchunks = (n + 7) / 8;
    for (size_t c = blockIdx.x * (size_t)blockDim.x + threadIdx.x; c < nchunks;
         c += (size_t)gridDim.x * blockDim.x) {
        size_t i = c * 8;
        if (vec && i + 8 <= n) {
            float a[8];
            load8_f32(a, x + i);
#pragma unroll
            for (int k = 0; k < 8; k++)
                a[k] = G::fwd(a[k]);
            store8_f32(out + i, a);
        } else {
            for (size_t j = i; j < n && j < i + 8; j++)
                out[j] = __float2bfloat16_rn(G::fwd(__bfloat162float(x[j])));
        }
    }
}

template <class G>
__global__ void gelu_bwd_kernel(bf16 *dx, const bf16 *dout, const bf16 *x, size_t n, bool vec)
{
    size_t nchunks = (n + 7) / 8;
    for (size_t c = blockIdx.x * (size_t)blockDim.x + threadIdx.x; c < nchunks;
         c += (size_t)gridDim.x * blockDim.x) {
        size_t i = c * 8;
        if (vec && i + 8 <= n) {
            float a[8], d[8];
            load8_f32(a, x + i);
            load8_f32(d, dout + i);
#pragma unroll
            for (int k = 0; k < 8; k++)
                d[k] *= G::grad(a[k]);
            store8_f32(dx + i, d);
        } else {
            for (size_t j = i; j < n && j < i + 8; j++)
                dx[j] = __float2bfloat16_rn(__bfloat162float(dout[j]) *
                                            G::grad(__bfloat162float(x[j])));
        }
    }
}

template <class G>
static void gelu_fwd_launch(sl_bf16 *out, const sl_bf16 *x, size_t n, cudaStream_t st)
{
    if (!n)
        return;
    bool vec = is_aligned16(out) && is_aligned16(x);
    gelu_fwd_kernel<G><<<grid_for((n + 7) / 8), 256, 0, st>>>(out, x, n, vec);
    CUDA_CHECK_LAUNCH();
}

template <class G>
static void gelu_bwd_launch(sl_bf16 *dx, const sl_bf16 *dout, const sl_bf16 *x, size_t n,
                            cudaStream_t st)
{
    if (!n)
        return;
    bool vec = is_aligned16(dx) && is_aligned16(dout) && is_aligned16(x);
    gelu_bwd_kernel<G><<<grid_for((n + 7) / 8), 256, 0, st>>>(dx, dout, x, n, vec);
    CUDA_CHECK_LAUNCH();
}

extern "C" void gelu_fwd(sl_bf16 *out, const sl_bf16 *x, size_t n, cudaStream_t st)
{
    gelu_fwd_launch<gelu_tanh>(out, x, n, st);
}

extern "C" void gelu_bwd(sl_bf16 *dx, const sl_bf16 *dout, const sl_bf16 *x, size_t n,
                         cudaStream_t st)
{
    gelu_bwd_launch<gelu_tanh>(dx, dout, x, n, st);
}

extern "C" void gelu_erf_fwd(sl_bf16 *out, const sl_bf16 *x, size_t n, cudaStream_t st)
{
    gelu_fwd_launch<gelu_erf>(out, x, n, st);
}

extern "C" void gelu_erf_bwd(sl_bf16 *dx, const sl_bf16 *dout, const sl_bf16 *x, size_t n,
                             cudaStream_t st)
{
    gelu_bwd_launch<gelu_erf>(dx, dout, x, n, st);
}

/* ---- SwiGLU ------------------------------------------------------------------------- */

__device__ __forceinline__ float sigmoid_f(float g)
{
    return 1.0f / (1.0f + expf(-g));
}

template <int VEC>
__global__ void swiglu_fwd_kernel(bf16 *out, const bf16 *inp, int F, size_t units)
{
    const int per_row = F / VEC;
    for (size_t u = blockIdx.x * (size_t)blockDim.x + threadIdx.x; u < units;
         u += (size_t)gridDim.x * blockDim.x) {
        size_t n = u / per_row;
        int f = (int)(u % per_row) * VEC;
        float g[VEC], up[VEC];
        loadv<VEC>(g, inp + n * 2 * F + f);
        loadv<VEC>(up, inp + n * 2 * F + F + f);
#pragma unroll
        for (int i = 0; i < VEC; i++)
            g[i] = g[i] * sigmoid_f(g[i]) * up[i];
        storev<VEC>(out + n * F + f, g);
    }
}

template <int VEC>
__global__ void swiglu_bwd_kernel(bf16 *dinp, const bf16 *dout, const bf16 *inp, int F,
                                  size_t units)
{
    const int per_row = F / VEC;
    for (size_t u = blockIdx.x * (size_t)blockDim.x + threadIdx.x; u < units;
         u += (size_t)gridDim.x * blockDim.x) {
        size_t n = u / per_row;
        int f = (int)(u % per_row) * VEC;
        float g[VEC], up[VEC], d[VEC], dg[VEC], du[VEC];
        loadv<VEC>(g, inp + n * 2 * F + f);
        loadv<VEC>(up, inp + n * 2 * F + F + f);
        loadv<VEC>(d, dout + n * F + f);
#pragma unroll
        for (int i = 0; i < VEC; i++) {
            float s = sigmoid_f(g[i]);
            float silu = g[i] * s;
            dg[i] = d[i] * up[i] * s * (1.0f + g[i] * (1.0f - s));
            du[i] = d[i] * silu;
        }
        storev<VEC>(dinp + n * 2 * F + f, dg);
        storev<VEC>(dinp + n * 2 * F + F + f, du);
    }
}

extern "C" void swiglu_fwd(sl_bf16 *out, const sl_bf16 *inp, int N, int F, cudaStream_t st)
{
    if (N <= 0 || F <= 0)
        return;
    bool vec = F % 8 == 0 && is_aligned16(out) && is_aligned16(inp);
    size_t units = (size_t)N * (vec ? F / 8 : F);
    if (vec)
        swiglu_fwd_kernel<8><<<grid_for(units), 256, 0, st>>>(out, inp, F, units);
    else
        swiglu_fwd_kernel<1><<<grid_for(units), 256, 0, st>>>(out, inp, F, units);
    CUDA_CHECK_LAUNCH();
}

extern "C" void swiglu_bwd(sl_bf16 *dinp, const sl_bf16 *dout, const sl_bf16 *inp, int N, int F,
                           cudaStream_t st)
{
    if (N <= 0 || F <= 0)
        return;
    bool vec = F % 8 == 0 && is_aligned16(dinp) && is_aligned16(dout) && is_aligned16(inp);
    size_t units = (size_t)N * (vec ? F / 8 : F);
    if (vec)
        swiglu_bwd_kernel<8><<<grid_for(units), 256, 0, st>>>(dinp, dout, inp, F, units);
    else
        swiglu_bwd_kernel<1><<<grid_for(units), 256, 0, st>>>(dinp, dout, inp, F, units);
    CUDA_CHECK_LAUNCH();
}
