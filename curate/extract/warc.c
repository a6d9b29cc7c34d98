/* Streaming WARC/ARC record reader with a bounded window, lenient about the record
 * separators and the quirks real files have, strict about sizes.
 *
 * Input: gzip files (Common Crawl's one member per record) are inflated a whole member
 * at a time with libdeflate straight into the window; any member that does not fit the
 * limits below, and every other codec, goes through core/stream.h's streaming reader,
 * which then takes over the rest of the file (and words the errors for damaged data). */
#include "curate/extract/warc.h"

#include "core/alloc.h"
#include "core/buf.h"
#include "core/err.h"
#include "core/stream.h"

#include <libdeflate.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define WINDOW (1u << 20)        /* window for streamed input */
#define WINDOW_MAX (64u << 20)   /* largest member inflated in one piece */
#define ZCHUNK (1u << 20)        /* compressed bytes read at a time */
#define ZMAX (64u << 20)         /* largest compressed member held in one piece */

/* The compressed side of the libdeflate path. */
struct gz_in {
    struct sl_source *src;
    unsigned char *z;
    size_t cap, pos, len;
    int eof;
    uint64_t consumed; /* compressed bytes before z[0] */
    struct libdeflate_decompressor *d;
};

/* The end of the file inside a record: not seen, seen while skipping a block (reported by
 * the next warc_next), or already reported. */
enum warc_cut {
    CUT_NONE,
    CUT_PENDING,
    CUT_REPORTED,
};

