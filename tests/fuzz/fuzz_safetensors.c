/* Fuzz the safetensors reader (checkpoints come from disk and may be damaged). */
#include "train/safetensors.h"

#include <stdint.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct st_file *f;
    if (st_open_mem(&f, data, size, "fuzz.safetensors") != 0)
        return 0;
    for (size_t i = 0; i < st_count(f); i++) {
        const struct st_tensor *t = st_at(f, i);
        volatile unsigned char sink = 0;
        if (t->nbytes)
            sink ^= ((const unsigned char *)t->data)[t->nbytes - 1];
        (void)sink;
    }
    st_metadata(f, "format");
    st_close(f);
    return 0;
}
