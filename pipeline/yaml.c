/* The values of a pipeline file: keys set to null, ${var} references, scalars and lists,
 * input paths resolved beside the pipeline file, and errors that name FILE:LINE: what the
 * loader (pipeline.c) and the stages' builders (*_stage.c) read a section with. */
#include "pipeline/internal.h"

#include "core/alloc.h"
#include "core/buf.h"
#include "core/config.h"
#include "core/err.h"
#include "tokenize/tokenizer.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* A key whose value is null (`key: null`, `key: ~`, the override key=null) is as if it were
 * absent. */
struct sl_cfg *pl_child(struct sl_cfg *map, const char *key)
{
    struct sl_cfg *c = map && map->kind == SL_CFG_MAP ? sl_cfg_child(map, key) : NULL;
    if (c && c->kind == SL_CFG_NULL) {
        c->used = 1;
        return NULL;
    }
    return c;
}

/* The top-level variable that a value consisting only of "${var}" refers to, following
 * "${a}" -> "${b}" chains; NULL when the value is anything else. */
static struct sl_cfg *sole_var(struct sl_cfg *root, struct sl_cfg *node)
{
    struct sl_cfg *v = node;
    for (int depth = 0; depth < 8 && v && v->kind == SL_CFG_SCALAR; depth++) {
        const char *s = v->value;
        size_t l = strlen(s);
        if (l < 4 || s[0] != '$' || s[1] != '{' || s[l - 1] != '}' || memchr(s + 2, '}', l - 3))
            return depth ? v : NULL;
        char *name = sl_xstrndup(s + 2, l - 3);
        struct sl_cfg *next = sl_cfg_child(root, name);
        free(name);
        if (!next)
            return NULL;
        next->used = 1;
        v = next;
    }
    return v == node ? NULL : v;
}

/* Every stage value that is only "${var}" of a null variable becomes null itself, so that
 * `redis=null` on the command line drops the option that `redis: ${redis}` gives. */
void pl_null_vars(struct sl_cfg *root, struct sl_cfg *node)
{
    if (node->kind == SL_CFG_SCALAR) {
        struct sl_cfg *v = sole_var(root, node);
        if (v && v->kind == SL_CFG_NULL) {
            node->kind = SL_CFG_NULL;
            free(node->value);
            node->value = sl_xstrdup("");
        }
        return;
    }
    for (size_t i = 0; i < node->n; i++)
        pl_null_vars(root, node->items[i]);
}

int pl_where_err(struct sl_cfg *node, const char *fmt, ...)
{
    char msg[768];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    char *path = sl_cfg_path(node);
    int rc =
        sl_err_set(SL_ERR_CONFIG, "%s: %s: %s", sl_cfg_where(node), path[0] ? path : "(top)", msg);
    free(path);
    return rc;
}

/* Replace each ${key} in s by the top-level scalar `key` (name and work_dir always known). */
static int expand_depth(struct loader *L, struct sl_cfg *node, const char *s, char **out, int depth)
{
    struct sl_buf b = SL_BUF_INIT;
    const char *p = s;
    int rc = 0;
    while (*p && !rc) {
        if (p[0] != '$' || p[1] != '{') {
            sl_buf_putc(&b, *p++);
            continue;
        }
        const char *close = strchr(p, '}');
        if (!close) {
            rc = pl_where_err(node, "'${' without '}' in '%s'", s);
            break;
        }
        char *var = sl_xstrndup(p + 2, (size_t)(close - p - 2));
        if (!strcmp(var, "name")) {
            sl_buf_puts(&b, L->p->name);
        } else if (!strcmp(var, "work_dir")) {
            sl_buf_puts(&b, L->p->work_dir);
        } else {
            struct sl_cfg *v = sl_cfg_child(L->root, var);
            int is_stage = 0;
            for (int i = 0; i < PL_NSTAGES; i++)
                is_stage |= !strcmp(var, pl_stages[i].name);
            if (!v || is_stage || !strcmp(var, "stages")) {
                rc = pl_where_err(node,
                                  "unknown variable '${%s}'\nhint: define '%s:' at the top of "
                                  "the pipeline, or give %s=VALUE on the command line",
                                  var, var, var);
            } else if (v->kind == SL_CFG_NULL) {
                rc = pl_where_err(node,
                                  "variable '${%s}' is null in '%s'\nhint: a null variable "
                                  "unsets a key only when the value is just '${%s}'",
                                  var, s, var);
            } else if (v->kind != SL_CFG_SCALAR) {
                rc = pl_where_err(node, "variable '${%s}' is not a single value", var);
            } else if (depth > 8) {
                rc = pl_where_err(node, "variable '${%s}' refers to itself", var);
            } else {
                v->used = 1;
                char *sub = NULL;
                rc = expand_depth(L, v, v->value, &sub, depth + 1);
                if (!rc)
                    sl_buf_puts(&b, sub);
                free(sub);
            }
        }
        free(var);
        p = close + 1;
    }
    if (rc) {
        sl_buf_release(&b);
        return rc;
    }
    *out = b.data ? sl_buf_detach(&b, NULL) : sl_xstrdup("");
    return 0;
}

static int expand(struct loader *L, struct sl_cfg *node, char **out)
{
    node->used = 1;
    return expand_depth(L, node, node->value ? node->value : "", out, 0);
}

