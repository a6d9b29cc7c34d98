/* Reading checkpoints back: checkpoint.json strictly (train/checkpoint.h), the weights
 * checked against the config before anything is allocated, tensors checked by shape, and
 * sharded optimizer state that must tile the model. */
#include "train/checkpoint.h"
#include "train/checkpoint_impl.h"

#include "tokenize/tokenizer.h"

#include "core/alloc.h"
#include "core/atomic.h"
#include "core/buf.h"
#include "core/err.h"
#include "core/file.h"
#include "core/progress.h"
#include "core/stream.h"
#include "train/safetensors.h"

#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <fcntl.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>


/* The config against model.safetensors before anyone allocates the model it describes: an
 * fp32 parameter is 4 bytes of the file (vocab_size 2^31 - 1 over a tiny file asked for
 * terabytes and ended in a bare "out of memory"). */
static int check_weights_size(const char *path, const struct model_config *c)
{
    char *p = sl_xasprintf("%s/model.safetensors", path);
    struct stat sb;
    int rc = 0;
    if (stat(p, &sb) == 0) {
        uint64_t d = (uint64_t)c->d_model, layers = (uint64_t)c->n_layers;
        uint64_t per_layer = d * (uint64_t)model_qkv_dim(c) + d * d +
                             d * (uint64_t)model_fc_dim(c) + d * (uint64_t)c->d_ff;
        uint64_t need = ((uint64_t)c->padded_vocab_size * d * (c->tied_embeddings ? 1 : 2) +
                         layers * per_layer) * 4;
        if (need > (uint64_t)sb.st_size) {
            char a[32], b[32];
            rc = sl_err_set(SL_ERR_CORRUPT,
                            "checkpoint '%s': its config describes at least %s of fp32 weights "
                            "(vocabulary %d, hidden size %d, %d layers), but '%s' holds %s\n"
                            "hint: the file is truncated, or checkpoint.json is not this "
                            "step's own",
                            path, sl_human_bytes((double)need, a, sizeof(a)), c->padded_vocab_size,
                            c->d_model, c->n_layers, p,
                            sl_human_bytes((double)sb.st_size, b, sizeof(b)));
        }
    }
    free(p);
    return rc;
}

static struct json_object *read_ckpt_json(const char *step_dir)
{
    char *jp = sl_xasprintf("%s/checkpoint.json", step_dir);
    struct sl_buf b = SL_BUF_INIT;
    b.max = 64u << 20;
    struct json_object *o = sl_read_file(jp, &b) ? NULL : json_tokener_parse(b.data ? b.data : "");
    sl_buf_release(&b);
    free(jp);
    return o;
}

static struct json_object *json_at(struct json_object *o, const char *a, const char *b)
{
    struct json_object *v = NULL;
    if (!o || !json_object_object_get_ex(o, a, &v))
        return NULL;
    if (b && (!json_object_is_type(v, json_type_object) || !json_object_object_get_ex(v, b, &v)))
        return NULL;
    return v;
}

char *ckpt_changed_settings(const char *step_dir, long steps, const char *optim_json)
{
    struct json_object *o = read_ckpt_json(step_dir), *now = json_tokener_parse(optim_json);
    struct json_object *was = json_at(o, "optimizer", "settings");
    struct json_object *cfg_train = json_at(json_at(o, "config", NULL), "train", NULL);
    struct json_object *old_steps = cfg_train ? json_at(cfg_train, "steps", NULL) : NULL;
    struct sl_buf d = SL_BUF_INIT;
    if (old_steps && json_object_get_int64(old_steps) != steps)
        sl_buf_printf(&d, "train.steps %lld -> %ld", (long long)json_object_get_int64(old_steps),
                      steps);
    if (was && now && json_object_is_type(was, json_type_object)) {
        json_object_object_foreach(now, key, v)
        {
            struct json_object *w = json_at(was, key, NULL);
            if (!w)
                continue;
            const char *a = json_object_get_string(w), *b = json_object_get_string(v);
            int same = json_object_is_type(v, json_type_string)
                           ? !strcmp(a, b)
                           : json_object_get_double(w) == json_object_get_double(v);
            if (!same)
                sl_buf_printf(&d, "%soptim.%s %s -> %s", d.len ? ", " : "", key, a, b);
        }
    }
    json_object_put(o);
    json_object_put(now);
    return d.len ? sl_buf_detach(&d, NULL) : NULL;
}

