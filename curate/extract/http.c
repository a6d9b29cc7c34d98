/* HTTP/1.x response heads inside WARC records: a lenient, bounded parser, chunked
 * transfer decoding and content decoding (zlib, zstd) with output caps. */
#include "curate/extract/http.h"

#include "core/buf.h"
#include "core/err.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>
#include <zlib.h>
#include <zstd.h>

static int lower(int c)
{
    return c >= 'A' && c <= 'Z' ? c + 32 : c;
}

static int ieq(const char *a, size_t an, const char *b)
{
    size_t bn = strlen(b);
    if (an != bn)
        return 0;
    for (size_t i = 0; i < an; i++)
        if (lower((unsigned char)a[i]) != lower((unsigned char)b[i]))
            return 0;
    return 1;
}

static struct http_span trim(const char *p, size_t n)
{
    while (n && (*p == ' ' || *p == '\t')) {
        p++;
        n--;
    }
    while (n && (p[n - 1] == ' ' || p[n - 1] == '\t' || p[n - 1] == '\r'))
        n--;
    struct http_span s = { p, n };
    return s;
}

/* End of the head: offset just past the blank line, or 0 when none within n. */
static size_t head_end(const char *p, size_t n)
{
    const char *q = p, *end = p + n;
    while (q < end) {
        const char *nl = memchr(q, '\n', (size_t)(end - q));
        if (!nl)
            return 0;
        const char *next = nl + 1;
        if (next < end && *next == '\n')
            return (size_t)(next + 1 - p);
        if (next + 1 < end && next[0] == '\r' && next[1] == '\n')
            return (size_t)(next + 2 - p);
        q = next;
    }
    return 0;
}

struct http_span http_header(const char *head, size_t head_len, const char *name)
{
    struct http_span none = { NULL, 0 };
    size_t nl = strlen(name);
    const char *q = head, *end = head + head_len;
    /* skip the status line */
    const char *e = memchr(q, '\n', head_len);
    if (!e)
        return none;
    q = e + 1;
    while (q < end) {
        e = memchr(q, '\n', (size_t)(end - q));
        const char *le = e ? e : end;
        size_t len = (size_t)(le - q);
        if (len > nl && q[nl] == ':' && ieq(q, nl, name))
            return trim(q + nl + 1, len - nl - 1);
        /* "Name : value" (space before the colon) */
        if (len > nl + 1 && ieq(q, nl, name) && (q[nl] == ' ' || q[nl] == '\t')) {
            const char *c = q + nl;
            while (c < le && (*c == ' ' || *c == '\t'))
                c++;
            if (c < le && *c == ':')
                return trim(c + 1, (size_t)(le - c - 1));
        }
        if (!e)
            break;
        q = e + 1;
    }
    return none;
}

int http_has_token(struct http_span v, const char *tok)
{
    size_t i = 0;
    while (i < v.n) {
        size_t j = i;
        while (j < v.n && v.p[j] != ',')
            j++;
        struct http_span t = trim(v.p + i, j - i);
        if (ieq(t.p, t.n, tok))
            return 1;
        i = j + 1;
    }
    return 0;
}

/* Split "text/html; charset=UTF-8" into a lowercased media type and charset. */
static void parse_content_type(struct http_span v, char *mime, size_t mime_n, char *cs,
                               size_t cs_n)
{
    mime[0] = cs[0] = 0;
    size_t i = 0;
    while (i < v.n && v.p[i] != ';')
        i++;
    struct http_span t = trim(v.p, i);
    if (t.n < mime_n) {
        for (size_t k = 0; k < t.n; k++)
            mime[k] = (char)lower((unsigned char)t.p[k]);
        mime[t.n] = 0;
    }
    while (i < v.n) {
        i++; /* past ';' */
        size_t j = i;
        while (j < v.n && v.p[j] != ';')
            j++;
        struct http_span prm = trim(v.p + i, j - i);
        if (prm.n > 8 && ieq(prm.p, 7, "charset") && (prm.p[7] == '=' || prm.p[7] == ' ')) {
            const char *s = memchr(prm.p, '=', prm.n);
            if (s) {
                struct http_span val = trim(s + 1, (size_t)(prm.p + prm.n - s - 1));
                if (val.n && (val.p[0] == '"' || val.p[0] == '\'')) {
                    val.p++;
                    val.n--;
                    while (val.n && (val.p[val.n - 1] == '"' || val.p[val.n - 1] == '\''))
                        val.n--;
                }
                if (val.n && val.n < cs_n) {
                    for (size_t k = 0; k < val.n; k++)
                        cs[k] = (char)lower((unsigned char)val.p[k]);
                    cs[val.n] = 0;
                }
            }
        }
        i = j;
    }
}

