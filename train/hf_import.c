/* Hugging Face GPT-2 / Llama safetensors checkpoints into training checkpoints
 * (train/hf_import.h). */
#include "train/hf_import.h"

#include "core/alloc.h"
#include "core/atomic.h"
#include "core/buf.h"
#include "core/err.h"
#include "core/file.h"
#include "core/progress.h"
#include "core/stream.h"
#include "dataset/datainfo.h"
#include "tokenize/tokenizer.h"
#include "train/checkpoint.h"
#include "train/model.h"
#include "train/safetensors.h"

#include <json-c/json.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct src {
    const char *dir;
    struct st_file **f;
    char **paths;
    int n;
    size_t used;
};

static struct json_object *read_json(const char *path, int *rc)
{
    struct sl_buf b = SL_BUF_INIT;
    b.max = 64u << 20;
    struct json_object *o = NULL;
    *rc = sl_read_file(path, &b);
    if (!*rc) {
        o = json_tokener_parse(b.data ? b.data : "");
        if (!o || !json_object_is_type(o, json_type_object)) {
            json_object_put(o);
            o = NULL;
            *rc = sl_err_set(SL_ERR_FORMAT, "cannot import: '%s' is not a JSON object", path);
        }
    }
    sl_buf_release(&b);
    return o;
}

static int has(struct json_object *o, const char *k, struct json_object **v)
{
    return json_object_object_get_ex(o, k, v) && !json_object_is_type(*v, json_type_null);
}

static long jl(struct json_object *o, const char *k, long def)
{
    struct json_object *v;
    return has(o, k, &v) ? (long)json_object_get_int64(v) : def;
}

static double jd(struct json_object *o, const char *k, double def)
{
    struct json_object *v;
    return has(o, k, &v) ? json_object_get_double(v) : def;
}

static int jb(struct json_object *o, const char *k, int def)
{
    struct json_object *v;
    return has(o, k, &v) ? json_object_get_boolean(v) : def;
}

static const char *js(struct json_object *o, const char *k)
{
    struct json_object *v;
    return has(o, k, &v) && json_object_is_type(v, json_type_string) ? json_object_get_string(v)
                                                                     : NULL;
}

static int to_int(long v, int *out, const char *key, const char *path)
{
    if (v <= 0 || v > (1L << 30))
        return sl_err_set(SL_ERR_FORMAT,
                          "cannot import: '%s': %s must be a positive integer, got %ld", path, key,
                          v);
    *out = (int)v;
    return 0;
}

