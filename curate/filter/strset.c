/* struct sl_strset: open-addressing string set with values (see strset.h). */
#include "curate/filter/strset.h"

#include "core/alloc.h"
#include "core/buf.h"
#include "core/hash.h"

#include <string.h>
#include <utf8proc.h>

void sl_strset_init(struct sl_strset *s)
{
    memset(s, 0, sizeof(*s));
}

void sl_strset_release(struct sl_strset *s)
{
    free(s->slots);
    free(s->arena);
    memset(s, 0, sizeof(*s));
}

static void grow(struct sl_strset *s)
{
    size_t ncap = s->cap ? s->cap * 2 : 64;
    struct sl_strset_slot *ns = sl_xmalloc(sl_mul_size(ncap, sizeof(*ns)));
    for (size_t i = 0; i < ncap; i++)
        ns[i].len = UINT32_MAX;
    for (size_t i = 0; i < s->cap; i++) {
        if (s->slots[i].len == UINT32_MAX)
            continue;
        size_t j = s->slots[i].hash & (ncap - 1);
        while (ns[j].len != UINT32_MAX)
            j = (j + 1) & (ncap - 1);
        ns[j] = s->slots[i];
    }
    free(s->slots);
    s->slots = ns;
    s->cap = ncap;
}

const struct sl_strset_slot *sl_strset_find(const struct sl_strset *s, const char *str, size_t n)
{
    if (!s->cap)
        return NULL;
    uint64_t h = sl_hash64(str, n, 0);
    for (size_t j = h & (s->cap - 1);; j = (j + 1) & (s->cap - 1)) {
        const struct sl_strset_slot *e = &s->slots[j];
        if (e->len == UINT32_MAX)
            return NULL;
        if (e->hash == h && e->len == n && memcmp(s->arena + e->off, str, n) == 0)
            return e;
    }
}

int sl_strset_add(struct sl_strset *s, const char *str, size_t n, int64_t value)
{
    if ((s->n + 1) * 2 > s->cap)
        grow(s);
    uint64_t h = sl_hash64(str, n, 0);
    size_t j = h & (s->cap - 1);
    for (;; j = (j + 1) & (s->cap - 1)) {
        struct sl_strset_slot *e = &s->slots[j];
        if (e->len == UINT32_MAX)
            break;
        if (e->hash == h && e->len == n && memcmp(s->arena + e->off, str, n) == 0) {
            e->value = value;
            return 0;
        }
    }
    if (s->arena_len + n + 1 > s->arena_cap) {
        s->arena_cap = (s->arena_len + n + 1) * 2;
        s->arena = sl_xrealloc(s->arena, s->arena_cap);
    }
    memcpy(s->arena + s->arena_len, str, n);
    s->arena[s->arena_len + n] = 0;
    s->slots[j].hash = h;
    s->slots[j].off = (uint32_t)s->arena_len;
    s->slots[j].len = (uint32_t)n;
    s->slots[j].value = value;
    s->arena_len += n + 1;
    s->n++;
    return 1;
}

void sl_strset_next_line(const char **p, const char *end, const char **a, const char **b)
{
    const char *nl = memchr(*p, '\n', (size_t)(end - *p));
    const char *s = *p, *e = nl ? nl : end;
    while (s < e && (*s == ' ' || *s == '\t' || *s == '\r'))
        s++;
    while (e > s && (e[-1] == ' ' || e[-1] == '\t' || e[-1] == '\r'))
        e--;
    *a = s;
    *b = e;
    *p = nl ? nl + 1 : end;
}

size_t sl_strset_add_lines(struct sl_strset *s, const char *text, size_t n, int lower,
                           int skip_comments)
{
    size_t added = 0;
    struct sl_buf low = SL_BUF_INIT;
    const char *p = text, *end = text + n;
    while (p < end) {
        const char *a, *b;
        sl_strset_next_line(&p, end, &a, &b);
        if (a == b || (skip_comments && *a == '#'))
            continue;
        if (lower) {
            /* lower-case code point by code point (Python str.lower for these lists) */
            sl_buf_reset(&low);
            const utf8proc_uint8_t *q = (const utf8proc_uint8_t *)a;
            utf8proc_ssize_t left = b - a;
            while (left > 0) {
                utf8proc_int32_t cp;
                utf8proc_ssize_t l = utf8proc_iterate(q, left, &cp);
                if (l <= 0) {
                    l = 1;
                    cp = 0xFFFD;
                }
                utf8proc_uint8_t enc[4];
                utf8proc_ssize_t el = utf8proc_encode_char(utf8proc_tolower(cp), enc);
                sl_buf_append(&low, enc, (size_t)el);
                q += l;
                left -= l;
            }
            added += (size_t)sl_strset_add(s, low.data ? low.data : "", low.len, 1);
            continue;
        }
        added += (size_t)sl_strset_add(s, a, (size_t)(b - a), 1);
    }
    sl_buf_release(&low);
    return added;
}
