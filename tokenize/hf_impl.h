/* Internals of tokenize/hf.c and tokenize/hf_load.c: the loaded tokenizer.json. Not part
 * of the API. */
#ifndef SL_TOKENIZE_HF_IMPL_H
#define SL_TOKENIZE_HF_IMPL_H

#include "tokenize/hf.h"
#include "tokenize/pretok.h"

#include <stdint.h>

#define HF_MAX_IDS   (1u << 24) /* ids of WordPiece vocabularies and added tokens */
#define HF_MAX_STEPS 16         /* normalizer steps */

enum hf_model { HF_BPE = 1, HF_WORDPIECE = 2 };

enum hf_norm_step {
    HF_N_NFC = 1,
    HF_N_NFD,
    HF_N_NFKC,
    HF_N_NFKD,
    HF_N_LOWER,      /* Lowercase: each character's full lower-case mapping */
    HF_N_STRIP,      /* StripAccents: drop nonspacing marks (run after NFD) */
    HF_N_BERT_CLEAN, /* BertNormalizer clean_text */
    HF_N_BERT_CJK,   /* BertNormalizer handle_chinese_chars */
    HF_N_BERT_STRIP, /* BertNormalizer strip accents: NFD, then drop nonspacing marks */
};

struct hf_added {
    char *s;
    uint32_t len, id;
    unsigned char special, lstrip, rstrip, single_word, normalized;
};

/* WordPiece vocabulary: token bytes -> id. */
struct hf_wp {
    char *bytes;
    uint32_t *off; /* by id: bytes[off[id] .. off[id+1]); equal offsets for unused ids */
    uint32_t n_ids;
    uint32_t *tab; /* open addressing: id + 1, 0 empty */
    uint64_t mask;
    uint32_t max_len; /* longest token in bytes */
};

struct hf {
    char *name;
    enum hf_model model;
    int steps[HF_MAX_STEPS];
    int nsteps;
    /* byte-level BPE */
    struct bpe *bpe;
    enum pretok_kind kind; /* the regex of the ByteLevel or Split pre-tokenizer */
    int split_digits;      /* Qwen2: \p{N} instead of \p{N}{1,3} (pieces of kind cl100k
                            * that are numbers are split into single code points) */
    int prefix_space;      /* ByteLevel add_prefix_space on the whole text (1) or, after a
                            * Split, on every piece (2) */
    int ignore_merges;
    uint32_t synth_lo, nsynth; /* ids given to byte symbols the vocabulary lacks: dropped */
    /* WordPiece */
    struct hf_wp wp;
    uint32_t unk_id;
    int has_unk;
    char *prefix; /* continuing_subword_prefix */
    size_t prefix_len;
    uint32_t max_chars;
    /* added tokens, longest first */
    struct hf_added *added;
    size_t nadded;
    unsigned char first_raw[256], first_norm[256]; /* a token (not) normalized starts so */
    uint32_t *by_first;     /* indices into added, grouped by first byte, longest first */
    uint32_t first_at[257]; /* group of byte c: by_first[first_at[c] .. first_at[c+1]) */
    uint32_t *by_id;        /* indices into added, by id */
    uint64_t pair[256][4];  /* bit (b1, b2): an added token starts with bytes b1 b2, or is
                             * the one byte b1 (then every b2 is set) */
    uint32_t vocab_size;
    /* what the normalizers and BertPreTokenizer need of each code point of the BMP (built
     * at load when they run): HF_UF_* flags and the lower case */
    unsigned char *uflags;
    uint16_t *ulower;
    char desc[160];
};

enum {
    HF_UF_CTRL = 1,
    HF_UF_WS = 2,
    HF_UF_CJK = 4,
    HF_UF_MN = 8,
    HF_UF_PUNCT = 16,
    HF_UF_LOWER = 32
};

/* tokenize/hf_wp.c. The id of the token s[0..n), or -1. */
int64_t hf_wp_find(const struct hf_wp *w, const char *s, size_t n);
/* Take bytes and off (token id's bytes: bytes[off[id] .. off[id+1]), n_ids + 1 offsets;
 * equal offsets for an id without a token; both heap-allocated, owned by w from now on,
 * whatever the result) and build the lookup table. SL_ERR_FORMAT, without a message, when
 * two ids have the same token: dup[0] the first id, dup[1] the second. */
int hf_wp_build(struct hf_wp *w, char *bytes, uint32_t *off, uint32_t n_ids, uint32_t dup[2]);
/* Append the token s[0..n) (not empty, not in w) as the next id, which is returned. */
uint32_t hf_wp_add(struct hf_wp *w, const char *s, size_t n);
void hf_wp_release(struct hf_wp *w);
/* tokenize/hf.c. WordPiece of one word w[0..n) (nchars code points) with e's model and
 * cache, its ids appended to out: the unknown token alone when a position cannot be
 * spelled or the word is longer than max_chars. */
int hf_wordpiece(struct hf_enc *e, const char *w, size_t n, size_t nchars, struct tok_ids *out);
/* Fill h->uflags and h->ulower (tokenize/hf.c). */
void hf_build_tables(struct hf *h);

#endif
