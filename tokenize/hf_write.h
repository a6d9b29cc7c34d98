/* Writing a byte-level BPE (struct bpe_model) in the formats other tools read:
 *
 *   tokenizer.json     the Hugging Face `tokenizers` file, byte for byte as that library
 *                      saves a ByteLevel BPE (pretty-printed): ByteLevel pre-tokenizer
 *                      for the GPT-2 pattern, Split(pattern) + ByteLevel for cl100k and
 *                      o200k; special tokens as added tokens
 *   tiktoken ranks     "<base64 bytes> <rank>" a line, rank = id, special tokens left out;
 *                      with a sidecar FILE.json {"pattern": ..., "special_tokens": {...}}
 *                      that bpe_load_tiktoken reads
 *   vocab.json + merges.txt   GPT-2's files (the GPT-2 pattern only)
 *
 * All append to a caller-owned sl_buf: 0, or SL_ERR_TOOBIG when its cap is reached. */
#ifndef SL_TOKENIZE_HF_WRITE_H
#define SL_TOKENIZE_HF_WRITE_H

#include "tokenize/bpe_train.h"

struct sl_buf;
struct bpe;

int hf_write_tokenizer_json(const struct bpe_model *m, struct sl_buf *out);
int hf_write_tiktoken(const struct bpe_model *m, struct sl_buf *ranks, struct sl_buf *sidecar);
int hf_write_gpt2(const struct bpe_model *m, struct sl_buf *vocab, struct sl_buf *merges);

/* A tokenizer.json for an exported model: the members of json[0..n) in their order and
 * as they are, but post_processor, truncation and padding null, so that transformers adds
 * no token around a text and cuts or pads nothing (the ids equal those of
 * encode(text, add_special_tokens=False)). SL_ERR_FORMAT (with the byte offset, `name` in
 * the message) when json is not one JSON object; SL_ERR_TOOBIG at out's cap. */
int hf_write_exported(const char *json, size_t n, const char *name, struct sl_buf *out);

/* The regular expression of a pattern as tiktoken and tokenizer.json spell it. */
const char *hf_pattern_regex(enum pretok_kind k);

/* A loaded byte-level BPE (tiktoken ranks or GPT-2 files) as a struct bpe_model: tokens by
 * id, the special tokens, and the merge that makes each token of two or more bytes (the
 * split that merging its bytes with only lower-ranked merges ends in, as transformers'
 * tiktoken converter does). Tokens must be laid out as the ranks say: a token's id is its
 * rank. 0, or SL_ERR_FORMAT when a token cannot be reached by merges (then no faithful
 * tokenizer.json exists). Caller releases `out`. */
int hf_model_from_bpe(const struct bpe *b, struct bpe_model *out);

#endif
