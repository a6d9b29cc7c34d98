/* Megatron-Core's cache keys: the `unique_description` of a GPTDataset or a BlendedDataset
 * (the JSON text megatron-core 0.16.1 writes as HASH-CLASS-SPLIT-description.txt) and its
 * MD5, the HASH in the names of the cached index files. Building the same text byte for
 * byte lets Megatron-LM load the indices sluice built and sluice load Megatron's.
 *
 * The text is Python's json.dumps(identifiers, indent=4) of an ordered map (Python's float
 * repr, ensure_ascii escapes); the members, their order and their values are in
 * docs/formats/megatron-index-cache.md. Nothing here touches files.
 */
#ifndef SL_DATASET_MEGATRON_DESC_H
#define SL_DATASET_MEGATRON_DESC_H

#include <stddef.h>
#include <stdint.h>

struct sl_buf;

/* What every description of one Megatron run shares (BlendedMegatronDatasetConfig). */
struct mdesc {
    uint32_t seed;         /* --seed: random_seed */
    uint64_t seq_len;      /* --seq-length: sequence_length */
    const char *split;     /* --split exactly as Megatron gets it; NULL with per-split paths */
    const char *tokenizer; /* the tokenizer's unique_identifiers, JSON text (mdesc_tokenizer) */
};

/* One GPTDataset: its dataset_path (the prefix string as Megatron gets it) and the
 * num_samples asked of it (< 0: None, one epoch). */
struct mdesc_gpt {
    const char *path;
    int64_t num_samples;
};

/* Megatron's Split names: "train", "valid", "test". */
extern const char *const mdesc_split_names[3];

/* The description of GPTDataset g for split s (0..2) into out (appended). SL_ERR_CONFIG for
 * a split string or tokenizer text Megatron would not accept. */
int mdesc_gpt(struct sl_buf *out, const struct mdesc *m, const struct mdesc_gpt *g, int s);
/* The description of a BlendedDataset of the n GPTDatasets g for split s, weights as
 * normalised by the BlendedDataset (mdesc_normalize applied twice to the weights given, as
 * megatron-core does) and its size. */
int mdesc_blend(struct sl_buf *out, const struct mdesc *m, const struct mdesc_gpt *g, int n,
                int s, const double *weights, uint64_t size);
/* The cache name's hash: MD5 of the description as 32 hex digits. */
void mdesc_hash(const struct sl_buf *desc, char hex[33]);

/* Megatron's split matrix of a --split string (parse_and_normalize_split, then
 * convert_split_vector_to_split_matrix): present[i] = 0 where Megatron has None, else
 * split i covers [b[i][0], b[i][1]) of the sequences. SL_ERR_CONFIG for no numbers, more
 * than three or a zero sum. */
int mdesc_split_matrix(const char *split, double b[3][2], int present[3]);

/* Megatron's normalize(): w / numpy.sum(w) (numpy's pairwise summation) into out. */
void mdesc_normalize(const double *w, size_t n, double *out);

/* The tokenizer's unique_identifiers for a spec (fresh JSON text in *json):
 *   TYPE:ARGS          Megatron's --tokenizer-type TYPE with the new tokenizer system,
 *   legacy:TYPE:ARGS   the same with --legacy-tokenizer,
 *   {...}              the identifiers themselves (as a description.txt shows them),
 * where TYPE:ARGS is one of the rows of mdesc_tokenizers (NullTokenizer:VOCAB_SIZE,
 * GPT2BPETokenizer:VOCAB_FILE,MERGE_FILE, HuggingFaceTokenizer:MODEL, ...). The other
 * tokenizer options keep Megatron's defaults. SL_ERR_CONFIG names what is wrong. */
int mdesc_tokenizer(const char *spec, char **json);

/* The table mdesc_tokenizer reads (for -h and the docs): type, whether legacy, and what
 * its arguments are; ended by a row with type NULL. */
struct mdesc_tokenizer_kind {
    const char *type;
    int legacy;
    const char *args;
    const char *json; /* the identifiers, "%1" and "%2" standing for the arguments */
};
extern const struct mdesc_tokenizer_kind mdesc_tokenizers[];

/* Python's repr() of a float (the shortest text that reads back as v), as json.dumps
 * writes it. */
void mdesc_py_float(struct sl_buf *out, double v);

#endif
