/* Fuzz the URL filter's parts on arbitrary bytes. The input is cut at its first NUL (none:
 * the middle) into a list and a URL.
 *  - the list: sl_lineset_load finds every entry it was given (each line, stripped, that
 *    does not start with '#'), and sl_aho_any answers as a naive search for any line;
 *  - the URL: `url` with `rules: datatrove` decides without a crash, keep or one of its six
 *    reasons, with the score of that reason. */
#include "core/buf.h"
#include "core/doc.h"
#include "curate/filter/aho.h"
#include "curate/filter/chain.h"
#include "curate/filter/lineset.h"

#include <stdlib.h>
#include <string.h>

static struct sl_filter_chain *chain;

static int space(unsigned char c)
{
    return c == ' ' || (c >= '\t' && c <= '\r') || (c >= 0x1c && c <= 0x1f);
}

static void check_list(const char *t, size_t n, const char *url, size_t un)
{
    struct sl_lineset s;
    sl_lineset_init(&s);
    char *copy = malloc(n + 1);
    memcpy(copy, t, n);
    if (sl_lineset_load(&s, copy, n))
        abort();
    struct sl_aho a;
    sl_aho_init(&a);
    int naive = 0;
    for (size_t i = 0; i < n;) {
        size_t j = i;
        while (j < n && t[j] != '\n' && t[j] != '\r')
            j++;
        size_t next = j < n ? j + 1 + (t[j] == '\r' && j + 1 < n && t[j + 1] == '\n') : n;
        sl_aho_add(&a, t + i, j - i);
        if (j > i && memmem(url, un, t + i, j - i))
            naive = 1;
        size_t b = i, e = j;
        if (b < e && t[b] == '#') {
            i = next;
            continue;
        }
        while (b < e && space((unsigned char)t[b]))
            b++;
        while (e > b && space((unsigned char)t[e - 1]))
            e--;
        if (!memchr(t + b, 0, e - b) && !sl_lineset_has(&s, t + b, e - b))
            abort();
        i = next;
    }
    sl_aho_build(&a);
    if (sl_aho_any(&a, url, un) != naive)
        abort();
    sl_aho_release(&a);
    sl_lineset_release(&s);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!chain) {
        static const char yaml[] =
            "filters:\n  - url:\n      rules: datatrove\n      extra_domains: [example.com, "
            "b.co.uk, w.ck, www.ck, xn--p1ai, \"\"]\n      extra_urls: [example.net/x]\n";
        if (sl_filter_chain_load_string(&chain, yaml, sizeof(yaml) - 1, "fuzz.yaml"))
            abort();
    }
    const char *t = (const char *)data;
    const char *z = memchr(t, 0, size);
    size_t cut = z ? (size_t)(z - t) : size / 2;
    const char *url = t + cut + (z ? 1 : 0);
    size_t un = size - cut - (z ? 1 : 0);
    check_list(t, cut, url, un);

    struct sl_doc doc;
    sl_doc_init(&doc);
    if (sl_doc_parse(&doc, "{\"text\":\"x\"}", 12, NULL) || sl_doc_set_str(&doc, "url", url, un))
        abort();
    struct sl_fctx ctx;
    sl_fctx_init(&ctx, &chain->env);
    sl_fctx_begin(&ctx, &doc, "x", 1, NULL);
    struct sl_filter_result res[1];
    if (sl_filter_chain_run(chain, &ctx, 1, res) < -1)
        abort();
    static const char *const reasons[] = { "domain", "subdomain", "url", "hard_blacklisted",
                                           "soft_blacklisted", "blacklisted_subword" };
    if (!res[0].keep) {
        int k = (int)res[0].score;
        if (k < 1 || k > 6 || strcmp(res[0].reason, reasons[k - 1]))
            abort();
    }
    sl_fctx_release(&ctx);
    sl_doc_release(&doc);
    return 0;
}