int ckpt_read_meta(const char *path, struct model_config *c, struct ckpt_state *st)
{
    memset(st, 0, sizeof(*st));
    char *jp = sl_xasprintf("%s/checkpoint.json", path);
    struct sl_buf b = SL_BUF_INIT;
    b.max = 64u << 20;
    int rc = sl_read_file(jp, &b);
    if (rc) {
        sl_err_wrap(rc, "checkpoint '%s': ", path);
        free(jp);
        return rc;
    }
    struct json_tokener *tok = json_tokener_new();
    struct json_object *o = json_tokener_parse_ex(tok, b.data ? b.data : "", (int)b.len);
    enum json_tokener_error jerr = json_tokener_get_error(tok);
    json_tokener_free(tok);
    struct json_object *v, *model, *opt, *data, *rng, *state;
    rc = SL_ERR_CORRUPT;
    if (!o || jerr != json_tokener_success || !json_object_is_type(o, json_type_object))
        goto bad;
    if (!json_object_object_get_ex(o, "format", &v) ||
        strcmp(json_object_get_string(v), CKPT_FORMAT) != 0)
        goto bad;
    if (!json_object_object_get_ex(o, "version", &v) || json_object_get_int(v) != CKPT_VERSION) {
        rc = sl_err_set(SL_ERR_UNSUPPORTED, "checkpoint '%s': version %s is not supported", jp,
                        json_object_to_json_string(v));
        goto out;
    }
    if (!json_object_object_get_ex(o, "step", &v))
        goto bad;
    st->step = (long)json_object_get_int64(v);
    if (!json_object_object_get_ex(o, "model", &model))
        goto bad;
    const char *ms = json_object_to_json_string(model);
    rc = model_config_from_json(c, ms, strlen(ms));
    if (rc) {
        sl_err_wrap(rc, "checkpoint '%s': ", jp);
        goto out;
    }
    if ((rc = check_weights_size(path, c)))
        goto out;
    rc = SL_ERR_CORRUPT;
    if (json_object_object_get_ex(o, "optimizer", &opt) &&
        json_object_object_get_ex(opt, "adam_step", &v))
        st->adam_step = (long)json_object_get_int64(v);
    if (!json_object_object_get_ex(o, "data", &data) ||
        !json_object_object_get_ex(data, "consumed_samples", &v))
        goto bad;
    st->consumed_samples = (uint64_t)json_object_get_int64(v);
    if (json_object_object_get_ex(o, "skipped_steps", &v))
        st->skipped = (long)json_object_get_int64(v);
    if (json_object_object_get_ex(o, "loss", &v))
        st->loss = json_object_get_double(v);
    if (!json_object_object_get_ex(o, "rng", &rng) ||
        !json_object_object_get_ex(rng, "state", &state) ||
        !json_object_is_type(state, json_type_array) || json_object_array_length(state) != 4)
        goto bad;
    for (int i = 0; i < 4; i++)
        st->rng[i] =
            strtoull(json_object_get_string(json_object_array_get_idx(state, (size_t)i)), NULL, 16);
    rc = 0;
    goto out;
bad:
    rc = sl_err_set(SL_ERR_CORRUPT,
                    "checkpoint '%s' is damaged: not a %s JSON file with step, "
                    "model, data and rng",
                    jp, CKPT_FORMAT);
out:
    json_object_put(o);
    sl_buf_release(&b);
    free(jp);
    return rc;
}

/* The tensor `prefix` + mt's name of f, F32 of mt's shape itself (not only its bytes: a
 * transposed tensor has as many), or NULL with the error set. */
static const struct st_tensor *model_tensor_in(const struct st_file *f, const char *file,
                                               const char *prefix, const struct model_tensor *mt)
{
    char name[MODEL_NAME_MAX + 16];
    snprintf(name, sizeof(name), "%s%s", prefix, mt->name);
    const struct st_tensor *t = st_find(f, name);
    int shaped = t && t->ndim == mt->ndim && t->shape[0] == mt->shape[0] &&
                 (mt->ndim == 1 || t->shape[1] == mt->shape[1]);
    if (t && !strcmp(t->dtype, "F32") && shaped && t->nbytes == mt->numel * sizeof(float))
        return t;
    char want[64];
    snprintf(want, sizeof(want), mt->ndim == 1 ? "[%lld]" : "[%lld, %lld]",
             (long long)mt->shape[0], (long long)mt->shape[1]);
    sl_err_set(SL_ERR_CORRUPT, "checkpoint file '%s': tensor '%s' is %s %s", file, name,
               t ? "not F32 of the model's shape" : "missing; the model's shape is", want);
    return NULL;
}

static int load_slab(const char *file, const struct model_layout *l, float *slab,
                     const char *prefix)
{
    struct st_file *f;
    int rc = st_open(&f, file);
    if (rc)
        return rc;
    for (int i = 0; i < l->n && !rc; i++) {
        const struct st_tensor *t = model_tensor_in(f, file, prefix, &l->t[i]);
        if (t)
            memcpy(slab + l->t[i].offset, t->data, t->nbytes);
        else
            rc = SL_ERR_CORRUPT;
    }
    st_close(f);
    return rc;
}

