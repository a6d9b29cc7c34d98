/* The documents of a dedup run: file assignment, global ids, scanning with the id
 * uniqueness check, and the output phase (shards, duplicates.jsonl, clusters.jsonl). */
#include "curate/dedup/corpus.h"

#include "core/alloc.h"
#include "core/doc.h"
#include "core/err.h"
#include "core/hash.h"
#include "core/jsonl.h"
#include "core/log.h"
#include "core/progress.h"
#include "core/stage_docs.h"
#include "core/stream.h"
#include "core/world.h"
#include "curate/dedup/rehydrate.h"
#include "curate/dedup/shuffle.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int dd_corpus_init(struct dd_corpus *c, const struct sl_world *w, const char *const *operands,
                   size_t n)
{
    memset(c, 0, sizeof(*c));
    c->w = w;
    c->text_key = "text";
    c->id_key = "id";
    c->max_line = SL_JSONL_DEFAULT_MAX_LINE;
    sl_counters_init(&c->counts);
    int rc = sl_inputs_expand(&c->in, operands, n, sl_jsonl_exts);
    if (rc)
        return rc;
    if (c->in.n >= (1u << DD_GID_FILE_BITS))
        return sl_err_set(SL_ERR_TOOBIG, "too many input files (%zu): at most %u", c->in.n,
                          (1u << DD_GID_FILE_BITS) - 1);
    uint64_t *sizes = sl_xcalloc(c->in.n + 1, sizeof(uint64_t));
    for (size_t i = 0; i < c->in.n; i++)
        sizes[i] = c->in.v[i].size;
    c->owner = sl_xcalloc(c->in.n + 1, sizeof(int));
    sl_assign_by_size(sizes, c->in.n, w->size, c->owner);
    free(sizes);
    return 0;
}

int dd_corpus_stage_begin(const struct dd_corpus *c, struct sl_stage *st, struct sl_world *w,
                          const char *stage, const char *out, int argc, const char **argv,
                          const char *settings, int force, int wait)
{
    /* the manifest shows the whole command line: "dedup exact ..." */
    struct sl_stage_cfg cfg = { .stage = stage,
                                .out_dir = out,
                                .argc = argc,
                                .argv = argv,
                                .inputs = &c->in,
                                .settings_json = settings,
                                .force = force,
                                .wait = wait,
                                .rereads_inputs = 1 };
    return sl_stage_begin(st, w, &cfg);
}

void dd_corpus_release(struct dd_corpus *c)
{
    sl_inputs_release(&c->in);
    free(c->owner);
    sl_counters_release(&c->counts);
    memset(c, 0, sizeof(*c));
}

int dd_corpus_owner(const struct dd_corpus *c, uint64_t gid)
{
    if (DD_GID_GEN(gid) != c->gen || DD_GID_FILE(gid) >= c->in.n)
        return 0;
    return c->owner[DD_GID_FILE(gid)];
}

const char *dd_corpus_where(const struct dd_corpus *c, uint64_t gid, char *out, size_t n)
{
    if (DD_GID_GEN(gid) != c->gen || DD_GID_FILE(gid) >= c->in.n)
        snprintf(out, n, "the index (document %llu of file %llu)",
                 (unsigned long long)DD_GID_LINE(gid), (unsigned long long)DD_GID_FILE(gid));
    else
        snprintf(out, n, "'%s' line %llu", c->in.v[DD_GID_FILE(gid)].path,
                 (unsigned long long)DD_GID_LINE(gid));
    return out;
}

struct id_rec {
    uint64_t lo, hi, gid;
};

static int cmp_id(const void *pa, const void *pb)
{
    const struct id_rec *a = pa, *b = pb;
    if (a->hi != b->hi)
        return a->hi < b->hi ? -1 : 1;
    if (a->lo != b->lo)
        return a->lo < b->lo ? -1 : 1;
    return a->gid < b->gid ? -1 : a->gid > b->gid;
}

