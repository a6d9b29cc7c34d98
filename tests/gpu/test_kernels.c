/* GPU kernel tests: every kernel of kernels/ against a double-precision CPU reference on random
 * inputs, at several shapes including odd ones (scalar paths, partial tiles), through the C
 * interfaces the trainer uses. Outputs are poisoned (NaN) before each launch; every CUDA call
 * is checked. Without a GPU it prints SKIP and exits 0.
 *
 * Errors are relative L2 norms ||got - ref|| / ||ref|| over a whole output, with these
 * tolerances (bf16 keeps 8 significant bits: one rounding costs about 2^-9/sqrt(3) = 1.1e-3):
 *   exact   1e-6  results that are one rounding of the same fp32 expression (casts, adds)
 *   bf16    5e-3  one bf16 rounding of fp32 math (norms, activations, RoPE, dlogits, grads)
 *   gemm    1e-2  bf16 GEMMs with fp32 accumulation and a bf16 output
 *   attn    1e-2  attention output (P is rounded to bf16 before P.V)
 *   agrad   3e-2  attention gradients (two bf16 matmul stages)
 *   f32     1e-5  fp32 results: losses, norms, AdamW moments; 1e-4 for log-sum-exp,
 *                 1e-3 for LayerNorm means (fp32 sums of values that cancel) and for the
 *                 AdamW weight change (fp32 w - update with |w| >> |update|)
 * Accumulating outputs (+=) start from small random values and are compared as changes.
 * Determinism is checked bit for bit where kernels promise it.
 *
 * Usage: test_kernels            every group, each in its own process (a crash in one group
 *                                cannot hide the others); exit 1 on any failure
 *        test_kernels SUBSTRING  the groups whose name contains it, in this process
 * A fatal CUDA error is reported where it is noticed; CUDA_LAUNCH_BLOCKING=1 pins it to the
 * kernel that caused it.
 */
#include <spawn.h>
#include <stdarg.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tests/gpu/common.h"
#include "kernels/attention.h"
#include "kernels/gemm.h"

#define TOL_EXACT 1e-6
#define TOL_BF16  5e-3
#define TOL_GEMM  1e-2
#define TOL_ATTN  1e-2
#define TOL_AGRAD 3e-2
#define TOL_F32   1e-5
#define TOL_LSE   1e-4
#define TOL_MEAN  1e-3

static int g_pass, g_fail, g_skip;

