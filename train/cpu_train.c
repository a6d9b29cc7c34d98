/* The CPU reference backend of the trainer (train/train_run.h): fp32 parameters, gradients
 * and AdamW moments in one slab, the model of train/cpu_model.c, data parallel over MPI
 * ranks (each rank takes its slice of every micro-batch, Megatron's sampler order; the
 * gradient slab is summed with one all-reduce per step, or with ZeRO-1 reduce-scattered so
 * that each rank updates its piece of every tensor, whose moments it alone keeps, and the
 * parameters all-gathered; ZeRO-2 and -3 shard the gradient and the weights too, in
 * train/cpu_zero.c), and the model split over ranks (train/parallel.h): tensor and
 * sequence parallel inside the model, pipeline stages run in the 1F1B schedule or, with
 * virtual stages, Megatron-Core's interleaved one. Also the debug dump for the test oracles
 * (debug.dump_dir).
 */
#include "train/cpu_internal.h"

#include "core/alloc.h"
#include "core/err.h"
#include "core/atomic.h"
#include "core/buf.h"
#include "core/world.h"
#include "dataset/loader.h"
#include "train/cpu_fp8.h"
#include "train/cpu_model.h"
#include "train/docmask.h"
#include "train/safetensors.h"
#include "train/schedule.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int fill_batch(struct cpu_trainer *t, enum data_split split, uint64_t first, int slot)
{
    long B = t->o->micro_batch, T = t->o->seq_len;
    int32_t *tokens = t->tokens + (size_t)slot * B * T,
            *targets = t->targets + (size_t)slot * B * T;
    for (long b = 0; b < B; b++) {
        int rc = data_loader_sample(t->data, split, first + (uint64_t)b, t->sample);
        if (rc)
            return rc;
        if (t->dump_samples && split == DATA_TRAIN)
            memcpy(t->dump_samples + ((size_t)t->dump_micro * B + b) * (T + 1), t->sample,
                   (size_t)(T + 1) * sizeof(uint32_t));
        for (long k = 0; k < T; k++) {
            tokens[b * T + k] = (int32_t)t->sample[k];
            targets[b * T + k] = (int32_t)t->sample[k + 1];
        }
        if (t->dpos) {
            size_t at = ((size_t)slot * B + b) * T;
            docmask_sample(&t->o->docs, tokens + b * T, (int)T, t->dpos + at, t->dstart + at,
                           t->lmask + at);
        }
    }
    return 0;
}

/* The document boundaries of a token slot's micro-batch to the model (train/docmask.h). */
static void set_docs(struct cpu_trainer *t, struct cpu_model *cm, int slot)
{
    size_t at = (size_t)slot * t->o->micro_batch * t->o->seq_len;
    if (t->dpos)
        cpu_model_set_docs(cm, t->o->docs.reset_pos ? t->dpos + at : NULL,
                           t->o->docs.reset_attn ? t->dstart + at : NULL,
                           t->o->docs.mask_loss ? t->lmask + at : NULL);
}

static int32_t *slot_tokens(struct cpu_trainer *t, int slot)
{
    return t->tokens + (size_t)slot * t->o->micro_batch * t->o->seq_len;
}

static int32_t *slot_targets(struct cpu_trainer *t, int slot)
{
    return t->targets + (size_t)slot * t->o->micro_batch * t->o->seq_len;
}

/* The first sample of micro-step a of a batch starting at `base`, for this data-parallel
 * rank (every rank of a replica reads the same samples). */
static uint64_t slice_start(const struct cpu_trainer *t, uint64_t base, long a)
{
    return base + (uint64_t)a * (uint64_t)(t->o->micro_batch * t->par.dp) +
           (uint64_t)(t->at.dp * t->o->micro_batch);
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
    for (int i = 0; t->cm && i < t->nslots * t->nchunks; i++) {
        cpu_model_free(t->cm[i]);
        sl_world_wait(&t->sends[2 * i]);
        sl_world_wait(&t->sends[2 * i + 1]);
    }
    free(t->cm);
    free(t->sends);
    free(t->xbuf);
    free(t->gbuf);
    model_shard_release(&t->sh);
    model_layout_release(&t->fl);
    sl_world_group_free(&t->tpg);
    sl_world_group_free(&t->dpg);
    sl_world_group_free(&t->ppg);
    sl_world_group_free(&t->mpg);
    sl_world_group_free(&t->embg);
    sl_world_group_free(&t->ppb);
    free(t->slab);
    zero_release(t);
    free(t->sample);
    free(t->tokens);
    free(t->targets);
    free(t->dpos);
    free(t->dstart);
    free(t->lmask);
    free(t->dump_samples);
    free(t->dump_logits);
    cpu_fp8_free(t->fp8);
    free(t);
}

