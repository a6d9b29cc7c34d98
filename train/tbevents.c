/* TensorBoard event files: a minimal protobuf writer and reader for tensorflow.Event
 * (wall_time, step, file_version, summary.value{tag, simple_value}, session_log.status) in
 * TFRecord framing. */
#include "train/tbevents.h"

#include "core/alloc.h"
#include "core/atomic.h"
#include "core/buf.h"
#include "core/err.h"
#include "core/hash.h"
#include "core/stream.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

/* Event and Summary field numbers (tensorflow/core/util/event.proto, summary.proto). */
enum {
    EV_WALL_TIME = 1,    /* double */
    EV_STEP = 2,         /* int64 */
    EV_FILE_VERSION = 3, /* string */
    EV_SUMMARY = 5,      /* Summary */
    EV_SESSION_LOG = 7,  /* SessionLog (6 is the deprecated LogMessage) */
    SUM_VALUE = 1,       /* repeated Summary.Value */
    VAL_TAG = 1,         /* string */
    VAL_SIMPLE = 2,      /* float */
    SLOG_STATUS = 1,     /* enum: START = 1 */
};
enum { WT_VARINT = 0, WT_FIXED64 = 1, WT_LEN = 2, WT_FIXED32 = 5 };
/* A malformed protobuf (distinct from every enum sl_err). */
#define PB_BAD (-1000)

uint32_t tb_masked_crc(const void *data, size_t n)
{
    uint32_t c = sl_crc32c(0, data, n);
    return ((c >> 15) | (c << 17)) + 0xa282ead8u;
}

static void le32(unsigned char *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (unsigned char)(v >> (8 * i));
}

static void le64(unsigned char *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (unsigned char)(v >> (8 * i));
}

