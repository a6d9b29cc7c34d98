/* What the dedup engines share (curate/dedup/dedup.h). */
#include "curate/dedup/dedup.h"

#include "core/buf.h"
#include "core/doc.h"
#include "core/err.h"

#include <json-c/json.h>
#include <string.h>

int dd_get_key(struct sl_doc *d, const char *key, struct sl_buf *out)
{
    const char *dot = strchr(key, '.');
    if (!dot)
        return sl_doc_get_text_form(d, key, out);
    char first[256];
    size_t fl = (size_t)(dot - key);
    if (fl >= sizeof(first))
        return SL_ERR_NOTFOUND;
    memcpy(first, key, fl);
    first[fl] = '\0';
    struct json_object *o = sl_doc_get_json(d, first);
    if (!o)
        return SL_ERR_NOTFOUND;
    struct json_object *cur = o;
    const char *p = dot + 1;
    int rc = 0;
    while (*p) {
        size_t len = strcspn(p, ".");
        char seg[256];
        if (len >= sizeof(seg) || !json_object_is_type(cur, json_type_object)) {
            rc = SL_ERR_NOTFOUND;
            break;
        }
        memcpy(seg, p, len);
        seg[len] = '\0';
        struct json_object *next;
        if (!json_object_object_get_ex(cur, seg, &next)) {
            rc = SL_ERR_NOTFOUND;
            break;
        }
        cur = next;
        p += len;
        if (*p == '.')
            p++;
    }
    if (!rc) {
        if (json_object_is_type(cur, json_type_string))
            rc = sl_buf_append(out, json_object_get_string(cur),
                               (size_t)json_object_get_string_len(cur));
        else if (json_object_is_type(cur, json_type_null))
            rc = SL_ERR_NOTFOUND;
        else
            rc = sl_buf_puts(out, json_object_to_json_string_ext(cur, JSON_C_TO_STRING_PLAIN));
    }
    json_object_put(o);
    return rc;
}

size_t dd_lower_bound_u64(const uint64_t *v, size_t n, uint64_t x)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (v[mid] < x)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}
