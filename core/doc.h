/* struct sl_doc: one JSONL document, kept as its raw line plus the spans of its top-level
 * members. Fields a stage does not touch are written back byte for byte; changed or added
 * fields are re-encoded. The decoded `text` is cached on first use.
 *
 * Lifecycle: sl_doc_init once, sl_doc_parse per line (reuses memory), sl_doc_release.
 */
#ifndef SL_DOC_H
#define SL_DOC_H

#include <stddef.h>
#include <stdint.h>

#include "core/buf.h"
#include "core/json.h"

struct sl_writer;
struct json_object;

struct sl_doc_field {
    const char *key; /* escaped key bytes (not quoted) */
    size_t key_len;
    int key_escaped;
    const char *val; /* raw JSON value */
    size_t val_len;
    char *owned_key; /* set when the field was added */
    char *owned_val; /* set when the value was replaced */
};

struct sl_doc {
    struct sl_buf raw; /* the line as read */
    struct sl_doc_field *f;
    size_t n, cap;
    int modified;
    const char *text_key; /* "text" unless changed with sl_doc_set_text_key */
    struct sl_buf text;   /* decoded text cache */
    int text_state;       /* 0 unknown, 1 decoded, -1 absent, -2 not a string */
    struct sl_buf scratch;
    int scanned; /* raw was checked by sl_doc_parse: its strings are valid UTF-8 */
    /* Where it came from (set by the reader; not owned). */
    const char *file;
    uint64_t line;
};

void sl_doc_init(struct sl_doc *d);
void sl_doc_release(struct sl_doc *d);
/* Start an empty object "{}" (for producers such as extractors). */
void sl_doc_reset(struct sl_doc *d);

/* Parse one line (copied). 0, or SL_ERR_FORMAT with *err (offset into the line). */
int sl_doc_parse(struct sl_doc *d, const char *line, size_t len, struct sl_json_error *err);

/* The key that sl_doc_text reads (default "text"); the string must outlive the doc. */
void sl_doc_set_text_key(struct sl_doc *d, const char *key);

/* The decoded text. Returns NULL when the field is absent or not a string. */
const char *sl_doc_text(struct sl_doc *d, size_t *len);
/* Replace the text (re-encoded on output; the cache is updated). */
int sl_doc_set_text(struct sl_doc *d, const char *s, size_t n);

/* Index of the last member named `key`, or -1. */
long sl_doc_find(const struct sl_doc *d, const char *key);
/* Raw JSON of a member, or NULL. */
const char *sl_doc_get_raw(const struct sl_doc *d, const char *key, size_t *len);
/* Decode a string member into out (appends). 0, SL_ERR_NOTFOUND, or SL_ERR_FORMAT when the
 * member is not a string. */
int sl_doc_get_str(const struct sl_doc *d, const char *key, struct sl_buf *out);
/* A member as text: strings decoded, other values as their raw JSON. 0 or NOTFOUND. */
int sl_doc_get_text_form(const struct sl_doc *d, const char *key, struct sl_buf *out);
/* Parse a member with json-c (nested values). Caller owns the result (json_object_put).
 * NULL when absent. */
struct json_object *sl_doc_get_json(const struct sl_doc *d, const char *key);

/* Set (replace or append) members. The raw form must be valid JSON. */
int sl_doc_set_raw(struct sl_doc *d, const char *key, const char *raw, size_t len);
int sl_doc_set_str(struct sl_doc *d, const char *key, const char *s, size_t n);
int sl_doc_set_int(struct sl_doc *d, const char *key, int64_t v);
int sl_doc_set_double(struct sl_doc *d, const char *key, double v);
int sl_doc_set_bool(struct sl_doc *d, const char *key, int v);
/* Insert a string member as the first member (used for assigned ids). */
int sl_doc_prepend_str(struct sl_doc *d, const char *key, const char *s, size_t n);
/* Remove every member named key; returns 1 if one was removed. */
int sl_doc_remove(struct sl_doc *d, const char *key);

/* Append the document as one JSON line (no newline) to out. */
int sl_doc_serialize(struct sl_doc *d, struct sl_buf *out);
/* Write the document and a newline. */
int sl_doc_write(struct sl_doc *d, struct sl_writer *w);

#endif
