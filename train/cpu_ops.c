/* CPU reference kernels (fp32, OpenMP): blocked GEMM on packed 16-column panels, norms,
 * GELU/SwiGLU, RoPE, causal attention, softmax + cross-entropy. */
#include "train/cpu_ops.h"

#include <assert.h>
#include <math.h>
#include <string.h>
#ifdef _OPENMP
#include <omp.h>
#endif

/* Fork threads only for loops worth it: a parallel region costs microseconds, and much
 * more when other processes compete for the cores. */
#define SL_PAR(work) ((work) >= 2097152.0)

/* ---- GEMM ----------------------------------------------------------------------------- */

#define GEMM_NR 16  /* columns per packed panel */
#define GEMM_MR 4   /* rows per micro tile */
#define GEMM_KC 256 /* depth per packed block */

typedef float v8fa __attribute__((vector_size(32)));

/* 8-float vectors stay inside this file (static, inlined), so the note that their calling
 * convention differs with and without AVX does not apply. */
#if defined(__clang__)
#pragma clang diagnostic ignored "-Wpsabi"
#elif defined(__GNUC__)
#pragma GCC diagnostic ignored "-Wpsabi"
#endif

static inline __attribute__((always_inline)) void tile_store(float *c, v8fa lo, v8fa hi, int nr,
                                                          int first, const float *bias)
{
    if (nr == GEMM_NR) {
        v8fa c0, c1;
        if (first) {
            if (bias) {
                memcpy(&c0, bias, sizeof(c0));
                memcpy(&c1, bias + 8, sizeof(c1));
                lo += c0;
                hi += c1;
            }
        } else {
            memcpy(&c0, c, sizeof(c0));
            memcpy(&c1, c + 8, sizeof(c1));
            lo += c0;
            hi += c1;
        }
        memcpy(c, &lo, sizeof(lo));
        memcpy(c + 8, &hi, sizeof(hi));
        return;
    }
    float t[GEMM_NR];
    memcpy(t, &lo, sizeof(lo));
    memcpy(t + 8, &hi, sizeof(hi));
    if (first) {
        for (int j = 0; j < nr; j++)
            c[j] = bias ? t[j] + bias[j] : t[j];
    } else {
        for (int j = 0; j < nr; j++)
            c[j] += t[j];
    }
}

/* A block of rows of A (stride lda; rows up to a multiple of 4 readable) times a packed
 * panel bp[kc][16], into C rows [0, mc) and columns [0, nr). On x86-64 a second copy for
 * AVX2+FMA machines is selected at load time. */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && !defined(__SANITIZE_ADDRESS__)
__attribute__((target_clones("arch=x86-64-v3", "default")))
#endif
static void gemm_panel(int mc, int kc, int nr, const float *ap, ptrdiff_t lda, const float *bp,
                       float *C, ptrdiff_t ldc, int first, const float *bias)
{
    for (int m0 = 0; m0 < mc; m0 += GEMM_MR) {
        const float *a0 = ap + (ptrdiff_t)m0 * lda, *a1 = a0 + lda, *a2 = a1 + lda, *a3 = a2 + lda;
        v8fa c00 = { 0 }, c01 = { 0 }, c10 = { 0 }, c11 = { 0 };
        v8fa c20 = { 0 }, c21 = { 0 }, c30 = { 0 }, c31 = { 0 };
        for (int k = 0; k < kc; k++) {
            v8fa b0 = *(const v8fa *)(bp + k * GEMM_NR);
            v8fa b1 = *(const v8fa *)(bp + k * GEMM_NR + 8);
            float x0 = a0[k], x1 = a1[k], x2 = a2[k], x3 = a3[k];
            c00 += x0 * b0;
            c01 += x0 * b1;
            c10 += x1 * b0;
            c11 += x1 * b1;
            c20 += x2 * b0;
            c21 += x2 * b1;
            c30 += x3 * b0;
            c31 += x3 * b1;
        }
        int mr = mc - m0 < GEMM_MR ? mc - m0 : GEMM_MR;
        float *c = C + (ptrdiff_t)m0 * ldc;
        tile_store(c, c00, c01, nr, first, bias);
        if (mr > 1)
            tile_store(c + ldc, c10, c11, nr, first, bias);
        if (mr > 2)
            tile_store(c + 2 * ldc, c20, c21, nr, first, bias);
        if (mr > 3)
            tile_store(c + 3 * ldc, c30, c31, nr, first, bias);
    }
}

