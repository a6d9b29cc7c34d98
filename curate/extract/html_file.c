/* html_extract_file: one page per file, read through core/stream (compression detected
 * from the bytes; a gzip page in one call of libdeflate), extracted with html_extract,
 * turned into a struct sl_doc. */
#include "curate/extract/html_file.h"

#include "core/buf.h"
#include "core/counters.h"
#include "core/doc.h"
#include "core/err.h"
#include "core/stream.h"
#include "curate/extract/html.h"

#include <libdeflate.h>
#include <stdio.h>
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

/* A gzip page (the usual crawl layout: one .html.gz per page) in one call of libdeflate,
 * about twice as fast as zlib's stream. 0, or -1 when this path does not apply or fails
 * (not gzip, too large, damaged, several members that do not fit): the caller then reads
 * the file through core/stream, which gives the error its message. */
static int read_gzip_fast(const char *path, size_t max_input, struct sl_buf *raw)
{
    int rc = -1;
    FILE *f = fopen(path, "rb");
    struct sl_buf in = SL_BUF_INIT;
    struct libdeflate_decompressor *d = NULL;
    if (!f)
        return -1;
    unsigned char magic[2];
    if (fread(magic, 1, 2, f) != 2 || magic[0] != 0x1f || magic[1] != 0x8b)
        goto out;
    sl_buf_init(&in, max_input);
    if (sl_buf_append(&in, magic, 2))
        goto out;
    for (;;) {
        if (sl_buf_reserve(&in, 1 << 16))
            goto out;
        size_t k = fread(in.data + in.len, 1, 1 << 16, f);
        in.len += k;
        if (k < (1 << 16))
            break;
    }
    if (ferror(f) || in.len < 18)
        goto out;
    const unsigned char *t = (const unsigned char *)in.data + in.len - 4;
    size_t isize = (size_t)t[0] | (size_t)t[1] << 8 | (size_t)t[2] << 16 | (size_t)t[3] << 24;
    if (isize >= max_input || sl_buf_reserve(raw, isize + 1))
        goto out;
    d = libdeflate_alloc_decompressor();
    if (!d)
        goto out;
    size_t in_used = 0, out_used = 0;
    /* the last member's ISIZE is the whole size only for one member; more are rare */
    if (libdeflate_gzip_decompress_ex(d, in.data, in.len, raw->data, isize + 1, &in_used,
                                      &out_used) != LIBDEFLATE_SUCCESS ||
        in_used != in.len || out_used != isize)
        goto out;
    raw->len = out_used;
    raw->data[raw->len] = '\0';
    rc = 0;
out:
    if (rc)
        sl_buf_reset(raw);
    libdeflate_free_decompressor(d);
    sl_buf_release(&in);
    fclose(f);
    return rc;
}

int html_read_file(const char *path, size_t max_input, struct sl_buf *raw)
{
    if (!max_input)
        max_input = HTML_MAX_INPUT;
    sl_buf_init(raw, max_input);
    if (read_gzip_fast(path, max_input, raw) == 0)
        return 0;
    return sl_read_file(path, raw);
}

int html_extract_read(const char *path, int read_rc, const struct sl_buf *raw, size_t max_input,
                      struct sl_doc *doc, struct sl_counters *c)
{
    struct html_doc hd;
    int rc = read_rc;
    if (!max_input)
        max_input = HTML_MAX_INPUT;
    html_doc_init(&hd);
    count(c, "html_files", 1);
    if (rc == SL_ERR_TOOBIG) {
        count(c, "html_too_large", 1);
        rc = sl_err_set(SL_ERR_TOOBIG,
                        "cannot extract '%s': page is over the %zu-byte cap (--max-record)", path,
                        max_input);
        goto out;
    }
    if (rc)
        goto out; /* the stream's message names the file */
    count(c, "html_bytes", raw->len);
    rc = html_extract_max(raw->data ? raw->data : "", raw->len, NULL, max_input, &hd);
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
    html_doc_release(&hd);
    return rc;
}

int html_extract_file_max(const char *path, size_t max_input, struct sl_doc *doc,
                          struct sl_counters *c)
{
    struct sl_buf raw;
    int rc = html_read_file(path, max_input, &raw);
    rc = html_extract_read(path, rc, &raw, max_input, doc, c);
    sl_buf_release(&raw);
    return rc;
}

int html_extract_file(const char *path, struct sl_doc *doc, struct sl_counters *c)
{
    return html_extract_file_max(path, HTML_MAX_INPUT, doc, c);
}
