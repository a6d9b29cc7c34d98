/* Fuzz the TensorBoard event reader (a resumed run reads the event files in its log
 * directory, which may be damaged or not ours). */
#include "train/tbevents.h"

#include <stdint.h>
#include <string.h>

static int count(void *ctx, const char *tag, int64_t step, double wall, float value)
{
    size_t *n = ctx;
    (void)step, (void)wall, (void)value;
    *n += tag ? strlen(tag) + 1 : 1;
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    size_t n = 0;
    tb_parse(data, size, count, &n);
    return 0;
}
