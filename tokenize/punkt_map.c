/* The string table of Punkt's parameters and trainer (see tokenize/punkt_map.h): open
 * addressing on a power-of-two table of ids, keys back to back in one arena. */
#include "tokenize/punkt_map.h"

#include "core/alloc.h"
#include "core/err.h"
#include "core/hash.h"

#include <stdlib.h>
#include <string.h>

/* the arena's size cap: key offsets are 32-bit */
#define ARENA_MAX ((uint64_t)UINT32_MAX)

struct punkt_map {
    uint32_t *slot; /* id + 1, 0 for empty */
    uint32_t mask;  /* slots - 1 */
    uint32_t n, cap;
    uint32_t *off, *len; /* per id: the key in the arena */
    uint64_t *hash;      /* per id: its hash, for growing and for quick compares */
    int64_t *val;
    char *arena;
    uint64_t used, arena_cap;
};

struct punkt_map *punkt_map_new(void)
{
    struct punkt_map *m = sl_xcalloc(1, sizeof(*m));
    m->mask = 63;
    m->slot = sl_xcalloc(64, sizeof(uint32_t));
    return m;
}

void punkt_map_free(struct punkt_map *m)
{
    if (!m)
        return;
    free(m->slot);
    free(m->off);
    free(m->len);
    free(m->hash);
    free(m->val);
    free(m->arena);
    free(m);
}

static uint64_t hash_of(const char *k, size_t n)
{
    return sl_hash64(k, n, 0x5eed);
}

static uint32_t lookup(const struct punkt_map *m, const char *k, size_t n, uint64_t h,
                       uint32_t *pos)
{
    for (uint32_t i = (uint32_t)h & m->mask;; i = (i + 1) & m->mask) {
        uint32_t s = m->slot[i];
        if (!s) {
            *pos = i;
            return PUNKT_MAP_MISSING;
        }
        uint32_t id = s - 1;
        if (m->hash[id] == h && m->len[id] == n && memcmp(m->arena + m->off[id], k, n) == 0)
            return id;
    }
}

uint32_t punkt_map_find(const struct punkt_map *m, const char *k, size_t n)
{
    uint32_t pos;
    if (!m || m->n == 0)
        return PUNKT_MAP_MISSING;
    return lookup(m, k, n, hash_of(k, n), &pos);
}

int64_t punkt_map_get(const struct punkt_map *m, const char *k, size_t n)
{
    uint32_t id = punkt_map_find(m, k, n);
    return id == PUNKT_MAP_MISSING ? 0 : m->val[id];
}

static void grow_slots(struct punkt_map *m)
{
    uint32_t size = (m->mask + 1) * 2;
    free(m->slot);
    m->slot = sl_xcalloc(size, sizeof(uint32_t));
    m->mask = size - 1;
    for (uint32_t id = 0; id < m->n; id++) {
        uint32_t i = (uint32_t)m->hash[id] & m->mask;
        while (m->slot[i])
            i = (i + 1) & m->mask;
        m->slot[i] = id + 1;
    }
}

int64_t punkt_map_add(struct punkt_map *m, const char *k, size_t n)
{
    uint64_t h = hash_of(k, n);
    uint32_t pos;
    uint32_t id = lookup(m, k, n, h, &pos);
    if (id != PUNKT_MAP_MISSING)
        return id;
    if (m->n >= PUNKT_MAP_MAX || m->used + n + 1 > ARENA_MAX)
        return sl_err_set(SL_ERR_TOOBIG, "too many word types (%u, %llu bytes) for one table", m->n,
                          (unsigned long long)m->used);
    if (m->n == m->cap) {
        m->cap = m->cap ? m->cap * 2 : 64;
        m->off = sl_xrealloc(m->off, m->cap * sizeof(uint32_t));
        m->len = sl_xrealloc(m->len, m->cap * sizeof(uint32_t));
        m->hash = sl_xrealloc(m->hash, m->cap * sizeof(uint64_t));
        m->val = sl_xrealloc(m->val, m->cap * sizeof(int64_t));
    }
    if (m->used + n + 1 > m->arena_cap) {
        uint64_t want = m->arena_cap ? m->arena_cap * 2 : 4096;
        while (want < m->used + n + 1)
            want *= 2;
        m->arena_cap = want < ARENA_MAX ? want : ARENA_MAX;
        m->arena = sl_xrealloc(m->arena, (size_t)m->arena_cap);
    }
    id = m->n++;
    memcpy(m->arena + m->used, k, n);
    m->arena[m->used + n] = 0;
    m->off[id] = (uint32_t)m->used;
    m->len[id] = (uint32_t)n;
    m->hash[id] = h;
    m->val[id] = 0;
    m->used += n + 1;
    /* load factor at most 1/2 */
    if ((uint64_t)m->n * 2 > (uint64_t)m->mask + 1)
        grow_slots(m);
    else
        m->slot[pos] = id + 1;
    return id;
}

uint32_t punkt_map_count(const struct punkt_map *m)
{
    return m ? m->n : 0;
}

const char *punkt_map_key(const struct punkt_map *m, uint32_t id, size_t *n)
{
    *n = m->len[id];
    return m->arena + m->off[id];
}

int64_t *punkt_map_value(struct punkt_map *m, uint32_t id)
{
    return &m->val[id];
}

static int by_key(const void *a, const void *b, void *ctx)
{
    const struct punkt_map *sort_map = ctx;
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    uint32_t lx = sort_map->len[x], ly = sort_map->len[y];
    int c = memcmp(sort_map->arena + sort_map->off[x], sort_map->arena + sort_map->off[y],
                   lx < ly ? lx : ly);
    return c ? c : (lx > ly) - (lx < ly);
}

uint32_t *punkt_map_sorted(const struct punkt_map *m)
{
    uint32_t *ids = sl_xmalloc(((size_t)m->n + 1) * sizeof(uint32_t));
    for (uint32_t i = 0; i < m->n; i++)
        ids[i] = i;
    qsort_r(ids, m->n, sizeof(uint32_t), by_key, (void *)m);
    return ids;
}
