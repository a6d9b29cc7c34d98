/* The CUDA trainer's device memory as a list of buffers, in plain C (no CUDA types): the
 * arena train/gpu_model.c carves and the estimate `sluice train --print-config` prints
 * (train/parallel.h, parallel_gpu_estimate) are the same list, so the estimate is the
 * allocation by construction. Compiled into the binary and into the GPU library.
 *
 * A buffer has an id (what it is for: gpu_model.c turns the id into the pointer it sets),
 * a layer and an activation set where it is one of a layer's kept activations, a name, its
 * bytes and its category. The arena lays the buffers out in list order, each at a multiple
 * of GPU_PLAN_ALIGN bytes; a category's bytes are the sum of its buffers' (no padding), the
 * arena's the end of the last buffer.
 *
 * The layout of the parameters is the trainer's: one bucket for the tensors before the
 * first layer (embeddings), one per layer, one for those after the last (final norm, output
 * layer), each padded so that every data-parallel rank's slice is the same multiple of 64
 * elements (gpu_plan_buckets). What each ZeRO stage keeps (P = the padded parameters of
 * the rank, DP = data-parallel ranks, maxb = the largest bucket, maxl = the largest layer
 * bucket, outer = the first and last buckets):
 *   ZeRO-1  bf16 params 2P, bf16 micro-batch grads 2P, fp32 step gradient 4P,
 *           fp32 master + m + v 12P/DP.
 *   ZeRO-2  bf16 params 2P, bf16 grads 2P, fp32 gradient of the shard 4P/DP, master/m/v
 *           12P/DP, fp32 reduction staging 2 maxb (two buckets in flight).
 *   ZeRO-3  bf16 params of the shard 2P/DP + gathered: outer whole and two layer buffers
 *           (2 maxl: the layer in use and the next, prefetched); bf16 grads: outer whole +
 *           2 maxl; fp32 shard gradient 4P/DP, master/m/v 12P/DP, staging 2 maxb.
 * (ZeRO-0 is ZeRO-1: the GPU trainer always shards the optimizer; at DP = 1 it is whole.)
 *
 * Activations (recompute as train.recompute): every layer's kept buffers (struct gacts of
 * gpu_internal.h) once per layer and per activation set where the mode keeps them, else
 * one buffer shared by the layers (rebuilt in the backward):
 *   kept with none:       res, ln1, m1, r1, qkv, atty, lse, mid, ln2, m2, r2, fc, act
 *   kept with selective:  res, m1, r1, qkv, atty, lse, mid, m2, r2, fc (norm outputs and
 *                         the MLP activation rebuilt)
 *   kept with full:       res (the layer's input; the rest rebuilt)
 * then the buffers used once per micro-batch (final norm, logits, losses, the backward's
 * gradients). `sets` is the micro-batches whose activations a rank keeps at once: 1 without
 * pipeline parallelism; a pipeline stage keeps one set per micro-batch in flight, three
 * [R, D] bf16 buffers for the stage boundary (the residual stream's rows, with SP R = N / tp:
 * activation out, gradient out, gradient in; the activation in lands in the first layer's
 * kept input), and only the last stage the final norm and logits (once: the loss's backward
 * through them runs right after its forward) and per set the [R, D] gradient of the last
 * layer's output it leaves.
 *
 * Tensor parallelism: the shapes are the rank's (model_shard's local config: heads, KV
 * heads, d_ff and vocabulary rows divided by tp). With sequence parallelism the buffers of
 * the residual stream (res, ln1/ln2 and their statistics, mid, the final norm's input and
 * statistics, dres) hold N / tp rows, and two shared buffers are added: the all-gathered
 * norm output the column-parallel GEMMs read (N x D) and the reduce-scattered output of a
 * row-parallel GEMM (N / tp x D) (train/gpu_tp.c: the first also holds the gathered
 * gradient of the residual stream, the second the reduce-scattered input gradient of a
 * column-parallel layer in the backward); with tensor parallelism two workspace buffers
 * (the tokens' local vocabulary ids, the vocab-parallel cross-entropy's statistics).
 *
 * Kernel-dependent sizes are inputs (struct gpu_plan_in's ws): the trainer takes them from
 * the kernels (kernels/kernels.h, attention.h, gemm.h); gpu_plan_own_kernels fills them for
 * the own kernels, which is what --print-config uses. They equal the trainer's on emulated
 * GPUs and on a GPU running the own attention kernels; on a real GPU two may differ:
 *  - attention: cuDNN's workspace (train.attention=auto|cudnn picks cuDNN where it can) is
 *    cuDNN's own choice, known only once its plan is built on the device; the own kernels
 *    need B x H x T fp32 (the backward's row sums);
 *  - embedding backward: CUB's temporary storage for the radix sort of the token ids is
 *    CUB's own size; counted here as the emulation's stand-in asks (256 bytes + the sorted
 *    keys and values, 8 bytes a token), the order of magnitude of CUB's double buffers.
 * Both are a few MB at most at the sizes trained, against GB of weights and activations.
 */
