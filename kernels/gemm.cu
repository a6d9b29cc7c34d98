/* cuBLASLt GEMMs in bf16 with fp32 accumulation: a context holds the handle, the workspace
 * pointer and a cache of plans (descriptor, layouts, heuristic's algorithm) keyed by shape,
 * transposes, epilogue and pointer alignment. Only the bias/aux pointers are set per call.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cublasLt.h>

#include "kernels/cuda_common.h"
#include "kernels/gemm.h"

#define GEMM_MAX_PLANS 256

struct gemm_key {
    int ta, tb, m, n, k, lda, ldb, ldc, ldaux, epi;
    int align_a, align_b, align_c, align_bias, align_aux;
};

struct gemm_plan {
    struct gemm_key key;
    cublasLtMatmulDesc_t desc;
    cublasLtMatrixLayout_t la, lb, lc;
    cublasLtMatmulAlgo_t algo;
};

struct gemm {
    cublasLtHandle_t handle;
    void *ws;
    size_t ws_bytes;
    int nplans;
    struct gemm_plan plans[GEMM_MAX_PLANS];
};

static __thread char gemm_msg[512];

extern "C" const char *gemm_error(void)
{
    return gemm_msg;
}

static int fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int fail(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(gemm_msg, sizeof(gemm_msg), fmt, ap);
    va_end(ap);
    return -1;
}

extern "C" struct gemm *gemm_new(void *workspace, size_t workspace_bytes)
{
    struct gemm *g = (struct gemm *)calloc(1, sizeof(*g));
    if (!g) {
        fail("cannot allocate the gemm context");
        return NULL;
    }
    cublasStatus_t s = cublasLtCreate(&g->handle);
    if (s != CUBLAS_STATUS_SUCCESS) {
        fail("cublasLtCreate failed: %s", sl_cublas_status_string((int)s));
        free(g);
        return NULL;
    }
    g->ws = workspace;
    g->ws_bytes = workspace ? workspace_bytes : 0;
    return g;
}

extern "C" void gemm_free(struct gemm *g)
{
    if (!g)
        return;
    for (int i = 0; i < g->nplans; i++) {
        struct gemm_plan *p = &g->plans[i];
        cublasLtMatrixLayoutDestroy(p->la);
        cublasLtMatrixLayoutDestroy(p->lb);
        cublasLtMatrixLayoutDestroy(p->lc);
        cublasLtMatmulDescDestroy(p->desc);
    }
    cublasLtDestroy(g->handle);
    free(g);
}

extern "C" int gemm_plan_count(const struct gemm *g)
{
    return g ? g->nplans : 0;
}

/* log2 of the pointer's alignment, capped at 256 bytes (8); 8 for NULL. */
static int align_log2(const void *p)
{
    uintptr_t a = (uintptr_t)p;
    if (!a)
        return 8;
    int l = 0;
    while (l < 8 && !(a & ((uintptr_t)1 << l)))
        l++;
    return l;
}

static cublasLtEpilogue_t lt_epilogue(int epi, int has_aux)
{
    switch (epi) {
    case GEMM_EPI_BIAS:
        return CUBLASLT_EPILOGUE_BIAS;
    case GEMM_EPI_GELU:
        return has_aux ? CUBLASLT_EPILOGUE_GELU_AUX : CUBLASLT_EPILOGUE_GELU;
    case GEMM_EPI_GELU_BIAS:
        return has_aux ? CUBLASLT_EPILOGUE_GELU_AUX_BIAS : CUBLASLT_EPILOGUE_GELU_BIAS;
    case GEMM_EPI_DGELU:
        return CUBLASLT_EPILOGUE_DGELU;
    case GEMM_EPI_DGELU_BGRAD:
        return CUBLASLT_EPILOGUE_DGELU_BGRAD;
    case GEMM_EPI_BGRAD_A:
        return CUBLASLT_EPILOGUE_BGRADB;
    default:
        return CUBLASLT_EPILOGUE_DEFAULT;
    }
}

static void destroy_plan(struct gemm_plan *p)
{
    if (p->la)
        cublasLtMatrixLayoutDestroy(p->la);
    if (p->lb)
        cublasLtMatrixLayoutDestroy(p->lb);
    if (p->lc)
        cublasLtMatrixLayoutDestroy(p->lc);
    if (p->desc)
        cublasLtMatmulDescDestroy(p->desc);
}

