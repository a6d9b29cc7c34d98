/* LayerNorm and RMSNorm fused with the residual add (forward: one warp per row), their
 * backward, and the bias gradient.
 *
 * The backward is deterministic without atomics: a fixed grid of blocks walks groups of 8
 * rows; each warp computes one row's two reductions, then the block sweeps the 8 rows column
 * by column, each thread owning the same columns for the whole kernel, so it accumulates the
 * weight/bias gradient of its columns in registers. The per-block partial sums are added in
 * block order by a second kernel.
 */
#include "kernels/cuda_common.h"
#include "kernels/kernels.h"

#define NF_WARPS     8   /* forward: rows per 256-thread block */
#define NB_THREADS   256 /* backward block */
#define NB_ROWS      8   /* rows per group = warps per backward block */
#define NB_MAXCOL    32  /* columns one thread owns at most: C <= NB_THREADS * NB_MAXCOL */
#define NB_MAXBLOCKS 512

template <int VEC, bool RMS>
__global__ void __launch_bounds__(NF_WARPS * 32)
    norm_fwd_kernel(bf16 *out, float *mean_out, float *rstd_out, bf16 *resid_out, const bf16 *x,
                    const bf16 *r, const bf16 *w, const bf16 *b, int N, int C, float eps)
{
    const int lane = threadIdx.x & 31;
    const int row = blockIdx.x * NF_WARPS + (threadIdx.x >> 5);
    if (row >= N)
        return;
    const size_t base = (size_t)row * C;
    const bf16 *h = x + base;
    float sum = 0.0f;
    for (int c = lane * VEC; c < C; c += 32 * VEC) {
        float a[VEC];
        loadv<VEC>(a, x + base + c);
        if (r) {
            float q[VEC];
            loadv<VEC>(q, r + base + c);
#pragma unroll
            for (int i = 0; i < VEC; i++)
                a[i] = __bfloat162float(__float2bfloat16_rn(a[i] + q[i]));
            storev<VEC>(resid_out + base + c, a);
        }
#pragma unroll
        for (int i = 0; i < VEC; i++)
            sum += RMS ? a[i] * a[i] : a[i];
    }
    if (r)
        h = resid_out + base; /* each lane re-reads only what it wrote */
    sum = warp_sum(sum);
    float mean = 0.0f, rstd;
    if (RMS) {
        rstd = rsqrtf(sum / C + eps);
    } else {
        mean = sum / C;
        float var = 0.0f;
        for (int c = lane * VEC; c < C; c += 32 * VEC) {
            float a[VEC];
            loadv<VEC>(a, h + c);
#pragma unroll
            for (int i = 0; i < VEC; i++)
                var += (a[i] - mean) * (a[i] - mean);
        }
        var = warp_sum(var);
        rstd = rsqrtf(var / C + eps);
    }
    for (int c = lane * VEC; c < C; c += 32 * VEC) {
        float a[VEC], wv[VEC], o[VEC];
        loadv<VEC>(a, h + c);
        loadv<VEC>(wv, w + c);
        if (!RMS && b) {
            float bv[VEC];
            loadv<VEC>(bv, b + c);
#pragma unroll
            for (int i = 0; i < VEC; i++)
                o[i] = (a[i] - mean) * rstd * wv[i] + bv[i];
        } else {
#pragma unroll
            for (int i = 0; i < VEC; i++)
                o[i] = (a[i] - mean) * rstd * wv[i];
        }
        storev<VEC>(out + base + c, o);
    }
    if (lane == 0) {
        if (mean_out)
            mean_out[row] = mean;
        if (rstd_out)
            rstd_out[row] = rstd;
    }
}

