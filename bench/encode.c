/* Encode a file with one of sluice's tokenizers on one thread and report throughput, for
 * bench/tokenize.sh. Usage: encode SPEC INPUT [REPEAT] (a --tokenizer spec)
 * Input: a text file encoded as one string; with JSONL=1 in the environment, a JSONL
 * file whose "text" members are encoded one by one; with LINES=1, each line of a text
 * file (without its newline) on its own, as spm_encode does. Prints tokens, the best
 * CPU time of REPEAT runs (this thread's CPU seconds, so that other processes on the
 * machine disturb it less), MB/s and an FNV-1a hash of the ids (to compare ids with other
 * tokenizers'). Reading the input is not timed. Each round starts with an empty piece
 * cache; with WARM=1 in the environment the rounds share one encoder and its cache. */
#include "core/buf.h"
#include "core/err.h"
#include "core/json.h"
#include "core/progress.h"
#include "core/stream.h"
#include "tokenize/tokenizer.h"

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
        fprintf(stderr, "usage: encode SPEC INPUT [REPEAT]\nSPEC: %s\n", TOKENIZER_SPECS);
        return 2;
    }
    struct tokenizer *tk = NULL;
    if (tokenizer_open(&tk, argv[1])) {
        fprintf(stderr, "%s\n", sl_err_msg());
        return 1;
    }
    int repeat = argc > 3 ? atoi(argv[3]) : 1;
    struct sl_buf in = SL_BUF_INIT;
    if (sl_read_file(argv[2], &in)) {
        fprintf(stderr, "%s\n", sl_err_msg());
        return 1;
    }
    /* the texts to encode */
    struct sl_buf texts = SL_BUF_INIT;
    size_t *ends = NULL, nt = 0;
    if (getenv("JSONL")) {
        char *p = in.data, *end = in.data + in.len;
        struct sl_json_error err;
        while (p < end) {
            char *nl = memchr(p, '\n', (size_t)(end - p));
            char *le = nl ? nl : end;
            const char *t = strstr(p, "\"text\":");
            if (t && t < le) {
                t = sl_json_skip_ws(t + 7, le);
                if (sl_json_decode_string(p, t, le, &texts, &err)) {
                    ends = realloc(ends, (nt + 1) * sizeof(*ends));
                    ends[nt++] = texts.len;
                }
            }
            p = le + 1;
        }
    } else if (getenv("LINES")) {
        char *p = in.data, *end = in.data + in.len;
        while (p < end) {
            char *nl = memchr(p, '\n', (size_t)(end - p));
            char *le = nl ? nl : end;
            sl_buf_append(&texts, p, (size_t)(le - p));
            ends = realloc(ends, (nt + 1) * sizeof(*ends));
            ends[nt++] = texts.len;
            p = le + 1;
        }
    } else {
        sl_buf_append(&texts, in.data, in.len);
        ends = malloc(sizeof(*ends));
        ends[nt++] = texts.len;
    }
    struct tok_ids ids = { 0 };
    double best = 1e30;
    uint64_t h = 0;
    size_t ntok = 0;
    /* WARM=1: one encoder for all rounds, whose piece cache the rounds before filled (as
     * gigatoken's, which persists between calls) */
    struct tokenizer_enc *warm = getenv("WARM") ? tokenizer_enc_new(tk) : NULL;
    for (int r = 0; r < repeat; r++) {
        /* else a fresh encoder each time: its piece cache starts empty, as in a real run */
        struct tokenizer_enc *e = warm ? warm : tokenizer_enc_new(tk);
        double t0 = cpu_now();
        ntok = 0;
        h = 1469598103934665603ull;
        size_t start = 0;
        for (size_t i = 0; i < nt; i++) {
            ids.n = 0;
            tokenizer_encode(e, texts.data + start, ends[i] - start, &ids);
            for (size_t k = 0; k < ids.n; k++)
                h = (h ^ ids.v[k]) * 1099511628211ull;
            ntok += ids.n;
            start = ends[i];
        }
        double t = cpu_now() - t0;
        if (!warm)
            tokenizer_enc_free(e);
        if (t < best)
            best = t;
    }
    printf("tokens %zu bytes %zu seconds %.4f MB/s %.1f fnv %016llx\n", ntok, texts.len, best,
           texts.len / best / 1e6, (unsigned long long)h);
    tokenizer_enc_free(warm);
    return 0;
}
