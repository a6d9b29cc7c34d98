/* sluice reshard: any mix of JSONL inputs -> balanced part-NNNNN.jsonl.zst shards.
 *
 * Documents keep their input order (files in operand order, lines in file order). A first
 * pass measures each file's decompressed size; document d, whose line starts at global
 * byte offset g of the concatenated input, goes to shard floor(g * N / T). Shard contents
 * therefore depend only on the inputs and N, never on the number of ranks: every rank
 * writes a contiguous run of shards and reads just the byte range they cover.
 */
#include "curate/commands.h"

#include "core/alloc.h"
#include "core/docid.h"
#include "core/err.h"
#include "core/jsonl.h"
#include "core/log.h"
#include "core/options.h"
#include "core/progress.h"
#include "core/stage.h"
#include "core/stream.h"
#include "core/world.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *const cmd_reshard_usage[] = {
    "sluice reshard --out DIR [--shards N | --shard-size SIZE] [options] IN...",
    "",
    "Rewrite JSONL inputs (.jsonl, .jsonl.zst, .jsonl.gz, .json.gz, .jsonl.bz2; files or",
    "directories) as part-NNNNN.jsonl.zst shards of balanced size, keeping the input order.",
    "Documents without an id get \"<input path>:<line>\". Lines that are not JSON objects",
    "with a string text are reported and skipped; a damaged compressed file stops the run",
    "unless --skip-corrupt is given. The output is the same for any number of MPI ranks.",
    NULL,
};

struct opts {
    const char *out;
    uint64_t shards;
    uint64_t shard_size;
    const char *text_key;
    uint64_t max_line;
    long level;
    int force, wait, repair_utf8, skip_corrupt;
    struct sl_docid_opts ids; /* --id-prefix, --reassign-ids */
    uint64_t nshards;         /* the shards written (for the settings) */
};

/* The options' table: the dispatcher's parser and -h, the settings of the plan (rows marked
 * SL_OPTF_OUTPUT) and the pipeline's reshard keys. */
#define SL_OPT_STRUCT struct opts

const struct sl_option cmd_reshard_options[] = {
    SL_OPT_STRING('o', "out", out, "DIR", "output directory (created)", .required = 1),
    SL_OPT_UINT64('n', "shards", shards, "N", "number of shards"),
    SL_SETTING(SL_OPT_U64, "shards", nshards),
    SL_OPT_SIZE('s', "shard-size", shard_size, "SIZE",
                "target uncompressed bytes per shard (default 256M)", .flags = SL_OPTF_OUTPUT),
    SL_OPT_TEXT_KEY(text_key),
    SL_OPT_MAX_LINE(max_line),
    SL_OPT_ZSTD_LEVEL(level, .flags = SL_OPTF_OUTPUT),
    SL_OPT_REPAIR_UTF8(repair_utf8),
    SL_OPT_FLAG_(0, "skip-corrupt", skip_corrupt,
                 "keep the readable part of damaged compressed files and go on",
                 .flags = SL_OPTF_OUTPUT),
    SL_OPT_DOCIDS(ids),
    SL_OPT_FORCE(force),
    SL_OPT_WAIT(wait),
    SL_OPT_COMMON,
    SL_OPT_END_,
};

/* A skipped line counted before its shard was opened. */
struct pending {
    uint64_t shard;
    char key[48];
};

/* The shard being written by this rank. */
struct out_state {
    struct sl_stage *st;
    const struct opts *o;
    struct sl_writer *w;
    char *name;
    int done;      /* finished in an earlier run: read through, write nothing */
    uint64_t next; /* the next shard index to open (the current one is next - 1) */
    struct sl_counters c;
    struct pending *pend;
    size_t npend, cappend;
};

/* What the skip callback needs to attribute a bad line to its shard. */
struct shard_state {
    uint64_t base;   /* global offset of the current file's first byte */
    uint64_t lo, hi; /* this rank's global byte range */
    uint64_t nshards, total;
    struct out_state *os;
    struct sl_jsonl_reader *reader;
};

static uint64_t shard_of(uint64_t g, uint64_t n, uint64_t t)
{
    if (t == 0)
        return 0;
    return (uint64_t)(((__uint128_t)g * n) / t);
}

