/* struct http_resp: an HTTP/1.x response head as stored in a WARC response record, and the
 * decoding of its body (chunked transfer encoding, gzip/deflate/zstd content encoding).
 *
 * The parser is lenient the way archived responses need (bare LF line ends, folded
 * lines, missing reason phrase, "HTTP/1.1 200" without a space after the code) but never
 * reads past the given bytes and caps the header size. It keeps pointers into the
 * caller's buffer: the struct is valid while that buffer is.
 */
#ifndef SL_EXTRACT_HTTP_H
#define SL_EXTRACT_HTTP_H

#include <stddef.h>
#include <stdint.h>

struct sl_buf;

#define HTTP_MAX_HEAD (64u << 10) /* header block cap */

/* A span of the caller's buffer. */
struct http_span {
    const char *p;
    size_t n;
};

struct http_resp {
    int status;                      /* 100..999 */
    struct http_span content_type;   /* media type only, lowercased copy in mime[] */
    char mime[64];                   /* "text/html" ("" when absent or too long) */
    char charset[40];                /* charset parameter, lowercased ("" when absent) */
    struct http_span content_encoding; /* raw value ("" when absent) */
    struct http_span transfer_encoding;
    int64_t content_length;          /* -1 when absent or invalid */
    size_t head_len;                 /* bytes of status line + headers + blank line */
};

/* Parse the head at the start of [p, p+n). Returns 0 (r filled; the body starts at
 * p + r->head_len), SL_ERR_FORMAT (not an HTTP response, message set), or
 * SL_ERR_TOOBIG (no end of headers within HTTP_MAX_HEAD or n bytes: a cut record).
 * A head that ends at n without a blank line is accepted when n is the whole record. */
int http_parse_response(const char *p, size_t n, struct http_resp *r);

/* Find a header in the head block; returns its value span (trimmed) or {NULL,0}.
 * Case-insensitive name match; the first occurrence wins. */
struct http_span http_header(const char *head, size_t head_len, const char *name);

/* True when the comma-separated list `v` contains token `tok` (case-insensitive). */
int http_has_token(struct http_span v, const char *tok);

/* Remove chunked transfer encoding: append the decoded body to out (cap: out->max).
 * Returns 0, SL_ERR_CORRUPT (bad chunk size line; what was decoded so far is in out), or
 * SL_ERR_TOOBIG. A body cut before the last chunk gives SL_ERR_CORRUPT too. */
int http_dechunk(const char *p, size_t n, struct sl_buf *out);

/* Whether a body declared as chunked really looks chunked (hex size line first). */
int http_looks_chunked(const char *p, size_t n);

/* Undo a content encoding ("gzip", "x-gzip", "deflate" (zlib or raw), "zstd"; "identity"
 * and "" copy). Output is capped by out->max (SL_ERR_TOOBIG: a bomb or a huge page).
 * SL_ERR_UNSUPPORTED for other encodings ("br", "compress"), SL_ERR_CORRUPT for damaged
 * data (out keeps what was decoded before the damage). */
int http_decode_content(const char *enc, size_t enc_len, const char *p, size_t n,
                        struct sl_buf *out);

#endif
