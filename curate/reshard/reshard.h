/* Balanced shards of JSONL documents, the engine of `sluice reshard`
 * (curate/reshard/cmd_reshard.c), which knows nothing of argv or manifests.
 *
 * Documents keep their input order (files in operand order, lines in file order). A first
 * pass measures each file's decompressed size; document d, whose line starts at global
 * byte offset g of the concatenated input, goes to shard floor(g * N / T). Shard contents
 * therefore depend only on the inputs and N, never on the number of ranks: every rank
 * writes a contiguous run of shards and reads just the byte range they cover.
 *
 * Call order: reshard_measure (collective), reshard_plan, the stage begun by the caller
 * (with the number of shards in its settings), reshard_write (every rank), then the
 * caller finishes the stage (shards part-NNNNN.jsonl.zst, or .parquet with cfg.parquet:
 * reshard_shard_ext; sl_stage_shard_name) and calls
 * reshard_measures_release. What the input holds that is worth a warning (a damaged file
 * kept in part, a file named for another compression, skipped lines) is warned of as it is
 * read (core/log.h); errors are 0 or a negative enum sl_err with its message.
 */
#ifndef SL_RESHARD_H
#define SL_RESHARD_H

#include <stdint.h>

#include "core/docid.h"

struct sl_inputs;
struct sl_pq_write_opts;
struct sl_stage;
struct sl_world;

struct reshard_cfg {
    uint64_t shards;     /* the number of shards asked for, or 0: by shard_size */
    uint64_t shard_size; /* target uncompressed bytes per shard (with shards 0) */
    const char *text_key;
    uint64_t max_line;
    long level; /* zstd level of the shards */
    int repair_utf8;
    int skip_corrupt; /* keep the readable part of a damaged compressed file */
    struct sl_docid_opts ids;
    /* the shards as Parquet (core/parquet_write.h; its level is `level`); NULL: .jsonl.zst */
    const struct sl_pq_write_opts *parquet;
};

/* Pass 1's results: each file's decompressed size, whether it is damaged, its lines and the
 * lines of damaged zstd frames the reader held back; and their sums over all files. */
struct reshard_measures {
    uint64_t *sizes, *corrupt, *lines, *dropped;
    uint64_t total, ncorrupt, nlines, ndropped;
};

/* Pass 1 (collective): decompressed sizes, each file measured by one rank (files given out
 * by size, progress "reshard: measuring"), the results summed over the ranks into m (zeroed
 * by the caller, released with reshard_measures_release also after an error). 0; the error
 * of the rank that could not measure a file (SL_ERR_CORRUPT or SL_ERR_TOOBIG for damaged
 * data without cfg->skip_corrupt); SL_ERR_PEER on the ranks whose peer failed. */
int reshard_measure(const struct sl_world *w, const struct sl_inputs *in,
                    const struct reshard_cfg *cfg, struct reshard_measures *m);

/* The number of shards: cfg->shards, or the total size over cfg->shard_size (*asked); never
 * more than the input's lines (documents at most): 100000 shards of 2 documents are 2
 * files, a shard size of 1 one document a shard. */
uint64_t reshard_plan(const struct reshard_cfg *cfg, const struct reshard_measures *m,
                      uint64_t *asked);

/* Pass 2: this rank's shards of nshards from its byte range of the inputs (progress
 * "reshard"), each committed and recorded in the stage st (begun) as it is finished;
 * shards complete from an earlier run are not written again, empty shards are recorded
 * without a file. 0, or this rank's error (its open shard removed). */
int reshard_write(struct sl_stage *st, const struct sl_world *w, const struct reshard_cfg *cfg,
                  const struct sl_inputs *in, const struct reshard_measures *m, uint64_t nshards);

void reshard_measures_release(struct reshard_measures *m);

/* The shards' extension: ".parquet" with cfg->parquet, else ".jsonl.zst". */
const char *reshard_shard_ext(const struct reshard_cfg *cfg);

#endif
