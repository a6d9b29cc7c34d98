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
 * about twice as fast as zlib's stream: the file's bytes in `in`. 0, or -1 when this path
 * does not apply or fails (not gzip, too large, damaged, several members that do not fit):
 * the caller then decodes through core/stream, which gives the error its message. */
static int gzip_fast(const struct sl_buf *in, size_t max_input, struct sl_buf *raw)
{
    const unsigned char *p = (const unsigned char *)in->data;
    if (in->len < 18 || p[0] != 0x1f || p[1] != 0x8b)
        return -1;
    const unsigned char *t = p + in->len - 4;
    size_t isize = (size_t)t[0] | (size_t)t[1] << 8 | (size_t)t[2] << 16 | (size_t)t[3] << 24;
    if (isize >= max_input || sl_buf_reserve(raw, isize + 1))
        return -1;
    struct libdeflate_decompressor *d = libdeflate_alloc_decompressor();
    if (!d)
        return -1;
    size_t in_used = 0, out_used = 0;
    int rc = -1;
    /* the last member's ISIZE is the whole size only for one member; more are rare */
    if (libdeflate_gzip_decompress_ex(d, in->data, in->len, raw->data, isize + 1, &in_used,
                                      &out_used) == LIBDEFLATE_SUCCESS &&
        in_used == in->len && out_used == isize) {
        raw->len = out_used;
        rc = 0;
    }
    libdeflate_free_decompressor(d);
    return rc;
}

int html_read_source(struct sl_source *src, size_t max_input, struct sl_buf *raw)
{
    if (!max_input)
        max_input = HTML_MAX_INPUT;
    sl_buf_init(raw, max_input);
    /* the file whole (read once: it may be a FIFO, and is read as the stage planned it);
     * a compressed page bigger than the cap by more than any codec grows incompressible
     * data (an eighth, with 64 KiB for headers) cannot decode under the cap */
    struct sl_buf in = SL_BUF_INIT;
    sl_buf_init(&in, max_input + max_input / 8 + ((size_t)1 << 16));
    int rc = 0;
    for (;;) {
        if (sl_buf_reserve(&in, (size_t)1 << 16)) {
            rc = sl_err_set(SL_ERR_TOOBIG, "'%s' is larger than %zu bytes (cap)", src->name,
                            max_input);
            break;
        }
        ssize_t k = src->read(src, in.data + in.len, (size_t)1 << 16);
        if (k < 0)
            rc = (int)k;
        if (k <= 0)
            break;
        in.len += (size_t)k;
    }
    const char *unsupported = NULL;
    enum sl_codec codec =
        rc ? SL_CODEC_NONE : sl_codec_detect((const unsigned char *)in.data, in.len, &unsupported);
    if (rc || (codec == SL_CODEC_GZIP && gzip_fast(&in, max_input, raw) == 0)) {
        /* read, or failed to */
    } else if (codec == SL_CODEC_NONE && !unsupported && in.len > max_input) {
        rc = sl_err_set(SL_ERR_TOOBIG, "'%s' is larger than %zu bytes (cap)", src->name,
                        max_input);
    } else if (codec == SL_CODEC_NONE && !unsupported) {
        /* the page as read: handed over, not copied (with the NUL after it, as appended
         * data has) */
        if (in.data)
            in.data[in.len] = '\0';
        sl_buf_release(raw);
        *raw = in;
        raw->max = max_input;
        sl_buf_init(&in, 0);
    } else {
        struct sl_reader *r;
        rc = sl_reader_open_source(&r, sl_source_mem(in.data, in.len, src->name), NULL);
        if (!rc)
            rc = sl_reader_read_all(r, raw);
        sl_reader_close(r);
    }
    if (rc)
        sl_buf_reset(raw);
    sl_buf_release(&in);
    sl_source_close(src);
    return rc;
}

int html_read_file(const char *path, size_t max_input, struct sl_buf *raw)
{
    struct sl_source *src;
    int rc = sl_source_file(&src, path);
    if (rc) {
        sl_buf_init(raw, max_input ? max_input : HTML_MAX_INPUT);
        return rc;
    }
    return html_read_source(src, max_input, raw);
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