template <bool RMS>
static void norm_fwd(sl_bf16 *out, float *mean, float *rstd, sl_bf16 *resid_out, const sl_bf16 *x,
                     const sl_bf16 *r, const sl_bf16 *w, const sl_bf16 *b, int N, int C, float eps,
                     cudaStream_t st)
{
    if (N <= 0 || C <= 0)
        return;
    bool vec = C % 8 == 0 && is_aligned16(out) && is_aligned16(x) && is_aligned16(w) &&
               (!b || is_aligned16(b)) && (!r || (is_aligned16(r) && is_aligned16(resid_out)));
    unsigned int grid = (unsigned int)((N + NF_WARPS - 1) / NF_WARPS);
    if (vec)
        norm_fwd_kernel<8, RMS>
            <<<grid, NF_WARPS * 32, 0, st>>>(out, mean, rstd, resid_out, x, r, w, b, N, C, eps);
    else
        norm_fwd_kernel<1, RMS>
            <<<grid, NF_WARPS * 32, 0, st>>>(out, mean, rstd, resid_out, x, r, w, b, N, C, eps);
    CUDA_CHECK_LAUNCH();
}

extern "C" void layernorm_fwd(sl_bf16 *out, float *mean, float *rstd, sl_bf16 *resid_out,
                              const sl_bf16 *x, const sl_bf16 *r, const sl_bf16 *w,
                              const sl_bf16 *b, int N, int C, float eps, cudaStream_t st)
{
    norm_fwd<false>(out, mean, rstd, resid_out, x, r, w, b, N, C, eps, st);
}

extern "C" void rmsnorm_fwd(sl_bf16 *out, float *rstd, sl_bf16 *resid_out, const sl_bf16 *x,
                            const sl_bf16 *r, const sl_bf16 *w, int N, int C, float eps,
                            cudaStream_t st)
{
    norm_fwd<true>(out, nullptr, rstd, resid_out, x, r, w, nullptr, N, C, eps, st);
}

/* ---- backward ------------------------------------------------------------------------ */

static int nb_blocks(int N)
{
    int g = (N + NB_ROWS - 1) / NB_ROWS;
    return g < NB_MAXBLOCKS ? g : NB_MAXBLOCKS;
}

extern "C" size_t norm_bwd_scratch_size(int N, int C)
{
    return (size_t)nb_blocks(N) * 2 * (size_t)C * sizeof(float);
}

/* partials[block][0][C] = dw partial, partials[block][1][C] = db partial. */
template <int VEC, bool RMS>
__global__ void __launch_bounds__(NB_THREADS)
    norm_bwd_kernel(bf16 *dinp, float *partials, const bf16 *dresid, const bf16 *dout,
                    const bf16 *h, const bf16 *w, const float *mean, const float *rstd, int N,
                    int C)
{
    constexpr int CH = NB_MAXCOL / VEC;
    __shared__ float s_c1[NB_ROWS], s_c2[NB_ROWS];
    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    float dw_acc[CH][VEC], db_acc[CH][VEC];
#pragma unroll
    for (int j = 0; j < CH; j++)
#pragma unroll
        for (int i = 0; i < VEC; i++)
            dw_acc[j][i] = db_acc[j][i] = 0.0f;

    for (int g = blockIdx.x; (size_t)g * NB_ROWS < (size_t)N; g += gridDim.x) {
        const int row0 = g * NB_ROWS;
        /* phase A: warp w reduces row row0 + w */
        const int row = row0 + warp;
        if (row < N) {
            const size_t base = (size_t)row * C;
            const float mu = RMS ? 0.0f : mean[row], rs = rstd[row];
            float s1 = 0.0f, s2 = 0.0f;
            for (int c = lane * VEC; c < C; c += 32 * VEC) {
                float dy[VEC], hv[VEC], wv[VEC];
                loadv<VEC>(dy, dout + base + c);
                loadv<VEC>(hv, h + base + c);
                loadv<VEC>(wv, w + c);
#pragma unroll
                for (int i = 0; i < VEC; i++) {
                    float dn = dy[i] * wv[i];
                    s1 += dn;
                    s2 += dn * (hv[i] - mu) * rs;
                }
            }
            s1 = warp_sum(s1);
            s2 = warp_sum(s2);
            if (lane == 0) {
                s_c1[warp] = s1 / C;
                s_c2[warp] = s2 / C;
            }
        }
        __syncthreads();
        /* phase B: the block sweeps the group's rows; a thread keeps its columns */
        for (int k = 0; k < NB_ROWS && row0 + k < N; k++) {
            const int rr = row0 + k;
            const size_t base = (size_t)rr * C;
            const float mu = RMS ? 0.0f : mean[rr], rs = rstd[rr];
            const float c1 = RMS ? 0.0f : s_c1[k], c2 = s_c2[k];
#pragma unroll
            for (int j = 0; j < CH; j++) {
                const int c = (j * NB_THREADS + tid) * VEC;
                if (c < C) {
                    float dy[VEC], hv[VEC], wv[VEC], dx[VEC];
                    loadv<VEC>(dy, dout + base + c);
                    loadv<VEC>(hv, h + base + c);
                    loadv<VEC>(wv, w + c);
                    if (dresid) {
                        loadv<VEC>(dx, dresid + base + c);
                    } else {
#pragma unroll
                        for (int i = 0; i < VEC; i++)
                            dx[i] = 0.0f;
                    }
#pragma unroll
                    for (int i = 0; i < VEC; i++) {
                        float nrm = (hv[i] - mu) * rs;
                        float dn = dy[i] * wv[i];
                        dx[i] += rs * (dn - c1 - nrm * c2);
                        dw_acc[j][i] += dy[i] * nrm;
                        db_acc[j][i] += dy[i];
                    }
                    storev<VEC>(dinp + base + c, dx);
                }
            }
        }
        __syncthreads();
    }
    float *p = partials + (size_t)blockIdx.x * 2 * C;
#pragma unroll
    for (int j = 0; j < CH; j++) {
        const int c = (j * NB_THREADS + tid) * VEC;
        if (c < C) {
#pragma unroll
            for (int i = 0; i < VEC; i++) {
                p[c + i] = dw_acc[j][i];
                p[C + c + i] = db_acc[j][i];
            }
        }
    }
}

