/* LSH buckets from sorted band records, and pair lists. */
#include "curate/dedup/lsh.h"

#include "core/alloc.h"

#include <stdlib.h>
#include <string.h>

static int cmp_rec(const void *pa, const void *pb)
{
    const struct lsh_rec *a = pa, *b = pb;
    if (a->band != b->band)
        return a->band < b->band ? -1 : 1;
    if (a->key != b->key)
        return a->key < b->key ? -1 : 1;
    if (a->gid != b->gid)
        return a->gid < b->gid ? -1 : 1;
    return 0;
}

/* Byte b of the sort key (gid bytes 0-7, then key bytes 8-15, then band bytes 16-19): LSD
 * order, least significant first. */
static inline unsigned key_byte(const struct lsh_rec *x, int b)
{
    if (b < 8)
        return (unsigned)(x->gid >> (8 * b)) & 0xff;
    if (b < 16)
        return (unsigned)(x->key >> (8 * (b - 8))) & 0xff;
    return (x->band >> (8 * (b - 16))) & 0xff;
}

void lsh_sort(struct lsh_rec *r, size_t n)
{
    if (n < 256) {
        if (n > 1)
            qsort(r, n, sizeof(*r), cmp_rec);
        return;
    }
    /* LSD radix sort over the 20 key bytes; a byte that is the same in every record costs
     * nothing (its pass is skipped) */
    size_t(*count)[256] = sl_xcalloc(20, sizeof(*count));
    for (size_t i = 0; i < n; i++)
        for (int b = 0; b < 20; b++)
            count[b][key_byte(&r[i], b)]++;
    struct lsh_rec *tmp = sl_xmalloc(sl_mul_size(n, sizeof(*r)));
    struct lsh_rec *src = r, *dst = tmp;
    for (int b = 0; b < 20; b++) {
        if (count[b][key_byte(&r[0], b)] == n)
            continue;
        size_t pos = 0;
        for (int k = 0; k < 256; k++) {
            size_t c = count[b][k];
            count[b][k] = pos;
            pos += c;
        }
        for (size_t i = 0; i < n; i++)
            dst[count[b][key_byte(&src[i], b)]++] = src[i];
        struct lsh_rec *t = src;
        src = dst;
        dst = t;
    }
    if (src != r)
        memcpy(r, src, n * sizeof(*r));
    free(tmp);
    free(count);
}

int lsh_owner(uint32_t band, uint64_t key, int nranks)
{
    uint64_t x = key ^ ((uint64_t)band * 0x9E3779B97F4A7C15ull);
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdull;
    x ^= x >> 33;
    return (int)(((unsigned __int128)x * (unsigned)nranks) >> 64);
}

static void push_edge(struct dd_edge **e, size_t *ne, size_t *cap, uint64_t u, uint64_t v)
{
    if (*ne == *cap) {
        *cap = *cap ? *cap * 2 : 1024;
        *e = sl_xrealloc(*e, sl_mul_size(*cap, sizeof(**e)));
    }
    (*e)[*ne].u = u;
    (*e)[*ne].v = v;
    (*ne)++;
}

size_t lsh_pairs(const struct lsh_rec *r, size_t n, unsigned anchors, uint64_t min_new,
                 struct dd_edge **e, size_t *ne, size_t *cap)
{
    size_t added = 0;
    size_t i = 0;
    if (anchors < 1)
        anchors = 1;
    while (i < n) {
        size_t j = i + 1;
        while (j < n && r[j].band == r[i].band && r[j].key == r[i].key)
            j++;
        if (j - i > 1) {
            /* members r[i..j) in gid order, repeats skipped */
            size_t pos = 0;
            for (size_t t = i; t < j; t++) {
                if (t > i && r[t].gid == r[t - 1].gid)
                    continue;
                if (r[t].gid >= min_new) {
                    size_t seen = 0;
                    for (size_t q = i; q < t && seen < anchors && seen < pos; q++) {
                        if (q > i && r[q].gid == r[q - 1].gid)
                            continue;
                        push_edge(e, ne, cap, r[q].gid, r[t].gid);
                        seen++;
                        added++;
                    }
                }
                pos++;
            }
        }
        i = j;
    }
    return added;
}

static int cmp_edge(const void *pa, const void *pb)
{
    const struct dd_edge *a = pa, *b = pb;
    if (a->u != b->u)
        return a->u < b->u ? -1 : 1;
    if (a->v != b->v)
        return a->v < b->v ? -1 : 1;
    return 0;
}

size_t dd_edges_sort_unique(struct dd_edge *e, size_t n)
{
    if (n < 2)
        return n;
    qsort(e, n, sizeof(*e), cmp_edge);
    size_t k = 1;
    for (size_t i = 1; i < n; i++)
        if (e[i].u != e[k - 1].u || e[i].v != e[k - 1].v)
            e[k++] = e[i];
    return k;
}
