/* Word and character shingling with XXH3, and the small u64 array helpers dedup uses
 * (radix sort, set Jaccard). */
#include "curate/dedup/shingle.h"

#include "core/alloc.h"
#include "core/err.h"
#include "core/hash.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* XXH3 inlined here (the same function as sl_hash64, without a library call per shingle) */
#define XXH_INLINE_ALL
#include <xxhash.h>

static inline uint64_t shingle_hash(const unsigned char *p, size_t n, uint64_t seed)
{
    return XXH3_64bits_withSeed(p, n, seed);
}

void dd_u64s_reserve(struct dd_u64s *a, size_t extra)
{
    if (a->n + extra <= a->cap)
        return;
    size_t c = a->cap ? a->cap : 64;
    while (c < a->n + extra)
        c *= 2;
    a->v = sl_xrealloc(a->v, sl_mul_size(c, sizeof(uint64_t)));
    a->cap = c;
}

void dd_u64s_push(struct dd_u64s *a, uint64_t x)
{
    if (a->n == a->cap)
        dd_u64s_reserve(a, 1);
    a->v[a->n++] = x;
}

void dd_u64s_release(struct dd_u64s *a)
{
    free(a->v);
    memset(a, 0, sizeof(*a));
}

static void insertion_sort(uint64_t *v, size_t n)
{
    for (size_t i = 1; i < n; i++) {
        uint64_t x = v[i];
        size_t j = i;
        while (j > 0 && v[j - 1] > x) {
            v[j] = v[j - 1];
            j--;
        }
        v[j] = x;
    }
}

void dd_sort_u64(uint64_t *v, size_t n)
{
    if (n < 64) {
        insertion_sort(v, n);
        return;
    }
    /* LSD radix sort, 8 passes of 8 bits; passes where every value has the same byte are
     * skipped */
    uint64_t *tmp = sl_xmalloc(sl_mul_size(n, sizeof(uint64_t)));
    size_t count[8][256];
    memset(count, 0, sizeof(count));
    for (size_t i = 0; i < n; i++)
        for (int b = 0; b < 8; b++)
            count[b][(v[i] >> (8 * b)) & 0xff]++;
    uint64_t *src = v, *dst = tmp;
    for (int b = 0; b < 8; b++) {
        if (count[b][(v[0] >> (8 * b)) & 0xff] == n)
            continue;
        size_t pos = 0;
        for (int k = 0; k < 256; k++) {
            size_t c = count[b][k];
            count[b][k] = pos;
            pos += c;
        }
        for (size_t i = 0; i < n; i++)
            dst[count[b][(src[i] >> (8 * b)) & 0xff]++] = src[i];
        uint64_t *t = src;
        src = dst;
        dst = t;
    }
    if (src != v)
        memcpy(v, src, n * sizeof(uint64_t));
    free(tmp);
}

void dd_u64s_sort_unique(struct dd_u64s *a)
{
    if (a->n < 2)
        return;
    dd_sort_u64(a->v, a->n);
    size_t k = 1;
    for (size_t i = 1; i < a->n; i++)
        if (a->v[i] != a->v[k - 1])
            a->v[k++] = a->v[i];
    a->n = k;
}

double dd_jaccard(const uint64_t *a, size_t na, const uint64_t *b, size_t nb)
{
    if (!na && !nb)
        return 1.0;
    size_t i = 0, j = 0, inter = 0;
    while (i < na && j < nb) {
        if (a[i] < b[j])
            i++;
        else if (a[i] > b[j])
            j++;
        else {
            inter++;
            i++;
            j++;
        }
    }
    return (double)inter / (double)(na + nb - inter);
}

