/* Fuzz the pii filter on arbitrary bytes: no crash, spans sorted, disjoint and inside the
 * text, and the redacted text is the text with each span replaced by its placeholder. */
#include "core/buf.h"
#include "curate/filter/chain.h"
#include "curate/filter/pii.h"

#include <stdlib.h>
#include <string.h>

static struct sl_filter_chain *chain;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!chain) {
        static const char yaml[] =
            "filters:\n  - pii:\n      placeholders: {email: E, ip: I, phone: P, "
            "card: C, ssn: S, iban: B}\n";
        if (sl_filter_chain_load_string(&chain, yaml, sizeof(yaml) - 1, "fuzz.yaml"))
            abort();
    }
    const char *t = (const char *)data;
    const struct sl_pii_match *m;
    size_t n = sl_pii_scan(&chain->f[0], t, size, &m);
    struct sl_buf want = SL_BUF_INIT;
    size_t prev = 0;
    static const char ph[] = "EIPCSB";
    for (size_t i = 0; i < n; i++) {
        if (m[i].off < prev || m[i].len == 0 || m[i].off + m[i].len > size || m[i].kind < 0 ||
            m[i].kind > 5)
            abort();
        sl_buf_append(&want, t + prev, m[i].off - prev);
        sl_buf_putc(&want, ph[m[i].kind]);
        prev = m[i].off + m[i].len;
    }
    sl_buf_append(&want, t + prev, size - prev);
    struct sl_fctx ctx;
    sl_fctx_init(&ctx, &chain->env);
    sl_fctx_begin(&ctx, NULL, t, size, NULL);
    struct sl_filter_result res[1];
    sl_filter_chain_run(chain, &ctx, 1, res);
    if (ctx.len != want.len || (want.len && memcmp(ctx.text, want.data, want.len)))
        abort();
    sl_fctx_release(&ctx);
    sl_buf_release(&want);
    return 0;
}
