/* The cuBLASLt calls kernels/gemm.cu makes, for the emulation (kernels/emu/): handles,
 * matmul descriptors (transposes, epilogue, bias and aux pointers, aux row stride), matrix
 * layouts, preferences (workspace size, minimum alignments), a heuristic that returns one
 * algorithm, and cublasLtMatmul as a plain CPU GEMM: D = epilogue(alpha op(A) op(B) + beta C)
 * in column-major storage, accumulated in fp32 in increasing k, each output rounded once to
 * its type (bf16 to nearest even, as the library stores it). Epilogues: DEFAULT, BIAS, GELU,
 * GELU_AUX, GELU_BIAS, GELU_AUX_BIAS (the tanh approximation; aux is the GELU input, bias
 * added), DGELU, DGELU_BGRAD (D = acc * gelu'(aux); bias = the row sums of D before
 * rounding) and BGRADA / BGRADB (bias = the sums of op(A)'s rows / op(B)'s columns over k).
 * FP8 (CUDA_R_8F_E4M3, CUDA_R_8F_E5M2): D = scale_D (scale_A scale_B alpha op(A) op(B) +
 * scale_C beta C), the scales from their device pointers (1 when unset), AMAX_D the largest
 * |value| before scale_D, an FP8 D rounded to nearest even and saturated; refused as the
 * library refuses: not TN, E5M2 x E5M2, an FP8 input with a non-FP8 partner, an epilogue
 * other than DEFAULT or BIAS, C/D scales or AMAX_D without an FP8 D.
 * Checked as the library would fail: shapes that do not fit together, a leading dimension
 * below the rows, an aux stride that is not a multiple of 8 or below the rows, a missing
 * bias / aux pointer, a pointer outside cudaMalloc memory (the GPU would fault), and a
 * pointer less aligned than the preference promised when the algorithm was chosen.
 * Not modelled: the real kernels' accumulation order, tiling and split-K (results differ in
 * the last bits), their rounding of the GELU and of the bias gradient, the workspace (never
 * touched), the heuristic's choice and its failures for shapes it has no kernel for,
 * batched layouts, other data types (only bf16 and fp32 matrices, fp32 compute and scale),
 * the ReLU epilogues, device-side alpha/beta, and every attribute sluice does not set
 * (setting one returns CUBLAS_STATUS_NOT_SUPPORTED).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <vector>

#include <cublasLt.h>

#include "kernels/emu/emu.h"

struct cublasLtContext {
    int unused;
};

struct lt_desc {
    cublasComputeType_t compute;
    cudaDataType_t scale;
    int32_t ta, tb;   /* cublasOperation_t */
    uint32_t epi;     /* cublasLtEpilogue_t */
    const void *bias; /* CUBLASLT_MATMUL_DESC_BIAS_POINTER */
    void *aux;        /* CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER */
    int64_t aux_ld;   /* CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD, elements */
    /* FP8: CUBLASLT_MATMUL_DESC_{A,B,C,D}_SCALE_POINTER and AMAX_D_POINTER (device fp32) */
    const float *fp8_scale[4];
    float *amax_d;
};

struct lt_layout {
    cudaDataType type;
    uint64_t rows, cols;
    int64_t ld; /* column stride, elements */
};

struct lt_pref {
    uint64_t ws;
    uint32_t align[4]; /* minimum alignments of A, B, C, D in bytes */
};

/* what the heuristic's algorithm records (in cublasLtMatmulAlgo_t's data): a tag, then the
 * alignments of A, B, C, D, bias and aux it was chosen for */
#define ALGO_TAG 0x736c2d656d752d6cull /* "sl-emu-l" */

static lt_desc *D_(cublasLtMatmulDesc_t d)
{
    return reinterpret_cast<lt_desc *>(d);
}

static lt_layout *L_(cublasLtMatrixLayout_t l)
{
    return reinterpret_cast<lt_layout *>(l);
}

static lt_pref *P_(cublasLtMatmulPreference_t p)
{
    return reinterpret_cast<lt_pref *>(p);
}

/* ---- handles, descriptors, layouts, preferences ------------------------------------------ */

extern "C" cublasStatus_t cublasLtCreate(cublasLtHandle_t *h)
{
    if (!h)
        return CUBLAS_STATUS_INVALID_VALUE;
    *h = new cublasLtContext{ 0 };
    return CUBLAS_STATUS_SUCCESS;
}

