/* Pipelines: YAML sections -> command lines (the inputs and outputs of each stage, the
 * stage selection). The values of a section (${var}, input paths) are read in yaml.c, the
 * stage table and its keys are in keys.c; what is a stage's own (download's URL lists,
 * tokenize's prefix, train's config) is in its file, reached through its row's hooks
 * (download_stage.c, tokenize_stage.c, train_stage.c; shared: internal.h). */
#include "pipeline/pipeline.h"
#include "pipeline/internal.h"

#include "core/alloc.h"
#include "core/buf.h"
#include "core/config.h"
#include "core/datadir.h"
#include "core/err.h"
#include "core/http.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- small helpers ------------------------------------------------------------------- */

void pl_push(struct sl_strlist *l, const char *s)
{
    sl_strlist_push(l, s);
}

char *pl_strlist_join(const struct sl_strlist *l, const char *sep)
{
    struct sl_buf b = SL_BUF_INIT;
    for (size_t i = 0; i < l->n; i++) {
        if (i)
            sl_buf_puts(&b, sep);
        sl_buf_puts(&b, l->v[i]);
    }
    return b.data ? sl_buf_detach(&b, NULL) : sl_xstrdup("");
}

static int needs_quotes(const char *s)
{
    if (!*s)
        return 1;
    for (const char *p = s; *p; p++)
        if (!isalnum((unsigned char)*p) && !strchr("-_./:=,@%+", *p))
            return 1;
    return 0;
}

char *pl_shell_line(const struct sl_strlist *argv)
{
    struct sl_buf b = SL_BUF_INIT;
    sl_buf_puts(&b, "sluice");
    for (size_t i = 0; i < argv->n; i++) {
        /* a URL with a token in its query string or user information is shown redacted */
        char *shown = strstr(argv->v[i], "://") ? sl_url_display(argv->v[i]) : NULL;
        const char *a = shown ? shown : argv->v[i];
        sl_buf_putc(&b, ' ');
        if (!needs_quotes(a)) {
            sl_buf_puts(&b, a);
            free(shown);
            continue;
        }
        sl_buf_putc(&b, '\'');
        for (const char *p = a; *p; p++) {
            if (*p == '\'')
                sl_buf_puts(&b, "'\\''");
            else
                sl_buf_putc(&b, *p);
        }
        sl_buf_putc(&b, '\'');
        free(shown);
    }
    return sl_buf_detach(&b, NULL);
}

static const char *const top_keys[] = { "name", "work_dir", "stages", NULL };

/* ---- loading ------------------------------------------------------------------------- */

const char *pl_data_dir(void)
{
    return sl_data_dir();
}

int pl_find_pipeline(const char *arg, char **path)
{
    *path = NULL;
    if (pl_exists(arg) || strchr(arg, '/') || !pl_data_dir()) {
        *path = sl_xstrdup(arg);
        return 0;
    }
    const char *dd = pl_data_dir();
    size_t l = strlen(arg);
    int has_ext =
        (l > 5 && !strcmp(arg + l - 5, ".yaml")) || (l > 4 && !strcmp(arg + l - 4, ".yml"));
    char *cand = sl_xasprintf("%s/configs/pipelines/%s%s", dd, arg, has_ext ? "" : ".yaml");
    if (pl_exists(cand)) {
        *path = cand;
        return 0;
    }
    free(cand);
    *path = sl_xstrdup(arg);
    return 0;
}

struct entry {
    struct sl_cfg *map; /* the section (or list item); NULL-kind sections are empty maps */
    char *name;         /* list entries: their name */
};