int dd_shingler_parse(struct dd_shingler *s, const char *spec, uint64_t seed)
{
    memset(s, 0, sizeof(*s));
    s->seed = seed;
    const char *colon = strchr(spec, ':');
    char *end = NULL;
    long n = colon ? strtol(colon + 1, &end, 10) : 0;
    if (colon && !strncmp(spec, "words", (size_t)(colon - spec)) && colon - spec == 5)
        s->words = 1;
    else if (!(colon && !strncmp(spec, "chars", (size_t)(colon - spec)) && colon - spec == 5))
        return sl_err_set(SL_ERR_USAGE, "bad --ngram '%s'\nhint: use words:N or chars:N", spec);
    long max = s->words ? DD_SHINGLE_MAX_WORDS : DD_SHINGLE_MAX_CHARS;
    if (!end || *end || end == colon + 1 || n < 1 || n > max)
        return sl_err_set(SL_ERR_USAGE, "bad --ngram '%s': N must be 1..%ld", spec, max);
    s->n = (unsigned)n;
    return 0;
}

const char *dd_shingler_name(const struct dd_shingler *s, char *out, size_t n)
{
    snprintf(out, n, "%s:%u", s->words ? "words" : "chars", s->n);
    return out;
}

static int is_ws(unsigned char c)
{
    return c == ' ' || (c >= 9 && c <= 13);
}

static size_t shingle_words(const struct dd_shingler *s, const unsigned char *t, size_t len,
                            struct dd_u64s *out, int *whole)
{
    size_t starts[DD_SHINGLE_MAX_WORDS]; /* ring of the last n word starts */
    size_t nwords = 0, first = 0, last_end = 0, added = 0;
    unsigned n = s->n, pos = 0; /* pos: ring slot of the next word (== oldest when full) */
    size_t i = 0;
    dd_u64s_reserve(out, len / 2 + 1);
    uint64_t *o = out->v + out->n;
    while (i < len) {
        while (i < len && is_ws(t[i]))
            i++;
        if (i >= len)
            break;
        size_t st = i;
        while (i < len && !is_ws(t[i]))
            i++;
        if (!nwords)
            first = st;
        starts[pos] = st;
        pos = pos + 1 == n ? 0 : pos + 1;
        nwords++;
        last_end = i;
        if (nwords >= n) {
            size_t from = starts[pos]; /* the oldest of the last n */
            *o++ = shingle_hash(t + from, i - from, s->seed);
            added++;
        }
    }
    out->n += added;
    if (nwords && nwords < n) {
        dd_u64s_push(out, sl_hash64(t + first, last_end - first, s->seed));
        *whole = 1;
        return 1;
    }
    return added;
}

static size_t shingle_chars(const struct dd_shingler *s, const unsigned char *t, size_t len,
                            struct dd_u64s *out, int *whole)
{
    size_t starts[DD_SHINGLE_MAX_CHARS]; /* ring of the last n code point starts */
    unsigned n = s->n, pos = 0;
    size_t ncp = 0, added = 0, i = 0;
    dd_u64s_reserve(out, len + 1);
    uint64_t *o = out->v + out->n;
    while (i < len) {
        starts[pos] = i;
        pos = pos + 1 == n ? 0 : pos + 1;
        ncp++;
        /* step over one code point (continuation bytes 10xxxxxx belong to it) */
        i++;
        while (i < len && (t[i] & 0xC0) == 0x80)
            i++;
        if (ncp >= n) {
            size_t from = starts[pos];
            *o++ = shingle_hash(t + from, i - from, s->seed);
            added++;
        }
    }
    out->n += added;
    if (ncp && ncp < n) {
        out->v[out->n++] = sl_hash64(t, len, s->seed);
        *whole = 1;
        return 1;
    }
    return added;
}

size_t dd_shingle(const struct dd_shingler *s, const char *text, size_t len, struct dd_u64s *out,
                  int *whole)
{
    int w = 0;
    size_t r = s->words ? shingle_words(s, (const unsigned char *)text, len, out, &w)
                        : shingle_chars(s, (const unsigned char *)text, len, out, &w);
    if (whole)
        *whole = w;
    return r;
}
