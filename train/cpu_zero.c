/* The ZeRO stages of the CPU backend (train/cpu_internal.h), over the data-parallel group.
 *
 * ZeRO-1 (optim.zero=1): every tensor of a rank's shard is cut into dp pieces; a rank keeps
 * the AdamW moments of its pieces, the gradient slab is reduce-scattered once per step and
 * the parameters all-gathered after the update.
 * ZeRO-2: the gradient is sharded too. The models write each layer's gradient into one
 * layer-sized buffer (and the tensors outside the layers into a buffer of their own, whole
 * for the micro-batch); as soon as a layer's backward is done its gradient is
 * reduce-scattered, tensor by tensor with ZeRO-1's pieces, and the rank's piece added to
 * its shard gradient (gshard): summed over the ranks per micro-batch, then over the
 * micro-batches, as DeepSpeed's ZeRO-2 does.
 * ZeRO-3: the parameters are sharded too (pshard). A layer's parameters are all-gathered
 * into a layer-sized buffer before its forward and again before its backward; the tensors
 * outside the layers are gathered once per step (a tied embedding is used at both ends).
 */
#include "train/cpu_internal.h"

#include "core/alloc.h"
#include "core/err.h"

#include <stdlib.h>
#include <string.h>

static size_t aligned(size_t n)
{
    return (n + MODEL_ALIGN - 1) / MODEL_ALIGN * MODEL_ALIGN;
}

/* The pieces: tensor i's n elements cut at n k / dp for data-parallel rank k. */
static void zero_layout(struct cpu_trainer *t)
{
    int D = t->par.dp, n = t->l->n;
    t->zb = sl_xcalloc((size_t)n * (size_t)(D + 1), sizeof(size_t));
    t->zoff = sl_xcalloc((size_t)n + 1, sizeof(size_t));
    size_t pos = 0;
    for (int i = 0; i < n; i++) {
        size_t *b = t->zb + (size_t)i * (size_t)(D + 1);
        uint64_t numel = t->l->t[i].numel;
        for (int k = 0; k <= D; k++)
            b[k] = (size_t)(numel * (uint64_t)k / (uint64_t)D);
        t->zoff[i] = pos;
        pos += b[t->at.dp + 1] - b[t->at.dp];
    }
    t->zoff[n] = t->zn = pos;
}

const size_t *zero_bounds(const struct cpu_trainer *t, int i)
{
    return t->zb + (size_t)i * (size_t)(t->par.dp + 1);
}

void zero_piece(const struct cpu_trainer *t, int i, size_t *lo, size_t *n)
{
    if (!t->zero) {
        *lo = 0;
        *n = t->l->t[i].numel;
        return;
    }
    const size_t *b = zero_bounds(t, i);
    *lo = b[t->at.dp];
    *n = b[t->at.dp + 1] - b[t->at.dp];
}

float *zero_grad_piece(const struct cpu_trainer *t, int i)
{
    size_t lo, n;
    zero_piece(t, i, &lo, &n);
    return t->zero >= 2 ? t->gshard + t->zoff[i] : t->grads + t->l->t[i].offset + lo;
}

float *zero_param_piece(const struct cpu_trainer *t, int i)
{
    size_t lo, n;
    zero_piece(t, i, &lo, &n);
    return t->zero == 3 ? t->pshard + t->zoff[i] : t->params + t->l->t[i].offset + lo;
}

/* Tensor i laid out whole at x: this rank's parameters put in its piece, every piece then
 * all-gathered (ZeRO-3). */
static int gather_tensor(struct cpu_trainer *t, int i, float *x)
{
    size_t lo, n;
    zero_piece(t, i, &lo, &n);
    if (!t->l->t[i].numel)
        return 0;
    memcpy(x + lo, t->pshard + t->zoff[i], n * sizeof(float));
    return sl_world_allgatherv_f32(&t->dpg, x, zero_bounds(t, i));
}

/* One micro-batch's gradient of tensor i, whole at x, reduce-scattered over data parallel
 * (x is clobbered) and this rank's piece added to its shard gradient (copied, for the
 * first micro-batch of the step: the same bits as ZeRO-1's single reduce-scatter). */
