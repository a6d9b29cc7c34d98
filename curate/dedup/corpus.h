/* struct dd_corpus: the input documents of a dedup run, as every rank sees them.
 *
 * Files are assigned to ranks by size (sl_assign_by_size); a document's global id is
 *   gid = generation << 56 | file index << 36 | line number
 * so ids sort in input order, encode where the document is, and an incremental run
 * (generation g+1) sorts after every document of the index it builds on. A rank reads only
 * its own files; the output shard of input file i is part-<i>.jsonl.zst, written by the
 * file's rank, so outputs do not depend on the number of ranks.
 *
 * The output phase (dd_corpus_apply) takes each document's fate — a (gid, kept gid) pair
 * for every member of a duplicate group, the kept one included — writes the shards without
 * the removed documents, and has rank 0 write duplicates.jsonl (and clusters.jsonl).
 */
#ifndef SL_DEDUP_CORPUS_H
#define SL_DEDUP_CORPUS_H

#include <stddef.h>
#include <stdint.h>

#include "core/buf.h"
#include "core/counters.h"
#include "core/inputs.h"
#include "curate/dedup/lsh.h"

struct sl_world;
struct sl_doc;
struct sl_stage;
struct sl_pq_write_opts;

#define DD_GID_FILE_BITS 20
#define DD_GID_LINE_BITS 36
#define DD_GID(gen, file, line)                                                            \
    (((uint64_t)(gen) << 56) | ((uint64_t)(file) << DD_GID_LINE_BITS) | (uint64_t)(line))
#define DD_GID_GEN(g) ((g) >> 56)
#define DD_GID_FILE(g) (((g) >> DD_GID_LINE_BITS) & ((1ull << DD_GID_FILE_BITS) - 1))
#define DD_GID_LINE(g) ((g) & ((1ull << DD_GID_LINE_BITS) - 1))

struct dd_corpus {
    const struct sl_world *w;
    struct sl_inputs in; /* owned */
    int *owner;          /* rank of each file */
    uint64_t gen;        /* generation of this run's documents */
    const char *text_key, *id_key;
    uint64_t max_line;
    int repair_utf8;
    struct sl_counters counts; /* what the scans counted on this rank (skips, ...) */
};

/* Expand operands and assign files. 0 or an error (message set). */
int dd_corpus_init(struct dd_corpus *c, const struct sl_world *w, const char *const *operands,
                   size_t n);
void dd_corpus_release(struct dd_corpus *c);

/* Begin the stage (sl_stage_begin) of a dedup mode over the corpus's inputs, which it reads
 * more than once: stage "dedup-exact", ...; settings the JSON of its settings. */
int dd_corpus_stage_begin(const struct dd_corpus *c, struct sl_stage *st, struct sl_world *w,
                          const char *stage, const char *out, int argc, const char **argv,
                          const char *settings, int force, int wait);

/* Rank that reads the document (documents of an older generation: rank 0). */
int dd_corpus_owner(const struct dd_corpus *c, uint64_t gid);
/* "'path' line N" for messages; into out. */
const char *dd_corpus_where(const struct dd_corpus *c, uint64_t gid, char *out, size_t n);

/* Read this rank's files in order and call fn for each document (its text already
 * checked to be a string). fn returns 0 or an error that stops the scan. The id of every
 * document is checked to be unique over all ranks and files (when check_ids): a repeat is
 * an error naming both places. Collective (when check_ids). */
typedef int (*dd_doc_fn)(void *ctx, uint64_t gid, struct sl_doc *d);
int dd_corpus_scan(struct dd_corpus *c, const char *label, int check_ids, dd_doc_fn fn, void *ctx);

/* A document's fate: it is in the duplicate group whose kept member is `keep` (keep ==
 * gid: this one is kept); `size`: for a kept one, its group's member count (0: unknown). */
struct dd_fate {
    uint64_t gid, keep, size;
};

struct dd_rehydrate;

struct dd_apply_opts {
    int clusters;        /* also write clusters.jsonl */
    long level;          /* zstd level of the shards */
    /* ids of documents of older generations (an index), for rank 0's side files: returns
     * the raw JSON id into out, or SL_ERR_NOTFOUND. May be NULL. */
    int (*old_id)(void *ctx, uint64_t gid, struct sl_buf *out);
    void *old_ctx;
    /* rank 0: pairs to write to OUT/pairs.jsonl (NULL: no file) */
    const struct dd_pair *pairs;
    size_t npairs;
    /* the shards as Parquet (core/parquet_write.h); NULL: .jsonl.zst */
    const struct sl_pq_write_opts *parquet;
    /* member each kept document gets its group's size in (1 outside a group; NULL: none) */
    const char *size_key;
    /* write each kept document as many times as this says for its group's size (NULL:
     * once); the copies beyond the first count as documents_rehydrated */
    const struct dd_rehydrate *rehydrate;
};

/* Collective. Each rank passes the fates of its own documents (any order; taken over and
 * freed); rank 0 also passes those of older generations. Writes the shards of this rank's
 * files (skipping those sl_stage_done says are complete), records them, and on rank 0
 * writes OUT/duplicates.jsonl (and clusters.jsonl, pairs.jsonl). Counts documents_in, documents_out,
 * duplicates_removed (and with o->rehydrate documents_rehydrated) into each shard's record;
 * `groups` (rank 0) gets the group count. */
int dd_corpus_apply(struct dd_corpus *c, struct sl_stage *st, struct dd_fate *fates, size_t n,
                    const struct dd_apply_opts *o, uint64_t *groups);

/* Ship fates to the ranks that own their documents (collective); sorts them by gid. */
int dd_fates_to_owners(const struct dd_corpus *c, struct dd_fate **fates, size_t *n);

#endif