/* config.json -> c (the defaults of model_config_load for what the family does not use) */
static int read_config(const char *path, struct json_object *j, int pad_to, struct model_config *c,
                       int *gpt2)
{
    memset(c, 0, sizeof(*c));
    c->rope_theta = 10000.0;
    c->rope_low_freq_factor = 1.0;
    c->rope_high_freq_factor = 4.0;
    c->rope_original_max_pos = 8192;
    c->init_std = (float)jd(j, "initializer_range", 0.02);
    const char *type = js(j, "model_type");
    int rc = 0;
    if (type && !strcmp(type, "gpt2")) {
        *gpt2 = 1;
        if ((rc = to_int(jl(j, "vocab_size", 50257), &c->vocab_size, "vocab_size", path)) ||
            (rc = to_int(jl(j, "n_positions", jl(j, "n_ctx", 1024)), &c->max_seq_len, "n_positions",
                         path)) ||
            (rc = to_int(jl(j, "n_embd", 768), &c->d_model, "n_embd", path)) ||
            (rc = to_int(jl(j, "n_layer", 12), &c->n_layers, "n_layer", path)) ||
            (rc = to_int(jl(j, "n_head", 12), &c->n_heads, "n_head", path)) ||
            (rc = to_int(jl(j, "n_inner", 4L * c->d_model), &c->d_ff, "n_inner", path)))
            return rc;
        const char *act = js(j, "activation_function");
        if (!act || !strcmp(act, "gelu_new") || !strcmp(act, "gelu_pytorch_tanh") ||
            !strcmp(act, "gelu_fast"))
            c->act = MODEL_GELU_TANH;
        else if (!strcmp(act, "gelu"))
            c->act = MODEL_GELU;
        else
            return sl_err_set(SL_ERR_UNSUPPORTED,
                              "cannot import '%s': activation_function '%s' is not supported\n"
                              "hint: sluice models use gelu or gelu_new (tanh)",
                              path, act);
        c->n_kv_heads = c->n_heads;
        c->norm = MODEL_LAYERNORM;
        c->pos = MODEL_POS_LEARNED;
        c->bias = 1;
        c->tied_embeddings = jb(j, "tie_word_embeddings", 1);
        c->norm_eps = (float)jd(j, "layer_norm_epsilon", 1e-5);
    } else if (type && !strcmp(type, "llama")) {
        *gpt2 = 0;
        if ((rc = to_int(jl(j, "vocab_size", 32000), &c->vocab_size, "vocab_size", path)) ||
            (rc = to_int(jl(j, "max_position_embeddings", 2048), &c->max_seq_len,
                         "max_position_embeddings", path)) ||
            (rc = to_int(jl(j, "hidden_size", 4096), &c->d_model, "hidden_size", path)) ||
            (rc =
                 to_int(jl(j, "num_hidden_layers", 32), &c->n_layers, "num_hidden_layers", path)) ||
            (rc = to_int(jl(j, "num_attention_heads", 32), &c->n_heads, "num_attention_heads",
                         path)) ||
            (rc = to_int(jl(j, "num_key_value_heads", c->n_heads), &c->n_kv_heads,
                         "num_key_value_heads", path)) ||
            (rc = to_int(jl(j, "intermediate_size", 11008), &c->d_ff, "intermediate_size", path)))
            return rc;
        const char *act = js(j, "hidden_act");
        if (act && strcmp(act, "silu") != 0)
            return sl_err_set(SL_ERR_UNSUPPORTED,
                              "cannot import '%s': hidden_act '%s' is not supported (SwiGLU "
                              "needs silu)",
                              path, act);
        long hd = jl(j, "head_dim", c->d_model / c->n_heads);
        if (hd * c->n_heads != c->d_model)
            return sl_err_set(SL_ERR_UNSUPPORTED,
                              "cannot import '%s': head_dim %ld x %d heads is not hidden_size %d "
                              "(sluice models have head_dim = hidden / heads)",
                              path, hd, c->n_heads, c->d_model);
        int ab = jb(j, "attention_bias", 0), mb = jb(j, "mlp_bias", 0);
        if (ab != mb)
            return sl_err_set(SL_ERR_UNSUPPORTED,
                              "cannot import '%s': attention_bias %s with mlp_bias %s (sluice "
                              "models have biases on both or neither)",
                              path, ab ? "true" : "false", mb ? "true" : "false");
        c->bias = ab;
        c->norm = MODEL_RMSNORM;
        c->act = MODEL_SWIGLU;
        c->pos = MODEL_POS_ROPE;
        c->tied_embeddings = jb(j, "tie_word_embeddings", 0);
        c->norm_eps = (float)jd(j, "rms_norm_eps", 1e-6);
        c->rope_theta = jd(j, "rope_theta", 10000.0);
        struct json_object *rs;
        if (has(j, "rope_scaling", &rs)) {
            const char *rt = js(rs, "rope_type");
            if (!rt)
                rt = js(rs, "type");
            if (!rt || strcmp(rt, "llama3") != 0)
                return sl_err_set(SL_ERR_UNSUPPORTED,
                                  "cannot import '%s': rope_scaling type '%s' is not supported\n"
                                  "hint: sluice has Llama 3.1 scaling (rope_type llama3)",
                                  path, rt ? rt : "?");
            c->rope_factor = jd(rs, "factor", 0);
            c->rope_low_freq_factor = jd(rs, "low_freq_factor", 1.0);
            c->rope_high_freq_factor = jd(rs, "high_freq_factor", 4.0);
            c->rope_original_max_pos = (int)jl(rs, "original_max_position_embeddings", 8192);
        }
    } else {
        return sl_err_set(SL_ERR_UNSUPPORTED,
                          "cannot import '%s': model_type '%s' is not supported\nhint: sluice "
                          "imports gpt2 (GPT2LMHeadModel) and llama (LlamaForCausalLM)",
                          path, type ? type : "(none)");
    }
    if (pad_to < 1)
        pad_to = 1;
    c->padded_vocab_size = (c->vocab_size + pad_to - 1) / pad_to * pad_to;
    c->head_dim = c->d_model / c->n_heads;
    rc = model_config_check(c);
    if (rc)
        sl_err_wrap(rc, "cannot import '%s': ", path);
    return rc;
}

