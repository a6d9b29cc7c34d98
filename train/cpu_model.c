/* CPU reference forward/backward: the layer loop over the kernels of train/cpu_ops.c, with
 * every activation kept for the backward pass in one slab. */
#include "train/cpu_model.h"

#include "core/err.h"
#include "core/world.h"
#include "train/cpu_fp8.h"
#include "train/cpu_ops.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#ifdef _OPENMP
#include <omp.h>
#endif

struct cpu_layer_acts {
    float *res;            /* [R, D] input residual (R = rows of this rank) */
    float *n1, *n1m, *n1r; /* attention norm output [N, D] (gathered with SP), mean, rstd [R] */
    float *qkv;            /* [N, QKV] after RoPE */
    float *att;            /* [B, H, T, T] probabilities */
    float *atty;           /* [N, H*hd] */
    float *mid;            /* [R, D] residual after attention */
    float *n2, *n2m, *n2r; /* MLP norm */
    float *fc;             /* [N, FC] pre-activation */
    float *act;            /* [N, F] */
};

struct cpu_model {
    struct model_config c;
    const struct model_layout *l;
    struct cpu_model_par par;
    int tp, rank; /* tensor-parallel size and rank (1, 0 without) */
    int B, T, N, V;
    int R, row0; /* rows of the residual stream held: [row0, row0 + R) of N */
    int err;
    float *slab;
    size_t slab_floats;
    struct cpu_layer_acts *la;
    float *res_out;             /* [R, D] residual after the last layer */
    float *nf, *nfm, *nfr;      /* final norm: [N, D] output, [R] mean, rstd */
    float *logits;              /* [N, V] */
    float *losses, *lse;        /* [N] */
    float *rope_cos, *rope_sin; /* [T, hd/2] */
    /* the documents of the next passes (cpu_model_set_docs; borrowed, NULL: none) and the
     * loss mask's count of unmasked positions in the last forward */
    const int32_t *dpos, *dstart;
    const float *lmask;
    int lkept;
    /* tensor parallel: a partial sum before its reduction [N, D], a norm's local output
     * [R, D], targets in local columns (-1: another rank's) and the cross-entropy's parts */
    float *part, *nloc, *mx, *tlogit;
    double *sumexp;
    int32_t *ltargets;
    /* backward scratch; dfull: the gathered gradient of the residual stream [N, D] (SP) */
    float *dres, *dn, *dqkv, *datty, *dfc, *dact, *att_scratch, *dfull;
    float *head_t; /* [D, V]: the output layer's weight gradient, transposed */
};

void cpu_model_set_docs(struct cpu_model *m, const int32_t *pos, const int32_t *start,
                        const float *lmask)
{
    m->dpos = pos;
    m->dstart = start;
    m->lmask = lmask;
}

size_t cpu_model_bytes(const struct cpu_model *m)
{
    return m->slab_floats * sizeof(float);
}

const float *cpu_model_logits(const struct cpu_model *m)
{
    return m->logits;
}

int cpu_model_error(const struct cpu_model *m)
{
    return m->err;
}

int cpu_model_rows(const struct cpu_model *m)
{
    return m->R;
}

float *cpu_model_stage_out(struct cpu_model *m)
{
    return m->res_out;
}

const float *cpu_model_stage_din(const struct cpu_model *m)
{
    return m->dres;
}

/* Carve n floats (rounded up to 64) from the slab; with base NULL only count. */
static float *carve(float *base, size_t *off, size_t n)
{
    float *p = base ? base + *off : NULL;
    *off += (n + 63) / 64 * 64;
    return p;
}

