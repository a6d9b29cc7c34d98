/* The CUDA emulation's warp exchanges against their definitions, for the paths no kernel of
 * kernels/ takes yet: __shfl_sync, __shfl_up_sync, __shfl_down_sync and __shfl_xor_sync at
 * widths 32, 16, 8 and 4 (the CUDA programming guide: a source outside the caller's segment
 * gives the caller its own value, except that __shfl_xor_sync may read an earlier segment),
 * mma.sync.m16n8k16 on small integers (exact in fp32)
 * against the plain product, ldmatrix.x2.trans against the PTX ISA's fragment table, and the
 * emulated cuBLASLt's epilogues (bias, GELU with its aux output, dGELU with the bias
 * gradient, BGRADA/BGRADB) against cublasLt.h's definitions on a plain fp32 product.
 * Built only over the emulation (make test-gpu-emu runs it first); prints
 * "test_emu: N passed, N failed".
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cublasLt.h>

#include "kernels/cuda_common.h"

#define NT 64 /* two warps */

enum { SH_IDX, SH_UP, SH_DOWN, SH_XOR, SH_KINDS };
static const int widths[4] = { 32, 16, 8, 4 };

/* out[((kind * 4 + w) * NT) + t]: thread t's result of shuffle `kind` at width widths[w] of
 * the value 1000 + t (arguments: idx lane 7t+3, up 3, down 5, xor 6) */
__global__ void shfl_kernel(int *out)
{
    const int t = threadIdx.x, v = 1000 + t;
    for (int w = 0; w < 4; w++) {
        const int wd = widths[w];
        out[(SH_IDX * 4 + w) * NT + t] = __shfl_sync(0xffffffffu, v, 7 * t + 3, wd);
        out[(SH_UP * 4 + w) * NT + t] = __shfl_up_sync(0xffffffffu, v, 3, wd);
        out[(SH_DOWN * 4 + w) * NT + t] = __shfl_down_sync(0xffffffffu, v, 5, wd);
        out[(SH_XOR * 4 + w) * NT + t] = __shfl_xor_sync(0xffffffffu, v, 6, wd);
    }
}

/* the source lane by the guide's definitions (-1: the caller's own value) */
static int shfl_source(int kind, int lane, int width)
{
    const int base = lane / width * width;
    switch (kind) {
    case SH_IDX:
        return base + (7 * lane + 3) % width;
    case SH_UP:
        return lane - base >= 3 ? lane - 3 : -1;
    case SH_DOWN:
        return lane - base + 5 < width ? lane + 5 : -1;
    default: /* "able to access elements from earlier groups of threads", not later ones */
        return (lane ^ 6) < base + width ? lane ^ 6 : -1;
    }
}

static uint16_t bf16_of_int(int v) /* small integers are exact in bf16 */
{
    float f = (float)v;
    uint32_t u;
    memcpy(&u, &f, 4);
    return (uint16_t)(u >> 16);
}

static uint32_t pack(uint16_t lo, uint16_t hi)
{
    return (uint32_t)lo | (uint32_t)hi << 16;
}

/* One warp: fragments of A (16x16, row-major) and B (16x8, k-major) gathered by the layout
 * of the PTX ISA (g = lane/4, q = lane%4), C = A B + C0 stored back from its fragments. */
__global__ void mma_kernel(float *C, const uint16_t *A, const uint16_t *B, const float *C0)
{
    const int l = threadIdx.x, g = l >> 2, q = l & 3;
    uint32_t a[4] = { pack(A[g * 16 + 2 * q], A[g * 16 + 2 * q + 1]),
                      pack(A[(g + 8) * 16 + 2 * q], A[(g + 8) * 16 + 2 * q + 1]),
                      pack(A[g * 16 + 2 * q + 8], A[g * 16 + 2 * q + 9]),
                      pack(A[(g + 8) * 16 + 2 * q + 8], A[(g + 8) * 16 + 2 * q + 9]) };
    uint32_t b0 = pack(B[(2 * q) * 8 + g], B[(2 * q + 1) * 8 + g]);
    uint32_t b1 = pack(B[(2 * q + 8) * 8 + g], B[(2 * q + 9) * 8 + g]);
    float c[4] = { C0[g * 8 + 2 * q], C0[g * 8 + 2 * q + 1], C0[(g + 8) * 8 + 2 * q],
                   C0[(g + 8) * 8 + 2 * q + 1] };
    sl_emu_mma_m16n8k16_bf16(c, a, b0, b1);
    C[g * 8 + 2 * q] = c[0];
    C[g * 8 + 2 * q + 1] = c[1];
    C[(g + 8) * 8 + 2 * q] = c[2];
    C[(g + 8) * 8 + 2 * q + 1] = c[3];
}

