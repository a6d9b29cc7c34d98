/* JSONL documents as raw lines with member spans; untouched members pass through. */
#include "core/doc.h"

#include "core/alloc.h"
#include "core/err.h"
#include "core/stream.h"

#include <inttypes.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void sl_doc_init(struct sl_doc *d)
{
    memset(d, 0, sizeof(*d));
    d->text_key = "text";
}

static void clear_fields(struct sl_doc *d)
{
    for (size_t i = 0; i < d->n; i++) {
        free(d->f[i].owned_key);
        free(d->f[i].owned_val);
    }
    d->n = 0;
    d->modified = 0;
    d->text_state = 0;
    sl_buf_reset(&d->text);
}

void sl_doc_release(struct sl_doc *d)
{
    clear_fields(d);
    free(d->f);
    sl_buf_release(&d->raw);
    sl_buf_release(&d->text);
    sl_buf_release(&d->scratch);
    memset(d, 0, sizeof(*d));
}

void sl_doc_reset(struct sl_doc *d)
{
    clear_fields(d);
    d->scanned = 0;
    sl_buf_reset(&d->raw);
    sl_buf_append(&d->raw, "{}", 2);
    d->modified = 1;
}

void sl_doc_set_text_key(struct sl_doc *d, const char *key)
{
    d->text_key = key;
    d->text_state = 0;
}

static struct sl_doc_field *push_field(struct sl_doc *d)
{
    if (d->n == d->cap) {
        d->cap = d->cap ? d->cap * 2 : 8;
        d->f = sl_xrealloc(d->f, d->cap * sizeof(*d->f));
    }
    struct sl_doc_field *f = &d->f[d->n++];
    memset(f, 0, sizeof(*f));
    return f;
}

static int on_member(void *ctx, const struct sl_json_member *m)
{
    struct sl_doc *d = ctx;
    struct sl_doc_field *f = push_field(d);
    f->key = m->key;
    f->key_len = m->key_len;
    f->key_escaped = m->key_escaped;
    f->val = m->val;
    f->val_len = m->val_len;
    return 0;
}

int sl_doc_parse(struct sl_doc *d, const char *line, size_t len, struct sl_json_error *err)
{
    clear_fields(d);
    sl_buf_reset(&d->raw);
    /* Keep the object only: no BOM, no surrounding whitespace (or '\r'). */
    const char *start = line, *end = line + len;
    if (len >= 3 && memcmp(line, "\xEF\xBB\xBF", 3) == 0)
        line += 3;
    line = sl_json_skip_ws(line, end);
    /* a BOM belongs at the very start of the line: one after blanks or after another BOM is
     * not JSON (the object scanner would skip it as if it were the first) */
    if (end - line >= 3 && memcmp(line, "\xEF\xBB\xBF", 3) == 0) {
        d->n = 0;
        if (err) {
            err->offset = (size_t)(line - start);
            err->reason = "expected a JSON object (a byte order mark inside the line)";
        }
        return SL_ERR_FORMAT;
    }
    while (end > line && (end[-1] == ' ' || end[-1] == '\t' || end[-1] == '\r' || end[-1] == '\n'))
        end--;
    len = (size_t)(end - line);
    if (sl_buf_append(&d->raw, line, len))
        return sl_err_set(SL_ERR_TOOBIG, "document too large");
    int rc = sl_json_scan_object(d->raw.data, d->raw.len, on_member, d, err);
    if (rc) {
        d->n = 0;
        d->scanned = 0;
        return rc;
    }
    d->scanned = 1;
    return 0;
}

static int field_key_eq(const struct sl_doc_field *f, const char *key)
{
    struct sl_json_member m = { f->key, f->key_len, f->key_escaped, NULL, 0 };
    return sl_json_key_eq(&m, key);
}

long sl_doc_find(const struct sl_doc *d, const char *key)
{
    for (size_t i = d->n; i-- > 0;)
        if (field_key_eq(&d->f[i], key))
            return (long)i;
    return -1;
}