/* Unknown keys of a section: FILE:LINE and the nearest known key. */
int pl_check_keys(struct sl_cfg *map, const struct key *t, int in_list)
{
    for (size_t i = 0; map->kind == SL_CFG_MAP && i < map->n; i++) {
        struct sl_cfg *c = map->items[i];
        const struct key *k = pl_find_key(t, c->key);
        if (k && (strcmp(k->key, "name") != 0 || in_list))
            continue;
        const char *best = NULL;
        size_t bestd = (size_t)-1;
        for (const struct key *q = t; q->key; q++) {
            size_t d = sl_edit_distance(c->key, q->key);
            if (d < bestd) {
                bestd = d;
                best = q->key;
            }
        }
        if (k)
            return pl_where_err(c, "'name' is only for the entries of a list of runs");
        if (best && bestd <= 3)
            return pl_where_err(c,
                                "unknown key '%s'\nhint: did you mean '%s'? ('sluice run --keys' "
                                "lists every stage's keys)",
                                c->key, best);
        return pl_where_err(
            c, "unknown key '%s'\nhint: 'sluice run --keys' lists every stage's keys", c->key);
    }
    return 0;
}

/* Append the options of a section to argv (table order); collect input paths. */
int pl_section_options(struct loader *L, const struct key *t, struct sl_cfg *map, struct pl_step *s)
{
    for (const struct key *k = t; k->key; k++) {
        if (k->kind == K_RUN)
            continue;
        struct sl_cfg *c = map->kind == SL_CFG_MAP ? sl_cfg_child(map, k->key) : NULL;
        if (!c)
            continue;
        c->used = 1;
        if (c->kind == SL_CFG_NULL)
            continue;
        char opt[64];
        snprintf(opt, sizeof(opt), "--%s", k->opt);
        int rc = 0;
        switch (k->kind) {
        case K_FLAG: {
            int on = 0;
            rc = sl_cfg_node_bool(c, &on);
            if (!rc && on) {
                pl_push(&s->argv, opt);
                if (!strcmp(k->key, "rm_inputs"))
                    s->rm_inputs = 1;
            }
            break;
        }
        case K_VALUE: {
            char *v = NULL;
            rc = pl_one_scalar(L, c, &v);
            if (!rc && (k->flags & F_IN)) {
                char *r = pl_resolve_input(L, c, v);
                free(v);
                v = r;
                pl_push(&s->inputs, pl_input_path(v));
            }
            if (!rc) {
                pl_push(&s->argv, opt);
                pl_push(&s->argv, v);
            }
            free(v);
            break;
        }
        case K_REPEAT:
        case K_CSV: {
            struct sl_strlist vs = { 0 };
            rc = pl_scalars(L, c, &vs);
            if (!rc && k->kind == K_REPEAT) {
                for (size_t i = 0; i < vs.n; i++) {
                    pl_push(&s->argv, opt);
                    pl_push(&s->argv, vs.v[i]);
                }
            } else if (!rc && vs.n) {
                char *j = pl_strlist_join(&vs, ",");
                pl_push(&s->argv, opt);
                pl_push(&s->argv, j);
                free(j);
            }
            sl_strlist_release(&vs);
            break;
        }
        case K_KV: {
            if (c->kind == SL_CFG_MAP) {
                for (size_t i = 0; i < c->n && !rc; i++) {
                    struct sl_cfg *it = c->items[i];
                    char *v = NULL;
                    rc = pl_one_scalar(L, it, &v);
                    if (!rc) {
                        char *kv = sl_xasprintf("%s=%s", it->key, v);
                        pl_push(&s->argv, opt);
                        pl_push(&s->argv, kv);
                        free(kv);
                    }
                    free(v);
                }
            } else {
                struct sl_strlist vs = { 0 };
                rc = pl_scalars(L, c, &vs);
                for (size_t i = 0; !rc && i < vs.n; i++) {
                    if (!strchr(vs.v[i], '=')) {
                        rc = pl_where_err(c, "expected KEY=VALUE, got '%s'", vs.v[i]);
                        break;
                    }
                    pl_push(&s->argv, opt);
                    pl_push(&s->argv, vs.v[i]);
                }
                sl_strlist_release(&vs);
            }
            break;
        }
        case K_RUN:
            break;
        }
        if (rc)
            return rc;
    }
    return 0;
}

