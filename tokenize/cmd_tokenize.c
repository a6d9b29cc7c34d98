/* sluice tokenize: JSONL documents -> Megatron PREFIX_<key>_document.bin/.idx (with
 * --split-sentences, PREFIX_<key>_sentence.bin/.idx: one sequence per sentence, split by the
 * worker threads, a Punkt splitter each, tokenize/punkt.h).
 *
 * Each input file is one unit of work: ranks take files (balanced by size), and inside a
 * rank the reading thread decompresses the input and hands its lines to the threaded
 * encoder (tokenize/encoder.h: the thread model), which writes one part shard per file and
 * key, in line order. Rank 0 then concatenates the parts in input order. The output
 * therefore depends only on the inputs and the settings: the same bytes for any number of
 * ranks and threads.
 *
 * Resume: the parts folder DIR/.PREFIX.sluice-parts/ is a stage directory run by
 * sl_stage_run_files() (core/stage.h): its plan (settings and inputs) and, per finished
 * input file, a record of its counts and part files. A run with the same plan keeps the
 * finished files' parts and counts and tokenizes the rest; another plan starts afresh.
 * The folder is removed once the output is written.
 */
#include "tokenize/commands.h"

#include "core/alloc.h"
#include "core/atomic.h"
#include "core/buf.h"
#include "core/counters.h"
#include "core/datadir.h"
#include "core/dirlock.h"
#include "core/err.h"
#include "core/inputs.h"
#include "core/jsonl.h"
#include "core/log.h"
#include "core/manifest.h"
#include "core/options.h"
#include "core/progress.h"
#include "core/sniff.h"
#include "core/stage.h"
#include "core/world.h"
#include "dataset/idx.h"
#include "tokenize/encoder.h"
#include "tokenize/punkt_params.h"
#include "tokenize/tokenizer.h"

#include <dirent.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

const char *const cmd_tokenize_usage[] = {
    "sluice tokenize --tokenizer SPEC --out PREFIX [options] IN...",
    "",
    "Tokenize JSONL documents (.jsonl, .jsonl.zst, .jsonl.gz, .json.gz) or Parquet rows",
    "(.parquet; files or directories)",
    "into Megatron-LM token shards PREFIX_<key>_document.bin/.idx, one pair per --json-key,",
    "documents in input order. A document whose key is missing or empty is an empty document",
    "(as Megatron's preprocess_data.py writes it); both are counted in PREFIX.manifest.json.",
    "The output is the same for any number of MPI ranks and --workers.",
    "",
    "--split-sentences splits each text into sentences with NLTK's Punkt, as Megatron's",
    "--split-sentences does (BERT data): one sequence per sentence, the document's sentences",
    "one document, in PREFIX_<key>_sentence.bin/.idx. The Punkt model is --punkt DIR (a",
    "punkt_tab directory), else --lang's in NLTK_DATA/tokenizers/punkt_tab/, ~/nltk_data and",
    "the other places NLTK looks, else sluice's own (english).",
    NULL,
};

struct opts {
    const char *tokenizer, *out;
    struct sl_strlist keys;
    int append_eod;
    int split, keep_newlines; /* --split-sentences, --keep-newlines */
    const char *lang, *punkt;
    const char *punkt_model; /* a setting: the fingerprint of the Punkt parameters */
    long eod_id;
    long workers;
    uint64_t max_doc;
    int wait;
    /* for the settings: the tokenizer's kind and vocabulary size, the tokens' type */
    const char *kind, *dtype;
    uint64_t vocab_size;
};

/* The options' table: the dispatcher's parser and -h, the settings of the parts folder's
 * plan (rows marked SL_OPTF_OUTPUT) and the pipeline's tokenize keys. */
#define SL_OPT_STRUCT struct opts