static int reduce_tensor(struct cpu_trainer *t, int i, float *x)
{
    size_t lo, n;
    zero_piece(t, i, &lo, &n);
    if (!t->l->t[i].numel)
        return 0;
    int rc = sl_world_reduce_scatterv_f32(&t->dpg, x, zero_bounds(t, i));
    float *g = t->gshard + t->zoff[i];
    if (t->gfresh[i])
        memcpy(g, x + lo, n * sizeof(float));
    else
        for (size_t k = 0; k < n; k++)
            g[k] += x[lo + k];
    t->gfresh[i] = 0;
    return rc;
}

/* The models' hooks: local layer li's parameters gathered (ZeRO-3) and its gradient
 * buffer zeroed (backward) before it runs; its gradient reduced after its backward. */
static int hook_need(void *ctx, int li, int backward)
{
    struct cpu_trainer *t = ctx;
    const struct model_layout *l = t->l;
    int a, b, rc = 0;
    model_layer_span(l, li, &a, &b);
    size_t base = l->t[a].offset;
    if (backward)
        memset(t->lgrad, 0, (l->t[b].offset - base) * sizeof(float));
    for (int i = a; i < b; i++) {
        t->hooks.grad[i] = t->lgrad + (l->t[i].offset - base);
        if (t->zero == 3)
            t->hooks.param[i] = t->lparam + (l->t[i].offset - base);
    }
    for (int i = a; i < b && t->zero == 3 && !rc; i++)
        rc = gather_tensor(t, i, t->lparam + (l->t[i].offset - base));
    return rc;
}

static int hook_done(void *ctx, int li, int backward)
{
    struct cpu_trainer *t = ctx;
    const struct model_layout *l = t->l;
    int a, b, rc = 0;
    if (!backward) /* ZeRO-3: the layer's buffer is free for the next one */
        return 0;
    model_layer_span(l, li, &a, &b);
    for (int i = a; i < b && !rc; i++)
        rc = reduce_tensor(t, i, t->lgrad + (l->t[i].offset - l->t[a].offset));
    return rc;
}

/* ZeRO-2, -3: the tables of where each tensor is for the models; the layers' entries are
 * set by hook_need. */
static void zero_tables(struct cpu_trainer *t)
{
    const struct model_layout *l = t->l;
    t->ooff = sl_xcalloc((size_t)l->n, sizeof(size_t));
    t->gfresh = sl_xcalloc((size_t)l->n, 1);
    t->hooks.param = sl_xcalloc((size_t)l->n, sizeof(float *));
    t->hooks.grad = sl_xcalloc((size_t)l->n, sizeof(float *));
    t->hooks.ctx = t;
    t->hooks.need = hook_need;
    t->hooks.done = hook_done;
    size_t pos = 0;
    for (int i = 0; i < l->n; i++) {
        if (t->zero == 2)
            t->hooks.param[i] = t->params + l->t[i].offset;
        if (l->t[i].layer >= 0)
            continue;
        t->ooff[i] = pos;
        pos += aligned(l->t[i].numel);
        t->hooks.grad[i] = t->ograd + t->ooff[i];
        if (t->zero == 3)
            t->hooks.param[i] = t->oparam + t->ooff[i];
    }
}

int zero_setup(struct cpu_trainer *t)
{
    size_t total = t->l->total, mn = total;
    if (t->zero) {
        zero_layout(t);
        mn = aligned(t->zn);
    }
    if (t->zero >= 2)
        model_layout_buckets(t->l, &t->max_layer, &t->outer);
    int z2 = t->zero >= 2, z3 = t->zero == 3;
    struct {
        float **p;
        size_t n;
    } part[] = {
        { &t->params, z3 ? 0 : total },
        { &t->grads, z2 ? 0 : total },
        { &t->m, mn },
        { &t->v, mn },
        { &t->gshard, z2 ? mn : 0 },
        { &t->pshard, z3 ? mn : 0 },
        { &t->lgrad, z2 ? t->max_layer : 0 },
        { &t->lparam, z3 ? t->max_layer : 0 },
        { &t->ograd, z2 ? t->outer : 0 },
        { &t->oparam, z3 ? t->outer : 0 },
    };
    size_t nparts = sizeof(part) / sizeof(part[0]), slab = 0;
    for (size_t k = 0; k < nparts; k++)
        slab += part[k].n;
    t->slab = aligned_alloc(64, sl_mul_size(slab ? slab : 1, sizeof(float)));
    if (!t->slab)
        return sl_err_set(SL_ERR_NOMEM,
                          "cannot allocate %.1f GiB for parameters, gradients and AdamW state",
                          (double)slab * sizeof(float) / (1u << 30));
    memset(t->slab, 0, slab * sizeof(float));
    t->slab_floats = slab;
    size_t off = 0;
    for (size_t k = 0; k < nparts; k++) {
        *part[k].p = part[k].n ? t->slab + off : NULL;
        off += part[k].n;
    }
    if (z2)
        zero_tables(t);
    return 0;
}

