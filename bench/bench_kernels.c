/* Micro-benchmarks of the kernels in kernels/ at GPT-2 124M and Llama-3-8B layer shapes: time
 * per call (CUDA events, after warm-up) and the achieved bandwidth (minimum bytes moved) or
 * bf16 TFLOP/s, against the device's peak. One compact table on stdout.
 *
 * Usage: bench_kernels [GROUP]   GROUP: embedding norm gelu swiglu rope classifier adamw gemm
 *                                attn, or part of a GEMM case name ("llama8b")
 * Without a GPU it prints SKIP and exits 0.
 */
#include "tests/gpu/common.h"
#include "kernels/attention.h"
#include "kernels/gemm.h"

static double g_peak_gbs, g_peak_tflops;
static const char *g_filter;
static cudaEvent_t g_e0, g_e1;

static int want(const char *name)
{
    return !g_filter || strstr(name, g_filter);
}

/* Time `stmt`: 3 warm-up runs, then enough repetitions for about 50 ms (at least 3). */
#define TIME_MS(out, stmt)                                                                         \
    do {                                                                                           \
        for (int w_ = 0; w_ < 3; w_++) {                                                           \
            stmt;                                                                                  \
        }                                                                                          \
        float t_ = 0;                                                                              \
        CUDA_CHECK(cudaEventRecord(g_e0, 0));                                                      \
        stmt;                                                                                      \
        CUDA_CHECK(cudaEventRecord(g_e1, 0));                                                      \
        CUDA_CHECK(cudaEventSynchronize(g_e1));                                                    \
        CUDA_CHECK(cudaEventElapsedTime(&t_, g_e0, g_e1));                                         \
        int reps_ = t_ > 0 ? (int)(50.0f / t_) : 100;                                              \
        reps_ = reps_ < 3 ? 3 : reps_ > 200 ? 200 : reps_;                                         \
        CUDA_CHECK(cudaEventRecord(g_e0, 0));                                                      \
        for (int r_ = 0; r_ < reps_; r_++) {                                                       \
            stmt;                                                                                  \
        }                                                                                          \
        CUDA_CHECK(cudaEventRecord(g_e1, 0));                                                      \
        CUDA_CHECK(cudaEventSynchronize(g_e1));                                                    \
        CUDA_CHECK(cudaEventElapsedTime(&t_, g_e0, g_e1));                                         \
        (out) = t_ / reps_;                                                                        \
    } while (0)

static void row_bw(const char *name, const char *shape, double ms, double bytes)
{
    double gbs = bytes / (ms * 1e-3) / 1e9;
    printf("%-28s %-36s %9.1f %8.0f GB/s %5.0f%%\n", name, shape, ms * 1e3, gbs,
           g_peak_gbs > 0 ? 100 * gbs / g_peak_gbs : 0.0);
    fflush(stdout);
}

static void row_fl(const char *name, const char *shape, double ms, double flops)
{
    double tf = flops / (ms * 1e-3) / 1e12;
    printf("%-28s %-36s %9.1f %6.1f TFLOP/s %3.0f%%\n", name, shape, ms * 1e3, tf,
           g_peak_tflops > 0 ? 100 * tf / g_peak_tflops : 0.0);
    fflush(stdout);
}

static void *drand_bf16(size_t n, float scale)
{
    /* fill on the host once per size class: random bits are not needed for timing */
    uint16_t *h = rand_bf16(n < (1u << 22) ? n : (1u << 22), scale);
    uint16_t *d = (uint16_t *)dalloc(n * 2);
    for (size_t off = 0; off < n; off += (1u << 22)) {
        size_t k = n - off < (1u << 22) ? n - off : (1u << 22);
        upload(d + off, h, k * 2);
    }
    return d;
}