/* The safetensors files: model.safetensors, or the shards of the index. */
static int open_files(struct src *s)
{
    char *single = sl_xasprintf("%s/model.safetensors", s->dir);
    char *index = sl_xasprintf("%s/model.safetensors.index.json", s->dir);
    int rc = 0;
    struct json_object *ix = NULL;
    if (sl_file_exists(index)) {
        struct json_object *map;
        ix = read_json(index, &rc);
        if (!rc && !json_object_object_get_ex(ix, "weight_map", &map))
            rc = sl_err_set(SL_ERR_FORMAT, "cannot import: '%s' has no weight_map", index);
        if (!rc) {
            json_object_object_foreach(map, key, val)
            {
                (void)key;
                const char *fn = json_object_get_string(val);
                if (!fn || strchr(fn, '/')) {
                    rc = sl_err_set(SL_ERR_FORMAT, "cannot import: '%s': bad file name for '%s'",
                                    index, key);
                    break;
                }
                int seen = 0;
                for (int i = 0; i < s->n && !seen; i++)
                    seen = !strcmp(strrchr(s->paths[i], '/') + 1, fn);
                if (seen)
                    continue;
                s->paths = sl_xrealloc(s->paths, (size_t)(s->n + 1) * sizeof(char *));
                s->paths[s->n++] = sl_xasprintf("%s/%s", s->dir, fn);
            }
        }
    } else if (sl_file_exists(single)) {
        s->paths = sl_xcalloc(1, sizeof(char *));
        s->paths[s->n++] = sl_xstrdup(single);
    } else {
        rc = sl_err_set(SL_ERR_NOTFOUND,
                        "cannot import '%s': no model.safetensors or model.safetensors.index.json "
                        "there\nhint: sluice reads safetensors checkpoints (pytorch_model.bin is "
                        "not read)",
                        s->dir);
    }
    if (!rc) {
        s->f = sl_xcalloc((size_t)s->n + 1, sizeof(*s->f));
        for (int i = 0; i < s->n && !rc; i++)
            rc = st_open(&s->f[i], s->paths[i]);
    }
    json_object_put(ix);
    free(single);
    free(index);
    return rc;
}

static const struct st_tensor *find(struct src *s, const char *name, int *file)
{
    for (int i = 0; i < s->n; i++) {
        const struct st_tensor *t = st_find(s->f[i], name);
        if (t) {
            *file = i;
            return t;
        }
    }
    return NULL;
}

static float f16_to_f32(uint16_t h)
{
    uint32_t sign = (uint32_t)(h >> 15) << 31, exp = (h >> 10) & 0x1f, man = h & 0x3ff;
    float v;
    if (exp == 0)
        v = ldexpf((float)man, -24);
    else if (exp == 31)
        v = man ? NAN : INFINITY;
    else
        v = ldexpf((float)(man | 0x400), (int)exp - 25);
    uint32_t bits;
    memcpy(&bits, &v, 4);
    bits |= sign;
    memcpy(&v, &bits, 4);
    return v;
}

static float elt(const struct st_tensor *t, int kind, size_t k)
{
    const unsigned char *p = t->data;
    if (kind == 0) {
        float v;
        memcpy(&v, p + 4 * k, 4);
        return v;
    }
    uint16_t h;
    memcpy(&h, p + 2 * k, 2);
    if (kind == 1) {
        uint32_t bits = (uint32_t)h << 16;
        float v;
        memcpy(&v, &bits, 4);
        return v;
    }
    return f16_to_f32(h);
}

/* Our tensor [rows, cols] (cols 1 for 1-D) from HF tensor `name` (or `alt`), stored as
 * [rows, cols] or, with transpose, [cols, rows] (GPT-2's Conv1D). */
