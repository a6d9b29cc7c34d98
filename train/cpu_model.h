/* The CPU reference forward and backward pass of the model in train/model.h.
 *
 * A struct cpu_model holds the activations and scratch for one micro-batch shape
 * (B sequences of T tokens), allocated once in one slab at cpu_model_new; forward and
 * backward never allocate. Parameters and gradients are slabs laid out by the model's
 * struct model_layout and owned by the caller.
 */
#ifndef SL_TRAIN_CPU_MODEL_H
#define SL_TRAIN_CPU_MODEL_H

#include "train/model.h"

#include <stddef.h>
#include <stdint.h>

struct cpu_model;

/* Activations for micro-batches of B x T tokens (T <= max_seq_len). 0 or SL_ERR_CONFIG /
 * SL_ERR_NOMEM (the message gives the size). */
int cpu_model_new(struct cpu_model **out, const struct model_config *c,
                  const struct model_layout *l, int B, int T);
void cpu_model_free(struct cpu_model *m);
/* Bytes of the activation slab. */
size_t cpu_model_bytes(const struct cpu_model *m);

/* Forward pass over tokens[B*T] with next-token targets[B*T] (ids < vocab_size). Returns
 * the mean loss over the B*T positions; per-position losses and the logits stay available
 * until the next call. */
float cpu_model_forward(struct cpu_model *m, const float *params, const int32_t *tokens,
                        const int32_t *targets);
/* Logits of the last forward pass: [B*T, vocab_size] (row stride vocab_size). */
const float *cpu_model_logits(const struct cpu_model *m);

/* Backward pass of the last forward pass: grads += d(dloss_scale * sum of per-position
 * losses)/d(params). With dloss_scale = 1/(B*T) this is the gradient of the mean loss; the
 * trainer folds gradient accumulation and data parallelism into the scale. Destroys the
 * logits. */
void cpu_model_backward(struct cpu_model *m, const float *params, float *grads,
                        const int32_t *tokens, const int32_t *targets, float dloss_scale);

#endif