static size_t layout_acts(struct cpu_model *m, float *base)
{
    const struct model_config *c = &m->c;
    size_t off = 0, N = (size_t)m->N, R = (size_t)m->R, D = (size_t)c->d_model;
    size_t qkv = (size_t)model_qkv_dim(c), qd = (size_t)c->n_heads * c->head_dim;
    size_t fc = (size_t)model_fc_dim(c), F = (size_t)c->d_ff;
    size_t att = (size_t)m->B * c->n_heads * m->T * m->T;
    int last = m->par.last_stage;
    for (int i = 0; i < c->n_layers; i++) {
        struct cpu_layer_acts *a = &m->la[i];
        a->res = carve(base, &off, R * D);
        a->n1 = carve(base, &off, N * D);
        a->n1m = carve(base, &off, R);
        a->n1r = carve(base, &off, R);
        a->qkv = carve(base, &off, N * qkv);
        a->att = carve(base, &off, att);
        a->atty = carve(base, &off, N * qd);
        a->mid = carve(base, &off, R * D);
        a->n2 = carve(base, &off, N * D);
        a->n2m = carve(base, &off, R);
        a->n2r = carve(base, &off, R);
        a->fc = carve(base, &off, N * fc);
        a->act = carve(base, &off, N * F);
    }
    m->res_out = carve(base, &off, R * D);
    if (last) {
        m->nf = carve(base, &off, N * D);
        m->nfm = carve(base, &off, R);
        m->nfr = carve(base, &off, R);
        m->logits = carve(base, &off, N * (size_t)m->V);
        m->losses = carve(base, &off, N);
        m->lse = carve(base, &off, N);
    }
    m->rope_cos = carve(base, &off, (size_t)m->T * (c->head_dim / 2 + 1));
    m->rope_sin = carve(base, &off, (size_t)m->T * (c->head_dim / 2 + 1));
    if (m->tp > 1) {
        m->part = carve(base, &off, N * D);
        if (last) {
            m->mx = carve(base, &off, N);
            m->tlogit = carve(base, &off, N);
            m->sumexp = (double *)carve(base, &off, 2 * N);
            m->ltargets = (int32_t *)carve(base, &off, N);
        }
        if (m->par.sp) {
            m->nloc = carve(base, &off, R * D);
            m->dfull = carve(base, &off, N * D);
        }
    }
    m->dres = carve(base, &off, R * D);
    m->dn = carve(base, &off, N * D);
    m->dqkv = carve(base, &off, N * qkv);
    m->datty = carve(base, &off, N * qd);
    m->dfc = carve(base, &off, N * fc);
    m->dact = carve(base, &off, N * F);
    if (last)
        m->head_t = carve(base, &off, D * (size_t)m->V);
    int threads = 1;
#ifdef _OPENMP
    threads = omp_get_max_threads();
#endif
    m->att_scratch = carve(base, &off, (size_t)threads * m->T);
    return off;
}

int cpu_model_new(struct cpu_model **out, const struct model_config *c,
                  const struct model_layout *l, int B, int T)
{
    return cpu_model_new_par(out, c, l, B, T, NULL);
}

int cpu_model_new_par(struct cpu_model **out, const struct model_config *c,
                      const struct model_layout *l, int B, int T, const struct cpu_model_par *par)
{
    *out = NULL;
    if (T > c->max_seq_len)
        return sl_err_set(SL_ERR_CONFIG,
                          "sequence length %d is longer than the model's "
                          "max_position_embeddings %d",
                          T, c->max_seq_len);
    if (B <= 0 || T <= 0)
        return sl_err_set(SL_ERR_CONFIG, "micro-batch size and sequence length must be positive");
    int tp = par && par->tp ? par->tp->size : 1;
    if (par && par->sp && (B * T) % tp)
        return sl_err_set(SL_ERR_CONFIG,
                          "sequence parallel splits the %d x %d tokens of a micro-batch into %d "
                          "equal parts: they do not divide\nhint: choose train.seq_len x "
                          "train.micro_batch_size divisible by parallel.tensor",
                          B, T, tp);
    struct cpu_model *m = calloc(1, sizeof(*m));
    if (!m)
        return sl_err_set(SL_ERR_NOMEM, "out of memory for the CPU model");
    m->c = *c;
    m->l = l;
    if (par)
        m->par = *par;
    else
        m->par = (struct cpu_model_par){ .first_stage = 1, .last_stage = 1 };
    m->tp = tp;
    m->rank = par && par->tp ? par->tp->rank : 0;
    if (tp == 1)
        m->par.sp = 0;
    m->B = B;
    m->T = T;
    m->N = B * T;
    m->R = m->par.sp ? m->N / tp : m->N;
    m->row0 = m->par.sp ? m->rank * m->R : 0;
    m->V = c->vocab_size;
    m->la = calloc((size_t)(c->n_layers ? c->n_layers : 1), sizeof(*m->la));
    if (!m->la) {
        free(m);
        return sl_err_set(SL_ERR_NOMEM, "out of memory for the CPU model");
    }
    m->slab_floats = layout_acts(m, NULL);
    m->slab = aligned_alloc(64, m->slab_floats * sizeof(float));
    if (!m->slab) {
        size_t gib10 = m->slab_floats * sizeof(float) / (1u << 20) * 10 / 1024;
        free(m->la);
        free(m);
        return sl_err_set(SL_ERR_NOMEM,
                          "cannot allocate %zu.%zu GiB of activations for micro-batch %d x %d\n"
                          "hint: lower train.micro_batch_size or train.seq_len",
                          gib10 / 10, gib10 % 10, B, T);
    }
    memset(m->slab, 0, m->slab_floats * sizeof(float));
    layout_acts(m, m->slab);
    if (c->pos == MODEL_POS_ROPE) {
        int half = c->head_dim / 2;
        double *inv = malloc(((size_t)half + 1) * sizeof(double));
        if (!inv) {
            cpu_model_free(m);
            return sl_err_set(SL_ERR_NOMEM, "out of memory for the RoPE tables");
        }
        model_rope_inv_freq(c, inv);
        for (int t = 0; t < T; t++)
            for (int i = 0; i < half; i++) {
                /* like the reference implementations: angle in fp32, then cos/sin */
                float ang = (float)t * (float)inv[i];
                m->rope_cos[(size_t)t * half + i] = cosf(ang);
                m->rope_sin[(size_t)t * half + i] = sinf(ang);
            }
        free(inv);
    }
    *out = m;
    return 0;
}

