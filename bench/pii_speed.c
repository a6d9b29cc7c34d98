/* CPU time of the pii filter on a corpus, one thread (bench/pii.sh): the texts come as
 * records of a 4-byte little-endian length and the bytes; the filter config as YAML.
 * Prints the best of ROUNDS: seconds and MB/s. Usage: pii_speed TEXTS CONFIG.yaml ROUNDS */
#include "core/buf.h"
#include "core/err.h"
#include "core/stream.h"
#include "curate/filter/chain.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double cpu_now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    return (double)t.tv_sec + t.tv_nsec * 1e-9;
}

int main(int argc, char **argv)
{
    if (argc != 4) {
        fprintf(stderr, "usage: pii_speed TEXTS CONFIG.yaml ROUNDS\n");
        return 2;
    }
    struct sl_buf b = SL_BUF_INIT;
    if (sl_read_file(argv[1], &b)) {
        fprintf(stderr, "pii_speed: %s\n", sl_err_msg());
        return 1;
    }
    struct sl_filter_chain *c = NULL;
    if (sl_filter_chain_load(&c, argv[2], NULL, 0)) {
        fprintf(stderr, "pii_speed: %s\n", sl_err_msg());
        return 1;
    }
    int rounds = atoi(argv[3]);
    struct sl_fctx ctx;
    sl_fctx_init(&ctx, &c->env);
    struct sl_filter_result *res = calloc(c->n, sizeof(*res));
    double best = 1e30;
    uint64_t spans = 0;
    for (int r = 0; r < rounds; r++) {
        double t0 = cpu_now();
        spans = 0;
        for (size_t p = 0; p + 4 <= b.len;) {
            uint32_t n;
            memcpy(&n, b.data + p, 4);
            p += 4;
            sl_fctx_begin(&ctx, NULL, b.data + p, n, NULL);
            sl_filter_chain_run(c, &ctx, 1, res);
            spans += (uint64_t)res[0].score;
            p += n;
        }
        double dt = cpu_now() - t0;
        if (dt < best)
            best = dt;
    }
    printf("%.6f %.3f %llu\n", best, (double)b.len / 1e6 / best, (unsigned long long)spans);
    sl_fctx_release(&ctx);
    free(res);
    sl_filter_chain_free(c);
    sl_buf_release(&b);
    return 0;
}