static void bench_memory_bound(void)
{
    char sh[96];
    float ms;
    /* GPT-2 124M activations, B=64 T=1024 */
    const int B = 64, T = 1024, C = 768, V = 50257, N = B * T;
    const size_t NC = (size_t)N * C;
    if (want("embedding")) {
        int32_t *tok = (int32_t *)halloc((size_t)N * 4);
        for (int i = 0; i < N; i++)
            tok[i] = (int32_t)(rnd_u64() % V);
        int32_t *dt = (int32_t *)to_dev(tok, (size_t)N * 4);
        uint16_t *wte = drand_bf16((size_t)V * C, 1), *wpe = drand_bf16((size_t)T * C, 1);
        uint16_t *out = (uint16_t *)dalloc(NC * 2);
        snprintf(sh, sizeof(sh), "N=%d C=%d V=%d", N, C, V);
        TIME_MS(ms, embedding_fwd(out, dt, wte, wpe, B, T, C, V, 0));
        row_bw("embedding_fwd", sh, ms, NC * 2 * 2.0 + N * 4.0);
        size_t sb = embedding_bwd_scratch_size(B, T, V);
        void *scratch = dalloc(sb);
        uint16_t *dwte = (uint16_t *)dalloc((size_t)V * C * 2),
                 *dwpe = (uint16_t *)dalloc((size_t)T * C * 2);
        CUDA_CHECK(cudaMemset(dwte, 0, (size_t)V * C * 2));
        CUDA_CHECK(cudaMemset(dwpe, 0, (size_t)T * C * 2));
        TIME_MS(ms, embedding_bwd(dwte, dwpe, scratch, sb, out, dt, B, T, C, V, 0));
        row_bw("embedding_bwd (sort+sum)", sh, ms, NC * 2.0 + 2.0 * (size_t)V * C * 2);
        free_all();
    }
    if (want("norm")) {
        uint16_t *x = drand_bf16(NC, 1), *r = drand_bf16(NC, 1), *w = drand_bf16(C, 1),
                 *b = drand_bf16(C, 1);
        uint16_t *out = (uint16_t *)dalloc(NC * 2), *res = (uint16_t *)dalloc(NC * 2);
        float *mean = (float *)dalloc(N * 4), *rstd = (float *)dalloc(N * 4);
        snprintf(sh, sizeof(sh), "N=%d C=%d +resid", N, C);
        TIME_MS(ms, layernorm_fwd(out, mean, rstd, res, x, r, w, b, N, C, 1e-5f, 0));
        row_bw("layernorm_fwd", sh, ms, NC * 2 * 4.0);
        void *scratch = dalloc(norm_bwd_scratch_size(N, C));
        uint16_t *dw = (uint16_t *)dalloc(C * 2), *db = (uint16_t *)dalloc(C * 2);
        CUDA_CHECK(cudaMemset(dw, 0, C * 2));
        CUDA_CHECK(cudaMemset(db, 0, C * 2));
        TIME_MS(ms, layernorm_bwd(r, dw, db, scratch, r, x, res, w, mean, rstd, N, C, 0));
        row_bw("layernorm_bwd", sh, ms, NC * 2 * 4.0);
        TIME_MS(ms, bias_bwd(db, scratch, x, N, C, 0));
        snprintf(sh, sizeof(sh), "N=%d C=%d", N, C);
        row_bw("bias_bwd", sh, ms, NC * 2.0);
        free_all();
        /* Llama-3-8B: N=8192 C=4096 */
        const int N2 = 8192, C2 = 4096;
        const size_t n2 = (size_t)N2 * C2;
        x = drand_bf16(n2, 1), r = drand_bf16(n2, 1), w = drand_bf16(C2, 1);
        out = (uint16_t *)dalloc(n2 * 2), res = (uint16_t *)dalloc(n2 * 2);
        rstd = (float *)dalloc(N2 * 4);
        snprintf(sh, sizeof(sh), "N=%d C=%d +resid", N2, C2);
        TIME_MS(ms, rmsnorm_fwd(out, rstd, res, x, r, w, N2, C2, 1e-5f, 0));
        row_bw("rmsnorm_fwd", sh, ms, n2 * 2 * 4.0);
        scratch = dalloc(norm_bwd_scratch_size(N2, C2));
        dw = (uint16_t *)dalloc(C2 * 2);
        CUDA_CHECK(cudaMemset(dw, 0, C2 * 2));
        TIME_MS(ms, rmsnorm_bwd(r, dw, scratch, r, x, res, w, rstd, N2, C2, 0));
        row_bw("rmsnorm_bwd", sh, ms, n2 * 2 * 4.0);
        free_all();
    }
    if (want("gelu") || want("swiglu")) {
        const size_t n = (size_t)N * 4 * C;
        uint16_t *x = drand_bf16(n, 1), *g = drand_bf16(n, 1), *o = (uint16_t *)dalloc(n * 2);
        snprintf(sh, sizeof(sh), "n=%zu (N=%d x %d)", n, N, 4 * C);
        TIME_MS(ms, gelu_fwd(o, x, n, 0));
        row_bw("gelu_fwd", sh, ms, n * 4.0);
        TIME_MS(ms, gelu_bwd(o, g, x, n, 0));
        row_bw("gelu_bwd", sh, ms, n * 6.0);
        free_all();
        const int N2 = 8192, F = 14336;
        const size_t n1 = (size_t)N2 * F;
        uint16_t *inp = drand_bf16(2 * n1, 1), *d = drand_bf16(n1, 1);
        uint16_t *out = (uint16_t *)dalloc(n1 * 2), *din = (uint16_t *)dalloc(2 * n1 * 2);
        snprintf(sh, sizeof(sh), "N=%d F=%d", N2, F);
        TIME_MS(ms, swiglu_fwd(out, inp, N2, F, 0));
        row_bw("swiglu_fwd", sh, ms, n1 * 2 * 3.0);
        TIME_MS(ms, swiglu_bwd(din, d, inp, N2, F, 0));
        row_bw("swiglu_bwd", sh, ms, n1 * 2 * 5.0);
        free_all();
    }
    if (want("rope")) {
        const int B2 = 2, T2 = 4096, Hq = 32, Hkv = 8, D = 128;
        const size_t n = (size_t)B2 * T2 * (Hq + 2 * Hkv) * D, nt = (size_t)T2 * D / 2;
        struct rope_config cfg = { 500000.0, 8.0, 1.0, 4.0, 8192 };
        float *ct = (float *)halloc(nt * 4), *st = (float *)halloc(nt * 4);
        rope_tables(ct, st, T2, D, &cfg);
        float *dc = (float *)to_dev(ct, nt * 4), *ds = (float *)to_dev(st, nt * 4);
        uint16_t *qkv = drand_bf16(n, 1);
        snprintf(sh, sizeof(sh), "B=%d T=%d Hq=%d Hkv=%d D=%d", B2, T2, Hq, Hkv, D);
        TIME_MS(ms, rope_fwd(qkv, dc, ds, B2, T2, Hq, Hkv, D, 0));
        row_bw("rope_fwd", sh, ms, (double)B2 * T2 * (Hq + Hkv) * D * 2 * 2);
        free_all();
    }
    if (want("classifier")) {
        const int Nc = 8192, Vp = 50304;
        const size_t n = (size_t)Nc * Vp;
        uint16_t *lg = drand_bf16(n, 2);
        int32_t *tg = (int32_t *)halloc(Nc * 4);
        for (int i = 0; i < Nc; i++)
            tg[i] = (int32_t)(rnd_u64() % V);
        int32_t *dt = (int32_t *)to_dev(tg, Nc * 4);
        float *losses = (float *)dalloc(Nc * 4);
        snprintf(sh, sizeof(sh), "N=%d V=%d Vp=%d", Nc, V, Vp);
        /* loss only, then the in-place gradient (the logits then hold gradients: fine for timing)
         */
        TIME_MS(ms, classifier_fwd_bwd(losses, lg, dt, Nc, V, Vp, 0.0f, 0, 0));
        row_bw("classifier (loss only)", sh, ms, n * 2.0);
        TIME_MS(ms, classifier_fwd_bwd(losses, lg, dt, Nc, V, Vp, 1.0f / Nc, 1, 0));
        row_bw("classifier (loss+dlogits)", sh, ms, n * 4.0);
        free_all();
    }
    if (want("adamw") || want("norm")) {
        const int64_t n = 124475904; /* GPT-2 124M */
        uint16_t *p = drand_bf16(n, 1), *g = drand_bf16(n, 0.01f);
        float *w = (float *)dalloc(n * 4), *m = (float *)dalloc(n * 4), *v = (float *)dalloc(n * 4);
        CUDA_CHECK(cudaMemset(w, 0, n * 4));
        CUDA_CHECK(cudaMemset(m, 0, n * 4));
        CUDA_CHECK(cudaMemset(v, 0, n * 4));
        struct adamw_tensor tab[2] = { { 0, n / 2, 1.0f, 1.0f }, { n / 2, n - n / 2, 0.0f, 1.0f } };
        struct adamw_tensor *dtab = (struct adamw_tensor *)to_dev(tab, sizeof(tab));
        void *scratch = dalloc(global_norm_scratch_size());
        float *nrm = (float *)dalloc(4);
        CUDA_CHECK(cudaMemset(nrm, 0, 4));
        snprintf(sh, sizeof(sh), "n=%lld", (long long)n);
        if (want("norm")) {
            TIME_MS(ms, global_norm_sq(nrm, scratch, g, n, 0, 0));
            row_bw("global_norm_sq", sh, ms, n * 2.0);
        }
        if (want("adamw")) {
            struct adamw_hparams hp = { 1e-4f, 0.9f, 0.95f, 1e-8f, 0.1f, 1, 1.0f, 1.0f, nrm, 1, 0 };
            TIME_MS(ms, adamw_update(p, g, w, m, v, n, 0, dtab, 2, &hp, 0));
            row_bw("adamw (RNE)", sh, ms, n * 28.0);
            hp.stochastic_rounding = 1;
            TIME_MS(ms, adamw_update(p, g, w, m, v, n, 0, dtab, 2, &hp, 0));
            row_bw("adamw (stochastic)", sh, ms, n * 28.0);
        }
        free_all();
    }
}