void cpu_model_free(struct cpu_model *m)
{
    if (!m)
        return;
    free(m->slab);
    free(m->la);
    free(m);
}

static const float *P(const struct cpu_model *m, const float *params, int id)
{
    if (id < 0)
        return NULL;
    return m->par.hooks ? m->par.hooks->param[id] : params + m->l->t[id].offset;
}

static float *G(const struct cpu_model *m, float *grads, int id)
{
    if (id < 0)
        return NULL;
    return m->par.hooks ? m->par.hooks->grad[id] : grads + m->l->t[id].offset;
}

/* ---- tensor-parallel communication (Megatron's f, g and their sequence-parallel forms) -- */

static void note(struct cpu_model *m, int rc)
{
    if (rc && !m->err)
        m->err = rc;
}

/* A column-parallel layer's input: with SP the norm's rows [R, D] (in m->nloc) are gathered
 * into full[N, D]; otherwise the norm wrote full itself. */
static void gather_rows(struct cpu_model *m, float *full, const float *mine)
{
    if (m->par.sp)
        note(m, sl_world_allgather_f32(m->par.tp, mine, full, (size_t)m->R * m->c.d_model));
}

/* Product `which` of local layer li, y[N, OC] = x[N, IC] . W^T + b: in FP8 where the model
 * has it. */
static void layer_linear_fwd(struct cpu_model *m, int li, int which, float *y, const float *x,
                             const float *W, const float *b, int IC, int OC)
{
    if (m->par.fp8)
        cpu_fp8_linear_fwd(m->par.fp8, li * 4 + which, y, x, W, b, m->N, IC, OC);
    else
        cpu_linear_fwd(y, x, W, b, m->N, IC, OC);
}

/* Its backward (cpu_linear_bwd's). */
static void layer_linear_bwd(struct cpu_model *m, int li, int which, float *dx, float *dW,
                             float *db, const float *dy, const float *x, const float *W, int IC,
                             int OC)
{
    if (m->par.fp8)
        cpu_fp8_linear_bwd(m->par.fp8, li * 4 + which, dx, dW, db, dy, x, W, m->N, IC, OC);
    else
        cpu_linear_bwd(dx, dW, db, dy, x, W, m->N, IC, OC, NULL);
}

/* The output of a row-parallel layer: y[R, D] = the sum over ranks of x[N, IC] . W^T (+ b),
 * all-reduced, or reduce-scattered to this rank's rows with SP. */
