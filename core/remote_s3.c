/* S3: the store's configuration (endpoint, region, credentials from the environment and the
 * AWS files), its URLs, request signing (AWS Signature V4, signed by libcurl), listing with
 * ListObjectsV2 and the words of its error answers. */
#include "core/alloc.h"
#include "core/err.h"
#include "core/remote_internal.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static struct {
    char *endpoint; /* "" or an http(s) URL without a trailing '/' */
    char *region;
    char *key_id, *secret, *token; /* NULL: unsigned requests */
    char *profile;                 /* where the credentials came from, for the hint */
} s3;

static char *endpoint_set;
static pthread_once_t s3_once = PTHREAD_ONCE_INIT;

void sl_remote_set_s3_endpoint(const char *url)
{
    free(endpoint_set);
    endpoint_set = url ? sl_xstrdup(url) : NULL;
}

static const char *env(const char *name)
{
    const char *v = getenv(name);
    return v && *v ? v : NULL;
}

/* The value of `key` in section `section` of an INI-style AWS file, or NULL. */
static char *ini_get(const char *path, const char *section, const char *key)
{
    FILE *f = path ? fopen(path, "r") : NULL;
    if (!f)
        return NULL;
    char line[4096], *val = NULL;
    int in = 0;
    while (!val && fgets(line, sizeof(line), f)) {
        char *p = line + strspn(line, " \t");
        p[strcspn(p, "\r\n")] = '\0';
        if (*p == '[') {
            char *e = strchr(p, ']');
            if (e)
                *e = '\0';
            char *name = p + 1 + strspn(p + 1, " \t");
            size_t n = strlen(name);
            while (n && (name[n - 1] == ' ' || name[n - 1] == '\t'))
                name[--n] = '\0';
            in = !strcmp(name, section);
            continue;
        }
        if (!in || *p == '#' || *p == ';')
            continue;
        size_t kn = strcspn(p, " \t=");
        if (kn != strlen(key) || strncmp(p, key, kn))
            continue;
        char *eq = strchr(p, '=');
        if (!eq)
            continue;
        char *v = eq + 1 + strspn(eq + 1, " \t");
        size_t vn = strlen(v);
        while (vn && (v[vn - 1] == ' ' || v[vn - 1] == '\t'))
            v[--vn] = '\0';
        val = sl_xstrdup(v);
    }
    fclose(f);
    return val;
}

static char *aws_file(const char *var, const char *name)
{
    const char *p = env(var), *home = env("HOME");
    return p ? sl_xstrdup(p) : home ? sl_xasprintf("%s/.aws/%s", home, name) : NULL;
}

static void s3_load(void)
{
    const char *ep = endpoint_set ? endpoint_set : env("AWS_ENDPOINT_URL_S3");
    ep = ep ? ep : env("AWS_ENDPOINT_URL");
    s3.endpoint = sl_xstrdup(ep ? ep : "");
    size_t n = strlen(s3.endpoint);
    while (n && s3.endpoint[n - 1] == '/')
        s3.endpoint[--n] = '\0';
    const char *profile = env("AWS_PROFILE");
    profile = profile ? profile : "default";
    char *cfg = aws_file("AWS_CONFIG_FILE", "config");
    char *section =
        strcmp(profile, "default") ? sl_xasprintf("profile %s", profile) : sl_xstrdup("default");
    const char *r = env("AWS_REGION");
    r = r ? r : env("AWS_DEFAULT_REGION");
    s3.region = r ? sl_xstrdup(r) : ini_get(cfg, section, "region");
    if (!s3.region)
        s3.region = sl_xstrdup("us-east-1");
    if (env("AWS_ACCESS_KEY_ID") && env("AWS_SECRET_ACCESS_KEY")) {
        s3.key_id = sl_xstrdup(env("AWS_ACCESS_KEY_ID"));
        s3.secret = sl_xstrdup(env("AWS_SECRET_ACCESS_KEY"));
        s3.token = env("AWS_SESSION_TOKEN") ? sl_xstrdup(env("AWS_SESSION_TOKEN")) : NULL;
        s3.profile = sl_xstrdup("the environment (AWS_ACCESS_KEY_ID)");
    } else {
        char *creds = aws_file("AWS_SHARED_CREDENTIALS_FILE", "credentials");
        s3.key_id = ini_get(creds, profile, "aws_access_key_id");
        s3.secret = ini_get(creds, profile, "aws_secret_access_key");
        s3.token = ini_get(creds, profile, "aws_session_token");
        if (s3.key_id && s3.secret)
            s3.profile = sl_xasprintf("the profile '%s' of '%s'", profile, creds);
        free(creds);
    }
    free(cfg);
    free(section);
}