const struct sl_option cmd_tokenize_options[] = {
    SL_OPT_STRING('t', "tokenizer", tokenizer, "SPEC", TOKENIZER_SPECS,
                  .flags = SL_OPTF_OUTPUT | SL_OPTF_PATH, .required = 1),
    SL_SETTING(SL_OPT_STR, "kind", kind),
    SL_SETTING(SL_OPT_U64, "vocab_size", vocab_size),
    SL_SETTING(SL_OPT_STR, "dtype", dtype),
    SL_OPT_STRING('o', "out", out, "PREFIX", "output prefix: PREFIX_<key>_document.bin/.idx",
                  .required = 1),
    SL_OPT_STRINGS(0, "json-key", keys, "KEY", "member to tokenize (repeatable; default text)",
                   .flags = SL_OPTF_OUTPUT, .setting = "keys"),
    SL_OPT_FLAG_(0, "append-eod", append_eod,
                 "end every non-empty document with the end-of-document token",
                 .flags = SL_OPTF_OUTPUT),
    /* -1 without --append-eod */
    SL_OPT_INTEGER(0, "eod-id", eod_id, "ID",
                   "the end-of-document id (default <|endoftext|>, <|end_of_text|>, the model's "
                   "</s>, BERT's [EOS])",
                   .def = "-1", .flags = SL_OPTF_OUTPUT | SL_OPTF_DEF_UNSAID),
    SL_OPT_INTEGER('j', "workers", workers, "N", "encoding threads per rank (default: the cores)"),
    SL_OPT_SIZE(0, "max-doc-size", max_doc, "SIZE",
                "longest JSONL line accepted; longer ones are reported and skipped", .def = "64M",
                .flags = SL_OPTF_OUTPUT),
    SL_OPT_FLAG_(0, "split-sentences", split,
                 "one sequence per sentence (NLTK Punkt): PREFIX_<key>_sentence.bin/.idx",
                 .flags = SL_OPTF_OUTPUT),
    SL_OPT_STRING(0, "lang", lang, "LANG",
                  "--split-sentences: the Punkt model's language (default english)",
                  .flags = SL_OPTF_OUTPUT),
    SL_OPT_STRING(0, "punkt", punkt, "DIR",
                  "--split-sentences: the Punkt model, a punkt_tab directory (instead of --lang's)",
                  .flags = SL_OPTF_OUTPUT | SL_OPTF_PATH),
    SL_SETTING(SL_OPT_STR, "punkt_model", punkt_model),
    SL_OPT_FLAG_(0, "keep-newlines", keep_newlines,
                 "--split-sentences: sentences keep the whitespace after them (Megatron's)",
                 .flags = SL_OPTF_OUTPUT),
    SL_OPT_WAIT(wait),
    SL_OPT_COMMON,
    SL_OPT_END_,
};

/* A unit's part shard for key k: "DIR/part-00007_k0" (.bin, .idx). */
static char *part_prefix(const char *unit_path, size_t key)
{
    return sl_xasprintf("%s_k%zu", unit_path, key);
}

/* What the units of one run share. */
struct tok_run {
    const struct opts *o;
    struct encoder *enc;
    enum idx_dtype dtype;
    struct sl_stage_file *files; /* the last unit's part files, for its record */
    char **names;
};

/* A file with bytes but not one JSON document is the wrong input: the error that says what
 * it looks like, else 0. */
static int not_jsonl(const struct sl_input *in, const struct sl_counters *c)
{
    uint64_t bad = 0;
    for (size_t i = 0; i < c->n; i++)
        if (!strncmp(c->names[i], "skipped_", 8))
            bad += c->values[i];
    if (!bad || sl_counters_get(c, "documents_in"))
        return 0;
    const char *kind = sl_sniff_format(in->path);
    int raw = !strcmp(kind, "warc") || !strcmp(kind, "wet") || !strcmp(kind, "html") ||
              !strcmp(kind, "wiki") || !strcmp(kind, "arc");
    return sl_err_set(SL_ERR_FORMAT,
                      "'%s': not one JSON document in %llu lines (%s)\nhint: "
                      "tokenize reads JSONL, one {\"text\": ...} object per line; this looks "
                      "like %s%s%s%s",
                      in->path, (unsigned long long)bad,
                      sl_log_level() >= SL_LOG_WARN ? "see the warnings" : "-q hid why",
                      sl_sniff_describe(kind),
                      raw ? ": turn it into documents with `sluice extract --format " : "",
                      raw ? (!strcmp(kind, "arc") ? "warc" : kind) : "",
                      raw                     ? "`"
                      : !strcmp(kind, "text") ? " (jq -Rc '{text: .}' FILE > FILE.jsonl)"
                                              : "");
}