struct pl_step *pl_new_step(struct pl_pipeline *p, int stage)
{
    p->steps = sl_xrealloc(p->steps, (p->n + 1) * sizeof(*p->steps));
    struct pl_step *s = &p->steps[p->n++];
    memset(s, 0, sizeof(*s));
    s->stage = stage;
    s->force = pl_stages[stage].force;
    pl_push(&s->argv, pl_stages[stage].cmd);
    if (pl_stages[stage].sub)
        pl_push(&s->argv, pl_stages[stage].sub);
    return s;
}

static void step_release(struct pl_step *s)
{
    free(s->label);
    free(s->out);
    sl_strlist_release(&s->argv);
    sl_strlist_release(&s->inputs);
    free(s->deps);
    free(s->counts_manifest);
    free(s->urls_path);
    free(s->urls_text);
    free(s->paths_file);
    free(s->paths_prefix);
    free(s->paths_numbers);
    free(s->note);
    free(s->train_log);
    free(s->fresh_rm[0]);
    free(s->fresh_rm[1]);
}

void pl_add_dep(struct pl_step *s, size_t d)
{
    for (size_t i = 0; i < s->ndeps; i++)
        if (s->deps[i] == d)
            return;
    s->deps = sl_xrealloc(s->deps, (s->ndeps + 1) * sizeof(*s->deps));
    s->deps[s->ndeps++] = d;
}

void pl_flow_set_docs(struct flow *f, const struct pl_pipeline *p, size_t first)
{
    sl_strlist_release(&f->docs);
    free(f->doc_steps);
    f->doc_steps = sl_xcalloc(p->n - first + 1, sizeof(size_t));
    f->ndoc = 0;
    for (size_t i = first; i < p->n; i++) {
        if (p->steps[i].aux)
            continue;
        pl_push(&f->docs, p->steps[i].out);
        f->doc_steps[f->ndoc++] = i;
    }
}

/* The maps of a section: itself, or each item of a list of runs. *ents is allocated. */
static int section_entries(const struct stage_def *d, struct sl_cfg *sec, struct entry **ents,
                           size_t *ne)
{
    *ents = NULL;
    *ne = 0;
    if (sec->kind == SL_CFG_SEQ) {
        if (d->one_map)
            return pl_where_err(sec, "'%s' takes one map, not a list", d->name);
        if (sec->n == 0)
            return pl_where_err(sec, "an empty list of runs");
        for (size_t i = 0; i < sec->n; i++) {
            sec->items[i]->used = 1;
            if (sec->items[i]->kind != SL_CFG_MAP && sec->items[i]->kind != SL_CFG_NULL)
                return pl_where_err(sec->items[i], "expected a map of options");
        }
        *ents = sl_xcalloc(sec->n, sizeof(**ents));
        for (size_t i = 0; i < sec->n; i++)
            (*ents)[i].map = sec->items[i];
        *ne = sec->n;
        return 0;
    }
    if (sec->kind == SL_CFG_MAP || sec->kind == SL_CFG_NULL ||
        (sec->kind == SL_CFG_SCALAR && !sec->value[0])) {
        *ents = sl_xcalloc(1, sizeof(**ents));
        (*ents)[0].map = sec;
        *ne = 1;
        return 0;
    }
    return pl_where_err(sec, "expected a map of options (or a list of them)");
}

/* A new step for entry e of a section: its label and output directory ("name", "out"). */
static int entry_step(struct loader *L, const struct stage_def *d, int stage, struct sl_cfg *m,
                      size_t e, int in_list, struct pl_step **out)
{
    struct pl_pipeline *p = L->p;
    char *name = NULL;
    struct sl_cfg *nm = pl_child(m, "name");
    int rc = 0;
    if (nm)
        rc = pl_one_scalar(L, nm, &name);
    else if (in_list)
        name = sl_xasprintf("%zu", e);
    if (!rc && name && (!name[0] || strchr(name, '/') || name[0] == '.'))
        rc = pl_where_err(nm, "an entry name is a plain file name, got '%s'", name);
    if (rc) {
        free(name);
        return rc;
    }
    struct pl_step *s = pl_new_step(p, stage);
    s->label = name ? sl_xasprintf("%s/%s", d->name, name) : sl_xstrdup(d->name);
    struct sl_cfg *o = pl_child(m, "out");
    if (o)
        rc = pl_one_scalar(L, o, &s->out);
    else
        s->out = name ? sl_xasprintf("%s/%s/%s", p->work_dir, d->name, name)
                      : sl_xasprintf("%s/%s", p->work_dir, d->name);
    free(name);
    *out = s;
    return rc;
}

