/* sluice extract: raw corpora (WARC/WET, arXiv sources, Pile, C4/mC4, JSONL, and the
 * HTML and Wikipedia readers) -> uniform JSONL documents, one output shard per input
 * file so the output does not depend on the number of MPI ranks. */
#include "curate/commands.h"

#include "core/alloc.h"
#include "core/counters.h"
#include "core/doc.h"
#include "core/docid.h"
#include "core/err.h"
#include "core/inputs.h"
#include "core/log.h"
#include "core/options.h"
#include "core/parquet_write.h"
#include "core/progress.h"
#include "core/sniff.h"
#include "core/stage.h"
#include "core/stream.h"
#include "core/world.h"
#include "curate/extract/extract.h"
#include "curate/extract/html_file.h"
#include "curate/extract/page.h"

#include <errno.h>
#include <pthread.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char *const warc_exts[] = { ".warc", ".warc.gz", ".warc.zst", ".warc.bz2",
                                         ".arc",  ".arc.gz",  NULL };
static const char *const wet_exts[] = { ".wet", ".wet.gz", ".wet.zst", ".wet.bz2", NULL };
static const char *const html_exts[] = { ".html",   ".htm",      ".xhtml",    ".html.gz",
                                         ".htm.gz", ".html.zst", ".html.bz2", NULL };
static const char *const wiki_exts[] = { ".xml", ".xml.bz2", ".xml.gz", ".xml.zst", NULL };
static const char *const arxiv_exts[] = { ".tar", ".tar.gz", ".tgz", ".gz", NULL };

/* What a file looks like (core/sniff.h) when it is an input of the format: the --format a
 * mistaken input's message suggests. */
static const char *const warc_kinds[] = { "warc", "arc", NULL };
static const char *const wet_kinds[] = { "wet", NULL };
static const char *const html_kinds[] = { "html", NULL };
static const char *const wiki_kinds[] = { "wiki", NULL };
static const char *const arxiv_kinds[] = { "tar", NULL };
static const char *const jsonl_kinds[] = { "jsonl", NULL };
static const char *const no_kinds[] = { NULL };

/* The formats, one row each: X(name, pad, input extensions, reader, sniffed kinds, what it
 * reads). --format's choices, the list in the usage text (pad aligns what it reads), the
 * reader and the suggestion for a mistaken input all come from here. */
#define EXTRACT_FORMATS(X)                                                                         \
    X(warc, "   ", warc_exts, extract_warc_file, warc_kinds,                                       \
      "Common Crawl WARC 1.0/1.1 (and ARC): HTML responses -> main text")                          \
    X(wet, "    ", wet_exts, extract_warc_file, wet_kinds, "Common Crawl WET text records")        \
    X(html, "   ", html_exts, extract_html_adapter, html_kinds,                                    \
      "one HTML page per file (.html, .htm, optionally compressed) -> main text")                  \
    X(wiki, "   ", wiki_exts, extract_wiki_adapter, wiki_kinds,                                    \
      "MediaWiki XML exports (pages-articles*.xml.bz2, multistream too)")                          \
    X(arxiv, "  ", arxiv_exts, extract_arxiv_file, arxiv_kinds,                                    \
      "arXiv LaTeX sources (.tar of per-paper .gz/.tar.gz, or single papers)")                     \
    X(pile, "   ", sl_jsonl_exts, extract_jsonl_file, no_kinds,                                    \
      "the Pile's .jsonl.zst (meta.pile_set_name -> source)")                                      \
    X(c4, "     ", sl_jsonl_exts, extract_jsonl_file, no_kinds,                                    \
      "C4/mC4 .json.gz (lang from the file name)")                                                 \
    X(jsonl, "  ", sl_jsonl_exts, extract_jsonl_file, jsonl_kinds,                                 \
      "any JSONL (--text-key names the text member)")

#define FORMAT_USAGE_(name, pad, exts, fn, kinds, what)  "  " #name pad what,
#define FORMAT_CHOICE_(name, pad, exts, fn, kinds, what) "|" #name
#define FORMAT_ROW_(name, pad, exts, fn, kinds, what)    { #name, exts, fn, kinds },
/* "warc|wet|...|jsonl" */
#define EXTRACT_FORMAT_CHOICES (EXTRACT_FORMATS(FORMAT_CHOICE_) + 1)

