/* struct resp_head: what a download checks in one HTTP response head (status, Content-Length,
 * Content-Range, the validators ETag and Last-Modified, Retry-After), read line by line as
 * libcurl hands the lines over.
 *
 * Lines are untrusted bytes: they are not NUL-terminated and nothing past their length is
 * read; a value holding control bytes, or too long for its field, counts as absent; a head
 * over RESP_HEAD_MAX bytes is refused, so that the caller can stop the transfer.
 */
#ifndef SL_DOWNLOAD_RESP_HEAD_H
#define SL_DOWNLOAD_RESP_HEAD_H

#include <stddef.h>
#include <stdint.h>

/* The largest response head accepted (status line, header lines and blank line): 8 times the
 * 8 KiB that common servers accept for a request head, far above what file servers, CDNs
 * and object stores send (a few hundred bytes to a few KiB), and below libcurl's own limits
 * (100 KB for one line; since 8.3, 300 KB in all) so that this check speaks first. */
#define RESP_HEAD_MAX (64u << 10)

struct resp_head {
    long status;            /* of the status line, 0 until one was read */
    int done;               /* the blank line that ends the head was read */
    size_t bytes;           /* bytes of this head so far */
    int64_t content_length; /* -1: absent or not a number */
    int chunked;            /* Transfer-Encoding names chunked: content_length does not apply */
    /* Content-Range: "bytes FIRST-LAST/TOTAL", the same with an unknown total ("*"), or the
     * unsatisfied form "bytes *" + "/TOTAL" (a 416) */
    int has_range; /* the header was there */
    int range_ok;  /* ... and reads as one of those forms, FIRST <= LAST < TOTAL */
    int64_t range_first, range_last; /* -1 in the "* / TOTAL" form or when absent */
    int64_t range_total;             /* -1 for "*" or when absent */
    char range_text[80];             /* the value as sent, for messages (cut; bytes outside
                                        printable ASCII shown as '?') */
    char etag[256];     /* strong ETag; "" when absent, weak (W/...), twice or unusable */
    char modified[64];  /* Last-Modified; "" when absent or unusable */
    double retry_after; /* Retry-After in seconds (the delta form, under an hour), else 0 */
    int seen;           /* headers read so far that must come once (resp_head.c) */
};

/* An empty head (no status yet). */
void resp_head_init(struct resp_head *h);

/* Copy a validator v[0..n) into out[cap] when it fits and holds no control bytes, else
 * leave out "" (a response's ETag, or the one kept beside a partial file). */
void resp_head_copy_value(const char *v, size_t n, char *out, size_t cap);

/* Read one line of a response as received, CRLF or LF included or not: a status line
 * ("HTTP/1.1 206 Partial Content") before any head or after the blank line of the last
 * one starts a new head (after a redirect or a 1xx); a header
 * line fills its field (an ETag, Last-Modified or Content-Range that comes twice counts
 * as unusable; lines of other headers, folded lines and lines without a colon are
 * skipped); an empty line ends
 * the head. Returns 0, or SL_ERR_TOOBIG (message set) once the head passes RESP_HEAD_MAX
 * bytes; the head is then left as it was. */
int resp_head_line(struct resp_head *h, const char *p, size_t n);

/* Parse a Content-Range value (RFC 9110 section 14.4) in p[0..n). Returns 1 with *first,
 * *last, *total set (-1 for "*" parts), or 0 when it is not a valid byte range:
 * another unit, FIRST > LAST, LAST >= TOTAL, numbers over 18 digits, trailing bytes. */
int resp_content_range(const char *p, size_t n, int64_t *first, int64_t *last, int64_t *total);

#endif
