/* Incremental decoding on the CPU: the forward pass of train/model.h one token at a time,
 * with the keys and values of earlier positions kept in a cache, for `sluice generate`; and
 * blocks of tokens at once (matrix products over the block's rows), for `sluice eval`: a
 * context in one block, then several continuations of it in one block, each row attending
 * to the cached context and to the earlier rows of its own continuation.
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
/* The same with room for blocks of up to max_rows tokens (decoder_block; 0: none). */
int decoder_new_rows(struct decoder **out, const struct model_config *c,
                     const struct model_layout *l, const float *params, int max_len, int max_rows);
void decoder_free(struct decoder *d);

/* Feed the token (< vocab_size) at the next position and return the logits that predict the
 * token after it: vocab_size floats, valid until the next call. NULL when the cache is full
 * (decoder_len == max_len). */
const float *decoder_step(struct decoder *d, int32_t token);

/* Feed a token without computing logits (a prompt's tokens before its last): 0, or
 * SL_ERR_STATE when the cache is full. */
int decoder_feed(struct decoder *d, int32_t token);

/* Run n tokens (1..max_rows) as one block after the len cached positions. Row r continues
 * the cache with the block's rows seg[r]..r-1 (seg[r] <= r; seg NULL: 0 for every row, one
 * sequence): it sits at position len + r - seg[r] and attends to the cached positions and
 * to those rows, so several continuations of the cached prefix run in one block (each
 * continuation's rows consecutive, seg = its first row). Its keys and values go to cache
 * slot len + r, so len + n <= max_len. commit (with seg NULL only) keeps the rows: len += n.
 * Returns the logits of the rows out[0..nout) ([nout, vocab_size], valid until the next
 * call; nout may be 0), or NULL for a block that does not fit. Tokens must be below
 * vocab_size. */
const float *decoder_block(struct decoder *d, const int32_t *tok, const int *seg, int n,
                           const int *out, int nout, int commit);

/* Positions fed so far, and the capacity. */
int decoder_len(const struct decoder *d);
int decoder_max_len(const struct decoder *d);

/* Forget every position (the next token is position 0 again). */
void decoder_reset(struct decoder *d);
/* Forget the positions from len on (a shared prefix stays cached; eval scores several
 * continuations of one context this way). No-op when len >= decoder_len. */
void decoder_truncate(struct decoder *d, int len);

#endif