static int make_groups(struct cpu_trainer *t)
{
    const struct parallel_config *p = &t->par;
    const struct parallel_coord *c = &t->at;
    int rc;
    int tied_ends = t->o->mc.tied_embeddings && p->pp > 1 && (c->pp == 0 || c->pp == p->pp - 1);
    if ((rc = sl_world_split(t->w, c->dp + p->dp * c->pp, c->tp, &t->tpg)) ||
        (rc = sl_world_split(t->w, c->tp + p->tp * c->pp, c->dp, &t->dpg)) ||
        (rc = sl_world_split(t->w, c->tp + p->tp * c->dp, c->pp, &t->ppg)) ||
        (rc = sl_world_split(t->w, c->dp, c->tp + p->tp * c->pp, &t->mpg)) ||
        (rc = sl_world_split(t->w, tied_ends ? c->tp + p->tp * c->dp : -1, c->pp, &t->embg)) ||
        (rc = sl_world_split(t->w, p->vp > 1 ? c->tp + p->tp * c->dp : -1, c->pp, &t->ppb)))
        return rc;
    return 0;
}

static int cpu_setup(void **ctx, const struct train_opts *o, struct sl_world *w,
                     struct data_loader *data, size_t *act_bytes)
{
    struct cpu_trainer *t = sl_xcalloc(1, sizeof(*t));
    *ctx = t;
    t->o = o;
    t->w = w;
    t->data = data;
    t->par = o->par;
    if (t->par.tp < 1) /* a caller that did not fill in parallel.*: data parallel only */
        t->par = (struct parallel_config){ .tp = 1, .pp = 1, .dp = w->size, .world = w->size };
    t->parallel = t->par.tp > 1 || t->par.pp > 1;
    parallel_coord_of(&t->par, w->rank, &t->at);
    int rc = make_groups(t);
    if (rc)
        return rc;
    model_layout_init(&t->fl, &o->mc);
    model_shard_init(&t->sh, &t->par, &t->at, &o->mc, &t->fl);
    t->l = &t->sh.l;
    t->zero = t->par.dp > 1 ? t->par.zero : 0;
    t->nchunks = t->sh.nchunks;
    if ((rc = zero_setup(t)))
        return rc;
    t->nslots = (int)parallel_cpu_slots(&t->par, o->accum);
    t->ntok = t->nchunks > 1 ? (int)o->accum : t->nslots;
    if ((rc = cpu_fp8_for_run(&t->fp8, o, &t->par)))
        return rc;
    t->cm = sl_xcalloc((size_t)(t->nslots * t->nchunks), sizeof(*t->cm));
    t->sends = sl_xcalloc(2 * (size_t)(t->nslots * t->nchunks), sizeof(void *));
    *act_bytes = 0;
    for (int c = 0; c < t->nchunks; c++) {
        /* chunk c: its layers of the slab, the embedding on the first virtual stage, the
         * output layer and the loss on the last */
        t->cl[c] = *t->l;
        t->cl[c].layer = t->l->layer + t->sh.chunk_local[c];
        t->cl[c].n_layers = t->sh.chunk_n[c];
        t->cc[c] = t->sh.local;
        t->cc[c].n_layers = t->sh.chunk_n[c];
        struct cpu_model_par mp = {
            .tp = t->par.tp > 1 ? &t->tpg : NULL,
            .sp = t->par.sp,
            .vocab_start = t->sh.vocab_start,
            .first_stage = t->sh.first_stage && c == 0,
            .last_stage = t->sh.last_stage && c == t->nchunks - 1,
            .hooks = t->zero >= 2 ? &t->hooks : NULL,
            .layer0 = t->sh.chunk_local[c],
            .fp8 = t->fp8,
        };
        for (int i = 0; i < t->nslots; i++) {
            struct cpu_model **cm = &t->cm[c * t->nslots + i];
            rc = cpu_model_new_par(cm, &t->cc[c], &t->cl[c], (int)o->micro_batch, (int)o->seq_len,
                                   &mp);
            if (rc)
                return rc;
            *act_bytes += cpu_model_bytes(*cm);
        }
    }
    size_t rows = (size_t)cpu_model_rows(t->cm[0]) * (size_t)o->mc.d_model;
    t->xbuf = sl_xmalloc(rows * sizeof(float));
    t->gbuf = sl_xmalloc(rows * sizeof(float));
    t->sample = sl_xmalloc((size_t)(o->seq_len + 1) * sizeof(uint32_t));
    size_t ntok = (size_t)t->ntok * (size_t)(o->micro_batch * o->seq_len);
    t->tokens = sl_xmalloc(ntok * sizeof(int32_t));
    t->targets = sl_xmalloc(ntok * sizeof(int32_t));
    if (docmask_on(&o->docs)) {
        t->dpos = sl_xmalloc(ntok * sizeof(int32_t));
        t->dstart = sl_xmalloc(ntok * sizeof(int32_t));
        t->lmask = sl_xmalloc(ntok * sizeof(float));
    }
    if (o->dump_dir && t->zero >= 2)
        return sl_err_set(SL_ERR_CONFIG,
                          "debug.dump_dir needs optim.zero 0 or 1 (ZeRO-%d keeps no whole "
                          "gradient)\nhint: train.dump_grads writes the gathered gradient of "
                          "any ZeRO stage",
                          t->zero);
    if (o->dump_dir && t->parallel)
        return sl_err_set(SL_ERR_CONFIG,
                          "debug.dump_dir needs parallel.tensor = parallel.pipeline = 1\n"
                          "hint: train.dump_grads writes the gathered gradient of any layout");
    /* every data-parallel rank keeps its samples: the dump gathers them all (dump_step) */
    if (o->dump_dir)
        t->dump_samples =
            sl_xcalloc((size_t)(o->accum * o->micro_batch * (o->seq_len + 1)), sizeof(uint32_t));
    if (o->dump_dir && w->rank == 0)
        t->dump_logits = sl_xmalloc((size_t)(o->micro_batch * o->seq_len) *
                                    (size_t)o->mc.vocab_size * sizeof(float));
    return 0;
}

