/* What every HTTP user of sluice shares: libcurl, loaded when first needed (not linked), and
 * the display form of a URL that messages, logs and manifests may show.
 *
 * libcurl is loaded, not linked: with the 30 libraries it brings (TLS, HTTP/2, LDAP,
 * Kerberos, ...) it was a third of the dynamic linking every sluice command paid at
 * start-up, about 10 ms of CPU, though only the commands that fetch something use it.
 */
#ifndef SL_HTTP_H
#define SL_HTTP_H

#include <curl/curl.h>

/* The libcurl functions sluice calls, filled by sl_curl_load. */
struct sl_curl_api {
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
    char *(*easy_escape)(CURL *, const char *, int);
    void (*free)(void *);
};
extern struct sl_curl_api sl_curl;

/* Load libcurl into sl_curl (once; threads may call it at once). 0, or SL_ERR_NET with
 * "WHAT needs libcurl (Debian package libcurl4)". Does not call curl_global_init. */
int sl_curl_load(const char *what);

/* sl_curl_load, then curl_global_init once per process (threads may call it at once). */
int sl_curl_init(const char *what);

/* A URL as messages and manifests may show it: user information ("user:pass@") replaced
 * by "***@" and every value of the query string by "***" (signed URLs and API tokens travel
 * there; a parameter without '=' is replaced whole); the rest unchanged. The caller frees
 * the result (NULL only when out of memory). */
char *sl_url_display(const char *url);

#endif
