/* Checkpoints: atomic step directories of safetensors + JSON, the tokenizer they carry,
 * resume lookup and pruning. Reading them back: checkpoint_read.c; the Hugging Face export:
 * hf_export.c. */
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

const char *const ckpt_part_names[3] = { "master", "exp_avg", "exp_avg_sq" };

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
            names[n] = sl_xasprintf("%s@%zu", ckpt_part_names[k], r[i].first);
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
