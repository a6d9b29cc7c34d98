/* Byte-level BPE: GPT-2 vocab.json + merges.txt (or encoder.json + vocab.bpe) and tiktoken
 * rank files (r50k_base, cl100k_base, o200k_base), with their pre-tokenizers.
 *
 * A struct bpe is immutable once loaded and may be shared by any number of threads; each
 * thread encodes through its own struct bpe_enc (scratch space and a bounded cache of
 * recent multi-token pieces, whose second level may be shared: bpe_shared_new). Encoding accepts any bytes: invalid UTF-8 is encoded byte
 * by byte, and decoding gives back exactly the input bytes. Special tokens in the text
 * are encoded as ordinary text (tiktoken's encode_ordinary).
 *
 * Merge semantics. Both formats are turned into one table of pair merges (left id, right
 * id) -> (rank, merged id); each piece is merged lowest rank first, leftmost on ties, as
 * GPT-2's encoder.py, HF tokenizers and tiktoken do. For merges.txt the rank is the line
 * number. For a rank file every split of a token into two tokens is a pair with that
 * token's rank, which is exactly tiktoken's byte-string rank lookup. tiktoken also takes a
 * piece that is itself a token as that token; that differs from BPE only for tokens that
 * merging their own bytes does not reach (none of OpenAI's files has one), and the lookup
 * is cheaper than merging, so a rank file's pieces are looked up first. Short pieces are
 * merged with a linear scan, long ones with a heap (O(n log n)).
 */
#ifndef SL_TOKENIZE_BPE_H
#define SL_TOKENIZE_BPE_H

#include <stddef.h>
#include <stdint.h>

#include "tokenize/ids.h"
#include "tokenize/pretok.h"

struct sl_buf;
struct bpe;
struct bpe_enc;

/* Load GPT-2 files. vocab: vocab.json / encoder.json (token string -> id, in GPT-2's
 * byte-to-unicode alphabet); merges: merges.txt / vocab.bpe. Vocabulary entries that no
 * merge produces and that are not single bytes (<|endoftext|>) are special tokens.
 * Errors name the file and line: a merge whose symbols or result are not in the
 * vocabulary (the files disagree), a missing byte token, malformed JSON. */
int bpe_load_gpt2(struct bpe **out, const char *vocab_path, const char *merges_path);
/* The same from a directory holding vocab.json + merges.txt or encoder.json + vocab.bpe. */
int bpe_load_gpt2_dir(struct bpe **out, const char *dir);

/* Load a tiktoken rank file ("<base64 token> <rank>" lines). `kind` < 0 picks the
 * pre-tokenizer and special tokens from the file name (r50k/p50k/gpt2, cl100k, o200k)
 * or, failing that, from the number of ranks; SL_ERR_USAGE when neither tells. */
int bpe_load_tiktoken(struct bpe **out, const char *path, int kind);

/* Load from memory (fuzzing, tests); `name` is used in messages. */
int bpe_load_gpt2_mem(struct bpe **out, const char *vocab, size_t vocab_len, const char *merges,
                      size_t merges_len, const char *name);
int bpe_load_tiktoken_mem(struct bpe **out, const char *data, size_t len, int kind,
                          const char *name);

/* A rank file with its sidecar (`{"pattern": "gpt2", "special_tokens": {"<|endoftext|>": 0}}`,
 * docs/formats/tiktoken-sidecar.md), which bpe_load_tiktoken reads from FILE.json when it
 * exists: the pattern (unless kind >= 0) and the special tokens come from it. sidecar NULL:
 * as bpe_load_tiktoken_mem. Errors about the sidecar name sidecar_name. */
int bpe_load_tiktoken_sidecar_mem(struct bpe **out, const char *data, size_t len, int kind,
                                  const char *name, const char *sidecar, size_t sidecar_len,
                                  const char *sidecar_name);

void bpe_free(struct bpe *b);

/* Number of ids (largest id + 1, specials included). */
uint32_t bpe_vocab_size(const struct bpe *b);
enum pretok_kind bpe_pretok(const struct bpe *b);
/* Id of a special token by name ("<|endoftext|>"), or -1. */
int64_t bpe_special_id(const struct bpe *b, const char *name);
/* Id of the regular (non-special) token with exactly these bytes, or -1. */
int64_t bpe_token_id(const struct bpe *b, const void *bytes, size_t n);
/* Bytes of token id (NULL for an unused id). */
const unsigned char *bpe_token_bytes(const struct bpe *b, uint32_t id, size_t *len);

/* Per-thread encoder. */
struct bpe_enc *bpe_enc_new(const struct bpe *b);
void bpe_enc_free(struct bpe_enc *e);

/* A cache of merged pieces that the encoders of several threads share (their second
 * level, up to 24 MiB in all, instead of one per thread): a piece merged by one of them is
 * found by the others. Encoders made with it must be freed before it. Safe to use from any
 * number of threads at once; the ids are the same as without it. */
struct bpe_shared;
struct bpe_shared *bpe_shared_new(void);
void bpe_shared_free(struct bpe_shared *s);
/* An encoder whose second level is `sh` (NULL: its own, as bpe_enc_new). */
struct bpe_enc *bpe_enc_new_shared(const struct bpe *b, struct bpe_shared *sh);
/* Pieces this encoder has merged (or looked up whole) because no cache held them. */
uint64_t bpe_enc_slow_count(const struct bpe_enc *e);

/* Append the ids of text[0..n) to out. 0, or SL_ERR_TOOBIG when out's cap is reached. */
int bpe_encode(struct bpe_enc *e, const char *text, size_t n, struct tok_ids *out);

/* Append the bytes of ids to out. SL_ERR_FORMAT for an id that is not in the vocabulary. */
int bpe_decode(const struct bpe *b, const uint32_t *ids, size_t n, struct sl_buf *out);

#endif
