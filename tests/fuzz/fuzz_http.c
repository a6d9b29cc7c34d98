/* Fuzz the HTTP response parser and body decoders (chunked, gzip/deflate/zstd) and the
 * charset path (meta sniffing, detection, conversion to UTF-8 that must stay valid). */
#include "core/buf.h"
#include "core/err.h"
#include "core/utf8.h"
#include "curate/extract/charset.h"
#include "curate/extract/http.h"

#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *p = (const char *)data;
    struct http_resp h;
    struct sl_buf a, b, u;
    sl_buf_init(&a, 1u << 20);
    sl_buf_init(&b, 1u << 20);
    sl_buf_init(&u, 1u << 22);
    if (http_parse_response(p, size, &h) == 0) {
        if (h.head_len > size || h.status < 100 || h.status > 999)
            abort();
        const char *body = p + h.head_len;
        size_t bn = size - h.head_len;
        if (http_looks_chunked(body, bn))
            http_dechunk(body, bn, &a);
        const char *enc = h.content_encoding.n ? h.content_encoding.p : "gzip";
        size_t en = h.content_encoding.n ? h.content_encoding.n : 4;
        http_decode_content(enc, en, a.len ? a.data : body, a.len ? a.len : bn, &b);
        http_header(p, h.head_len, "x-anything");
    }
    /* charset: choose and convert; the output must be valid UTF-8 */
    struct charset_conv cc;
    charset_conv_init(&cc);
    const char *hint = size > 0 && data[0] % 3 == 0 ? "shift_jis" : NULL;
    const char *cs = charset_choose(&cc, p, size, hint, NULL);
    if (charset_to_utf8(&cc, cs, p, size, &u, NULL) == 0 &&
        sl_utf8_validate(u.data ? u.data : "", u.len) != u.len)
        abort();
    charset_conv_release(&cc);
    sl_buf_release(&a);
    sl_buf_release(&b);
    sl_buf_release(&u);
    return 0;
}
