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
struct cpu_fp8;
struct sl_world;

/* Where the tensors live when the trainer shards them over data parallel (ZeRO-2 and -3):
 * instead of params + offset and grads + offset, tensor i of the layout (the slab's ids) is
 * read at param[i] and its gradient added at grad[i]. A layer's entries need be valid only
 * between the trainer's need and done calls for it, which the model makes around the
 * layer's forward (backward 0) and its backward (backward 1), passing the layer's index in
 * the slab's layout (cpu_model_par.layer0 + its index in this model); the tensors outside
 * the layers (embeddings, final norm, output layer) stay valid for the whole pass. A
 * nonzero return is an error, kept for cpu_model_error (the pass goes on, its result
 * meaningless, as after a failed collective). */
struct cpu_model_hooks {
    void *ctx;
    const float **param; /* [layout's n] */
    float **grad;        /* [layout's n] */
    int (*need)(void *ctx, int layer, int backward);
    int (*done)(void *ctx, int layer, int backward);
};

/* A rank's part of a model-parallel run (train/parallel.h): the model's config and layout
 * are then the rank's local ones (its heads, KV heads, d_ff and vocabulary rows, its
 * stage's layers). */
struct cpu_model_par {
    const struct cpu_model_hooks *hooks; /* NULL: params and grads are slabs */
    int layer0; /* the slab layout's index of this model's first layer (for the hooks) */
    const struct sl_world *tp;   /* the tensor-parallel group, NULL without TP */
    int sp;                      /* sequence parallel: the residual stream, norms and their
                                  * inputs are split into tp blocks of B*T/tp token rows */
    int vocab_start;             /* the first vocabulary row held (vocab-parallel) */
    int first_stage, last_stage; /* pipeline: the stage embeds the tokens / computes the loss */
    struct cpu_fp8 *fp8; /* the layers' four products in FP8 (train/cpu_fp8.h; borrowed; only
                          * without tensor parallel), or NULL */
};

/* Activations for micro-batches of B x T tokens (T <= max_seq_len). 0 or SL_ERR_CONFIG /
 * SL_ERR_NOMEM (the message gives the size). */
int cpu_model_new(struct cpu_model **out, const struct model_config *c,
                  const struct model_layout *l, int B, int T);
/* The same for a rank of a model-parallel run (par copied; its group borrowed). */
int cpu_model_new_par(struct cpu_model **out, const struct model_config *c,
                      const struct model_layout *l, int B, int T, const struct cpu_model_par *par);
void cpu_model_free(struct cpu_model *m);
/* 0, or the first error of a collective in a forward or backward pass (with its message). */
int cpu_model_error(const struct cpu_model *m);
/* Token rows of the residual stream held by this rank: B*T, or B*T/tp with SP. */
int cpu_model_rows(const struct cpu_model *m);
/* Bytes of the activation slab. */
size_t cpu_model_bytes(const struct cpu_model *m);

/* The document boundaries of the passes that follow (train/docmask.h), all [B*T]: pos, each
 * token's position (NULL: t), start, the first token of its document in its sample (NULL:
 * 0), lmask, its loss weight, 1 or 0 (NULL: all 1; the loss is then the mean over the
 * unmasked positions, 0 when there is none, and the backward's dloss_scale applies to
 * B*T times that mean). Borrowed: they must stay unchanged until the backward of the last
 * forward is done; a rank that holds a part of the model gets the whole micro-batch's. */
void cpu_model_set_docs(struct cpu_model *m, const int32_t *pos, const int32_t *start,
                        const float *lmask);

/* Forward pass over tokens[B*T] with next-token targets[B*T] (ids < vocab_size). Returns
 * the mean loss over the B*T positions; per-position losses and the logits stay available
 * until the next call. */
float cpu_model_forward(struct cpu_model *m, const float *params, const int32_t *tokens,
                        const int32_t *targets);
/* A pipeline stage's forward pass: the first stage reads tokens, the others the previous
 * stage's output x_in[rows, d_model]; the last stage returns the mean loss (0 elsewhere),
 * the others leave their output at cpu_model_stage_out. */
float cpu_model_forward_stage(struct cpu_model *m, const float *params, const int32_t *tokens,
                              const int32_t *targets, const float *x_in);
float *cpu_model_stage_out(struct cpu_model *m);
/* A stage's backward pass: the last stage starts from the loss, the others from the
 * gradient of their output dout[rows, d_model]; a stage other than the first leaves the
 * gradient of its input at cpu_model_stage_din. */
void cpu_model_backward_stage(struct cpu_model *m, const float *params, float *grads,
                              const int32_t *tokens, const int32_t *targets, float dloss_scale,
                              const float *dout);
const float *cpu_model_stage_din(const struct cpu_model *m);
/* Logits of the last forward pass: [B*T, vocab_size] (row stride vocab_size). */
const float *cpu_model_logits(const struct cpu_model *m);

/* Backward pass of the last forward pass: grads += d(dloss_scale * sum of per-position
 * losses)/d(params). With dloss_scale = 1/(B*T) this is the gradient of the mean loss; the
 * trainer folds gradient accumulation and data parallelism into the scale. Destroys the
 * logits. */
void cpu_model_backward(struct cpu_model *m, const float *params, float *grads,
                        const int32_t *tokens, const int32_t *targets, float dloss_scale);

#endif
