/* The train stage: its keys (sections of the trainer's config), flattened into key=value
 * overrides of `sluice train`. */
#include "pipeline/internal.h"

#include "core/alloc.h"
#include "core/buf.h"
#include "core/config.h"
#include "core/err.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The train stage's keys: sections of the trainer's config, not command options. */
const struct key pl_train_keys[] = {
    RUNKEY("config", "the model and run config (configs/models/*.yaml); required"),
    RUNKEY("model", "a map of model.* overrides (default vocab_size: tokenizer_train's)"),
    RUNKEY("train", "a map of train.* overrides (steps, seq_len, micro_batch_size, ...)"),
    RUNKEY("optim", "a map of optim.* overrides (lr, warmup_steps, ...)"),
    RUNKEY("data", "a map of data.* overrides (default prefix: the tokenize stage's)"),
    RUNKEY("eval", "a map of eval.* overrides (interval, iters)"),
    RUNKEY("checkpoint", "a map of checkpoint.* overrides (default dir: OUT/checkpoints)"),
    RUNKEY("log", "a map of log.* overrides (default file: OUT/log.jsonl)"),
    RUNKEY("debug", "a map of debug.* overrides"),
    RUNKEY("in", "the token shards (a prefix or a list); default: the tokenize stage's"),
    RUNKEY("out", "output directory; default: WORK/train"),
    FLAG("quiet", "quiet"),
    FLAG("verbose", "verbose"),
    END,
};

/* The trainer's config sections that a train stage may override (flattened to key=value). */
static const char *const train_sections[] = { "model",      "train", "optim", "data", "eval",
                                              "checkpoint", "log",   "debug", NULL };

/* Flatten a map of trainer keys into "a.b=value" overrides (lists as YAML flow lists). */
static int flatten(struct loader *L, struct sl_cfg *node, const char *path, struct sl_strlist *out,
                   int *seen_vocab, int *seen_prefix, char **log, char **ckpt)
{
    node->used = 1;
    if (node->kind == SL_CFG_MAP) {
        for (size_t i = 0; i < node->n; i++) {
            char *sub = sl_xasprintf("%s.%s", path, node->items[i]->key);
            int rc = flatten(L, node->items[i], sub, out, seen_vocab, seen_prefix, log, ckpt);
            free(sub);
            if (rc)
                return rc;
        }
        return 0;
    }
    struct sl_strlist vs = { 0 };
    int rc = pl_scalars(L, node, &vs);
    if (rc) {
        sl_strlist_release(&vs);
        return rc;
    }
    char *v;
    if (node->kind == SL_CFG_SEQ) {
        char *j = pl_strlist_join(&vs, ", ");
        v = sl_xasprintf("[%s]", j);
        free(j);
    } else {
        v = sl_xstrdup(vs.n ? vs.v[0] : "");
    }
    char *kv = sl_xasprintf("%s=%s", path, v);
    pl_push(out, kv);
    free(kv);
    *seen_vocab |= !strcmp(path, "model.vocab_size");
    *seen_prefix |= !strcmp(path, "data.prefix") || !strcmp(path, "data");
    if (!strcmp(path, "log.file")) {
        free(*log);
        *log = sl_xstrdup(v);
    }
    if (!strcmp(path, "checkpoint.dir")) {
        free(*ckpt);
        *ckpt = sl_xstrdup(v);
    }
    free(v);
    sl_strlist_release(&vs);
    return 0;
}

/* train: sluice train CONFIG section.key=value ... with the pipeline's defaults (data
 * from the tokenize stage, vocabulary from tokenizer_train, checkpoints and the log in
 * OUT). */