int http_parse_response(const char *p, size_t n, struct http_resp *r)
{
    memset(r, 0, sizeof(*r));
    r->content_length = -1;
    if (n < 12 || memcmp(p, "HTTP/", 5) != 0)
        return sl_err_set(SL_ERR_FORMAT, "not an HTTP response (no 'HTTP/' status line)");
    size_t lim = n < HTTP_MAX_HEAD ? n : HTTP_MAX_HEAD;
    size_t hl = head_end(p, lim);
    if (!hl) {
        if (n > HTTP_MAX_HEAD)
            return sl_err_set(SL_ERR_TOOBIG, "HTTP header block longer than %u bytes",
                              HTTP_MAX_HEAD);
        hl = n; /* a record that is only a head */
    }
    /* status line: HTTP/x.y SP code [SP reason] */
    size_t i = 5;
    while (i < hl && (isdigit((unsigned char)p[i]) || p[i] == '.'))
        i++;
    while (i < hl && p[i] == ' ')
        i++;
    int code = 0, digits = 0;
    while (i < hl && isdigit((unsigned char)p[i]) && digits < 3) {
        code = code * 10 + (p[i] - '0');
        i++;
        digits++;
    }
    if (digits != 3 || code < 100)
        return sl_err_set(SL_ERR_FORMAT, "bad HTTP status line");
    r->status = code;
    r->head_len = hl;
    struct http_span ct = http_header(p, hl, "content-type");
    r->content_type = ct;
    parse_content_type(ct, r->mime, sizeof(r->mime), r->charset, sizeof(r->charset));
    r->content_encoding = http_header(p, hl, "content-encoding");
    r->transfer_encoding = http_header(p, hl, "transfer-encoding");
    struct http_span cl = http_header(p, hl, "content-length");
    if (cl.n && cl.n < 19) {
        int64_t v = 0;
        size_t k = 0;
        for (; k < cl.n && isdigit((unsigned char)cl.p[k]); k++)
            v = v * 10 + (cl.p[k] - '0');
        if (k == cl.n)
            r->content_length = v;
    }
    return 0;
}

int http_looks_chunked(const char *p, size_t n)
{
    size_t i = 0, hex = 0;
    while (i < n && isxdigit((unsigned char)p[i]) && hex < 16) {
        i++;
        hex++;
    }
    if (!hex)
        return 0;
    while (i < n && (p[i] == ' ' || p[i] == '\t'))
        i++;
    return i < n && (p[i] == '\r' || p[i] == '\n' || p[i] == ';');
}

int http_dechunk(const char *p, size_t n, struct sl_buf *out)
{
    size_t i = 0;
    for (;;) {
        /* size line */
        uint64_t sz = 0;
        size_t hex = 0;
        while (i < n && isxdigit((unsigned char)p[i])) {
            if (hex++ >= 15)
                return sl_err_set(SL_ERR_CORRUPT, "chunk size too large");
            int c = p[i];
            sz = sz * 16 + (uint64_t)(isdigit(c) ? c - '0' : lower(c) - 'a' + 10);
            i++;
        }
        if (!hex)
            return sl_err_set(SL_ERR_CORRUPT, "bad chunk size line at body offset %zu", i);
        const char *nl = memchr(p + i, '\n', n - i);
        if (!nl)
            return sl_err_set(SL_ERR_CORRUPT, "body cut inside a chunk size line");
        i = (size_t)(nl - p) + 1;
        if (sz == 0)
            return 0; /* trailers ignored */
        if (sz > n - i) {
            sl_buf_append(out, p + i, n - i);
            return sl_err_set(SL_ERR_CORRUPT, "body cut inside a chunk");
        }
        int rc = sl_buf_append(out, p + i, (size_t)sz);
        if (rc)
            return rc;
        i += (size_t)sz;
        if (i < n && p[i] == '\r')
            i++;
        if (i < n && p[i] == '\n')
            i++;
        if (i >= n)
            return sl_err_set(SL_ERR_CORRUPT, "body ends without the last chunk");
    }
}