static void row_parallel_fwd(struct cpu_model *m, int li, int which, float *y, const float *x,
                             const float *W, const float *b, int IC)
{
    int N = m->N, D = m->c.d_model;
    if (m->tp == 1) {
        layer_linear_fwd(m, li, which, y, x, W, b, IC, D);
        return;
    }
    if (m->par.sp) {
        cpu_linear_fwd(m->part, x, W, NULL, N, IC, D);
        note(m, sl_world_reduce_scatter_f32(m->par.tp, m->part, y, (size_t)m->R * D));
    } else {
        cpu_linear_fwd(y, x, W, NULL, N, IC, D);
        note(m, sl_world_allreduce_f32(m->par.tp, y, (size_t)N * D, SL_SUM));
    }
    if (b)
        for (int n = 0; n < m->R; n++)
            for (int i = 0; i < D; i++)
                y[(size_t)n * D + i] += b[i];
}

/* The gradient of a column-parallel layer's input, partial over ranks in dn[N, D]: summed
 * (all-reduce), or reduce-scattered with SP; returns the rows [R, D] for the norm's
 * backward. */
static const float *col_parallel_dx(struct cpu_model *m, float *dn)
{
    if (m->tp == 1)
        return dn;
    size_t D = (size_t)m->c.d_model;
    if (m->par.sp) {
        note(m, sl_world_reduce_scatter_f32(m->par.tp, dn, m->nloc, (size_t)m->R * D));
        return m->nloc;
    }
    note(m, sl_world_allreduce_f32(m->par.tp, dn, (size_t)m->N * D, SL_SUM));
    return dn;
}

/* The gradient of a row-parallel layer's output over all N rows: dres itself, or gathered
 * from every rank's rows with SP. */
static const float *full_dres(struct cpu_model *m)
{
    if (!m->par.sp)
        return m->dres;
    note(m, sl_world_allgather_f32(m->par.tp, m->dres, m->dfull, (size_t)m->R * m->c.d_model));
    return m->dfull;
}

/* The trainer's need (after 0) or done (after 1) call for local layer li (ZeRO-2, -3). */
static void layer_hook(struct cpu_model *m, int li, int backward, int after)
{
    const struct cpu_model_hooks *h = m->par.hooks;
    if (h)
        note(m, (after ? h->done : h->need)(h->ctx, m->par.layer0 + li, backward));
}

static void add_rows(float *y, const float *x, size_t n)
{
#pragma omp parallel for schedule(static) if ((double)n >= 2097152.0)
    for (size_t i = 0; i < n; i++)
        y[i] += x[i];
}

static void embed_fwd(struct cpu_model *m, const float *params, const int32_t *tokens, float *x0)
{
    const struct model_config *c = &m->c;
    const struct model_layout *l = m->l;
    int N = m->N, T = m->T, D = c->d_model;
    const float *wte = P(m, params, l->embed), *wpe = P(m, params, l->pos);
    if (m->tp == 1) {
#pragma omp parallel for schedule(static) if ((double)N * D >= 2097152.0)
        for (int n = 0; n < N; n++) {
            const float *e = wte + (size_t)tokens[n] * D;
            float *o = x0 + (size_t)n * D;
            if (wpe) {
                const float *p = wpe + (size_t)(m->dpos ? m->dpos[n] : n % T) * D;
                for (int i = 0; i < D; i++)
                    o[i] = e[i] + p[i];
            } else {
                memcpy(o, e, (size_t)D * sizeof(float));
            }
        }
        return;
    }
    /* vocab-parallel: rows of this rank's ids, zeros for the others, summed over ranks */
    float *e = m->par.sp ? m->part : x0;
    int v0 = m->par.vocab_start, rows = c->padded_vocab_size;
    for (int n = 0; n < N; n++) {
        int id = tokens[n] - v0;
        float *o = e + (size_t)n * D;
        if (id >= 0 && id < rows)
            memcpy(o, wte + (size_t)id * D, (size_t)D * sizeof(float));
        else
            memset(o, 0, (size_t)D * sizeof(float));
    }
    if (m->par.sp)
        note(m, sl_world_reduce_scatter_f32(m->par.tp, e, x0, (size_t)m->R * D));
    else
        note(m, sl_world_allreduce_f32(m->par.tp, x0, (size_t)N * D, SL_SUM));
    if (wpe)
        for (int n = 0; n < m->R; n++) {
            int r = m->row0 + n;
            const float *p = wpe + (size_t)(m->dpos ? m->dpos[r] : r % T) * D;
            float *o = x0 + (size_t)n * D;
            for (int i = 0; i < D; i++)
                o[i] += p[i];
        }
}