static int check_ids(struct dd_corpus *c, struct id_rec *ids, size_t n)
{
    int *dest = sl_xmalloc((n + 1) * sizeof(int));
    for (size_t i = 0; i < n; i++)
        dest[i] = (int)(((unsigned __int128)ids[i].hi * (unsigned)c->w->size) >> 64);
    struct sl_buf buf = SL_BUF_INIT;
    size_t m;
    int rc = dd_shuffle(c->w, ids, n, sizeof(*ids), dest, &buf, &m);
    free(dest);
    if (!rc) {
        struct id_rec *r = (struct id_rec *)buf.data;
        if (m > 1) /* qsort wants a valid pointer even for nothing */
            qsort(r, m, sizeof(*r), cmp_id);
        for (size_t i = 1; i < m; i++) {
            if (r[i].hi == r[i - 1].hi && r[i].lo == r[i - 1].lo) {
                char a[512], b[512];
                rc = sl_err_set(SL_ERR_FORMAT,
                                "duplicate document id: %s and %s have the same id\nhint: ids "
                                "must be unique across all inputs: give each corpus its own "
                                "prefix (sluice reshard --id-prefix NAME, or extract "
                                "--id-prefix), or new ids with --reassign-ids",
                                dd_corpus_where(c, r[i - 1].gid, a, sizeof(a)),
                                dd_corpus_where(c, r[i].gid, b, sizeof(b)));
                break;
            }
        }
    }
    sl_buf_release(&buf);
    return rc;
}

/* A scan over this rank's files: the ids seen (check) and progress. */
struct scan_run {
    const struct dd_corpus *c;
    size_t file; /* the file being read */
    int check;
    dd_doc_fn fn;
    void *ctx;
    struct id_rec *ids;
    size_t nids, capids;
    struct sl_progress prog;
    uint64_t done, docs; /* bytes of the files read before, documents read */
};

static int scan_doc(void *arg, struct sl_jsonl_reader *r, struct sl_doc *d)
{
    struct scan_run *s = arg;
    const struct dd_corpus *c = s->c;
    uint64_t line = sl_jsonl_line_no(r);
    if (line >= (1ull << DD_GID_LINE_BITS))
        return sl_err_set(SL_ERR_TOOBIG, "'%s': more than 2^36 lines", c->in.v[s->file].path);
    uint64_t gid = DD_GID(c->gen, s->file, line);
    if (s->check) {
        size_t len;
        const char *id = sl_doc_get_raw(d, c->id_key, &len);
        struct sl_hash128 h = sl_hash128(id ? id : "", id ? len : 0, 0x1d5);
        if (s->nids == s->capids) {
            s->capids = s->capids ? s->capids * 2 : 4096;
            s->ids = sl_xrealloc(s->ids, s->capids * sizeof(*s->ids));
        }
        s->ids[s->nids++] = (struct id_rec){ h.lo, h.hi, gid };
    }
    int rc = s->fn(s->ctx, gid, d);
    if ((++s->docs & 255) == 0)
        sl_progress_update(&s->prog, s->done + sl_jsonl_bytes_in(r), s->docs);
    return rc;
}

int dd_corpus_scan(struct dd_corpus *c, const char *label, int check, dd_doc_fn fn, void *ctx)
{
    struct scan_run s = { .c = c, .check = check, .fn = fn, .ctx = ctx };
    uint64_t total = 0;
    for (size_t i = 0; i < c->in.n; i++)
        if (c->owner[i] == c->w->rank)
            total += c->in.v[i].size;
    sl_progress_start(&s.prog, label, total, 1, c->w->rank == 0);
    int rc = 0;
    for (size_t i = 0; i < c->in.n && !rc; i++) {
        if (c->owner[i] != c->w->rank)
            continue;
        char *stem = sl_jsonl_id_stem(c->in.v[i].rel);
        struct sl_jsonl_opts jo = { .max_line = c->max_line,
                                    .text_key = c->text_key,
                                    .id_key = c->id_key,
                                    .repair_utf8 = c->repair_utf8,
                                    .id_prefix = stem };
        char *what = sl_xasprintf("%s: reading '%s' (a document's memory grows with its size)",
                                  label, c->in.v[i].path);
        sl_oom_context(what);
        s.file = i;
        rc = sl_input_docs(&c->in.v[i], &jo, scan_doc, &s);
        s.done += c->in.v[i].size;
        sl_oom_context(NULL);
        free(what);
        free(stem);
    }
    sl_progress_finish(&s.prog);
    if (check) {
        /* every rank takes part in the exchange, even one that failed to read */
        int64_t bad = rc != 0;
        sl_world_allreduce_i64(c->w, &bad, 1, SL_MAX);
        if (!bad)
            rc = check_ids(c, s.ids, s.nids);
        else if (!rc)
            rc = sl_err_set(SL_ERR_STATE, "another rank failed");
    }
    free(s.ids);
    return rc;
}

