/* sluice filter: JSONL documents through a chain of filters from a YAML config; kept
 * documents to --out, rejected ones (with the filter name, reason and score) to
 * --rejected, or every score written into the document with --annotate. One output shard
 * per input file, so the outputs are the same for any number of MPI ranks. */
#include "curate/commands.h"

#include "core/alloc.h"
#include "core/config.h"
#include "core/err.h"
#include "core/file.h"
#include "core/jsonl.h"
#include "core/log.h"
#include "core/options.h"
#include "core/parquet_write.h"
#include "core/remote.h"
#include "core/stage_docs.h"
#include "core/stream.h"
#include "core/world.h"
#include "curate/filter/chain.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

const char *const cmd_filter_usage[] = {
    "sluice filter --config F.yaml --out DIR [--rejected DIR] [--annotate] [options] IN...",
    "sluice filter --list",
    "",
    "Run JSONL documents (files or directories) through the filters of a YAML config",
    "(configs/filters/*.yaml: nemo-en, gopher, c4, fineweb, non-en) and write the kept",
    "documents to DIR as part-NNNNN.jsonl.zst, one shard per input file. Filters that edit",
    "the text (C4 line rules, regex line removal) write the edited text. The manifest",
    "counts removals and removed bytes per filter. The output is the same for any number",
    "of MPI ranks.",
    NULL,
};

struct opts {
    const char *config, *out, *rejected, *text_key;
    struct sl_strlist set;
    int annotate, split_lang, list, force, wait, repair_utf8;
    long level;
    uint64_t max_line;
    const char *out_format; /* --out-format */
    uint64_t row_group_size;
    const char *chain; /* the filter chain's settings (JSON), for the plan's */
};

/* The options' table: the dispatcher's parser and -h, the settings of the plan (rows marked
 * SL_OPTF_OUTPUT) and the pipeline's filter keys. */
#define SL_OPT_STRUCT struct opts

const struct sl_option cmd_filter_options[] = {
    SL_SETTING(SL_OPT_JSON_, "config", chain),
    SL_OPT_STRING('c', "config", config, "F.yaml", "filter chain (configs/filters/*.yaml)",
                  .flags = SL_OPTF_PATH, .required = 1),
    SL_OPT_STRING('o', "out", out, "DIR", "output directory for kept documents (created)",
                  .required = 1),
    SL_OPT_FLAG_(0, "annotate", annotate,
                 "keep every document; write filter_scores (and filter_drop, filter_reason)",
                 .flags = SL_OPTF_OUTPUT),
    SL_OPT_FLAG_(0, "split-by-language", split_lang,
                 "write kept documents to DIR/lang=CODE/ by their detected language",
                 .flags = SL_OPTF_OUTPUT),
    SL_OPT_STRING(0, "rejected", rejected, "DIR",
                  "write rejected documents here, with filter, filter_reason, filter_score",
                  .flags = SL_OPTF_OUTPUT | SL_OPTF_GIVEN),
    SL_OPT_STRINGS(0, "set", set, "KEY=VALUE",
                   "override a config value: filters.gopher_quality.min_doc_words=40 (the "
                   "filter by name), filters.2.gopher_quality.min_doc_words=40 (by position)",
                   .flags = SL_OPTF_KV),
    SL_OPT_FLAG_(0, "list", list, "list the filter kinds and exit",
                 .flags = SL_OPTF_NO_KEY | SL_OPTF_ALONE),
    SL_OPT_REPAIR_UTF8(repair_utf8),
    SL_OPT_TEXT_KEY(text_key),
    SL_OPT_MAX_LINE(max_line, .omit = SL_OMIT_DEF),
    SL_OPT_ZSTD_LEVEL(level, .flags = SL_OPTF_OUTPUT, .omit = SL_OMIT_DEF),
    SL_OPT_OUT_FORMAT(out_format, row_group_size),
    SL_OPT_FORCE(force),
    SL_OPT_WAIT(wait),
    SL_OPT_COMMON,
    SL_OPT_END_,
};

