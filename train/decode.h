/* Incremental decoding on the CPU: the forward pass of train/model.h one token at a time,
 * with the keys and values of earlier positions kept in a cache, for `sluice generate`.
 *
 * It runs the kernels of train/cpu_ops.h on single rows, in the order the full forward pass
 * (train/cpu_model.h) uses, so the logits of a position match that pass's logits for the
 * same prefix (tested). Everything is allocated at decoder_new; steps never allocate.
 */
#ifndef SL_TRAIN_DECODE_H
#define SL_TRAIN_DECODE_H

#include "train/model.h"

#include <stddef.h>
#include <stdint.h>

struct decoder;

/* A decoder for up to max_len positions (<= the model's max_position_embeddings) over the
 * parameters slab `params` laid out by l. c, l and params are borrowed and must outlive
 * the decoder. 0, SL_ERR_CONFIG (max_len out of range) or SL_ERR_NOMEM. */
int decoder_new(struct decoder **out, const struct model_config *c, const struct model_layout *l,
                const float *params, int max_len);
void decoder_free(struct decoder *d);

/* Feed the token (< vocab_size) at the next position and return the logits that predict the
 * token after it: vocab_size floats, valid until the next call. NULL when the cache is full
 * (decoder_len == max_len). */
const float *decoder_step(struct decoder *d, int32_t token);

/* Feed a token without computing logits (a prompt's tokens before its last): 0, or
 * SL_ERR_STATE when the cache is full. */
int decoder_feed(struct decoder *d, int32_t token);

/* Positions fed so far, and the capacity. */
int decoder_len(const struct decoder *d);
int decoder_max_len(const struct decoder *d);

/* Forget every position (the next token is position 0 again). */
void decoder_reset(struct decoder *d);
/* Forget the positions from len on (a shared prefix stays cached; eval scores several
 * continuations of one context this way). No-op when len >= decoder_len. */
void decoder_truncate(struct decoder *d, int len);

#endif
