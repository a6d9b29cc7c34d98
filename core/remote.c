/* Remote objects over libcurl: targets, one request with retries and resumed bodies (reads
 * and writes), range reads, the sequential source, and the expansion of operands (the
 * listings of S3 in core/remote_s3.c, of the hub in core/remote_hf.c). */
#include "core/remote.h"

#include "core/alloc.h"
#include "core/err.h"
#include "core/remote_internal.h"
#include "core/stream.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

int sl_remote_is_url(const char *s)
{
    return !strncasecmp(s, "s3://", 5) || !strncasecmp(s, "hf://", 5) ||
           !strncasecmp(s, "http://", 7) || !strncasecmp(s, "https://", 8);
}

int rm_target_init(struct rm_target *t, const char *url)
{
    memset(t, 0, sizeof(*t));
    t->url = sl_xstrdup(url);
    t->shown = sl_url_display(url);
    if (!t->shown)
        t->shown = sl_xstrdup("(a URL)");
    if (!strncasecmp(url, "s3://", 5)) {
        t->kind = RM_S3;
        const char *b = url + 5, *slash = strchr(b, '/');
        t->bucket = slash ? sl_xstrndup(b, (size_t)(slash - b)) : sl_xstrdup(b);
        if (!t->bucket[0]) {
            rm_target_release(t);
            return sl_err_set(SL_ERR_USAGE,
                              "cannot read '%s': no bucket named\nhint: "
                              "s3://BUCKET/KEY or s3://BUCKET/PREFIX/",
                              url);
        }
        t->http = rm_s3_http_url(t->bucket, slash ? slash + 1 : "", NULL);
    } else if (!strncasecmp(url, "hf://", 5)) {
        t->kind = RM_HF;
        char *repo, *rev, *path;
        int rc = rm_hf_parse(url, &repo, &rev, &path);
        if (rc) {
            rm_target_release(t);
            return rc;
        }
        char *ep = rm_hf_endpoint();
        t->http = sl_xasprintf("%s/datasets/%s/resolve/%s/%s", ep, repo, rev, path);
        free(ep);
        free(repo);
        free(rev);
        free(path);
    } else {
        t->kind = RM_HTTP;
        t->http = sl_xstrdup(url);
    }
    return 0;
}

void rm_target_release(struct rm_target *t)
{
    free(t->url);
    free(t->shown);
    free(t->http);
    free(t->bucket);
    memset(t, 0, sizeof(*t));
}

/* ---- one request -------------------------------------------------------------------- */

/* An error page is kept up to this much for its words (S3's <Code> and <Message>). */
#define ERR_BODY_MAX 8192

struct xfer {
    struct rm_resp *resp;
    char *dst; /* a range read: where its bytes go */
    size_t len, got;
    int ranged;    /* a Range was asked */
    uint64_t at;   /* ... from this byte */
    size_t cap;    /* body into resp->body: its cap */
    int overflow;  /* more than asked (or than cap) */
    int misplaced; /* a 206 for another range, or a 200 to a range not at 0 */
};

static int header_is(const char *p, size_t n, const char *name, const char **val, size_t *vn)
{
    size_t k = strlen(name);
    if (n <= k || strncasecmp(p, name, k) != 0 || p[k] != ':')
        return 0;
    p += k + 1;
    n -= k + 1;
    while (n && (*p == ' ' || *p == '\t'))
        p++, n--;
    while (n && (p[n - 1] == '\r' || p[n - 1] == '\n' || p[n - 1] == ' '))
        n--;
    *val = p;
    *vn = n;
    return 1;
}

