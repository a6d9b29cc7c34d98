/* What a fuzzy dedup run (curate/dedup/fuzzy.h) will need, worked out before it starts:
 * the peak resident memory of its largest rank and of its largest Redis master, from what
 * each document, signature, band record, bucket and candidate pair costs in the code of
 * fuzzy_pairs.c, lsh.c, shuffle.c and lsh_redis.c (`sluice dedup fuzzy --plan`;
 * docs/dedup.md, "Planning memory", checks the model against measured peaks).
 *
 * Per rank, the run's peak is in pass 1's band rounds (memory backend) or in a Redis batch
 * (Redis backend), while every signature of the rank is held, or, for small corpora, in
 * the output phase (base + DD_PLAN_WRITE_BYTES + signatures + pairs), whichever is larger:
 *   base        what the process holds before any work (its binary, libraries and, under
 *               mpirun, MPI's buffers: the caller measures it) + DD_PLAN_READ_BYTES + for
 *               zstd inputs the reader's hold of a whole frame (core/stream.c: up to 16
 *               MiB) and the decoder's window (at most 2 MiB at level 3): a sluice shard is
 *               one frame, so both are the largest shard's decompressed size, capped
 *   signatures  per document, its gid and one 64-bit key per band: 8 * (bands + 1)
 *   memory      per document of a round (BANDS_PER_ROUND = 4 bands): a 24-byte struct
 *               lsh_rec and its 4-byte destination, the 24-byte records received (under
 *               P = 1, dd_shuffle's copy) and, when P > 1, dd_shuffle's 24-byte send
 *               buffer and sl_world_alltoallv's packed send and receive copies (24 bytes
 *               each, at most 1 GiB each)
 *   redis       per command of a batch (DD_PLAN_BATCH_DOCS documents x bands): its key
 *               (prefix + 32 bytes), its 8-byte member, a struct rc_cmd, its RESP text and
 *               its reply
 *   pairs       DD_PLAN_PAIR_BYTES per document: candidate pairs are assumed to be at
 *               most one per document (anchors 1; near-duplicates form small clusters)
 * Per Redis master (its share of the 16384 slots, the keys spread evenly):
 *   base        its used_memory now (the caller asks it)
 *   buckets     documents x bands / masters, each a key of its own (an upper bound: a
 *               bucket shared by near-duplicates is one key), DD_PLAN_REDIS_KEY_BYTES +
 *               the key's length rounded up to jemalloc's size class
 *   markers     16384 / masters slot markers (PREFIX:s:{T}, lsh_redis.h)
 * Library code: never prints. */
#ifndef SL_DEDUP_FUZZY_PLAN_H
#define SL_DEDUP_FUZZY_PLAN_H

#include <stddef.h>
#include <stdint.h>

struct sl_inputs;

/* What reading costs beyond the base process and a zstd frame: the reader's input and
 * output chunks, the line buffer, the stage's record. Measured (a plain JSONL corpus of 90k
 * documents, its peak less the base and the per-document terms): 0.8 MiB. */
#define DD_PLAN_READ_BYTES (800u << 10)
/* What writing the output shards costs: zstd's level-3 compression context (a 2 MiB window
 * at windowLog 21, its 512 KiB hash and 256 KiB chain tables, block buffers) and the
 * writer's output buffer, about 3.5 MiB. */
#define DD_PLAN_WRITE_BYTES (3500u << 10)
/* The zstd reader's hold of a frame (core/stream.c HOLD_MAX) and the window of a level-3
 * frame (windowLog 21). */
#define DD_PLAN_HOLD_MAX   (16ull << 20)
#define DD_PLAN_WINDOW_MAX (2ull << 20)
/* Resident memory that Open MPI's initialisation adds to a rank (shared-memory segments,
 * its libraries), for a plan of several ranks made outside mpirun: measured as a rank's
 * peak under mpirun -np 2 less that of a plain run of the same small stage (Open MPI
 * 4.1, 11 MiB). A plan made under mpirun measures it in its own base instead. */
#define DD_PLAN_MPI_BYTES (11u << 20)
/* Documents per Redis batch (lsh_redis.c's DOCS_PER_BATCH). */
#define DD_PLAN_BATCH_DOCS 2048
/* Per command of a batch besides its key and member: sizeof(struct rc_cmd) (136), its RESP
 * text as hiredis formats it (about 80 bytes for a ZADD or ZRANGE of a bucket key) and its
 * parsed reply (a ZRANGE of one member: an array redisReply, its element pointer and a
 * string redisReply with its 9-byte text, about 140 bytes with malloc's headers). */
#define DD_PLAN_CMD_BYTES (136 + 80 + 140)
/* A candidate pair, struct dd_edge (16 bytes), assumed one per document. */
#define DD_PLAN_PAIR_BYTES 16
/* A Redis 7 key in cluster mode, besides its name: the dictEntry with its slot-list
 * metadata (40 bytes, jemalloc class 48), the value's robj (16), a one-member sorted set as
 * a listpack (19 bytes, class 24) and the main dict's table (8 bytes a slot, the table a
 * power of two between 1x and 2x the keys: 12 on average, 16 while it rehashes). */
#define DD_PLAN_REDIS_KEY_BYTES (48 + 16 + 24 + 16)

struct dd_plan_in {
    uint64_t docs;         /* documents of the run */
    uint64_t docs_rank;    /* of the rank that reads the most */
    unsigned bands, ranks; /* ranks: P */
    int redis;             /* the Redis backend */
    size_t prefix_len;     /* of the Redis keys (sluice:run:<16 hex digits>) */
    unsigned masters;      /* Redis masters */
    uint64_t base_bytes;   /* resident memory of the process before any work */
    uint64_t zstd_frame;   /* decompressed bytes of the largest zstd input (0: none) */
    uint64_t node_base;    /* used_memory of the fullest Redis master now */
};

struct dd_plan {
    /* per rank: the parts, the two phases' sums and the larger */
    uint64_t base, sigs, work, pairs, pass1, output, rank_peak;
    /* per Redis master: keys, and bytes (its base, buckets, slot markers, sum) */
    uint64_t node_keys, node_buckets, node_markers, node_peak;
};

/* The figures for in (pure arithmetic). */
void dd_plan_memory(const struct dd_plan_in *in, struct dd_plan *out);

/* Count the documents (lines; a last line without a newline counts) of each input into
 * docs[i], and its decompressed bytes into bytes[i], by reading it through its
 * decompressing reader, which is what a run's pass 1 costs without the parsing and
 * hashing. 0 or an error naming the input. */
int dd_plan_count_docs(const struct sl_inputs *in, uint64_t *docs, uint64_t *bytes);

/* Ask the Redis Cluster at seeds (password may be NULL) how many masters serve its slots
 * and the largest used_memory among them now. 0 or an error naming the node. */
int dd_plan_redis(const char *seeds, const char *password, double timeout_s, unsigned *masters,
                  uint64_t *used_max);

/* Bytes of a Redis bucket key of a prefix of prefix_len (PREFIX:bNN:<16 hex>, 2-digit
 * bands) as Redis holds its name: an sds (3-byte header, the name, a NUL) in jemalloc's
 * size class. */
uint64_t dd_plan_redis_name_bytes(size_t key_len);

#endif