/* The full model's tensors of a local slab, assembled on world rank 0 into full (fl.total
 * floats, zeroed first) from every rank of its model-parallel group. Collective over the
 * group of replica 0; the other replicas' ranks return at once (their data is the same). */
static int gather_full(struct cpu_trainer *t, const float *local, float *full)
{
    if (t->at.dp != 0) /* the other replicas hold the same */
        return 0;
    if (!t->parallel) {
        if (t->w->rank == 0 && full)
            memcpy(full, local, t->l->total * sizeof(float));
        return 0;
    }
    return parallel_gather_full(&t->mpg, &t->par, &t->o->mc, &t->fl, local, t->l->total, full);
}

static int cpu_load(void *ctx, const char *from, uint64_t init_seed)
{
    struct cpu_trainer *t = ctx;
    /* the moments (and under ZeRO-3 the parameters) laid out as the slab: the slab's own,
     * or under ZeRO a buffer of which this rank keeps its pieces */
    size_t ln = t->l->total, nb = (from && t->zero ? 2 : 0) + (t->zero == 3);
    float *mv = NULL, *m = t->m, *v = t->v, *params = t->params;
    if (nb) {
        if (!(mv = aligned_alloc(64, sl_mul_size(nb * ln, sizeof(float)))))
            return sl_err_set(SL_ERR_NOMEM, "cannot allocate %.1f GiB to load the model",
                              (double)nb * ln * sizeof(float) / (1u << 30));
        memset(mv, 0, nb * ln * sizeof(float));
        if (t->zero == 3)
            params = mv + (nb - 1) * ln;
        if (from) {
            m = mv;
            v = mv + ln;
        }
    }
    int rc = 0;
    if (!t->parallel) {
        if (from)
            rc = ckpt_load(from, &t->fl, params, m, v);
        else
            model_init_params(&t->o->mc, &t->fl, params, init_seed);
    } else {
        /* the full model, then this rank's part: the same weights as a run that never split */
        size_t n = t->fl.total;
        float *full = aligned_alloc(64, sl_mul_size(from ? 3 * n : n, sizeof(float)));
        if (!full) {
            free(mv);
            return sl_err_set(SL_ERR_NOMEM, "cannot allocate %.1f GiB to load the model",
                              (from ? 3.0 : 1.0) * n * sizeof(float) / (1u << 30));
        }
        if (from) {
            memset(full, 0, 3 * n * sizeof(float));
            rc = ckpt_load(from, &t->fl, full, full + n, full + 2 * n);
            if (!rc) {
                model_shard_slice(&t->sh, &t->fl, full + n, m);
                model_shard_slice(&t->sh, &t->fl, full + 2 * n, v);
            }
        } else {
            model_init_params(&t->o->mc, &t->fl, full, init_seed);
        }
        if (!rc)
            model_shard_slice(&t->sh, &t->fl, full, params);
        free(full);
    }
    if (!rc && from && t->zero) {
        zero_keep(t, m, t->m);
        zero_keep(t, v, t->v);
    }
    if (!rc && t->zero == 3)
        zero_keep(t, params, t->pshard);
    free(mv);
    return rc;
}

