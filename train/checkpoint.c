/* Checkpoints: atomic step directories of safetensors + JSON, resume lookup, pruning, and
 * the Hugging Face export. */
#include "train/checkpoint.h"

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

#define CKPT_FORMAT  "sluice-checkpoint"
#define CKPT_VERSION 1

/* Remove a directory holding only files. */
static int rm_flat_dir(const char *path)
{
    DIR *d = opendir(path);
    if (!d)
        return errno == ENOENT
                   ? 0
                   : sl_err_set(SL_ERR_IO, "cannot open '%s': %s", path, strerror(errno));
    struct dirent *e;
    int rc = 0;
    while ((e = readdir(d))) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
            continue;
        char *p = sl_xasprintf("%s/%s", path, e->d_name);
        if (unlink(p) != 0 && !rc)
            rc = sl_err_set(SL_ERR_IO, "cannot remove '%s': %s", p, strerror(errno));
        free(p);
    }
    closedir(d);
    if (!rc && rmdir(path) != 0)
        rc = sl_err_set(SL_ERR_IO, "cannot remove '%s': %s", path, strerror(errno));
    return rc;
}

static int write_tensors(const char *path, const struct model_layout *l, const float *slab,
                         const char *prefix, const char *const *meta, st_fill_fn fill, void *arg)
{
    struct st_tensor *t = sl_xcalloc((size_t)l->n, sizeof(*t));
    char **names = sl_xcalloc((size_t)l->n, sizeof(char *));
    for (int i = 0; i < l->n; i++) {
        names[i] = sl_xasprintf("%s%s", prefix, l->t[i].name);
        t[i].name = names[i];
        t[i].dtype = "F32";
        t[i].ndim = l->t[i].ndim;
        t[i].shape[0] = l->t[i].shape[0];
        t[i].shape[1] = l->t[i].shape[1];
        t[i].data = slab ? slab + l->t[i].offset : NULL;
        t[i].nbytes = l->t[i].numel * sizeof(float);
    }
    int rc = fill ? st_write_fill(path, t, (size_t)l->n, meta, fill, arg)
                  : st_write(path, t, (size_t)l->n, meta);
    for (int i = 0; i < l->n; i++)
        free(names[i]);
    free(names);
    free(t);
    return rc;
}

static char *step_path(const char *dir, const char *fmt, long step)
{
    return sl_xasprintf(fmt, dir, step);
}

char *ckpt_step_dir(const char *dir, long step)
{
    return step_path(dir, "%s/step-%08ld", step);
}

char *ckpt_tmp_path(const char *dir, long step)
{
    return step_path(dir, "%s/.step-%08ld.tmp", step);
}

int ckpt_begin(const char *dir, long step)
{
    int rc = sl_mkdir_p(dir);
    if (rc)
        return rc;
    char *tmp = ckpt_tmp_path(dir, step);
    rm_flat_dir(tmp);
    if (mkdir(tmp, 0777) != 0)
        rc = sl_err_set(SL_ERR_IO, "cannot create '%s': %s", tmp, strerror(errno));
    free(tmp);
    return rc;
}

void ckpt_abort(const char *dir, long step)
{
    char *tmp = ckpt_tmp_path(dir, step);
    rm_flat_dir(tmp);
    free(tmp);
}

static int write_model(const char *dir, long step, const struct model_layout *l,
                       const float *params, st_fill_fn fill, void *arg)
{
    char stepbuf[32];
    snprintf(stepbuf, sizeof(stepbuf), "%ld", step);
    const char *meta[] = { "format", CKPT_FORMAT, "step", stepbuf, NULL };
    char *tmp = ckpt_tmp_path(dir, step);
    char *p = sl_xasprintf("%s/model.safetensors", tmp);
    int rc = write_tensors(p, l, params, "", meta, fill, arg);
    free(p);
    free(tmp);
    return rc;
}

int ckpt_write_model(const char *dir, long step, const struct model_layout *l, const float *params)
{
    return write_model(dir, step, l, params, NULL, NULL);
}

int ckpt_write_model_fill(const char *dir, long step, const struct model_layout *l, st_fill_fn fill,
                          void *arg)
{
    return write_model(dir, step, l, NULL, fill, arg);
}

