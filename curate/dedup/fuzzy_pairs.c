/* Pass 1 of a fuzzy dedup run and its candidate pairs: each document's shingles, MinHash
 * signature and LSH band keys; then the pairs of documents that share a bucket, from band
 * records shuffled to the bucket's owner rank (memory backend, a few bands per round) or
 * from a Redis Cluster (curate/dedup/lsh_redis.h), moved to the rank of their first
 * document. */
#include "curate/dedup/fuzzy_impl.h"

#include "core/alloc.h"
#include "core/buf.h"
#include "core/doc.h"
#include "core/err.h"
#include "core/hash.h"
#include "core/progress.h"
#include "core/world.h"
#include "curate/dedup/normalize.h"
#include "curate/dedup/redis_cluster.h"
#include "curate/dedup/shuffle.h"

#include <stdlib.h>
#include <string.h>

/* Bands whose records are shuffled in one round: a round holds the records of this many
 * bands (per document and band a 24-byte struct lsh_rec and its 4-byte destination rank),
 * not of all of them. */
#define BANDS_PER_ROUND 4

/* ---- pass 1: signatures ----------------------------------------------------------------- */

struct sign_ctx {
    const struct dd_fuzzy_params *f;
    struct sl_buf nbuf;
    struct dd_u64s sh;
    uint64_t sig[DD_MH_MAX_PERM];
    struct dd_sigs *s;
    struct dd_index_writer *ids; /* --index-out: ids of this rank's documents */
    const char *id_key;
};

size_t dd_fuzzy_shingles(const struct dd_fuzzy_params *f, struct sl_doc *d, struct sl_buf *nbuf,
                         struct dd_u64s *sh, int *whole)
{
    size_t len;
    const char *t = sl_doc_text(d, &len);
    if (f->norm) {
        sl_buf_reset(nbuf);
        if (dd_normalize(t, len, f->norm, nbuf))
            return 0;
        t = nbuf->data ? nbuf->data : "";
        len = nbuf->len;
    }
    sh->n = 0;
    return dd_shingle(&f->sh, t, len, sh, whole);
}

static int sign_doc(void *ctx, uint64_t gid, struct sl_doc *d)
{
    struct sign_ctx *p = ctx;
    const struct dd_fuzzy_params *f = p->f;
    struct dd_sigs *s = p->s;
    if (p->ids) {
        size_t len;
        const char *id = sl_doc_get_raw(d, p->id_key, &len);
        int rc = dd_index_write_id(p->ids, gid, id ? id : "null", id ? len : 4);
        if (rc)
            return rc;
    }
    int whole = 0;
    size_t n = dd_fuzzy_shingles(f, d, &p->nbuf, &p->sh, &whole);
    if (!n) {
        s->empty++;
        return 0;
    }
    s->whole += (uint64_t)whole;
    minhash_sign(&f->mh, p->sh.v, p->sh.n, p->sig);
    dd_u64s_reserve(&s->keys, f->bands);
    minhash_band_keys(p->sig, f->bands, f->rows, f->seed, s->keys.v + s->keys.n);
    s->keys.n += f->bands;
    dd_u64s_push(&s->gids, gid);
    return 0;
}

int dd_fuzzy_sign(struct dd_fuzzy *z)
{
    struct sign_ctx p;
    memset(&p, 0, sizeof(p));
    p.f = z->f;
    p.s = &z->sig;
    p.ids = z->iout ? &z->idw : NULL;
    p.id_key = z->cfg->id_key;
    int rc = dd_corpus_scan(z->c, "dedup fuzzy: minhash", 1, sign_doc, &p);
    sl_buf_release(&p.nbuf);
    dd_u64s_release(&p.sh);
    return rc;
}

/* ---- memory backend -------------------------------------------------------------------- */