static uint32_t rd32(const unsigned char *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint64_t rd64(const unsigned char *p)
{
    return (uint64_t)rd32(p) | (uint64_t)rd32(p + 4) << 32;
}

int tb_record_append(struct sl_buf *out, const void *data, size_t n)
{
    unsigned char head[12], tail[4];
    le64(head, (uint64_t)n);
    le32(head + 8, tb_masked_crc(head, 8));
    le32(tail, tb_masked_crc(data, n));
    int rc = sl_buf_append(out, head, sizeof(head));
    if (!rc)
        rc = sl_buf_append(out, data, n);
    if (!rc)
        rc = sl_buf_append(out, tail, sizeof(tail));
    return rc;
}

/* ---- protobuf encoding ------------------------------------------------------------------ */

static int pb_varint(struct sl_buf *b, uint64_t v)
{
    unsigned char t[10];
    int n = 0;
    do {
        t[n] = (unsigned char)(v & 0x7f);
        v >>= 7;
        if (v)
            t[n] |= 0x80;
        n++;
    } while (v);
    return sl_buf_append(b, t, (size_t)n);
}

static int pb_key(struct sl_buf *b, int field, int wt)
{
    return pb_varint(b, (uint64_t)field << 3 | (uint64_t)wt);
}

static int pb_bytes(struct sl_buf *b, int field, const void *data, size_t n)
{
    int rc = pb_key(b, field, WT_LEN);
    if (!rc)
        rc = pb_varint(b, n);
    if (!rc)
        rc = sl_buf_append(b, data, n);
    return rc;
}

static int pb_double(struct sl_buf *b, int field, double v)
{
    uint64_t u;
    unsigned char t[8];
    memcpy(&u, &v, 8);
    le64(t, u);
    int rc = pb_key(b, field, WT_FIXED64);
    return rc ? rc : sl_buf_append(b, t, 8);
}

static int pb_float(struct sl_buf *b, int field, float v)
{
    uint32_t u;
    unsigned char t[4];
    memcpy(&u, &v, 4);
    le32(t, u);
    int rc = pb_key(b, field, WT_FIXED32);
    return rc ? rc : sl_buf_append(b, t, 4);
}

/* Frame the event in ev as a record appended to out. */
static int finish_event(struct sl_buf *out, struct sl_buf *ev, int rc)
{
    if (!rc)
        rc = tb_record_append(out, ev->data, ev->len);
    sl_buf_release(ev);
    return rc;
}

int tb_event_file_version(struct sl_buf *out, double wall_time)
{
    struct sl_buf ev = SL_BUF_INIT;
    int rc = pb_double(&ev, EV_WALL_TIME, wall_time);
    if (!rc)
        rc = pb_bytes(&ev, EV_FILE_VERSION, "brain.Event:2", 13);
    return finish_event(out, &ev, rc);
}

int tb_event_scalar(struct sl_buf *out, double wall_time, int64_t step, const char *tag,
                    float value)
{
    struct sl_buf ev = SL_BUF_INIT, val = SL_BUF_INIT, sum = SL_BUF_INIT;
    int rc = pb_bytes(&val, VAL_TAG, tag, strlen(tag));
    if (!rc)
        rc = pb_float(&val, VAL_SIMPLE, value);
    if (!rc)
        rc = pb_bytes(&sum, SUM_VALUE, val.data, val.len);
    if (!rc)
        rc = pb_double(&ev, EV_WALL_TIME, wall_time);
    if (!rc) {
        rc = pb_key(&ev, EV_STEP, WT_VARINT);
        if (!rc)
            rc = pb_varint(&ev, (uint64_t)step);
    }
    if (!rc)
        rc = pb_bytes(&ev, EV_SUMMARY, sum.data, sum.len);
    sl_buf_release(&val);
    sl_buf_release(&sum);
    return finish_event(out, &ev, rc);
}

int tb_event_session_start(struct sl_buf *out, double wall_time, int64_t step)
{
    struct sl_buf ev = SL_BUF_INIT;
    static const unsigned char start[] = { SLOG_STATUS << 3 | WT_VARINT, 1 };
    int rc = pb_double(&ev, EV_WALL_TIME, wall_time);
    if (!rc) {
        rc = pb_key(&ev, EV_STEP, WT_VARINT);
        if (!rc)
            rc = pb_varint(&ev, (uint64_t)step);
    }
    if (!rc)
        rc = pb_bytes(&ev, EV_SESSION_LOG, start, sizeof(start));
    return finish_event(out, &ev, rc);
}

/* ---- protobuf decoding ------------------------------------------------------------------ */

struct pb {
    const unsigned char *p, *end;
};

static int rd_varint(struct pb *r, uint64_t *v)
{
    *v = 0;
    for (int s = 0; s < 64; s += 7) {
        if (r->p >= r->end)
            return -1;
        unsigned char c = *r->p++;
        *v |= (uint64_t)(c & 0x7f) << s;
        if (!(c & 0x80))
            return 0;
    }
    return -1;
}

/* The next field: its number, wire type, and for WT_LEN its bytes, else its value. */
static int rd_field(struct pb *r, int *field, int *wt, uint64_t *v, struct pb *sub)
{
    uint64_t key;
    if (rd_varint(r, &key) || key >> 3 == 0 || key >> 3 > 0x1fffffff)
        return -1;
    *field = (int)(key >> 3);
    *wt = (int)(key & 7);
    switch (*wt) {
    case WT_VARINT:
        return rd_varint(r, v);
    case WT_FIXED64:
        if (r->end - r->p < 8)
            return -1;
        *v = rd64(r->p);
        r->p += 8;
        return 0;
    case WT_FIXED32:
        if (r->end - r->p < 4)
            return -1;
        *v = rd32(r->p);
        r->p += 4;
        return 0;
    case WT_LEN:
        if (rd_varint(r, v) || *v > (uint64_t)(r->end - r->p))
            return -1;
        sub->p = r->p;
        sub->end = r->p + *v;
        r->p += *v;
        return 0;
    default:
        return -1;
    }
}

/* Call fn for every simple_value in a Summary. */
static int parse_summary(struct pb s, int64_t step, double wall, tb_scalar_fn fn, void *ctx)
{
    int field, wt;
    uint64_t v;
    struct pb sub;
    while (s.p < s.end) {
        if (rd_field(&s, &field, &wt, &v, &sub))
            return PB_BAD;
        if (field != SUM_VALUE || wt != WT_LEN)
            continue;
        const unsigned char *tag = NULL;
        size_t tlen = 0;
        int have = 0;
        float value = 0;
        struct pb val = sub, str;
        while (val.p < val.end) {
            if (rd_field(&val, &field, &wt, &v, &str))
                return PB_BAD;
            if (field == VAL_TAG && wt == WT_LEN) {
                tag = str.p;
                tlen = (size_t)(str.end - str.p);
            } else if (field == VAL_SIMPLE && wt == WT_FIXED32) {
                uint32_t u = (uint32_t)v;
                memcpy(&value, &u, 4);
                have = 1;
            }
        }
        if (have && tag) {
            char *t = sl_xstrndup((const char *)tag, tlen);
            int rc = fn(ctx, t, step, wall, value);
            free(t);
            if (rc)
                return rc;
        }
    }
    return 0;
}

/* 0, fn's non-zero value, or PB_BAD for a malformed event. */
static int parse_event(const unsigned char *data, size_t n, tb_scalar_fn fn, void *ctx)
{
    struct pb r = { data, data + n }, sub, summary = { NULL, NULL };
    int field, wt, start = 0;
    uint64_t v;
    int64_t step = 0;
    double wall = 0;
    while (r.p < r.end) {
        if (rd_field(&r, &field, &wt, &v, &sub))
            return PB_BAD;
        if (field == EV_WALL_TIME && wt == WT_FIXED64) {
            memcpy(&wall, &v, 8);
        } else if (field == EV_STEP && wt == WT_VARINT) {
            step = (int64_t)v;
        } else if (field == EV_SUMMARY && wt == WT_LEN) {
            summary = sub;
        } else if (field == EV_SESSION_LOG && wt == WT_LEN) {
            struct pb s = sub, x;
            while (s.p < s.end) {
                if (rd_field(&s, &field, &wt, &v, &x))
                    return PB_BAD;
                if (field == SLOG_STATUS && wt == WT_VARINT && v == 1)
                    start = 1;
            }
        }
    }
    if (start) {
        int rc = fn(ctx, NULL, step, wall, 0.0f);
        if (rc)
            return rc;
    }
    return summary.p ? parse_summary(summary, step, wall, fn, ctx) : 0;
}

int tb_parse(const void *data, size_t n, tb_scalar_fn fn, void *ctx)
{
    const unsigned char *p = data;
    size_t off = 0;
    while (n - off >= 12) {
        uint64_t len = rd64(p + off);
        if (rd32(p + off + 8) != tb_masked_crc(p + off, 8))
            return sl_err_set(SL_ERR_CORRUPT, "record at byte %zu: bad length checksum", off);
        if (len > n - off - 12 || n - off - 12 - len < 4)
            return 0; /* truncated last record */
        const unsigned char *d = p + off + 12;
        if (rd32(d + len) != tb_masked_crc(d, (size_t)len))
            return sl_err_set(SL_ERR_CORRUPT, "record at byte %zu: bad data checksum", off);
        int rc = parse_event(d, (size_t)len, fn, ctx);
        if (rc == PB_BAD)
            return sl_err_set(SL_ERR_CORRUPT, "record at byte %zu: not an Event protobuf", off);
        if (rc)
            return rc;
        off += 12 + (size_t)len + 4;
    }
    return 0;
}

/* ---- files ------------------------------------------------------------------------------ */

struct tb_writer {
    FILE *f;
    char *path;
    struct sl_buf rec;
};

static double wall_now(void)
{
    struct timeval tv;
    gettimeofday(&tv, NULL);
    return (double)tv.tv_sec + tv.tv_usec / 1e6;
}

static int writer_put(struct tb_writer *w)
{
    int rc = 0;
    if (fwrite(w->rec.data, 1, w->rec.len, w->f) != w->rec.len || fflush(w->f) != 0)
        rc = sl_err_set(SL_ERR_IO, "cannot write '%s': %s", w->path, strerror(errno));
    sl_buf_reset(&w->rec);
    return rc;
}

int tb_writer_open(struct tb_writer **out, const char *dir)
{
    *out = NULL;
    int rc = sl_mkdir_p(dir);
    if (rc)
        return rc;
    char host[256] = "localhost";
    if (gethostname(host, sizeof(host) - 1) != 0 || !host[0])
        snprintf(host, sizeof(host), "localhost");
    host[sizeof(host) - 1] = 0;
    for (char *c = host; *c; c++)
        if (*c == '/')
            *c = '_';
    long now = (long)time(NULL);
    char *path = sl_xasprintf("%s/events.out.tfevents.%010ld.%s", dir, now, host);
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd < 0 && errno == EEXIST) {
        free(path);
        path = sl_xasprintf("%s/events.out.tfevents.%010ld.%s.%ld", dir, now, host, (long)getpid());
        fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
    }
    FILE *f = fd >= 0 ? fdopen(fd, "wb") : NULL;
    if (!f) {
        rc = sl_err_set(SL_ERR_IO, "cannot create '%s': %s", path, strerror(errno));
        if (fd >= 0)
            close(fd);
        free(path);
        return rc;
    }
    struct tb_writer *w = sl_xcalloc(1, sizeof(*w));
    w->f = f;
    w->path = path;
    rc = tb_event_file_version(&w->rec, wall_now());
    if (!rc)
        rc = writer_put(w);
    if (rc) {
        tb_writer_close(w);
        return rc;
    }
    *out = w;
    return 0;
}

