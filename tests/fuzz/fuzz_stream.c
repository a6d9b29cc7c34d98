/* Fuzz the decompressors: arbitrary bytes read as a stream (detected codec), whole and by
 * lines, under an output cap. Also round-trip: what we compress we read back. */
#include "core/buf.h"
#include "core/err.h"
#include "core/stream.h"

#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct sl_reader_opts ro = { SL_CODEC_AUTO, 1 << 22 };
    struct sl_reader *r;
    if (sl_reader_open_source(&r, sl_source_mem(data, size, "fuzz"), &ro) == 0) {
        const char *line;
        size_t len;
        for (;;) {
            int rc = sl_reader_getline(r, &line, &len, 4096);
            if (rc == 0 || (rc < 0 && rc != SL_ERR_TOOBIG))
                break;
        }
        sl_reader_close(r);
    }
    if (size > 0) {
        /* first byte picks a codec for the round trip */
        enum sl_codec c = (enum sl_codec)(1 + data[0] % 4);
        struct sl_buf z = SL_BUF_INIT, back = SL_BUF_INIT;
        struct sl_writer *w;
        struct sl_writer_opts wo = { .codec = c, .level = 1 };
        if (sl_writer_open_buf(&w, &z, &wo) == 0) {
            sl_writer_write(w, data + 1, size - 1);
            if (sl_writer_commit(w) != 0)
                abort();
            struct sl_reader_opts ro2 = { c, 0 };
            if (sl_reader_open_source(&r, sl_source_mem(z.data, z.len, "rt"), &ro2) != 0)
                abort();
            if (sl_reader_read_all(r, &back) != 0 || back.len != size - 1 ||
                (back.len && memcmp(back.data, data + 1, back.len) != 0))
                abort();
            sl_reader_close(r);
        }
        sl_buf_release(&z);
        sl_buf_release(&back);
    }
    return 0;
}
