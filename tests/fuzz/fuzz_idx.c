/* Fuzz the .bin/.idx reader: the input is split at the first 0xFF 0xFE pair into an .idx
 * and a .bin (written to a temporary directory); whatever opens must verify or fail
 * cleanly, every sequence of every document of an index that opens must be readable
 * (pointers and lengths are checked on open), and a verified index reads throughout. */
#include "core/err.h"
#include "dataset/idx.h"
#include "fuzz_file.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char prefix[4200];

static void put(const char *ext, const uint8_t *p, size_t n)
{
    char path[300];
    snprintf(path, sizeof(path), "%s.%s", prefix, ext);
    FILE *f = fopen(path, "wb");
    if (!f)
        abort();
    if (n)
        fwrite(p, 1, n, f);
    fclose(f);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!prefix[0])
        snprintf(prefix, sizeof(prefix), "%s/sluice-fuzz-idx-%d", fuzz_tmpdir(), (int)getpid());
    size_t cut = size;
    for (size_t i = 0; i + 1 < size; i++)
        if (data[i] == 0xFF && data[i + 1] == 0xFE) {
            cut = i;
            break;
        }
    put("idx", data, cut);
    put("bin", data + (cut < size ? cut + 2 : size), cut < size ? size - cut - 2 : 0);
    struct idx_reader *r;
    if (idx_reader_open(&r, prefix) == 0) {
        /* an index that opens is in bounds: every sequence of every document is readable
         * (the tokens may be out of range for their dtype, never outside the .bin) */
        uint32_t one[64];
        for (uint64_t d = 0; d < idx_reader_documents(r) && d < 1000; d++)
            for (uint64_t s = idx_reader_doc_index(r, d); s < idx_reader_doc_index(r, d + 1); s++) {
                uint64_t len = idx_reader_seq_len(r, s);
                if (idx_reader_read(r, s, len > 64 ? len - 64 : 0, len < 64 ? (size_t)len : 64,
                                    one) == SL_ERR_TOOBIG)
                    abort();
            }
        if (idx_reader_verify(r, 0) == 0) {
            uint32_t buf[64];
            for (uint64_t s = 0; s < idx_reader_sequences(r) && s < 1000; s++) {
                uint64_t len = idx_reader_seq_len(r, s);
                if (idx_reader_read(r, s, 0, len < 64 ? (size_t)len : 64, buf) == SL_ERR_TOOBIG)
                    abort(); /* a verified index promised these tokens */
            }
        }
        idx_reader_close(r);
    }
    return 0;
}
