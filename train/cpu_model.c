/* CPU reference forward/backward: the layer loop over the kernels of train/cpu_ops.c, with
 * every activation kept for the backward pass in one slab. */
#include "train/cpu_model.h"

#include "core/err.h"
#include "train/cpu_ops.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#ifdef _OPENMP
#include <omp.h>
#endif

struct cpu_layer_acts {
    float *res;             /* [N, D] input residual */
    float *n1, *n1m, *n1r;  /* attention norm output, mean, rstd */
    float *qkv;             /* [N, QKV] after RoPE */
    float *att;             /* [B, H, T, T] probabilities */
    float *atty;            /* [N, H*hd] */
    float *mid;             /* [N, D] residual after attention */
    float *n2, *n2m, *n2r;  /* MLP norm */
    float *fc;              /* [N, FC] pre-activation */
    float *act;             /* [N, F] */
};

struct cpu_model {
    struct model_config c;
    const struct model_layout *l;
    int B, T, N, V;
    float *slab;
    size_t slab_floats;
    struct cpu_layer_acts *la;
    float *res_out;             /* [N, D] residual after the last layer */
    float *nf, *nfm, *nfr;      /* final norm */
    float *logits;              /* [N, V] */
    float *losses, *lse;        /* [N] */
    float *rope_cos, *rope_sin; /* [T, hd/2] */
    /* backward scratch */
    float *dres, *dn, *dqkv, *datty, *dfc, *dact, *att_scratch;
    float *head_t; /* [D, V]: the output layer's weight gradient, transposed */
};

size_t cpu_model_bytes(const struct cpu_model *m)
{
    return m->slab_floats * sizeof(float);
}

