/* The FP8 formats' rounding and the per-tensor scales of train/fp8.h. */
#include "train/fp8.h"

#include "core/err.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Each format's mantissa bits and smallest normal exponent (1 - bias). */
static const struct {
    int mant, emin;
    float max;
} formats[] = {
    [FP8_E4M3] = { 3, -6, 448.0f },
    [FP8_E5M2] = { 2, -14, 57344.0f },
};

float fp8_max(enum fp8_format f)
{
    return formats[f].max;
}

float fp8_round(float x, enum fp8_format f)
{
    if (isnan(x))
        return x;
    float a = fabsf(x), max = formats[f].max;
    if (a >= max)
        return copysignf(max, x);
    if (a == 0.0f)
        return x;
    int e;
    frexpf(a, &e); /* a = m 2^e, m in [0.5, 1): the leading bit is 2^(e-1) */
    e -= 1;
    if (e < formats[f].emin)
        e = formats[f].emin; /* subnormal: the spacing of the smallest binade */
    /* a / quantum is exact (a power of two); rintf rounds to even in the default mode */
    int shift = e - formats[f].mant;
    float r = ldexpf(rintf(ldexpf(a, -shift)), shift);
    if (r > max) /* rounded up past the largest value: saturate */
        r = max;
    return copysignf(r, x);
}

void fp8_quantize(float *q, const float *x, size_t n, float scale, enum fp8_format f)
{
#pragma omp parallel for schedule(static) if ((double)n >= 1048576.0)
    for (size_t i = 0; i < n; i++)
        q[i] = fp8_round(x[i] * scale, f);
}

float fp8_amax(const float *x, size_t n)
{
    float m = 0.0f;
    int nan = 0;
    for (size_t i = 0; i < n; i++) {
        float a = fabsf(x[i]);
        nan |= isnan(a);
        m = a > m ? a : m;
    }
    return nan ? NAN : m;
}

float fp8_scale_for(float amax, enum fp8_format f, long margin, float prev)
{
    if (!(amax > 0.0f) || !isfinite(amax))
        return prev;
    return formats[f].max / amax / ldexpf(1.0f, (int)margin);
}

int fp8_scaling_init(struct fp8_scaling *s, enum fp8_recipe recipe, int n, long history,
                     long margin)
{
    memset(s, 0, sizeof(*s));
    s->recipe = recipe;
    s->n = n;
    s->history = recipe == FP8_DELAYED ? history : 1;
    s->margin = margin;
    s->scale = malloc((size_t)n * sizeof(float));
    s->amax = calloc((size_t)n, sizeof(float));
    s->hist = calloc((size_t)s->history * (size_t)n, sizeof(float));
    if (!s->scale || !s->amax || !s->hist) {
        fp8_scaling_release(s);
        return sl_err_set(SL_ERR_NOMEM, "out of memory for %d FP8 scales with %ld steps of history",
                          n, history);
    }
    for (int i = 0; i < n; i++)
        s->scale[i] = 1.0f;
    return 0;
}

void fp8_scaling_release(struct fp8_scaling *s)
{
    free(s->scale);
    free(s->amax);
    free(s->hist);
    memset(s, 0, sizeof(*s));
}

float fp8_scaling_use(struct fp8_scaling *s, int i, const float *x, size_t len, enum fp8_format f)
{
    if (s->recipe == FP8_CURRENT) /* no margin: Transformer Engine's current scaling has none */
        return fp8_scale_for(fp8_amax(x, len), f, 0, 1.0f);
    if (!s->frozen) {
        float a = fp8_amax(x, len);
        if (isnan(a) || a > s->amax[i])
            s->amax[i] = a;
    }
    return s->scale[i];
}

void fp8_scaling_step(struct fp8_scaling *s, enum fp8_format (*fmt)(int i))
{
    if (s->recipe != FP8_DELAYED)
        return;
    float *row = s->hist + (size_t)s->pos * (size_t)s->n;
    memcpy(row, s->amax, (size_t)s->n * sizeof(float));
    for (int i = 0; i < s->n; i++) {
        float m = 0.0f;
        for (long h = 0; h < s->history; h++) {
            float a = s->hist[(size_t)h * (size_t)s->n + (size_t)i];
            m = isnan(a) || a > m ? a : m;
        }
        s->scale[i] = fp8_scale_for(m, fmt(i), s->margin, s->scale[i]);
        s->amax[i] = 0.0f;
    }
    s->pos = (s->pos + 1) % s->history;
}
