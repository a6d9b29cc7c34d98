/* The CPU reference of the FP8 linear layers (train/cpu_fp8.h). */
#include "train/cpu_fp8.h"

#include "core/err.h"
#include "core/world.h"
#include "train/cpu_ops.h"
#include "train/train_run.h"

#include <stdlib.h>
#include <string.h>

struct cpu_fp8 {
    struct fp8_scaling s; /* tensor 3 slot + 0: x, + 1: W (E4M3), + 2: dy (E5M2) */
    float *qx, *qw, *qg;  /* the quantised input, weight and output gradient */
    float *dw;            /* the weight gradient of one product, before its scale */
};

/* The format of scaled tensor i: the output gradients in E5M2, the rest in E4M3. */
static enum fp8_format tensor_format(int i)
{
    return i % 3 == 2 ? FP8_E5M2 : FP8_E4M3;
}

static size_t max3(size_t a, size_t b, size_t c)
{
    size_t m = a > b ? a : b;
    return m > c ? m : c;
}

int cpu_fp8_new(struct cpu_fp8 **out, const struct model_config *c, int N, int recipe, long history,
                long margin)
{
    *out = NULL;
    struct cpu_fp8 *f = calloc(1, sizeof(*f));
    if (!f)
        return sl_err_set(SL_ERR_NOMEM, "out of memory for the FP8 linear layers");
    size_t D = (size_t)c->d_model, qkv = (size_t)model_qkv_dim(c), fc = (size_t)model_fc_dim(c);
    size_t qd = (size_t)c->n_heads * c->head_dim, F = (size_t)c->d_ff, n = (size_t)N;
    size_t in = max3(D, qd, F), outc = max3(qkv, D, fc);
    size_t w = max3(qkv * D, D * qd, fc > F ? fc * D : D * F);
    int rc = fp8_scaling_init(&f->s, recipe, 12 * (c->n_layers ? c->n_layers : 1), history, margin);
    if (rc) {
        free(f);
        return rc;
    }
    f->qx = malloc(n * in * sizeof(float));
    f->qw = malloc(w * sizeof(float));
    f->qg = malloc(n * outc * sizeof(float));
    f->dw = malloc(w * sizeof(float));
    if (!f->qx || !f->qw || !f->qg || !f->dw) {
        cpu_fp8_free(f);
        return sl_err_set(SL_ERR_NOMEM, "out of memory for the FP8 linear layers' operands");
    }
    *out = f;
    return 0;
}

int cpu_fp8_for_run(struct cpu_fp8 **out, const struct train_opts *o,
                    const struct parallel_config *par)
{
    *out = NULL;
    if (o->fp8 == TRAIN_FP8_NONE)
        return 0;
    if (par->tp > 1 || par->pp > 1)
        return sl_err_set(SL_ERR_CONFIG,
                          "train.fp8 on the CPU path runs without tensor and pipeline parallel "
                          "(parallel.tensor %d, parallel.pipeline %d)\nhint: data parallel "
                          "(mpirun) only, or train.fp8=none",
                          par->tp, par->pp);
    return cpu_fp8_new(out, &o->mc, (int)(o->micro_batch * o->seq_len), o->fp8, o->fp8_history,
                       o->fp8_margin);
}

void cpu_fp8_free(struct cpu_fp8 *f)
{
    if (!f)
        return;
    fp8_scaling_release(&f->s);
    free(f->qx);
    free(f->qw);
    free(f->qg);
    free(f->dw);
    free(f);
}

void cpu_fp8_freeze(struct cpu_fp8 *f, int frozen)
{
    f->s.frozen = frozen;
}

/* The quantised x and W of product slot into f->qx, f->qw; their scales. */
static void quantize_xw(struct cpu_fp8 *f, int slot, const float *x, const float *W, int N, int IC,
                        int OC, float *sx, float *sw)
{
    size_t nx = (size_t)N * IC, nw = (size_t)OC * IC;
    *sx = fp8_scaling_use(&f->s, 3 * slot, x, nx, FP8_E4M3);
    *sw = fp8_scaling_use(&f->s, 3 * slot + 1, W, nw, FP8_E4M3);
    fp8_quantize(f->qx, x, nx, *sx, FP8_E4M3);
    fp8_quantize(f->qw, W, nw, *sw, FP8_E4M3);
}

void cpu_fp8_linear_fwd(struct cpu_fp8 *f, int slot, float *y, const float *x, const float *W,
                        const float *b, int N, int IC, int OC)
{
    float sx, sw;
    quantize_xw(f, slot, x, W, N, IC, OC, &sx, &sw);
    cpu_linear_fwd(y, f->qx, f->qw, NULL, N, IC, OC);
    /* the dequantising factors are the scales' fp32 reciprocals (cuBLASLt's scale
     * pointers), multiplied in fp32 */
    float k = (1.0f / sx) * (1.0f / sw);
#pragma omp parallel for schedule(static) if ((double)N * OC >= 1048576.0)
    for (int n = 0; n < N; n++) {
        float *r = y + (size_t)n * OC;
        for (int o = 0; o < OC; o++)
            r[o] = r[o] * k + (b ? b[o] : 0.0f);
    }
}

void cpu_fp8_linear_bwd(struct cpu_fp8 *f, int slot, float *dx, float *dW, float *db,
                        const float *dy, const float *x, const float *W, int N, int IC, int OC)
{
    float sx, sw;
    quantize_xw(f, slot, x, W, N, IC, OC, &sx, &sw);
    size_t ng = (size_t)N * OC, nw = (size_t)OC * IC;
    float sg = fp8_scaling_use(&f->s, 3 * slot + 2, dy, ng, FP8_E5M2);
    fp8_quantize(f->qg, dy, ng, sg, FP8_E5M2);
    memset(f->dw, 0, nw * sizeof(float));
    cpu_linear_bwd(dx, f->dw, NULL, f->qg, f->qx, f->qw, N, IC, OC, NULL);
    if (dx) {
        float k = (1.0f / sg) * (1.0f / sw);
        size_t nx = (size_t)N * IC;
#pragma omp parallel for schedule(static) if ((double)nx >= 1048576.0)
        for (size_t i = 0; i < nx; i++)
            dx[i] *= k;
    }
    float k = (1.0f / sg) * (1.0f / sx);
#pragma omp parallel for schedule(static) if ((double)nw >= 1048576.0)
    for (size_t i = 0; i < nw; i++)
        dW[i] += f->dw[i] * k;
    if (db) /* from the unquantised gradient, in row order */
        for (int n = 0; n < N; n++)
            for (int o = 0; o < OC; o++)
                db[o] += dy[(size_t)n * OC + o];
}

int cpu_fp8_step(struct cpu_fp8 *f, const struct sl_world *dp)
{
    if (f->s.recipe != FP8_DELAYED)
        return 0;
    if (dp && dp->size > 1) {
        int rc = sl_world_allreduce_f32(dp, f->s.amax, (size_t)f->s.n, SL_MAX);
        if (rc)
            return rc;
    }
    fp8_scaling_step(&f->s, tensor_format);
    return 0;
}