/* Read one input file's lines into the encoder, which writes them to w. */
static int encode_file(struct tok_run *t, struct sl_stage_unit *su, struct idx_writer **w)
{
    const struct sl_input *in = &su->inputs[0];
    struct sl_jsonl_opts jo;
    memset(&jo, 0, sizeof(jo));
    jo.max_line = t->o->max_doc;
    jo.text_key = t->o->keys.v[0];
    jo.allow_missing_text = 1;
    jo.repair_utf8 = 1;
    jo.counters = su->c;
    jo.on_skip = sl_warn_skip;
    struct sl_jsonl_reader *r = NULL;
    int rc = sl_input_jsonl(&r, in, &jo);
    if (rc)
        return rc;
    encoder_begin(t->enc, r, w, su->c);
    uint64_t lines = 0;
    while (!rc) {
        const char *line;
        size_t len;
        struct sl_jsonl_line l;
        int got = sl_jsonl_next_line(r, &line, &len, &l);
        if (got < 0)
            rc = got;
        if (got <= 0)
            break;
        rc = encoder_add_line(t->enc, line, len, &l);
        if (rc)
            break;
        sl_stage_unit_progress(su, sl_jsonl_bytes_in(r), ++lines);
    }
    struct encoder_stats st;
    rc = encoder_end(t->enc, rc, &st);
    /* what bounds one rank on one file with many workers: the reading thread's bytes per
     * CPU second, less what it wrote while it would otherwise have waited */
    if (sl_log_level() >= SL_LOG_DEBUG) {
        double mb = (double)sl_jsonl_bytes(r) / 1e6, rest = st.cpu - st.writing;
        sl_debug("tokenize: '%s': the reading thread took %.3f CPU s for %.1f MB of JSONL, %.3f s "
                 "of them writing (%.0f MB/s without)",
                 in->path, st.cpu, mb, st.writing, mb / (rest > 1e-6 ? rest : 1e-6));
    }
    sl_jsonl_close(r);
    return rc;
}

/* Tokenize one input file into its part shards. */
static int run_unit(struct tok_run *t, struct sl_stage_unit *su)
{
    size_t nkeys = t->o->keys.n;
    struct idx_writer **w = sl_xcalloc(nkeys, sizeof(*w));
    int rc = 0;
    for (size_t k = 0; k < nkeys && !rc; k++) {
        char *pp = part_prefix(su->path, k);
        rc = idx_writer_open_part(&w[k], pp, t->dtype);
        free(pp);
    }
    if (!rc)
        rc = encode_file(t, su, w);
    if (!rc)
        rc = not_jsonl(&su->inputs[0], su->c);
    for (size_t k = 0; k < nkeys; k++) {
        if (!rc) {
            sl_counters_add(su->c, "documents_out", k ? 0 : idx_writer_documents(w[k]));
            rc = idx_writer_commit(w[k]);
        } else {
            idx_writer_abort(w[k]);
        }
    }
    free(w);
    return rc;
}

static long default_workers(const struct sl_world *w)
{
    cpu_set_t set;
    long n = 1;
    if (sched_getaffinity(0, sizeof(set), &set) == 0)
        n = CPU_COUNT(&set);
    const char *local = getenv("OMPI_COMM_WORLD_LOCAL_SIZE");
    long per = local ? atol(local) : (w->size > 1 ? w->size : 1);
    if (per > 1)
        n = n / per;
    return n < 1 ? 1 : n;
}

