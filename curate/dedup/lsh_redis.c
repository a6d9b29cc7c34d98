/* LSH buckets as sorted sets in a Redis Cluster (key layout in lsh_redis.h and
 * docs/dedup.md). Work goes out in batches of a few thousand documents, each batch one
 * pipeline per node. */
#include "curate/dedup/lsh_redis.h"

#include "core/alloc.h"
#include "core/err.h"
#include "curate/dedup/redis_cluster.h"
#include "curate/dedup/redis_lock.h"

#include <hiredis/hiredis.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define DOCS_PER_BATCH 2048

static void test_pause(void)
{
    const char *p = getenv("SLUICE_REDIS_PAUSE_MS");
    long ms = p ? atol(p) : 0;
    if (ms > 0) {
        struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };
        nanosleep(&ts, NULL);
    }
}

int lsh_redis_open(struct lsh_redis *r, const char *nodes, const char *password,
                   const char *prefix, unsigned batch, double timeout_s)
{
    memset(r, 0, sizeof(*r));
    int rc = redis_cluster_open(&r->rc, nodes, password, batch, timeout_s);
    if (rc)
        return rc;
    r->prefix = sl_xstrdup(prefix);
    r->seeds = sl_xstrdup(nodes);
    r->password = password ? sl_xstrdup(password) : NULL;
    r->timeout_s = timeout_s;
    return 0;
}

void lsh_redis_close(struct lsh_redis *r)
{
    redis_lock_release(r->lock);
    redis_watch_release(&r->watch);
    redis_cluster_free(r->rc);
    free(r->prefix);
    free(r->seeds);
    free(r->password);
    free(r->tags);
    free(r->old_prefix);
    free(r->old_dir);
    free(r->settings);
    memset(r, 0, sizeof(*r));
}

/* Bucket keys "PREFIX:b<band>:<16 hex>" live in one pool per batch, each in a slot of
 * key_max(prefix) bytes. */
static size_t key_max(const char *prefix)
{
    return strlen(prefix) + 32;
}

static size_t bucket_key(char *out, size_t max, const char *prefix, unsigned band, uint64_t key)
{
    int n = snprintf(out, max, "%s:b%u:%016llx", prefix, band, (unsigned long long)key);
    return n < (int)max ? (size_t)n : max - 1;
}

static void be64(unsigned char *o, uint64_t x)
{
    for (int i = 7; i >= 0; i--) {
        o[i] = (unsigned char)x;
        x >>= 8;
    }
}

static uint64_t from_be64(const unsigned char *p)
{
    uint64_t x = 0;
    for (int i = 0; i < 8; i++)
        x = x << 8 | p[i];
    return x;
}

int lsh_redis_insert(struct lsh_redis *r, const uint64_t *gids, const uint64_t *keys, size_t ndocs,
                     unsigned bands)
{
    struct rc_batch b = { 0 };
    b.writes = 1;
    size_t per = (size_t)DOCS_PER_BATCH * bands, km = key_max(r->prefix);
    char *kp = sl_xmalloc(sl_mul_size(per, km));
    unsigned char *mp = sl_xmalloc(sl_mul_size(per, 8));
    int rc = 0;
    for (size_t d0 = 0; d0 < ndocs && !rc; d0 += DOCS_PER_BATCH) {
        size_t d1 = d0 + DOCS_PER_BATCH < ndocs ? d0 + DOCS_PER_BATCH : ndocs;
        rc_batch_reset(&b);
        size_t k = 0;
        for (size_t d = d0; d < d1; d++)
            for (unsigned band = 0; band < bands; band++, k++) {
                char *key = kp + k * km;
                unsigned char *m = mp + k * 8;
                size_t kl = bucket_key(key, km, r->prefix, band, keys[d * bands + band]);
                be64(m, gids[d]);
                const char *argv[4] = { "ZADD", key, "0", (const char *)m };
                size_t len[4] = { 4, kl, 1, 8 };
                rc_batch_add(&b, 4, argv, len);
            }
        rc = redis_cluster_exec(r->rc, &b);
        test_pause();
    }
    rc_batch_release(&b);
    free(kp);
    free(mp);
    return rc;
}

static void push_edge(struct dd_edge **e, size_t *ne, size_t *cap, uint64_t u, uint64_t v)
{
    if (*ne == *cap) {
        *cap = *cap ? *cap * 2 : 1024;
        *e = sl_xrealloc(*e, sl_mul_size(*cap, sizeof(**e)));
    }
    (*e)[*ne].u = u;
    (*e)[*ne].v = v;
    (*ne)++;
}

