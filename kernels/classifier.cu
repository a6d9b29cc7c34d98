/* The fused classifier: softmax, cross-entropy loss and the logits gradient in one kernel,
 * one block per row. Pass 1 keeps a running (max, sum of exp) per thread over the bf16
 * logits, combined across the block in a fixed order; pass 2 re-reads the row (from L2) and
 * overwrites it with the gradient. No fp32 copy of the logits is ever made.
 */
#include "kernels/cuda_common.h"
#include "kernels/kernels.h"

#define CLS_THREADS 1024
#define LOG2E       1.4426950408889634f
#define LN2         0.6931471805599453f

/* Merge (m2, s2) into (m, s): both are "sum of 2^(x - m)" in the log2 domain. */
__device__ __forceinline__ void lse_merge(float &m, float &s, float m2, float s2)
{
    float M = fmaxf(m, m2);
    if (M == -INFINITY)
        return; /* both empty */
    s = s * exp2f(m - M) + s2 * exp2f(m2 - M);
    m = M;
}

template <int VEC>
__global__ void __launch_bounds__(CLS_THREADS)
    classifier_kernel(float *losses, bf16 *logits, const int32_t *targets, int N, int V, int Vp,
                      float dloss, int write_dlogits)
{
    __shared__ float sm_m[32], sm_s[32];
    __shared__ float sm_M, sm_S, sm_xt;
    const int row = N - 1 - blockIdx.x; /* reverse order: the last rows are likeliest in L2 */
    bf16 *x = logits + (size_t)row * Vp;
    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    const int target = targets[row];

    /* pass 1: running max and sum, in log2 units (y = x * log2 e) */
    float m = -INFINITY, s = 0.0f;
    for (int c = tid * VEC; c < V; c += CLS_THREADS * VEC) {
        float a[VEC];
        loadv<VEC>(a, x + c);
        float cm = -INFINITY;
#pragma unroll
        for (int i = 0; i < VEC; i++) {
            a[i] *= LOG2E;
            if (c + i < V)
                cm = fmaxf(cm, a[i]);
        }
        if (cm > m) {
            s *= exp2f(m - cm);
            m = cm;
        }
#pragma unroll
        for (int i = 0; i < VEC; i++)
            if (c + i < V)
                s += exp2f(a[i] - m);
    }
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) {
        float m2 = __shfl_xor_sync(0xffffffffu, m, o);
        float s2 = __shfl_xor_sync(0xffffffffu, s, o);
        lse_merge(m, s, m2, s2);
    }
    if (lane == 0) {
        sm_m[warp] = m;
        sm_s[warp] = s;
    }
    __syncthreads();
    if (tid == 0) {
        float M = sm_m[0], S = sm_s[0];
        for (int w = 1; w < CLS_THREADS / 32; w++)
            lse_merge(M, S, sm_m[w], sm_s[w]);
        float xt = (target >= 0 && target < V) ? __bfloat162float(x[target]) : 0.0f;
        sm_M = M;
        sm_S = S;
        sm_xt = xt;
        /* logsumexp in natural units: (M + log2 S) * ln 2 */
        losses[row] = target >= 0 ? (M + log2f(S)) * LN2 - xt : 0.0f;
    }
    __syncthreads(); /* x[target] is read before anyone overwrites it */
    if (!write_dlogits)
        return;
    const float M = sm_M, inv_S = 1.0f / sm_S;
    for (int c = tid * VEC; c < Vp; c += CLS_THREADS * VEC) {
        float a[VEC];
        loadv<VEC>(a, x + c);
#pragma unroll
        for (int i = 0; i < VEC; i++) {
            const int col = c + i;
            float g = 0.0f;
            if (target >= 0 && col < V) {
                float p = exp2f(a[i] * LOG2E - M) * inv_S;
                g = (p - (col == target ? 1.0f : 0.0f)) * dloss;
            }
            a[i] = g;
        }
        storev<VEC>(x + c, a);
    }
}

extern "C" void classifier_fwd_bwd(float *losses, sl_bf16 *logits, const int32_t *targets, int N,
                                   int V, int Vp, float dloss, int write_dlogits, cudaStream_t st)
{
    if (N <= 0)
        return;
    if (Vp < V)
        sl_cuda_fatal("kernels", "padded vocabulary Vp < V", "classifier_fwd_bwd", __FILE__,
                      __LINE__);
    if (Vp % 8 == 0 && is_aligned16(logits))
        classifier_kernel<8>
            <<<N, CLS_THREADS, 0, st>>>(losses, logits, targets, N, V, Vp, dloss, write_dlogits);
    else
        classifier_kernel<1>
            <<<N, CLS_THREADS, 0, st>>>(losses, logits, targets, N, V, Vp, dloss, write_dlogits);
    CUDA_CHECK_LAUNCH();
}

/* ---- vocab-parallel: the rank holds columns [v0, v0 + V) of the vocabulary ----------------- */