/* Remove the files of a folder, then the folder. */
static void rm_dir_files(const char *dir)
{
    DIR *d = opendir(dir);
    if (d) {
        struct dirent *e;
        while ((e = readdir(d)) != NULL) {
            if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
                continue;
            char *f = sl_xasprintf("%s/%s", dir, e->d_name);
            unlink(f);
            free(f);
        }
        closedir(d);
    }
    rmdir(dir);
}

/* Remove the parts folder and everything in it (parts, records, the plan, temporaries). */
static void rm_parts_dir(const char *tmpdir)
{
    char *meta = sl_xasprintf("%s/.sluice", tmpdir);
    rm_dir_files(meta);
    free(meta);
    rm_dir_files(tmpdir);
}

/* Input files a failed run finished (records in the parts folder, besides the plan). */
static int finished_units(const char *tmpdir)
{
    char *meta = sl_xasprintf("%s/.sluice", tmpdir);
    DIR *d = opendir(meta);
    int n = 0;
    for (struct dirent *e; d && (e = readdir(d)) != NULL;) {
        size_t l = strlen(e->d_name);
        n += l > 5 && !strcmp(e->d_name + l - 5, ".json") && strcmp(e->d_name, "plan.json");
    }
    if (d)
        closedir(d);
    free(meta);
    return n;
}

static void release_files(struct tok_run *t)
{
    for (size_t k = 0; t->names && k < 2 * t->o->keys.n; k++)
        free(t->names[k]);
    free(t->names);
    free(t->files);
    t->names = NULL;
    t->files = NULL;
}

/* One input file: its part shards (.bin and .idx per key) are the unit's files. */
static int tokenize_unit(void *ctx, struct sl_stage_unit *u)
{
    struct tok_run *t = ctx;
    release_files(t);
    int rc = run_unit(t, u);
    if (rc)
        return rc;
    size_t n = 2 * t->o->keys.n;
    t->files = sl_xcalloc(n, sizeof(*t->files));
    t->names = sl_xcalloc(n, sizeof(char *));
    for (size_t i = 0; i < n; i++) {
        t->names[i] = sl_xasprintf("%s_k%zu.%s", u->name, i / 2, i % 2 ? "idx" : "bin");
        t->files[i].path = t->names[i];
        t->files[i].documents = sl_counters_get(u->c, "documents_out");
    }
    u->files = t->files;
    u->nfiles = n;
    return 0;
}

/* The settings of PREFIX.manifest.json, under the names it has had since before the option
 * tables (docs/dev.md: tokenizer_kind, json_keys). */
static void manifest_settings(const struct opts *o, const struct tokenizer *tok,
                              enum idx_dtype dtype, struct sl_buf *b)
{
    sl_buf_puts(b, "{\"tokenizer\": ");
    char *spec = tokenizer_spec_absolute(tok->spec); /* read from other directories */
    sl_buf_json_str(b, spec, strlen(spec));
    free(spec);
    sl_buf_printf(b, ", \"tokenizer_kind\": \"%s\", \"vocab_size\": %u, \"dtype\": \"%s\", \"json_keys\": [",
                  tokenizer_kind_name(tok->kind), tok->vocab_size, idx_dtype_name(dtype));
    for (size_t k = 0; k < o->keys.n; k++) {
        if (k)
            sl_buf_puts(b, ", ");
        sl_buf_json_str(b, o->keys.v[k], strlen(o->keys.v[k]));
    }
    sl_buf_printf(b, "], \"append_eod\": %s, \"eod_id\": %ld, \"max_doc_size\": %llu",
                  o->append_eod ? "true" : "false", o->append_eod ? o->eod_id : -1L,
                  (unsigned long long)o->max_doc);
    if (o->split) {
        sl_buf_puts(b, ", \"split_sentences\": true, \"punkt\": ");
        sl_buf_json_str(b, o->punkt, strlen(o->punkt));
        sl_buf_printf(b, ", \"punkt_model\": \"%s\", \"keep_newlines\": %s", o->punkt_model,
                      o->keep_newlines ? "true" : "false");
    }
    sl_buf_putc(b, '}');
}

