/* Benchmark driver for HTML main-text extraction: loads pages (.html or .html.gz) into
 * memory, extracts each one ROUNDS times on one core, prints pages/s and MB/s (best and
 * median round), and writes the predictions as {"<id>": {"articleBody": "..."}} for
 * bench/html_score.py. Built and run by bench/html.sh.
 * Usage: html_bench [-o PRED.json] [-r ROUNDS] FILE... */
#include "core/buf.h"
#include "core/err.h"
#include "core/stream.h"
#include "curate/extract/html.h"
#include "curate/extract/html_file.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
    const char *outp = NULL;
    int rounds = 5, i = 1;
    for (; i < argc && argv[i][0] == '-'; i++) {
        if (!strcmp(argv[i], "-o") && i + 1 < argc)
            outp = argv[++i];
        else if (!strcmp(argv[i], "-r") && i + 1 < argc)
            rounds = atoi(argv[++i]);
        else {
            fprintf(stderr, "usage: html_bench [-o PRED.json] [-r ROUNDS] FILE...\n");
            return 2;
        }
    }
    int n = argc - i;
    if (n <= 0 || rounds <= 0) {
        fprintf(stderr, "usage: html_bench [-o PRED.json] [-r ROUNDS] FILE...\n");
        return 2;
    }
    struct sl_buf *pages = calloc((size_t)n, sizeof(*pages));
    size_t bytes = 0;
    for (int k = 0; k < n; k++) {
        sl_buf_init(&pages[k], HTML_MAX_INPUT);
        if (sl_read_file(argv[i + k], &pages[k]) != 0) {
            fprintf(stderr, "html_bench: %s\n", sl_err_msg());
            return 1;
        }
        bytes += pages[k].len;
    }
    struct html_doc d;
    html_doc_init(&d);
    double *t = calloc((size_t)rounds, sizeof(double));
    struct sl_buf json = SL_BUF_INIT;
    sl_buf_putc(&json, '{');
    for (int r = 0; r < rounds; r++) {
        double t0 = now();
        for (int k = 0; k < n; k++) {
            if (html_extract(pages[k].data ? pages[k].data : "", pages[k].len, NULL, &d) != 0) {
                fprintf(stderr, "html_bench: '%s': %s\n", argv[i + k], sl_err_msg());
                return 1;
            }
            if (r == 0 && outp) {
                char id[256];
                size_t idn = html_file_id(argv[i + k], id, sizeof(id));
                if (k)
                    sl_buf_putc(&json, ',');
                sl_buf_json_str(&json, id, idn);
                sl_buf_puts(&json, ":{\"articleBody\":");
                sl_buf_json_str(&json, d.text.data ? d.text.data : "", d.text.len);
                sl_buf_putc(&json, '}');
            }
        }
        t[r] = now() - t0;
    }
    sl_buf_puts(&json, "}\n");
    qsort(t, (size_t)rounds, sizeof(double), cmp_d);
    double med = t[rounds / 2], best = t[0];
    printf("pages=%d bytes=%zu rounds=%d median_s=%.4f pages_per_s=%.1f best_pages_per_s=%.1f "
           "MB_per_s=%.1f\n",
           n, bytes, rounds, med, n / med, n / best, bytes / med / 1e6);
    if (outp) {
        FILE *f = fopen(outp, "w");
        if (!f || fwrite(json.data, 1, json.len, f) != json.len || fclose(f) != 0) {
            fprintf(stderr, "html_bench: cannot write '%s'\n", outp);
            return 1;
        }
    }
    html_doc_release(&d);
    sl_buf_release(&json);
    for (int k = 0; k < n; k++)
        sl_buf_release(&pages[k]);
    free(pages);
    free(t);
    return 0;
}
