/* One URL -> one partial file over libcurl: Range resume, retry with backoff, and the
 * bookkeeping that keeps a partial file consistent when servers ignore Range. */
#include "curate/download/fetch.h"

#include "core/dl.h"
#include "core/err.h"
#include "core/stage.h"

#include <curl/curl.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* libcurl is loaded when a download starts, not linked: with the 30 libraries it brings
 * (TLS, HTTP/2, LDAP, Kerberos, ...) it was a third of the dynamic linking every sluice
 * command paid at start-up, about 10 ms of CPU, though only `sluice download` uses it. */
static struct {
    void *lib;
    CURLcode (*global_init)(long);
    void (*global_cleanup)(void);
    CURL *(*easy_init)(void);
    void (*easy_cleanup)(CURL *);
    void (*easy_reset)(CURL *);
    CURLcode (*easy_setopt)(CURL *, CURLoption, ...);
    CURLcode (*easy_perform)(CURL *);
    CURLcode (*easy_getinfo)(CURL *, CURLINFO, ...);
    const char *(*easy_strerror)(CURLcode);
    struct curl_slist *(*slist_append)(struct curl_slist *, const char *);
    void (*slist_free_all)(struct curl_slist *);
} cu;

/* A row of load_curl's table: each field of cu is the function curl_FIELD. */
/* clang-format off */
#define SYM(f) { "curl_" #f, (void **)&cu.f }
/* clang-format on */

static int load_curl(void)
{
    static const char *const names[] = { "libcurl.so.4", "libcurl-gnutls.so.4" };
    const struct sl_dl_sym syms[] = {
        SYM(global_init),   SYM(global_cleanup), SYM(easy_init),      SYM(easy_cleanup),
        SYM(easy_reset),    SYM(easy_setopt),    SYM(easy_perform),   SYM(easy_getinfo),
        SYM(easy_strerror), SYM(slist_append),   SYM(slist_free_all),
    };
#undef SYM
    return sl_dl_load(&cu.lib, names, sizeof(names) / sizeof(names[0]), syms,
                      sizeof(syms) / sizeof(syms[0]),
                      "downloading needs libcurl (Debian package libcurl4)", SL_ERR_NET);
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

/* State of one attempt. */
struct attempt {
    int fd;
    uint64_t offset; /* bytes in the file when the attempt started */
    uint64_t written;
    long status;                      /* status of the latest response head */
    int64_t range_start, range_total; /* from Content-Range (-1: none) */
    double retry_after;
    char etag[256], modified[64]; /* validators of the latest response head ("" if none) */
    const char *validator_path;
    int decided; /* the first body byte decided append / truncate / discard */
    int discard; /* body of an error response: not written */
    int io_error;
    const struct fetch_opts *o;
};

/* A header's value without surrounding blanks and CRLF into out ("" when it does not fit
 * or holds control bytes). */
static void header_value(const char *v, size_t n, char *out, size_t cap)
{
    while (n && (*v == ' ' || *v == '\t'))
        v++, n--;
    while (n && (v[n - 1] == '\r' || v[n - 1] == '\n' || v[n - 1] == ' ' || v[n - 1] == '\t'))
        n--;
    out[0] = 0;
    if (n >= cap)
        return;
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)v[i] < 0x20 || v[i] == 0x7f)
            return;
    memcpy(out, v, n);
    out[n] = 0;
}

/* The validator of a partial file: kept next to it, written when its first byte arrives. */
static char *validator_path(const char *part_path)
{
    size_t n = strlen(part_path);
    char *p = malloc(n + 11);
    if (p) {
        memcpy(p, part_path, n);
        memcpy(p + n, ".validator", 11);
    }
    return p;
}