/* One warp: a 16x8 tile of b16 in shared memory, rows given by lanes 0-15; out[2l], out[2l+1]
 * the two registers lane l receives. */
__global__ void ldmatrix_kernel(uint32_t *out, const uint16_t *tile)
{
    __shared__ __align__(16) uint16_t s[16 * 8];
    for (int i = threadIdx.x; i < 16 * 8; i += 32)
        s[i] = tile[i];
    __syncthreads();
    uint32_t r0, r1;
    sl_emu_ldmatrix_x2_trans(r0, r1, s + (threadIdx.x & 15) * 8);
    out[2 * threadIdx.x] = r0;
    out[2 * threadIdx.x + 1] = r1;
}

static int passed, failed;

static void result(int ok, const char *what)
{
    printf("  %s %s\n", ok ? "ok  " : "FAIL", what);
    if (ok)
        passed++;
    else
        failed++;
}

static void *dev_copy(const void *h, size_t bytes)
{
    void *d;
    CUDA_CHECK(cudaMalloc(&d, bytes));
    if (h)
        CUDA_CHECK(cudaMemcpy(d, h, bytes, cudaMemcpyHostToDevice));
    return d;
}

static void test_shuffles(void)
{
    static const char *names[SH_KINDS] = { "__shfl_sync", "__shfl_up_sync", "__shfl_down_sync",
                                           "__shfl_xor_sync" };
    const size_t n = SH_KINDS * 4 * NT;
    int *d = (int *)dev_copy(NULL, n * sizeof(int)), h[SH_KINDS * 4 * NT];
    shfl_kernel<<<1, NT, 0, 0>>>(d);
    CUDA_CHECK_LAUNCH();
    CUDA_CHECK(cudaMemcpy(h, d, sizeof(h), cudaMemcpyDeviceToHost));
    for (int k = 0; k < SH_KINDS; k++)
        for (int w = 0; w < 4; w++) {
            int bad = 0;
            for (int t = 0; t < NT; t++) {
                const int s = shfl_source(k, t & 31, widths[w]);
                bad += h[(k * 4 + w) * NT + t] != 1000 + (s < 0 ? t : (t & ~31) + s);
            }
            char what[96];
            snprintf(what, sizeof(what), "%s width %d (%d of %d lanes wrong)", names[k], widths[w],
                     bad, NT);
            result(!bad, what);
        }
    CUDA_CHECK(cudaFree(d));
}

static void test_mma(void)
{
    uint16_t A[16 * 16], B[16 * 8];
    float C0[16 * 8], C[16 * 8];
    int Ai[16 * 16], Bi[16 * 8];
    for (int i = 0; i < 16 * 16; i++)
        A[i] = bf16_of_int(Ai[i] = (i * 7 + 3) % 9 - 4);
    for (int i = 0; i < 16 * 8; i++) {
        B[i] = bf16_of_int(Bi[i] = (i * 5 + 1) % 7 - 3);
        C0[i] = (float)(i % 5);
    }
    float *dC = (float *)dev_copy(NULL, sizeof(C));
    uint16_t *dA = (uint16_t *)dev_copy(A, sizeof(A)), *dB = (uint16_t *)dev_copy(B, sizeof(B));
    float *dC0 = (float *)dev_copy(C0, sizeof(C0));
    mma_kernel<<<1, 32, 0, 0>>>(dC, dA, dB, dC0);
    CUDA_CHECK_LAUNCH();
    CUDA_CHECK(cudaMemcpy(C, dC, sizeof(C), cudaMemcpyDeviceToHost));
    int bad = 0;
    for (int i = 0; i < 16; i++)
        for (int j = 0; j < 8; j++) {
            int ref = i * 8 + j;
            long s = (long)(ref % 5);
            for (int k = 0; k < 16; k++)
                s += (long)Ai[i * 16 + k] * Bi[k * 8 + j];
            bad += C[i * 8 + j] != (float)s;
        }
    char what[96];
    snprintf(what, sizeof(what), "mma.m16n8k16 = A B + C on integers (%d of 128 wrong)", bad);
    result(!bad, what);
    CUDA_CHECK(cudaFree(dA));
    CUDA_CHECK(cudaFree(dB));
    CUDA_CHECK(cudaFree(dC));
    CUDA_CHECK(cudaFree(dC0));
}