extern "C" cublasStatus_t cublasLtDestroy(cublasLtHandle_t h)
{
    delete h;
    return CUBLAS_STATUS_SUCCESS;
}

extern "C" cublasStatus_t
cublasLtMatmulDescCreate(cublasLtMatmulDesc_t *d, cublasComputeType_t compute, cudaDataType_t scale)
{
    if (!d)
        return CUBLAS_STATUS_INVALID_VALUE;
    lt_desc *x = new lt_desc{};
    x->compute = compute;
    x->scale = scale;
    x->ta = CUBLAS_OP_N;
    x->tb = CUBLAS_OP_N;
    x->epi = CUBLASLT_EPILOGUE_DEFAULT;
    *d = reinterpret_cast<cublasLtMatmulDesc_t>(x);
    return CUBLAS_STATUS_SUCCESS;
}

extern "C" cublasStatus_t cublasLtMatmulDescDestroy(cublasLtMatmulDesc_t d)
{
    delete D_(d);
    return CUBLAS_STATUS_SUCCESS;
}

/* the value at buf, when it is exactly sizeof(*dst) bytes */
template <class T> static cublasStatus_t set(T *dst, const void *buf, size_t n)
{
    if (!buf || n != sizeof(T))
        return CUBLAS_STATUS_INVALID_VALUE;
    memcpy(dst, buf, sizeof(T));
    return CUBLAS_STATUS_SUCCESS;
}

extern "C" cublasStatus_t cublasLtMatmulDescSetAttribute(cublasLtMatmulDesc_t d,
                                                         cublasLtMatmulDescAttributes_t attr,
                                                         const void *buf, size_t n)
{
    lt_desc *x = D_(d);
    if (!x)
        return CUBLAS_STATUS_NOT_INITIALIZED;
    switch (attr) {
    case CUBLASLT_MATMUL_DESC_TRANSA:
        return set(&x->ta, buf, n);
    case CUBLASLT_MATMUL_DESC_TRANSB:
        return set(&x->tb, buf, n);
    case CUBLASLT_MATMUL_DESC_EPILOGUE:
        return set(&x->epi, buf, n);
    case CUBLASLT_MATMUL_DESC_BIAS_POINTER:
        return set(&x->bias, buf, n);
    case CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER:
        return set(&x->aux, buf, n);
    case CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD:
        return set(&x->aux_ld, buf, n);
    case CUBLASLT_MATMUL_DESC_A_SCALE_POINTER:
        return set(&x->fp8_scale[0], buf, n);
    case CUBLASLT_MATMUL_DESC_B_SCALE_POINTER:
        return set(&x->fp8_scale[1], buf, n);
    case CUBLASLT_MATMUL_DESC_C_SCALE_POINTER:
        return set(&x->fp8_scale[2], buf, n);
    case CUBLASLT_MATMUL_DESC_D_SCALE_POINTER:
        return set(&x->fp8_scale[3], buf, n);
    case CUBLASLT_MATMUL_DESC_AMAX_D_POINTER:
        return set(&x->amax_d, buf, n);
    default:
        return CUBLAS_STATUS_NOT_SUPPORTED;
    }
}

extern "C" cublasStatus_t cublasLtMatrixLayoutCreate(cublasLtMatrixLayout_t *l, cudaDataType type,
                                                     uint64_t rows, uint64_t cols, int64_t ld)
{
    if (!l)
        return CUBLAS_STATUS_INVALID_VALUE;
    *l = reinterpret_cast<cublasLtMatrixLayout_t>(new lt_layout{ type, rows, cols, ld });
    return CUBLAS_STATUS_SUCCESS;
}

extern "C" cublasStatus_t cublasLtMatrixLayoutDestroy(cublasLtMatrixLayout_t l)
{
    delete L_(l);
    return CUBLAS_STATUS_SUCCESS;
}

extern "C" cublasStatus_t cublasLtMatmulPreferenceCreate(cublasLtMatmulPreference_t *p)
{
    if (!p)
        return CUBLAS_STATUS_INVALID_VALUE;
    /* the library's defaults: no workspace, 256-byte alignment assumed */
    *p = reinterpret_cast<cublasLtMatmulPreference_t>(new lt_pref{ 0, { 256, 256, 256, 256 } });
    return CUBLAS_STATUS_SUCCESS;
}