/* The full model's weights on world rank 0 (gathered from its model-parallel group). */
static int cpu_params_host(void *ctx, float *dst)
{
    struct cpu_trainer *t = ctx;
    float *params = t->params;
    int rc = t->zero == 3 ? zero_whole(t, 0, &params) : 0;
    if (!rc)
        rc = gather_full(t, params, dst);
    if (params != t->params)
        free(params);
    return rc;
}

static void cpu_state(void *ctx, size_t *bytes, uint64_t *moments, uint64_t *params)
{
    struct cpu_trainer *t = ctx;
    *bytes = t->slab_floats * sizeof(float);
    *moments = t->zero ? t->zn : t->l->params;
    *params = t->l->params;
}

/* Every data-parallel rank's samples of the step, gathered on rank 0 into the step's global
 * order (micro-step a, rank r, row b: sample a x micro x dp + r x micro + b) in *out (fresh,
 * rank 0 only). Collective over the data-parallel ranks. */
static int gather_samples(struct cpu_trainer *t, uint32_t **out)
{
    long B = t->o->micro_batch, T1 = t->o->seq_len + 1, A = t->o->accum, dp = t->par.dp;
    size_t mine = (size_t)(A * B * T1) * sizeof(uint32_t);
    struct sl_buf all = SL_BUF_INIT;
    *out = NULL;
    int rc = sl_world_gather_bytes(&t->dpg, t->dump_samples, mine, 0, &all, NULL);
    if (!rc && t->w->rank == 0) {
        uint32_t *g = sl_xmalloc(mine * (size_t)dp);
        const uint32_t *from = (const uint32_t *)all.data;
        for (long r = 0; r < dp; r++)
            for (long a = 0; a < A; a++)
                memcpy(g + ((a * dp + r) * B) * T1, from + (r * A + a) * B * T1,
                       (size_t)(B * T1) * sizeof(uint32_t));
        *out = g;
    }
    sl_buf_release(&all);
    return rc;
}

/* The debug dump of one step for the test oracles: the samples of every data-parallel rank
 * (gathered: "tokens" holds the whole global batch, in sample order), loss, lr and gradient
 * norm, and on the first step also the logits of micro-step 0 of rank 0, the parameters
 * before the update and the gradients before clipping. Collective; rank 0 writes. */
static int dump_step(struct cpu_trainer *t, long step, double loss, double lr, double norm)
{
    uint32_t *samples = NULL;
    int grc = gather_samples(t, &samples);
    if (grc || t->w->rank != 0)
        return grc;
    const struct model_layout *l = t->l;
    size_t cap = 2 * (size_t)l->n + 8, n = 0;
    struct st_tensor *x = sl_xcalloc(cap, sizeof(*x));
    char **names = sl_xcalloc(cap, sizeof(char *));
    long B = t->o->micro_batch, T = t->o->seq_len, accum = t->o->accum;
    double scal[3] = { loss, lr, norm };
    long dp = t->par.dp;
    x[n++] = (struct st_tensor){ "tokens",
                                 "I32",
                                 2,
                                 { accum * B * dp, T + 1 },
                                 samples,
                                 (size_t)(accum * B * dp * (T + 1)) * sizeof(uint32_t) };
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
    free(samples);
    return rc;
}

/* ---- the pipeline ---------------------------------------------------------------------- */

static size_t stage_floats(const struct cpu_trainer *t)
{
    return (size_t)cpu_model_rows(t->cm[0]) * (size_t)t->o->mc.d_model;
}

