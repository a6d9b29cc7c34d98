/* Streaming JSONL reader: lines -> validated documents, bad lines counted and reported. */
#include "core/jsonl.h"

#include "core/alloc.h"
#include "core/counters.h"
#include "core/err.h"
#include "core/stream.h"
#include "core/utf8.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct sl_jsonl_reader {
    struct sl_reader *in;
    struct sl_jsonl_opts o;
    char *name;
    struct sl_buf fixed; /* repaired line */
    struct sl_buf idbuf;
    size_t slots[SL_JSONL_NOUTCOMES + 1];
    uint64_t line_start; /* decompressed offset of the current line */
};

/* counter slots: the outcomes (enum sl_jsonl_outcome, but for SL_JSONL_DOC), then this */
enum { C_BLANK = SL_JSONL_BLANK, C_REPAIRED = SL_JSONL_NOUTCOMES };
/* a line whose invalid UTF-8 was replaced: reported as this reason, counted under this name */
#define REPAIRED_REASON  "repaired_utf8"
#define REPAIRED_COUNTER "repaired_utf8_lines"

static int setup(struct sl_jsonl_reader *r, const struct sl_jsonl_opts *o)
{
    if (o)
        r->o = *o;
    if (!r->o.max_line)
        r->o.max_line = SL_JSONL_DEFAULT_MAX_LINE;
    if (!r->o.text_key)
        r->o.text_key = "text";
    if (!r->o.id_key)
        r->o.id_key = "id";
    sl_buf_init(&r->fixed, 0);
    sl_buf_init(&r->idbuf, 0);
    if (r->o.counters) {
        for (int i = 0; i < SL_JSONL_NOUTCOMES; i++)
            r->slots[i] = sl_counters_slot(r->o.counters, sl_jsonl_counters[i]);
        r->slots[C_REPAIRED] = sl_counters_slot(r->o.counters, REPAIRED_COUNTER);
    }
    return 0;
}

int sl_jsonl_open_source(struct sl_jsonl_reader **out, struct sl_source *src,
                         const struct sl_jsonl_opts *o)
{
    *out = NULL;
    struct sl_jsonl_reader *r = sl_xcalloc(1, sizeof(*r));
    r->name = sl_xstrdup(src->name);
    struct sl_reader_opts ro = { SL_CODEC_AUTO, o ? o->max_output : 0 };
    int rc = sl_reader_open_source(&r->in, src, &ro);
    if (rc) {
        free(r->name);
        free(r);
        return rc;
    }
    setup(r, o);
    *out = r;
    return 0;
}

int sl_jsonl_open(struct sl_jsonl_reader **out, const char *path, const struct sl_jsonl_opts *o)
{
    struct sl_source *src;
    *out = NULL;
    int rc = sl_source_file(&src, path);
    if (rc)
        return rc;
    return sl_jsonl_open_source(out, src, o);
}

void sl_jsonl_close(struct sl_jsonl_reader *r)
{
    if (!r)
        return;
    sl_reader_close(r->in);
    sl_buf_release(&r->fixed);
    sl_buf_release(&r->idbuf);
    free(r->name);
    free(r);
}

static void count(struct sl_jsonl_reader *r, int which)
{
    if (r->o.counters)
        r->o.counters->values[r->slots[which]]++;
    if ((which == C_BLANK || which == C_REPAIRED) && r->o.on_skip)
        r->o.on_skip(r->o.ctx, which == C_BLANK ? "blank_line" : REPAIRED_REASON, NULL);
}

/* Apply a line's outcome: its counts and its report to on_skip. */
static void apply(struct sl_jsonl_reader *r, const struct sl_jsonl_line *l)
{
    if (l->repaired)
        count(r, C_REPAIRED);
    if (l->outcome == SL_JSONL_DOC)
        return;
    count(r, (int)l->outcome);
    if (l->outcome != SL_JSONL_BLANK && r->o.on_skip)
        r->o.on_skip(r->o.ctx, sl_jsonl_reasons[l->outcome], l->message);
}

const char *const sl_jsonl_counters[SL_JSONL_NOUTCOMES] = {
    "skipped_invalid_json", "skipped_invalid_utf8", "skipped_missing_text",
    "skipped_text_not_string", "skipped_line_too_long", "blank_lines",
};
const char *const sl_jsonl_reasons[SL_JSONL_NOUTCOMES] = {
    "invalid_json", "invalid_utf8", "missing_text", "text_not_string", "line_too_long", "blank_line",
};

const char *sl_jsonl_skip_counter(const char *reason, char *key, size_t n)
{
    for (int i = 0; i < SL_JSONL_NOUTCOMES; i++)
        if (!strcmp(reason, sl_jsonl_reasons[i]))
            return sl_jsonl_counters[i];
    if (!strcmp(reason, REPAIRED_REASON))
        return REPAIRED_COUNTER;
    snprintf(key, n, "skipped_%s", reason);
    return key;
}