extern "C" cublasStatus_t cublasLtMatmulPreferenceDestroy(cublasLtMatmulPreference_t p)
{
    delete P_(p);
    return CUBLAS_STATUS_SUCCESS;
}

extern "C" cublasStatus_t
cublasLtMatmulPreferenceSetAttribute(cublasLtMatmulPreference_t p,
                                     cublasLtMatmulPreferenceAttributes_t attr, const void *buf,
                                     size_t n)
{
    lt_pref *x = P_(p);
    if (!x)
        return CUBLAS_STATUS_NOT_INITIALIZED;
    switch (attr) {
    case CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES:
        return set(&x->ws, buf, n);
    case CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES:
        return set(&x->align[0], buf, n);
    case CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES:
        return set(&x->align[1], buf, n);
    case CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES:
        return set(&x->align[2], buf, n);
    case CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES:
        return set(&x->align[3], buf, n);
    default:
        return CUBLAS_STATUS_NOT_SUPPORTED;
    }
}

/* ---- the problem: shapes, pointers, epilogue --------------------------------------------- */

static int is_fp8(cudaDataType t)
{
    return t == CUDA_R_8F_E4M3 || t == CUDA_R_8F_E5M2;
}

static size_t elem_size(cudaDataType t)
{
    return t == CUDA_R_16BF ? 2 : t == CUDA_R_32F ? 4 : is_fp8(t) ? 1 : 0;
}

/* the bias vector's type: D's, bf16 where D is FP8 */
static cudaDataType bias_type(const lt_layout *ld)
{
    return is_fp8(ld->type) ? CUDA_R_16BF : ld->type;
}

/* FP8 matmuls as cuBLASLt takes them: both A and B in FP8 (not both E5M2), A transposed and
 * B not (the "TN" layout), D in bf16, fp32 or FP8 (C then in bf16, else D's type), the
 * DEFAULT or BIAS epilogue; the C and D scales and D's amax only with an FP8 D, and no scale
 * at all without FP8 inputs */
static cublasStatus_t fp8_problem(const lt_desc *d, const lt_layout *a, const lt_layout *b,
                                  const lt_layout *c, const lt_layout *dd)
{
    const int fa = is_fp8(a->type), fb = is_fp8(b->type), fd = is_fp8(dd->type);
    if (!fa && !fb && !fd)
        return d->fp8_scale[0] || d->fp8_scale[1] || d->fp8_scale[2] || d->fp8_scale[3] || d->amax_d
                   ? CUBLAS_STATUS_INVALID_VALUE
                   : (c->type == dd->type ? CUBLAS_STATUS_SUCCESS : CUBLAS_STATUS_NOT_SUPPORTED);
    if (!fa || !fb || (a->type == CUDA_R_8F_E5M2 && b->type == CUDA_R_8F_E5M2))
        return CUBLAS_STATUS_NOT_SUPPORTED;
    if (d->ta != CUBLAS_OP_T || d->tb != CUBLAS_OP_N)
        return CUBLAS_STATUS_NOT_SUPPORTED;
    if (d->epi != CUBLASLT_EPILOGUE_DEFAULT && d->epi != CUBLASLT_EPILOGUE_BIAS)
        return CUBLAS_STATUS_NOT_SUPPORTED;
    if (c->type != (fd ? CUDA_R_16BF : dd->type))
        return CUBLAS_STATUS_NOT_SUPPORTED;
    if (!fd && (d->fp8_scale[2] || d->fp8_scale[3] || d->amax_d))
        return CUBLAS_STATUS_INVALID_VALUE;
    return CUBLAS_STATUS_SUCCESS;
}

static int has_bias(uint32_t e)
{
    return e == CUBLASLT_EPILOGUE_BIAS || e == CUBLASLT_EPILOGUE_GELU_BIAS ||
           e == CUBLASLT_EPILOGUE_GELU_AUX_BIAS || e == CUBLASLT_EPILOGUE_DGELU_BGRAD ||
           e == CUBLASLT_EPILOGUE_BGRADA || e == CUBLASLT_EPILOGUE_BGRADB;
}

static int has_aux(uint32_t e)
{
    return e == CUBLASLT_EPILOGUE_GELU_AUX || e == CUBLASLT_EPILOGUE_GELU_AUX_BIAS ||
           e == CUBLASLT_EPILOGUE_DGELU || e == CUBLASLT_EPILOGUE_DGELU_BGRAD;
}

