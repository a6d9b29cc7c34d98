/* sluice clean: ftfy-style repair of each document's text (curate/clean/cleaner.h), one
 * output shard per input file, every repair counted in the manifest. */
#include "curate/commands.h"

#include "core/alloc.h"
#include "core/err.h"
#include "core/jsonl.h"
#include "core/log.h"
#include "core/options.h"
#include "core/parquet_write.h"
#include "core/remote.h"
#include "core/stage_docs.h"
#include "core/stream.h"
#include "core/world.h"
#include "curate/clean/cleaner.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *const cmd_clean_usage[] = {
    "sluice clean --out DIR [options] IN...",
    "",
    "Repair the text of JSONL documents: terminal escapes, control characters, C1",
    "controls, mojibake (UTF-8 read as Windows-1252/Latin-1, fixed only when the result is",
    "valid UTF-8), HTML entities, invalid UTF-8 (U+FFFD), Unicode NFC, \\r\\n, trailing",
    "spaces, 3+ newlines to 2. Other members pass through byte for byte. One shard per",
    "input file; the manifest counts each kind of repair.",
    NULL,
};

struct opts {
    const char *out, *text_key, *s3_endpoint, *cache_dir;
    struct sl_clean_opts c;
    int force, wait, keep_mojibake;
    long level;
    const char *out_format; /* --out-format */
    uint64_t row_group_size;
};

/* The options' table: the dispatcher's parser and -h, the settings of the plan (rows
 * marked SL_OPTF_OUTPUT) and the pipeline's clean keys read it. */
#define SL_OPT_STRUCT struct opts
const struct sl_option cmd_clean_options[] = {
    SL_OPT_STRING('o', "out", out, "DIR", "output directory (created)", .required = 1),
    SL_OPT_FLAG_(0, "nfkc", c.nfkc, "normalize to NFKC instead of NFC", .flags = SL_OPTF_OUTPUT),
    SL_OPT_FLAG_(0, "remove-urls", c.remove_urls, "remove http(s):// and www. URLs",
                 .flags = SL_OPTF_OUTPUT),
    SL_OPT_FLAG_(0, "uncurl-quotes", c.uncurl_quotes, "turn curly quotes into ' and \"",
                 .flags = SL_OPTF_OUTPUT),
    SL_OPT_FLAG_(0, "no-mojibake", c.no_mojibake, "leave mojibake as it is",
                 .flags = SL_OPTF_OUTPUT | SL_OPTF_INVERT, .setting = "mojibake"),
    /* in the settings since it is given, so the plans of earlier runs still match */
    SL_OPT_FLAG_(0, "no-entities", c.no_entities, "leave HTML entities as they are",
                 .flags = SL_OPTF_OUTPUT | SL_OPTF_INVERT, .setting = "entities",
                 .omit = SL_OMIT_DEF),
    SL_OPT_TEXT_KEY(text_key),
    SL_OPT_ZSTD_LEVEL(level, .flags = SL_OPTF_OUTPUT, .omit = SL_OMIT_DEF),
    SL_OPT_OUT_FORMAT(out_format, row_group_size),
    SL_OPT_FORCE(force),
    SL_OPT_WAIT(wait),
    SL_OPT_S3_ENDPOINT(s3_endpoint),
    SL_OPT_CACHE_DIR(cache_dir),
    SL_OPT_COMMON,
    SL_OPT_END_,
};

/* What the units of one run share: the options, a unit's repair counts, scratch. */
struct clean_run {
    const struct opts *o;
    struct sl_clean_counts k;
    struct sl_buf out;
};

/* One document's text repaired: an edit, kept. */
static int clean_doc(void *ctx, struct sl_stage_doc *sd, struct sl_doc *doc)
{
    struct clean_run *cr = ctx;
    struct sl_buf *out = &cr->out;
    size_t n;
    const char *t = sl_doc_text(doc, &n);
    int rc = sl_clean_text(&cr->o->c, t, n, out, &cr->k);
    if (!rc && (out->len != n || memcmp(out->data ? out->data : "", t, n))) {
        rc = sl_doc_set_text(doc, out->data ? out->data : "", out->len);
        sl_counters_add(sd->u->c, "documents_changed", 1);
    }
    return rc ? rc : SL_DOC_KEEP;
}

