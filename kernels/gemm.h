/* bf16 GEMMs through cuBLASLt with fp32 accumulation: one handle and one caller-owned
 * workspace per context, a plan (matmul descriptor, layouts, algorithm) cached per shape,
 * bias / GELU / dGELU / bias-gradient epilogues, and the three GEMMs of a linear layer.
 *
 * Matrices are row-major. A context is not thread-safe and its workspace is shared by all
 * its GEMMs: use one context per stream. Execution errors are fatal (CUBLAS_CHECK); a shape
 * that cuBLASLt has no algorithm for returns -1 with a message in gemm_error().
 *
 * cuBLASLt's GELU epilogues use the tanh approximation, like gelu_fwd in kernels/kernels.h,
 * but round differently; recomputing an activation must use the same path both times.
 */
#ifndef SL_KERNELS_GEMM_H
#define SL_KERNELS_GEMM_H

#include <stddef.h>
#include "kernels/kernels.h"

#ifdef __cplusplus
extern "C" {
#endif

struct gemm;

/* The workspace is device memory the caller keeps for the context's lifetime
 * (GEMM_WORKSPACE_BYTES recommended on Hopper). Returns NULL on failure (see gemm_error). */
#define GEMM_WORKSPACE_BYTES (32u << 20)
struct gemm *gemm_new(void *workspace, size_t workspace_bytes);
void gemm_free(struct gemm *g); /* NULL is a no-op */
int gemm_plan_count(const struct gemm *g);
const char *gemm_error(void); /* last failure of this thread */

enum gemm_epilogue {
    GEMM_EPI_NONE = 0,
    GEMM_EPI_BIAS,        /* C[i,j] = acc + bias[j]                                       */
    GEMM_EPI_GELU,        /* C = gelu(acc); aux (may be NULL) = acc                        */
    GEMM_EPI_GELU_BIAS,   /* C = gelu(acc + bias[j]); aux (may be NULL) = acc + bias[j]    */
    GEMM_EPI_DGELU,       /* C = acc * gelu'(aux[i,j])                                     */
    GEMM_EPI_DGELU_BGRAD, /* as DGELU, and bias[j] = sum_i C[i,j] (written)                */
    GEMM_EPI_BGRAD_A      /* bias[i] = sum_k op(A)[i,k] (written, length M)                */
};

/* C[M,N] = alpha * op(A) . op(B) + beta * C with op(A) M x K, op(B) K x N.
 * A is stored M x K (row stride lda), or K x M when transa (op(A) = A^T); B likewise.
 * bias is bf16 of length N (or M for BGRAD_A); aux is bf16 M x N with row stride ldaux
 * (a multiple of 8). beta must be 0 with the DGELU epilogues. */
int gemm_bf16(struct gemm *g, int transa, int transb, int M, int N, int K, float alpha,
              const sl_bf16 *A, int lda, const sl_bf16 *B, int ldb, float beta, sl_bf16 *C, int ldc,
              enum gemm_epilogue epi, void *bias, sl_bf16 *aux, int ldaux, cudaStream_t st);

/* A linear layer y[N,OC] = x[N,IC] . W^T + b with W[OC,IC] (PyTorch layout), N tokens.
 *
 * linear_fwd: y = x W^T (+ b when b != NULL); when gelu, y = gelu(that) and the
 * pre-activation is written to pre (N x OC; may be NULL).
 * linear_bwd_data: dx = dy . W (dx += when accumulate). When pre_gelu != NULL, this layer's
 * input was gelu(pre_gelu) and dx = (dy . W) * gelu'(pre_gelu) instead, and dbias_pre (may be
 * NULL) gets the column sums of that: the bias gradient of the layer that made pre_gelu
 * (written, not accumulated). accumulate must be 0 then.
 * linear_bwd_weight: dW (+)= dy^T . x; db (may be NULL) = column sums of dy (written, not
 * accumulated: for gradient accumulation over micro-batches use bias_bwd in kernels.h). */
int linear_fwd(struct gemm *g, sl_bf16 *y, sl_bf16 *pre, const sl_bf16 *x, const sl_bf16 *W,
               const sl_bf16 *b, int N, int IC, int OC, int gelu, cudaStream_t st);
int linear_bwd_data(struct gemm *g, sl_bf16 *dx, sl_bf16 *dbias_pre, const sl_bf16 *dy,
                    const sl_bf16 *W, const sl_bf16 *pre_gelu, int N, int IC, int OC,
                    int accumulate, cudaStream_t st);
int linear_bwd_weight(struct gemm *g, sl_bf16 *dW, sl_bf16 *db, const sl_bf16 *dy, const sl_bf16 *x,
                      int N, int IC, int OC, int accumulate, cudaStream_t st);

#ifdef __cplusplus
}
#endif

#endif
