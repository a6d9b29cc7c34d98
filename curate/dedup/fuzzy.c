/* sluice dedup fuzzy: MinHash signatures and LSH bands per document, candidate pairs from
 * shared buckets (in memory, shuffled to the bucket's owner rank, or in a Redis Cluster),
 * optional verification by the true Jaccard similarity of the shingle sets, connected
 * components across ranks, and the first document of each component kept. */
#include "curate/commands.h"
#include "curate/dedup/dedup.h"

#include "core/alloc.h"
#include "core/atomic.h"
#include "core/buf.h"
#include "core/doc.h"
#include "core/err.h"
#include "core/file.h"
#include "core/hash.h"
#include "core/jsonl.h"
#include "core/log.h"
#include "core/options.h"
#include "core/progress.h"
#include "core/stage.h"
#include "core/stream.h"
#include "core/world.h"
#include "curate/dedup/components.h"
#include "curate/dedup/corpus.h"
#include "curate/dedup/lsh.h"
#include "curate/dedup/lsh_index.h"
#include "curate/dedup/lsh_redis.h"
#include "curate/dedup/minhash.h"
#include "curate/dedup/normalize.h"
#include "curate/dedup/redis_cluster.h"
#include "curate/dedup/shingle.h"
#include "curate/dedup/shuffle.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

const char *const cmd_dedup_fuzzy_usage[] = {
    "sluice dedup fuzzy --out DIR [--preset datatrove|nemo] [options] IN...",
    "",
    "Remove near-duplicates. Each text is normalised (--norm), cut into shingles (--ngram",
    "words:N or chars:N; a text shorter than one shingle is hashed whole), and MinHashed",
    "with --bands x --rows permutations of its 64-bit shingle hashes. Documents that share",
    "a band are candidate pairs; --verify keeps only pairs whose true Jaccard similarity",
    "of shingles is at least --threshold. Connected documents form a cluster, of which the",
    "first in input order is kept. Buckets live in memory (shuffled to owner ranks under",
    "mpirun) or in a Redis Cluster (--backend redis); the answer is the same either way",
    "and for any number of ranks. Writes part-NNNNN.jsonl.zst per input file,",
    "duplicates.jsonl, clusters.jsonl (and pairs.jsonl with --pairs) and manifest.json.",
    "Presets: datatrove = words:5, 14x8, --norm all (the default); nemo = chars:24, 20x13,",
    "--norm none.",
    NULL,
};

struct fz {
    struct dd_shingler sh;
    unsigned norm, bands, rows, anchors;
    struct minhash mh;
    uint64_t seed;
    double threshold;
    int verify;
    char minhash_json[512]; /* the settings an index must share */
};

struct opts {
    const char *out, *preset, *ngram, *norm, *family, *backend, *redis, *redis_prefix;
    const char *index_in, *index_out, *text_key, *id_key;
    long bands, rows, anchors, level, redis_batch;
    double redis_timeout;
    uint64_t seed, max_line;
    double threshold;
    int verify, pairs, force, wait, repair_utf8;
    /* for the settings: "fuzzy", the MinHash settings (JSON), --index-in's generation */
    const char *mode, *minhash;
    uint64_t gen;
    struct fz f; /* what the options resolve to (the preset's defaults applied) */
    enum dd_mh_family fam;
};

/* The options' table: the dispatcher's parser and -h, the settings of the plan (rows marked
 * SL_OPTF_OUTPUT; the MinHash options through "minhash") and the pipeline's dedup_fuzzy
 * keys. */
#define SL_OPT_STRUCT struct opts

const struct sl_option cmd_dedup_fuzzy_options[] = {
    SL_SETTING(SL_OPT_STR, "mode", mode, .def = "fuzzy"),
    SL_OPT_STRING('o', "out", out, "DIR", "output directory (created)", .required = 1),
    SL_OPT_GROUP_("MinHash and LSH"),
    SL_OPT_CHOICE(0, "preset", preset, "datatrove|nemo", "defaults for the four settings below",
                  .def = "datatrove"),
    SL_OPT_STRING(0, "ngram", ngram, "SPEC", "shingles: words:N or chars:N"),
    /* -1: the preset's */
    SL_OPT_INTEGER(0, "bands", bands, "B", "LSH bands", .def = "-1", .flags = SL_OPTF_DEF_UNSAID),
    SL_OPT_INTEGER(0, "rows", rows, "R", "rows (permutations) per band", .def = "-1",
                   .flags = SL_OPTF_DEF_UNSAID),
    SL_OPT_STRING(0, "norm", norm, "LIST",
                  "normalise first: lower,punct,space,digits,accents | all | none",
                  .flags = SL_OPTF_LIST),
    SL_OPT_UINT64(0, "seed", seed, "N", "seed of the hash functions", .def = "1"),
    SL_OPT_CHOICE(0, "hash", family, "multiply|multiply32|mersenne",
                  "permutations: (a*h+b) mod 2^64, 32-bit mod 2^32, or mod 2^61-1",
                  .def = "multiply"),
    SL_SETTING(SL_OPT_JSON_, "minhash", minhash),
    SL_OPT_GROUP_("Pairs"),
    SL_OPT_FLAG_(0, "verify", verify,
                 "keep only candidate pairs whose true Jaccard is >= --threshold",
                 .flags = SL_OPTF_OUTPUT),
    SL_OPT_DOUBLE(0, "threshold", threshold, "J", "Jaccard threshold of --verify", .def = "0.8",
                  .flags = SL_OPTF_OUTPUT),
    /* -1: 1, or 8 with --verify */
    SL_OPT_INTEGER(0, "anchors", anchors, "N",
                   "pair each bucket member with up to N earlier ones (default 1; 8 with --verify)",
                   .def = "-1", .flags = SL_OPTF_OUTPUT | SL_OPTF_DEF_UNSAID),
    SL_OPT_GROUP_("Index"),
    SL_OPT_CHOICE(0, "backend", backend, "memory|redis", "where buckets live", .def = "memory"),
    SL_OPT_STRING(0, "redis", redis, "HOST:PORT,...", "Redis Cluster seed nodes (--backend redis)",
                  .flags = SL_OPTF_LIST),
    SL_OPT_STRING(0, "redis-prefix", redis_prefix, "P",
                  "key prefix in Redis (default sluice:run:<hash of the run>)"),
    SL_OPT_INTEGER(0, "redis-batch", redis_batch, "N", "commands per pipelined batch to one node",
                   .def = "10000"),
    SL_OPT_DOUBLE(0, "redis-timeout", redis_timeout, "SECONDS",
                  "how long to wait for a failed node or a failover", .def = "60"),
    SL_OPT_STRING(0, "index-out", index_out, "DIR", "save the band index for later runs"),
    SL_OPT_STRING(0, "index-in", index_in, "DIR",
                  "also dedup against the documents of this saved index",
                  .flags = SL_OPTF_OUTPUT | SL_OPTF_PATH),
    SL_SETTING(SL_OPT_U64, "index_generation", gen),
    SL_OPT_GROUP_("Input and output"),
    SL_OPT_TEXT_KEY(text_key),
    SL_OPT_ID_KEY(id_key),
    SL_OPT_FLAG_(0, "pairs", pairs, "also write the pairs found to OUT/pairs.jsonl",
                 .flags = SL_OPTF_OUTPUT),
    SL_OPT_MAX_LINE(max_line, .omit = SL_OMIT_DEF),
    SL_OPT_ZSTD_LEVEL(level, .flags = SL_OPTF_OUTPUT),
    SL_OPT_REPAIR_UTF8(repair_utf8),
    SL_OPT_FORCE(force),
    SL_OPT_WAIT(wait),
    SL_OPT_COMMON,
    SL_OPT_END_,
};