static void save_validator(struct attempt *a)
{
    if (!a->validator_path)
        return;
    const char *v = a->etag[0] ? a->etag : a->modified;
    if (!v[0]) {
        unlink(a->validator_path); /* nothing to compare a resume against */
        return;
    }
    /* a torn write only makes the next If-Range fail to match: the file starts over */
    int fd = open(a->validator_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
    if (fd < 0)
        return;
    size_t n = strlen(v);
    if (write(fd, v, n) != (ssize_t)n) {
        close(fd);
        unlink(a->validator_path);
        return;
    }
    close(fd);
}

/* The validator recorded for a partial file into out, or "" when there is none. */
static void load_validator(const char *path, char *out, size_t cap)
{
    out[0] = 0;
    if (!path)
        return;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return;
    ssize_t n = read(fd, out, cap - 1);
    close(fd);
    out[n > 0 ? n : 0] = 0;
    for (ssize_t i = 0; i < n; i++)
        if ((unsigned char)out[i] < 0x20) {
            out[0] = 0;
            return;
        }
}

int fetch_scheme_ok(const char *url)
{
    return !strncasecmp(url, "http://", 7) || !strncasecmp(url, "https://", 8);
}

void fetch_forget(const char *part_path)
{
    char *v = validator_path(part_path);
    if (v)
        unlink(v);
    free(v);
}

static size_t on_header(char *p, size_t size, size_t n, void *ctx)
{
    struct attempt *a = ctx;
    size_t len = size * n;
    if (len >= 5 && !strncmp(p, "HTTP/", 5)) {
        /* a new response (after a redirect or 100-continue): forget the last one */
        const char *sp = memchr(p, ' ', len);
        a->status = sp ? strtol(sp + 1, NULL, 10) : 0;
        a->range_start = a->range_total = -1;
        a->retry_after = 0;
        a->etag[0] = a->modified[0] = 0;
    } else if (len > 5 && !strncasecmp(p, "etag:", 5)) {
        header_value(p + 5, len - 5, a->etag, sizeof(a->etag));
        if (!strncmp(a->etag, "W/", 2))
            a->etag[0] = 0; /* a weak ETag cannot be used with If-Range */
    } else if (len > 14 && !strncasecmp(p, "last-modified:", 14)) {
        header_value(p + 14, len - 14, a->modified, sizeof(a->modified));
    } else if (len > 14 && !strncasecmp(p, "content-range:", 14)) {
        /* bytes START-END/TOTAL or bytes * / TOTAL */
        const char *q = p + 14;
        while (*q == ' ')
            q++;
        if (!strncasecmp(q, "bytes", 5)) {
            q += 5;
            while (*q == ' ')
                q++;
            if (*q == '*')
                a->range_start = -1;
            else
                a->range_start = strtoll(q, NULL, 10);
            const char *slash = memchr(q, '/', len - (size_t)(q - p));
            if (slash && slash[1] != '*')
                a->range_total = strtoll(slash + 1, NULL, 10);
        }
    } else if (len > 12 && !strncasecmp(p, "retry-after:", 12)) {
        double v = strtod(p + 12, NULL);
        if (v > 0 && v < 3600)
            a->retry_after = v;
    }
    return len;
}

static size_t on_body(char *p, size_t size, size_t n, void *ctx)
{
    struct attempt *a = ctx;
    size_t len = size * n;
    if (!a->decided) {
        a->decided = 1;
        if (a->status == 206 && a->range_start == (int64_t)a->offset && a->offset > 0) {
            /* continues the partial file */
        } else if (a->status == 200 || (a->status == 206 && a->range_start == 0)) {
            /* the whole resource (again, when it changed or Range was ignored): start over */
            if (a->offset && ftruncate(a->fd, 0) != 0)
                a->io_error = errno;
            if (a->offset && lseek(a->fd, 0, SEEK_SET) < 0)
                a->io_error = errno;
            a->offset = 0;
            save_validator(a);
        } else {
            a->discard = 1; /* an error page, or a range we did not ask for */
        }
    }
    if (a->discard)
        return len;
    size_t off = 0;
    while (off < len) {
        ssize_t w = write(a->fd, p + off, len - off);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            a->io_error = errno;
            return 0; /* aborts the transfer */
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

static uint64_t file_size(const char *path)
{
    struct stat sb;
    return stat(path, &sb) == 0 ? (uint64_t)sb.st_size : 0;
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
    /* Range, and If-Range with the validator of the response the partial file began with: a
     * changed resource (or a server that ignores Range) answers 200 with the whole of it,
     * and on_body starts over */
    snprintf(ab->range, sizeof(ab->range), "%llu-", (unsigned long long)a->offset);
    cu.easy_setopt(h, CURLOPT_RANGE, ab->range);
    char v[256];
    load_validator(a->validator_path, v, sizeof(v));
    if (v[0]) {
        snprintf(ab->if_range, sizeof(ab->if_range), "If-Range: %s", v);
        ab->hdrs = cu.slist_append(NULL, ab->if_range);
        cu.easy_setopt(h, CURLOPT_HTTPHEADER, ab->hdrs);
    }
}

/* Start the partial file over (after a 416 or a range not asked for). */
static int start_over(const char *part_path)
{
    if (truncate(part_path, 0) != 0)
        return sl_err_set(SL_ERR_IO, "cannot truncate '%s': %s", part_path, strerror(errno));
    return 0;
}

/* What an attempt's answer means: the download is complete (0, *retry 0), worth another
 * attempt (0, *retry 1, why says what happened), or failed (the error). */
static int judge_attempt(CURLcode cc, long status, const struct attempt *a, const char *url,
                         const char *part_path, const char *errbuf, char *why, size_t why_n,
                         struct fetch_result *r, int *retry)
{
    const struct fetch_opts *o = a->o;
    /* what went wrong in libcurl's words */
    const char *detail = errbuf[0]        ? errbuf
                         : cc != CURLE_OK ? cu.easy_strerror(cc)
                                          : "unexpected response";
    int rc;
    *retry = 0;
    if (cc == CURLE_OK && (status == 200 || status == 206) && !a->discard) {
        r->size = file_size(part_path);
        return 0; /* complete */
    }
    if (status == 416 && a->offset) {
        /* nothing past our end: complete when the total matches, else start over */
        if (a->range_total == (int64_t)a->offset) {
            r->size = a->offset;
            return 0;
        }
        if ((rc = start_over(part_path)))
            return rc;
        snprintf(why, why_n, "HTTP 416 for a range past the end; starting over");
    } else if (cc == CURLE_OK && a->discard && status == 206) {
        /* a range we did not ask for */
        if ((rc = start_over(part_path)))
            return rc;
        snprintf(why, why_n, "server sent an unexpected range; starting over");
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
    CURL *h = cu.easy_init();
    if (!h)
        return sl_err_set(SL_ERR_NOMEM, "cannot start a libcurl handle");
    struct attempt_bufs ab;
    snprintf(ab.ua, sizeof(ab.ua), "sluice/%s", sl_version());
    char *vpath = validator_path(part_path);
    int rc = 0;
    double wait = o->retry_wait > 0 ? o->retry_wait : 1.0;
    for (int attempt = 0;; attempt++) {
        struct attempt a;
        memset(&a, 0, sizeof(a));
        a.o = o;
        a.validator_path = vpath;
        a.range_start = a.range_total = -1;
        a.offset = file_size(part_path);
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
        if (close(a.fd) != 0 && !a.io_error)
            a.io_error = errno;
        if (a.io_error) {
            rc = sl_err_set(SL_ERR_IO, "cannot write '%s': %s", part_path, strerror(a.io_error));
            break;
        }
        char why[CURL_ERROR_SIZE + 64];
        int retry;
        rc = judge_attempt(cc, status, &a, url, part_path, ab.errbuf, why, sizeof(why), r, &retry);
        if (rc || !retry)
            break;
        if (attempt >= o->retries) {
            rc = sl_err_set(SL_ERR_NET,
                            "cannot download '%s': %s (gave up after %d attempts)\n"
                            "hint: run the same command again to resume; --retries N tries longer",
                            url, why, attempt + 1);
            break;
        }
        double w = a.retry_after > wait ? a.retry_after : wait;
        if (o->on_retry)
            o->on_retry(o->ctx, attempt + 1, w, why);
        sleep_s(w);
        wait = wait * 2 > 60 ? 60 : wait * 2;
    }
    cu.easy_cleanup(h);
    free(vpath);
    return rc;
}
