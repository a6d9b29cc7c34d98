/* Fuzz the attributes reader of `sluice mix` (curate/mix/attrs.h) on arbitrary bytes. The
 * input is cut at its first NUL (none: whole) into an attributes line and a text.
 *  - the line parses or fails with a message; parsed, every attribute's spans read or fail,
 *    and each span read has 0 <= start <= end;
 *  - cut out of the text (its valid UTF-8 prefix) by the rule "a >= 0", the result is the
 *    text less exactly the code points counted as cut, and a span past the text's end is
 *    refused, never read past;
 *  - a rule of the text's first 40 bytes parses or fails, never crashes. */
#include "core/buf.h"
#include "core/utf8.h"
#include "curate/mix/attrs.h"

#include <json-c/json.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *t = (const char *)data;
    const char *z = memchr(t, 0, size);
    size_t ln = z ? (size_t)(z - t) : size;
    const char *text = z ? z + 1 : "";
    size_t tn = z ? size - ln - 1 : 0;
    tn = sl_utf8_validate(text, tn);

    char rule[41];
    size_t rn = tn < 40 ? tn : 40;
    memcpy(rule, text, rn);
    rule[rn] = 0;
    struct sl_attr_rule r;
    if (!memchr(rule, 0, rn) && sl_attr_rule_parse(&r, rule) == 0)
        sl_attr_rule_release(&r);

    struct sl_attr_line l;
    sl_attr_line_init(&l);
    if (sl_attr_line_parse(&l, t, ln, "fuzz:1") == 0) {
        json_object_object_foreach(l.attrs, key, val)
        {
            (void)val;
            if (sl_attr_line_spans(&l, key, "fuzz:1"))
                continue;
            for (size_t i = 0; i < l.nspans; i++)
                if (l.spans[i].start > l.spans[i].end)
                    abort();
        }
        struct sl_attr_rule a = { .name = "a", .op = SL_ATTR_GE, .value = 0 };
        struct sl_attr_cuts c = { 0 };
        uint64_t added, cut, nchar = sl_attr_nchar(text, tn);
        if (sl_attr_line_spans(&l, "a", "fuzz:1") == 0 &&
            sl_attr_cuts_add(&c, &l, &a, nchar, "fuzz:1", &added) == 0) {
            struct sl_buf out = SL_BUF_INIT;
            sl_attr_cuts_apply(&c, text, tn, &out, &cut);
            if (cut > nchar || sl_attr_nchar(out.data ? out.data : "", out.len) != nchar - cut)
                abort();
            sl_buf_release(&out);
        }
        sl_attr_cuts_release(&c);
    }
    sl_attr_line_release(&l);
    return 0;
}
