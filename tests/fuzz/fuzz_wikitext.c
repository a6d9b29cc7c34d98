/* Fuzz the wikitext converter: arbitrary bytes (as the XML reader would hand them over)
 * through wikitext_to_text under an output cap; valid UTF-8 in must give valid UTF-8 out. */
#include "core/buf.h"
#include "core/utf8.h"
#include "curate/extract/wikitext.h"

#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct sl_buf out;
    sl_buf_init(&out, 1 << 20);
    int rc = wikitext_to_text((const char *)data, size, &out);
    if (rc == 0 && sl_utf8_validate((const char *)data, size) == size &&
        sl_utf8_validate(out.data ? out.data : "", out.len) != out.len)
        abort();
    sl_buf_release(&out);
    return 0;
}
