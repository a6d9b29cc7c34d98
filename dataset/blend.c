/* Megatron's greedy blending and its data-path syntax. */
#include "dataset/blend.h"

#include "core/alloc.h"
#include "core/atomic.h"
#include "core/err.h"
#include "dataset/gpt_index.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

void blend_build(const double *w, int n, size_t size, int16_t *dataset_index,
                 int64_t *dataset_sample_index)
{
    int64_t *count = sl_xcalloc((size_t)(n > 0 ? n : 1), sizeof(int64_t));
    for (size_t s = 0; s < size; s++) {
        double x = s > 1 ? (double)s : 1.0;
        int best = 0;
        double best_err = w[0] * x - (double)count[0];
        for (int i = 1; i < n; i++) {
            double e = w[i] * x - (double)count[i];
            if (e > best_err) {
                best_err = e;
                best = i;
            }
        }
        dataset_index[s] = (int16_t)best;
        dataset_sample_index[s] = count[best]++;
    }
    free(count);
}

uint64_t blend_component_size(uint64_t size, double w, double surplus)
{
    return (uint64_t)ceil(ceil((double)size * w) * (1.0 + surplus));
}

int blend_save(const char *dir, const char *name, uint64_t size, const int16_t *dataset_index,
               const int64_t *dataset_sample_index)
{
    int rc = sl_mkdir_p(dir);
    char *p = sl_xasprintf("%s/%s-dataset_index.npy", dir, name);
    uint64_t shape[1] = { size };
    if (!rc)
        rc = npy_write(p, "<i2", shape, 1, dataset_index, sizeof(int16_t));
    free(p);
    p = sl_xasprintf("%s/%s-dataset_sample_index.npy", dir, name);
    if (!rc)
        rc = npy_write(p, "<i8", shape, 1, dataset_sample_index, sizeof(int64_t));
    free(p);
    return rc;
}

int blend_load(const char *dir, const char *name, uint64_t size, int16_t **dataset_index,
               int64_t **dataset_sample_index)
{
    *dataset_index = NULL;
    *dataset_sample_index = NULL;
    char *p1 = sl_xasprintf("%s/%s-dataset_index.npy", dir, name),
         *p2 = sl_xasprintf("%s/%s-dataset_sample_index.npy", dir, name);
    int64_t *a = NULL, *b = NULL;
    uint64_t sa[2], sb[2];
    int da, db;
    int rc = npy_read_i64(p1, &a, sa, &da);
    if (!rc)
        rc = npy_read_i64(p2, &b, sb, &db);
    if (!rc && (da != 1 || db != 1 || sa[0] != size || sb[0] != size))
        rc = sl_err_set(SL_ERR_CORRUPT, "blend cache '%s' does not hold %llu samples", p1,
                        (unsigned long long)size);
    if (!rc) {
        int16_t *d = sl_xmalloc(sl_mul_size(size ? (size_t)size : 1, sizeof(int16_t)));
        for (uint64_t i = 0; i < size; i++)
            d[i] = (int16_t)a[i];
        *dataset_index = d;
        *dataset_sample_index = b;
        b = NULL;
    }
    free(a);
    free(b);
    free(p1);
    free(p2);
    return rc;
}

static int is_number(const char *s, double *v)
{
    char *end;
    *v = strtod(s, &end);
    return end != s && *end == 0;
}

int blend_parse_prefix(const char *spec, int normalize, char ***prefixes, double **weights, int *n,
                       char **storage)
{
    *prefixes = NULL;
    *weights = NULL;
    *n = 0;
    char *buf = sl_xstrdup(spec);
    *storage = buf;
    size_t cap = 8, nt = 0;
    char **tok = sl_xmalloc(cap * sizeof(char *));
    for (char *save = NULL, *t = strtok_r(buf, " \t\n,", &save); t;
         t = strtok_r(NULL, " \t\n,", &save)) {
        if (nt == cap)
            tok = sl_xrealloc(tok, (cap *= 2) * sizeof(char *));
        tok[nt++] = t;
    }
    int rc = 0;
    double v;
    if (nt == 0) {
        rc = sl_err_set(SL_ERR_CONFIG, "data.prefix is empty\nhint: give PREFIX (without .bin/.idx) "
                                       "or \"0.3 PREFIX_A 0.7 PREFIX_B\", or data=synthetic");
        goto fail;
    }
    if (nt == 1 && !is_number(tok[0], &v)) {
        *prefixes = sl_xmalloc(sizeof(char *));
        (*prefixes)[0] = tok[0];
        *weights = sl_xcalloc(1, sizeof(double)); /* unweighted */
        *n = 1;
        free(tok);
        return 0;
    }
    int numbers = 0;
    for (size_t i = 0; i < nt; i++)
        numbers += is_number(tok[i], &v);
    if (!numbers && nt < 32767) {
        /* Megatron's unweighted form "PREFIX_A PREFIX_B": weights 0 here, set by the loader
         * in proportion to each prefix's size (Megatron weighs them by their samples) */
        *prefixes = sl_xmalloc(nt * sizeof(char *));
        *weights = sl_xcalloc(nt, sizeof(double));
        for (size_t i = 0; i < nt; i++)
            (*prefixes)[i] = tok[i];
        *n = (int)nt;
        free(tok);
        return 0;
    }
    if (nt % 2 || !is_number(tok[0], &v)) {
        rc = sl_err_set(SL_ERR_CONFIG, "data.prefix '%s': expected weight and prefix pairs\n"
                                       "hint: \"0.3 PREFIX_A 0.7 PREFIX_B\" (Megatron's --data-path)",
                        spec);
        goto fail;
    }
    int m = (int)(nt / 2);
    if (m >= 32767) {
        rc = sl_err_set(SL_ERR_CONFIG, "data.prefix: too many datasets (%d)", m);
        goto fail;
    }
    *prefixes = sl_xmalloc((size_t)m * sizeof(char *));
    *weights = sl_xmalloc((size_t)m * sizeof(double));
    double sum = 0.0;
    for (int i = 0; i < m; i++) {
        if (!is_number(tok[2 * i], &v) || !(v > 0) || !isfinite(v)) {
            rc = sl_err_set(SL_ERR_CONFIG, "data.prefix: weight '%s' of '%s' is not a positive "
                                           "number",
                            tok[2 * i], tok[2 * i + 1]);
            goto fail;
        }
        (*weights)[i] = v;
        (*prefixes)[i] = tok[2 * i + 1];
        sum += v;
    }
    if (fabs(sum - 1.0) > 1e-6) {
        if (!normalize) {
            rc = sl_err_set(SL_ERR_CONFIG,
                            "data.prefix: weights sum to %.9g, not 1\n"
                            "hint: fix the weights, or set data.normalize_weights=true to "
                            "divide them by their sum as Megatron does",
                            sum);
            goto fail;
        }
    }
    *n = m;
    free(tok);
    return 0;
fail:
    free(tok);
    free(*prefixes);
    free(*weights);
    free(buf);
    *prefixes = NULL;
    *weights = NULL;
    *storage = NULL;
    return rc;
}
