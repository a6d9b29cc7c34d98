/* AdamW, global-norm clipping, learning-rate schedules. */
#include "train/optim.h"

#include "train/model.h"

#include <math.h>

const char *lr_decay_name(enum lr_decay d)
{
    switch (d) {
    case LR_COSINE:
        return "cosine";
    case LR_LINEAR:
        return "linear";
    case LR_CONSTANT:
        return "constant";
    case LR_WSD:
        return "wsd";
    }
    return NULL;
}

double lr_at(const struct lr_schedule *s, long step)
{
    if (s->warmup_steps > 0 && step <= s->warmup_steps)
        return s->lr * (double)step / (double)s->warmup_steps;
    if (s->style == LR_CONSTANT)
        return s->lr;
    if (step >= s->decay_steps)
        return s->style == LR_WSD && s->wsd_fraction <= 0 ? s->lr : s->min_lr;
    double span = (double)(s->decay_steps - s->warmup_steps);
    double r = span > 0 ? (double)(step - s->warmup_steps) / span : 1.0;
    switch (s->style) {
    case LR_COSINE:
        return s->min_lr + 0.5 * (s->lr - s->min_lr) * (1.0 + cos(M_PI * r));
    case LR_LINEAR:
        return s->lr - (s->lr - s->min_lr) * r;
    case LR_WSD: {
        double dec = s->wsd_fraction * (double)s->decay_steps;
        double start = (double)s->decay_steps - dec;
        if (dec <= 0 || step <= start)
            return s->lr;
        double q = ((double)step - start) / dec;
        return s->min_lr + (s->lr - s->min_lr) * (1.0 - sqrt(q));
    }
    case LR_CONSTANT:
        break;
    }
    return s->lr;
}

void adamw_step_range(const struct adamw *o, int decay, float *params, const float *grads, float *m,
                      float *v, size_t n, double lr, long step)
{
    double bc1 = 1.0 - pow(o->beta1, (double)step);
    double bc2 = 1.0 - pow(o->beta2, (double)step);
    float step_size = (float)(lr / bc1);
    float bc2_sqrt = (float)sqrt(bc2);
    float b1w = (float)(1.0 - o->beta1), b2 = (float)o->beta2, b2w = (float)(1.0 - o->beta2);
    float eps = (float)o->eps;
    float dk = decay ? (float)(1.0 - lr * o->weight_decay) : 1.0f;
#pragma omp parallel for schedule(static) if (n >= 2097152)
    for (size_t i = 0; i < n; i++) {
        float g = grads[i];
        float p = params[i] * dk;
        float mi = m[i] + b1w * (g - m[i]);
        float vi = v[i] * b2 + b2w * g * g;
        m[i] = mi;
        v[i] = vi;
        float denom = sqrtf(vi) / bc2_sqrt + eps;
        params[i] = p - step_size * (mi / denom);
    }
}

void adamw_step(const struct adamw *o, const struct model_layout *l, float *params,
                const float *grads, float *m, float *v, double lr, long step)
{
    for (int ti = 0; ti < l->n; ti++) {
        const struct model_tensor *t = &l->t[ti];
        size_t off = t->offset;
        adamw_step_range(o, t->decay, params + off, grads + off, m + off, v + off, t->numel, lr,
                         step);
    }
}

double grad_global_norm(const float *grads, size_t n)
{
    /* fixed chunks summed in order: the same result for any thread count */
    size_t chunk = 1u << 16, nchunks = (n + chunk - 1) / chunk;
    double total = 0.0;
    double part[64];
    for (size_t c0 = 0; c0 < nchunks; c0 += 64) {
        size_t c1 = c0 + 64 < nchunks ? c0 + 64 : nchunks;
#pragma omp parallel for schedule(static) if (n >= 2097152)
        for (size_t c = c0; c < c1; c++) {
            size_t b = c * chunk, e = b + chunk < n ? b + chunk : n;
            double s = 0.0;
            for (size_t i = b; i < e; i++)
                s += (double)grads[i] * grads[i];
            part[c - c0] = s;
        }
        for (size_t c = c0; c < c1; c++)
            total += part[c - c0];
    }
    return sqrt(total);
}

double grad_clip(float *grads, size_t n, double norm, double max_norm)
{
    if (!(max_norm > 0))
        return 1.0;
    double coef = max_norm / (norm + 1e-6);
    if (coef >= 1.0)
        return 1.0;
    float cf = (float)coef;
#pragma omp parallel for schedule(static) if (n >= 2097152)
    for (size_t i = 0; i < n; i++)
        grads[i] *= cf;
    return coef;
}