struct format {
    const char *name;
    const char *const *exts;
    extract_file_fn fn;
    const char *const *kinds;
};

static const struct format formats[] = { EXTRACT_FORMATS(FORMAT_ROW_) };

const char *const cmd_extract_usage[] = {
    "sluice extract --format FORMAT --out DIR [options] IN...",
    "",
    "Turn raw corpora into JSONL documents (id, text, url, source, lang, metadata):",
    /* clang-format off: one line a format */
    EXTRACT_FORMATS(FORMAT_USAGE_)
    /* clang-format on */
    "Each input file becomes one part-NNNNN.jsonl.zst shard (in input order; html: each run",
    "of consecutive pages up to --shard-size of input), so the output is the same for any",
    "number of MPI ranks. Skipped records are counted by reason in the",
    "manifest; a damaged compressed file stops the run unless --skip-corrupt is given.",
    NULL,
};

struct opts {
    const char *out, *format, *text_key, *source;
    uint64_t max_record;
    long level;
    const char *out_format; /* --out-format */
    uint64_t row_group_size;
    int force, wait, skip_corrupt, keep_truncated, rm_inputs;
    struct sl_docid_opts ids; /* --id-prefix, --reassign-ids */
    uint64_t shard_size;      /* html: input bytes per output shard; 0 for other formats */
    int group;                /* inputs grouped into shards (html) */
    const char *html_engine;  /* the HTML text engine (in the settings) */
};

/* The options' table: the dispatcher's parser and -h, the settings of the plan (rows
 * marked SL_OPTF_OUTPUT) and the pipeline's extract keys. */
#define SL_OPT_STRUCT struct opts

const struct sl_option cmd_extract_options[] = {
    SL_OPT_CHOICE('f', "format", format, EXTRACT_FORMAT_CHOICES,
                  "input format (required)", .flags = SL_OPTF_OUTPUT, .required = 1),
    SL_OPT_STRING('o', "out", out, "DIR", "output directory (created)", .required = 1),
    SL_OPT_STRING(0, "text-key", text_key, "KEY", "jsonl: member that holds the text",
                  .def = "text", .flags = SL_OPTF_OUTPUT),
    SL_OPT_STRING(0, "source", source, "NAME",
                  "value of the source field (default: the format; pile: its set name)",
                  .flags = SL_OPTF_OUTPUT),
    SL_OPT_SIZE(0, "max-record", max_record, "SIZE",
                "largest record, decoded page, paper or line kept", .def = "64M",
                .flags = SL_OPTF_OUTPUT),
    SL_OPT_FLAG_(0, "keep-truncated", keep_truncated,
                 "warc: extract records the crawler truncated (WARC-Truncated)",
                 .flags = SL_OPTF_OUTPUT),
    SL_OPT_FLAG_(0, "skip-corrupt", skip_corrupt,
                 "keep the readable part of damaged compressed files and go on",
                 .flags = SL_OPTF_OUTPUT),
    SL_OPT_ZSTD_LEVEL(level, .flags = SL_OPTF_OUTPUT),
    SL_OPT_OUT_FORMAT(out_format, row_group_size),
    SL_SETTING(SL_OPT_STR, "html_engine", html_engine),
    SL_OPT_FLAG_(0, "rm-inputs", rm_inputs,
                 "delete each downloaded input once its shard is complete"),
    SL_OPT_SIZE(0, "shard-size", shard_size, "SIZE",
                "html: consecutive pages share a shard up to SIZE of input", .def = "64M",
                .flags = SL_OPTF_OUTPUT | SL_OPTF_NO_KEY, .omit = "0"),
    SL_OPT_DOCIDS(ids),
    SL_OPT_FORCE(force),
    SL_OPT_WAIT(wait),
    SL_OPT_COMMON,
    SL_OPT_END_,
};

