/* The CPU reference backend of the trainer (train/train_run.h): fp32 parameters, gradients
 * and AdamW moments in one slab, the model of train/cpu_model.c, data parallel over MPI
 * ranks (each rank takes its slice of every micro-batch, Megatron's sampler order; the
 * gradient slab is summed with one all-reduce per step). Also the debug dump for the test
 * oracles (debug.dump_dir).
 */
#include "train/train_run.h"

#include "core/alloc.h"
#include "core/err.h"
#include "core/atomic.h"
#include "core/world.h"
#include "dataset/loader.h"
#include "train/cpu_model.h"
#include "train/safetensors.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct cpu_trainer {
    const struct train_opts *o;
    struct sl_world *w;
    struct model_layout l;
    float *slab; /* params | grads | m | v: one allocation */
    float *params, *grads, *m, *v;
    struct cpu_model *cm;
    struct data_loader *data;
    uint32_t *sample; /* seq_len + 1 */
    int32_t *tokens, *targets;
    uint32_t *dump_samples; /* accum * B * (seq_len + 1), when dumping */
    float *dump_logits;     /* B * seq_len * vocab, when dumping */
    long dump_micro;        /* micro-step being filled */
};

static int fill_batch(struct cpu_trainer *t, enum data_split split, uint64_t first)
{
    long B = t->o->micro_batch, T = t->o->seq_len;
    for (long b = 0; b < B; b++) {
        int rc = data_loader_sample(t->data, split, first + (uint64_t)b, t->sample);
        if (rc)
            return rc;
        if (t->dump_samples && split == DATA_TRAIN)
            memcpy(t->dump_samples + ((size_t)t->dump_micro * B + b) * (T + 1), t->sample,
                   (size_t)(T + 1) * sizeof(uint32_t));
        for (long k = 0; k < T; k++) {
            t->tokens[b * T + k] = (int32_t)t->sample[k];
            t->targets[b * T + k] = (int32_t)t->sample[k + 1];
        }
    }
    return 0;
}

/* The first sample of micro-step a of a batch starting at `base`, for this rank. */
static uint64_t slice_start(const struct cpu_trainer *t, uint64_t base, long a)
{
    return base + (uint64_t)a * (uint64_t)(t->o->micro_batch * t->w->size) +
           (uint64_t)(t->w->rank * t->o->micro_batch);
}

static int all_ok(struct cpu_trainer *t, int rc)
{
    int64_t bad = rc != 0;
    sl_world_allreduce_i64(t->w, &bad, 1, SL_MAX);
    return bad ? (rc ? rc : SL_ERR_STATE) : 0;
}

static void cpu_release(void *ctx)
{
    struct cpu_trainer *t = ctx;
    if (!t)
        return;
    cpu_model_free(t->cm);
    model_layout_release(&t->l);
    free(t->slab);
    free(t->sample);
    free(t->tokens);
    free(t->targets);
    free(t->dump_samples);
    free(t->dump_logits);
    free(t);
}

static int cpu_setup(void **ctx, const struct train_opts *o, struct sl_world *w,
                     struct data_loader *data, size_t *act_bytes)
{
    struct cpu_trainer *t = sl_xcalloc(1, sizeof(*t));
    *ctx = t;
    t->o = o;
    t->w = w;
    t->data = data;
    model_layout_init(&t->l, &o->mc);
    size_t total = t->l.total;
    t->slab = aligned_alloc(64, sl_mul_size(4 * total, sizeof(float)));
    if (!t->slab)
        return sl_err_set(SL_ERR_NOMEM,
                          "cannot allocate %.1f GiB for parameters, gradients and AdamW state",
                          4.0 * total * sizeof(float) / (1u << 30));
    memset(t->slab, 0, 4 * total * sizeof(float));
    t->params = t->slab;
    t->grads = t->slab + total;
    t->m = t->slab + 2 * total;
    t->v = t->slab + 3 * total;
    int rc = cpu_model_new(&t->cm, &o->mc, &t->l, (int)o->micro_batch, (int)o->seq_len);
    if (rc)
        return rc;
    *act_bytes = cpu_model_bytes(t->cm);
    t->sample = sl_xmalloc((size_t)(o->seq_len + 1) * sizeof(uint32_t));
    t->tokens = sl_xmalloc((size_t)(o->micro_batch * o->seq_len) * sizeof(int32_t));
    t->targets = sl_xmalloc((size_t)(o->micro_batch * o->seq_len) * sizeof(int32_t));
    if (o->dump_dir && w->rank == 0) {
        t->dump_samples =
            sl_xcalloc((size_t)(o->accum * o->micro_batch * (o->seq_len + 1)), sizeof(uint32_t));
        t->dump_logits = sl_xmalloc((size_t)(o->micro_batch * o->seq_len) *
                                    (size_t)o->mc.vocab_size * sizeof(float));
    }
    return 0;
}

