/* Streaming WARC/ARC record reader over core/stream.h with a bounded window, lenient
 * about the record separators and the quirks real files have, strict about sizes. */
#include "curate/extract/warc.h"

#include "core/alloc.h"
#include "core/buf.h"
#include "core/err.h"
#include "core/stream.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define WINDOW (1u << 20)

struct warc_reader {
    struct sl_reader *in;
    char *buf;
    size_t pos, len;
    uint64_t base;        /* decompressed offset of buf[0] */
    int eof;              /* the stream has no more bytes */
    int err;              /* sticky stream error */
    uint64_t remaining;   /* unread bytes of the current block */
    int arc;              /* reading an ARC file */
    int cut;              /* the file ended inside a record */
    uint64_t index;
    struct warc_opts o;
    char *head;           /* the current header block, NUL-split */
    size_t head_len;
    char date_iso[32];
    char msg[256];
};

enum warc_type warc_type_from_name(const char *s)
{
    static const struct {
        const char *name;
        enum warc_type t;
    } map[] = {
        { "response", WARC_RESPONSE }, { "request", WARC_REQUEST },
        { "metadata", WARC_METADATA }, { "warcinfo", WARC_WARCINFO },
        { "revisit", WARC_REVISIT },   { "resource", WARC_RESOURCE },
        { "conversion", WARC_CONVERSION }, { "continuation", WARC_CONTINUATION },
    };
    for (size_t i = 0; i < sizeof(map) / sizeof(map[0]); i++)
        if (!strcasecmp(s, map[i].name))
            return map[i].t;
    return WARC_OTHER;
}

