/* AdamW with decoupled weight decay, clipping by global norm, and the learning-rate
 * schedule (linear warmup, then cosine, linear, constant or warmup-stable-decay to min_lr).
 *
 * The update follows torch.optim.AdamW's arithmetic (fp32 state, bias corrections in
 * double), so the CPU trainer matches PyTorch step for step.
 */
#ifndef SL_TRAIN_OPTIM_H
#define SL_TRAIN_OPTIM_H

#include <stddef.h>

struct model_layout;

enum lr_decay { LR_COSINE, LR_LINEAR, LR_CONSTANT, LR_WSD };

struct lr_schedule {
    double lr, min_lr;
    long warmup_steps;
    long decay_steps;     /* step at which the decay reaches min_lr (usually train.steps) */
    enum lr_decay style;
    double wsd_fraction;  /* WSD: share of decay_steps spent decaying (1 - sqrt shape) */
};

/* Learning rate for step s (1-based: the s-th optimizer update). Warmup: lr * s / warmup;
 * then the decay over (warmup, decay_steps]; min_lr afterwards. */
double lr_at(const struct lr_schedule *s, long step);
/* "cosine" ... or NULL. */
const char *lr_decay_name(enum lr_decay d);

struct adamw {
    double beta1, beta2, eps, weight_decay;
};

/* One update of every tensor of the layout at `step` (1-based) with learning rate lr.
 * Tensors whose kind is a norm or a bias get no weight decay. */
void adamw_step(const struct adamw *o, const struct model_layout *l, float *params,
                const float *grads, float *m, float *v, double lr, long step);

/* The same update of n consecutive elements (one tensor or a piece of one): params[i],
 * grads[i], m[i] and v[i]; decay: the tensor takes weight decay. adamw_step is this per
 * tensor, so a piece gives the elements bit for bit what the whole would (ZeRO-1). */
void adamw_step_range(const struct adamw *o, int decay, float *params, const float *grads, float *m,
                  float *v, size_t n, double lr, long step);

/* Euclidean norm of the whole gradient slab (double accumulation, fixed order). */
double grad_global_norm(const float *grads, size_t n);
/* Scale grads by max_norm / (norm + 1e-6) when that is below 1 (torch's rule); returns the
 * factor applied (1 when none). */
double grad_clip(float *grads, size_t n, double norm, double max_norm);

#endif
