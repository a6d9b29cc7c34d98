/* CUDA kernels the GPU trainer needs beyond kernels/kernels.h: the exact (erf) GELU of
 * NeMo/Megatron GPT-3 configs (kernels/ has the tanh form only).
 *
 * Same conventions as kernels/kernels.h: bf16 in and out, fp32 math, enqueued on `st`,
 * no allocation, no synchronisation, launch errors fatal.
 */
#ifndef SL_TRAIN_GPU_OPS_H
#define SL_TRAIN_GPU_OPS_H

#include "kernels/kernels.h"

#ifdef __cplusplus
extern "C" {
#endif

/* out = 0.5 x (1 + erf(x / sqrt 2)); out may equal x. */
void gelu_erf_fwd(sl_bf16 *out, const sl_bf16 *x, size_t n, cudaStream_t st);
/* dx = dout * (Phi(x) + x phi(x)); dx may equal dout. */
void gelu_erf_bwd(sl_bf16 *dx, const sl_bf16 *dout, const sl_bf16 *x, size_t n, cudaStream_t st);

#ifdef __cplusplus
}
#endif

#endif
