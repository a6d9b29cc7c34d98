/* sluice filter: JSONL documents through a chain of filters from a YAML config; kept
 * documents to --out, rejected ones (with the filter name, reason and score) to
 * --rejected, or every score written into the document with --annotate. One output shard
 * per input file, so the outputs are the same for any number of MPI ranks. */
#include "curate/commands.h"

#include "core/alloc.h"
#include "core/config.h"
#include "core/err.h"
#include "core/jsonl.h"
#include "core/log.h"
#include "core/options.h"
#include "core/progress.h"
#include "core/stage.h"
#include "core/stream.h"
#include "core/world.h"
#include "curate/filter/chain.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static const char *const usage[] = {
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
    int annotate, split_lang, list, force, repair_utf8;
    long level;
    uint64_t max_line;
};

static void on_skip(void *ctx, const char *reason, const char *message)
{
    struct sl_counters *c = ctx;
    char key[64];
    if (!strcmp(reason, "blank_line"))
        snprintf(key, sizeof(key), "blank_lines");
    else if (!strcmp(reason, "repaired_utf8"))
        snprintf(key, sizeof(key), "repaired_utf8_lines");
    else
        snprintf(key, sizeof(key), "skipped_%s", reason);
    sl_counters_add(c, key, 1);
    if (!strncmp(key, "skipped_", 8))
        sl_counters_add(c, "documents_in", 1); /* a line read: in = out + removed + skipped */
    if (message)
        sl_warn_limited(reason, 20, "%s", message);
}

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

static int file_size(const char *path, uint64_t *size)
{
    struct stat sb;
    *size = stat(path, &sb) == 0 ? (uint64_t)sb.st_size : 0;
    return 0;
}