static int known_epilogue(uint32_t e)
{
    return e == CUBLASLT_EPILOGUE_DEFAULT || e == CUBLASLT_EPILOGUE_GELU ||
           e == CUBLASLT_EPILOGUE_GELU_BIAS || has_bias(e) || has_aux(e);
}

/* the bytes a column-major rows x cols matrix with column stride ld spans */
static size_t span(const lt_layout *l, size_t rows, size_t cols, int64_t ld)
{
    return rows && cols ? ((cols - 1) * (size_t)ld + rows) * elem_size(l->type) : 0;
}

/* m, n, k of a matmul whose descriptor and layouts fit together, or a failure status */
static cublasStatus_t problem(const lt_desc *d, const lt_layout *a, const lt_layout *b,
                              const lt_layout *c, const lt_layout *dd, uint64_t mnk[3])
{
    if (!d || !a || !b || !c || !dd)
        return CUBLAS_STATUS_INVALID_VALUE;
    if (d->compute != CUBLAS_COMPUTE_32F || d->scale != CUDA_R_32F || !known_epilogue(d->epi))
        return CUBLAS_STATUS_NOT_SUPPORTED;
    if (!elem_size(a->type) || !elem_size(b->type) || !elem_size(dd->type) || !elem_size(c->type))
        return CUBLAS_STATUS_NOT_SUPPORTED;
    cublasStatus_t f8 = fp8_problem(d, a, b, c, dd);
    if (f8 != CUBLAS_STATUS_SUCCESS)
        return f8;
    const int ta = d->ta != CUBLAS_OP_N, tb = d->tb != CUBLAS_OP_N;
    const uint64_t m = dd->rows, n = dd->cols, k = ta ? a->rows : a->cols;
    if ((ta ? a->cols : a->rows) != m || (tb ? b->cols : b->rows) != k ||
        (tb ? b->rows : b->cols) != n || c->rows != m || c->cols != n)
        return CUBLAS_STATUS_INVALID_VALUE;
    if (a->ld < (int64_t)a->rows || b->ld < (int64_t)b->rows || c->ld < (int64_t)m ||
        dd->ld < (int64_t)m || a->ld < 1 || b->ld < 1 || dd->ld < 1)
        return CUBLAS_STATUS_INVALID_VALUE;
    if (has_bias(d->epi) && !d->bias)
        return CUBLAS_STATUS_INVALID_VALUE;
    if (has_aux(d->epi) && (!d->aux || d->aux_ld % 8 || d->aux_ld < (int64_t)m))
        return CUBLAS_STATUS_INVALID_VALUE;
    mnk[0] = m;
    mnk[1] = n;
    mnk[2] = k;
    return CUBLAS_STATUS_SUCCESS;
}

/* the largest power of two dividing the address, up to 256 */
static uint64_t alignment(const void *p)
{
    uint64_t a = 1;
    while (a < 256 && !((uintptr_t)p & a))
        a <<= 1;
    return a;
}

extern "C" cublasStatus_t
cublasLtMatmulAlgoGetHeuristic(cublasLtHandle_t h, cublasLtMatmulDesc_t desc,
                               cublasLtMatrixLayout_t A, cublasLtMatrixLayout_t B,
                               cublasLtMatrixLayout_t C, cublasLtMatrixLayout_t Dl,
                               cublasLtMatmulPreference_t pref, int requested,
                               cublasLtMatmulHeuristicResult_t res[], int *count)
{
    if (!h || !pref || !res || !count || requested < 1)
        return CUBLAS_STATUS_INVALID_VALUE;
    uint64_t mnk[3];
    cublasStatus_t s = problem(D_(desc), L_(A), L_(B), L_(C), L_(Dl), mnk);
    *count = 0;
    if (s != CUBLAS_STATUS_SUCCESS)
        return s;
    const lt_pref *p = P_(pref);
    const lt_desc *d = D_(desc);
    memset(&res[0], 0, sizeof(res[0]));
    uint64_t *a = res[0].algo.data;
    a[0] = ALGO_TAG;
    for (int i = 0; i < 4; i++)
        a[1 + i] = p->align[i];
    a[5] = has_bias(d->epi) ? alignment(d->bias) : 1;
    a[6] = has_aux(d->epi) ? alignment(d->aux) : 1;
    res[0].workspaceSize = 0;
    res[0].state = CUBLAS_STATUS_SUCCESS;
    res[0].wavesCount = 1.0f;
    *count = 1;
    return CUBLAS_STATUS_SUCCESS;
}

