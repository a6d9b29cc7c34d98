/* Fuzz what remote inputs read from a server: a ListObjectsV2 page (S3's XML) and a page of
 * the hub's tree API (JSON), each with and without a prefix or folder, and S3's error
 * words. The first byte picks the parser. Invariants: every object kept lies under the
 * prefix, has an accepted name with no hidden part (no "..": outputs are named after it),
 * and its URL is the bucket's or dataset's and ends with its name; the continuation token
 * is set only when the page says it goes on; the error words fit their buffer. */
#include "core/err.h"
#include "core/inputs.h"
#include "core/remote_internal.h"

#include <stdlib.h>
#include <string.h>

static void check_list(const struct sl_remote_list *l, const char *url_start)
{
    for (size_t i = 0; i < l->n; i++) {
        const struct sl_remote_entry *e = &l->v[i];
        size_t ul = strlen(e->url), rl = strlen(e->rel);
        if (!rl || !rm_accepted(e->rel, sl_jsonl_exts) || strstr(e->rel, "/.") ||
            e->rel[0] == '.' || strncmp(e->url, url_start, strlen(url_start)) != 0 || ul < rl ||
            strcmp(e->url + ul - rl, e->rel) != 0)
            abort();
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    const char *body = (const char *)data + 1;
    size_t n = size - 1;
    struct sl_remote_list l = { NULL, 0, 0 };
    struct sl_buf token = SL_BUF_INIT;
    switch (data[0] % 5) {
    case 0:
    case 1: {
        const char *prefix = data[0] % 5 ? "data/" : "";
        int rc = rm_s3_list_page(body, n, "bkt", prefix, sl_jsonl_exts, &l, &token);
        check_list(&l, data[0] % 5 ? "s3://bkt/data/" : "s3://bkt/");
        if (token.len && (rc || !memmem(body, n, "<IsTruncated>true</IsTruncated>", 31)))
            abort();
        break;
    }
    case 2:
    case 3: {
        const char *path = data[0] % 5 == 3 ? "data" : "";
        rm_hf_list_page(body, n, "org/name", data[0] & 0x80 ? "v1" : "main", path, sl_jsonl_exts,
                        &l);
        check_list(&l, data[0] & 0x80 ? "hf://datasets/org/name@v1/" : "hf://datasets/org/name/");
        break;
    }
    default: {
        char words[64];
        memset(words, 'x', sizeof(words));
        rm_s3_error_words(body, n, words, sizeof(words));
        if (!memchr(words, '\0', sizeof(words)))
            abort();
    }
    }
    sl_err_clear();
    sl_remote_list_release(&l);
    sl_buf_release(&token);
    return 0;
}