/* First global offset that belongs to shard k: ceil(k * T / N). */
static uint64_t shard_start(uint64_t k, uint64_t n, uint64_t t)
{
    __uint128_t x = (__uint128_t)k * t;
    return (uint64_t)((x + n - 1) / n);
}

/* Count a skip or repair of one line; a skipped line is a line read too (documents_in =
 * documents_out + skipped_*). */
static void count_line(struct sl_counters *c, const char *key)
{
    sl_counters_add(c, key, 1);
    if (!strncmp(key, "skipped_", 8))
        sl_counters_add(c, "documents_in", 1);
}

static void on_skip(void *ctx, const char *reason, const char *message)
{
    struct shard_state *s = ctx;
    uint64_t g = s->base + sl_jsonl_line_offset(s->reader);
    /* Lines outside this rank's range belong to another rank, which reports them. */
    if (g < s->lo || g >= s->hi)
        return;
    char buf[48];
    const char *key = sl_jsonl_skip_counter(reason, buf, sizeof(buf));
    struct out_state *os = s->os;
    uint64_t k = shard_of(g, s->nshards, s->total);
    if (os->name && k + 1 == os->next) {
        count_line(&os->c, key);
    } else {
        if (os->npend == os->cappend) {
            os->cappend = os->cappend ? os->cappend * 2 : 16;
            os->pend = sl_xrealloc(os->pend, os->cappend * sizeof(*os->pend));
        }
        os->pend[os->npend].shard = k;
        snprintf(os->pend[os->npend].key, sizeof(os->pend[0].key), "%s", key);
        os->npend++;
    }
    sl_warn_skip(NULL, reason, message);
}

/* Pass 1: decompressed size of a file and its number of lines (an upper bound on its
 * documents). With skip_corrupt, the readable prefix, and in *dropped the lines of a
 * damaged zstd frame that the reader held back. */
static int measure(const struct sl_input *in, const struct opts *o, uint64_t *size, int *corrupt,
                   uint64_t *lines, uint64_t *dropped)
{
    struct sl_reader *r;
    *corrupt = 0;
    int rc = sl_input_reader(&r, in, NULL);
    if (rc)
        return rc;
    static char buf[1 << 16];
    uint64_t n = 0, nl = 0;
    char last = '\n';
    for (;;) {
        ssize_t got = sl_reader_read(r, buf, sizeof(buf));
        for (const char *p = buf; got > 0 && (p = memchr(p, '\n', (size_t)(buf + got - p))); p++)
            nl++;
        if (got > 0)
            last = buf[got - 1];
        if (got < 0) {
            if (o->skip_corrupt && (got == SL_ERR_CORRUPT || got == SL_ERR_TOOBIG)) {
                sl_warn("%s (keeping the %llu bytes before it)", sl_err_msg(),
                        (unsigned long long)n);
                *corrupt = 1;
                *dropped = sl_reader_dropped_lines(r);
                break;
            }
            sl_reader_close(r);
            return sl_err_wrap((int)got, "%s", "");
        }
        if (got == 0)
            break;
        n += (uint64_t)got;
    }
    /* a file whose name says one compression but holds another is read by its content */
    enum sl_codec named = sl_codec_from_name(in->path), real = sl_reader_codec(r);
    if (named != SL_CODEC_NONE && named != real)
        sl_warn_limited("misnamed", 10, "'%s' is named like %s data but holds %s data; read as %s",
                        in->path, sl_codec_name(named), sl_codec_name(real), sl_codec_name(real));
    sl_reader_close(r);
    *size = n;
    *lines = nl + (last != '\n');
    return 0;
}

static int close_current(struct out_state *os)
{
    int rc = 0;
    if (!os->name)
        return 0;
    if (!os->done && !os->w) {
        /* no document landed here: no file (its skips are still recorded) */
        rc = sl_stage_record_files(os->st, os->name, &os->c, NULL, 0);
    } else if (!os->done) {
        rc = sl_stage_commit_shard(os->st, os->name, &os->w, &os->c);
    }
    free(os->name);
    os->name = NULL;
    return rc;
}