static int filter_file(struct sl_filter_chain *ch, const struct opts *o, const struct sl_input *in,
                       struct sl_stage *st, size_t index, struct sl_progress *prog, uint64_t *done_bytes)
{
    char *name = sl_stage_shard_name(index, ".jsonl.zst");
    char *path = sl_stage_shard_path(st, index, ".jsonl.zst");
    char *rpath = o->rejected ? sl_xasprintf("%s/%s", o->rejected, name) : NULL;
    struct sl_counters c;
    sl_counters_init(&c);
    sl_counters_add(&c, "documents_in", 0);
    sl_counters_add(&c, "documents_out", 0);
    for (size_t i = 0; i < ch->n; i++) {
        char key[160];
        snprintf(key, sizeof(key), "removed_%s", ch->f[i].name);
        sl_counters_add(&c, key, 0);
        snprintf(key, sizeof(key), "removed_bytes_%s", ch->f[i].name);
        sl_counters_add(&c, key, 0);
    }
    struct sl_writer *w = NULL, *rw = NULL;
    struct sl_writer_opts wo = { SL_CODEC_ZSTD, (int)o->level };
    struct lang_out *langs = o->split_lang ? sl_xcalloc(MAX_LANGS, sizeof(*langs)) : NULL;
    size_t nlangs = 0;
    struct sl_jsonl_reader *r = NULL;
    struct sl_doc doc;
    sl_doc_init(&doc);
    struct sl_fctx ctx;
    sl_fctx_init(&ctx, &ch->env);
    struct sl_filter_result *res = sl_xcalloc(ch->n, sizeof(*res));
    struct sl_buf ann = SL_BUF_INIT, lang = SL_BUF_INIT;
    char *stem = sl_jsonl_id_stem(in->rel);
    struct sl_jsonl_opts jo;
    memset(&jo, 0, sizeof(jo));
    jo.max_line = o->max_line;
    jo.text_key = o->text_key;
    jo.repair_utf8 = o->repair_utf8;
    jo.id_prefix = stem;
    jo.on_skip = on_skip;
    jo.ctx = &c;
    /* split by language: the kept documents go to OUT/lang=CODE/ only (no empty part file) */
    int rc = o->split_lang ? 0 : sl_writer_open(&w, path, &wo);
    if (!rc && rpath)
        rc = sl_writer_open(&rw, rpath, &wo);
    if (!rc)
        rc = sl_jsonl_open(&r, in->path, &jo);
    uint64_t docs = 0;
    while (!rc) {
        int got = sl_jsonl_next(r, &doc);
        if (got < 0)
            rc = got;
        if (got <= 0)
            break;
        size_t tlen;
        const char *text = sl_doc_text(&doc, &tlen);
        sl_buf_reset(&lang);
        const char *lg = NULL;
        if (!sl_doc_get_str(&doc, ch->env.lang_key, &lang) && lang.len && lang.len < 16)
            lg = lang.data;
        sl_fctx_begin(&ctx, &doc, text, tlen, lg);
        unsigned v0 = ctx.version;
        sl_counters_add(&c, "documents_in", 1);
        uint64_t in_bytes = doc.raw.len + 1;
        sl_counters_add(&c, "bytes_in", in_bytes);
        long drop = sl_filter_chain_run(ch, &ctx, o->annotate, res);
        if (drop < -1) {
            rc = sl_err_wrap(SL_ERR_STATE, "%s:%llu: ", in->path, (unsigned long long)sl_jsonl_line_no(r));
            break;
        }
        for (size_t i = 0; i < ch->n; i++)
            if (res[i].event) {
                char key[160];
                snprintf(key, sizeof(key), "%s_%s", ch->f[i].name, res[i].event);
                sl_counters_add(&c, key, 1);
                sl_warn_limited(key, 10, "%s:%llu: filter '%s' could not decide (counted as '%s')",
                                in->path, (unsigned long long)sl_jsonl_line_no(r), ch->f[i].name,
                                key);
            }
        for (size_t i = 0; i < ch->n; i++)
            for (size_t k = 0; k < res[i].ncounts; k++) {
                char key[160];
                snprintf(key, sizeof(key), "%s_%s", ch->f[i].name, res[i].counts[k].name);
                sl_counters_add(&c, key, res[i].counts[k].n);
            }
        if (ctx.version != v0 && (drop < 0 || o->annotate)) {
            rc = sl_doc_set_text(&doc, ctx.text, ctx.len);
            sl_counters_add(&c, "edited_documents", 1);
        }
        if (o->annotate) {
            sl_buf_reset(&ann);
            sl_buf_putc(&ann, '{');
            for (size_t i = 0; i < ch->n; i++) {
                if (i)
                    sl_buf_putc(&ann, ',');
                sl_buf_json_str(&ann, ch->f[i].name, strlen(ch->f[i].name));
                sl_buf_putc(&ann, ':');
                put_num(&ann, res[i].score);
            }
            sl_buf_putc(&ann, '}');
            if (!rc) rc = sl_doc_set_raw(&doc, "filter_scores", ann.data, ann.len);
            for (size_t i = 0; i < ch->n && !rc; i++)
                if (res[i].spans_json) {
                    char key[160];
                    snprintf(key, sizeof(key), "%s_spans", ch->f[i].name);
                    rc = sl_doc_set_raw(&doc, key, res[i].spans_json, res[i].spans_len);
                }
            sl_buf_reset(&ann);
            if (drop >= 0) {
                sl_buf_json_str(&ann, ch->f[drop].name, strlen(ch->f[drop].name));
                if (!rc) rc = sl_doc_set_raw(&doc, "filter_drop", ann.data, ann.len);
                sl_buf_reset(&ann);
                sl_buf_json_str(&ann, res[drop].reason, strlen(res[drop].reason));
                if (!rc) rc = sl_doc_set_raw(&doc, "filter_reason", ann.data, ann.len);
            }
        }
        if (drop >= 0) {
            char key[160];
            snprintf(key, sizeof(key), "removed_%s", ch->f[drop].name);
            sl_counters_add(&c, key, 1);
            snprintf(key, sizeof(key), "removed_bytes_%s", ch->f[drop].name);
            sl_counters_add(&c, key, in_bytes);
            if (rw && !o->annotate && !rc) {
                sl_doc_set_str(&doc, "filter", ch->f[drop].name, strlen(ch->f[drop].name));
                sl_doc_set_str(&doc, "filter_reason", res[drop].reason, strlen(res[drop].reason));
                sl_buf_reset(&ann);
                put_num(&ann, res[drop].score);
                sl_doc_set_raw(&doc, "filter_score", ann.data, ann.len);
                rc = sl_doc_write(&doc, rw);
            }
        }
        if (!rc && (drop < 0 || o->annotate)) {
            struct sl_writer *dst = w;
            if (o->split_lang) {
                const char *code = ctx.lang[0] ? ctx.lang : "un";
                size_t k = 0;
                while (k < nlangs && strcmp(langs[k].lang, code))
                    k++;
                if (k == nlangs && nlangs == MAX_LANGS)
                    rc = sl_err_set(SL_ERR_TOOBIG,
                                    "--split-by-language: '%s' has more than %d languages",
                                    in->path, MAX_LANGS);
                if (!rc && k == nlangs) {
                    snprintf(langs[k].lang, sizeof(langs[k].lang), "%s", code);
                    char *dir = sl_xasprintf("%s/lang=%s", o->out, code);
                    if (mkdir(dir, 0777) != 0 && errno != EEXIST)
                        rc = sl_err_set(SL_ERR_IO, "cannot create directory '%s': %s", dir,
                                        strerror(errno));
                    char *lp = sl_xasprintf("%s/%s", dir, name);
                    if (!rc)
                        rc = sl_writer_open(&langs[k].w, lp, &wo);
                    free(lp);
                    free(dir);
                    if (!rc) {
                        langs[k].rel = sl_xasprintf("lang=%s/%s", code, name);
                        nlangs++;
                    }
                }
                if (!rc && k < nlangs) {
                    dst = langs[k].w;
                    langs[k].docs++;
                    char key[64];
                    snprintf(key, sizeof(key), "documents_lang_%s", code);
                    sl_counters_add(&c, key, 1);
                }
            }
            if (!rc)
                rc = sl_doc_write(&doc, dst);
            sl_counters_add(&c, "documents_out", 1);
        }
        if (++docs % 256 == 0)
            sl_progress_update(prog, *done_bytes + sl_jsonl_bytes_in(r), 0);
    }
    if (rc)
        rc = sl_err_wrap(rc, "%s", "");
    sl_jsonl_close(r);
    if (!rc && rw)
        rc = sl_writer_commit(rw);
    else
        sl_writer_abort(rw);
    uint64_t unc = w ? sl_writer_bytes_in(w) : 0;
    for (size_t k = 0; k < nlangs; k++)
        unc += langs[k].w ? sl_writer_bytes_in(langs[k].w) : 0;
    for (size_t k = 0; k < nlangs; k++) {
        if (!rc)
            rc = sl_writer_commit(langs[k].w);
        else
            sl_writer_abort(langs[k].w);
        langs[k].w = NULL;
    }
    if (!rc && w)
        rc = sl_writer_commit(w);
    else if (w)
        sl_writer_abort(w);
    if (!rc) {
        uint64_t sz = 0;
        if (o->split_lang) {
            /* the manifest lists the language files, in language order */
            qsort(langs, nlangs, sizeof(*langs), cmp_lang_out);
            struct sl_stage_file *files = sl_xcalloc(nlangs ? nlangs : 1, sizeof(*files));
            for (size_t k = 0; k < nlangs; k++) {
                char *lp = sl_xasprintf("%s/%s", o->out, langs[k].rel);
                uint64_t one;
                file_size(lp, &one);
                sz += one;
                free(lp);
                files[k].path = langs[k].rel;
                files[k].documents = langs[k].docs;
            }
            sl_counters_add(&c, "bytes_out", sz);
            sl_counters_add(&c, "uncompressed_bytes_out", unc);
            rc = sl_stage_record_files(st, name, &c, files, nlangs);
            free(files);
        } else {
            file_size(path, &sz);
            sl_counters_add(&c, "bytes_out", sz);
            sl_counters_add(&c, "uncompressed_bytes_out", unc);
            rc = sl_stage_record(st, name, &c);
        }
    }
    for (size_t k = 0; k < nlangs; k++)
        free(langs[k].rel);
    free(langs);
    *done_bytes += in->size;
    sl_progress_update(prog, *done_bytes, 0);
    free(res);
    sl_fctx_release(&ctx);
    sl_doc_release(&doc);
    sl_buf_release(&ann);
    sl_buf_release(&lang);
    sl_counters_release(&c);
    free(stem);
    free(name);
    free(path);
    free(rpath);
    return rc;
}