/* ---- the GEMM ----------------------------------------------------------------------------- */

/* An FP8 format's mantissa bits, exponent bias and largest finite value (E4M3: no
 * infinities, S.1111.111 is NaN; E5M2: IEEE-like, exponent field 31 for inf and NaN). */
struct fp8_fmt {
    int mant, bias;
    float max;
};

static fp8_fmt fp8_of(cudaDataType t)
{
    return t == CUDA_R_8F_E4M3 ? fp8_fmt{ 3, 7, 448.0f } : fp8_fmt{ 2, 15, 57344.0f };
}

static float fp8_decode(uint8_t c, cudaDataType t)
{
    const fp8_fmt f = fp8_of(t);
    const int e = (c & 0x7f) >> f.mant, m = c & ((1 << f.mant) - 1);
    float v;
    if (t == CUDA_R_8F_E4M3 && e == 15 && m == 7)
        v = NAN;
    else if (t == CUDA_R_8F_E5M2 && e == 31)
        v = m ? NAN : INFINITY;
    else
        v = e ? ldexpf(1.0f + (float)m / (float)(1 << f.mant), e - f.bias)
              : ldexpf((float)m / (float)(1 << f.mant), 1 - f.bias);
    return c & 0x80 ? -v : v;
}

/* v to the format: to nearest, ties to even, saturating at the largest finite value (NaN to
 * NaN) */
static uint8_t fp8_encode(float v, cudaDataType t)
{
    const fp8_fmt f = fp8_of(t);
    const uint8_t s = signbit(v) ? 0x80 : 0;
    if (isnan(v))
        return 0x7f; /* both formats' NaN */
    float a = fabsf(v);
    if (a >= f.max)
        a = f.max;
    if (a == 0.0f)
        return s;
    int e;
    frexpf(a, &e);
    e = e - 1 < 1 - f.bias ? 1 - f.bias : e - 1;
    /* the value in units of the binade's spacing, rounded to even (exact: a power of two) */
    float q = rintf(ldexpf(a, f.mant - e));
    if (ldexpf(q, e - f.mant) > f.max)
        q = ldexpf(f.max, f.mant - e);
    int bits; /* (exponent field << mant) + mantissa: q counts spacings from the binade's 0 */
    if (e == 1 - f.bias && q < (float)(1 << f.mant))
        bits = (int)q; /* subnormal */
    else
        bits = ((e + f.bias) << f.mant) + (int)q - (1 << f.mant); /* q may carry a binade up */
    return (uint8_t)(s | bits);
}

static float load(const void *p, cudaDataType t, size_t i)
{
    if (t == CUDA_R_16BF)
        return __bfloat162float(static_cast<const __nv_bfloat16 *>(p)[i]);
    if (is_fp8(t))
        return fp8_decode(static_cast<const uint8_t *>(p)[i], t);
    return static_cast<const float *>(p)[i];
}

static void store(void *p, cudaDataType t, size_t i, float v)
{
    if (t == CUDA_R_16BF)
        static_cast<__nv_bfloat16 *>(p)[i] = __float2bfloat16(v); /* to nearest even */
    else if (is_fp8(t))
        static_cast<uint8_t *>(p)[i] = fp8_encode(v, t);
    else
        static_cast<float *>(p)[i] = v;
}

/* the tanh approximation of GELU and its derivative */
#define GELU_K 0.7978845608028654f /* sqrt(2 / pi) */
#define GELU_C 0.044715f

static float gelu(float x)
{
    return 0.5f * x * (1.0f + tanhf(GELU_K * (x + GELU_C * x * x * x)));
}

static float gelu_grad(float x)
{
    const float t = tanhf(GELU_K * (x + GELU_C * x * x * x));
    return 0.5f * (1.0f + t) + 0.5f * x * (1.0f - t * t) * GELU_K * (1.0f + 3.0f * GELU_C * x * x);
}

/* CUBLAS_STATUS_SUCCESS when every pointer lies in device memory and is as aligned as the
 * algorithm was chosen for */
