/* sluice dedup: dispatch to `exact` or `fuzzy`, and helpers both use. */
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

int dedup_usage_error(const char *synopsis)
{
    const char *const usage[] = { synopsis, NULL };
    return sl_usage_error(usage);
}

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

int cmd_dedup(int argc, const char **argv)
{
    if (argc < 2) {
        sl_usage_print(stderr, cmd_dedup_usage, NULL);
        return 2;
    }
    const char *sub = argv[1];
    if (!strcmp(sub, "-h") || !strcmp(sub, "--help")) {
        sl_usage_print(stdout, cmd_dedup_usage, NULL);
        return 0;
    }
    if (!strcmp(sub, "exact"))
        return dedup_exact_main(argc, argv);
    if (!strcmp(sub, "fuzzy"))
        return dedup_fuzzy_main(argc, argv);
    sl_error("unknown dedup mode '%s'\nhint: use 'sluice dedup exact' or 'sluice dedup fuzzy'",
             sub);
    sl_usage_print(stderr, cmd_dedup_usage, NULL);
    return 2;
}