int pl_stage_inputs(struct loader *L, struct sl_cfg *m, struct pl_step *s, size_t idx,
                    struct flow *fl)
{
    struct pl_pipeline *p = L->p;
    const struct stage_def *d = &pl_stages[s->stage];
    struct sl_cfg *in = pl_child(m, "in");
    struct sl_strlist ops = { 0 };
    int rc = 0;
    if (in) {
        rc = pl_scalars(L, in, &ops);
        if (!rc && ops.n == 0)
            rc = pl_where_err(in, "no inputs given");
        for (size_t i = 0; !rc && i < ops.n; i++) {
            struct sl_cfg *it = in->kind == SL_CFG_SEQ ? in->items[i] : in;
            char *r = pl_resolve_input(L, it, ops.v[i]);
            free(ops.v[i]);
            ops.v[i] = r;
        }
    } else if (fl->docs.n) {
        for (size_t i = 0; i < fl->docs.n; i++) {
            pl_push(&ops, fl->docs.v[i]);
            pl_add_dep(s, fl->doc_steps[i]);
        }
    } else {
        rc = pl_where_err(m,
                          "'%s' has no inputs: give 'in:' (files or directories), or a "
                          "stage before it",
                          d->name);
    }
    for (size_t i = 0; !rc && i < ops.n; i++) {
        pl_push(&s->argv, ops.v[i]);
        pl_push(&s->inputs, ops.v[i]);
        /* an input that is an earlier step's output */
        for (size_t k = 0; k < idx; k++)
            if (!strcmp(p->steps[k].out, ops.v[i]))
                pl_add_dep(s, k);
    }
    sl_strlist_release(&ops);
    return rc;
}

int pl_build_docs(struct loader *L, struct sl_cfg *m, struct pl_step *s, size_t idx,
                  struct flow *fl)
{
    pl_push(&s->argv, s->out);
    s->counts_manifest = sl_xasprintf("%s/manifest.json", s->out);
    int rc = pl_section_options(L, pl_stage_keys(s->stage), m, s);
    if (!rc)
        rc = pl_stage_inputs(L, m, s, idx, fl);
    return rc;
}

/* One entry of a section: its step (or, for download, steps), in the order the command line
 * is written: --out, then what the stage's build hook writes. */
static int build_entry(struct loader *L, int stage, struct sl_cfg *m, size_t e, int in_list,
                       struct flow *fl)
{
    const struct stage_def *d = &pl_stages[stage];
    int rc = pl_check_keys(m, pl_stage_keys(stage), in_list);
    if (rc)
        return rc;
    size_t idx = L->p->n;
    struct pl_step *s;
    rc = entry_step(L, d, stage, m, e, in_list, &s);
    if (rc)
        return rc;
    pl_push(&s->argv, "--out");
    return d->build(L, m, s, idx, fl);
}

static int build_stage(struct loader *L, int stage, struct sl_cfg *sec, struct flow *fl)
{
    const struct stage_def *d = &pl_stages[stage];
    sec->used = 1;
    if (d->section)
        return d->section(L, sec, fl);
    struct entry *ents = NULL;
    size_t ne = 0;
    int rc = section_entries(d, sec, &ents, &ne);
    size_t first = L->p->n;
    for (size_t e = 0; e < ne && !rc; e++)
        rc = build_entry(L, stage, ents[e].map, e, sec->kind == SL_CFG_SEQ, fl);
    free(ents);
    if (!rc && d->docs)
        pl_flow_set_docs(fl, L->p, first);
    return rc;
}