/* Partial sums of dout over rows, same grid and column ownership as norm_bwd_kernel. */
template <int VEC>
__global__ void __launch_bounds__(NB_THREADS)
    bias_partial_kernel(float *partials, const bf16 *dout, int N, int C)
{
    constexpr int CH = NB_MAXCOL / VEC;
    const int tid = threadIdx.x, col0 = blockIdx.y * NB_THREADS * NB_MAXCOL;
    float acc[CH][VEC];
#pragma unroll
    for (int j = 0; j < CH; j++)
#pragma unroll
        for (int i = 0; i < VEC; i++)
            acc[j][i] = 0.0f;
    for (int g = blockIdx.x; (size_t)g * NB_ROWS < (size_t)N; g += gridDim.x) {
        for (int k = 0; k < NB_ROWS && g * NB_ROWS + k < N; k++) {
            const size_t base = (size_t)(g * NB_ROWS + k) * C;
#pragma unroll
            for (int j = 0; j < CH; j++) {
                const int c = col0 + (j * NB_THREADS + tid) * VEC;
                if (c < C) {
                    float dy[VEC];
                    loadv<VEC>(dy, dout + base + c);
#pragma unroll
                    for (int i = 0; i < VEC; i++)
                        acc[j][i] += dy[i];
                }
            }
        }
    }
    float *p = partials + (size_t)blockIdx.x * 2 * C;
#pragma unroll
    for (int j = 0; j < CH; j++) {
        const int c = col0 + (j * NB_THREADS + tid) * VEC;
        if (c < C) {
#pragma unroll
            for (int i = 0; i < VEC; i++)
                p[C + c + i] = acc[j][i];
        }
    }
}

/* out0[c] += sum_g partials[g][0][c], out1[c] += sum_g partials[g][1][c] (either may be
 * NULL). A block covers 32 columns; warp w adds blocks w, w+32, ...; then the 32 warp sums
 * are added in warp order. */