static int memory_pairs(const struct sl_world *w, const struct dd_fuzzy_params *f,
                        const struct dd_sigs *p, struct dd_old_index *old, uint64_t min_new,
                        struct dd_index_writer *bw, struct dd_edge **e, size_t *ne, size_t *cap)
{
    size_t nd = p->gids.n;
    struct sl_buf buf = SL_BUF_INIT;
    int rc = 0;
    size_t oi = 0;
    for (unsigned b0 = 0; b0 < f->bands && !rc; b0 += BANDS_PER_ROUND) {
        unsigned b1 = b0 + BANDS_PER_ROUND < f->bands ? b0 + BANDS_PER_ROUND : f->bands;
        size_t n = nd * (b1 - b0);
        struct lsh_rec *r = sl_xmalloc(sl_mul_size(n + 1, sizeof(*r)));
        int *dest = sl_xmalloc(sl_mul_size(n + 1, sizeof(int)));
        size_t k = 0;
        for (size_t i = 0; i < nd; i++)
            for (unsigned b = b0; b < b1; b++) {
                r[k].key = p->keys.v[i * f->bands + b];
                r[k].gid = p->gids.v[i];
                r[k].band = b;
                r[k].pad = 0;
                dest[k] = lsh_owner(b, r[k].key, w->size);
                k++;
            }
        size_t m;
        rc = dd_shuffle(w, r, n, sizeof(*r), dest, &buf, &m);
        free(r);
        free(dest);
        if (rc)
            break;
        /* the earlier corpus' records of these bands */
        size_t o0 = oi;
        while (oi < old->n && old->r[oi].band < b1)
            oi++;
        if (oi > o0)
            sl_buf_append(&buf, old->r + o0, (oi - o0) * sizeof(*old->r));
        m += oi - o0;
        struct lsh_rec *recs = (struct lsh_rec *)buf.data;
        lsh_sort(recs, m);
        lsh_pairs(recs, m, f->anchors, min_new, e, ne, cap);
        *ne = dd_edges_sort_unique(*e, *ne);
        if (bw)
            rc = dd_index_write_recs(bw, recs, m);
    }
    sl_buf_release(&buf);
    return rc;
}

/* ---- Redis backend --------------------------------------------------------------------- */

int dd_fuzzy_all_ok(const struct sl_world *w, int rc, const char *peer)
{
    int64_t bad = rc != 0;
    sl_world_allreduce_i64(w, &bad, 1, SL_MAX);
    if (bad && !rc)
        rc = sl_err_set(SL_ERR_STATE, "%s", peer);
    return rc;
}

static char *run_prefix(const struct dd_corpus *c, const char *settings, const char *kind)
{
    struct sl_hasher h;
    sl_hasher_init(&h, 17);
    sl_hasher_str(&h, settings);
    for (size_t i = 0; i < c->in.n; i++) {
        sl_hasher_str(&h, c->in.v[i].path);
        sl_hasher_u64(&h, c->in.v[i].size);
    }
    return sl_xasprintf("sluice:%s:%016llx", kind, (unsigned long long)sl_hasher_final(&h));
}

/* Equal plans write equal Redis keys: the settings and every input's path, size and time. */
static uint64_t run_plan(const struct dd_corpus *c, const char *settings)
{
    struct sl_hasher h;
    sl_hasher_init(&h, 23);
    sl_hasher_str(&h, settings);
    for (size_t i = 0; i < c->in.n; i++) {
        sl_hasher_str(&h, c->in.v[i].path);
        sl_hasher_u64(&h, c->in.v[i].size);
        sl_hasher_u64(&h, (uint64_t)c->in.v[i].mtime);
    }
    return sl_hasher_final(&h);
}

/* A warning for the caller to print (rank 0). */
static void warn(struct dd_fuzzy *z, const char *msg)
{
    sl_buf_append(&z->warnings, msg, strlen(msg) + 1);
}

/* Where this run's buckets go. */
static void choose_prefix(struct dd_fuzzy *z)
{
    const struct dd_fuzzy_cfg *cfg = z->cfg;
    if (cfg->index_in && cfg->index_out) {
        z->prefix = sl_xstrdup(z->old_prefix); /* the index grows in place */
    } else if (cfg->index_in) {
        z->prefix = run_prefix(z->c, z->settings, "run");
        z->query_old = z->old_prefix;
        z->temp_keys = 1;
    } else if (cfg->index_out) {
        z->prefix = cfg->redis_prefix ? sl_xstrdup(cfg->redis_prefix)
                                      : run_prefix(z->c, z->settings, "index");
    } else {
        z->prefix = cfg->redis_prefix ? sl_xstrdup(cfg->redis_prefix)
                                      : run_prefix(z->c, z->settings, "run");
        z->temp_keys = 1;
    }
}

