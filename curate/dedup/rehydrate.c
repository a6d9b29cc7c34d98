/* Rehydration weights (curate/dedup/rehydrate.h). */
#include "curate/dedup/rehydrate.h"

#include "core/alloc.h"
#include "core/buf.h"
#include "core/err.h"
#include "core/stream.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static int parse_text(struct dd_rehydrate *t, const char *s, const char *what)
{
    memset(t, 0, sizeof(*t));
    const char *p = s;
    for (;;) {
        while (*p && (isspace((unsigned char)*p) || *p == ','))
            p++;
        if (*p == '#') {
            while (*p && *p != '\n')
                p++;
            continue;
        }
        if (!*p)
            break;
        const char *step = p;
        char *end;
        errno = 0;
        unsigned long long size = strtoull(p, &end, 10);
        unsigned long long w = 0;
        int ok = isdigit((unsigned char)*p) && *end == ':' && isdigit((unsigned char)end[1]) &&
                 errno == 0;
        if (ok) {
            p = end + 1;
            w = strtoull(p, &end, 10);
            ok =
                errno == 0 && (!*end || *end == ',' || *end == '#' || isspace((unsigned char)*end));
            p = end;
        }
        int len = 0;
        while (step[len] && step[len] != ',' && !isspace((unsigned char)step[len]) && len < 40)
            len++;
        if (!ok || size < 1 || w < 1 || w > DD_REHYDRATE_MAX_WEIGHT)
            return sl_err_set(SL_ERR_USAGE,
                              "bad rehydration step '%.*s' in %s\nhint: SIZE:WEIGHT with SIZE "
                              ">= 1 and WEIGHT 1..%d, e.g. %s",
                              len, step, what, DD_REHYDRATE_MAX_WEIGHT, DD_REHYDRATE_FINEWEB2);
        if (t->n && size <= t->size[t->n - 1])
            return sl_err_set(SL_ERR_USAGE,
                              "rehydration step '%.*s' in %s is not after the size before it"
                              "\nhint: list the sizes in ascending order",
                              len, step, what);
        if (t->n == DD_REHYDRATE_MAX)
            return sl_err_set(SL_ERR_USAGE, "more than %d rehydration steps in %s",
                              DD_REHYDRATE_MAX, what);
        t->size[t->n] = size;
        t->weight[t->n] = w;
        t->n++;
    }
    if (!t->n)
        return sl_err_set(SL_ERR_USAGE, "no rehydration steps in %s\nhint: e.g. %s", what,
                          DD_REHYDRATE_FINEWEB2);
    return 0;
}

int dd_rehydrate_parse(struct dd_rehydrate *t, const char *spec)
{
    /* a table has a ':' in its first step; anything else names a file */
    int is_file = spec[0] == '@' || !strchr(spec, ':');
    if (!is_file) {
        struct stat sb;
        is_file = stat(spec, &sb) == 0 && S_ISREG(sb.st_mode);
    }
    if (!is_file)
        return parse_text(t, spec, "--rehydrate-weights");
    const char *path = spec[0] == '@' ? spec + 1 : spec;
    struct sl_buf b = SL_BUF_INIT;
    int rc = sl_read_file(path, &b);
    if (!rc) {
        sl_buf_putc(&b, '\0');
        char *what = sl_xasprintf("'%s'", path);
        rc = parse_text(t, b.data, what);
        free(what);
    }
    sl_buf_release(&b);
    return rc;
}

void dd_rehydrate_name(const struct dd_rehydrate *t, char *out, size_t n)
{
    size_t k = 0;
    out[0] = '\0';
    for (size_t i = 0; i < t->n && k < n; i++) {
        int m = snprintf(out + k, n - k, "%s%llu:%llu", i ? "," : "",
                         (unsigned long long)t->size[i], (unsigned long long)t->weight[i]);
        if (m < 0)
            break;
        k += (size_t)m;
    }
}

uint64_t dd_rehydrate_weight(const struct dd_rehydrate *t, uint64_t size)
{
    uint64_t w = 1;
    for (size_t i = 0; i < t->n && t->size[i] <= size; i++)
        w = t->weight[i];
    return w;
}