/* The loss of the last stage: the output layer and the (vocab-parallel) cross-entropy. */
static float head_fwd(struct cpu_model *m, const float *params, const int32_t *targets)
{
    const struct model_config *c = &m->c;
    const struct model_layout *l = m->l;
    int N = m->N, D = c->d_model, rms = c->norm == MODEL_RMSNORM;
    float *nf_mine = m->par.sp ? m->nloc : m->nf;
    cpu_norm_fwd(nf_mine, m->nfm, m->nfr, m->res_out, P(m, params, l->final_norm_w),
                 P(m, params, l->final_norm_b), m->R, D, c->norm_eps, rms);
    gather_rows(m, m->nf, nf_mine);
    const float *head = c->tied_embeddings ? P(m, params, l->embed) : P(m, params, l->lm_head);
    cpu_linear_fwd(m->logits, m->nf, head, NULL, N, D, m->V);
    if (m->tp == 1) {
        cpu_xent_fwd(m->losses, m->lse, m->logits, targets, N, m->V);
    } else {
        int v0 = m->par.vocab_start;
        for (int n = 0; n < N; n++) {
            int id = targets[n] - v0;
            m->ltargets[n] = id >= 0 && id < m->V ? id : -1;
        }
        cpu_xent_partial(m->mx, m->sumexp, m->tlogit, m->logits, m->ltargets, N, m->V, 0);
        note(m, sl_world_allreduce_f32(m->par.tp, m->mx, (size_t)N, SL_MAX));
        note(m, sl_world_allreduce_f32(m->par.tp, m->tlogit, (size_t)N, SL_SUM));
        cpu_xent_partial(m->mx, m->sumexp, m->tlogit, m->logits, m->ltargets, N, m->V, 1);
        note(m, sl_world_allreduce_f64(m->par.tp, m->sumexp, (size_t)N, SL_SUM));
        for (int n = 0; n < N; n++) {
            m->lse[n] = (float)(log(m->sumexp[n]) + m->mx[n]);
            m->losses[n] = m->lse[n] - m->tlogit[n];
        }
    }
    double sum = 0.0;
    if (!m->lmask) {
        for (int n = 0; n < N; n++)
            sum += m->losses[n];
        return (float)(sum / N);
    }
    /* Megatron's masked mean: over the unmasked positions (none: 0, and no gradient) */
    m->lkept = 0;
    for (int n = 0; n < N; n++) {
        sum += (double)m->losses[n] * m->lmask[n];
        m->lkept += m->lmask[n] > 0.0f;
    }
    return m->lkept ? (float)(sum / m->lkept) : 0.0f;
}

float cpu_model_forward(struct cpu_model *m, const float *params, const int32_t *tokens,
                        const int32_t *targets)
{
    return cpu_model_forward_stage(m, params, tokens, targets, NULL);
}