#ifndef SL_TRAIN_GPU_PLAN_H
#define SL_TRAIN_GPU_PLAN_H

#include "train/model.h"

#include <stddef.h>

#define GPU_PLAN_ALIGN 256 /* bytes: every buffer's start in the arena */

enum gpu_plan_cat {
    GPU_PLAN_PARAMS,
    GPU_PLAN_GRADS,
    GPU_PLAN_OPTIM,
    GPU_PLAN_ACTS,
    GPU_PLAN_WORK,
    GPU_PLAN_NCAT
};

/* What a buffer is for. The per-layer activations GB_RES .. GB_ACT are in the order of
 * struct gacts (train/gpu_internal.h). */
enum gpu_plan_id {
    /* parameters, gradients, optimizer */
    GB_PARAMS,    /* bf16 working weights: whole (ZeRO-1/2) or the rank's shard (ZeRO-3) */
    GB_GRADS,     /* bf16 micro-batch gradient, whole (ZeRO-1/2) */
    GB_MAIN_GRAD, /* fp32 step gradient: whole (ZeRO-1) or the shard (ZeRO-2/3) */
    GB_MASTER,    /* fp32 master weights of the shard */
    GB_M,         /* AdamW first moment of the shard (fp32) */
    GB_V,         /* AdamW second moment of the shard (fp32) */
    GB_TENSORS,   /* the AdamW tensor table (struct adamw_tensor per tensor) */
    GB_STAGING,   /* ZeRO-2/3: fp32 reduction staging, two buckets */
    GB_P_OUTER,   /* ZeRO-3: gathered bf16 outer buckets (embeddings, final norm, head) */
    GB_P_LAYERS,  /* ZeRO-3: two gathered bf16 layer buffers */
    GB_G_OUTER,   /* ZeRO-3: bf16 gradient of the outer buckets */
    GB_G_LAYERS,  /* ZeRO-3: bf16 gradient of two layer buffers */
    /* a layer's activations (struct gacts) */
    GB_RES,
    GB_LN1,
    GB_M1,
    GB_R1,
    GB_QKV,
    GB_ATTY,
    GB_LSE,
    GB_MID,
    GB_LN2,
    GB_M2,
    GB_R2,
    GB_FC,
    GB_ACT,
    /* once per micro-batch */
    GB_RES_FINAL,
    GB_NF,
    GB_NFM,
    GB_NFR,
    GB_TMP,
    GB_LOGITS,
    GB_LOSSES,
    GB_DRES,
    GB_DN,
    GB_DQKV,
    GB_DATTY,
    GB_DFC,
    GB_DACT,
    GB_SP_GATHER,  /* sequence parallel: the all-gathered norm output [N, D] */
    GB_SP_SCATTER, /* sequence parallel: a reduce-scattered GEMM output [N / tp, D] */
    GB_XOUT,       /* pipeline: the stage's output activation, sent on [R, D] */
    GB_DXOUT,      /* pipeline: the gradient of the stage's input, sent back [R, D] */
    GB_DXIN,       /* pipeline: the gradient of the stage's output, received [R, D] */
    GB_DHEAD,      /* pipeline, last stage: a set's gradient of the last layer's output */
    /* workspace */
    GB_ROPE_COS,
    GB_ROPE_SIN,
    GB_GEMM_WS,
    GB_ATTN_WS,
    GB_NORM_SCRATCH,
    GB_EMB_SCRATCH,
    GB_GN_SCRATCH,
    GB_TOK0,
    GB_TOK1,
    GB_TOK_EVAL,
    GB_STATS,
    GB_EVAL,
    GB_TP_IDS,     /* tensor parallel: the tokens' ids in the rank's vocabulary rows [N] */
    GB_XENT_STATS, /* tensor parallel: the vocab-parallel cross-entropy's max, sum, target
                    * logit [3 N] fp32 */
    GB_N
};

