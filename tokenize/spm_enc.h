/* struct spm_enc: sluice's own SentencePiece encoder, without the library. It reads the
 * serialized ModelProto itself and encodes unigram (Viterbi) and BPE models with the
 * model's normalizer (precompiled character map, add_dummy_prefix,
 * remove_extra_whitespaces, escape_whitespaces, treat_whitespace_as_suffix), user-defined
 * symbols, byte fallback and the merging of runs of <unk>: the ids equal
 * `spm_encode --output_format=id` (SentencePiece 0.1.97; docs/tokenizers.md).
 *
 * Immutable once loaded; spm_enc_encode may be called from any number of threads at once
 * (each thread keeps its own scratch buffers).
 */
#ifndef SL_TOKENIZE_SPM_ENC_H
#define SL_TOKENIZE_SPM_ENC_H

#include <stddef.h>

#include "tokenize/ids.h"

struct sl_buf;

#ifdef __cplusplus
extern "C" {
#endif

struct spm_enc;

/* Read a serialized ModelProto; `name` is used in messages. SL_ERR_FORMAT for a message
 * that is not a valid model (naming the byte offset), SL_ERR_UNSUPPORTED for the word and
 * char model types (the library encodes those). */
int spm_enc_load(struct spm_enc **out, const void *data, size_t n, const char *name);
void spm_enc_free(struct spm_enc *m);

/* Append the ids of text[0..n) to out. Returns 0, 1 when the ids are complete but
 * invalid UTF-8 was replaced by U+FFFD (byte by byte, as SentencePiece does), or
 * SL_ERR_TOOBIG (out's cap). */
int spm_enc_encode(const struct spm_enc *m, const char *text, size_t n, struct tok_ids *out);

/* Append the model as a Hugging Face tokenizer.json (tokenize/spm_hf.c) whose ids equal
 * spm_enc_encode's when special tokens are not split off (docs/tokenizers.md, "Exported
 * tokenizers"). 0, or SL_ERR_TOOBIG when out's cap is reached. */
int spm_enc_tokenizer_json(const struct spm_enc *m, struct sl_buf *out);

#ifdef __cplusplus
}
#endif

#endif