/* The model of micro-batch a in chunk c (slot a % nslots) and its tokens' slot. */
static int model_of(const struct cpu_trainer *t, int c, long a, int *tok)
{
    *tok = (int)(a % t->ntok);
    return c * t->nslots + (int)(a % t->nslots);
}

/* Forward of micro-batch a through chunk c of this stage (its activations in model slot
 * a % nslots, its tokens in slot a % ntok), its input received in xbuf unless the chunk is
 * the first virtual stage. Returns the loss on the last virtual stage. */
static int stage_forward(struct cpu_trainer *t, int c, long a, float *loss)
{
    int tok, k = model_of(t, c, a, &tok), rc;
    struct cpu_model *cm = t->cm[k];
    const float *x_in = t->sh.first_stage && c == 0 ? NULL : t->xbuf;
    if ((rc = sl_world_wait(&t->sends[2 * k]))) /* the model's previous output went out */
        return rc;
    set_docs(t, cm, tok);
    *loss = cpu_model_forward_stage(cm, t->params, slot_tokens(t, tok), slot_targets(t, tok), x_in);
    return cpu_model_error(cm);
}

/* Backward of micro-batch a through chunk c, the gradient of its output in gbuf unless the
 * chunk is the last virtual stage. */
static int stage_backward(struct cpu_trainer *t, int c, long a, float scale)
{
    int tok, k = model_of(t, c, a, &tok), rc;
    struct cpu_model *cm = t->cm[k];
    const float *dout = t->sh.last_stage && c == t->nchunks - 1 ? NULL : t->gbuf;
    if ((rc = sl_world_wait(&t->sends[2 * k + 1])))
        return rc;
    if (t->zero >= 2)
        zero_outer_begin(t, c);
    set_docs(t, cm, tok);
    cpu_model_backward_stage(cm, t->params, t->grads, slot_tokens(t, tok), slot_targets(t, tok),
                             scale, dout);
    if ((rc = cpu_model_error(cm)))
        return rc;
    if (t->zero >= 2 && (rc = zero_outer_end(t, c)))
        return rc;
    return 0;
}

static int wait_sends(struct cpu_trainer *t)
{
    int rc = 0;
    for (int i = 0; i < 2 * t->nslots * t->nchunks; i++) {
        int r = sl_world_wait(&t->sends[i]);
        rc = rc ? rc : r;
    }
    return rc;
}

/* One step's (or one validation micro-batch's) run through the schedule of train/schedule.h:
 * the step, the loss scale, whether it dumps, the loss summed. */
struct cpu_run {
    struct cpu_trainer *t;
    const struct train_step *s; /* NULL: validation */
    float scale;
    int dumping;
    double loss_sum;
};

/* Forward of micro-batch a through chunk c, its samples read first (on chunk 0). */
static int run_forward(void *ctx, int c, long a)
{
    struct cpu_run *r = ctx;
    struct cpu_trainer *t = r->t;
    const struct train_opts *o = t->o;
    const struct train_step *s = r->s;
    int rc = 0;
    if (c == 0 && s) {
        t->dump_micro = a;
        uint32_t *keep = t->dump_samples;
        if (!r->dumping)
            t->dump_samples = NULL;
        rc = fill_batch(t, DATA_TRAIN, slice_start(t, s->consumed_samples, a), (int)(a % t->ntok));
        t->dump_samples = keep;
    }
    float loss = 0.0f;
    if (!rc)
        rc = stage_forward(t, c, a, &loss);
    r->loss_sum += loss;
    if (!rc && r->dumping && t->dump_logits && a == 0 && s->step == 1)
        memcpy(t->dump_logits, cpu_model_logits(t->cm[0]),
               (size_t)(o->micro_batch * o->seq_len) * (size_t)o->mc.vocab_size * sizeof(float));
    return rc;
}

static int run_backward(void *ctx, int c, long a)
{
    struct cpu_run *r = ctx;
    return stage_backward(r->t, c, a, r->scale);
}

/* A forward's output goes to the next stage over ppg, a backward's input gradient to the
 * previous one (with virtual stages over ppb: both flow both ways between two stages); the
 * receives, blocking, into xbuf (a forward's input) and gbuf (a backward's). */
