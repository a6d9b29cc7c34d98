/* The model configuration (from YAML and checkpoint JSON), the parameter table, FLOPs per
 * token, initialisation and the RoPE frequencies. */
#include "train/model.h"

#include "core/alloc.h"
#include "core/buf.h"
#include "core/config.h"
#include "core/err.h"
#include "core/rng.h"

#include <json-c/json.h>
#include <math.h>
#include <stdio.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

const char *model_norm_name(enum model_norm n)
{
    return n == MODEL_RMSNORM ? "rmsnorm" : "layernorm";
}

const char *model_act_name(enum model_act a)
{
    return a == MODEL_SWIGLU ? "swiglu" : a == MODEL_GELU_TANH ? "gelu_tanh" : "gelu";
}

const char *model_pos_name(enum model_pos p)
{
    return p == MODEL_POS_ROPE ? "rope" : "learned_absolute";
}

/* A string key that must be one of `choices` ("a|b|c"); *idx gets its position. */
static int cfg_choice(struct sl_cfg *root, const char *path, const char *def, const char *choices,
                      int *idx)
{
    const char *s;
    int rc = sl_cfg_str(root, path, def, &s);
    if (rc)
        return rc;
    int i = 0;
    const char *p = choices;
    while (*p) {
        const char *e = strchr(p, '|');
        size_t n = e ? (size_t)(e - p) : strlen(p);
        if (strlen(s) == n && !strncmp(s, p, n)) {
            *idx = i;
            return 0;
        }
        i++;
        if (!e)
            break;
        p = e + 1;
    }
    struct sl_cfg *node = sl_cfg_get(root, path);
    return sl_err_set(SL_ERR_CONFIG, "%s: %s: unknown value '%s'\nhint: one of %s",
                      node ? sl_cfg_where(node) : "config", path, s, choices);
}

static int cfg_pos_int(struct sl_cfg *root, const char *path, long def, int *out)
{
    long v;
    int rc = sl_cfg_int(root, path, def, &v);
    if (rc)
        return rc;
    if (v <= 0 || v > (1L << 30)) {
        struct sl_cfg *node = sl_cfg_get(root, path);
        return sl_err_set(SL_ERR_CONFIG, "%s: %s: must be a positive integer, got %ld",
                          node ? sl_cfg_where(node) : "config", path, v);
    }
    *out = (int)v;
    return 0;
}

int model_config_check(const struct model_config *c)
{
    if (c->vocab_size <= 0 || c->n_layers <= 0 || c->d_model <= 0 || c->n_heads <= 0 ||
        c->n_kv_heads <= 0 || c->d_ff <= 0 || c->max_seq_len <= 0)
        return sl_err_set(SL_ERR_CONFIG, "model: sizes must be positive");
    if (c->d_model % c->n_heads)
        return sl_err_set(SL_ERR_CONFIG,
                          "model: hidden_size %d is not a multiple of num_attention_heads %d",
                          c->d_model, c->n_heads);
    if (c->n_heads % c->n_kv_heads)
        return sl_err_set(SL_ERR_CONFIG,
                          "model: num_attention_heads %d is not a multiple of num_query_groups %d",
                          c->n_heads, c->n_kv_heads);
    if (c->pos == MODEL_POS_ROPE && (c->head_dim % 2))
        return sl_err_set(SL_ERR_CONFIG, "model: RoPE needs an even head size, got %d",
                          c->head_dim);
    if (c->padded_vocab_size < c->vocab_size)
        return sl_err_set(SL_ERR_CONFIG, "model: padded vocabulary smaller than the vocabulary");
    if (!(c->norm_eps > 0))
        return sl_err_set(SL_ERR_CONFIG, "model: layernorm_epsilon must be positive");
    if (c->pos == MODEL_POS_ROPE && !(c->rope_theta > 0))
        return sl_err_set(SL_ERR_CONFIG, "model: rotary_base must be positive");
    if (c->rope_factor > 0 &&
        (!(c->rope_high_freq_factor > c->rope_low_freq_factor) || c->rope_original_max_pos <= 0))
        return sl_err_set(SL_ERR_CONFIG, "model: rope_scaling needs high_freq_factor > "
                                         "low_freq_factor and original_max_position_embeddings");
    return 0;
}