static int cpu_load(void *ctx, const char *from, uint64_t init_seed)
{
    struct cpu_trainer *t = ctx;
    if (from)
        return ckpt_load(from, &t->l, t->params, t->m, t->v);
    model_init_params(&t->o->mc, &t->l, t->params, init_seed);
    return 0;
}

static int cpu_params_host(void *ctx, float *dst)
{
    struct cpu_trainer *t = ctx;
    memcpy(dst, t->params, t->l.total * sizeof(float));
    return 0;
}

/* The debug dump of one step for the test oracles: the samples, loss, lr and gradient
 * norm, and on the first step also the logits of micro-step 0, the parameters before the
 * update and the gradients before clipping. */
static int dump_step(struct cpu_trainer *t, long step, double loss, double lr, double norm)
{
    const struct model_layout *l = &t->l;
    size_t cap = 2 * (size_t)l->n + 8, n = 0;
    struct st_tensor *x = sl_xcalloc(cap, sizeof(*x));
    char **names = sl_xcalloc(cap, sizeof(char *));
    long B = t->o->micro_batch, T = t->o->seq_len, accum = t->o->accum;
    double scal[3] = { loss, lr, norm };
    x[n++] = (struct st_tensor){ "tokens",
                                 "I32",
                                 2,
                                 { accum * B, T + 1 },
                                 t->dump_samples,
                                 (size_t)(accum * B * (T + 1)) * sizeof(uint32_t) };
    x[n++] = (struct st_tensor){ "loss", "F64", 1, { 1 }, &scal[0], sizeof(double) };
    x[n++] = (struct st_tensor){ "lr", "F64", 1, { 1 }, &scal[1], sizeof(double) };
    x[n++] = (struct st_tensor){ "grad_norm", "F64", 1, { 1 }, &scal[2], sizeof(double) };
    if (step == 1) {
        x[n++] =
            (struct st_tensor){ "logits",
                                "F32",
                                2,
                                { B * T, t->o->mc.vocab_size },
                                t->dump_logits,
                                (size_t)(B * T) * (size_t)t->o->mc.vocab_size * sizeof(float) };
        for (int k = 0; k < 2; k++)
            for (int i = 0; i < l->n; i++) {
                names[k * l->n + i] = sl_xasprintf("%s.%s", k ? "grad" : "param", l->t[i].name);
                x[n++] = (struct st_tensor){ names[k * l->n + i],
                                             "F32",
                                             l->t[i].ndim,
                                             { l->t[i].shape[0], l->t[i].shape[1] },
                                             (k ? t->grads : t->params) + l->t[i].offset,
                                             l->t[i].numel * sizeof(float) };
            }
    }
    int rc = sl_mkdir_p(t->o->dump_dir);
    if (!rc) {
        char *p = sl_xasprintf("%s/step-%06ld.safetensors", t->o->dump_dir, step);
        rc = st_write(p, x, n, NULL);
        free(p);
    }
    for (size_t i = 0; i < cap; i++)
        free(names[i]);
    free(names);
    free(x);
    return rc;
}

