/* struct hf: a Hugging Face tokenizer.json (the `tokenizers` library's format), encoded
 * with the ids that library gives for encode(text, add_special_tokens=False).
 *
 * Models: BPE with byte-level pre-tokenization (GPT-2 / GPT-NeoX / Pythia / OLMo: the
 * ByteLevel pre-tokenizer with its regex; Llama 3, OLMo 2, Qwen2 and o200k layouts: a
 * Split with one of the known regexes, then ByteLevel without regex), on the byte-level BPE
 * engine of tokenize/bpe.h; and WordPiece (BERT: BertNormalizer, BertPreTokenizer, "##"
 * pieces, the unknown token for a word it cannot spell or that is too long).
 * Normalizers: NFC, NFD, NFKC, NFKD, Lowercase, StripAccents, BertNormalizer, Sequence.
 * Added tokens (special or not) are found in the text first, leftmost-longest, honouring
 * lstrip, rstrip, single_word and normalized, as the library does.
 *
 * Anything else (another model, a Split regex sluice does not know, BPE dropout, an
 * end-of-word suffix) is refused when loading with a message that names it. Errors name
 * the file and the JSON path (and byte offset) of the offending value.
 *
 * A struct hf is immutable once loaded and may be shared by threads; each thread encodes
 * through its own struct hf_enc. */
#ifndef SL_TOKENIZE_HF_H
#define SL_TOKENIZE_HF_H

#include <stddef.h>
#include <stdint.h>

#include "tokenize/ids.h"

struct sl_buf;
struct hf;
struct hf_enc;
struct bpe_shared;

/* Load tokenizer.json (plain or compressed, as sl_read_file reads it). */
int hf_load(struct hf **out, const char *path);
/* Load from memory; `name` is used in messages. */
int hf_load_mem(struct hf **out, const char *json, size_t len, const char *name);
void hf_free(struct hf *h);

/* Number of ids: the largest id of the model or of an added token, plus one. */
uint32_t hf_vocab_size(const struct hf *h);
/* Id of the token whose content is exactly s (an added token, else a model token), or
 * -1. */
int64_t hf_token_id(const struct hf *h, const char *s);
/* The end-of-document token: the first of the tiktoken families' (tiktoken.h:
 * <|endoftext|>, <|end_of_text|>), </s>, <eos>, [SEP] that is an added token; -1 when
 * there is none. */
int64_t hf_eod_id(const struct hf *h);
/* The content of the added token with this id, or NULL when id is not an added token. */
const char *hf_added_content(const struct hf *h, uint32_t id);
/* Short description ("BPE, byte-level, llama3 split, 2 added tokens"). */
const char *hf_describe(const struct hf *h);

struct hf_enc *hf_enc_new(const struct hf *h);
/* A byte-level BPE tokenizer's encoder whose merged pieces are shared with the other
 * threads' (bpe_shared_new; ignored for WordPiece). hf_is_bpe: whether it is one. */
struct hf_enc *hf_enc_new_shared(const struct hf *h, struct bpe_shared *sh);
int hf_is_bpe(const struct hf *h);
void hf_enc_free(struct hf_enc *e);
/* Append the ids of text[0..n) to out: 0; 1 when invalid UTF-8 was replaced by U+FFFD
 * first (only where the tokenizer normalizes or is WordPiece: byte-level BPE without a
 * normalizer encodes any bytes); or a negative enum sl_err (SL_ERR_TOOBIG at out's cap). */
int hf_encode(struct hf_enc *e, const char *text, size_t n, struct tok_ids *out);
/* Append the text of ids to out (WordPiece: pieces joined by spaces, "##" pieces glued to
 * the previous one). SL_ERR_FORMAT for an id that is not in the vocabulary. */
int hf_decode(const struct hf *h, const uint32_t *ids, size_t n, struct sl_buf *out);

#endif
