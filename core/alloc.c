/* Checked allocation wrappers and the out-of-memory handler. */
#include "core/alloc.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

static void default_oom(size_t size)
{
    (void)size;
    abort();
}

static sl_oom_handler oom_handler = default_oom;

void sl_set_oom_handler(sl_oom_handler h)
{
    oom_handler = h ? h : default_oom;
}

static const char *_Atomic oom_what;

void sl_oom_context(const char *what)
{
    oom_what = what;
}

const char *sl_oom_context_get(void)
{
    return oom_what;
}

static void *check(void *p, size_t n)
{
    if (!p) {
        oom_handler(n);
        abort(); /* the handler must not return */
    }
    return p;
}

void *sl_xmalloc(size_t n)
{
    return check(malloc(n ? n : 1), n);
}

void *sl_xcalloc(size_t count, size_t size)
{
    return check(calloc(count ? count : 1, size ? size : 1), sl_mul_size(count, size));
}

void *sl_xmalloc_table(size_t n)
{
    size_t align = (size_t)2 << 20;
    void *p = NULL;
    n = n ? n : 1;
    if (posix_memalign(&p, n >= align ? align : 64, n) != 0)
        p = NULL;
    check(p, n);
#ifdef MADV_HUGEPAGE
    if (n >= align)
        madvise(p, n, MADV_HUGEPAGE); /* advice only: a kernel without it ignores it */
#endif
    return p;
}

void *sl_xcalloc_table(size_t count, size_t size)
{
    size_t n = sl_mul_size(count ? count : 1, size ? size : 1);
    void *p = sl_xmalloc_table(n);
    memset(p, 0, n);
    return p;
}

void *sl_xrealloc(void *p, size_t n)
{
    return check(realloc(p, n ? n : 1), n);
}

char *sl_xstrdup(const char *s)
{
    return sl_xstrndup(s, strlen(s));
}

char *sl_xstrndup(const char *s, size_t n)
{
    char *d = sl_xmalloc(n + 1);
    memcpy(d, s, n);
    d[n] = '\0';
    return d;
}

char *sl_xasprintf(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0)
        n = 0;
    char *s = sl_xmalloc((size_t)n + 1);
    va_start(ap, fmt);
    vsnprintf(s, (size_t)n + 1, fmt, ap);
    va_end(ap);
    return s;
}

size_t sl_mul_size(size_t a, size_t b)
{
    size_t r;
    if (__builtin_mul_overflow(a, b, &r)) {
        oom_handler(SIZE_MAX);
        abort();
    }
    return r;
}
