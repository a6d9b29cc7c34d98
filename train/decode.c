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
    /* blocks of up to rows tokens (decoder_block) */
    int rows;
    float *bx, *bn, *bmid; /* [rows, D] */
    float *bqkv, *batty;   /* [rows, qkv], [rows, qd] */
    float *bfc, *bact;     /* [rows, fc], [rows, d_ff] */
    float *bmean, *brstd;  /* [rows] */
    float *bp;             /* [rows, max_len] attention probabilities */
    float *bsel;           /* [rows, D] the rows whose logits are wanted */
    float *blogits;        /* [rows, vocab_size] */
    int *bpos;             /* [rows] positions */
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
    size_t R = (size_t)d->rows;
    if (R) {
        d->bx = carve(base, &off, R * D);
        d->bn = carve(base, &off, R * D);
        d->bmid = carve(base, &off, R * D);
        d->bqkv = carve(base, &off, R * d->qkv);
        d->batty = carve(base, &off, R * d->qd);
        d->bfc = carve(base, &off, R * d->fc);
        d->bact = carve(base, &off, R * c->d_ff);
        d->bmean = carve(base, &off, R);
        d->brstd = carve(base, &off, R);
        d->bp = carve(base, &off, R * d->max_len);
        d->bsel = carve(base, &off, R * D);
        d->blogits = carve(base, &off, R * c->vocab_size);
    }
    return off;
}

int decoder_new(struct decoder **out, const struct model_config *c, const struct model_layout *l,
                const float *params, int max_len)
{
    return decoder_new_rows(out, c, l, params, max_len, 0);
}

int decoder_new_rows(struct decoder **out, const struct model_config *c,
                     const struct model_layout *l, const float *params, int max_len, int max_rows)
{
    *out = NULL;
    if (max_len <= 0 || max_len > c->max_seq_len)
        return sl_err_set(SL_ERR_CONFIG,
                          "decoder length %d is outside 1..%d (max_position_embeddings)", max_len,
                          c->max_seq_len);
    if (max_rows < 0 || max_rows > max_len)
        return sl_err_set(SL_ERR_CONFIG, "decoder block of %d rows is outside 0..%d", max_rows,
                          max_len);
    struct decoder *d = calloc(1, sizeof(*d));
    if (!d)
        return sl_err_set(SL_ERR_NOMEM, "out of memory for the decoder");
    d->rows = max_rows;
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
    if (max_rows && !(d->bpos = calloc((size_t)max_rows, sizeof(int)))) {
        decoder_free(d);
        return sl_err_set(SL_ERR_NOMEM, "out of memory for the decoder");
    }
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
    free(d->bpos);
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
                     1, c->n_heads, c->n_kv_heads, c->head_dim, 0, NULL);
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

/* Attention of block row r (query q, probabilities p) over the cached positions 0..len-1 and
 * the block's slots len + s .. len + r (its own continuation): cpu_attention_row's sums in
 * its order, over the two ranges. */
static void attend_split(float *o, float *p, const float *q, const float *k, const float *v,
                         size_t stride, int len, int s, int r, int hd, float scale)
{
    int n1 = len, n2 = r - s + 1;
    float mx = -INFINITY;
    for (int u = 0; u < n1 + n2; u++) {
        int slot = u < n1 ? u : len + s + (u - n1);
        const float *ku = k + (size_t)slot * stride;
        float sc = 0.0f;
        for (int i = 0; i < hd; i++)
            sc += q[i] * ku[i];
        sc *= scale;
        p[u] = sc;
        if (sc > mx)
            mx = sc;
    }
    float sum = 0.0f;
    for (int u = 0; u < n1 + n2; u++) {
        p[u] = expf(p[u] - mx);
        sum += p[u];
    }
    float inv = 1.0f / sum;
    for (int u = 0; u < n1 + n2; u++)
        p[u] *= inv;
    for (int i = 0; i < hd; i++)
        o[i] = 0.0f;
    for (int u = 0; u < n1 + n2; u++) {
        int slot = u < n1 ? u : len + s + (u - n1);
        const float *vu = v + (size_t)slot * stride;
        float pu = p[u];
        for (int i = 0; i < hd; i++)
            o[i] += pu * vu[i];
    }
}