static int cpu_step(void *ctx, struct train_step *s)
{
    struct cpu_trainer *t = ctx;
    const struct train_opts *o = t->o;
    long B = o->micro_batch, T = o->seq_len, W = t->w->size;
    float scale = (float)(1.0 / ((double)B * T * o->accum * W));
    size_t total = t->l.total;
    int dumping = o->dump_dir && s->step <= o->dump_steps && t->w->rank == 0;
    memset(t->grads, 0, total * sizeof(float));
    double loss_sum = 0.0;
    int rc = 0;
    for (long a = 0; a < o->accum && !rc; a++) {
        t->dump_micro = a;
        uint32_t *keep = t->dump_samples;
        if (!dumping)
            t->dump_samples = NULL;
        rc = fill_batch(t, DATA_TRAIN, slice_start(t, s->consumed_samples, a));
        t->dump_samples = keep;
        if (rc)
            break;
        loss_sum += cpu_model_forward(t->cm, t->params, t->tokens, t->targets);
        if (dumping && a == 0 && s->step == 1)
            memcpy(t->dump_logits, cpu_model_logits(t->cm),
                   (size_t)(B * T) * (size_t)o->mc.vocab_size * sizeof(float));
        cpu_model_backward(t->cm, t->params, t->grads, t->tokens, t->targets, scale);
    }
    if ((rc = all_ok(t, rc)))
        return rc;
    if ((rc = sl_world_allreduce_f32(t->w, t->grads, total, SL_SUM)))
        return rc;
    sl_world_allreduce_f64(t->w, &loss_sum, 1, SL_SUM);
    s->loss = loss_sum / (double)(o->accum * W);
    s->norm = grad_global_norm(t->grads, total);
    s->have_stats = 1;
    rc = dumping ? dump_step(t, s->step, s->loss, s->lr, s->norm) : 0;
    if (rc) {
        char why[512];
        snprintf(why, sizeof(why), "%s", sl_err_msg());
        sl_err_set(rc, "cannot write the debug dump: %s", why);
    }
    if (!rc && s->dump_grads && t->w->rank == 0)
        rc = train_dump_grads(s->dump_grads, &o->mc, &t->l, t->grads);
    if ((rc = all_ok(t, rc)))
        return rc;
    s->applied = 0;
    if (isfinite(s->loss) && isfinite(s->norm)) {
        grad_clip(t->grads, total, s->norm, o->clip);
        adamw_step(&o->adam, &t->l, t->params, t->grads, t->m, t->v, s->lr, s->adam_step);
        s->applied = 1;
    }
    return 0;
}

static int cpu_evaluate(void *ctx, double *loss)
{
    struct cpu_trainer *t = ctx;
    double sum = 0.0;
    long n = 0;
    int rc = 0;
    for (long it = 0; it < t->o->eval_iters && !rc; it++) {
        uint64_t base = (uint64_t)it * (uint64_t)t->o->global_batch;
        for (long a = 0; a < t->o->accum && !rc; a++) {
            rc = fill_batch(t, DATA_VALID, slice_start(t, base, a));
            if (!rc) {
                sum += cpu_model_forward(t->cm, t->params, t->tokens, t->targets);
                n++;
            }
        }
    }
    rc = all_ok(t, rc);
    if (rc)
        return rc;
    double v[2] = { sum, (double)n };
    sl_world_allreduce_f64(t->w, v, 2, SL_SUM);
    *loss = v[0] / v[1];
    return 0;
}

static int cpu_save(void *ctx, const struct ckpt_state *st)
{
    struct cpu_trainer *t = ctx;
    const struct train_opts *o = t->o;
    int rc = 0;
    if (t->w->rank == 0)
        rc = ckpt_save(o->ckpt_dir, &o->mc, &t->l, t->params, t->m, t->v, st, o->config_json,
                       o->optim_json);
    return all_ok(t, rc);
}

const struct train_backend train_backend_cpu = {
    .name = "cpu",
    .setup = cpu_setup,
    .load = cpu_load,
    .step = cpu_step,
    .evaluate = cpu_evaluate,
    .params_host = cpu_params_host,
    .save = cpu_save,
    .release = cpu_release,
};

int train_dump_grads(const char *path, const struct model_config *mc, const struct model_layout *l,
                     const float *grads)
{
    struct st_tensor *x = sl_xcalloc((size_t)l->n, sizeof(*x));
    for (int i = 0; i < l->n; i++)
        x[i] = (struct st_tensor){ l->t[i].name,           "F32",
                                   l->t[i].ndim,           { l->t[i].shape[0], l->t[i].shape[1] },
                                   grads + l->t[i].offset, l->t[i].numel * sizeof(float) };
    char nh[16], nkv[16], hd[16], ff[16];
    snprintf(nh, sizeof(nh), "%d", mc->n_heads);
    snprintf(nkv, sizeof(nkv), "%d", mc->n_kv_heads);
    snprintf(hd, sizeof(hd), "%d", mc->head_dim);
    snprintf(ff, sizeof(ff), "%d", mc->d_ff);
    const char *meta[] = { "format",     "sluice-grads-1",
                           "n_heads",    nh,
                           "n_kv_heads", nkv,
                           "head_dim",   hd,
                           "d_ff",       ff,
                           "activation", model_act_name(mc->act),
                           NULL };
    int rc = st_write(path, x, (size_t)l->n, meta);
    free(x);
    return rc;
}