static void bench_gemm(void)
{
    const int all = !g_filter || !strcmp(g_filter, "gemm");
    void *ws = NULL;
    CUDA_CHECK(cudaMalloc(&ws, GEMM_WORKSPACE_BYTES));
    struct gemm *g = gemm_new(ws, GEMM_WORKSPACE_BYTES);
    if (!g) {
        printf("gemm: %s\n", gemm_error());
        return;
    }
    /* name, tokens, in, out, epilogue (0 none, 1 bias, 2 bias+gelu), which pass */
    static const struct {
        const char *name;
        int N, IC, OC, epi, pass; /* pass 0 fwd, 1 bwd data, 2 bwd weight, 3 bwd data dgelu */
    } cases[] = {
        { "gpt2 qkv fwd", 16384, 768, 2304, 1, 0 },
        { "gpt2 attn-proj fwd", 16384, 768, 768, 1, 0 },
        { "gpt2 fc fwd", 16384, 768, 3072, 1, 0 },
        { "gpt2 fc fwd +gelu", 16384, 768, 3072, 2, 0 },
        { "gpt2 fc-proj fwd", 16384, 3072, 768, 1, 0 },
        { "gpt2 fc-proj bwd-data dgelu", 16384, 3072, 768, 0, 3 },
        { "gpt2 fc-proj bwd-data", 16384, 3072, 768, 0, 1 },
        { "gpt2 fc bwd-weight", 16384, 768, 3072, 0, 2 },
        { "gpt2 lm-head fwd", 16384, 768, 50304, 0, 0 },
        { "gpt2 lm-head bwd-data", 16384, 768, 50304, 0, 1 },
        { "gpt2 lm-head bwd-weight", 16384, 768, 50304, 0, 2 },
        { "llama8b qkv fwd", 8192, 4096, 6144, 0, 0 },
        { "llama8b o fwd", 8192, 4096, 4096, 0, 0 },
        { "llama8b gate-up fwd", 8192, 4096, 28672, 0, 0 },
        { "llama8b down fwd", 8192, 14336, 4096, 0, 0 },
        { "llama8b down bwd-data", 8192, 14336, 4096, 0, 1 },
        { "llama8b gate-up bwd-weight", 8192, 4096, 28672, 0, 2 },
        { "llama8b lm-head fwd", 8192, 4096, 128256, 0, 0 },
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        if (!all && !strstr(cases[i].name, g_filter))
            continue;
        const int N = cases[i].N, IC = cases[i].IC, OC = cases[i].OC;
        uint16_t *x = drand_bf16((size_t)N * IC, 1), *W = drand_bf16((size_t)OC * IC, 0.02f);
        uint16_t *b = drand_bf16(OC, 0.1f), *y = drand_bf16((size_t)N * OC, 1);
        uint16_t *pre = (uint16_t *)dalloc((size_t)N * OC * 2);
        uint16_t *dW = (uint16_t *)dalloc((size_t)OC * IC * 2);
        char sh[96];
        snprintf(sh, sizeof(sh), "M=%d N=%d K=%d", cases[i].pass == 2 ? OC : N,
                 cases[i].pass == 0 ? OC : IC,
                 cases[i].pass == 0   ? IC
                 : cases[i].pass == 2 ? N
                                      : OC);
        float ms = 0;
        int rc = 0;
        switch (cases[i].pass) {
        case 0:
            TIME_MS(ms, rc |= linear_fwd(g, y, cases[i].epi == 2 ? pre : NULL, x, W,
                                         cases[i].epi ? b : NULL, N, IC, OC, cases[i].epi == 2, 0));
            break;
        case 1:
            TIME_MS(ms, rc |= linear_bwd_data(g, x, NULL, y, W, NULL, N, IC, OC, 0, 0));
            break;
        case 2:
            TIME_MS(ms, rc |= linear_bwd_weight(g, dW, NULL, y, x, N, IC, OC, 1, 0));
            break;
        default: {
            uint16_t *pg = drand_bf16((size_t)N * IC, 1), *dbp = (uint16_t *)dalloc(IC * 2);
            TIME_MS(ms, rc |= linear_bwd_data(g, x, dbp, y, W, pg, N, IC, OC, 0, 0));
        }
        }
        if (rc)
            printf("%-28s %-36s failed: %s\n", cases[i].name, sh, gemm_error());
        else
            row_fl(cases[i].name, sh, ms, 2.0 * N * IC * OC);
        free_all();
    }
    gemm_free(g);
    CUDA_CHECK(cudaFree(ws));
}

