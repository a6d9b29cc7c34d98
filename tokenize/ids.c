/* Growable token-id arrays. */
#include "tokenize/ids.h"

#include "core/alloc.h"
#include "core/err.h"

#include <stdlib.h>

int tok_ids_reserve(struct tok_ids *t, size_t extra)
{
    if (t->cap - t->n >= extra)
        return 0;
    size_t want = t->n + extra;
    if (t->max && want > t->max)
        return sl_err_set(SL_ERR_TOOBIG, "more than %zu tokens", t->max);
    size_t cap = t->cap ? t->cap : 256;
    while (cap < want)
        cap *= 2;
    if (t->max && cap > t->max)
        cap = t->max;
    t->v = sl_xrealloc(t->v, sl_mul_size(cap, sizeof(*t->v)));
    t->cap = cap;
    return 0;
}

void tok_ids_release(struct tok_ids *t)
{
    free(t->v);
    t->v = NULL;
    t->n = t->cap = 0;
}