static int run_exchange(void *ctx, const struct pp_work *const *send, int nsend,
                        const struct pp_work *const *recv, int nrecv)
{
    struct cpu_run *r = ctx;
    struct cpu_trainer *t = r->t;
    int pp = t->par.pp, next = (t->at.pp + 1) % pp, prev = (t->at.pp + pp - 1) % pp, rc = 0;
    struct sl_world *g = t->nchunks > 1 ? &t->ppb : &t->ppg;
    size_t n = stage_floats(t);
    for (int i = 0; i < nsend && !rc; i++) {
        int tok, k = model_of(t, send[i]->chunk, send[i]->micro, &tok);
        if (send[i]->fwd)
            rc = sl_world_isend_f32(&t->ppg, cpu_model_stage_out(t->cm[k]), n, next,
                                    &t->sends[2 * k]);
        else
            rc =
                sl_world_isend_f32(g, cpu_model_stage_din(t->cm[k]), n, prev, &t->sends[2 * k + 1]);
    }
    for (int i = 0; i < nrecv && !rc; i++)
        rc = recv[i]->fwd ? sl_world_recv_f32(&t->ppg, t->xbuf, n, prev)
                          : sl_world_recv_f32(g, t->gbuf, n, next);
    return rc;
}

static int run_finish(void *ctx)
{
    struct cpu_run *r = ctx;
    return wait_sends(r->t);
}

static struct pp_sched cpu_sched(const struct cpu_trainer *t)
{
    return (struct pp_sched){ t->par.pp, t->at.pp, t->nchunks, t->o->accum };
}

/* One step's micro-batches through the pipeline schedule (train/schedule.h): 1F1B, or with
 * virtual stages the interleaved one; without pipeline parallelism forward, backward per
 * micro-batch. */
static int run_micro_batches(struct cpu_trainer *t, const struct train_step *s, float scale,
                             double *loss_sum)
{
    const struct train_opts *o = t->o;
    struct cpu_run r = { t, s, scale, o->dump_dir && s->step <= o->dump_steps, 0.0 };
    struct pp_ops ops = { &r, run_forward, run_backward, run_exchange, run_finish };
    struct pp_sched sc = cpu_sched(t);
    int rc = pp_sched_run(&sc, &ops);
    *loss_sum += r.loss_sum;
    return rc;
}

static double sumsq(const float *x, size_t n)
{
    double s = 0.0;
    for (size_t i = 0; i < n; i++)
        s += (double)x[i] * x[i];
    return s;
}

/* The global gradient norm: each tensor counted once, by its owner in replica 0 (under
 * ZeRO by its owners' pieces in every replica). */
static double global_norm(struct cpu_trainer *t)
{
    if (!t->parallel && !t->zero)
        return grad_global_norm(t->grads, t->l->total);
    double ss = 0.0;
    if (t->at.dp == 0 || t->zero)
        for (int i = 0; i < t->l->n; i++)
            if (t->sh.t[i].owner) {
                size_t lo, n;
                zero_piece(t, i, &lo, &n);
                ss += sumsq(zero_grad_piece(t, i), n);
            }
    sl_world_allreduce_f64(t->w, &ss, 1, SL_SUM);
    return sqrt(ss);
}

/* Sum the gradients that are partial per rank: over data parallel (the whole slab, or under
 * ZeRO-1 each tensor reduce-scattered: a rank gets the sum of its pieces only; ZeRO-2 and
 * -3 did that per micro-batch as the backward went, cpu_zero.c), over the
 * tensor-parallel group for the norms under sequence parallelism (each rank saw its token
 * rows), and between the pipeline's ends for a tied embedding. A tensor's pieces are the
 * same on the ranks of those groups (same length, same data-parallel rank). */
static int reduce_grads(struct cpu_trainer *t)
{
    int rc = 0;
    if (t->zero >= 2) {
        /* reduced already */
    } else if (t->zero) {
        for (int i = 0; i < t->l->n && !rc; i++)
            if (t->l->t[i].numel)
                rc = sl_world_reduce_scatterv_f32(&t->dpg, t->grads + t->l->t[i].offset,
                                                  zero_bounds(t, i));
    } else {
        rc = sl_world_allreduce_f32(&t->dpg, t->grads, t->l->total, SL_SUM);
    }
    for (int i = 0; !rc && t->par.sp && i < t->l->n; i++) {
        const struct model_tensor *x = &t->l->t[i];
        size_t lo, n;
        zero_piece(t, i, &lo, &n);
        if (t->sh.t[i].full >= 0 && (x->kind == MODEL_T_NORM_W || x->kind == MODEL_T_NORM_B))
            rc = sl_world_allreduce_f32(&t->tpg, zero_grad_piece(t, i), n, SL_SUM);
    }
    if (!rc && t->embg.size > 1) {
        size_t lo, n;
        zero_piece(t, t->l->embed, &lo, &n);
        rc = sl_world_allreduce_f32(&t->embg, zero_grad_piece(t, t->l->embed), n, SL_SUM);
    }
    return rc;
}