static void bench_attention(void)
{
    if (!want("attn"))
        return;
    static const int cases[][5] = { { 16, 1024, 12, 12, 64 }, { 2, 4096, 32, 8, 128 } };
    struct attn_cudnn *cd = attn_cudnn_new(1);
    if (!cd)
        printf("attn cudnn: unavailable: %s\n", attn_cudnn_error());
    for (int ci = 0; ci < 2; ci++) {
        const int B = cases[ci][0], T = cases[ci][1], Hq = cases[ci][2], Hkv = cases[ci][3];
        const int D = cases[ci][4];
        const size_t nq = (size_t)B * T * (Hq + 2 * Hkv) * D, no = (size_t)B * T * Hq * D;
        uint16_t *qkv = drand_bf16(nq, 1), *dout = drand_bf16(no, 1);
        uint16_t *out = (uint16_t *)dalloc(no * 2), *dqkv = (uint16_t *)dalloc(nq * 2);
        float *lse = (float *)dalloc((size_t)B * Hq * T * 4);
        void *ws = dalloc(attn_own_bwd_workspace_size(B, T, Hq));
        const float scale = 1.0f / sqrtf((float)D);
        const double fwd_flops = 2.0 * B * Hq * (double)T * T * D; /* causal: half of 4 B H T^2 D */
        char sh[96];
        snprintf(sh, sizeof(sh), "B=%d T=%d Hq=%d Hkv=%d D=%d", B, T, Hq, Hkv, D);
        float ms;
        TIME_MS(ms, attn_own_fwd(out, lse, qkv, B, T, Hq, Hkv, D, scale, 0));
        row_fl("attn own fwd", sh, ms, fwd_flops);
        TIME_MS(ms, attn_own_bwd(dqkv, ws, dout, qkv, out, lse, B, T, Hq, Hkv, D, scale, 0));
        row_fl("attn own bwd", sh, ms, 2.5 * fwd_flops);
        size_t fws, bws;
        if (cd && attn_cudnn_prepare(cd, B, T, Hq, Hkv, D, &fws, &bws) == 0) {
            size_t wsb = fws > bws ? fws : bws;
            void *cws = dalloc(wsb);
            TIME_MS(ms, attn_cudnn_fwd(cd, out, lse, qkv, B, T, Hq, Hkv, D, scale, cws, wsb, 0));
            row_fl("attn cudnn fwd", sh, ms, fwd_flops);
            TIME_MS(ms, attn_cudnn_bwd(cd, dqkv, dout, qkv, out, lse, B, T, Hq, Hkv, D, scale, cws,
                                       wsb, 0));
            row_fl(attn_cudnn_is_deterministic(cd, B, T, Hq, Hkv, D) ? "attn cudnn bwd (determ.)"
                                                                     : "attn cudnn bwd",
                   sh, ms, 2.5 * fwd_flops);
        } else if (cd) {
            printf("%-28s %-36s unsupported: %s\n", "attn cudnn", sh, attn_cudnn_error());
        }
        free_all();
    }
    attn_cudnn_free(cd);
}