static size_t on_header(char *p, size_t size, size_t nmemb, void *ctx)
{
    struct xfer *x = ctx;
    struct rm_resp *r = x->resp;
    size_t n = size * nmemb;
    const char *v;
    size_t vn;
    if (n > 5 && !strncmp(p, "HTTP/", 5)) { /* a new response (after a redirect or 1xx) */
        const char *sp = memchr(p, ' ', n);
        r->status = sp ? strtol(sp + 1, NULL, 10) : 0;
        r->length = r->range_first = -1;
        r->etag[0] = r->link_next[0] = r->meta_xxh3[0] = '\0';
    } else if (header_is(p, n, "content-length", &v, &vn)) {
        r->length = vn && vn < 20 ? strtoll(v, NULL, 10) : -1;
    } else if (header_is(p, n, "content-range", &v, &vn)) {
        r->range_first = vn > 6 && !strncasecmp(v, "bytes ", 6) && v[6] >= '0' && v[6] <= '9'
                             ? strtoll(v + 6, NULL, 10)
                             : -1;
    } else if (header_is(p, n, "etag", &v, &vn)) {
        if (vn < sizeof(r->etag)) {
            memcpy(r->etag, v, vn);
            r->etag[vn] = '\0';
        }
    } else if (header_is(p, n, "x-amz-meta-xxh3", &v, &vn)) {
        if (vn < sizeof(r->meta_xxh3)) {
            memcpy(r->meta_xxh3, v, vn);
            r->meta_xxh3[vn] = '\0';
        }
    } else if (header_is(p, n, "link", &v, &vn)) {
        /* <URL>; rel="next" (one of several, comma separated) */
        const char *e = v + vn, *q = v;
        while (q < e) {
            const char *lt = memchr(q, '<', (size_t)(e - q)), *gt;
            if (!lt || !(gt = memchr(lt, '>', (size_t)(e - lt))))
                break;
            const char *comma = memchr(gt, ',', (size_t)(e - gt));
            const char *pe = comma ? comma : e;
            size_t ul = (size_t)(gt - lt - 1);
            if (memmem(gt, (size_t)(pe - gt), "rel=\"next\"", 10) && ul < sizeof(r->link_next)) {
                memcpy(r->link_next, lt + 1, ul);
                r->link_next[ul] = '\0';
            }
            q = pe + (comma ? 1 : 0);
        }
    }
    return n;
}

static size_t on_body(char *p, size_t size, size_t nmemb, void *ctx)
{
    struct xfer *x = ctx;
    struct rm_resp *r = x->resp;
    size_t n = size * nmemb;
    int ok = r->status >= 200 && r->status < 300;
    if (!x->dst || !ok) {
        size_t cap = ok ? x->cap : ERR_BODY_MAX;
        if (r->body.len + n > cap) {
            if (ok) {
                x->overflow = 1;
                return 0;
            }
            n = cap > r->body.len ? cap - r->body.len : 0; /* the rest of an error page */
        }
        sl_buf_append(&r->body, p, n);
        return size * nmemb;
    }
    if ((r->status == 206 && r->range_first != (int64_t)x->at) || (r->status != 206 && x->at)) {
        x->misplaced = 1;
        return 0;
    }
    size_t room = x->len - x->got;
    if (n > room) {
        if (r->status == 200) { /* the whole object (Range ignored) for a read from 0 */
            memcpy(x->dst + x->got, p, room);
            x->got += room;
            return 0; /* enough: the transfer stops here */
        }
        x->overflow = 1;
        return 0;
    }
    memcpy(x->dst + x->got, p, n);
    x->got += n;
    return n;
}

static int transient_curl(CURLcode c)
{
    return c == CURLE_COULDNT_CONNECT || c == CURLE_OPERATION_TIMEDOUT || c == CURLE_PARTIAL_FILE ||
           c == CURLE_RECV_ERROR || c == CURLE_SEND_ERROR || c == CURLE_GOT_NOTHING ||
           c == CURLE_COULDNT_RESOLVE_HOST || c == CURLE_HTTP2 || c == CURLE_HTTP2_STREAM ||
           c == CURLE_SSL_CONNECT_ERROR;
}

static int transient_status(long s)
{
    return s == 500 || s == 502 || s == 503 || s == 504 || s == 429 || s == 408;
}

static void sleep_ms(long ms)
{
    struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };
    while (nanosleep(&ts, &ts) != 0)
        ;
}

/* After a failed attempt: give up with a message naming the object (and its bucket) when
 * it was the last, else wait (doubled each time, at most SL_REMOTE_WAIT_MAX_MS) and return
 * 0 to try again. verb: "read" or "write". */