/* The same product with A packed k-major in groups of 4 rows: ap[(g * kc + k) * 4 + r]. */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && !defined(__SANITIZE_ADDRESS__)
__attribute__((target_clones("arch=x86-64-v3", "default")))
#endif
static void gemm_panel_kmajor(int mc, int kc, int nr, const float *ap, const float *bp, float *C,
                              ptrdiff_t ldc, int first, const float *bias)
{
    for (int m0 = 0; m0 < mc; m0 += GEMM_MR) {
        const float *a = ap + (ptrdiff_t)m0 * kc;
        v8fa c00 = { 0 }, c01 = { 0 }, c10 = { 0 }, c11 = { 0 };
        v8fa c20 = { 0 }, c21 = { 0 }, c30 = { 0 }, c31 = { 0 };
        for (int k = 0; k < kc; k++) {
            v8fa b0 = *(const v8fa *)(bp + k * GEMM_NR);
            v8fa b1 = *(const v8fa *)(bp + k * GEMM_NR + 8);
            float x0 = a[4 * k], x1 = a[4 * k + 1], x2 = a[4 * k + 2], x3 = a[4 * k + 3];
            c00 += x0 * b0;
            c01 += x0 * b1;
            c10 += x1 * b0;
            c11 += x1 * b1;
            c20 += x2 * b0;
            c21 += x2 * b1;
            c30 += x3 * b0;
            c31 += x3 * b1;
        }
        int mr = mc - m0 < GEMM_MR ? mc - m0 : GEMM_MR;
        float *c = C + (ptrdiff_t)m0 * ldc;
        tile_store(c, c00, c01, nr, first, bias);
        if (mr > 1)
            tile_store(c + ldc, c10, c11, nr, first, bias);
        if (mr > 2)
            tile_store(c + 2 * ldc, c20, c21, nr, first, bias);
        if (mr > 3)
            tile_store(c + 3 * ldc, c30, c31, nr, first, bias);
    }
}

#define GEMM_MC 64 /* rows per packed block of A */

/* A[m0:m0+mc, k0:k0+kc] row-major with stride kc, rows padded with zeros to a multiple of
 * GEMM_MR. */
static void pack_a(float *ap, const float *A, ptrdiff_t sam, ptrdiff_t sak, int m0, int mc, int k0,
                   int kc)
{
    if (sak == 1) { /* rows contiguous along k: row-major, stride kc */
        for (int r = 0; r < mc; r++)
            memcpy(ap + r * kc, A + (ptrdiff_t)(m0 + r) * sam + k0, (size_t)kc * sizeof(float));
        for (int r = mc; r % GEMM_MR; r++)
            memset(ap + r * kc, 0, (size_t)kc * sizeof(float));
        return;
    }
    /* otherwise k-major groups of 4 rows (gemm_panel_kmajor), read along m */
    int groups = (mc + GEMM_MR - 1) / GEMM_MR;
    for (int k = 0; k < kc; k++) {
        const float *a = A + (ptrdiff_t)(k0 + k) * sak + (ptrdiff_t)m0 * sam;
        for (int g = 0; g < groups; g++) {
            float *d = ap + ((ptrdiff_t)g * kc + k) * GEMM_MR;
            for (int r = 0; r < GEMM_MR; r++) {
                int m = g * GEMM_MR + r;
                d[r] = m < mc ? a[(ptrdiff_t)m * sam] : 0.0f;
            }
        }
    }
}