int main(int argc, char **argv)
{
    int ndev = 0;
    cudaError_t e = cudaGetDeviceCount(&ndev);
    if (e != cudaSuccess || ndev == 0) {
        printf("bench_kernels: SKIP: no CUDA device (%s)\n",
               e != cudaSuccess ? cudaGetErrorString(e) : "none found");
        return 0;
    }
    g_filter = argc > 1 ? argv[1] : NULL;
    struct cudaDeviceProp prop;
    CUDA_CHECK(cudaGetDeviceProperties(&prop, 0));
    /* dense bf16 tensor peak and HBM bandwidth from the data sheets; else from the clocks */
    if (strstr(prop.name, "H200")) {
        g_peak_gbs = 4800, g_peak_tflops = 989;
    } else if (strstr(prop.name, "H100") && strstr(prop.name, "PCIe")) {
        g_peak_gbs = 2000, g_peak_tflops = 756;
    } else if (strstr(prop.name, "H100")) {
        g_peak_gbs = 3350, g_peak_tflops = 989;
    } else if (strstr(prop.name, "A100")) {
        g_peak_gbs = prop.totalGlobalMem > (48ull << 30) ? 2039 : 1555, g_peak_tflops = 312;
    } else {
        int clk = 0, bus = 0;
        cudaDeviceGetAttribute(&clk, cudaDevAttrMemoryClockRate, 0);
        cudaDeviceGetAttribute(&bus, cudaDevAttrGlobalMemoryBusWidth, 0);
        g_peak_gbs = 2.0 * clk * 1e3 * (bus / 8) / 1e9;
    }
    CUDA_CHECK(cudaEventCreate(&g_e0));
    CUDA_CHECK(cudaEventCreate(&g_e1));
    printf("bench_kernels: %s (%d SMs), peaks %.0f GB/s, %.0f TFLOP/s bf16 dense; cuDNN %ld\n",
           prop.name, prop.multiProcessorCount, g_peak_gbs, g_peak_tflops, attn_cudnn_version());
    printf("%-28s %-36s %9s %13s %5s\n", "kernel", "shape", "time_us", "achieved", "peak");
    bench_memory_bound();
    bench_gemm();
    bench_attention();
    return 0;
}
