/* Training SentencePiece models from sentences held in memory (libsentencepiece_train).
 * The caller samples the sentences (see cmd_tokenizer.c); the trainer sees exactly those,
 * in the given order, so training is deterministic. */
#ifndef SL_TOKENIZE_SPM_TRAIN_H
#define SL_TOKENIZE_SPM_TRAIN_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Train with spm_train's options given as "--name=value" strings (without --input, which
 * the sentences replace); writes PREFIX.model and PREFIX.vocab, both complete or neither.
 * Errors carry the library's message. */
int spm_train_sentences(const char *const *sentences, size_t n, const char *const *args,
                        size_t nargs, const char *prefix);

#ifdef __cplusplus
}
#endif

#endif
