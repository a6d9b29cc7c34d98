/* Model parallelism's layout: the parallel.* keys, Megatron's rank order, and the map from a
 * rank's local tensors to the full model's (train/parallel.h). */
#include "train/parallel.h"

#include "core/alloc.h"
#include "core/buf.h"
#include "core/config.h"
#include "core/err.h"
#include "core/world.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int where_err(struct sl_cfg *root, const char *key, const char *fmt, long a, long b,
                     const char *hint)
{
    struct sl_cfg *n = root ? sl_cfg_get(root, key) : NULL;
    char what[256];
    snprintf(what, sizeof(what), fmt, a, b);
    return sl_err_set(SL_ERR_CONFIG, "%s: %s: %s%s%s", n ? sl_cfg_where(n) : "config", key, what,
                      hint ? "\nhint: " : "", hint ? hint : "");
}

static int check(const struct parallel_config *p, const struct model_config *mc,
                 struct sl_cfg *root)
{
    long tp = p->tp, pp = p->pp;
    if (mc->n_kv_heads % tp)
        return where_err(root, "parallel.tensor",
                         "%ld key/value heads (model.num_query_groups) do not split over %ld ranks",
                         mc->n_kv_heads, tp,
                         "tensor parallel splits the KV heads as Megatron-Core does and does not "
                         "replicate them: choose a parallel.tensor that divides "
                         "model.num_query_groups");
    if (mc->n_heads % tp)
        return where_err(root, "parallel.tensor", "%ld attention heads do not split over %ld ranks",
                         mc->n_heads, tp, NULL);
    if (mc->d_ff % tp)
        return where_err(root, "parallel.tensor",
                         "model.ffn_hidden_size %ld does not split over %ld ranks", mc->d_ff, tp,
                         NULL);
    if (mc->n_layers < pp)
        return where_err(root, "parallel.pipeline", "%ld stages for %ld layers", pp, mc->n_layers,
                         "every pipeline stage needs at least one layer");
    long vp = p->vp > 1 ? p->vp : 1;
    if (vp > 1 && pp == 1)
        return where_err(root, "parallel.virtual_stages",
                         "%ld virtual stages need pipeline parallelism (parallel.pipeline is "
                         "%ld)",
                         vp, pp, NULL);
    if (mc->n_layers < pp * vp) {
        struct sl_cfg *n = root ? sl_cfg_get(root, "parallel.virtual_stages") : NULL;
        return sl_err_set(SL_ERR_CONFIG,
                          "%s: parallel.virtual_stages: %ld stages x %ld virtual stages for %d "
                          "layers\nhint: every virtual pipeline stage needs at least one layer",
                          n ? sl_cfg_where(n) : "config", pp, vp, mc->n_layers);
    }
    if (p->world % (tp * pp))
        return where_err(root, "parallel.tensor",
                         "%ld ranks do not divide into tensor x pipeline = %ld ranks per replica",
                         p->world, tp * pp,
                         "the world size must be a multiple of parallel.tensor x "
                         "parallel.pipeline (data parallel takes the rest)");
    if (p->sp && tp == 1)
        return where_err(root, "parallel.sequence",
                         "sequence parallel needs tensor parallel (parallel.tensor is %ld)%.0ld",
                         tp, 0, NULL);
    return 0;
}

int parallel_check(const struct parallel_config *p, const struct model_config *mc)
{
    return check(p, mc, NULL);
}

