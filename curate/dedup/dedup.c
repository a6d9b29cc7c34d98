/* sluice dedup: what it says when no mode is named, and helpers `exact` and `fuzzy` use. */
#include "curate/commands.h"
#include "curate/dedup/dedup.h"

#include "core/buf.h"
#include "core/doc.h"
#include "core/err.h"
#include "core/log.h"
#include "core/options.h"

#include <json-c/json.h>
#include <stdio.h>
#include <string.h>

const char *const cmd_dedup_usage[] = {
    "sluice dedup exact --out DIR [options] IN...",
    "sluice dedup fuzzy --out DIR [options] IN...",
    "",
    "Remove duplicate documents. 'exact' drops documents whose (optionally normalised)",
    "text, or another member (--key url), has the same 128-bit hash as an earlier one.",
    "'fuzzy' finds near-duplicates with MinHash and LSH (in memory, or in a Redis Cluster)",
    "and keeps the first document of each connected group. 'sluice dedup exact -h' and",
    "'sluice dedup fuzzy -h' show their options.",
    NULL,
};

int dedup_get_key(struct sl_doc *d, const char *key, struct sl_buf *out)
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

/* `sluice dedup` with no mode (argv[1] names none: the dispatcher runs exact and fuzzy) */
static int run(const void *opts, const struct sl_strlist *operands, int argc, const char **argv)
{
    if (operands->n)
        sl_error("unknown dedup mode '%s'\nhint: use 'sluice dedup exact' or 'sluice dedup fuzzy'",
                 operands->v[0]);
    sl_usage_print(stderr, cmd_dedup_usage, NULL);
    return 2;
}

const struct sl_cmd cmd_dedup = { .usage = cmd_dedup_usage, .run = run };