/* B[k0:k0+kc, n0:n0+nr] as kc rows of GEMM_NR (zero padded). */
static void pack_b(float *bp, const float *B, ptrdiff_t sbk, ptrdiff_t sbn, int n0, int nr, int k0,
                   int kc)
{
    if (sbn == 1) {
        for (int k = 0; k < kc; k++) {
            float *d = bp + k * GEMM_NR;
            memcpy(d, B + (ptrdiff_t)(k0 + k) * sbk + n0, (size_t)nr * sizeof(float));
            for (int j = nr; j < GEMM_NR; j++)
                d[j] = 0.0f;
        }
        return;
    }
    /* B(k, n) contiguous along k (a transposed weight): read each column in one sweep */
    for (int j = 0; j < GEMM_NR; j++) {
        if (j < nr) {
            const float *b = B + (ptrdiff_t)(n0 + j) * sbn + (ptrdiff_t)k0 * sbk;
            for (int k = 0; k < kc; k++)
                bp[k * GEMM_NR + j] = b[(ptrdiff_t)k * sbk];
        } else {
            for (int k = 0; k < kc; k++)
                bp[k * GEMM_NR + j] = 0.0f;
        }
    }
}

void cpu_gemm(int M, int N, int K, const float *A, ptrdiff_t sam, ptrdiff_t sak, const float *B,
              ptrdiff_t sbk, ptrdiff_t sbn, float *C, ptrdiff_t ldc, int accumulate,
              const float *bias)
{
    int npanels = (N + GEMM_NR - 1) / GEMM_NR;
    int nblocks = (M + GEMM_MC - 1) / GEMM_MC;
    if (K == 0) {
        if (!accumulate)
            for (int m = 0; m < M; m++)
                for (int n = 0; n < N; n++)
                    C[(ptrdiff_t)m * ldc + n] = bias ? bias[n] : 0.0f;
        return;
    }
    /* Outputs are split into (row block, column panel) tiles; each tile sums over k in
     * order, so the result does not depend on the number of threads. Threads take row
     * blocks (A packed once per block) when there are enough of them, else column panels
     * (B packed once per panel). */
    int threads = 1;
#ifdef _OPENMP
    threads = omp_get_max_threads();
#endif
    int by_rows = sbn == 1 ? (nblocks >= 2 * threads || nblocks >= npanels) : npanels < 2 * threads;
    /* a single row block that needs packing is packed once per depth block, for all threads */
    int direct_all = sak == 1 && M % GEMM_MR == 0;
    int shared_a = !by_rows && nblocks == 1 && !direct_all;
    static_assert(GEMM_MC * GEMM_KC * sizeof(float) <= 65536, "packed A block fits the stack");
    float ap_shared[GEMM_MC * GEMM_KC] __attribute__((aligned(64)));
    for (int k0 = 0; k0 < K; k0 += GEMM_KC) {
        int kc = K - k0 < GEMM_KC ? K - k0 : GEMM_KC;
        int first = !accumulate && k0 == 0;
        int outer = by_rows ? nblocks : npanels, inner = by_rows ? npanels : nblocks;
        if (shared_a)
            pack_a(ap_shared, A, sam, sak, 0, M, k0, kc);
#pragma omp parallel for schedule(static) if (SL_PAR((double)M * N * kc))
        for (int o = 0; o < outer; o++) {
            float ap[GEMM_MC * GEMM_KC] __attribute__((aligned(64)));
            float bp[GEMM_KC * GEMM_NR] __attribute__((aligned(64)));
            for (int in = 0; in < inner; in++) {
                int mb = by_rows ? o : in, p = by_rows ? in : o;
                int m0 = mb * GEMM_MC, mc = M - m0 < GEMM_MC ? M - m0 : GEMM_MC;
                int n0 = p * GEMM_NR;
                int nr = N - n0 < GEMM_NR ? N - n0 : GEMM_NR;
                /* rows of A used in place when contiguous along k and complete */
                int direct = sak == 1 && mc % GEMM_MR == 0;
                const float *apk = shared_a ? ap_shared : ap;
                if (!direct && !shared_a && (!by_rows || in == 0))
                    pack_a(ap, A, sam, sak, m0, mc, k0, kc);
                if (by_rows || in == 0)
                    pack_b(bp, B, sbk, sbn, n0, nr, k0, kc);
                float *c = C + (ptrdiff_t)m0 * ldc + n0;
                const float *bias_n = bias && first ? bias + n0 : NULL;
                if (sak != 1)
                    gemm_panel_kmajor(mc, kc, nr, apk, bp, c, ldc, first, bias_n);
                else
                    gemm_panel(mc, kc, nr, direct ? A + (ptrdiff_t)m0 * sam + k0 : apk,
                               direct ? sam : kc, bp, c, ldc, first, bias_n);
            }
        }
    }
}

