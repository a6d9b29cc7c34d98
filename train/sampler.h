/* Next-token sampling from logits: temperature, top-k and top-p (nucleus), from a seeded
 * generator (core/rng.h), so the same seed gives the same tokens.
 *
 * The order is that of Hugging Face transformers' warpers: logits divided by the
 * temperature, the k most likely tokens kept, then the smallest set of the most likely
 * tokens whose probabilities sum to at least top_p. Temperature 0, top_k 1 or top_p 0 is
 * greedy decoding (the most likely token, the lowest id on ties; no random draw).
 */
#ifndef SL_TRAIN_SAMPLER_H
#define SL_TRAIN_SAMPLER_H

#include "core/rng.h"

#include <stdint.h>

struct sampler_cand {
    float logit;
    int32_t id;
};

struct sampler {
    int vocab;
    double temperature; /* <= 0: greedy */
    int top_k;          /* 0: all tokens */
    double top_p;       /* >= 1: all tokens; <= 0: greedy */
    struct sl_rng rng;
    struct sampler_cand *cand; /* scratch, vocab entries (owned) */
    double *w;                 /* scratch, vocab weights (owned) */
};

/* Set up for logits of `vocab` entries. A negative or non-finite temperature, top_k or
 * top_p is SL_ERR_USAGE. Release with sampler_release. */
int sampler_init(struct sampler *s, int vocab, double temperature, int top_k, double top_p,
                 uint64_t seed);
void sampler_release(struct sampler *s);

/* 1 when every pick is the arg max (no random draws). */
int sampler_greedy(const struct sampler *s);

/* The next token for logits[vocab]. NaN logits count as -inf. */
int32_t sampler_pick(struct sampler *s, const float *logits);

#endif