static void list_kinds(void)
{
    for (const struct sl_filter_kind *k = sl_filter_kinds; k->name; k++)
        printf("  %-28s %s\n", k->name, k->summary);
}

static int run(struct opts *o, struct sl_strlist *operands, int argc, const char **argv)
{
    struct sl_world *w = sl_world_get();
    struct sl_filter_chain *ch = NULL;
    int rc = sl_filter_chain_load(&ch, o->config, o->set.v, o->set.n);
    if (rc) {
        sl_error("%s", sl_err_msg());
        return 1;
    }
    struct sl_inputs in;
    rc = sl_inputs_expand(&in, (const char *const *)operands->v, operands->n, sl_jsonl_exts);
    if (rc) {
        sl_error("%s", sl_err_msg());
        sl_filter_chain_free(ch);
        return 1;
    }
    struct sl_buf settings = SL_BUF_INIT;
    sl_buf_puts(&settings, "{\"config\":");
    sl_filter_chain_settings(ch, &settings);
    sl_buf_printf(&settings, ",\"annotate\":%s,\"split_by_language\":%s,\"rejected\":%s,\"repair_utf8\":%s,\"text_key\":",
                  o->annotate ? "true" : "false", o->split_lang ? "true" : "false",
                  o->rejected ? "true" : "false", o->repair_utf8 ? "true" : "false");
    sl_buf_json_str(&settings, o->text_key, strlen(o->text_key));
    sl_buf_putc(&settings, '}');
    struct sl_stage st;
    struct sl_stage_cfg cfg = { .stage = "filter",
                                .out_dir = o->out,
                                .argc = argc,
                                .argv = argv,
                                .inputs = &in,
                                .settings_json = settings.data,
                                .force = o->force };
    rc = sl_stage_begin(&st, w, &cfg);
    if (!rc && o->rejected && w->rank == 0 && mkdir(o->rejected, 0777) && errno != EEXIST)
        rc = sl_err_set(SL_ERR_IO, "cannot create directory '%s': %s", o->rejected, strerror(errno));
    sl_world_barrier(w);
    if (rc) {
        sl_error("%s", sl_err_msg());
        sl_buf_release(&settings);
        sl_inputs_release(&in);
        sl_filter_chain_free(ch);
        return 1;
    }
    size_t nf = in.n ? in.n : 1;
    uint64_t *sizes = sl_xcalloc(nf, sizeof(uint64_t));
    int *owner = sl_xcalloc(nf, sizeof(int));
    uint64_t mine = 0;
    for (size_t i = 0; i < in.n; i++)
        sizes[i] = in.v[i].size;
    sl_assign_by_size(sizes, in.n, w->size, owner);
    for (size_t i = 0; i < in.n; i++)
        if (owner[i] == w->rank)
            mine += in.v[i].size;
    struct sl_progress prog;
    sl_progress_start(&prog, "filter", mine, 1, w->rank == 0);
    uint64_t done = 0;
    for (size_t i = 0; i < in.n && !rc; i++) {
        if (owner[i] != w->rank)
            continue;
        char *name = sl_stage_shard_name(i, ".jsonl.zst");
        int skip = sl_stage_done(&st, name);
        free(name);
        if (skip) {
            done += in.v[i].size;
            continue;
        }
        rc = filter_file(ch, o, &in.v[i], &st, i, &prog, &done);
        if (rc)
            sl_error("%s", sl_err_msg());
    }
    sl_progress_finish(&prog);
    sl_warn_limited_summary();
    if (rc) {
        sl_stage_release(&st);
        sl_buf_release(&settings);
        free(sizes);
        free(owner);
        sl_inputs_release(&in);
        sl_filter_chain_free(ch);
        return 1;
    }
    char **names = sl_xcalloc(nf, sizeof(char *));
    for (size_t i = 0; i < in.n; i++)
        names[i] = sl_stage_shard_name(i, ".jsonl.zst");
    struct sl_counters totals;
    sl_counters_init(&totals);
    rc = sl_stage_finish(&st, names, in.n, NULL, &totals);
    if (rc) {
        sl_error("%s", sl_err_msg());
    } else if (w->rank == 0) {
        uint64_t din = sl_counters_get(&totals, "documents_in"), dout = sl_counters_get(&totals, "documents_out");
        sl_info("filter: kept %llu of %llu documents (%.1f%%) in '%s'%s",
                (unsigned long long)dout, (unsigned long long)din, din ? 100.0 * (double)dout / (double)din : 0.0,
                o->out, st.resumed ? " (resumed)" : "");
    }
    sl_counters_release(&totals);
    for (size_t i = 0; i < in.n; i++)
        free(names[i]);
    free(names);
    sl_stage_release(&st);
    sl_buf_release(&settings);
    free(sizes);
    free(owner);
    sl_inputs_release(&in);
    sl_filter_chain_free(ch);
    return rc ? 1 : 0;
}

