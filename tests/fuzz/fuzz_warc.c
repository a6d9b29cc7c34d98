/* Fuzz the WARC/ARC reader: arbitrary bytes (any compression) read record by record, with
 * some blocks read into a small capped buffer and others skipped, under an output cap. */
#include "core/buf.h"
#include "core/err.h"
#include "core/stream.h"
#include "curate/extract/warc.h"

#include <stdlib.h>
#include <string.h>

static void on_skip(void *ctx, const char *reason, const char *message)
{
    (void)ctx;
    if (!reason || !message)
        abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct warc_opts o = { 1u << 24, on_skip, NULL };
    struct warc_reader *r;
    if (warc_reader_open_source(&r, sl_source_mem(data, size, "fuzz"), &o) != 0)
        return 0;
    struct warc_record rec;
    struct sl_buf body;
    sl_buf_init(&body, 1u << 16);
    int n = 0;
    while (warc_next(r, &rec) == 1 && n++ < 10000) {
        if (!rec.target_uri || !rec.record_id || !rec.date || !rec.type_name)
            abort();
        if (rec.index % 2 == 0) {
            sl_buf_reset(&body);
            int rc = warc_read_block(r, &body);
            if (rc == 0 && body.len != rec.content_length)
                abort();
        }
    }
    sl_buf_release(&body);
    warc_reader_close(r);
    return 0;
}
