/* Megatron-LM's GPT sample indexing over one .bin/.idx prefix: the train/valid/test split of
 * its sequences, the document index (sequence ids tiled over epochs and shuffled), the
 * sample index (where each sample of seq_len + 1 tokens starts; samples cross document
 * boundaries and consecutive samples share one token) and the shuffle index.
 *
 * The algorithm and the random draws are Megatron's (megatron/core/datasets/gpt_dataset.py
 * and helpers.cpp), including numpy's legacy RandomState(seed).shuffle, so the same data
 * and settings give the same samples in the same order as Megatron-LM and NeMo. The
 * description is in docs/trainer.md; the arrays can be cached as .npy files.
 */
#ifndef SL_DATASET_GPT_INDEX_H
#define SL_DATASET_GPT_INDEX_H

#include <stddef.h>
#include <stdint.h>

struct idx_reader;

/* ---- numpy's legacy MT19937 RandomState -------------------------------------------- */

struct mt19937 {
    uint32_t mt[624];
    int pos;
};

/* RandomState(seed) for 0 <= seed < 2^32. */
void mt19937_seed(struct mt19937 *r, uint32_t seed);
uint32_t mt19937_next32(struct mt19937 *r);
/* numpy's random_interval: uniform in [0, max] by masked rejection. */
uint64_t mt19937_interval(struct mt19937 *r, uint64_t max);
/* RandomState.shuffle of a 1-D array. */
void mt19937_shuffle_i32(struct mt19937 *r, int32_t *x, size_t n);
void mt19937_shuffle_i64(struct mt19937 *r, int64_t *x, size_t n);

/* ---- split -------------------------------------------------------------------------- */

/* Parse "969,30,1" (Megatron: the numbers in order, missing ones 0, normalised) into w[3].
 * SL_ERR_CONFIG for no numbers, more than three, or a zero sum. */
int gpt_split_parse(const char *s, double w[3]);
/* Sequence ranges [lo, hi) of each split for n sequences, rounded as Megatron does. */
void gpt_split_ranges(const double w[3], uint64_t n, uint64_t lo[3], uint64_t hi[3]);

/* ---- index -------------------------------------------------------------------------- */

struct gpt_index_opts {
    uint64_t seq_len;     /* L: tokens per sample are L + 1 */
    uint64_t num_samples; /* samples requested (decides the number of epochs) */
    uint32_t seed;        /* Megatron's --seed (default 1234) */
};

struct gpt_index {
    int32_t *doc_index; /* sequence ids, epochs tiled and shuffled */
    size_t n_doc;
    int64_t *sample_index; /* (n_samples + 1) pairs (position in doc_index, token offset) */
    size_t n_samples;
    int64_t *shuffle_index; /* n_samples entries */
    int num_epochs;
    int separate_final_epoch;
    uint64_t tokens_per_epoch;
};

/* Build the index over the sequences [lo, hi) of r (lo < hi). SL_ERR_CONFIG when the
 * range holds fewer than seq_len + 1 tokens (no sample can be formed). */
int gpt_index_build(struct gpt_index *ix, const struct idx_reader *r, uint64_t lo, uint64_t hi,
                    const struct gpt_index_opts *o);
void gpt_index_release(struct gpt_index *ix);

/* Save as DIR/NAME-document_index.npy, -sample_index.npy, -shuffle_index.npy (Megatron's
 * dtypes; written atomically) / load them back (SL_ERR_NOTFOUND when absent, SL_ERR_CORRUPT
 * when unreadable or inconsistent with the data). */
int gpt_index_save(const struct gpt_index *ix, const char *dir, const char *name);
int gpt_index_load(struct gpt_index *ix, const char *dir, const char *name,
                   const struct idx_reader *r, uint64_t seq_len);

/* Tokens of sample i (0 <= i < n_samples, before shuffling is applied by the caller's
 * choice: this reads shuffle_index[i]) into out[seq_len + 1]. Token ids >= vocab_size
 * (when vocab_size > 0) are SL_ERR_FORMAT naming the prefix, sequence and value. */
int gpt_index_sample(const struct gpt_index *ix, const struct idx_reader *r, uint64_t seq_len,
                     uint64_t i, uint32_t *out, uint64_t vocab_size);

/* ---- .npy --------------------------------------------------------------------------- */

/* Write a C-order array (descr "<i4", "<u4", "<i8", "<i2") of ndim 1 or 2 atomically. */
int npy_write(const char *path, const char *descr, const uint64_t *shape, int ndim,
              const void *data, size_t elem_size);
/* Read a whole .npy of integers into a fresh int64 array (caller frees). */
int npy_read_i64(const char *path, int64_t **out, uint64_t *shape, int *ndim);

#endif