const float *cpu_model_logits(const struct cpu_model *m)
{
    return m->logits;
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
    size_t off = 0, N = (size_t)m->N, D = (size_t)c->d_model;
    size_t qkv = (size_t)model_qkv_dim(c), qd = (size_t)c->n_heads * c->head_dim;
    size_t fc = (size_t)model_fc_dim(c), F = (size_t)c->d_ff;
    size_t att = (size_t)m->B * c->n_heads * m->T * m->T;
    for (int i = 0; i < c->n_layers; i++) {
        struct cpu_layer_acts *a = &m->la[i];
        a->res = carve(base, &off, N * D);
        a->n1 = carve(base, &off, N * D);
        a->n1m = carve(base, &off, N);
        a->n1r = carve(base, &off, N);
        a->qkv = carve(base, &off, N * qkv);
        a->att = carve(base, &off, att);
        a->atty = carve(base, &off, N * qd);
        a->mid = carve(base, &off, N * D);
        a->n2 = carve(base, &off, N * D);
        a->n2m = carve(base, &off, N);
        a->n2r = carve(base, &off, N);
        a->fc = carve(base, &off, N * fc);
        a->act = carve(base, &off, N * F);
    }
    m->res_out = carve(base, &off, N * D);
    m->nf = carve(base, &off, N * D);
    m->nfm = carve(base, &off, N);
    m->nfr = carve(base, &off, N);
    m->logits = carve(base, &off, N * (size_t)m->V);
    m->losses = carve(base, &off, N);
    m->lse = carve(base, &off, N);
    m->rope_cos = carve(base, &off, (size_t)m->T * (c->head_dim / 2 + 1));
    m->rope_sin = carve(base, &off, (size_t)m->T * (c->head_dim / 2 + 1));
    m->dres = carve(base, &off, N * D);
    m->dn = carve(base, &off, N * D);
    m->dqkv = carve(base, &off, N * qkv);
    m->datty = carve(base, &off, N * qd);
    m->dfc = carve(base, &off, N * fc);
    m->dact = carve(base, &off, N * F);
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
    *out = NULL;
    if (T > c->max_seq_len)
        return sl_err_set(SL_ERR_CONFIG,
                          "sequence length %d is longer than the model's "
                          "max_position_embeddings %d",
                          T, c->max_seq_len);
    if (B <= 0 || T <= 0)
        return sl_err_set(SL_ERR_CONFIG, "micro-batch size and sequence length must be positive");
    struct cpu_model *m = calloc(1, sizeof(*m));
    if (!m)
        return sl_err_set(SL_ERR_NOMEM, "out of memory for the CPU model");
    m->c = *c;
    m->l = l;
    m->B = B;
    m->T = T;
    m->N = B * T;
    m->V = c->vocab_size;
    m->la = calloc((size_t)c->n_layers, sizeof(*m->la));
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

static const float *P(const float *params, const struct model_layout *l, int id)
{
    return id < 0 ? NULL : params + l->t[id].offset;
}

static float *G(float *grads, const struct model_layout *l, int id)
{
    return id < 0 ? NULL : grads + l->t[id].offset;
}

float cpu_model_forward(struct cpu_model *m, const float *params, const int32_t *tokens,
                        const int32_t *targets)
{
    const struct model_config *c = &m->c;
    const struct model_layout *l = m->l;
    int N = m->N, T = m->T, D = c->d_model, rms = c->norm == MODEL_RMSNORM;
    int qkv = model_qkv_dim(c), qd = c->n_heads * c->head_dim, F = c->d_ff, fc = model_fc_dim(c);
    const float *wte = P(params, l, l->embed), *wpe = P(params, l, l->pos);
    float *x0 = c->n_layers ? m->la[0].res : m->res_out;
#pragma omp parallel for schedule(static) if ((double)N * D >= 2097152.0)
    for (int n = 0; n < N; n++) {
        const float *e = wte + (size_t)tokens[n] * D;
        float *o = x0 + (size_t)n * D;
        if (wpe) {
            const float *p = wpe + (size_t)(n % T) * D;
            for (int i = 0; i < D; i++)
                o[i] = e[i] + p[i];
        } else {
            memcpy(o, e, (size_t)D * sizeof(float));
        }
    }
    for (int li = 0; li < c->n_layers; li++) {
        struct cpu_layer_acts *a = &m->la[li];
        const struct model_layer_ids *id = &l->layer[li];
        float *next = li + 1 < c->n_layers ? m->la[li + 1].res : m->res_out;
        cpu_norm_fwd(a->n1, a->n1m, a->n1r, a->res, P(params, l, id->attn_norm_w),
                     P(params, l, id->attn_norm_b), N, D, c->norm_eps, rms);
        cpu_linear_fwd(a->qkv, a->n1, P(params, l, id->qkv_w), P(params, l, id->qkv_b), N, D, qkv);
        if (c->pos == MODEL_POS_ROPE)
            cpu_rope(a->qkv, m->rope_cos, m->rope_sin, m->B, T, c->n_heads, c->n_kv_heads,
                     c->head_dim, 0);
        cpu_attention_fwd(a->atty, a->att, a->qkv, m->B, T, c->n_heads, c->n_kv_heads,
                          c->head_dim);
        cpu_linear_fwd(a->mid, a->atty, P(params, l, id->attn_proj_w),
                       P(params, l, id->attn_proj_b), N, qd, D);
#pragma omp parallel for schedule(static) if ((double)N * D >= 2097152.0)
        for (size_t i = 0; i < (size_t)N * D; i++)
            a->mid[i] += a->res[i];
        cpu_norm_fwd(a->n2, a->n2m, a->n2r, a->mid, P(params, l, id->mlp_norm_w),
                     P(params, l, id->mlp_norm_b), N, D, c->norm_eps, rms);
        cpu_linear_fwd(a->fc, a->n2, P(params, l, id->fc_w), P(params, l, id->fc_b), N, D, fc);
        if (c->act == MODEL_SWIGLU)
            cpu_swiglu_fwd(a->act, a->fc, N, F);
        else
            cpu_gelu_fwd(a->act, a->fc, (size_t)N * F, c->act == MODEL_GELU_TANH);
        cpu_linear_fwd(next, a->act, P(params, l, id->mlp_proj_w), P(params, l, id->mlp_proj_b), N,
                       F, D);
#pragma omp parallel for schedule(static) if ((double)N * D >= 2097152.0)
        for (size_t i = 0; i < (size_t)N * D; i++)
            next[i] += a->mid[i];
    }
    cpu_norm_fwd(m->nf, m->nfm, m->nfr, m->res_out, P(params, l, l->final_norm_w),
                 P(params, l, l->final_norm_b), N, D, c->norm_eps, rms);
    const float *head = c->tied_embeddings ? wte : P(params, l, l->lm_head);
    cpu_linear_fwd(m->logits, m->nf, head, NULL, N, D, m->V);
    cpu_xent_fwd(m->losses, m->lse, m->logits, targets, N, m->V);
    double sum = 0.0;
    for (int n = 0; n < N; n++)
        sum += m->losses[n];
    return (float)(sum / N);
}

void cpu_model_backward(struct cpu_model *m, const float *params, float *grads,
                        const int32_t *tokens, const int32_t *targets, float dloss_scale)
{
    const struct model_config *c = &m->c;
    const struct model_layout *l = m->l;
    int N = m->N, T = m->T, D = c->d_model, rms = c->norm == MODEL_RMSNORM;
    int qkv = model_qkv_dim(c), qd = c->n_heads * c->head_dim, F = c->d_ff, fc = model_fc_dim(c);
    int head_id = c->tied_embeddings ? l->embed : l->lm_head;

    cpu_xent_bwd(m->logits, m->lse, targets, N, m->V, dloss_scale);
    cpu_linear_bwd(m->dn, G(grads, l, head_id), NULL, m->logits, m->nf, P(params, l, head_id), N,
                   D, m->V, m->head_t);
    memset(m->dres, 0, (size_t)N * D * sizeof(float));
    cpu_norm_bwd(m->dres, G(grads, l, l->final_norm_w), G(grads, l, l->final_norm_b), m->dn,
                 m->res_out, m->nfm, m->nfr, P(params, l, l->final_norm_w), N, D, rms);
    for (int li = c->n_layers - 1; li >= 0; li--) {
        struct cpu_layer_acts *a = &m->la[li];
        const struct model_layer_ids *id = &l->layer[li];
        /* MLP: dres holds the gradient of the layer output (= of mid via the skip) */
        cpu_linear_bwd(m->dact, G(grads, l, id->mlp_proj_w), G(grads, l, id->mlp_proj_b), m->dres,
                       a->act, P(params, l, id->mlp_proj_w), N, F, D, NULL);
        if (c->act == MODEL_SWIGLU)
            cpu_swiglu_bwd(m->dfc, m->dact, a->fc, N, F);
        else
            cpu_gelu_bwd(m->dfc, m->dact, a->fc, (size_t)N * F, c->act == MODEL_GELU_TANH);
        cpu_linear_bwd(m->dn, G(grads, l, id->fc_w), G(grads, l, id->fc_b), m->dfc, a->n2,
                       P(params, l, id->fc_w), N, D, fc, NULL);
        cpu_norm_bwd(m->dres, G(grads, l, id->mlp_norm_w), G(grads, l, id->mlp_norm_b), m->dn,
                     a->mid, a->n2m, a->n2r, P(params, l, id->mlp_norm_w), N, D, rms);
        /* attention: dres now holds the gradient of mid (= of res via the skip) */
        cpu_linear_bwd(m->datty, G(grads, l, id->attn_proj_w), G(grads, l, id->attn_proj_b),
                       m->dres, a->atty, P(params, l, id->attn_proj_w), N, qd, D, NULL);
        cpu_attention_bwd(m->dqkv, m->datty, a->qkv, a->att, m->B, T, c->n_heads, c->n_kv_heads,
                          c->head_dim, m->att_scratch);
        if (c->pos == MODEL_POS_ROPE)
            cpu_rope(m->dqkv, m->rope_cos, m->rope_sin, m->B, T, c->n_heads, c->n_kv_heads,
                     c->head_dim, 1);
        cpu_linear_bwd(m->dn, G(grads, l, id->qkv_w), G(grads, l, id->qkv_b), m->dqkv, a->n1,
                       P(params, l, id->qkv_w), N, D, qkv, NULL);
        cpu_norm_bwd(m->dres, G(grads, l, id->attn_norm_w), G(grads, l, id->attn_norm_b), m->dn,
                     a->res, a->n1m, a->n1r, P(params, l, id->attn_norm_w), N, D, rms);
    }
    /* embeddings: columns in parallel, tokens in order (repeated tokens add up in order) */
    float *dwte = G(grads, l, l->embed), *dwpe = G(grads, l, l->pos);
#pragma omp parallel for schedule(static) if ((double)N * D >= 2097152.0)
    for (int i0 = 0; i0 < D; i0 += 32) {
        int i1 = i0 + 32 < D ? i0 + 32 : D;
        for (int n = 0; n < N; n++) {
            const float *d = m->dres + (size_t)n * D;
            float *e = dwte + (size_t)tokens[n] * D;
            for (int i = i0; i < i1; i++)
                e[i] += d[i];
            if (dwpe) {
                float *p = dwpe + (size_t)(n % T) * D;
                for (int i = i0; i < i1; i++)
                    p[i] += d[i];
            }
        }
    }
}