static int write_optimizer(const char *dir, long step, const struct model_layout *l, const float *m,
                           const float *v)
{
    char stepbuf[32];
    snprintf(stepbuf, sizeof(stepbuf), "%ld", step);
    const char *meta[] = { "format", CKPT_FORMAT, "step", stepbuf, NULL };
    char *tmp = ckpt_tmp_path(dir, step);
    char *p = sl_xasprintf("%s/optimizer.safetensors", tmp);
    struct st_tensor *t = sl_xcalloc(2 * (size_t)l->n, sizeof(*t));
    char **names = sl_xcalloc(2 * (size_t)l->n, sizeof(char *));
    for (int k = 0; k < 2; k++)
        for (int i = 0; i < l->n; i++) {
            struct st_tensor *x = &t[k * l->n + i];
            names[k * l->n + i] = sl_xasprintf("%s.%s", k ? "exp_avg_sq" : "exp_avg", l->t[i].name);
            x->name = names[k * l->n + i];
            x->dtype = "F32";
            x->ndim = l->t[i].ndim;
            x->shape[0] = l->t[i].shape[0];
            x->shape[1] = l->t[i].shape[1];
            x->data = (k ? v : m) + l->t[i].offset;
            x->nbytes = l->t[i].numel * sizeof(float);
        }
    int rc = st_write(p, t, 2 * (size_t)l->n, meta);
    for (int i = 0; i < 2 * l->n; i++)
        free(names[i]);
    free(names);
    free(t);
    free(p);
    free(tmp);
    return rc;
}

static const char *const part_names[3] = { "master", "exp_avg", "exp_avg_sq" };

static int write_shard(const char *dir, long step, int rank, int nranks, const struct ckpt_range *r,
                       size_t nr, st_fill_fn fill, void *arg)
{
    char stepbuf[32], rankbuf[16], nbuf[16];
    snprintf(stepbuf, sizeof(stepbuf), "%ld", step);
    snprintf(rankbuf, sizeof(rankbuf), "%d", rank);
    snprintf(nbuf, sizeof(nbuf), "%d", nranks);
    const char *meta[] = { "format", CKPT_FORMAT, "step", stepbuf, "rank",
                           rankbuf,  "ranks",     nbuf,   NULL };
    struct st_tensor *t = sl_xcalloc(3 * nr + 1, sizeof(*t));
    char **names = sl_xcalloc(3 * nr + 1, sizeof(char *));
    size_t n = 0;
    for (size_t i = 0; i < nr; i++) {
        if (!r[i].n)
            continue;
        const float *src[3] = { r[i].master, r[i].m, r[i].v };
        for (int k = 0; k < 3; k++) {
            names[n] = sl_xasprintf("%s@%zu", part_names[k], r[i].first);
            t[n] = (struct st_tensor){ names[n], "F32",
                                       1,        { (int64_t)r[i].n },
                                       src[k],   r[i].n * sizeof(float) };
            n++;
        }
    }
    char *tmp = ckpt_tmp_path(dir, step);
    char *p = sl_xasprintf("%s/optimizer-%05d-of-%05d.safetensors", tmp, rank, nranks);
    int rc = fill ? st_write_fill(p, t, n, meta, fill, arg) : st_write(p, t, n, meta);
    free(p);
    free(tmp);
    for (size_t i = 0; i < n; i++)
        free(names[i]);
    free(names);
    free(t);
    return rc;
}

int ckpt_write_shard(const char *dir, long step, int rank, int nranks, const struct ckpt_range *r,
                     size_t nr)
{
    return write_shard(dir, step, rank, nranks, r, nr, NULL, NULL);
}

int ckpt_write_shard_fill(const char *dir, long step, int rank, int nranks,
                          const struct ckpt_range *r, size_t nr, st_fill_fn fill, void *arg)
{
    return write_shard(dir, step, rank, nranks, r, nr, fill, arg);
}

