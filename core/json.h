/* A strict RFC 8259 scanner for the hot path of JSONL: validates a value without building
 * it, finds the members of a top-level object as raw byte spans, and decodes single
 * strings. Everything else that needs a tree (nested values, manifests, configs) uses
 * json-c; see docs/json.md for why both exist.
 *
 * All functions take [p, end) and never read past end. Strings must be valid UTF-8;
 * \u escapes of lone surrogates decode to U+FFFD. Nesting deeper than SL_JSON_MAX_DEPTH is
 * rejected.
 */
#ifndef SL_JSON_H
#define SL_JSON_H

#include <stddef.h>
#include <stdint.h>

struct sl_buf;

#define SL_JSON_MAX_DEPTH 256

/* Where and why a scan failed. */
struct sl_json_error {
    size_t offset;      /* byte offset from the start of the scanned text */
    const char *reason; /* static string: "expected ':'", "invalid UTF-8 in string", ... */
};

/* One member of a top-level object, as spans of the scanned text. */
struct sl_json_member {
    const char *key; /* key bytes between the quotes, still escaped */
    size_t key_len;
    int key_escaped; /* key contains a backslash escape */
    const char *val; /* the raw value, no surrounding whitespace */
    size_t val_len;
};

/* Skip whitespace; returns the first non-space position. */
const char *sl_json_skip_ws(const char *p, const char *end);

/* Validate one value starting at p (no leading whitespace). Returns the position after
 * it, or NULL with *err set (offset relative to `base`). */
const char *sl_json_skip_value(const char *base, const char *p, const char *end,
                               struct sl_json_error *err);

/* Scan a whole text that must be one object (surrounding whitespace and a leading UTF-8
 * BOM allowed). Calls `member` for each member in order; a non-zero return stops the scan
 * and is returned. Returns 0, SL_ERR_FORMAT (err filled), or member's value. */
int sl_json_scan_object(const char *text, size_t len,
                        int (*member)(void *ctx, const struct sl_json_member *m), void *ctx,
                        struct sl_json_error *err);

/* Decode the string literal at p (starting with '"'), appending its content to out (may be
 * NULL to only validate). Returns the position after the closing quote or NULL with *err.
 * Fails with reason "string over cap" when out's cap is reached. */
const char *sl_json_decode_string(const char *base, const char *p, const char *end,
                                  struct sl_buf *out, struct sl_json_error *err);
/* The same for a string already validated (its bytes are known to be valid UTF-8, as those
 * of a member that sl_json_scan_object accepted): the UTF-8 check is skipped. */
const char *sl_json_decode_string_valid(const char *base, const char *p, const char *end,
                                        struct sl_buf *out, struct sl_json_error *err);

/* Compare the escaped key of m with a plain C string. */
int sl_json_key_eq(const struct sl_json_member *m, const char *key);

/* Append the shortest JSON text that reads back as exactly `v` (null for NaN/inf). */
int sl_json_put_double(struct sl_buf *out, double v);

#endif
