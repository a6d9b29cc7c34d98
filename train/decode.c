/* Incremental decoding: one token per step through the layers, keys and values of earlier
 * positions from a per-layer cache, kernels of train/cpu_ops.c on single rows. */
#include "train/decode.h"

#include "core/err.h"
#include "train/cpu_ops.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

struct decoder {
    struct model_config c;
    const struct model_layout *l;
    const float *params;
    int max_len, len;
    int qkv, qd, fc, kvw; /* row widths: fused qkv, attention output, MLP input, one of k/v */
    float *slab;
    float *kcache, *vcache;     /* [layers, max_len, kvw] after RoPE */
    float *x, *n, *mid;         /* [D] residual, norm output, residual after attention */
    float *qkv_row, *atty, *p;  /* [qkv], [qd], [max_len] probabilities */
    float *fc_row, *act;        /* [fc], [d_ff] */
    float *logits;              /* [vocab_size] */
    float *rope_cos, *rope_sin; /* [max_len, hd/2] */
};

static float *carve(float *base, size_t *off, size_t n)
{
    float *p = base ? base + *off : NULL;
    *off += (n + 15) / 16 * 16;
    return p;
}

static size_t layout(struct decoder *d, float *base)
{
    const struct model_config *c = &d->c;
    size_t off = 0, D = (size_t)c->d_model, cache = (size_t)c->n_layers * d->max_len * d->kvw;
    d->kcache = carve(base, &off, cache);
    d->vcache = carve(base, &off, cache);
    d->x = carve(base, &off, D);
    d->n = carve(base, &off, D);
    d->mid = carve(base, &off, D);
    d->qkv_row = carve(base, &off, (size_t)d->qkv);
    d->atty = carve(base, &off, (size_t)d->qd);
    d->p = carve(base, &off, (size_t)d->max_len);
    d->fc_row = carve(base, &off, (size_t)d->fc);
    d->act = carve(base, &off, (size_t)c->d_ff);
    d->logits = carve(base, &off, (size_t)c->vocab_size);
    d->rope_cos = carve(base, &off, (size_t)d->max_len * (c->head_dim / 2 + 1));
    d->rope_sin = carve(base, &off, (size_t)d->max_len * (c->head_dim / 2 + 1));
    return off;
}

int decoder_new(struct decoder **out, const struct model_config *c, const struct model_layout *l,
                const float *params, int max_len)
{
    *out = NULL;
    if (max_len <= 0 || max_len > c->max_seq_len)
        return sl_err_set(SL_ERR_CONFIG,
                          "decoder length %d is outside 1..%d (max_position_embeddings)", max_len,
                          c->max_seq_len);
    struct decoder *d = calloc(1, sizeof(*d));
    if (!d)
        return sl_err_set(SL_ERR_NOMEM, "out of memory for the decoder");
    d->c = *c;
    d->l = l;
    d->params = params;
    d->max_len = max_len;
    d->qkv = model_qkv_dim(c);
    d->qd = c->n_heads * c->head_dim;
    d->fc = model_fc_dim(c);
    d->kvw = c->n_kv_heads * c->head_dim;
    size_t floats = layout(d, NULL);
    d->slab = calloc(floats, sizeof(float));
    if (!d->slab) {
        free(d);
        return sl_err_set(SL_ERR_NOMEM, "cannot allocate %zu MiB for the key/value cache",
                          floats * sizeof(float) >> 20);
    }
    layout(d, d->slab);
    if (c->pos == MODEL_POS_ROPE) {
        int half = c->head_dim / 2;
        double *inv = malloc(((size_t)half + 1) * sizeof(double));
        if (!inv) {
            decoder_free(d);
            return sl_err_set(SL_ERR_NOMEM, "out of memory for the RoPE tables");
        }
        model_rope_inv_freq(c, inv);
        for (int t = 0; t < max_len; t++)
            for (int i = 0; i < half; i++) {
                /* as train/cpu_model.c: the angle in fp32, then cos/sin */
                float ang = (float)t * (float)inv[i];
                d->rope_cos[(size_t)t * half + i] = cosf(ang);
                d->rope_sin[(size_t)t * half + i] = sinf(ang);
            }
        free(inv);
    }
    *out = d;
    return 0;
}

void decoder_free(struct decoder *d)
{
    if (!d)
        return;
    free(d->slab);
    free(d);
}

int decoder_len(const struct decoder *d)
{
    return d->len;
}

int decoder_max_len(const struct decoder *d)
{
    return d->max_len;
}

void decoder_reset(struct decoder *d)
{
    d->len = 0;
}

void decoder_truncate(struct decoder *d, int len)
{
    if (len >= 0 && len < d->len)
        d->len = len;
}

