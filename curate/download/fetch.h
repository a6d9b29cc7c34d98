/* fetch_url: download one URL into a partial file with libcurl, resuming what an earlier
 * attempt or run left there (HTTP Range), retrying with exponential backoff on 5xx, 408,
 * 429, dropped, timed-out or too slow connections, and on answers that break the rules
 * below. The caller renames the partial file once it is complete (and verified): nothing
 * here ever writes a final name.
 *
 * Only http and https are spoken, for the URL and for every redirect. When a partial file
 * starts, the response's validators (strong ETag, Last-Modified) and the file's size are
 * kept beside it (struct part_meta, PART.validator). What a server says is checked, not
 * believed:
 *   - a 206 must carry a readable Content-Range that starts where the request asked
 *     (byte 0 when it asked no Range), with no more body bytes than the range holds;
 *     a range that starts elsewhere starts the partial file over;
 *   - a resume's answer must be the partial file's version: an ETag (else Last-Modified)
 *     other than the stored one, or, with no validators to compare, another size, is
 *     another version, and the partial file starts over instead of being spliced;
 *   - the file is complete only when its size is the whole size the server gave
 *     (Content-Length of a 200, the total of a 206's Content-Range); a shorter 206 keeps
 *     its bytes and the next attempt asks for the rest;
 *   - a 200 with an empty body answering a resume is believed only when its validator
 *     shows another version;
 *   - a response head over RESP_HEAD_MAX (64 KiB), or with a line over libcurl's limit,
 *     stops the download at once: retrying would not help.
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
    /* Told before each retry: attempt number (1-based), seconds to wait, why (what the
     * server said, without the URL). */
    void (*on_retry)(void *ctx, int attempt, double wait, const char *why);
    /* Told about received bytes as they arrive (for progress). */
    void (*on_bytes)(void *ctx, uint64_t n);
    /* Told when the partial file starts over within an attempt (a 200 answering a resume:
     * another version, or a server that ignores Range), why as for on_retry. May be NULL. */
    void (*on_restart)(void *ctx, const char *why);
    void *ctx;
};

struct fetch_result {
    uint64_t size;     /* bytes in the partial file at the end */
    uint64_t received; /* bytes received over the network in this call */
    int attempts;
    int resumed;       /* some attempt continued from an existing partial file */
    int restarts;      /* times the partial file started over (another version, a server
                          that ignores Range, a 206 for a range not asked for) */
    int bad_responses; /* answers that broke a rule above (refused, or a short range) */
    long status;       /* last HTTP status */
};

/* 1 when url starts with http:// or https:// (any case), the only schemes fetched. */
int fetch_scheme_ok(const char *url);

/* A URL as messages and manifests may show it: user information ("user:pass@") replaced
 * by "***@" and every value of the query string by "***" (signed URLs and API tokens travel
 * there; a parameter without '=' is replaced whole); the rest unchanged. The caller frees
 * the result. */
char *fetch_url_display(const char *url);

/* Remove PART.validator, once the partial file is renamed or removed. */
void fetch_forget(const char *part_path);

/* Call once per process before fetch_url (curl_global_init). */
int fetch_global_init(void);
void fetch_global_cleanup(void);

/* 0: part_path holds the whole resource. SL_ERR_NOTFOUND (404/410), SL_ERR_NET (another
 * HTTP error, a response head too large, or still failing after the retries; the message
 * names the URL in its display form and the last cause), SL_ERR_IO (the partial file). */
int fetch_url(const char *url, const char *part_path, const struct fetch_opts *o,
              struct fetch_result *r);

#endif
