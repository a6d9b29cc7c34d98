/* Fuzz the HTML path for time: the input is repeated until the page is 512 KiB and
 * extracted once. Extraction must be linear in the page size, so a run over libFuzzer's
 * per-input -timeout (10 s in tests/fuzz/run.sh; a linear page takes well under a second
 * even with the sanitizers) is a quadratic pattern: an element that searches to the end
 * of the page for its end tag, a name or attribute scanned once per '<', and the like. */
#include "core/buf.h"
#include "core/utf8.h"
#include "curate/extract/html.h"

#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size == 0 || size > 4096)
        return 0;
    struct sl_buf page = SL_BUF_INIT;
    while (page.len < (512u << 10))
        if (sl_buf_append(&page, (const char *)data, size) != 0)
            abort();
    struct html_doc d;
    html_doc_init(&d);
    if (html_extract(page.data, page.len, NULL, &d) == 0 &&
        sl_utf8_validate(d.text.data ? d.text.data : "", d.text.len) != d.text.len)
        abort();
    html_doc_release(&d);
    sl_buf_release(&page);
    return 0;
}