static int retry_after(const struct rm_target *t, const char *verb, const char *why,
                       int attempt, long *wait)
{
    if (attempt == SL_REMOTE_RETRIES)
        return sl_err_set(SL_ERR_NET, "cannot %s '%s'%s%s%s: %s after %d attempts", verb,
                          t->shown, t->bucket ? " (bucket '" : "", t->bucket ? t->bucket : "",
                          t->bucket ? "')" : "", why, attempt + 1);
    sleep_ms(*wait);
    *wait = *wait * 2 > SL_REMOTE_WAIT_MAX_MS ? SL_REMOTE_WAIT_MAX_MS : *wait * 2;
    return 0;
}

/* Set up h for one attempt of a request. */
static void setup(CURL *h, const struct rm_target *t, const char *url, const char *method,
                  struct curl_slist **hdrs, struct xfer *x, const char *range)
{
    sl_curl.easy_reset(h);
    sl_curl.easy_setopt(h, CURLOPT_URL, url);
    sl_curl.easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
    sl_curl.easy_setopt(h, CURLOPT_REDIR_PROTOCOLS_STR, "http,https");
    sl_curl.easy_setopt(h, CURLOPT_FOLLOWLOCATION, 1L);
    /* redirects: the hub sends files to its CDN (one hop); ten is what browsers allow */
    sl_curl.easy_setopt(h, CURLOPT_MAXREDIRS, 10L);
    sl_curl.easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    /* 30 s to connect; an answer that gives no byte for 60 s is a dropped connection */
    sl_curl.easy_setopt(h, CURLOPT_CONNECTTIMEOUT, 30L);
    sl_curl.easy_setopt(h, CURLOPT_LOW_SPEED_LIMIT, 1L);
    sl_curl.easy_setopt(h, CURLOPT_LOW_SPEED_TIME, 60L);
    sl_curl.easy_setopt(h, CURLOPT_USERAGENT, "sluice");
    sl_curl.easy_setopt(h, CURLOPT_HEADERFUNCTION, on_header);
    sl_curl.easy_setopt(h, CURLOPT_HEADERDATA, x);
    sl_curl.easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body);
    sl_curl.easy_setopt(h, CURLOPT_WRITEDATA, x);
    if (!strcmp(method, "HEAD"))
        sl_curl.easy_setopt(h, CURLOPT_NOBODY, 1L);
    if (range)
        sl_curl.easy_setopt(h, CURLOPT_RANGE, range);
    if (t->kind == RM_S3) {
        rm_s3_authorise(h, hdrs);
    } else if (t->kind == RM_HF) {
        const char *tok = getenv("HF_TOKEN");
        if (tok && *tok) {
            /* libcurl sends a header given here to the first host only, not to the host of
             * a redirect (the CDN gets a signed URL instead) */
            char *a = sl_xasprintf("Authorization: Bearer %s", tok);
            *hdrs = sl_curl.slist_append(*hdrs, a);
            free(a);
        }
    }
    if (*hdrs)
        sl_curl.easy_setopt(h, CURLOPT_HTTPHEADER, *hdrs);
}

/* The message of a refused request. */
static int refused(const struct rm_target *t, const struct rm_resp *r, const char *verb)
{
    char words[512] = "";
    if (t->kind == RM_S3)
        rm_s3_error_words(r->body.data, r->body.len, words, sizeof(words));
    int code = r->status == 404 || r->status == 410 ? SL_ERR_NOTFOUND : SL_ERR_NET;
    const char *hint = t->kind == RM_S3 && (r->status == 401 || r->status == 403) ? rm_s3_hint()
                       : t->kind == RM_HF && (r->status == 401 || r->status == 403)
                           ? "hint: a gated or private dataset needs HF_TOKEN (a token of "
                             "an account that may read it)"
                           : NULL;
    if (t->bucket)
        return sl_err_set(code, "cannot %s '%s' (bucket '%s'): the server answered %ld%s%s%s%s%s",
                          verb, t->shown, t->bucket, r->status, words[0] ? " (" : "", words,
                          words[0] ? ")" : "", hint ? "\n" : "", hint ? hint : "");
    return sl_err_set(code, "cannot %s '%s': the server answered %ld%s%s%s%s%s", verb, t->shown,
                      r->status, words[0] ? " (" : "", words, words[0] ? ")" : "", hint ? "\n" : "",
                      hint ? hint : "");
}

