/* The training data: train/valid/test splits over blended .bin/.idx prefixes (Megatron's
 * GPTDataset + BlendedDataset), or synthetic random tokens.
 *
 * A sample is seq_len + 1 token ids (inputs are the first seq_len, targets the last
 * seq_len). Sample i of a split is a pure function of the data and the settings, so any
 * rank can read any sample and a resumed run reads the same samples: the caller decides
 * which samples a rank reads (the trainer gives each data-parallel rank its slice).
 * Indices are cached as .npy files under Megatron-Core's own names (HASH-GPTDataset-SPLIT-*,
 * HASH-BlendedDataset-SPLIT-*, HASH the MD5 of Megatron's unique_description:
 * dataset/megatron_desc.h) in PREFIX/cache/GPTDataset_indices/ or data.cache_dir, so that
 * Megatron-LM reads what sluice built and the other way round. Blends are cached only
 * under data.cache_dir, as Megatron does.
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
    /* What Megatron's cache names hash besides the above (docs/trainer.md): the tokenizer
     * Megatron will be given (mdesc_tokenizer spec; NULL: NullTokenizer:vocab_size), a
     * rewrite "FROM=TO" of the prefixes' leading FROM into the path Megatron will be given
     * (NULL: the prefixes as given here), and mid_level_dataset_surplus (NULL: 0.005). */
    const char *megatron_tokenizer;
    const char *megatron_path_map;
    const double *surplus;
    /* Build every split Megatron builds (a share of the data or prefixes of its own), also
     * those asked for 0 samples, as `sluice dataset index` does. */
    int all_splits;
    /* Told, before each index it builds, what it builds (the caller shows it). */
    void (*note)(void *ctx, const char *msg);
    void *note_ctx;
};

/* One index the loader read or built: a GPTDataset's (document, sample, shuffle) or a
 * BlendedDataset's (dataset, dataset sample). */
struct data_cache_info {
    int split;           /* enum data_split */
    int blended;         /* a BlendedDataset's */
    char *dir;           /* the cache directory (NULL: a blend built without a cache dir) */
    char *name;          /* HASH-CLASS-SPLIT: the files are DIR/NAME-*.npy, -description.txt */
    char *prefix;        /* the GPTDataset's prefix (NULL for a blend) */
    int64_t num_samples; /* asked for (-1: Megatron's None, one epoch) */
    uint64_t samples;    /* it has */
    int epochs;
    int loaded;  /* read from the cache */
    int written; /* written to the cache now */
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

/* For logging: number of prefixes, tokens in all prefixes, the fewest and most epochs the
 * indexes of split s go over (each prefix of a blend has its own), whether every index
 * came from the cache, and a note about the data worth showing (e.g. every document
 * shorter than seq_len), or NULL. */
int data_loader_prefixes(const struct data_loader *d);
uint64_t data_loader_tokens(const struct data_loader *d);
void data_loader_epochs(const struct data_loader *d, enum data_split s, int *fewest, int *most);
int data_loader_cached(const struct data_loader *d);
const char *data_loader_note(const struct data_loader *d);
/* Every index read or built, in the order they were (owned by d). */
size_t data_loader_caches(const struct data_loader *d, const struct data_cache_info **out);
/* Where sample i of split s comes from: returns the component (its prefix and its sample
 * k within it), or -1 for synthetic data or i out of range. */
int data_loader_source(const struct data_loader *d, enum data_split s, uint64_t i,
                       const char **prefix, uint64_t *k);

#endif