/* The .bin and .idx of output prefix `out` into the manifest, with the index's figures. */
static int manifest_outputs(struct sl_manifest *m, const char *out)
{
    struct idx_reader *r;
    int rc = idx_reader_open(&r, out);
    if (rc)
        return rc;
    const char *base = strrchr(out, '/');
    base = base ? base + 1 : out;
    for (int e = 0; e < 2; e++) {
        char *nm = sl_xasprintf("%s.%s", base, e ? "idx" : "bin");
        char *p = sl_xasprintf("%s.%s", out, e ? "idx" : "bin");
        struct stat sb;
        uint64_t size = stat(p, &sb) == 0 ? (uint64_t)sb.st_size : 0;
        struct sl_manifest_figure fig[] = { { "documents", idx_reader_documents(r) },
                                            { "sequences", idx_reader_sequences(r) },
                                            { "tokens", idx_reader_tokens(r) },
                                            { "bytes", size } };
        sl_manifest_output(m, nm, fig, 4);
        free(p);
        free(nm);
    }
    idx_reader_close(r);
    return 0;
}

static int write_manifest(const struct opts *o, const struct tokenizer *tok, enum idx_dtype dtype,
                          const struct sl_inputs *in, char **outs, const struct sl_counters *c,
                          int argc, const char **argv, double t0, const char *started, int ranks,
                          int resumed)
{
    /* the main counts first, then the others sorted by name */
    static const char *const main_counts[] = { "documents_in", "documents_out", "bytes_in",
                                               "tokens", NULL };
    struct sl_buf settings = SL_BUF_INIT;
    manifest_settings(o, tok, dtype, &settings);
    struct sl_manifest_head h = { .stage = "tokenize",
                                  .argc = argc,
                                  .argv = argv,
                                  .started = started,
                                  .wall_seconds = sl_now() - t0,
                                  .ranks = ranks,
                                  .resumed = resumed,
                                  .settings_json = settings.data,
                                  .inline_lists = 1 };
    struct sl_manifest m;
    sl_manifest_begin(&m, &h);
    sl_buf_release(&settings);
    sl_manifest_inputs(&m, in);
    int rc = 0;
    for (size_t k = 0; k < o->keys.n && !rc; k++)
        rc = manifest_outputs(&m, outs[k]);
    if (rc) {
        sl_manifest_release(&m);
        return rc;
    }
    sl_manifest_counts(&m, main_counts, c);
    char *path = sl_xasprintf("%s.manifest.json", o->out);
    rc = sl_manifest_write(&m, path);
    free(path);
    return rc;
}

/* Input file i's part shard for key k in the parts folder `tmpdir`. */
static char *part_of_input(const char *tmpdir, size_t i, size_t k)
{
    char *name = sl_stage_shard_name(i, "");
    char *unit = sl_xasprintf("%s/%s", tmpdir, name);
    char *p = part_prefix(unit, k);
    free(unit);
    free(name);
    return p;
}

/* Rank 0: the outputs, each the concatenation of its key's parts in input order. A key
 * with one part (one input file) has that part as its output, by hard links: its tokens
 * are not copied again. */
static int concat_parts(const char *tmpdir, const struct sl_inputs *in, char **outs, size_t nkeys,
                        enum idx_dtype dtype)
{
    int rc = 0;
    for (size_t k = 0; k < nkeys && !rc; k++) {
        if (in->n == 1) {
            char *pp = part_of_input(tmpdir, 0, k);
            rc = idx_link_shard(pp, outs[k], dtype);
            free(pp);
            if (rc != SL_ERR_UNSUPPORTED)
                continue;
            rc = 0; /* no hard links here: copy */
        }
        struct idx_writer *iw;
        rc = idx_writer_open(&iw, outs[k], dtype);
        for (size_t i = 0; i < in->n && !rc; i++) {
            char *pp = part_of_input(tmpdir, i, k);
            rc = idx_writer_append_shard(iw, pp);
            free(pp);
        }
        if (!rc)
            rc = idx_writer_commit(iw);
        else
            idx_writer_abort(iw);
    }
    return rc;
}

