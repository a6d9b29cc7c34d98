/* Balanced JSONL shards (curate/reshard/reshard.h): pass 1 measures the inputs, pass 2 cuts
 * this rank's byte range of their concatenation into its run of shards. */
#include "curate/reshard/reshard.h"

#include "core/alloc.h"
#include "core/counters.h"
#include "core/doc.h"
#include "core/err.h"
#include "core/inputs.h"
#include "core/jsonl.h"
#include "core/log.h"
#include "core/parquet_write.h"
#include "core/progress.h"
#include "core/stage.h"
#include "core/stream.h"
#include "core/world.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A skipped line counted before its shard was opened. */
struct pending {
    uint64_t shard;
    char key[48];
};

/* The shard being written by this rank. */
struct out_state {
    struct sl_stage *st;
    const struct reshard_cfg *cfg;
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
static int measure(const struct sl_input *in, const struct reshard_cfg *cfg, uint64_t *size,
                   int *corrupt, uint64_t *lines, uint64_t *dropped)
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
            if (cfg->skip_corrupt && (got == SL_ERR_CORRUPT || got == SL_ERR_TOOBIG)) {
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
        os->name = sl_stage_shard_name(os->next, reshard_shard_ext(os->cfg));
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
        char *path = sl_stage_shard_path(os->st, os->next - 1, reshard_shard_ext(os->cfg));
        struct sl_writer_opts wo = { .codec = SL_CODEC_ZSTD, .level = (int)os->cfg->level };
        if (os->cfg->parquet)
            rc = sl_pq_writer_open(&os->w, path, NULL, os->cfg->parquet);
        else
            rc = sl_writer_open(&os->w, path, &wo);
        free(path);
    }
    return rc;
}

void reshard_measures_release(struct reshard_measures *m)
{
    free(m->sizes);
    free(m->corrupt);
    free(m->lines);
    free(m->dropped);
}

int reshard_measure(const struct sl_world *w, const struct sl_inputs *in,
                    const struct reshard_cfg *cfg, struct reshard_measures *m)
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
    int rc = 0;
    for (size_t i = 0; i < in->n; i++) {
        if (owner[i] != w->rank)
            continue;
        int bad = 0;
        rc = measure(&in->v[i], cfg, &m->sizes[i], &bad, &m->lines[i], &m->dropped[i]);
        if (rc)
            break;
        m->corrupt[i] = (uint64_t)bad;
        measured += in->v[i].size;
        sl_progress_update(&prog, measured, 0);
    }
    sl_progress_finish(&prog);
    free(owner);
    free(csize);
    int64_t failed = rc != 0;
    sl_world_allreduce_i64(w, &failed, 1, SL_MAX);
    sl_world_allreduce_u64(w, m->sizes, in->n, SL_SUM);
    sl_world_allreduce_u64(w, m->corrupt, in->n, SL_SUM);
    sl_world_allreduce_u64(w, m->lines, in->n, SL_SUM);
    sl_world_allreduce_u64(w, m->dropped, in->n, SL_SUM);
    if (failed)
        return rc ? rc : sl_err_set(SL_ERR_PEER, "another rank failed");
    for (size_t i = 0; i < in->n; i++) {
        m->total += m->sizes[i];
        m->ncorrupt += m->corrupt[i];
        m->nlines += m->lines[i];
        m->ndropped += m->dropped[i];
    }
    return 0;
}

/* Pass 2 on one rank: its shards, written from the documents of its byte range. */
struct write_pass {
    const struct reshard_cfg *cfg;
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
    const struct reshard_cfg *cfg = p->cfg;
    char *stem = sl_jsonl_id_stem(f->rel);
    struct sl_jsonl_opts jo;
    memset(&jo, 0, sizeof(jo));
    jo.max_line = cfg->max_line;
    jo.text_key = cfg->text_key;
    jo.repair_utf8 = cfg->repair_utf8;
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
        if (!os->done && sl_docid_active(&cfg->ids))
            rc = sl_docid_apply(&cfg->ids, &p->doc, os->name,
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
static int shards_done(struct sl_stage *st, const struct reshard_cfg *cfg, uint64_t k0, uint64_t k1)
{
    int all_done = 1;
    for (uint64_t k = k0; k < k1 && all_done; k++) {
        char *nm = sl_stage_shard_name(k, reshard_shard_ext(cfg));
        all_done = sl_stage_done(st, nm);
        free(nm);
    }
    return all_done;
}

/* Pass 2: this rank's shards [k0, k1) from its global byte range [lo, hi). */
int reshard_write(struct sl_stage *st, const struct sl_world *w, const struct reshard_cfg *cfg,
                  const struct sl_inputs *in, const struct reshard_measures *m, uint64_t nshards)
{
    uint64_t total = m->total;
    uint64_t k0 = nshards * (uint64_t)w->rank / (uint64_t)w->size;
    uint64_t k1 = nshards * (uint64_t)(w->rank + 1) / (uint64_t)w->size;
    uint64_t lo = k0 >= nshards ? total : shard_start(k0, nshards, total);
    uint64_t hi = k1 >= nshards ? total : shard_start(k1, nshards, total);

    struct write_pass p;
    memset(&p, 0, sizeof(p));
    p.cfg = cfg;
    p.os.st = st;
    p.os.cfg = cfg;
    p.os.next = k0;
    sl_counters_init(&p.os.c);
    p.s.lo = lo;
    p.s.hi = hi;
    p.s.nshards = nshards;
    p.s.total = total;
    p.s.os = &p.os;
    int all_done = shards_done(st, cfg, k0, k1);
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
    }
    sl_progress_finish(&p.prog);
    sl_doc_release(&p.doc);
    sl_counters_release(&p.os.c);
    free(p.os.pend);
    return rc;
}

uint64_t reshard_plan(const struct reshard_cfg *cfg, const struct reshard_measures *m,
                      uint64_t *asked)
{
    uint64_t nshards = cfg->shards;
    if (!nshards)
        nshards = m->total ? (m->total + cfg->shard_size - 1) / cfg->shard_size : 0;
    *asked = nshards;
    return nshards > m->nlines ? m->nlines : nshards;
}

const char *reshard_shard_ext(const struct reshard_cfg *cfg)
{
    return cfg->parquet ? ".parquet" : ".jsonl.zst";
}
