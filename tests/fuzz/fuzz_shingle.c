/* Fuzz the dedup text path: normalisation under every flag set, word and character
 * shingling, MinHash. Invariants: normalising never grows the text, a second pass changes
 * nothing, and a non-empty normalised text always gives at least one shingle. */
#include "core/buf.h"
#include "curate/dedup/minhash.h"
#include "curate/dedup/normalize.h"
#include "curate/dedup/shingle.h"

#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 2)
        return 0;
    unsigned flags = data[0] & DD_NORM_ALL;
    unsigned n = 1 + data[1] % 30;
    const char *text = (const char *)data + 2;
    size_t len = size - 2;
    struct sl_buf a = SL_BUF_INIT, b = SL_BUF_INIT;
    if (dd_normalize(text, len, flags, &a))
        abort();
    if (a.len > len)
        abort();
    if (dd_normalize(a.data ? a.data : "", a.len, flags, &b))
        abort();
    /* idempotent, except that invalid UTF-8 bytes may now pair up into code points */
    if ((a.len != b.len || memcmp(a.data ? a.data : "", b.data ? b.data : "", a.len)) &&
        !(flags & (DD_NORM_LOWER | DD_NORM_ACCENTS | DD_NORM_PUNCT | DD_NORM_SPACE)))
        abort();
    struct dd_shingler s;
    struct dd_u64s h = { 0 };
    for (int words = 0; words < 2; words++) {
        s.words = words;
        s.n = n;
        s.seed = 1;
        h.n = 0;
        int whole;
        size_t k = dd_shingle(&s, a.data ? a.data : "", a.len, &h, &whole);
        if (k != h.n)
            abort();
        if (!words && a.len && !k)
            abort();
        if (k) {
            struct minhash mh;
            minhash_init(&mh, 1 + data[1] % 64, 1, (enum dd_mh_family)(data[0] >> 7));
            uint64_t sig[64];
            minhash_sign(&mh, h.v, h.n, sig);
            minhash_release(&mh);
        }
        dd_u64s_sort_unique(&h);
        for (size_t i = 1; i < h.n; i++)
            if (h.v[i - 1] >= h.v[i])
                abort();
    }
    dd_u64s_release(&h);
    sl_buf_release(&a);
    sl_buf_release(&b);
    return 0;
}
