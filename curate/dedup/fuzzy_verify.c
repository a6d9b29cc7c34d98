/* Verification of a fuzzy dedup run's candidate pairs (--verify): a pair counts when the
 * true Jaccard similarity of its documents' shingle sets reaches the threshold. Pairs go to
 * the rank of their first document; that rank reads its files again for the shingles of
 * its documents in pairs, and asks the ranks of the second documents for theirs. */
#include "curate/dedup/fuzzy_impl.h"

#include "core/alloc.h"
#include "core/buf.h"
#include "core/doc.h"
#include "core/err.h"
#include "core/world.h"
#include "curate/dedup/shuffle.h"

#include <stdlib.h>
#include <string.h>

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
    const struct dd_fuzzy_params *f;
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
    dd_fuzzy_shingles(c->f, d, &c->nbuf, &c->sh, &whole);
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
static int local_shingles(struct dd_corpus *c, const struct dd_fuzzy_params *f,
                          const struct dd_u64s *need, struct sset *local)
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
static void similar_pairs(const struct dd_fuzzy_params *f, const struct dd_edge *E, size_t m,
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

int dd_fuzzy_verify(struct dd_corpus *c, const struct dd_fuzzy_params *f, struct dd_edge *e,
                    size_t ne, struct dd_pair **out, size_t *nout, uint64_t *checked)
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
