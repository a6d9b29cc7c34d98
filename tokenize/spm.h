/* SentencePiece models (.model) through Debian's libsentencepiece: a small C API.
 *
 * A struct spm is immutable once loaded; spm_encode and spm_decode may be called from any
 * number of threads at once (the library's processor is const-safe). Encoding is
 * spm_encode --output_format=id: no sampling, no BOS/EOS added. Text must be UTF-8; each
 * invalid byte is replaced by U+FFFD (as the library's normalizer does; the return value
 * tells the caller so that it can count it).
 */
#ifndef SL_TOKENIZE_SPM_H
#define SL_TOKENIZE_SPM_H

#include <stddef.h>
#include <stdint.h>

#include "tokenize/ids.h"

#ifdef __cplusplus
extern "C" {
#endif

struct sl_buf;
struct spm;

/* Which code encodes: sluice's own encoder (tokenize/spm_enc.h, the default; word and
 * char models always go to the library) or libsentencepiece. Decoding, the piece API and
 * training always use the library. */
enum spm_engine { SPM_ENGINE_OWN, SPM_ENGINE_LIB };

/* Load a model file (plain or compressed). Errors name the file: missing, not a
 * SentencePiece model (corrupt or another format). */
int spm_load(struct spm **out, const char *path);
int spm_load_engine(struct spm **out, const char *path, enum spm_engine engine);
/* Load a serialized ModelProto from memory; `name` is used in messages. */
int spm_load_mem(struct spm **out, const void *data, size_t n, const char *name);
int spm_load_mem_engine(struct spm **out, const void *data, size_t n, const char *name,
                        enum spm_engine engine);
/* "sluice" or "library": the code that encodes. */
const char *spm_engine_name(const struct spm *s);
void spm_free(struct spm *s);

/* Append the ids of text[0..n) to out. Returns 0, or SL_ERR_TOOBIG (out's cap), or 1 when
 * the ids are complete but invalid UTF-8 had to be replaced. */
int spm_encode(const struct spm *s, const char *text, size_t n, struct tok_ids *out);
/* Append the text of ids to out. SL_ERR_FORMAT for an id outside the vocabulary. */
int spm_decode(const struct spm *s, const uint32_t *ids, size_t n, struct sl_buf *out);

uint32_t spm_vocab_size(const struct spm *s);
/* Id of a piece, or -1 when the model does not have it. */
int64_t spm_piece_to_id(const struct spm *s, const char *piece);
/* The piece of an id (valid while s lives), NULL when out of range. */
const char *spm_id_to_piece(const struct spm *s, uint32_t id);
/* Special ids, -1 when the model has none. */
int64_t spm_bos_id(const struct spm *s);
int64_t spm_eos_id(const struct spm *s);
int64_t spm_pad_id(const struct spm *s);
int64_t spm_unk_id(const struct spm *s);
/* Append the model as a Hugging Face tokenizer.json with the ids of spm_encode (see
 * spm_enc_tokenizer_json). SL_ERR_UNSUPPORTED for word and char models. */
int spm_tokenizer_json(const struct spm *s, struct sl_buf *out);
/* "unigram", "bpe", "word", "char". */
const char *spm_model_type(const struct spm *s);

#ifdef __cplusplus
}
#endif

#endif