static void skip_report(struct warc_reader *r, const char *reason, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void skip_report(struct warc_reader *r, const char *reason, const char *fmt, ...)
{
    if (!r->o.on_skip)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(r->msg, sizeof(r->msg), fmt, ap);
    va_end(ap);
    r->o.on_skip(r->o.ctx, reason, r->msg);
}

int warc_reader_open_source(struct warc_reader **out, struct sl_source *src,
                            const struct warc_opts *o)
{
    *out = NULL;
    struct sl_reader_opts ro = { SL_CODEC_AUTO, o ? o->max_output : 0 };
    struct sl_reader *in;
    int rc = sl_reader_open_source(&in, src, &ro);
    if (rc)
        return rc;
    struct warc_reader *r = sl_xcalloc(1, sizeof(*r));
    r->in = in;
    r->buf = sl_xmalloc(WINDOW + 1);
    r->head = sl_xmalloc(WARC_MAX_HEAD + 1);
    if (o)
        r->o = *o;
    *out = r;
    return 0;
}

int warc_reader_open(struct warc_reader **out, const char *path, const struct warc_opts *o)
{
    struct sl_source *src;
    *out = NULL;
    int rc = sl_source_file(&src, path);
    if (rc)
        return rc;
    return warc_reader_open_source(out, src, o);
}

void warc_reader_close(struct warc_reader *r)
{
    if (!r)
        return;
    sl_reader_close(r->in);
    free(r->buf);
    free(r->head);
    free(r);
}

uint64_t warc_reader_offset(const struct warc_reader *r)
{
    return r->base + r->pos;
}

uint64_t warc_reader_in_offset(const struct warc_reader *r)
{
    return sl_reader_in_offset(r->in);
}

const char *warc_reader_name(const struct warc_reader *r)
{
    return sl_reader_name(r->in);
}

/* Read more into the window (keeping the unread part). >0 added, 0 at end, <0 error. */
static ssize_t fill(struct warc_reader *r)
{
    if (r->err)
        return r->err;
    if (r->eof)
        return 0;
    if (r->pos) {
        memmove(r->buf, r->buf + r->pos, r->len - r->pos);
        r->base += r->pos;
        r->len -= r->pos;
        r->pos = 0;
    }
    if (r->len == WINDOW)
        return sl_err_set(SL_ERR_STATE, "warc window full");
    ssize_t n = sl_reader_read(r->in, r->buf + r->len, WINDOW - r->len);
    if (n < 0) {
        r->err = (int)n;
        return n;
    }
    if (n == 0)
        r->eof = 1;
    r->len += (size_t)n;
    r->buf[r->len] = 0;
    return n;
}

/* Skip the unread rest of the block. 0, or <0 on stream error; sets cut at the end. */
static int skip_block(struct warc_reader *r)
{
    while (r->remaining) {
        size_t avail = r->len - r->pos;
        if (avail) {
            size_t k = avail < r->remaining ? avail : (size_t)r->remaining;
            r->pos += k;
            r->remaining -= k;
            continue;
        }
        /* skip large blocks without going through the window */
        r->base += r->pos;
        r->pos = r->len = 0;
        static char sink[1 << 16];
        size_t want = r->remaining < sizeof(sink) ? (size_t)r->remaining : sizeof(sink);
        ssize_t n = r->err ? r->err : sl_reader_read(r->in, sink, want);
        if (n < 0) {
            r->err = (int)n;
            return (int)n;
        }
        if (n == 0) {
            r->eof = 1;
            r->cut = 1;
            r->remaining = 0;
            return 0;
        }
        r->base += (uint64_t)n;
        r->remaining -= (uint64_t)n;
    }
    return 0;
}

/* Make at least `need` bytes available from pos (fewer at the end). <0 on error. */
static int want_bytes(struct warc_reader *r, size_t need)
{
    while (r->len - r->pos < need && !r->eof) {
        ssize_t n = fill(r);
        if (n < 0)
            return (int)n;
    }
    return 0;
}

/* Find the end of the header block starting at pos: the offset after the blank line. */
static size_t find_head_end(const char *p, size_t n)
{
    for (size_t i = 0; i + 1 < n; i++) {
        const char *nl = memchr(p + i, '\n', n - i - 1);
        if (!nl)
            return 0;
        i = (size_t)(nl - p);
        if (p[i + 1] == '\n')
            return i + 2;
        if (i + 2 < n && p[i + 1] == '\r' && p[i + 2] == '\n')
            return i + 3;
    }
    return 0;
}

static int is_arc_line_start(const char *p, size_t n)
{
    return (n >= 11 && !memcmp(p, "filedesc://", 11)) || (n >= 7 && !memcmp(p, "http://", 7)) ||
           (n >= 8 && !memcmp(p, "https://", 8)) || (n >= 4 && !memcmp(p, "dns:", 4)) ||
           (n >= 6 && !memcmp(p, "ftp://", 6));
}

/* Skip forward to the next line that starts a record. 1 found, 0 end, <0 error. */
static int resync(struct warc_reader *r, uint64_t *skipped)
{
    uint64_t start = r->base + r->pos;
    for (;;) {
        int rc = want_bytes(r, 16);
        if (rc)
            return rc;
        char *p = r->buf + r->pos, *end = r->buf + r->len;
        /* first line start after pos (a record begins after a newline) */
        for (char *q = p; q < end; q++) {
            char *nl = memchr(q, '\n', (size_t)(end - q));
            if (!nl)
                break;
            q = nl + 1;
            size_t left = (size_t)(end - q);
            if (left < 12 && !r->eof) {
                r->pos = (size_t)(nl - r->buf);
                goto more;
            }
            if ((!r->arc && left >= 7 && !memcmp(q, "WARC/1.", 7)) ||
                (r->arc && is_arc_line_start(q, left))) {
                r->pos = (size_t)(q - r->buf);
                *skipped = r->base + r->pos - start;
                return 1;
            }
            q = nl;
        }
        if (r->eof) {
            r->pos = r->len;
            *skipped = r->base + r->pos - start;
            return 0;
        }
        /* keep nothing: no line start in the window */
        r->pos = r->len;
    more:;
        ssize_t n = fill(r);
        if (n < 0)
            return (int)n;
    }
}

static const char *strip_brackets(char *v)
{
    size_t n = strlen(v);
    if (n >= 2 && v[0] == '<' && v[n - 1] == '>') {
        v[n - 1] = 0;
        return v + 1;
    }
    return v;
}

/* Parse the WARC header block in r->head. 0 or -1 (unusable: no Content-Length). */
static int parse_warc_head(struct warc_reader *r, struct warc_record *rec)
{
    char *p = r->head, *end = r->head + r->head_len;
    char *nl = memchr(p, '\n', (size_t)(end - p));
    if (!nl)
        return -1;
    *nl = 0;
    if (nl > p && nl[-1] == '\r')
        nl[-1] = 0;
    rec->version = p;
    int have_len = 0;
    p = nl + 1;
    while (p < end) {
        nl = memchr(p, '\n', (size_t)(end - p));
        char *le = nl ? nl : end;
        char *e = le;
        if (e > p && e[-1] == '\r')
            e--;
        *e = 0;
        char *colon = memchr(p, ':', (size_t)(e - p));
        if (colon && colon > p) {
            *colon = 0;
            char *v = colon + 1;
            while (*v == ' ' || *v == '\t')
                v++;
            char *ve = e;
            while (ve > v && (ve[-1] == ' ' || ve[-1] == '\t'))
                *--ve = 0;
            if (!strcasecmp(p, "WARC-Type"))
                rec->type_name = v;
            else if (!strcasecmp(p, "WARC-Target-URI"))
                rec->target_uri = strip_brackets(v);
            else if (!strcasecmp(p, "WARC-Record-ID"))
                rec->record_id = v;
            else if (!strcasecmp(p, "WARC-Date"))
                rec->date = v;
            else if (!strcasecmp(p, "Content-Type"))
                rec->content_type = v;
            else if (!strcasecmp(p, "WARC-Truncated"))
                rec->truncated = v;
            else if (!strcasecmp(p, "WARC-Identified-Content-Language"))
                rec->language = v;
            else if (!strcasecmp(p, "WARC-Refers-To"))
                rec->refers_to = v;
            else if (!strcasecmp(p, "Content-Length")) {
                char *q;
                unsigned long long len = strtoull(v, &q, 10);
                if (q != v && *q == 0 && *v != '-') {
                    rec->content_length = len;
                    have_len = 1;
                }
            }
        }
        if (!nl)
            break;
        p = nl + 1;
    }
    rec->type = warc_type_from_name(rec->type_name);
    return have_len ? 0 : -1;
}

/* ARC header line: URL IP DATE MIME [more fields] LENGTH. 0 or -1 (bad line). */
static int parse_arc_line(struct warc_reader *r, struct warc_record *rec)
{
    char *f[16];
    int nf = 0;
    char *p = r->head;
    char *e = p + r->head_len;
    while (e > p && (e[-1] == '\n' || e[-1] == '\r'))
        *--e = 0;
    while (*p && nf < 16) {
        while (*p == ' ')
            p++;
        if (!*p)
            break;
        f[nf++] = p;
        while (*p && *p != ' ')
            p++;
        if (*p)
            *p++ = 0;
    }
    if (nf < 5)
        return -1;
    /* a URL may hold spaces: the fixed fields are counted from the end (v1: 5 fields) */
    const char *len_s = f[nf - 1];
    char *q;
    unsigned long long len = strtoull(len_s, &q, 10);
    int ok = q != len_s && *q == 0 && *len_s != '-';
    rec->version = "ARC";
    rec->target_uri = f[0];
    rec->content_type = nf >= 5 ? f[nf - 2] : "";
    const char *d = f[nf >= 5 ? nf - 3 : 2];
    if (strlen(d) >= 14) {
        snprintf(r->date_iso, sizeof(r->date_iso), "%.4s-%.2s-%.2sT%.2s:%.2s:%.2sZ", d, d + 4,
                 d + 6, d + 8, d + 10, d + 12);
        rec->date = r->date_iso;
    }
    if (!strncmp(f[0], "filedesc://", 11)) {
        rec->type = WARC_WARCINFO;
        rec->type_name = "warcinfo";
    } else {
        rec->type = WARC_RESPONSE;
        rec->type_name = "response";
    }
    rec->content_length = ok ? len : 0;
    return ok ? 0 : -1;
}

int warc_next(struct warc_reader *r, struct warc_record *rec)
{
    memset(rec, 0, sizeof(*rec));
    rec->type_name = rec->version = rec->target_uri = rec->record_id = rec->date = "";
    rec->content_type = rec->truncated = rec->language = rec->refers_to = "";
    rec->head = "";
    int rc = skip_block(r);
    if (rc)
        return rc;
    if (r->cut == 2) /* reported by warc_read_block */
        return 0;
    if (r->cut) {
        r->cut = 2;
        skip_report(r, "incomplete", "%s: the last record (#%llu) is cut short by the end of the file",
                    warc_reader_name(r), (unsigned long long)(r->index ? r->index - 1 : 0));
        return 0;
    }
    for (;;) {
        /* skip the separators between records (and stray blank lines) */
        for (;;) {
            rc = want_bytes(r, 1);
            if (rc)
                return rc;
            if (r->pos == r->len)
                return 0;
            char c = r->buf[r->pos];
            if (c != '\r' && c != '\n' && c != '\0')
                break;
            r->pos++;
        }
        rc = want_bytes(r, 12);
        if (rc)
            return rc;
        const char *p = r->buf + r->pos;
        size_t avail = r->len - r->pos;
        if (r->index == 0 && avail >= 11 && !memcmp(p, "filedesc://", 11))
            r->arc = 1;
        int starts = r->arc ? is_arc_line_start(p, avail) : (avail >= 5 && !memcmp(p, "WARC/", 5));
        if (!starts) {
            uint64_t at = r->base + r->pos, skipped = 0;
            rc = resync(r, &skipped);
            if (rc < 0)
                return rc;
            skip_report(r, "bad_record",
                        "%s: decompressed byte %llu: not a %s record header; skipped %llu bytes",
                        warc_reader_name(r), (unsigned long long)at, r->arc ? "ARC" : "WARC",
                        (unsigned long long)skipped);
            if (rc == 0)
                return 0;
            continue;
        }
        /* the header: WARC: up to a blank line; ARC: one line */
        size_t hl = 0;
        for (;;) {
            p = r->buf + r->pos;
            avail = r->len - r->pos;
            size_t lim = avail < WARC_MAX_HEAD ? avail : WARC_MAX_HEAD;
            if (r->arc) {
                const char *nl = memchr(p, '\n', lim);
                hl = nl ? (size_t)(nl - p) + 1 : 0;
            } else {
                hl = find_head_end(p, lim);
            }
            if (hl || avail >= WARC_MAX_HEAD || r->eof)
                break;
            ssize_t n = fill(r);
            if (n < 0)
                return (int)n;
        }
        uint64_t at = r->base + r->pos;
        if (!hl) {
            if (r->eof && avail < WARC_MAX_HEAD) {
                skip_report(r, "incomplete", "%s: decompressed byte %llu: the file ends inside a record header",
                            warc_reader_name(r), (unsigned long long)at);
                r->pos = r->len;
                return 0;
            }
            r->pos++; /* no header end within the cap: resync after it */
            uint64_t skipped = 0;
            rc = resync(r, &skipped);
            if (rc < 0)
                return rc;
            skip_report(r, "bad_record", "%s: decompressed byte %llu: record header longer than %u bytes; skipped %llu bytes",
                        warc_reader_name(r), (unsigned long long)at, WARC_MAX_HEAD,
                        (unsigned long long)skipped + 1);
            if (rc == 0)
                return 0;
            continue;
        }
        memcpy(r->head, p, hl);
        r->head[hl] = 0;
        r->head_len = hl;
        r->pos += hl;
        rec->head = p; /* raw form: valid until the window moves; copied below */
        int ok = r->arc ? parse_arc_line(r, rec) : parse_warc_head(r, rec);
        if (ok != 0) {
            skip_report(r, "bad_record",
                        "%s: decompressed byte %llu: %s; record skipped",
                        warc_reader_name(r), (unsigned long long)at,
                        r->arc ? "bad ARC header line (length field)" : "WARC header without a valid Content-Length");
            if (r->arc && rec->content_length == 0) {
                /* an ARC line with a bad length: its block is unknown, go on at the next line */
                r->index++;
                continue;
            }
            uint64_t skipped = 0;
            rc = resync(r, &skipped);
            if (rc <= 0)
                return rc;
            r->index++;
            continue;
        }
        /* keep a pristine copy of the header block for callers (the parse split it) */
        rec->head = r->head; /* NUL-split form; head_len is the raw length */
        rec->head_len = hl;
        rec->offset = at;
        rec->index = r->index++;
        r->remaining = rec->content_length;
        return 1;
    }
}

int warc_read_block(struct warc_reader *r, struct sl_buf *body)
{
    uint64_t need = r->remaining;
    if (body->max && need > body->max - body->len) {
        int rc = skip_block(r);
        if (rc)
            return rc;
        return sl_err_set(SL_ERR_TOOBIG, "record block of %llu bytes is over the cap of %zu",
                          (unsigned long long)need, body->max);
    }
    if (sl_buf_reserve(body, (size_t)need) != 0)
        return sl_err_set(SL_ERR_NOMEM, "cannot hold a block of %llu bytes", (unsigned long long)need);
    while (r->remaining) {
        size_t avail = r->len - r->pos;
        if (avail) {
            size_t k = avail < r->remaining ? avail : (size_t)r->remaining;
            memcpy(body->data + body->len, r->buf + r->pos, k);
            body->len += k;
            r->pos += k;
            r->remaining -= k;
            continue;
        }
        /* empty window: read straight into the body */
        r->base += r->pos;
        r->pos = r->len = 0;
        ssize_t n = r->err ? r->err : sl_reader_read(r->in, body->data + body->len, (size_t)r->remaining);
        if (n < 0) {
            r->err = (int)n;
            body->data[body->len] = 0;
            return (int)n;
        }
        if (n == 0) {
            r->eof = 1;
            r->cut = 2;
            r->remaining = 0;
            body->data[body->len] = 0;
            return sl_err_set(SL_ERR_CORRUPT, "%s: record #%llu is cut short by the end of the file",
                              warc_reader_name(r), (unsigned long long)(r->index - 1));
        }
        body->len += (size_t)n;
        r->base += (uint64_t)n;
        r->remaining -= (uint64_t)n;
    }
    body->data[body->len] = 0;
    return 0;
}