int pl_train_section(struct loader *L, struct sl_cfg *sec, struct flow *fl)
{
    struct pl_pipeline *p = L->p;
    if (sec->kind != SL_CFG_MAP)
        return pl_where_err(sec, "'train' takes one map: config and the trainer's sections");
    int rc = pl_check_keys(sec, pl_stage_keys(PL_TRAIN), 0);
    if (rc)
        return rc;
    struct sl_cfg *cf = pl_child(sec, "config");
    if (!cf)
        return pl_where_err(sec, "'train' needs 'config:' (a trainer config, e.g. "
                                 "configs/models/tiny-gpt.yaml)");
    size_t idx = p->n;
    struct pl_step *s = pl_new_step(p, PL_TRAIN);
    s->label = sl_xstrdup("train");
    struct sl_cfg *o = pl_child(sec, "out");
    char *config = NULL, *log = NULL, *ckpt = NULL;
    if (o)
        rc = pl_one_scalar(L, o, &s->out);
    else
        s->out = sl_xasprintf("%s/train", p->work_dir);
    if (!rc)
        rc = pl_one_scalar(L, cf, &config);
    if (rc)
        return rc;
    {
        char *r = pl_resolve_input(L, cf, config);
        free(config);
        config = r;
    }
    pl_push(&s->argv, config);
    pl_push(&s->inputs, config);
    free(config);
    int seen_vocab = 0, seen_prefix = 0;
    for (int k = 0; train_sections[k] && !rc; k++) {
        struct sl_cfg *c = pl_child(sec, train_sections[k]);
        if (!c)
            continue;
        if (c->kind != SL_CFG_MAP && strcmp(train_sections[k], "data") != 0)
            rc = pl_where_err(c, "expected a map of %s.* keys", train_sections[k]);
        else
            rc = flatten(L, c, train_sections[k], &s->argv, &seen_vocab, &seen_prefix, &log, &ckpt);
    }
    struct sl_cfg *in = pl_child(sec, "in");
    struct sl_strlist prefixes = { 0 };
    if (!rc && in && seen_prefix)
        rc = pl_where_err(in, "give 'in' or 'data.prefix', not both");
    if (!rc && in) {
        rc = pl_scalars(L, in, &prefixes);
        if (!rc && prefixes.n == 0)
            rc = pl_where_err(in, "no inputs given");
        for (size_t i = 0; !rc && i < prefixes.n; i++) {
            char *end = NULL;
            strtod(prefixes.v[i], &end);
            if ((end && !*end) || strchr(prefixes.v[i], ' '))
                continue; /* a weight, or "W1 P1 W2 P2" in one value */
            struct sl_cfg *it = in->kind == SL_CFG_SEQ ? in->items[i] : in;
            char *r = pl_resolve_input(L, it, prefixes.v[i]);
            free(prefixes.v[i]);
            prefixes.v[i] = r;
        }
    } else if (!rc && !seen_prefix) {
        if (!fl->tokens)
            rc = pl_where_err(sec, "'train' has no data: give 'in:' (token shard prefixes), "
                                   "'data: {prefix: ...}', or a 'tokenize' stage before it");
        else {
            pl_push(&prefixes, fl->tokens);
            pl_add_dep(&p->steps[idx], fl->tokens_step);
        }
    }
    s = &p->steps[idx];
    if (!rc && prefixes.n) {
        char *j = pl_strlist_join(&prefixes, " ");
        char *kv = sl_xasprintf("data.prefix=%s", j);
        pl_push(&s->argv, kv);
        free(kv);
        free(j);
        for (size_t i = 0; i < prefixes.n; i++) {
            /* weights (numbers) among the prefixes are not files */
            char *end = NULL;
            strtod(prefixes.v[i], &end);
            if (end && !*end)
                continue;
            char *bin = sl_xasprintf("%s.bin", prefixes.v[i]);
            char *ix = sl_xasprintf("%s.idx", prefixes.v[i]);
            pl_push(&s->inputs, bin);
            pl_push(&s->inputs, ix);
            free(bin);
            free(ix);
            for (size_t k = 0; k < idx; k++)
                if (p->steps[k].stage == PL_TOKENIZE && p->steps[k].argv.n > 2 &&
                    !strncmp(prefixes.v[i], p->steps[k].argv.v[2], strlen(p->steps[k].argv.v[2])))
                    pl_add_dep(s, k);
        }
    }
    sl_strlist_release(&prefixes);
    if (!rc && !seen_vocab && fl->vocab_size) {
        char *kv = sl_xasprintf("model.vocab_size=%s", fl->vocab_size);
        pl_push(&s->argv, kv);
        free(kv);
        pl_add_dep(s, fl->tok_step);
    }
    if (!rc) {
        /* the index caches, checkpoints and the log stay in the step's directory */
        int have_cache = 0;
        for (size_t i = 0; i < s->argv.n; i++)
            have_cache |= !strncmp(s->argv.v[i], "data.cache_dir=", 15);
        char *kv = sl_xasprintf("data.cache_dir=%s/index-cache", s->out);
        if (!have_cache)
            pl_push(&s->argv, kv);
        free(kv);
        if (!ckpt) {
            s->fresh_rm[0] = sl_xasprintf("%s/checkpoints", s->out);
            kv = sl_xasprintf("checkpoint.dir=%s", s->fresh_rm[0]);
            pl_push(&s->argv, kv);
            free(kv);
        }
        if (!log) {
            s->fresh_rm[1] = sl_xasprintf("%s/log.jsonl", s->out);
            s->train_log = sl_xstrdup(s->fresh_rm[1]);
            kv = sl_xasprintf("log.file=%s", s->train_log);
            pl_push(&s->argv, kv);
            free(kv);
        } else {
            s->train_log = log;
            log = NULL;
        }
        struct sl_cfg *q = pl_child(sec, "quiet"), *v = pl_child(sec, "verbose");
        int on = 0;
        if (q)
            q->used = 1;
        if (v)
            v->used = 1;
        if (q && !(rc = sl_cfg_node_bool(q, &on)) && on)
            pl_push(&s->argv, "--quiet");
        on = 0;
        if (!rc && v && !(rc = sl_cfg_node_bool(v, &on)) && on)
            pl_push(&s->argv, "--verbose");
    }
    free(log);
    free(ckpt);
    return rc;
}