static void put_num(struct sl_buf *b, double v)
{
    if (isnan(v) || isinf(v))
        sl_buf_puts(b, "null");
    else
        sl_buf_printf(b, "%.6g", v);
}

/* Per-language writers of one shard (--split-by-language). */
#define MAX_LANGS 512
struct lang_out {
    char lang[16];
    struct sl_writer *w;
    char *rel; /* "lang=en/part-00003.jsonl.zst" */
    uint64_t docs;
};

static int cmp_lang_out(const void *a, const void *b)
{
    return strcmp(((const struct lang_out *)a)->lang, ((const struct lang_out *)b)->lang);
}

/* What filter_file needs across documents of one unit. */
struct filter_run {
    struct sl_filter_chain *ch;
    const struct opts *o;
    /* the unit being written */
    struct sl_stage_unit *u;
    struct sl_writer *rw;   /* --rejected */
    struct lang_out *langs; /* --split-by-language: the unit's language files */
    size_t nlangs;
    struct sl_stage_file *files; /* the same, for the unit's record (kept until the next) */
    struct sl_fctx ctx;
    struct sl_filter_result *res;
    struct sl_buf ann, lang;
    const struct sl_pq_write_opts *pq; /* --out-format parquet: every file as Parquet */
};

/* One of the unit's own files (a language's, the rejected documents'), in the shards' format. */
static int open_file(const struct filter_run *fr, struct sl_writer **w, const char *path)
{
    struct sl_writer_opts wo = { .codec = SL_CODEC_ZSTD, .level = (int)fr->o->level };
    return fr->pq ? sl_pq_writer_open(w, path, NULL, fr->pq) : sl_writer_open(w, path, &wo);
}

/* Count what the filters report whatever they decide: events and their own counts. */
static void count_results(struct filter_run *fr, const char *path, uint64_t line)
{
    struct sl_filter_chain *ch = fr->ch;
    char key[160];
    for (size_t i = 0; i < ch->n; i++) {
        if (fr->res[i].event) {
            snprintf(key, sizeof(key), "%s_%s", ch->f[i].name, fr->res[i].event);
            sl_counters_add(fr->u->c, key, 1);
            sl_warn_limited(key, 10, "%s:%llu: filter '%s' could not decide (counted as '%s')",
                            path, (unsigned long long)line, ch->f[i].name, key);
        }
    }
    for (size_t i = 0; i < ch->n; i++)
        for (size_t k = 0; k < fr->res[i].ncounts; k++) {
            snprintf(key, sizeof(key), "%s_%s", ch->f[i].name, fr->res[i].counts[k].name);
            sl_counters_add(fr->u->c, key, fr->res[i].counts[k].n);
        }
}

/* --annotate: every score into the document, and which filter would drop it. */
static int annotate(struct filter_run *fr, struct sl_doc *doc, long drop)
{
    struct sl_filter_chain *ch = fr->ch;
    struct sl_buf *ann = &fr->ann;
    sl_buf_reset(ann);
    sl_buf_putc(ann, '{');
    for (size_t i = 0; i < ch->n; i++) {
        if (i)
            sl_buf_putc(ann, ',');
        sl_buf_json_str(ann, ch->f[i].name, strlen(ch->f[i].name));
        sl_buf_putc(ann, ':');
        put_num(ann, fr->res[i].score);
    }
    sl_buf_putc(ann, '}');
    int rc = sl_doc_set_raw(doc, "filter_scores", ann->data, ann->len);
    for (size_t i = 0; i < ch->n && !rc; i++)
        if (fr->res[i].spans_json) {
            char key[160];
            snprintf(key, sizeof(key), "%s_spans", ch->f[i].name);
            rc = sl_doc_set_raw(doc, key, fr->res[i].spans_json, fr->res[i].spans_len);
        }
    sl_buf_reset(ann);
    if (drop >= 0) {
        sl_buf_json_str(ann, ch->f[drop].name, strlen(ch->f[drop].name));
        if (!rc)
            rc = sl_doc_set_raw(doc, "filter_drop", ann->data, ann->len);
        sl_buf_reset(ann);
        sl_buf_json_str(ann, fr->res[drop].reason, strlen(fr->res[drop].reason));
        if (!rc)
            rc = sl_doc_set_raw(doc, "filter_reason", ann->data, ann->len);
    }
    return rc;
}

