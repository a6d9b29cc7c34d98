/* sluice tag: every filter of a YAML chain scores each document, and the scores are written
 * as attribute shards in Dolma's layout (curate/mix/attrs.h), one line per document, one
 * shard per input file; `sluice mix` selects by them without scoring again. */
#include "curate/commands.h"

#include "core/alloc.h"
#include "core/err.h"
#include "core/jsonl.h"
#include "core/log.h"
#include "core/options.h"
#include "core/stage_docs.h"
#include "core/world.h"
#include "curate/filter/chain.h"
#include "curate/mix/attrs.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *const cmd_tag_usage[] = {
    "sluice tag --config F.yaml --out DIR [--experiment NAME] [options] IN...",
    "",
    "Score JSONL documents with every filter of a YAML config (configs/filters/*.yaml) and",
    "write the scores as attributes in Dolma's layout: DIR/part-NNNNN.jsonl.zst holds one",
    "line per document of input NNNNN, in order: {\"id\": ID, \"attributes\":",
    "{\"NAME__FILTER__score\": [[0, CHARS, SCORE]], \"NAME__FILTER__keep\": [[0, CHARS, 1|0]]}}",
    "(NAME: --experiment; keep: 0 where the filter would drop the document). 'sluice mix'",
    "selects documents by these attributes without scoring again. Filters that edit the",
    "text are refused. The output is the same for any number of MPI ranks.",
    NULL,
};

struct opts {
    const char *config, *out, *experiment, *text_key;
    struct sl_strlist set;
    int force, wait, repair_utf8;
    long level;
    uint64_t max_line;
    const char *chain; /* the filter chain's settings (JSON), for the plan's */
};

#define SL_OPT_STRUCT struct opts
const struct sl_option cmd_tag_options[] = {
    SL_SETTING(SL_OPT_JSON_, "config", chain),
    SL_OPT_STRING('c', "config", config, "F.yaml", "filter chain (configs/filters/*.yaml)",
                  .flags = SL_OPTF_PATH, .required = 1),
    SL_OPT_STRING('o', "out", out, "DIR", "output directory of the attribute shards (created)",
                  .required = 1),
    SL_OPT_STRING(0, "experiment", experiment, "NAME",
                  "first part of the attributes' names (Dolma's experiment)", .def = "sluice",
                  .flags = SL_OPTF_OUTPUT),
    SL_OPT_STRINGS(0, "set", set, "KEY=VALUE",
                   "override a config value, as sluice filter --set does", .flags = SL_OPTF_KV),
    SL_OPT_REPAIR_UTF8(repair_utf8),
    SL_OPT_TEXT_KEY(text_key),
    SL_OPT_MAX_LINE(max_line, .omit = SL_OMIT_DEF),
    SL_OPT_ZSTD_LEVEL(level, .flags = SL_OPTF_OUTPUT, .omit = SL_OMIT_DEF),
    SL_OPT_FORCE(force),
    SL_OPT_WAIT(wait),
    SL_OPT_COMMON,
    SL_OPT_END_,
};

struct tag_run {
    struct sl_filter_chain *ch;
    char **prefix; /* per filter: "EXP__FILTER__" */
    struct sl_fctx ctx;
    struct sl_filter_result *res;
    struct sl_buf lang, line;
    struct sl_doc out; /* the attributes line, as a document to write */
};

/* One document: each filter's score and decision over the whole text. */
static int tag_doc(void *arg, struct sl_stage_doc *sd, struct sl_doc *doc)
{
    struct tag_run *t = arg;
    unsigned v0;
    long drop = sl_filter_chain_run_doc(t->ch, &t->ctx, doc, &t->lang, 1, t->res, &v0);
    if (drop < -1)
        return sl_err_wrap(SL_ERR_STATE, "%s:%llu: ", sd->in->path,
                           (unsigned long long)sl_jsonl_line_no(sd->r));
    size_t tlen, idlen;
    const char *text = sl_doc_text(doc, &tlen), *id = sl_doc_get_raw(doc, "id", &idlen);
    uint64_t nchar = sl_attr_nchar(text, tlen);
    struct sl_buf *b = &t->line;
    sl_buf_reset(b);
    sl_buf_puts(b, "{\"id\":");
    sl_buf_append(b, id, idlen);
    sl_buf_puts(b, ",\"attributes\":{");
    for (size_t i = 0; i < t->ch->n; i++) {
        sl_buf_printf(b, "%s\"%sscore\":[[0,%llu,", i ? "," : "", t->prefix[i],
                      (unsigned long long)nchar);
        sl_json_put_double(b, t->res[i].score);
        sl_buf_printf(b, "]],\"%skeep\":[[0,%llu,%d]]", t->prefix[i], (unsigned long long)nchar,
                      t->res[i].keep ? 1 : 0);
        if (!t->res[i].keep) {
            char key[160];
            snprintf(key, sizeof(key), "tagged_drop_%s", t->ch->f[i].name);
            sl_counters_add(sd->u->c, key, 1);
        }
    }
    sl_buf_puts(b, "}}");
    struct sl_json_error err;
    if (sl_doc_parse(&t->out, b->data, b->len, &err))
        return sl_err_set(SL_ERR_STATE, "tag: cannot make the attributes of '%s':%llu: %s",
                          sd->in->path, (unsigned long long)sl_jsonl_line_no(sd->r), err.reason);
    int rc = sl_stage_doc_write(sd, &t->out);
    return rc ? rc : SL_DOC_WRITTEN;
}