/* Percent-encode s as S3 wants a key (every byte but A-Z a-z 0-9 - . _ ~, and '/' when
 * keep_slash), into b. */
void rm_s3_escape(struct sl_buf *b, const char *s, int keep_slash)
{
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if ((*p >= 'A' && *p <= 'Z') || (*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') ||
            *p == '-' || *p == '.' || *p == '_' || *p == '~' || (keep_slash && *p == '/'))
            sl_buf_putc(b, (char)*p);
        else
            sl_buf_printf(b, "%%%02X", *p);
    }
}

char *rm_s3_http_url(const char *bucket, const char *key, const char *query)
{
    pthread_once(&s3_once, s3_load);
    struct sl_buf b = SL_BUF_INIT;
    if (s3.endpoint[0]) /* path-style: what S3-compatible stores answer */
        sl_buf_printf(&b, "%s/%s%s", s3.endpoint, bucket, key[0] ? "/" : "");
    else
        sl_buf_printf(&b, "https://%s.s3.%s.amazonaws.com/", bucket, s3.region);
    rm_s3_escape(&b, key, 1);
    if (query && query[0])
        sl_buf_printf(&b, "?%s", query);
    return sl_buf_detach(&b, NULL);
}

void rm_s3_authorise(void *curl, struct curl_slist **hdrs)
{
    pthread_once(&s3_once, s3_load);
    if (!s3.key_id)
        return; /* no credentials: a public bucket's objects, unsigned */
    char sig[160];
    snprintf(sig, sizeof(sig), "aws:amz:%s:s3", s3.region);
    sl_curl.easy_setopt(curl, CURLOPT_AWS_SIGV4, sig);
    sl_curl.easy_setopt(curl, CURLOPT_USERNAME, s3.key_id);
    sl_curl.easy_setopt(curl, CURLOPT_PASSWORD, s3.secret);
    /* S3 wants the payload's hash signed; reads have none worth hashing */
    *hdrs = sl_curl.slist_append(*hdrs, "x-amz-content-sha256: UNSIGNED-PAYLOAD");
    if (s3.token) {
        char *h = sl_xasprintf("x-amz-security-token: %s", s3.token);
        *hdrs = sl_curl.slist_append(*hdrs, h);
        free(h);
    }
}

const char *rm_s3_hint(void)
{
    static char hint[512];
    pthread_once(&s3_once, s3_load);
    snprintf(hint, sizeof(hint),
             "hint: the credentials from %s were refused: check them, the region ('%s', from "
             "AWS_REGION) and the endpoint (%s, from --s3-endpoint or AWS_ENDPOINT_URL)",
             s3.profile ? s3.profile : "nowhere (none found: the requests were not signed)",
             s3.region, s3.endpoint[0] ? s3.endpoint : "AWS");
    return hint;
}

/* The text of the next <tag>...</tag> in [p, end), entities decoded, into out; returns the
 * position after it, or NULL. */
static const char *xml_text(const char *p, const char *end, const char *tag, struct sl_buf *out)
{
    char open[64], close[64];
    snprintf(open, sizeof(open), "<%s>", tag);
    snprintf(close, sizeof(close), "</%s>", tag);
    const char *a = memmem(p, (size_t)(end - p), open, strlen(open));
    if (!a)
        return NULL;
    a += strlen(open);
    const char *z = memmem(a, (size_t)(end - a), close, strlen(close));
    if (!z)
        return NULL;
    sl_buf_reset(out);
    for (const char *q = a; q < z; q++) {
        if (*q != '&') {
            sl_buf_putc(out, *q);
            continue;
        }
        static const struct {
            const char *e;
            char c;
        } ents[] = {
            { "&amp;", '&' },  { "&lt;", '<' },    { "&gt;", '>' },
            { "&quot;", '"' }, { "&apos;", '\'' },
        };
        size_t k, done = 0;
        for (k = 0; k < sizeof(ents) / sizeof(ents[0]) && !done; k++)
            if ((size_t)(z - q) >= strlen(ents[k].e) && !strncmp(q, ents[k].e, strlen(ents[k].e))) {
                sl_buf_putc(out, ents[k].c);
                q += strlen(ents[k].e) - 1;
                done = 1;
            }
        if (!done && z - q > 3 && q[1] == '#') { /* &#NN; or &#xNN; (ASCII only in keys here) */
            char *e;
            long c = q[2] == 'x' ? strtol(q + 3, &e, 16) : strtol(q + 2, &e, 10);
            if (e < z && *e == ';' && c > 0 && c < 128) {
                sl_buf_putc(out, (char)c);
                q = e;
                done = 1;
            }
        }
        if (!done)
            sl_buf_putc(out, '&');
    }
    return z + strlen(close);
}