int rm_request(const struct rm_target *t, const char *url, const char *method, uint64_t off,
               size_t len, void *dst, size_t cap, struct rm_resp *resp)
{
    int rc = sl_curl_init("reading remote inputs");
    memset(resp, 0, sizeof(*resp));
    sl_buf_init(&resp->body, 0);
    if (rc)
        return rc;
    CURL *h = sl_curl.easy_init();
    if (!h)
        return sl_err_set(SL_ERR_NOMEM, "cannot start a request for '%s'", t->shown);
    struct xfer x = { .resp = resp, .dst = dst, .len = len, .cap = cap };
    char first_etag[sizeof(resp->etag)] = "";
    long wait = SL_REMOTE_WAIT_MS;
    char why[256] = "";
    for (int attempt = 0;; attempt++) {
        struct curl_slist *hdrs = NULL;
        char range[64];
        uint64_t at = off + x.got;
        x.ranged = dst != NULL;
        x.at = at;
        if (x.ranged)
            snprintf(range, sizeof(range), "%llu-%llu", (unsigned long long)at,
                     (unsigned long long)(off + len - 1));
        if (!dst)
            sl_buf_reset(&resp->body);
        x.overflow = x.misplaced = 0;
        resp->status = 0;
        resp->length = resp->range_first = -1;
        setup(h, t, url, method, &hdrs, &x, x.ranged ? range : NULL);
        size_t got_before = x.got;
        CURLcode c = sl_curl.easy_perform(h);
        sl_curl.slist_free_all(hdrs);
        int ok_status = resp->status >= 200 && resp->status < 300;
        if (ok_status && dst && x.ranged && resp->status == 206 &&
            resp->range_first != (int64_t)at) {
            x.got = got_before; /* another range than asked: nothing of it is kept */
            rc = sl_err_set(SL_ERR_NET,
                            "cannot read '%s': the server answered bytes from %lld "
                            "for a request from byte %llu",
                            t->shown, (long long)resp->range_first, (unsigned long long)at);
            break;
        }
        if (ok_status && dst && resp->status == 200 && at > 0) {
            rc = sl_err_set(SL_ERR_NET,
                            "cannot read '%s': the server does not answer range "
                            "requests (a whole object for bytes from %llu)",
                            t->shown, (unsigned long long)at);
            break;
        }
        if (ok_status && dst && first_etag[0] && resp->etag[0] && strcmp(first_etag, resp->etag)) {
            rc = sl_err_set(SL_ERR_IO,
                            "remote input '%s' changed while it was read (ETag %s, "
                            "then %s)\nhint: run the command again to read it as it "
                            "is now",
                            t->shown, first_etag, resp->etag);
            break;
        }
        if (ok_status && !first_etag[0])
            snprintf(first_etag, sizeof(first_etag), "%s", resp->etag);
        if (x.overflow || x.misplaced) {
            rc = sl_err_set(SL_ERR_NET,
                            "cannot read '%s': the answer holds more bytes than "
                            "asked (%zu)",
                            t->shown, dst ? len : cap);
            break;
        }
        int done = ok_status && (c == CURLE_OK || (c == CURLE_WRITE_ERROR && dst && x.got == len));
        if (done && dst && !strcmp(method, "GET") && x.got < len)
            done = 0, snprintf(why, sizeof(why), "the answer ended at byte %llu of %llu",
                               (unsigned long long)(off + x.got), (unsigned long long)(off + len));
        if (done) {
            rc = 0;
            break;
        }
        if (c == CURLE_OK && !transient_status(resp->status)) {
            rc = refused(t, resp, "read");
            break;
        }
        if (c != CURLE_OK && !transient_curl(c) && !(ok_status && c == CURLE_PARTIAL_FILE)) {
            rc = sl_err_set(SL_ERR_NET, "cannot read '%s': %s", t->shown, sl_curl.easy_strerror(c));
            break;
        }
        if (c != CURLE_OK)
            snprintf(why, sizeof(why), "%s", sl_curl.easy_strerror(c));
        else if (transient_status(resp->status))
            snprintf(why, sizeof(why), "the server answered %ld", resp->status);
        if ((rc = retry_after(t, "read", why, attempt, &wait)))
            break;
    }
    sl_curl.easy_cleanup(h);
    return rc;
}

/* A request body sent from memory. */
struct sendbuf {
    const char *p;
    size_t n, off;
};

