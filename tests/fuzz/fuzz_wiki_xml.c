/* Fuzz the MediaWiki XML export reader: arbitrary bytes taken as a dump file (plain or
 * compressed, any encoding libxml2 detects) through wiki_extract_file, with salvage on or
 * off by the first byte and a small page cap; every document handed out must carry valid
 * UTF-8 text and a title. */
#include "core/buf.h"
#include "core/counters.h"
#include "core/doc.h"
#include "core/utf8.h"
#include "curate/extract/wiki.h"

#include "fuzz_file.h"

#include <stdlib.h>
#include <string.h>

static int on_doc(void *ctx, struct sl_doc *d)
{
    (void)ctx;
    size_t n = 0;
    const char *t = sl_doc_text(d, &n);
    if (!t || sl_utf8_validate(t, n) != n)
        abort();
    struct sl_buf title;
    sl_buf_init(&title, 1u << 20);
    if (sl_doc_get_str(d, "title", &title) != 0)
        abort();
    sl_buf_release(&title);
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *path = fuzz_file("fuzz_wiki_xml", data, size);
    struct wiki_opts o;
    memset(&o, 0, sizeof(o));
    o.max_page_bytes = 1u << 18;
    o.salvage = size && (data[0] & 1);
    struct sl_counters c;
    sl_counters_init(&c);
    wiki_extract_file(path, &o, on_doc, NULL, &c);
    sl_counters_release(&c);
    unlink(path);
    return 0;
}