#define BANDS_PER_ROUND 4

/* ---- pass 1: signatures ----------------------------------------------------------------- */

struct p1 {
    const struct fz *f;
    struct sl_buf nbuf;
    struct dd_u64s sh;
    uint64_t sig[DD_MH_MAX_PERM];
    struct dd_u64s gids, keys;
    uint64_t empty, whole;
    struct dd_index_writer *ids; /* --index-out: ids of this rank's documents */
    const char *id_key;
};

/* The shingles of a document (normalised first). */
static size_t doc_shingles(const struct fz *f, struct sl_doc *d, struct sl_buf *nbuf,
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

static int p1_doc(void *ctx, uint64_t gid, struct sl_doc *d)
{
    struct p1 *p = ctx;
    const struct fz *f = p->f;
    if (p->ids) {
        size_t len;
        const char *id = sl_doc_get_raw(d, p->id_key, &len);
        int rc = dd_index_write_id(p->ids, gid, id ? id : "null", id ? len : 4);
        if (rc)
            return rc;
    }
    int whole = 0;
    size_t n = doc_shingles(f, d, &p->nbuf, &p->sh, &whole);
    if (!n) {
        p->empty++;
        return 0;
    }
    p->whole += (uint64_t)whole;
    minhash_sign(&f->mh, p->sh.v, p->sh.n, p->sig);
    dd_u64s_reserve(&p->keys, f->bands);
    minhash_band_keys(p->sig, f->bands, f->rows, f->seed, p->keys.v + p->keys.n);
    p->keys.n += f->bands;
    dd_u64s_push(&p->gids, gid);
    return 0;
}

/* ---- memory backend -------------------------------------------------------------------- */

struct old_index {
    struct lsh_rec *r; /* records this rank owns, sorted */
    size_t n, cap;
    int P, rank;
};

static int keep_owned(uint32_t band, uint64_t key, void *ctx)
{
    struct old_index *o = ctx;
    return lsh_owner(band, key, o->P) == o->rank;
}

static int memory_pairs(const struct sl_world *w, const struct fz *f, const struct p1 *p,
                        struct old_index *old, uint64_t min_new, struct dd_index_writer *bw,
                        struct dd_edge **e, size_t *ne, size_t *cap)
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

/* ---- verification ------------------------------------------------------------------------ */

/* Shingle sets by gid: entries point into one pool. */
struct sset {
    struct sset_ent {
        uint64_t gid;
        size_t off, n;
    } *e;
    size_t n, cap;
    struct dd_u64s pool;
};

static void sset_add(struct sset *s, uint64_t gid, const uint64_t *v, size_t n)
{
    if (s->n == s->cap) {
        s->cap = s->cap ? s->cap * 2 : 1024;
        s->e = sl_xrealloc(s->e, s->cap * sizeof(*s->e));
    }
    s->e[s->n].gid = gid;
    s->e[s->n].off = s->pool.n;
    s->e[s->n].n = n;
    s->n++;
    if (!n)
        return;
    dd_u64s_reserve(&s->pool, n);
    memcpy(s->pool.v + s->pool.n, v, n * sizeof(uint64_t));
    s->pool.n += n;
}

static int cmp_ent(const void *pa, const void *pb)
{
    const struct sset_ent *a = pa, *b = pb;
    return a->gid < b->gid ? -1 : a->gid > b->gid;
}

static const struct sset_ent *sset_find(const struct sset *s, uint64_t gid)
{
    struct sset_ent key = { gid, 0, 0 };
    return s->n ? bsearch(&key, s->e, s->n, sizeof(*s->e), cmp_ent) : NULL;
}

static void sset_release(struct sset *s)
{
    free(s->e);
    dd_u64s_release(&s->pool);
    memset(s, 0, sizeof(*s));
}

struct need_ctx {
    const struct fz *f;
    const uint64_t *need; /* sorted gids whose shingles this rank must produce */
    size_t n, k;
    struct sset *set;
    struct sl_buf nbuf;
    struct dd_u64s sh;
};

static int need_doc(void *ctx, uint64_t gid, struct sl_doc *d)
{
    struct need_ctx *c = ctx;
    while (c->k < c->n && c->need[c->k] < gid)
        c->k++;
    if (c->k >= c->n || c->need[c->k] != gid)
        return 0;
    int whole;
    doc_shingles(c->f, d, &c->nbuf, &c->sh, &whole);
    dd_u64s_sort_unique(&c->sh);
    sset_add(c->set, gid, c->sh.v, c->sh.n);
    return 0;
}

struct req {
    uint64_t gid;
    uint64_t rank;
};

static int cmp_req(const void *pa, const void *pb)
{
    const struct req *a = pa, *b = pb;
    if (a->rank != b->rank)
        return a->rank < b->rank ? -1 : 1;
    return a->gid < b->gid ? -1 : a->gid > b->gid;
}

/* Ask the ranks that read the second documents of the pairs for their shingles: `need`
 * gets the gids whose shingles this rank must produce (for its pairs and for the requests
 * it receives, in `in`: sorted by asking rank, then gid). */
static int request_shingles(const struct dd_corpus *c, const struct dd_edge *E, size_t m,
                            struct dd_u64s *need, struct req **in, size_t *nin)
{
    const struct sl_world *w = c->w;
    struct req *rq = sl_xmalloc((m + 1) * sizeof(*rq));
    int *rdest = sl_xmalloc((m + 1) * sizeof(int));
    size_t nrq = 0;
    for (size_t i = 0; i < m; i++) {
        dd_u64s_push(need, E[i].u);
        int ov = dd_corpus_owner(c, E[i].v);
        if (ov == w->rank) {
            dd_u64s_push(need, E[i].v);
        } else {
            rq[nrq].gid = E[i].v;
            rq[nrq].rank = (uint64_t)w->rank;
            rdest[nrq] = ov;
            nrq++;
        }
    }
    struct sl_buf buf = SL_BUF_INIT;
    int rc = dd_shuffle(w, rq, nrq, sizeof(*rq), rdest, &buf, &nrq);
    free(rq);
    free(rdest);
    size_t len;
    *in = NULL;
    *nin = 0;
    if (!rc) {
        struct req *q = (struct req *)sl_buf_detach(&buf, &len);
        if (nrq > 1) /* qsort wants a valid pointer even for nothing */
            qsort(q, nrq, sizeof(*q), cmp_req);
        size_t k = 0;
        for (size_t i = 0; i < nrq; i++)
            if (!k || q[i].gid != q[k - 1].gid || q[i].rank != q[k - 1].rank)
                q[k++] = q[i];
        for (size_t i = 0; i < k; i++)
            dd_u64s_push(need, q[i].gid);
        dd_u64s_sort_unique(need);
        *in = q;
        *nin = k;
    }
    sl_buf_release(&buf);
    return rc;
}

/* Read this rank's files again for the shingles of the needed documents. */
static int local_shingles(struct dd_corpus *c, const struct fz *f, const struct dd_u64s *need,
                          struct sset *local)
{
    struct need_ctx nc;
    memset(&nc, 0, sizeof(nc));
    nc.f = f;
    nc.need = need->v;
    nc.n = need->n;
    nc.set = local;
    int rc = dd_corpus_scan(c, "dedup fuzzy: verifying", 0, need_doc, &nc);
    sl_buf_release(&nc.nbuf);
    dd_u64s_release(&nc.sh);
    if (local->n > 1) /* qsort wants a valid pointer even for nothing */
        qsort(local->e, local->n, sizeof(*local->e), cmp_ent);
    return rc;
}

/* Answer the requests: per asking rank, records (gid, n, n hashes); what this rank asked
 * for comes back into `remote`. */
static int answer_requests(const struct sl_world *w, const struct req *in, size_t nin,
                           const struct sset *local, struct sset *remote)
{
    int P = w->size;
    uint64_t *cnt = sl_xcalloc((size_t)P, sizeof(uint64_t));
    uint64_t *off = sl_xcalloc((size_t)P, sizeof(uint64_t));
    uint64_t *rcnt = sl_xcalloc((size_t)P, sizeof(uint64_t));
    struct sl_buf send = SL_BUF_INIT, buf = SL_BUF_INIT;
    for (int r = 0; r < P; r++) {
        off[r] = send.len;
        for (size_t i = 0; i < nin; i++) {
            if ((int)in[i].rank != r)
                continue;
            const struct sset_ent *x = sset_find(local, in[i].gid);
            uint64_t hdr[2] = { in[i].gid, x ? x->n : 0 };
            sl_buf_append(&send, hdr, sizeof(hdr));
            if (x && x->n)
                sl_buf_append(&send, local->pool.v + x->off, x->n * sizeof(uint64_t));
        }
        cnt[r] = send.len - off[r];
    }
    int rc = sl_world_alltoallv(w, send.data ? send.data : "", cnt, off, &buf, rcnt);
    sl_buf_release(&send);
    free(cnt);
    free(off);
    free(rcnt);
    for (size_t p = 0; !rc && p + 16 <= buf.len;) {
        uint64_t hdr[2];
        memcpy(hdr, buf.data + p, 16);
        p += 16;
        sset_add(remote, hdr[0], (const uint64_t *)(buf.data + p), hdr[1]);
        p += hdr[1] * 8;
    }
    if (remote->n > 1) /* qsort wants a valid pointer even for nothing */
        qsort(remote->e, remote->n, sizeof(*remote->e), cmp_ent);
    sl_buf_release(&buf);
    return rc;
}

/* The pairs whose shingle sets have Jaccard >= threshold, with it. */
static void similar_pairs(const struct fz *f, const struct dd_edge *E, size_t m,
                          const struct sset *local, const struct sset *remote, struct dd_pair **out,
                          size_t *nout)
{
    *out = sl_xmalloc((m + 1) * sizeof(**out));
    for (size_t i = 0; i < m; i++) {
        const struct sset_ent *a = sset_find(local, E[i].u);
        const struct sset_ent *b = sset_find(local, E[i].v);
        const uint64_t *bp = local->pool.v;
        if (!b) {
            b = sset_find(remote, E[i].v);
            bp = remote->pool.v;
        }
        if (!a || !b)
            continue; /* cannot happen: every needed set was produced */
        double j = dd_jaccard(local->pool.v + a->off, a->n, bp + b->off, b->n);
        if (j >= f->threshold) {
            (*out)[*nout].u = E[i].u;
            (*out)[*nout].v = E[i].v;
            (*out)[*nout].jaccard = j;
            (*nout)++;
        }
    }
}

/* Keep the pairs whose shingle sets have Jaccard >= threshold. Pairs end up on the rank of
 * their first document. Takes e. */
static int verify_pairs(struct dd_corpus *c, const struct fz *f, struct dd_edge *e, size_t ne,
                        struct dd_pair **out, size_t *nout, uint64_t *checked)
{
    const struct sl_world *w = c->w;
    struct sl_buf buf = SL_BUF_INIT;
    int *dest = sl_xmalloc((ne + 1) * sizeof(int));
    for (size_t i = 0; i < ne; i++)
        dest[i] = dd_corpus_owner(c, e[i].u);
    size_t m;
    int rc = dd_shuffle(w, e, ne, sizeof(*e), dest, &buf, &m);
    free(dest);
    free(e);
    if (rc) {
        sl_buf_release(&buf);
        return rc;
    }
    size_t len;
    struct dd_edge *E = (struct dd_edge *)sl_buf_detach(&buf, &len);
    m = dd_edges_sort_unique(E, m);

    struct dd_u64s need = { 0 };
    struct req *in = NULL;
    size_t nin = 0;
    struct sset local = { 0 }, remote = { 0 };
    rc = request_shingles(c, E, m, &need, &in, &nin);
    if (!rc)
        rc = local_shingles(c, f, &need, &local);
    dd_u64s_release(&need);
    if (!rc)
        rc = answer_requests(w, in, nin, &local, &remote);
    free(in);

    *out = NULL;
    *nout = 0;
    *checked = m;
    if (!rc)
        similar_pairs(f, E, m, &local, &remote, out, nout);
    free(E);
    sset_release(&local);
    sset_release(&remote);
    return rc;
}

/* ---- index in and out -------------------------------------------------------------------- */

struct old_ids {
    struct member_id {
        uint64_t gid;
        char *id;
        size_t len;
    } *v;
    size_t n, cap;
    const uint64_t *want; /* sorted */
    size_t nwant;
};

static int bsearch_u64(const uint64_t *v, size_t n, uint64_t x)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (v[mid] < x)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < n && v[lo] == x;
}