int parallel_config_load(struct parallel_config *p, struct sl_cfg *root, int world,
                         const struct model_config *mc)
{
    memset(p, 0, sizeof(*p));
    long tp, pp, vp;
    int rc;
    if ((rc = sl_cfg_int(root, "parallel.tensor", 1, &tp)) ||
        (rc = sl_cfg_int(root, "parallel.pipeline", 1, &pp)) ||
        (rc = sl_cfg_int(root, "parallel.virtual_stages", 1, &vp)) ||
        (rc = sl_cfg_bool(root, "parallel.sequence", 0, &p->sp)))
        return rc;
    if (tp < 1 || tp > 65536)
        return where_err(root, "parallel.tensor", "must be in [1, 65536], got %ld%.0ld", tp, 0,
                         NULL);
    if (pp < 1 || pp > 65536)
        return where_err(root, "parallel.pipeline", "must be in [1, 65536], got %ld%.0ld", pp, 0,
                         NULL);
    if (vp < 1 || vp > PARALLEL_MAX_VP)
        return where_err(root, "parallel.virtual_stages", "must be in [1, %ld], got %ld",
                         PARALLEL_MAX_VP, vp, NULL);
    p->tp = (int)tp;
    p->pp = (int)pp;
    p->vp = (int)vp;
    long dp = 0;
    if ((rc = sl_cfg_int(root, "parallel.data", 0, &dp)))
        return rc;
    if (dp < 0 || dp > 1 << 20)
        return where_err(root, "parallel.data", "must be in [1, 1048576], got %ld%.0ld", dp, 0,
                         NULL);
    if (world <= 0) /* no world yet (--print-config): the layout as given */
        world = (int)(tp * pp * (dp ? dp : 1));
    p->world = world;
    if ((rc = check(p, mc, root)))
        return rc;
    p->dp = world / (p->tp * p->pp);
    if (dp && dp != p->dp)
        return where_err(root, "parallel.data",
                         "%ld data-parallel replicas given, but the world makes %ld", dp, p->dp,
                         "parallel.data is optional: world / (tensor x pipeline)");
    return 0;
}

void parallel_coord_of(const struct parallel_config *p, int rank, struct parallel_coord *c)
{
    c->tp = rank % p->tp;
    c->dp = rank / p->tp % p->dp;
    c->pp = rank / (p->tp * p->dp);
}

int parallel_rank_of(const struct parallel_config *p, const struct parallel_coord *c)
{
    return c->tp + p->tp * (c->dp + p->dp * c->pp);
}

void parallel_chunk_layers(const struct parallel_config *p, int n_layers, int stage, int chunk,
                           int *first, int *n)
{
    int nv = p->pp * (p->vp > 1 ? p->vp : 1), v = chunk * p->pp + stage;
    int base = n_layers / nv, extra = n_layers % nv;
    *n = base + (v < extra);
    *first = v * base + (v < extra ? v : extra);
}

void parallel_stage_layers(const struct parallel_config *p, int n_layers, int stage, int *first,
                           int *n)
{
    parallel_chunk_layers(p, n_layers, stage, 0, first, n);
}

static void one_piece(struct tensor_shard *t, int64_t lrow, int64_t frow, int64_t nrows)
{
    if (nrows > 0)
        t->rows[t->nrows++] = (struct shard_rows){ lrow, frow, nrows };
}