int model_config_load(struct model_config *c, struct sl_cfg *root)
{
    memset(c, 0, sizeof(*c));
    int rc = 0, idx = 0;
    long div;
    double d;
    if ((rc = cfg_pos_int(root, "model.vocab_size", 50257, &c->vocab_size)) ||
        (rc = cfg_pos_int(root, "model.num_layers", 0, &c->n_layers)) ||
        (rc = cfg_pos_int(root, "model.hidden_size", 0, &c->d_model)) ||
        (rc = cfg_pos_int(root, "model.num_attention_heads", 0, &c->n_heads)) ||
        (rc = cfg_pos_int(root, "model.num_query_groups", c->n_heads, &c->n_kv_heads)) ||
        (rc = cfg_pos_int(root, "model.ffn_hidden_size", 4L * c->d_model, &c->d_ff)) ||
        (rc = cfg_pos_int(root, "model.max_position_embeddings", 1024, &c->max_seq_len)))
        return rc;
    if ((rc = sl_cfg_int(root, "model.make_vocab_size_divisible_by", 128, &div)))
        return rc;
    if (div < 1)
        div = 1;
    c->padded_vocab_size = (int)((c->vocab_size + div - 1) / div * div);
    if ((rc = cfg_choice(root, "model.normalization", "layernorm", "layernorm|rmsnorm", &idx)))
        return rc;
    c->norm = idx ? MODEL_RMSNORM : MODEL_LAYERNORM;
    if ((rc = cfg_choice(root, "model.activation", "gelu", "gelu|gelu_tanh|swiglu", &idx)))
        return rc;
    c->act = idx == 2 ? MODEL_SWIGLU : idx == 1 ? MODEL_GELU_TANH : MODEL_GELU;
    if ((rc = cfg_choice(root, "model.position_embedding_type", "learned_absolute",
                         "learned_absolute|rope", &idx)))
        return rc;
    c->pos = idx ? MODEL_POS_ROPE : MODEL_POS_LEARNED;
    if ((rc = sl_cfg_bool(root, "model.bias", 1, &c->bias)) ||
        (rc = sl_cfg_bool(root, "model.share_embeddings_and_output_weights", 1,
                          &c->tied_embeddings)))
        return rc;
    if ((rc = sl_cfg_double(root, "model.layernorm_epsilon", 1e-5, &d)))
        return rc;
    c->norm_eps = (float)d;
    if ((rc = sl_cfg_double(root, "model.rotary_base", 10000.0, &c->rope_theta)))
        return rc;
    if ((rc = sl_cfg_double(root, "model.rope_scaling.factor", 0.0, &c->rope_factor)) ||
        (rc = sl_cfg_double(root, "model.rope_scaling.low_freq_factor", 1.0,
                            &c->rope_low_freq_factor)) ||
        (rc = sl_cfg_double(root, "model.rope_scaling.high_freq_factor", 4.0,
                            &c->rope_high_freq_factor)))
        return rc;
    long omp;
    if ((rc = sl_cfg_int(root, "model.rope_scaling.original_max_position_embeddings", 8192, &omp)))
        return rc;
    c->rope_original_max_pos = (int)omp;
    if ((rc = sl_cfg_double(root, "model.init_method_std", 0.02, &d)))
        return rc;
    c->init_std = (float)d;
    c->head_dim = c->n_heads ? c->d_model / c->n_heads : 0;
    return model_config_check(c);
}

int model_qkv_dim(const struct model_config *c)
{
    return (c->n_heads + 2 * c->n_kv_heads) * c->head_dim;
}

int model_fc_dim(const struct model_config *c)
{
    return c->act == MODEL_SWIGLU ? 2 * c->d_ff : c->d_ff;
}

