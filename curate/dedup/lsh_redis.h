/* LSH buckets in a Redis Cluster (the --backend redis of fuzzy dedup).
 *
 * Key layout (docs/dedup.md), under the run's PREFIX:
 *   PREFIX:b<b>:<k as 16 hex digits>  bucket (band b, key k): a sorted set whose members
 *                                     are the 8-byte big-endian gids of its documents, all
 *                                     with score 0, so that ZRANGE returns them in gid
 *                                     (input) order. No hash tag: buckets spread over all
 *                                     16384 slots.
 *   PREFIX:lock                       the lease of the run that writes under PREFIX
 *                                     (redis_lock.h)
 *   PREFIX:meta                       the marker: what PREFIX holds, as "name=value" lines:
 *                                     kind (run: buckets deleted at the end; index: kept),
 *                                     state (building, extending: an index grown in place,
 *                                     complete), gen, plan (hash of the writer's settings
 *                                     and inputs), settings (MinHash JSON), writer (the
 *                                     lease value of the run that wrote it)
 *   PREFIX:s:{T}                      one per hash slot (T a tag of that slot), written
 *                                     before any bucket: a node that loses its keys loses
 *                                     these, and the run sees it
 * Inserting is ZADD (idempotent, so a batch may be replayed after a failover); a
 * document's pairs come from ZRANGE key 0 anchors-1 of each of its buckets, which gives
 * exactly the pairs of lsh.h.
 *
 * A run (every rank) opens, rank 0 claims the prefix (lsh_redis_claim) before any rank
 * writes, every rank inserts, rank 0 checks (lsh_redis_check), every rank asks for its
 * pairs, rank 0 checks again, every rank deletes its buckets (a run's, not an index's),
 * rank 0 finishes (lsh_redis_finish) and every rank closes.
 *
 * SLUICE_REDIS_PAUSE_MS (tests only) sleeps that long between batches, so that a test can
 * fail a node while a run is in the middle of its work.
 */
#ifndef SL_DEDUP_LSH_REDIS_H
#define SL_DEDUP_LSH_REDIS_H

#include <stddef.h>
#include <stdint.h>

#include "curate/dedup/lsh.h"
#include "curate/dedup/redis_watch.h"

struct redis_cluster;
struct redis_lock;

struct lsh_redis {
    struct redis_cluster *rc;
    char *prefix;
    char *seeds, *password; /* for the lease's own connections */
    double timeout_s;
    /* rank 0, from lsh_redis_claim on */
    struct redis_lock *lock;
    struct redis_watch watch;
    char (*tags)[8];   /* a hash tag of each slot, for the slot markers */
    char *old_prefix;  /* an index read, not written */
    char *old_dir;     /* its directory (messages) */
    char *settings;    /* MinHash settings of the run */
    uint64_t gen, old_gen, plan;
    int index, watching;
    char warning[512]; /* what the claim could not check, for the caller to show */
};

/* What a run does under its prefix. */
struct lsh_redis_plan {
    int index;            /* the buckets stay as an index (--index-out) */
    int grow;             /* ... grown in place from generation gen - 1 (with --index-in) */
    const char *settings; /* the MinHash settings (JSON) */
    uint64_t plan;        /* hash of the run's settings and inputs: equal plans, equal keys */
    uint64_t gen;         /* the generation of the run's documents */
    const char *old_prefix; /* an index only read (--index-in alone), or NULL */
    const char *old_dir;    /* the index's directory (with grow too), for messages */
    uint64_t old_gen;       /* its generation, from its meta.json */
};

/* Connect (seed nodes "host:port,host:port", optional password) and use PREFIX; `batch`
 * commands per pipeline to one node; wait at most timeout_s for a failed node. */
int lsh_redis_open(struct lsh_redis *r, const char *nodes, const char *password,
                   const char *prefix, unsigned batch, double timeout_s);
/* Disconnect; rank 0 gives up its lease. */
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

/* Rank 0, before any rank writes: take the lease on the prefix (SL_ERR_EXISTS: another run
 * holds it, named), check the nodes (redis_watch_begin: an evicting maxmemory-policy is
 * SL_ERR_CONFIG; r->warning says what could not be checked), and settle what the prefix
 * holds (its marker):
 *   nothing                         written fresh
 *   this plan's keys (a rerun)      kept: they are a subset of what the run writes
 *   a run's keys, an unfinished     deleted first (SCAN + UNLINK on every master)
 *   first build, or keys without
 *   a marker
 *   an index of other settings or   refused (SL_ERR_CONFIG), naming what is there
 *   other inputs
 * A grown index must be complete at generation gen - 1 (or this plan's, unfinished) with
 * every slot marker present; an index only read must be complete at old_gen, with the
 * same settings, every slot marker, and no lease on it (nobody extending it). Then the
 * marker says this run's plan, state building (extending), and the slot markers are
 * written. */
int lsh_redis_claim(struct lsh_redis *r, const struct lsh_redis_plan *p);

/* Rank 0, at a phase boundary (after the inserts, after the queries): the lease is held;
 * no master restarted or evicted keys (redis_watch_check); every slot marker of the prefix
 * (and of an index read) is there; an index read is still complete at its generation.
 * 0, or SL_ERR_STATE naming the node or the other run. */
int lsh_redis_check(struct lsh_redis *r);

/* Rank 0, after every rank's queries (and deletes): an index is marked complete; a run's
 * slot markers and marker are deleted. */
int lsh_redis_finish(struct lsh_redis *r);


#endif
