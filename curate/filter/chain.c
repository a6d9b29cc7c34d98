/* struct sl_filter_chain: building filters from YAML and running documents through them. */
#include "curate/filter/chain.h"

#include "core/alloc.h"
#include "core/buf.h"
#include "core/config.h"
#include "core/err.h"
#include "core/options.h"

#include <libgen.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void sl_filter_chain_free(struct sl_filter_chain *c)
{
    if (!c)
        return;
    for (size_t i = 0; i < c->n; i++) {
        if (c->f[i].release)
            c->f[i].release(&c->f[i]);
        free(c->f[i].name);
    }
    free(c->f);
    sl_words_free(c->words);
    sl_cfg_free(c->cfg);
    free(c->config_dir);
    free(c);
}

static int unknown_kind(struct sl_cfg *node, const char *name)
{
    const char *best = NULL;
    size_t bd = (size_t)-1;
    for (const struct sl_filter_kind *k = sl_filter_kinds; k->name; k++) {
        size_t d = sl_edit_distance(name, k->name);
        if (d < bd) {
            bd = d;
            best = k->name;
        }
    }
    if (best && bd <= 3)
        return sl_err_set(SL_ERR_CONFIG, "%s: unknown filter '%s'\nhint: did you mean '%s'? ('sluice filter --list' shows them all)",
                          sl_cfg_where(node), name, best);
    return sl_err_set(SL_ERR_CONFIG, "%s: unknown filter '%s'\nhint: 'sluice filter --list' shows the filters",
                      sl_cfg_where(node), name);
}

static int build_all(struct sl_filter_chain *c)
{
    struct sl_cfg *root = c->cfg;
    int rc = sl_cfg_str(root, "language", "en", &c->env.default_lang);
    if (!rc) rc = sl_cfg_str(root, "lang_key", "lang", &c->env.lang_key);
    if (rc)
        return rc;
    struct sl_cfg *list = sl_cfg_child(root, "filters");
    if (!list || list->kind != SL_CFG_SEQ || list->n == 0)
        return sl_err_set(SL_ERR_CONFIG, "%s: expected 'filters:' with a list of filters",
                          sl_cfg_where(list ? list : root));
    list->used = 1;
    c->f = sl_xcalloc(list->n, sizeof(*c->f));
    for (size_t i = 0; i < list->n && !rc; i++) {
        struct sl_cfg *it = list->items[i], *params = NULL;
        const char *kind = NULL, *label = NULL;
        it->used = 1;
        if (it->kind == SL_CFG_SCALAR) {
            kind = it->value;
        } else if (it->kind == SL_CFG_MAP && sl_cfg_child(it, "filter")) {
            rc = sl_cfg_str(it, "filter", NULL, &kind);
            if (!rc) rc = sl_cfg_str(it, "name", NULL, &label);
            params = it;
        } else if (it->kind == SL_CFG_MAP && it->n == 1) {
            kind = it->items[0]->key;
            params = it->items[0];
            params->used = 1;
            if (params->kind == SL_CFG_NULL)
                params = NULL;
            else if (params->kind != SL_CFG_MAP)
                rc = sl_err_set(SL_ERR_CONFIG, "%s: parameters of '%s' must be a map (key: value lines)",
                                sl_cfg_where(params), kind);
            if (!rc && params) rc = sl_cfg_str(params, "name", NULL, &label);
        } else {
            rc = sl_err_set(SL_ERR_CONFIG, "%s: expected a filter name, '{name: {params}}' or a map with 'filter:'",
                            sl_cfg_where(it));
        }
        if (rc)
            break;
        const struct sl_filter_kind *k = sl_filter_kind_find(kind ? kind : "");
        if (!k) {
            rc = unknown_kind(it, kind ? kind : "");
            break;
        }
        struct sl_filter *f = &c->f[c->n++];
        f->kind = k->name;
        struct sl_cfg *empty = NULL;
        if (!params)
            params = empty = sl_cfg_new("(defaults)");
        rc = k->build(f, params, &c->env);
        sl_cfg_free(empty);
        if (rc)
            break;
        /* a unique label: the given name, else the kind (+ n for n-gram rules, + a count) */
        char buf[96];
        if (label) {
            snprintf(buf, sizeof(buf), "%s", label);
        } else {
            long n = 0;
            struct sl_cfg *nn = params == empty ? NULL : sl_cfg_child(params, "n");
            if (nn && !sl_cfg_node_int(nn, &n))
                snprintf(buf, sizeof(buf), "%s_%ld", k->name, n);
            else if (!strcmp(k->name, "repeating_top_ngrams") || !strcmp(k->name, "repeating_duplicate_ngrams"))
                snprintf(buf, sizeof(buf), "%s_2", k->name);
            else
                snprintf(buf, sizeof(buf), "%s", k->name);
        }
        int dup = 1;
        char uniq[112];
        snprintf(uniq, sizeof(uniq), "%s", buf);
        for (size_t j = 0; j + 1 < c->n; j++)
            if (!strcmp(c->f[j].name, uniq)) {
                snprintf(uniq, sizeof(uniq), "%s_%d", buf, ++dup);
                j = (size_t)-1;
            }
        f->name = sl_xstrdup(uniq);
        if (!strcmp(k->name, "c4_badwords") || !strcmp(k->name, "stop_words"))
            c->needs_lang = 1;
    }
    if (!rc)
        rc = sl_cfg_check_unused(root);
    return rc;
}

static int finish_load(struct sl_filter_chain **out, struct sl_filter_chain *c, int rc)
{
    if (!rc)
        rc = sl_words_new(&c->words);
    c->env.words = c->words;
    c->env.config_dir = c->config_dir;
    if (!rc)
        rc = build_all(c);
    if (rc) {
        sl_filter_chain_free(c);
        *out = NULL;
        return rc;
    }
    *out = c;
    return 0;
}

int sl_filter_chain_load(struct sl_filter_chain **out, const char *path, char *const *overrides,
                         size_t noverrides)
{
    struct sl_filter_chain *c = sl_xcalloc(1, sizeof(*c));
    int rc = sl_cfg_load_file(&c->cfg, path);
    for (size_t i = 0; i < noverrides && !rc; i++)
        rc = sl_cfg_override(c->cfg, overrides[i]);
    char *tmp = sl_xstrdup(path);
    c->config_dir = sl_xstrdup(dirname(tmp));
    free(tmp);
    return finish_load(out, c, rc);
}

int sl_filter_chain_load_string(struct sl_filter_chain **out, const char *yaml, size_t len,
                                const char *name)
{
    struct sl_filter_chain *c = sl_xcalloc(1, sizeof(*c));
    int rc = sl_cfg_load_string(&c->cfg, yaml, len, name);
    return finish_load(out, c, rc);
}

int sl_filter_chain_settings(const struct sl_filter_chain *c, struct sl_buf *out)
{
    return sl_cfg_to_json(c->cfg, out);
}

long sl_filter_chain_run(struct sl_filter_chain *c, struct sl_fctx *ctx, int all,
                         struct sl_filter_result *res)
{
    long first = -1;
    for (size_t i = 0; i < c->n; i++) {
        res[i].keep = 1;
        res[i].score = NAN;
        res[i].reason = NULL;
        res[i].event = NULL;
    }
    for (size_t i = 0; i < c->n; i++) {
        int rc = c->f[i].apply(&c->f[i], ctx, &res[i]);
        if (rc)
            return -2;
        if (!res[i].keep && first < 0) {
            first = (long)i;
            if (!all)
                break;
        }
    }
    return first;
}