static int add_tensor(struct model_layout *l, int *cap, const char *name,
                      enum model_tensor_kind kind, int layer, int64_t rows, int64_t cols)
{
    if (l->n == *cap) {
        *cap = *cap ? *cap * 2 : 32;
        l->t = sl_xrealloc(l->t, (size_t)*cap * sizeof(*l->t));
    }
    struct model_tensor *t = &l->t[l->n];
    memset(t, 0, sizeof(*t));
    snprintf(t->name, sizeof(t->name), "%s", name);
    t->kind = kind;
    t->layer = layer;
    t->ndim = cols > 0 ? 2 : 1;
    t->shape[0] = rows;
    t->shape[1] = cols > 0 ? cols : 1;
    t->numel = (size_t)rows * (size_t)t->shape[1];
    t->offset = l->total;
    t->decay = kind == MODEL_T_EMBED || kind == MODEL_T_POS || kind == MODEL_T_LINEAR ||
               kind == MODEL_T_LM_HEAD;
    l->total += (t->numel + MODEL_ALIGN - 1) / MODEL_ALIGN * MODEL_ALIGN;
    l->params += t->numel;
    return l->n++;
}

void model_layout_init(struct model_layout *l, const struct model_config *c)
{
    memset(l, 0, sizeof(*l));
    int cap = 0;
    char nm[MODEL_NAME_MAX];
    int d = c->d_model, qd = c->n_heads * c->head_dim;
    l->pos = l->final_norm_b = l->lm_head = -1;
    l->embed = add_tensor(l, &cap, "embed.weight", MODEL_T_EMBED, -1, c->padded_vocab_size, d);
    if (c->pos == MODEL_POS_LEARNED)
        l->pos = add_tensor(l, &cap, "pos_embed.weight", MODEL_T_POS, -1, c->max_seq_len, d);
    l->layer = sl_xcalloc((size_t)c->n_layers, sizeof(*l->layer));
    l->n_layers = c->n_layers;
    for (int i = 0; i < c->n_layers; i++) {
        struct model_layer_ids *li = &l->layer[i];
        memset(li, 0xff, sizeof(*li)); /* all -1 */
#define T(field, suffix, kind, rows, cols)                                                         \
    do {                                                                                           \
        snprintf(nm, sizeof(nm), "layers.%d.%s", i, suffix);                                       \
        li->field = add_tensor(l, &cap, nm, kind, i, rows, cols);                                  \
    } while (0)
        T(attn_norm_w, "attn_norm.weight", MODEL_T_NORM_W, d, 0);
        if (c->norm == MODEL_LAYERNORM && c->bias)
            T(attn_norm_b, "attn_norm.bias", MODEL_T_NORM_B, d, 0);
        T(qkv_w, "attn.qkv.weight", MODEL_T_LINEAR, model_qkv_dim(c), d);
        if (c->bias)
            T(qkv_b, "attn.qkv.bias", MODEL_T_BIAS, model_qkv_dim(c), 0);
        T(attn_proj_w, "attn.proj.weight", MODEL_T_LINEAR, d, qd);
        l->t[li->attn_proj_w].out_proj = 1;
        if (c->bias)
            T(attn_proj_b, "attn.proj.bias", MODEL_T_BIAS, d, 0);
        T(mlp_norm_w, "mlp_norm.weight", MODEL_T_NORM_W, d, 0);
        if (c->norm == MODEL_LAYERNORM && c->bias)
            T(mlp_norm_b, "mlp_norm.bias", MODEL_T_NORM_B, d, 0);
        T(fc_w, "mlp.fc.weight", MODEL_T_LINEAR, model_fc_dim(c), d);
        if (c->bias)
            T(fc_b, "mlp.fc.bias", MODEL_T_BIAS, model_fc_dim(c), 0);
        T(mlp_proj_w, "mlp.proj.weight", MODEL_T_LINEAR, d, c->d_ff);
        l->t[li->mlp_proj_w].out_proj = 1;
        if (c->bias)
            T(mlp_proj_b, "mlp.proj.bias", MODEL_T_BIAS, d, 0);
#undef T
    }
    l->final_norm_w = add_tensor(l, &cap, "final_norm.weight", MODEL_T_NORM_W, -1, d, 0);
    if (c->norm == MODEL_LAYERNORM && c->bias)
        l->final_norm_b = add_tensor(l, &cap, "final_norm.bias", MODEL_T_NORM_B, -1, d, 0);
    if (!c->tied_embeddings)
        l->lm_head =
            add_tensor(l, &cap, "lm_head.weight", MODEL_T_LM_HEAD, -1, c->padded_vocab_size, d);
}