int dd_fuzzy_redis_open(struct dd_fuzzy *z)
{
    const struct dd_fuzzy_cfg *cfg = z->cfg;
    const struct sl_world *w = z->c->w;
    choose_prefix(z);
    const char *pw = getenv("SLUICE_REDIS_PASSWORD");
    int rc = lsh_redis_open(&z->lr, cfg->redis, pw && *pw ? pw : NULL, z->prefix, cfg->redis_batch,
                            cfg->redis_timeout);
    if (!rc && w->rank == 0 && *redis_cluster_unsynced(z->lr.rc)) {
        char *msg = sl_xasprintf("redis master %s has no synced replica: if it fails, the run "
                                 "stops\nhint: wait until every replica reports "
                                 "master_link_status:up (redis-cli -p PORT info replication)",
                                 redis_cluster_unsynced(z->lr.rc));
        warn(z, msg);
        free(msg);
    }
    /* rank 0 takes the prefix (lease, marker, node checks) before any rank writes */
    z->lr_open = !rc;
    rc = dd_fuzzy_all_ok(w, rc, "another rank could not connect to the Redis Cluster");
    if (!rc && w->rank == 0) {
        uint64_t gen = z->c->gen;
        struct lsh_redis_plan p = { .index = z->iout,
                                    .grow = cfg->index_in && cfg->index_out,
                                    .settings = z->f->minhash_json,
                                    .plan = run_plan(z->c, z->settings),
                                    .gen = gen,
                                    .old_prefix = z->query_old,
                                    .old_dir = cfg->index_in,
                                    .old_gen = gen ? gen - 1 : 0 };
        rc = lsh_redis_claim(&z->lr, &p);
        if (z->lr.warning[0])
            warn(z, z->lr.warning);
    }
    return dd_fuzzy_all_ok(w, rc, "rank 0 could not claim the Redis prefix");
}

/* Rank 0 checks that the cluster kept every key so far (lsh_redis_check); all ranks learn
 * the answer. */
static int redis_check(struct dd_fuzzy *z, int rc)
{
    if (!rc && z->c->w->rank == 0)
        rc = lsh_redis_check(&z->lr);
    return dd_fuzzy_all_ok(z->c->w, rc, "rank 0 found that the Redis Cluster lost keys of the run");
}

/* Candidate pairs from the Redis Cluster: every rank's buckets are in before any query. */
static int redis_pairs(struct dd_fuzzy *z, struct dd_edge **e, size_t *ne, size_t *cap)
{
    const struct sl_world *w = z->c->w;
    const struct dd_fuzzy_params *f = z->f;
    const struct dd_sigs *p = &z->sig;
    int rc = lsh_redis_insert(&z->lr, p->gids.v, p->keys.v, p->gids.n, f->bands);
    /* every insert is in, and still there, before any query */
    rc =
        redis_check(z, dd_fuzzy_all_ok(w, rc, "another rank failed to write to the Redis Cluster"));
    if (!rc)
        rc = lsh_redis_pairs(&z->lr, z->query_old, p->gids.v, p->keys.v, p->gids.n, f->bands,
                             f->anchors, e, ne, cap);
    /* nothing the queries read was lost while they ran */
    rc = redis_check(z, dd_fuzzy_all_ok(w, rc, "another rank failed to read the Redis Cluster"));
    if (!rc && z->temp_keys)
        rc = lsh_redis_delete(&z->lr, p->keys.v, p->gids.n, f->bands);
    rc = dd_fuzzy_all_ok(w, rc, "another rank failed to delete its Redis keys");
    if (!rc && w->rank == 0)
        rc = lsh_redis_finish(&z->lr);
    return dd_fuzzy_all_ok(w, rc, "rank 0 could not finish the Redis prefix");
}

/* ---- the pairs --------------------------------------------------------------------------- */

/* Move pairs to the rank of their first document and drop repeats (so that counts and
 * outputs do not depend on which rank found a pair). */
static int pairs_to_owner(const struct dd_corpus *c, struct dd_edge **e, size_t *ne)
{
    int *dest = sl_xmalloc((*ne + 1) * sizeof(int));
    for (size_t i = 0; i < *ne; i++)
        dest[i] = dd_corpus_owner(c, (*e)[i].u);
    struct sl_buf buf = SL_BUF_INIT;
    size_t m;
    int rc = dd_shuffle(c->w, *e, *ne, sizeof(**e), dest, &buf, &m);
    free(dest);
    free(*e);
    size_t len;
    *e = (struct dd_edge *)sl_buf_detach(&buf, &len);
    *ne = rc ? 0 : dd_edges_sort_unique(*e, m);
    return rc;
}

int dd_fuzzy_candidates(struct dd_fuzzy *z, struct dd_edge **e, size_t *ne)
{
    size_t cap = 0;
    int rc;
    double t0 = sl_now();
    if (!z->redis)
        rc = memory_pairs(z->c->w, z->f, &z->sig, &z->old, DD_GID(z->c->gen, 0, 0),
                          z->iout ? &z->bw : NULL, e, ne, &cap);
    else
        rc = redis_pairs(z, e, ne, &cap);
    z->t_lsh = sl_now() - t0;
    free(z->old.r);
    z->old.r = NULL;
    if (!rc)
        rc = pairs_to_owner(z->c, e, ne);
    z->counts[0] = *ne;
    return rc;
}