static size_t on_read(char *dst, size_t size, size_t nmemb, void *ctx)
{
    struct sendbuf *b = ctx;
    size_t k = size * nmemb < b->n - b->off ? size * nmemb : b->n - b->off;
    memcpy(dst, b->p + b->off, k);
    b->off += k;
    return k;
}

int rm_send(const struct rm_target *t, const char *url, const char *method, const void *body,
            size_t n, const char *const *headers, struct rm_resp *resp)
{
    int rc = sl_curl_init("writing remote outputs");
    memset(resp, 0, sizeof(*resp));
    sl_buf_init(&resp->body, 0);
    if (rc)
        return rc;
    CURL *h = sl_curl.easy_init();
    if (!h)
        return sl_err_set(SL_ERR_NOMEM, "cannot start a request for '%s'", t->shown);
    /* an answer to a write is small: an upload id, an ETag, an error page */
    struct xfer x = { .resp = resp, .cap = 1u << 20 };
    long wait = SL_REMOTE_WAIT_MS;
    for (int attempt = 0;; attempt++) {
        struct curl_slist *hdrs = NULL;
        struct sendbuf sb = { body, n, 0 };
        sl_buf_reset(&resp->body);
        resp->status = 0;
        for (size_t i = 0; headers && headers[i]; i++)
            hdrs = sl_curl.slist_append(hdrs, headers[i]);
        setup(h, t, url, "GET", &hdrs, &x, NULL);
        if (!strcmp(method, "PUT")) {
            sl_curl.easy_setopt(h, CURLOPT_UPLOAD, 1L);
            sl_curl.easy_setopt(h, CURLOPT_READFUNCTION, on_read);
            sl_curl.easy_setopt(h, CURLOPT_READDATA, &sb);
            sl_curl.easy_setopt(h, CURLOPT_INFILESIZE_LARGE, (curl_off_t)n);
        } else if (!strcmp(method, "POST")) {
            sl_curl.easy_setopt(h, CURLOPT_POST, 1L);
            sl_curl.easy_setopt(h, CURLOPT_POSTFIELDS, body ? (const char *)body : "");
            sl_curl.easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)n);
        } else {
            sl_curl.easy_setopt(h, CURLOPT_CUSTOMREQUEST, method);
        }
        CURLcode c = sl_curl.easy_perform(h);
        sl_curl.slist_free_all(hdrs);
        char why[256];
        if (c == CURLE_OK && resp->status >= 200 && resp->status < 300) {
            rc = 0;
            break;
        }
        if (c == CURLE_OK && !transient_status(resp->status)) {
            rc = refused(t, resp, "write");
            break;
        }
        if (c != CURLE_OK && !transient_curl(c)) {
            rc =
                sl_err_set(SL_ERR_NET, "cannot write '%s': %s", t->shown, sl_curl.easy_strerror(c));
            break;
        }
        if (c != CURLE_OK)
            snprintf(why, sizeof(why), "%s", sl_curl.easy_strerror(c));
        else
            snprintf(why, sizeof(why), "the server answered %ld", resp->status);
        if ((rc = retry_after(t, "write", why, attempt, &wait)))
            break;
    }
    sl_curl.easy_cleanup(h);
    return rc;
}

/* ---- objects ------------------------------------------------------------------------ */

struct sl_remote {
    struct rm_target t;
    uint64_t size;
    uint64_t requests;
};

/* The size of t's object (a HEAD). 0, SL_ERR_NOTFOUND, or another error. */
static int head_size(const struct rm_target *t, uint64_t *size)
{
    struct rm_resp r;
    int rc = rm_request(t, t->http, "HEAD", 0, 0, NULL, 0, &r);
    if (rc && (r.status == 401 || r.status == 403)) {
        /* a HEAD's answer has no body: ask one byte for the server's words (S3's
         * SignatureDoesNotMatch, InvalidAccessKeyId, AccessDenied) */
        char one;
        sl_buf_release(&r.body);
        rc = rm_request(t, t->http, "GET", 0, 1, &one, 0, &r);
        if (!rc) /* the HEAD was refused but a read is not: odd, but read on */
            rc = sl_err_set(SL_ERR_NET,
                            "cannot read '%s': the server refused to tell its "
                            "size (%ld) but gives its bytes",
                            t->shown, r.status);
    }
    if (!rc && r.length < 0)
        rc = sl_err_set(SL_ERR_NET,
                        "cannot read '%s': the server gives no size for it (no "
                        "Content-Length)",
                        t->shown);
    if (!rc)
        *size = (uint64_t)r.length;
    sl_buf_release(&r.body);
    return rc;
}