void model_shard_init(struct model_shard *s, const struct parallel_config *p,
                      const struct parallel_coord *at, const struct model_config *full,
                      const struct model_layout *fl)
{
    memset(s, 0, sizeof(*s));
    s->p = *p;
    s->at = *at;
    int t = p->tp, r = at->tp;
    struct model_config *c = &s->local;
    *c = *full;
    c->n_heads = full->n_heads / t;
    c->n_kv_heads = full->n_kv_heads / t;
    c->d_ff = full->d_ff / t;
    int rows = (full->padded_vocab_size + t - 1) / t;
    s->vocab_start = r * rows;
    c->padded_vocab_size = rows;
    int valid = full->vocab_size - s->vocab_start;
    c->vocab_size = valid < 0 ? 0 : valid > rows ? rows : valid;
    int nl = 0;
    s->nchunks = p->vp > 1 ? p->vp : 1;
    for (int k = 0; k < s->nchunks; k++) {
        parallel_chunk_layers(p, full->n_layers, at->pp, k, &s->chunk_full[k], &s->chunk_n[k]);
        s->chunk_local[k] = nl;
        nl += s->chunk_n[k];
    }
    s->first_layer = s->chunk_full[0];
    c->n_layers = nl;
    s->first_stage = at->pp == 0;
    s->last_stage = at->pp == p->pp - 1;
    if (!s->first_stage && !s->last_stage)
        c->padded_vocab_size = c->vocab_size = 0; /* a middle stage holds no vocabulary */
    model_layout_init(&s->l, c);
    s->t = sl_xcalloc((size_t)s->l.n, sizeof(*s->t));
    int hd = full->head_dim, H = full->n_heads, Hkv = full->n_kv_heads;
    int Hl = c->n_heads, Hkvl = c->n_kv_heads, F = full->d_ff, Fl = c->d_ff;
    for (int i = 0; i < s->l.n; i++) {
        const struct model_tensor *lt = &s->l.t[i];
        struct tensor_shard *x = &s->t[i];
        x->col = -1;
        x->full = -1;
        char name[MODEL_NAME_MAX];
        int used = 1;
        if (lt->layer >= 0) {
            const char *rest = strchr(lt->name + strlen("layers."), '.');
            int k = s->nchunks - 1;
            while (k > 0 && lt->layer < s->chunk_local[k])
                k--;
            snprintf(name, sizeof(name), "layers.%d%s",
                     s->chunk_full[k] + lt->layer - s->chunk_local[k], rest);
        } else {
            snprintf(name, sizeof(name), "%s", lt->name);
            if (lt->kind == MODEL_T_EMBED)
                used = s->first_stage || (s->last_stage && full->tied_embeddings);
            else if (lt->kind == MODEL_T_POS)
                used = s->first_stage;
            else
                used = s->last_stage; /* final norm, output layer */
        }
        if (!used)
            continue;
        x->full = model_layout_find(fl, name);
        const struct model_tensor *ft = &fl->t[x->full];
        x->owner = 1;
        if (lt->kind == MODEL_T_EMBED && !s->first_stage)
            x->owner = 0; /* the tied output layer's copy on the last stage */
        if (lt->layer >= 0) {
            const struct model_layer_ids *id = &s->l.layer[lt->layer];
            if (i == id->qkv_w || i == id->qkv_b) {
                x->split = 1;
                one_piece(x, 0, (int64_t)r * Hl * hd, (int64_t)Hl * hd);
                one_piece(x, (int64_t)Hl * hd, (int64_t)(H + r * Hkvl) * hd, (int64_t)Hkvl * hd);
                one_piece(x, (int64_t)(Hl + Hkvl) * hd, (int64_t)(H + Hkv + r * Hkvl) * hd,
                          (int64_t)Hkvl * hd);
            } else if (i == id->fc_w || i == id->fc_b) {
                x->split = 1;
                one_piece(x, 0, (int64_t)r * Fl, Fl);
                if (full->act == MODEL_SWIGLU)
                    one_piece(x, Fl, (int64_t)F + (int64_t)r * Fl, Fl);
            } else if (i == id->attn_proj_w) {
                x->split = 1;
                x->col = (int64_t)r * Hl * hd;
            } else if (i == id->mlp_proj_w) {
                x->split = 1;
                x->col = (int64_t)r * Fl;
            }
        } else if (lt->kind == MODEL_T_EMBED || lt->kind == MODEL_T_LM_HEAD) {
            x->split = 1;
            int64_t n = ft->shape[0] - s->vocab_start;
            one_piece(x, 0, s->vocab_start, n < rows ? n : rows);
        }
        if (!x->split) {
            one_piece(x, 0, 0, lt->shape[0]);
            x->owner = x->owner && r == 0;
        }
        if (x->col >= 0)
            one_piece(x, 0, 0, lt->shape[0]);
    }
    /* tensors the stage does not use (the output layer on the first stage, the embedding on
     * the last of an untied model) take no room: zero rows, offsets laid out again */
    s->l.total = s->l.params = 0;
    for (int i = 0; i < s->l.n; i++) {
        struct model_tensor *lt = &s->l.t[i];
        if (s->t[i].full < 0) {
            lt->shape[0] = 0;
            lt->numel = 0;
        }
        lt->offset = s->l.total;
        s->l.total += (lt->numel + MODEL_ALIGN - 1) / MODEL_ALIGN * MODEL_ALIGN;
        s->l.params += lt->numel;
    }
}

