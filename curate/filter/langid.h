/* Language identification and fastText models behind a C interface (the libraries are
 * C++): CLD2 (Debian libcld2), and fastText (Debian libfasttext) for lid.176 / GlotLID
 * models and for training and applying supervised quality classifiers.
 *
 * All functions catch C++ exceptions and return enum sl_err with a message. A loaded
 * model is read-only and may be shared by threads. Predictions are fastText's own, bit for
 * bit; for supervised models without word n-grams (lid.176, GlotLID) the input ids of a
 * line are built here rather than by fastText's Dictionary::getLine, which is most of the
 * cost of language ID on a pruned (.ftz) model. */
#ifndef SL_FILTER_LANGID_H
#define SL_FILTER_LANGID_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* CLD2 on plain UTF-8 text: ISO 639-1 code (or CLD2's code, "zh-Hant", "un" for unknown)
 * into code[16], and the share of text in that language (0..1) times reliability (a
 * reliable answer keeps its share, an unreliable one is halved). */
int sl_cld2_detect(const char *text, size_t n, char code[16], double *score);

struct sl_fasttext;
/* Load a fastText model (.bin or quantized .ftz). */
int sl_fasttext_load(struct sl_fasttext **out, const char *path);
void sl_fasttext_free(struct sl_fasttext *m);
/* Top-k predictions of one text (newlines become spaces, as fastText reads a line).
 * labels[i] (without "__label__") and probs[i] for i < *n; label buffers of 64 bytes. */
int sl_fasttext_predict(const struct sl_fasttext *m, const char *text, size_t n, int k,
                        char (*labels)[64], double *probs, int *got);
/* Probability of one label ("__label__hq" or "hq"); 0 when it is not in the top k. */
int sl_fasttext_prob(const struct sl_fasttext *m, const char *text, size_t n, const char *label,
                     double *prob);

struct sl_fasttext_train_opts {
    const char *input;  /* fastText training file: "__label__x text" per line */
    const char *output; /* model path; ".bin" is written as given */
    int epoch, dim, word_ngrams, min_count, seed, thread;
    double lr;
    int verbose;
};
int sl_fasttext_train(const struct sl_fasttext_train_opts *o);

#ifdef __cplusplus
}
#endif

#endif
