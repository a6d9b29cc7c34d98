/* Token budgets: whole epochs of each source, a seeded partial epoch, and the seeded order
 * of the mix (curate/mix/budget.h). */
#include "curate/mix/budget.h"

#include "core/alloc.h"
#include "core/err.h"
#include "core/hash.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* The seeded key of (what, source or copy, file, ordinal): what tells the two orders apart. */
static uint64_t key_of(uint64_t seed, uint64_t what, uint64_t a, uint64_t file, uint64_t ordinal)
{
    uint64_t v[4] = { what, a, file, ordinal };
    return sl_hash64(v, sizeof(v), seed);
}

struct keyed {
    uint64_t key;
    size_t doc;
};

static int cmp_keyed(const void *a, const void *b)
{
    const struct keyed *x = a, *y = b;
    if (x->key != y->key)
        return x->key < y->key ? -1 : 1;
    return x->doc < y->doc ? -1 : x->doc > y->doc;
}

static int cmp_entry(const void *a, const void *b)
{
    const struct sl_budget_entry *x = a, *y = b;
    if (x->key != y->key)
        return x->key < y->key ? -1 : 1;
    if (x->file != y->file)
        return x->file < y->file ? -1 : 1;
    if (x->ordinal != y->ordinal)
        return x->ordinal < y->ordinal ? -1 : 1;
    return x->copy < y->copy ? -1 : x->copy > y->copy;
}

/* Append `copies` copies of document d. */
static void push(struct sl_budget_entry **v, size_t *n, size_t *cap, const struct sl_budget_doc *d,
                 uint64_t copies, uint64_t seed)
{
    for (uint64_t c = 0; c < copies; c++) {
        if (*n == *cap) {
            *cap = *cap ? 2 * *cap : 1024;
            *v = sl_xrealloc(*v, *cap * sizeof(**v));
        }
        (*v)[(*n)++] = (struct sl_budget_entry){
            .key = key_of(seed, 2, c, d->file, d->ordinal),
            .ordinal = d->ordinal,
            .file = d->file,
            .copy = (uint32_t)c,
        };
    }
}

int sl_budget_select(const struct sl_budget_doc *docs, size_t n, struct sl_budget_source *src,
                     size_t nsrc, uint64_t tokens, double max_epochs, uint64_t seed,
                     struct sl_budget_entry **out, size_t *nout)
{
    *out = NULL;
    *nout = 0;
    double wsum = 0;
    for (size_t s = 0; s < nsrc; s++) {
        wsum += src[s].weight;
        src[s].docs = src[s].tokens = src[s].out_docs = src[s].out_tokens = 0;
    }
    if (!(wsum > 0))
        return sl_err_set(SL_ERR_USAGE, "the sources' weights sum to 0: nothing can be mixed");
    for (size_t i = 0; i < n; i++) {
        src[docs[i].source].docs++;
        src[docs[i].source].tokens += docs[i].tokens;
    }
    /* each source's documents in its seeded order */
    struct keyed *order = sl_xcalloc(n ? n : 1, sizeof(*order));
    for (size_t i = 0; i < n; i++)
        order[i] =
            (struct keyed){ key_of(seed, 1, docs[i].source, docs[i].file, docs[i].ordinal), i };
    qsort(order, n, sizeof(*order), cmp_keyed);
    struct sl_budget_entry *v = NULL;
    size_t nv = 0, cap = 0;
    for (size_t s = 0; s < nsrc; s++) {
        struct sl_budget_source *S = &src[s];
        double t = floor((double)tokens * S->weight / wsum),
               c = floor(max_epochs * (double)S->tokens);
        S->target = (uint64_t)(t < c ? t : c);
        if (!S->tokens)
            continue;
        uint64_t full = S->target / S->tokens, rest = S->target % S->tokens, got = 0;
        for (size_t k = 0; k < n; k++) {
            const struct sl_budget_doc *d = &docs[order[k].doc];
            if (d->source != s)
                continue;
            uint64_t copies = full + (got < rest);
            if (got < rest)
                got += d->tokens;
            push(&v, &nv, &cap, d, copies, seed);
            S->out_docs += copies;
            S->out_tokens += copies * d->tokens;
        }
    }
    free(order);
    if (nv)
        qsort(v, nv, sizeof(*v), cmp_entry);
    *out = v;
    *nout = nv;
    return 0;
}
