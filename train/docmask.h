/* Document boundaries inside a packed sample, as Megatron-LM's data.reset_position_ids,
 * data.reset_attention_mask and data.eod_mask_loss define them (its
 * get_ltor_masks_and_position_ids over a sample's input tokens): an end-of-document token
 * ends its document (it belongs to the one before it), the next token starts a new one.
 *   positions   reset_position_ids: position 0 at every document's first token, else 0..T-1
 *   attention   reset_attention_mask: token t attends to tokens start[t]..t, start[t] the
 *               first token of t's document (a ragged, block-diagonal causal mask), else 0..t
 *   loss        eod_mask_loss: the loss at an input token that is the end-of-document id
 *               (the prediction of the next document's first token) is masked; the mean is
 *               then over the unmasked positions of the micro-batch, as Megatron's default
 *               (not calculate_per_token_loss) divides each micro-batch's sum
 * Used by both trainer paths (train/cpu_model.h, train/gpu_model.c).
 */
#ifndef SL_TRAIN_DOCMASK_H
#define SL_TRAIN_DOCMASK_H

#include <stdint.h>

struct docmask {
    int reset_pos, reset_attn, mask_loss; /* the three settings */
    int64_t eod;                          /* the end-of-document id (>= 0 when one is on) */
};

/* 1 when any of the three is on. */
int docmask_on(const struct docmask *d);

/* One sample's T input tokens: pos[T] (0..T-1 without reset_pos), start[T] (0 without
 * reset_attn) and, when lmask is not NULL, lmask[T] (1, or 0 at an end-of-document input
 * with mask_loss). Returns the number of unmasked positions. */
int docmask_sample(const struct docmask *d, const int32_t *tokens, int T, int32_t *pos,
                   int32_t *start, float *lmask);

#endif