void model_layout_release(struct model_layout *l)
{
    free(l->t);
    free(l->layer);
    memset(l, 0, sizeof(*l));
}

void model_layer_span(const struct model_layout *l, int li, int *first, int *end)
{
    *first = l->layer[li].attn_norm_w;
    *end = li + 1 < l->n_layers ? l->layer[li + 1].attn_norm_w : l->final_norm_w;
}

void model_layout_buckets(const struct model_layout *l, size_t *max_layer, size_t *outer)
{
    *max_layer = *outer = 0;
    for (int li = 0; li < l->n_layers; li++) {
        int a, b;
        model_layer_span(l, li, &a, &b);
        size_t n = l->t[b].offset - l->t[a].offset;
        if (n > *max_layer)
            *max_layer = n;
    }
    for (int i = 0; i < l->n; i++)
        if (l->t[i].layer < 0)
            *outer += (l->t[i].numel + MODEL_ALIGN - 1) / MODEL_ALIGN * MODEL_ALIGN;
}

int model_layout_find(const struct model_layout *l, const char *name)
{
    /* a layer's tensors are contiguous from its attn_norm.weight: look only there (a
     * search of the whole table for each tensor was quadratic in the layers) */
    if (!strncmp(name, "layers.", 7)) {
        char *end;
        long k = strtol(name + 7, &end, 10);
        if (end == name + 7 || *end != '.' || k < 0 || k >= l->n_layers)
            return -1;
        for (int i = l->layer[k].attn_norm_w; i < l->n && l->t[i].layer == k; i++)
            if (!strcmp(l->t[i].name, name))
                return i;
        return -1;
    }
    const int outside[] = { l->embed, l->pos, l->final_norm_w, l->final_norm_b, l->lm_head };
    for (size_t j = 0; j < sizeof(outside) / sizeof(*outside); j++)
        if (outside[j] >= 0 && !strcmp(l->t[outside[j]].name, name))
            return outside[j];
    return -1;
}

uint64_t model_params_nonembed(const struct model_config *c)
{
    struct model_layout l;
    model_layout_init(&l, c);
    uint64_t n = 0;
    for (int i = 0; i < l.n; i++)
        if (l.t[i].kind != MODEL_T_EMBED && l.t[i].kind != MODEL_T_POS &&
            l.t[i].kind != MODEL_T_LM_HEAD)
            n += l.t[i].numel;
    model_layout_release(&l);
    return n;
}

double model_flops_per_token(const struct model_config *c, int seq_len)
{
    double h = c->d_model, q = (double)c->n_heads * c->head_dim, L = c->n_layers;
    double per_layer = h * model_qkv_dim(c) + q * h + h * model_fc_dim(c) + (double)c->d_ff * h;
    return 6.0 * (L * per_layer + h * c->vocab_size) + 12.0 * L * seq_len * q;
}

void model_init_params(const struct model_config *c, const struct model_layout *l, float *params,
                       uint64_t seed)
{
    memset(params, 0, l->total * sizeof(float));
#pragma omp parallel for schedule(dynamic, 1)
    for (int i = 0; i < l->n; i++) {
        const struct model_tensor *t = &l->t[i];
        float *p = params + t->offset;
        if (t->kind == MODEL_T_NORM_W) {
            for (size_t k = 0; k < t->numel; k++)
                p[k] = 1.0f;
            continue;
        }
        if (t->kind == MODEL_T_NORM_B || t->kind == MODEL_T_BIAS)
            continue;
        double std = c->init_std;
        if (t->out_proj)
            std /= sqrt(2.0 * c->n_layers);
        size_t n = t->numel;
        if (t->kind == MODEL_T_EMBED || t->kind == MODEL_T_LM_HEAD)
            n = (size_t)c->vocab_size * (size_t)t->shape[1]; /* padded rows stay zero */
        /* one stream per tensor, named by its table position */
        struct sl_rng r;
        sl_rng_seed(&r, seed, 0x100 + (uint64_t)i);
        for (size_t k = 0; k < n; k++)
            p[k] = (float)(std * sl_rng_normal(&r));
    }
}

