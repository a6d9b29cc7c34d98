/* One URL -> one partial file over libcurl: Range resume with If-Range, retry with backoff,
 * and the checks of each answer (range, size, version) that keep a server that ignores
 * Range, or lies, from leaving a short, stale or spliced file. */
#include "curate/download/fetch.h"

#include "core/dl.h"
#include "core/err.h"
#include "core/file.h"
#include "core/http.h"
#include "core/stage.h"
#include "curate/download/part_meta.h"
#include "curate/download/resp_head.h"

#include <curl/curl.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

/* libcurl, loaded when a download starts (core/http.h) */
#define cu sl_curl

static int load_curl(void)
{
    return sl_curl_load("downloading");
}

int fetch_global_init(void)
{
    int rc = load_curl();
    if (rc)
        return rc;
    if (cu.global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK)
        return sl_err_set(SL_ERR_NET, "cannot initialise libcurl");
    return 0;
}

void fetch_global_cleanup(void)
{
    if (cu.lib)
        cu.global_cleanup();
}

/* Body bytes a response did not announce (a 200 without Content-Length, chunked). */
#define LEN_UNKNOWN UINT64_MAX

/* libcurl's code for a response header over its limits: CURLE_TOO_LARGE from 8.6 on; older
 * versions, such as 7.88, say CURLE_OUT_OF_MEMORY for a line over 100 KB. */
#define CURLE_TOO_LARGE_CODE 100

/* What an attempt does with the final response's body. */
enum body_use {
    BODY_UNDECIDED,
    BODY_APPEND,    /* a 206 that continues the partial file */
    BODY_FROM_ZERO, /* the file from its first byte: the partial file starts over */
    BODY_DISCARD,   /* an error page: read, not written */
    BODY_REFUSED,   /* an answer that breaks a rule: the transfer stops, fix applies */
};

/* What a refused answer does to the partial file before the next attempt. */
enum refusal_fix {
    FIX_KEEP,       /* nothing: it is as it was before the answer */
    FIX_TRIM,       /* the bytes of this answer are cut off again */
    FIX_START_OVER, /* emptied, validators forgotten: the next attempt asks the whole file */
};

/* State of one attempt. */
struct attempt {
    int fd;
    uint64_t offset;  /* bytes in the partial file when the attempt began: Range asked (0: none) */
    uint64_t base;    /* where this answer's body goes in the file */
    uint64_t written; /* body bytes written */
    uint64_t expect;  /* body bytes the answer announced (LEN_UNKNOWN: not said) */
    struct resp_head head; /* of the latest response */
    struct part_meta meta; /* the partial file's validators */
    int have_meta;
    enum body_use use;
    enum refusal_fix fix;
    int changed;    /* the refusal is another version of the file: a restart */
    char why[512];  /* what the server said, for a refusal or a restart */
    int head_error; /* the head was over RESP_HEAD_MAX */
    int io_error;   /* errno of a failed write */
    char io_msg[256];
    const char *part_path;
    const struct fetch_opts *o;
    struct fetch_result *r;
};

int fetch_scheme_ok(const char *url)
{
    return !strncasecmp(url, "http://", 7) || !strncasecmp(url, "https://", 8);
}

char *fetch_url_display(const char *url)
{
    return sl_url_display(url);
}

void fetch_forget(const char *part_path)
{
    part_meta_remove(part_path);
}

static size_t on_header(char *p, size_t size, size_t n, void *ctx)
{
    struct attempt *a = ctx;
    size_t len = size * n;
    if (resp_head_line(&a->head, p, len) != 0) {
        a->head_error = 1;
        return 0; /* stops the transfer */
    }
    return len;
}

/* Refuse the answer: the transfer stops, fix applies, why says what the server said. */
__attribute__((format(printf, 3, 4))) static void refuse(struct attempt *a, enum refusal_fix fix,
                                                         const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(a->why, sizeof(a->why), fmt, ap);
    va_end(ap);
    a->use = BODY_REFUSED;
    a->fix = fix;
}

/* "bytes 150000-" or "the whole file": what the attempt asked for. */
static const char *asked(const struct attempt *a, char *buf, size_t n)
{
    if (!a->offset)
        return "the whole file";
    snprintf(buf, n, "bytes %llu-", (unsigned long long)a->offset);
    return buf;
}

