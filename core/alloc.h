/* Allocation that cannot fail silently.
 *
 * sl_xmalloc and friends never return NULL: on exhaustion they call the out-of-memory
 * handler (the CLI installs one that reports and aborts; under MPI it aborts the job).
 * This is the one place library code may stop the process; every other failure is
 * returned as enum sl_err. Growable buffers that hold untrusted data have their own caps
 * (see core/buf.h) and report SL_ERR_TOOBIG instead of exhausting memory.
 */
#ifndef SL_ALLOC_H
#define SL_ALLOC_H

#include <stddef.h>

void *sl_xmalloc(size_t n);
void *sl_xcalloc(size_t count, size_t size);
void *sl_xrealloc(void *p, size_t n);
char *sl_xstrdup(const char *s);
char *sl_xstrndup(const char *s, size_t n);
/* printf into a fresh heap string; caller frees. */
char *sl_xasprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Zeroed memory for a large table that is read at random (a cache, a hash table): aligned
 * to 2 MiB and, from 2 MiB on, with the advice to back it with huge pages, so that random
 * lookups do not miss the TLB on every access. Freed with free(). */
void *sl_xcalloc_table(size_t count, size_t size);
/* The same, not zeroed: for a large buffer written before it is read. */
void *sl_xmalloc_table(size_t n);

/* Multiply with overflow check; the handler is called on overflow as on exhaustion. */
size_t sl_mul_size(size_t a, size_t b);

/* The handler gets the size that could not be allocated; it must not return. */
typedef void (*sl_oom_handler)(size_t size);
void sl_set_oom_handler(sl_oom_handler h);

/* What the process is doing, for the out-of-memory message ("reading 'x.jsonl'"): a
 * string the caller keeps alive until it sets another (or NULL). Process-wide; the stage
 * runner sets it for each input file. */
void sl_oom_context(const char *what);
const char *sl_oom_context_get(void);

#endif
