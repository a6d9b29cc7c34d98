/* libcurl loaded on first use, and the display form of URLs. */
#include "core/http.h"

#include "core/dl.h"
#include "core/err.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

struct sl_curl_api sl_curl;

/* A row of the symbol table: each field of sl_curl is the function curl_FIELD. */
/* clang-format off */
#define SYM(f) { "curl_" #f, (void **)&sl_curl.f }
/* clang-format on */

int sl_curl_load(const char *what)
{
    static struct sl_dl_once once = SL_DL_ONCE_INIT;
    static const char *const names[] = { "libcurl.so.4", "libcurl-gnutls.so.4" };
    const struct sl_dl_sym syms[] = {
        SYM(global_init),   SYM(global_cleanup), SYM(easy_init),      SYM(easy_cleanup),
        SYM(easy_reset),    SYM(easy_setopt),    SYM(easy_perform),   SYM(easy_getinfo),
        SYM(easy_strerror), SYM(slist_append),   SYM(slist_free_all), SYM(easy_escape),
        SYM(free),
    };
#undef SYM
    char why[256];
    snprintf(why, sizeof(why), "%s needs libcurl (Debian package libcurl4)", what);
    return sl_dl_load_once(&once, &sl_curl.lib, names, sizeof(names) / sizeof(names[0]), syms,
                           sizeof(syms) / sizeof(syms[0]), why, SL_ERR_NET);
}

static pthread_mutex_t init_mu = PTHREAD_MUTEX_INITIALIZER;
static int init_done;

int sl_curl_init(const char *what)
{
    int rc = sl_curl_load(what);
    if (rc)
        return rc;
    pthread_mutex_lock(&init_mu);
    if (!init_done && sl_curl.global_init(CURL_GLOBAL_DEFAULT) == CURLE_OK)
        init_done = 1;
    rc = init_done ? 0 : sl_err_set(SL_ERR_NET, "cannot initialise libcurl");
    pthread_mutex_unlock(&init_mu);
    return rc;
}

char *sl_url_display(const char *url)
{
    size_t n = strlen(url);
    /* "***" for each value (>= 0 bytes) and for the user information (>= 1 byte): at most
     * 3 more bytes per input byte */
    char *out = malloc(4 * n + 8), *o = out;
    if (!out)
        return NULL;
    /* the authority follows "SCHEME://", a scheme being what comes before any of ":/?#" */
    const char *p = url, *auth = url + strcspn(url, ":/?#");
    auth = !strncmp(auth, "://", 3) ? auth + 3 : url;
    size_t auth_n = strcspn(auth, "/?#");
    const char *at = NULL;
    for (size_t i = 0; i < auth_n; i++)
        if (auth[i] == '@')
            at = auth + i;
    if (at) {
        memcpy(o, url, (size_t)(auth - url));
        o += auth - url;
        memcpy(o, "***", 3);
        o += 3;
        p = at;
    }
    size_t k = strcspn(p, "?#");
    memcpy(o, p, k);
    o += k;
    p += k;
    if (*p == '?') {
        *o++ = *p++;
        while (*p && *p != '#') {
            size_t pn = strcspn(p, "&#"), name = strcspn(p, "=&#");
            if (name < pn) { /* NAME=VALUE: the name stays */
                memcpy(o, p, name + 1);
                o += name + 1;
            }
            memcpy(o, "***", 3);
            o += 3;
            p += pn;
            if (*p == '&')
                *o++ = *p++;
        }
    }
    strcpy(o, p); /* the fragment, never sent */
    return out;
}