/* A scalar or a list of scalars (a scalar "a,b" stays one value unless split). */
int pl_scalars(struct loader *L, struct sl_cfg *node, struct sl_strlist *out)
{
    node->used = 1;
    if (node->kind == SL_CFG_NULL)
        return 0;
    if (node->kind == SL_CFG_SCALAR) {
        char *v = NULL;
        int rc = expand(L, node, &v);
        if (!rc)
            pl_push(out, v);
        free(v);
        return rc;
    }
    if (node->kind != SL_CFG_SEQ)
        return pl_where_err(node, "expected a value or a list of values");
    for (size_t i = 0; i < node->n; i++) {
        struct sl_cfg *it = node->items[i];
        if (it->kind != SL_CFG_SCALAR)
            return pl_where_err(it, "expected a value");
        char *v = NULL;
        int rc = expand(L, it, &v);
        if (rc)
            return rc;
        pl_push(out, v);
        free(v);
    }
    return 0;
}

int pl_one_scalar(struct loader *L, struct sl_cfg *node, char **out)
{
    node->used = 1;
    if (node->kind != SL_CFG_SCALAR)
        return pl_where_err(node, "expected a single value");
    return expand(L, node, out);
}

/* The path in a value that names an input: a tokenizer spec's ("spm:x.model" -> "x.model",
 * "bert-lower,extra-ids=100:v.txt" -> "v.txt"), else the value (a URL: "hf://..."). */
const char *pl_input_path(const char *v)
{
    const char *path = tokenizer_spec_path(v);
    return path && strncmp(path - 1, "://", 3) != 0 ? path : v;
}

/* PATH relative to the working directory when it lies below it, else absolute. */
static char *short_path(const char *abs)
{
    char cwd[4096];
    if (getcwd(cwd, sizeof(cwd))) {
        size_t l = strlen(cwd);
        if (!strncmp(abs, cwd, l) && abs[l] == '/')
            return sl_xstrdup(abs + l + 1);
    }
    return sl_xstrdup(abs);
}

int pl_exists(const char *path)
{
    struct stat sb;
    return stat(path, &sb) == 0;
}

/* A relative input path written in the pipeline file names a file beside the pipeline
 * file; when there is none there, one in sluice's data directory (its configs/ and
 * examples/). Paths given on the command line (key=value, or a value that is just a
 * ${variable} set there) and paths below work_dir stay relative to the working directory.
 * "kind:PATH" (spm:, gpt2:) keeps its kind. Caller frees. */
char *pl_resolve_input(struct loader *L, struct sl_cfg *node, const char *v)
{
    const char *path = pl_input_path(v);
    size_t kindlen = (size_t)(path - v);
    if (!*path || path[0] == '/' || strstr(path, "://") || node->line == 0)
        return sl_xstrdup(v);
    const char *wd = L->p->work_dir;
    size_t wl = strlen(wd);
    if (wl && !strncmp(path, wd, wl) && (path[wl] == '/' || !path[wl]))
        return sl_xstrdup(v);
    /* the output of an earlier step (its out: is relative to the working directory) */
    for (size_t k = 0; k < L->p->n; k++) {
        const char *o = L->p->steps[k].out;
        size_t ol = o ? strlen(o) : 0;
        if (ol && !strncmp(path, o, ol) && (path[ol] == '/' || !path[ol]))
            return sl_xstrdup(v);
    }
    if (node->kind == SL_CFG_SCALAR && !strncmp(node->value, "${", 2)) {
        size_t nl = strcspn(node->value + 2, "}");
        char *var = sl_xstrndup(node->value + 2, nl);
        struct sl_cfg *vn = sl_cfg_child(L->root, var);
        int cli = !strcmp(var, "work_dir") || !strcmp(var, "name") || (vn && vn->line == 0);
        free(var);
        if (cli)
            return sl_xstrdup(v);
    }
    char *beside = !strcmp(L->dir, ".") ? sl_xstrdup(path) : sl_xasprintf("%s/%s", L->dir, path);
    char *found = NULL;
    if (pl_exists(beside)) {
        found = beside;
        beside = NULL;
    } else if (pl_data_dir()) {
        char *bundled = sl_xasprintf("%s/%s", pl_data_dir(), path);
        char real[4096];
        if (pl_exists(bundled) && realpath(bundled, real))
            found = short_path(real);
        free(bundled);
    }
    if (!found) {
        found = beside;
        beside = NULL;
    }
    char *out = sl_xasprintf("%.*s%s", (int)kindlen, v, found);
    free(found);
    free(beside);
    return out;
}

/* The names of the variables that the values under node refer to as ${name}. */
void pl_collect_refs(const struct sl_cfg *node, struct sl_strlist *out)
{
    if (node->kind == SL_CFG_SCALAR) {
        for (const char *q = node->value; (q = strstr(q, "${")) != NULL; q += 2) {
            size_t l = strcspn(q + 2, "}");
            if (q[2 + l] != '}')
                break;
            char *name = sl_xstrndup(q + 2, l);
            pl_push(out, name);
            free(name);
        }
        return;
    }
    for (size_t i = 0; i < node->n; i++)
        pl_collect_refs(node->items[i], out);
}