/* The unit's repairs, each kind counted (and zero for the next unit). */
static int clean_end(void *ctx, struct sl_stage_unit *u, int rc)
{
    struct clean_run *cr = ctx;
    const struct sl_clean_counts *k = &cr->k;
    struct sl_counters *c = u->c;
    sl_counters_add(c, "fixed_mojibake", k->mojibake);
    sl_counters_add(c, "fixed_html_entities", k->html_entities);
    sl_counters_add(c, "fixed_c1_controls", k->c1_controls);
    sl_counters_add(c, "removed_control_chars", k->control_chars);
    sl_counters_add(c, "removed_terminal_escapes", k->terminal_escapes);
    sl_counters_add(c, "normalized_documents", k->normalized);
    sl_counters_add(c, "fixed_line_breaks", k->crlf);
    sl_counters_add(c, "removed_trailing_spaces", k->trailing_spaces);
    sl_counters_add(c, "collapsed_newline_runs", k->newlines_collapsed);
    if (cr->o->c.remove_urls)
        sl_counters_add(c, "removed_urls", k->urls_removed);
    if (cr->o->c.uncurl_quotes)
        sl_counters_add(c, "uncurled_quotes", k->quotes_uncurled);
    memset(&cr->k, 0, sizeof(cr->k));
    return rc;
}

static int check(void *opts, const struct sl_strlist *operands)
{
    return operands->n ? 0 : sl_err_set(SL_ERR_USAGE, "no inputs given");
}

static int run(const void *opts, const struct sl_strlist *operands, int argc, const char **argv)
{
    const struct opts *o = opts;
    struct sl_world *w = sl_world_get();
    struct sl_inputs in;
    if (o->s3_endpoint)
        sl_remote_set_s3_endpoint(o->s3_endpoint);
    sl_remote_set_cache_dir(o->cache_dir);
    int rc = sl_inputs_expand(&in, (const char *const *)operands->v, operands->n, sl_jsonl_exts);
    if (rc)
        return rc;
    struct sl_buf settings = SL_BUF_INIT;
    sl_options_settings_json(cmd_clean_options, o, &settings);
    struct clean_run cr = { .o = o };
    struct sl_pq_write_opts pq;
    struct sl_stage_docs job = { .files = { .stage = { .stage = "clean",
                                                       .out_dir = o->out,
                                                       .argc = argc,
                                                       .argv = argv,
                                                       .inputs = &in,
                                                       .settings_json = settings.data,
                                                       .force = o->force,
                                                       .wait = o->wait },
                                            .level = (int)o->level,
                                            .parquet = sl_pq_out_opts(&pq, o->out_format,
                                                                      o->row_group_size, o->level,
                                                                      o->text_key) },
                                 .jsonl = { .text_key = o->text_key, .repair_utf8 = 1 },
                                 .doc = clean_doc,
                                 .end = clean_end,
                                 .ctx = &cr };
    struct sl_stage_result res;
    rc = sl_stage_run_docs(w, &job, &res);
    sl_warn_limited_summary();
    if (!rc && w->rank == 0)
        sl_info("clean: %llu documents, %llu changed, in '%s'%s",
                (unsigned long long)sl_counters_get(&res.totals, "documents_out"),
                (unsigned long long)sl_counters_get(&res.totals, "documents_changed"), o->out,
                res.resumed ? " (resumed)" : "");
    sl_stage_result_release(&res);
    sl_buf_release(&cr.out);
    sl_buf_release(&settings);
    sl_inputs_release(&in);
    return rc;
}

const struct sl_cmd cmd_clean = SL_CMD(cmd_clean_usage, cmd_clean_options, struct opts, check, run);