float cpu_model_forward_stage(struct cpu_model *m, const float *params, const int32_t *tokens,
                              const int32_t *targets, const float *x_in)
{
    const struct model_config *c = &m->c;
    const struct model_layout *l = m->l;
    int N = m->N, T = m->T, D = c->d_model, R = m->R, rms = c->norm == MODEL_RMSNORM;
    int qkv = model_qkv_dim(c), qd = c->n_heads * c->head_dim, F = c->d_ff, fc = model_fc_dim(c);
    size_t RD = (size_t)R * D;
    float *x0 = c->n_layers ? m->la[0].res : m->res_out;
    if (m->par.first_stage)
        embed_fwd(m, params, tokens, x0);
    else
        memcpy(x0, x_in, RD * sizeof(float));
    for (int li = 0; li < c->n_layers; li++) {
        struct cpu_layer_acts *a = &m->la[li];
        const struct model_layer_ids *id = &l->layer[li];
        float *next = li + 1 < c->n_layers ? m->la[li + 1].res : m->res_out;
        float *n1 = m->par.sp ? m->nloc : a->n1;
        layer_hook(m, li, 0, 0);
        cpu_norm_fwd(n1, a->n1m, a->n1r, a->res, P(m, params, id->attn_norm_w),
                     P(m, params, id->attn_norm_b), R, D, c->norm_eps, rms);
        gather_rows(m, a->n1, n1);
        layer_linear_fwd(m, li, FP8_QKV, a->qkv, a->n1, P(m, params, id->qkv_w),
                         P(m, params, id->qkv_b), D, qkv);
        if (c->pos == MODEL_POS_ROPE)
            cpu_rope(a->qkv, m->rope_cos, m->rope_sin, m->B, T, c->n_heads, c->n_kv_heads,
                     c->head_dim, 0, m->dpos);
        cpu_attention_fwd(a->atty, a->att, a->qkv, m->B, T, c->n_heads, c->n_kv_heads, c->head_dim,
                          m->dstart);
        row_parallel_fwd(m, li, FP8_ATTN_PROJ, a->mid, a->atty, P(m, params, id->attn_proj_w),
                         P(m, params, id->attn_proj_b), qd);
        add_rows(a->mid, a->res, RD);
        float *n2 = m->par.sp ? m->nloc : a->n2;
        cpu_norm_fwd(n2, a->n2m, a->n2r, a->mid, P(m, params, id->mlp_norm_w),
                     P(m, params, id->mlp_norm_b), R, D, c->norm_eps, rms);
        gather_rows(m, a->n2, n2);
        layer_linear_fwd(m, li, FP8_FC, a->fc, a->n2, P(m, params, id->fc_w),
                         P(m, params, id->fc_b), D, fc);
        if (c->act == MODEL_SWIGLU)
            cpu_swiglu_fwd(a->act, a->fc, N, F);
        else
            cpu_gelu_fwd(a->act, a->fc, (size_t)N * F, c->act == MODEL_GELU_TANH);
        row_parallel_fwd(m, li, FP8_MLP_PROJ, next, a->act, P(m, params, id->mlp_proj_w),
                         P(m, params, id->mlp_proj_b), F);
        add_rows(next, a->mid, RD);
        layer_hook(m, li, 0, 1);
    }
    return m->par.last_stage ? head_fwd(m, params, targets) : 0.0f;
}

/* The loss mask on the gradient of the logits: the mean's gradient over N positions scaled
 * to the mean over the unmasked ones, masked rows zero. */
static void mask_rows(struct cpu_model *m)
{
    float w = m->lkept ? (float)m->N / (float)m->lkept : 0.0f;
    for (int n = 0; n < m->N; n++) {
        float f = m->lmask[n] * w, *row = m->logits + (size_t)n * m->V;
        if (f != 1.0f)
            for (int v = 0; v < m->V; v++)
                row[v] *= f;
    }
}

void cpu_model_backward(struct cpu_model *m, const float *params, float *grads,
                        const int32_t *tokens, const int32_t *targets, float dloss_scale)
{
    cpu_model_backward_stage(m, params, grads, tokens, targets, dloss_scale, NULL);
}

