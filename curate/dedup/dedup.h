/* What the dedup engines (curate/dedup/exact.h, fuzzy.h) share: a member of a document by
 * its dotted path, and a search in sorted ids. */
#ifndef SL_DEDUP_DEDUP_H
#define SL_DEDUP_DEDUP_H

#include <stddef.h>
#include <stdint.h>

struct sl_buf;
struct sl_doc;

/* The value of member `key` of d into out (appended): strings decoded, other values as raw
 * JSON; "a.b.c" walks into nested objects. 0 or SL_ERR_NOTFOUND. */
int dd_get_key(struct sl_doc *d, const char *key, struct sl_buf *out);

/* The first position of sorted v[0..n) whose value is >= x (n when none). */
size_t dd_lower_bound_u64(const uint64_t *v, size_t n, uint64_t x);

#endif
