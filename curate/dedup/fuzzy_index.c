/* The saved band index as a fuzzy dedup run uses it (the files: curate/dedup/lsh_index.h):
 * --index-in's meta checked against the run, its band records this rank owns read, the ids
 * of its documents that this run's clusters name looked up for the reports; --index-out's
 * files opened per rank, committed, the earlier generations' ids copied and the meta
 * written. */
#include "curate/dedup/fuzzy_impl.h"

#include "core/alloc.h"
#include "core/atomic.h"
#include "core/buf.h"
#include "core/err.h"
#include "core/file.h"
#include "core/options.h"
#include "core/world.h"
#include "curate/dedup/dedup.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* ---- --index-in ---------------------------------------------------------------------------- */

static int keep_owned(uint32_t band, uint64_t key, void *ctx)
{
    struct dd_old_index *o = ctx;
    return lsh_owner(band, key, o->P) == o->rank;
}

/* Call fn for each "ids-*.sldx.zst" file of the index dir, in name order. */
static int for_each_ids_file(const char *dir, int (*fn)(const char *path, void *ctx), void *ctx)
{
    struct sl_strlist names = { 0 };
    int rc = sl_dir_list(dir, &names);
    if (rc)
        rc = sl_err_set(SL_ERR_IO, "cannot read the dedup index '%s': %s", dir, strerror(errno));
    for (size_t i = 0; !rc && i < names.n; i++) {
        const char *nm = names.v[i];
        if (strncmp(nm, "ids-", 4) || !strstr(nm, ".sldx.zst"))
            continue;
        char *path = sl_xasprintf("%s/%s", dir, nm);
        rc = fn(path, ctx);
        free(path);
    }
    sl_strlist_release(&names);
    return rc;
}

static int count_file(const char *path, void *ctx)
{
    (void)path;
    ++*(size_t *)ctx;
    return 0;
}

int dd_fuzzy_read_index(struct dd_fuzzy *z)
{
    const struct dd_fuzzy_cfg *cfg = z->cfg;
    const char *dir = cfg->index_in;
    char *settings = NULL, *backend = NULL;
    uint64_t old_gen = 0;
    int parts = 0;
    int rc = dd_index_read_meta(dir, &settings, &old_gen, &parts, &backend, &z->old_prefix);
    if (!rc && strcmp(settings, z->f->minhash_json))
        rc = sl_err_set(SL_ERR_CONFIG,
                        "the index '%s' was built with other MinHash settings: %s\nhint: "
                        "use the same --preset/--ngram/--bands/--rows/--norm/--seed as "
                        "when it was written (these are %s)",
                        dir, settings, z->f->minhash_json);
    if (!rc && strcmp(backend, cfg->backend))
        rc = sl_err_set(SL_ERR_CONFIG,
                        "the index '%s' was built with --backend %s\nhint: use --backend %s", dir,
                        backend, backend);
    if (!rc && old_gen >= 255)
        rc = sl_err_set(SL_ERR_UNSUPPORTED, "the index '%s' has 255 generations already", dir);
    /* the ids files name the documents of earlier runs in this run's clusters */
    size_t nids = 0;
    if (!rc)
        rc = for_each_ids_file(dir, count_file, &nids);
    if (!rc && nids == 0)
        rc = sl_err_set(SL_ERR_CORRUPT,
                        "the dedup index '%s' has no ids files (ids-GEN-RANK.sldx.zst): the "
                        "ids of its documents are missing\nhint: copy the whole index "
                        "directory that --index-out wrote",
                        dir);
    struct dd_old_index *old = &z->old;
    for (int p = 0; !rc && !z->redis && p < parts; p++) {
        char *path = sl_xasprintf("%s/bands-%05d.sldx.zst", dir, p);
        rc = dd_index_read_recs(path, keep_owned, old, &old->r, &old->n, &old->cap);
        free(path);
    }
    lsh_sort(old->r, old->n);
    free(settings);
    free(backend);
    z->c->gen = old_gen + 1;
    return rc;
}

/* ---- ids of the index's documents --------------------------------------------------------- */

static int collect_id(uint64_t gid, const char *id, size_t len, void *ctx)
{
    struct dd_old_ids *o = ctx;
    size_t at = dd_lower_bound_u64(o->want, o->nwant, gid);
    if (at == o->nwant || o->want[at] != gid)
        return 0;
    if (o->n == o->cap) {
        o->cap = o->cap ? o->cap * 2 : 256;
        o->v = sl_xrealloc(o->v, o->cap * sizeof(*o->v));
    }
    o->v[o->n].gid = gid;
    o->v[o->n].id = sl_xstrndup(id, len);
    o->v[o->n].len = len;
    o->n++;
    return 0;
}

static int cmp_mid(const void *pa, const void *pb)
{
    const struct dd_member_id *a = pa, *b = pb;
    return a->gid < b->gid ? -1 : a->gid > b->gid;
}

int dd_fuzzy_old_id(void *ctx, uint64_t gid, struct sl_buf *out)
{
    struct dd_old_ids *o = ctx;
    struct dd_member_id key = { gid, NULL, 0 };
    struct dd_member_id *x = o->n ? bsearch(&key, o->v, o->n, sizeof(*o->v), cmp_mid) : NULL;
    if (!x)
        return SL_ERR_NOTFOUND;
    return sl_buf_append(out, x->id, x->len);
}

void dd_old_ids_release(struct dd_old_ids *o)
{
    for (size_t i = 0; i < o->n; i++)
        free(o->v[i].id);
    free(o->v);
    memset(o, 0, sizeof(*o));
}