struct warc_reader {
    struct sl_reader *in; /* streaming path (NULL while the gz path is in use) */
    struct gz_in *gz;     /* libdeflate path */
    char *name;
    uint64_t in_base;     /* compressed bytes consumed before `in` took over */
    uint64_t out_total, max_output;
    char *buf;
    size_t cap;           /* window size */
    size_t pos, len;
    uint64_t base;        /* decompressed offset of buf[0] */
    int eof;              /* the stream has no more bytes */
    int err;              /* sticky stream error */
    uint64_t remaining;   /* unread bytes of the current block */
    int arc;              /* reading an ARC file */
    enum warc_cut cut;    /* whether the file ended inside a record, and if that was reported */
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

/* A source that first returns the unread compressed bytes of the gz path, then the rest
 * of the original source (used when the streaming reader takes over). */
struct replay_src {
    struct sl_source base;
    unsigned char *data;
    size_t pos, len;
    struct sl_source *rest;
};

static ssize_t replay_read(struct sl_source *s, void *buf, size_t n)
{
    struct replay_src *r = (struct replay_src *)s;
    if (r->pos < r->len) {
        size_t k = r->len - r->pos < n ? r->len - r->pos : n;
        memcpy(buf, r->data + r->pos, k);
        r->pos += k;
        return (ssize_t)k;
    }
    return r->rest ? r->rest->read(r->rest, buf, n) : 0;
}

static void replay_close(struct sl_source *s)
{
    struct replay_src *r = (struct replay_src *)s;
    if (r->rest)
        sl_source_close(r->rest);
    free(r->data);
    free(r->base.name);
    free(r);
}

static struct sl_source *replay_new(const unsigned char *data, size_t n, struct sl_source *rest,
                                    const char *name)
{
    struct replay_src *r = sl_xcalloc(1, sizeof(*r));
    r->base.read = replay_read;
    r->base.close = replay_close;
    r->base.name = sl_xstrdup(name);
    r->data = sl_xmalloc(n ? n : 1);
    memcpy(r->data, data, n);
    r->len = n;
    r->rest = rest;
    return &r->base;
}

/* Hand the rest of the input to core/stream.h's reader (from the gz path or at open). */
static int start_stream(struct warc_reader *r, const unsigned char *pending, size_t n,
                        struct sl_source *rest)
{
    struct sl_reader_opts ro = { SL_CODEC_AUTO, 0 };
    if (r->max_output)
        ro.max_output = r->max_output > r->out_total ? r->max_output - r->out_total : 1;
    return sl_reader_open_source(&r->in, replay_new(pending, n, rest, r->name), &ro);
}

static void gz_free(struct gz_in *g)
{
    if (!g)
        return;
    if (g->src)
        sl_source_close(g->src);
    if (g->d)
        libdeflate_free_decompressor(g->d);
    free(g->z);
    free(g);
}

int warc_reader_open_source(struct warc_reader **out, struct sl_source *src,
                            const struct warc_opts *o)
{
    *out = NULL;
    /* peek at the magic */
    unsigned char head[16];
    size_t got = 0;
    while (got < sizeof(head)) {
        ssize_t n = src->read(src, head + got, sizeof(head) - got);
        if (n < 0) {
            int rc = sl_err_set((int)n, "cannot read '%s'", src->name ? src->name : "?");
            sl_source_close(src);
            return rc;
        }
        if (n == 0)
            break;
        got += (size_t)n;
    }
    struct warc_reader *r = sl_xcalloc(1, sizeof(*r));
    r->name = sl_xstrdup(src->name ? src->name : "input");
    if (o)
        r->o = *o;
    r->max_output = r->o.max_output;
    r->cap = WINDOW;
    r->buf = sl_xmalloc(r->cap + 1);
    r->head = sl_xmalloc(WARC_MAX_HEAD + 1);
    int rc = 0;
    if (got >= 2 && head[0] == 0x1f && head[1] == 0x8b) {
        struct gz_in *g = sl_xcalloc(1, sizeof(*g));
        g->src = src;
        g->cap = ZCHUNK;
        g->z = sl_xmalloc(g->cap);
        memcpy(g->z, head, got);
        g->len = got;
        g->d = libdeflate_alloc_decompressor();
        if (!g->d) {
            gz_free(g);
            rc = sl_err_set(SL_ERR_NOMEM, "cannot start a gzip decoder");
        } else {
            r->gz = g;
        }
    } else {
        rc = start_stream(r, head, got, src);
    }
    if (rc) {
        warc_reader_close(r);
        return rc;
    }
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
    gz_free(r->gz);
    free(r->name);
    free(r->buf);
    free(r->head);
    free(r);
}

uint64_t warc_reader_offset(const struct warc_reader *r)
{
    return r->base + r->pos;
}

int warc_reader_pending(const struct warc_reader *r)
{
    return r->remaining == 0 && r->len > r->pos;
}

uint64_t warc_reader_in_offset(const struct warc_reader *r)
{
    if (r->gz)
        return r->gz->consumed + r->gz->pos;
    return r->in_base + (r->in ? sl_reader_in_offset(r->in) : 0);
}

const char *warc_reader_name(const struct warc_reader *r)
{
    return r->name;
}

/* Read more compressed bytes (keeping the unread ones). >0, 0 at the end, <0 error. */
static ssize_t gz_more(struct gz_in *g)
{
    if (g->eof)
        return 0;
    if (g->pos) {
        memmove(g->z, g->z + g->pos, g->len - g->pos);
        g->consumed += g->pos;
        g->len -= g->pos;
        g->pos = 0;
    }
    if (g->len == g->cap) {
        if (g->cap >= ZMAX)
            return SL_ERR_TOOBIG;
        g->cap *= 2;
        g->z = sl_xrealloc(g->z, g->cap);
    }
    ssize_t n = g->src->read(g->src, g->z + g->len, g->cap - g->len);
    if (n < 0)
        return n;
    if (n == 0)
        g->eof = 1;
    g->len += (size_t)n;
    return n;
}

/* Switch from the gz path to streaming, from the current member on. */
static int gz_to_stream(struct warc_reader *r)
{
    struct gz_in *g = r->gz;
    r->in_base = g->consumed + g->pos;
    struct sl_source *rest = g->src;
    g->src = NULL;
    int rc = start_stream(r, g->z + g->pos, g->len - g->pos, rest);
    gz_free(g);
    r->gz = NULL;
    return rc;
}

/* What gz_fill did: added *n bytes to the window (0: the end of the input), found input that
 * libdeflate cannot inflate in one piece (the streaming reader takes over and words any
 * damage), or failed with the error in *n. */
enum gz_fill_status {
    GZ_FILLED,
    GZ_TO_STREAM,
    GZ_FAILED,
};

/* Inflate the next member(s) into the window. */
static enum gz_fill_status gz_fill(struct warc_reader *r, ssize_t *n_out)
{
    struct gz_in *g = r->gz;
    for (;;) {
        if (g->len - g->pos < 32 && !g->eof) {
            ssize_t n = gz_more(g);
            if (n < 0) {
                *n_out = n;
                return GZ_FAILED;
            }
            continue;
        }
        if (g->pos == g->len) {
            *n_out = 0;
            return GZ_FILLED;
        }
        const unsigned char *z = g->z + g->pos;
        size_t zn = g->len - g->pos;
        if (zn < 2 || z[0] != 0x1f || z[1] != 0x8b)
            return GZ_TO_STREAM; /* trailing zeros or garbage: the streaming reader words it */
        size_t used = 0, made = 0;
        enum libdeflate_result res = libdeflate_gzip_decompress_ex(
            g->d, z, zn, r->buf + r->len, r->cap - r->len, &used, &made);
        if (res == LIBDEFLATE_SUCCESS) {
            g->pos += used;
            if (made == 0)
                continue;
            *n_out = (ssize_t)made;
            return GZ_FILLED;
        }
        if (res == LIBDEFLATE_INSUFFICIENT_SPACE && r->cap < WINDOW_MAX) {
            r->cap *= 2;
            r->buf = sl_xrealloc(r->buf, r->cap + 1);
            continue;
        }
        if (res == LIBDEFLATE_BAD_DATA && !g->eof) {
            /* maybe only cut by our buffer: read more and try again */
            ssize_t n = gz_more(g);
            if (n == SL_ERR_TOOBIG)
                return GZ_TO_STREAM;
            if (n < 0) {
                *n_out = n;
                return GZ_FAILED;
            }
            continue;
        }
        return GZ_TO_STREAM; /* too big for one piece, damaged or cut: stream it */
    }
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
    if (r->len == r->cap)
        return sl_err_set(SL_ERR_STATE, "warc window full");
    ssize_t n = 0; /* set on every path below; gcc -O2 with ASan cannot see it */
    if (r->gz && gz_fill(r, &n) == GZ_TO_STREAM) {
        int rc = gz_to_stream(r);
        if (rc) {
            r->err = rc;
            return rc;
        }
    }
    if (!r->gz)
        n = sl_reader_read(r->in, r->buf + r->len, r->cap - r->len);
    else if (n > 0 && r->max_output && r->out_total + (uint64_t)n > r->max_output)
        n = sl_err_set(SL_ERR_TOOBIG,
                       "'%s' decompresses to more than %llu bytes (cap); is it a compression bomb?",
                       r->name, (unsigned long long)r->max_output);
    if (n > 0)
        r->out_total += (uint64_t)n;
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
        if (r->gz) {
            ssize_t n = fill(r);
            if (n < 0)
                return (int)n;
            if (n == 0) {
                r->cut = CUT_PENDING;
                r->remaining = 0;
                return 0;
            }
            continue;
        }
        /* skip large blocks without going through the window */
        r->base += r->pos;
        r->pos = r->len = 0;
        /* read into the (now empty) window and drop it */
        size_t want = r->remaining < r->cap ? (size_t)r->remaining : r->cap;
        ssize_t n = r->err ? r->err : sl_reader_read(r->in, r->buf, want);
        r->buf[0] = 0;
        if (n < 0) {
            r->err = (int)n;
            return (int)n;
        }
        if (n == 0) {
            r->eof = 1;
            r->cut = CUT_PENDING;
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

/* Does p (n bytes) start a WARC header line, "WARC/1.<digit>" then CRLF or LF? 1 yes, 0 no,
 * -1 not enough bytes to tell. */
static int is_warc_version_line(const char *p, size_t n)
{
    static const char v[] = "WARC/1.";
    for (size_t i = 0; i < 7; i++) {
        if (i >= n)
            return -1;
        if (p[i] != v[i])
            return 0;
    }
    if (n < 9)
        return -1;
    if (p[7] < '0' || p[7] > '9')
        return 0;
    if (p[8] == '\n')
        return 1;
    if (p[8] != '\r')
        return 0;
    if (n < 10)
        return -1;
    return p[9] == '\n';
}

/* Skip forward to the next record start at or after pos. WARC: the first "WARC/1.x" line
 * anywhere, also right after garbage that has no newline of its own or after NUL padding;
 * ARC: a line that starts with a URL scheme. 1 found, 0 end, <0 error. */
static int resync(struct warc_reader *r, uint64_t *skipped)
{
    uint64_t start = r->base + r->pos;
    for (;;) {
        int rc = want_bytes(r, 16);
        if (rc)
            return rc;
        char *p = r->buf + r->pos, *end = r->buf + r->len;
        if (!r->arc) {
            for (char *q = p; q < end;) {
                char *m = memmem(q, (size_t)(end - q), "WARC/1.", 7);
                if (!m)
                    break;
                int v = is_warc_version_line(m, (size_t)(end - m));
                if (v == 1) {
                    r->pos = (size_t)(m - r->buf);
                    *skipped = r->base + r->pos - start;
                    return 1;
                }
                if (v < 0 && !r->eof) {
                    r->pos = (size_t)(m - r->buf);
                    goto more;
                }
                q = m + 1;
            }
            if (r->eof) {
                r->pos = r->len;
                *skipped = r->base + r->pos - start;
                return 0;
            }
            /* keep a possible start of "WARC/1.x\r\n" cut by the window's end */
            r->pos = r->len > 9 && r->len - 9 > r->pos ? r->len - 9 : r->pos;
            goto more;
        }
        /* first line start after pos (a record begins after a newline) */
        for (char *q = p; q < end; q++) {
            char *nl = memchr(q, '\n', (size_t)(end - q));
            if (!nl)
                break;
            q = nl + 1;
            while (q < end && (*q == '\r' || *q == '\0')) /* NUL padding, blank CR lines */
                q++;
            size_t left = (size_t)(end - q);
            if (left < 12 && !r->eof) {
                r->pos = (size_t)(nl - r->buf);
                goto more;
            }
            if (is_arc_line_start(q, left)) {
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
                /* past 2^50 (1 PiB) it is garbage: reading on would swallow the file */
                if (q != v && *q == 0 && *v != '-' && len < (1ull << 50)) {
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
    if (r->cut == CUT_REPORTED) /* by warc_read_block */
        return 0;
    if (r->cut == CUT_PENDING) {
        r->cut = CUT_REPORTED;
        skip_report(r, "cut", "%s: the last record (#%llu) is cut short by the end of the file",
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
            skip_report(r, "bad_header",
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
        ssize_t n;
        if (r->gz) {
            n = fill(r);
            if (n > 0)
                continue;
        } else {
            /* empty window: read straight into the body */
            r->base += r->pos;
            r->pos = r->len = 0;
            n = r->err ? r->err : sl_reader_read(r->in, body->data + body->len, (size_t)r->remaining);
        }
        if (n < 0) {
            r->err = (int)n;
            body->data[body->len] = 0;
            return (int)n;
        }
        if (n == 0) {
            r->eof = 1;
            r->cut = CUT_REPORTED;
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