static const float *P(const struct decoder *d, int id)
{
    return id < 0 ? NULL : d->params + d->l->t[id].offset;
}

/* Causal attention of the newest position t over the cache of one layer: the row function
 * cpu_attention_fwd uses for row t, so the same sums in the same order. */
static void attend(struct decoder *d, const float *kc, const float *vc, int t)
{
    const struct model_config *c = &d->c;
    int H = c->n_heads, hd = c->head_dim, group = H / c->n_kv_heads;
    float scale = 1.0f / sqrtf((float)hd);
    float *p = d->p;
    for (int h = 0; h < H; h++) {
        int g = h / group;
        cpu_attention_row(d->atty + (size_t)h * hd, p, d->qkv_row + (size_t)h * hd,
                          kc + (size_t)g * hd, vc + (size_t)g * hd, (size_t)d->kvw, t + 1, hd,
                          scale);
    }
}

/* One position through the layers; the final norm and the output layer only when the
 * logits are wanted. */
static const float *step(struct decoder *d, int32_t token, int want_logits)
{
    if (d->len >= d->max_len)
        return NULL;
    const struct model_config *c = &d->c;
    const struct model_layout *l = d->l;
    int t = d->len, D = c->d_model, rms = c->norm == MODEL_RMSNORM, half = c->head_dim / 2;
    float mean, rstd;
    const float *wte = P(d, l->embed), *wpe = P(d, l->pos);
    const float *e = wte + (size_t)token * D;
    if (wpe) {
        const float *pe = wpe + (size_t)t * D;
        for (int i = 0; i < D; i++)
            d->x[i] = e[i] + pe[i];
    } else {
        memcpy(d->x, e, (size_t)D * sizeof(float));
    }
    for (int li = 0; li < c->n_layers; li++) {
        const struct model_layer_ids *id = &l->layer[li];
        float *kc = d->kcache + (size_t)li * d->max_len * d->kvw;
        float *vc = d->vcache + (size_t)li * d->max_len * d->kvw;
        cpu_norm_fwd(d->n, &mean, &rstd, d->x, P(d, id->attn_norm_w), P(d, id->attn_norm_b), 1, D,
                     c->norm_eps, rms);
        cpu_linear_fwd(d->qkv_row, d->n, P(d, id->qkv_w), P(d, id->qkv_b), 1, D, d->qkv);
        if (c->pos == MODEL_POS_ROPE)
            cpu_rope(d->qkv_row, d->rope_cos + (size_t)t * half, d->rope_sin + (size_t)t * half, 1,
                     1, c->n_heads, c->n_kv_heads, c->head_dim, 0);
        memcpy(kc + (size_t)t * d->kvw, d->qkv_row + d->qd, (size_t)d->kvw * sizeof(float));
        memcpy(vc + (size_t)t * d->kvw, d->qkv_row + d->qd + d->kvw,
               (size_t)d->kvw * sizeof(float));
        attend(d, kc, vc, t);
        cpu_linear_fwd(d->mid, d->atty, P(d, id->attn_proj_w), P(d, id->attn_proj_b), 1, d->qd, D);
        for (int i = 0; i < D; i++)
            d->mid[i] += d->x[i];
        cpu_norm_fwd(d->n, &mean, &rstd, d->mid, P(d, id->mlp_norm_w), P(d, id->mlp_norm_b), 1, D,
                     c->norm_eps, rms);
        cpu_linear_fwd(d->fc_row, d->n, P(d, id->fc_w), P(d, id->fc_b), 1, D, d->fc);
        if (c->act == MODEL_SWIGLU)
            cpu_swiglu_fwd(d->act, d->fc_row, 1, c->d_ff);
        else
            cpu_gelu_fwd(d->act, d->fc_row, (size_t)c->d_ff, c->act == MODEL_GELU_TANH);
        cpu_linear_fwd(d->x, d->act, P(d, id->mlp_proj_w), P(d, id->mlp_proj_b), 1, c->d_ff, D);
        for (int i = 0; i < D; i++)
            d->x[i] += d->mid[i];
    }
    d->len++;
    if (!want_logits)
        return d->logits;
    cpu_norm_fwd(d->n, &mean, &rstd, d->x, P(d, l->final_norm_w), P(d, l->final_norm_b), 1, D,
                 c->norm_eps, rms);
    const float *head = c->tied_embeddings ? wte : P(d, l->lm_head);
    cpu_linear_fwd(d->logits, d->n, head, NULL, 1, D, c->vocab_size);
    return d->logits;
}

const float *decoder_step(struct decoder *d, int32_t token)
{
    return step(d, token, 1);
}

int decoder_feed(struct decoder *d, int32_t token)
{
    return step(d, token, 0) ? 0 : SL_ERR_STATE;
}
