/* struct dd_fuzzy: near-duplicate detection over a dedup corpus (curate/dedup/corpus.h), the
 * engine of `sluice dedup fuzzy` (curate/dedup/cmd_dedup_fuzzy.c), which knows nothing of
 * argv or exit codes. A run, in the order of its files:
 *
 *   fuzzy_pairs.c   pass 1: each document's shingles, MinHash signature and LSH band keys;
 *                   candidate pairs of documents that share a bucket, in memory (records
 *                   shuffled to the bucket's owner rank) or in a Redis Cluster
 *   fuzzy_verify.c  --verify: the pairs whose true Jaccard similarity of shingle sets is at
 *                   least the threshold (the second document's set asked of its rank)
 *   fuzzy.c         clusters: connected components over the ranks, each document's fate
 *                   (the first document of its cluster, kept), the outputs written
 *   fuzzy_index.c   the saved band index: --index-in read (and its documents' ids for the
 *                   reports), --index-out written (curate/dedup/lsh_index.h is its format)
 *
 * Call order: dd_fuzzy_init, dd_fuzzy_read_index (with cfg->index_in), dd_fuzzy_connect,
 * dd_fuzzy_run, dd_fuzzy_counts (after a run that succeeded), dd_fuzzy_release. Every call but
 * init, read_index and release is collective: every rank makes it (where a step's ranks
 * must agree, a rank whose peer failed returns an error that says so). Errors are 0 or a
 * negative enum sl_err with its message (sl_err_msg). What the files tell each other is in
 * curate/dedup/fuzzy_impl.h.
 */
#ifndef SL_DEDUP_FUZZY_H
#define SL_DEDUP_FUZZY_H

#include <stddef.h>
#include <stdint.h>

#include "core/buf.h"
#include "curate/dedup/corpus.h"
#include "curate/dedup/lsh_index.h"
#include "curate/dedup/lsh_redis.h"
#include "curate/dedup/minhash.h"
#include "curate/dedup/shingle.h"

struct sl_counters;
struct sl_stage;
struct sl_pq_write_opts;

/* What the MinHash and LSH options resolve to (the command applies its preset). */
struct dd_fuzzy_params {
    struct dd_shingler sh;
    unsigned norm; /* DD_NORM_* flags (curate/dedup/normalize.h) */
    unsigned bands, rows, anchors;
    struct minhash mh; /* bands x rows permutations, initialised by the caller */
    uint64_t seed;
    double threshold; /* of verify */
    int verify;
    char minhash_json[512]; /* the settings an index must share: {"ngram":...,"hash":...} */
};

/* Where buckets live and which index a run reads and writes. Strings are borrowed. */
struct dd_fuzzy_cfg {
    const struct dd_fuzzy_params *f;
    const char *backend;              /* "memory" or "redis" */
    const char *redis, *redis_prefix; /* seed nodes; key prefix (NULL: from the settings) */
    unsigned redis_batch;
    double redis_timeout;
    const char *index_in, *index_out; /* directories, or NULL */
    int pairs;                        /* keep every pair for OUT/pairs.jsonl */
    long level;                       /* zstd level of the output shards */
    const char *id_key;               /* the member --index-out records as a document's id */
    /* the output shards as Parquet; NULL: .jsonl.zst */
    const struct sl_pq_write_opts *parquet;
    /* each kept document's cluster size (documents of this run and of --index-in joined
     * to it, itself included) in its member size_key (NULL: not written); rehydrate: write
     * it as many times as the table says for that size (NULL: once); sizes: either */
    const char *size_key;
    const struct dd_rehydrate *rehydrate;
    int sizes;
};

/* Band records of --index-in that this rank owns (memory backend), sorted. */
struct dd_old_index {
    struct lsh_rec *r;
    size_t n, cap;
    int P, rank;
};

/* Ids of the index's documents that this run's clusters and pairs name (rank 0). */
struct dd_old_ids {
    struct dd_member_id {
        uint64_t gid;
        char *id; /* raw JSON */
        size_t len;
    } * v;
    size_t n, cap;
    const uint64_t *want; /* sorted */
    size_t nwant;
};