/* The whole file's size by the latest answer: a 200's Content-Length, a 206's total; -1. */
static int64_t answer_total(const struct resp_head *h)
{
    if (h->status == 200)
        return h->chunked ? -1 : h->content_length;
    return h->range_ok ? h->range_total : -1;
}

/* How the answer's version compares with the partial file's. */
enum version { SAME_OR_UNKNOWN, OTHER_VERSION, CONTRADICTS };

/* OTHER_VERSION when a validator differs (the ETag when both have one, else
 * Last-Modified), or, with none to compare, the size does; CONTRADICTS when the validators
 * match but the size does not. was says how. */
static enum version compare_version(const struct attempt *a, char *was, size_t n)
{
    const struct part_meta *m = &a->meta;
    const struct resp_head *h = &a->head;
    int64_t total = answer_total(h);
    int vd = -1; /* validators: -1 not comparable, 0 equal, 1 differ */
    if (!a->have_meta || !a->offset)
        return SAME_OR_UNKNOWN;
    if (m->etag[0] && h->etag[0]) {
        vd = strcmp(m->etag, h->etag) != 0;
        if (vd)
            snprintf(was, n, "ETag %s, now %s", m->etag, h->etag);
    } else if (m->modified[0] && h->modified[0]) {
        vd = strcmp(m->modified, h->modified) != 0;
        if (vd)
            snprintf(was, n, "Last-Modified %s, now %s", m->modified, h->modified);
    }
    if (vd == 1)
        return OTHER_VERSION;
    if (m->size >= 0 && total >= 0 && total != m->size) {
        snprintf(was, n, "%lld bytes, now %lld", (long long)m->size, (long long)total);
        return vd == 0 ? CONTRADICTS : OTHER_VERSION;
    }
    return SAME_OR_UNKNOWN;
}

/* The body starts at byte 0: empty the partial file and record the answer's validators. */
static void from_zero(struct attempt *a)
{
    const struct resp_head *h = &a->head;
    a->use = BODY_FROM_ZERO;
    a->base = 0;
    if (a->offset && ftruncate(a->fd, 0) != 0) { /* O_APPEND: writes go to the new end */
        a->io_error = errno;
        snprintf(a->io_msg, sizeof(a->io_msg), "cannot truncate '%s'", a->part_path);
        return;
    }
    struct part_meta m;
    memset(&m, 0, sizeof(m));
    memcpy(m.etag, h->etag, sizeof(m.etag));
    memcpy(m.modified, h->modified, sizeof(m.modified));
    m.size = answer_total(h);
    if (part_meta_save(a->part_path, &m) != 0) {
        a->io_error = EIO;
        snprintf(a->io_msg, sizeof(a->io_msg), "%s", sl_err_msg());
    }
}

/* A 200 answer: the whole file, from byte 0. empty: it ended without a body. */
static void decide_200(struct attempt *a, enum version v, const char *was, int empty)
{
    char buf[48];
    if (a->offset && empty && v != OTHER_VERSION) {
        refuse(a, FIX_KEEP,
               "HTTP 200 with an empty body answering a request for %s, and no validator that "
               "shows another version (ETag %s, Last-Modified %s); the partial file is kept",
               asked(a, buf, sizeof(buf)), a->head.etag[0] ? a->head.etag : "none",
               a->head.modified[0] ? a->head.modified : "none");
        return;
    }
    if (a->offset) {
        if (v == OTHER_VERSION)
            snprintf(a->why, sizeof(a->why),
                     "the file changed on the server since the partial file began (%s); "
                     "starting over",
                     was);
        else
            snprintf(a->why, sizeof(a->why),
                     "HTTP 200 (the whole file) answering a request for %s; starting over",
                     asked(a, buf, sizeof(buf)));
        a->r->restarts++;
        if (a->o->on_restart)
            a->o->on_restart(a->o->ctx, a->why);
    }
    a->expect = a->head.chunked || a->head.content_length < 0 ? LEN_UNKNOWN
                                                              : (uint64_t)a->head.content_length;
    from_zero(a);
}