static void test_ldmatrix(void)
{
    uint16_t tile[16 * 8];
    uint32_t out[64];
    for (int i = 0; i < 16 * 8; i++)
        tile[i] = (uint16_t)(i * 3 + 1);
    uint16_t *dt = (uint16_t *)dev_copy(tile, sizeof(tile));
    uint32_t *d = (uint32_t *)dev_copy(NULL, sizeof(out));
    ldmatrix_kernel<<<1, 32, 0, 0>>>(d, dt);
    CUDA_CHECK_LAUNCH();
    CUDA_CHECK(cudaMemcpy(out, d, sizeof(out), cudaMemcpyDeviceToHost));
    int bad = 0;
    for (int l = 0; l < 32; l++)
        for (int m = 0; m < 2; m++) { /* matrix m: rows 8m..8m+7; transposed: (2(l%4), l/4) */
            const int r = 8 * m + 2 * (l & 3), c = l >> 2;
            bad += out[2 * l + m] != pack(tile[r * 8 + c], tile[(r + 1) * 8 + c]);
        }
    char what[96];
    snprintf(what, sizeof(what), "ldmatrix.x2.trans fragments (%d of 64 registers wrong)", bad);
    result(!bad, what);
    CUDA_CHECK(cudaFree(dt));
    CUDA_CHECK(cudaFree(d));
}

/* ---- the cuBLASLt epilogues, as cublasLt.h documents them --------------------------------
 * Column-major D[m,n] = alpha op(A) op(B) + beta C in fp32 on small integers (exact), then:
 * BIAS adds bias[r] (a vector of D's rows); GELU_AUX_BIAS writes the GELU's input acc +
 * bias[r] to aux (row stride EPILOGUE_AUX_LD, a multiple of 8 and at least m: the rows past
 * m are not written) and D = gelu(aux); DGELU_BGRAD reads aux, D = acc * gelu'(aux) and
 * bias[r] = the sum of D's row r; BGRADA / BGRADB write the sums over k of op(A)'s rows (m)
 * / op(B)'s columns (n). The GELU is the tanh approximation (kernels/gemm.h). */

#define LT_M        5
#define LT_N        3
#define LT_K        4
#define LT_AUX_LD   8       /* the multiple of 8 above LT_M */
#define LT_SENTINEL -777.0f /* in the elements an epilogue must not write */

struct lt_call {
    uint32_t epi;
    int tb;         /* op(B) = B^T: B stored n x k */
    float beta;     /* C = D's initial contents */
    float *bias;    /* device */
    float *aux;     /* device */
    int64_t aux_ld; /* elements */
};

static double gelu_tanh(double x)
{
    return 0.5 * x * (1.0 + tanh(0.7978845608028654 * (x + 0.044715 * x * x * x)));
}

static double gelu_tanh_grad(double x)
{
    const double u = 0.7978845608028654 * (x + 0.044715 * x * x * x), t = tanh(u);
    return 0.5 * (1.0 + t) +
           0.5 * x * (1.0 - t * t) * 0.7978845608028654 * (1.0 + 3.0 * 0.044715 * x * x);
}

/* one cublasLtMatmul over device A (m x k), B (k x n, or n x k when tb) and D (m x n) */
static cublasStatus_t lt_matmul(const struct lt_call *c, const float *A, const float *B, float *D)
{
    cublasLtHandle_t h;
    cublasLtMatmulDesc_t d;
    cublasLtMatrixLayout_t la, lb, ld;
    cublasLtMatmulPreference_t pref;
    cublasLtMatmulHeuristicResult_t res;
    int found = 0;
    const cublasOperation_t opb = c->tb ? CUBLAS_OP_T : CUBLAS_OP_N;
    const float alpha = 1.0f;
    cublasLtCreate(&h);
    cublasLtMatmulDescCreate(&d, CUBLAS_COMPUTE_32F, CUDA_R_32F);
    cublasLtMatmulDescSetAttribute(d, CUBLASLT_MATMUL_DESC_TRANSB, &opb, sizeof(opb));
    cublasLtMatmulDescSetAttribute(d, CUBLASLT_MATMUL_DESC_EPILOGUE, &c->epi, sizeof(c->epi));
    cublasLtMatmulDescSetAttribute(d, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &c->bias, sizeof(c->bias));
    cublasLtMatmulDescSetAttribute(d, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER, &c->aux,
                                   sizeof(c->aux));
    cublasLtMatmulDescSetAttribute(d, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD, &c->aux_ld,
                                   sizeof(c->aux_ld));
    cublasLtMatrixLayoutCreate(&la, CUDA_R_32F, LT_M, LT_K, LT_M);
    cublasLtMatrixLayoutCreate(&lb, CUDA_R_32F, c->tb ? LT_N : LT_K, c->tb ? LT_K : LT_N,
                               c->tb ? LT_N : LT_K);
    cublasLtMatrixLayoutCreate(&ld, CUDA_R_32F, LT_M, LT_N, LT_M);
    cublasLtMatmulPreferenceCreate(&pref);
    cublasStatus_t s = cublasLtMatmulAlgoGetHeuristic(h, d, la, lb, ld, ld, pref, 1, &res, &found);
    if (s == CUBLAS_STATUS_SUCCESS)
        s = cublasLtMatmul(h, d, &alpha, A, la, B, lb, &c->beta, D, ld, D, ld, &res.algo, NULL, 0,
                           0);
    cublasLtMatmulPreferenceDestroy(pref);
    cublasLtMatrixLayoutDestroy(la);
    cublasLtMatrixLayoutDestroy(lb);
    cublasLtMatrixLayoutDestroy(ld);
    cublasLtMatmulDescDestroy(d);
    cublasLtDestroy(h);
    return s;
}