/* The shard being written for one input file. */
struct shard {
    struct sl_writer *w;
    struct sl_counters *c;
    size_t s_out;
    uint64_t *docs; /* documents of the unit so far */
    const struct sl_docid_opts *ids;
    const char *name; /* the shard's file name */
    uint64_t base;    /* documents of the shard before this file's */
};

static int emit(void *ctx, struct sl_doc *doc)
{
    struct shard *s = ctx;
    int rc = sl_docid_apply(s->ids, doc, s->name, s->base + s->c->values[s->s_out]);
    if (!rc)
        rc = sl_doc_write(doc, s->w);
    if (rc)
        return rc;
    s->c->values[s->s_out]++;
    (*s->docs)++;
    return 0;
}

static void on_warn(void *ctx, const char *reason, const char *message)
{
    (void)ctx;
    sl_warn_limited(reason, 20, "%s", message);
}

/* html: the next page is read and decompressed by a second thread while this one is
 * extracted (two slots, used in turn). */
struct prefetch {
    pthread_t th;
    const struct sl_input *in;
    size_t max_input;
    struct sl_buf raw;
    int rc, running;
    char err[SL_ERR_MSG_MAX];
};

static void *prefetch_main(void *arg)
{
    struct prefetch *p = arg;
    struct sl_source *src;
    p->rc = sl_input_source(&src, p->in);
    if (p->rc)
        sl_buf_init(&p->raw, 0);
    else
        p->rc = html_read_source(src, p->max_input, &p->raw);
    if (p->rc)
        snprintf(p->err, sizeof(p->err), "%s", sl_err_msg());
    return NULL;
}

static void prefetch_start(struct prefetch *p, const struct sl_input *in, uint64_t max_input)
{
    p->in = in;
    p->max_input = (size_t)max_input;
    p->rc = 0;
    p->err[0] = '\0';
    p->running = pthread_create(&p->th, NULL, prefetch_main, p) == 0;
    if (!p->running)
        prefetch_main(p);
}

/* Wait for the slot; its read error becomes this thread's message. */
static void prefetch_wait(struct prefetch *p)
{
    if (p->running)
        pthread_join(p->th, NULL);
    p->running = 0;
    if (p->rc)
        sl_err_set(p->rc, "%s", p->err);
}

/* --rm-inputs only deletes what `sluice download` wrote: the file's directory holds a
 * download manifest that lists it. */
static int check_removable(const struct sl_input *in)
{
    char *dir = sl_xstrdup(in->path);
    char *slash = strrchr(dir, '/');
    const char *base = slash ? slash + 1 : in->path;
    if (slash)
        *slash = 0;
    char *mpath = sl_xasprintf("%s/manifest.json", slash ? dir : ".");
    struct json_object *m = json_object_from_file(mpath), *stage, *outs;
    int ok = 0;
    if (m && json_object_object_get_ex(m, "stage", &stage) &&
        !strcmp(json_object_get_string(stage), "download") &&
        json_object_object_get_ex(m, "outputs", &outs) &&
        json_object_is_type(outs, json_type_array)) {
        for (size_t i = 0; i < json_object_array_length(outs) && !ok; i++) {
            struct json_object *p, *o = json_object_array_get_idx(outs, i);
            if (json_object_object_get_ex(o, "path", &p) &&
                !strcmp(json_object_get_string(p), base))
                ok = 1;
        }
    }
    json_object_put(m);
    free(mpath);
    free(dir);
    if (!ok)
        return sl_err_set(SL_ERR_USAGE,
                          "--rm-inputs: refusing to delete '%s': it is not listed in a 'sluice "
                          "download' manifest beside it\n"
                          "hint: --rm-inputs only removes files that sluice download fetched",
                          in->path);
    return 0;
}

/* The --format a file of this kind wants, or NULL. */
static const char *format_for(const char *kind)
{
    for (size_t i = 0; i < sizeof(formats) / sizeof(formats[0]); i++)
        for (const char *const *k = formats[i].kinds; *k; k++)
            if (!strcmp(*k, kind))
                return formats[i].name;
    return NULL;
}

/* A file of some bytes from which not one record could be read is the wrong input, not an
 * empty one: an error with a hint naming what it looks like. */
