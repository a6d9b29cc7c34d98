/* The CUDA trainer's fused GEMM epilogues: which of the activation and bias-gradient kernels
 * cuBLASLt's epilogues replace (kernels/gemm.h), from SLUICE_GPU_FUSE and the model, and the
 * weight-gradient GEMM that writes a linear layer's bias gradient with its epilogue.
 */
#include "train/gpu_internal.h"

#include "core/err.h"
#include "core/log.h"

#include <stdlib.h>
#include <string.h>

static const struct {
    const char *name;
    unsigned bit;
} fusions[] = { { "gelu", GPU_FUSE_GELU },
                { "dgelu", GPU_FUSE_DGELU },
                { "bgrad", GPU_FUSE_BGRAD } };
#define NFUSIONS (sizeof(fusions) / sizeof(fusions[0]))
#define FUSE_ALL (GPU_FUSE_GELU | GPU_FUSE_DGELU | GPU_FUSE_BGRAD)

/* the fusions a SLUICE_GPU_FUSE value asks for: "all", "none" or a comma list of names */
static int parse(const char *v, unsigned *out)
{
    if (!strcmp(v, "all") || !*v) {
        *out = FUSE_ALL;
        return 0;
    }
    *out = 0;
    if (!strcmp(v, "none"))
        return 0;
    for (const char *p = v; *p;) {
        size_t n = strcspn(p, ",");
        size_t i = 0;
        while (i < NFUSIONS && !(strlen(fusions[i].name) == n && !strncmp(p, fusions[i].name, n)))
            i++;
        if (i == NFUSIONS)
            return sl_err_set(SL_ERR_CONFIG,
                              "SLUICE_GPU_FUSE='%s': unknown fusion '%.*s'\nhint: all, none, or a "
                              "comma list of gelu, dgelu, bgrad",
                              v, (int)n, p);
        *out |= fusions[i].bit;
        p += n + (p[n] == ',');
    }
    return 0;
}

int gpu_fuse_setup(struct gt *t)
{
    const char *v = getenv("SLUICE_GPU_FUSE");
    unsigned want = FUSE_ALL;
    int rc = v ? parse(v, &want) : 0;
    if (rc)
        return rc;
    /* cuBLASLt's GELU is the tanh approximation, and its aux matrix (fc, the GELU's input)
     * needs a row stride that is a multiple of 8 elements */
    int gelu = t->a->mc.act == MODEL_GELU_TANH && t->FC == t->F && t->F % 8 == 0;
    if (!gelu)
        want &= ~(unsigned)(GPU_FUSE_GELU | GPU_FUSE_DGELU);
    /* selective recomputation rebuilds the activation with gelu_fwd from fc: the forward
     * must have made it the same way (the epilogue rounds differently) */
    if (t->a->recompute == GPU_RECOMPUTE_SELECTIVE)
        want &= ~(unsigned)GPU_FUSE_GELU;
    t->fuse = want;
    if (t->rank == 0)
        sl_info("GEMM epilogues (SLUICE_GPU_FUSE=%s): GELU forward %s, dGELU with bias gradient "
                "%s, bias gradients %s",
                v ? v : "all", want & GPU_FUSE_GELU ? "fused" : "separate",
                want & GPU_FUSE_DGELU ? "fused" : "separate",
                want & GPU_FUSE_BGRAD ? "fused" : "separate");
    return 0;
}

/* dW += dy^T x; db = the column sums of dy (bid >= 0), written by the GEMM's epilogue or by
 * bias_bwd. Either writes into a gradient that is zero: the buckets are zeroed before each
 * micro-batch's backward (gpu_chunk_bwd, gpu_z3_grad) and a bias has one use in it. */
void gpu_bwd_weight(struct gt *t, const sl_bf16 *dy, const sl_bf16 *x, int wid, int bid, int IC,
                    int OC)
{
    int fused = bid >= 0 && (t->fuse & GPU_FUSE_BGRAD);
    GEMM_CHECK(linear_bwd_weight(t->gemm, gpu_grad(t, wid), fused ? gpu_grad(t, bid) : NULL, dy, x,
                                 t->N, IC, OC, 1, t->st));
    if (bid >= 0 && !fused)
        bias_bwd(gpu_grad(t, bid), t->norm_scratch, dy, t->N, OC, t->st);
}