/* A unit's start: every filter's count of would-be drops at zero. */
static int tag_begin(void *arg, struct sl_stage_unit *u)
{
    struct tag_run *t = arg;
    for (size_t i = 0; i < t->ch->n; i++) {
        char key[160];
        snprintf(key, sizeof(key), "tagged_drop_%s", t->ch->f[i].name);
        sl_counters_add(u->c, key, 0);
    }
    return 0;
}

static int check(void *opts, const struct sl_strlist *operands)
{
    const struct opts *o = opts;
    if (operands->n == 0)
        return sl_err_set(SL_ERR_USAGE, "no inputs given");
    if (!o->experiment[0] || strstr(o->experiment, "__"))
        return sl_err_set(SL_ERR_USAGE,
                          "--experiment '%s': expected a name without '__' (it separates the "
                          "parts of an attribute's name)",
                          o->experiment);
    return 0;
}

/* The chain, refused when a filter edits the text (later scores would be of another text). */
static int load_chain(const struct opts *o, struct sl_filter_chain **out)
{
    int rc = sl_filter_chain_load(out, o->config, o->set.v, o->set.n);
    for (size_t i = 0; !rc && i < (*out)->n; i++)
        if ((*out)->f[i].modifies)
            rc = sl_err_set(SL_ERR_UNSUPPORTED,
                            "cannot tag with filter '%s' of '%s': it edits the text\nhint: run "
                            "'sluice filter' with the filters that edit text first, then tag "
                            "its output",
                            (*out)->f[i].name, o->config);
    if (rc) {
        sl_filter_chain_free(*out);
        *out = NULL;
    }
    return rc;
}

static int run(const void *opts, const struct sl_strlist *operands, int argc, const char **argv)
{
    struct opts so = *(const struct opts *)opts, *o = &so;
    struct sl_world *w = sl_world_get();
    struct tag_run t = { 0 };
    int rc = load_chain(o, &t.ch);
    if (rc)
        return rc;
    struct sl_inputs in;
    rc = sl_inputs_expand(&in, (const char *const *)operands->v, operands->n, sl_jsonl_exts);
    if (rc) {
        sl_filter_chain_free(t.ch);
        return rc;
    }
    struct sl_buf chain = SL_BUF_INIT, settings = SL_BUF_INIT, name = SL_BUF_INIT;
    sl_filter_chain_settings(t.ch, &chain);
    o->chain = chain.data;
    sl_options_settings_json(cmd_tag_options, o, &settings);
    t.prefix = sl_xcalloc(t.ch->n ? t.ch->n : 1, sizeof(*t.prefix));
    for (size_t i = 0; i < t.ch->n; i++) {
        sl_buf_reset(&name);
        sl_attr_put_name(&name, o->experiment);
        sl_buf_puts(&name, "__");
        sl_attr_put_name(&name, t.ch->f[i].name);
        sl_buf_puts(&name, "__");
        t.prefix[i] = sl_xstrdup(name.data);
    }
    sl_fctx_init(&t.ctx, &t.ch->env);
    sl_doc_init(&t.out);
    t.res = sl_xcalloc(t.ch->n ? t.ch->n : 1, sizeof(*t.res));
    struct sl_stage_docs job = { .files = { .stage = { .stage = "tag",
                                                       .out_dir = o->out,
                                                       .argc = argc,
                                                       .argv = argv,
                                                       .inputs = &in,
                                                       .settings_json = settings.data,
                                                       .force = o->force,
                                                       .wait = o->wait },
                                            .level = (int)o->level },
                                 .jsonl = { .max_line = o->max_line,
                                            .text_key = o->text_key,
                                            .repair_utf8 = o->repair_utf8 },
                                 .begin = tag_begin,
                                 .doc = tag_doc,
                                 .ctx = &t };
    struct sl_stage_result res;
    rc = sl_stage_run_docs(w, &job, &res);
    if (!rc && w->rank == 0)
        sl_info("tag: %llu documents scored by %zu filters into '%s'%s",
                (unsigned long long)sl_counters_get(&res.totals, "documents_out"), t.ch->n, o->out,
                res.resumed ? " (resumed)" : "");
    sl_stage_result_release(&res);
    for (size_t i = 0; i < t.ch->n; i++)
        free(t.prefix[i]);
    free(t.prefix);
    free(t.res);
    sl_doc_release(&t.out);
    sl_fctx_release(&t.ctx);
    sl_buf_release(&t.lang);
    sl_buf_release(&t.line);
    sl_buf_release(&name);
    sl_buf_release(&settings);
    sl_buf_release(&chain);
    sl_inputs_release(&in);
    sl_filter_chain_free(t.ch);
    return rc;
}

const struct sl_cmd cmd_tag = SL_CMD(cmd_tag_usage, cmd_tag_options, struct opts, check, run);