/* Close the current shard and move on to shard k (the shards between, empty, are recorded
 * without a file). */
static int advance_to(struct out_state *os, uint64_t k)
{
    int rc = 0;
    while (!rc && os->next <= k) {
        rc = close_current(os);
        if (rc)
            break;
        sl_counters_release(&os->c);
        sl_counters_init(&os->c);
        /* the main counts exist even when zero */
        sl_counters_add(&os->c, "documents_in", 0);
        sl_counters_add(&os->c, "documents_out", 0);
        /* skipped lines of this shard seen before it was opened */
        size_t keep = 0;
        for (size_t i = 0; i < os->npend; i++) {
            if (os->pend[i].shard == os->next)
                count_line(&os->c, os->pend[i].key);
            else
                os->pend[keep++] = os->pend[i];
        }
        os->npend = keep;
        os->name = sl_stage_shard_name(os->next, ".jsonl.zst");
        os->done = sl_stage_done(os->st, os->name);
        os->next++; /* the file is opened by the shard's first document (open_current) */
    }
    return rc;
}

/* Open the current shard's file, if not yet open (never for an empty shard). */
static int open_current(struct out_state *os)
{
    int rc = 0;
    if (!os->done && !os->w) {
        char *path = sl_stage_shard_path(os->st, os->next - 1, ".jsonl.zst");
        struct sl_writer_opts wo = { .codec = SL_CODEC_ZSTD, .level = (int)os->o->level };
        rc = sl_writer_open(&os->w, path, &wo);
        free(path);
    }
    return rc;
}

/* Pass 1's results: each file's decompressed size, whether it is damaged, its lines and the
 * lines of damaged zstd frames the reader held back; and their sums over all files. */
struct measures {
    uint64_t *sizes, *corrupt, *lines, *dropped;
    uint64_t total, ncorrupt, nlines, ndropped;
};

static void measures_release(struct measures *m)
{
    free(m->sizes);
    free(m->corrupt);
    free(m->lines);
    free(m->dropped);
}

/* Pass 1: decompressed sizes, each file measured by one rank (files given out by size),
 * the results summed over the ranks. 0, or 1 when a rank failed (reported). */
static int measure_all(struct sl_world *w, const struct sl_inputs *in, const struct opts *o,
                       struct measures *m)
{
    size_t nf = in->n ? in->n : 1;
    m->sizes = sl_xcalloc(nf, sizeof(uint64_t));
    m->corrupt = sl_xcalloc(nf, sizeof(uint64_t));
    m->lines = sl_xcalloc(nf, sizeof(uint64_t));
    m->dropped = sl_xcalloc(nf, sizeof(uint64_t));
    int *owner = sl_xcalloc(nf, sizeof(int));
    uint64_t *csize = sl_xcalloc(nf, sizeof(uint64_t));
    for (size_t i = 0; i < in->n; i++)
        csize[i] = in->v[i].size;
    sl_assign_by_size(csize, in->n, w->size, owner);
    struct sl_progress prog;
    sl_progress_start(&prog, "reshard: measuring", sl_inputs_total_size(in), 1, w->rank == 0);
    uint64_t measured = 0;
    int64_t failed = 0;
    for (size_t i = 0; i < in->n; i++) {
        if (owner[i] != w->rank)
            continue;
        int bad = 0;
        int rc = measure(&in->v[i], o, &m->sizes[i], &bad, &m->lines[i], &m->dropped[i]);
        if (rc) {
            /* --skip-corrupt helps with damaged data, not with a file that cannot be read */
            if (rc == SL_ERR_CORRUPT || rc == SL_ERR_TOOBIG)
                sl_error("%s\nhint: use --skip-corrupt to keep what can be read and go on",
                         sl_err_msg());
            else
                sl_error("%s", sl_err_msg());
            failed = 1;
            break;
        }
        m->corrupt[i] = (uint64_t)bad;
        measured += in->v[i].size;
        sl_progress_update(&prog, measured, 0);
    }
    sl_progress_finish(&prog);
    free(owner);
    free(csize);
    sl_world_allreduce_i64(w, &failed, 1, SL_MAX);
    sl_world_allreduce_u64(w, m->sizes, in->n, SL_SUM);
    sl_world_allreduce_u64(w, m->corrupt, in->n, SL_SUM);
    sl_world_allreduce_u64(w, m->lines, in->n, SL_SUM);
    sl_world_allreduce_u64(w, m->dropped, in->n, SL_SUM);
    if (failed)
        return 1;
    for (size_t i = 0; i < in->n; i++) {
        m->total += m->sizes[i];
        m->ncorrupt += m->corrupt[i];
        m->nlines += m->lines[i];
        m->ndropped += m->dropped[i];
    }
    return 0;
}