static int check_yield(const struct sl_input *in, const char *format, const struct sl_counters *c)
{
    /* the reasons that say a record was malformed, not merely of a kind not wanted (a
     * warcinfo record, a redirect page, an empty text): documents_in counts every record */
    static const char *const malformed[] = {
        "skipped_invalid_json", "skipped_invalid_utf8",  "skipped_text_not_string",
        "skipped_missing_text", "skipped_line_too_long", "skipped_corrupt",
        "skipped_binary",       "skipped_bad_header",    "skipped_bad_archive",
        "skipped_not_latex",
    };
    uint64_t bad_in = 0;
    for (size_t i = 0; i < sizeof(malformed) / sizeof(malformed[0]); i++)
        bad_in += sl_counters_get(c, malformed[i]);
    uint64_t bad = bad_in + sl_counters_get(c, "bad_records");
    if (in->size == 0 || sl_counters_get(c, "documents_out") || !bad ||
        sl_counters_get(c, "documents_in") > bad_in)
        return 0;
    const char *kind = sl_sniff_format(in->path);
    const char *want = format_for(kind);
    const char *seen = sl_log_level() >= SL_LOG_WARN ? "see the warnings" : "-q hid why";
    if (want && strcmp(want, format) != 0)
        return sl_err_set(SL_ERR_FORMAT,
                          "'%s': no %s record could be read (%llu bad, %s)\n"
                          "hint: this looks like %s: use `sluice extract --format %s`",
                          in->path, format, (unsigned long long)bad, seen, sl_sniff_describe(kind), want);
    if (!strcmp(kind, "text") || !strcmp(kind, "json"))
        return sl_err_set(SL_ERR_FORMAT,
                          "'%s': no %s record could be read (%llu bad, %s)\n"
                          "hint: this looks like %s; documents are read as JSONL, one "
                          "{\"text\": ...} object per line (%s)",
                          in->path, format, (unsigned long long)bad, seen, sl_sniff_describe(kind),
                          !strcmp(kind, "json") ? "jq -c '.[]' FILE > FILE.jsonl"
                                                : "jq -Rc '{text: .}' FILE > FILE.jsonl");
    return sl_err_set(SL_ERR_FORMAT,
                      "'%s': no %s record could be read (%llu bad, %s)\nhint: "
                      "it looks like %s; is it the right file, and --format the right format?",
                      in->path, format, (unsigned long long)bad, seen, sl_sniff_describe(kind));
}

static int remove_input(const struct sl_input *in)
{
    if (unlink(in->path) != 0 && errno != ENOENT) {
        sl_warn("cannot remove input '%s': %s", in->path, strerror(errno));
        return 0;
    }
    return 1;
}

/* What the units of one run share. */
struct extract_run {
    const struct opts *o;
    const struct format *f;
    struct extract_opts eo;
    uint64_t removed; /* --rm-inputs */
};

static int is_damage(int rc)
{
    return rc == SL_ERR_CORRUPT || rc == SL_ERR_TOOBIG || rc == SL_ERR_UNSUPPORTED ||
           rc == SL_ERR_FORMAT;
}

/* One input file of a unit into the unit's shard; its counts merged into the unit's. */
static int extract_one(struct extract_run *x, struct sl_stage_unit *u, size_t i,
                       struct prefetch *cur, uint64_t *docs)
{
    const struct sl_input *in = &u->inputs[i];
    /* each file counts on its own (for the checks), then into the shard's counts */
    struct sl_counters fc;
    sl_counters_init(&fc);
    sl_counters_add(&fc, "documents_in", 0);
    struct shard s = { .w = u->w,
                       .c = &fc,
                       .s_out = sl_counters_slot(&fc, "documents_out"),
                       .docs = docs,
                       .ids = &x->o->ids,
                       .name = u->name,
                       .base = sl_counters_get(u->c, "documents_out") };
    struct extract_input ei = { in->path, in->rel, NULL, 0, in };
    if (cur) {
        ei.raw = &cur->raw;
        ei.raw_rc = cur->rc;
    }
    int rc = x->f->fn(&ei, &x->eo, emit, &s, &fc);
    if (cur)
        sl_buf_release(&cur->raw);
    if (rc && x->o->skip_corrupt && is_damage(rc)) {
        sl_warn("%s (keeping the %llu documents before it)", sl_err_msg(),
                (unsigned long long)fc.values[s.s_out]);
        sl_counters_add(&fc, "corrupt_files", 1);
        rc = 0;
    }
    if (!rc)
        rc = check_yield(in, x->f->name, &fc);
    sl_counters_merge(u->c, &fc);
    sl_counters_release(&fc);
    return rc;
}