#define GB_LAYER_FIRST GB_RES /* the per-layer activations: GB_RES .. GB_ACT */
#define GB_LAYER_LAST  GB_ACT

struct gpu_plan_buf {
    enum gpu_plan_id id;
    int layer; /* per-layer activation: its layer; -1: shared by the layers, or not one */
    int set;   /* per-layer activation, head gradient: its set (0 .. sets - 1); else 0 */
    const char *name;
    size_t bytes;
    enum gpu_plan_cat cat;
    size_t offset; /* in the arena (a multiple of GPU_PLAN_ALIGN) */
};

/* The sizes the kernels ask for (bytes). */
struct gpu_plan_ws {
    size_t attn;      /* attention forward/backward workspace (attention_prepare) */
    size_t norm;      /* norm and bias backward scratch: the largest of the widths D, QKV, FC */
    size_t embedding; /* embedding backward scratch (embedding_bwd_scratch_size) */
    size_t gnorm;     /* global-norm partials (global_norm_scratch_size) */
    size_t gemm;      /* cuBLASLt workspace (GEMM_WORKSPACE_BYTES) */
};

/* The padded buckets of a rank's layout (gpu_plan_buckets): the parameter counts the ZeRO
 * stages' buffers are sized from, in elements. */
struct gpu_plan_bucket {
    size_t la, lb;   /* layout range [la, lb) (floats of the model_layout slab) */
    size_t dev, len; /* device range [dev, dev + len), len a multiple of 64 x DP */
    size_t shard;    /* the rank's slice starts here in the master/m/v storage */
};

struct gpu_plan_in {
    struct model_config mc;       /* the rank's local config (model_shard's local) */
    const struct model_layout *l; /* its layout (borrowed) */
    long micro_batch, seq_len, accum, eval_iters;
    int recompute; /* enum gpu_recompute (train/train_run.h): none, selective, full */
    int zero;      /* ZeRO stage 0..3 (0 is 1 on the GPU) */
    int dp;        /* data-parallel ranks */
    int tp, sp;    /* tensor-parallel ranks, sequence parallel */
    long sets;     /* activation sets kept (>= 1) */
    int pipeline;  /* pipeline parallel: the stage boundary's transfer buffers */
    int no_head;   /* a pipeline stage before the last: no final norm, logits */
    int docs;      /* positions and document starts travel with the tokens (train/docmask.h) */
    struct gpu_plan_ws ws;
};

struct gpu_plan {
    struct gpu_plan_buf *b;
    int n, cap;
    int nbk;                             /* n_layers + 2 */
    struct gpu_plan_bucket *bk;          /* nbk buckets */
    size_t dtotal, shard_n;              /* device elements of the layout, of the rank's shard */
    size_t max_bucket, max_layer, outer; /* elements: largest bucket, largest layer bucket,
                                          * first + last bucket */
    size_t cat[GPU_PLAN_NCAT];           /* bytes per category */
    size_t total;                        /* the arena's bytes */
};

/* The padded buckets of layout l (n_layers layers) for dp ranks: n_layers + 2 entries into
 * bk (caller's array). Fails (SL_ERR_STATE) if the tensors are not in layer order. */
int gpu_plan_buckets(const struct model_layout *l, int n_layers, int dp, struct gpu_plan_bucket *bk,
                     size_t *dtotal, size_t *shard_n);

/* The own kernels' sizes for the shapes of `in` (the `ws` --print-config uses). */
void gpu_plan_own_kernels(const struct gpu_plan_in *in, struct gpu_plan_ws *ws);

/* The list for `in`. Release with gpu_plan_release. Fails (SL_ERR_STATE) as
 * gpu_plan_buckets, or SL_ERR_CONFIG for a ZeRO stage outside 0..3. */
int gpu_plan_build(struct gpu_plan *p, const struct gpu_plan_in *in);
void gpu_plan_release(struct gpu_plan *p);

extern const char *const gpu_plan_cat_names[GPU_PLAN_NCAT]; /* "parameters", ... */

#endif