/* Decide what the final answer means for the partial file, before its first body byte is
 * written (or at its end, empty, when it had no body). */
static void decide(struct attempt *a, int empty)
{
    const struct resp_head *h = &a->head;
    char was[600], buf[48];
    if (h->status != 200 && h->status != 206) {
        a->use = BODY_DISCARD; /* an error page (or a head we cannot read: judged later) */
        return;
    }
    enum version v = compare_version(a, was, sizeof(was));
    if (h->status == 200) {
        decide_200(a, v, was, empty);
    } else if (!h->has_range) {
        refuse(a, FIX_KEEP, "HTTP 206 without a Content-Range");
    } else if (!h->range_ok || h->range_first < 0) {
        refuse(a, FIX_KEEP, "HTTP 206 with an unreadable Content-Range '%s'", h->range_text);
    } else if (v == OTHER_VERSION) {
        refuse(a, FIX_START_OVER,
               "the file changed on the server since the partial file began (%s); starting over",
               was);
        a->changed = 1;
    } else if (v == CONTRADICTS) {
        refuse(a, FIX_START_OVER,
               "HTTP 206 with Content-Range '%s' for the same version as the partial file "
               "but another size (%s); starting over",
               h->range_text, was);
    } else if ((uint64_t)h->range_first != a->offset) {
        refuse(a, FIX_START_OVER,
               "HTTP 206 with Content-Range '%s' answering a request for %s; "
               "starting over",
               h->range_text, asked(a, buf, sizeof(buf)));
    } else {
        a->expect = (uint64_t)(h->range_last - h->range_first + 1);
        if (a->offset) {
            a->use = BODY_APPEND;
            a->base = a->offset;
        } else {
            from_zero(a);
        }
    }
}

static size_t on_body(char *p, size_t size, size_t n, void *ctx)
{
    struct attempt *a = ctx;
    size_t len = size * n;
    if (a->use == BODY_UNDECIDED)
        decide(a, 0);
    if (a->use == BODY_DISCARD)
        return len;
    if (a->use == BODY_REFUSED || a->io_error)
        return 0; /* stops the transfer */
    if (a->expect != LEN_UNKNOWN && len > a->expect - a->written) {
        refuse(a, FIX_TRIM, "HTTP %ld sent more than the %llu bytes it announced%s%s%s",
               a->head.status, (unsigned long long)a->expect,
               a->head.status == 206 ? " (Content-Range '" : "",
               a->head.status == 206 ? a->head.range_text : "", a->head.status == 206 ? "')" : "");
        return 0;
    }
    size_t off = 0;
    while (off < len) {
        ssize_t w = write(a->fd, p + off, len - off);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            a->io_error = errno;
            snprintf(a->io_msg, sizeof(a->io_msg), "cannot write '%s'", a->part_path);
            return 0;
        }
        off += (size_t)w;
    }
    a->written += len;
    if (a->o->on_bytes)
        a->o->on_bytes(a->o->ctx, len);
    return len;
}

static void sleep_s(double s)
{
    struct timespec ts = { (time_t)s, (long)((s - (double)(time_t)s) * 1e9) };
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
}

static int transient_curl(CURLcode c)
{
    switch (c) {
    case CURLE_COULDNT_CONNECT:
    case CURLE_COULDNT_RESOLVE_HOST:
    case CURLE_COULDNT_RESOLVE_PROXY:
    case CURLE_PARTIAL_FILE:
    case CURLE_RECV_ERROR:
    case CURLE_SEND_ERROR:
    case CURLE_OPERATION_TIMEDOUT:
    case CURLE_GOT_NOTHING:
    case CURLE_SSL_CONNECT_ERROR:
    case CURLE_HTTP2:
    case CURLE_HTTP2_STREAM:
    case CURLE_HTTP3:
        return 1;
    default:
        return 0;
    }
}

/* The buffers one attempt's handle points to: they live until the transfer ends. */
struct attempt_bufs {
    char ua[64];
    char errbuf[CURL_ERROR_SIZE];
    char range[32];
    char if_range[300];
    struct curl_slist *hdrs; /* freed after the transfer */
};

/* Set up the handle for one attempt: what to fetch and how, and, when a partial file is
 * there, a Range with If-Range. */
