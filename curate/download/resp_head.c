/* Reading the lines of an HTTP response head into struct resp_head: bounded, never past a
 * line's length, with Content-Range checked against RFC 9110's grammar. */
#include "curate/download/resp_head.h"

#include "core/err.h"

#include <string.h>
#include <strings.h>

/* Digits in a number we accept: 18 keep every value below 2^63 (no overflow) and still
 * allow sizes up to an exabyte. */
#define MAX_DIGITS 18

/* Bits of resp_head.seen: the headers that must come once. */
#define SEEN_ETAG     1
#define SEEN_MODIFIED 2

void resp_head_init(struct resp_head *h)
{
    memset(h, 0, sizeof(*h));
    h->content_length = h->range_first = h->range_last = h->range_total = -1;
}

/* Skip blanks (SP, HTAB) forward from p up to end. */
static const char *skip_blanks(const char *p, const char *end)
{
    while (p < end && (*p == ' ' || *p == '\t'))
        p++;
    return p;
}

/* A decimal number of 1..MAX_DIGITS digits at *p (advanced past it), or -1. */
static int64_t read_number(const char **p, const char *end)
{
    const char *q = *p;
    int64_t v = 0;
    int n = 0;
    while (q < end && *q >= '0' && *q <= '9') {
        if (++n > MAX_DIGITS)
            return -1;
        v = v * 10 + (*q++ - '0');
    }
    if (!n)
        return -1;
    *p = q;
    return v;
}

int resp_content_range(const char *p, size_t n, int64_t *first, int64_t *last, int64_t *total)
{
    const char *end = p + n;
    *first = *last = *total = -1;
    p = skip_blanks(p, end);
    if (end - p < 6 || strncasecmp(p, "bytes", 5) != 0 || (p[5] != ' ' && p[5] != '\t'))
        return 0;
    p = skip_blanks(p + 5, end);
    int64_t a = -1, b = -1, t = -1;
    if (p < end && *p == '*') {
        p++; /* unsatisfied-range: * / TOTAL */
    } else {
        if ((a = read_number(&p, end)) < 0 || p >= end || *p++ != '-')
            return 0;
        if ((b = read_number(&p, end)) < 0 || b < a)
            return 0;
    }
    if (p >= end || *p++ != '/')
        return 0;
    if (p < end && *p == '*' && a >= 0) {
        p++; /* the total is unknown */
    } else if ((t = read_number(&p, end)) < 0 || (a >= 0 && b >= t)) {
        return 0;
    }
    if (skip_blanks(p, end) != end)
        return 0;
    *first = a;
    *last = b;
    *total = t;
    return 1;
}

/* The value of header line p[0..n) when its name is `name` (with the colon), trimmed, into
 * [*v, *v + *vn); 0 when the line is another header. */
static int header_is(const char *p, size_t n, const char *name, const char **v, size_t *vn)
{
    size_t k = strlen(name);
    if (n < k || strncasecmp(p, name, k) != 0)
        return 0;
    const char *s = skip_blanks(p + k, p + n), *e = p + n;
    while (e > s && (e[-1] == '\r' || e[-1] == '\n' || e[-1] == ' ' || e[-1] == '\t'))
        e--;
    *v = s;
    *vn = (size_t)(e - s);
    return 1;
}

void resp_head_copy_value(const char *v, size_t n, char *out, size_t cap)
{
    out[0] = 0;
    if (n >= cap)
        return;
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)v[i] < 0x20 || v[i] == 0x7f)
            return;
    memcpy(out, v, n);
    out[n] = 0;
}

/* A status line "HTTP/x[.y] NNN ...": a new head begins. */
static void status_line(struct resp_head *h, const char *p, size_t n)
{
    resp_head_init(h);
    const char *end = p + n, *sp = memchr(p, ' ', n);
    if (!sp)
        return;
    const char *q = sp + 1;
    int64_t code = read_number(&q, end);
    if (code >= 100 && code <= 999 && q - (sp + 1) == 3)
        h->status = (long)code;
}

int resp_head_line(struct resp_head *h, const char *p, size_t n)
{
    /* a status line only where a head starts: inside a head it is a line without a colon */
    int status = (!h->status || h->done) && n >= 5 && !strncmp(p, "HTTP/", 5);
    if ((status ? 0 : h->bytes) + n > RESP_HEAD_MAX)
        return sl_err_set(SL_ERR_TOOBIG, "response header over %u KiB", RESP_HEAD_MAX >> 10);
    if (status) {
        status_line(h, p, n);
        h->bytes = n;
        return 0;
    }
    h->bytes += n;
    const char *v;
    size_t vn;
    if ((n == 2 && p[0] == '\r' && p[1] == '\n') || (n == 1 && p[0] == '\n') || n == 0) {
        h->done = 1;
    } else if (p[0] == ' ' || p[0] == '\t') {
        /* a folded line (obsolete): none of the headers read here may be folded */
    } else if (header_is(p, n, "content-length:", &v, &vn)) {
        const char *q = v;
        int64_t len = read_number(&q, v + vn);
        h->content_length = q == v + vn ? len : -1;
    } else if (header_is(p, n, "transfer-encoding:", &v, &vn)) {
        for (size_t i = 0; i + 7 <= vn; i++)
            if (!strncasecmp(v + i, "chunked", 7))
                h->chunked = 1;
    } else if (header_is(p, n, "content-range:", &v, &vn)) {
        if (h->has_range) {
            h->range_ok = 0; /* two ranges: neither is believed */
            return 0;
        }
        h->has_range = 1;
        size_t k = vn < sizeof(h->range_text) - 1 ? vn : sizeof(h->range_text) - 1;
        for (size_t i = 0; i < k; i++)
            h->range_text[i] = v[i] >= 0x20 && v[i] < 0x7f ? v[i] : '?';
        h->range_text[k] = 0;
        h->range_ok = resp_content_range(v, vn, &h->range_first, &h->range_last, &h->range_total);
    } else if (header_is(p, n, "etag:", &v, &vn)) {
        /* a weak ETag is no use to If-Range; two ETags name no version */
        if (!(h->seen & SEEN_ETAG) && !(vn >= 2 && v[0] == 'W' && v[1] == '/'))
            resp_head_copy_value(v, vn, h->etag, sizeof(h->etag));
        else
            h->etag[0] = 0;
        h->seen |= SEEN_ETAG;
    } else if (header_is(p, n, "last-modified:", &v, &vn)) {
        if (!(h->seen & SEEN_MODIFIED))
            resp_head_copy_value(v, vn, h->modified, sizeof(h->modified));
        else
            h->modified[0] = 0;
        h->seen |= SEEN_MODIFIED;
    } else if (header_is(p, n, "retry-after:", &v, &vn)) {
        const char *q = v;
        int64_t s = read_number(&q, v + vn);
        /* an hour at most: a longer wait is no retry, and dates are not read */
        h->retry_after = q == v + vn && s > 0 && s < 3600 ? (double)s : 0;
    }
    return 0;
}
