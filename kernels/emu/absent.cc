/* The kernels the emulation cannot build yet: the embedding backward (kernels/embedding.cu)
 * calls CUB's device sort, scan and run-length encoding, whose device code only nvcc
 * compiles. Until a stand-in for that library exists, each entry point here stops the process
 * with that reason, so that a test reaching one fails loudly instead of linking against nothing.
 */
#include "kernels/cuda_common.h"
#include "kernels/emu/emu.h"
#include "kernels/kernels.h"

static void absent(const char *fn, const char *lib) __attribute__((noreturn));
static void absent(const char *fn, const char *lib)
{
    sl_cuda_fatal("cuda-emu", "not emulated: needs a stand-in for the library", lib, fn, 0);
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