/* The optimizer shard files of a step directory (sorted), or none. */
static int list_shards(const char *path, char ***files, size_t *n)
{
    *files = NULL;
    *n = 0;
    DIR *d = opendir(path);
    if (!d)
        return sl_err_set(SL_ERR_IO, "cannot open checkpoint '%s': %s", path, strerror(errno));
    size_t cap = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        int r, w;
        char tail[32];
        if (sscanf(e->d_name, "optimizer-%d-of-%d.%31s", &r, &w, tail) != 3 ||
            strcmp(tail, "safetensors") != 0)
            continue;
        if (*n == cap) {
            cap = cap ? 2 * cap : 8;
            *files = sl_xrealloc(*files, cap * sizeof(char *));
        }
        (*files)[(*n)++] = sl_xasprintf("%s/%s", path, e->d_name);
    }
    closedir(d);
    for (size_t i = 1; i < *n; i++)
        for (size_t k = i; k > 0 && strcmp((*files)[k - 1], (*files)[k]) > 0; k--) {
            char *t = (*files)[k];
            (*files)[k] = (*files)[k - 1];
            (*files)[k - 1] = t;
        }
    return 0;
}

static void free_list(char **v, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(v[i]);
    free(v);
}

/* Copy the overlap of the source elements [s0, s0 + sn) with each range into it. */
static void copy_overlap(const float *src, size_t s0, size_t sn, const struct ckpt_range *r,
                         size_t nr, float *const *dst)
{
    for (size_t i = 0; i < nr; i++) {
        size_t a = s0 > r[i].first ? s0 : r[i].first;
        size_t b0 = s0 + sn, b1 = r[i].first + r[i].n;
        size_t b = b0 < b1 ? b0 : b1;
        if (a < b)
            memcpy(dst[i] + (a - r[i].first), src + (a - s0), (b - a) * sizeof(float));
    }
}

int ckpt_is_sharded(const char *path)
{
    char **files;
    size_t n;
    if (list_shards(path, &files, &n))
        return 0;
    free_list(files, n);
    return n > 0;
}

/* A range of a shard file, for the check that the shards tile the model. */
struct span {
    size_t first, n, file;
};

static int span_cmp(const void *a, const void *b)
{
    const struct span *x = a, *y = b;
    return x->first < y->first ? -1 : x->first > y->first;
}

/* The ranges of every shard must tile [0, total) exactly: a gap leaves elements unset, an
 * overlap means two shards disagree about who holds them (half the weights came out zero
 * when only the lengths were summed). */
static int check_tiling(const char *path, const char *part, struct span *s, size_t n,
                        char *const *files, size_t total)
{
    qsort(s, n, sizeof(*s), span_cmp);
    size_t at = 0;
    for (size_t i = 0; i < n; i++) {
        if (s[i].first != at)
            return sl_err_set(SL_ERR_CORRUPT,
                              "checkpoint '%s': the optimizer shards %s elements [%zu, %zu) of "
                              "'%s' (%s starts at %zu)\nhint: %s",
                              path, s[i].first > at ? "leave out" : "hold twice",
                              s[i].first > at ? at : s[i].first, s[i].first > at ? s[i].first : at,
                              part, files[s[i].file], s[i].first,
                              s[i].first > at ? "is a shard file missing?"
                                              : "are shards of two runs in one directory?");
        at = s[i].first + s[i].n;
    }
    if (at != total)
        return sl_err_set(SL_ERR_CORRUPT,
                          "checkpoint '%s': the optimizer shards cover %zu of %zu elements of "
                          "'%s'\nhint: is a shard file missing?",
                          path, at, total, part);
    return 0;
}