/* The number of shards: --shards, or the total size over --shard-size; never more than the
 * input's lines (documents at most): --shards 100000 on 2 documents writes 2 files,
 * --shard-size 1 one document a shard. */
static uint64_t plan_shards(const struct sl_world *w, const struct opts *o,
                            const struct measures *m)
{
    uint64_t nshards = o->shards;
    if (!nshards)
        nshards = m->total ? (m->total + o->shard_size - 1) / o->shard_size : 0;
    if (nshards > m->nlines) {
        if (w->rank == 0 && m->nlines)
            sl_info(
                "reshard: %llu shards asked for, the input has %llu lines: writing at most %llu",
                (unsigned long long)nshards, (unsigned long long)m->nlines,
                (unsigned long long)m->nlines);
        nshards = m->nlines;
    }
    return nshards;
}

/* Pass 2 on one rank: its shards, written from the documents of its byte range. */
struct write_pass {
    const struct opts *o;
    struct out_state os;
    struct shard_state s; /* s.os is &os */
    struct sl_doc doc;
    struct sl_progress prog;
    uint64_t docs;
};

/* The documents of input f (global offset fbase, decompressed size `size`) that lie in this
 * rank's range, each into its shard. A damaged file's readable part ends at its first error
 * (reported in pass 1). */
static int write_file(struct write_pass *p, const struct sl_input *f, uint64_t fbase, uint64_t size,
                      int corrupt)
{
    struct shard_state *s = &p->s;
    const struct opts *o = p->o;
    char *stem = sl_jsonl_id_stem(f->rel);
    struct sl_jsonl_opts jo;
    memset(&jo, 0, sizeof(jo));
    jo.max_line = o->max_line;
    jo.text_key = o->text_key;
    jo.repair_utf8 = o->repair_utf8;
    jo.id_prefix = stem;
    jo.on_skip = on_skip;
    jo.ctx = s;
    s->base = fbase;
    int rc = sl_input_jsonl(&s->reader, f, &jo);
    for (; !rc;) {
        uint64_t g_next = fbase + sl_reader_out_offset(sl_jsonl_stream(s->reader));
        if (g_next >= s->hi || g_next >= fbase + size)
            break;
        int got = sl_jsonl_next(s->reader, &p->doc);
        if (got <= 0) {
            if (got < 0 && !corrupt)
                rc = got;
            break;
        }
        uint64_t g = fbase + sl_jsonl_line_offset(s->reader);
        if (g < s->lo)
            continue;
        if (g >= s->hi)
            break;
        rc = advance_to(&p->os, shard_of(g, s->nshards, s->total));
        if (!rc)
            rc = open_current(&p->os);
        if (rc)
            break;
        struct out_state *os = &p->os;
        sl_counters_add(&os->c, "documents_in", 1);
        sl_counters_add(&os->c, "bytes_in", p->doc.raw.len + 1);
        if (!os->done && sl_docid_active(&o->ids))
            rc = sl_docid_apply(&o->ids, &p->doc, os->name,
                                sl_counters_get(&os->c, "documents_out"));
        if (!rc && !os->done)
            rc = sl_doc_write(&p->doc, os->w);
        sl_counters_add(&os->c, "documents_out", 1);
        sl_progress_update(&p->prog, g - s->lo, ++p->docs);
    }
    sl_jsonl_close(s->reader);
    s->reader = NULL;
    free(stem);
    return rc;
}