static void attempt_setup(CURL *h, struct attempt *a, const char *url, struct attempt_bufs *ab)
{
    const struct fetch_opts *o = a->o;
    cu.easy_reset(h);
    ab->errbuf[0] = 0;
    ab->hdrs = NULL;
    cu.easy_setopt(h, CURLOPT_URL, url);
    /* http and https only, also after redirects (no gopher://, file://, ftp://) */
    cu.easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
    cu.easy_setopt(h, CURLOPT_REDIR_PROTOCOLS_STR, "http,https");
    cu.easy_setopt(h, CURLOPT_FOLLOWLOCATION, 1L);
    cu.easy_setopt(h, CURLOPT_MAXREDIRS, 10L);
    cu.easy_setopt(h, CURLOPT_USERAGENT, o->user_agent ? o->user_agent : ab->ua);
    cu.easy_setopt(h, CURLOPT_CONNECTTIMEOUT, o->connect_timeout > 0 ? o->connect_timeout : 30L);
    cu.easy_setopt(h, CURLOPT_LOW_SPEED_LIMIT, o->min_speed > 0 ? o->min_speed : 1L);
    cu.easy_setopt(h, CURLOPT_LOW_SPEED_TIME, o->stall_timeout > 0 ? o->stall_timeout : 60L);
    cu.easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    cu.easy_setopt(h, CURLOPT_ERRORBUFFER, ab->errbuf);
    cu.easy_setopt(h, CURLOPT_HEADERFUNCTION, on_header);
    cu.easy_setopt(h, CURLOPT_HEADERDATA, a);
    cu.easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body);
    cu.easy_setopt(h, CURLOPT_WRITEDATA, a);
    /* files are stored as served: no transparent decompression */
    cu.easy_setopt(h, CURLOPT_HTTP_CONTENT_DECODING, 0L);
    if (!a->offset)
        return;
    /* Range, and If-Range with the validator of the answer the partial file began with: a
     * changed file (or a server that ignores Range) answers 200 with the whole of it, and
     * decide() starts over */
    snprintf(ab->range, sizeof(ab->range), "%llu-", (unsigned long long)a->offset);
    cu.easy_setopt(h, CURLOPT_RANGE, ab->range);
    const char *v = a->meta.etag[0] ? a->meta.etag : a->meta.modified;
    if (v[0]) {
        snprintf(ab->if_range, sizeof(ab->if_range), "If-Range: %s", v);
        ab->hdrs = cu.slist_append(NULL, ab->if_range);
        cu.easy_setopt(h, CURLOPT_HTTPHEADER, ab->hdrs);
    }
}

/* Start the partial file over: empty, and its validators forgotten. */
static int start_over(const char *part_path)
{
    if (truncate(part_path, 0) != 0)
        return sl_err_set(SL_ERR_IO, "cannot truncate '%s': %s", part_path, strerror(errno));
    part_meta_remove(part_path);
    return 0;
}

/* A refused answer: apply its fix to the partial file, count it; then worth a retry. */
static int judge_refusal(struct attempt *a, char *why, size_t why_n)
{
    int rc = 0;
    if (a->fix == FIX_TRIM && truncate(a->part_path, (off_t)a->base) != 0)
        rc = sl_err_set(SL_ERR_IO, "cannot truncate '%s': %s", a->part_path, strerror(errno));
    else if (a->fix == FIX_START_OVER)
        rc = start_over(a->part_path);
    if (a->changed)
        a->r->restarts++;
    else
        a->r->bad_responses++;
    if (a->fix == FIX_START_OVER && !a->changed)
        a->r->restarts++;
    snprintf(why, why_n, "%s", a->why);
    return rc;
}

/* A 200 or 206 taken: complete (0, *retry 0) when the file has the whole size the server
 * gave, else worth another attempt for the rest. */