#define LT_TRY(call)                                                                               \
    do {                                                                                           \
        cublasStatus_t s_ = (call);                                                                \
        if (s_ != CUBLAS_STATUS_SUCCESS) {                                                         \
            fail("%s failed: %s", #call, sl_cublas_status_string((int)s_));                        \
            goto out;                                                                              \
        }                                                                                          \
    } while (0)

/* Build a plan: column-major problem D'[m,n] = op(A')[m,k] op(B')[k,n] (see gemm_bf16). */
static struct gemm_plan *make_plan(struct gemm *g, const struct gemm_key *key, const void *bias,
                                   const void *aux)
{
    if (g->nplans == GEMM_MAX_PLANS) {
        fail("more than %d distinct gemm shapes", GEMM_MAX_PLANS);
        return NULL;
    }
    struct gemm_plan *p = &g->plans[g->nplans];
    memset(p, 0, sizeof(*p));
    p->key = *key;
    cublasLtMatmulPreference_t pref = NULL;
    cublasLtMatmulHeuristicResult_t res;
    int found = 0, ok = 0;
    cublasOperation_t opa = key->ta ? CUBLAS_OP_T : CUBLAS_OP_N;
    cublasOperation_t opb = key->tb ? CUBLAS_OP_T : CUBLAS_OP_N;
    cublasLtEpilogue_t epi = lt_epilogue(key->epi, aux != NULL);
    uint64_t wsb = g->ws_bytes;
    uint32_t al_a = 1u << key->align_a, al_b = 1u << key->align_b, al_c = 1u << key->align_c;

    LT_TRY(cublasLtMatmulDescCreate(&p->desc, CUBLAS_COMPUTE_32F, CUDA_R_32F));
    LT_TRY(cublasLtMatmulDescSetAttribute(p->desc, CUBLASLT_MATMUL_DESC_TRANSA, &opa, sizeof(opa)));
    LT_TRY(cublasLtMatmulDescSetAttribute(p->desc, CUBLASLT_MATMUL_DESC_TRANSB, &opb, sizeof(opb)));
    LT_TRY(
        cublasLtMatmulDescSetAttribute(p->desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &epi, sizeof(epi)));
    if (bias)
        LT_TRY(cublasLtMatmulDescSetAttribute(p->desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias,
                                              sizeof(bias)));
    if (aux) {
        int64_t ld = key->ldaux;
        LT_TRY(cublasLtMatmulDescSetAttribute(p->desc, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER,
                                              &aux, sizeof(aux)));
        LT_TRY(cublasLtMatmulDescSetAttribute(p->desc, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD, &ld,
                                              sizeof(ld)));
    }
    /* stored shapes (column-major): A' is m x k, or k x m when transposed */
    LT_TRY(cublasLtMatrixLayoutCreate(&p->la, CUDA_R_16BF, key->ta ? key->k : key->m,
                                      key->ta ? key->m : key->k, key->lda));
    LT_TRY(cublasLtMatrixLayoutCreate(&p->lb, CUDA_R_16BF, key->tb ? key->n : key->k,
                                      key->tb ? key->k : key->n, key->ldb));
    LT_TRY(cublasLtMatrixLayoutCreate(&p->lc, CUDA_R_16BF, key->m, key->n, key->ldc));

    LT_TRY(cublasLtMatmulPreferenceCreate(&pref));
    LT_TRY(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                                &wsb, sizeof(wsb)));
    LT_TRY(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES,
                                                &al_a, sizeof(al_a)));
    LT_TRY(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES,
                                                &al_b, sizeof(al_b)));
    LT_TRY(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES,
                                                &al_c, sizeof(al_c)));
    LT_TRY(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES,
                                                &al_c, sizeof(al_c)));
    LT_TRY(cublasLtMatmulAlgoGetHeuristic(g->handle, p->desc, p->la, p->lb, p->lc, p->lc, pref, 1,
                                          &res, &found));
    if (found < 1) {
        fail("cuBLASLt has no algorithm for m=%d n=%d k=%d (column-major) transa=%d transb=%d "
             "epilogue=%d lda=%d ldb=%d ldc=%d",
             key->m, key->n, key->k, key->ta, key->tb, key->epi, key->lda, key->ldb, key->ldc);
        goto out;
    }
    p->algo = res.algo;
    ok = 1;
out:
    if (pref)
        cublasLtMatmulPreferenceDestroy(pref);
    if (!ok) {
        destroy_plan(p);
        return NULL;
    }
    g->nplans++;
    return p;
}