static int get(struct src *s, const char *name, const char *alt, int64_t rows, int64_t cols,
               int ndim, int transpose, float *dst)
{
    int fi = 0;
    const struct st_tensor *t = find(s, name, &fi);
    if (!t && alt)
        t = find(s, alt, &fi);
    if (!t)
        return sl_err_set(SL_ERR_FORMAT, "cannot import '%s': tensor '%s' is missing", s->dir,
                          name);
    int64_t a = transpose ? cols : rows, b = transpose ? rows : cols;
    int shape_ok = ndim == 1 ? t->ndim == 1 && t->shape[0] == rows
                             : t->ndim == 2 && t->shape[0] == a && t->shape[1] == b;
    if (!shape_ok) {
        char got[64] = "";
        for (int i = 0; i < t->ndim; i++)
            snprintf(got + strlen(got), sizeof(got) - strlen(got), "%s%lld", i ? ", " : "",
                     (long long)t->shape[i]);
        if (ndim == 1)
            return sl_err_set(SL_ERR_FORMAT,
                              "cannot import '%s': tensor '%s' has shape [%s], config.json "
                              "gives [%lld]",
                              s->paths[fi], t->name, got, (long long)rows);
        return sl_err_set(SL_ERR_FORMAT,
                          "cannot import '%s': tensor '%s' has shape [%s], config.json gives "
                          "[%lld, %lld]",
                          s->paths[fi], t->name, got, (long long)a, (long long)b);
    }
    int kind = !strcmp(t->dtype, "F32")    ? 0
               : !strcmp(t->dtype, "BF16") ? 1
               : !strcmp(t->dtype, "F16")  ? 2
                                           : -1;
    if (kind < 0)
        return sl_err_set(SL_ERR_UNSUPPORTED,
                          "cannot import '%s': tensor '%s' has dtype %s\nhint: sluice reads F32, "
                          "BF16 and F16 weights",
                          s->paths[fi], t->name, t->dtype);
    s->used++;
    if (!transpose) {
        size_t n = (size_t)(rows * cols);
        if (kind == 0)
            memcpy(dst, t->data, n * 4);
        else
            for (size_t k = 0; k < n; k++)
                dst[k] = elt(t, kind, k);
        return 0;
    }
    for (int64_t r = 0; r < rows; r++)
        for (int64_t c = 0; c < cols; c++)
            dst[r * cols + c] = elt(t, kind, (size_t)(c * rows + r));
    return 0;
}

/* A tensor of a class's map (model_hf_gpt2_each, model_hf_llama_each) from the files. A
 * GPT-2 tensor may lack the "transformer." of its name (the weights of a GPT2Model, as some
 * checkpoints hold them). */
static int get_tensor(void *ctx, const char *name, float *data, int64_t rows, int64_t cols, int nd,
                      int transposed)
{
    const char *prefix = "transformer.";
    const char *alt = !strncmp(name, prefix, strlen(prefix)) ? name + strlen(prefix) : NULL;
    return get(ctx, name, alt, rows, cols, nd, transposed, data);
}

/* the tokenizer files beside the weights, as a spec */
static char *find_tokenizer(const char *dir, const char **kind)
{
    char buf[PATH_MAX];
    const char *abs = realpath(dir, buf) ? buf : dir;
    char *p = sl_xasprintf("%s/tokenizer.model", abs), *spec = NULL;
    char *v = sl_xasprintf("%s/vocab.json", abs), *m = sl_xasprintf("%s/merges.txt", abs);
    char *j = sl_xasprintf("%s/tokenizer.json", abs);
    enum tokenizer_kind k = TOKENIZER_SPM;
    const char *path = NULL;
    if (sl_file_exists(p)) {
        path = p;
    } else if (sl_file_exists(v) && sl_file_exists(m)) {
        k = TOKENIZER_GPT2;
        path = abs;
    } else if (sl_file_exists(j)) {
        k = TOKENIZER_HF;
        path = j;
    }
    if (path) {
        *kind = tokenizer_kind_name(k);
        spec = sl_xasprintf("%s:%s", *kind, path);
    }
    free(p);
    free(v);
    free(m);
    free(j);
    return spec;
}

/* The config against the weights, before the model is allocated: a config.json that leaves
 * out hidden_size (transformers' default for llama is 4096) describes a 7B model over a
 * 124M file, and would ask for 26.7 GB. The weights' elements must be at least what the
 * model holds but for the padded vocabulary rows and a tied output layer. */
