/* sluice clean: ftfy-style repair of each document's text (curate/clean/cleaner.h), one
 * output shard per input file, every repair counted in the manifest. */
#include "curate/commands.h"

#include "core/alloc.h"
#include "core/err.h"
#include "core/jsonl.h"
#include "core/log.h"
#include "core/options.h"
#include "core/progress.h"
#include "core/stage.h"
#include "core/stream.h"
#include "core/world.h"
#include "curate/clean/cleaner.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static const char *const usage[] = {
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
    const char *out, *text_key;
    struct sl_clean_opts c;
    int force, keep_mojibake;
    long level;
};

static void on_skip(void *ctx, const char *reason, const char *message)
{
    struct sl_counters *c = ctx;
    char key[64];
    snprintf(key, sizeof(key), "%s", !strcmp(reason, "blank_line") ? "blank_lines"
                                     : !strcmp(reason, "repaired_utf8") ? "repaired_utf8_lines" : reason);
    if (strcmp(reason, "blank_line") && strcmp(reason, "repaired_utf8"))
        snprintf(key, sizeof(key), "skipped_%s", reason);
    sl_counters_add(c, key, 1);
    if (!strncmp(key, "skipped_", 8))
        sl_counters_add(c, "documents_in", 1); /* a line read: documents_in = out + skipped */
    if (message)
        sl_warn_limited(reason, 20, "%s", message);
}

static int clean_file(const struct opts *o, const struct sl_input *in, struct sl_stage *st, size_t index)
{
    char *name = sl_stage_shard_name(index, ".jsonl.zst");
    char *path = sl_stage_shard_path(st, index, ".jsonl.zst");
    struct sl_counters c;
    sl_counters_init(&c);
    sl_counters_add(&c, "documents_in", 0);
    sl_counters_add(&c, "documents_out", 0);
    struct sl_writer *w = NULL;
    struct sl_writer_opts wo = { SL_CODEC_ZSTD, (int)o->level };
    struct sl_jsonl_reader *r = NULL;
    struct sl_doc doc;
    sl_doc_init(&doc);
    struct sl_buf out = SL_BUF_INIT;
    char *stem = sl_jsonl_id_stem(in->rel);
    struct sl_jsonl_opts jo;
    memset(&jo, 0, sizeof(jo));
    jo.text_key = o->text_key;
    jo.repair_utf8 = 1;
    jo.id_prefix = stem;
    jo.on_skip = on_skip;
    jo.ctx = &c;
    struct sl_clean_counts k;
    memset(&k, 0, sizeof(k));
    int rc = sl_writer_open(&w, path, &wo);
    if (!rc)
        rc = sl_jsonl_open(&r, in->path, &jo);
    while (!rc) {
        int got = sl_jsonl_next(r, &doc);
        if (got < 0)
            rc = got;
        if (got <= 0)
            break;
        size_t n;
        const char *t = sl_doc_text(&doc, &n);
        sl_counters_add(&c, "documents_in", 1);
        sl_counters_add(&c, "bytes_in", doc.raw.len + 1);
        rc = sl_clean_text(&o->c, t, n, &out, &k);
        if (!rc && (out.len != n || memcmp(out.data ? out.data : "", t, n))) {
            rc = sl_doc_set_text(&doc, out.data ? out.data : "", out.len);
            sl_counters_add(&c, "documents_changed", 1);
        }
        if (!rc)
            rc = sl_doc_write(&doc, w);
        sl_counters_add(&c, "documents_out", 1);
    }
    sl_jsonl_close(r);
    uint64_t unc = w ? sl_writer_bytes_in(w) : 0;
    if (!rc)
        rc = sl_writer_commit(w);
    else
        sl_writer_abort(w);
    if (!rc) {
        struct stat sb;
        sl_counters_add(&c, "bytes_out", stat(path, &sb) == 0 ? (uint64_t)sb.st_size : 0);
        sl_counters_add(&c, "uncompressed_bytes_out", unc);
        sl_counters_add(&c, "fixed_mojibake", k.mojibake);
        sl_counters_add(&c, "fixed_html_entities", k.html_entities);
        sl_counters_add(&c, "fixed_c1_controls", k.c1_controls);
        sl_counters_add(&c, "removed_control_chars", k.control_chars);
        sl_counters_add(&c, "removed_terminal_escapes", k.terminal_escapes);
        sl_counters_add(&c, "normalized_documents", k.normalized);
        sl_counters_add(&c, "fixed_line_breaks", k.crlf);
        sl_counters_add(&c, "removed_trailing_spaces", k.trailing_spaces);
        sl_counters_add(&c, "collapsed_newline_runs", k.newlines_collapsed);
        if (o->c.remove_urls)
            sl_counters_add(&c, "removed_urls", k.urls_removed);
        if (o->c.uncurl_quotes)
            sl_counters_add(&c, "uncurled_quotes", k.quotes_uncurled);
        rc = sl_stage_record(st, name, &c);
    }
    sl_doc_release(&doc);
    sl_buf_release(&out);
    sl_counters_release(&c);
    free(stem);
    free(name);
    free(path);
    return rc;
}

