/* struct tokenizer: one interface over the tokenizers sluice reads, chosen by a spec:
 *
 *   gpt2:DIR        vocab.json + merges.txt (or encoder.json + vocab.bpe) in DIR
 *   tiktoken:FILE   a tiktoken rank file (r50k_base, cl100k_base, o200k_base)
 *   spm:FILE        a SentencePiece .model, encoded by sluice's own encoder
 *   spm-lib:FILE    the same, encoded by libsentencepiece
 *   hf:FILE         a Hugging Face tokenizer.json (byte-level BPE or WordPiece)
 *
 * The tokenizer is immutable and shared by threads; each thread encodes through its own
 * struct tokenizer_enc. */
#ifndef SL_TOKENIZE_TOKENIZER_H
#define SL_TOKENIZE_TOKENIZER_H

#include <stddef.h>
#include <stdint.h>

#include "tokenize/ids.h"

struct sl_buf;
struct bpe;
struct bpe_shared;
struct spm;
struct hf;

enum tokenizer_kind { TOKENIZER_GPT2, TOKENIZER_TIKTOKEN, TOKENIZER_SPM, TOKENIZER_HF };

struct tokenizer {
    enum tokenizer_kind kind;
    char *spec;
    struct bpe *bpe;
    struct spm *spm;
    struct hf *hf;
    uint32_t vocab_size;
    int64_t eod_id;            /* <|endoftext|>, or the model's </s>; -1 when there is none */
    struct bpe_shared *pieces; /* tokenizer_share_pieces */
};

struct tokenizer_enc;

/* The forms of a spec, for usage texts and hints: every command quotes this one list. */
#define TOKENIZER_SPECS "gpt2:DIR, tiktoken:FILE, spm:FILE or hf:tokenizer.json"

/* Load from a spec. SL_ERR_USAGE for an unknown kind (with the accepted forms as a hint);
 * loading errors name the file. */
int tokenizer_open(struct tokenizer **out, const char *spec);
void tokenizer_free(struct tokenizer *t);
/* "gpt2", "tiktoken", "spm", "hf". */
const char *tokenizer_kind_name(enum tokenizer_kind k);

/* Encoders made after this, for the threads of one stream, share one cache of merged pieces
 * (byte-level BPE, also in a tokenizer.json: bpe_shared_new); other kinds are unchanged.
 * Freed with t. */
void tokenizer_share_pieces(struct tokenizer *t);
struct tokenizer_enc *tokenizer_enc_new(const struct tokenizer *t);
void tokenizer_enc_free(struct tokenizer_enc *e);
/* Append the ids of text to out: 0; 1 when invalid UTF-8 had to be replaced
 * (SentencePiece, and tokenizer.json files that normalize or are WordPiece: byte-level
 * BPE encodes any bytes); or a negative enum sl_err. */
int tokenizer_encode(struct tokenizer_enc *e, const char *text, size_t n, struct tok_ids *out);
int tokenizer_decode(const struct tokenizer *t, const uint32_t *ids, size_t n, struct sl_buf *out);

/* ---- a spec's files ------------------------------------------------------------------ */

/* The spec with its path made absolute (the kind prefix kept), as a fresh string: the form
 * manifests and checkpoints record, valid from any directory. */
char *tokenizer_spec_absolute(const char *spec);
/* Whether every file the spec reads is there: 0, or SL_ERR_NOTFOUND naming the spec and the
 * missing file (gpt2:DIR reads DIR/vocab.json + merges.txt or encoder.json + vocab.bpe; a
 * tiktoken rank file's sidecar FILE.json is optional). */
int tokenizer_spec_check(const char *spec);
/* Copy the files of spec into dir under fixed names (tokenizer.model, tokenizer.json,
 * tokenizer.tiktoken (+ .json), or GPT-2's two files; compressed files decompressed), each
 * written atomically; *rel is a fresh spec of the copies relative to dir ("spm:tokenizer.model",
 * "gpt2:."). Errors name the file. */
int tokenizer_copy_files(const char *spec, const char *dir, char **rel);

#endif
