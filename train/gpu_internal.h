/* Internal to the CUDA trainer (train/gpu_train.c, gpu_model.c, gpu_zero.c, gpu_loader.c):
 * the trainer's state and the functions its files share. Not a public interface: the
 * backend table is in train/gpu_train.h.
 */
#ifndef SL_TRAIN_GPU_INTERNAL_H
#define SL_TRAIN_GPU_INTERNAL_H

#include "dataset/loader.h"
#include "kernels/attention.h"
#include "kernels/cuda_common.h"
#include "kernels/gemm.h"
#include "kernels/kernels.h"
#include "core/rng.h"
#include "train/checkpoint.h"
#include "train/gpu_comm.h"
#include "train/gpu_train.h"
#include "train/model.h"
#include "train/parallel.h"
#include "core/world.h"

#include <cuda_runtime_api.h>
#include <pthread.h>
#include <stdio.h>

/* GEMM and attention launchers return -1 for a shape they cannot run: fatal here (the shapes
 * were all checked at start-up, so this is a bug, not bad input). */
#define GEMM_CHECK(call)                                                                           \
    do {                                                                                           \
        if ((call) != 0)                                                                           \
            sl_cuda_fatal("cublaslt", gemm_error(), #call, __FILE__, __LINE__);                    \
    } while (0)
#define ATTN_CHECK(call)                                                                           \
    do {                                                                                           \
        if ((call) != 0)                                                                           \
            sl_cuda_fatal("attention", "shape not supported by the chosen backend", #call,         \
                          __FILE__, __LINE__);                                                     \
    } while (0)

/* ---- the pieces ---------------------------------------------------------------------- */

/* A bucket of the gradient: the tensors before the first layer (embeddings), one layer, or
 * those after the last one (final norm, output layer). Contiguous in the layout and on the
 * device; on the device padded so that every rank's slice has the same multiple of 64
 * elements. Rank r owns [dev + r len/W, dev + (r+1) len/W) of every bucket. */
struct gbucket {
    size_t la, lb;   /* layout range [la, lb) */
    size_t dev, len; /* device range [dev, dev + len) */
    size_t shard;    /* this rank's slice starts here in the master/m/v storage (and, at
                      * ZeRO-2/3, in the shard gradient; at ZeRO-3 in the bf16 shard) */
};

/* Activations of one layer (shared buffers where recomputation rebuilds them). */
struct gacts {
    sl_bf16 *res;   /* [N, D] layer input (residual stream) */
    sl_bf16 *ln1;   /* [N, D] attention norm output */
    float *m1, *r1; /* [N] its mean (LayerNorm) and rstd */
    sl_bf16 *qkv;   /* [N, QKV] after RoPE */
    sl_bf16 *atty;  /* [N, H d] attention output */
    float *lse;     /* [B, H, T] */
    sl_bf16 *mid;   /* [N, D] residual after attention */
    sl_bf16 *ln2;   /* [N, D] MLP norm output */
    float *m2, *r2; /* [N] */
    sl_bf16 *fc;    /* [N, FC] pre-activation */
    sl_bf16 *act;   /* [N, F] */
};

/* What the last virtual pipeline stage keeps of a micro-batch in flight: the gradient of its
 * last layer's output, computed by the forward (the loss's backward through the output
 * layer and final norm runs right after the loss, so that no set of logits waits). */
struct gslot {
    sl_bf16 *dhead; /* [N, D] */
};

/* The input pipeline: a thread fills pinned buffers (two steps deep) from the data loader. */
struct gloader {
    pthread_t th;
    int started;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    const struct data_loader *data;
    int dev;
    long B, T, accum, W, rank, global;
    int32_t *pinned[2];       /* per slot: accum x [tokens N | targets N] (tw rows: gt's tw) */
    const struct docmask *dm; /* documents (train/docmask.h), or NULL */
    int tw;
    long *kept[2]; /* per slot: each micro-batch's unmasked positions (eod_mask_loss) */
    cudaEvent_t copied[2];
    int pending[2]; /* a copy out of the slot was enqueued */
    int ready[2];
    long next, last;    /* steps the thread fills */
    long step0;         /* steps taken before the first one filled */
    uint64_t consumed0; /* samples consumed before step step0 + 1 */
    uint32_t *sample;
    int rc, stop;
    char err[1024];
};

enum { MEM_PARAMS, MEM_GRADS, MEM_OPTIM, MEM_ACTS, MEM_WORK, MEM_N };

struct gt {
    const struct train_opts *a;
    struct sl_world *w;
    int rank, W, dev; /* world rank and size */
    /* pipeline parallel (gpu_tp_layout, gpu_setup_comm): model chunks (virtual stages),
     * activation sets per chunk; groups: the pipeline's stages, the two pipeline ends holding
     * a tied embedding */
    int nchunks, nslots;
    struct sl_world ppg, embg;
    struct gcomm *ppc, *embc;     /* over ppg and embg (NULL: no pipeline / nothing tied) */
    sl_bf16 *xout, *dxout, *dxin; /* [N, D] activation and gradient out, gradient in */
    struct gslot *slot;           /* [nslots] (a pipeline's last stage) */
    struct cudaDeviceProp prop;
    struct model_layout l; /* this rank's local layout (sh.l, borrowed) */
    /* tensor and sequence parallel (gpu_tp.c): the rank's part of the model, its groups */
    struct parallel_config par;
    struct parallel_coord at;
    struct model_layout fl; /* the full model's layout */
    struct model_shard sh;  /* the rank's part: heads, KV heads, d_ff and vocabulary rows */
    int tp, tpr, sp;        /* tensor-parallel size and rank; sequence parallel */
    int DP, dpr;            /* data-parallel size and rank: the ZeRO-1 shards and the data */
    int R, row0;            /* rows of the residual stream held: [row0, row0 + R) of N */
    int v0;                 /* first vocabulary row held */
    struct sl_world tpg, dpg;
    struct sl_world mpg; /* the model-parallel ranks of the replica (tensor x pipeline) */
    struct gcomm *tpc;   /* over tpg (tensor-parallel collectives) */
    cudaStream_t tpst;   /* their stream where they overlap a GEMM */
    cudaEvent_t ev_tp, ev_tpdone;
    int B, T, N, D, H, Hkv, hd, QKV, QD, F, FC, V, Vp, L;
    float attn_scale;
    /* the token blocks' int32 rows of N: 2 (tokens, targets), or 4 with documents
     * (train/docmask.h: then positions and document starts too; a masked loss's target is
     * -1); dm: the documents' settings, or NULL; dpos, dstart: the rows of the micro-batch
     * in flight (NULL without documents); kept: the step's unmasked positions per
     * micro-batch (eod_mask_loss) */
    int tw;
    const struct docmask *dm;
    const int32_t *dpos, *dstart;
    long *kept, eval_kept;
    /* device layout */
    size_t *doff; /* device offset of each tensor */
    struct gbucket *bk;
    int nbk;
    size_t dtotal, shard_n;
    size_t maxb, maxl; /* the largest bucket, the largest layer bucket (device elements) */
    int zero;          /* the ZeRO stage: 1, 2 or 3 (optim.zero 0 and 1 are ZeRO-1) */
    int *tbk;          /* [l.n] the bucket of each tensor */
    /* where bucket k's bf16 weights and micro-batch gradient are now: t->params + dev and
     * t->grads + dev below ZeRO-3; at ZeRO-3 the outer buffers, or the layer slot that
     * holds the layer (set by gpu_z3_layer, gpu_z3_grad) */
    sl_bf16 **pb, **gb;
    /* the arena */
    void *arena;
    size_t mem[MEM_N];
    sl_bf16 *params;  /* [dtotal] bf16 working weights, whole (ZeRO-1/2; NULL at ZeRO-3) */
    sl_bf16 *grads;   /* [dtotal] one micro-batch's gradient (bf16, zeroed per micro-batch;
                       * ZeRO-1/2; NULL at ZeRO-3) */
    float *main_grad; /* [dtotal] ZeRO-1: the step's gradient, summed over micro-batches in
                       * fp32; after the reduce-scatter each rank's slices hold the sum over
                       * ranks (NULL at ZeRO-2/3) */
    float *sgrad;     /* [shard_n] ZeRO-2/3: the fp32 gradient of this rank's slices, reduced
                       * over ranks per micro-batch and summed over micro-batches */
    float *stage[2];  /* [maxb] ZeRO-2/3: fp32 (or bf16) staging of one bucket's reduction,
                       * two so that a bucket's cast need not wait for the previous reduce */
    int sslot;        /* the staging buffer the next bucket takes */
    /* ZeRO-3: the bf16 shard, the outer buckets (0 and L + 1) gathered for the step with
     * their whole gradients, and two layer slots of maxl weights and gradients */
    sl_bf16 *pshard, *pouter[2], *gouter[2], *lp[2], *lg[2];
    int lp_layer[2]; /* the layer slot x holds (gathered or being gathered), -1: none */
    int lp_cur;      /* the slot of the layer in use */
    int outer_ok;    /* pouter holds the current weights */
    float *master, *m, *v;
    struct adamw_tensor *d_tensors;
    int ntensors;
    struct gacts *per, shared; /* per: [nslots x L] */
    sl_bf16 *res_final, *nf, *tmp, *logits;
    float *nfm, *nfr, *losses;
    sl_bf16 *dres, *dn, *dqkv, *datty, *dfc, *dact;
    /* sequence parallel (train/gpu_plan.h): [N, D] a norm's output all-gathered for a
     * column-parallel GEMM, or the residual stream's gradient gathered for a row-parallel
     * one; [R, D] a row-parallel output reduce-scattered, or a column-parallel input
     * gradient. Tensor parallel: the local vocabulary ids [N], the cross-entropy's max, sum
     * of exponentials and target logit [3 N]. */
    sl_bf16 *sp_gather, *sp_scatter;
    int32_t *ids;
    float *xmx;
    float *rope_cos, *rope_sin;
    void *gemm_ws, *attn_ws, *norm_scratch, *emb_scratch, *gn_scratch;
    size_t attn_ws_bytes, emb_scratch_bytes;
    int32_t *d_tok[2], *d_tok_eval;
    float *d_stats;  /* [0] grad norm squared, [1 + a] mean loss of micro-step a */
    float *d_eval;   /* eval_iters x accum mean losses */
    float *h_stats;  /* pinned: d_stats then d_eval */
    int32_t *h_eval; /* pinned: one validation micro-batch, tokens then targets */
    uint32_t *eval_sample;
    /* libraries and streams */
    struct gemm *gemm;
    unsigned fuse; /* the GEMM epilogues in use, GPU_FUSE_* (gpu_fuse_setup) */
    struct attention *attn;
    cudaStream_t st, comm, copy;
    cudaEvent_t ev_grad, ev_comm, ev_stats, step_done[2];
    cudaEvent_t ev_sfree[2];    /* staging x's reduction is done (on t->comm) */
    cudaEvent_t ev_issue;       /* t->st's work so far (a gather waits for it) */
    cudaEvent_t ev_gathered[3]; /* ZeRO-3: layer slot 0, 1, the outer buckets gathered */
    struct gcomm *dpc;          /* data parallel: over dpg (train/gpu_comm.h) */
    enum gcomm_backend comm_be; /* the backend of train.comm (gpu_train.c setup_device) */
    int reduce;                 /* the gradient goes through dpc (more than one rank, or a build
                                 * with NCCL, where one rank reduces too, as it always has) */
    struct data_loader *data;   /* borrowed from the driver */
    struct gloader ld;
    float *dump_host; /* [fl.total] train.dump_grads staging (allocated when dumping) */
};

/* Tensor id's weights and micro-batch gradient where its bucket is now (t->pb, t->gb: at
 * ZeRO-3 the gathered slots); NULL for id -1 (a tensor the model does not have). */
static inline const sl_bf16 *gpu_param(const struct gt *t, int id)
{
    if (id < 0)
        return NULL;
    int k = t->tbk[id];
    return t->pb[k] + (t->doff[id] - t->bk[k].dev);
}

static inline sl_bf16 *gpu_grad(const struct gt *t, int id)
{
    if (id < 0)
        return NULL;
    int k = t->tbk[id];
    return t->gb[k] + (t->doff[id] - t->bk[k].dev);
}

/* gpu_fuse.c: the work cuBLASLt's epilogues do in the GEMM instead of separate kernels
 * (kernels/gemm.h), chosen by SLUICE_GPU_FUSE (docs/trainer.md) */
enum {
    GPU_FUSE_GELU = 1,  /* the MLP's fc GEMM applies the GELU, fc as its aux output */
    GPU_FUSE_DGELU = 2, /* the MLP projection's dx GEMM applies gelu'(fc) and writes fc's
                         * bias gradient */
    GPU_FUSE_BGRAD = 4  /* the dW GEMMs write the bias gradients */
};
int gpu_fuse_setup(struct gt *t); /* t->fuse for the model; SL_ERR_CONFIG: a bad setting */
void gpu_bwd_weight(struct gt *t, const sl_bf16 *dy, const sl_bf16 *x, int wid, int bid, int IC,
                    int OC);

/* gpu_train.c */
int gpu_all_ok(struct gt *t, int rc); /* collective: the first error of any rank, or 0 */

/* gpu_model.c: device layout, the arena, forward and backward */
int gpu_setup_model(struct gt *t); /* layout, buckets, attention, arena, streams, tables */
void gpu_slice_of(const struct gt *t, int k, size_t *dev0, size_t *count, size_t *lay0,
                  size_t *n_layout);
/* chunk c is the first / last virtual pipeline stage */
int gpu_first_virtual(const struct gt *t, int c);
int gpu_last_virtual(const struct gt *t, int c);
/* the activation buffer a received forward input of chunk c, slot s goes to */
sl_bf16 *gpu_chunk_input(struct gt *t, int c, int s);
/* Forward of tokens tok[N] (targets at tok + N) through chunk c in activation slot s: from
 * the embedding (first virtual stage) or the input received in gpu_chunk_input, to the
 * logits in t->logits (last virtual stage) or the output in t->xout. */
void gpu_chunk_fwd(struct gt *t, int c, int s, const int32_t *tok);
/* After the classifier turned the logits of micro-step m (slot s) into their gradient: the
 * backward through the output layer and the final norm, their buckets' gradients summed
 * (gpu_bucket_done), the gradient of the last layer's output kept for the chunk's backward
 * (t->slot[s].dhead; t->dres without a pipeline, whose backward follows at once). */
void gpu_head_bwd(struct gt *t, int s, long m);
/* Backward of micro-step m (of accum) through chunk c, slot s, from the gradient
 * gpu_head_bwd kept (last virtual stage) or the output's gradient received in t->dxin: the
 * chunk's gradients of the micro-batch into t->grads (bf16), each bucket
 * then summed into t->main_grad (fp32) and, on the last micro-step, reduce-scattered; the
 * input's gradient in t->dxout (not on the first virtual stage). */
void gpu_chunk_bwd(struct gt *t, int c, int s, const int32_t *tok, long m);

/* gpu_zero.c: the data-parallel communicator, the ZeRO stages, the optimizer step, state in
 * and out */
int gpu_setup_comm(struct gt *t);
/* Bucket k's micro-batch gradient (micro-step m of accum) is complete on t->st: ZeRO-1 adds
 * it to t->main_grad and reduce-scatters it after the last micro-step; ZeRO-2/3 reduce-
 * scatter it now on t->comm and add this rank's slice to t->sgrad. */
void gpu_bucket_done(struct gt *t, int k, long m);
/* This rank's fp32 gradient of bucket k's slice (after the reduction). */
float *gpu_grad_slice(const struct gt *t, int k);
/* ZeRO-3 (no-ops below): the outer buckets gathered for the step; layer li's weights
 * resident for use on t->st, with layer `next` (-1: none) prefetched on t->comm; layer li's
 * gradient slot zeroed and bound. */
void gpu_z3_outer(struct gt *t);
void gpu_z3_layer(struct gt *t, int li, int next);
void gpu_z3_grad(struct gt *t, int li);
/* After the step's backward, with a tied embedding on two pipeline ends: their gradients
 * summed over embc, then the embedding's bucket reduce-scattered (gpu_bucket_done leaves it;
 * at ZeRO-2/3 it has reduced each end's bucket, and the reduced buckets are summed) */
void gpu_tied_reduce(struct gt *t);
void gpu_reduce_stats(struct gt *t);
void gpu_optimizer_step(struct gt *t, double lr, long adam_step, uint64_t seed);
int gpu_load_state(struct gt *t, const char *from, uint64_t init_seed);
int gpu_save_checkpoint(struct gt *t, const struct ckpt_state *st);
/* The bf16 working weights widened exactly to fp32 into dst, laid out by t->l (the
 * backend's params_host). Collective at ZeRO-3 (the weights are gathered a bucket at a
 * time): every rank calls it, dst NULL except on rank 0. */
int gpu_params_host(struct gt *t, float *dst);
/* The same laid out by the rank's own layout t->l with or without a pipeline (a tensor-
 * parallel part), into dst on every rank (non-NULL). Collective over the data-parallel group
 * at ZeRO-3. */
int gpu_params_local(struct gt *t, float *dst);
/* collective: the full model's fp32 gradient (laid out by t->fl) in host, on every rank, or
 * with tensor parallel on world rank 0 only */
int gpu_gather_grads(struct gt *t, float *host);

/* gpu_tp.c: tensor and sequence parallel (Megatron's f, g and their sequence-parallel
 * forms), the vocab-parallel embedding and cross-entropy, the layout of the rank */
int gpu_tp_layout(struct gt *t); /* sh, fl, tp/DP ranks, R: before the device layout */
int gpu_tp_groups(struct gt *t); /* tpg, dpg and the tensor-parallel communicator */
int gpu_tp_open(struct gt *t, enum gcomm_backend be); /* the communicator, its stream */
void gpu_tp_release(struct gt *t);
/* a column-parallel layer's input over all N rows: rows itself, or with SP the rank's rows
 * [R, D] all-gathered into full [N, D] */
const sl_bf16 *gpu_tp_gather_rows(struct gt *t, const sl_bf16 *rows, sl_bf16 *full);
/* a row-parallel layer's output from the partial sums over the group in part [N, D]: the
 * rows [R, D] summed: part itself (all-reduced in place), or with SP reduce-scattered into
 * t->sp_scatter */
const sl_bf16 *gpu_tp_row_out(struct gt *t, sl_bf16 *part);
/* the gradient of the residual stream over all N rows: t->dres, or gathered into
 * t->sp_gather */
const sl_bf16 *gpu_tp_full_dres(struct gt *t);
/* a column-parallel layer's backward: dx = dy W (partial over ranks), summed over the group
 * (SP: reduce-scattered into t->sp_scatter) on the tensor-parallel stream while dW += dy^T x
 * and db run; with SP and x_rows the input x is the rank's rows, all-gathered (into
 * t->sp_gather) on that stream while dx is computed (Megatron's overlaps). Returns the rows
 * [R, D] of the summed dx. */
const sl_bf16 *gpu_tp_col_bwd(struct gt *t, sl_bf16 *dx, const sl_bf16 *dy, const sl_bf16 *x,
                              int x_rows, int wid, int bid, int IC, int OC);
void gpu_tp_embed_fwd(struct gt *t, sl_bf16 *x0, const int32_t *tok);
void gpu_tp_embed_bwd(struct gt *t, const int32_t *tok);
/* the loss and the logits' gradient: classifier_fwd_bwd, or vocab-parallel over the group */
void gpu_tp_classifier(struct gt *t, const int32_t *targets, float dloss, int write_dlogits);
/* after a bucket's backward: the norms' micro-batch gradients summed over the group (SP) */
void gpu_tp_norm_grads(struct gt *t, int k);
/* the squared gradient norm of this rank's slices, each tensor counted once (owner) */
void gpu_tp_norm_sq(struct gt *t);
/* the local layout's host slab (fp32, laid out by t->l) to the full model's on world rank 0
 * (full: fl.total floats there, NULL elsewhere), from the model-parallel ranks (tensor x
 * pipeline) of data-parallel rank 0. Collective. */
int gpu_tp_gather_full(struct gt *t, const float *local, float *full);
/* the full model's weights (fp32, from the bf16 working weights) on world rank 0 (full NULL
 * elsewhere), gathered as gpu_tp_gather_full does. Collective. */
int gpu_tp_params_full(struct gt *t, float *full);
/* checkpoints: one part of this rank's ZeRO-1 slices r[k] (local layout ranges) from the full
 * model's (a checkpoint's, or the fresh initialisation's), into dst[k]; the optimizer shard
 * as ranges of the full layout; model.safetensors of the full model (collective) */
int gpu_tp_read_part(struct gt *t, const char *from, enum ckpt_part part, uint64_t seed,
                     const struct ckpt_range *r, size_t nr, float *const *dst);
int gpu_tp_write_shard(struct gt *t, long step);
int gpu_tp_write_model(struct gt *t, long step);

/* gpu_loader.c: the input pipeline */
/* Sample b of a micro-batch into its token block dst (tw rows of N; documents: dm, or NULL).
 * Returns the sample's unmasked positions (T without eod_mask_loss). */
long gpu_fill_tokens(int32_t *dst, const uint32_t *sample, long b, long T, long N,
                     const struct docmask *dm);
int gpu_loader_start(struct gt *t, long step0, uint64_t consumed0);
int gpu_loader_take(struct gt *t, long s);
void gpu_loader_stop(struct gt *t);

#endif