void model_rope_inv_freq(const struct model_config *c, double *inv_freq)
{
    int half = c->head_dim / 2;
    for (int i = 0; i < half; i++) {
        double f = 1.0 / pow(c->rope_theta, (2.0 * i) / c->head_dim);
        if (c->rope_factor > 0) {
            double low_wavelen = c->rope_original_max_pos / c->rope_low_freq_factor;
            double high_wavelen = c->rope_original_max_pos / c->rope_high_freq_factor;
            double wavelen = 2.0 * M_PI / f;
            if (wavelen > low_wavelen) {
                f = f / c->rope_factor;
            } else if (wavelen >= high_wavelen) {
                double smooth = (c->rope_original_max_pos / wavelen - c->rope_low_freq_factor) /
                                (c->rope_high_freq_factor - c->rope_low_freq_factor);
                f = (1.0 - smooth) * f / c->rope_factor + smooth * f;
            }
        }
        inv_freq[i] = f;
    }
}

int model_config_to_json(const struct model_config *c, struct sl_buf *o)
{
    return sl_buf_printf(
        o,
        "{\"vocab_size\":%d,\"padded_vocab_size\":%d,\"max_position_embeddings\":%d,"
        "\"num_layers\":%d,\"hidden_size\":%d,\"num_attention_heads\":%d,"
        "\"num_query_groups\":%d,\"ffn_hidden_size\":%d,\"normalization\":\"%s\","
        "\"activation\":\"%s\",\"position_embedding_type\":\"%s\",\"bias\":%s,"
        "\"share_embeddings_and_output_weights\":%s,\"layernorm_epsilon\":%.9g,"
        "\"rotary_base\":%.17g,\"rope_scaling\":{\"factor\":%.17g,\"low_freq_factor\":%.17g,"
        "\"high_freq_factor\":%.17g,\"original_max_position_embeddings\":%d},"
        "\"init_method_std\":%.9g}",
        c->vocab_size, c->padded_vocab_size, c->max_seq_len, c->n_layers, c->d_model, c->n_heads,
        c->n_kv_heads, c->d_ff, model_norm_name(c->norm), model_act_name(c->act),
        model_pos_name(c->pos), c->bias ? "true" : "false", c->tied_embeddings ? "true" : "false",
        (double)c->norm_eps, c->rope_theta, c->rope_factor, c->rope_low_freq_factor,
        c->rope_high_freq_factor, c->rope_original_max_pos, (double)c->init_std);
}

static int jint(struct json_object *o, const char *k, int *out)
{
    struct json_object *v;
    if (!json_object_object_get_ex(o, k, &v) || !json_object_is_type(v, json_type_int))
        return sl_err_set(SL_ERR_FORMAT, "model config: '%s' missing or not an integer", k);
    /* json-c clamps a wider value to INT32_MAX: 2^40 would read as 2147483647 */
    int64_t x = json_object_get_int64(v);
    if (x < INT_MIN || x > INT_MAX)
        return sl_err_set(SL_ERR_FORMAT, "model config: '%s' is %s, out of range (at most %d)",
                          k, json_object_get_string(v), INT_MAX);
    *out = (int)x;
    return 0;
}

/* The index of s among the |-separated names, or an error naming the key and the names
 * (an unknown value was read as the first name). */