/* One unit: its input files (html: pages read ahead by a second thread) into its shard. */
static int extract_unit(void *ctx, struct sl_stage_unit *u)
{
    struct extract_run *x = ctx;
    const struct opts *o = x->o;
    struct prefetch pf[2];
    memset(pf, 0, sizeof(pf));
    uint64_t docs = 0, bytes = 0;
    int rc = 0;
    if (o->group)
        prefetch_start(&pf[0], &u->inputs[0], o->max_record);
    for (size_t i = 0; !rc && i < u->ninputs; i++) {
        struct prefetch *cur = NULL;
        if (o->group) {
            cur = &pf[i % 2];
            prefetch_wait(cur);
            if (i + 1 < u->ninputs)
                prefetch_start(&pf[(i + 1) % 2], &u->inputs[i + 1], o->max_record);
        }
        rc = extract_one(x, u, i, cur, &docs);
        bytes += u->inputs[i].size;
        if (u->ninputs > 1)
            sl_stage_unit_progress(u, bytes, docs);
    }
    for (int k = 0; k < 2; k++) {
        /* a read still running when a page failed */
        if (pf[k].running) {
            pthread_join(pf[k].th, NULL);
            pf[k].running = 0;
        }
        sl_buf_release(&pf[k].raw);
    }
    /* --skip-corrupt helps with damaged input only */
    if (rc && is_damage(rc) && !o->skip_corrupt && !strstr(sl_err_msg(), "hint:")) {
        char msg[SL_ERR_MSG_MAX];
        snprintf(msg, sizeof(msg), "%s", sl_err_msg());
        rc = sl_err_set(rc, "%s\nhint: use --skip-corrupt to keep what can be read and go on", msg);
    }
    return rc;
}

/* A unit complete (now or in an earlier run): --rm-inputs removes its inputs. */
static void extract_done(void *ctx, const struct sl_stage_unit *u)
{
    struct extract_run *x = ctx;
    for (size_t i = 0; x->o->rm_inputs && i < u->ninputs; i++)
        x->removed += (uint64_t)remove_input(&u->inputs[i]);
}

/* Units of work: one input file each, or (html) consecutive files grouped up to
 * --shard-size; each unit is one output shard, so the output does not depend on the
 * number of ranks. first[] gets nunits + 1 entries. */
static size_t group_units(const struct opts *o, const struct sl_inputs *in, size_t *first)
{
    size_t nu = 0;
    for (size_t i = 0, acc = 0; i < in->n; i++) {
        if (!o->group || i == 0 || acc >= o->shard_size) {
            first[nu++] = i;
            acc = 0;
        }
        acc += in->v[i].size;
    }
    first[nu] = in->n;
    return nu;
}

static void report(const struct opts *o, const struct format *f, const struct sl_inputs *in,
                   const struct sl_stage_result *res, uint64_t removed)
{
    const struct sl_counters *t = &res->totals;
    char a[32];
    uint64_t skipped = 0;
    for (size_t i = 0; i < t->n; i++)
        if (!strncmp(t->names[i], "skipped_", 8))
            skipped += t->values[i];
    sl_info("extract %s: %llu documents from %llu records in %zu files (%llu skipped, by "
            "reason in '%s/manifest.json'); %s written%s",
            f->name, (unsigned long long)sl_counters_get(t, "documents_out"),
            (unsigned long long)sl_counters_get(t, "documents_in"), in->n,
            (unsigned long long)skipped, o->out,
            sl_human_bytes((double)sl_counters_get(t, "bytes_out"), a, sizeof(a)),
            res->resumed ? " (resumed)" : "");
    if (removed)
        sl_info("removed %llu input files (--rm-inputs)", (unsigned long long)removed);
    if (sl_counters_get(t, "corrupt_files"))
        sl_warn("%llu damaged files were read only in part (--skip-corrupt)",
                (unsigned long long)sl_counters_get(t, "corrupt_files"));
}

