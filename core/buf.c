/* Growable, capped byte buffers. */
#include "core/buf.h"

#include "core/alloc.h"
#include "core/err.h"
#include "core/utf8.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void sl_buf_init(struct sl_buf *b, size_t max)
{
    b->data = NULL;
    b->len = 0;
    b->cap = 0;
    b->max = max;
}

void sl_buf_release(struct sl_buf *b)
{
    free(b->data);
    b->data = NULL;
    b->len = 0;
    b->cap = 0;
}

int sl_buf_reserve(struct sl_buf *b, size_t extra)
{
    size_t need;
    if (__builtin_add_overflow(b->len, extra, &need))
        return sl_err_set(SL_ERR_TOOBIG, "buffer size overflow");
    if (b->max && need > b->max)
        return sl_err_set(SL_ERR_TOOBIG, "buffer over its cap of %zu bytes", b->max);
    if (need <= b->cap && b->data)
        return 0;
    size_t cap = b->cap ? b->cap : 64;
    while (cap < need)
        cap = cap > SIZE_MAX / 2 ? need : cap * 2;
    if (b->max && cap > b->max)
        cap = b->max;
    b->data = sl_xrealloc(b->data, cap + 1);
    b->cap = cap;
    b->data[b->len] = '\0';
    return 0;
}

int sl_buf_append(struct sl_buf *b, const void *data, size_t n)
{
    int rc = sl_buf_reserve(b, n);
    if (rc)
        return rc;
    if (n)
        memcpy(b->data + b->len, data, n);
    b->len += n;
    b->data[b->len] = '\0';
    return 0;
}

int sl_buf_putc(struct sl_buf *b, char c)
{
    if (b->len < b->cap && b->data) {
        b->data[b->len++] = c;
        b->data[b->len] = '\0';
        return 0;
    }
    return sl_buf_append(b, &c, 1);
}

int sl_buf_puts(struct sl_buf *b, const char *s)
{
    return sl_buf_append(b, s, strlen(s));
}

int sl_buf_vprintf(struct sl_buf *b, const char *fmt, va_list ap)
{
    va_list ap2;
    va_copy(ap2, ap);
    int n = vsnprintf(NULL, 0, fmt, ap2);
    va_end(ap2);
    if (n < 0)
        return sl_err_set(SL_ERR_STATE, "bad format string");
    int rc = sl_buf_reserve(b, (size_t)n);
    if (rc)
        return rc;
    vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
    b->len += (size_t)n;
    return 0;
}

int sl_buf_printf(struct sl_buf *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int rc = sl_buf_vprintf(b, fmt, ap);
    va_end(ap);
    return rc;
}

int sl_buf_json_str(struct sl_buf *b, const char *s, size_t n)
{
    static const char hex[] = "0123456789abcdef";
    /* Worst case every byte becomes \u00XX (6 bytes) or U+FFFD (3 bytes). */
    int rc = sl_buf_reserve(b, n + 2);
    if (rc)
        return rc;
    rc = sl_buf_putc(b, '"');
    size_t i = 0;
    while (i < n && !rc) {
        size_t run = i;
        while (run < n) {
            unsigned char c = (unsigned char)s[run];
            if (c < 0x20 || c == '"' || c == '\\' || c >= 0x80)
                break;
            run++;
        }
        if (run > i) {
            rc = sl_buf_append(b, s + i, run - i);
            i = run;
            continue;
        }
        unsigned char c = (unsigned char)s[i];
        if (c >= 0x80) {
            size_t len = sl_utf8_valid_prefix_char((const unsigned char *)s + i, n - i);
            if (len) {
                rc = sl_buf_append(b, s + i, len);
                i += len;
            } else {
                rc = sl_buf_append(b, "\xEF\xBF\xBD", 3);
                i += 1;
            }
            continue;
        }
        char esc[7] = {'\\', 0, 0, 0, 0, 0, 0};
        size_t elen = 2;
        switch (c) {
        case '"': esc[1] = '"'; break;
        case '\\': esc[1] = '\\'; break;
        case '\n': esc[1] = 'n'; break;
        case '\r': esc[1] = 'r'; break;
        case '\t': esc[1] = 't'; break;
        case '\b': esc[1] = 'b'; break;
        case '\f': esc[1] = 'f'; break;
        default:
            esc[1] = 'u';
            esc[2] = '0';
            esc[3] = '0';
            esc[4] = hex[c >> 4];
            esc[5] = hex[c & 15];
            elen = 6;
        }
        rc = sl_buf_append(b, esc, elen);
        i++;
    }
    if (!rc)
        rc = sl_buf_putc(b, '"');
    return rc;
}

int sl_buf_base64(struct sl_buf *b, const void *p, size_t n)
{
    static const char abc[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    const unsigned char *s = p;
    int rc = sl_buf_reserve(b, (n + 2) / 3 * 4);
    for (size_t i = 0; i < n && !rc; i += 3) {
        uint32_t x = (uint32_t)s[i] << 16;
        if (i + 1 < n)
            x |= (uint32_t)s[i + 1] << 8;
        if (i + 2 < n)
            x |= s[i + 2];
        char q[4] = { abc[x >> 18], abc[(x >> 12) & 63], i + 1 < n ? abc[(x >> 6) & 63] : '=',
                      i + 2 < n ? abc[x & 63] : '=' };
        rc = sl_buf_append(b, q, 4);
    }
    return rc;
}

void sl_buf_reset(struct sl_buf *b)
{
    b->len = 0;
    if (b->data)
        b->data[0] = '\0';
}

void sl_buf_truncate(struct sl_buf *b, size_t n)
{
    if (n < b->len) {
        b->len = n;
        b->data[n] = '\0';
    }
}

char *sl_buf_detach(struct sl_buf *b, size_t *len)
{
    char *d = b->data;
    if (!d) {
        d = sl_xmalloc(1);
        d[0] = '\0';
    }
    if (len)
        *len = b->len;
    b->data = NULL;
    b->len = 0;
    b->cap = 0;
    return d;
}

void sl_buf_consume(struct sl_buf *b, size_t n)
{
    if (n >= b->len) {
        sl_buf_reset(b);
        return;
    }
    memmove(b->data, b->data + n, b->len - n);
    b->len -= n;
    b->data[b->len] = '\0';
}

int sl_buf_xml_text(struct sl_buf *b, const char *s)
{
    int rc = 0;
    for (; *s && !rc; s++) {
        switch (*s) {
        case '<':
            rc = sl_buf_puts(b, "&lt;");
            break;
        case '>':
            rc = sl_buf_puts(b, "&gt;");
            break;
        case '&':
            rc = sl_buf_puts(b, "&amp;");
            break;
        case '"':
            rc = sl_buf_puts(b, "&quot;");
            break;
        default:
            rc = sl_buf_putc(b, *s);
        }
    }
    return rc;
}