int tb_writer_scalar(struct tb_writer *w, int64_t step, const char *tag, float value)
{
    int rc = tb_event_scalar(&w->rec, wall_now(), step, tag, value);
    return rc ? rc : writer_put(w);
}

int tb_writer_session_start(struct tb_writer *w, int64_t step)
{
    int rc = tb_event_session_start(&w->rec, wall_now(), step);
    return rc ? rc : writer_put(w);
}

const char *tb_writer_path(const struct tb_writer *w)
{
    return w->path;
}

int tb_writer_close(struct tb_writer *w)
{
    if (!w)
        return 0;
    int rc = 0;
    if (fclose(w->f) != 0)
        rc = sl_err_set(SL_ERR_IO, "cannot close '%s': %s", w->path, strerror(errno));
    sl_buf_release(&w->rec);
    free(w->path);
    free(w);
    return rc;
}

static int name_cmp(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

int tb_read_dir(const char *dir, tb_scalar_fn fn, void *ctx)
{
    DIR *d = opendir(dir);
    if (!d)
        return errno == ENOENT
                   ? 0
                   : sl_err_set(SL_ERR_IO, "cannot open '%s': %s", dir, strerror(errno));
    char **names = NULL;
    size_t n = 0, cap = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (strncmp(e->d_name, "events.out.tfevents.", 20) != 0)
            continue;
        if (n == cap) {
            cap = cap ? 2 * cap : 8;
            names = sl_xrealloc(names, cap * sizeof(char *));
        }
        names[n++] = sl_xstrdup(e->d_name);
    }
    closedir(d);
    qsort(names, n, sizeof(char *), name_cmp);
    int rc = 0;
    for (size_t i = 0; i < n && !rc; i++) {
        char *p = sl_xasprintf("%s/%s", dir, names[i]);
        struct sl_buf b = SL_BUF_INIT;
        b.max = (size_t)1 << 30;
        rc = sl_read_file(p, &b);
        if (!rc) {
            rc = tb_parse(b.data, b.len, fn, ctx);
            if (rc < 0)
                sl_err_wrap(rc, "'%s': ", p);
        }
        sl_buf_release(&b);
        free(p);
    }
    for (size_t i = 0; i < n; i++)
        free(names[i]);
    free(names);
    return rc;
}