static int cmp_fate(const void *pa, const void *pb)
{
    const struct dd_fate *a = pa, *b = pb;
    if (a->gid != b->gid)
        return a->gid < b->gid ? -1 : 1;
    return a->keep < b->keep ? -1 : a->keep > b->keep;
}

int dd_fates_to_owners(const struct dd_corpus *c, struct dd_fate **fates, size_t *n)
{
    int *dest = sl_xmalloc((*n + 1) * sizeof(int));
    for (size_t i = 0; i < *n; i++)
        dest[i] = dd_corpus_owner(c, (*fates)[i].gid);
    struct sl_buf buf = SL_BUF_INIT;
    size_t m;
    int rc = dd_shuffle(c->w, *fates, *n, sizeof(**fates), dest, &buf, &m);
    free(dest);
    free(*fates);
    *fates = NULL;
    *n = 0;
    if (rc) {
        sl_buf_release(&buf);
        return rc;
    }
    struct dd_fate *f = (struct dd_fate *)buf.data;
    if (m > 1) /* qsort wants a valid pointer even for nothing */
        qsort(f, m, sizeof(*f), cmp_fate);
    size_t k = 0;
    for (size_t i = 0; i < m; i++)
        if (!k || f[i].gid != f[k - 1].gid)
            f[k++] = f[i];
    size_t len;
    *fates = (struct dd_fate *)sl_buf_detach(&buf, &len);
    *n = k;
    return 0;
}

/* ---- output phase --------------------------------------------------------------------- */

/* A member record for rank 0: keep, gid, id length, id bytes. */
static void put_member(struct sl_buf *b, uint64_t keep, uint64_t gid, const char *id, size_t n)
{
    uint32_t len = (uint32_t)n;
    sl_buf_append(b, &keep, 8);
    sl_buf_append(b, &gid, 8);
    sl_buf_append(b, &len, 4);
    sl_buf_append(b, id, n);
}

struct member {
    uint64_t keep, gid;
    const char *id;
    uint32_t len;
};

static int cmp_member(const void *pa, const void *pb)
{
    const struct member *a = pa, *b = pb;
    if (a->keep != b->keep)
        return a->keep < b->keep ? -1 : 1;
    /* the kept one first, then input order */
    int ak = a->gid == a->keep, bk = b->gid == b->keep;
    if (ak != bk)
        return ak ? -1 : 1;
    return a->gid < b->gid ? -1 : a->gid > b->gid;
}

static int cmp_member_gid(const void *pa, const void *pb)
{
    const struct member *a = pa, *b = pb;
    return a->gid < b->gid ? -1 : a->gid > b->gid;
}

static const struct member *member_of(const struct member *m, size_t n, uint64_t gid)
{
    struct member key = { 0, gid, NULL, 0 };
    return n ? bsearch(&key, m, n, sizeof(*m), cmp_member_gid) : NULL;
}

/* The raw JSON id of gid into out: a cluster member, or (older generations) the index. */
static void pair_id(const struct member *m, size_t n, uint64_t gid, const struct dd_apply_opts *o,
                    struct sl_buf *out)
{
    const struct member *x = member_of(m, n, gid);
    if (x)
        sl_buf_append(out, x->id, x->len);
    else if (!o->old_id || o->old_id(o->old_ctx, gid, out))
        sl_buf_puts(out, "null");
}

static int write_pairs(const char *out_dir, struct member *m, size_t n, const struct dd_pair *p,
                       size_t np, const struct dd_apply_opts *o)
{
    if (n > 1) /* qsort wants a valid pointer even for nothing */
        qsort(m, n, sizeof(*m), cmp_member_gid);
    char *path = sl_xasprintf("%s/pairs.jsonl", out_dir);
    struct sl_writer *w = NULL;
    struct sl_writer_opts wo = { .codec = SL_CODEC_NONE, .level = 0 };
    int rc = sl_writer_open(&w, path, &wo);
    struct sl_buf b = SL_BUF_INIT;
    for (size_t i = 0; i < np && !rc; i++) {
        sl_buf_reset(&b);
        sl_buf_puts(&b, "{\"a\":");
        pair_id(m, n, p[i].u, o, &b);
        sl_buf_puts(&b, ",\"b\":");
        pair_id(m, n, p[i].v, o, &b);
        if (p[i].jaccard >= 0)
            sl_buf_printf(&b, ",\"jaccard\":%.6f}\n", p[i].jaccard);
        else
            sl_buf_puts(&b, ",\"jaccard\":null}\n");
        rc = sl_writer_write(w, b.data, b.len);
    }
    if (!rc)
        rc = sl_writer_commit(w);
    else
        sl_writer_abort(w);
    sl_buf_release(&b);
    free(path);
    return rc;
}