static int jchoice(const char *k, const char *s, const char *names, int *out)
{
    int i = 0;
    for (const char *p = names; *p; i++) {
        const char *e = strchr(p, '|');
        size_t n = e ? (size_t)(e - p) : strlen(p);
        if (strlen(s) == n && !strncmp(s, p, n)) {
            *out = i;
            return 0;
        }
        if (!e)
            break;
        p = e + 1;
    }
    return sl_err_set(SL_ERR_FORMAT, "model config: '%s' is '%s', not one of %s", k, s, names);
}

static int jdbl(struct json_object *o, const char *k, double *out)
{
    struct json_object *v;
    if (!json_object_object_get_ex(o, k, &v) ||
        !(json_object_is_type(v, json_type_double) || json_object_is_type(v, json_type_int)))
        return sl_err_set(SL_ERR_FORMAT, "model config: '%s' missing or not a number", k);
    *out = json_object_get_double(v);
    return 0;
}

static int jstr(struct json_object *o, const char *k, const char **out)
{
    struct json_object *v;
    if (!json_object_object_get_ex(o, k, &v) || !json_object_is_type(v, json_type_string))
        return sl_err_set(SL_ERR_FORMAT, "model config: '%s' missing or not a string", k);
    *out = json_object_get_string(v);
    return 0;
}

static int jbool(struct json_object *o, const char *k, int *out)
{
    struct json_object *v;
    if (!json_object_object_get_ex(o, k, &v) || !json_object_is_type(v, json_type_boolean))
        return sl_err_set(SL_ERR_FORMAT, "model config: '%s' missing or not a boolean", k);
    *out = json_object_get_boolean(v);
    return 0;
}

int model_config_from_json(struct model_config *c, const char *json, size_t len)
{
    memset(c, 0, sizeof(*c));
    struct json_tokener *tok = json_tokener_new();
    struct json_object *o = json_tokener_parse_ex(tok, json, (int)len);
    json_tokener_free(tok);
    if (!o || !json_object_is_type(o, json_type_object)) {
        json_object_put(o);
        return sl_err_set(SL_ERR_FORMAT, "model config: not a JSON object");
    }
    const char *norm = NULL, *act = NULL, *pos = NULL;
    double eps = 0, std = 0, omp = 0;
    struct json_object *rs = NULL;
    int rc;
    if ((rc = jint(o, "vocab_size", &c->vocab_size)) ||
        (rc = jint(o, "padded_vocab_size", &c->padded_vocab_size)) ||
        (rc = jint(o, "max_position_embeddings", &c->max_seq_len)) ||
        (rc = jint(o, "num_layers", &c->n_layers)) || (rc = jint(o, "hidden_size", &c->d_model)) ||
        (rc = jint(o, "num_attention_heads", &c->n_heads)) ||
        (rc = jint(o, "num_query_groups", &c->n_kv_heads)) ||
        (rc = jint(o, "ffn_hidden_size", &c->d_ff)) || (rc = jstr(o, "normalization", &norm)) ||
        (rc = jstr(o, "activation", &act)) || (rc = jstr(o, "position_embedding_type", &pos)) ||
        (rc = jbool(o, "bias", &c->bias)) ||
        (rc = jbool(o, "share_embeddings_and_output_weights", &c->tied_embeddings)) ||
        (rc = jdbl(o, "layernorm_epsilon", &eps)) ||
        (rc = jdbl(o, "rotary_base", &c->rope_theta)) || (rc = jdbl(o, "init_method_std", &std)))
        goto out;
    if (!json_object_object_get_ex(o, "rope_scaling", &rs)) {
        rc = sl_err_set(SL_ERR_FORMAT, "model config: 'rope_scaling' missing");
        goto out;
    }
    if ((rc = jdbl(rs, "factor", &c->rope_factor)) ||
        (rc = jdbl(rs, "low_freq_factor", &c->rope_low_freq_factor)) ||
        (rc = jdbl(rs, "high_freq_factor", &c->rope_high_freq_factor)) ||
        (rc = jdbl(rs, "original_max_position_embeddings", &omp)))
        goto out;
    if (!(omp >= 0 && omp <= INT_MAX)) {
        rc = sl_err_set(SL_ERR_FORMAT,
                        "model config: 'original_max_position_embeddings' is out of range");
        goto out;
    }
    c->rope_original_max_pos = (int)omp;
    int ni, ai, pi;
    if ((rc = jchoice("normalization", norm, "layernorm|rmsnorm", &ni)) ||
        (rc = jchoice("activation", act, "gelu|gelu_tanh|swiglu", &ai)) ||
        (rc = jchoice("position_embedding_type", pos, "learned_absolute|rope", &pi)))
        goto out;
    c->norm = ni ? MODEL_RMSNORM : MODEL_LAYERNORM;
    c->act = ai == 2 ? MODEL_SWIGLU : ai == 1 ? MODEL_GELU_TANH : MODEL_GELU;
    c->pos = pi ? MODEL_POS_ROPE : MODEL_POS_LEARNED;
    c->norm_eps = (float)eps;
    c->init_std = (float)std;
    c->head_dim = c->n_heads > 0 ? c->d_model / c->n_heads : 0;
    rc = model_config_check(c);
out:
    json_object_put(o);
    return rc;
}

