/* A fuzzy dedup run (curate/dedup/fuzzy.h): its steps in order, and the clusters: connected
 * components of the pairs over the ranks, each document's fate (the first document of its
 * cluster, kept), the outputs written through the stage. */
#include "curate/dedup/fuzzy_impl.h"

#include "core/alloc.h"
#include "core/buf.h"
#include "core/counters.h"
#include "core/err.h"
#include "core/world.h"
#include "curate/dedup/components.h"
#include "curate/dedup/shuffle.h"

#include <stdlib.h>
#include <string.h>

void dd_fuzzy_init(struct dd_fuzzy *z, const struct dd_fuzzy_cfg *cfg, struct dd_corpus *c)
{
    memset(z, 0, sizeof(*z));
    z->cfg = cfg;
    z->f = cfg->f;
    z->c = c;
    z->redis = !strcmp(cfg->backend, "redis");
    z->iout = cfg->index_out != NULL;
    z->old.P = c->w->size;
    z->old.rank = c->w->rank;
}

int dd_fuzzy_connect(struct dd_fuzzy *z, const char *settings)
{
    z->settings = settings;
    int rc = 0;
    if (z->redis)
        rc = dd_fuzzy_redis_open(z);
    if (!rc && z->iout)
        rc = dd_fuzzy_index_open(z);
    z->connect_rc = rc;
    return rc;
}

/* The pairs that count: with verify those of Jaccard >= threshold, else all. Takes e. */
static int check_pairs(struct dd_fuzzy *z, struct dd_edge *e, size_t ne)
{
    int rc = 0;
    if (z->f->verify) {
        uint64_t checked;
        rc = dd_fuzzy_verify(z->c, z->f, e, ne, &z->pairs, &z->np, &checked);
        e = NULL;
    } else {
        z->pairs = sl_xmalloc((ne + 1) * sizeof(*z->pairs));
        for (size_t i = 0; i < ne; i++) {
            z->pairs[i].u = e[i].u;
            z->pairs[i].v = e[i].v;
            z->pairs[i].jaccard = -1;
        }
        z->np = ne;
    }
    free(e);
    z->counts[1] = z->np;
    return rc;
}

static int cmp_u64(const void *pa, const void *pb)
{
    uint64_t a = *(const uint64_t *)pa, b = *(const uint64_t *)pb;
    return a < b ? -1 : a > b;
}

/* Each cluster's size (its labels with that root, counted on the rank that reads the root)
 * into the fates of this rank's kept documents (sorted by gid, on their owners). */
static int cluster_sizes(struct dd_fuzzy *z, const struct dd_edge *labels, size_t nl)
{
    uint64_t *roots = sl_xmalloc((nl + 1) * sizeof(*roots));
    int *dest = sl_xmalloc((nl + 1) * sizeof(*dest));
    for (size_t i = 0; i < nl; i++) {
        roots[i] = labels[i].v;
        dest[i] = dd_corpus_owner(z->c, labels[i].v);
    }
    struct sl_buf got = SL_BUF_INIT;
    size_t m = 0;
    int rc = dd_shuffle(z->c->w, roots, nl, sizeof(*roots), dest, &got, &m);
    free(roots);
    free(dest);
    uint64_t *r = (uint64_t *)got.data;
    if (!rc && m > 1) /* qsort wants a valid pointer even for nothing */
        qsort(r, m, sizeof(*r), cmp_u64);
    for (size_t i = 0, j = 0; !rc && i < z->nf; i++) {
        struct dd_fate *f = &z->fates[i];
        if (f->gid != f->keep)
            continue;
        while (j < m && r[j] < f->gid)
            j++;
        size_t k = j;
        while (k < m && r[k] == f->gid)
            k++;
        f->size = k - j;
        j = k;
    }
    sl_buf_release(&got);
    return rc;
}

/* Connected components of the pairs: each document's fate (the document its cluster
 * keeps, and for a kept one with cfg->sizes the cluster's size), on the rank that reads
 * it. */
static int components(struct dd_fuzzy *z)
{
    struct dd_edge *labels = NULL;
    size_t nl = 0;
    struct dd_edge *ce = sl_xmalloc((z->np + 1) * sizeof(*ce));
    for (size_t i = 0; i < z->np; i++) {
        ce[i].u = z->pairs[i].u;
        ce[i].v = z->pairs[i].v;
    }
    int rc = dd_components(z->c->w, ce, z->np, getenv("SLUICE_DEDUP_FORCE_STAR") != NULL, &labels,
                           &nl, &z->rounds);
    if (!rc) {
        z->fates = sl_xmalloc((nl + 1) * sizeof(*z->fates));
        for (size_t i = 0; i < nl; i++) {
            /* documents of the index were settled by their own run: only a cluster's
             * first document (kept) is reported from there */
            if (DD_GID_GEN(labels[i].u) != z->c->gen && labels[i].u != labels[i].v)
                continue;
            z->fates[z->nf].gid = labels[i].u;
            z->fates[z->nf].keep = labels[i].v;
            z->fates[z->nf].size = 0;
            z->nf++;
        }
        rc = dd_fates_to_owners(z->c, &z->fates, &z->nf);
    }
    if (!rc && z->cfg->sizes)
        rc = cluster_sizes(z, labels, nl);
    free(labels);
    return rc;
}

