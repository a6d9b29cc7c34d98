/* Fuzz the HTML path: arbitrary bytes through html_extract with each kind of charset hint
 * (none, UTF-8, a single-byte and a multi-byte charset, garbage); the text, title and
 * language must come out as valid UTF-8. */
#include "core/utf8.h"
#include "curate/extract/html.h"

#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const char *const hints[] = { NULL,        "utf-8",  "windows-1252",
                                         "shift_jis", "utf-16", "no-such-charset" };
    if (size == 0)
        return 0;
    const char *hint = hints[data[0] % (sizeof(hints) / sizeof(hints[0]))];
    struct html_doc d;
    html_doc_init(&d);
    if (html_extract((const char *)data + 1, size - 1, hint, &d) == 0) {
        if (sl_utf8_validate(d.text.data ? d.text.data : "", d.text.len) != d.text.len ||
            sl_utf8_validate(d.title.data ? d.title.data : "", d.title.len) != d.title.len ||
            sl_utf8_validate(d.lang.data ? d.lang.data : "", d.lang.len) != d.lang.len)
            abort();
    }
    html_doc_release(&d);
    return 0;
}