/* Grow out by up to 256 KiB within its cap; returns the writable room (0 at the cap). */
static size_t out_room(struct sl_buf *out)
{
    size_t want = 256u << 10;
    if (out->max && out->max - out->len < want)
        want = out->max - out->len;
    if (want == 0 || sl_buf_reserve(out, want) != 0)
        return 0;
    return want;
}

static int inflate_into(const char *p, size_t n, int wbits, struct sl_buf *out)
{
    z_stream z;
    memset(&z, 0, sizeof(z));
    if (inflateInit2(&z, wbits) != Z_OK)
        return sl_err_set(SL_ERR_NOMEM, "cannot start inflater");
    int rc = 0;
    z.next_in = (Bytef *)p;
    z.avail_in = (uInt)(n > UINT32_MAX ? UINT32_MAX : n);
    for (;;) {
        size_t room = out_room(out);
        if (room == 0) {
            rc = sl_err_set(SL_ERR_TOOBIG, "decoded body larger than %zu bytes", out->max);
            break;
        }
        z.next_out = (Bytef *)out->data + out->len;
        z.avail_out = (uInt)(room > UINT32_MAX ? UINT32_MAX : room);
        int zr = inflate(&z, Z_NO_FLUSH);
        out->len += (size_t)((char *)z.next_out - (out->data + out->len));
        out->data[out->len] = 0;
        if (zr == Z_STREAM_END)
            break;
        if (zr == Z_BUF_ERROR && z.avail_in == 0) {
            rc = sl_err_set(SL_ERR_CORRUPT, "compressed body is cut short");
            break;
        }
        if (zr != Z_OK && zr != Z_BUF_ERROR) {
            rc = sl_err_set(SL_ERR_CORRUPT, "bad compressed body (%s)", z.msg ? z.msg : "inflate");
            break;
        }
    }
    inflateEnd(&z);
    return rc;
}

static int unzstd_into(const char *p, size_t n, struct sl_buf *out)
{
    ZSTD_DStream *d = ZSTD_createDStream();
    if (!d)
        return sl_err_set(SL_ERR_NOMEM, "cannot start zstd decoder");
    ZSTD_inBuffer in = { p, n, 0 };
    int rc = 0;
    size_t last = 1;
    while (in.pos < in.size) {
        size_t room = out_room(out);
        if (room == 0) {
            rc = sl_err_set(SL_ERR_TOOBIG, "decoded body larger than %zu bytes", out->max);
            break;
        }
        ZSTD_outBuffer o = { out->data + out->len, room, 0 };
        last = ZSTD_decompressStream(d, &o, &in);
        out->len += o.pos;
        out->data[out->len] = 0;
        if (ZSTD_isError(last)) {
            rc = sl_err_set(SL_ERR_CORRUPT, "bad zstd body (%s)", ZSTD_getErrorName(last));
            break;
        }
    }
    if (!rc && last != 0)
        rc = sl_err_set(SL_ERR_CORRUPT, "zstd body is cut short");
    ZSTD_freeDStream(d);
    return rc;
}

int http_decode_content(const char *enc, size_t enc_len, const char *p, size_t n,
                        struct sl_buf *out)
{
    struct http_span e = trim(enc, enc_len);
    if (e.n == 0 || ieq(e.p, e.n, "identity") || ieq(e.p, e.n, "none") || ieq(e.p, e.n, "utf-8"))
        return sl_buf_append(out, p, n);
    if (ieq(e.p, e.n, "gzip") || ieq(e.p, e.n, "x-gzip"))
        return inflate_into(p, n, 16 + MAX_WBITS, out);
    if (ieq(e.p, e.n, "deflate")) {
        /* RFC says zlib-wrapped; many servers send raw deflate */
        int zlib_hdr = n >= 2 && ((unsigned char)p[0] & 0x0f) == 8 &&
                       (((unsigned char)p[0] << 8) | (unsigned char)p[1]) % 31 == 0;
        return inflate_into(p, n, zlib_hdr ? MAX_WBITS : -MAX_WBITS, out);
    }
    if (ieq(e.p, e.n, "zstd"))
        return unzstd_into(p, n, out);
    char name[32];
    snprintf(name, sizeof(name), "%.*s", (int)(e.n < 31 ? e.n : 31), e.p);
    return sl_err_set(SL_ERR_UNSUPPORTED, "content encoding '%s' is not supported", name);
}
