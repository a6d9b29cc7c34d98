/* Fuzz the YAML configuration loader, the getters and overrides. */
#include "core/buf.h"
#include "core/config.h"

#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    /* the part after the first NUL (if any) is an override */
    const char *text = (const char *)data;
    const char *nul = memchr(text, '\0', size);
    size_t tlen = nul ? (size_t)(nul - text) : size;
    struct sl_cfg *c;
    if (sl_cfg_load_string(&c, text, tlen, "fuzz.yaml") != 0)
        return 0;
    if (nul) {
        char *ov = strndup(nul + 1, size - tlen - 1);
        sl_cfg_override(c, ov);
        free(ov);
    }
    long n;
    double d;
    const char *s;
    const char **v;
    size_t k;
    sl_cfg_int(c, "a.b", 0, &n);
    sl_cfg_double(c, "a", 0, &d);
    sl_cfg_str(c, "b.0.c", NULL, &s);
    if (sl_cfg_strs(c, "stages", &v, &k) == 0)
        free(v);
    sl_cfg_check_unused(c);
    struct sl_buf b = SL_BUF_INIT;
    sl_cfg_to_json(c, &b);
    sl_buf_release(&b);
    sl_cfg_free(c);
    return 0;
}
