/* Temperature, top-k and top-p sampling over a candidate list sorted by logit. */
#include "train/sampler.h"

#include "core/alloc.h"
#include "core/err.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

int sampler_init(struct sampler *s, int vocab, double temperature, int top_k, double top_p,
                 uint64_t seed)
{
    memset(s, 0, sizeof(*s));
    if (vocab <= 0)
        return sl_err_set(SL_ERR_USAGE, "the vocabulary is empty");
    if (!isfinite(temperature) || temperature < 0)
        return sl_err_set(SL_ERR_USAGE, "temperature must be 0 or more, got %g", temperature);
    if (top_k < 0)
        return sl_err_set(SL_ERR_USAGE, "top-k must be 0 (off) or more, got %d", top_k);
    if (!isfinite(top_p) || top_p < 0)
        return sl_err_set(SL_ERR_USAGE, "top-p must be in [0, 1], got %g", top_p);
    s->vocab = vocab;
    s->temperature = temperature;
    s->top_k = top_k;
    s->top_p = top_p;
    sl_rng_seed(&s->rng, seed, 0);
    s->cand = sl_xmalloc((size_t)vocab * sizeof(*s->cand));
    s->w = sl_xmalloc((size_t)vocab * sizeof(*s->w));
    return 0;
}

void sampler_release(struct sampler *s)
{
    free(s->cand);
    free(s->w);
    memset(s, 0, sizeof(*s));
}

int sampler_greedy(const struct sampler *s)
{
    return s->temperature <= 0 || s->top_k == 1 || s->top_p <= 0;
}

/* A NaN is below everything. */
static float key(float v)
{
    return v == v ? v : -INFINITY;
}

/* More likely first; equal logits by id. */
static int cand_before(const struct sampler_cand *a, const struct sampler_cand *b)
{
    return a->logit > b->logit || (a->logit == b->logit && a->id < b->id);
}

static int cand_cmp(const void *pa, const void *pb)
{
    const struct sampler_cand *a = pa, *b = pb;
    return cand_before(a, b) ? -1 : cand_before(b, a) ? 1 : 0;
}

/* Min-heap (by cand_before) sift-down over h[0..n). */
static void sift_down(struct sampler_cand *h, int n, int i)
{
    for (;;) {
        int c = 2 * i + 1;
        if (c >= n)
            return;
        if (c + 1 < n && cand_before(&h[c], &h[c + 1]))
            c++;
        if (!cand_before(&h[i], &h[c]))
            return;
        struct sampler_cand t = h[i];
        h[i] = h[c];
        h[c] = t;
        i = c;
    }
}

int32_t sampler_pick(struct sampler *s, const float *logits)
{
    int V = s->vocab;
    if (sampler_greedy(s)) {
        int best = 0;
        for (int i = 1; i < V; i++)
            if (key(logits[i]) > key(logits[best]))
                best = i;
        return best;
    }
    /* the candidates, most likely first (only the top k when k is set) */
    int n = V;
    struct sampler_cand *c = s->cand;
    if (s->top_k > 0 && s->top_k < V) {
        n = s->top_k;
        for (int i = 0; i < n; i++)
            c[i] = (struct sampler_cand){ key(logits[i]), i };
        /* keep the k best in a heap whose root is the worst of them */
        for (int i = n / 2 - 1; i >= 0; i--)
            sift_down(c, n, i);
        for (int i = n; i < V; i++) {
            struct sampler_cand x = { key(logits[i]), i };
            if (cand_before(&x, &c[0])) {
                c[0] = x;
                sift_down(c, n, 0);
            }
        }
        qsort(c, (size_t)n, sizeof(*c), cand_cmp);
    } else {
        for (int i = 0; i < V; i++)
            c[i] = (struct sampler_cand){ key(logits[i]), i };
        if (s->top_p < 1.0)
            qsort(c, (size_t)n, sizeof(*c), cand_cmp);
    }
    float mx = -INFINITY;
    for (int i = 0; i < n; i++)
        if (c[i].logit > mx)
            mx = c[i].logit;
    if (mx == -INFINITY) /* nothing finite: the first candidate */
        return c[0].id;
    double sum = 0.0;
    for (int i = 0; i < n; i++) {
        s->w[i] = exp(((double)c[i].logit - mx) / s->temperature);
        sum += s->w[i];
    }
    if (s->top_p < 1.0) {
        /* the smallest prefix whose probability reaches top_p */
        double need = s->top_p * sum, acc = 0.0;
        int keep = 0;
        while (keep < n && (keep == 0 || acc < need))
            acc += s->w[keep++];
        n = keep;
        sum = acc;
    }
    double u = sl_rng_double(&s->rng) * sum, acc = 0.0;
    for (int i = 0; i < n; i++) {
        acc += s->w[i];
        if (u < acc)
            return c[i].id;
    }
    /* rounding: the last candidate with a weight */
    for (int i = n - 1; i > 0; i--)
        if (s->w[i] > 0)
            return c[i].id;
    return c[0].id;
}