static int cmp_pair(const void *pa, const void *pb)
{
    const struct dd_pair *a = pa, *b = pb;
    if (a->u != b->u)
        return a->u < b->u ? -1 : 1;
    return a->v < b->v ? -1 : a->v > b->v;
}

/* Every pair on rank 0, sorted, for pairs.jsonl. */
static int gather_pairs(struct dd_fuzzy *z)
{
    const struct dd_pair *pairs = z->pairs;
    int rc = sl_world_gather_bytes(z->c->w, pairs ? (const void *)pairs : "",
                                   z->np * sizeof(*pairs), 0, &z->allp, NULL);
    if (!rc && z->c->w->rank == 0)
        if (z->allp.len / sizeof(*pairs) > 1) /* qsort wants a valid pointer even for nothing */
            qsort(z->allp.data, z->allp.len / sizeof(*pairs), sizeof(*pairs), cmp_pair);
    return rc;
}

/* Write the kept documents and the reports (duplicates, clusters, pairs). Takes the fates. */
static int write_outputs(struct dd_fuzzy *z, struct sl_stage *st)
{
    struct dd_apply_opts ao = { 1,
                                z->cfg->level,
                                dd_fuzzy_old_id,
                                &z->oid,
                                z->cfg->pairs ? (const struct dd_pair *)z->allp.data : NULL,
                                z->allp.len / sizeof(struct dd_pair),
                                z->cfg->parquet,
                                z->cfg->size_key,
                                z->cfg->rehydrate };
    struct dd_fate *fates = z->fates;
    z->fates = NULL;
    return dd_corpus_apply(z->c, st, fates, z->nf, &ao, &z->groups);
}

/* What the earlier steps' outputs held: pairs and the ids of earlier documents. */
static void release_matches(struct dd_fuzzy *z)
{
    sl_buf_release(&z->allp);
    dd_old_ids_release(&z->oid);
    dd_u64s_release(&z->want);
}

int dd_fuzzy_run(struct dd_fuzzy *z, struct sl_stage *st)
{
    int rc = z->connect_rc;
    if (!rc)
        rc = dd_fuzzy_sign(z);
    struct dd_edge *e = NULL;
    size_t ne = 0;
    if (!rc)
        rc = dd_fuzzy_candidates(z, &e, &ne);
    if (!rc)
        rc = check_pairs(z, e, ne);
    else
        free(e);
    if (!rc)
        rc = components(z);
    if (!rc && z->cfg->pairs)
        rc = gather_pairs(z);
    free(z->pairs);
    z->pairs = NULL;
    if (z->cfg->index_in)
        rc = dd_fuzzy_old_ids(z, rc);
    if (!rc)
        rc = write_outputs(z, st);
    free(z->fates);
    z->fates = NULL;
    release_matches(z);
    if (z->iout)
        rc = dd_fuzzy_index_commit(z, rc);
    return rc;
}

int dd_fuzzy_counts(struct dd_fuzzy *z, struct sl_counters *extra)
{
    const struct sl_world *w = z->c->w;
    sl_counters_add(extra, "empty_documents", z->sig.empty);
    sl_counters_add(extra, "short_documents_hashed_whole", z->sig.whole);
    int rc = sl_world_reduce_counters(w, extra, 0);
    sl_world_allreduce_u64(w, z->counts, 2, SL_SUM);
    if (w->rank == 0) {
        sl_counters_set(extra, "candidate_pairs", z->counts[0]);
        if (z->f->verify)
            sl_counters_set(extra, "verified_pairs", z->counts[1]);
        sl_counters_set(extra, "duplicate_clusters", z->groups);
    }
    return rc;
}

void dd_fuzzy_release(struct dd_fuzzy *z)
{
    if (z->lr_open)
        lsh_redis_close(&z->lr);
    free(z->prefix);
    free(z->old_prefix);
    free(z->old.r);
    free(z->fates);
    free(z->pairs);
    dd_u64s_release(&z->sig.gids);
    dd_u64s_release(&z->sig.keys);
    release_matches(z);
    sl_buf_release(&z->warnings);
    memset(z, 0, sizeof(*z));
}
