/* Fuzz the arXiv source reader: arbitrary bytes taken as an input file (a bulk tar of
 * per-paper archives, one gzipped tar, one .gz or plain LaTeX) through extract_arxiv_file
 * with a small record cap; every document handed out must carry valid UTF-8 text. */
#include "core/counters.h"
#include "core/doc.h"
#include "core/utf8.h"
#include "curate/extract/extract.h"

#include "fuzz_file.h"

#include <stdlib.h>
#include <string.h>

static void on_warn(void *ctx, const char *reason, const char *message)
{
    (void)ctx;
    if (!reason || !message)
        abort();
}

static int on_doc(void *ctx, struct sl_doc *d)
{
    (void)ctx;
    size_t n = 0;
    const char *t = sl_doc_text(d, &n);
    if (!t || sl_utf8_validate(t, n) != n)
        abort();
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *path = fuzz_file("fuzz_arxiv", data, size);
    struct extract_opts o;
    memset(&o, 0, sizeof(o));
    o.format = "arxiv";
    o.max_record = 1u << 20;
    o.on_warn = on_warn;
    struct extract_input in = { path, "fuzz.tar", NULL, 0, NULL };
    struct sl_counters c;
    sl_counters_init(&c);
    extract_arxiv_file(&in, &o, on_doc, NULL, &c);
    sl_counters_release(&c);
    unlink(path);
    return 0;
}