static int extract(const struct opts *o, const struct format *f, const struct sl_strlist *operands,
                   int argc, const char **argv)
{
    struct sl_world *w = sl_world_get();
    struct sl_inputs in;
    int rc = sl_inputs_expand(&in, (const char *const *)operands->v, operands->n, f->exts);
    if (rc)
        return rc;
    for (size_t i = 0; o->rm_inputs && i < in.n; i++)
        if ((rc = check_removable(&in.v[i])) != 0) {
            sl_error("%s", sl_err_msg());
            sl_inputs_release(&in);
            return 2;
        }
    struct sl_buf settings = SL_BUF_INIT;
    sl_options_settings_json(cmd_extract_options, o, &settings);
    struct extract_run x = { .o = o, .f = f };
    x.eo.format = f->name;
    x.eo.source = o->source;
    x.eo.text_key = o->text_key;
    x.eo.max_record = o->max_record;
    x.eo.keep_truncated = o->keep_truncated;
    x.eo.skip_corrupt = o->skip_corrupt;
    x.eo.on_warn = on_warn;
    struct sl_pq_write_opts pq;
    size_t *first = sl_xcalloc(in.n + 1, sizeof(size_t));
    char label[64];
    snprintf(label, sizeof(label), "extract %s", f->name);
    struct sl_stage_files job = { .stage = { .stage = "extract",
                                             .out_dir = o->out,
                                             .argc = argc,
                                             .argv = argv,
                                             .inputs = &in,
                                             .settings_json = settings.data,
                                             .force = o->force,
                                             .wait = o->wait },
                                  .label = label,
                                  .level = (int)o->level,
                                  .parquet = sl_pq_out_opts(&pq, o->out_format, o->row_group_size,
                                                            o->level, NULL),
                                  .first = first,
                                  .nunits = group_units(o, &in, first),
                                  .process = extract_unit,
                                  .done = extract_done,
                                  .ctx = &x };
    struct sl_stage_result res;
    rc = sl_stage_run_files(w, &job, &res);
    sl_warn_limited_summary();
    if (!rc)
        rc = sl_world_allreduce_u64(w, &x.removed, 1, SL_SUM);
    if (!rc && w->rank == 0)
        report(o, f, &in, &res, x.removed);
    sl_stage_result_release(&res);
    free(first);
    sl_buf_release(&settings);
    sl_inputs_release(&in);
    return rc;
}

/* The format's entry in formats[] (NULL: not in this build). */
static const struct format *format_of(const char *name)
{
    for (size_t i = 0; i < sizeof(formats) / sizeof(formats[0]); i++)
        if (!strcmp(formats[i].name, name))
            return &formats[i];
    return NULL;
}

static int check(void *opts, const struct sl_strlist *operands)
{
    struct opts *o = opts;
    const struct format *f = format_of(o->format);
    if (!f)
        return sl_err_set(SL_ERR_USAGE, "--format '%s' is not available in this build", o->format);
    if (operands->n == 0)
        return sl_err_set(SL_ERR_USAGE, "no inputs given");
    if (o->shard_size == 0)
        return sl_err_set(SL_ERR_USAGE, "--shard-size must be positive");
    o->group = !strcmp(f->name, "html");
    if (!o->group)
        o->shard_size = 0;
    o->html_engine = page_text_engine();
    if (o->max_record < 1024)
        return sl_err_set(SL_ERR_USAGE, "--max-record is too small (at least 1K)");
    return 0;
}

static int run(const void *opts, const struct sl_strlist *operands, int argc, const char **argv)
{
    const struct opts *o = opts;
    return extract(o, format_of(o->format), operands, argc, argv);
}

const struct sl_cmd cmd_extract =
    SL_CMD(cmd_extract_usage, cmd_extract_options, struct opts, check, run);