/* A dropped document: counted under its filter, written to --rejected with the reason. */
static int reject(struct filter_run *fr, struct sl_stage_doc *sd, struct sl_doc *doc, long drop)
{
    struct sl_filter *f = &fr->ch->f[drop];
    const struct sl_filter_result *res = &fr->res[drop];
    char key[160];
    snprintf(key, sizeof(key), "removed_%s", f->name);
    sl_stage_doc_drop(sd, key);
    snprintf(key, sizeof(key), "removed_bytes_%s", f->name);
    sl_counters_add(sd->u->c, key, sd->bytes);
    if (!fr->rw || fr->o->annotate)
        return 0;
    sl_doc_set_str(doc, "filter", f->name, strlen(f->name));
    sl_doc_set_str(doc, "filter_reason", res->reason, strlen(res->reason));
    sl_buf_reset(&fr->ann);
    put_num(&fr->ann, res->score);
    sl_doc_set_raw(doc, "filter_score", fr->ann.data, fr->ann.len);
    return sl_doc_write(doc, fr->rw);
}

/* --split-by-language: the writer of OUT/lang=CODE/<shard>, opened on first use. */
static int lang_writer(struct filter_run *fr, const char *path, struct sl_writer **dst)
{
    const char *code = fr->ctx.lang[0] ? fr->ctx.lang : "un";
    const char *name = fr->u->name;
    size_t k = 0;
    while (k < fr->nlangs && strcmp(fr->langs[k].lang, code))
        k++;
    if (k == fr->nlangs && fr->nlangs == MAX_LANGS)
        return sl_err_set(SL_ERR_TOOBIG, "--split-by-language: '%s' has more than %d languages",
                          path, MAX_LANGS);
    if (k == fr->nlangs) {
        struct lang_out *l = &fr->langs[k];
        snprintf(l->lang, sizeof(l->lang), "%s", code);
        char *dir = sl_xasprintf("%s/lang=%s", fr->o->out, code);
        int rc = 0;
        if (mkdir(dir, 0777) != 0 && errno != EEXIST)
            rc = sl_err_set(SL_ERR_IO, "cannot create directory '%s': %s", dir, strerror(errno));
        char *lp = sl_xasprintf("%s/%s", dir, name);
        if (!rc)
            rc = open_file(fr, &l->w, lp);
        free(lp);
        free(dir);
        if (rc)
            return rc;
        l->rel = sl_xasprintf("lang=%s/%s", code, name);
        fr->nlangs++;
    }
    fr->langs[k].docs++;
    char key[64];
    snprintf(key, sizeof(key), "documents_lang_%s", code);
    sl_counters_add(fr->u->c, key, 1);
    *dst = fr->langs[k].w;
    return 0;
}

/* One document through the chain, to the kept, rejected or language output. */
static int filter_doc(void *arg, struct sl_stage_doc *sd, struct sl_doc *doc)
{
    struct filter_run *fr = arg;
    struct sl_counters *c = sd->u->c;
    const char *path = sd->in->path;
    uint64_t line = sl_jsonl_line_no(sd->r);
    unsigned v0;
    long drop =
        sl_filter_chain_run_doc(fr->ch, &fr->ctx, doc, &fr->lang, fr->o->annotate, fr->res, &v0);
    if (drop < -1)
        return sl_err_wrap(SL_ERR_STATE, "%s:%llu: ", path, (unsigned long long)line);
    count_results(fr, path, line);
    int keep = drop < 0 || fr->o->annotate, rc = 0;
    if (fr->ctx.version != v0 && keep) {
        rc = sl_doc_set_text(doc, fr->ctx.text, fr->ctx.len);
        sl_counters_add(c, "edited_documents", 1);
    }
    if (fr->o->annotate && !rc)
        rc = annotate(fr, doc, drop);
    if (drop >= 0 && !rc)
        rc = reject(fr, sd, doc, drop);
    if (rc || !keep)
        return rc ? rc : SL_DOC_DROP;
    if (fr->o->split_lang)
        rc = lang_writer(fr, path, &sd->w);
    return rc ? rc : SL_DOC_KEEP;
}

