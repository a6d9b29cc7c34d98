/* --format html and wiki: the extract command's adapters for the HTML page reader
 * (html_file.h) and the MediaWiki export reader (wiki.h). They add what every extract
 * reader adds: documents_in, source, and the skip counters by reason. */
#include "curate/extract/extract.h"

#include "core/buf.h"
#include "core/counters.h"
#include "core/doc.h"
#include "core/err.h"
#include "curate/extract/html_file.h"
#include "curate/extract/wiki.h"

#include <string.h>

int extract_html_adapter(const struct extract_input *in, const struct extract_opts *o,
                         extract_emit_fn emit, void *ctx, struct sl_counters *c)
{
    struct sl_doc d;
    sl_doc_init(&d);
    sl_counters_add(c, "documents_in", 1);
    uint64_t bytes0 = sl_counters_get(c, "html_bytes");
    int rc;
    if (in->raw) {
        rc = html_extract_read(in->path, in->raw_rc, in->raw, (size_t)o->max_record, &d, c);
    } else {
        struct sl_buf raw;
        struct sl_source *src = NULL;
        rc = extract_open_source(in, &src);
        if (rc)
            sl_buf_init(&raw, 0);
        else
            rc = html_read_source(src, (size_t)o->max_record, &raw);
        rc = html_extract_read(in->path, rc, &raw, (size_t)o->max_record, &d, c);
        sl_buf_release(&raw);
    }
    sl_counters_add(c, "bytes_in", sl_counters_get(c, "html_bytes") - bytes0);
    if (rc == 1) {
        const char *src = o->source ? o->source : "html";
        rc = sl_doc_set_str(&d, "source", src, strlen(src));
        if (!rc)
            rc = emit(ctx, &d);
    } else if (rc == 0) {
        sl_counters_add(c, "skipped_empty", 1);
    } else if (rc == SL_ERR_TOOBIG) {
        sl_counters_add(c, "skipped_too_large", 1);
        if (o->on_warn)
            o->on_warn(o->warn_ctx, "too_large", sl_err_msg());
        rc = 0;
    }
    sl_doc_release(&d);
    return rc;
}

struct wiki_ctx {
    const struct extract_opts *o;
    extract_emit_fn emit;
    void *ctx;
};

static int wiki_emit(void *ctx, struct sl_doc *doc)
{
    struct wiki_ctx *w = ctx;
    if (w->o->source) {
        int rc = sl_doc_set_str(doc, "source", w->o->source, strlen(w->o->source));
        if (rc)
            return rc;
    }
    return w->emit(w->ctx, doc);
}

int extract_wiki_adapter(const struct extract_input *in, const struct extract_opts *o,
                         extract_emit_fn emit, void *ctx, struct sl_counters *c)
{
    struct wiki_opts wo;
    memset(&wo, 0, sizeof(wo));
    wo.max_page_bytes = o->max_record ? (size_t)o->max_record : 0;
    wo.salvage = o->skip_corrupt;
    wo.file = in->file;
    struct wiki_ctx w = { o, emit, ctx };
    int rc = wiki_extract_file(in->path, &wo, wiki_emit, &w, c);
    /* every page is emitted or skipped by a named reason: documents_in = out + skipped_* */
    static const char *const skips[][2] = {
        { "wiki_other_namespace", "skipped_other_namespace" },
        { "wiki_redirects", "skipped_redirect" },
        { "wiki_too_large", "skipped_too_large" },
        { "wiki_empty", "skipped_empty" },
        { "wiki_incomplete", "skipped_incomplete" },
    };
    for (size_t i = 0; i < sizeof(skips) / sizeof(skips[0]); i++) {
        uint64_t v = sl_counters_get(c, skips[i][0]);
        if (v)
            sl_counters_add(c, skips[i][1], v);
    }
    sl_counters_add(c, "documents_in",
                    sl_counters_get(c, "wiki_pages") + sl_counters_get(c, "wiki_incomplete"));
    return rc;
}