static void set_skip(struct sl_jsonl_line *l, enum sl_jsonl_outcome o, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void set_skip(struct sl_jsonl_line *l, enum sl_jsonl_outcome o, const char *fmt, ...)
{
    l->outcome = o;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(l->message, sizeof(l->message), fmt, ap);
    va_end(ap);
}

int sl_jsonl_next_line(struct sl_jsonl_reader *r, const char **line, size_t *len,
                       struct sl_jsonl_line *l)
{
    r->line_start = sl_reader_out_offset(r->in);
    int rc = sl_reader_getline(r->in, line, len, r->o.max_line);
    if (rc == 0)
        return 0;
    l->line_no = sl_reader_line_no(r->in);
    l->outcome = SL_JSONL_DOC;
    l->repaired = 0;
    l->message[0] = 0;
    if (rc == SL_ERR_TOOBIG) {
        set_skip(l, SL_JSONL_TOO_LONG, "%s:%llu: line longer than %zu bytes, skipped", r->name,
                 (unsigned long long)l->line_no, r->o.max_line);
        *line = NULL;
        *len = 0;
        return 1;
    }
    return rc < 0 ? rc : 1;
}

int sl_jsonl_parse_line(const struct sl_jsonl_opts *o, const char *name, const char *line, size_t len,
                        struct sl_doc *d, struct sl_buf *fixed, struct sl_jsonl_line *l)
{
    unsigned long long ln = (unsigned long long)l->line_no;
    const char *text_key = o->text_key ? o->text_key : "text";
    const char *p = sl_json_skip_ws(line, line + len);
    if (p == line + len) {
        l->outcome = SL_JSONL_BLANK;
        return 0;
    }
    if (o->repair_utf8) {
        size_t bad = sl_utf8_validate(line, len);
        if (bad < len) {
            sl_buf_reset(fixed);
            if (sl_utf8_repair(fixed, line, len, NULL) == 0) {
                line = fixed->data;
                len = fixed->len;
                l->repaired = 1;
            }
        }
    }
    struct sl_json_error err;
    if (sl_doc_parse(d, line, len, &err) != 0) {
        int utf8 = strstr(err.reason, "UTF-8") != NULL;
        set_skip(l, utf8 ? SL_JSONL_INVALID_UTF8 : SL_JSONL_INVALID_JSON, "%s:%llu:%zu: %s, skipped",
                 name, ln, err.offset + 1, err.reason);
        return 0;
    }
    d->file = name;
    d->line = l->line_no;
    sl_doc_set_text_key(d, text_key);
    if (!o->allow_missing_text) {
        /* the scanner validated the value; only its type matters here */
        size_t tl;
        const char *raw = sl_doc_get_raw(d, text_key, &tl);
        if (!raw) {
            set_skip(l, SL_JSONL_MISSING_TEXT, "%s:%llu: no \"%s\" member, skipped", name, ln,
                     text_key);
            return 0;
        }
        if (raw[0] != '"') {
            set_skip(l, SL_JSONL_NOT_STRING, "%s:%llu: \"%s\" is not a string, skipped", name, ln,
                     text_key);
            return 0;
        }
    }
    return 1;
}

int sl_jsonl_next(struct sl_jsonl_reader *r, struct sl_doc *d)
{
    for (;;) {
        const char *line;
        size_t len;
        struct sl_jsonl_line l;
        int rc = sl_jsonl_next_line(r, &line, &len, &l);
        if (rc <= 0)
            return rc;
        if (l.outcome == SL_JSONL_DOC && sl_jsonl_parse_line(&r->o, r->name, line, len, d, &r->fixed, &l))
            apply(r, &l);
        else {
            apply(r, &l);
            continue;
        }
        if (r->o.id_prefix && sl_doc_find(d, r->o.id_key) < 0) {
            sl_buf_reset(&r->idbuf);
            sl_buf_printf(&r->idbuf, "%s:%llu", r->o.id_prefix, (unsigned long long)l.line_no);
            sl_doc_prepend_str(d, r->o.id_key, r->idbuf.data, r->idbuf.len);
        }
        return 1;
    }
}

int sl_jsonl_each(struct sl_jsonl_reader *r, sl_jsonl_doc_fn fn, void *ctx)
{
    struct sl_doc d;
    sl_doc_init(&d);
    int rc;
    while ((rc = sl_jsonl_next(r, &d)) > 0 && (rc = fn(ctx, r, &d)) == 0)
        ;
    sl_doc_release(&d);
    return rc < 0 ? rc : 0;
}

void sl_jsonl_count_line(struct sl_jsonl_reader *r, const struct sl_jsonl_line *l)
{
    apply(r, l);
}

const struct sl_jsonl_opts *sl_jsonl_reader_opts(const struct sl_jsonl_reader *r)
{
    return &r->o;
}

const char *sl_jsonl_name(const struct sl_jsonl_reader *r)
{
    return r->name;
}

uint64_t sl_jsonl_line_no(const struct sl_jsonl_reader *r)
{
    return sl_reader_line_no(r->in);
}

uint64_t sl_jsonl_line_offset(const struct sl_jsonl_reader *r)
{
    return r->line_start;
}

uint64_t sl_jsonl_bytes(const struct sl_jsonl_reader *r)
{
    return sl_reader_out_offset(r->in);
}

uint64_t sl_jsonl_bytes_in(const struct sl_jsonl_reader *r)
{
    return sl_reader_in_offset(r->in);
}

struct sl_reader *sl_jsonl_stream(struct sl_jsonl_reader *r)
{
    return r->in;
}

char *sl_jsonl_id_stem(const char *path)
{
    while (path[0] == '.' && path[1] == '/')
        path += 2;
    char *s = sl_xstrdup(path);
    static const char *const exts[] = { ".zst", ".zstd", ".gz", ".bz2", ".jsonl", ".json", ".ndjson",
                                        ".parquet" };
    for (int changed = 1; changed;) {
        changed = 0;
        size_t n = strlen(s);
        for (size_t i = 0; i < sizeof(exts) / sizeof(exts[0]); i++) {
            size_t e = strlen(exts[i]);
            if (n > e && strcmp(s + n - e, exts[i]) == 0) {
                s[n - e] = '\0';
                changed = 1;
                break;
            }
        }
    }
    return s;
}