static void report(const struct opts *o, const struct sl_inputs *in, const struct sl_counters *c,
                   const char *out0, enum idx_dtype dtype, int resumed)
{
    char a[32];
    sl_info("tokenize: %llu documents (%s) from %zu files -> %llu tokens in '%s' (%s)%s",
            (unsigned long long)sl_counters_get(c, "documents_out"),
            sl_human_bytes((double)sl_counters_get(c, "bytes_in"), a, sizeof(a)), in->n,
            (unsigned long long)sl_counters_get(c, "tokens"), out0, idx_dtype_name(dtype),
            resumed ? " (resumed)" : "");
    uint64_t skipped = 0;
    for (size_t i = 0; i < c->n; i++)
        if (!strncmp(c->names[i], "skipped_", 8))
            skipped += c->values[i];
    if (skipped)
        sl_warn("%llu lines skipped (counts by reason in '%s.manifest.json')",
                (unsigned long long)skipped, o->out);
}

/* --split-sentences: the Punkt model (--punkt DIR, else --lang's), its directory in
 * o->punkt (*dir owns it when found by language) and its fingerprint in o->punkt_model. 0,
 * or the exit code (the error reported). */
static int load_punkt(struct opts *o, struct punkt_params **p, char **dir, char fp[17])
{
    *p = NULL;
    *dir = NULL;
    if (!o->split)
        return 0;
    int rc = o->punkt ? 0 : punkt_params_find(o->lang, sl_data_dir(), dir);
    if (!rc && *dir)
        o->punkt = *dir;
    if (!rc)
        rc = punkt_params_load(p, o->punkt);
    if (rc) {
        sl_error("%s", sl_err_msg());
        return rc == SL_ERR_USAGE ? 2 : 1;
    }
    punkt_params_fingerprint(*p, fp);
    o->punkt_model = fp;
    sl_info("tokenize: sentences split by the Punkt model in '%s'%s", o->punkt,
            o->keep_newlines ? " (newlines kept)" : "");
    return 0;
}

/* The temporaries of the outputs that a killed run left (the lock is held). */
static void remove_stale_outputs(const struct opts *o, char **outs, size_t n)
{
    char *p = sl_xasprintf("%s.manifest.json", o->out);
    sl_atomic_remove_stale(p);
    free(p);
    for (size_t k = 0; k < n; k++)
        for (int i = 0; i < 2; i++) {
            p = sl_xasprintf("%s.%s", outs[k], i ? "idx" : "bin");
            sl_atomic_remove_stale(p);
            free(p);
        }
}

/* The tokenizer, with --append-eod's id checked against it (o->eod_id). 0, or the exit code
 * (the error reported). */
static int open_tokenizer(struct opts *o, struct tokenizer **tok)
{
    int rc = tokenizer_open(tok, o->tokenizer);
    if (rc) {
        sl_error("%s", sl_err_msg());
        return rc == SL_ERR_USAGE ? 2 : 1;
    }
    if (o->append_eod && o->eod_id < 0) {
        if ((*tok)->eod_id < 0) {
            sl_error("--append-eod: the tokenizer '%s' has no end-of-document token\n"
                     "hint: name one with --eod-id ID",
                     o->tokenizer);
            return 2;
        }
        o->eod_id = (*tok)->eod_id;
    }
    if (o->append_eod && (uint64_t)o->eod_id >= (*tok)->vocab_size) {
        sl_error("--eod-id %ld is not below the vocabulary size %u", o->eod_id, (*tok)->vocab_size);
        return 2;
    }
    return 0;
}

/* What one run of the command holds. */
struct tok_cmd {
    struct opts *o;
    struct sl_world *w;
    int argc;
    const char **argv;
    double t0;
    char started[32];
    struct tokenizer *tok;
    enum idx_dtype dtype;
    struct punkt_params *punkt;
    struct sl_inputs in;
    char *tmpdir; /* the parts folder */
};

