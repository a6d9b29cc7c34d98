/* Token budgets of `sluice mix`: which documents, and how many copies of each, make a mix of
 * a target number of tokens from sources in given proportions, with at most a number of
 * epochs of each source; and the seeded order of the whole mix. No I/O: the caller counts
 * each document's tokens, and every rank that calls this with the same documents gets the
 * same answer.
 *
 * Per source s with documents of A_s tokens in all and weight w_s (of W, the weights' sum):
 * the target is t_s = floor(tokens * w_s / W), capped at floor(max_epochs * A_s). The mix
 * holds every document of s floor(t_s / A_s) times (whole epochs), then documents of s in a
 * seeded order (a hash of the seed, the source and the document) until the remainder
 * t_s mod A_s is reached: the realised tokens R_s satisfy t_s <= R_s < t_s + the last
 * document's tokens. A document appears at most ceil(max_epochs) times.
 */
#ifndef SL_MIX_BUDGET_H
#define SL_MIX_BUDGET_H

#include <stddef.h>
#include <stdint.h>

/* One document that the rules kept. */
struct sl_budget_doc {
    uint32_t file;    /* input number */
    uint32_t source;  /* index into the sources */
    uint64_t ordinal; /* its place among the documents of its file */
    uint64_t tokens;
};

struct sl_budget_source {
    double weight;
    /* filled by sl_budget_select: */
    uint64_t docs, tokens;         /* available */
    uint64_t target;               /* t_s, after the cap */
    uint64_t out_docs, out_tokens; /* realised, copies counted */
};

/* One copy of a document in the mix; the mix is sorted by key (the seeded order). */
struct sl_budget_entry {
    uint64_t key;
    uint64_t ordinal;
    uint32_t file, copy;
};

/* docs: n documents, any order; sources: nsrc with weights (>= 0, their sum > 0). Fills
 * the sources' figures and *out (caller frees) with the mix's entries in their shuffled
 * order. 0, or SL_ERR_USAGE when the weights sum to 0. */
int sl_budget_select(const struct sl_budget_doc *docs, size_t n, struct sl_budget_source *src,
                     size_t nsrc, uint64_t tokens, double max_epochs, uint64_t seed,
                     struct sl_budget_entry **out, size_t *nout);

#endif