void cpu_linear_fwd(float *y, const float *x, const float *W, const float *b, int N, int IC, int OC)
{
    /* y[n,o] = sum_i x[n,i] W[o,i]: B(k=i, n=o) = W[o*IC + i] */
    cpu_gemm(N, OC, IC, x, IC, 1, W, 1, IC, y, OC, 0, b);
}

void cpu_linear_bwd(float *dx, float *dW, float *db, const float *dy, const float *x, const float *W,
                    int N, int IC, int OC, float *scratch)
{
    if (dx) /* dx[n,i] = sum_o dy[n,o] W[o,i] */
        cpu_gemm(N, IC, OC, dy, OC, 1, W, IC, 1, dx, IC, 0, NULL);
    if (scratch) {
        /* dW^T[i,o] = sum_n x[n,i] dy[n,o] into scratch, then added transposed: for wide
         * outputs (the vocabulary) this reads dy along its rows */
        cpu_gemm(IC, OC, N, x, 1, IC, dy, OC, 1, scratch, OC, 0, NULL);
#pragma omp parallel for schedule(static) if (SL_PAR((double)OC * IC))
        for (int o0 = 0; o0 < OC; o0 += 64) {
            int o1 = o0 + 64 < OC ? o0 + 64 : OC;
            for (int o = o0; o < o1; o++)
                for (int i = 0; i < IC; i++)
                    dW[(size_t)o * IC + i] += scratch[(size_t)i * OC + o];
        }
    } else {
        /* dW[o,i] += sum_n dy[n,o] x[n,i]: A(m=o, k=n) = dy[n*OC + o] */
        cpu_gemm(OC, IC, N, dy, 1, OC, x, IC, 1, dW, IC, 1, NULL);
    }
    if (db) {
#pragma omp parallel for schedule(static) if (SL_PAR((double)N * OC))
        for (int o0 = 0; o0 < OC; o0 += 64) {
            int o1 = o0 + 64 < OC ? o0 + 64 : OC;
            for (int n = 0; n < N; n++) {
                const float *r = dy + (size_t)n * OC;
                for (int o = o0; o < o1; o++)
                    db[o] += r[o];
            }
        }
    }
}

/* ---- norms ---------------------------------------------------------------------------- */

void cpu_norm_fwd(float *y, float *mean, float *rstd, const float *x, const float *w,
                  const float *b, int N, int D, float eps, int rms)
{
#pragma omp parallel for schedule(static) if (SL_PAR((double)N * D))
    for (int n = 0; n < N; n++) {
        const float *xr = x + (size_t)n * D;
        float *yr = y + (size_t)n * D;
        double m = 0.0, v = 0.0;
        if (!rms) {
            for (int i = 0; i < D; i++)
                m += xr[i];
            m /= D;
        }
        for (int i = 0; i < D; i++) {
            double d = xr[i] - m;
            v += d * d;
        }
        v /= D;
        float s = (float)(1.0 / sqrt(v + eps));
        float mf = (float)m;
        for (int i = 0; i < D; i++) {
            float h = (xr[i] - mf) * s;
            yr[i] = b ? h * w[i] + b[i] : h * w[i];
        }
        mean[n] = mf;
        rstd[n] = s;
    }
}

