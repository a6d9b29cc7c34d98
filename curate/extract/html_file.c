/* html_extract_file: one page per file, read through core/stream (compression detected
 * from the bytes), extracted with html_extract, turned into a struct sl_doc. */
#include "curate/extract/html_file.h"

#include "core/buf.h"
#include "core/counters.h"
#include "core/doc.h"
#include "core/err.h"
#include "core/stream.h"
#include "curate/extract/html.h"

#include <string.h>
#include <strings.h>

static const char *const EXTS[] = { ".gz", ".zst", ".bz2", ".html", ".htm", ".xhtml", ".shtml" };

size_t html_file_id(const char *path, char *out, size_t n)
{
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    size_t len = strlen(base);
    for (int again = 1; again;) {
        again = 0;
        for (size_t i = 0; i < sizeof(EXTS) / sizeof(EXTS[0]); i++) {
            size_t el = strlen(EXTS[i]);
            if (len > el && strncasecmp(base + len - el, EXTS[i], el) == 0) {
                len -= el;
                again = 1;
            }
        }
    }
    if (n == 0)
        return 0;
    if (len >= n)
        len = n - 1;
    memcpy(out, base, len);
    out[len] = 0;
    return len;
}

static void count(struct sl_counters *c, const char *name, uint64_t v)
{
    if (c)
        sl_counters_add(c, name, v);
}

int html_extract_file(const char *path, struct sl_doc *doc, struct sl_counters *c)
{
    return html_extract_file_max(path, HTML_MAX_INPUT, doc, c);
}

int html_extract_file_max(const char *path, size_t max_input, struct sl_doc *doc,
                          struct sl_counters *c)
{
    struct sl_buf raw;
    struct html_doc hd;
    int rc;
    if (!max_input)
        max_input = HTML_MAX_INPUT;
    sl_buf_init(&raw, max_input);
    html_doc_init(&hd);
    count(c, "html_files", 1);
    rc = sl_read_file(path, &raw);
    if (rc == SL_ERR_TOOBIG) {
        count(c, "html_too_large", 1);
        rc = sl_err_set(SL_ERR_TOOBIG, "cannot extract '%s': page is over the %zu-byte cap (--max-record)",
                        path, max_input);
        goto out;
    }
    if (rc)
        goto out; /* the stream's message names the file */
    count(c, "html_bytes", raw.len);
    rc = html_extract_max(raw.data ? raw.data : "", raw.len, NULL, max_input, &hd);
    if (rc) {
        rc = sl_err_wrap(rc, "extracting '%s': ", path);
        goto out;
    }
    if (hd.text.len == 0) {
        count(c, "html_no_text", 1);
        rc = 0;
        goto out;
    }
    char id[256];
    size_t idn = html_file_id(path, id, sizeof(id));
    sl_doc_reset(doc);
    if ((rc = sl_doc_set_str(doc, "id", id, idn)) != 0 ||
        (rc = sl_doc_set_text(doc, hd.text.data, hd.text.len)) != 0)
        goto out;
    if (hd.title.len && (rc = sl_doc_set_str(doc, "title", hd.title.data, hd.title.len)) != 0)
        goto out;
    if (hd.lang.len && (rc = sl_doc_set_str(doc, "lang", hd.lang.data, hd.lang.len)) != 0)
        goto out;
    rc = 1;
out:
    sl_buf_release(&raw);
    html_doc_release(&hd);
    return rc;
}
