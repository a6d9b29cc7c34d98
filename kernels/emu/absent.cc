/* The kernels the emulation cannot build yet: the GEMMs (kernels/gemm.cu) call cuBLASLt and
 * the embedding backward (kernels/embedding.cu) CUB's device sort, scan and run-length
 * encoding, whose device code only nvcc compiles. Until stand-ins for those libraries exist,
 * each entry point here stops the process with that reason, so that a test reaching one fails
 * loudly instead of linking against nothing.
 */
#include "kernels/cuda_common.h"
#include "kernels/emu/emu.h"
#include "kernels/gemm.h"
#include "kernels/kernels.h"

static void absent(const char *fn, const char *lib) __attribute__((noreturn));
static void absent(const char *fn, const char *lib)
{
    sl_cuda_fatal("cuda-emu", "not emulated: needs a stand-in for the library", lib, fn, 0);
}

extern "C" struct gemm *gemm_new(void *workspace, size_t workspace_bytes)
{
    absent("gemm_new", "cuBLASLt");
}

extern "C" void gemm_free(struct gemm *g)
{
    (void)g;
}

extern "C" int gemm_plan_count(const struct gemm *g)
{
    absent("gemm_plan_count", "cuBLASLt");
}

extern "C" const char *gemm_error(void)
{
    return "cuBLASLt is not emulated";
}

extern "C" int gemm_bf16(struct gemm *g, int transa, int transb, int M, int N, int K, float alpha,
                         const sl_bf16 *A, int lda, const sl_bf16 *B, int ldb, float beta,
                         sl_bf16 *C, int ldc, enum gemm_epilogue epi, void *bias, sl_bf16 *aux,
                         int ldaux, cudaStream_t st)
{
    absent("gemm_bf16", "cuBLASLt");
}

extern "C" int linear_fwd(struct gemm *g, sl_bf16 *y, sl_bf16 *pre, const sl_bf16 *x,
                          const sl_bf16 *W, const sl_bf16 *b, int N, int IC, int OC, int gelu,
                          cudaStream_t st)
{
    absent("linear_fwd", "cuBLASLt");
}

extern "C" int linear_bwd_data(struct gemm *g, sl_bf16 *dx, sl_bf16 *dbias_pre, const sl_bf16 *dy,
                               const sl_bf16 *W, const sl_bf16 *pre_gelu, int N, int IC, int OC,
                               int accumulate, cudaStream_t st)
{
    absent("linear_bwd_data", "cuBLASLt");
}

extern "C" int linear_bwd_weight(struct gemm *g, sl_bf16 *dW, sl_bf16 *db, const sl_bf16 *dy,
                                 const sl_bf16 *x, int N, int IC, int OC, int accumulate,
                                 cudaStream_t st)
{
    absent("linear_bwd_weight", "cuBLASLt");
}

extern "C" void embedding_fwd(sl_bf16 *out, const int32_t *tokens, const sl_bf16 *wte,
                              const sl_bf16 *wpe, int B, int T, int C, int V, cudaStream_t st)
{
    absent("embedding_fwd", "CUB (kernels/embedding.cu)");
}

extern "C" size_t embedding_bwd_scratch_size(int B, int T, int V)
{
    absent("embedding_bwd_scratch_size", "CUB");
}

extern "C" void embedding_bwd(sl_bf16 *dwte, sl_bf16 *dwpe, void *scratch, size_t scratch_bytes,
                              const sl_bf16 *dout, const int32_t *tokens, int B, int T, int C,
                              int V, cudaStream_t st)
{
    absent("embedding_bwd", "CUB");
}