void cpu_norm_bwd(float *dx, float *dw, float *db, const float *dy, const float *x,
                  const float *mean, const float *rstd, const float *w, int N, int D, int rms)
{
#pragma omp parallel for schedule(static) if (SL_PAR((double)N * D))
    for (int n = 0; n < N; n++) {
        const float *xr = x + (size_t)n * D, *g = dy + (size_t)n * D;
        float *dxr = dx + (size_t)n * D;
        float m = mean[n], s = rstd[n];
        double sum_d = 0.0, sum_dh = 0.0;
        for (int i = 0; i < D; i++) {
            float dn = g[i] * w[i];
            float h = (xr[i] - m) * s;
            sum_d += dn;
            sum_dh += (double)dn * h;
        }
        float md = rms ? 0.0f : (float)(sum_d / D), mdh = (float)(sum_dh / D);
        for (int i = 0; i < D; i++) {
            float dn = g[i] * w[i];
            float h = (xr[i] - m) * s;
            dxr[i] += s * (dn - md - h * mdh);
        }
    }
    /* parameter gradients: columns in parallel, rows in order */
#pragma omp parallel for schedule(static) if (SL_PAR((double)N * D))
    for (int i0 = 0; i0 < D; i0 += 64) {
        int i1 = i0 + 64 < D ? i0 + 64 : D;
        for (int n = 0; n < N; n++) {
            const float *xr = x + (size_t)n * D, *g = dy + (size_t)n * D;
            float m = mean[n], s = rstd[n];
            for (int i = i0; i < i1; i++) {
                dw[i] += g[i] * ((xr[i] - m) * s);
                if (db)
                    db[i] += g[i];
            }
        }
    }
}

/* ---- activations ---------------------------------------------------------------------- */

#define GELU_K 0.7978845608028654f /* sqrt(2/pi) */

void cpu_gelu_fwd(float *y, const float *x, size_t n, int tanh_form)
{
#pragma omp parallel for schedule(static) if (SL_PAR((double)n))
    for (size_t i = 0; i < n; i++) {
        float v = x[i];
        if (tanh_form)
            y[i] = 0.5f * v * (1.0f + tanhf(GELU_K * (v + 0.044715f * v * v * v)));
        else
            y[i] = 0.5f * v * (1.0f + erff(v * (float)M_SQRT1_2));
    }
}

void cpu_gelu_bwd(float *dx, const float *dy, const float *x, size_t n, int tanh_form)
{
#pragma omp parallel for schedule(static) if (SL_PAR((double)n))
    for (size_t i = 0; i < n; i++) {
        float v = x[i], d;
        if (tanh_form) {
            float u = GELU_K * (v + 0.044715f * v * v * v);
            float t = tanhf(u);
            float du = GELU_K * (1.0f + 3.0f * 0.044715f * v * v);
            d = 0.5f * (1.0f + t) + 0.5f * v * (1.0f - t * t) * du;
        } else {
            float cdf = 0.5f * (1.0f + erff(v * (float)M_SQRT1_2));
            float pdf = expf(-0.5f * v * v) * 0.3989422804014327f;
            d = cdf + v * pdf;
        }
        dx[i] = dy[i] * d;
    }
}

void cpu_swiglu_fwd(float *h, const float *fc, int N, int F)
{
#pragma omp parallel for schedule(static) if (SL_PAR((double)N * F))
    for (int n = 0; n < N; n++) {
        const float *g = fc + (size_t)n * 2 * F, *u = g + F;
        float *hr = h + (size_t)n * F;
        for (int i = 0; i < F; i++) {
            float s = 1.0f / (1.0f + expf(-g[i]));
            hr[i] = g[i] * s * u[i];
        }
    }
}