const char *sl_doc_get_raw(const struct sl_doc *d, const char *key, size_t *len)
{
    long i = sl_doc_find(d, key);
    if (i < 0)
        return NULL;
    *len = d->f[i].val_len;
    return d->f[i].val;
}

int sl_doc_get_str(const struct sl_doc *d, const char *key, struct sl_buf *out)
{
    long i = sl_doc_find(d, key);
    if (i < 0)
        return SL_ERR_NOTFOUND;
    const struct sl_doc_field *f = &d->f[i];
    const char *raw = f->val;
    size_t len = f->val_len;
    if (raw[0] != '"')
        return SL_ERR_FORMAT;
    struct sl_json_error err;
    /* a value of the line as parsed was validated then; one set since, not necessarily */
    int valid = d->scanned && !f->owned_val;
    if (!(valid ? sl_json_decode_string_valid : sl_json_decode_string)(raw, raw, raw + len, out, &err))
        return sl_err_set(SL_ERR_TOOBIG, "member '%s': %s", key, err.reason);
    return 0;
}

int sl_doc_get_text_form(const struct sl_doc *d, const char *key, struct sl_buf *out)
{
    size_t len;
    const char *raw = sl_doc_get_raw(d, key, &len);
    if (!raw)
        return SL_ERR_NOTFOUND;
    if (raw[0] == '"')
        return sl_doc_get_str(d, key, out);
    return sl_buf_append(out, raw, len);
}

struct json_object *sl_doc_get_json(const struct sl_doc *d, const char *key)
{
    size_t len;
    const char *raw = sl_doc_get_raw(d, key, &len);
    if (!raw)
        return NULL;
    /* pass the terminating NUL too: it ends a bare number */
    char *copy = sl_xstrndup(raw, len);
    struct json_tokener *tok = json_tokener_new();
    struct json_object *o = json_tokener_parse_ex(tok, copy, (int)len + 1);
    json_tokener_free(tok);
    free(copy);
    return o;
}

const char *sl_doc_text(struct sl_doc *d, size_t *len)
{
    if (d->text_state == 0) {
        sl_buf_reset(&d->text);
        int rc = sl_doc_get_str(d, d->text_key, &d->text);
        d->text_state = rc == 0 ? 1 : rc == SL_ERR_NOTFOUND ? -1 : -2;
    }
    if (d->text_state != 1)
        return NULL;
    *len = d->text.len;
    return d->text.data ? d->text.data : "";
}

int sl_doc_set_raw(struct sl_doc *d, const char *key, const char *raw, size_t len)
{
    long i = sl_doc_find(d, key);
    struct sl_doc_field *f;
    if (i >= 0) {
        f = &d->f[i];
        free(f->owned_val);
    } else {
        f = push_field(d);
        f->owned_key = sl_xstrdup(key);
        f->key = f->owned_key;
        f->key_len = strlen(key);
        f->key_escaped = 0;
        /* A key that needs escaping is stored in escaped form. */
        for (const char *k = key; *k; k++) {
            if (*k == '"' || *k == '\\' || (unsigned char)*k < 0x20) {
                struct sl_buf esc = SL_BUF_INIT;
                sl_buf_json_str(&esc, key, strlen(key));
                free(f->owned_key);
                f->owned_key = sl_xstrndup(esc.data + 1, esc.len - 2);
                f->key = f->owned_key;
                f->key_len = esc.len - 2;
                f->key_escaped = 1;
                sl_buf_release(&esc);
                break;
            }
        }
    }
    f->owned_val = sl_xstrndup(raw, len);
    f->val = f->owned_val;
    f->val_len = len;
    d->modified = 1;
    if (strcmp(key, d->text_key) == 0)
        d->text_state = 0;
    return 0;
}