void model_shard_release(struct model_shard *s)
{
    free(s->t);
    model_layout_release(&s->l);
    memset(s, 0, sizeof(*s));
}

static void copy(const struct model_shard *s, const struct model_layout *fl, float *full,
                 float *local, int to_local, int all)
{
    for (int i = 0; i < s->l.n; i++) {
        const struct tensor_shard *x = &s->t[i];
        if (x->full < 0 || (!to_local && !all && !x->owner))
            continue;
        const struct model_tensor *lt = &s->l.t[i], *ft = &fl->t[x->full];
        int64_t lc = lt->shape[1], fc = ft->shape[1];
        int64_t c0 = x->col >= 0 ? x->col : 0;
        for (int k = 0; k < x->nrows; k++)
            for (int64_t row = 0; row < x->rows[k].nrows; row++) {
                float *lp = local + lt->offset + (size_t)(x->rows[k].lrow + row) * (size_t)lc;
                float *fp = full + ft->offset + (size_t)(x->rows[k].frow + row) * (size_t)fc + c0;
                if (to_local)
                    memcpy(lp, fp, (size_t)lc * sizeof(float));
                else
                    memcpy(fp, lp, (size_t)lc * sizeof(float));
            }
    }
}

void model_shard_slice(const struct model_shard *s, const struct model_layout *fl,
                       const float *full, float *local)
{
    copy(s, fl, (float *)full, local, 1, 0);
}

void model_shard_place(const struct model_shard *s, const struct model_layout *fl,
                       const float *local, float *full, int all)
{
    copy(s, fl, full, (float *)local, 0, all);
}

int parallel_gather_full(const struct sl_world *group, const struct parallel_config *p,
                         const struct model_config *mc, const struct model_layout *fl,
                         const float *local, size_t local_n, float *full)
{
    struct sl_buf all = SL_BUF_INIT;
    uint64_t *counts = sl_xcalloc((size_t)group->size, sizeof(uint64_t));
    int rc = sl_world_gather_bytes(group, local, local_n * sizeof(float), 0, &all, counts);
    if (!rc && group->rank == 0 && full) {
        memset(full, 0, fl->total * sizeof(float));
        size_t off = 0;
        for (int k = 0; k < group->size && !rc; k++) {
            struct parallel_coord at = { k % p->tp, 0, k / p->tp };
            struct model_shard s;
            model_shard_init(&s, p, &at, mc, fl);
            if (counts[k] != s.l.total * sizeof(float))
                rc = sl_err_set(SL_ERR_STATE, "gather: rank %d sent %llu bytes, expected %zu", k,
                                (unsigned long long)counts[k], s.l.total * sizeof(float));
            else
                model_shard_place(&s, fl, (const float *)(all.data + off), full, 0);
            off += counts[k];
            model_shard_release(&s);
        }
    }
    free(counts);
    sl_buf_release(&all);
    return rc;
}

/* Floats of the CPU model's activation slab (train/cpu_model.c) for one micro-batch of
 * B x T tokens on a stage with the local config c, ignoring its 64-float rounding. */
static double cpu_act_floats(const struct parallel_config *p, const struct model_config *c,
                             int last, double B, double T)
{
    double N = B * T, R = p->sp ? N / p->tp : N, D = c->d_model, H = c->n_heads;
    double qkv = model_qkv_dim(c), qd = H * c->head_dim, fc = model_fc_dim(c), F = c->d_ff;
    double V = c->vocab_size;
    double layer =
        2 * R * D + 2 * N * D + 4 * R + N * qkv + B * H * T * T + N * qd + N * fc + N * F;
    double f = c->n_layers * layer + R * D + T * (c->head_dim + 2); /* output, RoPE tables */
    if (last)
        f += N * D + 2 * R + N * V + 2 * N + D * V; /* final norm, logits, losses, head grad */
    if (p->tp > 1) {
        f += N * D + (last ? 5 * N : 0);
        if (p->sp)
            f += R * D + N * D;
    }
    return f + R * D + N * D + N * qkv + N * qd + N * fc + N * F; /* backward scratch */
}

