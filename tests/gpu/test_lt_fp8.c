/* The emulated cuBLASLt's FP8 matmul (kernels/emu/cublaslt.cc) against its definition,
 * D = scale_D (scale_A scale_B alpha op(A) op(B) + scale_C beta C) with amax_D = max |D|
 * before scale_D, over operands quantised by the CPU path's FP8 reference (train/fp8.h):
 * E4M3 x E4M3 and E5M2 x E4M3 in the TN layout, D in fp32 (the sums over k in increasing
 * order in fp32, as the emulation keeps them: equal to the bit), bf16 and FP8 (the code of
 * fp8_round of the reference), with C and a bias; and the combinations cuBLASLt refuses.
 * Built only over the emulation (make test-gpu-emu runs it); prints
 * "test_lt_fp8: N passed, N failed".
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cublasLt.h>
#include <cuda_runtime.h>

#include "train/fp8.h"

static int passed, failed;

static void result(int ok, const char *what)
{
    printf("  %s %s\n", ok ? "ok  " : "FAIL", what);
    ok ? passed++ : failed++;
}

/* The code (0..255) of value v of format f: v is one of the format's values. */
static uint8_t code_of(float v, enum fp8_format f)
{
    int mant = f == FP8_E4M3 ? 3 : 2, bias = f == FP8_E4M3 ? 7 : 15;
    for (int c = 0; c < 256; c++) {
        int e = (c & 0x7f) >> mant, m = c & ((1 << mant) - 1);
        if ((f == FP8_E4M3 && e == 15 && m == 7) || (f == FP8_E5M2 && e == 31))
            continue;
        float x = e ? ldexpf(1.0f + (float)m / (float)(1 << mant), e - bias)
                    : ldexpf((float)m / (float)(1 << mant), 1 - bias);
        if (c & 0x80)
            x = -x;
        if (x == v && signbit(x) == signbit(v))
            return (uint8_t)c;
    }
    return 0x7f;
}

static cudaDataType lt_type(enum fp8_format f)
{
    return f == FP8_E4M3 ? CUDA_R_8F_E4M3 : CUDA_R_8F_E5M2;
}

static float bf16_round(float v)
{
    uint32_t u;
    memcpy(&u, &v, 4);
    u = (u + 0x7fff + ((u >> 16) & 1)) & 0xffff0000u; /* to nearest even */
    memcpy(&v, &u, 4);
    return v;
}

/* One matmul: D[m, n] (column-major) = op(A) op(B), A stored k x m (transposed), B k x n. */
struct mm {
    cublasLtHandle_t h;
    cublasLtMatmulDesc_t d;
    cublasLtMatrixLayout_t la, lb, lc, ld;
};

static cublasStatus_t mm_run(struct mm *x, int m, int n, int k, cudaDataType ta_, cudaDataType tb_,
                             cudaDataType tc, cudaDataType td, int trans_a, const void *A,
                             const void *B, const void *C, void *D, const float *sc[4], float *amax,
                             float alpha, float beta)
{
    cublasStatus_t s;
    cublasLtMatmulDescCreate(&x->d, CUBLAS_COMPUTE_32F, CUDA_R_32F);
    int32_t ta = trans_a ? CUBLAS_OP_T : CUBLAS_OP_N, tb = CUBLAS_OP_N;
    cublasLtMatmulDescSetAttribute(x->d, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof(ta));
    cublasLtMatmulDescSetAttribute(x->d, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof(tb));
    const cublasLtMatmulDescAttributes_t at[4] = { CUBLASLT_MATMUL_DESC_A_SCALE_POINTER,
                                                   CUBLASLT_MATMUL_DESC_B_SCALE_POINTER,
                                                   CUBLASLT_MATMUL_DESC_C_SCALE_POINTER,
                                                   CUBLASLT_MATMUL_DESC_D_SCALE_POINTER };
    for (int i = 0; i < 4; i++)
        if (sc[i])
            cublasLtMatmulDescSetAttribute(x->d, at[i], &sc[i], sizeof(sc[i]));
    if (amax)
        cublasLtMatmulDescSetAttribute(x->d, CUBLASLT_MATMUL_DESC_AMAX_D_POINTER, &amax,
                                       sizeof(amax));
    cublasLtMatrixLayoutCreate(&x->la, ta_, trans_a ? k : m, trans_a ? m : k, trans_a ? k : m);
    cublasLtMatrixLayoutCreate(&x->lb, tb_, k, n, k);
    cublasLtMatrixLayoutCreate(&x->lc, tc, m, n, m);
    cublasLtMatrixLayoutCreate(&x->ld, td, m, n, m);
    s = cublasLtMatmul(x->h, x->d, &alpha, A, x->la, B, x->lb, &beta, C, x->lc, D, x->ld, NULL,
                       NULL, 0, 0);
    cublasLtMatrixLayoutDestroy(x->la);
    cublasLtMatrixLayoutDestroy(x->lb);
    cublasLtMatrixLayoutDestroy(x->lc);
    cublasLtMatrixLayoutDestroy(x->ld);
    cublasLtMatmulDescDestroy(x->d);
    return s;
}