const float *decoder_block(struct decoder *d, const int32_t *tok, const int *seg, int n,
                           const int *out, int nout, int commit)
{
    if (n < 1 || n > d->rows || d->len + n > d->max_len || nout < 0 || nout > n || (commit && seg))
        return NULL;
    const struct model_config *c = &d->c;
    const struct model_layout *l = d->l;
    int base = d->len, D = c->d_model, rms = c->norm == MODEL_RMSNORM, half = c->head_dim / 2;
    int H = c->n_heads, hd = c->head_dim, group = H / c->n_kv_heads;
    float scale = 1.0f / sqrtf((float)hd);
    const float *wte = P(d, l->embed), *wpe = P(d, l->pos);
    for (int r = 0; r < n; r++) {
        int s = seg ? seg[r] : 0;
        if (s < 0 || s > r || (r > 0 && s != r && seg && seg[r - 1] != s))
            return NULL; /* a row continues a run of its own rows */
        d->bpos[r] = base + r - s;
        const float *e = wte + (size_t)tok[r] * D;
        float *x = d->bx + (size_t)r * D;
        if (wpe) {
            const float *pe = wpe + (size_t)d->bpos[r] * D;
            for (int i = 0; i < D; i++)
                x[i] = e[i] + pe[i];
        } else {
            memcpy(x, e, (size_t)D * sizeof(float));
        }
    }
    for (int li = 0; li < c->n_layers; li++) {
        const struct model_layer_ids *id = &l->layer[li];
        float *kc = d->kcache + (size_t)li * d->max_len * d->kvw;
        float *vc = d->vcache + (size_t)li * d->max_len * d->kvw;
        cpu_norm_fwd(d->bn, d->bmean, d->brstd, d->bx, P(d, id->attn_norm_w), P(d, id->attn_norm_b),
                     n, D, c->norm_eps, rms);
        cpu_linear_fwd(d->bqkv, d->bn, P(d, id->qkv_w), P(d, id->qkv_b), n, D, d->qkv);
        for (int r = 0; r < n; r++) {
            float *row = d->bqkv + (size_t)r * d->qkv;
            if (c->pos == MODEL_POS_ROPE)
                cpu_rope(row, d->rope_cos + (size_t)d->bpos[r] * half,
                         d->rope_sin + (size_t)d->bpos[r] * half, 1, 1, c->n_heads, c->n_kv_heads,
                         c->head_dim, 0, NULL);
            memcpy(kc + (size_t)(base + r) * d->kvw, row + d->qd, (size_t)d->kvw * sizeof(float));
            memcpy(vc + (size_t)(base + r) * d->kvw, row + d->qd + d->kvw,
                   (size_t)d->kvw * sizeof(float));
        }
        double work = (double)n * H * hd * (base + n);
#pragma omp parallel for schedule(dynamic, 1) if (work >= 262144.0)
        for (int r = 0; r < n; r++) {
            int s = seg ? seg[r] : 0;
            float *p = d->bp + (size_t)r * d->max_len;
            const float *q = d->bqkv + (size_t)r * d->qkv;
            float *o = d->batty + (size_t)r * d->qd;
            for (int h = 0; h < H; h++) {
                int g = h / group;
                if (s == 0) /* one run from position 0: the decoder's own row */
                    cpu_attention_row(o + (size_t)h * hd, p, q + (size_t)h * hd,
                                      kc + (size_t)g * hd, vc + (size_t)g * hd, (size_t)d->kvw,
                                      base + r + 1, hd, scale);
                else
                    attend_split(o + (size_t)h * hd, p, q + (size_t)h * hd, kc + (size_t)g * hd,
                                 vc + (size_t)g * hd, (size_t)d->kvw, base, s, r, hd, scale);
            }
        }
        cpu_linear_fwd(d->bmid, d->batty, P(d, id->attn_proj_w), P(d, id->attn_proj_b), n, d->qd,
                       D);
        for (size_t i = 0; i < (size_t)n * D; i++)
            d->bmid[i] += d->bx[i];
        cpu_norm_fwd(d->bn, d->bmean, d->brstd, d->bmid, P(d, id->mlp_norm_w), P(d, id->mlp_norm_b),
                     n, D, c->norm_eps, rms);
        cpu_linear_fwd(d->bfc, d->bn, P(d, id->fc_w), P(d, id->fc_b), n, D, d->fc);
        if (c->act == MODEL_SWIGLU)
            cpu_swiglu_fwd(d->bact, d->bfc, n, c->d_ff);
        else
            cpu_gelu_fwd(d->bact, d->bfc, (size_t)n * c->d_ff, c->act == MODEL_GELU_TANH);
        cpu_linear_fwd(d->bx, d->bact, P(d, id->mlp_proj_w), P(d, id->mlp_proj_b), n, c->d_ff, D);
        for (size_t i = 0; i < (size_t)n * D; i++)
            d->bx[i] += d->bmid[i];
    }
    if (commit)
        d->len += n;
    if (nout == 0)
        return d->blogits;
    for (int i = 0; i < nout; i++) {
        if (out[i] < 0 || out[i] >= n)
            return NULL;
        memcpy(d->bsel + (size_t)i * D, d->bx + (size_t)out[i] * D, (size_t)D * sizeof(float));
    }
    cpu_norm_fwd(d->bn, d->bmean, d->brstd, d->bsel, P(d, l->final_norm_w), P(d, l->final_norm_b),
                 nout, D, c->norm_eps, rms);
    const float *head = c->tied_embeddings ? wte : P(d, l->lm_head);
    cpu_linear_fwd(d->blogits, d->bn, head, NULL, nout, D, c->vocab_size);
    return d->blogits;
}