int ckpt_commit(const char *dir, const struct model_config *c, const struct ckpt_state *st,
                const char *config_json, const char *optim_json, int optimizer, int shards)
{
    char *final = ckpt_step_dir(dir, st->step);
    char *tmp = ckpt_tmp_path(dir, st->step);
    char *old = step_path(dir, "%s/.step-%08ld.old", st->step);
    char *p = NULL;
    int rc = 0;
    struct sl_buf j = SL_BUF_INIT;
    sl_buf_printf(&j, "{\n  \"format\": \"%s\",\n  \"version\": %d,\n  \"step\": %ld,\n",
                  CKPT_FORMAT, CKPT_VERSION, st->step);
    sl_buf_puts(&j, "  \"model\": ");
    model_config_to_json(c, &j);
    if (shards > 0)
        sl_buf_puts(&j, ",\n  \"weights\": {\"file\": \"model.safetensors\", \"dtype\": \"F32\", "
                        "\"source\": \"bf16\"},\n");
    else
        sl_buf_puts(&j,
                    ",\n  \"weights\": {\"file\": \"model.safetensors\", \"dtype\": \"F32\"},\n");
    if (shards > 0)
        sl_buf_printf(&j,
                      "  \"optimizer\": {\"file\": null, \"shards\": %d, \"shard_file\": "
                      "\"optimizer-RRRRR-of-%05d.safetensors\", \"type\": \"adamw\", "
                      "\"adam_step\": %ld, \"moments\": [\"master@<first>\", \"exp_avg@<first>\", "
                      "\"exp_avg_sq@<first>\"], \"settings\": %s},\n",
                      shards, shards, st->adam_step, optim_json ? optim_json : "null");
    else
        sl_buf_printf(&j,
                      "  \"optimizer\": {\"file\": %s, \"type\": \"adamw\", \"adam_step\": %ld, "
                      "\"moments\": [\"exp_avg.<tensor>\", \"exp_avg_sq.<tensor>\"], \"settings\": "
                      "%s},\n",
                      optimizer ? "\"optimizer.safetensors\"" : "null", st->adam_step,
                      optim_json ? optim_json : "null");
    sl_buf_printf(&j, "  \"data\": {\"consumed_samples\": %llu",
                  (unsigned long long)st->consumed_samples);
    if (st->tokenizer) {
        /* the step directory carries its tokenizer: it outlives the files it was made from */
        char *rel = NULL;
        if ((rc = tokenizer_copy_files(st->tokenizer, tmp, &rel)))
            goto out;
        sl_buf_puts(&j, ", \"tokenizer_copy\": ");
        sl_buf_json_str(&j, rel, strlen(rel));
        free(rel);
    }
    if (st->data_json && st->data_json[0] == '{' && strcmp(st->data_json, "{}") != 0)
        sl_buf_printf(&j, ", %s,\n", st->data_json + 1);
    else
        sl_buf_puts(&j, "},\n");
    sl_buf_printf(&j,
                  "  \"rng\": {\"generator\": \"xoshiro256**\", \"state\": [\"%016llx\", "
                  "\"%016llx\", \"%016llx\", \"%016llx\"]},\n",
                  (unsigned long long)st->rng[0], (unsigned long long)st->rng[1],
                  (unsigned long long)st->rng[2], (unsigned long long)st->rng[3]);
    sl_buf_printf(&j, "  \"skipped_steps\": %ld,\n  \"loss\": ", st->skipped);
    if (st->loss == st->loss)
        sl_buf_printf(&j, "%.9g", st->loss);
    else
        sl_buf_puts(&j, "null");
    sl_buf_printf(&j, ",\n  \"config\": %s\n}\n", config_json ? config_json : "null");
    p = sl_xasprintf("%s/checkpoint.json", tmp);
    rc = sl_write_file_atomic(p, j.data, j.len);
    free(p);
    p = NULL;
    if (rc)
        goto out;
    struct stat sb;
    if (stat(final, &sb) == 0) {
        rm_flat_dir(old);
        if (rename(final, old) != 0) {
            rc = sl_err_set(SL_ERR_IO, "cannot replace '%s': %s", final, strerror(errno));
            goto out;
        }
    }
    if (rename(tmp, final) != 0) {
        rc = sl_err_set(SL_ERR_IO, "cannot rename '%s' to '%s': %s", tmp, final, strerror(errno));
        goto out;
    }
    rm_flat_dir(old);
    /* make the rename durable */
    {
        int fd = open(dir, O_RDONLY);
        if (fd >= 0) {
            fsync(fd);
            close(fd);
        }
    }
out:
    if (rc)
        rm_flat_dir(tmp);
    sl_buf_release(&j);
    free(final);
    free(tmp);
    free(old);
    return rc;
}