void cpu_swiglu_bwd(float *dfc, const float *dh, const float *fc, int N, int F)
{
#pragma omp parallel for schedule(static) if (SL_PAR((double)N * F))
    for (int n = 0; n < N; n++) {
        const float *g = fc + (size_t)n * 2 * F, *u = g + F, *d = dh + (size_t)n * F;
        float *dg = dfc + (size_t)n * 2 * F, *du = dg + F;
        for (int i = 0; i < F; i++) {
            float s = 1.0f / (1.0f + expf(-g[i]));
            float silu = g[i] * s;
            du[i] = d[i] * silu;
            dg[i] = d[i] * u[i] * s * (1.0f + g[i] * (1.0f - s));
        }
    }
}

/* ---- RoPE ----------------------------------------------------------------------------- */

void cpu_rope(float *qkv, const float *cos_t, const float *sin_t, int B, int T, int n_heads,
              int n_kv_heads, int hd, int inverse, const int32_t *pos)
{
    int half = hd / 2, width = (n_heads + 2 * n_kv_heads) * hd, nrot = n_heads + n_kv_heads;
#pragma omp parallel for schedule(static) if (SL_PAR((double)B * T * width))
    for (int r = 0; r < B * T; r++) {
        int t = pos ? pos[r] : r % T;
        const float *c = cos_t + (size_t)t * half, *s = sin_t + (size_t)t * half;
        float *row = qkv + (size_t)r * width;
        for (int h = 0; h < nrot; h++) { /* q heads, then k heads: contiguous */
            float *x = row + (size_t)h * hd;
            for (int i = 0; i < half; i++) {
                float x1 = x[i], x2 = x[i + half];
                float si = inverse ? -s[i] : s[i];
                x[i] = x1 * c[i] - x2 * si;
                x[i + half] = x2 * c[i] + x1 * si;
            }
        }
    }
}

/* ---- attention ------------------------------------------------------------------------ */

void cpu_attention_row(float *o, float *p, const float *q, const float *k, const float *v,
                       size_t stride, int n, int hd, float scale)
{
    float mx = -INFINITY;
    for (int u = 0; u < n; u++) {
        const float *ku = k + (size_t)u * stride;
        float s = 0.0f;
        for (int i = 0; i < hd; i++)
            s += q[i] * ku[i];
        s *= scale;
        p[u] = s;
        if (s > mx)
            mx = s;
    }
    float sum = 0.0f;
    for (int u = 0; u < n; u++) {
        p[u] = expf(p[u] - mx);
        sum += p[u];
    }
    float inv = 1.0f / sum;
    for (int u = 0; u < n; u++)
        p[u] *= inv;
    for (int i = 0; i < hd; i++)
        o[i] = 0.0f;
    for (int u = 0; u < n; u++) {
        const float *vu = v + (size_t)u * stride;
        float pu = p[u];
        for (int i = 0; i < hd; i++)
            o[i] += pu * vu[i];
    }
}

void cpu_attention_fwd(float *y, float *att, const float *qkv, int B, int T, int H, int Hkv, int hd,
                       const int32_t *start)
{
    int width = (H + 2 * Hkv) * hd, group = H / Hkv;
    float scale = 1.0f / sqrtf((float)hd);
#pragma omp parallel for collapse(2) schedule(static) if (SL_PAR((double)B * T * T * width))
    for (int b = 0; b < B; b++) {
        for (int h = 0; h < H; h++) {
            int g = h / group;
            const float *base = qkv + (size_t)b * T * width;
            for (int t = 0; t < T; t++) {
                const float *q = base + (size_t)t * width + (size_t)h * hd;
                float *p = att + (((size_t)b * H + h) * T + t) * T;
                float *o = y + ((size_t)b * T + t) * H * hd + (size_t)h * hd;
                int s0 = start ? start[(size_t)b * T + t] : 0;
                const float *k0 = base + (size_t)s0 * width;
                cpu_attention_row(o, p + s0, q, k0 + (size_t)(H + g) * hd,
                                  k0 + (size_t)(H + Hkv + g) * hd, (size_t)width, t + 1 - s0, hd,
                                  scale);
            }
        }
    }
}