int cmd_filter(int argc, const char **argv)
{
    struct opts o;
    memset(&o, 0, sizeof(o));
    o.text_key = "text";
    o.level = 3;
    o.max_line = SL_JSONL_DEFAULT_MAX_LINE;
    struct sl_option options[] = {
        SL_OPT_STRING('c', "config", &o.config, "F.yaml", "filter chain (configs/filters/*.yaml)"),
        SL_OPT_STRING('o', "out", &o.out, "DIR", "output directory for kept documents (created)"),
        SL_OPT_STRING(0, "rejected", &o.rejected, "DIR",
                      "write rejected documents here, with filter, filter_reason, filter_score"),
        SL_OPT_FLAG_(0, "annotate", &o.annotate,
                     "keep every document; write filter_scores (and filter_drop, filter_reason)"),
        SL_OPT_FLAG_(0, "split-by-language", &o.split_lang,
                     "write kept documents to DIR/lang=CODE/ by their detected language"),
        SL_OPT_STRINGS(0, "set", &o.set, "KEY=VALUE", "override a config value: filters.gopher_quality.min_doc_words=40 (the filter by name), filters.2.gopher_quality.min_doc_words=40 (by position)"),
        SL_OPT_FLAG_(0, "list", &o.list, "list the filter kinds and exit"),
        SL_OPT_STRING(0, "text-key", &o.text_key, "KEY", "member that holds the text (default text)"),
        SL_OPT_SIZE(0, "max-line", &o.max_line, "SIZE", "longest line accepted (default 64M)"),
        SL_OPT_FLAG_(0, "repair-utf8", &o.repair_utf8,
                     "replace invalid UTF-8 with U+FFFD instead of skipping the line"),
        SL_OPT_ZSTD_LEVEL(&o.level),
        SL_OPT_FLAG_(0, "force", &o.force, "replace the outputs of a different earlier run"),
        SL_OPT_COMMON,
        SL_OPT_END_,
    };
    struct sl_strlist rest = { 0 };
    int rc = sl_parse_options(argc, argv, options, &rest);
    if (rc == SL_PARSE_HELP) {
        sl_usage_print(stdout, usage, options);
        sl_strlist_release(&rest);
        sl_strlist_release(&o.set);
        return 0;
    }
    if (!rc && o.list) {
        printf("filter kinds (parameters and defaults: docs/filters.md):\n");
        list_kinds();
        sl_strlist_release(&rest);
        sl_strlist_release(&o.set);
        return 0;
    }
    if (!rc && !o.config)
        rc = sl_err_set(SL_ERR_USAGE, "--config F.yaml is required");
    if (!rc && !o.out)
        rc = sl_err_set(SL_ERR_USAGE, "--out DIR is required");
    if (!rc && rest.n == 0)
        rc = sl_err_set(SL_ERR_USAGE, "no inputs given");
    if (!rc && o.rejected && o.annotate)
        rc = sl_err_set(SL_ERR_USAGE, "--rejected and --annotate cannot be used together (annotate keeps every document)");
    if (rc) {
        sl_error("%s", sl_err_msg());
        fprintf(stderr, "usage: %s\n", usage[0]);
        sl_strlist_release(&rest);
        sl_strlist_release(&o.set);
        return 2;
    }
    rc = run(&o, &rest, argc, argv);
    sl_strlist_release(&rest);
    sl_strlist_release(&o.set);
    return rc;
}
