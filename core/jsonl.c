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

_Static_assert(SL_JSONL_DEFAULT_MAX_LINE == 67108864, "SL_JSONL_DEFAULT_MAX_LINE_TEXT");

struct sl_jsonl_reader {
    struct sl_reader *in;
    struct sl_jsonl_opts o;
    char *name;
    struct sl_buf fixed; /* repaired line */
    struct sl_buf idbuf;
    size_t slots[7];
    uint64_t line_start; /* decompressed offset of the current line */
};

enum { C_INVALID_JSON, C_INVALID_UTF8, C_MISSING_TEXT, C_NOT_STRING, C_TOO_LONG, C_BLANK, C_REPAIRED };
static const char *const slot_names[] = {
    "skipped_invalid_json", "skipped_invalid_utf8", "skipped_missing_text",
    "skipped_text_not_string", "skipped_line_too_long", "blank_lines", "repaired_utf8_lines",
};

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
    if (r->o.counters)
        for (int i = 0; i < 7; i++)
            r->slots[i] = sl_counters_slot(r->o.counters, slot_names[i]);
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
        r->o.on_skip(r->o.ctx, which == C_BLANK ? "blank_line" : "repaired_utf8", NULL);
}

static void skip(struct sl_jsonl_reader *r, int which, const char *reason, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static void skip(struct sl_jsonl_reader *r, int which, const char *reason, const char *fmt, ...)
{
    count(r, which);
    if (!r->o.on_skip)
        return;
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    r->o.on_skip(r->o.ctx, reason, msg);
}

int sl_jsonl_next(struct sl_jsonl_reader *r, struct sl_doc *d)
{
    for (;;) {
        const char *line;
        size_t len;
        r->line_start = sl_reader_out_offset(r->in);
        int rc = sl_reader_getline(r->in, &line, &len, r->o.max_line);
        if (rc == 0)
            return 0;
        unsigned long long ln = (unsigned long long)sl_reader_line_no(r->in);
        if (rc == SL_ERR_TOOBIG) {
            skip(r, C_TOO_LONG, "line_too_long", "%s:%llu: line longer than %zu bytes, skipped",
                 r->name, ln, r->o.max_line);
            continue;
        }
        if (rc < 0)
            return rc;

        const char *p = sl_json_skip_ws(line, line + len);
        if (p == line + len) {
            count(r, C_BLANK);
            continue;
        }
        if (r->o.repair_utf8) {
            size_t bad = sl_utf8_validate(line, len);
            if (bad < len) {
                sl_buf_reset(&r->fixed);
                if (sl_utf8_repair(&r->fixed, line, len, NULL) == 0) {
                    line = r->fixed.data;
                    len = r->fixed.len;
                    count(r, C_REPAIRED);
                }
            }
        }
        struct sl_json_error err;
        if (sl_doc_parse(d, line, len, &err) != 0) {
            int utf8 = strstr(err.reason, "UTF-8") != NULL;
            skip(r, utf8 ? C_INVALID_UTF8 : C_INVALID_JSON, utf8 ? "invalid_utf8" : "invalid_json",
                 "%s:%llu:%zu: %s, skipped", r->name, ln, err.offset + 1, err.reason);
            continue;
        }
        d->file = r->name;
        d->line = ln;
        sl_doc_set_text_key(d, r->o.text_key);
        if (!r->o.allow_missing_text) {
            /* the scanner validated the value; only its type matters here */
            size_t tl;
            const char *raw = sl_doc_get_raw(d, r->o.text_key, &tl);
            if (!raw || raw[0] != '"') {
                if (!raw)
                    skip(r, C_MISSING_TEXT, "missing_text", "%s:%llu: no \"%s\" member, skipped",
                         r->name, ln, r->o.text_key);
                else
                    skip(r, C_NOT_STRING, "text_not_string",
                         "%s:%llu: \"%s\" is not a string, skipped", r->name, ln, r->o.text_key);
                continue;
            }
        }
        if (r->o.id_prefix && sl_doc_find(d, r->o.id_key) < 0) {
            sl_buf_reset(&r->idbuf);
            sl_buf_printf(&r->idbuf, "%s:%llu", r->o.id_prefix, ln);
            sl_doc_prepend_str(d, r->o.id_key, r->idbuf.data, r->idbuf.len);
        }
        return 1;
    }
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
    static const char *const exts[] = { ".zst", ".zstd", ".gz", ".bz2", ".jsonl", ".json", ".ndjson" };
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
