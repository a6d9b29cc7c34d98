/* fetch_url: download one URL into a partial file with libcurl, resuming what an earlier
 * attempt or run left there (HTTP Range), retrying with exponential backoff on 5xx, 408,
 * 429 and dropped, timed-out or too slow connections. The caller renames the partial file
 * once it is complete (and verified): nothing here ever writes a final name.
 *
 * Only http and https are spoken, for the URL and for every redirect. When a partial file
 * starts, the response's validator (a strong ETag, else Last-Modified) is kept in
 * PART.validator; a resume sends it as If-Range, so a resource that changed since comes
 * back whole (200) and the partial file starts over instead of mixing two versions.
 */
#ifndef SL_DOWNLOAD_FETCH_H
#define SL_DOWNLOAD_FETCH_H

#include <stdint.h>

struct fetch_opts {
    int retries;            /* attempts after the first (default 5) */
    double retry_wait;      /* seconds before the first retry; doubles each time, <= 60 */
    long connect_timeout;   /* seconds (0: 30) */
    long stall_timeout;     /* abort an attempt slower than min_speed for this long (0: 60) */
    long min_speed;         /* bytes/s averaged over stall_timeout (0: 1, i.e. nothing at all) */
    const char *user_agent; /* NULL: "sluice/VERSION" */
    /* Told before each retry: attempt number (1-based), seconds to wait, why. */
    void (*on_retry)(void *ctx, int attempt, double wait, const char *why);
    /* Told about received bytes as they arrive (for progress). */
    void (*on_bytes)(void *ctx, uint64_t n);
    void *ctx;
};

struct fetch_result {
    uint64_t size;     /* bytes in the partial file at the end */
    uint64_t received; /* bytes received over the network in this call */
    int attempts;
    int resumed; /* some attempt continued from an existing partial file */
    long status; /* last HTTP status */
};

/* 1 when url starts with http:// or https:// (any case), the only schemes fetched. */
int fetch_scheme_ok(const char *url);

/* Remove PART.validator, once the partial file is renamed or removed. */
void fetch_forget(const char *part_path);

/* Call once per process before fetch_url (curl_global_init). */
int fetch_global_init(void);
void fetch_global_cleanup(void);

/* 0: part_path holds the whole resource. SL_ERR_NOTFOUND (404/410), SL_ERR_NET (another
 * HTTP error, or still failing after the retries; the message names the URL and the
 * last cause), SL_ERR_IO (the partial file). */
int fetch_url(const char *url, const char *part_path, const struct fetch_opts *o,
              struct fetch_result *r);

#endif