void cpu_model_backward_stage(struct cpu_model *m, const float *params, float *grads,
                              const int32_t *tokens, const int32_t *targets, float dloss_scale,
                              const float *dout)
{
    const struct model_config *c = &m->c;
    const struct model_layout *l = m->l;
    int N = m->N, T = m->T, D = c->d_model, R = m->R, rms = c->norm == MODEL_RMSNORM;
    int qkv = model_qkv_dim(c), qd = c->n_heads * c->head_dim, F = c->d_ff, fc = model_fc_dim(c);
    int head_id = c->tied_embeddings ? l->embed : l->lm_head;

    if (m->par.last_stage) {
        cpu_xent_bwd(m->logits, m->lse, m->tp > 1 ? m->ltargets : targets, N, m->V, dloss_scale);
        if (m->lmask)
            mask_rows(m);
        cpu_linear_bwd(m->dn, G(m, grads, head_id), NULL, m->logits, m->nf, P(m, params, head_id),
                       N, D, m->V, m->head_t);
        const float *dn = col_parallel_dx(m, m->dn);
        memset(m->dres, 0, (size_t)R * D * sizeof(float));
        cpu_norm_bwd(m->dres, G(m, grads, l->final_norm_w), G(m, grads, l->final_norm_b), dn,
                     m->res_out, m->nfm, m->nfr, P(m, params, l->final_norm_w), R, D, rms);
    } else {
        memcpy(m->dres, dout, (size_t)R * D * sizeof(float));
    }
    for (int li = c->n_layers - 1; li >= 0; li--) {
        struct cpu_layer_acts *a = &m->la[li];
        const struct model_layer_ids *id = &l->layer[li];
        layer_hook(m, li, 1, 0);
        /* MLP: dres holds the gradient of the layer output (= of mid via the skip) */
        const float *dy = full_dres(m);
        layer_linear_bwd(m, li, FP8_MLP_PROJ, m->dact, G(m, grads, id->mlp_proj_w),
                         G(m, grads, id->mlp_proj_b), dy, a->act, P(m, params, id->mlp_proj_w), F,
                         D);
        if (c->act == MODEL_SWIGLU)
            cpu_swiglu_bwd(m->dfc, m->dact, a->fc, N, F);
        else
            cpu_gelu_bwd(m->dfc, m->dact, a->fc, (size_t)N * F, c->act == MODEL_GELU_TANH);
        layer_linear_bwd(m, li, FP8_FC, m->dn, G(m, grads, id->fc_w), G(m, grads, id->fc_b), m->dfc,
                         a->n2, P(m, params, id->fc_w), D, fc);
        const float *dn = col_parallel_dx(m, m->dn);
        cpu_norm_bwd(m->dres, G(m, grads, id->mlp_norm_w), G(m, grads, id->mlp_norm_b), dn, a->mid,
                     a->n2m, a->n2r, P(m, params, id->mlp_norm_w), R, D, rms);
        /* attention: dres now holds the gradient of mid (= of res via the skip) */
        dy = full_dres(m);
        layer_linear_bwd(m, li, FP8_ATTN_PROJ, m->datty, G(m, grads, id->attn_proj_w),
                         G(m, grads, id->attn_proj_b), dy, a->atty, P(m, params, id->attn_proj_w),
                         qd, D);
        cpu_attention_bwd(m->dqkv, m->datty, a->qkv, a->att, m->B, T, c->n_heads, c->n_kv_heads,
                          c->head_dim, m->att_scratch, m->dstart);
        if (c->pos == MODEL_POS_ROPE)
            cpu_rope(m->dqkv, m->rope_cos, m->rope_sin, m->B, T, c->n_heads, c->n_kv_heads,
                     c->head_dim, 1, m->dpos);
        layer_linear_bwd(m, li, FP8_QKV, m->dn, G(m, grads, id->qkv_w), G(m, grads, id->qkv_b),
                         m->dqkv, a->n1, P(m, params, id->qkv_w), D, qkv);
        dn = col_parallel_dx(m, m->dn);
        cpu_norm_bwd(m->dres, G(m, grads, id->attn_norm_w), G(m, grads, id->attn_norm_b), dn,
                     a->res, a->n1m, a->n1r, P(m, params, id->attn_norm_w), R, D, rms);
        layer_hook(m, li, 1, 1);
    }
    if (!m->par.first_stage)
        return;
    /* embeddings: columns in parallel, tokens in order (repeated tokens add up in order);
     * vocab-parallel: the rows of this rank's ids, from every token's gradient (gathered
     * with SP), so that the position embedding's gradient is complete on every rank too */
    const float *dx = full_dres(m);
    float *dwte = G(m, grads, l->embed), *dwpe = G(m, grads, l->pos);
    int v0 = m->tp > 1 ? m->par.vocab_start : 0, rows = c->padded_vocab_size;
#pragma omp parallel for schedule(static) if ((double)N * D >= 2097152.0)
    for (int i0 = 0; i0 < D; i0 += 32) {
        int i1 = i0 + 32 < D ? i0 + 32 : D;
        for (int n = 0; n < N; n++) {
            const float *d = dx + (size_t)n * D;
            int id = tokens[n] - v0;
            if (id >= 0 && id < rows) {
                float *e = dwte + (size_t)id * D;
                for (int i = i0; i < i1; i++)
                    e[i] += d[i];
            }
            if (dwpe) {
                float *p = dwpe + (size_t)(m->dpos ? m->dpos[n] : n % T) * D;
                for (int i = i0; i < i1; i++)
                    p[i] += d[i];
            }
        }
    }
}
