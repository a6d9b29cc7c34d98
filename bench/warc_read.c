/* Benchmark driver for WARC reading: every record of every file, the HTTP head of each
 * response parsed (its block read into memory), as FastWARC does with parse_http=True.
 * Prints "records responses bytes seconds". Built and run by bench/warc.sh.
 * Usage: warc_read FILE... */
#include "core/buf.h"
#include "core/err.h"
#include "curate/extract/http.h"
#include "curate/extract/warc.h"

#include <stdio.h>
#include <time.h>

int main(int argc, char **argv)
{
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    unsigned long long records = 0, responses = 0, bytes = 0;
    struct sl_buf b;
    sl_buf_init(&b, 64u << 20);
    for (int i = 1; i < argc; i++) {
        struct warc_reader *r;
        if (warc_reader_open(&r, argv[i], NULL) != 0) {
            fprintf(stderr, "warc_read: %s\n", sl_err_msg());
            return 1;
        }
        struct warc_record rec;
        int rc;
        while ((rc = warc_next(r, &rec)) == 1) {
            records++;
            if (rec.type != WARC_RESPONSE)
                continue;
            sl_buf_reset(&b);
            if (warc_read_block(r, &b) != 0)
                continue;
            struct http_resp h;
            if (http_parse_response(b.data, b.len, &h) == 0)
                responses++;
            bytes += b.len;
        }
        if (rc < 0) {
            fprintf(stderr, "warc_read: %s\n", sl_err_msg());
            return 1;
        }
        warc_reader_close(r);
    }
    sl_buf_release(&b);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    printf("%llu %llu %llu %.6f\n", records, responses, bytes,
           (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9);
    return 0;
}
