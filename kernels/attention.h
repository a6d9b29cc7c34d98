/* Causal self-attention with grouped-query heads, bf16 in and out, fp32 accumulation:
 * our own flash-attention kernels, cuDNN's fused flash attention (backend graph API, loaded
 * at run time), and a small dispatcher that picks one at run time.
 *
 * Layouts (row-major, N = B*T tokens, G = Hq / Hkv query heads per key/value head):
 *   qkv  [B, T, Hq + 2*Hkv, D]  q heads, then k heads, then v heads (the fused projection)
 *   out  [B, T, Hq, D]
 *   lse  [B, Hq, T] fp32        log-sum-exp of each query's scaled scores (natural log)
 *   dout like out; dqkv like qkv (overwritten, all three parts)
 * Query head h attends with key/value head h / G. scale is usually 1/sqrt(D).
 * Both backends write the same lse, so a forward of one can feed a backward of the other.
 */
#ifndef SL_KERNELS_ATTENTION_H
#define SL_KERNELS_ATTENTION_H

#include <stddef.h>
#include "kernels/kernels.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- our kernels: tensor-core (mma.sync) flash attention --------------------------- */

/* 1 when the kernels handle head dim D (16, 32, 64, 128). */
int attn_own_supported(int D);
size_t attn_own_bwd_workspace_size(int B, int T, int Hq);
/* Return 0, or -1 when D or the heads are not supported. Deterministic: the backward
 * computes dK/dV per key block and dQ per query block, no atomics. */
int attn_own_fwd(sl_bf16 *out, float *lse, const sl_bf16 *qkv, int B, int T, int Hq, int Hkv, int D,
                 float scale, cudaStream_t st);
int attn_own_bwd(sl_bf16 *dqkv, void *workspace, const sl_bf16 *dout, const sl_bf16 *qkv,
                 const sl_bf16 *out, const float *lse, int B, int T, int Hq, int Hkv, int D,
                 float scale, cudaStream_t st);
/* The variable-length (ragged) form, for packed documents (train/docmask.h): dstart[B*T]
 * (device, int32) gives each query the first key of its document; query t of sample b
 * attends to keys dstart[b*T+t]..t. The starts must not decrease along a sample and
 * dstart[b*T+t] <= t. Key tiles before a query tile's first document are skipped; NULL
 * is the plain causal form. */
int attn_own_fwd_docs(sl_bf16 *out, float *lse, const sl_bf16 *qkv, const int *dstart, int B, int T,
                      int Hq, int Hkv, int D, float scale, cudaStream_t st);
int attn_own_bwd_docs(sl_bf16 *dqkv, void *workspace, const sl_bf16 *dout, const sl_bf16 *qkv,
                      const sl_bf16 *out, const float *lse, const int *dstart, int B, int T, int Hq,
                      int Hkv, int D, float scale, cudaStream_t st);

/* ---- cuDNN fused flash attention ---------------------------------------------------- */

struct attn_cudnn;
/* Load libcudnn.so.9 (SLUICE_CUDNN_LIB names another path), create a handle on the current
 * device. deterministic = 1 asks for the backward without atomic dQ accumulation (falls back
 * to the default when cuDNN has no such engine; attn_cudnn_is_deterministic tells). Returns
 * NULL with a message in attn_cudnn_error() when cuDNN is absent, too old or was not
 * compiled in. */
struct attn_cudnn *attn_cudnn_new(int deterministic);
void attn_cudnn_free(struct attn_cudnn *a);
const char *attn_cudnn_error(void);
/* cuDNN's run-time version (e.g. 91900), 0 when not loaded. */
long attn_cudnn_version(void);
/* Build (or find) the forward and backward plans for a shape; report the workspace each
 * needs. Returns 0, or -1 when cuDNN cannot run this shape (message in attn_cudnn_error). */
int attn_cudnn_prepare(struct attn_cudnn *a, int B, int T, int Hq, int Hkv, int D,
                       size_t *fwd_workspace, size_t *bwd_workspace);
int attn_cudnn_is_deterministic(struct attn_cudnn *a, int B, int T, int Hq, int Hkv, int D);
int attn_cudnn_fwd(struct attn_cudnn *a, sl_bf16 *out, float *lse, const sl_bf16 *qkv, int B, int T,
                   int Hq, int Hkv, int D, float scale, void *workspace, size_t workspace_bytes,
                   cudaStream_t st);
int attn_cudnn_bwd(struct attn_cudnn *a, sl_bf16 *dqkv, const sl_bf16 *dout, const sl_bf16 *qkv,
                   const sl_bf16 *out, const float *lse, int B, int T, int Hq, int Hkv, int D,
                   float scale, void *workspace, size_t workspace_bytes, cudaStream_t st);

/* ---- run-time choice ---------------------------------------------------------------- */

enum attn_backend { ATTN_AUTO = 0, ATTN_OWN = 1, ATTN_CUDNN = 2 };

struct attention;
/* ATTN_AUTO: cuDNN where it loads and supports the shape, our kernels elsewhere.
 * ATTN_CUDNN: cuDNN or fail (NULL here, -1 from attention_prepare). */
struct attention *attention_new(enum attn_backend backend);
void attention_free(struct attention *a);
/* cuDNN's backward: 0 (the default) takes the engine with the fp32 dQ accumulator (atomics:
 * not bit-reproducible, usually faster, and no B*H*T^2*2-byte workspace); 1 asks for the
 * deterministic engine first and falls back to the other when no engine takes the shape.
 * Call before attention_prepare. Our own kernels are deterministic either way. */
void attention_set_deterministic(struct attention *a, int deterministic);
/* 1 when the backward of this shape is bit-reproducible (our kernels, or cuDNN's
 * deterministic engine), after attention_prepare. */
int attention_is_deterministic(struct attention *a, int B, int T, int Hq, int Hkv, int D);
/* Choose the backend for a shape and report the workspace forward and backward need
 * (the larger of the two). Call before the first attention_fwd of a shape. */
int attention_prepare(struct attention *a, int B, int T, int Hq, int Hkv, int D,
                      size_t *workspace_bytes);
/* The backend attention_fwd/bwd use for this shape (after attention_prepare). */
enum attn_backend attention_backend(struct attention *a, int B, int T, int Hq, int Hkv, int D);
/* The document starts (attn_own_fwd_docs) of the calls that follow, or NULL (causal over
 * the whole sample). With starts, attention_fwd and attention_bwd run our kernels (the
 * workspace must hold attn_own_bwd_workspace_size) and fail with ATTN_CUDNN. */
void attention_set_docs(struct attention *a, const int *dstart);
int attention_fwd(struct attention *a, sl_bf16 *out, float *lse, const sl_bf16 *qkv, int B, int T,
                  int Hq, int Hkv, int D, float scale, void *workspace, size_t workspace_bytes,
                  cudaStream_t st);
int attention_bwd(struct attention *a, sl_bf16 *dqkv, const sl_bf16 *dout, const sl_bf16 *qkv,
                  const sl_bf16 *out, const float *lse, int B, int T, int Hq, int Hkv, int D,
                  float scale, void *workspace, size_t workspace_bytes, cudaStream_t st);

#ifdef __cplusplus
}
#endif

#endif