static int load_selection(struct loader *L, int present[PL_NSTAGES], int sel[PL_NSTAGES])
{
    struct sl_cfg *st = sl_cfg_child(L->root, "stages");
    if (!st || st->kind == SL_CFG_NULL) {
        if (st)
            st->used = 1;
        memcpy(sel, present, sizeof(int) * PL_NSTAGES);
        return 0;
    }
    const char **names = NULL;
    size_t n = 0;
    int rc = sl_cfg_strs(L->root, "stages", &names, &n);
    if (rc)
        return rc;
    st = sl_cfg_child(L->root, "stages");
    memset(sel, 0, sizeof(int) * PL_NSTAGES);
    for (size_t i = 0; i < n && !rc; i++) {
        int found = -1;
        for (int s = 0; s < PL_NSTAGES; s++)
            if (!strcmp(names[i], pl_stages[s].name))
                found = s;
        struct sl_cfg *node = st->kind == SL_CFG_SEQ && i < st->n ? st->items[i] : st;
        if (found < 0) {
            const char *best = NULL;
            size_t bestd = (size_t)-1;
            for (int s = 0; s < PL_NSTAGES; s++) {
                size_t dd = sl_edit_distance(names[i], pl_stages[s].name);
                if (dd < bestd) {
                    bestd = dd;
                    best = pl_stages[s].name;
                }
            }
            if (bestd <= 3)
                rc = pl_where_err(node, "unknown stage '%s'\nhint: did you mean '%s'?", names[i],
                                  best);
            else
                rc = pl_where_err(node, "unknown stage '%s'\nhint: the stages are %s", names[i],
                                  pl_stage_names());
        } else if (!present[found]) {
            rc = pl_where_err(node,
                              "stage '%s' has no section in '%s'\nhint: add a '%s:' section "
                              "(it may be empty)",
                              names[i], L->file, names[i]);
        } else {
            sel[found] = 1;
        }
    }
    free(names);
    return rc;
}

static int check_top(struct loader *L)
{
    struct sl_cfg *r = L->root;
    for (size_t i = 0; i < r->n; i++) {
        struct sl_cfg *c = r->items[i];
        /* a null variable, or one of the file whose only use an override replaced */
        int referenced = 0;
        for (size_t j = 0; j < L->file_refs.n && !referenced; j++)
            referenced = !strcmp(L->file_refs.v[j], c->key);
        if (referenced)
            c->used = 1;
        if (c->used)
            continue;
        const char *best = NULL;
        size_t bestd = (size_t)-1;
        for (int s = 0; s < PL_NSTAGES + 3; s++) {
            const char *k = s < PL_NSTAGES ? pl_stages[s].name : top_keys[s - PL_NSTAGES];
            size_t d = sl_edit_distance(c->key, k);
            if (d < bestd) {
                bestd = d;
                best = k;
            }
        }
        if (best && bestd <= 3)
            return pl_where_err(c, "unknown key '%s'\nhint: did you mean '%s'?", c->key, best);
        return pl_where_err(c,
                            "unknown key '%s'\nhint: a top-level key is a stage, 'name', "
                            "'work_dir', 'stages', or a variable that a value uses as '${%s}'",
                            c->key, c->key);
    }
    return sl_cfg_check_unused(r);
}