int rm_s3_xml_text(const char *body, size_t n, const char *tag, struct sl_buf *out)
{
    return body && xml_text(body, body + n, tag, out) != NULL;
}

void rm_s3_error_words(const char *body, size_t n, char *out, size_t cap)
{
    out[0] = '\0';
    if (!body || !n)
        return;
    struct sl_buf code = SL_BUF_INIT, msg = SL_BUF_INIT;
    if (xml_text(body, body + n, "Code", &code)) {
        xml_text(body, body + n, "Message", &msg);
        snprintf(out, cap, "%s%s%s", code.data, msg.len ? ": " : "", msg.len ? msg.data : "");
        for (char *p = out; *p; p++)
            if (*p == '\n' || *p == '\r')
                *p = ' ';
    }
    sl_buf_release(&code);
    sl_buf_release(&msg);
}

/* Keys a listing page asks for: S3's maximum, 1000; SLUICE_S3_MAX_KEYS asks fewer (for the
 * tests of pagination). */
static int max_keys(void)
{
    const char *v = env("SLUICE_S3_MAX_KEYS");
    long n = v ? strtol(v, NULL, 10) : 1000;
    return n >= 1 && n <= 1000 ? (int)n : 1000;
}

static int cmp_rel(const void *a, const void *b)
{
    return strcmp(((const struct sl_remote_entry *)a)->rel,
                  ((const struct sl_remote_entry *)b)->rel);
}

int rm_s3_list_page(const char *body, size_t n, const char *bucket, const char *prefix,
                    const char *const *exts, struct sl_remote_list *l, struct sl_buf *token)
{
    struct sl_buf key = SL_BUF_INIT, size = SL_BUF_INIT, tr = SL_BUF_INIT;
    const char *p = body, *end = body ? body + n : NULL;
    size_t pl = strlen(prefix);
    int rc = 0;
    sl_buf_reset(token);
    while (p && p < end) {
        const char *c = memmem(p, (size_t)(end - p), "<Contents>", 10), *ce;
        if (!c || !(ce = memmem(c, (size_t)(end - c), "</Contents>", 11)))
            break;
        if (xml_text(c, ce, "Key", &key) && key.data && xml_text(c, ce, "Size", &size) &&
            size.data && strlen(key.data) == key.len && !strncmp(key.data, prefix, pl) &&
            rm_accepted(key.data + pl, exts)) {
            char *u = sl_xasprintf("s3://%s/%s", bucket, key.data);
            rm_list_push(l, u, key.data + pl, strtoull(size.data, NULL, 10));
            free(u);
        }
        p = ce + 11;
    }
    if (body && xml_text(body, end, "IsTruncated", &tr) && tr.data && !strcmp(tr.data, "true") &&
        (!xml_text(body, end, "NextContinuationToken", token) || !token->len))
        rc = sl_err_set(SL_ERR_FORMAT, "the store says the listing goes on but gives no "
                                       "continuation token");
    else if (!(tr.data && !strcmp(tr.data, "true")))
        sl_buf_reset(token);
    sl_buf_release(&key);
    sl_buf_release(&size);
    sl_buf_release(&tr);
    return rc;
}

int rm_s3_list(struct sl_remote_list *l, const struct rm_target *t, const char *bucket,
               const char *prefix, const char *const *exts)
{
    struct sl_buf q = SL_BUF_INIT, token = SL_BUF_INIT;
    size_t first = l->n;
    int rc = 0;
    do {
        sl_buf_reset(&q);
        /* parameters in byte order of their names: the order the signature's canonical
         * query string has (libcurl 7.88 signs them as given) */
        if (token.len) {
            sl_buf_puts(&q, "continuation-token=");
            rm_s3_escape(&q, token.data, 0);
            sl_buf_putc(&q, '&');
        }
        sl_buf_printf(&q, "list-type=2&max-keys=%d&prefix=", max_keys());
        rm_s3_escape(&q, prefix, 0);
        char *url = rm_s3_http_url(bucket, "", q.data);
        struct rm_resp r;
        rc = rm_request(t, url, "GET", 0, 0, NULL, RM_LIST_PAGE_MAX, &r);
        free(url);
        if (!rc && rm_s3_list_page(r.body.data, r.body.len, bucket, prefix, exts, l, &token))
            rc = sl_err_wrap(SL_ERR_FORMAT, "cannot list '%s': ", t->shown);
        sl_buf_release(&r.body);
    } while (!rc && token.len);
    if (!rc && l->n > first)
        qsort(l->v + first, l->n - first, sizeof(*l->v), cmp_rel);
    sl_buf_release(&q);
    sl_buf_release(&token);
    return rc;
}
