/* struct punkt_trainer: NLTK's unsupervised Punkt trainer (PunktTrainer, NLTK 3.10.4, with
 * its default constants), giving the same parameters as
 *
 *     PunktTrainer().train("\n\n".join(texts))      (then get_params())
 *
 * for the texts added, in the order added:
 *  - word tokens (tokenize/punkt_word.h) and the count of each type;
 *  - abbreviations: each type ending in a period scored by Dunning's log-likelihood that
 *    it and its period form a unit, scaled for length, periods inside and occurrences
 *    without the period; kept at 0.3 and above;
 *  - the first pass (tokenize/punkt_word.h) with those abbreviations, then the
 *    orthographic contexts: the case of each type's first letter at sentence starts,
 *    inside sentences and where unknown (after line starts, abbreviations, initials);
 *  - rare abbreviations: a sentence-breaking type seen fewer than 5 times, followed by
 *    , : ; or by a lower-case word that starts sentences only in upper case;
 *  - frequent sentence starters (log-likelihood 30 and above), and collocations of an
 *    initial or a number with the word after it (7.88 and above; not a sentence starter).
 * The arithmetic is NLTK's, operation for operation in IEEE double with the C library's
 * log, exp and pow (the ones Python's math module calls), so that the scores, and the
 * parameters decided at the thresholds, are the same.
 *
 * Memory: every token of the training text is kept (4 bytes each, and the distinct
 * tokens once), as NLTK keeps them all; at most PUNKT_TRAIN_MAX_TOKENS. */
#ifndef SL_TOKENIZE_PUNKT_TRAIN_H
#define SL_TOKENIZE_PUNKT_TRAIN_H

#include <stddef.h>
#include <stdint.h>

struct punkt_params;

/* 2^30 tokens (about 5 GB of English text, 4 GiB of token memory) */
#define PUNKT_TRAIN_MAX_TOKENS ((uint64_t)1 << 30)

struct punkt_train_stats {
    uint64_t texts, tokens, types, period_tokens, sentence_breaks;
};

struct punkt_trainer *punkt_trainer_new(void);
void punkt_trainer_free(struct punkt_trainer *t);

/* Add one text (UTF-8). 0, or SL_ERR_TOOBIG past PUNKT_TRAIN_MAX_TOKENS (or more distinct
 * tokens than a table holds); the trainer is then of no further use. */
int punkt_trainer_add(struct punkt_trainer *t, const char *text, size_t n);

/* Train on the texts added: 0 and *out (the caller frees it), or SL_ERR_TOOBIG. st (if not
 * NULL) receives the counts. The trainer is spent. */
int punkt_trainer_finish(struct punkt_trainer *t, struct punkt_params **out,
                         struct punkt_train_stats *st);

#endif