static cublasStatus_t check_pointers(const lt_desc *d, const lt_layout *la, const void *A,
                                     const lt_layout *lb, const void *B, const lt_layout *lc,
                                     const void *C, int reads_c, const lt_layout *ld, void *D,
                                     const uint64_t mnk[3], const cublasLtMatmulAlgo_t *algo)
{
    const size_t m = mnk[0], n = mnk[1];
    const size_t bias_n = d->epi == CUBLASLT_EPILOGUE_BGRADB ? n : m;
    const void *p[6] = { A,
                         B,
                         reads_c ? C : NULL,
                         D,
                         has_bias(d->epi) ? d->bias : NULL,
                         has_aux(d->epi) ? d->aux : NULL };
    const size_t bytes[6] = { span(la, la->rows, la->cols, la->ld),
                              span(lb, lb->rows, lb->cols, lb->ld),
                              span(lc, m, n, lc->ld),
                              span(ld, m, n, ld->ld),
                              bias_n * elem_size(bias_type(ld)),
                              span(ld, m, n, d->aux_ld) };
    for (int i = 0; i < 6; i++) {
        if (!p[i] || !bytes[i])
            continue;
        if (!sl_emu_is_device(p[i], bytes[i]))
            return CUBLAS_STATUS_INVALID_VALUE;
        if (algo && algo->data[0] == ALGO_TAG && alignment(p[i]) < algo->data[1 + i])
            return CUBLAS_STATUS_INVALID_VALUE;
    }
    return CUBLAS_STATUS_SUCCESS;
}

/* the sums over k of op(A)'s rows (BGRADA, m of them) or op(B)'s columns (BGRADB, n) */
static void bias_grad_ab(const lt_desc *d, const std::vector<float> &at, const lt_layout *lb,
                         const void *B, const uint64_t mnk[3], void *bias, cudaDataType t)
{
    const size_t m = mnk[0], n = mnk[1], k = mnk[2];
    const int tb = d->tb != CUBLAS_OP_N;
    if (d->epi == CUBLASLT_EPILOGUE_BGRADA) {
        for (size_t r = 0; r < m; r++) {
            float s = 0.0f;
            for (size_t kk = 0; kk < k; kk++)
                s += at[kk * m + r];
            store(bias, t, r, s);
        }
        return;
    }
    for (size_t c = 0; c < n; c++) {
        float s = 0.0f;
        for (size_t kk = 0; kk < k; kk++)
            s += load(B, lb->type, tb ? c + kk * lb->ld : kk + c * lb->ld);
        store(bias, t, c, s);
    }
}

/* D's column c from acc (alpha op(A) op(B)'s column, unscaled), with beta C and the epilogue;
 * DGELU_BGRAD's bias sums are added to bsum; FP8: alpha and beta hold the A, B and C scales,
 * *amax gets the largest |value| before D's scale sd */
static void epilogue(const lt_desc *d, float *acc, size_t m, size_t c, float alpha, float beta,
                     const lt_layout *lc, const void *C, const lt_layout *ld, void *D, float *bsum,
                     float sd, float *amax)
{
    const cudaDataType t = ld->type;
    const uint32_t e = d->epi;
    const int bias = has_bias(e) && e != CUBLASLT_EPILOGUE_BGRADA &&
                     e != CUBLASLT_EPILOGUE_BGRADB && e != CUBLASLT_EPILOGUE_DGELU_BGRAD;
    for (size_t r = 0; r < m; r++) {
        float v = alpha * acc[r];
        if (beta != 0.0f) /* C is not read when beta is 0, as the library does */
            v += beta * load(C, lc->type, r + c * lc->ld);
        if (bias)
            v += load(d->bias, bias_type(ld), r);
        const size_t ai = r + c * (size_t)d->aux_ld;
        if (e == CUBLASLT_EPILOGUE_GELU || e == CUBLASLT_EPILOGUE_GELU_BIAS ||
            e == CUBLASLT_EPILOGUE_GELU_AUX || e == CUBLASLT_EPILOGUE_GELU_AUX_BIAS) {
            if (has_aux(e))
                store(d->aux, t, ai, v);
            v = gelu(v);
        } else if (e == CUBLASLT_EPILOGUE_DGELU || e == CUBLASLT_EPILOGUE_DGELU_BGRAD) {
            v *= gelu_grad(load(d->aux, t, ai));
            if (e == CUBLASLT_EPILOGUE_DGELU_BGRAD)
                bsum[r] += v;
        }
        if (is_fp8(t)) {
            *amax = fabsf(v) > *amax || isnan(v) ? fabsf(v) : *amax;
            v *= sd;
        }
        store(D, t, r + c * ld->ld, v);
    }
}