/* The signatures of pass 1: per document of this rank with shingles, its gid and `bands`
 * band keys. */
struct dd_sigs {
    struct dd_u64s gids, keys;
    uint64_t empty; /* documents with no text to compare (kept) */
    uint64_t whole; /* documents shorter than one shingle, hashed whole */
};

struct dd_fuzzy {
    const struct dd_fuzzy_cfg *cfg;
    const struct dd_fuzzy_params *f;
    struct dd_corpus *c;
    int redis, iout;         /* the Redis backend; --index-out */
    struct dd_old_index old; /* --index-in (memory backend) */
    char *old_prefix;        /* --index-in: its Redis key prefix */
    const char *settings;    /* of the run (JSON): Redis key prefixes and plans hash it */
    struct lsh_redis lr;     /* connected when lr_open */
    int lr_open;
    int connect_rc;        /* what dd_fuzzy_connect returned */
    char *prefix;          /* of this run's Redis buckets */
    const char *query_old; /* prefix of the index's buckets, when they are not this run's */
    int temp_keys;         /* delete this run's buckets once the pairs are known */
    struct dd_index_writer idw, bw; /* --index-out: ids, bands */
    struct dd_sigs sig;
    struct dd_pair *pairs; /* the pairs that count, on the rank of their first document */
    size_t np;
    struct dd_fate *fates;
    size_t nf;
    struct sl_buf allp;     /* every pair, sorted, on rank 0 (cfg->pairs) */
    struct dd_old_ids oid;  /* ids of the index's documents in this run's clusters (rank 0) */
    struct dd_u64s want;    /* their gids */
    struct sl_buf warnings; /* rank 0: dd_fuzzy_connect's warnings, each ended by a NUL */
    /* what the run found; counts summed over the ranks by dd_fuzzy_counts */
    double t_lsh;       /* seconds this rank spent on candidate pairs */
    uint64_t counts[2]; /* candidate, verified pairs */
    unsigned rounds;    /* of the connected components */
    uint64_t groups;    /* duplicate clusters (rank 0) */
};

/* Set up z for the corpus c (initialised, its keys set); cfg, its params and c are
 * borrowed until dd_fuzzy_release. */
void dd_fuzzy_init(struct dd_fuzzy *z, const struct dd_fuzzy_cfg *cfg, struct dd_corpus *c);

/* cfg->index_in: check its meta against this run (MinHash settings, backend, generations),
 * read its band records this rank owns (memory backend), and make this run's documents the
 * next generation (c->gen). Not collective. */
int dd_fuzzy_read_index(struct dd_fuzzy *z);

/* Connect to the Redis Cluster and claim this run's key prefix (Redis backend), and open
 * this rank's --index-out files. `settings` (borrowed until release) is the run's settings
 * JSON: equal settings and inputs give equal Redis prefixes. What is worth a warning goes
 * into z->warnings (rank 0), also on failure. */
int dd_fuzzy_connect(struct dd_fuzzy *z, const char *settings);

/* Signatures, candidate pairs, verification, clusters; the shards of this rank's files
 * written through the stage st (begun by the caller; rank 0 also writes duplicates.jsonl,
 * clusters.jsonl and, with cfg->pairs, pairs.jsonl); the --index-out files committed (or,
 * after a failure, removed). Called also after dd_fuzzy_connect failed on this rank: it
 * then makes only the collective calls of the run's end (the index's ids, the index files
 * removed) and returns that error, so that the ranks' calls match. */
int dd_fuzzy_run(struct dd_fuzzy *z, struct sl_stage *st);

/* The run's counts into extra, summed on rank 0 (empty_documents,
 * short_documents_hashed_whole, candidate_pairs, verified_pairs with verify,
 * duplicate_clusters); z->counts summed on every rank. */
int dd_fuzzy_counts(struct dd_fuzzy *z, struct sl_counters *extra);

void dd_fuzzy_release(struct dd_fuzzy *z);

#endif