static int near(double ref, float got)
{
    return fabs(ref - (double)got) <= 1e-5 * (1.0 + fabs(ref));
}

static void test_epilogues(void)
{
    float A[LT_M * LT_K], B[LT_K * LT_N], C0[LT_M * LT_N], bias0[LT_M + 1], pre[LT_AUX_LD * LT_N];
    double acc[LT_M * LT_N]; /* op(A) op(B), exact; B read as stored k x n, or n x k with tb */
    for (int i = 0; i < LT_M * LT_K; i++)
        A[i] = (float)(i % 7 - 3);
    for (int i = 0; i < LT_K * LT_N; i++)
        B[i] = (float)(i % 5 - 2);
    for (int i = 0; i < LT_M * LT_N; i++)
        C0[i] = (float)(i % 3 - 1);
    for (int r = 0; r <= LT_M; r++)
        bias0[r] = r < LT_M ? 0.5f * (float)(r - 2) : LT_SENTINEL;
    for (int i = 0; i < LT_AUX_LD * LT_N; i++) /* GELU inputs: -1.5 .. 1.5 in the rows < m */
        pre[i] = i % LT_AUX_LD < LT_M ? 0.25f * (float)(i % 13 - 6) : LT_SENTINEL;
    float *dA = (float *)dev_copy(A, sizeof(A)), *dB = (float *)dev_copy(B, sizeof(B));
    float *dD = (float *)dev_copy(NULL, sizeof(C0)),
          *dbias = (float *)dev_copy(NULL, sizeof(bias0));
    float *daux = (float *)dev_copy(NULL, sizeof(pre));
    float D[LT_M * LT_N], bias[LT_M + 1], aux[LT_AUX_LD * LT_N];
    char what[160];
    for (int tb = 0; tb < 2; tb++) {
        for (int r = 0; r < LT_M; r++)
            for (int c = 0; c < LT_N; c++) {
                double s = 0;
                for (int k = 0; k < LT_K; k++)
                    s += (double)A[r + k * LT_M] *
                         B[tb ? c + k * LT_N : k + c * LT_K]; /* B^T stored n x k */
                acc[r + c * LT_M] = s;
            }
        static const uint32_t epis[] = { CUBLASLT_EPILOGUE_BIAS, CUBLASLT_EPILOGUE_GELU_AUX_BIAS,
                                         CUBLASLT_EPILOGUE_DGELU_BGRAD, CUBLASLT_EPILOGUE_BGRADA,
                                         CUBLASLT_EPILOGUE_BGRADB };
        static const char *names[] = { "BIAS", "GELU_AUX_BIAS", "DGELU_BGRAD", "BGRADA", "BGRADB" };
        for (int e = 0; e < 5; e++) {
            const uint32_t epi = epis[e];
            const int dgelu = epi == CUBLASLT_EPILOGUE_DGELU_BGRAD;
            struct lt_call c = { epi, tb, dgelu ? 0.0f : 1.0f, dbias, daux, LT_AUX_LD };
            CUDA_CHECK(cudaMemcpy(dD, C0, sizeof(C0), cudaMemcpyHostToDevice));
            CUDA_CHECK(cudaMemcpy(dbias, bias0, sizeof(bias0), cudaMemcpyHostToDevice));
            CUDA_CHECK(cudaMemcpy(daux, pre, sizeof(pre), cudaMemcpyHostToDevice));
            for (int i = 0; i < LT_AUX_LD * LT_N; i++)
                aux[i] = LT_SENTINEL;
            for (int r = 0; r <= LT_M; r++)
                bias[r] = LT_SENTINEL;
            if (epi == CUBLASLT_EPILOGUE_GELU_AUX_BIAS) /* an output: all sentinels first */
                CUDA_CHECK(cudaMemcpy(daux, aux, sizeof(aux), cudaMemcpyHostToDevice));
            if (epi == CUBLASLT_EPILOGUE_BGRADA || epi == CUBLASLT_EPILOGUE_BGRADB || dgelu)
                CUDA_CHECK(cudaMemcpy(dbias, bias, sizeof(bias), cudaMemcpyHostToDevice));
            cublasStatus_t s = lt_matmul(&c, dA, dB, dD);
            CUDA_CHECK(cudaMemcpy(D, dD, sizeof(D), cudaMemcpyDeviceToHost));
            CUDA_CHECK(cudaMemcpy(bias, dbias, sizeof(bias), cudaMemcpyDeviceToHost));
            CUDA_CHECK(cudaMemcpy(aux, daux, sizeof(aux), cudaMemcpyDeviceToHost));
            int bad = s != CUBLAS_STATUS_SUCCESS;
            double bsum[LT_M + 1] = { 0 };
            for (int r = 0; r < LT_M; r++)
                for (int col = 0; col < LT_N; col++) {
                    const int i = r + col * LT_M, ai = r + col * LT_AUX_LD;
                    double v = acc[i] + c.beta * C0[i];
                    if (epi == CUBLASLT_EPILOGUE_BIAS || epi == CUBLASLT_EPILOGUE_GELU_AUX_BIAS)
                        v += bias0[r];
                    if (epi == CUBLASLT_EPILOGUE_GELU_AUX_BIAS) {
                        bad += aux[ai] != (float)v; /* exact: integers and halves */
                        v = gelu_tanh(v);
                    } else if (dgelu) {
                        v *= gelu_tanh_grad(pre[ai]);
                        bsum[r] += v;
                    }
                    bad += !near(v, D[i]);
                }
            if (epi == CUBLASLT_EPILOGUE_GELU_AUX_BIAS) /* the rows past m: not written */
                for (int i = 0; i < LT_AUX_LD * LT_N; i++)
                    bad += i % LT_AUX_LD >= LT_M && aux[i] != LT_SENTINEL;
            if (epi == CUBLASLT_EPILOGUE_BGRADA || epi == CUBLASLT_EPILOGUE_BGRADB) {
                const int len = epi == CUBLASLT_EPILOGUE_BGRADA ? LT_M : LT_N;
                for (int i = 0; i < len; i++)
                    for (int k = 0; k < LT_K; k++)
                        bsum[i] += epi == CUBLASLT_EPILOGUE_BGRADA ? A[i + k * LT_M]
                                   : tb                            ? B[i + k * LT_N]
                                                                   : B[k + i * LT_K];
            }
            if (epi == CUBLASLT_EPILOGUE_BGRADA || epi == CUBLASLT_EPILOGUE_BGRADB || dgelu) {
                const int len = epi == CUBLASLT_EPILOGUE_BGRADB ? LT_N : LT_M;
                for (int i = 0; i <= LT_M; i++)
                    bad += i < len ? !near(bsum[i], bias[i]) : bias[i] != LT_SENTINEL;
            } else {
                for (int i = 0; i <= LT_M; i++)
                    bad += bias[i] != bias0[i]; /* an input: not written */
            }
            snprintf(what, sizeof(what),
                     "cuBLASLt epilogue %s%s, m=%d n=%d k=%d, aux ld %d (%d wrong)", names[e],
                     tb ? " (B transposed)" : "", LT_M, LT_N, LT_K, LT_AUX_LD, bad);
            result(!bad, what);
        }
    }
    /* the aux ld must be a multiple of 8 */
    static const int64_t bad_ld[] = { 4, 12 };
    for (int i = 0; i < 2; i++) {
        struct lt_call c = { CUBLASLT_EPILOGUE_GELU_AUX_BIAS, 0, 0.0f, dbias, daux, bad_ld[i] };
        snprintf(what, sizeof(what), "cuBLASLt GELU_AUX_BIAS refuses aux ld %d (m=%d)",
                 (int)bad_ld[i], LT_M);
        result(lt_matmul(&c, dA, dB, dD) == CUBLAS_STATUS_INVALID_VALUE, what);
    }
    CUDA_CHECK(cudaFree(dA));
    CUDA_CHECK(cudaFree(dB));
    CUDA_CHECK(cudaFree(dD));
    CUDA_CHECK(cudaFree(dbias));
    CUDA_CHECK(cudaFree(daux));
}

int main(void)
{
    test_shuffles();
    test_mma();
    test_ldmatrix();
    test_epilogues();
    printf("test_emu: %d passed, %d failed\n", passed, failed);
    return failed ? 1 : 0;
}