void cpu_attention_bwd(float *dqkv, const float *dy, const float *qkv, const float *att, int B,
                       int T, int H, int Hkv, int hd, float *scratch, const int32_t *start)
{
    int width = (H + 2 * Hkv) * hd, group = H / Hkv;
    float scale = 1.0f / sqrtf((float)hd);
    memset(dqkv, 0, (size_t)B * T * width * sizeof(float));
    /* one task per (batch, kv head): the q heads sharing k and v run in order */
#pragma omp parallel for collapse(2) schedule(static) if (SL_PAR((double)B * T * T * width))
    for (int b = 0; b < B; b++) {
        for (int g = 0; g < Hkv; g++) {
#ifdef _OPENMP
            float *dp = scratch + (size_t)omp_get_thread_num() * T;
#else
            float *dp = scratch;
#endif
            const float *base = qkv + (size_t)b * T * width;
            float *dbase = dqkv + (size_t)b * T * width;
            for (int h = g * group; h < (g + 1) * group; h++) {
                for (int t = 0; t < T; t++) {
                    const float *p = att + (((size_t)b * H + h) * T + t) * T;
                    const float *d = dy + ((size_t)b * T + t) * H * hd + (size_t)h * hd;
                    const float *q = base + (size_t)t * width + (size_t)h * hd;
                    float *dq = dbase + (size_t)t * width + (size_t)h * hd;
                    float dot = 0.0f;
                    int s0 = start ? start[(size_t)b * T + t] : 0;
                    for (int u = s0; u <= t; u++) {
                        const float *v = base + (size_t)u * width + (size_t)(H + Hkv + g) * hd;
                        float s = 0.0f;
                        for (int i = 0; i < hd; i++)
                            s += d[i] * v[i];
                        dp[u] = s;
                        dot += s * p[u];
                    }
                    for (int u = s0; u <= t; u++) {
                        float *dv = dbase + (size_t)u * width + (size_t)(H + Hkv + g) * hd;
                        float *dk = dbase + (size_t)u * width + (size_t)(H + g) * hd;
                        const float *k = base + (size_t)u * width + (size_t)(H + g) * hd;
                        float pu = p[u];
                        float ds = pu * (dp[u] - dot) * scale;
                        for (int i = 0; i < hd; i++) {
                            dv[i] += pu * d[i];
                            dq[i] += ds * k[i];
                            dk[i] += ds * q[i];
                        }
                    }
                }
            }
        }
    }
}

/* ---- softmax + cross-entropy ---------------------------------------------------------- */

typedef int v8i __attribute__((vector_size(32)));

/* exp on 8 lanes: x = n ln2 + r, |r| <= ln2/2, exp(r) by its degree-6 Taylor polynomial
 * (relative error below 2e-7), times 2^n through the exponent bits. */
static inline __attribute__((always_inline)) v8fa vexp(v8fa x)
{
    const v8fa lo = { -87.0f, -87.0f, -87.0f, -87.0f, -87.0f, -87.0f, -87.0f, -87.0f };
    v8i below = x < lo;
    v8i xb, lb;
    memcpy(&xb, &x, sizeof(x));
    memcpy(&lb, &lo, sizeof(lo));
    xb = (below & lb) | (~below & xb);
    memcpy(&x, &xb, sizeof(x));
    v8fa t = x * 1.44269504088896341f + 12582912.0f;
    v8fa n = t - 12582912.0f;
    v8fa r = x - n * 0.693359375f;
    r = r - n * -2.12194440e-4f;
    v8fa p = (v8fa){ 0 } + 1.0f / 720.0f;
    p = p * r + 1.0f / 120.0f;
    p = p * r + 1.0f / 24.0f;
    p = p * r + 1.0f / 6.0f;
    p = p * r + 0.5f;
    p = p * r + 1.0f;
    p = p * r + 1.0f;
    v8i e = (__builtin_convertvector(n, v8i) + 127) << 23;
    v8fa s;
    memcpy(&s, &e, sizeof(e));
    return p * s;
}