int sl_doc_set_str(struct sl_doc *d, const char *key, const char *s, size_t n)
{
    sl_buf_reset(&d->scratch);
    int rc = sl_buf_json_str(&d->scratch, s, n);
    if (rc)
        return rc;
    return sl_doc_set_raw(d, key, d->scratch.data, d->scratch.len);
}

int sl_doc_set_text(struct sl_doc *d, const char *s, size_t n)
{
    int rc = sl_doc_set_str(d, d->text_key, s, n);
    if (rc)
        return rc;
    /* s may point into the cache itself */
    if (s != d->text.data) {
        sl_buf_reset(&d->text);
        rc = sl_buf_append(&d->text, s, n);
    }
    d->text_state = rc ? 0 : 1;
    return rc;
}

int sl_doc_set_int(struct sl_doc *d, const char *key, int64_t v)
{
    char tmp[32];
    int n = snprintf(tmp, sizeof(tmp), "%" PRId64, v);
    return sl_doc_set_raw(d, key, tmp, (size_t)n);
}

int sl_doc_set_double(struct sl_doc *d, const char *key, double v)
{
    sl_buf_reset(&d->scratch);
    int rc = sl_json_put_double(&d->scratch, v);
    if (rc)
        return rc;
    return sl_doc_set_raw(d, key, d->scratch.data, d->scratch.len);
}

int sl_doc_set_bool(struct sl_doc *d, const char *key, int v)
{
    return sl_doc_set_raw(d, key, v ? "true" : "false", v ? 4 : 5);
}

int sl_doc_prepend_str(struct sl_doc *d, const char *key, const char *s, size_t n)
{
    int rc = sl_doc_set_str(d, key, s, n);
    if (rc)
        return rc;
    long i = sl_doc_find(d, key);
    if (i > 0) {
        struct sl_doc_field tmp = d->f[i];
        memmove(&d->f[1], &d->f[0], (size_t)i * sizeof(*d->f));
        d->f[0] = tmp;
    }
    return 0;
}

int sl_doc_remove(struct sl_doc *d, const char *key)
{
    int removed = 0;
    for (size_t i = 0; i < d->n;) {
        if (field_key_eq(&d->f[i], key)) {
            free(d->f[i].owned_key);
            free(d->f[i].owned_val);
            memmove(&d->f[i], &d->f[i + 1], (d->n - i - 1) * sizeof(*d->f));
            d->n--;
            removed = 1;
        } else {
            i++;
        }
    }
    if (removed) {
        d->modified = 1;
        if (strcmp(key, d->text_key) == 0)
            d->text_state = 0;
    }
    return removed;
}

int sl_doc_serialize(struct sl_doc *d, struct sl_buf *out)
{
    if (!d->modified)
        return sl_buf_append(out, d->raw.data, d->raw.len);
    int rc = sl_buf_putc(out, '{');
    for (size_t i = 0; i < d->n && !rc; i++) {
        const struct sl_doc_field *f = &d->f[i];
        if (i)
            rc = sl_buf_putc(out, ',');
        if (!rc)
            rc = sl_buf_putc(out, '"');
        if (!rc)
            rc = sl_buf_append(out, f->key, f->key_len);
        if (!rc)
            rc = sl_buf_append(out, "\":", 2);
        if (!rc)
            rc = sl_buf_append(out, f->val, f->val_len);
    }
    if (!rc)
        rc = sl_buf_putc(out, '}');
    return rc;
}

int sl_doc_write(struct sl_doc *d, struct sl_writer *w)
{
    if (!d->modified) {
        int rc = sl_writer_write(w, d->raw.data, d->raw.len);
        return rc ? rc : sl_writer_write(w, "\n", 1);
    }
    sl_buf_reset(&d->scratch);
    int rc = sl_doc_serialize(d, &d->scratch);
    if (!rc)
        rc = sl_buf_putc(&d->scratch, '\n');
    if (!rc)
        rc = sl_writer_write(w, d->scratch.data, d->scratch.len);
    return rc;
}
