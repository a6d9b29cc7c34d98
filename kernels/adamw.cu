/* AdamW over the whole flat parameter buffer (or a ZeRO-1 shard of it) in one launch:
 * fp32 master weights and moments, bf16 working copy with round-to-nearest-even or
 * stochastic rounding, per-tensor weight-decay and learning-rate multipliers from a small
 * table, gradient clipping from the global norm kept on the device (no host sync).
 */
#include <math.h>

#include "kernels/cuda_common.h"
#include "kernels/kernels.h"

#define ADAM_THREADS 256
#define ADAM_ITEMS   8 /* elements per thread; a block owns ADAM_THREADS*ADAM_ITEMS in a row */

struct adamw_kparams {
    float lr, b1, b2, eps, wd, grad_scale, max_norm;
    float bc1, bc2; /* 1 - beta^t */
    unsigned long long seed;
    int sr;
    const float *norm_sq;
};

__device__ __forceinline__ unsigned int hash_u32(unsigned long long seed, unsigned long long i)
{
    unsigned long long z = seed ^ (i * 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    z ^= z >> 31;
    return (unsigned int)z;
}

/* Round to bf16 by adding 16 random bits below the kept mantissa and truncating: rounds up
 * with probability equal to the dropped fraction, so the expectation is x. */
__device__ __forceinline__ bf16 bf16_round_stochastic(float x, unsigned int r)
{
    unsigned int b = __float_as_uint(x);
    if ((b & 0x7f800000u) == 0x7f800000u)
        return __float2bfloat16_rn(x); /* inf, nan */
    b = (b + (r & 0xffffu)) & 0xffff0000u;
    return __ushort_as_bfloat16((unsigned short)(b >> 16));
}

__device__ __forceinline__ float grad_at(const bf16 *g, int64_t i)
{
    return __bfloat162float(g[i]);
}

__device__ __forceinline__ float grad_at(const float *g, int64_t i)
{
    return g[i];
}

template <typename G>
__global__ void __launch_bounds__(ADAM_THREADS)
    adamw_kernel(bf16 *params, const G *grads, float *master, float *m, float *v, int64_t n,
                 int64_t first, const struct adamw_tensor *tab, int ntab, adamw_kparams p)
{
    __shared__ int s_idx;
    __shared__ float s_clip;
    const int64_t tile0 = (int64_t)blockIdx.x * ADAM_THREADS * ADAM_ITEMS;
    if (threadIdx.x == 0) {
        /* first table entry that ends after the tile's first element */
        const int64_t gi = first + tile0;
        int lo = 0, hi = ntab;
        while (lo < hi) {
            int mid = (lo + hi) / 2;
            if (tab[mid].offset + tab[mid].size <= gi)
                lo = mid + 1;
            else
                hi = mid;
        }
        s_idx = lo;
        float clip = 1.0f;
        if (p.norm_sq && p.max_norm > 0.0f) {
            float norm = sqrtf(*p.norm_sq) * p.grad_scale;
            clip = fminf(1.0f, p.max_norm / (norm + 1e-6f));
        }
        s_clip = clip;
    }
    __syncthreads();
    int idx = s_idx;
    const float gs = p.grad_scale * s_clip;
    for (int k = 0; k < ADAM_ITEMS; k++) {
        const int64_t i = tile0 + (int64_t)k * ADAM_THREADS + threadIdx.x;
        if (i >= n)
            break;
        const int64_t gi = first + i;
        while (idx < ntab && tab[idx].offset + tab[idx].size <= gi)
            idx++;
        if (idx >= ntab || gi < tab[idx].offset)
            continue; /* not a parameter of any tensor: left alone */
        const float wd = p.wd * tab[idx].wd_mult, lr = p.lr * tab[idx].lr_mult;
        const float g = grad_at(grads, i) * gs;
        const float mm = p.b1 * m[i] + (1.0f - p.b1) * g;
        const float vv = p.b2 * v[i] + (1.0f - p.b2) * g * g;
        m[i] = mm;
        v[i] = vv;
        float w = master ? master[i] : __bfloat162float(params[i]);
        const float mhat = mm / p.bc1, vhat = vv / p.bc2;
        w -= lr * (mhat / (sqrtf(vhat) + p.eps) + wd * w);
        if (master)
            master[i] = w;
        params[i] = p.sr ? bf16_round_stochastic(w, hash_u32(p.seed, (unsigned long long)gi))
                         : __float2bfloat16_rn(w);
    }
}

template <typename G>
static void adamw_launch(sl_bf16 *params, const G *grads, float *master, float *m, float *v,
                         int64_t n, int64_t first, const struct adamw_tensor *tensors, int ntensors,
                         const struct adamw_hparams *hp, cudaStream_t st)
{
    if (n <= 0)
        return;
    if (hp->step < 1)
        sl_cuda_fatal("kernels", "adamw step must be >= 1", "adamw_update", __FILE__, __LINE__);
    adamw_kparams p;
    p.lr = hp->lr;
    p.b1 = hp->beta1;
    p.b2 = hp->beta2;
    p.eps = hp->eps;
    p.wd = hp->weight_decay;
    p.grad_scale = hp->grad_scale;
    p.max_norm = hp->max_grad_norm;
    p.bc1 = (float)(1.0 - pow((double)hp->beta1, (double)hp->step));
    p.bc2 = (float)(1.0 - pow((double)hp->beta2, (double)hp->step));
    p.seed = hp->seed;
    p.sr = hp->stochastic_rounding;
    p.norm_sq = hp->grad_norm_sq;
    const int64_t tile = ADAM_THREADS * ADAM_ITEMS;
    const int64_t blocks = (n + tile - 1) / tile;
    if (blocks > 0x7fffffff)
        sl_cuda_fatal("kernels", "too many parameters for one launch", "adamw_update", __FILE__,
                      __LINE__);
    adamw_kernel<G><<<(unsigned int)blocks, ADAM_THREADS, 0, st>>>(params, grads, master, m, v, n,
                                                                   first, tensors, ntensors, p);
    CUDA_CHECK_LAUNCH();
}

extern "C" void adamw_update(sl_bf16 *params, const sl_bf16 *grads, float *master, float *m,
                             float *v, int64_t n, int64_t first, const struct adamw_tensor *tensors,
                             int ntensors, const struct adamw_hparams *hp, cudaStream_t st)
{
    adamw_launch(params, grads, master, m, v, n, first, tensors, ntensors, hp, st);
}

extern "C" void adamw_update_f32(sl_bf16 *params, const float *grads, float *master, float *m,
                                 float *v, int64_t n, int64_t first,
                                 const struct adamw_tensor *tensors, int ntensors,
                                 const struct adamw_hparams *hp, cudaStream_t st)
{
    adamw_launch(params, grads, master, m, v, n, first, tensors, ntensors, hp, st);
}