long parallel_cpu_slots(const struct parallel_config *p, long accum)
{
    if (p->vp <= 1)
        return p->pp < accum ? p->pp : accum;
    /* the interleaved schedule of every stage (train/cpu_train.c), counting the
     * micro-batches each chunk has in flight */
    long pp = p->pp, v = p->vp, total = accum * v, most = 1;
    long *in = sl_xcalloc((size_t)v, sizeof(long));
    for (long st = 0; st < pp; st++) {
        long warm = accum == pp ? total : 2 * (pp - st - 1) + (v - 1) * pp;
        warm = warm < total ? warm : total;
        memset(in, 0, (size_t)v * sizeof(long));
        for (long f = 0, b = 0; b < total;) {
            int fwd = f < total && (f < warm || f - warm == b); /* warm-up, then F B F B */
            long k = fwd ? f++ : b++, c = k % (pp * v) / pp;
            if (fwd) {
                if (++in[c] > most)
                    most = in[c];
            } else {
                in[v - 1 - c]--;
            }
        }
    }
    free(in);
    return most < accum ? most : accum;
}

/* Activation sets pipeline stage st keeps (parallel_gpu_estimate). */
static long stage_sets(const struct parallel_config *p, int st, long accum)
{
    if (p->pp == 1)
        return 1;
    if (p->vp > 1)
        return parallel_cpu_slots(p, accum);
    long k = p->pp - st;
    return k < accum ? k : accum;
}

int parallel_gpu_estimate(const struct parallel_config *p, const struct model_config *mc,
                          const struct parallel_gpu_opts *o, struct parallel_gpu_rank *out)
{
    struct model_layout fl;
    model_layout_init(&fl, mc);
    int best = 0, rc = 0;
    for (int st = 0; st < p->pp && !rc; st++) {
        struct model_shard sh;
        struct parallel_coord at = { 0, 0, st };
        model_shard_init(&sh, p, &at, mc, &fl);
        struct gpu_plan_in in;
        memset(&in, 0, sizeof(in));
        in.mc = sh.local;
        if (!sh.last_stage)
            in.mc.padded_vocab_size = 0; /* the logits are the last stage's */
        in.l = &sh.l;
        in.micro_batch = o->micro_batch;
        in.seq_len = o->seq_len;
        in.accum = o->accum;
        in.eval_iters = o->eval_iters;
        in.recompute = o->recompute;
        in.zero = o->zero < 1 ? 1 : o->zero;
        in.dp = p->dp;
        in.tp = p->tp;
        in.sp = p->sp;
        in.sets = stage_sets(p, st, o->accum);
        in.pipeline = p->pp > 1;
        in.no_head = !sh.last_stage;
        in.docs = o->docs;
        gpu_plan_own_kernels(&in, &in.ws);
        struct gpu_plan plan;
        if (!(rc = gpu_plan_build(&plan, &in))) {
            struct parallel_gpu_rank *r = &out[st];
            r->stage = st;
            r->sets = in.sets;
            r->params = sh.l.params;
            memcpy(r->cat, plan.cat, sizeof(r->cat));
            r->total = plan.total;
            if (r->total > out[best].total)
                best = st;
            gpu_plan_release(&plan);
        }
        model_shard_release(&sh);
    }
    model_layout_release(&fl);
    return rc ? rc : best;
}

/* parallel_memory_estimate's GPU side: the arena of the largest stage (or of `stage`),
 * ZeRO-1 at least, no recomputation, without the validation buffers. */
