/* The CPU backend's state, shared by train/cpu_train.c (setup, the schedule, the step,
 * checkpoints) and train/cpu_zero.c (the ZeRO stages: which piece of every tensor a
 * data-parallel rank keeps, and the buffers and collectives of ZeRO-2 and ZeRO-3).
 */
#ifndef SL_TRAIN_CPU_INTERNAL_H
#define SL_TRAIN_CPU_INTERNAL_H

#include "train/train_run.h"

#include "core/world.h"
#include "train/cpu_model.h"

#include <stddef.h>
#include <stdint.h>

struct cpu_trainer {
    const struct train_opts *o;
    struct sl_world *w;
    struct parallel_config par;
    struct parallel_coord at;
    int parallel; /* tensor or pipeline parallel */
    /* groups: tensor parallel, data parallel, pipeline (the stages of one replica), the
     * replica's model-parallel ranks (tp x pp), and the two ends of the pipeline (the tied
     * embedding's copies) */
    struct sl_world tpg, dpg, ppg, mpg, embg;
    struct sl_world ppb;    /* with virtual stages: the pipeline again, for the gradients (the
                             * activations use ppg; both flow both ways between two stages) */
    struct model_layout fl; /* the full model's */
    struct model_shard sh;  /* this rank's part; sh.l is the slab's layout */
    const struct model_layout *l;
    float *slab; /* every buffer below but the activations: one allocation */
    size_t slab_floats;
    /* laid out as sh.l: the parameters (NULL under ZeRO-3) and the gradient (NULL under
     * ZeRO-2 and -3); m and v: the AdamW moments, as sh.l or (ZeRO) this rank's pieces */
    float *params, *grads, *m, *v;
    /* the ZeRO stage in use: optim.zero with data parallel > 1, else 0. Tensor i is cut
     * into dp pieces, [zb[i (dp + 1) + k], zb[i (dp + 1) + k + 1]) of its elements for
     * data-parallel rank k; m and v hold this rank's pieces only, tensor i's at zoff[i] (zn
     * floats in all) */
    int zero;
    size_t *zb, *zoff, zn;
    /* ZeRO-2 and -3: the gradient of this rank's pieces (at zoff[i]), each micro-batch's
     * summed over data parallel, then added over the micro-batches; ZeRO-3: the parameters
     * of this rank's pieces only (at zoff[i]) */
    float *gshard, *pshard;
    unsigned char *gfresh; /* per tensor: no micro-batch in gshard yet this step */
    /* the working buffers: one layer's gradient (lgrad) and, ZeRO-3, its gathered
     * parameters (lparam), laid out as the layer's run of sh.l; the tensors outside the
     * layers (embeddings, final norm, output layer) at ooff[i] of ograd and, ZeRO-3, of
     * oparam, kept whole for the micro-batch (gradient) and the step (parameters) */
    float *lgrad, *lparam, *ograd, *oparam;
    size_t *ooff, max_layer, outer;
    struct cpu_model_hooks hooks; /* the models' view of those buffers (ZeRO-2, -3) */
    int nslots;                   /* models per chunk: one per micro-batch in flight */
    int nchunks; /* model chunks: the virtual pipeline stages of this rank (1 without) */
    int ntok;    /* token slots: nslots, or with virtual stages every micro-batch of a step */
    struct model_layout cl[PARALLEL_MAX_VP]; /* chunk c's view of the slab's layout */
    struct model_config cc[PARALLEL_MAX_VP]; /* and its config (its layers) */
    struct cpu_model **cm;                   /* [chunk * nslots + slot] */
    float *xbuf, *gbuf; /* [rows, d] a received activation, a received gradient */
    void **sends; /* per model: the pending send of its output [0] and input gradient [1] */
    struct data_loader *data;
    uint32_t *sample;          /* seq_len + 1 */
    int32_t *tokens, *targets; /* per slot */
    /* per slot, with data.reset_* or data.eod_mask_loss (train/docmask.h): positions,
     * document starts, loss mask; else NULL */
    int32_t *dpos, *dstart;
    float *lmask;
    uint32_t *dump_samples;    /* accum * B * (seq_len + 1), when dumping */
    float *dump_logits;        /* B * seq_len * vocab, when dumping */
    long dump_micro;           /* micro-step being filled */
    struct cpu_fp8 *fp8;       /* train.fp8: the linear layers' scales and operands, or NULL */
};

/* ---- train/cpu_zero.c ------------------------------------------------------------------ */

/* The pieces (t->zero set) and one allocation of t->slab for the parameters, gradients,
 * moments and ZeRO's buffers of the stage in use (t->par, t->at, t->l set); the hooks for
 * the models under ZeRO-2 and -3. 0 or SL_ERR_NOMEM. */
int zero_setup(struct cpu_trainer *t);
void zero_release(struct cpu_trainer *t);
const size_t *zero_bounds(const struct cpu_trainer *t, int i);
/* The elements of tensor i this rank reduces and updates: [*lo, *lo + *n) of the tensor,
 * its piece under ZeRO, else all of it. */
void zero_piece(const struct cpu_trainer *t, int i, size_t *lo, size_t *n);
/* Where this rank's reduced gradient and its parameters of tensor i's piece are. */
float *zero_grad_piece(const struct cpu_trainer *t, int i);
float *zero_param_piece(const struct cpu_trainer *t, int i);
/* Every rank's pieces of x (laid out as sh.l) to every rank of the data-parallel group. */
int zero_allgather(struct cpu_trainer *t, float *x);
/* A moment's pieces gathered into full, laid out as sh.l, on the data-parallel group's
 * rank 0 (full: NULL on the others; the gaps are left alone). */
int zero_gather_moment(struct cpu_trainer *t, const float *piece, float *full);
/* This rank's pieces of x laid out as sh.l into piece (at zoff[i]). */
void zero_keep(struct cpu_trainer *t, const float *full, float *piece);
/* ZeRO-2, -3: the whole (local) parameters (grads 0; ZeRO-3) or reduced gradient (grads 1)
 * laid out as sh.l, all-gathered into a fresh buffer (*out, free it). Collective over the
 * data-parallel group. */
int zero_whole(struct cpu_trainer *t, int grads, float **out);
/* ZeRO-2, -3: a step begins (no gradient yet; ZeRO-3: the tensors outside the layers
 * gathered, for the step or an evaluation). Collective over the data-parallel group. */
int zero_step_begin(struct cpu_trainer *t, int eval);
/* ZeRO-2, -3: around the backward of chunk c of a micro-batch: the gradient of the tensors
 * outside the layers that the chunk uses zeroed, then reduce-scattered and added to the
 * rank's pieces. */
void zero_outer_begin(struct cpu_trainer *t, int c);
int zero_outer_end(struct cpu_trainer *t, int c);

#endif
