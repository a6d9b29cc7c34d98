/* All-to-all exchange of fixed-size records: each record goes to the rank its caller
 * chose. Under one rank (or without MPI) the records are just copied. */
#ifndef SL_DEDUP_SHUFFLE_H
#define SL_DEDUP_SHUFFLE_H

#include <stddef.h>

struct sl_world;
struct sl_buf;

/* Send rec[i] (size bytes each, n of them) to rank dest[i]. `out` (caller's, released by
 * the caller) receives everything sent to this rank, in source-rank order and, within a
 * source, in the sender's order; *nout its record count. Collective. 0 or an error. */
int dd_shuffle(const struct sl_world *w, const void *rec, size_t n, size_t size, const int *dest,
               struct sl_buf *out, size_t *nout);

#endif
