/* struct sl_filter_chain: building filters from YAML and running documents through them. */
#include "curate/filter/chain.h"

#include "core/alloc.h"
#include "core/buf.h"
#include "core/config.h"
#include "core/doc.h"
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

/* The kind and the label of filter entry `it` (either may be NULL). */
static void entry_names(struct sl_cfg *it, const char **kind, const char **label)
{
    *kind = *label = NULL;
    if (it->kind == SL_CFG_SCALAR) {
        *kind = it->value;
    } else if (it->kind == SL_CFG_MAP && sl_cfg_child(it, "filter")) {
        struct sl_cfg *k = sl_cfg_child(it, "filter"), *n = sl_cfg_child(it, "name");
        *kind = k->kind == SL_CFG_SCALAR ? k->value : NULL;
        *label = n && n->kind == SL_CFG_SCALAR ? n->value : NULL;
    } else if (it->kind == SL_CFG_MAP && it->n == 1) {
        struct sl_cfg *n =
            it->items[0]->kind == SL_CFG_MAP ? sl_cfg_child(it->items[0], "name") : NULL;
        *kind = it->items[0]->key;
        *label = n && n->kind == SL_CFG_SCALAR ? n->value : NULL;
    }
}

static int entry_is(struct sl_cfg *it, const char *name)
{
    const char *kind, *label;
    entry_names(it, &kind, &label);
    return (kind && !strcmp(kind, name)) || (label && !strcmp(label, name));
}

/* The filters of the config that a name matches, as "2 (gopher_quality)" text. */
static void matches_text(struct sl_cfg *list, const char *name, struct sl_buf *b, size_t *count,
                         size_t *first)
{
    *count = 0;
    for (size_t i = 0; i < list->n; i++) {
        if (!entry_is(list->items[i], name))
            continue;
        if (!*count)
            *first = i;
        sl_buf_printf(b, "%sfilters.%zu", (*count)++ ? ", " : "", i);
    }
}

/* Apply one --set. "filters.N.KIND.PARAM=V" and "filters.NAME.PARAM=V" address a filter
 * entry (N must hold a filter of that kind or name); other keys are plain overrides. */