static int collect_id(uint64_t gid, const char *id, size_t len, void *ctx)
{
    struct old_ids *o = ctx;
    if (!bsearch_u64(o->want, o->nwant, gid))
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
    const struct member_id *a = pa, *b = pb;
    return a->gid < b->gid ? -1 : a->gid > b->gid;
}

static int old_id_lookup(void *ctx, uint64_t gid, struct sl_buf *out)
{
    struct old_ids *o = ctx;
    struct member_id key = { gid, NULL, 0 };
    struct member_id *x = o->n ? bsearch(&key, o->v, o->n, sizeof(*o->v), cmp_mid) : NULL;
    if (!x)
        return SL_ERR_NOTFOUND;
    return sl_buf_append(out, x->id, x->len);
}

/* Call fn for each "ids-*" file in dir. */
static int for_each_ids_file(const char *dir, int (*fn)(const char *path, void *ctx), void *ctx)
{
    DIR *d = opendir(dir);
    if (!d)
        return sl_err_set(SL_ERR_IO, "cannot read the dedup index '%s': %s", dir, strerror(errno));
    struct dirent *de;
    int rc = 0;
    char **names = NULL;
    size_t n = 0;
    while ((de = readdir(d)))
        if (!strncmp(de->d_name, "ids-", 4) && strstr(de->d_name, ".sldx.zst")) {
            names = sl_xrealloc(names, (n + 1) * sizeof(*names));
            names[n++] = sl_xasprintf("%s/%s", dir, de->d_name);
        }
    closedir(d);
    for (size_t i = 0; i < n; i++) {
        if (!rc)
            rc = fn(names[i], ctx);
        free(names[i]);
    }
    free(names);
    return rc;
}