static int run(struct opts *o, struct sl_strlist *operands, int argc, const char **argv)
{
    struct sl_world *w = sl_world_get();
    struct sl_inputs in;
    int rc = sl_inputs_expand(&in, (const char *const *)operands->v, operands->n, sl_jsonl_exts);
    if (rc) {
        sl_error("%s", sl_err_msg());
        return 1;
    }
    struct sl_buf settings = SL_BUF_INIT;
    sl_buf_printf(&settings, "{\"nfkc\":%s,\"remove_urls\":%s,\"uncurl_quotes\":%s,\"mojibake\":%s,\"text_key\":",
                  o->c.nfkc ? "true" : "false", o->c.remove_urls ? "true" : "false",
                  o->c.uncurl_quotes ? "true" : "false", o->c.no_mojibake ? "false" : "true");
    sl_buf_json_str(&settings, o->text_key, strlen(o->text_key));
    sl_buf_putc(&settings, '}');
    struct sl_stage st;
    struct sl_stage_cfg cfg = { .stage = "clean",
                                .out_dir = o->out,
                                .argc = argc,
                                .argv = argv,
                                .inputs = &in,
                                .settings_json = settings.data,
                                .force = o->force };
    rc = sl_stage_begin(&st, w, &cfg);
    if (rc) {
        sl_error("%s", sl_err_msg());
        sl_buf_release(&settings);
        sl_inputs_release(&in);
        return 1;
    }
    size_t nf = in.n ? in.n : 1;
    uint64_t *sizes = sl_xcalloc(nf, sizeof(uint64_t));
    int *owner = sl_xcalloc(nf, sizeof(int));
    for (size_t i = 0; i < in.n; i++)
        sizes[i] = in.v[i].size;
    sl_assign_by_size(sizes, in.n, w->size, owner);
    struct sl_progress prog;
    sl_progress_start(&prog, "clean", sl_inputs_total_size(&in), 1, w->rank == 0);
    uint64_t done = 0;
    for (size_t i = 0; i < in.n && !rc; i++) {
        if (owner[i] != w->rank)
            continue;
        char *name = sl_stage_shard_name(i, ".jsonl.zst");
        int skip = sl_stage_done(&st, name);
        free(name);
        if (!skip)
            rc = clean_file(o, &in.v[i], &st, i);
        if (rc)
            sl_error("%s", sl_err_msg());
        done += in.v[i].size;
        sl_progress_update(&prog, done, 0);
    }
    sl_progress_finish(&prog);
    sl_warn_limited_summary();
    char **names = sl_xcalloc(nf, sizeof(char *));
    for (size_t i = 0; i < in.n; i++)
        names[i] = sl_stage_shard_name(i, ".jsonl.zst");
    struct sl_counters totals;
    sl_counters_init(&totals);
    if (!rc) {
        rc = sl_stage_finish(&st, names, in.n, NULL, &totals);
        if (rc)
            sl_error("%s", sl_err_msg());
        else if (w->rank == 0)
            sl_info("clean: %llu documents, %llu changed, in '%s'%s",
                    (unsigned long long)sl_counters_get(&totals, "documents_out"),
                    (unsigned long long)sl_counters_get(&totals, "documents_changed"), o->out,
                    st.resumed ? " (resumed)" : "");
    }
    sl_counters_release(&totals);
    for (size_t i = 0; i < in.n; i++)
        free(names[i]);
    free(names);
    free(sizes);
    free(owner);
    sl_stage_release(&st);
    sl_buf_release(&settings);
    sl_inputs_release(&in);
    return rc ? 1 : 0;
}

int cmd_clean(int argc, const char **argv)
{
    struct opts o;
    memset(&o, 0, sizeof(o));
    o.text_key = "text";
    o.level = 3;
    struct sl_option options[] = {
        SL_OPT_STRING('o', "out", &o.out, "DIR", "output directory (created)"),
        SL_OPT_FLAG_(0, "nfkc", &o.c.nfkc, "normalize to NFKC instead of NFC"),
        SL_OPT_FLAG_(0, "remove-urls", &o.c.remove_urls, "remove http(s):// and www. URLs"),
        SL_OPT_FLAG_(0, "uncurl-quotes", &o.c.uncurl_quotes, "turn curly quotes into ' and \""),
        SL_OPT_FLAG_(0, "no-mojibake", &o.c.no_mojibake, "leave mojibake as it is"),
        SL_OPT_FLAG_(0, "no-entities", &o.c.no_entities, "leave HTML entities as they are"),
        SL_OPT_STRING(0, "text-key", &o.text_key, "KEY", "member that holds the text (default text)"),
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
        return 0;
    }
    if (!rc && !o.out)
        rc = sl_err_set(SL_ERR_USAGE, "--out DIR is required");
    if (!rc && rest.n == 0)
        rc = sl_err_set(SL_ERR_USAGE, "no inputs given");
    if (rc) {
        sl_error("%s", sl_err_msg());
        fprintf(stderr, "usage: %s\n", usage[0]);
        sl_strlist_release(&rest);
        return 2;
    }
    rc = run(&o, &rest, argc, argv);
    sl_strlist_release(&rest);
    return rc;
}