void model_config_to_yaml(const struct model_config *c, struct sl_buf *out)
{
    sl_buf_printf(
        out,
        "  num_layers: %d\n  hidden_size: %d\n  num_attention_heads: %d\n"
        "  num_query_groups: %d\n  ffn_hidden_size: %d\n  max_position_embeddings: %d\n"
        "  normalization: %s\n  activation: %s\n  position_embedding_type: %s\n"
        "  bias: %s\n  share_embeddings_and_output_weights: %s\n  layernorm_epsilon: %.9g\n"
        "  rotary_base: %.17g\n  init_method_std: %.9g\n",
        c->n_layers, c->d_model, c->n_heads, c->n_kv_heads, c->d_ff, c->max_seq_len,
        model_norm_name(c->norm), model_act_name(c->act),
        c->pos == MODEL_POS_ROPE ? "rope" : "learned_absolute", c->bias ? "true" : "false",
        c->tied_embeddings ? "true" : "false", (double)c->norm_eps, c->rope_theta,
        (double)c->init_std);
    if (c->rope_factor > 0)
        sl_buf_printf(out,
                      "  rope_scaling:\n    factor: %.17g\n    low_freq_factor: %.17g\n"
                      "    high_freq_factor: %.17g\n    original_max_position_embeddings: %d\n",
                      c->rope_factor, c->rope_low_freq_factor, c->rope_high_freq_factor,
                      c->rope_original_max_pos);
}

int model_hf_gpt2_each(const struct model_config *c, const struct model_layout *l, float *p,
                       model_hf_tensor_fn fn, void *ctx)
{
#define W(id) (p + l->t[id].offset)
    int64_t D = c->d_model, V = c->vocab_size, F = c->d_ff;
    char nm[128];
    int rc = fn(ctx, "transformer.wte.weight", W(l->embed), V, D, 2, 0);
    if (!rc)
        rc = fn(ctx, "transformer.wpe.weight", W(l->pos), c->max_seq_len, D, 2, 0);
    for (int i = 0; i < c->n_layers && !rc; i++) {
        const struct model_layer_ids *li = &l->layer[i];
#define H(suffix, id, rows, cols, nd, tr)                                                          \
    do {                                                                                           \
        snprintf(nm, sizeof(nm), "transformer.h.%d.%s", i, suffix);                                \
        if (!rc)                                                                                   \
            rc = fn(ctx, nm, W(id), rows, cols, nd, tr);                                           \
    } while (0)
        H("ln_1.weight", li->attn_norm_w, D, 1, 1, 0);
        H("ln_1.bias", li->attn_norm_b, D, 1, 1, 0);
        /* Conv1D stores [in, out]: the transpose of our [out, in] */
        H("attn.c_attn.weight", li->qkv_w, 3 * D, D, 2, 1);
        H("attn.c_attn.bias", li->qkv_b, 3 * D, 1, 1, 0);
        H("attn.c_proj.weight", li->attn_proj_w, D, D, 2, 1);
        H("attn.c_proj.bias", li->attn_proj_b, D, 1, 1, 0);
        H("ln_2.weight", li->mlp_norm_w, D, 1, 1, 0);
        H("ln_2.bias", li->mlp_norm_b, D, 1, 1, 0);
        H("mlp.c_fc.weight", li->fc_w, F, D, 2, 1);
        H("mlp.c_fc.bias", li->fc_b, F, 1, 1, 0);
        H("mlp.c_proj.weight", li->mlp_proj_w, D, F, 2, 1);
        H("mlp.c_proj.bias", li->mlp_proj_b, D, 1, 1, 0);
#undef H
    }
    if (!rc)
        rc = fn(ctx, "transformer.ln_f.weight", W(l->final_norm_w), D, 1, 1, 0);
    if (!rc)
        rc = fn(ctx, "transformer.ln_f.bias", W(l->final_norm_b), D, 1, 1, 0);
    if (!rc && !c->tied_embeddings)
        rc = fn(ctx, "lm_head.weight", W(l->lm_head), V, D, 2, 0);
#undef W
    return rc;
}