static int read_ids_file(const char *path, void *ctx)
{
    return dd_index_read_ids(path, collect_id, ctx);
}

static int count_file(const char *path, void *ctx)
{
    (void)path;
    ++*(size_t *)ctx;
    return 0;
}

struct copy_ctx {
    const char *to_dir;
};

static int copy_ids_file(const char *path, void *ctx)
{
    struct copy_ctx *c = ctx;
    const char *base = strrchr(path, '/');
    char *to = sl_xasprintf("%s/%s", c->to_dir, base ? base + 1 : path);
    int rc = sl_copy_file(path, to);
    free(to);
    return rc;
}

static int same_dir(const char *a, const char *b)
{
    struct stat x, y;
    return a && b && stat(a, &x) == 0 && stat(b, &y) == 0 && x.st_dev == y.st_dev &&
           x.st_ino == y.st_ino;
}

/* ---- the run ------------------------------------------------------------------------------- */

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

static int cmp_pair(const void *pa, const void *pb)
{
    const struct dd_pair *a = pa, *b = pb;
    if (a->u != b->u)
        return a->u < b->u ? -1 : 1;
    return a->v < b->v ? -1 : a->v > b->v;
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

/* rc on every rank: this rank's error, or `peer` when another rank failed. */
static int all_ok(const struct sl_world *w, int rc, const char *peer)
{
    int64_t bad = rc != 0;
    sl_world_allreduce_i64(w, &bad, 1, SL_MAX);
    if (bad && !rc)
        rc = sl_err_set(SL_ERR_STATE, "%s", peer);
    return rc;
}

static void print_stats(double t_lsh, unsigned rounds, uint64_t rss_max_kb, uint64_t rss_mean_kb)
{
    sl_debug("lsh stage %.3f s (slowest rank), %u component rounds", t_lsh, rounds);
    sl_debug("peak memory per rank: max %.1f MB, mean %.1f MB", rss_max_kb / 1024.0,
             rss_mean_kb / 1024.0);
}

static int fail(int rc)
{
    sl_error("%s", sl_err_msg());
    return rc;
}

/* One run, built up step by step: the corpus, the index it builds on, the stage, the Redis
 * buckets, pass 1, pairs, clusters, outputs, the index it writes. */
struct fuzzy_run {
    const struct opts *o;
    const struct fz *f;
    struct sl_world *w;
    int redis, iout;
    struct dd_corpus c;
    struct old_index old; /* --index-in: its band records this rank owns (memory backend) */
    char *old_prefix;     /* --index-in: its Redis key prefix */
    struct sl_buf settings;
    struct sl_stage st;
    struct lsh_redis lr;
    char *prefix;          /* of this run's Redis buckets */
    const char *query_old; /* prefix of the index's buckets, when they are not this run's */
    int temp_keys;         /* delete this run's buckets once the pairs are known */
    struct dd_index_writer idw, bw; /* --index-out: ids, bands */
    struct p1 p;
    double t_lsh;
    uint64_t counts[2]; /* candidate, verified pairs */
    struct dd_pair *pairs;
    size_t np;
    struct dd_fate *fates;
    size_t nf;
    unsigned rounds;
    struct sl_buf allp;  /* every pair, sorted, on rank 0 (--pairs) */
    struct old_ids oid;  /* ids of the index's documents in this run's clusters (rank 0) */
    struct dd_u64s want; /* their gids */
    uint64_t groups;
    struct sl_counters extra, totals;
    int begun;   /* the stage began */
    int lr_open; /* lr is connected */
};

/* Read the meta, ids and band records of --index-in: the index this run builds on. */
static int index_in_read(struct fuzzy_run *r)
{
    const struct opts *o = r->o;
    char *settings = NULL, *backend = NULL;
    uint64_t old_gen = 0;
    int parts = 0;
    int rc = dd_index_read_meta(o->index_in, &settings, &old_gen, &parts, &backend, &r->old_prefix);
    if (!rc && strcmp(settings, r->f->minhash_json))
        rc = sl_err_set(SL_ERR_CONFIG,
                        "the index '%s' was built with other MinHash settings: %s\nhint: "
                        "use the same --preset/--ngram/--bands/--rows/--norm/--seed as "
                        "when it was written (these are %s)",
                        o->index_in, settings, r->f->minhash_json);
    if (!rc && strcmp(backend, o->backend))
        rc = sl_err_set(SL_ERR_CONFIG,
                        "the index '%s' was built with --backend %s\nhint: use --backend %s",
                        o->index_in, backend, backend);
    if (!rc && old_gen >= 255)
        rc = sl_err_set(SL_ERR_UNSUPPORTED, "the index '%s' has 255 generations already",
                        o->index_in);
    /* the ids files name the documents of earlier runs in this run's clusters */
    size_t nids = 0;
    if (!rc)
        rc = for_each_ids_file(o->index_in, count_file, &nids);
    if (!rc && nids == 0)
        rc = sl_err_set(SL_ERR_CORRUPT,
                        "the dedup index '%s' has no ids files (ids-GEN-RANK.sldx.zst): the "
                        "ids of its documents are missing\nhint: copy the whole index "
                        "directory that --index-out wrote",
                        o->index_in);
    for (int p = 0; !rc && !r->redis && p < parts; p++) {
        char *path = sl_xasprintf("%s/bands-%05d.sldx.zst", o->index_in, p);
        rc = dd_index_read_recs(path, keep_owned, &r->old, &r->old.r, &r->old.n, &r->old.cap);
        free(path);
    }
    lsh_sort(r->old.r, r->old.n);
    free(settings);
    free(backend);
    r->c.gen = old_gen + 1;
    return rc;
}

/* The settings that make a run's outputs what they are (for resuming and the plan): the
 * table's, with the values the options resolved to. */
static void fuzzy_settings(struct fuzzy_run *r)
{
    struct opts o = *r->o;
    o.minhash = r->f->minhash_json;
    o.anchors = (long)r->f->anchors;
    o.gen = r->c.gen;
    sl_options_settings_json(cmd_dedup_fuzzy_options, &o, &r->settings);
}

/* Connect to the Redis Cluster, choosing where this run's buckets go. */
static int redis_open(struct fuzzy_run *r)
{
    const struct opts *o = r->o;
    if (o->index_in && o->index_out) {
        r->prefix = sl_xstrdup(r->old_prefix); /* the index grows in place */
    } else if (o->index_in) {
        r->prefix = run_prefix(&r->c, r->settings.data, "run");
        r->query_old = r->old_prefix;
        r->temp_keys = 1;
    } else if (o->index_out) {
        r->prefix = o->redis_prefix ? sl_xstrdup(o->redis_prefix)
                                    : run_prefix(&r->c, r->settings.data, "index");
    } else {
        r->prefix = o->redis_prefix ? sl_xstrdup(o->redis_prefix)
                                    : run_prefix(&r->c, r->settings.data, "run");
        r->temp_keys = 1;
    }
    const char *pw = getenv("SLUICE_REDIS_PASSWORD");
    int rc = lsh_redis_open(&r->lr, o->redis, pw && *pw ? pw : NULL, r->prefix,
                            (unsigned)o->redis_batch, o->redis_timeout);
    if (!rc && r->w->rank == 0 && *redis_cluster_unsynced(r->lr.rc))
        sl_warn("redis master %s has no synced replica: if it fails, the run stops\nhint: "
                "wait until every replica reports master_link_status:up (redis-cli -p PORT "
                "info replication)",
                redis_cluster_unsynced(r->lr.rc));
    /* rank 0 takes the prefix (lease, marker, node checks) before any rank writes */
    r->lr_open = !rc;
    rc = all_ok(r->w, rc, "another rank could not connect to the Redis Cluster");
    if (!rc && r->w->rank == 0) {
        struct lsh_redis_plan p = { .index = r->iout,
                                    .grow = o->index_in && o->index_out,
                                    .settings = r->f->minhash_json,
                                    .plan = run_plan(&r->c, r->settings.data),
                                    .gen = r->c.gen,
                                    .old_prefix = r->query_old,
                                    .old_dir = o->index_in,
                                    .old_gen = r->c.gen ? r->c.gen - 1 : 0 };
        rc = lsh_redis_claim(&r->lr, &p);
        if (r->lr.warning[0])
            sl_warn("%s", r->lr.warning);
    }
    return all_ok(r->w, rc, "rank 0 could not claim the Redis prefix");
}

/* Rank 0 checks that the cluster kept every key so far (lsh_redis_check); all ranks learn
 * the answer. */
static int redis_check(struct fuzzy_run *r, int rc)
{
    if (!rc && r->w->rank == 0)
        rc = lsh_redis_check(&r->lr);
    return all_ok(r->w, rc, "rank 0 found that the Redis Cluster lost keys of the run");
}

/* Open this rank's --index-out files: the ids of its documents and (memory backend) the
 * band records it owns. */
static int index_out_open(struct fuzzy_run *r)
{
    const struct sl_world *w = r->w;
    const char *dir = r->o->index_out;
    int rc = 0;
    if (w->rank == 0)
        rc = sl_mkdir_p(dir);
    int64_t bad = rc != 0;
    sl_world_allreduce_i64(w, &bad, 1, SL_MAX);
    if (bad && !rc)
        rc = sl_err_set(SL_ERR_IO, "rank 0 cannot create '%s'", dir);
    if (!rc) {
        char *p =
            sl_xasprintf("%s/ids-%03llu-%05d.sldx.zst", dir, (unsigned long long)r->c.gen, w->rank);
        rc = dd_index_writer_open(&r->idw, p, DD_INDEX_MAGIC_IDS);
        free(p);
    }
    if (!rc && !r->redis) {
        char *p = sl_xasprintf("%s/bands-%05d.sldx.zst", dir, w->rank);
        rc = dd_index_writer_open(&r->bw, p, DD_INDEX_MAGIC_BANDS);
        free(p);
    }
    return rc;
}

/* Pass 1: the signatures and band keys of this rank's documents. */
static int pass1(struct fuzzy_run *r)
{
    struct p1 *p = &r->p;
    p->f = r->f;
    p->ids = r->iout ? &r->idw : NULL;
    p->id_key = r->o->id_key;
    int rc = dd_corpus_scan(&r->c, "dedup fuzzy: minhash", 1, p1_doc, p);
    sl_buf_release(&p->nbuf);
    dd_u64s_release(&p->sh);
    return rc;
}

/* Candidate pairs from the Redis Cluster: every rank's buckets are in before any query. */
static int redis_pairs(struct fuzzy_run *r, struct dd_edge **e, size_t *ne, size_t *cap)
{
    const struct sl_world *w = r->w;
    const struct fz *f = r->f;
    const struct p1 *p = &r->p;
    int rc = lsh_redis_insert(&r->lr, p->gids.v, p->keys.v, p->gids.n, f->bands);
    /* every insert is in, and still there, before any query */
    rc = redis_check(r, all_ok(w, rc, "another rank failed to write to the Redis Cluster"));
    if (!rc)
        rc = lsh_redis_pairs(&r->lr, r->query_old, p->gids.v, p->keys.v, p->gids.n, f->bands,
                             f->anchors, e, ne, cap);
    /* nothing the queries read was lost while they ran */
    rc = redis_check(r, all_ok(w, rc, "another rank failed to read the Redis Cluster"));
    if (!rc && r->temp_keys)
        rc = lsh_redis_delete(&r->lr, p->keys.v, p->gids.n, f->bands);
    rc = all_ok(w, rc, "another rank failed to delete its Redis keys");
    if (!rc && w->rank == 0)
        rc = lsh_redis_finish(&r->lr);
    return all_ok(w, rc, "rank 0 could not finish the Redis prefix");
}

/* The candidate pairs (documents sharing a band), on the rank of their first document. */
static int candidate_pairs(struct fuzzy_run *r, struct dd_edge **e, size_t *ne)
{
    size_t cap = 0;
    int rc;
    double t0 = sl_now();
    if (!r->redis)
        rc = memory_pairs(r->w, r->f, &r->p, &r->old, DD_GID(r->c.gen, 0, 0),
                          r->iout ? &r->bw : NULL, e, ne, &cap);
    else
        rc = redis_pairs(r, e, ne, &cap);
    r->t_lsh = sl_now() - t0;
    free(r->old.r);
    r->old.r = NULL;
    if (!rc)
        rc = pairs_to_owner(&r->c, e, ne);
    r->counts[0] = *ne;
    return rc;
}

/* The pairs that count: with --verify those of Jaccard >= threshold, else all. Takes e. */
static int check_pairs(struct fuzzy_run *r, struct dd_edge *e, size_t ne)
{
    int rc = 0;
    if (r->f->verify) {
        uint64_t checked;
        rc = verify_pairs(&r->c, r->f, e, ne, &r->pairs, &r->np, &checked);
        e = NULL;
    } else {
        r->pairs = sl_xmalloc((ne + 1) * sizeof(*r->pairs));
        for (size_t i = 0; i < ne; i++) {
            r->pairs[i].u = e[i].u;
            r->pairs[i].v = e[i].v;
            r->pairs[i].jaccard = -1;
        }
        r->np = ne;
    }
    free(e);
    r->counts[1] = r->np;
    return rc;
}

/* Connected components of the pairs: each document's fate (the document its cluster
 * keeps), on the rank that reads it. */
static int components(struct fuzzy_run *r)
{
    struct dd_edge *labels = NULL;
    size_t nl = 0;
    struct dd_edge *ce = sl_xmalloc((r->np + 1) * sizeof(*ce));
    for (size_t i = 0; i < r->np; i++) {
        ce[i].u = r->pairs[i].u;
        ce[i].v = r->pairs[i].v;
    }
    int rc = dd_components(r->w, ce, r->np, getenv("SLUICE_DEDUP_FORCE_STAR") != NULL, &labels, &nl,
                           &r->rounds);
    if (!rc) {
        r->fates = sl_xmalloc((nl + 1) * sizeof(*r->fates));
        for (size_t i = 0; i < nl; i++) {
            /* documents of the index were settled by their own run: only a cluster's
             * first document (kept) is reported from there */
            if (DD_GID_GEN(labels[i].u) != r->c.gen && labels[i].u != labels[i].v)
                continue;
            r->fates[r->nf].gid = labels[i].u;
            r->fates[r->nf].keep = labels[i].v;
            r->nf++;
        }
        rc = dd_fates_to_owners(&r->c, &r->fates, &r->nf);
    }
    free(labels);
    return rc;
}

/* Every pair on rank 0, sorted, for pairs.jsonl. */
static int gather_pairs(struct fuzzy_run *r)
{
    const struct dd_pair *pairs = r->pairs;
    int rc = sl_world_gather_bytes(r->w, pairs ? (const void *)pairs : "", r->np * sizeof(*pairs),
                                   0, &r->allp, NULL);
    if (!rc && r->w->rank == 0)
        if (r->allp.len / sizeof(*pairs) > 1) /* qsort wants a valid pointer even for nothing */
            qsort(r->allp.data, r->allp.len / sizeof(*pairs), sizeof(*pairs), cmp_pair);
    return rc;
}

/* Rank 0: the ids of the index's documents in this run's clusters and pairs. */
static int read_old_ids(struct fuzzy_run *r)
{
    const char *index_in = r->o->index_in;
    struct dd_u64s *want = &r->want;
    struct old_ids *oid = &r->oid;
    int rc = 0;
    for (size_t i = 0; i < r->nf; i++)
        if (DD_GID_GEN(r->fates[i].gid) != r->c.gen)
            dd_u64s_push(want, r->fates[i].gid);
    const struct dd_pair *ap = (const struct dd_pair *)r->allp.data;
    for (size_t i = 0; i < r->allp.len / sizeof(*ap); i++)
        if (DD_GID_GEN(ap[i].u) != r->c.gen)
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

/* The ids of earlier documents, read on rank 0; every rank learns whether that worked. */
static int old_ids(struct fuzzy_run *r, int rc)
{
    if (!rc && r->w->rank == 0)
        rc = read_old_ids(r);
    /* rank 0 read the ids: the others must not go on writing when it failed */
    int64_t bad = rc != 0;
    sl_world_allreduce_i64(r->w, &bad, 1, SL_MAX);
    if (bad && !rc)
        rc = sl_err_set(SL_ERR_STATE, "rank 0 could not read the ids of the dedup index");
    return rc;
}

/* Write the kept documents and the reports (duplicates, clusters, pairs). Takes the fates. */
static int write_outputs(struct fuzzy_run *r)
{
    struct dd_apply_opts ao = { 1,
                                r->o->level,
                                old_id_lookup,
                                &r->oid,
                                r->o->pairs ? (const struct dd_pair *)r->allp.data : NULL,
                                r->allp.len / sizeof(struct dd_pair) };
    struct dd_fate *fates = r->fates;
    r->fates = NULL;
    return dd_corpus_apply(&r->c, &r->st, fates, r->nf, &ao, &r->groups);
}

/* Commit (or, after a failure, abort) this rank's --index-out files; rank 0 then copies the
 * ids of the earlier generations and writes the meta. */
static int index_commit(struct fuzzy_run *r, int rc)
{
    const struct opts *o = r->o;
    if (!rc)
        rc = dd_index_writer_commit(&r->idw);
    else if (r->idw.w)
        dd_index_writer_abort(&r->idw);
    if (r->bw.w) {
        if (!rc)
            rc = dd_index_writer_commit(&r->bw);
        else
            dd_index_writer_abort(&r->bw);
    }
    int64_t bad = rc != 0;
    sl_world_allreduce_i64(r->w, &bad, 1, SL_MAX);
    if (!rc && bad)
        rc = sl_err_set(SL_ERR_IO, "another rank failed to write the index");
    if (!rc && r->w->rank == 0) {
        if (o->index_in && !same_dir(o->index_in, o->index_out)) {
            struct copy_ctx cc = { o->index_out };
            rc = for_each_ids_file(o->index_in, copy_ids_file, &cc);
        }
        if (!rc)
            rc = dd_index_write_meta(o->index_out, r->f->minhash_json, r->c.gen, r->w->size,
                                     o->backend, r->redis ? r->prefix : NULL);
    }
    return rc;
}

/* The run's counts into the manifest, and the stage finished. */
static int finish(struct fuzzy_run *r)
{
    struct sl_world *w = r->w;
    struct sl_counters *extra = &r->extra;
    sl_counters_add(extra, "empty_documents", r->p.empty);
    sl_counters_add(extra, "short_documents_hashed_whole", r->p.whole);
    int rc = sl_world_reduce_counters(w, extra, 0);
    sl_world_allreduce_u64(w, r->counts, 2, SL_SUM);
    if (w->rank == 0) {
        sl_counters_set(extra, "candidate_pairs", r->counts[0]);
        if (r->f->verify)
            sl_counters_set(extra, "verified_pairs", r->counts[1]);
        sl_counters_set(extra, "duplicate_clusters", r->groups);
    }
    if (!rc) {
        size_t n = r->c.in.n;
        char **names = sl_xcalloc(n + 1, sizeof(char *));
        for (size_t i = 0; i < n; i++)
            names[i] = sl_stage_shard_name(i, ".jsonl.zst");
        rc = sl_stage_finish(&r->st, names, n, extra, &r->totals);
        for (size_t i = 0; i < n; i++)
            free(names[i]);
        free(names);
    }
    return rc;
}

/* The error, or (rank 0) what the run did; peak memory of the ranks for -v. */
static void report(struct fuzzy_run *r, int rc)
{
    struct sl_world *w = r->w;
    const struct sl_counters *totals = &r->totals;
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    uint64_t rss[2] = { (uint64_t)ru.ru_maxrss, (uint64_t)ru.ru_maxrss };
    double tl[1] = { r->t_lsh };
    if (!rc) {
        sl_world_allreduce_u64(w, rss, 1, SL_MAX);
        sl_world_allreduce_u64(w, rss + 1, 1, SL_SUM);
        sl_world_allreduce_f64(w, tl, 1, SL_MAX);
    }
    if (rc) {
        if (r->redis)
            sl_error("%s\nhint: the outputs in '%s' are resumable: run the same command again "
                     "once the cluster is healthy",
                     sl_err_msg(), r->o->out);
        else
            sl_error("%s", sl_err_msg());
        return;
    }
    if (w->rank != 0)
        return;
    char sn[32];
    char vp[64] = "";
    if (r->f->verify)
        snprintf(vp, sizeof(vp), ", %llu verified", (unsigned long long)r->counts[1]);
    sl_info("dedup fuzzy: %llu of %llu documents removed as near-duplicates (%llu clusters; "
            "%llu candidate pairs%s); %llu kept in '%s'%s",
            (unsigned long long)sl_counters_get(totals, "duplicates_removed"),
            (unsigned long long)sl_counters_get(totals, "documents_in"),
            (unsigned long long)r->groups, (unsigned long long)r->counts[0], vp,
            (unsigned long long)sl_counters_get(totals, "documents_out"), r->o->out,
            r->st.resumed ? " (resumed)" : "");
    print_stats(tl[0], r->rounds, rss[0], rss[1] / (uint64_t)w->size);
    uint64_t whole = sl_counters_get(totals, "short_documents_hashed_whole");
    uint64_t empty = sl_counters_get(totals, "empty_documents");
    if (whole)
        sl_info("%llu documents are shorter than one shingle (%s) and were hashed whole",
                (unsigned long long)whole, dd_shingler_name(&r->f->sh, sn, sizeof(sn)));
    if (empty)
        sl_warn("%llu documents have no text to compare (empty after normalisation) and "
                "were kept",
                (unsigned long long)empty);
}

/* What the earlier steps' outputs held: pairs and the ids of earlier documents. */
static void release_matches(struct fuzzy_run *r)
{
    sl_buf_release(&r->allp);
    for (size_t i = 0; i < r->oid.n; i++)
        free(r->oid.v[i].id);
    free(r->oid.v);
    memset(&r->oid, 0, sizeof(r->oid));
    dd_u64s_release(&r->want);
}

/* Open the inputs, read --index-in and begin the stage; on failure print it and return 1. */
static int run_begin(struct fuzzy_run *r, const struct sl_strlist *operands, int argc,
                     const char **argv)
{
    const struct opts *o = r->o;
    int rc = dd_corpus_init(&r->c, r->w, (const char *const *)operands->v, operands->n);
    if (rc)
        return fail(1);
    r->c.text_key = o->text_key;
    r->c.id_key = o->id_key;
    r->c.max_line = o->max_line;
    r->c.repair_utf8 = o->repair_utf8;
    if (o->index_in && index_in_read(r))
        return fail(1);
    fuzzy_settings(r);
    /* the manifest shows the whole command line: "dedup fuzzy ..." */
    struct sl_stage_cfg cfg = { .stage = "dedup-fuzzy",
                                .out_dir = o->out,
                                .argc = argc,
                                .argv = argv,
                                .inputs = &r->c.in,
                                .settings_json = r->settings.data,
                                .force = o->force,
                                .wait = o->wait,
                                .rereads_inputs = 1 };
    if (sl_stage_begin(&r->st, r->w, &cfg))
        return fail(1);
    r->begun = 1;
    return 0;
}

static int fuzzy(const struct opts *o, const struct fz *f, const struct sl_strlist *operands,
                 int argc, const char **argv)
{
    struct fuzzy_run r;
    memset(&r, 0, sizeof(r));
    r.o = o;
    r.f = f;
    r.w = sl_world_get();
    r.redis = !strcmp(o->backend, "redis");
    r.iout = o->index_out != NULL;
    r.old.P = r.w->size;
    r.old.rank = r.w->rank;
    sl_counters_init(&r.extra);
    sl_counters_init(&r.totals);
    int rc = run_begin(&r, operands, argc, argv);
    if (rc)
        goto out;

    if (r.redis)
        rc = redis_open(&r);
    if (!rc && r.iout)
        rc = index_out_open(&r);
    if (!rc)
        rc = pass1(&r);
    struct dd_edge *e = NULL;
    size_t ne = 0;
    if (!rc)
        rc = candidate_pairs(&r, &e, &ne);
    if (!rc)
        rc = check_pairs(&r, e, ne);
    else
        free(e);
    if (!rc)
        rc = components(&r);
    if (!rc && o->pairs)
        rc = gather_pairs(&r);
    free(r.pairs);
    r.pairs = NULL;
    if (o->index_in)
        rc = old_ids(&r, rc);
    if (!rc)
        rc = write_outputs(&r);
    free(r.fates);
    r.fates = NULL;
    release_matches(&r);
    if (r.iout)
        rc = index_commit(&r, rc);
    if (!rc)
        rc = finish(&r);
    report(&r, rc);
    rc = rc ? 1 : 0;
out:
    sl_counters_release(&r.extra);
    sl_counters_release(&r.totals);
    if (r.lr_open)
        lsh_redis_close(&r.lr);
    free(r.prefix);
    free(r.old_prefix);
    free(r.old.r);
    free(r.fates);
    dd_u64s_release(&r.p.gids);
    dd_u64s_release(&r.p.keys);
    if (r.begun)
        sl_stage_release(&r.st);
    sl_buf_release(&r.settings);
    dd_corpus_release(&r.c);
    return rc;
}

/* The preset's defaults applied, the options checked and resolved into o->f and o->fam. */
static int check(void *opts, const struct sl_strlist *operands)
{
    struct opts *o = opts;
    struct fz *f = &o->f;
    int nemo = !strcmp(o->preset, "nemo");
    const char *ngram = o->ngram ? o->ngram : nemo ? "chars:24" : "words:5";
    const char *norm = o->norm ? o->norm : nemo ? "none" : "all";
    long bands = o->bands >= 0 ? o->bands : nemo ? 20 : 14;
    long rows = o->rows >= 0 ? o->rows : nemo ? 13 : 8;
    o->fam = DD_MH_MULTIPLY;
    int rc = operands->n ? 0 : sl_err_set(SL_ERR_USAGE, "no inputs given");
    if (!rc)
        rc = dd_shingler_parse(&f->sh, ngram, o->seed);
    if (!rc)
        rc = dd_norm_parse(norm, &f->norm);
    if (!rc && (bands < 1 || rows < 1 || bands * rows > DD_MH_MAX_PERM))
        rc = sl_err_set(SL_ERR_USAGE, "--bands x --rows must be 1..%d permutations", DD_MH_MAX_PERM);
    if (!rc)
        rc = minhash_family_parse(o->family, &o->fam);
    if (!rc && (o->threshold <= 0 || o->threshold > 1))
        rc = sl_err_set(SL_ERR_USAGE, "--threshold must be in (0, 1]");
    if (!rc && o->anchors == 0)
        rc = sl_err_set(SL_ERR_USAGE, "--anchors must be at least 1");
    if (!rc && !strcmp(o->backend, "redis") && !o->redis)
        rc = sl_err_set(SL_ERR_USAGE, "--backend redis needs --redis HOST:PORT[,HOST:PORT...]");
    if (!rc && o->redis && strcmp(o->backend, "redis"))
        rc = sl_err_set(SL_ERR_USAGE, "--redis is only used with --backend redis");
    if (!rc && o->redis_timeout <= 0)
        rc = sl_err_set(SL_ERR_USAGE, "--redis-timeout must be positive");
    if (!rc && (o->redis_batch < 1 || o->redis_batch > 1000000))
        rc = sl_err_set(SL_ERR_USAGE, "--redis-batch must be 1..1000000");
    if (!rc && o->verify && o->index_in)
        rc = sl_err_set(SL_ERR_USAGE,
                        "--verify cannot be used with --index-in: the index keeps band keys, "
                        "not the shingles of the earlier documents\nhint: verify within each "
                        "run, or dedup old and new documents together");
    if (rc)
        return rc;
    f->bands = (unsigned)bands;
    f->rows = (unsigned)rows;
    f->seed = o->seed;
    f->verify = o->verify;
    f->threshold = o->threshold;
    f->anchors = o->anchors > 0 ? (unsigned)o->anchors : o->verify ? 8 : 1;
    char sn[32], nn[64];
    snprintf(f->minhash_json, sizeof(f->minhash_json),
             "{\"ngram\":\"%s\",\"norm\":\"%s\",\"bands\":%u,\"rows\":%u,\"seed\":%llu,"
             "\"hash\":\"%s\"}",
             dd_shingler_name(&f->sh, sn, sizeof(sn)), dd_norm_name(f->norm, nn, sizeof(nn)),
             f->bands, f->rows, (unsigned long long)o->seed, minhash_family_name(o->fam));
    return 0;
}

static int run(const void *opts, const struct sl_strlist *operands, int argc, const char **argv)
{
    const struct opts *o = opts;
    struct fz f = o->f;
    minhash_init(&f.mh, f.bands * f.rows, o->seed, o->fam);
    int rc = fuzzy(o, &f, operands, argc, argv);
    minhash_release(&f.mh);
    return rc;
}

const struct sl_cmd cmd_dedup_fuzzy =
    SL_CMD(cmd_dedup_fuzzy_usage, cmd_dedup_fuzzy_options, struct opts, check, run);
