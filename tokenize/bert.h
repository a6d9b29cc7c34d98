/* struct bert: a BERT WordPiece vocabulary (vocab.txt) encoded with the ids of Megatron-LM's
 * BertWordPieceCase / BertWordPieceLowerCase tokenizers (its _BertWordPieceTokenizer:
 * Google's original BERT FullTokenizer, then Megatron's added tokens), the tokenizer specs
 * bert:vocab.txt and bert-lower:vocab.txt.
 *
 * Encoding is Google's BasicTokenizer with Python's semantics, Python's `unicodedata` and
 * `str` of the version named in tokenize/bert_unicode.h: drop U+0000, U+FFFD and the Cc
 * and Cf characters (not \t \n \r); white space (category Zs, \t \n \r; U+2028 and U+2029
 * split words as str.split() does) separates words; every CJK ideograph is a word; lower
 * case only (bert-lower): each word through str.lower() (final sigma included), NFD, and
 * its Mn characters dropped; punctuation (ASCII non-alphanumerics, categories P*) split
 * off; then WordPiece, greedy longest match first with "##" pieces, [UNK] for a word it
 * cannot spell or of more than 200 characters (tokenize/hf.c's WordPiece model). Special
 * token strings in the text ("[CLS]") are text, as in Megatron.
 *
 * Ids: line N of vocab.txt (from 1) is id N-1, its token the line without the white space
 * Python's str.strip() removes; then, as Megatron adds them when absent: [BOS], [EOS] and
 * <extra_id_0> .. <extra_id_{E-1}> (E: --vocab-extra-ids), each the next id. The
 * end-of-document id is [EOS]'s; the vocabulary size is the number of ids.
 *
 * Loading refuses, naming the file and the line: invalid UTF-8, an empty token, a token
 * given twice, more than 2^24 ids, a missing [CLS], [SEP], [PAD], [MASK] or [UNK].
 *
 * A struct bert is immutable once loaded and may be shared by threads; each thread encodes
 * through its own struct bert_enc. */
#ifndef SL_TOKENIZE_BERT_H
#define SL_TOKENIZE_BERT_H

#include <stddef.h>
#include <stdint.h>

#include "tokenize/ids.h"

struct sl_buf;
struct hf;

struct bert {
    struct hf *wp;      /* the WordPiece model: the ids above, [UNK], "##", 200 characters */
    int lower;          /* bert-lower: lower case and accents stripped */
    uint32_t n_file;    /* tokens read from vocab.txt */
    uint32_t extra_ids; /* E */
    /* Megatron's special ids: cls, sep, pad, mask looked up, bos and eos added if absent */
    uint32_t cls, sep, pad, mask, unk, bos, eos;
};

/* Load vocab.txt (plain or compressed, as sl_read_file reads it). */
int bert_load(struct bert **out, const char *path, int lower, uint32_t extra_ids);
/* Load from memory; `name` is used in messages. */
int bert_load_mem(struct bert **out, const char *text, size_t len, const char *name, int lower,
                  uint32_t extra_ids);
void bert_free(struct bert *b);

uint32_t bert_vocab_size(const struct bert *b);
/* The token of id (NULL when id is not below the vocabulary size), its length in *len. */
const char *bert_token(const struct bert *b, uint32_t id, size_t *len);
/* Id of the token s, or -1. */
int64_t bert_token_id(const struct bert *b, const char *s);

/* The vocabulary as a Hugging Face tokenizer.json (appended to out): BertNormalizer
 * (lower case and accents stripped for bert-lower), BertPreTokenizer, WordPiece with "##",
 * [UNK] and 200 characters a word, the special tokens as special added tokens, no
 * post-processor. The `tokenizers` library gives the ids of bert_encode on text it
 * normalizes as Python does (docs/tokenizers.md says where the two differ). 0, or
 * SL_ERR_TOOBIG at out's cap. */
int bert_tokenizer_json(const struct bert *b, struct sl_buf *out);
/* The tokens of vocab.txt itself, one a line (what Megatron's --vocab-file reads). */
int bert_vocab_txt(const struct bert *b, struct sl_buf *out);

struct bert_enc;
struct bert_enc *bert_enc_new(const struct bert *b);
void bert_enc_free(struct bert_enc *e);
/* Append the ids of text[0..n) to out: 0; 1 when invalid UTF-8 was replaced by U+FFFD
 * first (which is then dropped, as _clean_text drops U+FFFD); or a negative enum sl_err
 * (SL_ERR_TOOBIG at out's cap). */
int bert_encode(struct bert_enc *e, const char *text, size_t n, struct tok_ids *out);
/* Append the text of ids to out as Megatron's detokenize writes it: the tokens joined by
 * spaces, every " ##" removed, white space stripped from both ends, then its clean-up:
 * " ." " ?" " !" " ," " n't" " 'm" " 's" " 've" " 're" lose their space, " ' " becomes
 * "'". SL_ERR_FORMAT for an id that is not in the vocabulary (out is left as it was). */
int bert_decode(const struct bert *b, const uint32_t *ids, size_t n, struct sl_buf *out);

#endif
