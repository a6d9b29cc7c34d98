/* Record exchange over sl_world_alltoallv (counting sort by destination, then one
 * personalised exchange). */
#include "curate/dedup/shuffle.h"

#include "core/alloc.h"
#include "core/buf.h"
#include "core/err.h"
#include "core/world.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int dd_shuffle(const struct sl_world *w, const void *rec, size_t n, size_t size, const int *dest,
               struct sl_buf *out, size_t *nout)
{
    int P = w->size;
    sl_buf_reset(out);
    if (P == 1) {
        int rc = sl_buf_append(out, rec, n * size);
        *nout = rc ? 0 : n;
        return rc;
    }
    uint64_t *cnt = sl_xcalloc((size_t)P, sizeof(uint64_t));
    uint64_t *off = sl_xcalloc((size_t)P, sizeof(uint64_t));
    uint64_t *pos = sl_xcalloc((size_t)P, sizeof(uint64_t));
    uint64_t *rcnt = sl_xcalloc((size_t)P, sizeof(uint64_t));
    for (size_t i = 0; i < n; i++)
        cnt[dest[i]] += size;
    for (int r = 1; r < P; r++)
        off[r] = off[r - 1] + cnt[r - 1];
    memcpy(pos, off, (size_t)P * sizeof(uint64_t));
    char *send = sl_xmalloc(n * size + 1);
    const char *src = rec;
    for (size_t i = 0; i < n; i++) {
        memcpy(send + pos[dest[i]], src + i * size, size);
        pos[dest[i]] += size;
    }
    int rc = sl_world_alltoallv(w, send, cnt, off, out, rcnt);
    free(send);
    free(cnt);
    free(off);
    free(pos);
    free(rcnt);
    *nout = rc ? 0 : out->len / size;
    return rc;
}