/* Every input file into its part shards in the parts folder (a stage run: resumable), on
 * the encoder's threads. The stage's error, reported unless another rank's. */
static int encode_parts(struct tok_cmd *c, struct sl_stage_result *res)
{
    struct opts *o = c->o;
    struct sl_buf settings = SL_BUF_INIT;
    o->kind = tokenizer_kind_name(c->tok->kind);
    o->vocab_size = c->tok->vocab_size;
    o->dtype = idx_dtype_name(c->dtype);
    sl_options_settings_json(cmd_tokenize_options, o, &settings);
    struct encoder_opts eo = { .tok = c->tok,
                               .keys = (const char *const *)o->keys.v,
                               .nkeys = o->keys.n,
                               .punkt = c->punkt,
                               .keep_newlines = o->keep_newlines,
                               .append_eod = o->append_eod,
                               .eod_id = (uint32_t)o->eod_id,
                               .workers = o->workers > 0 ? o->workers : default_workers(c->w),
                               .timed = sl_log_level() >= SL_LOG_DEBUG };
    struct tok_run t = { .o = o, .dtype = c->dtype };
    int rc = encoder_new(&t.enc, &eo);
    if (rc) {
        sl_error("%s", sl_err_msg());
        if (c->w->size > 1)
            sl_world_abort(c->w, 1); /* the other ranks wait in the stage's collectives */
        sl_buf_release(&settings);
        memset(res, 0, sizeof(*res));
        return rc;
    }
    /* the parts folder's plan: an earlier run with another plan is discarded */
    struct sl_stage_files job = { .stage = { .stage = "tokenize",
                                             .out_dir = c->tmpdir,
                                             .argc = c->argc,
                                             .argv = c->argv,
                                             .inputs = &c->in,
                                             .settings_json = settings.data,
                                             .force = 1 },
                                  .ext = "",
                                  .no_writer = 1,
                                  .process = tokenize_unit,
                                  .ctx = &t };
    rc = sl_stage_run_files(c->w, &job, res);
    sl_warn_limited_summary();
    encoder_free(t.enc);
    release_files(&t);
    if (rc && !res->peer_failed)
        sl_error("%s", sl_err_msg());
    sl_buf_release(&settings);
    return rc;
}

/* Rank 0, after the parts: the outputs from them, the manifest and the report. Then every
 * rank: the parts folder removed, or kept for a rerun when a failed run finished some
 * files. 1 if the run failed (the error reported), else 0. */
static int finish(struct tok_cmd *c, const struct sl_stage_result *res, int failed)
{
    struct opts *o = c->o;
    size_t nkeys = o->keys.n;
    char **outs = sl_xcalloc(nkeys, sizeof(char *));
    for (size_t k = 0; k < nkeys; k++)
        outs[k] =
            sl_xasprintf("%s_%s_%s", o->out, o->keys.v[k], o->split ? "sentence" : "document");
    if (!failed && c->w->rank == 0)
        remove_stale_outputs(o, outs, nkeys);
    if (!failed && c->w->rank == 0) {
        int rc = concat_parts(c->tmpdir, &c->in, outs, nkeys, c->dtype);
        if (!rc)
            rc = write_manifest(o, c->tok, c->dtype, &c->in, outs, &res->totals, c->argc, c->argv,
                                c->t0, c->started, c->w->size, res->resumed);
        if (rc) {
            sl_error("%s", sl_err_msg());
            failed = 1;
        } else {
            report(o, &c->in, &res->totals, outs[0], c->dtype, res->resumed);
        }
    }
    sl_world_barrier(c->w);
    int kept = c->w->rank == 0 && failed ? finished_units(c->tmpdir) : 0;
    if (c->w->rank == 0 && (!failed || !kept))
        rm_parts_dir(c->tmpdir); /* a failed run keeps the parts of finished files, for a rerun */
    else if (kept)
        sl_info("the parts of %d finished input file%s are kept in '%s': the same command "
                "again goes on from there",
                kept, kept == 1 ? "" : "s", c->tmpdir);
    for (size_t k = 0; k < nkeys; k++)
        free(outs[k]);
    free(outs);
    return failed;
}

