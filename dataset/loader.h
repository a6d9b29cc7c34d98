/* The training data: train/valid/test splits over blended .bin/.idx prefixes (Megatron's
 * GPTDataset + BlendedDataset), or synthetic random tokens.
 *
 * A sample is seq_len + 1 token ids (inputs are the first seq_len, targets the last
 * seq_len). Sample i of a split is a pure function of the data and the settings, so any
 * rank can read any sample and a resumed run reads the same samples: the caller decides
 * which samples a rank reads (the trainer gives each data-parallel rank its slice).
 * Indices are cached as .npy files (Megatron's layout) under
 * PREFIX/cache/GPTDataset_indices/ or data.cache_dir, keyed by a hash of the settings.
 */
#ifndef SL_DATASET_LOADER_H
#define SL_DATASET_LOADER_H

#include <stddef.h>
#include <stdint.h>

enum data_split { DATA_TRAIN = 0, DATA_VALID = 1, DATA_TEST = 2 };

struct data_opts {
    const char *prefix;    /* Megatron syntax; NULL or "synthetic" for random tokens */
    const char *split;     /* "969,30,1" */
    uint64_t seq_len;
    uint32_t seed;         /* Megatron's --seed: shuffles */
    uint64_t num_samples[3]; /* samples each split must provide (0: split unused) */
    uint64_t vocab_size;   /* token ids must be below it */
    const char *cache_dir; /* NULL: PREFIX/cache/GPTDataset_indices */
    int normalize_weights; /* divide weights by their sum instead of refusing */
    int write_cache;       /* write missing cache files (one rank does) */
    /* Separate splits (NeMo's data_prefix: {train, validation, test}, Megatron's
     * --train-data-path / --valid-data-path / --test-data-path): when any is set, split s
     * reads every sequence of its own prefixes (same syntax as prefix; split is unused) and
     * prefix is ignored. A split that needs samples and has no prefixes is an error. */
    const char *split_prefix[3];
};

struct data_loader;

/* Open the prefixes, build or load every index. Errors name the prefix (missing .bin/.idx,
 * bad weights, a split too small for one sample, an unusable cache directory). */
int data_loader_open(struct data_loader **out, const struct data_opts *o);
void data_loader_free(struct data_loader *d);

int data_loader_synthetic(const struct data_loader *d);
/* Samples split s provides (its num_samples, or more for an unblended prefix). */
uint64_t data_loader_samples(const struct data_loader *d, enum data_split s);
/* Sample i of split s into out[seq_len + 1]. Token ids outside the vocabulary are
 * SL_ERR_FORMAT naming the prefix. */
int data_loader_sample(const struct data_loader *d, enum data_split s, uint64_t i, uint32_t *out);

/* For logging: number of prefixes, tokens in all prefixes, epochs of the train index of
 * prefix 0, whether every index came from the cache, and a note about the data worth
 * showing (e.g. every document shorter than seq_len), or NULL. */
int data_loader_prefixes(const struct data_loader *d);
uint64_t data_loader_tokens(const struct data_loader *d);
int data_loader_epochs(const struct data_loader *d, enum data_split s);
int data_loader_cached(const struct data_loader *d);
const char *data_loader_note(const struct data_loader *d);

#endif