enum { M = 24, N = 16, K = 40 };

static float frand(uint64_t *s)
{
    *s = *s * 6364136223846793005ull + 1442695040888963407ull;
    return (float)((double)(*s >> 11) / 9007199254740992.0 * 2.0 - 1.0);
}

static void check_formats(struct mm *x, enum fp8_format fa, const char *name)
{
    uint64_t seed = 7;
    float a[K * M], b[K * N], c[M * N], qa[K * M], qb[K * N];
    for (int i = 0; i < K * M; i++)
        a[i] = frand(&seed) * 3e-3f; /* gradient-sized: a scale well above 1 */
    for (int i = 0; i < K * N; i++)
        b[i] = frand(&seed) * 0.7f;
    for (int i = 0; i < M * N; i++)
        c[i] = bf16_round(frand(&seed));
    float sa = fp8_scale_for(fp8_amax(a, K * M), fa, 0, 1.0f);
    float sb = fp8_scale_for(fp8_amax(b, K * N), FP8_E4M3, 0, 1.0f);
    fp8_quantize(qa, a, K * M, sa, fa);
    fp8_quantize(qb, b, K * N, sb, FP8_E4M3);
    uint8_t *A, *B, *D8;
    float *D32, *S, *amax;
    uint16_t *C, *D16;
    cudaMalloc((void **)&A, K * M);
    cudaMalloc((void **)&B, K * N);
    cudaMalloc((void **)&D8, M * N);
    cudaMalloc((void **)&D32, M * N * sizeof(float));
    cudaMalloc((void **)&D16, M * N * 2);
    cudaMalloc((void **)&C, M * N * 2);
    cudaMalloc((void **)&S, 4 * sizeof(float));
    cudaMalloc((void **)&amax, sizeof(float));
    for (int i = 0; i < K * M; i++)
        A[i] = code_of(qa[i], fa);
    for (int i = 0; i < K * N; i++)
        B[i] = code_of(qb[i], FP8_E4M3);
    for (int i = 0; i < M * N; i++) {
        uint32_t u;
        memcpy(&u, &c[i], 4);
        C[i] = (uint16_t)(u >> 16);
    }
    /* the dequantising scales, C's and D's */
    S[0] = 1.0f / sa;
    S[1] = 1.0f / sb;
    S[2] = 0.5f;
    S[3] = 4.0f;
    const float alpha = 1.5f, beta = 2.0f;
    /* the definition, in the emulation's order: fp32 sums over increasing k */
    float ref[M * N], pre[M * N], mx = 0.0f;
    for (int j = 0; j < N; j++)
        for (int i = 0; i < M; i++) {
            float acc = 0.0f;
            for (int kk = 0; kk < K; kk++)
                acc += qa[i * K + kk] * qb[j * K + kk];
            ref[j * M + i] = alpha * S[0] * S[1] * acc;
            pre[j * M + i] = ref[j * M + i] + beta * S[2] * c[j * M + i];
            mx = fabsf(pre[j * M + i]) > mx ? fabsf(pre[j * M + i]) : mx;
        }
    char what[160];
    const float *s2[4] = { &S[0], &S[1], NULL, NULL }, *s4[4] = { &S[0], &S[1], &S[2], &S[3] };
    cublasStatus_t st = mm_run(x, M, N, K, lt_type(fa), CUDA_R_8F_E4M3, CUDA_R_32F, CUDA_R_32F, 1,
                               A, B, NULL, D32, s2, NULL, alpha, 0.0f);
    int bad = st != CUBLAS_STATUS_SUCCESS;
    for (int i = 0; i < M * N && !bad; i++)
        bad = D32[i] != ref[i];
    snprintf(what, sizeof(what), "%s x E4M3 -> fp32: alpha sA sB A^T B to the bit", name);
    result(!bad, what);
    st = mm_run(x, M, N, K, lt_type(fa), CUDA_R_8F_E4M3, CUDA_R_16BF, CUDA_R_16BF, 1, A, B, NULL,
                D16, s2, NULL, alpha, 0.0f);
    bad = st != CUBLAS_STATUS_SUCCESS;
    for (int i = 0; i < M * N && !bad; i++) {
        uint32_t u = (uint32_t)D16[i] << 16;
        float v;
        memcpy(&v, &u, 4);
        bad = v != bf16_round(ref[i]);
    }
    snprintf(what, sizeof(what), "%s x E4M3 -> bf16: rounded to nearest even", name);
    result(!bad, what);
    *amax = -1.0f;
    st = mm_run(x, M, N, K, lt_type(fa), CUDA_R_8F_E4M3, CUDA_R_16BF, CUDA_R_8F_E4M3, 1, A, B, C,
                D8, s4, amax, alpha, beta);
    bad = st != CUBLAS_STATUS_SUCCESS;
    for (int i = 0; i < M * N && !bad; i++)
        bad = D8[i] != code_of(fp8_round(pre[i] * S[3], FP8_E4M3), FP8_E4M3);
    snprintf(what, sizeof(what), "%s x E4M3 + sC beta C -> E4M3 with sD: fp8_round's codes", name);
    result(!bad, what);
    snprintf(what, sizeof(what), "%s: amax_D %g is the largest |D| before sD (%g)", name, *amax,
             mx);
    result(st == CUBLAS_STATUS_SUCCESS && *amax == mx, what);
    cudaFree(A);
    cudaFree(B);
    cudaFree(D8);
    cudaFree(D32);
    cudaFree(D16);
    cudaFree(C);
    cudaFree(S);
    cudaFree(amax);
}