static int write_side_files(const char *out_dir, struct member *m, size_t n, int clusters,
                            uint64_t *groups)
{
    if (n > 1) /* qsort wants a valid pointer even for nothing */
        qsort(m, n, sizeof(*m), cmp_member);
    char *p1 = sl_xasprintf("%s/duplicates.jsonl", out_dir);
    char *p2 = sl_xasprintf("%s/clusters.jsonl", out_dir);
    struct sl_writer *w1 = NULL, *w2 = NULL;
    struct sl_writer_opts wo = { .codec = SL_CODEC_NONE, .level = 0 };
    int rc = sl_writer_open(&w1, p1, &wo);
    if (!rc && clusters)
        rc = sl_writer_open(&w2, p2, &wo);
    struct sl_buf b = SL_BUF_INIT, c = SL_BUF_INIT;
    uint64_t g = 0;
    for (size_t i = 0; i < n && !rc;) {
        size_t j = i;
        while (j < n && m[j].keep == m[i].keep)
            j++;
        sl_buf_reset(&b);
        sl_buf_printf(&b, "{\"group\":%llu,\"kept\":", (unsigned long long)g);
        size_t r0 = i;
        if (m[i].gid == m[i].keep) {
            sl_buf_append(&b, m[i].id, m[i].len);
            r0 = i + 1;
        } else {
            sl_buf_puts(&b, "null");
        }
        sl_buf_puts(&b, ",\"removed\":[");
        for (size_t k = r0; k < j; k++) {
            if (k > r0)
                sl_buf_putc(&b, ',');
            sl_buf_append(&b, m[k].id, m[k].len);
        }
        sl_buf_puts(&b, "]}\n");
        rc = sl_writer_write(w1, b.data, b.len);
        for (size_t k = i; k < j && !rc && w2; k++) {
            sl_buf_reset(&c);
            sl_buf_puts(&c, "{\"id\":");
            sl_buf_append(&c, m[k].id, m[k].len);
            sl_buf_printf(&c, ",\"cluster\":%llu,\"size\":%zu,\"kept\":%s}\n",
                          (unsigned long long)g, j - i, m[k].gid == m[k].keep ? "true" : "false");
            rc = sl_writer_write(w2, c.data, c.len);
        }
        g++;
        i = j;
    }
    if (!rc)
        rc = sl_writer_commit(w1);
    else
        sl_writer_abort(w1);
    if (w2) {
        if (!rc)
            rc = sl_writer_commit(w2);
        else
            sl_writer_abort(w2);
    }
    if (!clusters)
        remove(p2); /* a clusters.jsonl of another kind of run would mislead */
    sl_buf_release(&b);
    sl_buf_release(&c);
    free(p1);
    free(p2);
    *groups = g;
    return rc;
}

/* The output phase's documents on this rank: each one's fate, in gid order. */
struct apply_run {
    const struct dd_corpus *c;
    const struct dd_apply_opts *o;
    const struct dd_fate *fates;
    size_t nf, k;
    struct sl_buf members; /* for rank 0: every member of a group read here */
};

static int apply_begin(void *ctx, struct sl_stage_unit *u)
{
    const struct apply_run *a = ctx;
    sl_counters_add(u->c, "duplicates_removed", 0);
    if (a->o->rehydrate)
        sl_counters_add(u->c, "documents_rehydrated", 0);
    return 0;
}

/* A kept document of a group of `size`: its size member set, written as many times as
 * the rehydration table says. */
static int apply_kept(struct apply_run *a, struct sl_stage_doc *sd, struct sl_doc *d, uint64_t size)
{
    const struct dd_apply_opts *o = a->o;
    int rc = o->size_key ? sl_doc_set_int(d, o->size_key, (int64_t)size) : 0;
    if (rc)
        return rc;
    if (!o->rehydrate)
        return SL_DOC_KEEP;
    uint64_t times = dd_rehydrate_weight(o->rehydrate, size);
    for (uint64_t i = 0; i < times; i++) {
        rc = sl_stage_doc_write(sd, d);
        if (rc)
            return rc;
    }
    sl_counters_add(sd->u->c, "documents_rehydrated", times - 1);
    return SL_DOC_WRITTEN;
}