int sl_remote_open(struct sl_remote **out, const char *url, int64_t size)
{
    *out = NULL;
    struct sl_remote *r = sl_xcalloc(1, sizeof(*r));
    int rc = rm_target_init(&r->t, url);
    if (rc) {
        free(r);
        return rc;
    }
    if (size >= 0)
        r->size = (uint64_t)size;
    else if ((rc = head_size(&r->t, &r->size)) != 0) {
        sl_remote_close(r);
        return rc;
    }
    *out = r;
    return 0;
}

uint64_t sl_remote_size(const struct sl_remote *r)
{
    return r->size;
}

int sl_remote_etag(struct sl_remote *r, char *etag, size_t cap)
{
    struct rm_resp resp;
    r->requests++;
    int rc = rm_request(&r->t, r->t.http, "HEAD", 0, 0, NULL, 0, &resp);
    snprintf(etag, cap, "%s", rc ? "" : resp.etag);
    sl_buf_release(&resp.body);
    return rc;
}

const char *sl_remote_source_name(const struct sl_remote *r)
{
    return r->t.shown;
}

uint64_t sl_remote_requests(const struct sl_remote *r)
{
    return r->requests;
}

int sl_remote_read_at(struct sl_remote *r, uint64_t off, void *buf, size_t len)
{
    if (len == 0)
        return 0;
    if (off > r->size || len > r->size - off)
        return sl_err_set(SL_ERR_STATE,
                          "cannot read '%s': bytes %llu..%llu are past its end "
                          "(%llu bytes)",
                          r->t.shown, (unsigned long long)off, (unsigned long long)(off + len),
                          (unsigned long long)r->size);
    struct rm_resp resp;
    r->requests++;
    int rc = rm_request(&r->t, r->t.http, "GET", off, len, buf, 0, &resp);
    sl_buf_release(&resp.body);
    return rc;
}

void sl_remote_close(struct sl_remote *r)
{
    if (!r)
        return;
    rm_target_release(&r->t);
    free(r);
}

/* The sequential source: SL_REMOTE_CHUNK bytes at a time. */
struct remote_source {
    struct sl_source base;
    struct sl_remote *r;
    uint64_t size, pos; /* bytes to give, given so far */
    char *chunk;
    size_t cap;        /* chunk's size: SL_REMOTE_CHUNK, or SLUICE_REMOTE_CHUNK (tests) */
    size_t have, next; /* bytes in chunk, the next to give */
};

static ssize_t remote_read(struct sl_source *src, void *buf, size_t n)
{
    struct remote_source *s = (struct remote_source *)src;
    if (s->next == s->have) {
        uint64_t left = s->size - s->pos;
        size_t want = left < s->cap ? (size_t)left : s->cap;
        if (want == 0)
            return 0;
        if (!s->chunk)
            s->chunk = sl_xmalloc(s->cap);
        int rc = sl_remote_read_at(s->r, s->pos, s->chunk, want);
        if (rc)
            return rc;
        s->have = want;
        s->next = 0;
    }
    size_t k = s->have - s->next < n ? s->have - s->next : n;
    memcpy(buf, s->chunk + s->next, k);
    s->next += k;
    s->pos += k;
    return (ssize_t)k;
}

static void remote_close(struct sl_source *src)
{
    struct remote_source *s = (struct remote_source *)src;
    sl_remote_close(s->r);
    free(s->chunk);
    free(src->name);
    free(s);
}

struct sl_source *sl_remote_source(struct sl_remote *r, uint64_t size)
{
    struct remote_source *s = sl_xcalloc(1, sizeof(*s));
    s->base.read = remote_read;
    s->base.close = remote_close;
    s->base.name = sl_xstrdup(r->t.shown);
    s->r = r;
    s->size = size < r->size ? size : r->size;
    const char *c = getenv("SLUICE_REMOTE_CHUNK");
    long k = c ? strtol(c, NULL, 10) : 0;
    s->cap = k >= 1 && k <= (long)SL_REMOTE_CHUNK ? (size_t)k : SL_REMOTE_CHUNK;
    return &s->base;
}