static void check_refusals(struct mm *x)
{
    uint8_t *A, *B;
    float *D, *S;
    cudaMalloc((void **)&A, K * M);
    cudaMalloc((void **)&B, K * N);
    cudaMalloc((void **)&D, M * N * sizeof(float));
    cudaMalloc((void **)&S, 4 * sizeof(float));
    memset(A, 0, K * M);
    memset(B, 0, K * N);
    S[0] = S[1] = S[2] = S[3] = 1.0f;
    const float *s2[4] = { &S[0], &S[1], NULL, NULL }, *sd[4] = { &S[0], &S[1], NULL, &S[3] };
    const float *none[4] = { NULL, NULL, NULL, NULL };
    result(mm_run(x, M, N, K, CUDA_R_8F_E4M3, CUDA_R_8F_E4M3, CUDA_R_32F, CUDA_R_32F, 0, A, B, NULL,
                  D, s2, NULL, 1.0f, 0.0f) == CUBLAS_STATUS_NOT_SUPPORTED,
           "FP8 with A not transposed (not TN) is refused");
    result(mm_run(x, M, N, K, CUDA_R_8F_E5M2, CUDA_R_8F_E5M2, CUDA_R_32F, CUDA_R_32F, 1, A, B, NULL,
                  D, s2, NULL, 1.0f, 0.0f) == CUBLAS_STATUS_NOT_SUPPORTED,
           "E5M2 x E5M2 is refused");
    result(mm_run(x, M, N, K, CUDA_R_8F_E4M3, CUDA_R_8F_E4M3, CUDA_R_32F, CUDA_R_32F, 1, A, B, NULL,
                  D, sd, NULL, 1.0f, 0.0f) == CUBLAS_STATUS_INVALID_VALUE,
           "a D scale with an fp32 D is refused");
    result(mm_run(x, M, N, K, CUDA_R_8F_E4M3, CUDA_R_8F_E4M3, CUDA_R_32F, CUDA_R_32F, 1, A, B, NULL,
                  D, s2, D, 1.0f, 0.0f) == CUBLAS_STATUS_INVALID_VALUE,
           "amax_D with an fp32 D is refused");
    result(mm_run(x, M, N, K, CUDA_R_8F_E4M3, CUDA_R_8F_E4M3, CUDA_R_32F, CUDA_R_32F, 1, A, B, NULL,
                  D, none, NULL, 1.0f, 0.0f) == CUBLAS_STATUS_SUCCESS,
           "FP8 without scale pointers: every scale 1");
    cudaFree(A);
    cudaFree(B);
    cudaFree(D);
    cudaFree(S);
}

int main(void)
{
    struct mm x;
    memset(&x, 0, sizeof(x));
    if (cublasLtCreate(&x.h) != CUBLAS_STATUS_SUCCESS) {
        printf("test_lt_fp8: 0 passed, 1 failed\n");
        return 1;
    }
    check_formats(&x, FP8_E4M3, "E4M3");
    check_formats(&x, FP8_E5M2, "E5M2");
    check_refusals(&x);
    cublasLtDestroy(x.h);
    printf("test_lt_fp8: %d passed, %d failed\n", passed, failed);
    return failed ? 1 : 0;
}