/* max and log-sum-exp of one row. */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && !defined(__SANITIZE_ADDRESS__)
__attribute__((target_clones("arch=x86-64-v3", "default")))
#endif
static float row_lse(const float *l, int V)
{
    float mx = -INFINITY;
    int v = 0;
    if (V >= 8) {
        v8fa m;
        memcpy(&m, l, sizeof(m));
        for (v = 8; v + 8 <= V; v += 8) {
            v8fa x;
            memcpy(&x, l + v, sizeof(x));
            v8i gt = x > m;
            v8i xb, mb;
            memcpy(&xb, &x, sizeof(x));
            memcpy(&mb, &m, sizeof(m));
            mb = (gt & xb) | (~gt & mb);
            memcpy(&m, &mb, sizeof(m));
        }
        float a[8];
        memcpy(a, &m, sizeof(a));
        for (int k = 0; k < 8; k++)
            mx = a[k] > mx ? a[k] : mx;
    }
    for (; v < V; v++)
        mx = l[v] > mx ? l[v] : mx;
    double sum = 0.0;
    v = 0;
    for (; v + 256 <= V; v += 256) { /* blocks of 256 in float lanes, blocks added in double */
        v8fa acc = { 0 };
        for (int k = 0; k < 256; k += 8) {
            v8fa x;
            memcpy(&x, l + v + k, sizeof(x));
            acc += vexp(x - mx);
        }
        float a[8];
        memcpy(a, &acc, sizeof(a));
        sum += (double)(((a[0] + a[1]) + (a[2] + a[3])) + ((a[4] + a[5]) + (a[6] + a[7])));
    }
    for (; v < V; v++)
        sum += expf(l[v] - mx);
    return (float)(log(sum) + mx);
}

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && !defined(__SANITIZE_ADDRESS__)
__attribute__((target_clones("arch=x86-64-v3", "default")))
#endif
static void row_softmax_grad(float *l, int V, float lse, float dloss)
{
    int v = 0;
    for (; v + 8 <= V; v += 8) {
        v8fa x;
        memcpy(&x, l + v, sizeof(x));
        x = vexp(x - lse) * dloss;
        memcpy(l + v, &x, sizeof(x));
    }
    for (; v < V; v++)
        l[v] = expf(l[v] - lse) * dloss;
}

void cpu_xent_fwd(float *losses, float *lse, const float *logits, const int32_t *targets, int N,
                  int V)
{
#pragma omp parallel for schedule(static) if (SL_PAR((double)N * V))
    for (int n = 0; n < N; n++) {
        const float *l = logits + (size_t)n * V;
        lse[n] = row_lse(l, V);
        losses[n] = lse[n] - l[targets[n]];
    }
}

void cpu_xent_bwd(float *logits, const float *lse, const int32_t *targets, int N, int V,
                  float dloss)
{
#pragma omp parallel for schedule(static) if (SL_PAR((double)N * V))
    for (int n = 0; n < N; n++) {
        float *l = logits + (size_t)n * V;
        row_softmax_grad(l, V, lse[n], dloss);
        if (targets[n] >= 0) /* negative: the target is another rank's (vocab-parallel) */
            l[targets[n]] -= dloss;
    }
}

void cpu_xent_partial(float *mx, double *sumexp, float *tlogit, const float *logits,
                      const int32_t *targets, int N, int V, int pass)
{
#pragma omp parallel for schedule(static) if (SL_PAR((double)N * V))
    for (int n = 0; n < N; n++) {
        const float *l = logits + (size_t)n * V;
        if (pass == 0) {
            float m = -INFINITY;
            for (int v = 0; v < V; v++)
                m = l[v] > m ? l[v] : m;
            mx[n] = m;
            tlogit[n] = targets[n] >= 0 ? l[targets[n]] : 0.0f;
        } else {
            double s = 0.0;
            for (int v = 0; v < V; v++)
                s += expf(l[v] - mx[n]);
            sumexp[n] = s;
        }
    }
}