/* Clip and update: the whole slab, or under ZeRO this rank's pieces (with their moments),
 * then the parameters all-gathered over data parallel (ZeRO-3: they stay sharded). */
static int update(struct cpu_trainer *t, const struct train_step *s)
{
    const struct train_opts *o = t->o;
    if (!t->zero) {
        grad_clip(t->grads, t->l->total, s->norm, o->clip);
        adamw_step(&o->adam, t->l, t->params, t->grads, t->m, t->v, s->lr, s->adam_step);
        return 0;
    }
    for (int i = 0; i < t->l->n; i++) {
        size_t lo, n;
        zero_piece(t, i, &lo, &n);
        float *g = zero_grad_piece(t, i);
        grad_clip(g, n, s->norm, o->clip);
        adamw_step_range(&o->adam, t->l->t[i].decay, zero_param_piece(t, i), g, t->m + t->zoff[i],
                         t->v + t->zoff[i], n, s->lr, s->adam_step);
    }
    return t->zero == 3 ? 0 : zero_allgather(t, t->params);
}

static int cpu_step(void *ctx, struct train_step *s)
{
    struct cpu_trainer *t = ctx;
    const struct train_opts *o = t->o;
    long B = o->micro_batch, T = o->seq_len, DP = t->par.dp;
    float scale = (float)(1.0 / ((double)B * T * o->accum * DP));
    int dumping = o->dump_dir && s->step <= o->dump_steps;
    int rc = 0;
    if (t->zero >= 2)
        rc = zero_step_begin(t, 0);
    else
        memset(t->grads, 0, t->l->total * sizeof(float));
    double loss_sum = 0.0;
    if (!rc)
        rc = run_micro_batches(t, s, scale, &loss_sum);
    if ((rc = all_ok(t, rc)))
        return rc;
    if ((rc = reduce_grads(t)) || (t->fp8 && (rc = cpu_fp8_step(t->fp8, &t->dpg))))
        return rc;
    /* the loss: computed alike by the last stage's tensor-parallel ranks; count one */
    if (!t->sh.last_stage || t->at.tp != 0)
        loss_sum = 0.0;
    sl_world_allreduce_f64(t->w, &loss_sum, 1, SL_SUM);
    s->loss = loss_sum / (double)(o->accum * DP);
    s->norm = global_norm(t);
    s->have_stats = 1;
    /* the dumps hold the whole gradient: ZeRO-1 reduced pieces only, ZeRO-2 and -3 kept
     * nothing else (a buffer for the dump) */
    float *grads = t->grads;
    if (t->zero == 1 && (s->dump_grads || (dumping && s->step == 1)) &&
        (rc = zero_allgather(t, t->grads)))
        return rc;
    if (t->zero >= 2 && s->dump_grads && (rc = zero_whole(t, 1, &grads))) {
        free(grads);
        return rc;
    }
    rc = dumping ? dump_step(t, s->step, s->loss, s->lr, s->norm) : 0;
    if (rc) {
        char why[512];
        snprintf(why, sizeof(why), "%s", sl_err_msg());
        sl_err_set(rc, "cannot write the debug dump: %s", why);
    }
    if (!rc && s->dump_grads) {
        float *full = NULL;
        if (t->w->rank == 0 && t->parallel &&
            !(full = aligned_alloc(64, sl_mul_size(t->fl.total, sizeof(float)))))
            rc = sl_err_set(SL_ERR_NOMEM, "no memory to gather the gradient");
        if (!rc)
            rc = gather_full(t, grads, full);
        if (!rc && t->w->rank == 0)
            rc = train_dump_grads(s->dump_grads, &o->mc, &t->fl, full ? full : grads);
        free(full);
    }
    if (grads != t->grads)
        free(grads);
    if ((rc = all_ok(t, rc)))
        return rc;
    s->applied = 0;
    if (isfinite(s->loss) && isfinite(s->norm)) {
        if ((rc = update(t, s)))
            return rc;
        s->applied = 1;
    }
    return 0;
}