extern "C" cublasStatus_t
cublasLtMatmul(cublasLtHandle_t h, cublasLtMatmulDesc_t desc, const void *alpha_p, const void *A,
               cublasLtMatrixLayout_t Al, const void *B, cublasLtMatrixLayout_t Bl,
               const void *beta_p, const void *C, cublasLtMatrixLayout_t Cl, void *D,
               cublasLtMatrixLayout_t Dl, const cublasLtMatmulAlgo_t *algo, void *ws,
               size_t ws_bytes, cudaStream_t st)
{
    (void)st; /* synchronous, as every stream of the emulation */
    if (!h || !alpha_p || !beta_p || !A || !B || !D)
        return CUBLAS_STATUS_INVALID_VALUE;
    const lt_desc *d = D_(desc);
    const lt_layout *la = L_(Al), *lb = L_(Bl), *lc = L_(Cl), *ld = L_(Dl);
    uint64_t mnk[3];
    cublasStatus_t s = problem(d, la, lb, lc, ld, mnk);
    if (s != CUBLAS_STATUS_SUCCESS)
        return s;
    const float alpha = *static_cast<const float *>(alpha_p);
    const float beta = *static_cast<const float *>(beta_p);
    if (beta != 0.0f && !C)
        return CUBLAS_STATUS_INVALID_VALUE;
    if (ws_bytes && !sl_emu_is_device(ws, ws_bytes))
        return CUBLAS_STATUS_INVALID_VALUE;
    s = check_pointers(d, la, A, lb, B, lc, C, beta != 0.0f, ld, D, mnk, algo);
    if (s != CUBLAS_STATUS_SUCCESS)
        return s;
    /* FP8: D = sd (sa sb alpha op(A) op(B) + sc beta C), amax before sd; an unset scale is 1 */
    float sc[4] = { 1.0f, 1.0f, 1.0f, 1.0f }, amax = 0.0f;
    for (int i = 0; i < 4; i++)
        if (d->fp8_scale[i]) {
            if (!sl_emu_is_device(d->fp8_scale[i], sizeof(float)))
                return CUBLAS_STATUS_INVALID_VALUE;
            sc[i] = *d->fp8_scale[i];
        }
    if (d->amax_d && !sl_emu_is_device(d->amax_d, sizeof(float)))
        return CUBLAS_STATUS_INVALID_VALUE;
    const size_t m = mnk[0], n = mnk[1], k = mnk[2];
    if (d->amax_d)
        *d->amax_d = 0.0f;
    if (!m || !n)
        return CUBLAS_STATUS_SUCCESS;
    const int ta = d->ta != CUBLAS_OP_N, tb = d->tb != CUBLAS_OP_N;
    /* op(A) as fp32, k rows of m: at[kk * m + r] = op(A)[r, kk] */
    std::vector<float> at(k * m), acc(m), bsum(m, 0.0f);
    for (size_t kk = 0; kk < k; kk++)
        for (size_t r = 0; r < m; r++)
            at[kk * m + r] = load(A, la->type, ta ? kk + r * la->ld : r + kk * la->ld);
    if (d->epi == CUBLASLT_EPILOGUE_BGRADA || d->epi == CUBLASLT_EPILOGUE_BGRADB)
        bias_grad_ab(d, at, lb, B, mnk, const_cast<void *>(d->bias), ld->type);
    for (size_t c = 0; c < n; c++) {
        float *x = acc.data();
        std::fill(acc.begin(), acc.end(), 0.0f);
        for (size_t kk = 0; kk < k; kk++) {
            const float b = load(B, lb->type, tb ? c + kk * lb->ld : kk + c * lb->ld);
            const float *a = at.data() + kk * m;
            /* each output sums in increasing k: vectorised across the rows only */
#pragma omp simd
            for (size_t r = 0; r < m; r++)
                x[r] += a[r] * b;
        }
        epilogue(d, x, m, c, alpha * sc[0] * sc[1], beta * sc[2], lc, C, ld, D, bsum.data(), sc[3],
                 &amax);
    }
    if (d->amax_d)
        *d->amax_d = amax;
    if (d->epi == CUBLASLT_EPILOGUE_DGELU_BGRAD)
        for (size_t r = 0; r < m; r++)
            store(const_cast<void *>(d->bias), ld->type, r, bsum[r]);
    return CUBLAS_STATUS_SUCCESS;
}