/* Whether shards [k0, k1) are all complete from an earlier run. */
static int shards_done(struct sl_stage *st, uint64_t k0, uint64_t k1)
{
    int all_done = 1;
    for (uint64_t k = k0; k < k1 && all_done; k++) {
        char *nm = sl_stage_shard_name(k, ".jsonl.zst");
        all_done = sl_stage_done(st, nm);
        free(nm);
    }
    return all_done;
}

/* Pass 2: this rank's shards [k0, k1) from its global byte range [lo, hi), each recorded as
 * it is finished. 0, or 1 (reported). */
static int write_shards(struct sl_stage *st, const struct sl_world *w, const struct opts *o,
                        const struct sl_inputs *in, const struct measures *m, uint64_t nshards)
{
    uint64_t total = m->total;
    uint64_t k0 = nshards * (uint64_t)w->rank / (uint64_t)w->size;
    uint64_t k1 = nshards * (uint64_t)(w->rank + 1) / (uint64_t)w->size;
    uint64_t lo = k0 >= nshards ? total : shard_start(k0, nshards, total);
    uint64_t hi = k1 >= nshards ? total : shard_start(k1, nshards, total);

    struct write_pass p;
    memset(&p, 0, sizeof(p));
    p.o = o;
    p.os.st = st;
    p.os.o = o;
    p.os.next = k0;
    sl_counters_init(&p.os.c);
    p.s.lo = lo;
    p.s.hi = hi;
    p.s.nshards = nshards;
    p.s.total = total;
    p.s.os = &p.os;
    int all_done = shards_done(st, k0, k1);
    sl_doc_init(&p.doc);
    sl_progress_start(&p.prog, "reshard", hi - lo, 1, w->rank == 0);

    int rc = 0;
    uint64_t base = 0;
    for (size_t i = 0; i < in->n && !rc && !all_done; i++) {
        uint64_t fbase = base;
        base += m->sizes[i];
        if (fbase + m->sizes[i] <= lo || fbase >= hi)
            continue;
        rc = write_file(&p, &in->v[i], fbase, m->sizes[i], m->corrupt[i] != 0);
    }
    if (!rc && !all_done && k1 > k0)
        rc = advance_to(&p.os, k1 - 1);
    if (!rc)
        rc = close_current(&p.os);
    if (rc) {
        sl_writer_abort(p.os.w);
        free(p.os.name);
        sl_error("%s", sl_err_msg());
    }
    sl_progress_finish(&p.prog);
    sl_warn_limited_summary();
    sl_doc_release(&p.doc);
    sl_counters_release(&p.os.c);
    free(p.os.pend);
    return rc ? 1 : 0;
}

/* The summary lines of rank 0, from the manifest's totals. */
static void report(const struct opts *o, const struct sl_stage *st, const struct sl_counters *t,
                   size_t nfiles, uint64_t nshards)
{
    char a[32], b[32];
    sl_info("reshard: %llu documents (%s) from %zu files into %llu shards (%s) in '%s'%s",
            (unsigned long long)sl_counters_get(t, "documents_out"),
            sl_human_bytes((double)sl_counters_get(t, "bytes_in"), a, sizeof(a)), nfiles,
            (unsigned long long)nshards,
            sl_human_bytes((double)sl_counters_get(t, "bytes_out"), b, sizeof(b)), o->out,
            st->resumed ? " (resumed)" : "");
    uint64_t skipped = 0;
    for (size_t i = 0; i < t->n; i++)
        if (!strncmp(t->names[i], "skipped_", 8))
            skipped += t->values[i];
    if (skipped)
        sl_warn("%llu lines skipped (counts by reason in '%s/manifest.json')",
                (unsigned long long)skipped, o->out);
    if (!nshards)
        sl_warn("no documents in the input: no shards written");
}

/* The manifest: every shard, with pass 1's damaged files and their dropped lines added to
 * the totals; then the summary. 0, or an error. */