int model_hf_llama_each(const struct model_config *c, const struct model_layout *l, float *p,
                        model_hf_tensor_fn fn, void *ctx)
{
#define W(id) (p + l->t[id].offset)
    int64_t D = c->d_model, V = c->vocab_size, F = c->d_ff;
    int64_t qd = (int64_t)c->n_heads * c->head_dim, kd = (int64_t)c->n_kv_heads * c->head_dim;
    char nm[128];
    int rc = fn(ctx, "model.embed_tokens.weight", W(l->embed), V, D, 2, 0);
    for (int i = 0; i < c->n_layers && !rc; i++) {
        const struct model_layer_ids *li = &l->layer[i];
        float *qkv = W(li->qkv_w), *fc = W(li->fc_w);
#define H(suffix, data, rows, cols, nd)                                                            \
    do {                                                                                           \
        snprintf(nm, sizeof(nm), "model.layers.%d.%s", i, suffix);                                 \
        if (!rc)                                                                                   \
            rc = fn(ctx, nm, data, rows, cols, nd, 0);                                             \
    } while (0)
        H("input_layernorm.weight", W(li->attn_norm_w), D, 1, 1);
        H("self_attn.q_proj.weight", qkv, qd, D, 2);
        H("self_attn.k_proj.weight", qkv + qd * D, kd, D, 2);
        H("self_attn.v_proj.weight", qkv + (qd + kd) * D, kd, D, 2);
        if (c->bias) {
            float *b = W(li->qkv_b);
            H("self_attn.q_proj.bias", b, qd, 1, 1);
            H("self_attn.k_proj.bias", b + qd, kd, 1, 1);
            H("self_attn.v_proj.bias", b + qd + kd, kd, 1, 1);
        }
        H("self_attn.o_proj.weight", W(li->attn_proj_w), D, qd, 2);
        if (c->bias)
            H("self_attn.o_proj.bias", W(li->attn_proj_b), D, 1, 1);
        H("post_attention_layernorm.weight", W(li->mlp_norm_w), D, 1, 1);
        H("mlp.gate_proj.weight", fc, F, D, 2);
        H("mlp.up_proj.weight", fc + F * D, F, D, 2);
        H("mlp.down_proj.weight", W(li->mlp_proj_w), D, F, 2);
        if (c->bias) {
            H("mlp.gate_proj.bias", W(li->fc_b), F, 1, 1);
            H("mlp.up_proj.bias", W(li->fc_b) + F, F, 1, 1);
            H("mlp.down_proj.bias", W(li->mlp_proj_b), D, 1, 1);
        }
#undef H
    }
    if (!rc)
        rc = fn(ctx, "model.norm.weight", W(l->final_norm_w), D, 1, 1, 0);
    if (!rc && !c->tied_embeddings)
        rc = fn(ctx, "lm_head.weight", W(l->lm_head), V, D, 2, 0);
#undef W
    return rc;
}