/* Close the language files (commit, or abort after an error) and list them, in language
 * order, for the unit's record. */
static int finish_langs(struct filter_run *fr, int rc)
{
    struct sl_stage_unit *u = fr->u;
    if (fr->o->split_lang && !rc) {
        sl_counters_add(u->c, "bytes_out", 0);
        sl_counters_add(u->c, "uncompressed_bytes_out", 0);
    }
    for (size_t k = 0; k < fr->nlangs; k++) {
        char *lp = sl_xasprintf("%s/%s", fr->o->out, fr->langs[k].rel);
        if (!rc)
            rc = sl_stage_commit_file(&fr->langs[k].w, lp, u->c);
        sl_writer_abort(fr->langs[k].w);
        fr->langs[k].w = NULL;
        free(lp);
    }
    if (rc || !fr->o->split_lang)
        return rc;
    qsort(fr->langs, fr->nlangs, sizeof(*fr->langs), cmp_lang_out);
    fr->files = sl_xcalloc(fr->nlangs ? fr->nlangs : 1, sizeof(*fr->files));
    for (size_t k = 0; k < fr->nlangs; k++) {
        fr->files[k].path = fr->langs[k].rel;
        fr->files[k].documents = fr->langs[k].docs;
    }
    u->files = fr->files;
    u->nfiles = fr->nlangs;
    return 0;
}

/* The previous unit's language files (its record is written). */
static void release_langs(struct filter_run *fr)
{
    for (size_t k = 0; k < fr->nlangs; k++)
        free(fr->langs[k].rel);
    fr->nlangs = 0;
    free(fr->files);
    fr->files = NULL;
}

/* A unit's start: its counts of removals at zero, its --rejected file open. */
static int filter_begin(void *arg, struct sl_stage_unit *u)
{
    struct filter_run *fr = arg;
    release_langs(fr);
    fr->u = u;
    for (size_t i = 0; i < fr->ch->n; i++) {
        char key[160];
        snprintf(key, sizeof(key), "removed_%s", fr->ch->f[i].name);
        sl_counters_add(u->c, key, 0);
        snprintf(key, sizeof(key), "removed_bytes_%s", fr->ch->f[i].name);
        sl_counters_add(u->c, key, 0);
    }
    if (!fr->o->rejected)
        return 0;
    char *rpath = sl_xasprintf("%s/%s", fr->o->rejected, u->name);
    int rc = open_file(fr, &fr->rw, rpath);
    free(rpath);
    return rc;
}

/* A unit's end: its rejected and language files committed (or dropped after an error). */
static int filter_end(void *arg, struct sl_stage_unit *u, int rc)
{
    struct filter_run *fr = arg;
    (void)u;
    if (!rc && fr->rw)
        rc = sl_writer_commit(fr->rw);
    else
        sl_writer_abort(fr->rw);
    fr->rw = NULL;
    return finish_langs(fr, rc);
}

static void list_kinds(void)
{
    for (const struct sl_filter_kind *k = sl_filter_kinds; k->name; k++)
        printf("  %-28s %s\n", k->name, k->summary);
}

static int check(void *opts, const struct sl_strlist *operands)
{
    const struct opts *o = opts;
    if (o->list)
        return 0;
    if (operands->n == 0)
        return sl_err_set(SL_ERR_USAGE, "no inputs given");
    if (o->split_lang && o->out && sl_remote_is_url(o->out))
        return sl_err_set(SL_ERR_USAGE,
                          "--split-by-language writes folders of shards, not yet "
                          "to an object store ('%s')\nhint: --out a directory",
                          o->out);
    if (o->rejected && o->annotate)
        return sl_err_set(
            SL_ERR_USAGE,
            "--rejected and --annotate cannot be used together (annotate keeps every document)");
    return 0;
}

