/* The tokenizer_train and tokenize stages: they write OUT/PREFIX (the model; the token
 * shards), and the stages after them read it: tokenize takes tokenizer_train's model when it
 * names no tokenizer, train the shards and the vocabulary size. Their summary rows: a model
 * path; tokens and the shards' bytes. */
#include "pipeline/internal.h"

#include "core/alloc.h"
#include "core/config.h"
#include "core/err.h"
#include "tokenize/tokenizer.h"

#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

const struct key pl_tokenizer_train_own[] = {
    RUNKEY("prefix", "file name of the model in the output directory (default tokenizer)"),
    END,
};

const struct key pl_tokenize_own[] = {
    RUNKEY("prefix", "name of the token shards in the output directory (default: the "
                     "pipeline's name)"),
    END,
};

/* tokenizer_train and tokenize write OUT/PREFIX: --out OUT/PREFIX, and what later stages
 * read (the model; the token shards and the counts manifest). */
static int prefix_out(struct loader *L, int stage, struct sl_cfg *m, struct pl_step *s, size_t idx,
                      struct flow *fl)
{
    struct sl_cfg *px = pl_child(m, "prefix");
    char *pfx = NULL;
    int rc = 0;
    if (px)
        rc = pl_one_scalar(L, px, &pfx);
    else
        pfx = sl_xstrdup(stage == PL_TOKENIZE ? L->p->name : "tokenizer");
    if (!rc && (!pfx[0] || strchr(pfx, '/')))
        rc = pl_where_err(px, "a prefix is a plain file name, got '%s'", pfx);
    if (rc) {
        free(pfx);
        return rc;
    }
    char *full = sl_xasprintf("%s/%s", s->out, pfx);
    free(pfx);
    pl_push(&s->argv, full);
    if (stage == PL_TOKENIZER_TRAIN) {
        free(fl->tok_model);
        fl->tok_model = sl_xasprintf("%s.model", full);
        fl->tok_step = idx;
        struct sl_cfg *vs = pl_child(m, "vocab_size");
        free(fl->vocab_size);
        fl->vocab_size = NULL;
        if (vs)
            rc = pl_one_scalar(L, vs, &fl->vocab_size);
    } else {
        s->counts_manifest = sl_xasprintf("%s.manifest.json", full);
        /* the first --json-key names the shards the trainer reads */
        struct sl_cfg *jk = pl_child(m, "json_key");
        struct sl_strlist keys = { 0 };
        if (jk)
            rc = pl_scalars(L, jk, &keys);
        /* split_sentences: Megatron's _sentence shards */
        struct sl_cfg *ss = pl_child(m, "split_sentences");
        int split = 0;
        if (!rc && ss)
            rc = sl_cfg_node_bool(ss, &split);
        free(fl->tokens);
        fl->tokens = sl_xasprintf("%s_%s_%s", full, keys.n ? keys.v[0] : "text",
                                  split ? "sentence" : "document");
        fl->tokens_step = idx;
        sl_strlist_release(&keys);
    }
    free(full);
    return rc;
}

/* tokenize without 'tokenizer:': the model of the tokenizer_train stage before it. */
static int default_tokenizer(struct sl_cfg *m, struct pl_step *s, struct flow *fl)
{
    if (pl_child(m, "tokenizer"))
        return 0;
    if (!fl->tok_model)
        return pl_where_err(m, "'tokenize' needs 'tokenizer:', or a 'tokenizer_train' "
                               "stage before it\nhint: a tokenizer is one of " TOKENIZER_SPECS);
    char *spec = sl_xasprintf("spm:%s", fl->tok_model);
    pl_push(&s->argv, "--tokenizer");
    pl_push(&s->argv, spec);
    pl_push(&s->inputs, fl->tok_model);
    free(spec);
    pl_add_dep(s, fl->tok_step);
    return 0;
}

int pl_tokenizer_train_build(struct loader *L, struct sl_cfg *m, struct pl_step *s, size_t idx,
                             struct flow *fl)
{
    int rc = prefix_out(L, PL_TOKENIZER_TRAIN, m, s, idx, fl);
    if (!rc)
        rc = pl_section_options(L, pl_stage_keys(PL_TOKENIZER_TRAIN), m, s);
    if (!rc)
        rc = pl_stage_inputs(L, m, s, idx, fl);
    return rc;
}

int pl_tokenize_build(struct loader *L, struct sl_cfg *m, struct pl_step *s, size_t idx,
                      struct flow *fl)
{
    int rc = prefix_out(L, PL_TOKENIZE, m, s, idx, fl);
    if (!rc)
        rc = pl_section_options(L, pl_stage_keys(PL_TOKENIZE), m, s);
    if (!rc)
        rc = default_tokenizer(m, s, fl);
    if (!rc)
        rc = pl_stage_inputs(L, m, s, idx, fl);
    return rc;
}

/* tokenizer_train writes no counts: the table shows its model once it is there. */
void pl_tokenizer_train_report(struct pl_row *r, struct json_object *m)
{
    if (m)
        return;
    const char *model = r->s->argv.n > 3 ? r->s->argv.v[3] : "";
    struct stat st;
    char *mp = sl_xasprintf("%s.model", model);
    if (stat(mp, &st) == 0)
        r->line = mp;
    else
        free(mp);
}

/* tokenize counts tokens; its bytes out are its shards' when the counts have none. */
void pl_tokenize_report(struct pl_row *r, struct json_object *m)
{
    if (!m)
        return;
    r->has_tokens = 1;
    struct json_object *outs = NULL;
    if (!r->bytes_out && json_object_object_get_ex(m, "outputs", &outs))
        for (size_t i = 0; i < json_object_array_length(outs); i++) {
            struct json_object *v = NULL, *o = json_object_array_get_idx(outs, i);
            if (o && json_object_object_get_ex(o, "bytes", &v))
                r->bytes_out += (unsigned long long)json_object_get_uint64(v);
        }
}
