/* FP8 as the linear layers use it (train.fp8; docs/trainer.md, "FP8"): the two formats of
 * Transformer Engine's hybrid recipe (E4M3 for weights and activations, E5M2 for gradients),
 * the rounding of an fp32 value to either, and the per-tensor scales, computed each step from
 * the tensor itself (current scaling) or from an amax history (delayed scaling).
 *
 * A quantised tensor is q = fp8(x * scale); a product of two is scaled back by
 * 1 / (scale_a * scale_b), as cuBLASLt's A and B scale pointers do.
 */
#ifndef SL_TRAIN_FP8_H
#define SL_TRAIN_FP8_H

#include <stddef.h>

enum fp8_format {
    FP8_E4M3, /* 1 sign, 4 exponent (bias 7), 3 mantissa bits; no infinities; max 448 */
    FP8_E5M2, /* 1 sign, 5 exponent (bias 15), 2 mantissa bits; max 57344 */
};

/* The largest finite value: 448 (1.75 x 2^8) and 57344 (1.75 x 2^15). */
float fp8_max(enum fp8_format f);

/* x rounded to the nearest value of format f, ties to the even mantissa, saturating: a
 * value beyond the largest finite one (infinities included) becomes +-max; NaN stays NaN.
 * Subnormals are kept (E4M3 down to 2^-9, E5M2 to 2^-16). The result is an fp32 value that
 * the format holds exactly. */
float fp8_round(float x, enum fp8_format f);

/* q[i] = fp8_round(x[i] * scale, f), the product in fp32; q may be x. */
void fp8_quantize(float *q, const float *x, size_t n, float scale, enum fp8_format f);

/* max |x[i]| (NaN if any element is NaN). */
float fp8_amax(const float *x, size_t n);

/* The scale that maps amax to the format's largest value divided by 2^margin; prev where
 * amax is 0 or not finite (Transformer Engine's rule). */
float fp8_scale_for(float amax, enum fp8_format f, long margin, float prev);

enum fp8_recipe { FP8_DELAYED = 1, FP8_CURRENT = 2 }; /* enum train_fp8's values */

/* The scales of n quantised tensors. Current scaling: a tensor's scale is computed from its
 * own amax each time it is quantised. Delayed scaling (Transformer Engine's DelayedScaling
 * with amax_compute_algo "max"): a tensor is quantised with its scale as it stands, and its
 * amax is recorded; at the end of each optimizer step (fp8_scaling_step) the step's amax
 * (the maximum over its micro-batches, and over the ranks the trainer reduces it over)
 * enters a history of the last `history` steps, and the scale becomes
 * fp8_scale_for(max of the history). Scales start at 1. */
struct fp8_scaling {
    enum fp8_recipe recipe;
    long history, margin, pos;
    int n;
    int frozen;   /* 1: amaxes are not recorded (an evaluation's forward passes) */
    float *scale; /* [n] */
    float *amax;  /* [n] this step's, delayed scaling */
    float *hist;  /* [history][n] */
};

/* 0 or SL_ERR_NOMEM. */
int fp8_scaling_init(struct fp8_scaling *s, enum fp8_recipe recipe, int n, long history,
                     long margin);
void fp8_scaling_release(struct fp8_scaling *s);
/* The scale to quantise tensor i, x[len] in format f, with now (recording its amax). */
float fp8_scaling_use(struct fp8_scaling *s, int i, const float *x, size_t len, enum fp8_format f);
/* Delayed scaling: the step's amaxes (s->amax, already reduced by the caller) into the
 * history and the new scales; the formats of the tensors by fmt(i). No-op for current. */
void fp8_scaling_step(struct fp8_scaling *s, enum fp8_format (*fmt)(int i));

#endif