int pl_pipeline_load(struct pl_pipeline *p, const char *path, const char *const *overrides,
                     size_t n)
{
    memset(p, 0, sizeof(*p));
    struct sl_cfg *root = NULL;
    int rc = sl_cfg_load_file(&root, path);
    if (rc)
        return rc;
    if (root->kind == SL_CFG_NULL)
        root->kind = SL_CFG_MAP;
    if (root->kind != SL_CFG_MAP) {
        sl_cfg_free(root);
        return sl_err_set(SL_ERR_CONFIG, "%s: a pipeline is a map of stages", path);
    }
    struct sl_strlist refs = { 0 };
    pl_collect_refs(root, &refs);
    for (size_t i = 0; i < n && !rc; i++)
        rc = sl_cfg_override(root, overrides[i]);
    if (rc) {
        sl_strlist_release(&refs);
        sl_cfg_free(root);
        return rc;
    }
    p->cfg = root;
    char *dtmp = sl_xstrdup(path), *dslash = strrchr(dtmp, '/');
    if (dslash)
        *(dslash == dtmp ? dslash + 1 : dslash) = '\0';
    struct loader L = { p, root, path, dslash ? dtmp : sl_xstrdup("."), refs };
    if (!dslash)
        free(dtmp);
    for (int s = 0; s < PL_NSTAGES; s++) {
        struct sl_cfg *sec = sl_cfg_child(root, pl_stages[s].name);
        if (sec)
            pl_null_vars(root, sec);
    }
    struct flow fl;
    memset(&fl, 0, sizeof(fl));

    /* name and work_dir first: values may refer to them */
    struct sl_cfg *nm = sl_cfg_child(root, "name"), *wd = sl_cfg_child(root, "work_dir");
    p->work_dir = sl_xstrdup("");
    if (nm) {
        char *v = NULL;
        p->name = sl_xstrdup("");
        rc = pl_one_scalar(&L, nm, &v);
        free(p->name);
        p->name = v ? v : sl_xstrdup("");
    } else {
        const char *b = strrchr(path, '/');
        b = b ? b + 1 : path;
        size_t l = strlen(b);
        if (l > 5 && !strcmp(b + l - 5, ".yaml"))
            l -= 5;
        else if (l > 4 && !strcmp(b + l - 4, ".yml"))
            l -= 4;
        p->name = sl_xstrndup(b, l);
    }
    if (!rc && (!p->name[0] || strchr(p->name, '/')))
        rc = pl_where_err(nm ? nm : root, "the pipeline's name is a plain file name, got '%s'",
                          p->name);
    if (!rc) {
        if (wd) {
            char *w = NULL;
            rc = pl_one_scalar(&L, wd, &w);
            free(p->work_dir);
            p->work_dir = w ? w : sl_xstrdup("");
            if (!rc && !p->work_dir[0])
                rc = pl_where_err(wd, "an empty work_dir");
        } else {
            free(p->work_dir);
            p->work_dir = sl_xstrdup(p->name);
        }
    }
    if (!rc) {
        /* strip trailing slashes so outputs compare as strings */
        size_t l = strlen(p->work_dir);
        while (l > 1 && p->work_dir[l - 1] == '/')
            p->work_dir[--l] = '\0';
    }
    int present[PL_NSTAGES] = { 0 }, sel[PL_NSTAGES] = { 0 };
    for (int s = 0; s < PL_NSTAGES; s++)
        present[s] = sl_cfg_child(root, pl_stages[s].name) != NULL;
    if (!rc)
        rc = load_selection(&L, present, sel);
    for (int s = 0; s < PL_NSTAGES && !rc; s++) {
        if (!present[s])
            continue;
        size_t first = p->n;
        rc = build_stage(&L, s, sl_cfg_child(root, pl_stages[s].name), &fl);
        for (size_t i = first; i < p->n; i++)
            p->steps[i].selected = sel[s];
    }
    if (!rc && p->n == 0)
        rc = sl_err_set(SL_ERR_CONFIG, "%s: no stages: give at least one of %s", path,
                        pl_stage_names());
    if (!rc)
        rc = check_top(&L);
    sl_strlist_release(&fl.docs);
    free(fl.doc_steps);
    free(fl.tok_model);
    free(fl.vocab_size);
    free(fl.tokens);
    free(L.dir);
    sl_strlist_release(&L.file_refs);
    if (rc) {
        pl_pipeline_release(p);
        return rc;
    }
    return 0;
}

void pl_pipeline_release(struct pl_pipeline *p)
{
    for (size_t i = 0; i < p->n; i++)
        step_release(&p->steps[i]);
    free(p->steps);
    free(p->name);
    free(p->work_dir);
    sl_cfg_free(p->cfg);
    memset(p, 0, sizeof(*p));
}