static int judge_taken(struct attempt *a, char *why, size_t why_n, int *retry)
{
    const struct resp_head *h = &a->head;
    uint64_t size = sl_file_size(a->part_path);
    int64_t total = answer_total(h);
    char buf[48];
    *retry = 1;
    if (a->expect != LEN_UNKNOWN && a->written < a->expect) {
        /* the body ended where its Content-Length said, short of its range */
        snprintf(why, why_n, "HTTP %ld with Content-Range '%s' ended after %llu of its %llu bytes",
                 h->status, h->range_text, (unsigned long long)a->written,
                 (unsigned long long)a->expect);
        a->r->bad_responses++;
    } else if (total >= 0 && size < (uint64_t)total) {
        snprintf(why, why_n,
                 "HTTP 206 with Content-Range '%s' answering a request for %s: %llu of %lld "
                 "bytes; resuming at byte %llu",
                 h->range_text, asked(a, buf, sizeof(buf)), (unsigned long long)size,
                 (long long)total, (unsigned long long)size);
        a->r->bad_responses++;
    } else if (total >= 0 && size > (uint64_t)total) {
        /* only when something else wrote to the partial file meanwhile */
        int rc = start_over(a->part_path);
        if (rc)
            return rc;
        snprintf(why, why_n,
                 "the partial file holds %llu bytes, more than the %lld of the file; "
                 "starting over",
                 (unsigned long long)size, (long long)total);
        a->r->restarts++;
    } else {
        a->r->size = size;
        *retry = 0;
    }
    return 0;
}

/* What an attempt's answer means: the download is complete (0, *retry 0), worth another
 * attempt (0, *retry 1, why says what happened), or failed (the error). */
static int judge_attempt(CURLcode cc, long status, struct attempt *a, const char *url,
                         const char *errbuf, char *why, size_t why_n, int *retry)
{
    const struct fetch_opts *o = a->o;
    /* what went wrong in libcurl's words */
    const char *detail = errbuf[0]        ? errbuf
                         : cc != CURLE_OK ? cu.easy_strerror(cc)
                                          : "unexpected response";
    int rc;
    *retry = 0;
    if (a->head_error)
        return sl_err_set(SL_ERR_NET,
                          "cannot download '%s': the response header is over %u KiB (HTTP %ld)\n"
                          "hint: the server, or a proxy in between, sends a malformed response; "
                          "retrying would not help",
                          url, RESP_HEAD_MAX >> 10, a->head.status);
    if ((cc == CURLE_OUT_OF_MEMORY || (int)cc == CURLE_TOO_LARGE_CODE) && !a->head.done)
        return sl_err_set(SL_ERR_NET,
                          "cannot download '%s': a line of the response header is over "
                          "libcurl's limit (libcurl: %s)\nhint: the server, or a proxy in "
                          "between, sends a malformed response; retrying would not help",
                          url, detail);
    if (a->io_error)
        return sl_err_set(SL_ERR_IO, "%s: %s", a->io_msg, strerror(a->io_error));
    if (a->use == BODY_UNDECIDED && cc == CURLE_OK && (status == 200 || status == 206))
        decide(a, 1); /* no body at all */
    if (a->io_error)
        return sl_err_set(SL_ERR_IO, "%s: %s", a->io_msg, strerror(a->io_error));
    if (a->use == BODY_REFUSED) {
        if ((rc = judge_refusal(a, why, why_n)))
            return rc;
    } else if (cc == CURLE_OK && (a->use == BODY_APPEND || a->use == BODY_FROM_ZERO)) {
        return judge_taken(a, why, why_n, retry);
    } else if (cc == CURLE_OK && (status == 200 || status == 206)) {
        snprintf(why, why_n, "HTTP %ld with a status line sluice cannot read", status);
        a->r->bad_responses++;
    } else if (status == 416 && a->offset) {
        /* nothing past our end: complete when the total matches, else start over */
        const struct resp_head *h = &a->head;
        if (h->range_ok && h->range_first < 0 && h->range_total == (int64_t)a->offset &&
            (!a->have_meta || a->meta.size < 0 || a->meta.size == h->range_total)) {
            a->r->size = a->offset;
            return 0;
        }
        if ((rc = start_over(a->part_path)))
            return rc;
        a->r->restarts++;
        snprintf(why, why_n, "HTTP 416 for a range past the end%s%s%s; starting over",
                 h->has_range ? " (Content-Range '" : "", h->range_text, h->has_range ? "')" : "");
    } else if (status == 404 || status == 410) {
        return sl_err_set(SL_ERR_NOTFOUND, "cannot download '%s': HTTP %ld (not found)", url,
                          status);
    } else if (status >= 500 || status == 408 || status == 429) {
        snprintf(why, why_n, "HTTP %ld", status);
    } else if (status >= 400) {
        return sl_err_set(SL_ERR_NET, "cannot download '%s': HTTP %ld%s", url, status,
                          status == 401 || status == 403
                              ? "\nhint: the server needs credentials or refuses this client"
                              : "");
    } else if (cc == CURLE_OPERATION_TIMEDOUT && a->written + a->offset > 0) {
        snprintf(why, why_n, "slower than %ld bytes/s for %ld s (%s)",
                 o->min_speed > 0 ? o->min_speed : 1L,
                 o->stall_timeout > 0 ? o->stall_timeout : 60L, detail);
    } else if (cc == CURLE_UNSUPPORTED_PROTOCOL) {
        return sl_err_set(SL_ERR_NET,
                          "cannot download '%s': %s\nhint: sluice fetches http and "
                          "https only, also when redirected",
                          url, detail);
    } else if (cc != CURLE_OK && transient_curl(cc)) {
        snprintf(why, why_n, "%s", detail);
    } else if (cc == CURLE_OK) {
        return sl_err_set(SL_ERR_NET, "cannot download '%s': HTTP %ld (unexpected status)", url,
                          status);
    } else {
        return sl_err_set(SL_ERR_NET, "cannot download '%s': %s", url, detail);
    }
    *retry = 1;
    return 0;
}

