/* struct punkt_map: a table of byte strings, each with a dense id (0, 1, 2, ... in the
 * order they were added) and a 64-bit value (0 when added). Punkt's parameters (sets of
 * word types, the orthographic contexts) and its trainer's counts are such tables.
 *
 * Keys are copied into the map. Lookups are read-only and may run from several threads
 * at once; adding needs the map to itself. The map holds at most PUNKT_MAP_MAX keys of
 * at most 4 GiB in all: punkt_map_add fails past either with SL_ERR_TOOBIG. */
#ifndef SL_TOKENIZE_PUNKT_MAP_H
#define SL_TOKENIZE_PUNKT_MAP_H

#include <stddef.h>
#include <stdint.h>

#define PUNKT_MAP_MAX     (1u << 30)
#define PUNKT_MAP_MISSING UINT32_MAX

struct punkt_map;

struct punkt_map *punkt_map_new(void);
void punkt_map_free(struct punkt_map *m);

/* The id of key k[0..n), added (value 0) if it is not there: an id, or SL_ERR_TOOBIG
 * (negative) when the map is full. */
int64_t punkt_map_add(struct punkt_map *m, const char *k, size_t n);

/* The id of k[0..n), or PUNKT_MAP_MISSING. */
uint32_t punkt_map_find(const struct punkt_map *m, const char *k, size_t n);

/* Number of keys; key `id` (NUL-terminated, its length in *n); its value. */
uint32_t punkt_map_count(const struct punkt_map *m);
const char *punkt_map_key(const struct punkt_map *m, uint32_t id, size_t *n);
int64_t *punkt_map_value(struct punkt_map *m, uint32_t id);
int64_t punkt_map_get(const struct punkt_map *m, const char *k, size_t n); /* 0 if missing */

/* The ids in byte order of their keys (memcmp, shorter first on a tie): an array of
 * punkt_map_count() ids the caller frees. */
uint32_t *punkt_map_sorted(const struct punkt_map *m);

#endif
