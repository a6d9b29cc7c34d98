/* Byte-level BPE training, as the `tokenizers` library's BpeTrainer with the ByteLevel
 * pre-tokenizer does it: pre-token counts from a stream of text (a bounded table), then
 * merges of the most frequent adjacent pair, with pair counts updated incrementally and
 * a priority queue (no recount per merge).
 *
 * Ids: the special tokens first (0..k-1, in the order given), then the 256 bytes in the
 * order of their characters in GPT-2's byte-to-unicode alphabet ('!' .. '~', U+00A1 ..,
 * then U+0100 .. for the bytes that are not printable), then one id per merge that makes
 * a new token. Ties between pairs of equal count go to the smaller (left id, right id),
 * as in BpeTrainer, so the result depends only on the counts: not on the input order,
 * the hash layout or the number of threads or ranks.
 */
#ifndef SL_TOKENIZE_BPE_TRAIN_H
#define SL_TOKENIZE_BPE_TRAIN_H

#include <stddef.h>
#include <stdint.h>

#include "tokenize/pretok.h"

/* ---- pre-token counts -------------------------------------------------------------- */

/* A table of pre-token -> count with at most `max_entries` entries. When it fills up, the
 * entries with the smallest counts are dropped (every entry with count <= t, for the
 * smallest t that frees at least half of the table) and t is remembered: a pre-token seen
 * again later starts from zero, so counts of frequent pre-tokens are exact up to t times
 * the number of prunings, and the rare tail is cut (lossy counting). Deterministic for a
 * given input order. */
struct bpe_counts;

/* max_entries >= 16; max_piece: longer pre-tokens are skipped and counted (>= 1). */
struct bpe_counts *bpe_counts_new(enum pretok_kind kind, size_t max_entries, size_t max_piece);
void bpe_counts_free(struct bpe_counts *c);
/* Pre-tokenize text and count its pieces. */
void bpe_counts_add_text(struct bpe_counts *c, const char *text, size_t n);
/* Count one pre-token `n` times. */
void bpe_counts_add_piece(struct bpe_counts *c, const void *piece, size_t len, uint64_t n);

struct bpe_counts_stats {
    uint64_t pieces;      /* pre-tokens seen */
    uint64_t distinct;    /* entries now */
    uint64_t too_long;    /* pre-tokens longer than max_piece, skipped */
    uint64_t prunings;    /* times the table was pruned */
    uint64_t pruned;      /* entries dropped */
    uint64_t pruned_mass; /* occurrences dropped with them */
};
void bpe_counts_stats(const struct bpe_counts *c, struct bpe_counts_stats *s);

/* ---- training --------------------------------------------------------------------- */

struct bpe_model {
    uint32_t n_vocab;   /* ids 0..n_vocab-1 */
    uint32_t n_special; /* ids 0..n_special-1 are the special tokens */
    uint32_t *off;      /* token id's bytes: bytes[off[id] .. off[id+1]) */
    unsigned char *bytes;
    uint32_t n_merges;
    uint32_t (*merges)[3]; /* left id, right id, result id; in rank order */
    enum pretok_kind pretok;
    /* NULL: ids below n_special are the special tokens, all ids are used. Else per id:
     * BPE_TOK_REGULAR, BPE_TOK_SPECIAL or BPE_TOK_UNUSED (a converted rank file). */
    unsigned char *flags;
};

enum { BPE_TOK_REGULAR = 0, BPE_TOK_SPECIAL = 1, BPE_TOK_UNUSED = 2 };

/* BPE_TOK_* of id. */
int bpe_model_flag(const struct bpe_model *m, uint32_t id);

struct bpe_train_opts {
    uint32_t vocab_size;    /* specials + 256 bytes + merges */
    uint64_t min_frequency; /* a pair seen fewer times is not merged (0: any) */
    const char *const *specials;
    size_t n_specials;
};

/* Train on the counts. 0, or SL_ERR_USAGE (vocab_size smaller than the specials plus the
 * 256 bytes, a special token that is empty or a duplicate). `out` is owned by the caller
 * (bpe_model_release). */
int bpe_train(const struct bpe_counts *c, const struct bpe_train_opts *o, struct bpe_model *out);
void bpe_model_release(struct bpe_model *m);

/* GPT-2's byte-to-unicode map: the code point standing for each byte. */
uint32_t bpe_byte_char(unsigned char byte);

#endif
