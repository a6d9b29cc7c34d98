/* struct tok_ids: a growable array of token ids, the output of every encoder. A zeroed
 * struct is empty; the owner frees v. Growth past `max` entries (when non-zero) fails with
 * SL_ERR_TOOBIG so that untrusted input cannot exhaust memory. */
#ifndef SL_TOKENIZE_IDS_H
#define SL_TOKENIZE_IDS_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

struct tok_ids {
    uint32_t *v;
    size_t n, cap;
    size_t max; /* 0: unlimited */
};

/* Room for `extra` more ids: 0 or SL_ERR_TOOBIG. */
int tok_ids_reserve(struct tok_ids *t, size_t extra);
static inline int tok_ids_push(struct tok_ids *t, uint32_t id)
{
    if (t->n == t->cap) {
        int rc = tok_ids_reserve(t, 1);
        if (rc)
            return rc;
    }
    t->v[t->n++] = id;
    return 0;
}
void tok_ids_release(struct tok_ids *t);

#ifdef __cplusplus
}
#endif

#endif
