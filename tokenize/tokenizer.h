/* struct tokenizer: one interface over the tokenizers sluice reads, chosen by a spec
 * KIND:PATH, or KIND,OPTION=VALUE,...:PATH (TOKENIZER_SPEC_TABLE):
 *
 *   gpt2:DIR             vocab.json + merges.txt (or encoder.json + vocab.bpe) in DIR
 *   tiktoken:FILE        a tiktoken rank file (r50k_base, cl100k_base, o200k_base)
 *   spm:FILE             a SentencePiece .model, encoded by sluice's own encoder
 *   spm-lib:FILE         the same, encoded by libsentencepiece
 *   hf:FILE              a Hugging Face tokenizer.json (byte-level BPE or WordPiece)
 *   bert:vocab.txt       BERT WordPiece with the ids of Megatron-LM's BertWordPieceCase
 *   bert-lower:vocab.txt the same, BertWordPieceLowerCase; both take extra-ids=N
 *                        (Megatron's --vocab-extra-ids N: <extra_id_0> .. <extra_id_N-1>)
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
struct bert;

enum tokenizer_kind {
    TOKENIZER_GPT2,
    TOKENIZER_TIKTOKEN,
    TOKENIZER_SPM,
    TOKENIZER_HF,
    TOKENIZER_BERT
};

/* The spec kinds, one row each: X(name, what the path names, kind, variant, options). The
 * variant is the SentencePiece engine (1: libsentencepiece) or BERT's lower case (1);
 * options are the OPTION names the kind accepts, "" for none. tokenizer_open, the hint of
 * an unknown spec and TOKENIZER_SPECS read it. */
#define TOKENIZER_SPEC_TABLE(X)                                                                    \
    X("gpt2", "DIR", TOKENIZER_GPT2, 0, "")                                                        \
    X("tiktoken", "FILE", TOKENIZER_TIKTOKEN, 0, "")                                               \
    X("spm", "FILE", TOKENIZER_SPM, 0, "")                                                         \
    X("spm-lib", "FILE", TOKENIZER_SPM, 1, "")                                                     \
    X("hf", "tokenizer.json", TOKENIZER_HF, 0, "")                                                 \
    X("bert", "vocab.txt", TOKENIZER_BERT, 0, "extra-ids")                                         \
    X("bert-lower", "vocab.txt", TOKENIZER_BERT, 1, "extra-ids")

#define TOKENIZER_SPEC_FORM_(name, arg, kind, variant, opts) name ":" arg " "
/* "gpt2:DIR tiktoken:FILE ... (docs/tokenizers.md)": the forms for -h texts and hints. */
#define TOKENIZER_SPECS TOKENIZER_SPEC_TABLE(TOKENIZER_SPEC_FORM_) "(docs/tokenizers.md)"

struct tokenizer {
    enum tokenizer_kind kind;
    char *spec;
    struct bpe *bpe;
    struct spm *spm;
    struct hf *hf;
    struct bert *bert;
    uint32_t vocab_size;
    int64_t eod_id;            /* <|endoftext|>, or the model's </s>; -1 when there is none */
    struct bpe_shared *pieces; /* tokenizer_share_pieces */
};

struct tokenizer_enc;

/* Load from a spec. SL_ERR_USAGE for an unknown kind or option (with the accepted forms as
 * a hint); loading errors name the file. */
int tokenizer_open(struct tokenizer **out, const char *spec);
void tokenizer_free(struct tokenizer *t);
/* The path of a spec whose kind is one of TOKENIZER_SPEC_TABLE's ("bert-lower,extra-ids=100:
 * v.txt" -> "v.txt"), or NULL. */
const char *tokenizer_spec_path(const char *spec);
/* "gpt2", "tiktoken", "spm", "hf", "bert". */
const char *tokenizer_kind_name(enum tokenizer_kind k);

/* Encoders made after this, for the threads of one stream, share one cache of merged pieces
 * (byte-level BPE, also in a tokenizer.json: bpe_shared_new); other kinds are unchanged.
 * Freed with t. */
void tokenizer_share_pieces(struct tokenizer *t);
struct tokenizer_enc *tokenizer_enc_new(const struct tokenizer *t);
void tokenizer_enc_free(struct tokenizer_enc *e);
/* Append the ids of text to out: 0; 1 when invalid UTF-8 had to be replaced
 * (SentencePiece, BERT, and tokenizer.json files that normalize or are WordPiece:
 * byte-level BPE encodes any bytes); or a negative enum sl_err. */
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
 * tokenizer.tiktoken (+ .json), vocab.txt, or GPT-2's two files; compressed files
 * decompressed), each
 * written atomically; *rel is a fresh spec of the copies relative to dir ("spm:tokenizer.model",
 * "gpt2:."). Errors name the file. */
int tokenizer_copy_files(const char *spec, const char *dir, char **rel);

#endif
