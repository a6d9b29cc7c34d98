/* struct sl_counters: named 64-bit counters (documents in/out, per-reason removals, bytes).
 * Names keep their first-use order; sl_counters_merge adds another set into this one.
 * Used by every stage for its manifest and reduced across MPI ranks by core/world.h. */
#ifndef SL_COUNTERS_H
#define SL_COUNTERS_H

#include <stddef.h>
#include <stdint.h>

struct sl_buf;

struct sl_counters {
    char **names;
    uint64_t *values;
    size_t n, cap;
};

void sl_counters_init(struct sl_counters *c);
void sl_counters_release(struct sl_counters *c);

/* Index of `name`, created at 0 if new. Stable until release; use it in hot loops. */
size_t sl_counters_slot(struct sl_counters *c, const char *name);
void sl_counters_add(struct sl_counters *c, const char *name, uint64_t v);
/* Set a value (for gauges such as a maximum). */
void sl_counters_set(struct sl_counters *c, const char *name, uint64_t v);
/* Keep the maximum of the current value and v. */
void sl_counters_max(struct sl_counters *c, const char *name, uint64_t v);
/* Value of `name`, 0 if absent. */
uint64_t sl_counters_get(const struct sl_counters *c, const char *name);

/* Add every counter of src into dst. Names ending in "_max" are merged with max. */
void sl_counters_merge(struct sl_counters *dst, const struct sl_counters *src);

/* Text form "name\tvalue\n"... and back (for sending between ranks). */
int sl_counters_serialize(const struct sl_counters *c, struct sl_buf *out);
int sl_counters_parse(struct sl_counters *c, const char *text, size_t len);

#endif