extern "C" int gemm_bf16(struct gemm *g, int transa, int transb, int M, int N, int K, float alpha,
                         const sl_bf16 *A, int lda, const sl_bf16 *B, int ldb, float beta,
                         sl_bf16 *C, int ldc, enum gemm_epilogue epi, void *bias, sl_bf16 *aux,
                         int ldaux, cudaStream_t st)
{
    if (M <= 0 || N <= 0)
        return 0;
    if ((epi == GEMM_EPI_DGELU || epi == GEMM_EPI_DGELU_BGRAD) && (beta != 0.0f || !aux))
        return fail("gemm: the dGELU epilogues need aux and beta = 0");
    if ((epi == GEMM_EPI_BIAS || epi == GEMM_EPI_GELU_BIAS || epi == GEMM_EPI_DGELU_BGRAD ||
         epi == GEMM_EPI_BGRAD_A) &&
        !bias)
        return fail("gemm: epilogue %d needs a bias pointer", (int)epi);
    if (!(epi == GEMM_EPI_GELU || epi == GEMM_EPI_GELU_BIAS || epi == GEMM_EPI_DGELU ||
          epi == GEMM_EPI_DGELU_BGRAD))
        aux = NULL;
    if (aux && ldaux % 8)
        return fail("gemm: aux row stride %d is not a multiple of 8", ldaux);
    if (epi == GEMM_EPI_NONE || epi == GEMM_EPI_GELU || epi == GEMM_EPI_DGELU)
        bias = NULL;
    /* Row-major C = op(A) op(B) is column-major C^T = op(B)^T op(A)^T: swap the operands. */
    struct gemm_key key;
    memset(&key, 0, sizeof(key));
    key.ta = transb;
    key.tb = transa;
    key.m = N;
    key.n = M;
    key.k = K;
    key.lda = ldb;
    key.ldb = lda;
    key.ldc = ldc;
    key.ldaux = aux ? ldaux : 0;
    key.epi = (int)epi;
    key.align_a = align_log2(B);
    key.align_b = align_log2(A);
    key.align_c = align_log2(C);
    key.align_bias = bias ? align_log2(bias) : -1;
    key.align_aux = aux ? align_log2(aux) : -1;
    struct gemm_plan *p = NULL;
    for (int i = 0; i < g->nplans; i++)
        if (!memcmp(&g->plans[i].key, &key, sizeof(key))) {
            p = &g->plans[i];
            break;
        }
    if (!p) {
        p = make_plan(g, &key, bias, aux);
        if (!p)
            return -1;
    } else {
        if (bias)
            CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(p->desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER,
                                                        &bias, sizeof(bias)));
        if (aux)
            CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(
                p->desc, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER, &aux, sizeof(aux)));
    }
    CUBLAS_CHECK(cublasLtMatmul(g->handle, p->desc, &alpha, B, p->la, A, p->lb, &beta, C, p->lc, C,
                                p->lc, &p->algo, g->ws, g->ws_bytes, st));
    return 0;
}

extern "C" int linear_fwd(struct gemm *g, sl_bf16 *y, sl_bf16 *pre, const sl_bf16 *x,
                          const sl_bf16 *W, const sl_bf16 *b, int N, int IC, int OC, int gelu,
                          cudaStream_t st)
{
    enum gemm_epilogue epi =
        gelu ? (b ? GEMM_EPI_GELU_BIAS : GEMM_EPI_GELU) : (b ? GEMM_EPI_BIAS : GEMM_EPI_NONE);
    return gemm_bf16(g, 0, 1, N, OC, IC, 1.0f, x, IC, W, IC, 0.0f, y, OC, epi, (void *)b,
                     gelu ? pre : NULL, OC, st);
}

extern "C" int linear_bwd_data(struct gemm *g, sl_bf16 *dx, sl_bf16 *dbias_pre, const sl_bf16 *dy,
                               const sl_bf16 *W, const sl_bf16 *pre_gelu, int N, int IC, int OC,
                               int accumulate, cudaStream_t st)
{
    enum gemm_epilogue epi = GEMM_EPI_NONE;
    if (pre_gelu)
        epi = dbias_pre ? GEMM_EPI_DGELU_BGRAD : GEMM_EPI_DGELU;
    return gemm_bf16(g, 0, 0, N, IC, OC, 1.0f, dy, OC, W, IC, accumulate ? 1.0f : 0.0f, dx, IC, epi,
                     dbias_pre, (sl_bf16 *)pre_gelu, IC, st);
}

extern "C" int linear_bwd_weight(struct gemm *g, sl_bf16 *dW, sl_bf16 *db, const sl_bf16 *dy,
                                 const sl_bf16 *x, int N, int IC, int OC, int accumulate,
                                 cudaStream_t st)
{
    return gemm_bf16(g, 1, 0, OC, IC, N, 1.0f, dy, OC, x, IC, accumulate ? 1.0f : 0.0f, dW, IC,
                     db ? GEMM_EPI_BGRAD_A : GEMM_EPI_NONE, db, NULL, 0, st);
}