int ckpt_read_ranges(const char *path, const struct model_layout *l, enum ckpt_part part,
                     const struct ckpt_range *r, size_t nr, float *const *dst)
{
    for (size_t i = 0; i < nr; i++)
        memset(dst[i], 0, r[i].n * sizeof(float));
    char **files;
    size_t nf;
    int rc = list_shards(path, &files, &nf);
    if (rc)
        return rc;
    if (nf) {
        /* sharded (GPU) checkpoint: flat ranges named <part>@<first> in every shard */
        size_t plen = strlen(ckpt_part_names[part]);
        struct span *spans = NULL;
        size_t nspans = 0, cap = 0;
        for (size_t k = 0; k < nf && !rc; k++) {
            struct st_file *f;
            if ((rc = st_open(&f, files[k])))
                break;
            for (size_t i = 0; i < st_count(f); i++) {
                const struct st_tensor *t = st_at(f, i);
                if (strncmp(t->name, ckpt_part_names[part], plen) != 0 || t->name[plen] != '@')
                    continue;
                char *end;
                unsigned long long first = strtoull(t->name + plen + 1, &end, 10);
                if (*end || strcmp(t->dtype, "F32") != 0 || t->ndim != 1 ||
                    first + (unsigned long long)t->shape[0] > l->total) {
                    rc = sl_err_set(SL_ERR_CORRUPT,
                                    "checkpoint shard '%s': tensor '%s' is not an F32 range "
                                    "inside the model's %zu elements",
                                    files[k], t->name, l->total);
                    break;
                }
                copy_overlap((const float *)t->data, (size_t)first, (size_t)t->shape[0], r, nr,
                             dst);
                if (nspans == cap) {
                    cap = cap ? 2 * cap : 16;
                    spans = sl_xrealloc(spans, cap * sizeof(*spans));
                }
                spans[nspans++] = (struct span){ (size_t)first, (size_t)t->shape[0], k };
            }
            st_close(f);
        }
        if (!rc)
            rc = check_tiling(path, ckpt_part_names[part], spans, nspans, files, l->total);
        free(spans);
        free_list(files, nf);
        return rc;
    }
    free_list(files, nf);
    /* per-tensor (CPU) checkpoint */
    static const char *const prefixes[3] = { "", "exp_avg.", "exp_avg_sq." };
    char *p = sl_xasprintf("%s/%s", path,
                           part == CKPT_PARAMS ? "model.safetensors" : "optimizer.safetensors");
    struct stat sb;
    if (part != CKPT_PARAMS && stat(p, &sb) != 0) {
        /* weights only (sluice import hf): zero moments when no update was applied */
        struct model_config mc;
        struct ckpt_state st;
        rc = ckpt_read_meta(path, &mc, &st);
        if (!rc && st.adam_step != 0)
            rc = sl_err_set(SL_ERR_NOTFOUND,
                            "cannot resume from '%s': no optimizer.safetensors after %ld AdamW "
                            "updates",
                            path, st.adam_step);
        free(p);
        return rc; /* dst was zeroed above */
    }
    struct st_file *f;
    rc = st_open(&f, p);
    for (int i = 0; !rc && i < l->n; i++) {
        const struct model_tensor *mt = &l->t[i];
        int needed = 0;
        for (size_t k = 0; k < nr; k++)
            needed |= mt->offset < r[k].first + r[k].n && r[k].first < mt->offset + mt->numel;
        if (!needed)
            continue;
        const struct st_tensor *t = model_tensor_in(f, p, prefixes[part], mt);
        if (!t) {
            rc = SL_ERR_CORRUPT;
            break;
        }
        copy_overlap((const float *)t->data, mt->offset, mt->numel, r, nr, dst);
    }
    st_close(f);
    free(p);
    return rc;
}

int ckpt_load(const char *path, const struct model_layout *l, float *params, float *m, float *v)
{
    if (ckpt_is_sharded(path)) {
        /* written by the GPU trainer: the fp32 master weights and moments are in the shards */
        struct ckpt_range all = { 0, l->total, NULL, NULL, NULL };
        int rc = ckpt_read_ranges(path, l, CKPT_PARAMS, &all, 1, &params);
        if (!rc && m && v)
            rc = ckpt_read_ranges(path, l, CKPT_EXP_AVG, &all, 1, &m);
        if (!rc && m && v)
            rc = ckpt_read_ranges(path, l, CKPT_EXP_AVG_SQ, &all, 1, &v);
        return rc;
    }
    char *p = sl_xasprintf("%s/model.safetensors", path);
    int rc = load_slab(p, l, params, "");
    free(p);
    if (rc || !m || !v)
        return rc;
    p = sl_xasprintf("%s/optimizer.safetensors", path);
    struct stat sb;
    if (stat(p, &sb) != 0) {
        /* weights only (sluice import hf): a run that starts from it starts with zero moments,
         * as long as no update was ever applied to them */
        struct model_config mc;
        struct ckpt_state st;
        rc = ckpt_read_meta(path, &mc, &st);
        if (!rc && st.adam_step == 0) {
            memset(m, 0, l->total * sizeof(float));
            memset(v, 0, l->total * sizeof(float));
        } else if (!rc) {
            rc = sl_err_set(SL_ERR_NOTFOUND,
                            "cannot resume from '%s': no optimizer.safetensors after %ld AdamW "
                            "updates",
                            path, st.adam_step);
        }
        free(p);
        return rc;
    }
    rc = load_slab(p, l, m, "exp_avg.");
    if (!rc)
        rc = load_slab(p, l, v, "exp_avg_sq.");
    free(p);
    return rc;
}