/* A document kept, or dropped as a duplicate; a member of a group is noted for rank 0. */
static int apply_doc(void *ctx, struct sl_stage_doc *sd, struct sl_doc *d)
{
    struct apply_run *a = ctx;
    uint64_t gid = DD_GID(a->c->gen, sd->u->index, sl_jsonl_line_no(sd->r));
    while (a->k < a->nf && a->fates[a->k].gid < gid)
        a->k++;
    if (a->k == a->nf || a->fates[a->k].gid != gid)
        return apply_kept(a, sd, d, 1);
    size_t len;
    const char *id = sl_doc_get_raw(d, a->c->id_key, &len);
    put_member(&a->members, a->fates[a->k].keep, gid, id ? id : "null", id ? len : 4);
    if (a->fates[a->k].keep == gid)
        return apply_kept(a, sd, d, a->fates[a->k].size ? a->fates[a->k].size : 1);
    return sl_stage_doc_drop(sd, "duplicates_removed");
}

int dd_corpus_apply(struct dd_corpus *c, struct sl_stage *st, struct dd_fate *fates, size_t nf,
                    const struct dd_apply_opts *o, uint64_t *groups)
{
    const struct sl_world *w = c->w;
    if (nf > 1) /* qsort wants a valid pointer even for nothing */
        qsort(fates, nf, sizeof(*fates), cmp_fate);
    struct apply_run a = { .c = c, .o = o, .fates = fates, .nf = nf };
    struct sl_buf idb = SL_BUF_INIT;
    /* this rank's shards; those complete from an earlier run are read for their members */
    struct sl_stage_docs job = { .files = { .stage = { .stage = st->cfg.stage, .inputs = &c->in },
                                            .label = "dedup: writing",
                                            .level = (int)o->level,
                                            .parquet = o->parquet,
                                            .begun = st,
                                            .read_done = 1 },
                                 .jsonl = { .max_line = c->max_line,
                                            .text_key = c->text_key,
                                            .id_key = c->id_key,
                                            .repair_utf8 = c->repair_utf8 },
                                 .skips_apart = 1,
                                 .begin = apply_begin,
                                 .doc = apply_doc,
                                 .ctx = &a };
    struct sl_stage_result res;
    int rc = sl_stage_run_docs(st->world, &job, &res);
    sl_stage_result_release(&res);
    sl_warn_limited_summary();
    if (rc) {
        free(fates);
        sl_buf_release(&a.members);
        return rc;
    }
    /* rank 0: documents of older generations (from the index) */
    if (w->rank == 0) {
        for (size_t i = 0; i < nf; i++) {
            if (DD_GID_GEN(fates[i].gid) == c->gen)
                continue;
            sl_buf_reset(&idb);
            if (!o->old_id || o->old_id(o->old_ctx, fates[i].gid, &idb))
                sl_buf_puts(&idb, "null");
            put_member(&a.members, fates[i].keep, fates[i].gid, idb.data, idb.len);
        }
    }
    free(fates);
    struct sl_buf all = SL_BUF_INIT;
    rc = sl_world_gather_bytes(w, a.members.data ? a.members.data : "", a.members.len, 0, &all,
                               NULL);
    sl_buf_release(&a.members);
    sl_buf_release(&idb);
    *groups = 0;
    if (!rc && w->rank == 0) {
        size_t cap = 1024, n = 0;
        struct member *m = sl_xmalloc(cap * sizeof(*m));
        for (size_t p = 0; p + 20 <= all.len;) {
            if (n == cap) {
                cap *= 2;
                m = sl_xrealloc(m, cap * sizeof(*m));
            }
            memcpy(&m[n].keep, all.data + p, 8);
            memcpy(&m[n].gid, all.data + p + 8, 8);
            memcpy(&m[n].len, all.data + p + 16, 4);
            m[n].id = all.data + p + 20;
            p += 20 + m[n].len;
            n++;
        }
        rc = write_side_files(st->cfg.out_dir, m, n, o->clusters, groups);
        if (!rc && o->pairs) {
            rc = write_pairs(st->cfg.out_dir, m, n, o->pairs, o->npairs, o);
        } else if (!rc) {
            char *pp = sl_xasprintf("%s/pairs.jsonl", st->cfg.out_dir);
            remove(pp); /* left by an earlier run: it would not match these outputs */
            free(pp);
        }
        free(m);
    }
    sl_buf_release(&all);
    int64_t bad2 = rc != 0;
    sl_world_allreduce_i64(w, &bad2, 1, SL_MAX);
    if (bad2 && !rc)
        rc = sl_err_set(SL_ERR_STATE, "rank 0 failed to write the side files");
    return rc;
}