int ckpt_save(const char *dir, const struct model_config *c, const struct model_layout *l,
              const float *params, const float *m, const float *v, const struct ckpt_state *st,
              const char *config_json, const char *optim_json)
{
    int rc = ckpt_begin(dir, st->step);
    if (rc)
        return rc;
    rc = ckpt_write_model(dir, st->step, l, params);
    if (!rc && m && v)
        rc = write_optimizer(dir, st->step, l, m, v);
    if (!rc)
        return ckpt_commit(dir, c, st, config_json, optim_json, m && v, 0);
    ckpt_abort(dir, st->step);
    return rc;
}

static int step_of(const char *name, long *step)
{
    if (strncmp(name, "step-", 5) != 0)
        return 0;
    char *end;
    long s = strtol(name + 5, &end, 10);
    if (*end || end == name + 5 || s < 0)
        return 0;
    *step = s;
    return 1;
}

/* Step numbers of the complete checkpoints under dir, ascending. */
static int list_steps(const char *dir, long **steps, size_t *n)
{
    *steps = NULL;
    *n = 0;
    DIR *d = opendir(dir);
    if (!d)
        return errno == ENOENT
                   ? 0
                   : sl_err_set(SL_ERR_IO, "cannot open '%s': %s", dir, strerror(errno));
    size_t cap = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        long s;
        if (!step_of(e->d_name, &s))
            continue;
        char *j = sl_xasprintf("%s/%s/checkpoint.json", dir, e->d_name);
        struct stat sb;
        int ok = stat(j, &sb) == 0;
        free(j);
        if (!ok)
            continue;
        if (*n == cap) {
            cap = cap ? cap * 2 : 16;
            *steps = sl_xrealloc(*steps, cap * sizeof(long));
        }
        (*steps)[(*n)++] = s;
    }
    closedir(d);
    for (size_t i = 1; i < *n; i++) /* insertion sort: few entries */
        for (size_t k = i; k > 0 && (*steps)[k - 1] > (*steps)[k]; k--) {
            long t = (*steps)[k];
            (*steps)[k] = (*steps)[k - 1];
            (*steps)[k - 1] = t;
        }
    return 0;
}

int ckpt_find_latest(const char *dir, char **path)
{
    *path = NULL;
    long *steps;
    size_t n;
    int rc = list_steps(dir, &steps, &n);
    if (rc)
        return rc;
    if (n)
        *path = ckpt_step_dir(dir, steps[n - 1]);
    free(steps);
    return 0;
}

int ckpt_resolve(const char *path, char **step)
{
    *step = NULL;
    char *j = sl_xasprintf("%s/checkpoint.json", path);
    int here = sl_file_exists(j);
    free(j);
    if (here) {
        *step = sl_xstrdup(path);
        return 0;
    }
    struct stat sb;
    if (stat(path, &sb) != 0)
        return sl_err_set(SL_ERR_NOTFOUND, "cannot open checkpoint '%s': %s", path,
                          strerror(errno));
    if (!S_ISDIR(sb.st_mode))
        return sl_err_set(SL_ERR_FORMAT, "checkpoint '%s' is not a directory", path);
    int rc = ckpt_find_latest(path, step);
    if (!rc && !*step)
        rc = sl_err_set(SL_ERR_NOTFOUND,
                        "'%s' holds no checkpoint (no checkpoint.json, no complete step-* "
                        "directory)\nhint: give checkpoint.dir of a run, or one of its "
                        "step-NNNNNNNN directories",
                        path);
    return rc;
}

/* Remove what a killed prune left: directories named .step-NNNNNNNN.prune. */
static int sweep_pruned(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d)
        return 0;
    int rc = 0;
    struct dirent *e;
    while (!rc && (e = readdir(d))) {
        size_t n = strlen(e->d_name);
        if (n > 12 && !strncmp(e->d_name, ".step-", 6) && !strcmp(e->d_name + n - 6, ".prune")) {
            char *p = sl_xasprintf("%s/%s", dir, e->d_name);
            rc = rm_flat_dir(p);
            free(p);
        }
    }
    closedir(d);
    return rc;
}

