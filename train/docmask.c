/* Positions, document starts and the loss mask of a packed sample (train/docmask.h). */
#include "train/docmask.h"

int docmask_on(const struct docmask *d)
{
    return d->reset_pos || d->reset_attn || d->mask_loss;
}

int docmask_sample(const struct docmask *d, const int32_t *tokens, int T, int32_t *pos,
                   int32_t *start, float *lmask)
{
    int first = 0, kept = 0; /* the current document's first token */
    for (int t = 0; t < T; t++) {
        pos[t] = d->reset_pos ? t - first : t;
        start[t] = d->reset_attn ? first : 0;
        int eod = d->eod >= 0 && tokens[t] == d->eod;
        float w = d->mask_loss && eod ? 0.0f : 1.0f;
        if (lmask)
            lmask[t] = w;
        kept += w > 0.0f;
        if (eod)
            first = t + 1;
    }
    return kept;
}
