/* Fuzz the fastText model loader: the input is written to a file and loaded; the layout
 * check in front of the library must turn every truncated or crafted model into an error
 * (never an abort in fastText, an out-of-range read or a huge allocation), and a model that
 * loads must predict. */
#include "curate/filter/langid.h"
#include "fuzz_file.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static char path[4200];
    if (!path[0])
        snprintf(path, sizeof(path), "%s/sluice-fuzz-ft-%d.bin", fuzz_tmpdir(), (int)getpid());
    FILE *f = fopen(path, "wb");
    if (!f)
        abort();
    if (size)
        fwrite(data, 1, size, f);
    fclose(f);
    struct sl_fasttext *m = NULL;
    if (sl_fasttext_load(&m, path) == 0) {
        char labels[2][64];
        double probs[2];
        int got = 0;
        static const char text[] = "hello world, bonjour le monde";
        sl_fasttext_predict(m, text, sizeof(text) - 1, 2, labels, probs, &got);
        sl_fasttext_free(m);
    }
    return 0;
}