static int cpu_evaluate(void *ctx, double *loss)
{
    struct cpu_trainer *t = ctx;
    double sum = 0.0;
    long n = 0;
    int rc = t->zero == 3 ? zero_step_begin(t, 1) : 0; /* the updated outer tensors */
    if (t->fp8) /* the scales stay the training's */
        cpu_fp8_freeze(t->fp8, 1);
    for (long it = 0; it < t->o->eval_iters && !rc; it++) {
        uint64_t base = (uint64_t)it * (uint64_t)t->o->global_batch;
        for (long a = 0; a < t->o->accum && !rc; a++) {
            rc = fill_batch(t, DATA_VALID, slice_start(t, base, a), 0);
            struct cpu_run r = { t, NULL, 0.0f, 0, 0.0 };
            struct pp_ops ops = { &r, run_forward, run_backward, run_exchange, run_finish };
            struct pp_sched sc = cpu_sched(t);
            if (!rc) /* the virtual stages in turn */
                rc = pp_sched_forward(&sc, &ops, 0);
            sum += r.loss_sum;
            n++;
        }
    }
    if (t->fp8)
        cpu_fp8_freeze(t->fp8, 0);
    rc = all_ok(t, rc);
    if (rc)
        return rc;
    if (!t->sh.last_stage || t->at.tp != 0)
        sum = 0.0;
    double v[2] = { sum, (double)n };
    sl_world_allreduce_f64(t->w, v, 1, SL_SUM);
    sl_world_allreduce_f64(&t->dpg, v + 1, 1, SL_SUM);
    *loss = v[0] / v[1];
    return 0;
}

static int cpu_save(void *ctx, const struct ckpt_state *st)
{
    struct cpu_trainer *t = ctx;
    const struct train_opts *o = t->o;
    int rc = 0;
    /* the moments laid out as the slab: under ZeRO gathered to data-parallel rank 0; the
     * parameters under ZeRO-3 all-gathered */
    size_t ln = t->l->total;
    float *mv = NULL, *m = t->m, *v = t->v, *params = t->params, *full = NULL;
    if (t->zero == 3 && (rc = all_ok(t, zero_whole(t, 0, &params))))
        goto out;
    if (t->zero) {
        if (t->at.dp == 0 && !(mv = aligned_alloc(64, sl_mul_size(2 * ln, sizeof(float)))))
            rc = sl_err_set(SL_ERR_NOMEM, "cannot allocate %.1f GiB to gather the AdamW state",
                            2.0 * ln * sizeof(float) / (1u << 30));
        if (mv)
            memset(mv, 0, 2 * ln * sizeof(float));
        if (!(rc = all_ok(t, rc)))
            rc = zero_gather_moment(t, t->m, mv);
        if (!rc)
            rc = zero_gather_moment(t, t->v, mv ? mv + ln : NULL);
        if ((rc = all_ok(t, rc)))
            goto out;
        m = mv;
        v = mv ? mv + ln : NULL;
    }
    if (!t->parallel) {
        if (t->w->rank == 0)
            rc = ckpt_save(o->ckpt_dir, &o->mc, t->l, params, m, v, st, o->config_json,
                           o->optim_json);
        rc = all_ok(t, rc);
        goto out;
    }
    /* gathered to full tensors: a checkpoint is the same for every layout */
    size_t n = t->fl.total;
    if (t->w->rank == 0 && !(full = aligned_alloc(64, sl_mul_size(3 * n, sizeof(float)))))
        rc = sl_err_set(SL_ERR_NOMEM, "cannot allocate %.1f GiB to gather the checkpoint",
                        3.0 * n * sizeof(float) / (1u << 30));
    if ((rc = all_ok(t, rc)))
        goto out;
    rc = gather_full(t, params, full);
    if (!rc)
        rc = gather_full(t, m, full ? full + n : NULL);
    if (!rc)
        rc = gather_full(t, v, full ? full + 2 * n : NULL);
    if (!rc && t->w->rank == 0)
        rc = ckpt_save(o->ckpt_dir, &o->mc, &t->fl, full, full + n, full + 2 * n, st,
                       o->config_json, o->optim_json);
    rc = all_ok(t, rc);
out:
    free(full);
    free(mv);
    if (params != t->params)
        free(params);
    return rc;
}

const struct train_backend train_backend_cpu = {
    .name = "cpu",
    .setup = cpu_setup,
    .load = cpu_load,
    .step = cpu_step,
    .evaluate = cpu_evaluate,
    .params_host = cpu_params_host,
    .state = cpu_state,
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