int ckpt_prune(const char *dir, int keep)
{
    if (keep <= 0)
        return 0;
    long *steps;
    size_t n;
    int rc = sweep_pruned(dir);
    rc = rc ? rc : list_steps(dir, &steps, &n);
    if (rc)
        return rc;
    for (size_t i = 0; !rc && n > (size_t)keep && i < n - (size_t)keep; i++) {
        /* renamed away first: a prune killed while deleting leaves a .prune directory, never
         * a step directory without some of its files */
        char *p = ckpt_step_dir(dir, steps[i]);
        char *gone = sl_xasprintf("%s/.step-%08ld.prune", dir, steps[i]);
        if (rename(p, gone) != 0)
            rc = sl_err_set(SL_ERR_IO, "cannot remove the checkpoint '%s': %s", p, strerror(errno));
        else
            rc = rm_flat_dir(gone);
        free(gone);
        free(p);
    }
    free(steps);
    return rc;
}

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
        size_t plen = strlen(part_names[part]);
        struct span *spans = NULL;
        size_t nspans = 0, cap = 0;
        for (size_t k = 0; k < nf && !rc; k++) {
            struct st_file *f;
            if ((rc = st_open(&f, files[k])))
                break;
            for (size_t i = 0; i < st_count(f); i++) {
                const struct st_tensor *t = st_at(f, i);
                if (strncmp(t->name, part_names[part], plen) != 0 || t->name[plen] != '@')
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
            rc = check_tiling(path, part_names[part], spans, nspans, files, l->total);
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

/* ---- Hugging Face export ------------------------------------------------------------- */

struct hf_out {
    struct st_tensor *t;
    char **names;
    float **bufs;
    size_t n, cap;
};

/* Add a tensor [rows, cols] built from src (row-major [rows, cols], or the transpose of a
 * row-major [cols, rows] matrix when transpose is set). */
static void hf_add(struct hf_out *o, const char *name, const float *src, int64_t rows, int64_t cols,
                   int transpose, int ndim)
{
    if (o->n == o->cap) {
        o->cap = o->cap ? o->cap * 2 : 64;
        o->t = sl_xrealloc(o->t, o->cap * sizeof(*o->t));
        o->names = sl_xrealloc(o->names, o->cap * sizeof(char *));
        o->bufs = sl_xrealloc(o->bufs, o->cap * sizeof(float *));
    }
    size_t cnt = (size_t)rows * (size_t)cols;
    float *b = sl_xmalloc(cnt * sizeof(float) + 1);
    if (transpose) {
        for (int64_t r = 0; r < rows; r++)
            for (int64_t c = 0; c < cols; c++)
                b[r * cols + c] = src[c * rows + r];
    } else {
        memcpy(b, src, cnt * sizeof(float));
    }
    struct st_tensor *t = &o->t[o->n];
    memset(t, 0, sizeof(*t));
    o->names[o->n] = sl_xstrdup(name);
    o->bufs[o->n] = b;
    t->name = o->names[o->n];
    t->dtype = "F32";
    t->ndim = ndim;
    t->shape[0] = rows;
    t->shape[1] = cols;
    t->data = b;
    t->nbytes = cnt * sizeof(float);
    o->n++;
}

static void hf_release(struct hf_out *o)
{
    for (size_t i = 0; i < o->n; i++) {
        free(o->names[i]);
        free(o->bufs[i]);
    }
    free(o->t);
    free(o->names);
    free(o->bufs);
}

/* 0, or SL_ERR_FORMAT when a tensor of p holds a NaN or infinity: a diverged run's weights
 * would load in transformers and give NaN logits, so they are refused before anything is
 * written. */
static int hf_check_finite(const char *path, const struct model_layout *l, const float *p)
{
    int rc = 0;
    for (int i = 0; i < l->n && !rc; i++) {
        const float *w = p + l->t[i].offset;
        size_t bad = 0, first = 0;
        for (size_t k = 0; k < l->t[i].numel; k++)
            if (!isfinite(w[k]) && !bad++)
                first = k;
        if (bad)
            rc = sl_err_set(SL_ERR_FORMAT,
                            "cannot export '%s': tensor '%s' has %zu non-finite values (the first "
                            "at element %zu)\nhint: the run diverged; export an earlier "
                            "checkpoint",
                            path, l->t[i].name, bad, first);
    }
    return rc;
}

/* A tensor of a class's map (model_hf_gpt2_each, model_hf_llama_each) into o, in the
 * layout transformers stores. */
static int hf_add_tensor(void *ctx, const char *name, float *data, int64_t rows, int64_t cols,
                         int nd, int transposed)
{
    if (transposed)
        hf_add(ctx, name, data, cols, rows, 1, nd);
    else
        hf_add(ctx, name, data, rows, cols, 0, nd);
    return 0;
}

/* OUT/model.safetensors: the model's tensors under transformers' names. */
static int hf_write_weights(const char *out_dir, int gpt2, const struct model_config *c,
                            const struct model_layout *l, const float *p)
{
    struct hf_out o = { 0 };
    if (gpt2)
        model_hf_gpt2_each(c, l, (float *)p, hf_add_tensor, &o);
    else
        model_hf_llama_each(c, l, (float *)p, hf_add_tensor, &o);
    char *sp = sl_xasprintf("%s/model.safetensors", out_dir);
    const char *meta[] = { "format", "pt", NULL };
    int rc = st_write(sp, o.t, o.n, meta);
    free(sp);
    hf_release(&o);
    return rc;
}

/* config.json of GPT2LMHeadModel or LlamaForCausalLM into j (bos, eos: an id or null). */
static void hf_config_json(struct sl_buf *j, int gpt2, const struct model_config *c,
                           const char *bos, const char *eos)
{
    if (gpt2) {
        sl_buf_printf(
            j,
            "{\n  \"architectures\": [\"GPT2LMHeadModel\"],\n  \"model_type\": \"gpt2\",\n"
            "  \"vocab_size\": %d,\n  \"n_positions\": %d,\n  \"n_ctx\": %d,\n"
            "  \"n_embd\": %d,\n  \"n_layer\": %d,\n  \"n_head\": %d,\n  \"n_inner\": %d,\n"
            "  \"activation_function\": \"%s\",\n  \"layer_norm_epsilon\": %.9g,\n"
            "  \"initializer_range\": %.9g,\n  \"resid_pdrop\": 0.0,\n  \"embd_pdrop\": 0.0,\n"
            "  \"attn_pdrop\": 0.0,\n  \"scale_attn_weights\": true,\n"
            "  \"tie_word_embeddings\": %s,\n  \"bos_token_id\": %s,\n  \"eos_token_id\": %s,\n"
            "  \"torch_dtype\": \"float32\"\n}\n",
            c->vocab_size, c->max_seq_len, c->max_seq_len, c->d_model, c->n_layers, c->n_heads,
            c->d_ff, c->act == MODEL_GELU_TANH ? "gelu_new" : "gelu", (double)c->norm_eps,
            (double)c->init_std, c->tied_embeddings ? "true" : "false", bos, eos);
        return;
    }
    sl_buf_printf(j,
                  "{\n  \"architectures\": [\"LlamaForCausalLM\"],\n  \"model_type\": \"llama\",\n"
                  "  \"vocab_size\": %d,\n  \"hidden_size\": %d,\n  \"intermediate_size\": %d,\n"
                  "  \"num_hidden_layers\": %d,\n  \"num_attention_heads\": %d,\n"
                  "  \"num_key_value_heads\": %d,\n  \"head_dim\": %d,\n"
                  "  \"max_position_embeddings\": %d,\n  \"rms_norm_eps\": %.9g,\n"
                  "  \"rope_theta\": %.17g,\n  \"hidden_act\": \"silu\",\n"
                  "  \"attention_bias\": %s,\n  \"mlp_bias\": %s,\n  \"tie_word_embeddings\": %s,\n"
                  "  \"initializer_range\": %.9g,\n  \"torch_dtype\": \"float32\",\n"
                  "  \"bos_token_id\": %s,\n  \"eos_token_id\": %s,\n",
                  c->vocab_size, c->d_model, c->d_ff, c->n_layers, c->n_heads, c->n_kv_heads,
                  c->head_dim, c->max_seq_len, (double)c->norm_eps, c->rope_theta,
                  c->bias ? "true" : "false", c->bias ? "true" : "false",
                  c->tied_embeddings ? "true" : "false", (double)c->init_std, bos, eos);
    if (c->rope_factor > 0)
        sl_buf_printf(j,
                      "  \"rope_scaling\": {\"rope_type\": \"llama3\", \"factor\": %.17g, "
                      "\"low_freq_factor\": %.17g, \"high_freq_factor\": %.17g, "
                      "\"original_max_position_embeddings\": %d}\n}\n",
                      c->rope_factor, c->rope_low_freq_factor, c->rope_high_freq_factor,
                      c->rope_original_max_pos);
    else
        sl_buf_puts(j, "  \"rope_scaling\": null\n}\n");
}

/* OUT/config.json, and OUT/generation_config.json: what transformers' generate() reads,
 * the special ids (greedy settings are its defaults). */
static int hf_write_configs(const char *out_dir, int gpt2, const struct model_config *c,
                            long bos_id, long eos_id)
{
    char bos[24] = "null", eos[24] = "null";
    if (bos_id >= 0 && bos_id < c->vocab_size)
        snprintf(bos, sizeof(bos), "%ld", bos_id);
    if (eos_id >= 0 && eos_id < c->vocab_size)
        snprintf(eos, sizeof(eos), "%ld", eos_id);
    struct sl_buf j = SL_BUF_INIT;
    hf_config_json(&j, gpt2, c, bos, eos);
    char *cp = sl_xasprintf("%s/config.json", out_dir);
    int rc = sl_write_file_atomic(cp, j.data, j.len);
    free(cp);
    sl_buf_release(&j);
    if (rc)
        return rc;
    j = (struct sl_buf)SL_BUF_INIT;
    sl_buf_printf(&j,
                  "{\n  \"_from_model_config\": true,\n  \"bos_token_id\": %s,\n"
                  "  \"eos_token_id\": %s,\n  \"max_length\": %d\n}\n",
                  bos, eos, c->max_seq_len);
    cp = sl_xasprintf("%s/generation_config.json", out_dir);
    rc = sl_write_file_atomic(cp, j.data, j.len);
    free(cp);
    sl_buf_release(&j);
    return rc;
}

int ckpt_export_hf(const char *path, const char *out_dir, long bos_id, long eos_id,
                   const char **arch)
{
    struct model_config c;
    struct ckpt_state st;
    int rc = ckpt_read_meta(path, &c, &st);
    if (rc)
        return rc;
    int gpt2 = c.pos == MODEL_POS_LEARNED && c.norm == MODEL_LAYERNORM && c.act != MODEL_SWIGLU &&
               c.bias && c.n_kv_heads == c.n_heads;
    int llama = c.pos == MODEL_POS_ROPE && c.norm == MODEL_RMSNORM && c.act == MODEL_SWIGLU;
    if (!gpt2 && !llama)
        return sl_err_set(SL_ERR_UNSUPPORTED,
                          "cannot export '%s': no transformers class has this mix (%s, %s, %s, "
                          "bias %s)\nhint: GPT2LMHeadModel needs learned positions, LayerNorm, "
                          "GELU and biases; LlamaForCausalLM needs RoPE, RMSNorm and SwiGLU",
                          path, model_pos_name(c.pos), model_norm_name(c.norm),
                          model_act_name(c.act), c.bias ? "on" : "off");
    *arch = gpt2 ? "GPT2LMHeadModel" : "LlamaForCausalLM";
    struct model_layout l;
    model_layout_init(&l, &c);
    float *p = sl_xcalloc(l.total, sizeof(float));
    rc = ckpt_load(path, &l, p, NULL, NULL);
    if (!rc)
        rc = hf_check_finite(path, &l, p);
    if (!rc)
        rc = sl_mkdir_p(out_dir);
    if (!rc)
        rc = hf_write_weights(out_dir, gpt2, &c, &l, p);
    if (!rc)
        rc = hf_write_configs(out_dir, gpt2, &c, bos_id, eos_id);
    free(p);
    model_layout_release(&l);
    return rc;
}