static int check_sizes(const char *path, struct json_object *cfg, int gpt2,
                       const struct model_config *c, const struct model_layout *l,
                       const struct src *s)
{
    uint64_t have = 0;
    for (int i = 0; i < s->n; i++)
        for (size_t k = 0; k < st_count(s->f[i]); k++) {
            const struct st_tensor *t = st_at(s->f[i], k);
            uint64_t e = 1;
            for (int d = 0; d < t->ndim; d++)
                e *= (uint64_t)t->shape[d];
            have += e;
        }
    uint64_t vocab_rows = (uint64_t)c->d_model * (uint64_t)c->vocab_size;
    uint64_t need = (uint64_t)l->params - (uint64_t)c->d_model *
                                              (uint64_t)(c->padded_vocab_size - c->vocab_size) *
                                              (c->tied_embeddings ? 1u : 2u);
    if (!c->tied_embeddings)
        need -= vocab_rows; /* an untied output layer may be left out as tied */
    if (need <= have)
        return 0;
    static const char *const gpt2_keys[] = { "n_embd", "n_layer", "n_inner", "vocab_size", NULL };
    static const char *const llama_keys[] = { "hidden_size", "num_hidden_layers",
                                              "intermediate_size", "vocab_size", NULL };
    char missing[160] = "";
    for (const char *const *k = gpt2 ? gpt2_keys : llama_keys; *k; k++) {
        struct json_object *v;
        if (!json_object_object_get_ex(cfg, *k, &v))
            snprintf(missing + strlen(missing), sizeof(missing) - strlen(missing), "%s%s",
                     missing[0] ? ", " : "", *k);
    }
    char a[32], b[32];
    return sl_err_set(SL_ERR_FORMAT,
                      "cannot import '%s': the config describes a model of %llu parameters "
                      "(%s of fp32) and the weights hold %llu (%s)%s%s%s\nhint: is this "
                      "config.json the weights' own?",
                      path, (unsigned long long)need, sl_human_bytes(4.0 * (double)need, a, sizeof(a)),
                      (unsigned long long)have, sl_human_bytes(4.0 * (double)have, b, sizeof(b)),
                      missing[0] ? "; it does not give " : "", missing,
                      missing[0] ? ", whose defaults were taken" : "");
}

int hf_import(const char *dir, const char *out, int pad_to, struct hf_import_info *info)
{
    memset(info, 0, sizeof(*info));
    struct src s = { .dir = dir };
    struct model_config c;
    struct model_layout l = { 0 };
    float *p = NULL;
    int gpt2 = 0, rc;
    char *cp = sl_xasprintf("%s/config.json", dir);
    struct json_object *cfg = read_json(cp, &rc);
    if (rc) {
        if (rc == SL_ERR_NOTFOUND || rc == SL_ERR_IO)
            sl_err_wrap(rc, "cannot import '%s': ", dir);
        goto out;
    }
    if ((rc = read_config(cp, cfg, pad_to, &c, &gpt2)) || (rc = open_files(&s)))
        goto out;
    info->arch = gpt2 ? "GPT2LMHeadModel" : "LlamaForCausalLM";
    info->files = s.n;
    model_layout_init(&l, &c);
    if ((rc = check_sizes(cp, cfg, gpt2, &c, &l, &s)))
        goto out;
    p = sl_xcalloc(l.total, sizeof(float));
    rc = gpt2 ? model_hf_gpt2_each(&c, &l, p, get_tensor, &s)
              : model_hf_llama_each(&c, &l, p, get_tensor, &s);
    if (rc)
        goto out;
    size_t total = 0;
    for (int i = 0; i < s.n; i++)
        total += st_count(s.f[i]);
    info->unused = (int)(total - s.used);
    /* the tokenizer and its end of document, recorded as train records them */
    struct data_info di;
    memset(&di, 0, sizeof(di));
    const char *kind = NULL;
    di.tokenizer = find_tokenizer(dir, &kind);
    di.kind = di.tokenizer ? (char *)kind : NULL;
    di.vocab_size = -1;
    di.eod_id = jl(cfg, "eos_token_id", -1);
    struct sl_buf dj = SL_BUF_INIT, cj = SL_BUF_INIT;
    data_info_to_json(&di, &dj);
    char abs[PATH_MAX];
    sl_buf_puts(&cj, "{\"import\": {\"from\": ");
    const char *from = realpath(dir, abs) ? abs : dir;
    sl_buf_json_str(&cj, from, strlen(from));
    sl_buf_printf(&cj, ", \"architecture\": \"%s\"}}", info->arch);
    struct ckpt_state st;
    memset(&st, 0, sizeof(st));
    st.loss = NAN;
    st.data_json = dj.data;
    st.tokenizer = di.tokenizer;
    rc = sl_mkdir_p(out);
    if (!rc)
        rc = ckpt_save(out, &c, &l, p, NULL, NULL, &st, cj.data, NULL);
    info->tokenizer = di.tokenizer;
    sl_buf_release(&dj);
    sl_buf_release(&cj);
    if (!rc)
        info->step_dir = ckpt_step_dir(out, 0);
out:
    json_object_put(cfg);
    for (int i = 0; i < s.n; i++) {
        if (s.f)
            st_close(s.f[i]);
        free(s.paths[i]);
    }
    free(s.f);
    free(s.paths);
    free(p);
    model_layout_release(&l);
    free(cp);
    return rc;
}

void hf_import_info_release(struct hf_import_info *info)
{
    free(info->tokenizer);
    free(info->step_dir);
    memset(info, 0, sizeof(*info));
}