static const char *nm(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static const char *nm(const char *fmt, ...)
{
    static char buf[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof(buf), fmt, ap);
    va_end(ap);
    return buf;
}

static void result(int ok, const char *what, const char *detail)
{
    printf("  %s %-56s %s\n", ok ? "ok  " : "FAIL", what, detail);
    if (ok)
        g_pass++;
    else
        g_fail++;
}

static void skip(const char *what, const char *why)
{
    printf("  skip %-56s %s\n", what, why);
    g_skip++;
}

/* Relative L2 error of got against ref; any non-finite value where ref is finite fails. */
static int check(const char *what, const double *ref, const float *got, size_t n, double tol)
{
    double num = 0, den = 0, maxd = 0;
    size_t bad = 0;
    for (size_t i = 0; i < n; i++) {
        if (!isfinite(got[i]) && isfinite(ref[i])) {
            bad++;
            continue;
        }
        double d = (double)got[i] - ref[i];
        num += d * d;
        den += ref[i] * ref[i];
        if (fabs(d) > maxd)
            maxd = fabs(d);
    }
    double rel = den > 0 ? sqrt(num / den) : sqrt(num);
    int ok = !bad && rel <= tol;
    char detail[160];
    if (bad)
        snprintf(detail, sizeof(detail), "%zu non-finite of %zu (unwritten or overflow)", bad, n);
    else
        snprintf(detail, sizeof(detail), "rel %.2e max|d| %.2e (tol %.0e)", rel, maxd, tol);
    result(ok, what, detail);
    return ok;
}

/* Same as check, comparing changes: (got - base) against (ref - base). */
static int check_delta(const char *what, const double *ref, const float *got, const float *base,
                       size_t n, double tol)
{
    double *r = dvec(n);
    float *g = (float *)halloc(n * 4);
    for (size_t i = 0; i < n; i++) {
        r[i] = ref[i] - base[i];
        g[i] = got[i] - base[i];
    }
    return check(what, r, g, n, tol);
}

static int check_bits(const char *what, const void *a, const void *b, size_t bytes)
{
    int ok = memcmp(a, b, bytes) == 0;
    result(ok, what, ok ? "bit-identical" : "differs");
    return ok;
}

static void *host_copy(const void *d, size_t bytes)
{
    void *h = halloc(bytes);
    CUDA_CHECK(cudaDeviceSynchronize());
    CUDA_CHECK(cudaMemcpy(h, d, bytes, cudaMemcpyDeviceToHost));
    return h;
}

static float *bf16_to_f32_host(const uint16_t *h, size_t n)
{
    float *f = (float *)halloc(n * 4);
    for (size_t i = 0; i < n; i++)
        f[i] = bf2f(h[i]);
    return f;
}

static double gelu_d(double x)
{
    double u = 0.7978845608028654 * (x + 0.044715 * x * x * x);
    return 0.5 * x * (1 + tanh(u));
}

static double gelu_grad_d(double x)
{
    double u = 0.7978845608028654 * (x + 0.044715 * x * x * x), t = tanh(u);
    return 0.5 * (1 + t) + 0.5 * x * (1 - t * t) * 0.7978845608028654 * (1 + 3 * 0.044715 * x * x);
}

/* ---- utilities ---------------------------------------------------------------------------- */

static void t_util(void)
{
    const size_t sizes[] = { 1, 7, 8, 1000, 4099 };
    for (int si = 0; si < 5; si++)
        for (int off = 0; off < 2; off++) {
            size_t n = sizes[si];
            float *hf = rand_f32(n + 1, 3.0f);
            float *df = (float *)to_dev(hf, (n + 1) * 4);
            uint16_t *db = (uint16_t *)dalloc((n + 1) * 2);
            poison(db, (n + 1) * 2);
            cast_f32_to_bf16(db + off, df + off, n, 0);
            float *got = get_bf16(db + off, n);
            double *ref = dvec(n);
            for (size_t i = 0; i < n; i++)
                ref[i] = rbf(hf[off + i]);
            check(nm("cast_f32_to_bf16 n=%zu off=%d", n, off), ref, got, n, TOL_EXACT);

            poison(df, (n + 1) * 4);
            cast_bf16_to_f32(df + off, db + off, n, 0);
            got = get_f32(df + off, n);
            check(nm("cast_bf16_to_f32 n=%zu off=%d", n, off), ref, got, n, TOL_EXACT);

            uint16_t *ha = rand_bf16(n + 1, 1.0f), *hb = rand_bf16(n + 1, 1.0f);
            uint16_t *da = (uint16_t *)to_dev(ha, (n + 1) * 2);
            uint16_t *dbb = (uint16_t *)to_dev(hb, (n + 1) * 2);
            poison(db, (n + 1) * 2);
            add_bf16(db + off, da + off, dbb + off, n, 0);
            got = get_bf16(db + off, n);
            for (size_t i = 0; i < n; i++)
                ref[i] = rbf(bf2f(ha[off + i]) + bf2f(hb[off + i]));
            check(nm("add_bf16 n=%zu off=%d", n, off), ref, got, n, TOL_EXACT);

            float *hx = rand_f32(n + 1, 2.0f), *hy = rand_f32(n + 1, 2.0f);
            float *dx = (float *)to_dev(hx, (n + 1) * 4), *dy = (float *)to_dev(hy, (n + 1) * 4);
            add_f32(dx + off, dx + off, dy + off, n, 0); /* in place, as the trainer calls it */
            got = get_f32(dx + off, n);
            for (size_t i = 0; i < n; i++)
                ref[i] = (double)(hx[off + i] + hy[off + i]);
            check(nm("add_f32 n=%zu off=%d", n, off), ref, got, n, TOL_EXACT);

            fill_bf16(db + off, 0.3f, n, 0);
            got = get_bf16(db + off, n);
            for (size_t i = 0; i < n; i++)
                ref[i] = rbf(0.3f);
            check(nm("fill_bf16 n=%zu off=%d", n, off), ref, got, n, TOL_EXACT);
            fill_f32(df + off, -1.5f, n, 0);
            got = get_f32(df + off, n);
            for (size_t i = 0; i < n; i++)
                ref[i] = -1.5;
            check(nm("fill_f32 n=%zu off=%d", n, off), ref, got, n, TOL_EXACT);

            for (size_t i = 0; i < n; i++)
                ref[i] = rbf(0.3f);
            poison(da, (n + 1) * 2);
            copy_bf16(da + off, db + off, n, 0);
            got = get_bf16(da + off, n);
            check(nm("copy_bf16 n=%zu off=%d", n, off), ref, got, n, TOL_EXACT);
        }
    size_t n = 65537;
    float *h = rand_f32(n, 1.0f);
    float *d = (float *)to_dev(h, n * 4), *out = (float *)dalloc(4);
    poison(out, 4);
    sum_f32(out, d, n, 0.5f, 0);
    double s = 0;
    for (size_t i = 0; i < n; i++)
        s += h[i];
    s *= 0.5;
    check(nm("sum_f32 n=%zu", n), &s, get_f32(out, 1), 1, TOL_F32);
}

static void t_global_norm(void)
{
    const size_t sizes[] = { 1, 1000, (1u << 20) + 3 };
    for (int si = 0; si < 3; si++)
        for (int off = 0; off < 2; off++) {
            size_t n = sizes[si];
            uint16_t *h = rand_bf16(n + 1, 0.01f);
            uint16_t *d = (uint16_t *)to_dev(h, (n + 1) * 2);
            void *scratch = dalloc(global_norm_scratch_size());
            float *out = (float *)dalloc(4);
            poison(out, 4);
            global_norm_sq(out, scratch, d + off, n, 0, 0);
            double s = 0;
            for (size_t i = 0; i < n; i++)
                s += (double)bf2f(h[off + i]) * bf2f(h[off + i]);
            float *a = get_f32(out, 1);
            check(nm("global_norm_sq n=%zu off=%d", n, off), &s, a, 1, TOL_F32);
            global_norm_sq(out, scratch, d + off, n, 1, 0);
            double s2 = 2 * s;
            check(nm("global_norm_sq accumulate n=%zu off=%d", n, off), &s2, get_f32(out, 1), 1,
                  TOL_F32);
            global_norm_sq(out, scratch, d + off, n, 0, 0);
            check_bits(nm("global_norm_sq deterministic n=%zu off=%d", n, off), a, get_f32(out, 1),
                       4);
        }
}

/* ---- embeddings ----------------------------------------------------------------------------- */

static void t_embedding(void)
{
    static const int cases[][5] = {
        { 2, 16, 64, 100, 1 }, { 3, 7, 13, 50, 1 }, { 4, 64, 768, 1000, 1 }, { 2, 33, 24, 17, 0 }
    };
    for (int ci = 0; ci < 4; ci++) {
        const int B = cases[ci][0], T = cases[ci][1], C = cases[ci][2], V = cases[ci][3];
        const int has_wpe = cases[ci][4], N = B * T;
        int32_t *tok = (int32_t *)halloc(N * 4);
        for (int i = 0; i < N; i++)
            tok[i] = (i % 4 == 0) ? 3 : (int32_t)(rnd_u64() % V);
        uint16_t *wte = rand_bf16((size_t)V * C, 1.0f), *wpe = rand_bf16((size_t)T * C, 1.0f);
        int32_t *dtok = (int32_t *)to_dev(tok, N * 4);
        uint16_t *dwte_w = (uint16_t *)to_dev(wte, (size_t)V * C * 2);
        uint16_t *dwpe_w = has_wpe ? (uint16_t *)to_dev(wpe, (size_t)T * C * 2) : NULL;
        uint16_t *out = (uint16_t *)dalloc((size_t)N * C * 2);
        poison(out, (size_t)N * C * 2);
        embedding_fwd(out, dtok, dwte_w, dwpe_w, B, T, C, V, 0);
        double *ref = dvec((size_t)N * C);
        for (int n = 0; n < N; n++)
            for (int c = 0; c < C; c++) {
                float a = bf2f(wte[(size_t)tok[n] * C + c]);
                if (has_wpe)
                    a += bf2f(wpe[(size_t)(n % T) * C + c]);
                ref[(size_t)n * C + c] = rbf(a);
            }
        const char *shape = nm("B=%d T=%d C=%d V=%d%s", B, T, C, V, has_wpe ? "" : " no-wpe");
        char sh[128];
        snprintf(sh, sizeof(sh), "%s", shape);
        check(nm("embedding_fwd %s", sh), ref, get_bf16(out, (size_t)N * C), (size_t)N * C,
              TOL_EXACT);

        /* backward, accumulating into small random gradients */
        uint16_t *dout = rand_bf16((size_t)N * C, 1.0f);
        uint16_t *g0 = rand_bf16((size_t)V * C, 0.01f), *p0 = rand_bf16((size_t)T * C, 0.01f);
        uint16_t *ddout = (uint16_t *)to_dev(dout, (size_t)N * C * 2);
        uint16_t *dg = (uint16_t *)to_dev(g0, (size_t)V * C * 2);
        uint16_t *dp = has_wpe ? (uint16_t *)to_dev(p0, (size_t)T * C * 2) : NULL;
        size_t sb = embedding_bwd_scratch_size(B, T, V);
        void *scratch = dalloc(sb);
        embedding_bwd(dg, dp, scratch, sb, ddout, dtok, B, T, C, V, 0);
        double *gref = dvec((size_t)V * C);
        float *gbase = bf16_to_f32_host(g0, (size_t)V * C);
        for (size_t i = 0; i < (size_t)V * C; i++)
            gref[i] = gbase[i];
        for (int n = 0; n < N; n++)
            for (int c = 0; c < C; c++)
                gref[(size_t)tok[n] * C + c] += bf2f(dout[(size_t)n * C + c]);
        float *got = get_bf16(dg, (size_t)V * C);
        check_delta(nm("embedding_bwd dwte %s", sh), gref, got, gbase, (size_t)V * C, TOL_BF16);
        if (has_wpe) {
            double *pref = dvec((size_t)T * C);
            float *pbase = bf16_to_f32_host(p0, (size_t)T * C);
            for (size_t i = 0; i < (size_t)T * C; i++)
                pref[i] = pbase[i];
            for (int n = 0; n < N; n++)
                for (int c = 0; c < C; c++)
                    pref[(size_t)(n % T) * C + c] += bf2f(dout[(size_t)n * C + c]);
            check_delta(nm("embedding_bwd dwpe %s", sh), pref, get_bf16(dp, (size_t)T * C), pbase,
                        (size_t)T * C, TOL_BF16);
        }
        void *first = host_copy(dg, (size_t)V * C * 2);
        upload(dg, g0, (size_t)V * C * 2);
        embedding_bwd(dg, NULL, scratch, sb, ddout, dtok, B, T, C, V, 0);
        check_bits(nm("embedding_bwd deterministic %s", sh), first,
                   host_copy(dg, (size_t)V * C * 2), (size_t)V * C * 2);
    }
}

/* The vocab-parallel embedding: each part's rows (zeros for the others' tokens) summed,
 * then the positions added, equal embedding_fwd bit for bit; the backward over the local ids
 * gives each part its rows of the whole table's gradient. */
static void t_embedding_vp(void)
{
    const int B = 2, T = 16, C = 24, V = 96, P = 2, rows = V / P, N = B * T, row0 = 5;
    int32_t *tok = (int32_t *)halloc(N * 4);
    for (int i = 0; i < N; i++)
        tok[i] = (i % 5 == 0) ? rows - 1 : (int32_t)(rnd_u64() % V);
    uint16_t *wte = rand_bf16((size_t)V * C, 1.0f), *wpe = rand_bf16((size_t)T * C, 1.0f);
    int32_t *dtok = (int32_t *)to_dev(tok, N * 4), *ids = (int32_t *)dalloc(N * 4);
    uint16_t *dwte = (uint16_t *)to_dev(wte, (size_t)V * C * 2);
    uint16_t *dwpe = (uint16_t *)to_dev(wpe, (size_t)T * C * 2);
    uint16_t *whole = (uint16_t *)dalloc((size_t)N * C * 2),
             *out = (uint16_t *)dalloc((size_t)N * C * 2);
    embedding_fwd(whole, dtok, dwte, dwpe, B, T, C, V, 0);
    uint16_t *ref = (uint16_t *)host_copy(whole, (size_t)N * C * 2);
    float *sum = (float *)halloc((size_t)N * C * 4);
    memset(sum, 0, (size_t)N * C * 4);
    uint16_t *dout = rand_bf16((size_t)N * C, 1.0f),
             *ddout = (uint16_t *)to_dev(dout, (size_t)N * C * 2);
    size_t sb = embedding_bwd_scratch_size(B, T, rows);
    void *scratch = dalloc(sb);
    double *gref = dvec((size_t)V * C);
    for (int n = 0; n < N; n++)
        for (int c = 0; c < C; c++)
            gref[(size_t)tok[n] * C + c] += bf2f(dout[(size_t)n * C + c]);
    float *grad = (float *)halloc((size_t)V * C * 4);
    for (int p = 0; p < P; p++) {
        embedding_local_ids(ids, dtok, p * rows, rows, N, 0);
        poison(out, (size_t)N * C * 2);
        embedding_fwd_vp(out, ids, dwte + (size_t)p * rows * C, N, C, 0);
        float *o = get_bf16(out, (size_t)N * C);
        for (size_t i = 0; i < (size_t)N * C; i++)
            sum[i] += o[i]; /* one part is zero: exact */
        uint16_t *dg = (uint16_t *)dalloc((size_t)rows * C * 2);
        CUDA_CHECK(cudaMemset(dg, 0, (size_t)rows * C * 2));
        embedding_bwd(dg, NULL, scratch, sb, ddout, ids, B, T, C, rows, 0);
        memcpy(grad + (size_t)p * rows * C, get_bf16(dg, (size_t)rows * C), (size_t)rows * C * 4);
    }
    uint16_t *hs = (uint16_t *)halloc((size_t)N * C * 2);
    for (size_t i = 0; i < (size_t)N * C; i++) {
        uint32_t b;
        memcpy(&b, &sum[i], 4);
        hs[i] = (uint16_t)(b >> 16); /* a sum of bf16 and zeros: exactly a bf16 */
    }
    upload(out, hs, (size_t)N * C * 2);
    embedding_pos_add(out, dwpe, 0, N, T, C, 0);
    check_bits("embedding_fwd_vp + pos_add = embedding_fwd", ref, host_copy(out, (size_t)N * C * 2),
               (size_t)N * C * 2);
    /* rows [row0, row0 + R) of a sequence-parallel rank: positions from row0 */
    const int R = 9;
    upload(out, hs + (size_t)row0 * C, (size_t)R * C * 2);
    embedding_pos_add(out, dwpe, row0, R, T, C, 0);
    check_bits("embedding_pos_add from row0", ref + (size_t)row0 * C,
               host_copy(out, (size_t)R * C * 2), (size_t)R * C * 2);
    check("embedding_bwd over local ids: each part's rows", gref, grad, (size_t)V * C, TOL_BF16);
    free_all();
}

/* ---- norms ---------------------------------------------------------------------------------- */

static void t_norms(void)
{
    /* N, C, residual, bias, bwd-mode (0: dresid, 1: none, 2: in place) */
    static const int cases[][5] = { { 64, 768, 1, 1, 0 }, { 37, 100, 1, 0, 2 },
                                    { 5, 13, 0, 1, 1 },   { 256, 4096, 1, 1, 2 },
                                    { 3, 8192, 0, 1, 0 }, { 1000, 64, 1, 1, 0 } };
    for (int rms = 0; rms < 2; rms++)
        for (int ci = 0; ci < 6; ci++) {
            const int N = cases[ci][0], C = cases[ci][1], res = cases[ci][2];
            const int has_b = cases[ci][3] && !rms, mode = cases[ci][4];
            const size_t NC = (size_t)N * C;
            char sh[96];
            snprintf(sh, sizeof(sh), "%s N=%d C=%d%s%s", rms ? "rmsnorm" : "layernorm", N, C,
                     res ? " +resid" : "", has_b ? " +bias" : "");
            uint16_t *x = rand_bf16(NC, 1.0f), *r = rand_bf16(NC, 1.0f);
            uint16_t *w = (uint16_t *)halloc(C * 2), *b = rand_bf16(C, 0.1f);
            for (int c = 0; c < C; c++)
                w[c] = f2bf(1.0f + 0.1f * rnd_normal());
            uint16_t *dx = (uint16_t *)to_dev(x, NC * 2), *dr = (uint16_t *)to_dev(r, NC * 2);
            uint16_t *dw = (uint16_t *)to_dev(w, C * 2), *dbias = (uint16_t *)to_dev(b, C * 2);
            uint16_t *out = (uint16_t *)dalloc(NC * 2), *resid = (uint16_t *)dalloc(NC * 2);
            float *mean = (float *)dalloc(N * 4), *rstd = (float *)dalloc(N * 4);
            poison(out, NC * 2);
            poison(resid, NC * 2);
            poison(mean, N * 4);
            poison(rstd, N * 4);
            const float eps = 1e-5f;
            if (rms)
                rmsnorm_fwd(out, rstd, res ? resid : NULL, dx, res ? dr : NULL, dw, N, C, eps, 0);
            else
                layernorm_fwd(out, mean, rstd, res ? resid : NULL, dx, res ? dr : NULL, dw,
                              has_b ? dbias : NULL, N, C, eps, 0);
            /* reference */
            float *h = (float *)halloc(NC * 4);
            double *oref = dvec(NC), *mref = dvec(N), *rref = dvec(N), *href = dvec(NC);
            for (size_t i = 0; i < NC; i++) {
                h[i] = res ? rbf(bf2f(x[i]) + bf2f(r[i])) : bf2f(x[i]);
                href[i] = h[i];
            }
            for (int n = 0; n < N; n++) {
                const float *hr = h + (size_t)n * C;
                double mu = 0, var = 0;
                if (!rms) {
                    for (int c = 0; c < C; c++)
                        mu += hr[c];
                    mu /= C;
                }
                for (int c = 0; c < C; c++)
                    var += (hr[c] - mu) * (hr[c] - mu);
                double rs = 1.0 / sqrt(var / C + eps);
                mref[n] = mu;
                rref[n] = rs;
                for (int c = 0; c < C; c++)
                    oref[(size_t)n * C + c] =
                        (hr[c] - mu) * rs * bf2f(w[c]) + (has_b ? bf2f(b[c]) : 0.0);
            }
            check(nm("%s fwd out", sh), oref, get_bf16(out, NC), NC, TOL_BF16);
            if (res)
                check(nm("%s fwd resid_out", sh), href, get_bf16(resid, NC), NC, TOL_EXACT);
            if (!rms)
                check(nm("%s fwd mean", sh), mref, get_f32(mean, N), N, TOL_MEAN);
            float *rs_gpu = get_f32(rstd, N);
            check(nm("%s fwd rstd", sh), rref, rs_gpu, N, TOL_F32);
            float *mu_gpu = rms ? NULL : get_f32(mean, N);

            /* backward with the forward's statistics */
            uint16_t *dout = rand_bf16(NC, 1.0f), *dres = rand_bf16(NC, 1.0f);
            uint16_t *w0 = rand_bf16(C, 0.01f), *b0 = rand_bf16(C, 0.01f);
            uint16_t *ddout = (uint16_t *)to_dev(dout, NC * 2);
            uint16_t *ddres = (uint16_t *)to_dev(dres, NC * 2);
            uint16_t *dh = res ? resid : dx;
            uint16_t *gw = (uint16_t *)to_dev(w0, C * 2), *gb = (uint16_t *)to_dev(b0, C * 2);
            uint16_t *dinp = mode == 2 ? ddres : (uint16_t *)dalloc(NC * 2);
            if (mode != 2)
                poison(dinp, NC * 2);
            void *scratch = dalloc(norm_bwd_scratch_size(N, C));
            const uint16_t *dresid_arg = mode == 1 ? NULL : ddres;
            if (rms)
                rmsnorm_bwd(dinp, gw, scratch, dresid_arg, ddout, dh, dw, rstd, N, C, 0);
            else
                layernorm_bwd(dinp, gw, has_b ? gb : NULL, scratch, dresid_arg, ddout, dh, dw, mean,
                              rstd, N, C, 0);
            double *dxref = dvec(NC), *gwref = dvec(C), *gbref = dvec(C);
            float *w0f = bf16_to_f32_host(w0, C), *b0f = bf16_to_f32_host(b0, C);
            for (int c = 0; c < C; c++) {
                gwref[c] = w0f[c];
                gbref[c] = b0f[c];
            }
            for (int n = 0; n < N; n++) {
                const double mu = rms ? 0.0 : mu_gpu[n], rs = rs_gpu[n];
                double c1 = 0, c2 = 0;
                for (int c = 0; c < C; c++) {
                    size_t i = (size_t)n * C + c;
                    double nrm = (h[i] - mu) * rs, dn = bf2f(dout[i]) * bf2f(w[c]);
                    c1 += dn;
                    c2 += dn * nrm;
                }
                c1 = rms ? 0.0 : c1 / C;
                c2 /= C;
                for (int c = 0; c < C; c++) {
                    size_t i = (size_t)n * C + c;
                    double nrm = (h[i] - mu) * rs, dn = bf2f(dout[i]) * bf2f(w[c]);
                    dxref[i] = rs * (dn - c1 - nrm * c2) + (mode == 1 ? 0.0 : bf2f(dres[i]));
                    gwref[c] += bf2f(dout[i]) * nrm;
                    gbref[c] += bf2f(dout[i]);
                }
            }
            const char *how = mode == 0 ? "dresid" : mode == 1 ? "no dresid" : "in place";
            check(nm("%s bwd dinp (%s)", sh, how), dxref, get_bf16(dinp, NC), NC, TOL_BF16);
            check_delta(nm("%s bwd dw", sh), gwref, get_bf16(gw, C), w0f, C, TOL_BF16);
            if (has_b)
                check_delta(nm("%s bwd db", sh), gbref, get_bf16(gb, C), b0f, C, TOL_BF16);
            if (mode != 2) {
                void *first = host_copy(gw, C * 2);
                upload(gw, w0, C * 2);
                if (rms)
                    rmsnorm_bwd(dinp, gw, scratch, dresid_arg, ddout, dh, dw, rstd, N, C, 0);
                else
                    layernorm_bwd(dinp, gw, has_b ? gb : NULL, scratch, dresid_arg, ddout, dh, dw,
                                  mean, rstd, N, C, 0);
                check_bits(nm("%s bwd dw deterministic", sh), first, host_copy(gw, C * 2), C * 2);
            }
            free_all();
        }
}

static void t_bias(void)
{
    static const int cases[][2] = { { 100, 768 }, { 33, 13 }, { 1000, 10240 }, { 40, 9001 } };
    for (int ci = 0; ci < 4; ci++) {
        const int N = cases[ci][0], C = cases[ci][1];
        uint16_t *dout = rand_bf16((size_t)N * C, 1.0f), *b0 = rand_bf16(C, 0.01f);
        uint16_t *dd = (uint16_t *)to_dev(dout, (size_t)N * C * 2);
        uint16_t *db = (uint16_t *)to_dev(b0, C * 2);
        void *scratch = dalloc(norm_bwd_scratch_size(N, C));
        bias_bwd(db, scratch, dd, N, C, 0);
        double *ref = dvec(C);
        float *base = bf16_to_f32_host(b0, C);
        for (int c = 0; c < C; c++) {
            ref[c] = base[c];
            for (int n = 0; n < N; n++)
                ref[c] += bf2f(dout[(size_t)n * C + c]);
        }
        check_delta(nm("bias_bwd N=%d C=%d", N, C), ref, get_bf16(db, C), base, C, TOL_BF16);
        void *first = host_copy(db, C * 2);
        upload(db, b0, C * 2);
        bias_bwd(db, scratch, dd, N, C, 0);
        check_bits(nm("bias_bwd deterministic N=%d C=%d", N, C), first, host_copy(db, C * 2),
                   C * 2);
        free_all();
    }
}

/* ---- activations ------------------------------------------------------------------------------
 */

static void t_activations(void)
{
    const size_t sizes[] = { 1000, 4097 };
    for (int si = 0; si < 2; si++)
        for (int off = 0; off < 2; off++) {
            size_t n = sizes[si];
            uint16_t *x = rand_bf16(n + 1, 2.0f), *g = rand_bf16(n + 1, 1.0f);
            uint16_t *dx = (uint16_t *)to_dev(x, (n + 1) * 2),
                     *dg = (uint16_t *)to_dev(g, (n + 1) * 2);
            uint16_t *out = (uint16_t *)dalloc((n + 1) * 2);
            poison(out, (n + 1) * 2);
            gelu_fwd(out + off, dx + off, n, 0);
            double *ref = dvec(n);
            for (size_t i = 0; i < n; i++)
                ref[i] = gelu_d(bf2f(x[off + i]));
            check(nm("gelu_fwd n=%zu off=%d", n, off), ref, get_bf16(out + off, n), n, TOL_BF16);
            poison(out, (n + 1) * 2);
            gelu_bwd(out + off, dg + off, dx + off, n, 0);
            for (size_t i = 0; i < n; i++)
                ref[i] = bf2f(g[off + i]) * gelu_grad_d(bf2f(x[off + i]));
            check(nm("gelu_bwd n=%zu off=%d", n, off), ref, get_bf16(out + off, n), n, TOL_BF16);
            gelu_fwd(dx + off, dx + off, n, 0); /* in place */
            for (size_t i = 0; i < n; i++)
                ref[i] = gelu_d(bf2f(x[off + i]));
            check(nm("gelu_fwd in place n=%zu off=%d", n, off), ref, get_bf16(dx + off, n), n,
                  TOL_BF16);
        }
    static const int cases[][2] = { { 64, 256 }, { 7, 13 }, { 33, 1000 } };
    for (int ci = 0; ci < 3; ci++) {
        const int N = cases[ci][0], F = cases[ci][1];
        const size_t n2 = (size_t)N * 2 * F, n1 = (size_t)N * F;
        uint16_t *inp = rand_bf16(n2, 2.0f), *dout = rand_bf16(n1, 1.0f);
        uint16_t *di = (uint16_t *)to_dev(inp, n2 * 2), *dd = (uint16_t *)to_dev(dout, n1 * 2);
        uint16_t *out = (uint16_t *)dalloc(n1 * 2), *dinp = (uint16_t *)dalloc(n2 * 2);
        poison(out, n1 * 2);
        poison(dinp, n2 * 2);
        swiglu_fwd(out, di, N, F, 0);
        swiglu_bwd(dinp, dd, di, N, F, 0);
        double *ro = dvec(n1), *rd = dvec(n2);
        for (int n = 0; n < N; n++)
            for (int f = 0; f < F; f++) {
                double gt = bf2f(inp[(size_t)n * 2 * F + f]),
                       up = bf2f(inp[(size_t)n * 2 * F + F + f]);
                double s = 1 / (1 + exp(-gt)), d = bf2f(dout[(size_t)n * F + f]);
                ro[(size_t)n * F + f] = gt * s * up;
                rd[(size_t)n * 2 * F + f] = d * up * s * (1 + gt * (1 - s));
                rd[(size_t)n * 2 * F + F + f] = d * gt * s;
            }
        check(nm("swiglu_fwd N=%d F=%d", N, F), ro, get_bf16(out, n1), n1, TOL_BF16);
        check(nm("swiglu_bwd N=%d F=%d", N, F), rd, get_bf16(dinp, n2), n2, TOL_BF16);
        free_all();
    }
}

/* ---- RoPE -------------------------------------------------------------------------------------
 */

static void rope_ref(double *outv, const float *in, const double *inv, int B, int T, int Hq,
                     int Hkv, int D, int inverse)
{
    const int S3 = (Hq + 2 * Hkv) * D, half = D / 2;
    for (size_t i = 0; i < (size_t)B * T * S3; i++)
        outv[i] = in[i];
    for (int n = 0; n < B * T; n++)
        for (int h = 0; h < Hq + Hkv; h++)
            for (int i = 0; i < half; i++) {
                size_t p = (size_t)n * S3 + (size_t)h * D;
                double a = in[p + i], b = in[p + i + half], ang = (n % T) * inv[i];
                double c = cos(ang), s = inverse ? -sin(ang) : sin(ang);
                outv[p + i] = a * c - b * s;
                outv[p + i + half] = a * s + b * c;
            }
}

static void t_rope(void)
{
    static const int cases[][6] = { { 2, 33, 4, 2, 64, 0 },
                                    { 1, 16, 2, 1, 16, 0 },
                                    { 1, 128, 4, 4, 128, 1 } };
    for (int ci = 0; ci < 3; ci++) {
        const int B = cases[ci][0], T = cases[ci][1], Hq = cases[ci][2], Hkv = cases[ci][3];
        const int D = cases[ci][4], l31 = cases[ci][5];
        struct rope_config cfg = { 10000.0, 0, 0, 0, 0 };
        if (l31)
            cfg = (struct rope_config){ 500000.0, 8.0, 1.0, 4.0, 8192 };
        const size_t n = (size_t)B * T * (Hq + 2 * Hkv) * D, nt = (size_t)T * (D / 2);
        float *ct = (float *)halloc(nt * 4), *stt = (float *)halloc(nt * 4);
        rope_tables(ct, stt, T, D, &cfg);
        double *inv = dvec(D / 2);
        rope_inv_freq(inv, D, &cfg);
        float *dct = (float *)to_dev(ct, nt * 4), *dst = (float *)to_dev(stt, nt * 4);
        uint16_t *qkv = rand_bf16(n, 1.0f);
        uint16_t *d = (uint16_t *)to_dev(qkv, n * 2);
        rope_fwd(d, dct, dst, B, T, Hq, Hkv, D, 0);
        double *ref = dvec(n);
        rope_ref(ref, bf16_to_f32_host(qkv, n), inv, B, T, Hq, Hkv, D, 0);
        char sh[96];
        snprintf(sh, sizeof(sh), "B=%d T=%d Hq=%d Hkv=%d D=%d%s", B, T, Hq, Hkv, D,
                 l31 ? " llama3.1" : "");
        float *fw = get_bf16(d, n);
        check(nm("rope_fwd %s", sh), ref, fw, n, TOL_BF16);
        rope_bwd(d, dct, dst, B, T, Hq, Hkv, D, 0);
        rope_ref(ref, fw, inv, B, T, Hq, Hkv, D, 1);
        check(nm("rope_bwd %s", sh), ref, get_bf16(d, n), n, TOL_BF16);
        if (l31) {
            /* highest frequency unchanged, lowest divided by the factor */
            double r[2] = { 1.0, pow(500000.0, -(double)(D - 2) / D) / 8.0 };
            float got[2] = { (float)inv[0], (float)inv[D / 2 - 1] };
            check("rope_inv_freq llama3.1 scaling ends", r, got, 2, TOL_F32);
        }
        free_all();
    }
}

/* ---- classifier -------------------------------------------------------------------------------
 */

static void t_classifier(void)
{
    static const int cases[][3] = {
        { 8, 50257, 50304 }, { 5, 1000, 1003 }, { 4, 128256, 128256 }, { 3, 7, 16 }
    };
    for (int ci = 0; ci < 4; ci++) {
        const int N = cases[ci][0], V = cases[ci][1], Vp = cases[ci][2];
        const size_t n = (size_t)N * Vp;
        uint16_t *lg = rand_bf16(n, 2.0f);
        int32_t *tg = (int32_t *)halloc(N * 4);
        for (int i = 0; i < N; i++)
            tg[i] = (int32_t)(rnd_u64() % V);
        tg[0] = V - 1;
        if (N > 1)
            tg[1] = -1;
        uint16_t *dl = (uint16_t *)to_dev(lg, n * 2);
        int32_t *dt = (int32_t *)to_dev(tg, N * 4);
        float *losses = (float *)dalloc(N * 4);
        poison(losses, N * 4);
        const float dloss = 1.0f / N;
        classifier_fwd_bwd(losses, dl, dt, N, V, Vp, 0.0f, 0, 0);
        char sh[64];
        snprintf(sh, sizeof(sh), "N=%d V=%d Vp=%d", N, V, Vp);
        check_bits(nm("classifier loss only keeps logits %s", sh), lg, host_copy(dl, n * 2), n * 2);
        poison(losses, N * 4);
        classifier_fwd_bwd(losses, dl, dt, N, V, Vp, dloss, 1, 0);
        double *lref = dvec(N), *gref = dvec(n);
        for (int r = 0; r < N; r++) {
            const uint16_t *x = lg + (size_t)r * Vp;
            double m = -INFINITY, z = 0;
            for (int c = 0; c < V; c++)
                if (bf2f(x[c]) > m)
                    m = bf2f(x[c]);
            for (int c = 0; c < V; c++)
                z += exp(bf2f(x[c]) - m);
            double lse = m + log(z);
            lref[r] = tg[r] >= 0 ? lse - bf2f(x[tg[r]]) : 0.0;
            for (int c = 0; c < Vp; c++)
                gref[(size_t)r * Vp + c] =
                    (tg[r] >= 0 && c < V) ? (exp(bf2f(x[c]) - lse) - (c == tg[r])) * dloss : 0.0;
        }
        check(nm("classifier losses %s", sh), lref, get_f32(losses, N), N, TOL_F32);
        float *g = get_bf16(dl, n);
        check(nm("classifier dlogits %s", sh), gref, g, n, TOL_BF16);
        int zero_ok = 1;
        for (int r = 0; r < N; r++)
            for (int c = (tg[r] >= 0 ? V : 0); c < Vp; c++)
                if (g[(size_t)r * Vp + c] != 0.0f)
                    zero_ok = 0;
        result(zero_ok, nm("classifier padding/ignored rows zero %s", sh), "");
        free_all();
    }
}

/* The vocab-parallel classifier: the vocabulary split over `parts` emulated ranks, their
 * statistics reduced here as the tensor-parallel group does (max, then sums), against the
 * whole row's softmax cross-entropy. */
static void t_classifier_vp(void)
{
    static const int cases[][4] = { /* N, V, Vp, parts */
                                    { 6, 1000, 1024, 2 },
                                    { 5, 509, 512, 4 },
                                    { 3, 13, 16, 2 }
    };
    for (int ci = 0; ci < 3; ci++) {
        const int N = cases[ci][0], V = cases[ci][1], Vp = cases[ci][2], P = cases[ci][3];
        const int rows = Vp / P; /* every part's columns (the last one's padded) */
        uint16_t *lg = rand_bf16((size_t)N * Vp, 2.0f);
        int32_t *tg = (int32_t *)halloc(N * 4);
        for (int i = 0; i < N; i++)
            tg[i] = (int32_t)(rnd_u64() % V);
        tg[0] = V - 1;
        tg[1] = -1;
        tg[2] = rows; /* the first column of the second part (rows < V in every case) */
        int32_t *dt = (int32_t *)to_dev(tg, N * 4);
        const float dloss = 1.0f / N;
        float *mx = (float *)halloc((size_t)N * 4), *se = (float *)halloc((size_t)N * 4);
        float *tl = (float *)halloc((size_t)N * 4);
        for (int i = 0; i < N; i++)
            mx[i] = -INFINITY, se[i] = 0.0f, tl[i] = 0.0f;
        uint16_t **dl = (uint16_t **)halloc((size_t)P * sizeof(*dl));
        float *dmx = (float *)dalloc(N * 4), *dse = (float *)dalloc(N * 4);
        float *dtl = (float *)dalloc(N * 4), *losses = (float *)dalloc(N * 4);
        for (int p = 0; p < P; p++) { /* phase 0 on every part, reduced */
            uint16_t *part = (uint16_t *)halloc((size_t)N * rows * 2);
            int v0 = p * rows, pv = V - v0 < rows ? V - v0 : rows;
            for (int r = 0; r < N; r++)
                memcpy(part + (size_t)r * rows, lg + (size_t)r * Vp + v0, (size_t)rows * 2);
            dl[p] = (uint16_t *)to_dev(part, (size_t)N * rows * 2);
            classifier_vp_partial(dmx, dse, dtl, dl[p], dt, v0, N, pv, rows, 0, 0);
            float *m = get_f32(dmx, N), *t = get_f32(dtl, N);
            for (int r = 0; r < N; r++) {
                mx[r] = m[r] > mx[r] ? m[r] : mx[r];
                tl[r] += t[r];
            }
        }
        upload(dmx, mx, (size_t)N * 4);
        for (int p = 0; p < P; p++) {
            int v0 = p * rows, pv = V - v0 < rows ? V - v0 : rows;
            classifier_vp_partial(dmx, dse, dtl, dl[p], dt, v0, N, pv, rows, 1, 0);
            float *s = get_f32(dse, N);
            for (int r = 0; r < N; r++)
                se[r] += s[r];
        }
        upload(dse, se, (size_t)N * 4);
        upload(dtl, tl, (size_t)N * 4);
        double *lref = dvec(N), *gref = dvec((size_t)N * Vp);
        for (int r = 0; r < N; r++) {
            const uint16_t *x = lg + (size_t)r * Vp;
            double m = -INFINITY, z = 0;
            for (int c = 0; c < V; c++)
                m = bf2f(x[c]) > m ? bf2f(x[c]) : m;
            for (int c = 0; c < V; c++)
                z += exp(bf2f(x[c]) - m);
            double lse = m + log(z);
            lref[r] = tg[r] >= 0 ? lse - bf2f(x[tg[r]]) : 0.0;
            for (int c = 0; c < Vp; c++)
                gref[(size_t)r * Vp + c] =
                    (tg[r] >= 0 && c < V) ? (exp(bf2f(x[c]) - lse) - (c == tg[r])) * dloss : 0.0;
        }
        char sh[64];
        snprintf(sh, sizeof(sh), "N=%d V=%d Vp=%d parts=%d", N, V, Vp, P);
        float *g = (float *)halloc((size_t)N * Vp * 4), *lo = NULL;
        for (int p = 0; p < P; p++) {
            int v0 = p * rows, pv = V - v0 < rows ? V - v0 : rows;
            poison(losses, N * 4);
            classifier_vp_finish(losses, dl[p], dt, dmx, dse, dtl, v0, N, pv, rows, dloss, 1, 0);
            float *l = get_f32(losses, N), *gp = get_bf16(dl[p], (size_t)N * rows);
            if (p == 0)
                lo = l;
            else if (memcmp(l, lo, (size_t)N * 4) != 0)
                result(0, nm("classifier_vp losses equal on every part %s", sh), "");
            for (int r = 0; r < N; r++)
                memcpy(g + (size_t)r * Vp + v0, gp + (size_t)r * rows, (size_t)rows * 4);
        }
        check(nm("classifier_vp losses %s", sh), lref, lo, N, TOL_F32);
        check(nm("classifier_vp dlogits %s", sh), gref, g, (size_t)N * Vp, TOL_BF16);
        free_all();
    }
}

/* ---- AdamW --------------------------------------------------------------------------------------
 */

static void t_adamw(void)
{
    const int64_t n = 10000;
    struct adamw_tensor tab[4] = { { 0, 3000, 1.0f, 1.0f },
                                   { 3000, 1, 0.0f, 1.0f },
                                   { 3001, 3999, 1.0f, 0.5f },
                                   { 8000, 2000, 0.0f, 1.0f } }; /* 7000..7999 uncovered */
    uint16_t *p0 = rand_bf16(n, 1.0f), *g = rand_bf16(n, 0.1f);
    float *w0 = bf16_to_f32_host(p0, n), *m0 = rand_f32(n, 0.01f), *v0 = (float *)halloc(n * 4);
    for (int64_t i = 0; i < n; i++)
        v0[i] = 1e-4f * fabsf(rnd_normal()) + 1e-6f;
    struct adamw_tensor *dtab = (struct adamw_tensor *)to_dev(tab, sizeof(tab));
    uint16_t *dp = (uint16_t *)dalloc(n * 2), *dg = (uint16_t *)to_dev(g, n * 2);
    float *dw = (float *)dalloc(n * 4), *dm = (float *)dalloc(n * 4), *dv = (float *)dalloc(n * 4);
    float norm_sq = 4.0f, *dnorm = (float *)to_dev(&norm_sq, 4);
    struct adamw_hparams hp = { 1e-3f, 0.9f, 0.95f, 1e-8f, 0.1f, 3, 1.0f, 1.0f, NULL, 7, 0 };
    hp.grad_norm_sq = dnorm;
#define ADAM_RESET()                                                                               \
    do {                                                                                           \
        upload(dp, p0, n * 2);                                                                     \
        upload(dw, w0, n * 4);                                                                     \
        upload(dm, m0, n * 4);                                                                     \
        upload(dv, v0, n * 4);                                                                     \
    } while (0)
    ADAM_RESET();
    adamw_update(dp, dg, dw, dm, dv, n, 0, dtab, 4, &hp, 0);
    double *rw = dvec(n), *rm = dvec(n), *rv = dvec(n), *rp = dvec(n);
    const double clip = fmin(1.0, 1.0 / (2.0 + 1e-6));
    const double bc1 = 1 - pow(0.9, 3), bc2 = 1 - pow(0.95, 3);
    for (int64_t i = 0; i < n; i++) {
        int k = -1;
        for (int t = 0; t < 4; t++)
            if (i >= tab[t].offset && i < tab[t].offset + tab[t].size)
                k = t;
        if (k < 0) {
            rw[i] = w0[i], rm[i] = m0[i], rv[i] = v0[i], rp[i] = w0[i];
            continue;
        }
        double gg = bf2f(g[i]) * clip;
        rm[i] = 0.9 * m0[i] + 0.1 * gg;
        rv[i] = 0.95 * v0[i] + 0.05 * gg * gg;
        double upd = rm[i] / bc1 / (sqrt(rv[i] / bc2) + 1e-8) + 0.1 * tab[k].wd_mult * w0[i];
        rw[i] = w0[i] - 1e-3 * tab[k].lr_mult * upd;
        rp[i] = rbf((float)rw[i]);
    }
    float *gw = get_f32(dw, n);
    check_delta("adamw master weight change", rw, gw, w0, n, TOL_MEAN);
    check("adamw m", rm, get_f32(dm, n), n, TOL_F32);
    check("adamw v", rv, get_f32(dv, n), n, TOL_F32);
    check("adamw bf16 params (round to nearest)", rp, get_bf16(dp, n), n, TOL_BF16);
    void *full_p = host_copy(dp, n * 2), *full_w = host_copy(dw, n * 4);
    void *full_m = host_copy(dm, n * 4);

    /* a ZeRO-1 shard gives the same bits as the same slice of the full update */
    const int64_t first = 2500, len = 5000;
    ADAM_RESET();
    adamw_update(dp + first, dg + first, dw + first, dm + first, dv + first, len, first, dtab, 4,
                 &hp, 0);
    uint16_t *sp = (uint16_t *)host_copy(dp, n * 2);
    float *sw = (float *)host_copy(dw, n * 4), *sm = (float *)host_copy(dm, n * 4);
    check_bits("adamw shard params == slice of full", (uint16_t *)full_p + first, sp + first,
               len * 2);
    check_bits("adamw shard master == slice of full", (float *)full_w + first, sw + first, len * 4);
    check_bits("adamw shard m == slice of full", (float *)full_m + first, sm + first, len * 4);
    check_bits("adamw shard leaves the rest alone", p0, sp, first * 2);

    /* no master weights: the bf16 params are the weights */
    ADAM_RESET();
    adamw_update(dp, dg, NULL, dm, dv, n, 0, dtab, 4, &hp, 0);
    check("adamw without master (bf16 params)", rp, get_bf16(dp, n), n, TOL_BF16);

    /* stochastic rounding: one of the two neighbours, unbiased, reproducible */
    hp.stochastic_rounding = 1;
    hp.seed = 11;
    ADAM_RESET();
    adamw_update(dp, dg, dw, dm, dv, n, 0, dtab, 4, &hp, 0);
    uint16_t *sr = (uint16_t *)host_copy(dp, n * 2);
    float *mw = (float *)host_copy(dw, n * 4);
    int neighbours = 1;
    double bias = 0;
    for (int64_t i = 0; i < n; i++) {
        uint32_t u;
        memcpy(&u, &mw[i], 4);
        uint16_t lo = (uint16_t)(u >> 16), hi = (uint16_t)(lo + ((u & 0xffffu) ? 1 : 0));
        if (sr[i] != lo && sr[i] != hi)
            neighbours = 0;
        float ulp = bf2f((uint16_t)(lo + 1)) - bf2f(lo);
        bias += (bf2f(sr[i]) - mw[i]) / fabsf(ulp);
    }
    bias /= n;
    result(neighbours, "adamw stochastic rounding picks a neighbour", "");
    result(fabs(bias) < 0.03, "adamw stochastic rounding unbiased",
           nm("mean error %.4f ulp (|.| < 0.03)", bias));
    ADAM_RESET();
    adamw_update(dp, dg, dw, dm, dv, n, 0, dtab, 4, &hp, 0);
    check_bits("adamw stochastic rounding reproducible", sr, host_copy(dp, n * 2), n * 2);
    hp.seed = 12;
    ADAM_RESET();
    adamw_update(dp, dg, dw, dm, dv, n, 0, dtab, 4, &hp, 0);
    result(memcmp(sr, host_copy(dp, n * 2), n * 2) != 0, "adamw stochastic rounding seed matters",
           "");
#undef ADAM_RESET
}

/* ---- GEMM ---------------------------------------------------------------------------------------
 */

/* C[M,N] = alpha op(A) op(B) + beta C0, double. */
static void gemm_ref(double *C, const uint16_t *A, const uint16_t *B, const uint16_t *C0, int ta,
                     int tb, int M, int N, int K, int lda, int ldb, int ldc, double alpha,
                     double beta)
{
#pragma omp parallel for
    for (int i = 0; i < M; i++)
        for (int j = 0; j < N; j++) {
            double s = 0;
            for (int k = 0; k < K; k++) {
                double a = bf2f(ta ? A[(size_t)k * lda + i] : A[(size_t)i * lda + k]);
                double b = bf2f(tb ? B[(size_t)j * ldb + k] : B[(size_t)k * ldb + j]);
                s += a * b;
            }
            C[(size_t)i * ldc + j] =
                alpha * s + (beta != 0 ? beta * bf2f(C0[(size_t)i * ldc + j]) : 0);
        }
}

static void t_gemm(void)
{
    void *ws = NULL;
    CUDA_CHECK(cudaMalloc(&ws, GEMM_WORKSPACE_BYTES)); /* kept across free_all() */
    struct gemm *g = gemm_new(ws, GEMM_WORKSPACE_BYTES);
    if (!g) {
        result(0, "gemm_new", gemm_error());
        CUDA_CHECK(cudaFree(ws));
        return;
    }
    static const int shapes[][3] = { { 64, 48, 32 }, { 200, 136, 72 }, { 37, 19, 23 } };
    for (int si = 0; si < 3; si++)
        for (int t = 0; t < 4; t++)
            for (int acc = 0; acc < 2; acc++) {
                const int M = shapes[si][0], N = shapes[si][1], K = shapes[si][2];
                const int ta = t & 1, tb = t >> 1;
                const int lda = ta ? M : K, ldb = tb ? K : N, ldc = N;
                uint16_t *A = rand_bf16((size_t)M * K, 1.0f), *Bm = rand_bf16((size_t)K * N, 1.0f);
                uint16_t *C0 = rand_bf16((size_t)M * N, 1.0f);
                uint16_t *dA = (uint16_t *)to_dev(A, (size_t)M * K * 2);
                uint16_t *dB = (uint16_t *)to_dev(Bm, (size_t)K * N * 2);
                uint16_t *dC = (uint16_t *)to_dev(C0, (size_t)M * N * 2);
                if (!acc)
                    poison(dC, (size_t)M * N * 2);
                const float alpha = acc ? 0.5f : 1.0f, beta = acc ? 1.0f : 0.0f;
                const char *what = nm("gemm M=%d N=%d K=%d ta=%d tb=%d%s", M, N, K, ta, tb,
                                      acc ? " alpha=.5 beta=1" : "");
                char w[96];
                snprintf(w, sizeof(w), "%s", what);
                if (gemm_bf16(g, ta, tb, M, N, K, alpha, dA, lda, dB, ldb, beta, dC, ldc,
                              GEMM_EPI_NONE, NULL, NULL, 0, 0)) {
                    result(0, w, gemm_error());
                    continue;
                }
                double *ref = dvec((size_t)M * N);
                gemm_ref(ref, A, Bm, C0, ta, tb, M, N, K, lda, ldb, ldc, alpha, beta);
                check(w, ref, get_bf16(dC, (size_t)M * N), (size_t)M * N, TOL_GEMM);
            }
    free_all();

    static const int lin[][3] = { { 128, 64, 96 }, { 256, 768, 3072 } };
    for (int li = 0; li < 2; li++) {
        const int N = lin[li][0], IC = lin[li][1], OC = lin[li][2];
        char sh[64];
        snprintf(sh, sizeof(sh), "N=%d IC=%d OC=%d", N, IC, OC);
        const size_t nx = (size_t)N * IC, ny = (size_t)N * OC, nw = (size_t)OC * IC;
        uint16_t *x = rand_bf16(nx, 1.0f), *W = rand_bf16(nw, 1.0f / sqrtf((float)IC));
        uint16_t *b = rand_bf16(OC, 0.1f), *dy = rand_bf16(ny, 1.0f), *pre_in = rand_bf16(nx, 1.5f);
        uint16_t *dx0 = rand_bf16(nx, 1.0f), *dW0 = rand_bf16(nw, 1.0f);
        uint16_t *dxx = (uint16_t *)to_dev(x, nx * 2), *dWW = (uint16_t *)to_dev(W, nw * 2);
        uint16_t *dbb = (uint16_t *)to_dev(b, OC * 2), *ddy = (uint16_t *)to_dev(dy, ny * 2);
        uint16_t *dpre_in = (uint16_t *)to_dev(pre_in, nx * 2);
        uint16_t *y = (uint16_t *)dalloc(ny * 2), *pre = (uint16_t *)dalloc(ny * 2);
        double *ref = dvec(ny), *ref2 = dvec(ny);

        /* forward: plain, bias, bias + GELU with the pre-activation */
        for (int mode = 0; mode < 3; mode++) {
            poison(y, ny * 2);
            poison(pre, ny * 2);
            int rc = linear_fwd(g, y, mode == 2 ? pre : NULL, dxx, dWW, mode ? dbb : NULL, N, IC,
                                OC, mode == 2, 0);
            const char *what = nm("linear_fwd %s %s",
                                  mode == 0   ? "plain"
                                  : mode == 1 ? "bias"
                                              : "bias+gelu",
                                  sh);
            char w[96];
            snprintf(w, sizeof(w), "%s", what);
            if (rc) {
                result(0, w, gemm_error());
                continue;
            }
            gemm_ref(ref, x, W, NULL, 0, 1, N, OC, IC, IC, IC, OC, 1.0, 0.0);
            for (size_t i = 0; i < ny; i++) {
                if (mode)
                    ref[i] += bf2f(b[i % OC]);
                ref2[i] = mode == 2 ? gelu_d(ref[i]) : ref[i];
            }
            check(w, ref2, get_bf16(y, ny), ny, TOL_GEMM);
            if (mode == 2)
                check(nm("linear_fwd gelu pre-activation %s", sh), ref, get_bf16(pre, ny), ny,
                      TOL_GEMM);
        }

        /* dx = dy W, overwrite and accumulate */
        uint16_t *dx = (uint16_t *)dalloc(nx * 2);
        double *rx = dvec(nx);
        for (int acc = 0; acc < 2; acc++) {
            if (acc)
                upload(dx, dx0, nx * 2);
            else
                poison(dx, nx * 2);
            int rc = linear_bwd_data(g, dx, NULL, ddy, dWW, NULL, N, IC, OC, acc, 0);
            const char *what = nm("linear_bwd_data%s %s", acc ? " accumulate" : "", sh);
            char w[96];
            snprintf(w, sizeof(w), "%s", what);
            if (rc) {
                result(0, w, gemm_error());
                continue;
            }
            gemm_ref(rx, dy, W, dx0, 0, 0, N, IC, OC, OC, IC, IC, 1.0, acc ? 1.0 : 0.0);
            check(w, rx, get_bf16(dx, nx), nx, TOL_GEMM);
        }
        /* dx = (dy W) * gelu'(pre), and its column sums (the bias gradient of the GELU layer) */
        uint16_t *dbp = (uint16_t *)dalloc(IC * 2);
        poison(dx, nx * 2);
        poison(dbp, IC * 2);
        if (linear_bwd_data(g, dx, dbp, ddy, dWW, dpre_in, N, IC, OC, 0, 0)) {
            result(0, nm("linear_bwd_data dgelu+bgrad %s", sh), gemm_error());
        } else {
            gemm_ref(rx, dy, W, NULL, 0, 0, N, IC, OC, OC, IC, IC, 1.0, 0.0);
            double *rb = dvec(IC);
            for (size_t i = 0; i < nx; i++) {
                rx[i] *= gelu_grad_d(bf2f(pre_in[i]));
                rb[i % IC] += rx[i];
            }
            check(nm("linear_bwd_data dgelu %s", sh), rx, get_bf16(dx, nx), nx, TOL_GEMM);
            check(nm("linear_bwd_data dgelu bgrad %s", sh), rb, get_bf16(dbp, IC), IC, TOL_GEMM);
        }
        /* dW += dy^T x, db = column sums of dy */
        uint16_t *dW = (uint16_t *)to_dev(dW0, nw * 2), *db = (uint16_t *)dalloc(OC * 2);
        poison(db, OC * 2);
        if (linear_bwd_weight(g, dW, db, ddy, dxx, N, IC, OC, 1, 0)) {
            result(0, nm("linear_bwd_weight %s", sh), gemm_error());
        } else {
            double *rw = dvec(nw), *rb = dvec(OC);
            gemm_ref(rw, dy, x, dW0, 1, 0, OC, IC, N, OC, IC, IC, 1.0, 1.0);
            for (size_t i = 0; i < ny; i++)
                rb[i % OC] += bf2f(dy[i]);
            check(nm("linear_bwd_weight accumulate %s", sh), rw, get_bf16(dW, nw), nw, TOL_GEMM);
            check(nm("linear_bwd_weight bgrad %s", sh), rb, get_bf16(db, OC), OC, TOL_GEMM);
        }
        int before = gemm_plan_count(g);
        linear_bwd_weight(g, dW, db, ddy, dxx, N, IC, OC, 1, 0);
        char cnt[32];
        snprintf(cnt, sizeof(cnt), "%d plans", gemm_plan_count(g));
        result(gemm_plan_count(g) == before, nm("gemm plan cache reused %s", sh), cnt);
        free_all();
    }
    gemm_free(g);
    CUDA_CHECK(cudaFree(ws));
}

/* ---- attention ----------------------------------------------------------------------------------
 */

/* Causal attention forward and backward in double (exact softmax). */
/* ds[B*T] (NULL: all 0): query t of sample b attends to keys ds[b*T+t]..t (documents) */
static void attn_ref(const float *qkv, const float *dout, int B, int T, int Hq, int Hkv, int D,
                     double scale, double *out, double *lse, double *dqkv, const int *ds)
{
    const int S3 = (Hq + 2 * Hkv) * D, G = Hq / Hkv;
    memset(dqkv, 0, sizeof(double) * (size_t)B * T * S3);
#pragma omp parallel for collapse(2)
    for (int b = 0; b < B; b++)
        for (int hk = 0; hk < Hkv; hk++) {
            double *s = (double *)malloc(sizeof(double) * T * 2), *dp = s + T;
            for (int h = hk * G; h < hk * G + G; h++)
                for (int t = 0; t < T; t++) {
                    const float *q = qkv + ((size_t)b * T + t) * S3 + (size_t)h * D;
                    const float *go = dout + ((size_t)b * T + t) * Hq * D + (size_t)h * D;
                    double m = -INFINITY, z = 0;
                    const int j0 = ds ? ds[(size_t)b * T + t] : 0;
                    for (int j = j0; j <= t; j++) {
                        const float *k = qkv + ((size_t)b * T + j) * S3 + (size_t)(Hq + hk) * D;
                        double acc = 0;
                        for (int d = 0; d < D; d++)
                            acc += (double)q[d] * k[d];
                        s[j] = acc * scale;
                        if (s[j] > m)
                            m = s[j];
                    }
                    for (int j = j0; j <= t; j++)
                        z += exp(s[j] - m);
                    const double l = m + log(z);
                    lse[((size_t)b * Hq + h) * T + t] = l;
                    double *o = out + ((size_t)b * T + t) * Hq * D + (size_t)h * D;
                    for (int d = 0; d < D; d++)
                        o[d] = 0;
                    double delta = 0;
                    for (int j = j0; j <= t; j++) {
                        const float *v =
                            qkv + ((size_t)b * T + j) * S3 + (size_t)(Hq + Hkv + hk) * D;
                        const double p = exp(s[j] - l);
                        double acc = 0;
                        for (int d = 0; d < D; d++) {
                            o[d] += p * v[d];
                            acc += (double)go[d] * v[d];
                        }
                        dp[j] = acc;
                        delta += p * acc;
                    }
                    double *dq = dqkv + ((size_t)b * T + t) * S3 + (size_t)h * D;
                    for (int j = j0; j <= t; j++) {
                        const double p = exp(s[j] - l), dsc = p * (dp[j] - delta) * scale;
                        const float *k = qkv + ((size_t)b * T + j) * S3 + (size_t)(Hq + hk) * D;
                        double *dk = dqkv + ((size_t)b * T + j) * S3 + (size_t)(Hq + hk) * D;
                        double *dv = dqkv + ((size_t)b * T + j) * S3 + (size_t)(Hq + Hkv + hk) * D;
                        for (int d = 0; d < D; d++) {
                            dq[d] += dsc * k[d];
                            dk[d] += dsc * q[d];
                            dv[d] += p * go[d];
                        }
                    }
                }
            free(s);
        }
}

/* Compare the q, k and v parts of dqkv separately. */
static void check_dqkv(const char *tag, const double *ref, const float *got, int B, int T, int Hq,
                       int Hkv, int D)
{
    const int S3 = (Hq + 2 * Hkv) * D;
    const int lo[3] = { 0, Hq * D, (Hq + Hkv) * D }, hi[3] = { Hq * D, (Hq + Hkv) * D, S3 };
    const char *names[3] = { "dq", "dk", "dv" };
    char t[160];
    snprintf(t, sizeof(t), "%s", tag); /* tag may be nm()'s buffer */
    for (int p = 0; p < 3; p++) {
        size_t n = (size_t)B * T * (hi[p] - lo[p]), k = 0;
        double *r = dvec(n);
        float *g = (float *)halloc(n * 4);
        for (size_t row = 0; row < (size_t)B * T; row++)
            for (int c = lo[p]; c < hi[p]; c++, k++) {
                r[k] = ref[row * S3 + c];
                g[k] = got[row * S3 + c];
            }
        check(nm("%s %s", t, names[p]), r, g, n, TOL_AGRAD);
    }
}

/* The variable-length form (packed documents): documents of 1 to 150 tokens, boundaries
 * inside tiles and on them, against the reference with the same starts; the dispatcher with
 * attention_set_docs runs it too. */
static void t_attention_docs(void)
{
    static const int cases[][5] = { { 2, 200, 4, 2, 64 }, { 1, 130, 2, 1, 32 } };
    for (int ci = 0; ci < 2; ci++) {
        const int B = cases[ci][0], T = cases[ci][1], Hq = cases[ci][2], Hkv = cases[ci][3];
        const int D = cases[ci][4], S3 = (Hq + 2 * Hkv) * D;
        const size_t nq = (size_t)B * T * S3, no = (size_t)B * T * Hq * D, nl = (size_t)B * Hq * T;
        const float scale = 1.0f / sqrtf((float)D);
        char sh[80];
        snprintf(sh, sizeof(sh), "docs B=%d T=%d Hq=%d Hkv=%d D=%d", B, T, Hq, Hkv, D);
        /* sample 0: 1, 63, 64 (a tile's last row, then a whole tile), 150 (across tiles),
         * then the rest; sample 1: 5-token documents */
        static const int lens0[] = { 1, 63, 64, 150 };
        int *ds = (int *)malloc(sizeof(int) * (size_t)B * T);
        for (int b = 0; b < B; b++) {
            int first = 0, k = 0, left = b == 0 ? lens0[0] : 5;
            for (int t = 0; t < T; t++) {
                ds[(size_t)b * T + t] = first;
                if (--left == 0) {
                    first = t + 1;
                    k++;
                    left = b == 0 && k < 4 ? lens0[k] : b == 0 ? T : 5;
                }
            }
        }
        uint16_t *qkv = rand_bf16(nq, 1.0f), *dout = rand_bf16(no, 1.0f);
        double *ro = dvec(no), *rl = dvec(nl), *rd = dvec(nq);
        attn_ref(bf16_to_f32_host(qkv, nq), bf16_to_f32_host(dout, no), B, T, Hq, Hkv, D, scale, ro,
                 rl, rd, ds);
        uint16_t *dq = (uint16_t *)to_dev(qkv, nq * 2), *ddo = (uint16_t *)to_dev(dout, no * 2);
        int *dds = (int *)to_dev(ds, sizeof(int) * (size_t)B * T);
        uint16_t *out = (uint16_t *)dalloc(no * 2), *dqkv = (uint16_t *)dalloc(nq * 2);
        float *lse = (float *)dalloc(nl * 4);
        void *ws = dalloc(attn_own_bwd_workspace_size(B, T, Hq));
        poison(out, no * 2);
        poison(lse, nl * 4);
        poison(dqkv, nq * 2);
        if (attn_own_fwd_docs(out, lse, dq, dds, B, T, Hq, Hkv, D, scale, 0) ||
            attn_own_bwd_docs(dqkv, ws, ddo, dq, out, lse, dds, B, T, Hq, Hkv, D, scale, 0)) {
            result(0, nm("attn own %s", sh), "unsupported");
        } else {
            check(nm("attn own fwd out %s", sh), ro, get_bf16(out, no), no, TOL_ATTN);
            check(nm("attn own fwd lse %s", sh), rl, get_f32(lse, nl), nl, TOL_LSE);
            check_dqkv(nm("attn own bwd %s", sh), rd, get_bf16(dqkv, nq), B, T, Hq, Hkv, D);
        }
        struct attention *a = attention_new(ATTN_OWN);
        size_t wsb = 0;
        if (!a || attention_prepare(a, B, T, Hq, Hkv, D, &wsb)) {
            result(0, nm("attention(own) %s", sh), "cannot prepare");
        } else {
            void *ws2 = dalloc(wsb);
            attention_set_docs(a, dds);
            poison(out, no * 2);
            poison(dqkv, nq * 2);
            int rc = attention_fwd(a, out, lse, dq, B, T, Hq, Hkv, D, scale, ws2, wsb, 0);
            rc |= attention_bwd(a, dqkv, ddo, dq, out, lse, B, T, Hq, Hkv, D, scale, ws2, wsb, 0);
            if (rc) {
                result(0, nm("attention(own) %s runs", sh), "failed");
            } else {
                check(nm("attention(own) fwd %s", sh), ro, get_bf16(out, no), no, TOL_ATTN);
                check_dqkv(nm("attention(own) bwd %s", sh), rd, get_bf16(dqkv, nq), B, T, Hq, Hkv,
                           D);
            }
        }
        attention_free(a);
        free(ds);
        free_all();
    }
}

static void t_attention(void)
{
    static const int cases[][5] = { { 2, 64, 4, 4, 64 },   { 1, 77, 6, 2, 32 },
                                    { 2, 128, 8, 2, 128 }, { 1, 200, 4, 1, 64 },
                                    { 2, 50, 2, 1, 16 },   { 1, 256, 4, 4, 128 } };
    struct attn_cudnn *cd = attn_cudnn_new(1);
    const int have_cudnn = cd != NULL;
    if (!cd)
        printf("  cudnn attention unavailable: %s\n", attn_cudnn_error());
    else
        printf("  cudnn %ld loaded\n", attn_cudnn_version());
    for (int ci = 0; ci < 6; ci++) {
        const int B = cases[ci][0], T = cases[ci][1], Hq = cases[ci][2], Hkv = cases[ci][3];
        const int D = cases[ci][4], S3 = (Hq + 2 * Hkv) * D;
        const size_t nq = (size_t)B * T * S3, no = (size_t)B * T * Hq * D, nl = (size_t)B * Hq * T;
        const float scale = 1.0f / sqrtf((float)D);
        char sh[80];
        snprintf(sh, sizeof(sh), "B=%d T=%d Hq=%d Hkv=%d D=%d", B, T, Hq, Hkv, D);
        uint16_t *qkv = rand_bf16(nq, 1.0f), *dout = rand_bf16(no, 1.0f);
        double *ro = dvec(no), *rl = dvec(nl), *rd = dvec(nq);
        attn_ref(bf16_to_f32_host(qkv, nq), bf16_to_f32_host(dout, no), B, T, Hq, Hkv, D, scale, ro,
                 rl, rd, NULL);
        uint16_t *dq = (uint16_t *)to_dev(qkv, nq * 2), *ddo = (uint16_t *)to_dev(dout, no * 2);
        uint16_t *out = (uint16_t *)dalloc(no * 2), *dqkv = (uint16_t *)dalloc(nq * 2);
        float *lse = (float *)dalloc(nl * 4);

        /* ours */
        poison(out, no * 2);
        poison(lse, nl * 4);
        if (attn_own_fwd(out, lse, dq, B, T, Hq, Hkv, D, scale, 0)) {
            result(0, nm("attn own fwd %s", sh), "unsupported");
        } else {
            check(nm("attn own fwd out %s", sh), ro, get_bf16(out, no), no, TOL_ATTN);
            check(nm("attn own fwd lse %s", sh), rl, get_f32(lse, nl), nl, TOL_LSE);
            void *ws = dalloc(attn_own_bwd_workspace_size(B, T, Hq));
            poison(dqkv, nq * 2);
            attn_own_bwd(dqkv, ws, ddo, dq, out, lse, B, T, Hq, Hkv, D, scale, 0);
            float *g1 = get_bf16(dqkv, nq);
            check_dqkv(nm("attn own bwd %s", sh), rd, g1, B, T, Hq, Hkv, D);
            void *bits = host_copy(dqkv, nq * 2);
            poison(dqkv, nq * 2);
            attn_own_bwd(dqkv, ws, ddo, dq, out, lse, B, T, Hq, Hkv, D, scale, 0);
            check_bits(nm("attn own bwd deterministic %s", sh), bits, host_copy(dqkv, nq * 2),
                       nq * 2);
        }

        /* cuDNN */
        size_t fws = 0, bws = 0;
        if (!cd) {
            skip(nm("attn cudnn %s", sh), "cuDNN not available");
        } else if (attn_cudnn_prepare(cd, B, T, Hq, Hkv, D, &fws, &bws)) {
            /* the training shapes must work; odd ones may be refused (we fall back) */
            if (T % 128 == 0 && (D == 64 || D == 128))
                result(0, nm("attn cudnn prepare %s", sh), attn_cudnn_error());
            else
                skip(nm("attn cudnn %s", sh), attn_cudnn_error());
        } else {
            size_t wsb = fws > bws ? fws : bws;
            void *ws = dalloc(wsb);
            uint16_t *out2 = (uint16_t *)dalloc(no * 2);
            float *lse2 = (float *)dalloc(nl * 4);
            poison(out2, no * 2);
            poison(lse2, nl * 4);
            if (attn_cudnn_fwd(cd, out2, lse2, dq, B, T, Hq, Hkv, D, scale, ws, wsb, 0)) {
                result(0, nm("attn cudnn fwd %s", sh), attn_cudnn_error());
            } else {
                check(nm("attn cudnn fwd out %s", sh), ro, get_bf16(out2, no), no, TOL_ATTN);
                check(nm("attn cudnn fwd lse %s", sh), rl, get_f32(lse2, nl), nl, TOL_LSE);
                poison(dqkv, nq * 2);
                if (attn_cudnn_bwd(cd, dqkv, ddo, dq, out2, lse2, B, T, Hq, Hkv, D, scale, ws, wsb,
                                   0)) {
                    result(0, nm("attn cudnn bwd %s", sh), attn_cudnn_error());
                } else {
                    check_dqkv(nm("attn cudnn bwd %s", sh), rd, get_bf16(dqkv, nq), B, T, Hq, Hkv,
                               D);
                    void *bits = host_copy(dqkv, nq * 2);
                    attn_cudnn_bwd(cd, dqkv, ddo, dq, out2, lse2, B, T, Hq, Hkv, D, scale, ws, wsb,
                                   0);
                    int same = memcmp(bits, host_copy(dqkv, nq * 2), nq * 2) == 0;
                    int det = attn_cudnn_is_deterministic(cd, B, T, Hq, Hkv, D);
                    if (det)
                        check_bits(nm("attn cudnn bwd deterministic %s", sh), bits,
                                   host_copy(dqkv, nq * 2), nq * 2);
                    else
                        printf("  info cudnn bwd %s: default engine (atomic dQ), reruns %s\n", sh,
                               same ? "matched" : "differ");
                    /* cuDNN's backward from our forward's out and lse */
                    poison(dqkv, nq * 2);
                    attn_cudnn_bwd(cd, dqkv, ddo, dq, out, lse, B, T, Hq, Hkv, D, scale, ws, wsb,
                                   0);
                    check_dqkv(nm("attn cudnn bwd from own fwd %s", sh), rd, get_bf16(dqkv, nq), B,
                               T, Hq, Hkv, D);
                }
            }
        }
        free_all();
    }
    attn_cudnn_free(cd);

    /* the run-time choice */
    const int B = 2, T = 128, Hq = 4, Hkv = 2, D = 64, S3 = (Hq + 2 * Hkv) * D;
    const size_t nq = (size_t)B * T * S3, no = (size_t)B * T * Hq * D;
    for (int be = 0; be < 3; be++) {
        struct attention *a = attention_new((enum attn_backend)be);
        const char *bname = be == 0 ? "auto" : be == 1 ? "own" : "cudnn";
        if (!a) {
            if (have_cudnn)
                result(0, nm("attention_new(%s)", bname), attn_cudnn_error());
            else
                skip(nm("attention_new(%s)", bname), attn_cudnn_error());
            continue;
        }
        size_t wsb = 0;
        if (attention_prepare(a, B, T, Hq, Hkv, D, &wsb)) {
            if (have_cudnn || be != 2)
                result(0, nm("attention_prepare(%s)", bname), attn_cudnn_error());
            else
                skip(nm("attention_prepare(%s)", bname), attn_cudnn_error());
            attention_free(a);
            continue;
        }
        if (be == 0 && have_cudnn)
            result(attention_backend(a, B, T, Hq, Hkv, D) == ATTN_CUDNN,
                   "attention(auto) picks cudnn when it loads", "");
        uint16_t *qkv = rand_bf16(nq, 1.0f), *dout = rand_bf16(no, 1.0f);
        double *ro = dvec(no), *rl = dvec((size_t)B * Hq * T), *rd = dvec(nq);
        attn_ref(bf16_to_f32_host(qkv, nq), bf16_to_f32_host(dout, no), B, T, Hq, Hkv, D,
                 1.0 / sqrt(D), ro, rl, rd, NULL);
        uint16_t *dq = (uint16_t *)to_dev(qkv, nq * 2), *ddo = (uint16_t *)to_dev(dout, no * 2);
        uint16_t *out = (uint16_t *)dalloc(no * 2), *dqkv = (uint16_t *)dalloc(nq * 2);
        float *lse = (float *)dalloc((size_t)B * Hq * T * 4);
        void *ws = dalloc(wsb);
        poison(out, no * 2);
        poison(dqkv, nq * 2);
        int rc = attention_fwd(a, out, lse, dq, B, T, Hq, Hkv, D, 1.0f / sqrtf(D), ws, wsb, 0);
        rc |= attention_bwd(a, dqkv, ddo, dq, out, lse, B, T, Hq, Hkv, D, 1.0f / sqrtf(D), ws, wsb,
                            0);
        enum attn_backend used = attention_backend(a, B, T, Hq, Hkv, D);
        const char *uname = used == ATTN_CUDNN ? "cudnn" : "own";
        if (rc) {
            result(0, nm("attention(%s) runs", bname), attn_cudnn_error());
        } else {
            check(nm("attention(%s -> %s) fwd", bname, uname), ro, get_bf16(out, no), no, TOL_ATTN);
            check_dqkv(nm("attention(%s -> %s) bwd", bname, uname), rd, get_bf16(dqkv, nq), B, T,
                       Hq, Hkv, D);
        }
        attention_free(a);
        free_all();
    }
}

/* ---- erf GELU (the exact form of NeMo/Megatron GPT-3 configs) ------------------------------ */

static void t_gelu_erf(void)
{
    const size_t sizes[] = { 1, 7, 1000, 4099 };
    for (int si = 0; si < 4; si++)
        for (int off = 0; off < 2; off++) {
            size_t n = sizes[si];
            uint16_t *x = rand_bf16(n + 1, 2.0f), *g = rand_bf16(n + 1, 1.0f);
            uint16_t *dx = (uint16_t *)to_dev(x, (n + 1) * 2),
                     *dg = (uint16_t *)to_dev(g, (n + 1) * 2);
            uint16_t *out = (uint16_t *)dalloc((n + 1) * 2);
            double *ref = dvec(n);
            poison(out, (n + 1) * 2);
            gelu_erf_fwd(out + off, dx + off, n, 0);
            for (size_t i = 0; i < n; i++) {
                double v = bf2f(x[off + i]);
                ref[i] = 0.5 * v * (1 + erf(v / sqrt(2.0)));
            }
            check(nm("gelu_erf_fwd n=%zu off=%d", n, off), ref, get_bf16(out + off, n), n,
                  TOL_BF16);
            poison(out, (n + 1) * 2);
            gelu_erf_bwd(out + off, dg + off, dx + off, n, 0);
            for (size_t i = 0; i < n; i++) {
                double v = bf2f(x[off + i]);
                double d = 0.5 * (1 + erf(v / sqrt(2.0))) + v * exp(-0.5 * v * v) / sqrt(2 * M_PI);
                ref[i] = bf2f(g[off + i]) * d;
            }
            check(nm("gelu_erf_bwd n=%zu off=%d", n, off), ref, get_bf16(out + off, n), n,
                  TOL_BF16);
            gelu_erf_bwd(dg + off, dg + off, dx + off, n, 0); /* dx may equal dout */
            check(nm("gelu_erf_bwd in place n=%zu off=%d", n, off), ref, get_bf16(dg + off, n), n,
                  TOL_BF16);
            free_all();
        }
}

/* ---- fp32 gradient accumulation: grad_accumulate_f32, global_norm_sq_f32, adamw_update_f32 --- */

static void t_grad_f32(void)
{
    const size_t sizes[] = { 1, 1000, (1u << 20) + 3 };
    for (int si = 0; si < 3; si++) {
        size_t n = sizes[si];
        /* 64 micro-batches of gradients summed into fp32 must equal the double sum of the bf16
         * values to fp32 rounding (a bf16 sum would lose about 1% here) */
        const int micro = 64;
        uint16_t *h = rand_bf16(n * micro, 0.01f);
        uint16_t *d = (uint16_t *)to_dev(h, n * micro * 2);
        float *acc = (float *)dalloc(n * 4);
        poison(acc, n * 4);
        for (int m = 0; m < micro; m++)
            grad_accumulate_f32(acc, d + (size_t)m * n, n, m == 0, 0);
        double *ref = dvec(n);
        for (size_t i = 0; i < n; i++)
            for (int m = 0; m < micro; m++)
                ref[i] += bf2f(h[(size_t)m * n + i]);
        float *got = get_f32(acc, n);
        check(nm("grad_accumulate_f32 %d micro-batches n=%zu", micro, n), ref, got, n, TOL_F32);

        void *scratch = dalloc(global_norm_scratch_size());
        float *out = (float *)dalloc(4);
        poison(out, 4);
        global_norm_sq_f32(out, scratch, acc, n, 0, 0);
        double s = 0;
        for (size_t i = 0; i < n; i++)
            s += (double)got[i] * got[i];
        float *a = get_f32(out, 1);
        check(nm("global_norm_sq_f32 n=%zu", n), &s, a, 1, TOL_F32);
        global_norm_sq_f32(out, scratch, acc, n, 1, 0);
        double s2 = 2 * s;
        check(nm("global_norm_sq_f32 accumulate n=%zu", n), &s2, get_f32(out, 1), 1, TOL_F32);
        global_norm_sq_f32(out, scratch, acc, n, 0, 0);
        check_bits(nm("global_norm_sq_f32 deterministic n=%zu", n), a, get_f32(out, 1), 4);
        free_all();
    }
    /* AdamW over fp32 gradients = AdamW over the same values in bf16, bit for bit */
    const int64_t n = 5000;
    struct adamw_tensor tab[2] = { { 0, 3000, 1.0f, 1.0f }, { 3000, 2000, 0.0f, 1.0f } };
    uint16_t *p0 = rand_bf16(n, 1.0f), *g = rand_bf16(n, 0.1f);
    float *w0 = bf16_to_f32_host(p0, n), *g32 = bf16_to_f32_host(g, n);
    float *m0 = rand_f32(n, 0.01f), *v0 = (float *)halloc(n * 4);
    for (int64_t i = 0; i < n; i++)
        v0[i] = 1e-4f * fabsf(rnd_normal()) + 1e-6f;
    struct adamw_tensor *dtab = (struct adamw_tensor *)to_dev(tab, sizeof(tab));
    float norm_sq = 4.0f, *dnorm = (float *)to_dev(&norm_sq, 4);
    struct adamw_hparams hp = { 1e-3f, 0.9f, 0.95f, 1e-8f, 0.1f, 3, 1.0f, 1.0f, NULL, 7, 0 };
    hp.grad_norm_sq = dnorm;
    void *res[2][4];
    for (int k = 0; k < 2; k++) {
        uint16_t *dp = (uint16_t *)to_dev(p0, n * 2);
        float *dw = (float *)to_dev(w0, n * 4), *dm = (float *)to_dev(m0, n * 4),
              *dv = (float *)to_dev(v0, n * 4);
        if (k == 0)
            adamw_update(dp, (uint16_t *)to_dev(g, n * 2), dw, dm, dv, n, 0, dtab, 2, &hp, 0);
        else
            adamw_update_f32(dp, (float *)to_dev(g32, n * 4), dw, dm, dv, n, 0, dtab, 2, &hp, 0);
        res[k][0] = host_copy(dp, n * 2);
        res[k][1] = host_copy(dw, n * 4);
        res[k][2] = host_copy(dm, n * 4);
        res[k][3] = host_copy(dv, n * 4);
    }
    static const char *const what[4] = { "params", "master", "m", "v" };
    for (int i = 0; i < 4; i++)
        check_bits(nm("adamw_update_f32 = adamw_update on the same values: %s", what[i]), res[0][i],
                   res[1][i], (size_t)n * (i ? 4 : 2));
    free_all();
}

/* ---- main -------------------------------------------------------------------------------------
 */

static const struct {
    const char *name;
    void (*fn)(void);
} tests[] = {
    { "util", t_util },
    { "global_norm", t_global_norm },
    { "embedding", t_embedding },
    { "norms", t_norms },
    { "bias", t_bias },
    { "activations", t_activations },
    { "rope", t_rope },
    { "classifier", t_classifier },
    { "adamw", t_adamw },
    { "gemm", t_gemm },
    { "attention", t_attention },
    { "attention_docs", t_attention_docs },
    { "gelu_erf", t_gelu_erf },
    { "grad_f32", t_grad_f32 },
    { "classifier_vp", t_classifier_vp },
    { "embedding_vp", t_embedding_vp },
};

/* Run one group in a fresh process (and CUDA context), so that a crash or a sticky CUDA error
 * in one group (an illegal address, say) cannot hide the results of the others.
 * Returns 0 (passed), 1 (failures) or 2 (crashed). */
static int run_group_process(const char *group)
{
    char *args[] = { (char *)"test_kernels", (char *)"--group", (char *)group, NULL };
    pid_t pid;
    fflush(stdout);
    fflush(stderr);
    if (posix_spawn(&pid, "/proc/self/exe", NULL, NULL, args, environ) != 0)
        return 2;
    int st = 0;
    if (waitpid(pid, &st, 0) < 0)
        return 2;
    if (WIFEXITED(st) && WEXITSTATUS(st) <= 1)
        return WEXITSTATUS(st);
    if (WIFSIGNALED(st))
        printf("  CRASH group %s: signal %d\n", group, WTERMSIG(st));
    return 2;
}

int main(int argc, char **argv)
{
    const size_t ntests = sizeof(tests) / sizeof(tests[0]);
    if (argc == 3 && !strcmp(argv[1], "--group")) { /* child: one group, in process */
        for (size_t i = 0; i < ntests; i++)
            if (!strcmp(tests[i].name, argv[2])) {
                printf("== %s\n", tests[i].name);
                tests[i].fn();
                free_all();
                printf("   %s: %d passed, %d failed, %d skipped\n", tests[i].name, g_pass, g_fail,
                       g_skip);
                return g_fail ? 1 : 0;
            }
        fprintf(stderr, "test_kernels: no group '%s'\n", argv[2]);
        return 2;
    }
    int ndev = 0;
    cudaError_t e = cudaGetDeviceCount(&ndev);
    if (e != cudaSuccess || ndev == 0) {
        /* SKIP only where there is no GPU: with a device node, CUDA not seeing it is a failure */
        struct stat sb;
        int node = stat("/dev/nvidia0", &sb) == 0 || stat("/proc/driver/nvidia/gpus", &sb) == 0;
        printf("test_kernels: %s (%s)\n",
               node ? "FAIL: a GPU is present but CUDA cannot use it" : "SKIP: no CUDA device",
               e != cudaSuccess ? cudaGetErrorString(e) : "none found");
        return node ? 1 : 0;
    }
    struct cudaDeviceProp prop;
    CUDA_CHECK(cudaGetDeviceProperties(&prop, 0));
    printf("test_kernels: %s (sm_%d%d, %d SMs, %.0f GiB)\n", prop.name, prop.major, prop.minor,
           prop.multiProcessorCount, prop.totalGlobalMem / 1073741824.0);
    if (argc > 1) { /* groups whose name contains the argument, in this process */
        for (size_t i = 0; i < ntests; i++) {
            if (!strstr(tests[i].name, argv[1]))
                continue;
            printf("== %s\n", tests[i].name);
            fflush(stdout);
            tests[i].fn();
            free_all();
            fflush(stdout);
        }
        printf("test_kernels: %d passed, %d failed, %d skipped\n", g_pass, g_fail, g_skip);
        return g_fail ? 1 : 0;
    }
    int failed = 0, crashed = 0;
    char bad[512] = "";
    for (size_t i = 0; i < ntests; i++) {
        int rc = run_group_process(tests[i].name);
        if (rc) {
            failed += rc == 1;
            crashed += rc == 2;
            size_t l = strlen(bad);
            snprintf(bad + l, sizeof(bad) - l, " %s%s", tests[i].name, rc == 2 ? "(crashed)" : "");
        }
    }
    printf("test_kernels: %zu groups, %zu ok, %d with failures, %d crashed%s%s\n", ntests,
           ntests - failed - crashed, failed, crashed, bad[0] ? ":" : "", bad);
    return failed || crashed ? 1 : 0;
}
