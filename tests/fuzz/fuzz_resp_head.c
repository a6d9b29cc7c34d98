/* Fuzz what sluice download reads from a server and from its users: the response-head
 * parser (the input cut into lines as libcurl hands them over, each in a buffer of its
 * exact size), Content-Range on its own, and the display form of URLs. Invariants: a range
 * read is ordered (FIRST <= LAST < TOTAL), a head never passes its cap, kept values hold no
 * control bytes, a displayed URL keeps no byte of a query value or of user information. */
#include "core/err.h"
#include "curate/download/fetch.h"
#include "curate/download/resp_head.h"

#include <stdlib.h>
#include <string.h>

static void check_range(int ok, int64_t a, int64_t b, int64_t t)
{
    if (!ok)
        return;
    if (a < 0 ? b != -1 || t < 0 : b < a || (t >= 0 && b >= t))
        abort();
}

static void check_value(const char *v)
{
    for (; *v; v++)
        if ((unsigned char)*v < 0x20 || *v == 0x7f)
            abort();
}

/* The query of a displayed URL: each parameter is "***" or NAME=*** (a name without '=');
 * user information, when the authority had any, is "***". */
static void check_display(const char *url)
{
    char *d = fetch_url_display(url);
    if (!d || strlen(d) > 4 * strlen(url) + 8)
        abort();
    const char *q = d + strcspn(d, "?#");
    if (*q == '?') {
        for (const char *p = q + 1; *p && *p != '#';) {
            size_t n = strcspn(p, "&#"), name = strcspn(p, "=&#");
            if (!(n == 3 && !strncmp(p, "***", 3)) &&
                !(name + 4 == n && !strncmp(p + name, "=***", 4)))
                abort();
            p += n + (p[n] == '&');
        }
    }
    const char *auth = url + strcspn(url, ":/?#");
    auth = !strncmp(auth, "://", 3) ? auth + 3 : url;
    const char *at = memchr(auth, '@', strcspn(auth, "/?#"));
    if (at && !strstr(d, "***@"))
        abort();
    free(d);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *p = (const char *)data, *end = p + size;
    int64_t a, b, t;
    check_range(resp_content_range(p, size, &a, &b, &t), a, b, t);

    struct resp_head h;
    resp_head_init(&h);
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        size_t n = nl ? (size_t)(nl - p + 1) : (size_t)(end - p);
        char *line = malloc(n ? n : 1);
        memcpy(line, p, n);
        int rc = resp_head_line(&h, line, n);
        free(line);
        if (h.bytes > RESP_HEAD_MAX || (rc && rc != SL_ERR_TOOBIG))
            abort();
        p += n;
    }
    if (h.status && (h.status < 100 || h.status > 999))
        abort();
    if (h.range_ok)
        check_range(1, h.range_first, h.range_last, h.range_total);
    check_value(h.etag);
    check_value(h.modified);
    if (strlen(h.range_text) >= sizeof(h.range_text) || h.retry_after < 0 || h.retry_after >= 3600)
        abort();

    char *url = malloc(size + 1);
    memcpy(url, data, size);
    url[size] = 0;
    check_display(url);
    free(url);
    return 0;
}