#define VP_THREADS 256

/* The block's reduction of v (max or sum), in a fixed order: warps by shuffles, then thread
 * 0 over the warps in order. Every thread gets the result. */
template <int MAX> __device__ float vp_block_reduce(float v, float *sm)
{
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) {
        float u = __shfl_xor_sync(0xffffffffu, v, o);
        v = MAX ? fmaxf(v, u) : v + u;
    }
    if (lane == 0)
        sm[warp] = v;
    __syncthreads();
    if (threadIdx.x == 0) {
        float r = sm[0];
        for (int w = 1; w < VP_THREADS / 32; w++)
            r = MAX ? fmaxf(r, sm[w]) : r + sm[w];
        sm[32] = r;
    }
    __syncthreads();
    float r = sm[32];
    __syncthreads(); /* sm is free again */
    return r;
}

/* One block per row. Phase 0: mx[row] = the largest of the row's V logits, tlogit[row] = the
 * target's logit when this rank holds it (else 0). Phase 1: sumexp[row] = sum of
 * 2^(x log2 e - mx log2 e) over the V logits, with mx the maximum over every rank. */
__global__ void __launch_bounds__(VP_THREADS)
    classifier_vp_partial_kernel(float *mx, float *sumexp, float *tlogit, const bf16 *logits,
                                 const int32_t *targets, int v0, int V, int Vp, int phase)
{
    __shared__ float sm[33];
    const int row = blockIdx.x;
    const bf16 *x = logits + (size_t)row * Vp;
    if (phase == 0) {
        float m = -INFINITY;
        for (int c = threadIdx.x; c < V; c += VP_THREADS)
            m = fmaxf(m, __bfloat162float(x[c]));
        m = vp_block_reduce<1>(m, sm);
        if (threadIdx.x == 0) {
            const int t = targets[row] - v0;
            mx[row] = m;
            tlogit[row] = (targets[row] >= 0 && t >= 0 && t < V) ? __bfloat162float(x[t]) : 0.0f;
        }
        return;
    }
    const float M = mx[row] * LOG2E;
    float s = 0.0f;
    for (int c = threadIdx.x; c < V; c += VP_THREADS)
        s += exp2f(__bfloat162float(x[c]) * LOG2E - M);
    s = vp_block_reduce<0>(s, sm);
    if (threadIdx.x == 0)
        sumexp[row] = s;
}

/* One block per row: the loss from the reduced statistics, and the row's logits overwritten
 * with their gradient. */
__global__ void __launch_bounds__(VP_THREADS)
    classifier_vp_finish_kernel(float *losses, bf16 *logits, const int32_t *targets,
                                const float *mx, const float *sumexp, const float *tlogit, int v0,
                                int V, int Vp, float dloss, int write_dlogits)
{
    const int row = blockIdx.x;
    const int target = targets[row], t = target - v0;
    const float M = mx[row] * LOG2E, S = sumexp[row];
    if (threadIdx.x == 0)
        losses[row] = target >= 0 ? (M + log2f(S)) * LN2 - tlogit[row] : 0.0f;
    if (!write_dlogits)
        return;
    bf16 *x = logits + (size_t)row * Vp;
    const float inv_S = 1.0f / S;
    for (int c = threadIdx.x; c < Vp; c += VP_THREADS) {
        float g = 0.0f;
        if (target >= 0 && c < V) {
            float p = exp2f(__bfloat162float(x[c]) * LOG2E - M) * inv_S;
            g = (p - (c == t ? 1.0f : 0.0f)) * dloss;
        }
        x[c] = __float2bfloat16(g);
    }
}

extern "C" void classifier_vp_partial(float *mx, float *sumexp, float *tlogit,
                                      const sl_bf16 *logits, const int32_t *targets, int v0, int N,
                                      int V, int Vp, int phase, cudaStream_t st)
{
    if (N <= 0)
        return;
    if (Vp < V)
        sl_cuda_fatal("kernels", "padded vocabulary Vp < V", "classifier_vp_partial", __FILE__,
                      __LINE__);
    classifier_vp_partial_kernel<<<N, VP_THREADS, 0, st>>>(mx, sumexp, tlogit, logits, targets, v0,
                                                           V, Vp, phase);
    CUDA_CHECK_LAUNCH();
}

extern "C" void classifier_vp_finish(float *losses, sl_bf16 *logits, const int32_t *targets,
                                     const float *mx, const float *sumexp, const float *tlogit,
                                     int v0, int N, int V, int Vp, float dloss, int write_dlogits,
                                     cudaStream_t st)
{
    if (N <= 0)
        return;
    classifier_vp_finish_kernel<<<N, VP_THREADS, 0, st>>>(losses, logits, targets, mx, sumexp,
                                                          tlogit, v0, V, Vp, dloss, write_dlogits);
    CUDA_CHECK_LAUNCH();
}