/* ---- listings ----------------------------------------------------------------------- */

int rm_accepted(const char *rel, const char *const *exts)
{
    if (!rel[0] || rel[strlen(rel) - 1] == '/')
        return 0;
    for (const char *p = rel; p; p = strchr(p, '/')) {
        if (*p == '/')
            p++;
        if (*p == '.')
            return 0; /* a hidden file or folder, as a directory walk skips */
    }
    if (!exts)
        return 1;
    size_t n = strlen(rel);
    for (size_t i = 0; exts[i]; i++) {
        size_t e = strlen(exts[i]);
        if (n > e && strcmp(rel + n - e, exts[i]) == 0)
            return 1;
    }
    return 0;
}

void rm_list_push(struct sl_remote_list *l, const char *url, const char *rel, uint64_t size)
{
    if (l->n == l->cap) {
        l->cap = l->cap ? 2 * l->cap : 64;
        l->v = sl_xrealloc(l->v, l->cap * sizeof(*l->v));
    }
    struct sl_remote_entry *e = &l->v[l->n++];
    e->url = sl_xstrdup(url);
    e->shown = sl_url_display(url);
    if (!e->shown)
        e->shown = sl_xstrdup(url);
    e->rel = sl_xstrdup(rel);
    e->size = size;
}

void sl_remote_list_release(struct sl_remote_list *l)
{
    for (size_t i = 0; i < l->n; i++) {
        free(l->v[i].url);
        free(l->v[i].shown);
        free(l->v[i].rel);
    }
    free(l->v);
    memset(l, 0, sizeof(*l));
}

static int no_files(const char *shown, const char *const *exts)
{
    struct sl_buf b = SL_BUF_INIT;
    for (size_t k = 0; exts && exts[k]; k++)
        sl_buf_printf(&b, "%s%s", k ? " " : "", exts[k]);
    int rc = sl_err_set(SL_ERR_NOTFOUND, "'%s' has no input files%s%s%s", shown,
                        b.len ? " (looked for " : "", b.len ? b.data : "", b.len ? ")" : "");
    sl_buf_release(&b);
    return rc;
}

int sl_remote_expand(struct sl_remote_list *l, const char *operand, const char *const *exts)
{
    struct rm_target t;
    int rc = rm_target_init(&t, operand);
    if (rc)
        return rc;
    /* the key or path below the bucket or dataset: a folder when empty or ending in '/' */
    const char *key = "";
    char *repo = NULL, *rev = NULL, *path = NULL;
    if (t.kind == RM_S3) {
        key = operand + 5 + strlen(t.bucket);
        key += *key == '/';
    } else if (t.kind == RM_HF && rm_hf_parse(operand, &repo, &rev, &path) == 0) {
        key = operand + strlen(operand) - strlen(path);
    }
    free(repo);
    free(rev);
    free(path);
    int folder = t.kind != RM_HTTP && (!key[0] || key[strlen(key) - 1] == '/');
    const char *base = strrchr(operand, '/');
    base = base ? base + 1 : operand;
    uint64_t size = 0;
    size_t before = l->n;
    if (t.kind == RM_HTTP) {
        rc = head_size(&t, &size);
        if (!rc) {
            char *q = sl_xstrdup(t.shown);
            q[strcspn(q, "?#")] = '\0';
            const char *b = strrchr(q, '/');
            rm_list_push(l, operand, b ? b + 1 : q, size);
            free(q);
        }
    } else if (!folder && (rc = head_size(&t, &size)) == 0) {
        rm_list_push(l, operand, base, size);
    } else if (folder || rc == SL_ERR_NOTFOUND) {
        sl_err_clear();
        if (t.kind == RM_S3) {
            char *prefix = sl_xasprintf("%s%s", key, folder ? "" : "/");
            rc = rm_s3_list(l, &t, t.bucket, prefix, exts);
            free(prefix);
        } else {
            rc = rm_hf_list(l, &t, exts);
        }
        if (!rc && l->n == before)
            rc = no_files(t.shown, exts);
    }
    rm_target_release(&t);
    return rc;
}