/* The parts folder beside the output: DIR/.BASE.sluice-parts for --out DIR/BASE. */
static char *parts_dir(const char *out)
{
    const char *slash = strrchr(out, '/');
    if (!slash)
        return sl_xasprintf("./.%s.sluice-parts", out);
    return sl_xasprintf("%.*s/.%s.sluice-parts", (int)(slash - out), out, slash + 1);
}

static int run(const void *opts, const struct sl_strlist *operands, int argc, const char **argv)
{
    struct opts so = *(const struct opts *)opts; /* with what the tokenizer says */
    struct tok_cmd c = {
        .o = &so, .w = sl_world_get(), .argc = argc, .argv = argv, .t0 = sl_now()
    };
    time_t now = time(NULL);
    struct tm tm;
    gmtime_r(&now, &tm);
    strftime(c.started, sizeof(c.started), "%Y-%m-%dT%H:%M:%SZ", &tm);
    char *punkt_dir = NULL, fp[17];
    struct sl_dirlock *lock = NULL;
    int rc = open_tokenizer(&so, &c.tok);
    if (rc)
        goto out;
    c.dtype = idx_dtype_for_vocab(c.tok->vocab_size);
    rc = load_punkt(&so, &c.punkt, &punkt_dir, fp);
    if (rc)
        goto out;
    rc = sl_inputs_expand(&c.in, (const char *const *)operands->v, operands->n, sl_jsonl_exts);
    if (rc)
        goto out;
    c.tmpdir = parts_dir(so.out);
    /* the parts folder's lock is held until the outputs are written from the parts: one
     * run at a time per prefix (core/dirlock.h); its lost temporaries are then stale */
    rc = sl_stage_lock(c.w, c.tmpdir, so.wait, argc, argv, &lock);
    if (rc)
        goto out;
    struct sl_stage_result res;
    int failed = encode_parts(&c, &res) != 0;
    rc = finish(&c, &res, failed);
    sl_stage_result_release(&res);
    sl_dirlock_release(lock);
out:
    free(c.tmpdir);
    sl_inputs_release(&c.in);
    tokenizer_free(c.tok);
    punkt_params_free(c.punkt);
    free(punkt_dir);
    return rc;
}

static int check(void *opts, const struct sl_strlist *operands)
{
    struct opts *o = opts;
    if (operands->n == 0)
        return sl_err_set(SL_ERR_USAGE, "no inputs given");
    if (o->workers < 0 || o->workers > 1024)
        return sl_err_set(SL_ERR_USAGE, "--workers must be 0..1024");
    if (o->max_doc < 16)
        return sl_err_set(SL_ERR_USAGE, "--max-doc-size is too small");
    if (o->eod_id >= 0)
        o->append_eod = 1;
    if (!o->split && (o->lang || o->punkt || o->keep_newlines))
        return sl_err_set(SL_ERR_USAGE, "--%s splits sentences: give --split-sentences too",
                          o->lang    ? "lang"
                          : o->punkt ? "punkt"
                                     : "keep-newlines");
    if (o->split && !o->lang)
        o->lang = "english";
    for (size_t k = 0; k < o->keys.n; k++)
        for (size_t j = 0; j < k; j++)
            if (!strcmp(o->keys.v[k], o->keys.v[j]))
                return sl_err_set(SL_ERR_USAGE, "--json-key '%s' is given twice", o->keys.v[k]);
    if (o->keys.n == 0)
        sl_strlist_push(&o->keys, "text");
    return 0;
}

const struct sl_cmd cmd_tokenize =
    SL_CMD(cmd_tokenize_usage, cmd_tokenize_options, struct opts, check, run);