__global__ void __launch_bounds__(1024)
    column_reduce_kernel(bf16 *out0, bf16 *out1, const float *partials, int G, int C)
{
    __shared__ float red[2][32][33];
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const int c = blockIdx.x * 32 + lane;
    float a = 0.0f, b = 0.0f;
    if (c < C) {
        for (int g = warp; g < G; g += 32) {
            const float *p = partials + (size_t)g * 2 * C;
            if (out0)
                a += p[c];
            if (out1)
                b += p[C + c];
        }
    }
    red[0][warp][lane] = a;
    red[1][warp][lane] = b;
    __syncthreads();
    if (warp == 0 && c < C) {
        float sa = 0.0f, sb = 0.0f;
        for (int k = 0; k < 32; k++) {
            sa += red[0][k][lane];
            sb += red[1][k][lane];
        }
        if (out0)
            out0[c] = __float2bfloat16_rn(__bfloat162float(out0[c]) + sa);
        if (out1)
            out1[c] = __float2bfloat16_rn(__bfloat162float(out1[c]) + sb);
    }
}

static void check_width(int C, const char *fn)
{
    if (C > NB_THREADS * NB_MAXCOL)
        sl_cuda_fatal("kernels", "row width C > 8192 is not supported", fn, __FILE__, __LINE__);
}

template <bool RMS>
static void norm_bwd(sl_bf16 *dinp, sl_bf16 *dw, sl_bf16 *db, void *scratch, const sl_bf16 *dresid,
                     const sl_bf16 *dout, const sl_bf16 *h, const sl_bf16 *w, const float *mean,
                     const float *rstd, int N, int C, cudaStream_t st)
{
    if (N <= 0 || C <= 0)
        return;
    check_width(C, RMS ? "rmsnorm_bwd" : "layernorm_bwd");
    float *partials = (float *)scratch;
    int G = nb_blocks(N);
    bool vec = C % 8 == 0 && is_aligned16(dinp) && is_aligned16(dout) && is_aligned16(h) &&
               is_aligned16(w) && (!dresid || is_aligned16(dresid));
    if (vec)
        norm_bwd_kernel<8, RMS>
            <<<G, NB_THREADS, 0, st>>>(dinp, partials, dresid, dout, h, w, mean, rstd, N, C);
    else
        norm_bwd_kernel<1, RMS>
            <<<G, NB_THREADS, 0, st>>>(dinp, partials, dresid, dout, h, w, mean, rstd, N, C);
    CUDA_CHECK_LAUNCH();
    if (dw || db) {
        column_reduce_kernel<<<(C + 31) / 32, 1024, 0, st>>>(dw, RMS ? nullptr : db, partials, G,
                                                             C);
        CUDA_CHECK_LAUNCH();
    }
}

extern "C" void layernorm_bwd(sl_bf16 *dinp, sl_bf16 *dw, sl_bf16 *db, void *scratch,
                              const sl_bf16 *dresid, const sl_bf16 *dout, const sl_bf16 *h,
                              const sl_bf16 *w, const float *mean, const float *rstd, int N, int C,
                              cudaStream_t st)
{
    norm_bwd<false>(dinp, dw, db, scratch, dresid, dout, h, w, mean, rstd, N, C, st);
}

extern "C" void rmsnorm_bwd(sl_bf16 *dinp, sl_bf16 *dw, void *scratch, const sl_bf16 *dresid,
                            const sl_bf16 *dout, const sl_bf16 *h, const sl_bf16 *w,
                            const float *rstd, int N, int C, cudaStream_t st)
{
    norm_bwd<true>(dinp, dw, nullptr, scratch, dresid, dout, h, w, nullptr, rstd, N, C, st);
}

extern "C" void bias_bwd(sl_bf16 *dbias, void *scratch, const sl_bf16 *dout, int N, int C,
                         cudaStream_t st)
{
    if (N <= 0 || C <= 0)
        return;
    float *partials = (float *)scratch;
    dim3 grid(nb_blocks(N), (C + NB_THREADS * NB_MAXCOL - 1) / (NB_THREADS * NB_MAXCOL));
    int G = (int)grid.x;
    if (C % 8 == 0 && is_aligned16(dout))
        bias_partial_kernel<8><<<grid, NB_THREADS, 0, st>>>(partials, dout, N, C);
    else
        bias_partial_kernel<1><<<grid, NB_THREADS, 0, st>>>(partials, dout, N, C);
    CUDA_CHECK_LAUNCH();
    column_reduce_kernel<<<(C + 31) / 32, 1024, 0, st>>>(nullptr, dbias, partials, G, C);
    CUDA_CHECK_LAUNCH();
}
