/* Streaming JSONL reader over any compressed stream (core/stream.h).
 *
 * Each call to sl_jsonl_next returns the next well-formed document. Lines that cannot be
 * used are skipped and counted under "skipped_<reason>" in the caller's counters, and the
 * reason is reported through the `on_skip` callback as "FILE:LINE:COL: reason"; the
 * library itself never prints. Reasons: invalid_json, invalid_utf8, missing_text,
 * text_not_string, line_too_long. Blank lines are counted as "blank_lines", lines whose
 * invalid UTF-8 was replaced (repair_utf8) as "repaired_utf8_lines"; both are reported to
 * on_skip with reason "blank_line" / "repaired_utf8" and a NULL message.
 */
#ifndef SL_JSONL_H
#define SL_JSONL_H

#include <stddef.h>
#include <stdint.h>

#include "core/doc.h"

struct sl_buf;
struct sl_counters;
struct sl_source;

/* (the default of a --max-line option row, SL_OPT_MAX_LINE: "64M") */
#define SL_JSONL_DEFAULT_MAX_LINE (64u << 20)

struct sl_jsonl_opts {
    size_t max_line;        /* 0: SL_JSONL_DEFAULT_MAX_LINE */
    const char *text_key;   /* NULL: "text" */
    int allow_missing_text; /* return documents without a string text_key */
    int repair_utf8;        /* replace invalid UTF-8 with U+FFFD (counted) instead of skipping */
    const char *id_key;     /* NULL: "id" */
    const char *id_prefix;  /* non-NULL: documents without an id get "<id_prefix>:<line>" */
    uint64_t max_output;    /* cap on decompressed bytes per file (0: none) */
    struct sl_counters *counters; /* where skips are counted (may be NULL) */
    void (*on_skip)(void *ctx, const char *reason, const char *message);
    void *ctx;
};

struct sl_jsonl_reader;

/* Open a file (any supported compression). On failure *out is NULL. */
int sl_jsonl_open(struct sl_jsonl_reader **out, const char *path, const struct sl_jsonl_opts *o);
/* Read from a source (ownership passes to the reader). */
int sl_jsonl_open_source(struct sl_jsonl_reader **out, struct sl_source *src,
                         const struct sl_jsonl_opts *o);
void sl_jsonl_close(struct sl_jsonl_reader *r);

/* 1: a document is in *d; 0: end of input; <0: the stream failed (truncated, corrupt,
 * unreadable) and reading must stop; the message names the file and byte offset. */
int sl_jsonl_next(struct sl_jsonl_reader *r, struct sl_doc *d);

/* Call fn for each document of r in order, with r (its line number and offsets) and the
 * document (the function's own, valid during the call). fn returns 0 to go on, >0 to stop
 * reading (then 0 is returned) or <0 to fail (returned, with fn's message). 0 at the end of
 * the input, or <0 when the stream fails (sl_jsonl_next). */
typedef int (*sl_jsonl_doc_fn)(void *ctx, struct sl_jsonl_reader *r, struct sl_doc *d);
int sl_jsonl_each(struct sl_jsonl_reader *r, sl_jsonl_doc_fn fn, void *ctx);

/* sl_jsonl_next in two halves, so that lines can be read in order on one thread and parsed
 * on others: sl_jsonl_next_line reads a line, sl_jsonl_parse_line (reentrant) makes it a
 * document or says why not, and sl_jsonl_count_line counts and reports the outcome as
 * sl_jsonl_next does (call it in line order, on the reader's thread). Ids are not added
 * (id_prefix): that is sl_jsonl_next's. */
enum sl_jsonl_outcome {
    SL_JSONL_INVALID_JSON,
    SL_JSONL_INVALID_UTF8,
    SL_JSONL_MISSING_TEXT,
    SL_JSONL_NOT_STRING,
    SL_JSONL_TOO_LONG,
    SL_JSONL_BLANK,
    SL_JSONL_NOUTCOMES, /* the outcomes above are skips, counted */
    SL_JSONL_DOC,       /* a document */
};
/* Counter names ("skipped_invalid_json", ..., "blank_lines") and on_skip reasons
 * ("invalid_json", ..., "blank_line") of the skip outcomes. */
extern const char *const sl_jsonl_counters[SL_JSONL_NOUTCOMES];
extern const char *const sl_jsonl_reasons[SL_JSONL_NOUTCOMES];
/* The counter of an on_skip reason: the sl_jsonl_counters entry of a skip reason,
 * "repaired_utf8_lines" for "repaired_utf8", else "skipped_<reason>" written to key (n
 * bytes). */
const char *sl_jsonl_skip_counter(const char *reason, char *key, size_t n);

struct sl_jsonl_line {
    uint64_t line_no;
    enum sl_jsonl_outcome outcome;
    int repaired;      /* invalid UTF-8 replaced (repair_utf8) */
    char message[512]; /* "FILE:LINE:COL: reason, skipped" for a skip other than blank */
};

/* 1: a line in *line and *len with l->line_no set, l->outcome SL_JSONL_DOC (to be parsed) or
 * SL_JSONL_TOO_LONG (no line: *line NULL, the message set); 0: end of input; <0: the
 * stream failed. The line stays valid until the next call. */
int sl_jsonl_next_line(struct sl_jsonl_reader *r, const char **line, size_t *len,
                       struct sl_jsonl_line *l);
/* 1 with the document in *d, or 0 with l->outcome and l->message saying why not; l->repaired
 * tells whether the line was repaired (fixed: scratch for the repaired line). o and name
 * as the reader's (sl_jsonl_reader_opts, sl_jsonl_name). */
int sl_jsonl_parse_line(const struct sl_jsonl_opts *o, const char *name, const char *line, size_t len,
                        struct sl_doc *d, struct sl_buf *fixed, struct sl_jsonl_line *l);
void sl_jsonl_count_line(struct sl_jsonl_reader *r, const struct sl_jsonl_line *l);
/* The reader's options (with defaults filled in) and file name. */
const struct sl_jsonl_opts *sl_jsonl_reader_opts(const struct sl_jsonl_reader *r);
const char *sl_jsonl_name(const struct sl_jsonl_reader *r);

uint64_t sl_jsonl_line_no(const struct sl_jsonl_reader *r);
/* Decompressed byte offset where the current line starts (the last document returned, or
 * the line being reported to on_skip). */
uint64_t sl_jsonl_line_offset(const struct sl_jsonl_reader *r);
/* Decompressed and compressed bytes consumed so far. */
uint64_t sl_jsonl_bytes(const struct sl_jsonl_reader *r);
uint64_t sl_jsonl_bytes_in(const struct sl_jsonl_reader *r);
struct sl_reader *sl_jsonl_stream(struct sl_jsonl_reader *r);

/* An id prefix for a file: the given (relative) path without .jsonl/.json/.parquet and
 * compression extensions ("web/part-7.jsonl.zst" -> "web/part-7"). Caller frees. */
char *sl_jsonl_id_stem(const char *path);

#endif
