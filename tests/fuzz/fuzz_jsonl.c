/* Fuzz the JSONL path: arbitrary bytes (possibly compressed) through the JSONL reader, and
 * each line through the document scanner with a differential check against json-c: a line
 * we accept must be accepted by json-c in strict mode with the same decoded text. */
#include "core/buf.h"
#include "core/counters.h"
#include "core/doc.h"
#include "core/jsonl.h"
#include "core/stream.h"

#include <json-c/json.h>
#include <stdlib.h>
#include <string.h>

static void check_against_json_c(const char *line, size_t len)
{
    struct sl_doc d;
    sl_doc_init(&d);
    if (sl_doc_parse(&d, line, len, NULL) == 0 && !memchr(line, '\0', len)) {
        struct json_tokener *tok = json_tokener_new_ex(JSON_TOKENER_DEFAULT_DEPTH);
        json_tokener_set_flags(tok, JSON_TOKENER_STRICT | JSON_TOKENER_VALIDATE_UTF8);
        char *copy = malloc(len + 1);
        memcpy(copy, line, len);
        copy[len] = '\0';
        struct json_object *o = json_tokener_parse_ex(tok, copy, (int)len + 1);
        /* json-c rejects a leading BOM and nesting deeper than its own default; ignore those */
        int deep = json_tokener_get_error(tok) == json_tokener_error_depth;
        if (!o && !deep && !(len >= 3 && memcmp(line, "\xEF\xBB\xBF", 3) == 0))
            abort(); /* we accepted what a strict parser rejects */
        struct json_object *t;
        size_t n;
        const char *ours = sl_doc_text(&d, &n);
        if (o && ours && json_object_object_get_ex(o, "text", &t) &&
            json_object_is_type(t, json_type_string)) {
            /* duplicate keys: both take the last one */
            if ((size_t)json_object_get_string_len(t) != n ||
                memcmp(json_object_get_string(t), ours, n) != 0) {
                /* json-c keeps lone surrogate escapes as CESU bytes; we write U+FFFD */
                if (!strstr(copy, "\\ud") && !strstr(copy, "\\uD"))
                    abort();
            }
        }
        json_object_put(o);
        json_tokener_free(tok);
        free(copy);
    }
    /* serialising what we parsed gives JSON we parse again to the same text */
    if (d.n) {
        struct sl_buf out = SL_BUF_INIT;
        sl_doc_set_int(&d, "fuzz", 1);
        sl_doc_serialize(&d, &out);
        struct sl_doc e;
        sl_doc_init(&e);
        if (sl_doc_parse(&e, out.data, out.len, NULL) != 0)
            abort();
        sl_doc_release(&e);
        sl_buf_release(&out);
    }
    sl_doc_release(&d);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *p = (const char *)data, *end = p + size;
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        size_t len = nl ? (size_t)(nl - p) : (size_t)(end - p);
        check_against_json_c(p, len);
        p += len + 1;
    }

    struct sl_counters c;
    sl_counters_init(&c);
    struct sl_jsonl_opts o;
    memset(&o, 0, sizeof(o));
    o.counters = &c;
    o.id_prefix = "fuzz";
    o.max_line = 1 << 16;
    o.max_output = 1 << 22;
    o.repair_utf8 = size & 1;
    struct sl_jsonl_reader *r;
    if (sl_jsonl_open_source(&r, sl_source_mem(data, size, "fuzz"), &o) == 0) {
        struct sl_doc d;
        sl_doc_init(&d);
        struct sl_buf out = SL_BUF_INIT;
        while (sl_jsonl_next(r, &d) == 1) {
            size_t n;
            if (!sl_doc_text(&d, &n))
                abort(); /* the reader only returns documents with a string text */
            sl_buf_reset(&out);
            sl_doc_serialize(&d, &out);
        }
        sl_buf_release(&out);
        sl_doc_release(&d);
        sl_jsonl_close(r);
    }
    sl_counters_release(&c);
    return 0;
}
