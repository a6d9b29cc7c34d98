/* Named counters with stable slots, merge and a text form for MPI reduction. */
#include "core/counters.h"

#include "core/alloc.h"
#include "core/buf.h"
#include "core/err.h"

#include <stdlib.h>
#include <string.h>

void sl_counters_init(struct sl_counters *c)
{
    memset(c, 0, sizeof(*c));
}

void sl_counters_release(struct sl_counters *c)
{
    for (size_t i = 0; i < c->n; i++)
        free(c->names[i]);
    free(c->names);
    free(c->values);
    memset(c, 0, sizeof(*c));
}

size_t sl_counters_slot(struct sl_counters *c, const char *name)
{
    for (size_t i = 0; i < c->n; i++)
        if (strcmp(c->names[i], name) == 0)
            return i;
    if (c->n == c->cap) {
        c->cap = c->cap ? c->cap * 2 : 16;
        c->names = sl_xrealloc(c->names, c->cap * sizeof(*c->names));
        c->values = sl_xrealloc(c->values, c->cap * sizeof(*c->values));
    }
    c->names[c->n] = sl_xstrdup(name);
    c->values[c->n] = 0;
    return c->n++;
}

void sl_counters_add(struct sl_counters *c, const char *name, uint64_t v)
{
    size_t i = sl_counters_slot(c, name); /* may grow c->values */
    c->values[i] += v;
}

void sl_counters_set(struct sl_counters *c, const char *name, uint64_t v)
{
    size_t i = sl_counters_slot(c, name);
    c->values[i] = v;
}

void sl_counters_max(struct sl_counters *c, const char *name, uint64_t v)
{
    size_t i = sl_counters_slot(c, name);
    if (v > c->values[i])
        c->values[i] = v;
}

uint64_t sl_counters_get(const struct sl_counters *c, const char *name)
{
    for (size_t i = 0; i < c->n; i++)
        if (strcmp(c->names[i], name) == 0)
            return c->values[i];
    return 0;
}

static int is_max_name(const char *name)
{
    size_t n = strlen(name);
    return n >= 4 && strcmp(name + n - 4, "_max") == 0;
}

void sl_counters_merge(struct sl_counters *dst, const struct sl_counters *src)
{
    for (size_t i = 0; i < src->n; i++) {
        if (is_max_name(src->names[i]))
            sl_counters_max(dst, src->names[i], src->values[i]);
        else
            sl_counters_add(dst, src->names[i], src->values[i]);
    }
}

int sl_counters_serialize(const struct sl_counters *c, struct sl_buf *out)
{
    for (size_t i = 0; i < c->n; i++) {
        int rc = sl_buf_printf(out, "%s\t%llu\n", c->names[i], (unsigned long long)c->values[i]);
        if (rc)
            return rc;
    }
    return 0;
}

int sl_counters_parse(struct sl_counters *c, const char *text, size_t len)
{
    const char *p = text, *end = text + len;
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        if (!nl)
            nl = end;
        const char *tab = memchr(p, '\t', (size_t)(nl - p));
        if (!tab)
            return sl_err_set(SL_ERR_FORMAT, "bad counter line");
        char *name = sl_xstrndup(p, (size_t)(tab - p));
        uint64_t v = strtoull(tab + 1, NULL, 10);
        if (is_max_name(name))
            sl_counters_max(c, name, v);
        else
            sl_counters_add(c, name, v);
        free(name);
        p = nl + 1;
    }
    return 0;
}