static int apply_set(struct sl_cfg *root, const char *assignment)
{
    const char *eq = strchr(assignment, '=');
    struct sl_cfg *list = sl_cfg_child(root, "filters");
    if (!eq || strncmp(assignment, "filters.", 8) != 0 || !list || list->kind != SL_CFG_SEQ)
        return sl_cfg_override(root, assignment);
    const char *seg = assignment + 8; /* N or NAME */
    size_t seglen = strcspn(seg, ".=");
    const char *rest = seg + seglen; /* ".KIND.PARAM=V", ".PARAM=V" or "=V" */
    char *name = sl_xstrndup(seg, seglen);
    int rc = 0;
    size_t idx = 0;
    char *fixed = NULL;
    int is_index = seglen > 0 && strspn(name, "0123456789") == seglen;
    if (is_index) {
        idx = (size_t)strtoull(name, NULL, 10);
        if (idx >= list->n || *rest == '=') {
            free(name);
            return sl_cfg_override(root, assignment); /* append or replace a whole entry */
        }
        /* the segment after the index names the filter there */
        const char *ks = rest + 1;
        size_t kl = strcspn(ks, ".=");
        char *want = sl_xstrndup(ks, kl);
        struct sl_cfg *it = list->items[idx];
        const char *kind, *label;
        entry_names(it, &kind, &label);
        int filter_form = it->kind == SL_CFG_MAP && sl_cfg_child(it, "filter");
        if (entry_is(it, want)) {
            /* filters.N.KIND.P=V: in the `filter:` form the parameters are the entry itself;
             * a bare name becomes {KIND: {P: V}} */
            if (filter_form) {
                if (ks[kl] != '.')
                    rc = sl_err_set(SL_ERR_USAGE,
                                    "--set '%s': give a parameter after the filter's name "
                                    "(filters.%zu.%s.PARAM=VALUE)",
                                    assignment, idx, want);
                else
                    fixed = sl_xasprintf("filters.%zu%s", idx, ks + kl);
            } else {
                fixed = sl_xasprintf("filters.%zu.%s%s", idx, kind, ks + kl);
            }
        } else if (filter_form && !sl_filter_kind_find(want)) {
            /* filters.N.PARAM=V on a `filter:` entry */
            fixed = sl_xstrdup(assignment);
        } else {
            struct sl_buf where = SL_BUF_INIT;
            size_t count = 0, first = 0;
            matches_text(list, want, &where, &count, &first);
            const char *is = label ? label : kind ? kind : "(not a filter)";
            if (count)
                rc = sl_err_set(SL_ERR_USAGE,
                                "--set '%s': filters.%zu is '%s', not '%s'\nhint: '%s' is %s; "
                                "or address it by name: --set filters.%s%s",
                                assignment, idx, is, want, want, where.data, want, ks + kl);
            else
                rc =
                    sl_err_set(SL_ERR_USAGE,
                               "--set '%s': filters.%zu is '%s', not '%s'\nhint: "
                               "filters.N.KIND.PARAM=VALUE names the filter at position N (from 0)",
                               assignment, idx, is, want);
            sl_buf_release(&where);
        }
        free(want);
    } else {
        /* filters.NAME.PARAM=V: the one entry of that kind or name */
        struct sl_buf where = SL_BUF_INIT;
        size_t count = 0;
        matches_text(list, name, &where, &count, &idx);
        if (count == 1) {
            struct sl_cfg *it = list->items[idx];
            const char *kind, *label;
            entry_names(it, &kind, &label);
            if (*rest == '=')
                rc = sl_err_set(SL_ERR_USAGE,
                                "--set '%s': give a parameter (filters.%s.PARAM=VALUE)", assignment,
                                name);
            else if (it->kind == SL_CFG_MAP && sl_cfg_child(it, "filter"))
                fixed = sl_xasprintf("filters.%zu%s", idx, rest);
            else
                fixed = sl_xasprintf("filters.%zu.%s%s", idx, kind, rest);
        } else if (count > 1) {
            rc = sl_err_set(SL_ERR_USAGE,
                            "--set '%s': '%s' is ambiguous: the config has it at %s\nhint: "
                            "address one by position: --set filters.N.%s%s",
                            assignment, name, where.data, name, rest);
        } else {
            struct sl_buf names = SL_BUF_INIT;
            for (size_t i = 0; i < list->n; i++) {
                const char *kind, *label;
                entry_names(list->items[i], &kind, &label);
                sl_buf_printf(&names, "%s%s", i ? ", " : "", label ? label : kind ? kind : "?");
            }
            rc = sl_err_set(SL_ERR_USAGE,
                            "--set '%s': the config has no filter '%s'\nhint: its filters are %s",
                            assignment, name, names.data ? names.data : "(none)");
            sl_buf_release(&names);
        }
        sl_buf_release(&where);
    }
    if (!rc && fixed) {
        rc = sl_cfg_override(root, fixed);
        if (rc)
            rc = sl_err_wrap(rc, "--set '%s': ", assignment);
    }
    free(fixed);
    free(name);
    return rc;
}

int sl_filter_chain_load(struct sl_filter_chain **out, const char *path, char *const *overrides,
                         size_t noverrides)
{
    struct sl_filter_chain *c = sl_xcalloc(1, sizeof(*c));
    int rc = sl_cfg_load_file(&c->cfg, path);
    for (size_t i = 0; i < noverrides && !rc; i++)
        rc = apply_set(c->cfg, overrides[i]);
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
        res[i].counts = NULL;
        res[i].ncounts = 0;
        res[i].spans_json = NULL;
        res[i].spans_len = 0;
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

long sl_filter_chain_run_doc(struct sl_filter_chain *c, struct sl_fctx *ctx, struct sl_doc *doc,
                             struct sl_buf *lang, int all, struct sl_filter_result *res,
                             unsigned *version)
{
    size_t tlen;
    const char *text = sl_doc_text(doc, &tlen);
    sl_buf_reset(lang);
    const char *lg = NULL;
    if (!sl_doc_get_str(doc, c->env.lang_key, lang) && lang->len && lang->len < 16)
        lg = lang->data;
    sl_fctx_begin(ctx, doc, text, tlen, lg);
    *version = ctx->version;
    return sl_filter_chain_run(c, ctx, all, res);
}