static int run(const void *opts, const struct sl_strlist *operands, int argc, const char **argv)
{
    struct opts so = *(const struct opts *)opts, *o = &so; /* with the chain's settings */
    if (o->list) {
        printf("filter kinds (parameters and defaults: docs/filters.md):\n");
        list_kinds();
        return 0;
    }
    struct sl_world *w = sl_world_get();
    struct sl_filter_chain *ch = NULL;
    int rc = sl_filter_chain_load(&ch, o->config, o->set.v, o->set.n);
    if (rc)
        return rc;
    struct sl_inputs in;
    rc = sl_inputs_expand(&in, (const char *const *)operands->v, operands->n, sl_jsonl_exts);
    if (rc) {
        sl_filter_chain_free(ch);
        return rc;
    }
    struct sl_buf chain = SL_BUF_INIT, settings = SL_BUF_INIT;
    sl_filter_chain_settings(ch, &chain);
    o->chain = chain.data;
    sl_options_settings_json(cmd_filter_options, o, &settings);
    struct sl_pq_write_opts pq;
    struct filter_run fr = { .ch = ch, .o = o };
    fr.pq = sl_pq_out_opts(&pq, o->out_format, o->row_group_size, o->level, o->text_key);
    sl_fctx_init(&fr.ctx, &ch->env);
    fr.res = sl_xcalloc(ch->n ? ch->n : 1, sizeof(*fr.res));
    fr.langs = o->split_lang ? sl_xcalloc(MAX_LANGS, sizeof(*fr.langs)) : NULL;
    /* split by language: the kept documents go to OUT/lang=CODE/ only (no empty part file) */
    struct sl_stage_docs job = { .files = { .stage = { .stage = "filter",
                                                       .out_dir = o->out,
                                                       .argc = argc,
                                                       .argv = argv,
                                                       .inputs = &in,
                                                       .settings_json = settings.data,
                                                       .force = o->force,
                                                       .wait = o->wait },
                                            .level = (int)o->level,
                                            .parquet = fr.pq,
                                            .no_writer = o->split_lang },
                                 .jsonl = { .max_line = o->max_line,
                                            .text_key = o->text_key,
                                            .repair_utf8 = o->repair_utf8 },
                                 .begin = filter_begin,
                                 .doc = filter_doc,
                                 .end = filter_end,
                                 .ctx = &fr };
    int64_t bad = 0;
    if (o->rejected && w->rank == 0 && mkdir(o->rejected, 0777) && errno != EEXIST) {
        sl_error("cannot create directory '%s': %s", o->rejected, strerror(errno));
        bad = 1;
    }
    sl_world_allreduce_i64(w, &bad, 1, SL_MAX);
    struct sl_stage_result res;
    rc = bad ? 1 : sl_stage_run_docs(w, &job, &res); /* bad: reported above */
    sl_warn_limited_summary();
    if (!rc && w->rank == 0) {
        uint64_t din = sl_counters_get(&res.totals, "documents_in"),
                 dout = sl_counters_get(&res.totals, "documents_out");
        sl_info("filter: kept %llu of %llu documents (%.1f%%) in '%s'%s", (unsigned long long)dout,
                (unsigned long long)din, din ? 100.0 * (double)dout / (double)din : 0.0, o->out,
                res.resumed ? " (resumed)" : "");
    }
    if (!bad)
        sl_stage_result_release(&res);
    release_langs(&fr);
    free(fr.langs);
    free(fr.res);
    sl_fctx_release(&fr.ctx);
    sl_buf_release(&fr.ann);
    sl_buf_release(&fr.lang);
    sl_buf_release(&settings);
    sl_buf_release(&chain);
    sl_inputs_release(&in);
    sl_filter_chain_free(ch);
    return rc;
}

const struct sl_cmd cmd_filter =
    SL_CMD(cmd_filter_usage, cmd_filter_options, struct opts, check, run);