int fetch_url(const char *url, const char *part_path, const struct fetch_opts *o,
              struct fetch_result *r)
{
    memset(r, 0, sizeof(*r));
    char *shown = fetch_url_display(url);
    CURL *h = cu.easy_init();
    if (!h || !shown) {
        free(shown);
        if (h)
            cu.easy_cleanup(h);
        return sl_err_set(SL_ERR_NOMEM, "cannot start a libcurl handle");
    }
    struct attempt_bufs ab;
    snprintf(ab.ua, sizeof(ab.ua), "sluice/%s", sl_version());
    int rc = 0;
    double wait = o->retry_wait > 0 ? o->retry_wait : 1.0;
    for (int attempt = 0;; attempt++) {
        struct attempt a;
        memset(&a, 0, sizeof(a));
        a.o = o;
        a.r = r;
        a.part_path = part_path;
        resp_head_init(&a.head);
        a.expect = LEN_UNKNOWN;
        a.offset = sl_file_size(part_path);
        a.have_meta = part_meta_load(part_path, &a.meta);
        a.fd = open(part_path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0666);
        if (a.fd < 0) {
            rc = sl_err_set(SL_ERR_IO, "cannot write '%s': %s", part_path, strerror(errno));
            break;
        }
        if (a.offset)
            r->resumed = 1;
        attempt_setup(h, &a, url, &ab);
        CURLcode cc = cu.easy_perform(h);
        cu.slist_free_all(ab.hdrs);
        long status = 0;
        cu.easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
        r->status = status;
        r->attempts = attempt + 1;
        r->received += a.written;
        if (close(a.fd) != 0 && !a.io_error) {
            a.io_error = errno;
            snprintf(a.io_msg, sizeof(a.io_msg), "cannot write '%s'", part_path);
        }
        char why[1024];
        int retry;
        rc = judge_attempt(cc, status, &a, shown, ab.errbuf, why, sizeof(why), &retry);
        if (rc || !retry)
            break;
        if (attempt >= o->retries) {
            rc = sl_err_set(SL_ERR_NET,
                            "cannot download '%s': %s (gave up after %d attempts)\n"
                            "hint: run the same command again to resume; --retries N tries longer",
                            shown, why, attempt + 1);
            break;
        }
        double w = a.head.retry_after > wait ? a.head.retry_after : wait;
        if (o->on_retry)
            o->on_retry(o->ctx, attempt + 1, w, why);
        sleep_s(w);
        wait = wait * 2 > 60 ? 60 : wait * 2;
    }
    cu.easy_cleanup(h);
    free(shown);
    return rc;
}
