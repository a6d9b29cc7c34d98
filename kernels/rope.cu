/* Rotary position embedding: host helpers for the inverse frequencies (with Llama-3.1
 * scaling) and the cos/sin tables, and the in-place rotation of the q and k heads of the
 * fused qkv rows, forward and transpose (backward).
 */
#include <math.h>

#include "kernels/cuda_common.h"
#include "kernels/kernels.h"

extern "C" void rope_inv_freq(double *inv_freq, int D, const struct rope_config *cfg)
{
    const double pi = 3.14159265358979323846;
    for (int i = 0; i < D / 2; i++) {
        double f = pow(cfg->theta, -2.0 * i / D);
        if (cfg->factor > 0) {
            double orig = cfg->original_max_pos;
            double low_wl = orig / cfg->low_freq_factor, high_wl = orig / cfg->high_freq_factor;
            double wl = 2 * pi / f;
            if (wl > low_wl) {
                f = f / cfg->factor;
            } else if (wl >= high_wl) {
                double smooth = (orig / wl - cfg->low_freq_factor) /
                                (cfg->high_freq_factor - cfg->low_freq_factor);
                f = (1 - smooth) * f / cfg->factor + smooth * f;
            }
        }
        inv_freq[i] = f;
    }
}

extern "C" void rope_tables(float *cos_t, float *sin_t, int T, int D, const struct rope_config *cfg)
{
    double inv[512];
    int half = D / 2;
    if (half > 512)
        sl_cuda_fatal("kernels", "head_dim > 1024", "rope_tables", __FILE__, __LINE__);
    rope_inv_freq(inv, D, cfg);
    for (int t = 0; t < T; t++)
        for (int i = 0; i < half; i++) {
            double a = t * inv[i];
            cos_t[(size_t)t * half + i] = (float)cos(a);
            sin_t[(size_t)t * half + i] = (float)sin(a);
        }
}

template <bool INV>
__global__ void rope_kernel(bf16 *qkv, const float *cos_t, const float *sin_t, const int32_t *pos,
                            int T, int H, int row_stride, int D, size_t units)
{
    const int half = D / 2;
    for (size_t u = blockIdx.x * (size_t)blockDim.x + threadIdx.x; u < units;
         u += (size_t)gridDim.x * blockDim.x) {
        int i = (int)(u % half);
        size_t rest = u / half;
        int h = (int)(rest % H);
        size_t n = rest / H;
        int t = pos ? pos[n] : (int)(n % T);
        bf16 *p = qkv + n * row_stride + (size_t)h * D;
        float a = __bfloat162float(p[i]), b = __bfloat162float(p[i + half]);
        float c = cos_t[(size_t)t * half + i], s = sin_t[(size_t)t * half + i];
        if (INV)
            s = -s;
        p[i] = __float2bfloat16_rn(a * c - b * s);
        p[i + half] = __float2bfloat16_rn(a * s + b * c);
    }
}

template <bool INV>
static void rope(sl_bf16 *qkv, const float *cos_t, const float *sin_t, const int32_t *pos, int B,
                 int T, int Hq, int Hkv, int D, cudaStream_t st)
{
    size_t units = (size_t)B * T * (Hq + Hkv) * (D / 2);
    if (!units)
        return;
    unsigned int grid = grid_for(units);
    rope_kernel<INV>
        <<<grid, 256, 0, st>>>(qkv, cos_t, sin_t, pos, T, Hq + Hkv, (Hq + 2 * Hkv) * D, D, units);
    CUDA_CHECK_LAUNCH();
}

extern "C" void rope_fwd(sl_bf16 *qkv, const float *cos_t, const float *sin_t, int B, int T, int Hq,
                         int Hkv, int D, cudaStream_t st)
{
    rope<false>(qkv, cos_t, sin_t, NULL, B, T, Hq, Hkv, D, st);
}

extern "C" void rope_fwd_at(sl_bf16 *qkv, const float *cos_t, const float *sin_t,
                            const int32_t *pos, int B, int T, int Hq, int Hkv, int D,
                            cudaStream_t st)
{
    rope<false>(qkv, cos_t, sin_t, pos, B, T, Hq, Hkv, D, st);
}

extern "C" void rope_bwd(sl_bf16 *dqkv, const float *cos_t, const float *sin_t, int B, int T,
                         int Hq, int Hkv, int D, cudaStream_t st)
{
    rope<true>(dqkv, cos_t, sin_t, NULL, B, T, Hq, Hkv, D, st);
}

extern "C" void rope_bwd_at(sl_bf16 *dqkv, const float *cos_t, const float *sin_t,
                            const int32_t *pos, int B, int T, int Hq, int Hkv, int D,
                            cudaStream_t st)
{
    rope<true>(dqkv, cos_t, sin_t, pos, B, T, Hq, Hkv, D, st);
}