static int read_ids_file(const char *path, void *ctx)
{
    return dd_index_read_ids(path, collect_id, ctx);
}

/* Rank 0: the ids of the index's documents in this run's clusters and pairs. */
static int read_old_ids(struct dd_fuzzy *z)
{
    const char *index_in = z->cfg->index_in;
    struct dd_u64s *want = &z->want;
    struct dd_old_ids *oid = &z->oid;
    uint64_t gen = z->c->gen;
    int rc = 0;
    for (size_t i = 0; i < z->nf; i++)
        if (DD_GID_GEN(z->fates[i].gid) != gen)
            dd_u64s_push(want, z->fates[i].gid);
    const struct dd_pair *ap = (const struct dd_pair *)z->allp.data;
    for (size_t i = 0; i < z->allp.len / sizeof(*ap); i++)
        if (DD_GID_GEN(ap[i].u) != gen)
            dd_u64s_push(want, ap[i].u);
    dd_u64s_sort_unique(want);
    oid->want = want->v;
    oid->nwant = want->n;
    if (want->n)
        rc = for_each_ids_file(index_in, read_ids_file, oid);
    if (oid->n > 1) /* qsort wants a valid pointer even for nothing */
        qsort(oid->v, oid->n, sizeof(*oid->v), cmp_mid);
    /* every earlier document in a cluster must have its id: never "kept": null */
    for (size_t i = 0, j = 0; !rc && i < want->n; i++) {
        while (j < oid->n && oid->v[j].gid < want->v[i])
            j++;
        if (j == oid->n || oid->v[j].gid != want->v[i])
            rc = sl_err_set(SL_ERR_CORRUPT,
                            "the dedup index '%s' has no id for document %llu of file %llu "
                            "of generation %llu: its ids-%03llu-*.sldx.zst files are missing "
                            "or incomplete\nhint: copy the whole index directory that "
                            "--index-out wrote",
                            index_in, (unsigned long long)DD_GID_LINE(want->v[i]),
                            (unsigned long long)DD_GID_FILE(want->v[i]),
                            (unsigned long long)DD_GID_GEN(want->v[i]),
                            (unsigned long long)DD_GID_GEN(want->v[i]));
    }
    return rc;
}

int dd_fuzzy_old_ids(struct dd_fuzzy *z, int rc)
{
    const struct sl_world *w = z->c->w;
    if (!rc && w->rank == 0)
        rc = read_old_ids(z);
    /* rank 0 read the ids: the others must not go on writing when it failed */
    int64_t bad = rc != 0;
    sl_world_allreduce_i64(w, &bad, 1, SL_MAX);
    if (bad && !rc)
        rc = sl_err_set(SL_ERR_STATE, "rank 0 could not read the ids of the dedup index");
    return rc;
}

/* ---- --index-out --------------------------------------------------------------------------- */

int dd_fuzzy_index_open(struct dd_fuzzy *z)
{
    const struct sl_world *w = z->c->w;
    const char *dir = z->cfg->index_out;
    int rc = 0;
    if (w->rank == 0)
        rc = sl_mkdir_p(dir);
    int64_t bad = rc != 0;
    sl_world_allreduce_i64(w, &bad, 1, SL_MAX);
    if (bad && !rc)
        rc = sl_err_set(SL_ERR_IO, "rank 0 cannot create '%s'", dir);
    if (!rc) {
        char *p = sl_xasprintf("%s/ids-%03llu-%05d.sldx.zst", dir, (unsigned long long)z->c->gen,
                               w->rank);
        rc = dd_index_writer_open(&z->idw, p, DD_INDEX_MAGIC_IDS);
        free(p);
    }
    if (!rc && !z->redis) {
        char *p = sl_xasprintf("%s/bands-%05d.sldx.zst", dir, w->rank);
        rc = dd_index_writer_open(&z->bw, p, DD_INDEX_MAGIC_BANDS);
        free(p);
    }
    return rc;
}

static int copy_ids_file(const char *path, void *ctx)
{
    const char *to_dir = ctx;
    const char *base = strrchr(path, '/');
    char *to = sl_xasprintf("%s/%s", to_dir, base ? base + 1 : path);
    int rc = sl_copy_file(path, to);
    free(to);
    return rc;
}

int dd_fuzzy_index_commit(struct dd_fuzzy *z, int rc)
{
    const struct dd_fuzzy_cfg *cfg = z->cfg;
    const struct sl_world *w = z->c->w;
    if (!rc)
        rc = dd_index_writer_commit(&z->idw);
    else if (z->idw.w)
        dd_index_writer_abort(&z->idw);
    if (z->bw.w) {
        if (!rc)
            rc = dd_index_writer_commit(&z->bw);
        else
            dd_index_writer_abort(&z->bw);
    }
    int64_t bad = rc != 0;
    sl_world_allreduce_i64(w, &bad, 1, SL_MAX);
    if (!rc && bad)
        rc = sl_err_set(SL_ERR_IO, "another rank failed to write the index");
    if (!rc && w->rank == 0) {
        if (cfg->index_in && !sl_same_file(cfg->index_in, cfg->index_out))
            rc = for_each_ids_file(cfg->index_in, copy_ids_file, (void *)cfg->index_out);
        if (!rc)
            rc = dd_index_write_meta(cfg->index_out, z->f->minhash_json, z->c->gen, w->size,
                                     cfg->backend, z->redis ? z->prefix : NULL);
    }
    return rc;
}
