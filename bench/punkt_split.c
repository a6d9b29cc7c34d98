/* Split the "text" members of a JSONL file into sentences with sluice's Punkt splitter
 * (tokenize/punkt.h) on one thread and report its speed, for bench/punkt.sh. Usage:
 * punkt_split PUNKT_TAB_DIR INPUT.jsonl [REPEAT]; KEEPNL=1 in the environment for
 * Megatron's --keep-newlines variant. Prints the sentences, the best CPU time of REPEAT
 * runs (this thread's CPU seconds), sentences/s, MB/s and an FNV-1a hash of the sentences
 * (their bytes, each followed by a NUL) to compare with NLTK's. Reading the input and the
 * model is not timed. */
#include "core/buf.h"
#include "core/err.h"
#include "core/json.h"
#include "core/stream.h"
#include "tokenize/punkt.h"
#include "tokenize/punkt_params.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* CPU seconds of this thread: robust when other processes share the cores. */
static double cpu_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: punkt_split PUNKT_TAB_DIR INPUT.jsonl [REPEAT]\n");
        return 2;
    }
    struct punkt_params *p;
    struct sl_buf in = SL_BUF_INIT;
    if (punkt_params_load(&p, argv[1]) || sl_read_file(argv[2], &in)) {
        fprintf(stderr, "%s\n", sl_err_msg());
        return 1;
    }
    int repeat = argc > 3 ? atoi(argv[3]) : 1;
    struct sl_buf texts = SL_BUF_INIT;
    size_t *ends = NULL, nt = 0;
    char *q = in.data, *end = in.data + in.len;
    struct sl_json_error err;
    while (q < end) {
        char *nl = memchr(q, '\n', (size_t)(end - q));
        char *le = nl ? nl : end;
        const char *t = strstr(q, "\"text\":");
        if (t && t < le) {
            t = sl_json_skip_ws(t + 7, le);
            if (sl_json_decode_string(q, t, le, &texts, &err)) {
                ends = realloc(ends, (nt + 1) * sizeof(*ends));
                ends[nt++] = texts.len;
            }
        }
        q = le + 1;
    }
    struct punkt *k = punkt_new(p, getenv("KEEPNL") != NULL);
    struct punkt_spans spans = { 0 };
    double best = 1e30;
    size_t nsent = 0;
    for (int r = 0; r < repeat; r++) {
        double t0 = cpu_now();
        nsent = 0;
        size_t start = 0;
        for (size_t i = 0; i < nt; i++) {
            spans.n = 0;
            punkt_split(k, texts.data + start, ends[i] - start, &spans);
            nsent += spans.n;
            start = ends[i];
        }
        double t = cpu_now() - t0;
        if (t < best)
            best = t;
    }
    /* the hash, outside the timing */
    uint64_t h = 1469598103934665603ull;
    size_t start = 0;
    for (size_t i = 0; i < nt; i++) {
        spans.n = 0;
        punkt_split(k, texts.data + start, ends[i] - start, &spans);
        for (size_t s = 0; s < spans.n; s++) {
            for (size_t b = spans.v[s].start; b <= spans.v[s].end; b++)
                h = (h ^ (b < spans.v[s].end ? (unsigned char)texts.data[start + b] : 0)) *
                    1099511628211ull;
        }
        start = ends[i];
    }
    printf("sentences %zu bytes %zu seconds %.4f sentences/s %.0f MB/s %.1f fnv %016llx\n", nsent,
           texts.len, best, nsent / best, texts.len / best / 1e6, (unsigned long long)h);
    punkt_spans_release(&spans);
    punkt_free(k);
    punkt_params_free(p);
    free(ends);
    sl_buf_release(&texts);
    sl_buf_release(&in);
    return 0;
}
