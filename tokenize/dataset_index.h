/* `sluice dataset index` and `sluice dataset samples`: Megatron-LM's index caches built ahead
 * of training, and the samples of Megatron's order. Their options live in the option table
 * of `sluice dataset` (tokenize/cmd_dataset.c), which calls these. */
#ifndef SL_TOKENIZE_DATASET_INDEX_H
#define SL_TOKENIZE_DATASET_INDEX_H

#include <stdint.h>

struct sl_strlist;

/* Megatron's data options, in Megatron's names where it has them. */
struct dataset_index_opts {
    uint64_t seq_length;      /* --seq-length */
    uint64_t seed;            /* --seed */
    const char *split;        /* --split */
    const char *samples;      /* --samples TRAIN[,VALID[,TEST]] */
    uint64_t train_iters, global_batch, eval_interval, eval_iters, train_samples;
    const char *split_path[3]; /* --train-data-path, --valid-data-path, --test-data-path */
    const char *cache_path;    /* --data-cache-path */
    const char *tokenizer;     /* --megatron-tokenizer */
    const char *path_map;      /* --path-map FROM=TO */
    double surplus;            /* --mid-level-dataset-surplus (< 0: Megatron's default) */
    const char *manifest;      /* index: --manifest FILE */
    /* samples */
    const char *which;          /* --split-name train|valid|test */
    uint64_t from, to;          /* --from, --to (inclusive) */
    int64_t dp_rank, dp_size;   /* --dp-rank, --dp-size (0: every sample) */
    uint64_t micro_batch;       /* --micro-batch-size */
    uint64_t consumed;          /* --consumed-samples */
    const char *decode;         /* --tokenizer SPEC for "text" (NULL: ids only) */
    int text;                   /* --text: decode with the manifest's tokenizer */
};

/* Build (or find) every index Megatron builds for these settings; a JSON summary on stdout.
 * pre: the --data-path words. Returns the exit code (0, 1, 2). */
int dataset_index_run(const struct dataset_index_opts *o, const struct sl_strlist *pre);
/* Print samples --from..--to of Megatron's order as JSON lines. */
int dataset_samples_run(const struct dataset_index_opts *o, const struct sl_strlist *pre);

#endif