static int finish(struct sl_stage *st, const struct sl_world *w, const struct opts *o,
                  const struct sl_inputs *in, const struct measures *m, uint64_t nshards)
{
    char **names = sl_xcalloc(nshards ? nshards : 1, sizeof(char *));
    for (uint64_t k = 0; k < nshards; k++)
        names[k] = sl_stage_shard_name(k, ".jsonl.zst");
    struct sl_counters extra, totals;
    sl_counters_init(&extra);
    sl_counters_init(&totals);
    if (m->ncorrupt)
        sl_counters_add(&extra, "corrupt_files", m->ncorrupt);
    if (m->ndropped) {
        /* lines of damaged zstd frames: read, not kept */
        sl_counters_add(&extra, "skipped_corrupt", m->ndropped);
        sl_counters_add(&extra, "documents_in", m->ndropped);
    }
    int rc = sl_stage_finish(st, names, nshards, &extra, &totals);
    if (!rc && w->rank == 0)
        report(o, st, &totals, in->n, nshards);
    sl_counters_release(&extra);
    sl_counters_release(&totals);
    for (uint64_t k = 0; k < nshards; k++)
        free(names[k]);
    free(names);
    return rc;
}

/* The stage: reshard reads each input twice (measured, then cut into shards). */
static struct sl_stage_cfg stage_cfg(const struct opts *o, const struct sl_inputs *in, int argc,
                                     const char **argv, const struct sl_buf *settings)
{
    struct sl_stage_cfg cfg = { .stage = "reshard",
                                .out_dir = o->out,
                                .argc = argc,
                                .argv = argv,
                                .inputs = in,
                                .settings_json = settings->data,
                                .force = o->force,
                                .wait = o->wait,
                                .rereads_inputs = 1 };
    return cfg;
}

/* The stage directory (plan, resume, --force) for nshards shards of the inputs. */
static int begin(struct sl_stage *st, struct sl_world *w, struct opts *o,
                 const struct sl_inputs *in, int argc, const char **argv, struct sl_buf *settings)
{
    sl_options_settings_json(cmd_reshard_options, o, settings);
    struct sl_stage_cfg cfg = stage_cfg(o, in, argc, argv, settings);
    return sl_stage_begin(st, w, &cfg);
}

static int run(const void *opts, const struct sl_strlist *operands, int argc, const char **argv)
{
    struct opts so = *(const struct opts *)opts, *o = &so; /* with the shards planned */
    struct sl_world *w = sl_world_get();
    struct sl_inputs in;
    int rc = sl_inputs_expand(&in, (const char *const *)operands->v, operands->n, sl_jsonl_exts);
    if (rc)
        return rc;
    struct measures m;
    memset(&m, 0, sizeof(m));
    struct sl_buf settings = SL_BUF_INIT;
    struct sl_stage st;
    /* measuring is the first reading: the inputs must allow the second before it */
    struct sl_stage_cfg cfg = stage_cfg(o, &in, argc, argv, &settings);
    rc = sl_stage_check_inputs(&cfg);
    if (rc)
        goto out;
    rc = measure_all(w, &in, o, &m);
    if (rc)
        goto out;
    o->nshards = plan_shards(w, o, &m); /* in the settings */
    rc = begin(&st, w, o, &in, argc, argv, &settings);
    if (rc)
        goto out;
    /* a failed rank makes the dispatcher abort the whole job */
    rc = write_shards(&st, w, o, &in, &m, o->nshards);
    if (!rc)
        rc = finish(&st, w, o, &in, &m, o->nshards);
    sl_stage_release(&st);
out:
    sl_buf_release(&settings);
    measures_release(&m);
    sl_inputs_release(&in);
    return rc;
}

static int check(void *opts, const struct sl_strlist *operands)
{
    struct opts *o = opts;
    if (operands->n == 0)
        return sl_err_set(SL_ERR_USAGE, "no inputs given");
    if (o->shards && o->shard_size)
        return sl_err_set(SL_ERR_USAGE, "--shards and --shard-size cannot be used together");
    if (o->max_line < 16)
        return sl_err_set(SL_ERR_USAGE, "--max-line is too small");
    if (!o->shards && !o->shard_size)
        o->shard_size = 256u << 20; /* the default (the help says so) of --shard-size alone */
    return 0;
}

const struct sl_cmd cmd_reshard =
    SL_CMD(cmd_reshard_usage, cmd_reshard_options, struct opts, check, run);