/* Members (gids) of a ZRANGE reply below `self`, in order, appended to m (at most max). */
static int reply_gids(const redisReply *rp, uint64_t self, uint64_t *m, size_t *n, size_t max)
{
    if (!rp || rp->type != REDIS_REPLY_ARRAY)
        return sl_err_set(SL_ERR_NET, "redis: ZRANGE did not answer with an array");
    for (size_t i = 0; i < rp->elements && *n < max; i++) {
        const redisReply *x = rp->element[i];
        if (!x || x->type != REDIS_REPLY_STRING || x->len != 8)
            return sl_err_set(SL_ERR_FORMAT, "redis: a bucket holds a member that is not a sluice "
                                             "document id\nhint: is the key prefix shared with "
                                             "something else?");
        uint64_t g = from_be64((const unsigned char *)x->str);
        if (g < self)
            m[(*n)++] = g;
    }
    return 0;
}

int lsh_redis_pairs(struct lsh_redis *r, const char *old_prefix, const uint64_t *gids,
                    const uint64_t *keys, size_t ndocs, unsigned bands, unsigned anchors,
                    struct dd_edge **e, size_t *ne, size_t *cap)
{
    struct rc_batch b = { 0 };
    int q = old_prefix ? 2 : 1; /* queries per (document, band) */
    size_t per = (size_t)DOCS_PER_BATCH * bands * (size_t)q;
    size_t km = key_max(r->prefix);
    if (old_prefix && key_max(old_prefix) > km)
        km = key_max(old_prefix);
    char *kp = sl_xmalloc(sl_mul_size(per, km));
    char stop[24];
    int sl = snprintf(stop, sizeof(stop), "%u", anchors - 1);
    uint64_t *m = sl_xmalloc(2 * (anchors + 1) * sizeof(uint64_t));
    int rc = 0;
    for (size_t d0 = 0; d0 < ndocs && !rc; d0 += DOCS_PER_BATCH) {
        size_t d1 = d0 + DOCS_PER_BATCH < ndocs ? d0 + DOCS_PER_BATCH : ndocs;
        rc_batch_reset(&b);
        size_t k = 0;
        for (size_t d = d0; d < d1; d++)
            for (unsigned band = 0; band < bands; band++)
                for (int j = 0; j < q; j++, k++) {
                    char *key = kp + k * km;
                    size_t kl = bucket_key(key, km, j ? old_prefix : r->prefix, band,
                                           keys[d * bands + band]);
                    const char *argv[4] = { "ZRANGE", key, "0", stop };
                    size_t len[4] = { 6, kl, 1, (size_t)sl };
                    rc_batch_add(&b, 4, argv, len);
                }
        rc = redis_cluster_exec(r->rc, &b);
        test_pause();
        k = 0;
        for (size_t d = d0; d < d1 && !rc; d++)
            for (unsigned band = 0; band < bands && !rc; band++) {
                /* the first `anchors` members before this document, over both indexes */
                size_t n = 0, n1;
                rc = reply_gids(b.c[k].reply, gids[d], m, &n, anchors);
                n1 = n;
                if (!rc && q == 2)
                    rc = reply_gids(b.c[k + 1].reply, gids[d], m, &n, n1 + anchors);
                k += (size_t)q;
                if (rc)
                    break;
                /* merge the two sorted runs m[0..n1) and m[n1..n), take the first anchors */
                size_t i = 0, j = n1, taken = 0;
                uint64_t last = 0;
                while (taken < anchors && (i < n1 || j < n)) {
                    uint64_t x = (j >= n || (i < n1 && m[i] < m[j])) ? m[i++] : m[j++];
                    if (taken && x == last)
                        continue;
                    push_edge(e, ne, cap, x, gids[d]);
                    last = x;
                    taken++;
                }
            }
    }
    rc_batch_release(&b);
    free(kp);
    free(m);
    return rc;
}

int lsh_redis_delete(struct lsh_redis *r, const uint64_t *keys, size_t ndocs, unsigned bands)
{
    struct rc_batch b = { 0 };
    b.writes = 1;
    size_t per = (size_t)DOCS_PER_BATCH * bands, km = key_max(r->prefix);
    char *kp = sl_xmalloc(sl_mul_size(per, km));
    int rc = 0;
    for (size_t d0 = 0; d0 < ndocs && !rc; d0 += DOCS_PER_BATCH) {
        size_t d1 = d0 + DOCS_PER_BATCH < ndocs ? d0 + DOCS_PER_BATCH : ndocs;
        rc_batch_reset(&b);
        size_t k = 0;
        for (size_t d = d0; d < d1; d++)
            for (unsigned band = 0; band < bands; band++, k++) {
                char *key = kp + k * km;
                size_t kl = bucket_key(key, km, r->prefix, band, keys[d * bands + band]);
                const char *argv[2] = { "DEL", key };
                size_t len[2] = { 3, kl };
                rc_batch_add(&b, 2, argv, len);
            }
        rc = redis_cluster_exec(r->rc, &b);
        test_pause();
    }
    rc_batch_release(&b);
    free(kp);
    return rc;
}
