/* LSH buckets in a Redis Cluster (the --backend redis of fuzzy dedup).
 *
 * Key layout (docs/dedup.md): bucket (band b, key k) is the sorted set
 *   PREFIX:b<b>:<k as 16 hex digits>
 * whose members are the 8-byte big-endian gids of its documents, all with score 0, so
 * that ZRANGE returns them in gid (input) order. Keys carry no hash tag: buckets spread
 * over all 16384 slots. Inserting is ZADD (idempotent, so a batch may be replayed after a
 * failover); a document's pairs come from ZRANGE key 0 anchors-1 of each of its buckets,
 * which gives exactly the pairs of lsh.h.
 *
 * SLUICE_REDIS_PAUSE_MS (tests only) sleeps that long between batches, so that a test can
 * fail a node while a run is in the middle of its work.
 */
#ifndef SL_DEDUP_LSH_REDIS_H
#define SL_DEDUP_LSH_REDIS_H

#include <stddef.h>
#include <stdint.h>

#include "curate/dedup/lsh.h"

struct redis_cluster;

struct lsh_redis {
    struct redis_cluster *rc;
    char *prefix;
};

/* Connect (seed nodes "host:port,host:port", optional password) and use PREFIX; `batch`
 * commands per pipeline to one node; wait at most timeout_s for a failed node. */
int lsh_redis_open(struct lsh_redis *r, const char *nodes, const char *password,
                   const char *prefix, unsigned batch, double timeout_s);
void lsh_redis_close(struct lsh_redis *r);

/* Add ndocs documents (gids[i], with band keys keys[i*bands .. +bands)). */
int lsh_redis_insert(struct lsh_redis *r, const uint64_t *gids, const uint64_t *keys, size_t ndocs,
                     unsigned bands);

/* Append the pairs of these documents (each paired with up to `anchors` earlier members
 * of each of its buckets; also those of the buckets under old_prefix, when not NULL). */
int lsh_redis_pairs(struct lsh_redis *r, const char *old_prefix, const uint64_t *gids,
                    const uint64_t *keys, size_t ndocs, unsigned bands, unsigned anchors,
                    struct dd_edge **e, size_t *ne, size_t *cap);

/* Delete the buckets of these documents (cleaning up a run whose index is not kept). */
int lsh_redis_delete(struct lsh_redis *r, const uint64_t *keys, size_t ndocs, unsigned bands);


#endif