static void gpu_memory(const struct parallel_config *p, const struct model_config *mc,
                       long micro_batch, long seq_len, long accum, int stage,
                       struct parallel_memory *m)
{
    struct parallel_gpu_opts o = { micro_batch, seq_len, accum, 0, 0, p->zero, 0 };
    struct parallel_gpu_rank *r = sl_xcalloc((size_t)p->pp, sizeof(*r));
    int best = parallel_gpu_estimate(p, mc, &o, r);
    if (best >= 0) {
        const struct parallel_gpu_rank *b = &r[stage >= 0 && stage < p->pp ? stage : best];
        m->params = b->params;
        m->weights_bytes =
            (double)(b->cat[GPU_PLAN_PARAMS] + b->cat[GPU_PLAN_GRADS] + b->cat[GPU_PLAN_OPTIM]);
        m->act_bytes = (double)b->cat[GPU_PLAN_ACTS];
    }
    free(r);
}

/* ZeRO-2 and -3 on the CPU path, bytes of the largest stage (stage -1) or of `stage`: the
 * pieces (gradient, moments, ZeRO-3 parameters) at 1 / dp of the shard, the whole fp32
 * parameters (ZeRO-2), and the working buffers of one layer and of the tensors outside the
 * layers: the gradient's, ZeRO-3 the gathered parameters' too (train/cpu_zero.c). */
static double cpu_zero23_bytes(const struct parallel_config *p, const struct model_config *mc,
                               int stage)
{
    struct model_layout fl;
    model_layout_init(&fl, mc);
    double most = 0.0;
    for (int st = 0; st < p->pp; st++) {
        if (stage >= 0 && st != stage)
            continue;
        struct model_shard sh;
        struct parallel_coord at = { 0, 0, st };
        model_shard_init(&sh, p, &at, mc, &fl);
        size_t layer, outer;
        model_layout_buckets(&sh.l, &layer, &outer);
        double piece = (double)sh.l.params / p->dp, work = (double)(layer + outer);
        double f =
            p->zero == 3 ? 4.0 * piece + 2.0 * work : (double)sh.l.total + 3.0 * piece + work;
        if (4.0 * f > most)
            most = 4.0 * f;
        model_shard_release(&sh);
    }
    model_layout_release(&fl);
    return most;
}

void parallel_memory_estimate(const struct parallel_config *p, const struct model_config *mc,
                              long micro_batch, long seq_len, long accum, int gpu, int stage,
                              struct parallel_memory *m)
{
    memset(m, 0, sizeof(*m));
    if (gpu) {
        gpu_memory(p, mc, micro_batch, seq_len, accum, stage, m);
        return;
    }
    struct model_layout fl;
    model_layout_init(&fl, mc);
    long slots = parallel_cpu_slots(p, accum);
    double s = (double)seq_len, b = (double)micro_batch;
    /* the largest stage: its tensor-parallel rank 0 holds the replicated tensors too */
    for (int st = 0; st < p->pp; st++) {
        if (stage >= 0 && st != stage)
            continue;
        struct model_shard sh;
        struct parallel_coord at = { 0, 0, st };
        model_shard_init(&sh, p, &at, mc, &fl);
        uint64_t n = sh.l.params;
        if (n > m->params)
            m->params = n;
        double act = 0.0;
        for (int k = 0; k < sh.nchunks; k++) {
            struct model_config cc = sh.local;
            cc.n_layers = sh.chunk_n[k];
            act += 4.0 * (double)slots *
                   cpu_act_floats(p, &cc, sh.last_stage && k == sh.nchunks - 1, b, s);
        }
        if (act > m->act_bytes)
            m->act_bytes = act;
        model_shard_release(&sh);
    }
    model_layout_release(&fl);
    double cpu = p->zero ? 8.0 + 8.0 / p->dp : 16.0;
    if (p->zero >= 2 && p->dp > 1 && m->params)
        cpu = cpu_zero23_bytes(p, mc, stage) / (double)m->params;
    m->weights_bytes = cpu * (double)m->params;
}