void zero_release(struct cpu_trainer *t)
{
    free(t->zb);
    free(t->zoff);
    free(t->ooff);
    free(t->gfresh);
    free(t->hooks.param);
    free(t->hooks.grad);
}

int zero_allgather(struct cpu_trainer *t, float *x)
{
    int rc = 0;
    for (int i = 0; i < t->l->n && !rc; i++)
        if (t->l->t[i].numel)
            rc = sl_world_allgatherv_f32(&t->dpg, x + t->l->t[i].offset, zero_bounds(t, i));
    return rc;
}

int zero_gather_moment(struct cpu_trainer *t, const float *piece, float *full)
{
    int rc = 0;
    for (int i = 0; i < t->l->n && !rc; i++)
        if (t->l->t[i].numel)
            rc = sl_world_gatherv_f32(&t->dpg, piece + t->zoff[i],
                                      full ? full + t->l->t[i].offset : NULL, zero_bounds(t, i), 0);
    return rc;
}

void zero_keep(struct cpu_trainer *t, const float *full, float *piece)
{
    for (int i = 0; i < t->l->n; i++) {
        size_t lo, n;
        zero_piece(t, i, &lo, &n);
        memcpy(piece + t->zoff[i], full + t->l->t[i].offset + lo, n * sizeof(float));
    }
}

int zero_whole(struct cpu_trainer *t, int grads, float **out)
{
    size_t total = t->l->total;
    float *x = aligned_alloc(64, sl_mul_size(total ? total : 1, sizeof(float)));
    *out = x;
    int rc = x ? 0
               : sl_err_set(SL_ERR_NOMEM, "cannot allocate %.1f GiB to gather the %s",
                            (double)total * sizeof(float) / (1u << 30),
                            grads ? "gradient" : "parameters");
    int64_t bad = rc != 0; /* every rank of the group takes part, or none */
    sl_world_allreduce_i64(&t->dpg, &bad, 1, SL_MAX);
    if (bad)
        return rc ? rc
                  : sl_err_set(SL_ERR_NOMEM, "another rank could not gather the %s",
                               grads ? "gradient" : "parameters");
    memset(x, 0, total * sizeof(float));
    for (int i = 0; i < t->l->n; i++) {
        size_t lo, n;
        zero_piece(t, i, &lo, &n);
        memcpy(x + t->l->t[i].offset + lo, grads ? zero_grad_piece(t, i) : zero_param_piece(t, i),
               n * sizeof(float));
    }
    return zero_allgather(t, x);
}

int zero_step_begin(struct cpu_trainer *t, int eval)
{
    int rc = 0;
    if (!eval) {
        memset(t->gshard, 0, t->zn * sizeof(float));
        memset(t->gfresh, 1, (size_t)t->l->n);
    }
    for (int i = 0; i < t->l->n && t->zero == 3 && !rc; i++)
        if (t->l->t[i].layer < 0)
            rc = gather_tensor(t, i, t->oparam + t->ooff[i]);
    return rc;
}

/* Tensor i (outside the layers) is used by chunk c's backward: the embeddings by the first
 * virtual stage, the final norm and the output layer (a tied embedding) by the last. */
static int outer_used(const struct cpu_trainer *t, int c, int i)
{
    const struct model_layout *l = t->l;
    int first = t->sh.first_stage && c == 0, last = t->sh.last_stage && c == t->nchunks - 1;
    if (!t->l->t[i].numel || l->t[i].layer >= 0)
        return 0;
    if (i == l->embed)
        return first || (last && t->o->mc.tied_embeddings);
    if (i == l->pos)
        return first;
    return last;
}

void zero_outer_begin(struct cpu_trainer *t, int c)
{
    for (int i = 0; i < t->l->n; i++)
        if (outer_used(t, c, i))
            memset(t->ograd + t->ooff[i], 0, t->l->t[i].numel * sizeof(float));
}

int zero_outer_end(struct cpu_trainer *t, int c)
{
    int rc = 0;
    for (int i = 0; i < t->l->n && !rc; i++)
        if (outer_used(t, c, i))
            rc = reduce_tensor(t, i, t->ograd + t->ooff[i]);
    return rc;
}
